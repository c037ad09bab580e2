/* The CUDA backend's op glue: reads an amp_call the way the CPU kernel
 * does (argument layouts in lib/ops.c), decides the output's shape and
 * dtype, and runs the module's kernel.  It handles the common float cases
 * (f32/f16/bf16, any strides, broadcasting); anything else returns
 * AMP_CUDA_UNSUPPORTED before touching anything, and lib/backend.c runs
 * the CPU kernel over host copies instead, which also produces PyTorch's
 * error messages for invalid calls. */
#include "backend.h"
#include "cpu/cpu_ops.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define UNSUPPORTED AMP_CUDA_UNSUPPORTED

static bool float_dtype(enum amp_dtype dtype)
{
	return dtype == AMP_DTYPE_F32 || dtype == AMP_DTYPE_F16 ||
	       dtype == AMP_DTYPE_BF16;
}

static struct amp_cuda_shape shape_of(int ndim, const int64_t *size)
{
	struct amp_cuda_shape shape = { .ndim = ndim };

	if (ndim)
		memcpy(shape.size, size, (size_t)ndim * sizeof *size);
	return shape;
}

static struct amp_tensor *gpu_tensor(int ndim, const int64_t *shape,
				     enum amp_dtype dtype)
{
	return amp_tensor_alloc(ndim, shape, dtype, AMP_DEVICE_CUDA);
}

/* Sets `out` as the call's output when `status` (an amp status, or
 * UNSUPPORTED) is AMP_OK, else frees it. */
static int finish(struct amp_call *call, struct amp_tensor *out, int status)
{
	if (status != AMP_OK) {
		amp_tensor_free(out);
		return status;
	}
	call->outputs[call->noutputs++] = out;
	return AMP_OK;
}

/* t's values as a contiguous tensor of `dtype` on the GPU: t itself (a
 * new reference) when it already is one, else a converted copy.  NULL
 * with *status set (UNSUPPORTED or an error). */
static struct amp_tensor *contiguous_as(const struct amp_cuda_module *m,
					struct amp_tensor *t,
					enum amp_dtype dtype, int *status)
{
	if (t->dtype == dtype && amp_tensor_is_contiguous(t))
		return amp_tensor_ref(t);
	struct amp_tensor *copy = gpu_tensor(t->ndim, t->shape, dtype);
	if (!copy) {
		*status = amp_last_status();
		return NULL;
	}
	struct amp_cuda_shape shape = shape_of(t->ndim, t->shape);
	*status = amp_cuda_status(m, m->convert(amp_tensor_data(copy), dtype,
						amp_tensor_data(t), t->dtype,
						&shape, t->strides));
	if (*status != AMP_OK) {
		amp_tensor_free(copy);
		return NULL;
	}
	return copy;
}

/* Strides that read t broadcast to (ndim, shape), 0 along broadcast
 * dims; false when t does not broadcast to it. */
static bool broadcast_strides(const struct amp_tensor *t, int ndim,
			      const int64_t *shape, int64_t *strides)
{
	if (t->ndim > ndim)
		return false;
	for (int d = ndim - 1, s = t->ndim - 1; d >= 0; d--, s--) {
		int64_t size = s >= 0 ? t->shape[s] : 1;
		if (size != shape[d] && size != 1)
			return false;
		strides[d] = s >= 0 && size == shape[d] && size != 1
				     ? t->strides[s]
				     : 0;
	}
	return true;
}

/* ------------------------------------------------------- elementwise */

static int unary(const struct amp_cuda_module *m, struct amp_call *call,
		 enum amp_cuda_unary op, float param)
{
	struct amp_tensor *self = call->args[0].tensor;

	if (!AMP_CUDA_HAS(m, unary) || !float_dtype(self->dtype) ||
	    amp_tensor_numel(self) == 0)
		return UNSUPPORTED;
	struct amp_tensor *out = gpu_tensor(self->ndim, self->shape, self->dtype);
	if (!out)
		return amp_last_status();
	struct amp_cuda_shape shape = shape_of(self->ndim, self->shape);
	return finish(call, out,
		      amp_cuda_status(m, m->unary(op, amp_tensor_data(out),
						  amp_tensor_data(self),
						  self->dtype, &shape,
						  self->strides, param)));
}

/* add/sub (self, other, Scalar alpha), mul/div (self, other). */
static int binary(const struct amp_cuda_module *m, struct amp_call *call,
		  enum amp_cuda_binary op)
{
	struct amp_tensor *a = call->args[0].tensor, *b = call->args[1].tensor;
	float alpha = call->nargs > 2 ? (float)call->args[2].scalar.value : 1.0f;
	int64_t shape[AMP_MAX_DIMS], a_strides[AMP_MAX_DIMS], b_strides[AMP_MAX_DIMS];
	int ndim = a->ndim > b->ndim ? a->ndim : b->ndim;
	struct cpu_result_type state;

	if (!AMP_CUDA_HAS(m, binary) || !float_dtype(a->dtype) ||
	    !float_dtype(b->dtype))
		return UNSUPPORTED;
	cpu_result_type_init(&state);
	cpu_result_type_tensor(&state, a);
	cpu_result_type_tensor(&state, b);
	enum amp_dtype dtype = cpu_result_type_get(&state);
	if (!float_dtype(dtype))
		return UNSUPPORTED;
	for (int d = ndim - 1, da = a->ndim - 1, db = b->ndim - 1; d >= 0;
	     d--, da--, db--) {
		int64_t sa = da >= 0 ? a->shape[da] : 1;
		int64_t sb = db >= 0 ? b->shape[db] : 1;
		if (sa != sb && sa != 1 && sb != 1)
			return UNSUPPORTED; /* the CPU raises the error */
		shape[d] = sa == 1 ? sb : sa;
	}
	if (amp_shape_numel(ndim, shape) == 0 ||
	    !broadcast_strides(a, ndim, shape, a_strides) ||
	    !broadcast_strides(b, ndim, shape, b_strides))
		return UNSUPPORTED;
	struct amp_tensor *out = gpu_tensor(ndim, shape, dtype);
	if (!out)
		return amp_last_status();
	struct amp_cuda_shape s = shape_of(ndim, shape);
	return finish(call, out,
		      amp_cuda_status(m, m->binary(op, amp_tensor_data(out), dtype,
						   amp_tensor_data(a), a->dtype,
						   a_strides, amp_tensor_data(b),
						   b->dtype, b_strides, &s,
						   alpha)));
}

/* ----------------------------------------------------------- layout */

/* contiguous (self), clone (self), to.dtype (self, dtype). */
static int copy_op(const struct amp_cuda_module *m, struct amp_call *call,
		   enum amp_dtype dtype, bool return_self)
{
	struct amp_tensor *self = call->args[0].tensor;
	int status = AMP_OK;

	if (return_self) {
		call->outputs[call->noutputs++] = amp_tensor_ref(self);
		return AMP_OK;
	}
	if (!AMP_CUDA_HAS(m, convert))
		return UNSUPPORTED;
	struct amp_tensor *out = gpu_tensor(self->ndim, self->shape, dtype);
	if (!out)
		return amp_last_status();
	struct amp_cuda_shape shape = shape_of(self->ndim, self->shape);
	status = m->convert(amp_tensor_data(out), dtype, amp_tensor_data(self),
			    self->dtype, &shape, self->strides);
	return finish(call, out, amp_cuda_status(m, status));
}

/* ------------------------------------------------------------- GEMM */

/* One operand: its data and how cuBLAS must read it. */
struct matrix {
	struct amp_tensor *owner; /* a reference: the tensor read */
	bool trans;
	int64_t ld, batch_stride;
};

/* A (rows, cols) matrix with strides (s0, s1) as cuBLAS can read it:
 * row-major with leading dimension ld, or the transpose of a row-major
 * (cols, rows) matrix.  Strides of size-1 dims do not matter. */
static bool matrix_layout(int64_t rows, int64_t cols, int64_t s0, int64_t s1,
			  bool *trans, int64_t *ld)
{
	if ((cols <= 1 || s1 == 1) && (rows <= 1 || s0 >= cols)) {
		*trans = false;
		*ld = rows > 1 ? s0 : cols;
	} else if ((rows <= 1 || s0 == 1) && (cols <= 1 || s1 >= rows)) {
		*trans = true;
		*ld = cols > 1 ? s1 : rows;
	} else {
		return false;
	}
	if (*ld < 1)
		*ld = 1;
	return true;
}

/* The last two dims of t as a GEMM operand; a contiguous copy when its
 * strides fit neither layout.  false with *status when the copy fails. */
static bool as_matrix(const struct amp_cuda_module *m, struct amp_tensor *t,
		      struct matrix *mat, int *status)
{
	int r = t->ndim - 2;

	mat->owner = amp_tensor_ref(t);
	if (!matrix_layout(t->shape[r], t->shape[r + 1], t->strides[r],
			   t->strides[r + 1], &mat->trans, &mat->ld)) {
		amp_tensor_free(mat->owner);
		mat->owner = contiguous_as(m, t, t->dtype, status);
		if (!mat->owner)
			return false;
		matrix_layout(t->shape[r], t->shape[r + 1],
			      mat->owner->strides[r], mat->owner->strides[r + 1],
			      &mat->trans, &mat->ld);
	}
	mat->batch_stride = t->ndim == 3 ? mat->owner->strides[0] : 0;
	return true;
}

static bool fits_int(int64_t value)
{
	return value > 0 && value <= INT_MAX;
}

/* out (batch, rows, cols) or (rows, cols) = alpha * a @ b + beta * out,
 * out contiguous, already holding the beta term when beta != 0. */
static int gemm(const struct amp_cuda_module *m, struct amp_tensor *out,
		struct amp_tensor *a, bool a_transposed, struct amp_tensor *b,
		bool b_transposed, int64_t batch, int64_t rows, int64_t cols,
		int64_t inner, float alpha, float beta)
{
	struct matrix ma, mb;
	int status = AMP_OK;

	if (!as_matrix(m, a, &ma, &status))
		return status;
	if (!as_matrix(m, b, &mb, &status)) {
		amp_tensor_free(ma.owner);
		return status;
	}
	struct amp_cuda_gemm g = {
		.dtype = out->dtype,
		.trans_a = ma.trans != a_transposed,
		.trans_b = mb.trans != b_transposed,
		.m = rows,
		.n = cols,
		.k = inner,
		.a = amp_tensor_data(ma.owner),
		.lda = ma.ld,
		.stride_a = ma.batch_stride,
		.b = amp_tensor_data(mb.owner),
		.ldb = mb.ld,
		.stride_b = mb.batch_stride,
		.c = amp_tensor_data(out),
		.ldc = cols,
		.stride_c = rows * cols,
		.batch = batch,
		.alpha = alpha,
		.beta = beta,
	};
	status = amp_cuda_status(m, m->gemm(&g));
	amp_tensor_free(ma.owner);
	amp_tensor_free(mb.owner);
	return status;
}

/* beta * self broadcast into out (its GEMM's C), or nothing when beta is
 * 0: PyTorch then ignores self, NaNs included. */
static int fill_c(const struct amp_cuda_module *m, struct amp_tensor *out,
		  const struct amp_tensor *self, float beta)
{
	int64_t strides[AMP_MAX_DIMS];

	if (!self || beta == 0.0f)
		return AMP_OK;
	if (!AMP_CUDA_HAS(m, convert) ||
	    !broadcast_strides(self, out->ndim, out->shape, strides))
		return UNSUPPORTED;
	struct amp_cuda_shape shape = shape_of(out->ndim, out->shape);
	return amp_cuda_status(m, m->convert(amp_tensor_data(out), out->dtype,
					     amp_tensor_data(self), self->dtype,
					     &shape, strides));
}

/* mm (a, b), bmm (a, b), addmm (self, a, b, beta, alpha),
 * baddbmm (self, a, b, beta, alpha); `matrices` is 2 or 3 (batched). */
static int matmul_op(const struct amp_cuda_module *m, struct amp_call *call,
		     int matrices, bool with_self)
{
	struct amp_tensor *self = with_self ? call->args[0].tensor : NULL;
	struct amp_tensor *a = call->args[with_self ? 1 : 0].tensor;
	struct amp_tensor *b = call->args[with_self ? 2 : 1].tensor;
	float beta = with_self ? (float)call->args[3].scalar.value : 0.0f;
	float alpha = with_self ? (float)call->args[4].scalar.value : 1.0f;
	int batched = matrices == 3;

	if (!AMP_CUDA_HAS(m, gemm) || a->ndim != matrices || b->ndim != matrices ||
	    !float_dtype(a->dtype) || a->dtype != b->dtype ||
	    (self && self->dtype != a->dtype))
		return UNSUPPORTED;
	int64_t batch = batched ? a->shape[0] : 1;
	int64_t rows = a->shape[batched], inner = a->shape[batched + 1];
	int64_t cols = b->shape[batched + 1];
	if ((batched && b->shape[0] != batch) || b->shape[batched] != inner ||
	    !fits_int(batch) || !fits_int(rows) || !fits_int(cols) ||
	    !fits_int(inner))
		return UNSUPPORTED;
	int64_t shape[3] = { batch, rows, cols };
	struct amp_tensor *out = gpu_tensor(matrices, shape + !batched, a->dtype);
	if (!out)
		return amp_last_status();
	int status = fill_c(m, out, self, beta);
	if (status == AMP_OK)
		status = gemm(m, out, a, false, b, false, batch, rows, cols, inner,
			      alpha, self ? beta : 0.0f);
	return finish(call, out, status);
}

/* linear (input, weight, bias?): input (..., k) @ weight (n, k)^T + bias. */
static int linear(const struct amp_cuda_module *m, struct amp_call *call)
{
	struct amp_tensor *input = call->args[0].tensor;
	struct amp_tensor *weight = call->args[1].tensor;
	struct amp_tensor *bias = call->args[2].tensor;
	int64_t shape[AMP_MAX_DIMS];
	int status = AMP_OK;

	if (!AMP_CUDA_HAS(m, gemm) || input->ndim < 1 || weight->ndim != 2 ||
	    !float_dtype(input->dtype) || weight->dtype != input->dtype ||
	    (bias && (bias->dtype != input->dtype || bias->ndim != 1 ||
		      bias->shape[0] != weight->shape[0])))
		return UNSUPPORTED;
	int64_t inner = weight->shape[1], cols = weight->shape[0];
	int64_t rows = inner ? amp_tensor_numel(input) / inner : 0;
	if (input->shape[input->ndim - 1] != inner || !fits_int(rows) ||
	    !fits_int(cols) || !fits_int(inner))
		return UNSUPPORTED;
	/* (..., k) flattened to (rows, k): needs a contiguous input */
	struct amp_tensor *flat = contiguous_as(m, input, input->dtype, &status);
	if (!flat)
		return status;
	struct amp_tensor *matrix =
		amp_tensor_view(flat, 2, (int64_t[]){ rows, inner },
				(int64_t[]){ inner, 1 }, flat->offset);
	amp_tensor_free(flat);
	if (!matrix)
		return amp_last_status();
	memcpy(shape, input->shape, sizeof shape);
	shape[input->ndim - 1] = cols;
	struct amp_tensor *out = gpu_tensor(input->ndim, shape, input->dtype);
	struct amp_tensor *out2d =
		out ? amp_tensor_view(out, 2, (int64_t[]){ rows, cols },
				      (int64_t[]){ cols, 1 }, 0)
		    : NULL;
	if (!out2d)
		status = amp_last_status();
	if (status == AMP_OK)
		status = fill_c(m, out2d, bias, 1.0f);
	/* B (k, n) is weight^T */
	if (status == AMP_OK)
		status = gemm(m, out2d, matrix, false, weight, true, 1, rows, cols,
			      inner, 1.0f, bias ? 1.0f : 0.0f);
	amp_tensor_free(out2d);
	amp_tensor_free(matrix);
	if (!out)
		return status;
	return finish(call, out, status);
}

/* ------------------------------------------- rows: softmax, norm, sums */

static bool wrap_dim(int64_t *dim, int ndim)
{
	int64_t n = ndim > 0 ? ndim : 1;

	if (*dim < -n || *dim >= n)
		return false;
	if (*dim < 0)
		*dim += n;
	return true;
}

/* softmax.int / log_softmax.int (self, int dim, dtype?) over the last dim. */
static int softmax(const struct amp_cuda_module *m, struct amp_call *call,
		   bool log)
{
	struct amp_tensor *self = call->args[0].tensor;
	int64_t dim = call->args[1].i;
	enum amp_dtype dtype = call->args[2].dtype;
	int status = AMP_OK;

	if (dtype == AMP_DTYPE_NONE)
		dtype = self->dtype;
	if (!AMP_CUDA_HAS(m, softmax) || !AMP_CUDA_HAS(m, convert) ||
	    self->ndim == 0 || !wrap_dim(&dim, self->ndim) ||
	    dim != self->ndim - 1 || !float_dtype(self->dtype) ||
	    !float_dtype(dtype) || amp_tensor_numel(self) == 0)
		return UNSUPPORTED;
	/* ATen converts the input to `dtype` first, then normalises */
	struct amp_tensor *src = contiguous_as(m, self, dtype, &status);
	if (!src)
		return status;
	struct amp_tensor *out = gpu_tensor(self->ndim, self->shape, dtype);
	int64_t cols = self->shape[dim];
	if (!out) {
		amp_tensor_free(src);
		return amp_last_status();
	}
	int result = m->softmax(amp_tensor_data(out), amp_tensor_data(src),
				dtype, amp_tensor_numel(self) / cols, cols, log);
	amp_tensor_free(src);
	return finish(call, out, amp_cuda_status(m, result));
}

/* layer_norm (input, ints normalized_shape, weight?, bias?, double eps). */
static int layer_norm(const struct amp_cuda_module *m, struct amp_call *call)
{
	struct amp_tensor *input = call->args[0].tensor;
	const struct amp_arg *normalized = &call->args[1];
	struct amp_tensor *affine[2] = { call->args[2].tensor,
					 call->args[3].tensor };
	int r = normalized->ints.count, first = input->ndim - r;
	int64_t cols = 1;
	int status = AMP_OK;

	if (!AMP_CUDA_HAS(m, layer_norm) || !AMP_CUDA_HAS(m, convert) || r < 1 ||
	    first < 0 || !float_dtype(input->dtype))
		return UNSUPPORTED;
	for (int d = 0; d < r; d++) {
		if (input->shape[first + d] != normalized->ints.v[d])
			return UNSUPPORTED;
		cols *= normalized->ints.v[d];
	}
	for (int i = 0; i < 2; i++) {
		const struct amp_tensor *t = affine[i];
		if (t && (t->dtype != input->dtype || t->ndim != r ||
			  !amp_tensor_is_contiguous(t) ||
			  memcmp(t->shape, normalized->ints.v,
				 (size_t)r * sizeof *t->shape)))
			return UNSUPPORTED;
	}
	if (cols == 0 || amp_tensor_numel(input) == 0)
		return UNSUPPORTED;
	struct amp_tensor *src = contiguous_as(m, input, input->dtype, &status);
	if (!src)
		return status;
	struct amp_tensor *out = gpu_tensor(input->ndim, input->shape, input->dtype);
	if (!out) {
		amp_tensor_free(src);
		return amp_last_status();
	}
	int result = m->layer_norm(
		amp_tensor_data(out), amp_tensor_data(src),
		affine[0] ? amp_tensor_data(affine[0]) : NULL,
		affine[1] ? amp_tensor_data(affine[1]) : NULL, input->dtype,
		amp_tensor_numel(input) / cols, cols, (float)call->args[4].d);
	amp_tensor_free(src);
	return finish(call, out, amp_cuda_status(m, result));
}

/* sum/mean (self, dtype?) and sum.dim_IntList/mean.dim (self, ints dims,
 * bool keepdim, dtype?) when the reduced dims are the trailing ones. */
static int reduce(const struct amp_cuda_module *m, struct amp_call *call,
		  enum amp_cuda_reduce op, bool with_dims)
{
	struct amp_tensor *self = call->args[0].tensor;
	enum amp_dtype dtype = call->args[with_dims ? 3 : 1].dtype;
	bool reduced[AMP_MAX_DIMS] = { false };
	int64_t shape[AMP_MAX_DIMS];
	int kept = 0, first = 0, ndim = 0, status = AMP_OK;

	if (dtype == AMP_DTYPE_NONE)
		dtype = self->dtype;
	if (!AMP_CUDA_HAS(m, reduce) || !AMP_CUDA_HAS(m, convert) ||
	    !float_dtype(self->dtype) || !float_dtype(dtype) ||
	    amp_tensor_numel(self) == 0)
		return UNSUPPORTED;
	if (with_dims) {
		const struct amp_arg *dims = &call->args[1];
		bool keepdim = call->args[2].b;
		if (dims->ints.count == 0 || self->ndim == 0)
			return UNSUPPORTED;
		for (int i = 0; i < dims->ints.count; i++) {
			int64_t d = dims->ints.v[i];
			if (!wrap_dim(&d, self->ndim) || reduced[d])
				return UNSUPPORTED; /* the CPU raises */
			reduced[d] = true;
		}
		first = self->ndim - dims->ints.count;
		for (int d = 0; d < self->ndim; d++) {
			if (reduced[d] != (d >= first))
				return UNSUPPORTED; /* not the trailing dims */
			if (!reduced[d])
				shape[ndim++] = self->shape[d];
			else if (keepdim)
				shape[ndim++] = 1;
			if (!reduced[d])
				kept++;
		}
	}
	int64_t rows = amp_shape_numel(kept, self->shape);
	struct amp_tensor *src = contiguous_as(m, self, dtype, &status);
	if (!src)
		return status;
	struct amp_tensor *out = gpu_tensor(ndim, shape, dtype);
	if (!out) {
		amp_tensor_free(src);
		return amp_last_status();
	}
	int result = m->reduce(op, amp_tensor_data(out), amp_tensor_data(src),
			       dtype, rows, amp_tensor_numel(self) / rows);
	amp_tensor_free(src);
	return finish(call, out, amp_cuda_status(m, result));
}

/* ------------------------------------------------------- GradScaler */

static bool gpu_scalar(const struct amp_tensor *t, enum amp_dtype dtype)
{
	return t->device == AMP_DEVICE_CUDA && t->dtype == dtype &&
	       amp_tensor_numel(t) == 1;
}

/* _amp_foreach_non_finite_check_and_unscale_ (grads, found_inf,
 * inv_scale, int sink), the layout of lib/cpu/amp_scaler_kernels.c.  One
 * flag per gradient, read back once, gives the sink the first gradient
 * holding inf/NaN.  Gradients the kernel does not take (bf16, which
 * ATen's CUDA kernel rejects, f64, strided) go to the CPU kernel. */
static int unscale(const struct amp_cuda_module *m, struct amp_call *call)
{
	struct amp_tensor **grads = call->args[0].list.items;
	int count = call->args[0].list.count;
	struct amp_tensor *found_inf = call->args[1].tensor;
	struct amp_tensor *inv_scale = call->args[2].tensor;
	uint64_t *sink = (uint64_t *)(intptr_t)call->args[3].i;
	int status = AMP_OK;

	if (!AMP_CUDA_HAS(m, unscale) || count < 1 ||
	    !gpu_scalar(found_inf, AMP_DTYPE_F32) ||
	    !gpu_scalar(inv_scale, AMP_DTYPE_F32))
		return UNSUPPORTED;
	for (int i = 0; i < count; i++)
		if ((grads[i]->dtype != AMP_DTYPE_F32 &&
		     grads[i]->dtype != AMP_DTYPE_F16) ||
		    !amp_tensor_is_contiguous(grads[i]))
			return UNSUPPORTED;
	int64_t n = count;
	struct amp_tensor *flags = gpu_tensor(1, &n, AMP_DTYPE_F32);
	float *found = calloc((size_t)count, sizeof *found);
	if (!flags || !found) {
		status = flags ? amp_error(AMP_ERR_NOMEM, "out of memory")
			       : amp_last_status();
		goto done;
	}
	float *flag = amp_tensor_data(flags);
	status = amp_device_copy(flag, AMP_DEVICE_CUDA, found, AMP_DEVICE_CPU,
				 (size_t)count * sizeof *found);
	for (int i = 0; status == AMP_OK && i < count; i++) {
		void *data = amp_tensor_data(grads[i]);
		int64_t numel = amp_tensor_numel(grads[i]);
		status = amp_cuda_status(
			m, m->unscale(&data, &grads[i]->dtype, &numel, 1, flag + i,
				      amp_tensor_data(inv_scale)));
	}
	if (status == AMP_OK)
		status = amp_device_copy(found, AMP_DEVICE_CPU, flag,
					 AMP_DEVICE_CUDA,
					 (size_t)count * sizeof *found);
	if (status != AMP_OK)
		goto done;
	int first = -1;
	for (int i = 0; i < count; i++) {
		amp_tensor_bump_version(grads[i]);
		if (found[i] != 0.0f && first < 0)
			first = i;
	}
	if (first >= 0) {
		/* only ever set, never cleared: the caller zeroes found_inf */
		float one = 1.0f;
		status = amp_device_copy(amp_tensor_data(found_inf),
					 AMP_DEVICE_CUDA, &one, AMP_DEVICE_CPU,
					 sizeof one);
		if (sink && !*sink)
			*sink = grads[first]->id;
	}
	amp_tensor_bump_version(found_inf);
done:
	free(found);
	amp_tensor_free(flags);
	return status;
}

/* _amp_update_scale_ (current_scale, growth_tracker, found_inf,
 * double growth_factor, double backoff_factor, int growth_interval). */
static int update_scale(const struct amp_cuda_module *m, struct amp_call *call)
{
	struct amp_tensor *scale = call->args[0].tensor;
	struct amp_tensor *tracker = call->args[1].tensor;
	struct amp_tensor *found_inf = call->args[2].tensor;
	int64_t interval = call->args[5].i;

	if (!AMP_CUDA_HAS(m, update_scale) || !gpu_scalar(scale, AMP_DTYPE_F32) ||
	    !gpu_scalar(tracker, AMP_DTYPE_I32) ||
	    !gpu_scalar(found_inf, AMP_DTYPE_F32) || interval < INT32_MIN ||
	    interval > INT32_MAX)
		return UNSUPPORTED;
	int status = amp_cuda_status(
		m, m->update_scale(amp_tensor_data(scale), amp_tensor_data(tracker),
				   amp_tensor_data(found_inf), call->args[3].d,
				   call->args[4].d, (int32_t)interval));
	if (status != AMP_OK)
		return status;
	amp_tensor_bump_version(scale);
	amp_tensor_bump_version(tracker);
	call->outputs[call->noutputs++] = amp_tensor_ref(scale);
	return AMP_OK;
}

/* -------------------------------------------------------------- ops */

int amp_cuda_forward(const struct amp_cuda_module *m, struct amp_call *call)
{
	struct amp_tensor *self = call->args[0].tensor;

	switch (call->op) {
	case AMP_OP_CONTIGUOUS:
		return copy_op(m, call, self->dtype, amp_tensor_is_contiguous(self));
	case AMP_OP_CLONE:
		return copy_op(m, call, self->dtype, false);
	case AMP_OP_TO: {
		enum amp_dtype dtype = call->args[1].dtype;
		bool same = dtype == AMP_DTYPE_NONE || dtype == self->dtype;
		return copy_op(m, call, same ? self->dtype : dtype, same);
	}
	case AMP_OP_MM:
		return matmul_op(m, call, 2, false);
	case AMP_OP_BMM:
		return matmul_op(m, call, 3, false);
	case AMP_OP_ADDMM:
		return matmul_op(m, call, 2, true);
	case AMP_OP_BADDBMM:
		return matmul_op(m, call, 3, true);
	case AMP_OP_LINEAR:
		return linear(m, call);
	case AMP_OP_ADD:
		return binary(m, call, AMP_CUDA_BINARY_ADD);
	case AMP_OP_SUB:
		return binary(m, call, AMP_CUDA_BINARY_SUB);
	case AMP_OP_MUL:
		return binary(m, call, AMP_CUDA_BINARY_MUL);
	case AMP_OP_DIV:
		return binary(m, call, AMP_CUDA_BINARY_DIV);
	case AMP_OP_ADD_SCALAR: /* (self, other, alpha): self + alpha * other */
		return unary(m, call, AMP_CUDA_UNARY_ADD_SCALAR,
			     (float)call->args[2].scalar.value *
				     (float)call->args[1].scalar.value);
	case AMP_OP_MUL_SCALAR:
		return unary(m, call, AMP_CUDA_UNARY_MUL_SCALAR,
			     (float)call->args[1].scalar.value);
	case AMP_OP_POW_SCALAR:
		return unary(m, call, AMP_CUDA_UNARY_POW_SCALAR,
			     (float)call->args[1].scalar.value);
	case AMP_OP_NEG:
		return unary(m, call, AMP_CUDA_UNARY_NEG, 0.0f);
	case AMP_OP_EXP:
		return unary(m, call, AMP_CUDA_UNARY_EXP, 0.0f);
	case AMP_OP_LOG:
		return unary(m, call, AMP_CUDA_UNARY_LOG, 0.0f);
	case AMP_OP_RELU:
		return unary(m, call, AMP_CUDA_UNARY_RELU, 0.0f);
	case AMP_OP_GELU:
		return unary(m, call,
			     call->args[1].b ? AMP_CUDA_UNARY_GELU_TANH
					     : AMP_CUDA_UNARY_GELU,
			     0.0f);
	case AMP_OP_SIGMOID:
		return unary(m, call, AMP_CUDA_UNARY_SIGMOID, 0.0f);
	case AMP_OP_TANH:
		return unary(m, call, AMP_CUDA_UNARY_TANH, 0.0f);
	case AMP_OP_SOFTMAX:
		return softmax(m, call, false);
	case AMP_OP_LOG_SOFTMAX:
		return softmax(m, call, true);
	case AMP_OP_LAYER_NORM:
		return layer_norm(m, call);
	case AMP_OP_SUM:
		return reduce(m, call, AMP_CUDA_REDUCE_SUM, false);
	case AMP_OP_MEAN:
		return reduce(m, call, AMP_CUDA_REDUCE_MEAN, false);
	case AMP_OP_SUM_DIM:
		return reduce(m, call, AMP_CUDA_REDUCE_SUM, true);
	case AMP_OP_MEAN_DIM:
		return reduce(m, call, AMP_CUDA_REDUCE_MEAN, true);
	case AMP_OP_AMP_UNSCALE_INPLACE:
		return unscale(m, call);
	case AMP_OP_AMP_UPDATE_SCALE_INPLACE:
		return update_scale(m, call);
	default:
		return UNSUPPORTED;
	}
}
