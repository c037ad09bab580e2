/* The elementwise ops the CUDA module computes (the `unary` and `binary`
 * entries of lib/amp_cuda_module.h) and whose scalar maths
 * amp_elementwise_math.h writes once.  Includes nothing, so the scalar
 * headers stay free of libamp's (amp.h). */
#ifndef AMP_ELEMENTWISE_OPS_H
#define AMP_ELEMENTWISE_OPS_H

/* out = f(x, p): p is the op's scalar parameter (rounded to f32 as
 * PyTorch's opmath does). */
enum amp_cuda_unary {
	AMP_CUDA_UNARY_NEG,
	AMP_CUDA_UNARY_EXP,
	AMP_CUDA_UNARY_LOG,
	AMP_CUDA_UNARY_RELU,
	AMP_CUDA_UNARY_GELU,       /* erf form */
	AMP_CUDA_UNARY_GELU_TANH,  /* approximate='tanh' */
	AMP_CUDA_UNARY_SIGMOID,
	AMP_CUDA_UNARY_TANH,
	AMP_CUDA_UNARY_ADD_SCALAR, /* x + p (alpha folded in by libamp) */
	AMP_CUDA_UNARY_MUL_SCALAR, /* x * p */
	AMP_CUDA_UNARY_POW_SCALAR, /* pow(x, p) */
	AMP_CUDA_UNARY_COUNT
};

/* out = a OP (alpha * b) for ADD/SUB, a OP b otherwise. */
enum amp_cuda_binary {
	AMP_CUDA_BINARY_ADD,
	AMP_CUDA_BINARY_SUB,
	AMP_CUDA_BINARY_MUL,
	AMP_CUDA_BINARY_DIV,
	AMP_CUDA_BINARY_COUNT
};

#endif /* AMP_ELEMENTWISE_OPS_H */
