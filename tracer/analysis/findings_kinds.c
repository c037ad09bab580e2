/* The finding kinds (findings.h): one row per kind, and a finding as
 * JSON.  A row's `doc` is the kind's documentation for users: RULES.md's
 * table of kinds is generated from these rows (finding_docs.c), in
 * markdown, one line each. */
#include "findings_internal.h"

#include <cJSON.h>

#include <string.h>

_Static_assert(TRACE_KIND_COUNT <= 32,
	       "`reads` holds a bit per trace event kind");

#define READS_OPS FINDING_READS(TRACE_OP)
#define READS_CASTS FINDING_READS(TRACE_CAST)
#define READS_REGIONS \
	(FINDING_READS(TRACE_SCOPE_BEGIN) | FINDING_READS(TRACE_SCOPE_END))

const struct finding_kind finding_kinds[FINDING_KIND_COUNT] = {
	[FINDING_PROCESS_DIED] = {
		"process-died", FINDING_ERROR, FINDING_FROM_RUN,
		.fix = "see the signal or exit status; the trace holds every "
		       "event up to the end",
		.doc = "a traced process crashed or was killed",
	},
	[FINDING_DTYPE_MISMATCH] = {
		"dtype-mismatch", FINDING_ERROR, FINDING_FROM_EVENTS,
		.reads = READS_OPS,
		.each = finding_rule_dtype_mismatch,
		.fix = "cast the autocast region's output back with .float() "
		       "(amp_to(t, AMP_DTYPE_F32)) before mixing it with f32 "
		       "tensors",
		.doc = "an op failed on mixed f16/bf16 and f32 inputs where "
		       "autocast did not cast them (outside autocast, or an op "
		       "on none of its lists, as a custom op, under it); says "
		       "where each input's dtype came from (autocast and its "
		       "policy, the program's `.to()`/`.half()`, autograd's "
		       "cast of a gradient, a converted module, the op that made "
		       "it) and the fix for that cause, "
		       "with torch's text of the error when it ended the program",
	},
	[FINDING_BANNED_OP] = {
		"banned-op", FINDING_ERROR, FINDING_FROM_EVENTS,
		.reads = READS_OPS,
		.each = finding_rule_banned_op,
		.fix = "use binary_cross_entropy_with_logits on the logits (drop "
		       "the sigmoid), or compute the loss with autocast disabled "
		       "on .float() inputs",
		.doc = "an op autocast bans (binary_cross_entropy) ran",
	},
	[FINDING_FP16_OVERFLOW] = {
		"fp16-overflow", FINDING_ERROR, FINDING_FROM_VALUE_CHECKS,
		.reads = FINDING_READS(TRACE_DIAG),
		.each = finding_rule_fp16_overflow,
		.fix = "run the op in f32 (autocast(enabled=False) with .float() "
		       "inputs) or autocast to bf16",
		.doc = "a low-precision op turned finite inputs into inf/NaN, or "
		       "a cast to f16/bf16 turned finite values into inf: the "
		       "first offending op of its step, the ops carrying the "
		       "value on are not reported (not a backward op whose "
		       "overflow GradScaler then handled by skipping the step: "
		       "that is `scaler-skipped-step`)",
	},
	[FINDING_SCALER_COLLAPSE] = {
		"scaler-collapse", FINDING_ERROR, FINDING_FROM_EVENTS,
		.reads = FINDING_READS(TRACE_SCALER),
		.each = finding_rule_scaler_collapse,
		.fix = "find the op producing inf/NaN (fp16-overflow findings), "
		       "use bf16, or lower the learning rate",
		.doc = "GradScaler's scale collapsed (inf/NaN gradients at every "
		       "step): below 1, or lowered at 8 updates in a row; names "
		       "the last skip's cause",
	},
	[FINDING_OP_ERROR] = {
		"op-error", FINDING_ERROR, FINDING_FROM_EVENTS,
		.reads = READS_OPS,
		.each = finding_rule_op_error,
		.fix = "read the op's error in the trace",
		.doc = "an op failed, not explained by `banned-op` or "
		       "`dtype-mismatch` (its own, or that of the op inside it "
		       "whose exception it raised: a custom Function's "
		       "backward and its mm are one finding; the PyTorch "
		       "bridge adds the "
		       "exception's text when it ended the program or a thread); "
		       "a `torch.compile` compile whose error Dynamo handled "
		       "(the program never saw it) is not one; "
		       "in a step recorded as aggregates, which keep no inputs, "
		       "a dtype mismatch is an op-error too",
	},
	[FINDING_RECORDING_STOPPED] = {
		"recording-stopped", FINDING_WARNING, FINDING_FROM_RECORDER,
		.fix = "give amptrace run a raw directory with room (--raw-dir "
		       "DIR or TMPDIR; 16 MiB or more: a thread's files hold "
		       "what the converter has not yet read, a few MiB when "
		       "it keeps up, more on a busy machine): the trace lacks "
		       "what followed",
		.doc = "a thread's recording stopped early: the raw directory "
		       "filled up (the program ran on)",
	},
	[FINDING_PRODUCER_CONTRACT] = {
		"producer-contract", FINDING_WARNING,
		FINDING_FROM_PRODUCER_CHECKS,
		.fix = "report it: the recorder or the PyTorch bridge broke a "
		       "rule of tracer/PRODUCERS.md, and readers may misread "
		       "the events around it",
		.doc = "a producer broke the producer contract (its message is "
		       "the rule), once per rule and thread",
	},
	[FINDING_STALE_CACHE] = {
		"stale-cache", FINDING_WARNING, FINDING_FROM_EVENTS,
		.reads = READS_CASTS,
		.each = finding_rule_stale_cache,
		.fix = "enter autocast per iteration around forward + loss only, "
		       "so the cache is cleared before the next forward",
		.doc = "a cast was served from the cache after its source was "
		       "modified in place (e.g. an optimizer step inside the "
		       "region)",
	},
	[FINDING_CACHE_OTHER_DTYPE] = {
		"cache-other-dtype", FINDING_WARNING, FINDING_FROM_EVENTS,
		.reads = READS_CASTS,
		.each = finding_rule_cache_other_dtype,
		.fix = "exit the outermost region before autocasting to "
		       "another dtype (the cache is emptied only then), or "
		       "enter the inner region with cache_enabled=False",
		.doc = "an op ran in a dtype other than its autocast region's "
		       "(f16 in a bf16 region) because the cast cache handed it "
		       "a copy an earlier region of that dtype made, within the "
		       "same outermost region (torch keys the cache by the "
		       "source tensor alone); names the op, its region, the "
		       "dtype it ran in and the op and region the copy was made "
		       "for. An op that failed on it is `op-error`'s",
	},
	[FINDING_BACKWARD_UNDER_AUTOCAST] = {
		"backward-under-autocast", FINDING_WARNING, FINDING_FROM_EVENTS,
		.reads = READS_OPS,
		.each = finding_rule_backward_under_autocast,
		.fix = "exit the autocast region before backward(): wrap only "
		       "the forward pass and the loss",
		.doc = "a backward op ran with autocast enabled (autocast should "
		       "wrap only the forward pass and the loss); not for a "
		       "region the backward pass entered itself (`custom_bwd` "
		       "re-entering the forward's state)",
	},
	[FINDING_AUTOCAST_OFF_IN_THREAD] = {
		"autocast-off-in-thread", FINDING_WARNING, FINDING_FROM_EVENTS,
		.reads = READS_OPS,
		.each = finding_rule_autocast_off_in_thread,
		.fix = "enter autocast inside the worker's forward (autocast "
		       "state is thread-local)",
		.doc = "a worker thread ran matmul-class ops with autocast off "
		       "for a thread that was autocasting: the worker started "
		       "while that thread's enabled region was open, and the "
		       "region handed it its work (the worker used a tensor made "
		       "inside the region: DataParallel's scatter) or took its "
		       "result (the region used a tensor the worker made: the "
		       "gather). A sibling thread with no such hand-off is not "
		       "reported (the trace records no thread creation)",
	},
	[FINDING_POLICY_DIVERGENCE] = {
		"policy-divergence", FINDING_WARNING, FINDING_FROM_EVENTS,
		.reads = READS_OPS | READS_CASTS | READS_REGIONS,
		.each = finding_rule_policy_divergence,
		.fix = "cast as eager autocast does: run the code eagerly inside "
		       "`with torch.autocast(...)` (no TorchScript autocast, no "
		       "autocast switched on outside a region)",
		.doc = "an op's casts differ from eager autocast's under the "
		       "recorded state: TorchScript's autocast casts, or autocast "
		       "enabled outside any region",
	},
	[FINDING_COMPILE_DIVERGENCE] = {
		"compile-divergence", FINDING_WARNING, FINDING_FROM_BRIDGE,
		.fix = "do what the message says, or leave the region "
		       "uncompiled (torch.compiler.disable) where eager's casts "
		       "matter",
		.doc = "a `torch.compile`d graph's casts differ from what eager "
		       "autocast does with the same ops under the same state, "
		       "in a way that changes results: its backward casts as "
		       "autocast would (traced under the forward's state) while "
		       "`backward()` runs with autocast off (pytorch#179804), or "
		       "inductor fuses a cast to f16/bf16 into the f32 pointwise "
		       "op it feeds and drops the rounding (pytorch#181568); "
		       "written at compile and at the first backward",
	},
	[FINDING_COMPILE_ERROR_SUPPRESSED] = {
		"compile-error-suppressed", FINDING_WARNING,
		FINDING_FROM_EVENTS,
		.reads = READS_OPS,
		.each = finding_rule_compile_error_suppressed,
		.fix = "fix what fails (without suppress_errors the compile "
		       "raises it; TORCHDYNAMO_VERBOSE=1 adds its stack): "
		       "until then the frame runs uncompiled",
		.doc = "a `torch.compile` compile failed and "
		       "`torch._dynamo.config.suppress_errors` hid the error "
		       "from the program: Dynamo ran the frame eagerly (a "
		       "compile Dynamo skips on its own, a graph break it "
		       "cannot resume from, is not one: `graph-break` and "
		       "`no-compiled-graph` say those)",
	},
	[FINDING_NO_COMPILED_GRAPH] = {
		"no-compiled-graph", FINDING_WARNING, FINDING_FROM_BRIDGE,
		.by_message = true,  /* each compiled callable, no op */
		.fix = "act on Dynamo's reasons: move what breaks the graph "
		       "or is skipped out of the compiled code, or compile "
		       "the module or function that holds the work itself; "
		       "past the recompile limit, keep shapes and dtypes "
		       "steady or mark them dynamic; "
		       "TORCH_LOGS=graph_breaks,recompiles says more",
		.doc = "a `torch.compile`d function or module ran eagerly: in "
		       "one of its calls no compiled graph ran (Dynamo made "
		       "or ran none: every frame skipped, a graph break at the first "
		       "op, the work inside a `torch._dynamo.disable`d call or "
		       "one Dynamo skips (DDP's forward), the recompile limit "
		       "reached, a compile error suppressed), so its ops are "
		       "eager ops; names it, the call, and Dynamo's reasons "
		       "counted during the call; once per compiled callable, "
		       "at its first such call (not when the program asked for "
		       "eager: `set_stance`, Dynamo disabled)",
	},
	[FINDING_CACHE_GROWTH] = {
		"cache-growth", FINDING_WARNING, FINDING_FROM_EVENTS,
		.once = finding_rule_cache_growth,
		.fix = "exit the outermost autocast region every iteration (the "
		       "cache is cleared only then), or disable the cache for "
		       "the long region",
		.doc = "the autocast cache grew step after step without being "
		       "cleared (3 steps in a row)",
	},
	[FINDING_SCALER_SKIPPED_STEP] = {
		"scaler-skipped-step", FINDING_WARNING, FINDING_FROM_EVENTS,
		.reads = FINDING_READS(TRACE_SCALER),
		.each = finding_rule_scaler_skipped_step,
		.fix = "a few skips while the scale calibrates are normal; many "
		       "mean a gradient overflows: find its op",
		.doc = "GradScaler keeps skipping steps: a second skip after "
		       "calibration at a scale that has not grown since the "
		       "previous skip, a skip whose first inf/NaN came from a "
		       "forward op (no scale helps), or one after the scale "
		       "collapsed (`scaler-collapse`) (info: skips while it "
		       "calibrates its scale from 65536, before the first "
		       "iteration without one and before a collapse, and its "
		       "normal adjustments: the "
		       "first skip after calibration or after the scale grew). "
		       "Each names the first gradient holding inf/NaN, the "
		       "backward op that made it and, walking back from it, the "
		       "step's first `fp16-overflow`; `summary` lists every "
		       "skipped step with its cause",
	},
	[FINDING_LR_SCHEDULER_SKIPPED_STEP] = {
		"lr-scheduler-skipped-step", FINDING_WARNING,
		FINDING_FROM_EVENTS,
		.reads = FINDING_READS(TRACE_SCALER),
		.each = finding_rule_lr_scheduler_skipped_step,
		.fix = "step the LR scheduler only when the optimizer stepped: "
		       "compare scaler.get_scale() before and after "
		       "scaler.update() (it drops when the step was skipped)",
		.doc = "an LR scheduler stepped right after GradScaler skipped "
		       "its optimizer's step: the schedule runs ahead of the "
		       "steps taken (info while the scale calibrates)",
	},
	[FINDING_CAST_UNDERFLOW] = {
		"cast-underflow", FINDING_WARNING, FINDING_FROM_VALUE_CHECKS,
		.fix = "keep the tensor in f32 (fp32 policy or a disabled "
		       "region), rescale it, or use bf16",
		.doc = "a cast to f16/bf16 flushed a material part of its "
		       "non-zero values to zero or subnormals: at least 1 % of "
		       "them, carrying at least 1 % of the tensor's magnitude "
		       "(sum of \\|x\\|: one subnormal bias value among 64, or "
		       "tiny attention probabilities, are not material)",
	},
	[FINDING_REDUNDANT_CAST] = {
		"redundant-cast", FINDING_INFO, FINDING_FROM_EVENTS,
		.reads = READS_OPS | READS_CASTS,
		.each = finding_rule_redundant_cast,
		.fix = "drop the cast autocast undoes, or pass the op your "
		       "cast's result instead of its source",
		.doc = "a cast the program wrote (`x.to(dtype)`, `.half()`, "
		       "`.float()` between f32 and f16/bf16) undone (every use of "
		       "the copy cast it back, by autocast for an op or by the "
		       "program) or repeated (autocast cast the same unchanged "
		       "source again for an op given the source instead of the "
		       "copy); autocast's own casts alone (an activation cast "
		       "once for each of q, k, v) and autograd's are never "
		       "reported",
	},
	[FINDING_CACHE_DISABLED] = {
		"cache-disabled", FINDING_INFO, FINDING_FROM_EVENTS,
		.reads = READS_CASTS,
		.each = finding_rule_cache_disabled,
		.fix = "leave cache_enabled on so weight casts are made once per "
		       "region (Lightning's MixedPrecision plugin turns it off: "
		       "override its autocast_context_manager)",
		.doc = "a cacheable cast (a weight's) was made again in one "
		       "autocast region because `cache_enabled` is off; a "
		       "weight cast once per region costs what a cache miss "
		       "would, and is not reported",
	},
	[FINDING_RECOMPILE] = {
		"recompile", FINDING_INFO, FINDING_FROM_BRIDGE,
		.fix = "keep the compiled region's autocast state and its "
		       "inputs' dtypes the same from call to call",
		.doc = "a compiled region was compiled again because autocast's "
		       "state or an input's dtype changed: the guard that "
		       "failed, and when it is autocast's state (an "
		       "autocast-state guard failure) the states of both "
		       "graphs (a recompile for another reason, such as an "
		       "evaluation's grad mode or a new shape, is "
		       "torch.compile's own business and not reported: "
		       "TORCH_LOGS=recompiles shows it)",
	},
	[FINDING_GRAPH_BREAK] = {
		"graph-break", FINDING_INFO, FINDING_FROM_BRIDGE,
		.fix = "move what breaks the graph out of the compiled region "
		       "(or out of the autocast region, which it splits)",
		.doc = "a compiled graph ends at a graph break: where, why, and "
		       "the autocast regions it splits",
	},
	[FINDING_AUTOCAST_NEVER_ENABLED] = {
		"autocast-never-enabled", FINDING_INFO, FINDING_FROM_EVENTS,
		.once = finding_rule_autocast_never_enabled,
		.fix = "wrap the forward pass and the loss in "
		       "torch.autocast(device_type, dtype) if mixed precision "
		       "was meant",
		.doc = "a PyTorch process ran forward ops that autocast lowers "
		       "(linear, mm, ...) and none with autocast enabled: no "
		       "enabled region was ever entered, so every op ran in its "
		       "inputs' dtypes (nanoGPT's CPU setting uses a nullcontext "
		       "whatever its dtype says); a process that ran none of "
		       "those (a DataLoader's worker, a Hogwild parent) is not "
		       "named, nor one that ran such an op in a module whose "
		       "FSDP policy lowers its parameters' precision "
		       "(`fsdp-mixed-precision`: its forward ran in the "
		       "policy's param_dtype on purpose; a policy on modules "
		       "that ran none spares nothing)",
	},
	[FINDING_WORKERS_UNRECORDED] = {
		/* info, not a warning: the program is healthy; the gap is
		 * the recording's (trace() blocks), said so the trace is
		 * not read as the workers doing nothing */
		"workers-unrecorded", FINDING_INFO,
		FINDING_FROM_TRACE_BLOCKS,
		.fix = "open one trace() block around the loops that use the "
		       "workers, or make the DataLoader inside the block "
		       "(persistent_workers=False starts them anew each epoch)",
		.doc = "processes forked in an earlier amptrace_torch.trace() "
		       "block (a DataLoader's persistent workers) still run in "
		       "this one: a child learns where to record only when it "
		       "is forked, so their work here is not in the trace",
	},
	[FINDING_FSDP_MIXED_PRECISION] = {
		"fsdp-mixed-precision", FINDING_INFO, FINDING_FROM_BRIDGE_FSDP,
		.note = true,
		.doc = "not a finding, a note: FSDP's mixed-precision policy "
		       "on a module (fully_shard's mp_policy, "
		       "FullyShardedDataParallel's mixed_precision), with the "
		       "dtypes FSDP casts to: `summary` says the policies in "
		       "force, and `autocast-never-enabled` spares a process "
		       "whose forward ran in modules whose policy lowers "
		       "param_dtype",
	},
};

cJSON *finding_json(const struct trace_finding *f)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "kind", f->kind);
	cJSON_AddStringToObject(o, "severity",
				finding_severity_name(f->severity));
	cJSON_AddNumberToObject(o, "count", (double)f->count);
	cJSON_AddStringToObject(o, "message", f->message);
	cJSON_AddStringToObject(o, "fix", f->fix ? f->fix : "");
	cJSON_AddNumberToObject(o, "op_id", (double)f->op_id);
	cJSON_AddNumberToObject(o, "tensor", (double)f->tensor);
	return o;
}

const char *finding_severity_name(enum finding_severity severity)
{
	static const char *const names[FINDING_SEVERITY_COUNT] = {
		"error", "warning", "info",
	};
	return severity < FINDING_SEVERITY_COUNT ? names[severity] : "info";
}

const char *finding_source_name(enum finding_source source)
{
	static const char *const names[FINDING_SOURCE_COUNT] = {
		[FINDING_FROM_EVENTS] = "events",
		[FINDING_FROM_VALUE_CHECKS] = "value checks (libamp, the "
					      "PyTorch bridge)",
		[FINDING_FROM_RUN] = "amptrace run",
		[FINDING_FROM_RECORDER] = "amptrace run's recorder",
		[FINDING_FROM_PRODUCER_CHECKS] =
			"the producer API (-Dproducer_checks builds)",
		[FINDING_FROM_BRIDGE] = "the PyTorch bridge (torch.compile)",
		[FINDING_FROM_TRACE_BLOCKS] =
			"the PyTorch bridge (trace() blocks)",
		[FINDING_FROM_BRIDGE_FSDP] = "the PyTorch bridge (FSDP)",
	};
	return source < FINDING_SOURCE_COUNT ? names[source] : "events";
}

const struct finding_kind *finding_kind_lookup(const char *name)
{
	for (int k = 0; name && k < FINDING_KIND_COUNT; k++)
		if (!strcmp(finding_kinds[k].name, name))
			return &finding_kinds[k];
	return NULL;
}
