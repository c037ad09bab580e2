/* The raw stream's schema (tracer/record/raw_schema.h): for every record kind,
 * a model with every field set to a value of its own goes through the
 * generated encoder and decoder and comes back equal, field by field
 * (the comparisons are written out here, not generated, so a member the
 * schema forgets fails); the encoder stays within its bound; a record cut
 * short or of an unknown kind is rejected.  libamp's events, encoded by the
 * recorder's own instance of the encoder (libamp_encode.h), give the same
 * bytes as their twins in the producer model. */
#include "producer.h"
#include "libamp_encode.h"
#include "raw_decode.h"
#include "raw_encode.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* Room for any record the tests build (8-byte aligned, as in a chunk). */
static _Alignas(8) uint8_t buffer[1 << 20];
static struct raw_decoded decoded;

static struct raw_record *record_at(uint16_t kind, uint64_t time_ns,
				    const uint8_t *end)
{
	struct raw_record *r = (struct raw_record *)buffer;
	size_t size = ((size_t)(end - buffer) + 7) & ~(size_t)7;

	r->kind = kind;
	r->time_ns = time_ns;
	atomic_store(&r->size, (uint32_t)size);
	return r;
}

static uint8_t *payload(void)
{
	memset(buffer, 0, sizeof buffer);
	return buffer + sizeof(struct raw_record);
}

static void assert_str_eq(const char *got, const char *want)
{
	if (!want)
		ck_assert_ptr_null(got);
	else
		ck_assert_str_eq(got, want);
}

static void assert_tensor_eq(const struct producer_tensor *got,
			     const struct producer_tensor *want)
{
	ck_assert_uint_eq(got->id, want->id);
	ck_assert_uint_eq(got->producer_op_id, want->producer_op_id);
	ck_assert_int_eq(got->dtype, want->dtype);
	ck_assert_int_eq(got->device, want->device);
	ck_assert_int_eq(got->ndim, want->ndim);
	for (int d = 0; d < want->ndim; d++)
		ck_assert_int_eq(got->shape[d], want->shape[d]);
	assert_str_eq(got->name, want->name);
	ck_assert_uint_eq(got->flags, want->flags);
}

static void assert_autocast_eq(const struct producer_autocast *got,
			       const struct producer_autocast *want)
{
	ck_assert_int_eq(got->enabled, want->enabled);
	ck_assert_int_eq(got->device, want->device);
	ck_assert_int_eq(got->dtype, want->dtype);
	ck_assert_int_eq(got->cache_enabled, want->cache_enabled);
	ck_assert_int_eq(got->depth, want->depth);
	assert_str_eq(got->scope, want->scope);
}

static const struct producer_tensor tensors[3] = {
	{ .id = 11, .dtype = AMP_DTYPE_F16, .device = AMP_DEVICE_CUDA,
	  .ndim = 2, .shape = { 64, 3 }, .name = "fc1.weight",
	  .flags = PRODUCER_TENSOR_LEAF | PRODUCER_TENSOR_REQUIRES_GRAD },
	{ .id = 12, .dtype = AMP_DTYPE_BF16, .ndim = 1, .shape = { 7 },
	  .flags = PRODUCER_TENSOR_VIEW, .producer_op_id = UINT64_C(0x8000000000000005) },
	{ .id = 13, .dtype = AMP_DTYPE_I64, .ndim = 0 },
};

static const struct producer_autocast autocast = {
	.enabled = true, .device = AMP_DEVICE_CUDA, .dtype = AMP_DTYPE_BF16,
	.cache_enabled = true, .depth = 3, .scope = "forward",
};

/* Encodes e, decodes it back into `decoded` and checks the frame. */
static void round_trip(const struct producer_event *e)
{
	uint8_t *start = payload();
	uint8_t *end = raw_event_encode(start, e);

	ck_assert_uint_gt(raw_event_bound(e), 0);
	ck_assert_uint_le((size_t)(end - start), raw_event_bound(e));
	ck_assert(raw_decode(record_at((uint16_t)e->kind, e->time_ns, end),
			     &decoded));
	ck_assert_int_eq(decoded.kind, e->kind);
	ck_assert_int_eq(decoded.event.kind, e->kind);
	ck_assert_uint_eq(decoded.event.time_ns, e->time_ns);
}

static void assert_op_eq(const struct producer_op *got,
			 const struct producer_op *want, bool end)
{
	ck_assert_uint_eq(got->op_id, want->op_id);
	ck_assert_uint_eq(got->parent_op_id, want->parent_op_id);
	ck_assert_uint_eq(got->forward_op_id, want->forward_op_id);
	assert_str_eq(got->op, want->op);
	assert_str_eq(got->overload, want->overload);
	assert_str_eq(got->module, want->module);
	assert_str_eq(got->module_class, want->module_class);
	ck_assert_uint_eq(got->graph, want->graph);
	ck_assert_int_eq(got->phase, want->phase);
	ck_assert_int_eq(got->device, want->device);
	ck_assert_int_eq(got->emulated, want->emulated);
	assert_autocast_eq(&got->autocast, &want->autocast);
	if (!end)
		return;
	ck_assert_int_eq(got->policy, want->policy);
	ck_assert_int_eq(got->status, want->status);
	assert_str_eq(got->error, want->error);
	ck_assert_uint_eq(got->begin_ns, want->begin_ns);
	ck_assert_int_eq(got->ninputs, want->ninputs);
	for (int i = 0; i < want->ninputs; i++)
		assert_tensor_eq(&got->inputs[i], &want->inputs[i]);
	ck_assert_int_eq(got->noutputs, want->noutputs);
	for (int i = 0; i < want->noutputs; i++)
		assert_tensor_eq(&got->outputs[i], &want->outputs[i]);
}

START_TEST(op_begin_round_trips)
{
	struct producer_event e = { .kind = PRODUCER_OP_BEGIN, .time_ns = 1001 };
	e.op = (struct producer_op){
		.op_id = 5, .parent_op_id = 4, .forward_op_id = 3,
		.op = "softmax", .overload = "int", .module = "h.3.attn",
		.phase = AMP_PHASE_BACKWARD, .device = AMP_DEVICE_CUDA,
		.emulated = true, .autocast = autocast,
	};

	round_trip(&e);
	assert_op_eq(&decoded.event.op, &e.op, false);
}
END_TEST

START_TEST(op_end_round_trips)
{
	struct producer_event e = { .kind = PRODUCER_OP_END, .time_ns = 2002 };
	e.op = (struct producer_op){
		.op_id = 6, .parent_op_id = 2, .forward_op_id = 1,
		.op = "linear", .overload = "", .module = "h.3.attn.c_attn",
		.module_class = "Conv1D", .phase = AMP_PHASE_BACKWARD,
		.policy = AMP_POLICY_LOWER_PRECISION_FP,
		.device = AMP_DEVICE_CUDA, .emulated = true,
		.autocast = autocast, .ninputs = 3, .inputs = tensors,
		.noutputs = 1, .outputs = &tensors[1], .status = AMP_ERR_DTYPE,
		.error = "mat1 and mat2 must have the same dtype",
		.begin_ns = 1500, .graph = 300,
	};

	round_trip(&e);
	assert_op_eq(&decoded.event.op, &e.op, true);
}
END_TEST

/* The error string travels only with a failure status. */
START_TEST(op_end_error_needs_a_status)
{
	struct producer_event e = { .kind = PRODUCER_OP_END, .time_ns = 3 };
	e.op = (struct producer_op){ .op = "relu", .overload = "",
				      .error = "stale message" };

	round_trip(&e);
	ck_assert_ptr_null(decoded.event.op.error);
	ck_assert_int_eq(decoded.event.op.ninputs, 0);
}
END_TEST

START_TEST(cast_round_trips)
{
	for (int counted = 0; counted < 2; counted++) {
		struct producer_event e = { .kind = PRODUCER_CAST, .time_ns = 3003 };
		e.cast = (struct producer_cast){
			.op_id = 9, .arg = 2, .source = tensors[0],
			.result = tensors[1], .from = AMP_DTYPE_F32,
			.to = AMP_DTYPE_BF16, .cache = AMP_CACHE_MISS,
			.reason = "leaf weight: cacheable", .bytes = 384,
			.begin_ns = 2999, .stale = true,
			.cache_counted = counted, .cache_entries = 17,
			.cache_bytes = 4096,
			.module_class = counted ? "Linear" : NULL,
			.origin = counted ? NULL : "autograd",
		};

		round_trip(&e);
		const struct producer_cast *got = &decoded.event.cast;
		ck_assert_uint_eq(got->op_id, 9);
		ck_assert_int_eq(got->arg, 2);
		assert_tensor_eq(&got->source, &tensors[0]);
		assert_tensor_eq(&got->result, &tensors[1]);
		ck_assert_int_eq(got->from, AMP_DTYPE_F32);
		ck_assert_int_eq(got->to, AMP_DTYPE_BF16);
		ck_assert_int_eq(got->cache, AMP_CACHE_MISS);
		assert_str_eq(got->reason, e.cast.reason);
		ck_assert_uint_eq(got->bytes, 384);
		ck_assert_uint_eq(got->begin_ns, 2999);
		ck_assert(got->stale);
		ck_assert_int_eq(got->cache_counted, counted);
		ck_assert_uint_eq(got->cache_entries, counted ? 17 : 0);
		ck_assert_uint_eq(got->cache_bytes, counted ? 4096 : 0);
		ck_assert_ptr_null(got->module);
		assert_str_eq(got->module_class, e.cast.module_class);
		assert_str_eq(got->origin, e.cast.origin);
	}
}
END_TEST

/* A compiled graph's cast: every key of ../producer_keys.h set, past
 * the first byte of the keys' mask. */
START_TEST(compiled_cast_round_trips)
{
	struct producer_event e = { .kind = PRODUCER_CAST, .time_ns = 3003 };
	e.cast = (struct producer_cast){
		.op_id = 9, .arg = 1, .from = AMP_DTYPE_F32,
		.to = AMP_DTYPE_BF16, .cache = AMP_CACHE_UNCACHEABLE,
		.reason = "traced into graph 2", .bytes = 512,
		.module = "h.0.mlp", .module_class = "Linear",
		.origin = "compiled", .graph = 2, .graph_phase = "backward",
		.graph_op = "linear", .feeds = "addmm", .made_by = "autocast",
		.source_line = "train.py:12",
		.traced_under = "autocast(cpu, bf16)",
	};

	round_trip(&e);
	const struct producer_cast *got = &decoded.event.cast;
	ck_assert_uint_eq(got->graph, 2);
	assert_str_eq(got->module, "h.0.mlp");
	assert_str_eq(got->module_class, "Linear");
	assert_str_eq(got->origin, "compiled");
	assert_str_eq(got->graph_phase, "backward");
	assert_str_eq(got->graph_op, "linear");
	assert_str_eq(got->feeds, "addmm");
	assert_str_eq(got->made_by, "autocast");
	assert_str_eq(got->source_line, "train.py:12");
	assert_str_eq(got->traced_under, "autocast(cpu, bf16)");
	assert_str_eq(got->reason, "traced into graph 2");
	ck_assert_uint_eq(got->source.id, 0);
}
END_TEST

START_TEST(scope_round_trips)
{
	static const enum producer_kind kinds[] = { PRODUCER_SCOPE_ENTER,
						     PRODUCER_SCOPE_EXIT };

	for (size_t k = 0; k < 2; k++) {
		struct producer_event e = { .kind = kinds[k], .time_ns = 4004 };
		e.scope = (struct producer_scope){
			.depth = 2, .device = AMP_DEVICE_CUDA,
			.dtype = AMP_DTYPE_F16, .enabled = true,
			.cache_enabled = true, .scope = k ? NULL : "decoder",
		};

		round_trip(&e);
		const struct producer_scope *got = &decoded.event.scope;
		ck_assert_int_eq(got->depth, 2);
		ck_assert_int_eq(got->device, AMP_DEVICE_CUDA);
		ck_assert_int_eq(got->dtype, AMP_DTYPE_F16);
		ck_assert(got->enabled);
		ck_assert(got->cache_enabled);
		assert_str_eq(got->scope, e.scope.scope);
	}
}
END_TEST

START_TEST(cache_clear_round_trips)
{
	struct producer_event e = { .kind = PRODUCER_CACHE_CLEAR, .time_ns = 5 };
	e.cache = (struct producer_cache_clear){ .entries = 12, .bytes = 1 << 20 };

	round_trip(&e);
	ck_assert_uint_eq(decoded.event.cache.entries, 12);
	ck_assert_uint_eq(decoded.event.cache.bytes, 1 << 20);
}
END_TEST

START_TEST(scaler_round_trips)
{
	struct producer_event e = { .kind = PRODUCER_SCALER, .time_ns = 6 };
	e.scaler = (struct producer_scaler){
		.scaler_id = 2, .optimizer_id = 3, .what = "step",
		.scale = 32768.5, .found_inf = true, .step_skipped = true,
		.inf_tensor_id = 77,
	};

	round_trip(&e);
	const struct producer_scaler *got = &decoded.event.scaler;
	ck_assert_uint_eq(got->scaler_id, 2);
	ck_assert_uint_eq(got->optimizer_id, 3);
	assert_str_eq(got->what, "step");
	ck_assert_double_eq(got->scale, 32768.5);
	ck_assert(got->found_inf);
	ck_assert(got->step_skipped);
	ck_assert_uint_eq(got->inf_tensor_id, 77);
}
END_TEST

START_TEST(diag_round_trips)
{
	struct producer_event e = { .kind = PRODUCER_DIAG, .time_ns = 7 };
	e.diag = (struct producer_diag){ .kind = "fp16-overflow",
					  .message = "inf in \"out\"",
					  .op_id = 8, .tensor_id = 9 };

	round_trip(&e);
	assert_str_eq(decoded.event.diag.kind, "fp16-overflow");
	assert_str_eq(decoded.event.diag.message, "inf in \"out\"");
	ck_assert_uint_eq(decoded.event.diag.op_id, 8);
	ck_assert_uint_eq(decoded.event.diag.tensor_id, 9);
	ck_assert_ptr_null(decoded.event.diag.param_dtype);
}
END_TEST

/* A diag's keys (../producer_keys.h: an FSDP policy's) round-trip, those
 * unset absent. */
START_TEST(diag_keys_round_trip)
{
	struct producer_event e = { .kind = PRODUCER_DIAG, .time_ns = 7 };
	e.diag = (struct producer_diag){ .kind = "fsdp-mixed-precision",
					  .message = "m", .module = "",
					  .module_class = "FSDPLinear",
					  .param_dtype = "bf16",
					  .buffer_dtype = "f16" };

	round_trip(&e);
	assert_str_eq(decoded.event.diag.module, "");
	assert_str_eq(decoded.event.diag.module_class, "FSDPLinear");
	assert_str_eq(decoded.event.diag.param_dtype, "bf16");
	ck_assert_ptr_null(decoded.event.diag.reduce_dtype);
	ck_assert_ptr_null(decoded.event.diag.input_dtype);
	ck_assert_ptr_null(decoded.event.diag.output_dtype);
	assert_str_eq(decoded.event.diag.buffer_dtype, "f16");
}
END_TEST

START_TEST(gpu_activity_round_trips)
{
	const struct amp_gpu_activity a = {
		.kind = AMP_GPU_ACTIVITY_MEMCPY, .name = "Memcpy HtoD",
		.start_ns = 100, .end_ns = 250, .device = 1, .stream = 7,
		.correlation_id = 99, .op_id = 4, .cast_id = 5,
		.grid = { 1, 2, 3 }, .block = { 4, 5, 6 }, .registers = 32,
		.shared_memory = 1024, .bytes = 4096, .copy_kind = 1,
	};
	uint8_t *start = payload();
	uint8_t *end = raw_encode_gpu_activity(start, &a);

	ck_assert_uint_le((size_t)(end - start), raw_bound_gpu_activity(&a));
	ck_assert(raw_decode(record_at(RAW_KIND_GPU_ACTIVITY, a.start_ns, end),
			     &decoded));
	const struct amp_gpu_activity *got = &decoded.gpu_activity;
	ck_assert_int_eq(got->kind, a.kind);
	assert_str_eq(got->name, a.name);
	ck_assert_uint_eq(got->start_ns, 100);
	ck_assert_uint_eq(got->end_ns, 250);
	ck_assert_uint_eq(got->device, 1);
	ck_assert_uint_eq(got->stream, 7);
	ck_assert_uint_eq(got->correlation_id, 99);
	ck_assert_uint_eq(got->op_id, 4);
	ck_assert_uint_eq(got->cast_id, 5);
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(got->grid[k], a.grid[k]);
		ck_assert_int_eq(got->block[k], a.block[k]);
	}
	ck_assert_int_eq(got->registers, 32);
	ck_assert_int_eq(got->shared_memory, 1024);
	ck_assert_uint_eq(got->bytes, 4096);
	ck_assert_uint_eq(got->copy_kind, 1);
}
END_TEST

START_TEST(gpu_status_and_stats_round_trip)
{
	const struct raw_gpu_status status = { -3, "no CUDA device" };
	uint8_t *start = payload();
	uint8_t *end = raw_encode_gpu_status(start, &status);

	ck_assert_uint_le((size_t)(end - start), raw_bound_gpu_status(&status));
	ck_assert(raw_decode(record_at(RAW_KIND_GPU_STATUS, 1, end), &decoded));
	ck_assert_int_eq(decoded.gpu_status.result, -3);
	assert_str_eq(decoded.gpu_status.reason, "no CUDA device");

	const struct raw_gpu_stats stats = { { 1, 2, 3, 4, 5, 6 }, 7, 8 };
	start = payload();
	end = raw_encode_gpu_stats(start, &stats);
	ck_assert(raw_decode(record_at(RAW_KIND_GPU_STATS, 2, end), &decoded));
	const struct raw_gpu_stats *got = &decoded.gpu_stats;
	ck_assert_uint_eq(got->stats.kernels, 1);
	ck_assert_uint_eq(got->stats.memcpys, 2);
	ck_assert_uint_eq(got->stats.unlinked, 3);
	ck_assert_uint_eq(got->stats.untimed, 4);
	ck_assert_uint_eq(got->stats.dropped, 5);
	ck_assert_uint_eq(got->stats.buffers, 6);
	ck_assert_uint_eq(got->lost, 7);
	ck_assert_uint_eq(got->aggregated, 8);
}
END_TEST

/* Each step kind: encode, decode, every member back. */
#define ROUND_TRIP(name, kind, model)                                       \
	do {                                                                \
		uint8_t *start = payload();                                 \
		uint8_t *end = raw_encode_##name(start, &(model));          \
		ck_assert_uint_le((size_t)(end - start),                    \
				  raw_bound_##name(&(model)));              \
		ck_assert(raw_decode(record_at(kind, 99, end), &decoded));  \
	} while (0)

START_TEST(step_kinds_round_trip)
{
	const struct raw_step step = { 12, 987654321, 1, "optimizer step" };
	ROUND_TRIP(step, RAW_KIND_STEP, step);
	ck_assert_uint_eq(decoded.step.step, 12);
	ck_assert_uint_eq(decoded.step.begin_ns, 987654321);
	ck_assert_uint_eq(decoded.step.detail, 1);
	assert_str_eq(decoded.step.marker, "optimizer step");

	const struct raw_evaluation window = { 5000, 3, "model.eval()" };
	ROUND_TRIP(evaluation, RAW_KIND_EVALUATION, window);
	ck_assert_uint_eq(decoded.evaluation.begin_ns, 5000);
	ck_assert_uint_eq(decoded.evaluation.step, 3);
	assert_str_eq(decoded.evaluation.how, "model.eval()");

	const struct raw_detail_stop stop = { 57, 100000000, "the trace" };
	ROUND_TRIP(detail_stop, RAW_KIND_DETAIL_STOP, stop);
	ck_assert_uint_eq(decoded.detail_stop.step, 57);
	ck_assert_uint_eq(decoded.detail_stop.limit, 100000000);
	assert_str_eq(decoded.detail_stop.measured, "the trace");

	const struct raw_step_op op = {
		.step = 7, .count = 400, .failed = 2, .dur_ns = 123456789,
		.phase = AMP_PHASE_BACKWARD, .policy = AMP_POLICY_FP32,
		.device = AMP_DEVICE_CUDA, .has_dtype = 1,
		.dtype = AMP_DTYPE_BF16, .op = "softmax", .overload = "int",
	};
	ROUND_TRIP(step_op, RAW_KIND_STEP_OP, op);
	const struct raw_step_op *o = &decoded.step_op;
	ck_assert_uint_eq(o->step, 7);
	ck_assert_uint_eq(o->count, 400);
	ck_assert_uint_eq(o->failed, 2);
	ck_assert_uint_eq(o->dur_ns, 123456789);
	ck_assert_uint_eq(o->phase, AMP_PHASE_BACKWARD);
	ck_assert_uint_eq(o->policy, AMP_POLICY_FP32);
	ck_assert_uint_eq(o->device, AMP_DEVICE_CUDA);
	ck_assert_uint_eq(o->has_dtype, 1);
	ck_assert_uint_eq(o->dtype, AMP_DTYPE_BF16);
	assert_str_eq(o->op, "softmax");
	assert_str_eq(o->overload, "int");

	const struct raw_step_cast cast = {
		.step = 8, .count = 9, .bytes = 10, .dur_ns = 11, .stale = 12,
		.phase = PRODUCER_PHASE_OTHER, .from = AMP_DTYPE_F32,
		.to = AMP_DTYPE_F16,
		.cache = AMP_CACHE_DISABLED, .op = "linear",
		.origin = "autograd",
	};
	ROUND_TRIP(step_cast, RAW_KIND_STEP_CAST, cast);
	const struct raw_step_cast *c = &decoded.step_cast;
	ck_assert_uint_eq(c->step, 8);
	ck_assert_uint_eq(c->count, 9);
	ck_assert_uint_eq(c->bytes, 10);
	ck_assert_uint_eq(c->dur_ns, 11);
	ck_assert_uint_eq(c->stale, 12);
	ck_assert_uint_eq(c->phase, PRODUCER_PHASE_OTHER);
	ck_assert_uint_eq(c->from, AMP_DTYPE_F32);
	ck_assert_uint_eq(c->to, AMP_DTYPE_F16);
	ck_assert_uint_eq(c->cache, AMP_CACHE_DISABLED);
	assert_str_eq(c->op, "linear");
	assert_str_eq(c->origin, "autograd");

	const struct raw_step_diag diag = {
		.step = 4, .count = 5, .op_id = 6, .tensor = 7,
		.phase = AMP_PHASE_OPTIMIZER, .kind = "fp16-overflow",
		.message = NULL,
	};
	ROUND_TRIP(step_diag, RAW_KIND_STEP_DIAG, diag);
	const struct raw_step_diag *d = &decoded.step_diag;
	ck_assert_uint_eq(d->step, 4);
	ck_assert_uint_eq(d->count, 5);
	ck_assert_uint_eq(d->op_id, 6);
	ck_assert_uint_eq(d->tensor, 7);
	ck_assert_uint_eq(d->phase, AMP_PHASE_OPTIMIZER);
	assert_str_eq(d->kind, "fp16-overflow");
	assert_str_eq(d->message, NULL);

	const struct raw_step_totals totals = { 1, 2, 10, 3, 4, 5, 6, 7, 8, 9 };
	ROUND_TRIP(step_totals, RAW_KIND_STEP_TOTALS, totals);
	const struct raw_step_totals *t = &decoded.step_totals;
	ck_assert_uint_eq(t->step, 1);
	ck_assert_uint_eq(t->begin_ns, 2);
	ck_assert_uint_eq(t->end_ns, 10);
	ck_assert_uint_eq(t->events, 3);
	ck_assert_uint_eq(t->regions, 4);
	ck_assert_uint_eq(t->clears, 5);
	ck_assert_uint_eq(t->cache_entries, 6);
	ck_assert_uint_eq(t->cache_bytes, 7);
	ck_assert_uint_eq(t->cache_max_entries, 8);
	ck_assert_uint_eq(t->cache_max_bytes, 9);
}
END_TEST

/* Strings are cut at RAW_MAX_STRING, dims at PRODUCER_MAX_DIMS, tensor lists
 * at RAW_MAX_TENSORS: the bound holds and the decoder reads what was
 * written. */
START_TEST(limits_are_kept)
{
	static struct producer_tensor many[300];
	static char long_name[3000];
	memset(long_name, 'x', sizeof long_name - 1);
	for (int i = 0; i < 300; i++)
		many[i] = (struct producer_tensor){ .id = (uint64_t)i + 1,
						    .ndim = PRODUCER_MAX_DIMS,
						    .name = long_name };
	struct producer_event e = { .kind = PRODUCER_OP_END, .time_ns = 9 };
	e.op = (struct producer_op){ .op = long_name, .overload = "",
				      .ninputs = 300, .inputs = many };

	round_trip(&e);
	ck_assert_int_eq(decoded.event.op.ninputs, RAW_MAX_TENSORS);
	ck_assert_uint_eq(strlen(decoded.event.op.op), RAW_MAX_STRING);
	ck_assert_uint_eq(decoded.event.op.inputs[254].id, 255);
	ck_assert_uint_eq(strlen(decoded.event.op.inputs[254].name),
			  RAW_MAX_STRING);
}
END_TEST

/* Varints keep every value: the one- and two-byte fast paths' edges,
 * the widest values, negative dims and statuses, and begin times before,
 * at, after and far from the record's time (0: "none"). */
START_TEST(varints_keep_every_value)
{
	static const uint64_t ids[] = { 0, 1, 127, 128, 16383, 16384,
					UINT64_C(1) << 35, UINT64_MAX };
	static const uint64_t begins[] = { 0, 1, 999, 1000, 1001,
					   UINT64_MAX };

	for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
		struct producer_tensor t = {
			.id = ids[i], .producer_op_id = ids[(i + 3) % 8],
			.ndim = 4, .shape = { -1, INT64_MIN, INT64_MAX,
					      (int64_t)ids[i] / 2 },
		};
		struct producer_event e = { .kind = PRODUCER_OP_END,
				       .time_ns = 1000 };
		e.op = (struct producer_op){
			.op_id = ids[i], .parent_op_id = ids[7 - i],
			.forward_op_id = ids[(i + 5) % 8], .op = "x",
			.overload = "", .status = i % 2 ? INT32_MIN : -4,
			.error = "e", .begin_ns = begins[i % 6],
			.autocast = { .depth = i % 2 ? INT32_MAX : -1 },
			.ninputs = 1, .inputs = &t, .noutputs = 1,
			.outputs = &t,
		};
		round_trip(&e);
		assert_op_eq(&decoded.event.op, &e.op, true);
	}
}
END_TEST

/* Strings of every length around the copy's and the length varint's
 * edges come back whole. */
START_TEST(strings_of_every_length)
{
	static char text[300];

	for (size_t len = 0; len < sizeof text; len++) {
		memset(text, 'a' + (int)(len % 26), len);
		text[len] = '\0';
		struct producer_event e = { .kind = PRODUCER_DIAG, .time_ns = 1 };
		e.diag = (struct producer_diag){ .kind = text, .message = "" };
		round_trip(&e);
		assert_str_eq(decoded.event.diag.kind, text);
		assert_str_eq(decoded.event.diag.message, "");
	}
}
END_TEST

/* The point of the format: a small op's END (two 2-d tensors, ids and
 * times as a real run has them) takes 64 bytes at most, not the ~150 of
 * fixed-width fields (every byte is a fresh tmpfs page's share). */
START_TEST(small_ops_encode_small)
{
	struct producer_tensor t[2] = {
		{ .id = 4321, .producer_op_id = 4300, .ndim = 2,
		  .shape = { 64, 256 } },
		{ .id = 4322, .producer_op_id = 4400, .ndim = 2,
		  .shape = { 64, 256 },
		  .flags = PRODUCER_TENSOR_REQUIRES_GRAD },
	};
	struct producer_event e = { .kind = PRODUCER_OP_END,
			       .time_ns = UINT64_C(5000000000) };
	e.op = (struct producer_op){
		.op_id = 4400, .parent_op_id = 4399, .op = "relu",
		.overload = "", .begin_ns = e.time_ns - 900,
		.autocast = autocast, .ninputs = 1, .inputs = &t[0],
		.noutputs = 1, .outputs = &t[1],
	};
	uint8_t *start = payload();

	ck_assert_uint_le((size_t)(raw_event_encode(start, &e) - start), 64);
}
END_TEST

/* A varint that never ends (11 continuation bytes) is refused. */
START_TEST(endless_varint_is_rejected)
{
	uint8_t *p = payload();

	memset(p, 0xff, 11);
	p[11] = 0;
	ck_assert(!raw_decode(record_at(PRODUCER_CACHE_CLEAR, 1, p + 12),
			      &decoded));
}
END_TEST

START_TEST(bad_records_are_rejected)
{
	struct producer_event e = { .kind = PRODUCER_DIAG, .time_ns = 7 };
	e.diag = (struct producer_diag){ .kind = "k", .message = "m" };
	uint8_t *end = raw_event_encode(payload(), &e);
	struct raw_record *r = record_at(PRODUCER_DIAG, 7, end);

	/* every length short of the payload */
	uint32_t full = atomic_load(&r->size);
	for (uint32_t size = sizeof *r; size < (uint32_t)(end - buffer); size++) {
		atomic_store(&r->size, size);
		ck_assert(!raw_decode(r, &decoded));
	}
	atomic_store(&r->size, full);
	ck_assert(raw_decode(r, &decoded));
	r->kind = 0x1ff;
	ck_assert(!raw_decode(r, &decoded));
}
END_TEST

/* A key mask with a bit of no key of ../producer_keys.h is refused. */
START_TEST(unknown_keys_are_rejected)
{
	struct producer_event e = { .kind = PRODUCER_OP_BEGIN, .time_ns = 8 };
	e.op = (struct producer_op){ .op = "relu", .overload = "" };
	uint8_t *end = raw_event_encode(payload(), &e);
	struct raw_record *r = record_at(PRODUCER_OP_BEGIN, 8, end);

	ck_assert(raw_decode(r, &decoded));
	ck_assert_uint_eq(end[-1], 0); /* the mask: no key set */
	unsigned rows = 0 PRODUCER_OP_KEYS(RAW_COUNT_KEY, _);
	ck_assert_uint_lt(rows, 7); /* the bit after them fits the byte */
	end[-1] = (uint8_t)(1u << rows);
	ck_assert(!raw_decode(r, &decoded));
}
END_TEST

/* ------------------------------------------------- libamp's events */

static _Alignas(8) uint8_t twin_buffer[1 << 16];

/* libamp's event a and its producer-model twin b encode alike, kind and
 * bytes, within their bounds. */
static void assert_encode_alike(const struct amp_event *a,
				const struct producer_event *b)
{
	uint8_t *start = payload();
	uint8_t *end = libamp_event_encode(start, a);
	uint8_t *twin_end = raw_event_encode(twin_buffer, b);
	size_t len = (size_t)(end - start);

	ck_assert_int_eq(libamp_event_kind(a), b->kind);
	ck_assert_uint_le(len, libamp_event_bound(a));
	ck_assert_uint_eq(len, (size_t)(twin_end - twin_buffer));
	ck_assert(!memcmp(start, twin_buffer, len));
}

static const struct amp_tensor_info libamp_tensors[2] = {
	{ .id = 21, .dtype = AMP_DTYPE_F32, .device = AMP_DEVICE_CUDA,
	  .ndim = 3, .shape = { 2, 3, 4 }, .name = "fc2.weight",
	  .is_leaf = true, .requires_grad = true, .producer_op_id = 5 },
	{ .id = 22, .dtype = AMP_DTYPE_F16, .ndim = 1, .shape = { 9 },
	  .is_view = true },
};

static const struct producer_tensor twin_tensors[2] = {
	{ .id = 21, .dtype = AMP_DTYPE_F32, .device = AMP_DEVICE_CUDA,
	  .ndim = 3, .shape = { 2, 3, 4 }, .name = "fc2.weight",
	  .flags = PRODUCER_TENSOR_LEAF | PRODUCER_TENSOR_REQUIRES_GRAD,
	  .producer_op_id = 5 },
	{ .id = 22, .dtype = AMP_DTYPE_F16, .ndim = 1, .shape = { 9 },
	  .flags = PRODUCER_TENSOR_VIEW },
};

START_TEST(libamp_ops_encode_as_their_twins)
{
	const struct amp_autocast_info ac = {
		.enabled = true, .device = AMP_DEVICE_CUDA,
		.dtype = AMP_DTYPE_F16, .cache_enabled = true, .depth = 2,
		.scope = "decoder",
	};
	struct amp_event a = { .kind = AMP_EVENT_OP_END, .time_ns = 900 };
	a.op = (struct amp_op_event){
		.op_id = 31, .parent_op_id = 30, .forward_op_id = 29,
		.op = "linear", .overload = "out", .phase = AMP_PHASE_BACKWARD,
		.policy = AMP_POLICY_FP32, .autocast = ac,
		.device = AMP_DEVICE_CUDA, .emulated = true, .ninputs = 2,
		.inputs = libamp_tensors, .noutputs = 1,
		.outputs = &libamp_tensors[1], .status = AMP_ERR_DTYPE,
		.error = "dtype", .begin_ns = 850,
	};
	struct producer_event b = { .kind = PRODUCER_OP_END, .time_ns = 900 };
	b.op = (struct producer_op){
		.op_id = 31, .parent_op_id = 30, .forward_op_id = 29,
		.op = "linear", .overload = "out", .phase = AMP_PHASE_BACKWARD,
		.policy = AMP_POLICY_FP32,
		.autocast = { .enabled = true, .device = AMP_DEVICE_CUDA,
			      .dtype = AMP_DTYPE_F16, .cache_enabled = true,
			      .depth = 2, .scope = "decoder" },
		.device = AMP_DEVICE_CUDA, .emulated = true, .ninputs = 2,
		.inputs = twin_tensors, .noutputs = 1,
		.outputs = &twin_tensors[1], .status = AMP_ERR_DTYPE,
		.error = "dtype", .begin_ns = 850,
	};

	assert_encode_alike(&a, &b);
	a.kind = AMP_EVENT_OP_BEGIN;
	b.kind = PRODUCER_OP_BEGIN;
	assert_encode_alike(&a, &b);
}
END_TEST

START_TEST(libamp_casts_encode_as_their_twins)
{
	struct amp_event a = { .kind = AMP_EVENT_CAST, .time_ns = 70 };
	a.cast = (struct amp_cast_event){
		.op_id = 3, .arg = 1, .source = libamp_tensors[0],
		.result = libamp_tensors[1], .from = AMP_DTYPE_F32,
		.to = AMP_DTYPE_F16, .cache = AMP_CACHE_MISS, .reason = "r",
		.bytes = 18, .begin_ns = 60, .stale = true,
		.cache_counted = true, .cache_entries = 4, .cache_bytes = 72,
	};
	struct producer_event b = { .kind = PRODUCER_CAST, .time_ns = 70 };
	b.cast = (struct producer_cast){
		.op_id = 3, .arg = 1, .source = twin_tensors[0],
		.result = twin_tensors[1], .from = AMP_DTYPE_F32,
		.to = AMP_DTYPE_F16, .cache = AMP_CACHE_MISS, .reason = "r",
		.bytes = 18, .begin_ns = 60, .stale = true,
		.cache_counted = true, .cache_entries = 4, .cache_bytes = 72,
	};

	assert_encode_alike(&a, &b);
}
END_TEST

START_TEST(libamp_other_kinds_encode_as_their_twins)
{
	struct amp_event a = { .kind = AMP_EVENT_SCOPE_EXIT, .time_ns = 1 };
	struct producer_event b = { .kind = PRODUCER_SCOPE_EXIT, .time_ns = 1 };

	a.scope = (struct amp_scope_event){ 3, AMP_DEVICE_CUDA, AMP_DTYPE_BF16,
					    true, true, "loss" };
	b.scope = (struct producer_scope){ 3, AMP_DEVICE_CUDA, AMP_DTYPE_BF16,
					   true, true, "loss" };
	assert_encode_alike(&a, &b);
	a = (struct amp_event){ .kind = AMP_EVENT_CACHE_CLEAR, .time_ns = 2,
				.cache = { 5, 6 } };
	b = (struct producer_event){ .kind = PRODUCER_CACHE_CLEAR,
				     .time_ns = 2, .cache = { 5, 6 } };
	assert_encode_alike(&a, &b);
	a = (struct amp_event){ .kind = AMP_EVENT_SCALER, .time_ns = 3 };
	a.scaler = (struct amp_scaler_event){ 7, 8, "update", 0.5, true,
					      true, 9 };
	b = (struct producer_event){ .kind = PRODUCER_SCALER, .time_ns = 3 };
	b.scaler = (struct producer_scaler){ .scaler_id = 7, .optimizer_id = 8,
					     .inf_tensor_id = 9, .scale = 0.5,
					     .found_inf = true,
					     .step_skipped = true,
					     .what = "update" };
	assert_encode_alike(&a, &b);
	a = (struct amp_event){ .kind = AMP_EVENT_DIAG, .time_ns = 4 };
	a.diag = (struct amp_diag_event){ "cast-underflow", "m", 10, 11 };
	b = (struct producer_event){ .kind = PRODUCER_DIAG, .time_ns = 4 };
	b.diag = (struct producer_diag){ .op_id = 10, .tensor_id = 11,
					 .kind = "cast-underflow",
					 .message = "m" };
	assert_encode_alike(&a, &b);
	/* a kind the recorder does not know is not recorded */
	a.kind = AMP_EVENT_KIND_COUNT;
	ck_assert_uint_eq(libamp_event_bound(&a), 0);
}
END_TEST

static Suite *raw_schema_suite(void)
{
	Suite *s = suite_create("raw_schema");
	TCase *tc = tcase_create("round_trip");

	tcase_add_test(tc, op_begin_round_trips);
	tcase_add_test(tc, op_end_round_trips);
	tcase_add_test(tc, op_end_error_needs_a_status);
	tcase_add_test(tc, cast_round_trips);
	tcase_add_test(tc, compiled_cast_round_trips);
	tcase_add_test(tc, scope_round_trips);
	tcase_add_test(tc, cache_clear_round_trips);
	tcase_add_test(tc, scaler_round_trips);
	tcase_add_test(tc, diag_round_trips);
	tcase_add_test(tc, diag_keys_round_trip);
	tcase_add_test(tc, gpu_activity_round_trips);
	tcase_add_test(tc, gpu_status_and_stats_round_trip);
	tcase_add_test(tc, step_kinds_round_trip);
	tcase_add_test(tc, limits_are_kept);
	tcase_add_test(tc, varints_keep_every_value);
	tcase_add_test(tc, strings_of_every_length);
	tcase_add_test(tc, small_ops_encode_small);
	tcase_add_test(tc, endless_varint_is_rejected);
	tcase_add_test(tc, bad_records_are_rejected);
	tcase_add_test(tc, unknown_keys_are_rejected);
	suite_add_tcase(s, tc);
	tc = tcase_create("libamp");
	tcase_add_test(tc, libamp_ops_encode_as_their_twins);
	tcase_add_test(tc, libamp_casts_encode_as_their_twins);
	tcase_add_test(tc, libamp_other_kinds_encode_as_their_twins);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(raw_schema_suite());

	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	raw_decoded_free(&decoded);
	return failed ? 1 : 0;
}
