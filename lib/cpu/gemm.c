/* Matrix-product kernels: mm, bmm, addmm, baddbmm, linear.  f32 runs on
 * cblas_sgemm, f64 on cblas_dgemm; f16/bf16 operands are widened to f32
 * (bf16 ones go to the bf16 engine instead where lib/cpu/blas.c has one),
 * multiplied with f32 accumulation and rounded once to the output dtype
 * ("low-precision matmuls accumulate in fp32"); integers use an exact
 * int64 loop.  Bias terms (addmm, baddbmm, linear) are added in opmath
 * before that single rounding.  Argument layouts:
 *   mm (self, mat2)                  bmm (self, mat2)
 *   addmm (self, mat1, mat2, Scalar beta, Scalar alpha)
 *   baddbmm (self, batch1, batch2, Scalar beta, Scalar alpha)
 *   linear (input, weight, bias?) */
#include "cpu_ops.h"

#include <cblas.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ GEMM */

/* Integer GEMM: exact, in int64 (BLAS has none). */
static void gemm_i64(bool trans_a, bool trans_b, int64_t m, int64_t n,
		     int64_t k, int64_t alpha, const int64_t *a, int64_t lda,
		     const int64_t *b, int64_t ldb, int64_t beta, int64_t *c)
{
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			int64_t acc = 0;
			for (int64_t p = 0; p < k; p++)
				acc += (trans_a ? a[p * lda + i] : a[i * lda + p]) *
				       (trans_b ? b[j * ldb + p] : b[p * ldb + j]);
			c[i * n + j] = alpha * acc +
				       (beta == 0 ? 0 : beta * c[i * n + j]);
		}
}

/* C = beta * C for an empty contraction (beta 0 ignores C's values). */
static void scale_c(enum amp_dtype opmath, size_t count, double beta, void *c)
{
	for (size_t i = 0; i < count; i++) {
		if (opmath == AMP_DTYPE_F32)
			((float *)c)[i] = beta == 0 ? 0.0f
					  : (float)beta * ((float *)c)[i];
		else if (opmath == AMP_DTYPE_F64)
			((double *)c)[i] = beta == 0 ? 0.0 : beta * ((double *)c)[i];
		else
			((int64_t *)c)[i] = beta == 0
						    ? 0
						    : (int64_t)beta * ((int64_t *)c)[i];
	}
}

void cpu_gemm(enum amp_dtype opmath, bool trans_a, bool trans_b, int64_t m,
	      int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
	      const void *b, int64_t ldb, double beta, void *c)
{
	if (m == 0 || n == 0)
		return;
	cpu_gemm_announce();
	if (k == 0) {
		scale_c(opmath, (size_t)(m * n), beta, c);
		return;
	}
	enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
	enum CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
	switch (opmath) {
	case AMP_DTYPE_F32:
		cblas_sgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k,
			    (float)alpha, a, (int)lda, b, (int)ldb, (float)beta,
			    c, (int)n);
		break;
	case AMP_DTYPE_F64:
		cblas_dgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k,
			    alpha, a, (int)lda, b, (int)ldb, beta, c, (int)n);
		break;
	default:
		gemm_i64(trans_a, trans_b, m, n, k, (int64_t)alpha, a, lda, b,
			 ldb, (int64_t)beta, c);
		break;
	}
}

/* -------------------------------------------------------------- operands */

/* A matrix (or a batch of matrices: the last two dimensions) ready for
 * cpu_gemm: opmath values, possibly transposed, its leading dimension and
 * the distance between batch items. */
struct operand {
	const char *data;
	bool trans;
	int64_t ld;
	int64_t batch_stride; /* elements */
	void *owned;
};

static int64_t at_least_1(int64_t v)
{
	return v > 1 ? v : 1;
}

/* Uses t's storage directly when it is in opmath and its matrices are
 * row- or column-major (as addmm_impl_cpu_ does), otherwise a contiguous
 * opmath copy. */
static int operand_load(const struct amp_tensor *t, enum amp_dtype opmath,
			struct operand *op)
{
	int nd = t->ndim;
	int64_t rows = t->shape[nd - 2], cols = t->shape[nd - 1];
	int64_t row_stride = t->strides[nd - 2], col_stride = t->strides[nd - 1];

	op->owned = NULL;
	op->batch_stride = nd == 3 ? t->strides[0] : 0;
	if (t->dtype == opmath) {
		op->data = amp_tensor_data(t);
		if (col_stride == 1 &&
		    (rows == 1 || row_stride >= at_least_1(cols))) {
			op->trans = false;
			op->ld = rows == 1 ? at_least_1(cols) : row_stride;
			return AMP_OK;
		}
		if (row_stride == 1 &&
		    (cols == 1 || col_stride >= at_least_1(rows))) {
			op->trans = true;
			op->ld = cols == 1 ? at_least_1(rows) : col_stride;
			return AMP_OK;
		}
	}
	op->data = cpu_load(t, t->dtype, opmath, &op->owned);
	if (!op->data)
		return amp_last_status();
	op->trans = false;
	op->ld = at_least_1(cols);
	op->batch_stride = rows * cols;
	return AMP_OK;
}

static void finish_output(struct amp_tensor *out, void *c,
			  enum amp_dtype opmath)
{
	cpu_store(out, c, opmath);
	cpu_result_release(out, c, opmath);
}

/* C starts as `self` broadcast to the output shape (beta != 0 only). */
static int init_from_self(const struct amp_tensor *self,
			  const struct amp_tensor *out, enum amp_dtype opmath,
			  void *c)
{
	struct amp_tensor view;
	int status = cpu_expand(self, out->ndim, out->shape, &view);

	if (status == AMP_OK)
		amp_tensor_gather(&view, opmath, c);
	return status;
}

/* cpu_gemm with operands in `operands`: opmath, or bf16 for the bf16
 * engine (f32 C). */
static int gemm_of(enum amp_dtype operands, enum amp_dtype opmath,
		   bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
		   double alpha, const void *a, int64_t lda, const void *b,
		   int64_t ldb, double beta, void *c)
{
	if (operands == AMP_DTYPE_BF16)
		return cpu_gemm_bf16(trans_a, trans_b, m, n, k, (float)alpha, a,
				     lda, b, ldb, (float)beta, c);
	cpu_gemm(opmath, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
		 beta, c);
	return AMP_OK;
}

/* The dtype a product's operands are read in: bf16 ones stay bf16 when
 * the bf16 engine takes the product, else they widen to opmath. */
static enum amp_dtype operand_dtype(enum amp_dtype dtype, enum amp_dtype opmath,
				    int64_t m, int64_t n, int64_t k)
{
	return dtype == AMP_DTYPE_BF16 && cpu_gemm_bf16_wanted(m, n, k)
		       ? AMP_DTYPE_BF16
		       : opmath;
}

/* Batched product into c (batch, m, n) contiguous. */
static int batched_gemm(enum amp_dtype operands, enum amp_dtype opmath,
			int64_t batch, int64_t m, int64_t n, int64_t k,
			double alpha, const struct operand *a,
			const struct operand *b, double beta, char *c)
{
	int64_t in_size = (int64_t)amp_dtype_size(operands);
	int64_t out_size = (int64_t)amp_dtype_size(opmath);
	int status = AMP_OK;

	for (int64_t i = 0; i < batch && status == AMP_OK; i++)
		status = gemm_of(operands, opmath, a->trans, b->trans, m, n, k,
				 alpha, a->data + i * a->batch_stride * in_size,
				 a->ld, b->data + i * b->batch_stride * in_size,
				 b->ld, beta, c + i * m * n * out_size);
	return status;
}

/* out = beta * self + alpha * (a @ b) over matching batches; self may be
 * NULL (no bias). */
static int product(struct amp_call *call, struct amp_tensor *a,
		   struct amp_tensor *b, struct amp_tensor *self, double beta,
		   double alpha)
{
	enum amp_dtype dtype = a->dtype, opmath = cpu_opmath(dtype);
	bool batched = a->ndim == 3;
	int64_t batch = batched ? a->shape[0] : 1;
	int64_t m = a->shape[a->ndim - 2], k = a->shape[a->ndim - 1];
	int64_t n = b->shape[b->ndim - 1];
	int64_t shape[3] = { batch, m, n };
	struct operand opa = { 0 }, opb = { 0 };
	int status;

	if (dtype == AMP_DTYPE_BOOL)
		return cpu_not_implemented(batched ? "bmm" : "addmm_impl_cpu_",
					   a);
	struct amp_tensor *out = amp_tensor_alloc(batched ? 3 : 2,
						  batched ? shape : shape + 1,
						  dtype, a->device);
	if (!out)
		return amp_last_status();
	void *c = cpu_result_buffer(out, opmath);
	if (!c) {
		amp_tensor_free(out);
		return amp_last_status();
	}
	if (!self)
		beta = 0;
	status = beta != 0 ? init_from_self(self, out, opmath, c) : AMP_OK;
	enum amp_dtype operands = operand_dtype(dtype, opmath, m, n, k);
	if (status == AMP_OK)
		status = operand_load(a, operands, &opa);
	if (status == AMP_OK)
		status = operand_load(b, operands, &opb);
	if (status == AMP_OK)
		status = batched_gemm(operands, opmath, batch, m, n, k, alpha,
				      &opa, &opb, beta, c);
	free(opa.owned);
	free(opb.owned);
	finish_output(out, c, opmath);
	return cpu_set_output_or_free(call, out, status);
}

/* --------------------------------------------------------------- checks */

/* The dtype names c10 prints for a TypeMeta ("float", "c10::Half"). */
static const char *c10_name(const struct amp_tensor *t)
{
	return amp_dtype_profiler_name(t->dtype);
}

static int dtype_error(const struct amp_tensor *a, const struct amp_tensor *b,
		       const char *fmt, const char *name_a,
		       const char *name_b)
{
	amp_error(AMP_ERR_DTYPE, fmt, name_a, name_b);
	return cpu_error_with(AMP_ERR_DTYPE, a, b);
}

/* mm's mismatch message: addmm_impl_cpu_ on the CPU, the CUDA addmm
 * implementation's wording on device cuda. */
static int mm_dtype_error(const struct amp_tensor *m1,
			  const struct amp_tensor *m2)
{
	const char *fmt = m1->device == AMP_DEVICE_CUDA
				  ? "expected mat1 and mat2 to have the same "
				    "dtype, but got: %s != %s"
				  : "expected m1 and m2 to have the same dtype, "
				    "but got: %s != %s";

	return dtype_error(m1, m2, fmt, c10_name(m1), c10_name(m2));
}

static int shape_error(const struct amp_tensor *a, const struct amp_tensor *b,
		       int64_t rows_a, int64_t cols_a, int64_t rows_b,
		       int64_t cols_b)
{
	amp_error(AMP_ERR_INVALID,
		  "mat1 and mat2 shapes cannot be multiplied (%" PRId64
		  "x%" PRId64 " and %" PRId64 "x%" PRId64 ")",
		  rows_a, cols_a, rows_b, cols_b);
	return cpu_error_with(AMP_ERR_INVALID, a, b);
}

static int dim_error(const struct amp_tensor *t, const char *message)
{
	amp_error(AMP_ERR_INVALID, "%s", message);
	return cpu_error_with(AMP_ERR_INVALID, t, NULL);
}

/* ----------------------------------------------------------------- ops */

int amp_forward_mm(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	struct amp_tensor *mat2 = cpu_arg_tensor(call, 1);

	if (self->ndim != 2)
		return dim_error(self, "self must be a matrix");
	if (mat2->ndim != 2)
		return dim_error(mat2, "mat2 must be a matrix");
	if (self->shape[1] != mat2->shape[0])
		return shape_error(self, mat2, self->shape[0], self->shape[1],
				   mat2->shape[0], mat2->shape[1]);
	if (self->dtype != mat2->dtype)
		return mm_dtype_error(self, mat2);
	return product(call, self, mat2, NULL, 0, 1);
}

static int check_batches(const struct amp_tensor *batch1,
			 const struct amp_tensor *batch2)
{
	if (batch1->ndim != 3)
		return dim_error(batch1, "batch1 must be a 3D tensor");
	if (batch2->ndim != 3)
		return dim_error(batch2, "batch2 must be a 3D tensor");
	if (batch2->shape[0] != batch1->shape[0] ||
	    batch2->shape[1] != batch1->shape[2]) {
		amp_error(AMP_ERR_INVALID,
			  "Expected size for first two dimensions of batch2 "
			  "tensor to be: [%" PRId64 ", %" PRId64 "] but got: "
			  "[%" PRId64 ", %" PRId64 "].",
			  batch1->shape[0], batch1->shape[2], batch2->shape[0],
			  batch2->shape[1]);
		return cpu_error_with(AMP_ERR_INVALID, batch1, batch2);
	}
	return AMP_OK;
}

/* The CPU bmm kernels read batch2 through batch1's scalar type: the
 * tensor accessor's check raises. */
static int batch_dtype_error(const struct amp_tensor *batch1,
			     const struct amp_tensor *batch2)
{
	if (batch1->device == AMP_DEVICE_CUDA)
		return mm_dtype_error(batch1, batch2);
	return dtype_error(batch1, batch2,
			   "expected scalar type %s but found %s",
			   amp_dtype_torch_name(batch1->dtype),
			   amp_dtype_torch_name(batch2->dtype));
}

int amp_forward_bmm(struct amp_call *call)
{
	struct amp_tensor *batch1 = cpu_arg_tensor(call, 0);
	struct amp_tensor *batch2 = cpu_arg_tensor(call, 1);
	int status = check_batches(batch1, batch2);

	if (status != AMP_OK)
		return status;
	if (batch1->dtype != batch2->dtype)
		return batch_dtype_error(batch1, batch2);
	return product(call, batch1, batch2, NULL, 0, 1);
}

int amp_forward_addmm(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	struct amp_tensor *mat1 = cpu_arg_tensor(call, 1);
	struct amp_tensor *mat2 = cpu_arg_tensor(call, 2);
	double beta = call->args[3].scalar.value;
	double alpha = call->args[4].scalar.value;
	char text[64];

	if (self->dtype != mat2->dtype)
		return dtype_error(self, mat2,
				   "self and mat2 must have the same dtype, but "
				   "got %s and %s",
				   amp_dtype_torch_name(self->dtype),
				   amp_dtype_torch_name(mat2->dtype));
	if (mat1->dtype != mat2->dtype)
		return dtype_error(mat1, mat2,
				   "mat1 and mat2 must have the same dtype, but "
				   "got %s and %s",
				   amp_dtype_torch_name(mat1->dtype),
				   amp_dtype_torch_name(mat2->dtype));
	if (mat1->ndim != 2) {
		snprintf(text, sizeof text, "mat1 must be a matrix, got %d-D "
			 "tensor", mat1->ndim);
		return dim_error(mat1, text);
	}
	if (mat2->ndim != 2) {
		snprintf(text, sizeof text, "mat2 must be a matrix, got %d-D "
			 "tensor", mat2->ndim);
		return dim_error(mat2, text);
	}
	if (mat1->shape[1] != mat2->shape[0])
		return shape_error(mat1, mat2, mat1->shape[0], mat1->shape[1],
				   mat2->shape[0], mat2->shape[1]);
	int64_t shape[2] = { mat1->shape[0], mat2->shape[1] };
	struct amp_tensor view;
	if (cpu_expand(self, 2, shape, &view) != AMP_OK)
		return cpu_error_with(amp_last_status(), self, NULL);
	return product(call, mat1, mat2, self, beta, alpha);
}

int amp_forward_baddbmm(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	struct amp_tensor *batch1 = cpu_arg_tensor(call, 1);
	struct amp_tensor *batch2 = cpu_arg_tensor(call, 2);
	double beta = call->args[3].scalar.value;
	double alpha = call->args[4].scalar.value;
	int status = check_batches(batch1, batch2);

	if (status != AMP_OK)
		return status;
	int64_t shape[3] = { batch1->shape[0], batch1->shape[1],
			     batch2->shape[2] };
	struct amp_tensor view;
	if (cpu_expand(self, 3, shape, &view) != AMP_OK)
		return cpu_error_with(amp_last_status(), self, NULL);
	if (self->dtype != batch1->dtype) {
		amp_error(AMP_ERR_DTYPE,
			  "Input dtypes must be the same, got: input %s, "
			  "batch1: %s, batch2: %s",
			  c10_name(self), c10_name(batch1), c10_name(batch2));
		struct amp_tensor *all[3] = { self, batch1, batch2 };
		cpu_error_tensors(3, all);
		return AMP_ERR_DTYPE;
	}
	if (batch1->dtype != batch2->dtype)
		return batch_dtype_error(batch1, batch2);
	return product(call, batch1, batch2, self, beta, alpha);
}

/* linear decomposes into addmm(bias, input, weight.t()) when there is a
 * bias and into matmul -> mm otherwise; its errors are theirs. */
static int linear_checks(struct amp_tensor *input, struct amp_tensor *weight,
			 struct amp_tensor *bias)
{
	if (input->ndim == 0 || weight->ndim == 0) {
		amp_error(AMP_ERR_INVALID,
			  "both arguments to linear need to be at least 1D, but "
			  "they are %dD and %dD",
			  input->ndim, weight->ndim);
		return cpu_error_with(AMP_ERR_INVALID, input, weight);
	}
	if (weight->ndim > 2)
		return dim_error(weight, "linear: weight must be 1-D or 2-D");
	if (bias && bias->dtype != weight->dtype)
		return dtype_error(bias, weight,
				   "self and mat2 must have the same dtype, but "
				   "got %s and %s",
				   amp_dtype_torch_name(bias->dtype),
				   amp_dtype_torch_name(weight->dtype));
	if (input->dtype != weight->dtype) {
		if (bias)
			return dtype_error(input, weight,
					   "mat1 and mat2 must have the same "
					   "dtype, but got %s and %s",
					   amp_dtype_torch_name(input->dtype),
					   amp_dtype_torch_name(weight->dtype));
		return mm_dtype_error(input, weight);
	}
	int64_t in_features = input->shape[input->ndim - 1];
	int64_t weight_in = weight->shape[weight->ndim - 1];
	if (in_features != weight_in) {
		int64_t rows = in_features ? amp_tensor_numel(input) / in_features
					   : 0;
		return shape_error(input, weight, rows, in_features, weight_in,
				   weight->ndim == 2 ? weight->shape[0] : 1);
	}
	return AMP_OK;
}

int amp_forward_linear(struct amp_call *call)
{
	struct amp_tensor *input = cpu_arg_tensor(call, 0);
	struct amp_tensor *weight = cpu_arg_tensor(call, 1);
	struct amp_tensor *bias = cpu_arg_tensor(call, 2);
	int status = linear_checks(input, weight, bias);

	if (status != AMP_OK)
		return status;
	enum amp_dtype opmath = cpu_opmath(input->dtype);
	if (input->dtype == AMP_DTYPE_BOOL)
		return cpu_not_implemented("addmm_impl_cpu_", input);
	int64_t in_features = input->shape[input->ndim - 1];
	int64_t out_features = weight->ndim == 2 ? weight->shape[0] : 1;
	int64_t rows = amp_shape_numel(input->ndim - 1, input->shape);
	int64_t shape[AMP_MAX_DIMS];
	int out_ndim = input->ndim - 1 + (weight->ndim == 2);
	memcpy(shape, input->shape, sizeof shape);
	if (weight->ndim == 2)
		shape[input->ndim - 1] = out_features;

	struct amp_tensor *out =
		amp_tensor_alloc(out_ndim, shape, input->dtype, input->device);
	if (!out)
		return amp_last_status();
	void *c = cpu_result_buffer(out, opmath);
	if (!c) {
		amp_tensor_free(out);
		return amp_last_status();
	}
	status = bias ? init_from_self(bias, out, opmath, c) : AMP_OK;
	if (status != AMP_OK)
		cpu_error_with(status, bias, out);
	void *input_owned = NULL, *weight_owned = NULL;
	const void *x = NULL, *w = NULL;
	enum amp_dtype operands = operand_dtype(input->dtype, opmath, rows,
						out_features, in_features);
	if (status == AMP_OK) {
		/* input as a (rows, in_features) row-major matrix */
		x = cpu_load(input, input->dtype, operands, &input_owned);
		w = cpu_load(weight, weight->dtype, operands, &weight_owned);
		if (!x || !w)
			status = amp_last_status();
	}
	/* weight (out, in) row-major is weight.t() transposed */
	if (status == AMP_OK)
		status = gemm_of(operands, opmath, false, true, rows,
				 out_features, in_features, 1.0, x,
				 at_least_1(in_features), w,
				 at_least_1(in_features), bias ? 1.0 : 0.0, c);
	free(input_owned);
	free(weight_owned);
	finish_output(out, c, opmath);
	return cpu_set_output_or_free(call, out, status);
}
