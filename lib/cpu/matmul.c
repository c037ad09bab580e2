/* matmul: a composite, as ATen's CompositeImplicit _matmul_impl is.  It
 * picks dot / matrix-vector / mm / folded mm / broadcast bmm by the
 * operands' dimensions and builds each case from dispatched ops
 * (reshape, unsqueeze, expand, transpose, mm, bmm), so traces show the
 * inner ops and autocast applies to them.  ATen's dot and mv become mm on
 * reshaped operands here; their argument checks and messages are kept.
 * Argument layout: matmul (self, other) */
#include "cpu_ops.h"
#include "grad/grad_ops.h" /* expand has no public function */

#include <inttypes.h>
#include <string.h>

/* A chain of dispatched ops: each step consumes the previous tensor. */
static struct amp_tensor *then(struct amp_tensor *previous,
			       struct amp_tensor *next)
{
	amp_tensor_free(previous);
	return next;
}

static struct amp_tensor *reshape(struct amp_tensor *t, int ndim,
				  const int64_t *shape)
{
	return t ? amp_reshape(t, ndim, shape) : NULL;
}

/* ATen returns _unsafe_view(product, shape): the product's storage under
 * the output shape, which is not a view (its base, the fresh product, is
 * referenced by nothing else).  Consumes product. */
static struct amp_tensor *unsafe_view(struct amp_tensor *product, int ndim,
				      const int64_t *shape)
{
	struct amp_tensor *out = reshape(product, ndim, shape);

	amp_tensor_free(product);
	if (out && out->base) {
		amp_tensor_free(out->base);
		out->base = NULL;
	}
	return out;
}

static int dot(struct amp_call *call, struct amp_tensor *a,
	       struct amp_tensor *b)
{
	int64_t n = a->shape[0];

	if (a->dtype != b->dtype) {
		amp_error(AMP_ERR_DTYPE,
			  "dot : expected both vectors to have same dtype, but "
			  "found %s and %s",
			  amp_dtype_torch_name(a->dtype),
			  amp_dtype_torch_name(b->dtype));
		return cpu_error_with(AMP_ERR_DTYPE, a, b);
	}
	if (b->shape[0] != n) {
		amp_error(AMP_ERR_INVALID,
			  "inconsistent tensor size, expected tensor [%" PRId64
			  "] and src [%" PRId64 "] to have the same number of "
			  "elements, but got %" PRId64 " and %" PRId64
			  " elements respectively",
			  n, b->shape[0], n, b->shape[0]);
		return cpu_error_with(AMP_ERR_INVALID, a, b);
	}
	int64_t row[2] = { 1, n }, column[2] = { n, 1 };
	struct amp_tensor *a2 = amp_reshape(a, 2, row);
	struct amp_tensor *b2 = a2 ? amp_reshape(b, 2, column) : NULL;
	struct amp_tensor *product = b2 ? amp_mm(a2, b2) : NULL;
	amp_tensor_free(a2);
	amp_tensor_free(b2);
	return cpu_set_output(call, unsafe_view(product, 0, NULL));
}

/* mat (m, k) @ vec (k) as mm(mat, vec.unsqueeze(1)) reshaped to out. */
static struct amp_tensor *matrix_vector(struct amp_tensor *mat,
					struct amp_tensor *vec, int out_ndim,
					const int64_t *out_shape)
{
	if (mat->shape[1] != vec->shape[0]) {
		amp_error(AMP_ERR_INVALID,
			  "size mismatch, got input (%" PRId64 "), mat (%" PRId64
			  "x%" PRId64 "), vec (%" PRId64 ")",
			  mat->shape[0], mat->shape[0], mat->shape[1],
			  vec->shape[0]);
		cpu_error_with(AMP_ERR_INVALID, mat, vec);
		return NULL;
	}
	struct amp_tensor *column = amp_unsqueeze(vec, 1);
	struct amp_tensor *product = column ? amp_mm(mat, column) : NULL;
	amp_tensor_free(column);
	return unsafe_view(product, out_ndim, out_shape);
}

/* ATen's should_fold: fold the batch of the larger operand into mm rows
 * when that needs no copy (or when the smaller operand requires grad). */
static bool should_fold(const struct amp_tensor *a, const struct amp_tensor *b)
{
	bool a_larger = a->ndim >= b->ndim;
	const struct amp_tensor *big = a_larger ? a : b;
	int big_ndim = big->ndim, small_ndim = a_larger ? b->ndim : a->ndim;
	int64_t shape[AMP_MAX_DIMS], strides[AMP_MAX_DIMS];

	if (!(big_ndim >= 3 && small_ndim <= 2))
		return false;
	if ((a_larger ? b : a)->requires_grad)
		return true;
	if (a->ndim == 2)
		return false;
	memcpy(shape, big->shape, sizeof shape);
	memcpy(strides, big->strides, sizeof strides);
	if (!a_larger) { /* big is b.mT() */
		shape[big_ndim - 1] = big->shape[big_ndim - 2];
		shape[big_ndim - 2] = big->shape[big_ndim - 1];
		strides[big_ndim - 1] = big->strides[big_ndim - 2];
		strides[big_ndim - 2] = big->strides[big_ndim - 1];
	}
	if (amp_shape_numel(big_ndim, shape) == 0)
		return true;
	for (int i = 0; i < big_ndim - 2; i++)
		if (strides[i] != strides[i + 1] * shape[i + 1])
			return false;
	return true;
}

static int folded(struct amp_call *call, struct amp_tensor *a,
		  struct amp_tensor *b)
{
	bool transpose = b->ndim > a->ndim;
	struct amp_tensor *t1 = transpose ? amp_transpose(b, -1, -2)
					  : amp_tensor_ref(a);
	struct amp_tensor *t2 = !transpose ? amp_tensor_ref(b)
				: a->ndim == 2 ? amp_t(a)
					       : amp_tensor_ref(a);
	struct amp_tensor *out = NULL;

	if (t1 && t2) {
		int64_t shape[AMP_MAX_DIMS];
		int ndim = t1->ndim - 1;
		memcpy(shape, t1->shape, sizeof shape);
		int64_t rows = amp_shape_numel(ndim, shape);
		int64_t fold[2] = { rows, t1->shape[t1->ndim - 1] };
		struct amp_tensor *t1_folded = amp_reshape(t1, 2, fold);
		if (t1_folded && t2->ndim == 2) {
			shape[ndim++] = t2->shape[1];
			struct amp_tensor *product = amp_mm(t1_folded, t2);
			out = unsafe_view(product, ndim, shape);
			if (out && transpose) {
				out = then(out, amp_transpose(out, -1, -2));
				out = then(out, out ? amp_contiguous(out) : NULL);
			}
		} else if (t1_folded) {
			out = matrix_vector(t1_folded, t2, ndim, shape);
		}
		amp_tensor_free(t1_folded);
	}
	amp_tensor_free(t1);
	amp_tensor_free(t2);
	return cpu_set_output(call, out);
}

static struct amp_tensor *expand_reshape(struct amp_tensor *t, int ndim,
					 const int64_t *shape, int flat_ndim,
					 const int64_t *flat)
{
	struct amp_tensor *expanded = grad_op_expand(t, ndim, shape);

	return then(expanded, reshape(expanded, flat_ndim, flat));
}

static int batched(struct amp_call *call, struct amp_tensor *a,
		   struct amp_tensor *b)
{
	int da = a->ndim, db = b->ndim;
	int64_t n = da > 1 ? a->shape[da - 2] : 1, m1 = a->shape[da - 1];
	int64_t m2 = db > 1 ? b->shape[db - 2] : b->shape[0];
	int64_t p = db > 1 ? b->shape[db - 1] : 1;
	int batch_a = da > 2 ? da - 2 : 0, batch_b = db > 2 ? db - 2 : 0;
	int64_t shape[AMP_MAX_DIMS + 2];
	int ndim = batch_a;
	int status;

	memcpy(shape, a->shape, (size_t)batch_a * sizeof *shape);
	status = cpu_broadcast_into(&ndim, shape, batch_b, b->shape);
	if (status != AMP_OK)
		return cpu_error_with(status, a, b);
	if (ndim + 2 > AMP_MAX_DIMS)
		return amp_error(AMP_ERR_UNSUPPORTED,
				 "matmul: more than %d dimensions", AMP_MAX_DIMS);
	int64_t batch = amp_shape_numel(ndim, shape);
	int64_t size_a[AMP_MAX_DIMS], size_b[AMP_MAX_DIMS];
	memcpy(size_a, shape, (size_t)ndim * sizeof *shape);
	memcpy(size_b, shape, (size_t)ndim * sizeof *shape);
	size_a[ndim] = n;
	size_a[ndim + 1] = m1;
	size_b[ndim] = m2;
	size_b[ndim + 1] = p;
	int64_t flat_a[3] = { batch, n, m1 }, flat_b[3] = { batch, m2, p };
	bool vector_rhs = db == 1;

	struct amp_tensor *ea = expand_reshape(a, ndim + 2, size_a, 3, flat_a);
	struct amp_tensor *eb =
		ea ? expand_reshape(b, ndim + (vector_rhs ? 1 : 2), size_b,
				    vector_rhs ? 2 : 3, flat_b)
		   : NULL;
	if (eb && vector_rhs)
		eb = then(eb, amp_unsqueeze(eb, 2));
	struct amp_tensor *product = eb ? amp_bmm(ea, eb) : NULL;
	amp_tensor_free(ea);
	amp_tensor_free(eb);
	if (da > 1)
		shape[ndim++] = n;
	if (db > 1)
		shape[ndim++] = p;
	return cpu_set_output(call, unsafe_view(product, ndim, shape));
}

static int matmul(struct amp_call *call, struct amp_tensor *a,
		  struct amp_tensor *b)
{
	int da = a->ndim, db = b->ndim;

	if (da == 0 || db == 0) {
		amp_error(AMP_ERR_INVALID,
			  "both arguments to matmul need to be at least 1D, but "
			  "they are %dD and %dD",
			  da, db);
		return cpu_error_with(AMP_ERR_INVALID, a, b);
	}
	if (da == 1 && db == 1)
		return dot(call, a, b);
	if (da == 2 && db == 1)
		return cpu_set_output(call, matrix_vector(a, b, 1, a->shape));
	if (da == 1 && db == 2) {
		struct amp_tensor *row = amp_unsqueeze(a, 0);
		struct amp_tensor *product = row ? amp_mm(row, b) : NULL;
		amp_tensor_free(row);
		return cpu_set_output(call,
				      unsafe_view(product, 1, b->shape + 1));
	}
	if (da == 2 && db == 2)
		return cpu_set_output(call, amp_mm(a, b));
	if (should_fold(a, b))
		return folded(call, a, b);
	/* a size-1 batch of a grad-requiring operand is squeezed rather
	 * than broadcast (ATen does it for its backward's sake) */
	if (da == 3 && db == 3 && a->shape[0] != b->shape[0]) {
		bool squeeze_a = a->shape[0] == 1 && a->requires_grad;
		bool squeeze_b = b->shape[0] == 1 && b->requires_grad;
		if (squeeze_a || squeeze_b) {
			struct amp_tensor *squeezed =
				squeeze_a ? reshape(a, 2, a->shape + 1)
					  : reshape(b, 2, b->shape + 1);
			if (!squeezed)
				return amp_last_status();
			int status = squeeze_a ? matmul(call, squeezed, b)
					       : matmul(call, a, squeezed);
			amp_tensor_free(squeezed);
			return status;
		}
	}
	return batched(call, a, b);
}

int amp_forward_matmul(struct amp_call *call)
{
	return matmul(call, cpu_arg_tensor(call, 0), cpu_arg_tensor(call, 1));
}
