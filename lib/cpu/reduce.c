/* Sum and mean over all or some dimensions.  The input is read in the
 * output dtype (ATen casts it first), accumulated in opmath with pairwise
 * summation (accurate like ATen's cascade sum) and rounded once.  Integer
 * and bool sums return int64 unless a dtype is given; mean of f16/bf16
 * divides in f32 before its single rounding, as ATen's CPU mean does.
 * Argument layouts:
 *   sum (self, dtype?)          sum.dim_IntList (self, ints dim, bool keepdim, dtype?)
 *   mean (self, dtype?)         mean.dim (self, ints dim, bool keepdim, dtype?) */
#include "cpu_ops.h"
#include "amp_scalar.h"

#include <stdlib.h>
#include <string.h>

CPU_VECTORIZE_LOOPS

/* Pairwise summation: error grows with log(n) instead of n. */
#define DEFINE_PAIRWISE(name, T)                                             \
	static T name(const T *x, int64_t n)                                 \
	{                                                                    \
		if (n <= 256) {                                              \
			T lanes[8] = { 0 };                                  \
			int64_t i = 0;                                       \
			for (; i + 8 <= n; i += 8)                           \
				for (int l = 0; l < 8; l++)                  \
					lanes[l] += x[i + l];                \
			for (; i < n; i++)                                   \
				lanes[0] += x[i];                            \
			return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + \
			       ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));  \
		}                                                            \
		int64_t half = (n / 2 + 7) & ~(int64_t)7;                    \
		return name(x, half) + name(x + half, n - half);             \
	}

DEFINE_PAIRWISE(pairwise_f32, float)
DEFINE_PAIRWISE(pairwise_f64, double)

/* The same sums, bit for bit, for `width` columns at once: out[c] is
 * pairwise over x[0][c], x[ld][c], ... (n rows), with pairwise's tree, so
 * a reduction over leading dims reads rows in place instead of gathering
 * a transposed copy.  IN is the element type read, LOAD(v) its opmath
 * value: bf16 rows are widened as they are read (exactly). */
#define COLUMN_BLOCK 256
#define DEFINE_PAIRWISE_COLUMNS(name, T, IN, LOAD)                           \
	static void name(const IN *x, int64_t n, int64_t ld, int width,      \
			 T *out)                                             \
	{                                                                    \
		if (n <= 256) {                                              \
			T lanes[8][COLUMN_BLOCK] = { { 0 } };                \
			int64_t i = 0;                                       \
			for (; i + 8 <= n; i += 8)                           \
				for (int l = 0; l < 8; l++)                  \
					for (int c = 0; c < width; c++)      \
						lanes[l][c] += LOAD(         \
							x[(i + l) * ld + c]);\
			for (; i < n; i++)                                   \
				for (int c = 0; c < width; c++)              \
					lanes[0][c] += LOAD(x[i * ld + c]);  \
			for (int c = 0; c < width; c++)                      \
				out[c] = ((lanes[0][c] + lanes[1][c]) +      \
					  (lanes[2][c] + lanes[3][c])) +     \
					 ((lanes[4][c] + lanes[5][c]) +      \
					  (lanes[6][c] + lanes[7][c]));      \
			return;                                              \
		}                                                            \
		int64_t half = (n / 2 + 7) & ~(int64_t)7;                    \
		T right[COLUMN_BLOCK];                                       \
		name(x, half, ld, width, out);                               \
		name(x + half * ld, n - half, ld, width, right);             \
		for (int c = 0; c < width; c++)                              \
			out[c] = out[c] + right[c];                          \
	}

#define LOAD_SAME(v) (v)
#define LOAD_BF16(v) amp_scalar_bf16_to_f32(v)
DEFINE_PAIRWISE_COLUMNS(pairwise_columns_f32, float, float, LOAD_SAME)
DEFINE_PAIRWISE_COLUMNS(pairwise_columns_f64, double, double, LOAD_SAME)
DEFINE_PAIRWISE_COLUMNS(pairwise_columns_bf16, float, uint16_t, LOAD_BF16)

/* out[c] = sum over the n rows of column c of the (n, cols) matrix in,
 * divided by divisor: cpu_reduce_rows of the transpose, same bits. */
static void reduce_columns(enum amp_dtype dtype, enum amp_dtype opmath,
			   const void *in, int64_t n, int64_t cols,
			   double divisor, void *out)
{
	for (int64_t c = 0; c < cols; c += COLUMN_BLOCK) {
		int width = (int)(cols - c < COLUMN_BLOCK ? cols - c : COLUMN_BLOCK);
		if (opmath == AMP_DTYPE_F32) {
			float *o = (float *)out + c;
			if (dtype == AMP_DTYPE_BF16)
				pairwise_columns_bf16((const uint16_t *)in + c,
						      n, cols, width, o);
			else
				pairwise_columns_f32((const float *)in + c, n,
						     cols, width, o);
			for (int j = 0; j < width; j++)
				o[j] = o[j] / (float)divisor;
		} else {
			double *o = (double *)out + c;
			pairwise_columns_f64((const double *)in + c, n, cols, width,
					     o);
			for (int j = 0; j < width; j++)
				o[j] = o[j] / divisor;
		}
	}
}

static int64_t sum_i64(const int64_t *x, int64_t n)
{
	uint64_t acc = 0;

	for (int64_t i = 0; i < n; i++)
		acc += (uint64_t)x[i];
	return (int64_t)acc;
}

void cpu_reduce_rows(enum amp_dtype opmath, const void *in, int64_t rows,
			int64_t cols, double divisor, void *out)
{
	for (int64_t r = 0; r < rows; r++) {
		switch (opmath) {
		case AMP_DTYPE_F32:
			((float *)out)[r] =
				pairwise_f32((const float *)in + r * cols, cols) /
				(float)divisor;
			break;
		case AMP_DTYPE_F64:
			((double *)out)[r] =
				pairwise_f64((const double *)in + r * cols, cols) /
				divisor;
			break;
		default:
			((int64_t *)out)[r] =
				sum_i64((const int64_t *)in + r * cols, cols);
			break;
		}
	}
}

/* Which dims are reduced; an empty list reduces all (ATen's dim=[]). */
static int reduced_mask(const struct amp_tensor *self,
			const struct amp_arg *dims, bool *mask)
{
	memset(mask, 0, AMP_MAX_DIMS * sizeof *mask);
	if (!dims || dims->ints.count == 0) {
		for (int d = 0; d < self->ndim; d++)
			mask[d] = true;
		return AMP_OK;
	}
	for (int i = 0; i < dims->ints.count; i++) {
		int64_t dim = dims->ints.v[i];
		if (!cpu_wrap_dim(&dim, self->ndim))
			return cpu_error_with(amp_last_status(), self, NULL);
		if (self->ndim == 0)
			continue;
		if (mask[dim]) {
			amp_error(AMP_ERR_INVALID,
				  "dim %lld appears multiple times in the list "
				  "of dims",
				  (long long)dim);
			return cpu_error_with(AMP_ERR_INVALID, self, NULL);
		}
		mask[dim] = true;
	}
	return AMP_OK;
}

/* Whether the reduced dims are dims 0..r-1, with r >= 1 and a dim kept
 * after them (a bias gradient's sum over the batch). */
static bool reduces_leading_dims(const struct amp_tensor *self,
				 const bool *mask)
{
	int r = 0;

	while (r < self->ndim && mask[r])
		r++;
	for (int d = r; d < self->ndim; d++)
		if (mask[d])
			return false;
	return r >= 1 && r < self->ndim;
}

/* reduce() for a contiguous self reduced over its leading dims: the rows
 * are summed in place, column-wise. */
static int reduce_leading(struct amp_call *call, struct amp_tensor *self,
			  const bool *mask, bool keepdim, enum amp_dtype result,
			  enum amp_dtype opmath, bool mean)
{
	int64_t out_shape[AMP_MAX_DIMS];
	int out_ndim = 0;
	int64_t rows = 1, cols = 1;

	for (int d = 0; d < self->ndim; d++) {
		if (mask[d])
			rows *= self->shape[d];
		else
			cols *= self->shape[d];
		if (!mask[d] || keepdim)
			out_shape[out_ndim++] = mask[d] ? 1 : self->shape[d];
	}
	struct amp_tensor *out =
		amp_tensor_alloc(out_ndim, out_shape, result, self->device);
	if (!out)
		return amp_last_status();
	void *owned = NULL;
	/* bf16 rows are read as they are (widened in the sum), not copied */
	enum amp_dtype read = self->dtype == AMP_DTYPE_BF16 &&
				      result == AMP_DTYPE_BF16
				      ? AMP_DTYPE_BF16
				      : opmath;
	const void *in = read == AMP_DTYPE_BF16
				 ? amp_tensor_data(self)
				 : cpu_load(self, result, opmath, &owned);
	void *values = cpu_alloc((size_t)cols, opmath);
	if (!in || !values) {
		free(owned);
		free(values);
		amp_tensor_free(out);
		return amp_last_status();
	}
	reduce_columns(read, opmath, in, rows, cols, mean ? (double)rows : 1.0,
		       values);
	cpu_store(out, values, opmath);
	free(owned);
	free(values);
	return cpu_set_output(call, out);
}

static int reduce(struct amp_call *call, const struct amp_arg *dims,
		  bool keepdim, enum amp_dtype result, bool mean)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	enum amp_dtype opmath = cpu_opmath(result);
	bool mask[AMP_MAX_DIMS];
	int status = reduced_mask(self, dims, mask);

	if (status != AMP_OK)
		return status;
	if (opmath != AMP_DTYPE_I64 && amp_tensor_is_contiguous(self) &&
	    reduces_leading_dims(self, mask))
		return reduce_leading(call, self, mask, keepdim, result, opmath,
				      mean);
	/* self permuted to (kept dims..., reduced dims...): each output
	 * element is then one contiguous row of the gathered copy */
	struct amp_tensor permuted;
	cpu_view_layout(self, &permuted);
	int64_t out_shape[AMP_MAX_DIMS];
	int out_ndim = 0, p = 0;
	int64_t rows = 1, cols = 1;
	for (int d = 0; d < self->ndim; d++) {
		if (mask[d]) {
			if (keepdim)
				out_shape[out_ndim++] = 1;
			continue;
		}
		out_shape[out_ndim++] = self->shape[d];
		permuted.shape[p] = self->shape[d];
		permuted.strides[p++] = self->strides[d];
		rows *= self->shape[d];
	}
	for (int d = 0; d < self->ndim; d++) {
		if (!mask[d])
			continue;
		permuted.shape[p] = self->shape[d];
		permuted.strides[p++] = self->strides[d];
		cols *= self->shape[d];
	}
	struct amp_tensor *out =
		amp_tensor_alloc(out_ndim, out_shape, result, self->device);
	if (!out)
		return amp_last_status();
	void *owned = NULL;
	const void *in = cpu_load(&permuted, result, opmath, &owned);
	void *values = cpu_alloc((size_t)rows, opmath);
	if (!in || !values) {
		free(owned);
		free(values);
		amp_tensor_free(out);
		return amp_last_status();
	}
	cpu_reduce_rows(opmath, in, rows, cols, mean ? (double)cols : 1.0, values);
	cpu_store(out, values, opmath);
	free(owned);
	free(values);
	return cpu_set_output(call, out);
}

static enum amp_dtype sum_dtype(const struct amp_tensor *self,
				enum amp_dtype dtype)
{
	if (dtype != AMP_DTYPE_NONE)
		return dtype;
	return amp_dtype_is_floating(self->dtype) ? self->dtype : AMP_DTYPE_I64;
}

/* mean's dtype rule and messages (ATen's mean_out meta). */
static int mean_dtype(const struct amp_tensor *self, enum amp_dtype dtype,
		      enum amp_dtype *result)
{
	bool given = dtype != AMP_DTYPE_NONE;

	*result = given ? dtype : self->dtype;
	if (amp_dtype_is_floating(*result))
		return AMP_OK;
	amp_error(AMP_ERR_DTYPE,
		  "mean(): could not infer output dtype. %s dtype must be "
		  "either a floating point or complex dtype. Got: %s",
		  given ? "Optional" : "Input", amp_dtype_torch_name(*result));
	return cpu_error_with(AMP_ERR_DTYPE, self, NULL);
}

int amp_forward_sum(struct amp_call *call)
{
	return reduce(call, NULL, false,
		      sum_dtype(cpu_arg_tensor(call, 0), call->args[1].dtype),
		      false);
}

int amp_forward_sum_dim(struct amp_call *call)
{
	return reduce(call, &call->args[1], call->args[2].b,
		      sum_dtype(cpu_arg_tensor(call, 0), call->args[3].dtype),
		      false);
}

int amp_forward_mean(struct amp_call *call)
{
	enum amp_dtype result;
	int status = mean_dtype(cpu_arg_tensor(call, 0), call->args[1].dtype,
				&result);

	if (status != AMP_OK)
		return status;
	return reduce(call, NULL, false, result, true);
}

int amp_forward_mean_dim(struct amp_call *call)
{
	enum amp_dtype result;
	int status = mean_dtype(cpu_arg_tensor(call, 0), call->args[3].dtype,
				&result);

	if (status != AMP_OK)
		return status;
	return reduce(call, &call->args[1], call->args[2].b, result, true);
}
