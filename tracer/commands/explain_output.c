/* `amptrace explain`'s answers: the text and JSON renderings of an
 * evaluated call (struct explain, see explain.h), the description of an op
 * given without ARGs, and the --list table. */
#include "explain.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- describing */

static void describe_policy(const struct explain *ex, char *buf, size_t size)
{
	const char *lp = amp_dtype_name(ex->lp);
	const struct explain_op *op = &ex->op;
	const struct amp_policy_row *row = ex->call.row;

	if (row != NULL && (row->flags & AMP_ROW_ARGS_UNTOUCHED)) {
		snprintf(buf, size,
			 "registered, but in PyTorch %s the wrapper casts "
			 "nothing: the op's own type promotion decides",
			 amp_torch_table(ex->torch)->name);
		return;
	}
	switch (ex->call.plan.policy) {
	case AMP_POLICY_LOWER_PRECISION_FP:
		snprintf(buf, size, "every floating input is cast to %s", lp);
		return;
	case AMP_POLICY_FP32:
		snprintf(buf, size, "every floating input is cast to f32");
		return;
	case AMP_POLICY_FP32_SET_OPT_DTYPE:
		snprintf(buf, size,
			 "inputs are not cast; dtype=None becomes f32 when the "
			 "first argument is eligible");
		return;
	case AMP_POLICY_FP32_APPEND_DTYPE:
		snprintf(buf, size,
			 "inputs are not cast; re-dispatched to the dtype-taking "
			 "overload with dtype f32 (the first argument's dtype "
			 "when it is not eligible)");
		return;
	case AMP_POLICY_PROMOTE:
		snprintf(buf, size,
			 "inputs are cast to the widest floating dtype among "
			 "them (f32 if any is f32, else %s)",
			 lp);
		return;
	case AMP_POLICY_BANNED:
		snprintf(buf, size, "autocast raises for this op");
		return;
	default:
		break;
	}
	if (op->in_place)
		snprintf(buf, size,
			 "in-place variants are never autocast (only "
			 "out-of-place overloads are registered)");
	else if (op->out_variant)
		snprintf(buf, size, "out= variants are never autocast");
	else if (op->elsewhere != NULL)
		snprintf(buf, size,
			 "not on the %s autocast lists (on %s it is %s): "
			 "autocast leaves the call alone",
			 amp_device_type_name(ex->device),
			 amp_device_type_name(op->elsewhere->device),
			 amp_policy_name(op->elsewhere->policy));
	else if (op->other_version != NULL)
		snprintf(buf, size,
			 "not on PyTorch %s's autocast lists: autocast leaves "
			 "the call alone",
			 amp_torch_table(ex->torch)->name);
	else
		snprintf(buf, size,
			 "on no autocast list: autocast leaves the call alone "
			 "and PyTorch's type promotion decides");
}

static const char *unchanged_reason(const struct explain *ex,
				    const struct explain_step *s, int i)
{
	const struct amp_plan_arg *arg = &s->args[i];
	static char already[32];

	if (s->untouched[i])
		return "a List[Optional[Tensor]] argument: autocast does not "
		       "touch it";
	if (!arg->defined)
		return "absent (None)";
	if (s->row != NULL && (s->row->flags & AMP_ROW_ARGS_UNTOUCHED))
		return "the wrapper leaves its tensors alone in this version";
	switch (s->plan.policy) {
	case AMP_POLICY_LOWER_PRECISION_FP:
	case AMP_POLICY_FP32:
	case AMP_POLICY_PROMOTE:
		break;
	case AMP_POLICY_NONE:
		return "autocast leaves the call alone";
	default:
		return "the policy casts no input";
	}
	if (arg->device != ex->device)
		return "not on the autocast device";
	if (!amp_dtype_is_floating(arg->dtype))
		return "not floating point";
	if (arg->dtype == AMP_DTYPE_F64)
		return "f64 is never cast";
	snprintf(already, sizeof(already), "already %s",
		 amp_dtype_name(arg->dtype));
	return already;
}

/* ----------------------------------------------------------- text out */

static void print_cast_line(const struct explain *ex, const struct explain_step *s,
			    int i, const char *indent)
{
	const struct amp_plan_arg *arg = &s->args[i];
	const struct amp_plan_cast *cast = &s->plan.casts[i];
	char what[96];

	if (!arg->defined)
		snprintf(what, sizeof(what), "none");
	else
		snprintf(what, sizeof(what), "%s%s%s%s%s%s",
			 amp_dtype_name(arg->dtype),
			 arg->requires_grad && arg->is_leaf ? " leaf" : "",
			 arg->requires_grad && !arg->is_leaf ? " grad" : "",
			 arg->is_view ? " view" : "",
			 arg->optional ? " optional" : "",
			 arg->device != ex->device
				 ? (arg->device == AMP_DEVICE_CPU ? " on cpu"
								  : " on cuda")
				 : "");
	printf("%sarg %-4d %-18s ", indent, i, what);
	if (s->plan.status != AMP_OK) {
		printf("(autocast raised before casting)\n");
		return;
	}
	if (!cast->cast) {
		printf("unchanged: %s\n", unchanged_reason(ex, s, i));
		return;
	}
	const char *cache;
	switch (cast->cache_if_cast) {
	case AMP_CACHE_MISS:
		cache = "cached (a miss the first time, then hits)";
		break;
	case AMP_CACHE_DISABLED:
		cache = "not cached (cache disabled)";
		break;
	default:
		cache = "not cached";
		break;
	}
	printf("-> %s, %s: %s\n", amp_dtype_name(cast->to), cache,
	       cast->reason);
}

static void print_outputs(const struct explain_step *s, const char *indent)
{
	printf("%s%-9s%s\n", indent, "compute", amp_dtype_name(s->compute));
	printf("%s%-9s%s", indent, "output", s->outputs[0]);
	if (s->noutputs > 1) {
		printf("  (outputs:");
		for (int i = 0; i < s->noutputs; i++)
			printf("%s %s", i ? "," : "", s->outputs[i]);
		printf(")");
	}
	printf("\n");
}

void explain_print_text(const struct explain *ex)
{
	const struct explain_step *call = &ex->call;
	char policy[256];

	describe_policy(ex, policy, sizeof(policy));
	printf("%-9s%s\n", "op", call->label);
	/* the newest lists are the default: their answer keeps its form */
	if (ex->torch != AMP_TORCH_NEWEST)
		printf("%-9s%s (weight-cast cache %s)\n", "torch",
		       amp_torch_table(ex->torch)->name,
		       amp_cache_scope_name(
			       amp_torch_table(ex->torch)->cache_scope));
	printf("%-9s%s autocast, dtype %s, cache %s\n", "device",
	       amp_device_type_name(ex->device), amp_dtype_name(ex->lp),
	       ex->cache_enabled ? "enabled" : "disabled");
	printf("%-9s%s: %s\n", "policy", amp_policy_name(call->plan.policy),
	       policy);
	for (int i = 0; i < call->nargs; i++)
		print_cast_line(ex, call, i, "");
	for (int i = 0; i < ex->nother; i++)
		printf("%-9s%s (not a tensor)\n", "arg", ex->other[i]);
	if (call->plan.dtype_arg != AMP_DTYPE_NONE ||
	    call->dtype_given != AMP_DTYPE_NONE)
		printf("%-9s%s -> %s\n", "dtype",
		       call->dtype_given != AMP_DTYPE_NONE
			       ? amp_dtype_name(call->dtype_given)
			       : "None",
		       call->plan.dtype_arg != AMP_DTYPE_NONE
			       ? amp_dtype_name(call->plan.dtype_arg)
			       : "(as given)");
	for (int k = 0; k < ex->ninner; k++) {
		const struct explain_step *s = &ex->inner[k];
		printf("%-9s%s: %s\n", "inner", s->label,
		       amp_policy_name(s->plan.policy));
		for (int i = 0; i < s->nargs; i++)
			print_cast_line(ex, s, i, "  ");
		if (s->plan.status == AMP_OK)
			print_outputs(s, "  ");
	}
	for (int i = 0; i < ex->nnotes; i++)
		printf("%-9s%s\n", "note", ex->notes[i]);

	const struct explain_step *last = ex->ninner > 0 ? &ex->inner[ex->ninner - 1]
						 : call;
	if (last->plan.status != AMP_OK) {
		printf("%-9sRuntimeError\n%s\n", "raises", last->plan.error);
		return;
	}
	if (ex->ninner > 0) {
		printf("%-9s%s\n", "output", last->outputs[0]);
		return;
	}
	print_outputs(call, "");
}

/* ----------------------------------------------------------- JSON out */

static cJSON *dtype_json(enum amp_dtype dtype)
{
	if (dtype == AMP_DTYPE_NONE)
		return cJSON_CreateNull();
	return cJSON_CreateString(amp_dtype_name(dtype));
}

static cJSON *step_inputs_json(const struct explain *ex, const struct explain_step *s)
{
	cJSON *inputs = cJSON_CreateArray();
	for (int i = 0; i < s->nargs; i++) {
		const struct amp_plan_arg *arg = &s->args[i];
		const struct amp_plan_cast *cast = &s->plan.casts[i];
		cJSON *input = cJSON_CreateObject();
		cJSON_AddNumberToObject(input, "arg", i);
		cJSON_AddStringToObject(input, "text", s->arg_text[i]);
		cJSON_AddBoolToObject(input, "defined", arg->defined);
		cJSON_AddItemToObject(input, "dtype",
				      arg->defined ? dtype_json(arg->dtype)
						   : cJSON_CreateNull());
		cJSON_AddStringToObject(input, "device",
					amp_device_type_name(arg->device));
		cJSON_AddBoolToObject(input, "requires_grad",
				      arg->requires_grad);
		cJSON_AddBoolToObject(input, "is_leaf", arg->is_leaf);
		cJSON_AddBoolToObject(input, "is_view", arg->is_view);
		cJSON_AddBoolToObject(input, "optional", arg->optional);
		cJSON_AddBoolToObject(input, "eligible",
				      amp_autocast_eligible(arg, ex->device));
		bool cast_done = s->plan.status == AMP_OK && cast->cast;
		cJSON_AddItemToObject(input, "cast_to",
				      cast_done ? dtype_json(cast->to)
						: cJSON_CreateNull());
		if (s->plan.status == AMP_OK && !cast->cast)
			cJSON_AddStringToObject(input, "unchanged",
						unchanged_reason(ex, s, i));
		cJSON_AddItemToArray(inputs, input);
	}
	return inputs;
}

static cJSON *step_casts_json(const struct explain_step *s)
{
	cJSON *casts = cJSON_CreateArray();
	if (s->plan.status != AMP_OK)
		return casts;
	for (int i = 0; i < s->nargs; i++) {
		const struct amp_plan_cast *cast = &s->plan.casts[i];
		if (!cast->cast)
			continue;
		cJSON *item = cJSON_CreateObject();
		cJSON_AddNumberToObject(item, "arg", i);
		cJSON_AddItemToObject(item, "from",
				      dtype_json(s->args[i].dtype));
		cJSON_AddItemToObject(item, "to", dtype_json(cast->to));
		cJSON_AddBoolToObject(item, "cacheable", cast->cacheable);
		cJSON_AddStringToObject(
			item, "cache",
			amp_cache_result_name(cast->cache_if_cast));
		cJSON_AddStringToObject(item, "reason", cast->reason);
		cJSON_AddItemToArray(casts, item);
	}
	return casts;
}

static void add_outputs_json(cJSON *object, const struct explain_step *s)
{
	if (s->plan.status != AMP_OK) {
		cJSON_AddNullToObject(object, "compute");
		cJSON_AddNullToObject(object, "output");
		cJSON_AddItemToObject(object, "outputs", cJSON_CreateArray());
		cJSON_AddStringToObject(object, "error", s->plan.error);
		return;
	}
	cJSON_AddItemToObject(object, "compute", dtype_json(s->compute));
	cJSON_AddStringToObject(object, "output", s->outputs[0]);
	cJSON_AddItemToObject(object, "outputs",
			      cJSON_CreateStringArray(s->outputs,
						      s->noutputs));
}

static cJSON *header_json(const struct explain *ex, const char *label,
			  const char *overload, enum amp_policy policy)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "query", ex->query);
	cJSON_AddStringToObject(root, "torch", amp_torch_table(ex->torch)->name);
	cJSON_AddStringToObject(root, "op", label);
	cJSON_AddStringToObject(root, "name", ex->op.name);
	cJSON_AddStringToObject(root, "overload", overload);
	cJSON_AddStringToObject(root, "device", amp_device_type_name(ex->device));
	cJSON_AddStringToObject(root, "autocast_dtype", amp_dtype_name(ex->lp));
	cJSON_AddBoolToObject(root, "cache_enabled", ex->cache_enabled);
	cJSON_AddStringToObject(root, "policy", amp_policy_name(policy));
	cJSON_AddBoolToObject(root, "listed", ex->op.row != NULL);
	return root;
}

static void print_json(cJSON *root)
{
	char *text = cJSON_Print(root);
	if (text != NULL)
		printf("%s\n", text);
	free(text);
	cJSON_Delete(root);
}

void explain_print_json(const struct explain *ex)
{
	const struct explain_step *call = &ex->call;
	char policy[256];

	describe_policy(ex, policy, sizeof(policy));
	cJSON *root = header_json(ex, call->label, ex->op.overload,
				  call->plan.policy);
	cJSON_AddStringToObject(root, "policy_rule", policy);
	if (ex->op.elsewhere != NULL) {
		cJSON *other = cJSON_AddObjectToObject(root, "listed_on");
		cJSON_AddStringToObject(other, "device",
					amp_device_type_name(ex->op.elsewhere->device));
		cJSON_AddStringToObject(
			other, "policy",
			amp_policy_name(ex->op.elsewhere->policy));
	}
	cJSON_AddItemToObject(root, "inputs", step_inputs_json(ex, call));
	cJSON *others = cJSON_AddArrayToObject(root, "other_args");
	for (int i = 0; i < ex->nother; i++)
		cJSON_AddItemToArray(others, cJSON_CreateString(ex->other[i]));
	cJSON_AddItemToObject(root, "casts", step_casts_json(call));
	cJSON_AddItemToObject(root, "dtype_arg",
			      dtype_json(call->dtype_given));
	cJSON_AddItemToObject(root, "dtype_arg_effective",
			      dtype_json(call->plan.dtype_arg));
	if (ex->ninner > 0) {
		cJSON *inner = cJSON_AddArrayToObject(root, "inner");
		for (int k = 0; k < ex->ninner; k++) {
			const struct explain_step *s = &ex->inner[k];
			cJSON *item = cJSON_CreateObject();
			cJSON_AddStringToObject(item, "op", s->label);
			cJSON_AddStringToObject(
				item, "policy", amp_policy_name(s->plan.policy));
			cJSON_AddItemToObject(item, "inputs",
					      step_inputs_json(ex, s));
			cJSON_AddItemToObject(item, "casts",
					      step_casts_json(s));
			add_outputs_json(item, s);
			cJSON_AddItemToArray(inner, item);
		}
		const struct explain_step *last = &ex->inner[ex->ninner - 1];
		if (last->plan.status == AMP_OK) {
			cJSON_AddItemToObject(root, "compute",
					      dtype_json(last->compute));
			cJSON_AddStringToObject(root, "output",
						last->outputs[0]);
			cJSON_AddItemToObject(
				root, "outputs",
				cJSON_CreateStringArray(&last->outputs[0], 1));
		} else {
			add_outputs_json(root, last);
		}
	} else {
		add_outputs_json(root, call);
	}
	cJSON *notes = cJSON_AddArrayToObject(root, "notes");
	for (int i = 0; i < ex->nnotes; i++)
		cJSON_AddItemToArray(notes, cJSON_CreateString(ex->notes[i]));
	print_json(root);
}

/* ------------------------------------------------ no ARGs, and --list */

static bool same_name(const struct amp_policy_row *row, const char *name)
{
	return strcmp(row->op, name) == 0;
}

void explain_describe_op(const struct explain *ex)
{
	const struct explain_step *call = &ex->call;
	char policy[256];
	describe_policy(ex, policy, sizeof(policy));

	cJSON *root = NULL, *overloads = NULL;
	if (ex->json) {
		root = header_json(ex, call->label, ex->op.overload,
				   call->plan.policy);
		cJSON_AddStringToObject(root, "policy_rule", policy);
		cJSON_AddItemToObject(root, "inputs", cJSON_CreateArray());
		cJSON_AddItemToObject(root, "casts", cJSON_CreateArray());
		cJSON_AddNullToObject(root, "output");
		overloads = cJSON_AddArrayToObject(root, "rows");
	} else {
		printf("%-9s%s\n", "op", call->label);
		printf("%-9s%s: %s\n", "policy",
		       amp_policy_name(call->plan.policy), policy);
		printf("rows of %s on the autocast lists:\n", ex->op.name);
	}
	int count = 0;
	for (size_t i = 0; i < amp_policy_row_count(); i++) {
		const struct amp_policy_row *row = amp_policy_row_at(i);
		if (!same_name(row, ex->op.name) ||
		    !amp_policy_row_in(row, ex->torch))
			continue;
		count++;
		if (ex->json) {
			cJSON *item = cJSON_CreateObject();
			cJSON_AddStringToObject(item, "device",
						amp_device_type_name(row->device));
			cJSON_AddStringToObject(item, "overload",
						row->overload);
			cJSON_AddStringToObject(item, "policy",
						amp_policy_name(row->policy));
			cJSON_AddItemToArray(overloads, item);
		} else {
			char label[EXPLAIN_NAME_MAX + 40];
			snprintf(label, sizeof(label), "%s%s%s", row->op,
				 row->overload[0] ? "." : "", row->overload);
			printf("  %-5s %-36s %s\n", amp_device_type_name(row->device),
			       label, amp_policy_name(row->policy));
		}
	}
	if (ex->json) {
		print_json(root);
		return;
	}
	if (count == 0)
		printf("  (none: autocast never touches %s)\n", ex->op.name);
	printf("give the arguments to see the casts, e.g.: amptrace explain "
	       "%s%s f32\n",
	       ex->device == AMP_DEVICE_CPU ? "--device cpu " : "",
	       call->label);
}

int explain_list_table(enum amp_torch_version version,
		       enum amp_device_type device, bool json)
{
	cJSON *root = json ? cJSON_CreateArray() : NULL;
	for (size_t i = 0; i < amp_policy_row_count(); i++) {
		const struct amp_policy_row *row = amp_policy_row_at(i);
		if (row->device != device || !amp_policy_row_in(row, version))
			continue;
		if (json) {
			cJSON *item = cJSON_CreateObject();
			cJSON_AddStringToObject(item, "op", row->op);
			cJSON_AddStringToObject(item, "overload",
						row->overload);
			cJSON_AddStringToObject(item, "policy",
						amp_policy_name(row->policy));
			if (row->output != NULL)
				cJSON_AddStringToObject(item, "output",
							row->output);
			cJSON_AddItemToArray(root, item);
		} else {
			printf("%-20s %s%s%s\n", amp_policy_name(row->policy),
			       row->op, row->overload[0] ? "." : "",
			       row->overload);
		}
	}
	if (json)
		print_json(root);
	return 0;
}
