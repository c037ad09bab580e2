/* The finding kinds (findings.h): each kind's name, severity and one-line
 * fix, and a finding as JSON. */
#include "findings.h"

#include <cJSON.h>

#include <string.h>

static const char advice_backward[] =
	"exit the autocast region before backward(): wrap only the forward "
	"pass and the loss";

const struct finding_kind finding_kinds[FINDING_KIND_COUNT] = {
	[FINDING_PROCESS_DIED] = { "process-died", FINDING_ERROR,
	  "see the signal or exit status; the trace holds every event up to "
	  "the end", false },
	[FINDING_DTYPE_MISMATCH] = { "dtype-mismatch", FINDING_ERROR,
	  "cast the autocast region's output back with .float() "
	  "(amp_to(t, AMP_DTYPE_F32)) before mixing it with f32 tensors", false },
	[FINDING_BANNED_OP] = { "banned-op", FINDING_ERROR,
	  "use binary_cross_entropy_with_logits on the logits (drop the "
	  "sigmoid), or compute the loss with autocast disabled on .float() "
	  "inputs", false },
	[FINDING_FP16_OVERFLOW] = { "fp16-overflow", FINDING_ERROR,
	  "run the op in f32 (autocast(enabled=False) with .float() inputs) "
	  "or autocast to bf16", true },
	[FINDING_SCALER_COLLAPSE] = { "scaler-collapse", FINDING_ERROR,
	  "find the op producing inf/NaN (fp16-overflow findings), use bf16, "
	  "or lower the learning rate", false },
	[FINDING_OP_ERROR] = { "op-error", FINDING_ERROR,
	  "read the op's error in the trace", false },
	[FINDING_RECORDING_STOPPED] = { "recording-stopped", FINDING_WARNING,
	  "give amptrace run a raw directory with room (--raw-dir DIR or "
	  "TMPDIR; about 2 MiB per thread): the trace lacks what followed",
	  false },
	[FINDING_STALE_CACHE] = { "stale-cache", FINDING_WARNING,
	  "enter autocast per iteration around forward + loss only, so the "
	  "cache is cleared before the next forward", false },
	[FINDING_BACKWARD_UNDER_AUTOCAST] = { "backward-under-autocast",
	  FINDING_WARNING, advice_backward, false },
	[FINDING_AUTOCAST_OFF_IN_THREAD] = { "autocast-off-in-thread",
	  FINDING_WARNING,
	  "enter autocast inside the worker's forward (autocast state is "
	  "thread-local)", false },
	[FINDING_POLICY_DIVERGENCE] = { "policy-divergence", FINDING_WARNING,
	  "cast as eager autocast does: run the code eagerly inside `with "
	  "torch.autocast(...)` (no TorchScript autocast, no autocast "
	  "switched on outside a region)", false },
	/* the PyTorch bridge's, from the graphs torch.compile makes */
	[FINDING_COMPILE_DIVERGENCE] = { "compile-divergence", FINDING_WARNING,
	  "do what the message says, or leave the region uncompiled "
	  "(torch.compiler.disable) where eager's casts matter", false },
	[FINDING_CACHE_GROWTH] = { "cache-growth", FINDING_WARNING,
	  "exit the outermost autocast region every iteration (the cache is "
	  "cleared only then), or disable the cache for the long region", false },
	[FINDING_SCALER_SKIPPED_STEP] = { "scaler-skipped-step", FINDING_WARNING,
	  "a few skips while the scale calibrates are normal; many mean a "
	  "gradient overflows: find its op", false },
	[FINDING_CAST_UNDERFLOW] = { "cast-underflow", FINDING_WARNING,
	  "keep the tensor in f32 (fp32 policy or a disabled region), rescale "
	  "it, or use bf16", true },
	[FINDING_REDUNDANT_CAST] = { "redundant-cast", FINDING_INFO,
	  "drop the cast autocast undoes, or pass the op your cast's result "
	  "instead of its source", false },
	[FINDING_CACHE_DISABLED] = { "cache-disabled", FINDING_INFO,
	  "leave cache_enabled on so weight casts are made once per region",
	  false },
	[FINDING_RECOMPILE] = { "recompile", FINDING_INFO,
	  "keep the compiled region's autocast state and inputs the same "
	  "from call to call, or mark what changes dynamic", false },
	[FINDING_GRAPH_BREAK] = { "graph-break", FINDING_INFO,
	  "move what breaks the graph out of the compiled region (or out "
	  "of the autocast region, which it splits)", false },
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

const struct finding_kind *finding_kind_lookup(const char *name)
{
	for (int k = 0; name && k < FINDING_KIND_COUNT; k++)
		if (!strcmp(finding_kinds[k].name, name))
			return &finding_kinds[k];
	return NULL;
}
