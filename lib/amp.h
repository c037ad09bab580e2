/* libamp — a small tensor runtime whose autocast dispatcher reproduces
 * PyTorch's automatic-mixed-precision semantics and publishes every decision
 * through a hook API.
 *
 * Ownership, stated once for the whole API:
 *   - Every function that returns an `amp_tensor *` returns a NEW reference
 *     owned by the caller; release it with amp_tensor_free().  NULL means the
 *     call failed: amp_last_error() holds the message, amp_last_status() the
 *     code (both thread-local).
 *   - Tensor arguments are borrowed: the callee takes its own reference when
 *     it keeps one.
 *   - Returned `const char *` strings are static, or owned by the tensor they
 *     describe (valid while it lives).
 *   - amp_tensor_free(NULL) is a no-op.
 * Programmer errors (NULL where a tensor is required, an autocast exit with no
 * region open) go through the abort handler, see amp_set_abort_handler().
 * libamp prints nothing to stdout; warnings go to the warning handler
 * (stderr by default).
 */
#ifndef AMP_H
#define AMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the public headers declare is libamp's API, exported from the
 * shared library; the library hides everything else (-fvisibility=hidden). */
#pragma GCC visibility push(default)

/* ---------------------------------------------------------------- dtypes */

/* NOTE: add dtypes at the end; traces and tables are indexed by these. */
enum amp_dtype {
	AMP_DTYPE_F64,
	AMP_DTYPE_F32,
	AMP_DTYPE_F16,
	AMP_DTYPE_BF16,
	AMP_DTYPE_I64,
	AMP_DTYPE_I32,
	AMP_DTYPE_BOOL,
	AMP_DTYPE_COUNT
};
/* "no dtype given" for optional dtype arguments (PyTorch's dtype=None). */
#define AMP_DTYPE_NONE AMP_DTYPE_COUNT

/* "f32", "f16", ... (the names used on the CLI, in traces and SVGs). */
const char *amp_dtype_name(enum amp_dtype dtype);
/* PyTorch's ScalarType name, as in its error messages: "Float", "Half". */
const char *amp_dtype_torch_name(enum amp_dtype dtype);
/* torch.profiler's "Input type" name: "float", "c10::Half", ... */
const char *amp_dtype_profiler_name(enum amp_dtype dtype);
size_t amp_dtype_size(enum amp_dtype dtype);
bool amp_dtype_is_floating(enum amp_dtype dtype);
/* The dtype alias table: accepts our names ("f32"), PyTorch's spellings
 * with or without "torch." ("float32", "float", "half", "torch.bfloat16",
 * "int64", "long", ...) and the short "fp64"/"fp32"/"fp16".  Every CLI, the
 * rules and the samples parse dtypes here.  Returns 0, or -1 when unknown. */
int amp_dtype_from_name(const char *name, enum amp_dtype *out);
/* torch.promote_types: f16 + bf16 -> f32, floats over ints, f64 wins. */
enum amp_dtype amp_promote_types(enum amp_dtype a, enum amp_dtype b);

/* Scalar conversions, round-to-nearest-even, NaN stays NaN, overflow -> inf,
 * subnormals exact.  f16/bf16 values are their IEEE bit patterns. */
uint16_t amp_f32_to_f16(float value);
float amp_f16_to_f32(uint16_t bits);
uint16_t amp_f32_to_bf16(float value);
float amp_bf16_to_f32(uint16_t bits);
/* Converts n contiguous elements between any two dtypes (the same rules as
 * a tensor cast).  Uses F16C / AVX-512 when the CPU has them.  dst and src
 * must not overlap unless the dtypes are equal. */
void amp_convert(void *dst, enum amp_dtype dst_dtype, const void *src,
		 enum amp_dtype src_dtype, size_t n);

/* --------------------------------------------------------------- devices */

enum amp_device_type {
	AMP_DEVICE_CPU,
	AMP_DEVICE_CUDA,
	AMP_DEVICE_TYPE_COUNT
};

const char *amp_device_type_name(enum amp_device_type device); /* "cpu" */
int amp_device_type_from_name(const char *name, enum amp_device_type *out);
/* True while device `cuda` is emulated on the CPU backend (no GPU, or no
 * CUDA backend module): autocast treats its tensors as CUDA tensors. */
bool amp_cuda_is_emulated(void);

/* One line saying what device cuda is and why: "cuda: NVIDIA H100 ...
 * (sm_90, 132 SMs, driver 13000) via /path/libamp_cuda.so" or "emulated on
 * the CPU: no CUDA driver (libcuda.so.1: cannot open ...)".  Static
 * storage, never NULL.  Loads the CUDA module if that was not tried yet. */
const char *amp_cuda_backend_status(void);

/* One line saying which CPU matrix-product code runs: "f32 gemm: OpenBLAS,
 * Cooperlake kernels, 1 thread; bf16 gemm: oneDNN dnnl_gemm_bf16bf16f32
 * (avx512_bf16)", plus what was fixed (an OpenBLAS core type re-chosen
 * from CPUID) or could not be.  Threads: AMP_NUM_THREADS (default 1).
 * AMP_VERBOSE=1 prints this line to stderr at the first product.  Static
 * storage, never NULL. */
const char *amp_backend_info(void);

/* GPU kernel timing (CUPTI): the types. */

/* External-correlation kinds libamp pushes around the work it launches. */
enum amp_gpu_correlation {
	AMP_GPU_CORRELATION_OP,   /* id = the op's op_id (its forward) */
	AMP_GPU_CORRELATION_CAST, /* id = the autocast cast's result tensor id */
	AMP_GPU_CORRELATION_COUNT
};
/* The op id amptrace's own work on the GPU is pushed under (the value
 * checks' reductions and reads): its kernels and copies are not the
 * program's, so kernel timing leaves them out (and counts them).  No op
 * has this id. */
#define AMP_GPU_OWN_WORK UINT64_MAX

enum amp_gpu_activity_kind {
	AMP_GPU_ACTIVITY_KERNEL,
	AMP_GPU_ACTIVITY_MEMCPY,
	AMP_GPU_ACTIVITY_KIND_COUNT
};

/* One GPU activity converted from a CUPTI record, timed on the trace
 * clock (CLOCK_MONOTONIC ns, amp_now_ns()). */
struct amp_gpu_activity {
	enum amp_gpu_activity_kind kind;
	const char *name;        /* kernel name (mangled), or "Memcpy HtoD" */
	uint64_t start_ns, end_ns;
	uint32_t device, stream;
	uint32_t correlation_id; /* CUDA API correlation id */
	uint64_t op_id;          /* the op that launched it, 0 if unknown */
	uint64_t cast_id;        /* the cast's result tensor id, 0 if none */
	int32_t grid[3], block[3];
	int32_t registers, shared_memory; /* per thread; static + dynamic */
	uint64_t bytes;          /* memcpy */
	uint8_t copy_kind;       /* memcpy: CUpti_ActivityMemcpyKind */
};

/* Receives converted activities, on a CUPTI worker thread (or the thread
 * that calls flush/stop).  The array and the names are valid during the
 * call only. */
typedef void (*amp_gpu_activity_fn)(const struct amp_gpu_activity *activities,
				    size_t count, void *user);

struct amp_gpu_profiler_stats {
	uint64_t kernels, memcpys;
	uint64_t unlinked;   /* activities with no op or cast id */
	uint64_t untimed;    /* records CUPTI could not time (start=end=0) */
	uint64_t dropped;    /* records CUPTI dropped (buffers full) */
	uint64_t buffers;
	uint64_t own;        /* activities of amptrace's own work, left out */
};

/* GPU kernel timing (CUPTI): the functions. */

/* Starts CUPTI kernel timing: `fn` receives every kernel and memcpy,
 * linked to the op (op_id) or autocast cast (cast_id = the cast's result
 * tensor id) that launched it, timed on the amp_now_ns() clock.  fn runs
 * on a CUPTI thread.  AMP_ERR_DEVICE when cuda is emulated (no GPU: the
 * message says why) or CUPTI refuses. */
int amp_gpu_profiler_start(amp_gpu_activity_fn fn, void *user);
/* Delivers the activities recorded so far. */
int amp_gpu_profiler_flush(void);
/* Flushes, stops, and fills stats (may be NULL): counts of kernels,
 * memcpys, unlinked and dropped records. */
int amp_gpu_profiler_stop(struct amp_gpu_profiler_stats *stats);

/* ---------------------------------------------------------------- errors */

enum amp_status {
	AMP_OK = 0,
	AMP_ERR_INVALID = -1,     /* bad argument: shape, dim, value */
	AMP_ERR_DTYPE = -2,       /* dtype mismatch PyTorch rejects */
	AMP_ERR_DEVICE = -3,      /* tensors on different devices */
	AMP_ERR_AUTOCAST = -4,    /* autocast raised (banned op, promote) */
	AMP_ERR_NOMEM = -5,
	AMP_ERR_UNSUPPORTED = -6, /* op or dtype not implemented here */
	AMP_ERR_IO = -7,
	AMP_ERR_STATE = -8,       /* API used in the wrong state */
};

const char *amp_status_string(int status);
/* Message of the last failure on this thread, PyTorch's text where PyTorch
 * raises (e.g. "expected both operands to have the same dtype, got Float
 * and Half"), followed by the tensors involved.  "" when none. */
const char *amp_last_error(void);
int amp_last_status(void);
void amp_clear_error(void);

/* Programmer errors call this handler (default: print to stderr, abort()). */
typedef void (*amp_abort_fn)(const char *file, int line, const char *message);
void amp_set_abort_handler(amp_abort_fn handler);
/* Warnings PyTorch would issue (UserWarning): default prints to stderr. */
typedef void (*amp_warning_fn)(const char *message, void *user);
void amp_set_warning_handler(amp_warning_fn handler, void *user);

/* --------------------------------------------------------------- tensors */

#define AMP_MAX_DIMS 8

typedef struct amp_tensor amp_tensor;

/* Factories: new leaf tensors (requires_grad false) on `device`.  They run
 * through the dispatcher as ops (empty, zeros, full, ...), so traces see
 * where every tensor was born. */
amp_tensor *amp_empty(int ndim, const int64_t *shape, enum amp_dtype dtype,
		      enum amp_device_type device);
amp_tensor *amp_zeros(int ndim, const int64_t *shape, enum amp_dtype dtype,
		      enum amp_device_type device);
amp_tensor *amp_full(int ndim, const int64_t *shape, double value,
		     enum amp_dtype dtype, enum amp_device_type device);
/* Copies `data` (host memory laid out contiguously in `dtype`). */
amp_tensor *amp_from_data(int ndim, const int64_t *shape, enum amp_dtype dtype,
			  enum amp_device_type device, const void *data);
/* Normal / uniform values from the global generator (amp_manual_seed). */
amp_tensor *amp_randn(int ndim, const int64_t *shape, enum amp_dtype dtype,
		      enum amp_device_type device);
amp_tensor *amp_rand(int ndim, const int64_t *shape, enum amp_dtype dtype,
		     enum amp_device_type device);
/* A 0-dim tensor. */
amp_tensor *amp_scalar_tensor(double value, enum amp_dtype dtype,
			      enum amp_device_type device);
void amp_manual_seed(uint64_t seed);

amp_tensor *amp_tensor_ref(amp_tensor *t);   /* +1 reference, returns t */
void amp_tensor_free(amp_tensor *t);         /* -1 reference */

uint64_t amp_tensor_id(const amp_tensor *t); /* unique in the process */
enum amp_dtype amp_tensor_dtype(const amp_tensor *t);
enum amp_device_type amp_tensor_device(const amp_tensor *t);
int amp_tensor_ndim(const amp_tensor *t);
const int64_t *amp_tensor_shape(const amp_tensor *t);
const int64_t *amp_tensor_strides(const amp_tensor *t); /* in elements */
int64_t amp_tensor_numel(const amp_tensor *t);
size_t amp_tensor_nbytes(const amp_tensor *t);
bool amp_tensor_is_contiguous(const amp_tensor *t);
bool amp_tensor_is_view(const amp_tensor *t);
bool amp_tensor_is_leaf(const amp_tensor *t);
bool amp_tensor_requires_grad(const amp_tensor *t);
/* Only leaves may change requires_grad (PyTorch's rule); returns status. */
int amp_tensor_set_requires_grad(amp_tensor *t, bool requires_grad);
/* Optional name shown by traces ("fc1.weight"); copied.  NULL clears. */
void amp_tensor_set_name(amp_tensor *t, const char *name);
const char *amp_tensor_name(const amp_tensor *t); /* NULL when unnamed */
/* Bumped by every in-place change (optimizer steps, fill_, copy_). */
uint64_t amp_tensor_version(const amp_tensor *t);

/* Copies the elements, in logical (row-major) order, converted to
 * `dtype`, into `dst` which holds `count` elements.  Returns status. */
int amp_tensor_read(const amp_tensor *t, enum amp_dtype dtype, void *dst,
		    size_t count);
/* Overwrites the elements from host data in `dtype` (an in-place update:
 * bumps the version).  Returns status. */
int amp_tensor_write(amp_tensor *t, enum amp_dtype dtype, const void *src,
		     size_t count);
/* The value of a 1-element tensor as a double (NaN on error). */
double amp_tensor_item(const amp_tensor *t);

/* ------------------------------------------------------------------- ops */

/* Every op runs through the dispatcher: autocast policy, casts, the weight
 * cache and hook events apply.  Names follow ATen (the trace shows the ATen
 * name).  Optional tensors may be NULL. */

enum amp_reduction {
	AMP_REDUCTION_NONE,
	AMP_REDUCTION_MEAN,
	AMP_REDUCTION_SUM,
	AMP_REDUCTION_COUNT
};

/* Views (share storage; is_view true) and layout. */
amp_tensor *amp_transpose(amp_tensor *t, int dim0, int dim1);
amp_tensor *amp_t(amp_tensor *t); /* 2-D transpose */
amp_tensor *amp_reshape(amp_tensor *t, int ndim, const int64_t *shape);
amp_tensor *amp_slice(amp_tensor *t, int dim, int64_t start, int64_t end,
		      int64_t step);
amp_tensor *amp_unsqueeze(amp_tensor *t, int dim);
amp_tensor *amp_contiguous(amp_tensor *t);
amp_tensor *amp_clone(amp_tensor *t);
amp_tensor *amp_detach(amp_tensor *t);

/* Explicit casts and device moves (aten::to / _to_copy). */
amp_tensor *amp_to(amp_tensor *t, enum amp_dtype dtype);
amp_tensor *amp_to_device(amp_tensor *t, enum amp_device_type device);

/* Matrix products: low-precision inputs accumulate in f32. */
amp_tensor *amp_mm(amp_tensor *a, amp_tensor *b);
amp_tensor *amp_matmul(amp_tensor *a, amp_tensor *b);
amp_tensor *amp_bmm(amp_tensor *a, amp_tensor *b);
amp_tensor *amp_addmm(amp_tensor *self, amp_tensor *mat1, amp_tensor *mat2,
		      double beta, double alpha);
amp_tensor *amp_baddbmm(amp_tensor *self, amp_tensor *batch1,
			amp_tensor *batch2, double beta, double alpha);
amp_tensor *amp_linear(amp_tensor *input, amp_tensor *weight, amp_tensor *bias);
amp_tensor *amp_conv1d(amp_tensor *input, amp_tensor *weight, amp_tensor *bias,
		       int64_t stride, int64_t padding, int64_t dilation,
		       int64_t groups);
amp_tensor *amp_conv2d(amp_tensor *input, amp_tensor *weight, amp_tensor *bias,
		       const int64_t stride[2], const int64_t padding[2],
		       const int64_t dilation[2], int64_t groups);

/* Elementwise, with broadcasting and PyTorch's type promotion. */
amp_tensor *amp_add(amp_tensor *a, amp_tensor *b);  /* add.Tensor */
amp_tensor *amp_sub(amp_tensor *a, amp_tensor *b);
amp_tensor *amp_mul(amp_tensor *a, amp_tensor *b);
amp_tensor *amp_div(amp_tensor *a, amp_tensor *b);
/* Tensor-and-number forms (the number is a "wrapped scalar": it never
 * raises the result dtype within its category). */
amp_tensor *amp_add_scalar(amp_tensor *a, double value); /* add.Scalar */
amp_tensor *amp_mul_scalar(amp_tensor *a, double value); /* mul.Scalar */
amp_tensor *amp_neg(amp_tensor *a);
amp_tensor *amp_pow(amp_tensor *a, amp_tensor *exponent); /* pow.Tensor_Tensor */
amp_tensor *amp_pow_scalar(amp_tensor *a, double exponent); /* pow.Tensor_Scalar */
amp_tensor *amp_exp(amp_tensor *a);
amp_tensor *amp_log(amp_tensor *a);
amp_tensor *amp_relu(amp_tensor *a);
amp_tensor *amp_gelu(amp_tensor *a, bool tanh_approximation);
amp_tensor *amp_sigmoid(amp_tensor *a);
amp_tensor *amp_tanh(amp_tensor *a);
amp_tensor *amp_addcmul(amp_tensor *self, amp_tensor *tensor1,
			amp_tensor *tensor2, double value);

/* Normalisation, reductions, shape ops.  `dtype` may be AMP_DTYPE_NONE. */
amp_tensor *amp_softmax(amp_tensor *a, int dim, enum amp_dtype dtype);
amp_tensor *amp_log_softmax(amp_tensor *a, int dim, enum amp_dtype dtype);
amp_tensor *amp_layer_norm(amp_tensor *input, int normalized_ndim,
			   const int64_t *normalized_shape, amp_tensor *weight,
			   amp_tensor *bias, double eps);
amp_tensor *amp_sum(amp_tensor *a, enum amp_dtype dtype);
amp_tensor *amp_sum_dim(amp_tensor *a, int ndims, const int64_t *dims,
			bool keepdim, enum amp_dtype dtype);
amp_tensor *amp_mean(amp_tensor *a, enum amp_dtype dtype);
amp_tensor *amp_mean_dim(amp_tensor *a, int ndims, const int64_t *dims,
			 bool keepdim, enum amp_dtype dtype);
amp_tensor *amp_cat(amp_tensor *const *tensors, int count, int dim);
amp_tensor *amp_stack(amp_tensor *const *tensors, int count, int dim);
amp_tensor *amp_embedding(amp_tensor *weight, amp_tensor *indices);
amp_tensor *amp_dropout(amp_tensor *input, double p, bool train);

/* Losses. */
amp_tensor *amp_mse_loss(amp_tensor *input, amp_tensor *target,
			 enum amp_reduction reduction);
amp_tensor *amp_nll_loss(amp_tensor *log_probs, amp_tensor *target,
			 amp_tensor *weight, enum amp_reduction reduction,
			 int64_t ignore_index);
amp_tensor *amp_cross_entropy(amp_tensor *logits, amp_tensor *target,
			      amp_tensor *weight, enum amp_reduction reduction,
			      int64_t ignore_index);
amp_tensor *amp_binary_cross_entropy(amp_tensor *input, amp_tensor *target,
				     amp_tensor *weight,
				     enum amp_reduction reduction);
amp_tensor *amp_binary_cross_entropy_with_logits(amp_tensor *input,
						 amp_tensor *target,
						 amp_tensor *weight,
						 amp_tensor *pos_weight,
						 enum amp_reduction reduction);

/* ------------------------------------------------------------- autocast */

enum amp_policy {
	AMP_POLICY_NONE,               /* not in the device's lists */
	AMP_POLICY_LOWER_PRECISION_FP,
	AMP_POLICY_FP32,
	AMP_POLICY_FP32_SET_OPT_DTYPE,
	AMP_POLICY_FP32_APPEND_DTYPE,
	AMP_POLICY_PROMOTE,
	AMP_POLICY_BANNED,
	AMP_POLICY_COUNT
};
const char *amp_policy_name(enum amp_policy policy); /* "lower_precision_fp" */

/* An autocast region, torch.autocast(device_type, dtype, enabled,
 * cache_enabled).  dtype AMP_DTYPE_NONE and cache_enabled -1 inherit the
 * thread's current values, as PyTorch does. */
struct amp_autocast_opts {
	enum amp_device_type device;
	enum amp_dtype dtype;
	bool enabled;
	int cache_enabled;  /* -1 inherit, 0, 1 */
	const char *scope;  /* optional name shown by traces; copied */
};
#define AMP_AUTOCAST_OPTS(dev)                                              \
	((struct amp_autocast_opts){ .device = (dev), .dtype = AMP_DTYPE_NONE, \
				     .enabled = true, .cache_enabled = -1,    \
				     .scope = NULL })

/* __enter__: returns AMP_OK (a dtype the device does not support warns and
 * disables the region, as PyTorch does). */
int amp_autocast_enter(const struct amp_autocast_opts *opts);
/* __exit__: restores enabled/dtype/cache flag; the outermost exit clears
 * the weight cache.  Exiting with no region open is a programmer error. */
void amp_autocast_exit(void);
/* The decorator form: runs fn(user) inside the region, returns its value. */
int amp_autocast_call(const struct amp_autocast_opts *opts,
		      int (*fn)(void *user), void *user);

bool amp_autocast_is_enabled(enum amp_device_type device);
void amp_autocast_set_enabled(enum amp_device_type device, bool enabled);
enum amp_dtype amp_autocast_get_dtype(enum amp_device_type device);
void amp_autocast_set_dtype(enum amp_device_type device, enum amp_dtype dtype);
bool amp_autocast_cache_enabled(void);
void amp_autocast_set_cache_enabled(bool enabled);
int amp_autocast_nesting(void);     /* open regions on this thread */
void amp_autocast_clear_cache(void);
struct amp_cache_stats {
	size_t entries;
	size_t bytes;
};
struct amp_cache_stats amp_autocast_cache_stats(void);

/* Grad mode (torch.no_grad): thread-local, on by default.  Returns the
 * previous value. */
bool amp_set_grad_enabled(bool enabled);
bool amp_is_grad_enabled(void);

/* ---------------------------------------------------------------- hooks */

enum amp_event_kind {
	AMP_EVENT_OP_BEGIN,
	AMP_EVENT_OP_END,
	AMP_EVENT_CAST,
	AMP_EVENT_SCOPE_ENTER,
	AMP_EVENT_SCOPE_EXIT,
	AMP_EVENT_CACHE_CLEAR,
	AMP_EVENT_SCALER,
	AMP_EVENT_DIAG,
	AMP_EVENT_KIND_COUNT
};
#define AMP_EVENT_MASK(kind) (1u << (kind))
#define AMP_EVENT_MASK_ALL ((1u << AMP_EVENT_KIND_COUNT) - 1u)

/* OPTIMIZER: ops an optimizer's step runs, and GradScaler's unscale_()
 * and update() (PyTorch runs them under no_grad, outside autograd). */
enum amp_phase {
	AMP_PHASE_FORWARD,
	AMP_PHASE_BACKWARD,
	AMP_PHASE_OPTIMIZER,
	AMP_PHASE_COUNT
};
const char *amp_phase_name(enum amp_phase phase);

enum amp_cache_result {
	AMP_CACHE_HIT,
	AMP_CACHE_MISS,        /* cacheable, cast now and stored */
	AMP_CACHE_UNCACHEABLE, /* reason says which condition failed */
	AMP_CACHE_DISABLED,    /* cacheable but cache_enabled is false */
	AMP_CACHE_RESULT_COUNT
};
const char *amp_cache_result_name(enum amp_cache_result result); /* "hit" */

struct amp_tensor_info {
	uint64_t id;
	enum amp_dtype dtype;
	enum amp_device_type device;
	int ndim;
	int64_t shape[AMP_MAX_DIMS];
	const char *name; /* NULL when unnamed */
	bool is_leaf;
	bool requires_grad;
	bool is_view;
	/* The op that last wrote the tensor (its op_id), in PyTorch's sense:
	 * an op's new outputs, and the self of an in-place op (add_, an
	 * optimizer's update), take the op's id; the program's tensors come
	 * from factory ops (zeros, from_data...), which are ops too.  An op
	 * returning its input unchanged (to() to the same dtype) does not
	 * write it; a composite's outputs keep the id of the inner op that
	 * made them; a write through a view updates the view, not its base.
	 * 0 when no op wrote it: an autocast cast's result (its cast event
	 * names it), or a tensor described outside libamp (the PyTorch
	 * bridge does not know producers).  An op's inputs in its events
	 * carry the value from before the op ran. */
	uint64_t producer_op_id;
};

struct amp_autocast_info {
	bool enabled;             /* autocast on for the op's device */
	enum amp_device_type device;
	enum amp_dtype dtype;     /* the device's lower-precision dtype */
	bool cache_enabled;
	int depth;                /* nesting counter */
	const char *scope;        /* innermost named region, or NULL */
};

struct amp_op_event {
	uint64_t op_id;
	uint64_t parent_op_id;    /* enclosing op (composites), 0 if none */
	uint64_t forward_op_id;   /* backward ops: the op they differentiate */
	const char *op;           /* ATen name: "linear" */
	const char *overload;     /* "" for the default overload */
	enum amp_phase phase;
	enum amp_policy policy;   /* policy applied (NONE if autocast off) */
	struct amp_autocast_info autocast;
	enum amp_device_type device;
	bool emulated;            /* device cuda running on the CPU backend */
	int ninputs;              /* BEGIN: as called; END: as executed */
	const struct amp_tensor_info *inputs;
	int noutputs;             /* END only */
	const struct amp_tensor_info *outputs;
	int status;               /* END only: AMP_OK or the failure */
	const char *error;        /* END only, when status != AMP_OK */
	uint64_t begin_ns;        /* END only: BEGIN's timestamp */
};

struct amp_cast_event {
	uint64_t op_id;
	int arg;                  /* flattened tensor-argument index */
	struct amp_tensor_info source;
	struct amp_tensor_info result;
	enum amp_dtype from;
	enum amp_dtype to;
	enum amp_cache_result cache;
	const char *reason;       /* why cacheable or not, human readable */
	size_t bytes;             /* bytes written by the cast (0 on a hit) */
	uint64_t begin_ns;
	/* hits: the source was modified in place after the cached cast was
	 * made, so the op reads a stale copy (PyTorch does not notice). */
	bool stale;
	/* The cache's size once this cast was stored (misses), so that a
	 * consumer needs no call back into the runtime; cache_counted says
	 * whether the producer set them. */
	bool cache_counted;
	size_t cache_entries;
	size_t cache_bytes;
};

struct amp_scope_event {
	int depth;                /* nesting after enter / before exit */
	enum amp_device_type device;
	enum amp_dtype dtype;
	bool enabled;
	bool cache_enabled;
	const char *scope;        /* this region's name, or NULL */
};

struct amp_cache_event {
	size_t entries;           /* entries dropped */
	size_t bytes;
};

struct amp_scaler_event {
	uint64_t scaler_id;
	uint64_t optimizer_id;    /* 0 for scaler-wide events */
	const char *what;         /* "scale", "unscale", "step", "update" */
	double scale;
	bool found_inf;
	bool step_skipped;
	uint64_t inf_tensor_id;   /* first gradient holding inf/NaN, or 0 */
};

struct amp_diag_event {
	const char *kind;         /* "stale-cache", ... */
	const char *message;
	uint64_t op_id;
	uint64_t tensor_id;
};

struct amp_event {
	enum amp_event_kind kind;
	uint64_t time_ns;         /* CLOCK_MONOTONIC */
	uint64_t thread;          /* libamp thread number, 1 = first seen */
	union {
		struct amp_op_event op;       /* OP_BEGIN, OP_END */
		struct amp_cast_event cast;   /* CAST */
		struct amp_scope_event scope; /* SCOPE_ENTER, SCOPE_EXIT */
		struct amp_cache_event cache; /* CACHE_CLEAR */
		struct amp_scaler_event scaler;
		struct amp_diag_event diag;
	};
};

/* Called synchronously on the thread that produced the event; the event
 * and everything it points to are valid only during the call. */
typedef void (*amp_hook_fn)(const struct amp_event *event, void *user);

/* Registers fn for the kinds in `mask`.  Returns a handle > 0, or < 0. */
int amp_hook_add(unsigned mask, amp_hook_fn fn, void *user);
/* Stops new deliveries to the hook.  A call already running on another
 * thread may still finish after this returns: free `user` only once those
 * threads are known to be done with libamp ops (e.g. joined). */
void amp_hook_remove(int handle);
/* Value-dependent checks: when on, low-precision ops that turn finite
 * inputs into inf/NaN (fp16-overflow) and casts to f16/bf16 that flush many
 * non-zero values to zero or subnormals (cast-underflow) emit DIAG events.
 * Off by default (they read every output); AMP_VALUE_CHECKS=1 in the
 * environment turns them on at start-up (amptrace run does). */
void amp_set_value_checks(bool enabled);
bool amp_value_checks_enabled(void);
/* Publishes an event built outside the dispatcher (scaler, findings). */
void amp_hook_emit(struct amp_event *event);
/* Current monotonic clock in ns (the clock of event timestamps). */
uint64_t amp_now_ns(void);
/* This thread's libamp thread number. */
uint64_t amp_thread_number(void);

#include "amp_autograd.h"
#include "amp_train.h"

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* AMP_H */
