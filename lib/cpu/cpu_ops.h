/* The CPU backend: the forward function of every op in op_list.h, and the
 * helpers the kernels share (type promotion, broadcasting, opmath buffers,
 * error context).  Kernels receive calls whose arguments are already cast
 * by autocast; the argument order of each op is ATen's and is written in
 * the comment above its forward function.
 *
 * "opmath" is the dtype an op computes in, as in PyTorch CPU: f32 for
 * f16/bf16/f32, f64 for f64, exact int64 for integers and bool.  Kernels
 * compute in opmath and round once to the output dtype. */
#ifndef AMP_CPU_OPS_H
#define AMP_CPU_OPS_H

#include "amp_internal.h"

/* The build is -O2, where gcc 12 vectorises only loops whose trip count
 * it knows; kernel files opt into its usual cost model so their loops
 * over n elements vectorise.  Put it after the includes. */
#define CPU_VECTORIZE_LOOPS _Pragma("GCC optimize(\"vect-cost-model=dynamic\")")

/* A second, AVX-512 copy of a hot loop, called when cpu_has_avx512();
 * gcc emits no vzeroupper in target code, so such a function ends with
 * _mm256_zeroupper() (immintrin.h). */
#if defined(__x86_64__)
#include <immintrin.h>
#define CPU_AVX512 __attribute__((target("avx512f")))
bool cpu_has_avx512(void);
#else
#define CPU_AVX512
#define _mm256_zeroupper() ((void)0)
static inline bool cpu_has_avx512(void)
{
	return false;
}
#endif

#define AMP_CPU_DECLARE(e, name, overload, kind, fn) int fn(struct amp_call *call);
AMP_OP_LIST(AMP_CPU_DECLARE)
#undef AMP_CPU_DECLARE

/* "no dtype yet" while folding result types (c10's ScalarType::Undefined). */
#define CPU_DTYPE_UNDEFINED AMP_DTYPE_COUNT

/* ------------------------------------------------------------ arguments */

static inline struct amp_tensor *cpu_arg_tensor(const struct amp_call *call,
						int index)
{
	return call->args[index].tensor;
}

/* Sets the call's single output (a new reference); AMP_ERR_NOMEM (already
 * recorded by the allocator) when `out` is NULL. */
int cpu_set_output(struct amp_call *call, struct amp_tensor *out);
/* The end of a kernel that allocated `out`: sets it as the call's output
 * when status is AMP_OK, else frees it and returns status. */
int cpu_set_output_or_free(struct amp_call *call, struct amp_tensor *out,
			   int status);

/* --------------------------------------------------------------- dtypes */

enum amp_dtype cpu_opmath(enum amp_dtype dtype);

/* c10's ResultTypeState: dimensioned tensors, 0-dim tensors and wrapped
 * numbers are folded separately and combined by category. */
struct cpu_result_type {
	enum amp_dtype dim_result;
	enum amp_dtype zero_result;
	enum amp_dtype wrapped_result;
};
void cpu_result_type_init(struct cpu_result_type *state);
void cpu_result_type_tensor(struct cpu_result_type *state,
			    const struct amp_tensor *t);
void cpu_result_type_scalar(struct cpu_result_type *state, bool integral);
enum amp_dtype cpu_result_type_get(const struct cpu_result_type *state);

/* ------------------------------------------------------------- shapes */

/* PyTorch's maybe_wrap_dim: accepts -ndim..ndim-1 (0-dim tensors accept
 * -1 and 0).  Records IndexError's text and returns false when out of
 * range. */
bool cpu_wrap_dim(int64_t *dim, int ndim);

/* Broadcasts `shape` into the running (ndim, out) shape, NumPy rules with
 * PyTorch's message. */
int cpu_broadcast_into(int *ndim, int64_t *out, int other_ndim,
		       const int64_t *other);

/* view := t's layout (dtype, device, shape, strides, offset, storage, id,
 * name): a stack copy that owns nothing, for reading t's data through
 * another shape. */
void cpu_view_layout(const struct amp_tensor *t, struct amp_tensor *view);

/* Fills `view` (a stack copy that owns nothing) with t broadcast to
 * `shape`: stride 0 on broadcast dimensions, for reading through
 * amp_tensor_gather / cpu_load.  PyTorch's expand error when t does not
 * broadcast to shape. */
int cpu_expand(const struct amp_tensor *t, int ndim, const int64_t *shape,
	       struct amp_tensor *view);

/* Whether a and b have the same shape. */
bool cpu_same_shape(const struct amp_tensor *a, const struct amp_tensor *b);

/* Formats "[2, 3]" into buf. */
const char *cpu_shape_string(int ndim, const int64_t *shape, char *buf,
			     size_t size);

/* ------------------------------------------------------------ buffers */

/* Element values of t, converted first to `storage` (the dtype PyTorch
 * casts the operand to, which may round) and then to `opmath`, as a
 * contiguous buffer.  Points straight at t's data when no conversion or
 * copy is needed (then *owned is NULL); otherwise *owned must be freed.
 * NULL on allocation failure (error recorded). */
const void *cpu_load(const struct amp_tensor *t, enum amp_dtype storage,
		     enum amp_dtype opmath, void **owned);

/* Writes n opmath values into the contiguous tensor out, rounding once. */
void cpu_store(struct amp_tensor *out, const void *values,
	       enum amp_dtype opmath);

/* Elementwise kernels over f16/bf16 tensors without tensor-sized f32
 * copies: `fn` sees CPU_BLOCK elements at a time, its inputs widened to
 * f32 in buffers that stay in L1, and its f32 results are rounded into
 * `out` at once.  Each result depends only on the inputs at its own index,
 * so the values are those of cpu_load + the kernel + cpu_store.  inputs
 * and out are contiguous arrays of n elements of `dtype` (f16 or bf16). */
#define CPU_BLOCK 1024
#define CPU_BLOCK_MAX_INPUTS 3
typedef void (*cpu_block_fn)(const float *const *in, float *out, size_t n,
			     const void *context);
void cpu_blocked_f32(enum amp_dtype dtype, int ninputs,
		     const void *const *inputs, void *out, size_t n,
		     cpu_block_fn fn, const void *context);
/* Whether t can be read by cpu_blocked_f32 as `dtype`: contiguous, of that
 * dtype, and f16 or bf16. */
bool cpu_blocked_operand(const struct amp_tensor *t, enum amp_dtype dtype);

/* An allocation of n elements of dtype (error recorded when it fails). */
void *cpu_alloc(size_t n, enum amp_dtype dtype);

/* Where a kernel writes its opmath results: out's own storage when out is
 * in opmath (no copy), else a scratch buffer that cpu_store rounds into
 * out.  NULL, error recorded, when out of memory. */
void *cpu_result_buffer(struct amp_tensor *out, enum amp_dtype opmath);
/* Frees a cpu_result_buffer(out, opmath) unless it is out's own storage;
 * NULL is a no-op. */
void cpu_result_release(struct amp_tensor *out, void *values,
			enum amp_dtype opmath);

/* A Scalar argument as the 0-dim tensor ATen wraps it in (f64, or i64 for
 * an int Scalar), owning nothing: for loading through cpu_load.  The
 * tensor points into the struct, which must not move while in use. */
struct cpu_wrapped {
	struct amp_tensor tensor;
	struct amp_storage storage;
	union {
		double d;
		int64_t i;
	} value;
};
void cpu_wrap_number(struct cpu_wrapped *w, double value, bool integral);

/* One operand of an elementwise op broadcast to the output: `step` 1 for
 * a full buffer, 0 for a single value (kept inline, no allocation). */
struct cpu_operand {
	const void *data;
	int64_t step;
	void *owned;
	uint64_t inline_value;
};
/* Loads t broadcast to (ndim, shape) as opmath values rounded through
 * `storage` (the dtype ATen converts the operand to first). */
int cpu_operand_load(const struct amp_tensor *t, int ndim,
		     const int64_t *shape, enum amp_dtype storage,
		     enum amp_dtype opmath, struct cpu_operand *op);
void cpu_operand_release(struct cpu_operand *op);

/* -------------------------------------------------------------- errors */

/* Appends " (tensor 12 'fc1.weight' f32 [4, 16] and tensor 15 f16 [8, 4])"
 * to the last error. */
void cpu_error_tensors(int count, struct amp_tensor *const *tensors);
/* Convenience for the common one- and two-tensor cases; returns status. */
int cpu_error_with(int status, const struct amp_tensor *a,
		   const struct amp_tensor *b);

/* The legacy type name Python shows for a tensor: "torch.FloatTensor",
 * "torch.cuda.HalfTensor" (ATen's "CPUFloatType" after torch's error
 * processing). */
const char *cpu_tensor_type_name(const struct amp_tensor *t, char *buf,
				 size_t size);

/* PyTorch's AT_DISPATCH failure: "\"name\" not implemented for 'Long'". */
int cpu_not_implemented(const char *kernel, const struct amp_tensor *t);

/* -------------------------------------------------------------- random */

/* The global generator (amp_manual_seed): 64 random bits per call. */
void cpu_random_seed(uint64_t seed);
/* Fills n doubles uniform in [0, 1) / standard normal, under the lock so
 * one tensor's values are one contiguous draw. */
void cpu_random_uniform(double *out, size_t n);
void cpu_random_normal(double *out, size_t n);

/* -------------------------------------------------------------- reduce */

/* Row sums of a (rows, cols) opmath matrix (pairwise summation), divided
 * by `divisor` (1 for a sum; ignored for int64), into out[rows]. */
void cpu_reduce_rows(enum amp_dtype opmath, const void *in, int64_t rows,
		     int64_t cols, double divisor, void *out);

/* ---------------------------------------------------------------- GEMM */

/* C (m, n) = alpha * A (m, k) @ B (k, n) + beta * C in opmath (f32, f64
 * or i64).  A and B are row-major with leading dimensions lda/ldb; a
 * transposed operand is stored (k, m) / (n, k).  C is contiguous and not
 * read when beta is 0. */
void cpu_gemm(enum amp_dtype opmath, bool trans_a, bool trans_b, int64_t m,
	      int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
	      const void *b, int64_t ldb, double beta, void *c);

/* Called before a product that does not ask for the bf16 engine:
 * AMP_VERBOSE=1 says which engines run at the first product of any
 * dtype (lib/cpu/blas.c). */
void cpu_gemm_announce(void);
/* bf16 A and B, f32 C (lib/cpu/blas.c): whether the bf16 engine takes an
 * (m, n, k) product, and the product itself, same layout rules as
 * cpu_gemm.  Falls back to widening when the engine refuses; AMP_OK or
 * the allocation failure. */
bool cpu_gemm_bf16_wanted(int64_t m, int64_t n, int64_t k);
int cpu_gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
		  float alpha, const uint16_t *a, int64_t lda, const uint16_t *b,
		  int64_t ldb, float beta, float *c);
/* The OpenBLAS core type to re-initialise with when `core` (its choice)
 * has fewer vector extensions than the CPU's class (2: AVX-512, 1: AVX2 +
 * FMA, 0: older); NULL when it is good enough.  Exposed for the tests. */
const char *cpu_blas_wanted_core(const char *core, int cpu_class, bool bf16);

#endif /* AMP_CPU_OPS_H */
