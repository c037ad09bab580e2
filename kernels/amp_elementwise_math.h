/* The scalar op behind each unary and binary entry of the CUDA module
 * (enum amp_cuda_unary, enum amp_cuda_binary), in f32 opmath.  Written
 * once so that the kernels of elementwise.cu and the host stand-in of the
 * tests (tests/cuda_fake.c) compute the same value for every op.
 * Header-only, static inline, host/device under nvcc. */
#ifndef AMP_ELEMENTWISE_MATH_H
#define AMP_ELEMENTWISE_MATH_H

#include "amp_elementwise_ops.h"
#include "amp_math.h"

/* f(x, p), p the op's scalar parameter. */
static inline AMP_HD float amp_elementwise_unary(enum amp_cuda_unary op,
						 float x, float p)
{
	switch (op) {
	case AMP_CUDA_UNARY_NEG:
		return -x;
	case AMP_CUDA_UNARY_EXP:
		return expf(x);
	case AMP_CUDA_UNARY_LOG:
		return logf(x);
	case AMP_CUDA_UNARY_RELU:
		/* NaN stays NaN, as clamp_min(x, 0) keeps it */
		return x > 0.0f || x != x ? x : 0.0f;
	case AMP_CUDA_UNARY_GELU:
		return amp_gelu_erff(x);
	case AMP_CUDA_UNARY_GELU_TANH:
		return amp_gelu_tanhf(x);
	case AMP_CUDA_UNARY_SIGMOID:
		return amp_sigmoidf(x);
	case AMP_CUDA_UNARY_TANH:
		return tanhf(x);
	case AMP_CUDA_UNARY_ADD_SCALAR:
		return x + p;
	case AMP_CUDA_UNARY_MUL_SCALAR:
		return x * p;
	default: /* AMP_CUDA_UNARY_POW_SCALAR */
		return powf(x, p);
	}
}

/* a OP (alpha * b) for ADD/SUB, a OP b otherwise.  alpha == 1 (every
 * plain add and sub) skips the multiplication; 1 * b is exact, so both
 * forms give the same value. */
static inline AMP_HD float amp_elementwise_binary(enum amp_cuda_binary op,
						  float a, float b, float alpha)
{
	switch (op) {
	case AMP_CUDA_BINARY_ADD:
		return alpha == 1.0f ? a + b : a + alpha * b;
	case AMP_CUDA_BINARY_SUB:
		return alpha == 1.0f ? a - b : a - alpha * b;
	case AMP_CUDA_BINARY_MUL:
		return a * b;
	default: /* AMP_CUDA_BINARY_DIV, true division */
		return a / b;
	}
}

#endif /* AMP_ELEMENTWISE_MATH_H */
