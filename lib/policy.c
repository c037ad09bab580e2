/* Autocast decisions as a pure function: policy names, table versions and
 * lookup, PyTorch's eligibility test, and amp_autocast_plan(), which says
 * for one call what torch's WrapFunction_<policy> and cached_cast() would
 * do in a given PyTorch version (aten/src/ATen/autocast_mode.{h,cpp}, see
 * reference/autocast-semantics.md sections 2-5).  The dispatcher runs it on
 * every op under autocast, so it allocates nothing and touches no global
 * state.
 */
#include "amp_internal.h"

#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const policy_names[] = {
	[AMP_POLICY_NONE] = "none",
	[AMP_POLICY_LOWER_PRECISION_FP] = "lower_precision_fp",
	[AMP_POLICY_FP32] = "fp32",
	[AMP_POLICY_FP32_SET_OPT_DTYPE] = "fp32_set_opt_dtype",
	[AMP_POLICY_FP32_APPEND_DTYPE] = "fp32_append_dtype",
	[AMP_POLICY_PROMOTE] = "promote",
	[AMP_POLICY_BANNED] = "banned",
};
static_assert(sizeof(policy_names) / sizeof(policy_names[0]) ==
		      AMP_POLICY_COUNT,
	      "one name per policy");

const char *amp_policy_name(enum amp_policy policy)
{
	if ((unsigned)policy >= AMP_POLICY_COUNT)
		return "?";
	return policy_names[policy];
}

/* binary_cross_entropy_banned() in autocast_mode.cpp, verbatim. */
const char amp_banned_bce_message[] =
	"torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are "
	"unsafe to autocast.\n"
	"Many models use a sigmoid layer right before the binary cross entropy "
	"layer.\n"
	"In this case, combine the two layers using "
	"torch.nn.functional.binary_cross_entropy_with_logits\n"
	"or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and "
	"BCEWithLogits are\n"
	"safe to autocast.";

/* set_autocast_cpu_dtype() in 1.13.1's autocast_mode.cpp, verbatim. */
const char amp_cpu_bf16_only_message[] =
	"Currently, AutocastCPU only support Bfloat16 as the "
	"autocast_cpu_dtype";

static const char promote_unexpected_message[] =
	"Unexpected floating ScalarType in at::autocast::prioritize";
static const char promote_double_message[] =
	"promote type is double in at::autocast::prioritize";

const char *amp_cache_scope_name(enum amp_cache_scope scope)
{
	return scope == AMP_CACHE_PER_THREAD ? "per-thread" : "per-process";
}

/* ------------------------------------------------------------ versions */

/* "2.1.0+cu121" -> 2, 1: digits, a dot, digits, then the end, a dot or a
 * '+' (so "1.13x" or "1.13rc" is no version, not 1.13). */
static bool parse_release(const char *text, int *major, int *minor)
{
	char *end;
	if (!isdigit((unsigned char)text[0]))
		return false;
	long a = strtol(text, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]))
		return false;
	long b = strtol(end + 1, &end, 10);
	if ((*end != '\0' && *end != '.' && *end != '+') || a > 1000 ||
	    b > 1000)
		return false;
	*major = (int)a;
	*minor = (int)b;
	return true;
}

int amp_torch_version_from_string(const char *text,
				  enum amp_torch_version *version, bool *exact)
{
	bool exact_found = false;
	if (exact == NULL)
		exact = &exact_found;
	if (text == NULL)
		return AMP_ERR_INVALID;
	if (strcmp(text, "newest") == 0) {
		*version = AMP_TORCH_NEWEST;
		*exact = true;
		return AMP_OK;
	}
	for (int v = 0; v < AMP_TORCH_VERSION_COUNT; v++) {
		if (strcmp(text, amp_torch_table((enum amp_torch_version)v)
					 ->name) == 0) {
			*version = (enum amp_torch_version)v;
			*exact = true;
			return AMP_OK;
		}
	}
	int major, minor;
	if (!parse_release(text, &major, &minor))
		return AMP_ERR_INVALID;
	int release = major * 1000 + minor;

	/* Tables ascend (tests/test_policy_versions.c): the last one at or
	 * below the release in its major, else the first one above it. */
	int same_major_below = -1, above = -1;
	for (int v = 0; v < AMP_TORCH_VERSION_COUNT; v++) {
		const struct amp_torch_table *t =
			amp_torch_table((enum amp_torch_version)v);
		int series = t->major * 1000 + t->minor;
		if (series <= release && t->major == major)
			same_major_below = v;
		if (series > release && above < 0)
			above = v;
	}
	if (above == 0)
		return AMP_ERR_UNSUPPORTED; /* older than every table */
	int chosen = same_major_below >= 0 ? same_major_below
		     : above >= 0	     ? above
					     : AMP_TORCH_NEWEST;
	const struct amp_torch_table *t =
		amp_torch_table((enum amp_torch_version)chosen);
	*version = (enum amp_torch_version)chosen;
	*exact = t->major * 1000 + t->minor == release;
	return AMP_OK;
}

/* --------------------------------------------------------------- rows */

const struct amp_policy_row *amp_policy_lookup(enum amp_torch_version version,
					       enum amp_device_type device,
					       const char *op,
					       const char *overload)
{
	if (op == NULL)
		return NULL;
	if (overload == NULL)
		overload = "";
	size_t count = amp_policy_row_count();
	for (size_t i = 0; i < count; i++) {
		const struct amp_policy_row *row = amp_policy_row_at(i);
		if (row->device == device && row->op[0] == op[0] &&
		    amp_policy_row_in(row, version) &&
		    strcmp(row->op, op) == 0 &&
		    strcmp(row->overload, overload) == 0)
			return row;
	}
	return NULL;
}

/* is_autocast_eligible(): on the autocast's device and floating point. */
static bool on_device_and_floating(const struct amp_plan_arg *arg,
				   enum amp_device_type device)
{
	return arg->defined && arg->device == device &&
	       amp_dtype_is_floating(arg->dtype);
}

bool amp_autocast_eligible(const struct amp_plan_arg *arg,
			   enum amp_device_type device)
{
	return on_device_and_floating(arg, device) &&
	       arg->dtype != AMP_DTYPE_F64;
}

/* cached_cast(to, arg): whether it casts and what the weight cache does,
 * testing PyTorch's conditions in PyTorch's order so `reason` names the
 * first one that fails. */
static struct amp_plan_cast decide_cast(const struct amp_plan_arg *arg,
					enum amp_dtype to,
					enum amp_device_type device,
					enum amp_dtype lp, bool cache_enabled)
{
	struct amp_plan_cast cast = { .cast = false,
				      .to = arg->dtype,
				      .cache_if_cast = AMP_CACHE_UNCACHEABLE };

	if (!amp_autocast_eligible(arg, device) || arg->dtype == to)
		return cast;
	cast.cast = true;
	cast.to = to;
	cast.cache_if_cast = AMP_CACHE_UNCACHEABLE;
	if (to != lp)
		cast.reason = to == AMP_DTYPE_F32
				      ? "cast to f32 is never cached"
				      : "only casts to the autocast dtype are cached";
	else if (arg->dtype != AMP_DTYPE_F32)
		cast.reason = "source is not f32";
	else if (!arg->requires_grad)
		cast.reason = "does not require grad";
	else if (!arg->is_leaf)
		cast.reason = "not a leaf";
	else if (arg->is_view)
		cast.reason = "is a view";
	else {
		cast.cacheable = true;
		if (cache_enabled) {
			cast.cache_if_cast = AMP_CACHE_MISS;
			cast.reason = "leaf f32 weight requiring grad";
		} else {
			cast.cache_if_cast = AMP_CACHE_DISABLED;
			cast.reason = "cache disabled";
		}
	}
	return cast;
}

/* promote_type(): prioritize() folded left to right from lp over the
 * required tensor arguments (optional<Tensor> has no prioritize overload in
 * PyTorch, so it never takes part).  Returns AMP_OK or AMP_ERR_AUTOCAST
 * with *error set. */
static int promote_target(int nargs, const struct amp_plan_arg *args,
			  enum amp_device_type device, enum amp_dtype lp,
			  enum amp_dtype *target, const char **error)
{
	enum amp_dtype current = lp;

	for (int i = 0; i < nargs; i++) {
		const struct amp_plan_arg *arg = &args[i];
		if (arg->optional)
			continue;
		if (current == AMP_DTYPE_F64) {
			*error = promote_double_message;
			return AMP_ERR_AUTOCAST;
		}
		if (!on_device_and_floating(arg, device))
			continue;
		enum amp_dtype next = arg->dtype;
		if (next == AMP_DTYPE_F64)
			continue;
		if (current == AMP_DTYPE_F32 || next == AMP_DTYPE_F32) {
			current = AMP_DTYPE_F32;
		} else if (current != lp || next != lp) {
			*error = promote_unexpected_message;
			return AMP_ERR_AUTOCAST;
		}
	}
	*target = current;
	return AMP_OK;
}

void amp_autocast_plan(enum amp_torch_version version,
		       const struct amp_policy_row *row,
		       enum amp_device_type device, enum amp_dtype lp,
		       bool cache_enabled, int nargs,
		       const struct amp_plan_arg *args,
		       enum amp_dtype dtype_arg, struct amp_plan *plan)
{
	AMP_ASSERT((unsigned)version < AMP_TORCH_VERSION_COUNT);
	AMP_ASSERT(plan != NULL);
	AMP_ASSERT(nargs >= 0 && nargs <= AMP_PLAN_MAX_ARGS);
	AMP_ASSERT(nargs == 0 || args != NULL);

	if (row != NULL && !amp_policy_row_in(row, version))
		row = NULL;
	plan->policy = row != NULL ? row->policy : AMP_POLICY_NONE;
	plan->lower_precision = lp;
	plan->target = AMP_DTYPE_NONE;
	plan->dtype_arg = AMP_DTYPE_NONE;
	plan->nargs = nargs;
	plan->status = AMP_OK;
	plan->error = NULL;
	for (int i = 0; i < nargs; i++)
		plan->casts[i] = (struct amp_plan_cast){
			.cast = false,
			.to = args[i].dtype,
			.cache_if_cast = AMP_CACHE_UNCACHEABLE,
		};

	/* A region that cannot be entered: every op raises. */
	if (device == AMP_DEVICE_CPU && lp != AMP_DTYPE_BF16 &&
	    !amp_torch_table(version)->cpu_f16) {
		plan->status = AMP_ERR_AUTOCAST;
		plan->error = amp_cpu_bf16_only_message;
		return;
	}
	if (row != NULL && (row->flags & AMP_ROW_ARGS_UNTOUCHED))
		return;

	bool first_eligible = nargs > 0 && amp_autocast_eligible(&args[0], device);

	switch (plan->policy) {
	case AMP_POLICY_NONE:
	case AMP_POLICY_COUNT:
		return;
	case AMP_POLICY_LOWER_PRECISION_FP:
		plan->target = lp;
		break;
	case AMP_POLICY_FP32:
		plan->target = AMP_DTYPE_F32;
		break;
	case AMP_POLICY_FP32_SET_OPT_DTYPE:
		/* Inputs are never cast; an ineligible first argument leaves
		 * the call alone so native promotion still decides. */
		if (first_eligible)
			plan->dtype_arg = dtype_arg != AMP_DTYPE_NONE
						  ? dtype_arg
						  : AMP_DTYPE_F32;
		return;
	case AMP_POLICY_FP32_APPEND_DTYPE:
		if (nargs > 0 && args[0].defined)
			plan->dtype_arg = first_eligible ? AMP_DTYPE_F32
							 : args[0].dtype;
		return;
	case AMP_POLICY_PROMOTE:
		plan->status = promote_target(nargs, args, device, lp,
					      &plan->target, &plan->error);
		if (plan->status != AMP_OK)
			return;
		break;
	case AMP_POLICY_BANNED:
		plan->status = AMP_ERR_AUTOCAST;
		plan->error = amp_banned_bce_message;
		return;
	}

	for (int i = 0; i < nargs; i++)
		plan->casts[i] = decide_cast(&args[i], plan->target, device, lp,
					     cache_enabled);
}
