/* The event pipeline end to end, for every kind of event: events go
 * through the producer API (producer.h) into a raw directory, the
 * converter (convert.h) writes them as a trace file and keeps each one in
 * memory as it writes it, and the reader (trace.c) loads the file back.
 * read(write(e)) == e: every event the reader gets equals, field by field,
 * the one the converter built, kept and gave the writer (event_json.h),
 * every field the writer writes included (the comparison is written out
 * here). */
#include "amp.h"
#include "convert.h"
#include "event_json.h"
#include "producer.h"
#include "producer_internal.h"
#include "raw.h"
#include "step_aggregate.h"
#include "trace.h"
#include "trace_writer.h"
#include "convert_sink.h"
#include "test_scratch.h"

#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BASE_NS UINT64_C(1000000000)

static const char *dtype_at(int i) { return amp_dtype_name((enum amp_dtype)i); }
static const char *profiler_at(int i)
{
	return amp_dtype_profiler_name((enum amp_dtype)i);
}
static const char *policy_at(int i) { return amp_policy_name((enum amp_policy)i); }
static const char *device_at(int i)
{
	return amp_device_type_name((enum amp_device_type)i);
}
static const char *phase_at(int i) { return amp_phase_name((enum amp_phase)i); }
static const char *cache_at(int i)
{
	return amp_cache_result_name((enum amp_cache_result)i);
}

static const struct producer_info info = {
	.framework = "libamp (test_pipeline)",
	.names = { dtype_at, profiler_at, policy_at, device_at, phase_at,
		   cache_at },
};

static void emit(struct producer_event e, uint64_t at_us)
{
	e.time_ns = BASE_NS + at_us * 1000;
	e.thread = 1;
	producer_emit(&e);
}

static const char *raw_dir;

/* Steps (AMPTRACE_STEPS=0,2): step 0 above ends; step 1, not in full
 * detail, gives one of each aggregate row; step 2 holds an evaluation
 * window and the open op. */
static void produce_steps(struct producer_autocast on,
			  const struct producer_tensor *inputs,
			  const struct producer_tensor *made)
{
	static const struct producer_tensor w = {
		.id = 2, .dtype = AMP_DTYPE_F32, .ndim = 2, .shape = { 8, 8 },
		.name = "fc1.weight",
		.flags = PRODUCER_TENSOR_LEAF | PRODUCER_TENSOR_REQUIRES_GRAD,
	};
	struct producer_event e;

	producer_step_end("scaler update", BASE_NS + 13500, 1);
	e = (struct producer_event){ .kind = PRODUCER_SCOPE_ENTER };
	e.scope = (struct producer_scope){ .depth = 1,
					   .device = AMP_DEVICE_CUDA,
					   .dtype = AMP_DTYPE_F16,
					   .enabled = true };
	emit(e, 13600);
	e = (struct producer_event){ .kind = PRODUCER_OP_BEGIN };
	e.op = (struct producer_op){ .op_id = 20, .op = "linear",
				     .overload = "", .autocast = on };
	emit(e, 13601);
	e = (struct producer_event){ .kind = PRODUCER_CAST };
	e.cast = (struct producer_cast){
		.op_id = 20, .arg = 1, .source = w, .result = *made,
		.from = AMP_DTYPE_F32, .to = AMP_DTYPE_F16,
		.cache = AMP_CACHE_MISS, .bytes = 128, .stale = true,
		.begin_ns = BASE_NS + 13601500, .cache_counted = true,
		.cache_entries = 3, .cache_bytes = 384,
	};
	emit(e, 13602);
	/* the same cast made by autograd: a row of its own */
	e.cast.origin = "autograd";
	e.cast.cache = AMP_CACHE_UNCACHEABLE;
	e.cast.cache_counted = false;
	emit(e, 13602);
	e = (struct producer_event){ .kind = PRODUCER_DIAG };
	e.diag = (struct producer_diag){ .kind = "fp16-overflow",
					 .message = "inf in \"linear\"",
					 .op_id = 20, .tensor_id = 3 };
	emit(e, 13603);
	/* a diag with keys, in this step without full detail: written */
	e = (struct producer_event){ .kind = PRODUCER_DIAG };
	e.diag = (struct producer_diag){ .kind = "fsdp-mixed-precision",
					 .message = "FSDP's policy",
					 .module = "", .module_class = "FSDPNet",
					 .param_dtype = "bf16",
					 .reduce_dtype = "f32",
					 .output_dtype = "f16" };
	emit(e, 13603);
	e = (struct producer_event){ .kind = PRODUCER_OP_END };
	e.op = (struct producer_op){
		.op_id = 20, .op = "linear", .overload = "",
		.policy = AMP_POLICY_LOWER_PRECISION_FP, .autocast = on,
		.ninputs = 2, .inputs = inputs, .noutputs = 1, .outputs = made,
		.begin_ns = BASE_NS + 13601000,
	};
	emit(e, 13604);
	e = (struct producer_event){ .kind = PRODUCER_OP_END };
	e.op = (struct producer_op){
		.op_id = 21, .op = "_amp_foreach_non_finite_check_and_unscale_",
		.overload = "", .phase = AMP_PHASE_OPTIMIZER,
		.status = AMP_ERR_DTYPE, .begin_ns = BASE_NS + 13604500,
	};
	emit(e, 13605);
	e = (struct producer_event){ .kind = PRODUCER_SCOPE_EXIT };
	e.scope = (struct producer_scope){ .depth = 1 };
	emit(e, 13606);
	e = (struct producer_event){ .kind = PRODUCER_CACHE_CLEAR };
	e.cache = (struct producer_cache_clear){ .entries = 3, .bytes = 384 };
	emit(e, 13607);
	producer_step_end("scaler update", BASE_NS + 13700000, 1);
	producer_evaluation(producer_step_now(), BASE_NS + 13800000,
			    BASE_NS + 13900000, "model.eval()", 1);
}

/* One of each kind, as libamp's hooks and the GPU profiler produce them;
 * the last op is left open (the process then "dies"). */
static void produce(void)
{
	static const struct producer_tensor x = {
		.id = 1, .dtype = AMP_DTYPE_F32, .ndim = 2, .shape = { 4, 8 },
		.name = "input", .producer_op_id = 7,
	};
	static const struct producer_tensor w = {
		.id = 2, .dtype = AMP_DTYPE_F32, .ndim = 2, .shape = { 8, 8 },
		.name = "fc1.weight", .flags = PRODUCER_TENSOR_LEAF | PRODUCER_TENSOR_REQUIRES_GRAD,
	};
	static const struct producer_tensor w16 = {
		.id = 3, .dtype = AMP_DTYPE_F16, .device = AMP_DEVICE_CUDA,
		.ndim = 2, .shape = { 8, 8 }, .flags = PRODUCER_TENSOR_VIEW,
	};
	const struct producer_autocast on = {
		.enabled = true, .device = AMP_DEVICE_CUDA,
		.dtype = AMP_DTYPE_F16, .cache_enabled = true, .depth = 1,
		.scope = "forward",
	};
	const struct producer_tensor inputs[2] = { x, w16 };
	/* as libamp describes an op's output: the op made it */
	struct producer_tensor made = w16;
	made.producer_op_id = 10;
	struct producer_event e;

	e = (struct producer_event){ .kind = PRODUCER_SCOPE_ENTER };
	e.scope = (struct producer_scope){ .depth = 1,
					    .device = AMP_DEVICE_CUDA,
					    .dtype = AMP_DTYPE_F16, .enabled = true,
					    .cache_enabled = true,
					    .scope = "forward" };
	emit(e, 1);
	e = (struct producer_event){ .kind = PRODUCER_SCOPE_ENTER };
	e.scope = (struct producer_scope){ .depth = 2, .device = AMP_DEVICE_CPU,
					    .dtype = AMP_DTYPE_BF16 };
	emit(e, 2);
	e = (struct producer_event){ .kind = PRODUCER_OP_BEGIN };
	e.op = (struct producer_op){ .op_id = 10, .op = "linear",
				      .overload = "", .module = "fc1",
				      .module_class = "Linear", .autocast = on,
				      .device = AMP_DEVICE_CUDA,
				      .emulated = true };
	emit(e, 3);
	e = (struct producer_event){ .kind = PRODUCER_CAST };
	e.cast = (struct producer_cast){
		.op_id = 10, .arg = 1, .source = w, .result = w16,
		.from = AMP_DTYPE_F32, .to = AMP_DTYPE_F16,
		.cache = AMP_CACHE_MISS, .reason = "leaf weight", .bytes = 128,
		.begin_ns = BASE_NS + 3500, .cache_counted = true,
		.cache_entries = 1, .cache_bytes = 128, .module = "fc1",
		.module_class = "Linear",
	};
	emit(e, 4);
	e = (struct producer_event){ .kind = PRODUCER_OP_END };
	e.op = (struct producer_op){
		.op_id = 10, .op = "linear", .overload = "", .module = "fc1",
		.module_class = "Linear",
		.policy = AMP_POLICY_LOWER_PRECISION_FP, .autocast = on,
		.device = AMP_DEVICE_CUDA, .emulated = true, .ninputs = 2,
		.inputs = inputs, .noutputs = 1, .outputs = &made,
		.begin_ns = BASE_NS + 3000,
	};
	emit(e, 5);
	e = (struct producer_event){ .kind = PRODUCER_OP_END };
	e.op = (struct producer_op){
		.op_id = 11, .parent_op_id = 10, .forward_op_id = 9,
		.op = "mm", .overload = "out", .phase = AMP_PHASE_BACKWARD,
		.ninputs = 1, .inputs = &x, .status = AMP_ERR_DTYPE,
		.error = "expected m1 and m2 to have the same dtype",
		.begin_ns = BASE_NS + 5500,
	};
	emit(e, 6);
	e = (struct producer_event){ .kind = PRODUCER_SCOPE_EXIT };
	e.scope = (struct producer_scope){ .depth = 2 };
	emit(e, 7);
	e = (struct producer_event){ .kind = PRODUCER_CACHE_CLEAR };
	e.cache = (struct producer_cache_clear){ .entries = 1, .bytes = 128 };
	emit(e, 8);
	e = (struct producer_event){ .kind = PRODUCER_SCALER };
	e.scaler = (struct producer_scaler){ .scaler_id = 1,
					      .optimizer_id = 2, .what = "step",
					      .scale = 32768.0, .found_inf = true,
					      .step_skipped = true,
					      .inf_tensor_id = 3 };
	emit(e, 9);
	e = (struct producer_event){ .kind = PRODUCER_DIAG };
	e.diag = (struct producer_diag){ .kind = "fp16-overflow",
					  .message = "inf in \"out\"",
					  .op_id = 10, .tensor_id = 3 };
	emit(e, 10);
	producer_gpu_status(1, BASE_NS + 11000, 0, "timed");
	const struct amp_gpu_activity gpu[2] = {
		{ .kind = AMP_GPU_ACTIVITY_KERNEL, .name = "gemm_kernel",
		  .start_ns = BASE_NS + 12000, .end_ns = BASE_NS + 12500,
		  .stream = 7, .op_id = 10, .grid = { 1, 2, 3 },
		  .block = { 32, 1, 1 }, .registers = 40 },
		{ .kind = AMP_GPU_ACTIVITY_MEMCPY, .name = "Memcpy HtoD",
		  .start_ns = BASE_NS + 13000, .end_ns = BASE_NS + 13100,
		  .stream = 7, .cast_id = 3, .op_id = 10, .bytes = 256 },
	};
	producer_gpu_activities(gpu, 2);
	producer_gpu_stats(&(struct amp_gpu_profiler_stats){ .kernels = 1,
							     .memcpys = 1 });
	produce_steps(on, inputs, &made);
	e = (struct producer_event){ .kind = PRODUCER_OP_BEGIN };
	e.op = (struct producer_op){ .op_id = 12, .forward_op_id = 10,
				      .op = "relu", .overload = "",
				      .phase = AMP_PHASE_BACKWARD,
				      .autocast = on };
	emit(e, 14000);
	/* a cast of another origin than autocast (the bridge's autograd
	 * casts): an event kind of its own */
	static const struct producer_tensor grad32 = {
		.id = 4, .dtype = AMP_DTYPE_F32, .device = AMP_DEVICE_CUDA,
		.ndim = 2, .shape = { 8, 8 },
	};
	e = (struct producer_event){ .kind = PRODUCER_CAST };
	e.cast = (struct producer_cast){
		.op_id = 12, .source = w16, .result = grad32,
		.from = AMP_DTYPE_F16, .to = AMP_DTYPE_F32,
		.cache = AMP_CACHE_UNCACHEABLE, .reason = "a gradient back",
		.bytes = 256, .begin_ns = BASE_NS + 14000500,
		.origin = "autograd",
	};
	emit(e, 14001);
	/* origin "autocast" is absent's other spelling (FORMAT.md §3.3):
	 * an autocast cast, to the converter as to the reader */
	e.cast.origin = "autocast";
	e.cast.begin_ns = BASE_NS + 14001500;
	emit(e, 14002);
	/* a compile of graph 4 (the bridge's torch.compile) and one of its
	 * graph's casts: every key of producer_keys.h set */
	e = (struct producer_event){ .kind = PRODUCER_OP_BEGIN };
	e.op = (struct producer_op){ .op_id = 13, .op = "compile:M.forward",
				      .overload = "", .autocast = on };
	emit(e, 14003);
	static const struct producer_tensor graph_value = {
		.dtype = AMP_DTYPE_F32, .ndim = 2, .shape = { 4, 8 },
	};
	struct producer_tensor graph_result = graph_value;
	graph_result.dtype = AMP_DTYPE_BF16;
	e = (struct producer_event){ .kind = PRODUCER_CAST };
	e.cast = (struct producer_cast){
		.op_id = 13, .source = graph_value, .result = graph_result,
		.from = AMP_DTYPE_F32, .to = AMP_DTYPE_BF16,
		.cache = AMP_CACHE_UNCACHEABLE, .reason = "traced",
		.bytes = 64, .module = "fc1", .module_class = "Linear",
		.origin = "compiled", .graph = 4, .graph_phase = "backward",
		.graph_op = "linear", .feeds = "addmm", .made_by = "autocast",
		.source_line = "m.py:7", .traced_under = "autocast(cpu, bf16)",
	};
	emit(e, 14004);
	e = (struct producer_event){ .kind = PRODUCER_OP_END };
	e.op = (struct producer_op){ .op_id = 13, .op = "compile:M.forward",
				      .overload = "", .autocast = on,
				      .begin_ns = BASE_NS + 14003000, .graph = 4 };
	emit(e, 14005);
	/* the trace passed the size limit: full detail stops at step 3 */
	char stop[PATH_MAX];
	snprintf(stop, sizeof stop, "%s/detail-stop", raw_dir);
	close(open(stop, O_WRONLY | O_CREAT, 0600));
	producer_step_end("scaler update", BASE_NS + 15000000, 1);
}

/* ---------------------------------------------------------- comparing */

static void str_eq(const char *what, size_t i, const char *kept,
		   const char *read)
{
	ck_assert_msg((!kept && !read) || (kept && read && !strcmp(kept, read)),
		      "event %zu: %s kept \"%s\", read \"%s\"", i, what,
		      kept ? kept : "(null)", read ? read : "(null)");
}

static void tensors_eq(size_t i, int n, const struct trace_tensor *a,
		       const struct trace_tensor *b)
{
	for (int k = 0; k < n; k++) {
		const struct trace_tensor_info *x = a[k].info, *y = b[k].info;
		ck_assert_uint_eq(a[k].id, b[k].id);
		ck_assert_uint_eq(a[k].producer_op_id, b[k].producer_op_id);
		str_eq("tensor dtype", i, x->dtype, y->dtype);
		str_eq("tensor name", i, x->name, y->name);
		ck_assert_int_eq(x->ndim, y->ndim);
		for (int d = 0; d < x->ndim; d++)
			ck_assert_int_eq(x->shape[d], y->shape[d]);
		ck_assert_int_eq(x->requires_grad, y->requires_grad);
		ck_assert_int_eq(x->leaf, y->leaf);
		ck_assert_int_eq(x->view, y->view);
		str_eq("tensor device", i, x->device, y->device);
		str_eq("Input type", i, x->profiler_type, y->profiler_type);
	}
}

/* A row of ../tracer/producer_keys.h, kept against read. */
#define KEY_EQ(X, type, f, key, check, since) KEY_EQ_##type(key, a->f, b->f)
#define COMPILED_EQ(X, type, f, key, check, since)                          \
	KEY_EQ_##type(key, kept->f, read->f)
#define KEY_EQ_STRING(key, kept, read) str_eq(key, i, kept, read);
#define KEY_EQ_ID(key, kept, read) ck_assert_uint_eq(kept, read);

static void op_eq(size_t i, const struct trace_op *a, const struct trace_op *b)
{
	ck_assert_uint_eq(a->op_id, b->op_id);
	ck_assert_uint_eq(a->parent_op_id, b->parent_op_id);
	ck_assert_uint_eq(a->forward_op_id, b->forward_op_id);
	str_eq("op", i, a->op, b->op);
	str_eq("overload", i, a->overload, b->overload);
	PRODUCER_OP_KEYS(KEY_EQ, _)
	str_eq("phase", i, a->phase, b->phase);
	str_eq("policy", i, a->policy, b->policy);
	str_eq("device", i, a->device, b->device);
	ck_assert_int_eq(a->emulated, b->emulated);
	ck_assert_int_eq(a->incomplete, b->incomplete);
	ck_assert_int_eq(a->autocast->enabled, b->autocast->enabled);
	str_eq("autocast device", i, a->autocast->device, b->autocast->device);
	str_eq("autocast dtype", i, a->autocast->dtype, b->autocast->dtype);
	ck_assert_int_eq(a->autocast->cache_enabled, b->autocast->cache_enabled);
	ck_assert_int_eq(a->autocast->depth, b->autocast->depth);
	str_eq("autocast scope", i, a->autocast->scope, b->autocast->scope);
	ck_assert_int_eq(a->autocast->nscopes, b->autocast->nscopes);
	for (int k = 0; k < a->autocast->nscopes; k++)
		str_eq("scopes", i, a->autocast->scopes[k], b->autocast->scopes[k]);
	ck_assert_int_eq(a->ninputs, b->ninputs);
	ck_assert_int_eq(a->noutputs, b->noutputs);
	tensors_eq(i, a->ninputs, a->inputs, b->inputs);
	tensors_eq(i, a->noutputs, a->outputs, b->outputs);
	ck_assert_int_eq(a->status, b->status);
	str_eq("error", i, a->error, b->error);
	str_eq("closed_by", i, a->closed_by, b->closed_by);
}

static void cast_eq(size_t i, const struct trace_cast *a,
		    const struct trace_cast *b)
{
	ck_assert_uint_eq(a->op_id, b->op_id);
	ck_assert_uint_eq(a->tensor, b->tensor);
	ck_assert_uint_eq(a->result, b->result);
	ck_assert_uint_eq(a->bytes, b->bytes);
	ck_assert_int_eq(a->arg, b->arg);
	str_eq("from", i, a->from, b->from);
	str_eq("to", i, a->to, b->to);
	str_eq("cache", i, a->cache, b->cache);
	str_eq("reason", i, a->reason, b->reason);
	str_eq("name", i, a->source->name, b->source->name);
	str_eq("cast op", i, a->op, b->op);
	str_eq("cast phase", i, a->phase, b->phase);
	str_eq("cast scope", i, a->scope, b->scope);
	PRODUCER_CAST_RUN_KEYS(KEY_EQ, _)
	ck_assert_int_eq(!a->compiled, !b->compiled);
	{
		const struct trace_cast_compiled *kept = trace_cast_graph(a);
		const struct trace_cast_compiled *read = trace_cast_graph(b);
		PRODUCER_CAST_COMPILED_KEYS(COMPILED_EQ, _)
	}
	ck_assert_int_eq(a->stale, b->stale);
	ck_assert_int_eq(a->source->ndim, b->source->ndim);
	for (int d = 0; d < a->source->ndim; d++)
		ck_assert_int_eq(a->source->shape[d], b->source->shape[d]);
	ck_assert_int_eq(a->source->requires_grad, b->source->requires_grad);
	ck_assert_int_eq(a->source->leaf, b->source->leaf);
}

static void diag_eq(size_t i, const struct trace_diag *a,
		    const struct trace_diag *b)
{
	str_eq("diag kind", i, a->kind, b->kind);
	str_eq("diag message", i, a->message, b->message);
	ck_assert_uint_eq(a->op_id, b->op_id);
	ck_assert_uint_eq(a->tensor, b->tensor);
	ck_assert_int_eq(a->scope, b->scope);
	str_eq("diag fix", i, a->fix, b->fix);
	str_eq("diag severity", i, a->severity, b->severity);
	ck_assert_uint_eq(a->count, b->count);
	ck_assert_int_eq(a->thread, b->thread);
	ck_assert_int_eq(a->other_thread, b->other_thread);
	PRODUCER_DIAG_KEYS(KEY_EQ, _)
}

static void gpu_eq(const struct trace_kernel *a, const struct trace_kernel *b)
{
	ck_assert_int_eq(a->cast, b->cast);
	ck_assert_uint_eq(a->external_id, b->external_id);
	ck_assert_uint_eq(a->op_id, b->op_id);
	ck_assert_int_eq(a->host_pid, b->host_pid);
	ck_assert_uint_eq(a->correlation, b->correlation);
	ck_assert_uint_eq(a->device, b->device);
	ck_assert_uint_eq(a->stream, b->stream);
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(a->grid[k], b->grid[k]);
		ck_assert_int_eq(a->block[k], b->block[k]);
	}
	ck_assert_int_eq(a->registers, b->registers);
	ck_assert_int_eq(a->shared_memory, b->shared_memory);
	ck_assert_uint_eq(a->bytes, b->bytes);
}

static void aggregate_eq(size_t i, const struct trace_aggregate *a,
			 const struct trace_aggregate *b)
{
	ck_assert_int_eq(a->step, b->step);
	ck_assert_int_eq(a->begin_ns, b->begin_ns);
	ck_assert_uint_eq(a->events, b->events);
	ck_assert_uint_eq(a->regions, b->regions);
	ck_assert_uint_eq(a->cache.clears, b->cache.clears);
	ck_assert_uint_eq(a->cache.entries, b->cache.entries);
	ck_assert_uint_eq(a->cache.bytes, b->cache.bytes);
	ck_assert_uint_eq(a->cache.max_entries, b->cache.max_entries);
	ck_assert_uint_eq(a->cache.max_bytes, b->cache.max_bytes);
	ck_assert_int_eq(a->nops, b->nops);
	ck_assert_int_eq(a->ncasts, b->ncasts);
	ck_assert_int_eq(a->ndiags, b->ndiags);
	for (int k = 0; k < a->nops; k++) {
		const struct trace_aggregate_op *x = &a->ops[k], *y = &b->ops[k];
		str_eq("row op", i, x->op, y->op);
		str_eq("row overload", i, x->overload, y->overload);
		str_eq("row phase", i, x->phase, y->phase);
		str_eq("row policy", i, x->policy, y->policy);
		str_eq("row dtype", i, x->dtype, y->dtype);
		str_eq("row device", i, x->device, y->device);
		ck_assert_uint_eq(x->count, y->count);
		ck_assert_uint_eq(x->failed, y->failed);
		ck_assert_int_eq(x->dur_ns, y->dur_ns);
	}
	for (int k = 0; k < a->ncasts; k++) {
		const struct trace_aggregate_cast *x = &a->casts[k];
		const struct trace_aggregate_cast *y = &b->casts[k];
		str_eq("row cast op", i, x->op, y->op);
		str_eq("row cast phase", i, x->phase, y->phase);
		str_eq("row from", i, x->from, y->from);
		str_eq("row to", i, x->to, y->to);
		str_eq("row cache", i, x->cache, y->cache);
		ck_assert_uint_eq(x->count, y->count);
		ck_assert_uint_eq(x->bytes, y->bytes);
		ck_assert_uint_eq(x->stale, y->stale);
		ck_assert_int_eq(x->dur_ns, y->dur_ns);
		str_eq("row origin", i, x->origin, y->origin);
	}
	for (int k = 0; k < a->ndiags; k++) {
		const struct trace_aggregate_diag *x = &a->diags[k];
		const struct trace_aggregate_diag *y = &b->diags[k];
		str_eq("row kind", i, x->kind, y->kind);
		str_eq("row diag phase", i, x->phase, y->phase);
		str_eq("row message", i, x->message, y->message);
		ck_assert_uint_eq(x->count, y->count);
		ck_assert_uint_eq(x->op_id, y->op_id);
		ck_assert_uint_eq(x->tensor, y->tensor);
	}
}

static void payload_eq(size_t i, const struct trace_event *a,
		       const struct trace_event *b)
{
	switch (a->kind) {
	case TRACE_OP:
		op_eq(i, &a->op, &b->op);
		break;
	case TRACE_CAST:
	case TRACE_OTHER_CAST:
		cast_eq(i, &a->cast, &b->cast);
		break;
	case TRACE_SCOPE_BEGIN:
		str_eq("scope", i, a->scope.scope, b->scope.scope);
		ck_assert_int_eq(a->scope.depth, b->scope.depth);
		str_eq("scope device", i, a->scope.device, b->scope.device);
		str_eq("scope dtype", i, a->scope.dtype, b->scope.dtype);
		ck_assert_int_eq(a->scope.enabled, b->scope.enabled);
		ck_assert_int_eq(a->scope.cache_enabled, b->scope.cache_enabled);
		break;
	case TRACE_SCOPE_END:
		ck_assert_int_eq(a->scope.depth, b->scope.depth);
		str_eq("scope closed_by", i, a->scope.closed_by,
		       b->scope.closed_by);
		break;
	case TRACE_CACHE_CLEAR:
		ck_assert_uint_eq(a->cache.entries, b->cache.entries);
		ck_assert_uint_eq(a->cache.bytes, b->cache.bytes);
		break;
	case TRACE_COUNTER:
		ck_assert_int_eq(a->counter.nseries, b->counter.nseries);
		for (int k = 0; k < a->counter.nseries; k++) {
			str_eq("series", i, a->counter.series[k],
			       b->counter.series[k]);
			ck_assert_double_eq(a->counter.value[k],
					    b->counter.value[k]);
		}
		break;
	case TRACE_SCALER:
		str_eq("what", i, a->scaler.what, b->scaler.what);
		ck_assert_uint_eq(a->scaler.scaler_id, b->scaler.scaler_id);
		ck_assert_uint_eq(a->scaler.optimizer_id, b->scaler.optimizer_id);
		ck_assert_uint_eq(a->scaler.inf_tensor, b->scaler.inf_tensor);
		ck_assert_double_eq(a->scaler.scale, b->scaler.scale);
		ck_assert_int_eq(a->scaler.found_inf, b->scaler.found_inf);
		ck_assert_int_eq(a->scaler.step_skipped, b->scaler.step_skipped);
		break;
	case TRACE_DIAG:
		diag_eq(i, &a->diag, &b->diag);
		break;
	case TRACE_META:
		str_eq("meta value", i, a->meta.value, b->meta.value);
		ck_assert_int_eq(a->meta.sort_index, b->meta.sort_index);
		ck_assert_int_eq(a->meta.rank, b->meta.rank);
		ck_assert_int_eq(a->meta.nargv, b->meta.nargv);
		ck_assert_int_eq(!a->meta.argv, !b->meta.argv);
		for (int k = 0; k < a->meta.nargv; k++)
			str_eq("argv", i, a->meta.argv[k], b->meta.argv[k]);
		str_eq("framework", i, a->meta.framework, b->meta.framework);
		ck_assert_int_eq(a->meta.os_tid, b->meta.os_tid);
		ck_assert_int_eq(a->meta.host_pid, b->meta.host_pid);
		ck_assert_int_eq(a->meta.device, b->meta.device);
		break;
	case TRACE_KERNEL:
		gpu_eq(&a->kernel, &b->kernel);
		break;
	case TRACE_STEP:
		ck_assert_int_eq(a->step.step, b->step.step);
		str_eq("step marker", i, a->step.marker, b->step.marker);
		str_eq("step evaluation", i, a->step.evaluation,
		       b->step.evaluation);
		ck_assert_int_eq(a->step.detail, b->step.detail);
		ck_assert_uint_eq(a->step.size_limit, b->step.size_limit);
		str_eq("step measured", i, a->step.measured, b->step.measured);
		ck_assert_int_eq(a->step.scope, b->step.scope);
		break;
	case TRACE_AGGREGATE:
		aggregate_eq(i, &a->aggregate, &b->aggregate);
		break;
	default:
		/* copies are other tools' category, with a kernel's fields */
		if (!strcmp(a->cat, "gpu_memcpy"))
			gpu_eq(&a->kernel, &b->kernel);
		break;
	}
}

/* ------------------------------------------------------------- the run */


/* The converter writes through a memo of op templates: each event,
 * written again and again with other times and ids (a template hit from
 * the second round on), is the text the plain writer gives. */
static void memo_writes_the_same(const struct trace *kept)
{
	struct event_json_memo *memo = event_json_memo_new();
	struct jsonw plain, memoized;
	struct trace_tensor tensors[16];

	ck_assert_ptr_nonnull(memo);
	jsonw_init(&plain);
	jsonw_init(&memoized);
	for (uint64_t round = 0; round < 3; round++)
		for (size_t i = 0; i < kept->nevents; i++) {
			struct trace_event e = kept->events[i];
			e.ts += (double)round * 1000.125;
			e.dur += (double)round;
			if (e.kind == TRACE_OP) {
				struct trace_op *op = &e.op;
				int n = op->ninputs + op->noutputs;
				ck_assert_int_le(n, 16);
				for (int k = 0; k < n; k++) {
					tensors[k] = k < op->ninputs
						? op->inputs[k]
						: op->outputs[k - op->ninputs];
					tensors[k].id += round * 100000;
					if (tensors[k].producer_op_id)
						tensors[k].producer_op_id +=
							round * 1000;
				}
				op->inputs = tensors;
				op->outputs = tensors + op->ninputs;
				op->op_id += round * 1000;
				if (op->parent_op_id)
					op->parent_op_id += round;
			}
			event_json_write(&plain, &e);
			event_json_write_memo(&memoized, &e, memo);
			ck_assert_str_eq(memoized.data, plain.data);
		}
	jsonw_free(&plain);
	jsonw_free(&memoized);
	event_json_memo_free(memo);
}

START_TEST(every_event_reads_back_as_kept)
{
	char raw[PATH_MAX], path[PATH_MAX + 8];
	struct sink sink = { .path = path };
	struct trace read;
	struct trace_error err;
	bool seen[TRACE_KIND_COUNT] = { false };

	ck_assert_ptr_nonnull(scratch_mkdtemp(raw, sizeof raw, "raw"));
	snprintf(path, sizeof path, "%s.json", raw);
	setenv("AMPTRACE_STEPS", "0,2", 1);
	unsetenv("AMPTRACE_MAX_SIZE");
	raw_dir = raw;
	ck_assert_int_eq(producer_attach(raw, &info), 0);
	produce();
	producer_detach();
	/* no exit file and not our child: the process "died" */
	sink_convert(&sink, raw, BASE_NS, BASE_NS + 20000000);
	remove_tree(raw);

	ck_assert_msg(trace_load(path, &read, &err) == 0, "%s", err.message);
	unlink(path);
	ck_assert_uint_eq(read.nevents, sink.kept.nevents);
	for (size_t i = 0; i < read.nevents; i++) {
		const struct trace_event *a = &sink.kept.events[i];
		const struct trace_event *b = &read.events[i];
		ck_assert_msg(a->kind == b->kind, "event %zu: kind %d read as %d",
			      i, a->kind, b->kind);
		ck_assert_int_eq(a->ph, b->ph);
		str_eq("name", i, a->name, b->name);
		str_eq("cat", i, a->cat, b->cat);
		ck_assert_int_eq(a->pid, b->pid);
		ck_assert_int_eq(a->tid, b->tid);
		ck_assert_msg(a->ts == b->ts && a->dur == b->dur,
			      "event %zu: ts/dur %.17g/%.17g read as %.17g/%.17g",
			      i, a->ts, a->dur, b->ts, b->dur);
		payload_eq(i, a, b);
		seen[a->kind] = true;
	}
	/* an op input's producer went through; an output has none (the
	 * op itself made it), a cast's result neither (its cast did) */
	const struct trace_event *linear = NULL;
	for (size_t i = 0; i < read.nevents && !linear; i++)
		if (read.events[i].kind == TRACE_OP &&
		    read.events[i].op.op_id == 10)
			linear = &read.events[i];
	ck_assert_ptr_nonnull(linear);
	ck_assert_int_eq(linear->op.ninputs, 2);
	ck_assert_uint_eq(linear->op.inputs[0].producer_op_id, 7);
	ck_assert_uint_eq(linear->op.inputs[1].producer_op_id, 0);
	ck_assert_uint_eq(linear->op.outputs[0].producer_op_id, 0);
	/* a diag's keys went through, in a step without full detail */
	const struct trace_event *policy = NULL;
	for (size_t i = 0; i < read.nevents && !policy; i++)
		if (read.events[i].kind == TRACE_DIAG &&
		    !strcmp(read.events[i].diag.kind, "fsdp-mixed-precision"))
			policy = &read.events[i];
	ck_assert_ptr_nonnull(policy);
	ck_assert_str_eq(policy->diag.module, "");
	ck_assert_str_eq(policy->diag.module_class, "FSDPNet");
	ck_assert_str_eq(policy->diag.param_dtype, "bf16");
	ck_assert_str_eq(policy->diag.reduce_dtype, "f32");
	ck_assert_ptr_null(policy->diag.input_dtype);
	ck_assert_str_eq(policy->diag.output_dtype, "f16");
	ck_assert_ptr_null(policy->diag.buffer_dtype);
	/* the steps: 0 and 2 in full, 1 aggregated (one row of each),
	 * an evaluation window, full detail stopping at 3 */
	int steps = 0, windows = 0, stops = 0, aggregates = 0;
	for (size_t i = 0; i < read.nevents; i++) {
		const struct trace_event *e = &read.events[i];
		if (e->kind == TRACE_STEP && e->step.marker) {
			ck_assert_int_eq(e->step.step, steps);
			ck_assert_int_eq(e->step.detail, steps != 1);
			steps++;
		} else if (e->kind == TRACE_STEP && e->step.evaluation) {
			ck_assert_int_eq(e->step.step, 2);
			windows++;
		} else if (e->kind == TRACE_STEP) {
			ck_assert_int_eq(e->step.step, 3);
			stops++;
		} else if (e->kind == TRACE_AGGREGATE) {
			const struct trace_aggregate *a = &e->aggregate;
			ck_assert_int_eq(a->step, 1);
			ck_assert_int_eq(a->nops, 2);
			ck_assert_int_eq(a->ncasts, 2);
			ck_assert_int_eq(a->ndiags, 1);
			ck_assert_str_eq(a->diags[0].phase, "forward");
			ck_assert_uint_eq(a->casts[0].stale, 1);
			ck_assert_str_eq(a->casts[0].op, "linear");
			ck_assert_ptr_null(a->casts[0].origin);
			ck_assert_str_eq(a->casts[1].origin, "autograd");
			ck_assert_uint_eq(a->ops[1].failed, 1);
			ck_assert_ptr_null(a->ops[1].dtype);
			ck_assert_uint_eq(a->regions, 1);
			ck_assert_uint_eq(a->cache.clears, 1);
			ck_assert_uint_eq(a->cache.max_entries, 3);
			ck_assert_uint_eq(a->cache.entries, 0);
			/* its events' span: the region's entry to the clear */
			ck_assert_int_eq(a->end_ns - a->begin_ns, 7000);
			aggregates++;
		} else if (e->kind == TRACE_OP) {
			ck_assert_uint_ne(e->op.op_id, 20);
		}
	}
	ck_assert_int_eq(steps, 3);
	ck_assert_int_eq(windows, 1);
	ck_assert_int_eq(stops, 1);
	ck_assert_int_eq(aggregates, 1);
	/* a key a producer hands over went through as it was */
	ck_assert_str_eq(linear->op.module, "fc1");
	ck_assert_str_eq(linear->op.module_class, "Linear");
	/* so did a compiled graph's cast's, numbers among them, and its
	 * compile's graph */
	const struct trace_event *graph_cast = NULL, *compile = NULL;
	for (size_t i = 0; i < read.nevents; i++) {
		const struct trace_event *e = &read.events[i];
		if (e->kind == TRACE_OTHER_CAST &&
		    trace_cast_is_compiled(&e->cast))
			graph_cast = e;
		else if (e->kind == TRACE_OP && e->op.op_id == 13)
			compile = e;
	}
	ck_assert_ptr_nonnull(graph_cast);
	ck_assert_ptr_nonnull(compile);
	ck_assert_uint_eq(compile->op.graph, 4);
	ck_assert_uint_eq(trace_cast_graph(&graph_cast->cast)->graph, 4);
	ck_assert_str_eq(trace_cast_for_op(&graph_cast->cast), "linear");
	ck_assert_str_eq(trace_cast_for_phase(&graph_cast->cast), "backward");
	ck_assert_str_eq(graph_cast->cast.compiled->source_line, "m.py:7");
	ck_assert_str_eq(graph_cast->cast.compiled->traced_under,
			 "autocast(cpu, bf16)");
	ck_assert_uint_eq(graph_cast->cast.tensor, 0);
	/* every kind the converter writes went through (flows are run's
	 * tail's, test_flow.c's; other tools' events amptrace never writes) */
	for (int k = 0; k < TRACE_KIND_COUNT; k++)
		ck_assert_msg(seen[k] || k == TRACE_FLOW || k == TRACE_OTHER,
			      "no event of trace kind %d", k);
	memo_writes_the_same(&sink.kept);
	trace_free(&read);
	trace_free(&sink.kept);
}
END_TEST

/* run's findings are amp.diag events with a finding's keys: the same
 * writer, read back the same. */
START_TEST(finding_reads_back_as_written)
{
	const struct trace_event finding = {
		.kind = TRACE_DIAG, .ph = 'i', .name = "stale-cache",
		.cat = "amp.diag", .pid = 7, .tid = 0, .ts = 1234.567,
		.diag = { .kind = "stale-cache", .message = "a \"quoted\"\nline",
			  .scope = 'p', .op_id = 24, .tensor = 3,
			  .fix = "enter autocast per iteration",
			  .severity = "warning", .count = 2, .thread = 1,
			  .other_thread = 2 },
	};
	struct jsonw w;
	struct trace read;
	struct trace_error err;

	jsonw_init(&w);
	jsonw_lit(&w, "{\"amptrace\":{\"format\":\"1.1\"},\"traceEvents\":[");
	struct jsonw event;
	jsonw_init(&event);
	event_json_write(&event, &finding);
	jsonw_raw(&w, event.data, event.len);
	jsonw_lit(&w, "]}");
	ck_assert_msg(trace_load_text("finding", w.data, w.len, &read, &err) == 0,
		      "%s", err.message);
	ck_assert_uint_eq(read.nevents, 1);
	ck_assert_int_eq(read.events[0].kind, TRACE_DIAG);
	str_eq("name", 0, finding.name, read.events[0].name);
	ck_assert(finding.ts == read.events[0].ts);
	diag_eq(0, &finding.diag, &read.events[0].diag);
	trace_free(&read);
	jsonw_free(&event);
	jsonw_free(&w);
}
END_TEST

/* Writes a thread's stream longer than one of the producer's mappings
 * (16 chunks of 1 MiB) into the raw directory `raw`, converts it, and
 * checks that every record of every chunk, across the mapping windows,
 * reads back in order. */
static void stream_across_windows(const char *raw)
{
	enum { OPS = 18000, NAME = 1000 }; /* ~1 KiB a record: 18 chunks */
	static char name[NAME + 1];
	char path[PATH_MAX];
	struct sink sink = { .path = path };

	memset(name, 'n', NAME);
	snprintf(path, sizeof path, "%s.json", raw);
	ck_assert_int_eq(producer_attach(raw, &info), 0);
	for (int i = 0; i < OPS; i++) {
		struct producer_tensor t = { .id = (uint64_t)i + 7, .ndim = 1,
					     .shape = { i }, .name = name };
		struct producer_event e = { .kind = PRODUCER_OP_END };
		e.op = (struct producer_op){
			.op_id = (uint64_t)i + 1, .op = "relu", .overload = "",
			.ninputs = 1, .inputs = &t,
			.begin_ns = BASE_NS + (uint64_t)i * 1000,
		};
		emit(e, (uint64_t)i + 1);
	}
	producer_detach();
	sink_convert(&sink, raw, BASE_NS,
		     BASE_NS + (uint64_t)OPS * 1000 + 1000);
	remove_tree(raw);
	unlink(path);

	int ops = 0;
	for (size_t i = 0; i < sink.kept.nevents; i++) {
		const struct trace_event *e = &sink.kept.events[i];
		if (e->kind != TRACE_OP)
			continue;
		ck_assert_uint_eq(e->op.op_id, (uint64_t)ops + 1);
		ck_assert_int_eq(e->op.ninputs, 1);
		ck_assert_uint_eq(e->op.inputs[0].id, (uint64_t)ops + 7);
		ck_assert_int_eq(e->op.inputs[0].info->shape[0], ops);
		ck_assert_uint_eq(strlen(e->op.inputs[0].info->name), NAME);
		ops++;
	}
	ck_assert_int_eq(ops, OPS);
	trace_free(&sink.kept);
}

/* Two GradScalers, with ids as the PyTorch bridge gives them (id(self),
 * an address: a multiple of 16): each keeps its own last scale, and its
 * counter is named by the order it came in (FORMAT.md §3.6), the first
 * "grad scale". */
START_TEST(two_scalers_count_their_own_scale)
{
	static const struct {
		uint64_t id;
		double scale;
	} steps[] = {
		{ 0x7f0000000010, 65536.0 }, { 0x7f0000000020, 1024.0 },
		{ 0x7f0000000010, 32768.0 }, { 0x7f0000000020, 1024.0 },
	};
	static const struct {
		const char *name;
		double scale;
	} counters[] = {
		{ "grad scale", 65536.0 }, { "grad scale 2", 1024.0 },
		{ "grad scale", 32768.0 },
	};
	char raw[PATH_MAX], path[PATH_MAX + 8];
	struct sink sink = { .path = path };

	ck_assert_ptr_nonnull(scratch_mkdtemp(raw, sizeof raw, "raw"));
	snprintf(path, sizeof path, "%s.json", raw);
	ck_assert_int_eq(producer_attach(raw, &info), 0);
	for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
		struct producer_event e = { .kind = PRODUCER_SCALER };
		e.scaler = (struct producer_scaler){ .scaler_id = steps[i].id,
						      .what = "update",
						      .scale = steps[i].scale };
		emit(e, i + 1);
	}
	producer_detach();
	sink_convert(&sink, raw, BASE_NS, BASE_NS + 10000);
	remove_tree(raw);
	unlink(path);

	size_t n = 0;
	for (size_t i = 0; i < sink.kept.nevents; i++) {
		const struct trace_event *e = &sink.kept.events[i];
		if (e->kind != TRACE_COUNTER || strncmp(e->name, "grad scale", 10))
			continue;
		ck_assert_uint_lt(n, sizeof counters / sizeof *counters);
		ck_assert_str_eq(e->name, counters[n].name);
		ck_assert(e->counter.value[0] == counters[n].scale);
		n++;
	}
	ck_assert_uint_eq(n, sizeof counters / sizeof *counters);
	trace_free(&sink.kept);
}
END_TEST

/* A rank the producer learns after it attached (producer_rank: the
 * bridge after init_process_group) names the process from there on: a
 * second process_name with the rank, and its sort index; a negative one
 * and the one it already has add nothing (FORMAT.md §5). */
START_TEST(a_rank_learned_late_names_the_process)
{
	char raw[PATH_MAX], path[PATH_MAX + 8];
	struct sink sink = { .path = path };
	struct producer_event e = { .kind = PRODUCER_OP_BEGIN };

	ck_assert_ptr_nonnull(scratch_mkdtemp(raw, sizeof raw, "raw"));
	snprintf(path, sizeof path, "%s.json", raw);
	ck_assert_int_eq(producer_attach(raw, &info), 0);
	e.op = (struct producer_op){ .op_id = 1, .op = "relu", .overload = "" };
	emit(e, 1);
	producer_rank(-1, 1, BASE_NS + 2000);
	producer_rank(3, 1, BASE_NS + 3000);
	producer_rank(3, 1, BASE_NS + 4000);
	e.kind = PRODUCER_OP_END;
	emit(e, 5);
	producer_detach();
	sink_convert(&sink, raw, BASE_NS, BASE_NS + 10000);
	remove_tree(raw);
	unlink(path);

	int ranks[4], sort_indexes[4];
	size_t names = 0, orders = 0;
	for (size_t i = 0; i < sink.kept.nevents; i++) {
		const struct trace_event *m = &sink.kept.events[i];
		if (m->kind != TRACE_META || m->pid != (int64_t)getpid())
			continue;
		if (!strcmp(m->name, "process_name") && names < 4) {
			ranks[names++] = m->meta.rank;
			ck_assert_int_eq(m->meta.rank >= 0,
					 !strncmp(m->meta.value, "rank 3: ", 8));
		}
		if (!strcmp(m->name, "process_sort_index") && orders < 4)
			sort_indexes[orders++] = (int)m->meta.sort_index;
	}
	ck_assert_uint_eq(names, 2);
	ck_assert_int_eq(ranks[0], -1);
	ck_assert_int_eq(ranks[1], 3);
	ck_assert_uint_eq(orders, 2);
	ck_assert_int_eq(sort_indexes[1], 3);
	trace_free(&sink.kept);
}
END_TEST

/* The rows of a thread's steps recorded as aggregates are kept once
 * when alike (steps 0 and 1: a relu that failed), apart when not (step
 * 2: a gelu that failed, as many rows of as many bytes). */
START_TEST(alike_aggregate_rows_are_kept_once)
{
	static const char *const failed[] = { "relu", "relu", "gelu" };
	char raw[PATH_MAX], path[PATH_MAX + 8];
	struct sink sink = { .path = path };
	const struct trace_aggregate *steps[3];

	ck_assert_ptr_nonnull(scratch_mkdtemp(raw, sizeof raw, "raw"));
	snprintf(path, sizeof path, "%s.json", raw);
	setenv("AMPTRACE_STEPS", "none", 1);
	ck_assert_int_eq(producer_attach(raw, &info), 0);
	for (uint64_t k = 0; k < 3; k++) {
		struct producer_event e = { .kind = PRODUCER_OP_END };
		e.op = (struct producer_op){
			.op_id = k + 1, .op = failed[k], .overload = "",
			.status = AMP_ERR_DTYPE,
			.begin_ns = BASE_NS + (10 * k + 1) * 1000,
		};
		emit(e, 10 * k + 2);
		producer_step_end("scaler update",
				  BASE_NS + (10 * k + 5) * 1000, 1);
	}
	producer_detach();
	unsetenv("AMPTRACE_STEPS");
	sink_convert(&sink, raw, BASE_NS, BASE_NS + 100000);
	remove_tree(raw);
	unlink(path);

	size_t n = 0;
	for (size_t i = 0; i < sink.kept.nevents; i++) {
		const struct trace_event *e = &sink.kept.events[i];
		if (e->kind != TRACE_AGGREGATE || e->aggregate.step > 2)
			continue;
		ck_assert_int_eq(e->aggregate.step, (int64_t)n);
		steps[n++] = &e->aggregate;
	}
	ck_assert_uint_eq(n, 3);
	for (size_t k = 0; k < n; k++) {
		ck_assert_int_eq(steps[k]->nops, 1);
		ck_assert_str_eq(steps[k]->ops[0].op, failed[k]);
		ck_assert_uint_eq(steps[k]->ops[0].failed, 1);
	}
	ck_assert_ptr_eq(steps[0]->ops, steps[1]->ops);
	ck_assert_ptr_ne(steps[1]->ops, steps[2]->ops);
	trace_free(&sink.kept);
}
END_TEST

START_TEST(a_stream_across_mapping_windows_reads_back_whole)
{
	char raw[PATH_MAX];

	ck_assert_ptr_nonnull(scratch_mkdtemp(raw, sizeof raw, "raw"));
	stream_across_windows(raw);
}
END_TEST

/* Whether the page at `address` is in this process's page table. */
static bool page_present(uintptr_t address)
{
	uint64_t entry = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	off_t at = (off_t)(address / (uintptr_t)sysconf(_SC_PAGESIZE) * 8);
	ck_assert_int_eq(pread(fd, &entry, sizeof entry, at), sizeof entry);
	close(fd);
	return entry >> 63;
}

/* Where this process maps the start of a file under `dir`. */
static uintptr_t file_mapped_at(const char *dir)
{
	char line[PATH_MAX + 128];
	uintptr_t start = 0;
	FILE *maps = fopen("/proc/self/maps", "r");

	ck_assert_ptr_nonnull(maps);
	while (!start && fgets(line, sizeof line, maps)) {
		unsigned long from, offset;
		if (strstr(line, dir) &&
		    sscanf(line, "%lx-%*x %*s %lx", &from, &offset) == 2 &&
		    offset == 0)
			start = from;
	}
	fclose(maps);
	ck_assert_uint_ne(start, 0);
	return start;
}

/* As on a kernel before 5.14 (no MADV_POPULATE_WRITE): chunks are mapped
 * again over their window slot with MAP_POPULATE.  A new chunk's last
 * page is in the page table before anything writes there, and a stream
 * across windows still reads back whole.  In /dev/shm, where the raw
 * files live (FORMAT.md section 7). */
START_TEST(a_stream_populated_by_mmap_reads_back_whole)
{
	char raw[] = "/dev/shm/amptrace-pipeline-XXXXXX";
	char populated[] = "/dev/shm/amptrace-pipeline-XXXXXX";
	struct producer_tensor t = { .ndim = 1, .shape = { 1 } };
	static char name[1001];

	producer_populate_by_mmap();
	memset(name, 'n', sizeof name - 1);
	t.name = name;
	ck_assert_ptr_nonnull(mkdtemp(populated));
	ck_assert_int_eq(producer_attach(populated, &info), 0);
	/* ~1 KiB a record: into chunk 1, but not to its end. */
	for (int i = 0; i < 1100; i++) {
		struct producer_event e = { .kind = PRODUCER_OP_END };
		e.op = (struct producer_op){
			.op_id = (uint64_t)i + 1, .op = "relu", .overload = "",
			.ninputs = 1, .inputs = &t, .begin_ns = BASE_NS,
		};
		emit(e, (uint64_t)i + 1);
	}
	uintptr_t window = file_mapped_at(populated);
	ck_assert(page_present(window + 2 * (uintptr_t)RAW_CHUNK - 1));
	producer_detach();
	remove_tree(populated);
	ck_assert_ptr_nonnull(mkdtemp(raw));
	stream_across_windows(raw);
}
END_TEST

/* The ops folded are remembered by id for the GPU work that names them
 * later (producer_steps_folded_op), in a window of FOLDED_OP_WINDOW ids:
 * every op of a step without full detail, until an op that many ids
 * later takes its slot; a kept op never. */
START_TEST(folded_ops_are_remembered_for_a_window_of_ids)
{
	char raw[PATH_MAX];
	const uint64_t last = FOLDED_OP_WINDOW + 1;

	ck_assert_ptr_nonnull(scratch_mkdtemp(raw, sizeof raw, "raw"));
	setenv("AMPTRACE_STEPS", "1", 1); /* step 0 folded, step 1 kept */
	ck_assert_int_eq(producer_attach(raw, &info), 0);
	for (uint64_t id = 1; id <= last; id++) {
		struct producer_event e = { .kind = PRODUCER_OP_BEGIN };
		e.op = (struct producer_op){ .op_id = id, .op = "relu",
					     .overload = "" };
		emit(e, id);
		e.kind = PRODUCER_OP_END;
		emit(e, id);
	}
	ck_assert(!producer_steps_folded_op(1)); /* its slot is last's */
	ck_assert(producer_steps_folded_op(2));
	ck_assert(producer_steps_folded_op(last));
	ck_assert(!producer_steps_folded_op(last + 1)); /* not yet begun */
	ck_assert(!producer_steps_folded_op(0));
	producer_step_end("scaler update", BASE_NS + last * 1000 + 1, 1);
	struct producer_event kept = { .kind = PRODUCER_OP_BEGIN };
	kept.op = (struct producer_op){ .op_id = last + 1, .op = "relu",
					.overload = "" };
	emit(kept, last + 1);
	ck_assert(!producer_steps_folded_op(last + 1));
	ck_assert(producer_steps_folded_op(last));
	producer_detach();
	remove_tree(raw);
	unsetenv("AMPTRACE_STEPS");
}
END_TEST

/* One recording of op `op_id` and a kernel it launched, steps `steps`
 * in full detail: the trailer's GPU counts as the converter makes them. */
static struct trace_gpu_timing recorded_gpu(const char *steps,
					    uint64_t op_id)
{
	char raw[PATH_MAX], path[PATH_MAX + 8];
	struct sink sink = { .path = path };
	struct converter cv;
	struct trace_process_end end;
	struct trace_gpu_timing gpu;
	struct trace_process_steps steps_end;

	ck_assert_ptr_nonnull(scratch_mkdtemp(raw, sizeof raw, "raw"));
	snprintf(path, sizeof path, "%s.json", raw);
	setenv("AMPTRACE_STEPS", steps, 1);
	ck_assert_int_eq(producer_attach(raw, &info), 0);
	producer_gpu_status(1, BASE_NS, 0, "timed");
	struct producer_event e = { .kind = PRODUCER_OP_BEGIN };
	e.op = (struct producer_op){ .op_id = op_id, .op = "relu",
				     .overload = "" };
	emit(e, 1);
	e.kind = PRODUCER_OP_END;
	emit(e, 2);
	const struct amp_gpu_activity kernel = {
		.kind = AMP_GPU_ACTIVITY_KERNEL, .name = "relu_kernel",
		.start_ns = BASE_NS + 3000, .end_ns = BASE_NS + 4000,
		.stream = 7, .op_id = op_id,
	};
	producer_gpu_activities(&kernel, 1);
	producer_gpu_stats(&(struct amp_gpu_profiler_stats){ .kernels = 1 });
	producer_detach();
	unsetenv("AMPTRACE_STEPS");
	ck_assert_int_eq(trace_init(&sink.kept, path), 0);
	convert_init(&cv, raw, BASE_NS, sink_writer_for, &sink);
	cv.trace_for = sink_trace_for;
	convert_finish(&cv, -1, 0, BASE_NS + 10000);
	ck_assert_uint_eq(cv.nprocs, 1);
	convert_process_end(cv.procs[0], &end, &gpu, &steps_end);
	ck_assert_int_eq(trace_writer_close(&sink.writer,
					    &(struct trace_trailer){ 0 }),
			 0);
	convert_free(&cv);
	trace_free(&sink.kept);
	remove_tree(raw);
	unlink(path);
	gpu.reason = NULL; /* the converter's, freed */
	return gpu;
}

/* A folded op's kernel is counted, a kept one's written; the counts are a
 * recording's own (a second one in the process starts from nothing). */
START_TEST(gpu_counts_are_a_recordings_own)
{
	struct trace_gpu_timing folded = recorded_gpu("1", 30);
	ck_assert(folded.timing && folded.complete);
	ck_assert_uint_eq(folded.aggregated, 1);
	ck_assert_uint_eq(folded.kernels, 0);
	struct trace_gpu_timing kept = recorded_gpu("0", 31);
	ck_assert_uint_eq(kept.aggregated, 0);
	ck_assert_uint_eq(kept.kernels, 1);
}
END_TEST

/* The rows that count a relu and a cast for it, as step_aggregate_rows
 * hands them over. */
struct left_rows {
	uint64_t relu, casts, events;
};

static bool count_left(void *user, uint16_t kind, const void *model)
{
	struct left_rows *n = user;

	if (kind == RAW_KIND_STEP_OP &&
	    !strcmp(((const struct raw_step_op *)model)->op, "relu"))
		n->relu += ((const struct raw_step_op *)model)->count;
	else if (kind == RAW_KIND_STEP_CAST)
		n->casts += ((const struct raw_step_cast *)model)->count;
	else if (kind == RAW_KIND_STEP_TOTALS)
		n->events = ((const struct raw_step_totals *)model)->events;
	return true;
}

/* What the file at `path` holds for a reader, `size` bytes of it (0: all),
 * its stream holding `written` totals rows: NULL when it holds no
 * aggregates to take. */
static struct step_aggregate *left_in(const char *path, size_t size,
				      uint64_t written)
{
	static char data[1 << 20];
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ssize_t n = read(fd, data, sizeof data);
	close(fd);
	ck_assert_int_gt(n, 0);
	bool whole;
	return step_aggregate_left(data, size && size < (size_t)n ? size
								  : (size_t)n,
				   written, &whole);
}

/* A thread's aggregates counted in a file are there for amptrace run
 * whatever becomes of the thread; sealed for the stream, they are there
 * until the stream holds their totals row; a file cut short reads as
 * none. */
START_TEST(aggregates_left_in_a_file_read_back)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	ck_assert_ptr_nonnull(scratch_mkdtemp(dir, sizeof dir, "agg"));
	snprintf(path, sizeof path, "%s/t1.agg", dir);
	struct step_aggregate *a = step_aggregate_new(path);
	ck_assert_ptr_nonnull(a);
	step_aggregate_reset(a, 7);
	ck_assert_ptr_null(left_in(path, 0, 0)); /* nothing counted yet */
	struct producer_event e = { .kind = PRODUCER_OP_BEGIN, .time_ns = 1 };
	e.op = (struct producer_op){ .op_id = 1, .op = "relu", .overload = "" };
	for (int i = 0; i < 3; i++) {
		e.kind = PRODUCER_OP_BEGIN;
		ck_assert(step_aggregate_add(a, &e));
		struct producer_event cast = { .kind = PRODUCER_CAST, .time_ns = 1 };
		cast.cast = (struct producer_cast){ .op_id = 1, .from = 1, .to = 2 };
		ck_assert(step_aggregate_add(a, &cast));
		e.kind = PRODUCER_OP_END;
		ck_assert(step_aggregate_add(a, &e));
	}
	struct step_aggregate *left = left_in(path, 0, 0);
	ck_assert_ptr_nonnull(left);
	struct left_rows n = { 0 };
	step_aggregate_rows(left, count_left, &n);
	ck_assert_uint_eq(n.relu, 3);
	ck_assert_uint_eq(n.casts, 3);
	ck_assert_uint_eq(n.events, 9);
	ck_assert_uint_eq(step_aggregate_step(left), 7);
	step_aggregate_free(left);
	ck_assert_ptr_null(left_in(path, 16, 0)); /* its header cut short */
	step_aggregate_seal(a, true); /* flush 1: into the stream */
	left = left_in(path, 0, 0); /* ... whose totals row did not come */
	ck_assert_ptr_nonnull(left);
	step_aggregate_free(left);
	ck_assert_ptr_null(left_in(path, 0, 1)); /* ... it came */
	step_aggregate_reset(a, 8);
	ck_assert_ptr_null(left_in(path, 0, 1)); /* emptied */
	ck_assert(step_aggregate_add(a, &e));
	step_aggregate_seal(a, false); /* flush 2 */
	ck_assert_ptr_nonnull(left = left_in(path, 0, 1));
	step_aggregate_free(left);
	ck_assert_ptr_null(left_in(path, 0, 2));
	step_aggregate_free(a);
	ck_assert_int_ne(access(path, F_OK), 0); /* the owner removes it */
	rmdir(dir);
}
END_TEST

/* The diag rows step_aggregate_rows hands over, and the relu ops. */
struct left_diags {
	const char *message[4];
	int ndiags;
	uint64_t relu;
};

static bool diags_left(void *user, uint16_t kind, const void *model)
{
	struct left_diags *n = user;

	if (kind == RAW_KIND_STEP_DIAG && n->ndiags < 4)
		n->message[n->ndiags++] =
			((const struct raw_step_diag *)model)->message;
	else if (kind == RAW_KIND_STEP_DIAG)
		ck_assert_uint_eq(strlen(((const struct raw_step_diag *)model)
						 ->message),
				  RAW_MAX_STRING - 1);
	else if (kind == RAW_KIND_STEP_OP)
		n->relu += ((const struct raw_step_op *)model)->count;
	return true;
}

/* A diag's message, up to RAW_MAX_STRING - 1 bytes, is kept whole, in
 * rows that follow its own (the ops counted after it are not taken for
 * it), both by the counting thread and by amptrace run from the file; a
 * thread's file begins small (it kept 1 KiB per row for messages: 40 KB). */
START_TEST(diag_messages_take_rows_of_their_own)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	static char longest[RAW_MAX_STRING + 100];
	struct stat st;

	ck_assert_ptr_nonnull(scratch_mkdtemp(dir, sizeof dir, "agg"));
	snprintf(path, sizeof path, "%s/t1.agg", dir);
	struct step_aggregate *a = step_aggregate_new(path);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_le(st.st_size, 16384);
	step_aggregate_reset(a, 3);
	memset(longest, 'x', sizeof longest - 1);
	const char *messages[] = { "inf in \"linear\"", longest, NULL };
	const char *kinds[] = { "fp16-overflow", "cast-underflow", "op-error" };
	for (int round = 0; round < 2; round++)
		for (int k = 0; k < 3; k++) {
			struct producer_event d = { .kind = PRODUCER_DIAG,
						    .time_ns = 1 };
			d.diag = (struct producer_diag){ .kind = kinds[k],
							 .message = messages[k] };
			ck_assert(step_aggregate_add(a, &d));
			struct producer_event op = { .kind = PRODUCER_OP_END,
						     .time_ns = 2 };
			op.op = (struct producer_op){ .op_id = 1, .op = "relu",
						      .overload = "" };
			ck_assert(step_aggregate_add(a, &op));
		}
	struct step_aggregate *left = left_in(path, 0, 0);
	ck_assert_ptr_nonnull(left);
	for (int from_file = 0; from_file < 2; from_file++) {
		struct left_diags n = { 0 };
		step_aggregate_rows(from_file ? left : a, diags_left, &n);
		ck_assert_int_eq(n.ndiags, 3);
		ck_assert_uint_eq(n.relu, 6);
		ck_assert_str_eq(n.message[0], messages[0]);
		ck_assert_uint_eq(strlen(n.message[1]), RAW_MAX_STRING - 1);
		ck_assert(!strncmp(n.message[1], longest, RAW_MAX_STRING - 1));
		ck_assert_ptr_null(n.message[2]);
	}
	step_aggregate_free(left);
	/* 40 more, each with the longest message: the rows grow, their
	 * messages with them */
	for (int k = 0; k < 40; k++) {
		char kind[16];
		snprintf(kind, sizeof kind, "kind-%d", k);
		struct producer_event d = { .kind = PRODUCER_DIAG, .time_ns = 3 };
		d.diag = (struct producer_diag){ .kind = kind, .message = longest };
		ck_assert(step_aggregate_add(a, &d));
	}
	ck_assert_ptr_nonnull(left = left_in(path, 0, 0));
	struct left_diags n = { 0 };
	step_aggregate_rows(left, diags_left, &n);
	ck_assert_int_eq(n.ndiags, 4); /* 43, the first 4 kept */
	ck_assert_uint_eq(n.relu, 6);
	step_aggregate_free(left);
	step_aggregate_free(a);
	rmdir(dir);
}
END_TEST

/* Where the flushing thread stops (amptrace_test_flush_point's count),
 * or -1: this test's child stops itself there and is killed. */
static long flush_stop = -1;

void amptrace_test_flush_point(unsigned rows_written)
{
	if ((long)rows_written == flush_stop)
		raise(SIGSTOP);
}

/* Step 0 of a recording without full detail, 5 linear ops each with a
 * cast (3 rows: relu's, the cast's, linear's, then the totals), ended;
 * the next op flushes it, and the thread stops at flush point `stop`. */
static void fold_a_step_and_stop(const char *raw, long stop)
{
	static const struct producer_tensor out = { .id = 9,
						    .dtype = AMP_DTYPE_F16 };

	setenv("AMPTRACE_STEPS", "none", 1);
	unsetenv("AMPTRACE_MAX_SIZE");
	flush_stop = stop;
	if (producer_attach(raw, &info) != 0)
		_exit(3);
	for (uint64_t id = 1; id <= 10; id++) {
		struct producer_event e = { .kind = PRODUCER_OP_BEGIN };
		e.op = (struct producer_op){ .op_id = id, .overload = "",
					     .op = id % 2 ? "linear" : "relu" };
		emit(e, id * 10);
		if (id % 2) {
			struct producer_event c = { .kind = PRODUCER_CAST };
			c.cast = (struct producer_cast){
				.op_id = id, .from = AMP_DTYPE_F32,
				.to = AMP_DTYPE_F16, .cache = AMP_CACHE_MISS,
			};
			emit(c, id * 10 + 1);
		}
		e.kind = PRODUCER_OP_END;
		e.op.noutputs = 1;
		e.op.outputs = &out;
		emit(e, id * 10 + 2);
	}
	producer_step_end("optimizer step", BASE_NS + 200000, 1);
	struct producer_event next = { .kind = PRODUCER_OP_BEGIN };
	next.op = (struct producer_op){ .op_id = 11, .op = "relu",
					.overload = "" };
	emit(next, 300); /* step 1: step 0's rows go to the stream */
	_exit(0);
}

/* A thread killed anywhere in the flush of a step's aggregates, between
 * their seal and their reset (after 0 to 4 of the rows are in its
 * stream: loop index), loses no counted op and counts none twice: the
 * stream's totals row, or the file, has step 0, whole (the process died
 * in step 1, not in it). */
START_TEST(a_kill_inside_a_flush_loses_no_step)
{
	char raw[PATH_MAX], path[PATH_MAX + 8];
	struct sink sink = { .path = path };
	int status;

	ck_assert_ptr_nonnull(scratch_mkdtemp(raw, sizeof raw, "raw"));
	snprintf(path, sizeof path, "%s.json", raw);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0)
		fold_a_step_and_stop(raw, _i);
	ck_assert_int_eq(waitpid(child, &status, WUNTRACED), child);
	ck_assert_msg(WIFSTOPPED(status), "flush point %d not reached (%#x)",
		      _i, status);
	ck_assert_int_eq(kill(child, SIGKILL), 0);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	sink_convert(&sink, raw, BASE_NS, BASE_NS + 20000000);
	remove_tree(raw);
	unlink(path);

	uint64_t linear = 0, relu = 0, casts = 0;
	int aggregates = 0;
	for (size_t i = 0; i < sink.kept.nevents; i++) {
		const struct trace_event *e = &sink.kept.events[i];
		if (e->kind != TRACE_AGGREGATE)
			continue;
		const struct trace_aggregate *a = &e->aggregate;
		ck_assert_int_eq(a->step, 0);
		ck_assert_msg(!a->cut_short, "flush point %d: cut short", _i);
		for (int k = 0; k < a->nops; k++)
			*(strcmp(a->ops[k].op, "linear") ? &relu : &linear) +=
				a->ops[k].count;
		for (int k = 0; k < a->ncasts; k++)
			casts += a->casts[k].count;
		aggregates++;
	}
	ck_assert_msg(aggregates == 1 && linear == 5 && relu == 5 && casts == 5,
		      "flush point %d: %d aggregates, %llu linear, %llu relu, "
		      "%llu casts", _i, aggregates, (unsigned long long)linear,
		      (unsigned long long)relu, (unsigned long long)casts);
}
END_TEST

static Suite *pipeline_suite(void)
{
	Suite *s = suite_create("pipeline");
	TCase *tc = tcase_create("round_trip");

	tcase_add_test(tc, every_event_reads_back_as_kept);
	tcase_add_test(tc, finding_reads_back_as_written);
	tcase_add_test(tc, two_scalers_count_their_own_scale);
	tcase_add_test(tc, a_rank_learned_late_names_the_process);
	tcase_add_test(tc, alike_aggregate_rows_are_kept_once);
	tcase_add_test(tc, a_stream_across_mapping_windows_reads_back_whole);
	tcase_add_test(tc, a_stream_populated_by_mmap_reads_back_whole);
	tcase_add_test(tc, folded_ops_are_remembered_for_a_window_of_ids);
	tcase_add_test(tc, gpu_counts_are_a_recordings_own);
	tcase_add_test(tc, aggregates_left_in_a_file_read_back);
	tcase_add_test(tc, diag_messages_take_rows_of_their_own);
	tcase_add_loop_test(tc, a_kill_inside_a_flush_loses_no_step, 0, 5);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(pipeline_suite());

	scratch_make("pipeline");
	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return scratch_remove() != 0 || failed ? 1 : 0;
}
