/* The public op functions of amp.h: each builds an amp_call with ATen's
 * argument order (tensor arguments in schema order: autocast's promote
 * policy folds over them left to right) and runs it through the
 * dispatcher.  The kernels in lib/cpu/ read the arguments by position;
 * each forward function's comment repeats the layout built here. */
#include "amp_internal.h"
#include "cpu/cpu_ops.h"

#include <stdint.h>

static struct amp_tensor *run(struct amp_call call)
{
	return amp_dispatch1(&call);
}

static struct amp_tensor *factory(struct amp_call call,
				  enum amp_device_type device,
				  enum amp_dtype dtype)
{
	AMP_ASSERT(dtype < AMP_DTYPE_COUNT);
	AMP_ASSERT(device < AMP_DEVICE_TYPE_COUNT);
	call.device = device;
	call.dtype = dtype;
	return amp_dispatch1(&call);
}

static struct amp_arg shape_arg(int ndim, const int64_t *shape)
{
	AMP_ASSERT(ndim >= 0 && ndim <= AMP_MAX_DIMS);
	AMP_ASSERT(ndim == 0 || shape);
	return amp_arg_ints(ndim, shape);
}

/* A Python number passed where ATen takes a Scalar: integral values are
 * int Scalars (they promote as int64), others float Scalars. */
static struct amp_arg number(double value, bool integral)
{
	return amp_arg_scalar(value, integral);
}

/* ------------------------------------------------------------ factories */

amp_tensor *amp_empty(int ndim, const int64_t *shape, enum amp_dtype dtype,
		      enum amp_device_type device)
{
	return factory(AMP_CALL(EMPTY, shape_arg(ndim, shape)), device, dtype);
}

amp_tensor *amp_zeros(int ndim, const int64_t *shape, enum amp_dtype dtype,
		      enum amp_device_type device)
{
	return factory(AMP_CALL(ZEROS, shape_arg(ndim, shape)), device, dtype);
}

amp_tensor *amp_full(int ndim, const int64_t *shape, double value,
		     enum amp_dtype dtype, enum amp_device_type device)
{
	return factory(
		AMP_CALL(FULL, shape_arg(ndim, shape), number(value, false)),
		device, dtype);
}

/* The call model has no pointer argument: the host address travels as an
 * int argument (it never appears in events). */
amp_tensor *amp_from_data(int ndim, const int64_t *shape, enum amp_dtype dtype,
			  enum amp_device_type device, const void *data)
{
	AMP_ASSERT(data || amp_shape_numel(ndim, shape) == 0);
	return factory(AMP_CALL(FROM_DATA, shape_arg(ndim, shape),
				amp_arg_int((int64_t)(intptr_t)data)),
		       device, dtype);
}

amp_tensor *amp_randn(int ndim, const int64_t *shape, enum amp_dtype dtype,
		      enum amp_device_type device)
{
	return factory(AMP_CALL(RANDN, shape_arg(ndim, shape)), device, dtype);
}

amp_tensor *amp_rand(int ndim, const int64_t *shape, enum amp_dtype dtype,
		     enum amp_device_type device)
{
	return factory(AMP_CALL(RAND, shape_arg(ndim, shape)), device, dtype);
}

amp_tensor *amp_scalar_tensor(double value, enum amp_dtype dtype,
			      enum amp_device_type device)
{
	return factory(AMP_CALL(SCALAR_TENSOR, number(value, false)), device,
		       dtype);
}

void amp_manual_seed(uint64_t seed)
{
	cpu_random_seed(seed);
}

/* ----------------------------------------------------------------- views */

amp_tensor *amp_transpose(amp_tensor *t, int dim0, int dim1)
{
	return run(AMP_CALL(TRANSPOSE, amp_arg_tensor(t), amp_arg_int(dim0),
			    amp_arg_int(dim1)));
}

amp_tensor *amp_t(amp_tensor *t)
{
	return run(AMP_CALL(T, amp_arg_tensor(t)));
}

amp_tensor *amp_reshape(amp_tensor *t, int ndim, const int64_t *shape)
{
	return run(
		AMP_CALL(RESHAPE, amp_arg_tensor(t), shape_arg(ndim, shape)));
}

amp_tensor *amp_slice(amp_tensor *t, int dim, int64_t start, int64_t end,
		      int64_t step)
{
	return run(AMP_CALL(SLICE, amp_arg_tensor(t), amp_arg_int(dim),
			    amp_arg_int(start), amp_arg_int(end),
			    amp_arg_int(step)));
}

amp_tensor *amp_unsqueeze(amp_tensor *t, int dim)
{
	return run(AMP_CALL(UNSQUEEZE, amp_arg_tensor(t), amp_arg_int(dim)));
}

amp_tensor *amp_contiguous(amp_tensor *t)
{
	return run(AMP_CALL(CONTIGUOUS, amp_arg_tensor(t)));
}

amp_tensor *amp_clone(amp_tensor *t)
{
	return run(AMP_CALL(CLONE, amp_arg_tensor(t)));
}

amp_tensor *amp_detach(amp_tensor *t)
{
	return run(AMP_CALL(DETACH, amp_arg_tensor(t)));
}

amp_tensor *amp_to(amp_tensor *t, enum amp_dtype dtype)
{
	AMP_ASSERT(dtype < AMP_DTYPE_COUNT);
	return run(AMP_CALL(TO, amp_arg_tensor(t), amp_arg_dtype(dtype)));
}

amp_tensor *amp_to_device(amp_tensor *t, enum amp_device_type device)
{
	AMP_ASSERT(device < AMP_DEVICE_TYPE_COUNT);
	return run(AMP_CALL(TO_DEVICE, amp_arg_tensor(t), amp_arg_int(device)));
}

/* ------------------------------------------------------- matrix products */

amp_tensor *amp_mm(amp_tensor *a, amp_tensor *b)
{
	return run(AMP_CALL(MM, amp_arg_tensor(a), amp_arg_tensor(b)));
}

amp_tensor *amp_matmul(amp_tensor *a, amp_tensor *b)
{
	return run(AMP_CALL(MATMUL, amp_arg_tensor(a), amp_arg_tensor(b)));
}

amp_tensor *amp_bmm(amp_tensor *a, amp_tensor *b)
{
	return run(AMP_CALL(BMM, amp_arg_tensor(a), amp_arg_tensor(b)));
}

amp_tensor *amp_addmm(amp_tensor *self, amp_tensor *mat1, amp_tensor *mat2,
		      double beta, double alpha)
{
	return run(AMP_CALL(ADDMM, amp_arg_tensor(self), amp_arg_tensor(mat1),
			    amp_arg_tensor(mat2), number(beta, false),
			    number(alpha, false)));
}

amp_tensor *amp_baddbmm(amp_tensor *self, amp_tensor *batch1,
			amp_tensor *batch2, double beta, double alpha)
{
	return run(AMP_CALL(BADDBMM, amp_arg_tensor(self),
			    amp_arg_tensor(batch1), amp_arg_tensor(batch2),
			    number(beta, false), number(alpha, false)));
}

amp_tensor *amp_linear(amp_tensor *input, amp_tensor *weight, amp_tensor *bias)
{
	return run(AMP_CALL(LINEAR, amp_arg_tensor(input),
			    amp_arg_tensor(weight), amp_arg_opt_tensor(bias)));
}

amp_tensor *amp_conv1d(amp_tensor *input, amp_tensor *weight, amp_tensor *bias,
		       int64_t stride, int64_t padding, int64_t dilation,
		       int64_t groups)
{
	return run(AMP_CALL(CONV1D, amp_arg_tensor(input),
			    amp_arg_tensor(weight), amp_arg_opt_tensor(bias),
			    amp_arg_ints(1, &stride), amp_arg_ints(1, &padding),
			    amp_arg_ints(1, &dilation), amp_arg_int(groups)));
}

amp_tensor *amp_conv2d(amp_tensor *input, amp_tensor *weight, amp_tensor *bias,
		       const int64_t stride[2], const int64_t padding[2],
		       const int64_t dilation[2], int64_t groups)
{
	AMP_ASSERT(stride && padding && dilation);
	return run(AMP_CALL(CONV2D, amp_arg_tensor(input),
			    amp_arg_tensor(weight), amp_arg_opt_tensor(bias),
			    amp_arg_ints(2, stride), amp_arg_ints(2, padding),
			    amp_arg_ints(2, dilation), amp_arg_int(groups)));
}

/* ------------------------------------------------------------ elementwise */

amp_tensor *amp_add(amp_tensor *a, amp_tensor *b)
{
	return run(AMP_CALL(ADD, amp_arg_tensor(a), amp_arg_tensor(b),
			    number(1, true)));
}

amp_tensor *amp_sub(amp_tensor *a, amp_tensor *b)
{
	return run(AMP_CALL(SUB, amp_arg_tensor(a), amp_arg_tensor(b),
			    number(1, true)));
}

amp_tensor *amp_mul(amp_tensor *a, amp_tensor *b)
{
	return run(AMP_CALL(MUL, amp_arg_tensor(a), amp_arg_tensor(b)));
}

amp_tensor *amp_div(amp_tensor *a, amp_tensor *b)
{
	return run(AMP_CALL(DIV, amp_arg_tensor(a), amp_arg_tensor(b)));
}

/* C has one number type: a whole value is taken for a Python int (x + 2),
 * anything else for a Python float (x + 2.5). */
static bool is_integral_value(double value)
{
	return value >= -9.2e18 && value <= 9.2e18 &&
	       value == (double)(int64_t)value;
}

amp_tensor *amp_add_scalar(amp_tensor *a, double value)
{
	return run(AMP_CALL(ADD_SCALAR, amp_arg_tensor(a),
			    number(value, is_integral_value(value)),
			    number(1, true)));
}

amp_tensor *amp_mul_scalar(amp_tensor *a, double value)
{
	return run(AMP_CALL(MUL_SCALAR, amp_arg_tensor(a),
			    number(value, is_integral_value(value))));
}

amp_tensor *amp_neg(amp_tensor *a)
{
	return run(AMP_CALL(NEG, amp_arg_tensor(a)));
}

amp_tensor *amp_pow(amp_tensor *a, amp_tensor *exponent)
{
	return run(AMP_CALL(POW, amp_arg_tensor(a), amp_arg_tensor(exponent)));
}

amp_tensor *amp_pow_scalar(amp_tensor *a, double exponent)
{
	return run(AMP_CALL(POW_SCALAR, amp_arg_tensor(a),
			    number(exponent, is_integral_value(exponent))));
}

amp_tensor *amp_exp(amp_tensor *a)
{
	return run(AMP_CALL(EXP, amp_arg_tensor(a)));
}

amp_tensor *amp_log(amp_tensor *a)
{
	return run(AMP_CALL(LOG, amp_arg_tensor(a)));
}

amp_tensor *amp_relu(amp_tensor *a)
{
	return run(AMP_CALL(RELU, amp_arg_tensor(a)));
}

amp_tensor *amp_gelu(amp_tensor *a, bool tanh_approximation)
{
	return run(AMP_CALL(GELU, amp_arg_tensor(a),
			    amp_arg_bool(tanh_approximation)));
}

amp_tensor *amp_sigmoid(amp_tensor *a)
{
	return run(AMP_CALL(SIGMOID, amp_arg_tensor(a)));
}

amp_tensor *amp_tanh(amp_tensor *a)
{
	return run(AMP_CALL(TANH, amp_arg_tensor(a)));
}

amp_tensor *amp_addcmul(amp_tensor *self, amp_tensor *tensor1,
			amp_tensor *tensor2, double value)
{
	return run(AMP_CALL(ADDCMUL, amp_arg_tensor(self),
			    amp_arg_tensor(tensor1), amp_arg_tensor(tensor2),
			    number(value, is_integral_value(value))));
}

/* ------------------------------------------- normalisation, reductions */

amp_tensor *amp_softmax(amp_tensor *a, int dim, enum amp_dtype dtype)
{
	return run(AMP_CALL(SOFTMAX, amp_arg_tensor(a), amp_arg_int(dim),
			    amp_arg_dtype(dtype)));
}

amp_tensor *amp_log_softmax(amp_tensor *a, int dim, enum amp_dtype dtype)
{
	return run(AMP_CALL(LOG_SOFTMAX, amp_arg_tensor(a), amp_arg_int(dim),
			    amp_arg_dtype(dtype)));
}

amp_tensor *amp_layer_norm(amp_tensor *input, int normalized_ndim,
			   const int64_t *normalized_shape, amp_tensor *weight,
			   amp_tensor *bias, double eps)
{
	return run(AMP_CALL(LAYER_NORM, amp_arg_tensor(input),
			    shape_arg(normalized_ndim, normalized_shape),
			    amp_arg_opt_tensor(weight),
			    amp_arg_opt_tensor(bias), amp_arg_double(eps)));
}

amp_tensor *amp_sum(amp_tensor *a, enum amp_dtype dtype)
{
	return run(AMP_CALL(SUM, amp_arg_tensor(a), amp_arg_dtype(dtype)));
}

amp_tensor *amp_sum_dim(amp_tensor *a, int ndims, const int64_t *dims,
			bool keepdim, enum amp_dtype dtype)
{
	return run(AMP_CALL(SUM_DIM, amp_arg_tensor(a), shape_arg(ndims, dims),
			    amp_arg_bool(keepdim), amp_arg_dtype(dtype)));
}

amp_tensor *amp_mean(amp_tensor *a, enum amp_dtype dtype)
{
	return run(AMP_CALL(MEAN, amp_arg_tensor(a), amp_arg_dtype(dtype)));
}

amp_tensor *amp_mean_dim(amp_tensor *a, int ndims, const int64_t *dims,
			 bool keepdim, enum amp_dtype dtype)
{
	return run(AMP_CALL(MEAN_DIM, amp_arg_tensor(a), shape_arg(ndims, dims),
			    amp_arg_bool(keepdim), amp_arg_dtype(dtype)));
}

amp_tensor *amp_cat(amp_tensor *const *tensors, int count, int dim)
{
	AMP_ASSERT(count >= 0 && (count == 0 || tensors));
	return run(
		AMP_CALL(CAT, amp_arg_list(tensors, count), amp_arg_int(dim)));
}

amp_tensor *amp_stack(amp_tensor *const *tensors, int count, int dim)
{
	AMP_ASSERT(count >= 0 && (count == 0 || tensors));
	return run(AMP_CALL(STACK, amp_arg_list(tensors, count),
			    amp_arg_int(dim)));
}

amp_tensor *amp_embedding(amp_tensor *weight, amp_tensor *indices)
{
	return run(AMP_CALL(EMBEDDING, amp_arg_tensor(weight),
			    amp_arg_tensor(indices)));
}

amp_tensor *amp_dropout(amp_tensor *input, double p, bool train)
{
	return run(AMP_CALL(DROPOUT, amp_arg_tensor(input), amp_arg_double(p),
			    amp_arg_bool(train)));
}

/* ---------------------------------------------------------------- losses */

amp_tensor *amp_mse_loss(amp_tensor *input, amp_tensor *target,
			 enum amp_reduction reduction)
{
	AMP_ASSERT(reduction < AMP_REDUCTION_COUNT);
	return run(AMP_CALL(MSE_LOSS, amp_arg_tensor(input),
			    amp_arg_tensor(target), amp_arg_int(reduction)));
}

amp_tensor *amp_nll_loss(amp_tensor *log_probs, amp_tensor *target,
			 amp_tensor *weight, enum amp_reduction reduction,
			 int64_t ignore_index)
{
	AMP_ASSERT(reduction < AMP_REDUCTION_COUNT);
	return run(AMP_CALL(NLL_LOSS, amp_arg_tensor(log_probs),
			    amp_arg_tensor(target), amp_arg_opt_tensor(weight),
			    amp_arg_int(reduction), amp_arg_int(ignore_index)));
}

amp_tensor *amp_cross_entropy(amp_tensor *logits, amp_tensor *target,
			      amp_tensor *weight, enum amp_reduction reduction,
			      int64_t ignore_index)
{
	AMP_ASSERT(reduction < AMP_REDUCTION_COUNT);
	return run(AMP_CALL(CROSS_ENTROPY, amp_arg_tensor(logits),
			    amp_arg_tensor(target), amp_arg_opt_tensor(weight),
			    amp_arg_int(reduction), amp_arg_int(ignore_index),
			    amp_arg_double(0.0)));
}

amp_tensor *amp_binary_cross_entropy(amp_tensor *input, amp_tensor *target,
				     amp_tensor *weight,
				     enum amp_reduction reduction)
{
	AMP_ASSERT(reduction < AMP_REDUCTION_COUNT);
	return run(AMP_CALL(BINARY_CROSS_ENTROPY, amp_arg_tensor(input),
			    amp_arg_tensor(target), amp_arg_opt_tensor(weight),
			    amp_arg_int(reduction)));
}

amp_tensor *amp_binary_cross_entropy_with_logits(amp_tensor *input,
						 amp_tensor *target,
						 amp_tensor *weight,
						 amp_tensor *pos_weight,
						 enum amp_reduction reduction)
{
	AMP_ASSERT(reduction < AMP_REDUCTION_COUNT);
	return run(AMP_CALL(BCE_WITH_LOGITS, amp_arg_tensor(input),
			    amp_arg_tensor(target), amp_arg_opt_tensor(weight),
			    amp_arg_opt_tensor(pos_weight),
			    amp_arg_int(reduction)));
}
