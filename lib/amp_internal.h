/* libamp internal header: the tensor layout, the op call model shared by
 * the dispatcher and the kernels, the autocast state (the policy table
 * and the plan are in amp_policy.h).  Not installed; nothing outside lib/,
 * tracer/ and tests/ includes it. */
#ifndef AMP_INTERNAL_H
#define AMP_INTERNAL_H

#include "amp.h"
#include "amp_policy.h"
#include "op_list.h"

#include <assert.h>
#include <stdarg.h>
#include <stdatomic.h>

/* ------------------------------------------------------------ assertions */

/* Programmer errors: formats the message and calls the abort handler. */
_Noreturn void amp_abort(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define AMP_ASSERT(cond)                                                    \
	do {                                                                \
		if (__builtin_expect(!(cond), 0))                           \
			amp_abort(__FILE__, __LINE__, "AMP_ASSERT(%s) failed", \
				  #cond);                                   \
	} while (0)

/* Run-time failures: records the thread's last error and returns `status`
 * so callers can write `return amp_error(AMP_ERR_DTYPE, "...")`. */
int amp_error(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Appends " (tensor 12 'fc1.weight')" style context to the last error. */
void amp_error_append(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/* Emits a UserWarning through the warning handler. */
void amp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --------------------------------------------------------------- tensors */

struct amp_storage {
	atomic_int refcount;
	void *data;
	size_t nbytes;
	enum amp_device_type device;
	atomic_uint_fast64_t version; /* shared by a base and its views */
};

struct amp_node; /* autograd graph node (training issue) */

struct amp_tensor {
	atomic_int refcount;
	uint64_t id;
	enum amp_dtype dtype;
	enum amp_device_type device;
	int ndim;
	/* AMP_TENSOR_LIVE while allocated: amp_tensor_free of a freed tensor
	 * aborts instead of corrupting the heap.  Kept past the first 16
	 * bytes, which glibc's free lists overwrite. */
	uint32_t magic;
	int64_t shape[AMP_MAX_DIMS];
	int64_t strides[AMP_MAX_DIMS]; /* elements */
	int64_t offset;                /* elements into storage */
	struct amp_storage *storage;
	bool requires_grad;
	bool is_leaf;
	struct amp_tensor *base;       /* views: the tensor viewed (a ref) */
	char *name;
	struct amp_node *grad_fn;      /* NULL for leaves */
	struct amp_tensor *grad;       /* accumulated gradient of a leaf */
	uint64_t producer_op_id;       /* the op that last wrote it, 0: none
					  (see amp_tensor_info) */
};

#define AMP_TENSOR_LIVE 0x74656e73u  /* "tens" */
#define AMP_TENSOR_FREED 0xdeadbeefu

static inline void *amp_tensor_data(const struct amp_tensor *t)
{
	return (char *)t->storage->data +
	       t->offset * (int64_t)amp_dtype_size(t->dtype);
}

int64_t amp_shape_numel(int ndim, const int64_t *shape);
/* A new contiguous tensor with uninitialised data, not dispatched (for
 * kernels creating their outputs).  NULL + AMP_ERR_NOMEM on failure. */
struct amp_tensor *amp_tensor_alloc(int ndim, const int64_t *shape,
				    enum amp_dtype dtype,
				    enum amp_device_type device);
/* A view of `base`'s storage with its own shape/strides/offset. */
struct amp_tensor *amp_tensor_view(struct amp_tensor *base, int ndim,
				   const int64_t *shape,
				   const int64_t *strides, int64_t offset);
/* Copies `src` into a new contiguous tensor of `dtype` on the same device
 * without dispatching (the cast kernel autocast uses). */
struct amp_tensor *amp_tensor_convert(struct amp_tensor *src,
				      enum amp_dtype dtype);
/* Fills an amp_tensor_info (borrowed pointers into t). */
void amp_tensor_describe(const struct amp_tensor *t,
			 struct amp_tensor_info *info);
/* Marks an in-place change of t's data. */
static inline void amp_tensor_bump_version(struct amp_tensor *t)
{
	atomic_fetch_add_explicit(&t->storage->version, 1,
				  memory_order_relaxed);
}
uint64_t amp_next_tensor_id(void);
/* Reads t's elements in logical order converted to dtype into dst (host
 * memory, numel elements); handles any strides. */
void amp_tensor_gather(const struct amp_tensor *t, enum amp_dtype dtype,
		       void *dst);

/* ------------------------------------------------------------------ ops */

enum amp_op_kind {
	AMP_OP_KIND_COMPUTE,   /* a kernel computes the outputs */
	AMP_OP_KIND_VIEW,      /* outputs share the input's storage */
	AMP_OP_KIND_FACTORY,   /* no tensor inputs; device from the call */
	AMP_OP_KIND_COMPOSITE, /* built from other dispatched ops */
	/* writes into an argument and returns it: `op_` variants (self, the
	 * first tensor) and out= overloads (out, the last tensor) */
	AMP_OP_KIND_INPLACE,
	AMP_OP_KIND_COUNT
};

enum amp_op {
#define AMP_OP_ENUM(e, name, overload, kind, fn) AMP_OP_##e,
	AMP_OP_LIST(AMP_OP_ENUM)
#undef AMP_OP_ENUM
	AMP_OP_COUNT
};

enum amp_arg_kind {
	AMP_ARG_TENSOR,       /* required tensor */
	AMP_ARG_OPT_TENSOR,   /* optional<Tensor>: may be NULL */
	AMP_ARG_TENSOR_LIST,  /* TensorList */
	AMP_ARG_SCALAR,       /* a number (PyTorch's wrapped Scalar) */
	AMP_ARG_INT,
	AMP_ARG_INTS,
	AMP_ARG_DOUBLE,
	AMP_ARG_BOOL,
	AMP_ARG_OPT_DTYPE,    /* ScalarType? dtype: AMP_DTYPE_NONE = None */
	AMP_ARG_KIND_COUNT
};

#define AMP_MAX_ARGS 10
#define AMP_MAX_OUTPUTS 4
#define AMP_MAX_LIST 64

struct amp_arg {
	enum amp_arg_kind kind;
	union {
		struct amp_tensor *tensor;
		struct {
			struct amp_tensor **items;
			int count;
		} list;
		struct {
			double value;
			bool integral; /* an int Scalar (promotes as int64) */
		} scalar;
		int64_t i;
		struct {
			int64_t v[AMP_MAX_DIMS];
			int count;
		} ints;
		double d;
		bool b;
		enum amp_dtype dtype;
	};
};

/* One op invocation.  The public op functions fill op/args (and
 * device/dtype for factories) and call amp_dispatch(). */
struct amp_call {
	enum amp_op op;
	int nargs;
	struct amp_arg args[AMP_MAX_ARGS];
	enum amp_device_type device; /* factories: target; else set by dispatch */
	enum amp_dtype dtype;        /* factories: element dtype */
	/* outputs: new references set by the kernel */
	int noutputs;
	struct amp_tensor *outputs[AMP_MAX_OUTPUTS];
	/* set by the dispatcher */
	uint64_t op_id;
	enum amp_phase phase;
	uint64_t forward_op_id;
};

/* The kernel (or composite body) of an op.  Reads call->args (tensors
 * already cast by autocast), sets call->outputs/noutputs, returns AMP_OK or
 * amp_error(...).  For devices other than cpu/emulated cuda the backend is
 * tried first (lib/backend.c). */
typedef int (*amp_forward_fn)(struct amp_call *call);

struct amp_op_def {
	const char *name;
	const char *overload;
	enum amp_op_kind kind;
	amp_forward_fn forward;
};
extern const struct amp_op_def amp_op_defs[AMP_OP_COUNT];

/* Runs an op: device check, autocast policy and casts, hooks, kernel.
 * Returns AMP_OK (outputs set) or a negative status (error recorded). */
int amp_dispatch(struct amp_call *call);
/* Convenience: dispatch and return outputs[0] (NULL on failure). */
struct amp_tensor *amp_dispatch1(struct amp_call *call);

/* Argument builders for the public op functions. */
static inline struct amp_arg amp_arg_tensor(struct amp_tensor *t)
{
	return (struct amp_arg){ .kind = AMP_ARG_TENSOR, .tensor = t };
}
static inline struct amp_arg amp_arg_opt_tensor(struct amp_tensor *t)
{
	return (struct amp_arg){ .kind = AMP_ARG_OPT_TENSOR, .tensor = t };
}
static inline struct amp_arg amp_arg_list(struct amp_tensor *const *items,
					  int count)
{
	return (struct amp_arg){ .kind = AMP_ARG_TENSOR_LIST,
				 .list = { (struct amp_tensor **)items, count } };
}
static inline struct amp_arg amp_arg_scalar(double value, bool integral)
{
	return (struct amp_arg){ .kind = AMP_ARG_SCALAR,
				 .scalar = { value, integral } };
}
static inline struct amp_arg amp_arg_int(int64_t value)
{
	return (struct amp_arg){ .kind = AMP_ARG_INT, .i = value };
}
static inline struct amp_arg amp_arg_double(double value)
{
	return (struct amp_arg){ .kind = AMP_ARG_DOUBLE, .d = value };
}
static inline struct amp_arg amp_arg_bool(bool value)
{
	return (struct amp_arg){ .kind = AMP_ARG_BOOL, .b = value };
}
static inline struct amp_arg amp_arg_dtype(enum amp_dtype dtype)
{
	return (struct amp_arg){ .kind = AMP_ARG_OPT_DTYPE, .dtype = dtype };
}
struct amp_arg amp_arg_ints(int count, const int64_t *values);

/* The amp_call of op AMP_OP_<op_> with the arguments given, in order:
 * AMP_CALL(ADD, amp_arg_tensor(a), ...) (nargs counts them). */
#define AMP_CALL(op_, ...)                                                   \
	((struct amp_call){ .op = AMP_OP_##op_,                              \
			    .nargs = sizeof((struct amp_arg[]){ __VA_ARGS__ }) / \
				     sizeof(struct amp_arg),                 \
			    .args = { __VA_ARGS__ } })

/* ------------------------------------------- policy table and the plan */

/* The table and amp_autocast_plan() live in amp_policy.h (the amp_policy
 * static library's interface); the plan's argument array holds a call's
 * tensors flattened. */
static_assert(AMP_PLAN_MAX_ARGS == AMP_MAX_ARGS + AMP_MAX_LIST,
	      "a call's flattened tensors fit the plan");

/* ------------------------------------------------------ autocast state */

/* Thread-local state read by the dispatcher on every op. */
struct amp_autocast_tls {
	bool enabled[AMP_DEVICE_TYPE_COUNT];
	bool excluded[AMP_DEVICE_TYPE_COUNT]; /* inside a listed op */
	enum amp_dtype dtype[AMP_DEVICE_TYPE_COUNT];
	bool cache_enabled;
	int nesting;
	bool grad_enabled;
	const char *scope;                    /* innermost named region */
	uint64_t current_op;                  /* for parent_op_id */
	/* Set by the autograd engine while it runs a node's backward: ops
	 * dispatched then are phase BACKWARD, linked to the forward op; set
	 * to OPTIMIZER by optimizer steps and GradScaler (train_internal.h). */
	enum amp_phase phase;
	uint64_t backward_of;
};
struct amp_autocast_tls *amp_autocast_state(void);

/* The weight-cast cache (process-global, mutex-guarded), keyed by the
 * source tensor's identity alone, as PyTorch's is: a hit returns the cached
 * cast whatever dtype is asked for.  lookup returns a new reference or
 * NULL; *stale tells whether the source changed in place since. */
struct amp_tensor *amp_cache_lookup(struct amp_tensor *source, bool *stale);
void amp_cache_insert(struct amp_tensor *source, struct amp_tensor *cast);

/* -------------------------------------------------------------- autograd */

/* Called by the dispatcher (lib/autograd.c implements them): record the
 * graph node of a differentiable op whose outputs require grad — call->args
 * hold the inputs as executed (after autocast's casts) — and of an
 * autocast cast (a differentiable to(dtype) of `source`).  Composite ops
 * are not recorded: their inner ops already were.  Return a status. */
int amp_autograd_record(struct amp_call *call);
int amp_autograd_record_cast(struct amp_tensor *source, struct amp_tensor *cast);
/* Drops a tensor's reference to its graph node. */
void amp_node_release(struct amp_node *node);

/* ----------------------------------------------------------- diagnostics */

/* Value-dependent checks (lib/diag.c): off by default because they read
 * every output; the dispatcher calls these only while the flag is set.
 * They emit AMP_EVENT_DIAG events (fp16-overflow, cast-underflow). */
extern atomic_bool amp_value_checks_on;
void amp_diag_check_outputs(const struct amp_call *call);
void amp_diag_check_cast(const struct amp_call *call,
			 const struct amp_tensor *source,
			 const struct amp_tensor *cast);

/* -------------------------------------------------------------- backends */

/* Device memory for a storage: host memory for cpu and the emulated cuda
 * device; the CUDA backend module's memory once it is loaded (lib/backend.c). */
void *amp_device_alloc(enum amp_device_type device, size_t nbytes);
void amp_device_free(enum amp_device_type device, void *ptr);
/* Runs call's kernel on its device: the CPU kernel (amp_op_defs) for cpu
 * and emulated cuda; the CUDA backend when it implements the op, else the
 * CPU kernel over host copies. */
int amp_backend_forward(struct amp_call *call);
/* Around amptrace's own reads of device memory (the value checks'):
 * pushed as AMP_GPU_OWN_WORK while kernel timing runs, so the copies are
 * not taken for the program's.  end() takes what begin() returned. */
bool amp_backend_own_work_begin(void);
void amp_backend_own_work_end(bool pushed);

/* ------------------------------------------------------------- hooks */

/* Nonzero while any hook is registered: the dispatcher's one branch. */
extern atomic_uint amp_hook_mask;
static inline bool amp_hooks_want(enum amp_event_kind kind)
{
	return __builtin_expect(
		(atomic_load_explicit(&amp_hook_mask, memory_order_relaxed) &
		 AMP_EVENT_MASK(kind)) != 0,
		0);
}

#endif /* AMP_INTERNAL_H */
