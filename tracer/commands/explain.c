/* `amptrace explain`: says what PyTorch's autocast does to one call of an op
 * from a description of its arguments, with libamp's policy table and
 * amp_autocast_plan() (the code the dispatcher runs), as the PyTorch
 * version chosen with --torch does (default: the newest lists):
 *
 *   amptrace explain [--torch VERSION] [--device cuda|cpu] [--dtype f16|bf16]
 *                    [--no-cache] [--json] OP [ARG...]
 *   amptrace explain --list [--torch VERSION] [--device cuda|cpu] [--json]
 *
 * OP: the ATen name with or without overload ("softmax", "softmax.int",
 * "aten::mm"); without one, the default overload, else the first listed.
 * Python spellings work too ("__matmul__", "torch.linalg.vecdot",
 * "cross_entropy"), and so do ops on no list (eq, add, cat on CUDA, ...),
 * in-place ops (add_) and .out overloads, which autocast never touches.
 *
 * ARGs, one per argument in order (usage() below is the reference):
 *   f64 f32 f16 bf16 i64 i32 bool (or torch spellings: float16, half, ...)
 *     a tensor on the autocast device, a leaf that does not require grad;
 *     modifiers: :leaf (leaf requiring grad, a parameter), :grad (requires
 *     grad, not a leaf: an activation), :view, :opt (an optional<Tensor>
 *     argument), :cpu / :cuda (its device).
 *   none                an absent optional tensor
 *   [f16,f32]           a tensor list, same as giving its elements in turn
 *   2, 1.5, True        a Python number: takes part in type promotion
 *   dtype=f16           the op's `dtype=` argument (ops that have one)
 *   anything with '=', '(', ',', '->' or quotes: a non-tensor argument,
 *     shown and otherwise ignored ("dim=0", "(3,3)", "bkhd,bqhd->bqkh").
 * Without ARGs, explain describes the op: its overloads and their policies
 * on the device and on the other one.
 *
 * The answer: the policy, each tensor's cast (from, to, whether the weight
 * cache keeps it and why), the dtype the op computes in and the dtype of
 * its first output, or the error PyTorch raises (banned ops, promote type
 * conflicts).  Exit status 0 for any answer (an autocast error included:
 * it is in `error`), 2 for bad usage (unknown op, dtype or option).
 */
#include "command_line.h"
#include "commands.h"
#include "edit_distance.h"
#include "explain.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *const modifier_names = ":leaf :grad :view :opt :cpu :cuda";

static void usage(FILE *out)
{
	fputs("usage: amptrace explain [--torch VERSION] [--device cuda|cpu] "
	      "[--dtype f16|bf16]\n"
	      "                        [--no-cache] [--json] OP [ARG...]\n"
	      "       amptrace explain --list [--torch VERSION] "
	      "[--device cuda|cpu] [--json]\n"
	      "\n"
	      "What PyTorch's autocast does to one call of OP: its policy, the "
	      "cast of each\n"
	      "argument (and whether the weight cache keeps it), the dtype the "
	      "op computes in\n"
	      "and the dtype of its first output, or the error PyTorch raises.\n"
	      "\n"
	      "OP   ATen name, with or without overload: softmax, softmax.int, "
	      "aten::mm.\n"
	      "     Without overload: the default overload, else the first "
	      "listed one.\n"
	      "     Python names work too: __matmul__, __pow__, "
	      "torch.linalg.vecdot, cross_entropy.\n"
	      "ARG  one per argument, in order:\n"
	      "       f64 f32 f16 bf16 i64 i32 bool  a tensor of that dtype on "
	      "the autocast device\n"
	      "                                      (a leaf that does not "
	      "require grad), with modifiers:\n"
	      "         :leaf   a leaf that requires grad (a parameter)\n"
	      "         :grad   requires grad, not a leaf (an activation)\n"
	      "         :view   a view (f32:leaf:view = w.detach()."
	      "requires_grad_())\n"
	      "         :opt    passed as an optional (Tensor?) argument\n"
	      "         :cpu :cuda  the tensor's device\n"
	      "       none          an absent optional tensor\n"
	      "       [f16,f32]     a tensor list (cat, stack): the same as its "
	      "elements in turn\n"
	      "       2 1.5 True    a Python number (joins type promotion)\n"
	      "       dtype=f16     the op's dtype= argument\n"
	      "       dim=0 (3,3) 'ij,jk'  other non-tensor arguments: shown, "
	      "otherwise ignored\n"
	      "     Without ARGs: the op's overloads and policies on both "
	      "devices.\n"
	      "\n"
	      "options:\n"
	      "  --torch VERSION    whose autocast lists and rules: ",
	      out);
	for (int v = 0; v < AMP_TORCH_VERSION_COUNT; v++)
		fprintf(out, "%s%s", v ? ", " : "",
			amp_torch_table((enum amp_torch_version)v)->name);
	fputs(" (default newest);\n"
	      "                     a release picks its series' table, else "
	      "the nearest table of\n"
	      "                     its major version (2.1.0: 2.13, 2.15.0: "
	      "2.14); an older one has none\n"
	      "  --device cuda|cpu  autocast device (default cuda)\n"
	      "  --dtype f16|bf16   autocast dtype (default f16 on cuda, bf16 "
	      "on cpu)\n"
	      "  --no-cache         autocast(cache_enabled=False)\n"
	      "  --json             one JSON object on stdout\n"
	      "  --list             the device's policy table\n"
	      "  -h, --help         this text\n"
	      "\n"
	      "Exit status: 0 answered (also when autocast raises: see the "
	      "error), 2 bad usage\n"
	      "or standard output that cannot be written.\n"
	      "Examples:\n"
	      "  amptrace explain mm f32:leaf f32\n"
	      "  amptrace explain --device cpu --json cat bf16 f32\n"
	      "  amptrace explain --torch 1.13 --device cpu conv_transpose2d "
	      "bf16 bf16\n"
	      "  amptrace explain softmax f16 dtype=f16\n",
	      out);
}

static const struct command_line explain_command = { "amptrace explain" };

static int usage_error(const char *fmt, const char *arg)
{
	return command_line_error(&explain_command, fmt, arg);
}

static void add_note(struct explain *ex, const char *fmt, const char *a,
		     const char *b, const char *c)
{
	if (ex->nnotes == EXPLAIN_MAX_NOTES)
		return;
	snprintf(ex->notes[ex->nnotes++], EXPLAIN_NOTE_SIZE, fmt, a, b, c);
}

/* ------------------------------------------------------------- parsing */

static const char *const dtype_choices =
	"f64 f32 f16 bf16 i64 i32 bool (or float16, fp16, torch.float16, ...)";

static int bad_dtype(const char *dtype, const char *arg)
{
	struct closest_name close = CLOSEST_NAME_INIT;

	for (int i = 0; i < AMP_DTYPE_COUNT; i++)
		closest_name_offer(&close, dtype,
				   amp_dtype_name((enum amp_dtype)i));
	fprintf(stderr, "amptrace explain: unknown dtype '%s' in argument '%s'",
		dtype, arg);
	if (close.name && closest_name_is_typo(dtype, close.distance))
		fprintf(stderr, "; did you mean '%s'?", close.name);
	fprintf(stderr, "\ndtypes: %s\n", dtype_choices);
	return 2;
}

static bool parse_number(const char *text, enum number_category *category)
{
	if (strcmp(text, "True") == 0 || strcmp(text, "False") == 0 ||
	    strcmp(text, "true") == 0 || strcmp(text, "false") == 0) {
		*category = NUMBER_BOOL;
		return true;
	}
	char *end;
	strtod(text, &end);
	if (end == text || *end != '\0' || isalpha((unsigned char)text[0]))
		return false;
	*category = strpbrk(text, ".eEnN") != NULL ? NUMBER_FLOAT : NUMBER_INT;
	return true;
}

/* A tensor description "f32:leaf:view".  Returns 0, or 2 after printing
 * the problem. */
static int parse_tensor(struct explain *ex, const char *text, const char *arg,
			struct amp_plan_arg *out)
{
	char spec[64];
	if (strlen(text) >= sizeof(spec))
		return bad_dtype(text, arg);
	strcpy(spec, text);

	char *rest = strchr(spec, ':');
	if (rest != NULL)
		*rest++ = '\0';
	enum amp_dtype dtype;
	if (amp_dtype_from_name(spec, &dtype) != 0)
		return bad_dtype(spec, arg);
	*out = (struct amp_plan_arg){
		.defined = true,
		.dtype = dtype,
		.device = ex->device,
		.is_leaf = true,
	};
	bool leaf = false, grad = false;
	while (rest != NULL) {
		char *modifier = rest;
		rest = strchr(rest, ':');
		if (rest != NULL)
			*rest++ = '\0';
		enum amp_device_type device;
		if (strcmp(modifier, "leaf") == 0) {
			leaf = true;
		} else if (strcmp(modifier, "grad") == 0) {
			grad = true;
		} else if (strcmp(modifier, "view") == 0) {
			out->is_view = true;
		} else if (strcmp(modifier, "opt") == 0) {
			out->optional = true;
		} else if (amp_device_type_from_name(modifier, &device) == 0) {
			out->device = device;
		} else {
			fprintf(stderr,
				"amptrace explain: unknown modifier ':%s' in "
				"argument '%s'\nmodifiers: %s\n",
				modifier, arg, modifier_names);
			return 2;
		}
	}
	if (leaf && grad) {
		fprintf(stderr,
			"amptrace explain: '%s': a tensor is either :leaf or "
			":grad (not a leaf)\n",
			arg);
		return 2;
	}
	if (leaf || grad)
		out->requires_grad = true;
	if (grad)
		out->is_leaf = false;
	return 0;
}

static int push_tensor(struct explain *ex, const struct amp_plan_arg *tensor,
		       const char *arg)
{
	struct explain_step *call = &ex->call;
	if (call->nargs == AMP_PLAN_MAX_ARGS) {
		fprintf(stderr, "amptrace explain: more than %d tensors\n",
			AMP_PLAN_MAX_ARGS);
		return 2;
	}
	call->args[call->nargs] = *tensor;
	call->arg_text[call->nargs] = arg;
	call->nargs++;
	return 0;
}

static void push_other(struct explain *ex, const char *arg)
{
	if (ex->nother < EXPLAIN_MAX_OTHER)
		ex->other[ex->nother++] = arg;
}

static int push_number(struct explain *ex, enum number_category category,
		       const char *arg)
{
	struct explain_step *call = &ex->call;
	if (call->nnumbers < EXPLAIN_MAX_NUMBERS)
		call->numbers[call->nnumbers++] = category;
	push_other(ex, arg);
	return 0;
}

/* "[f16,f32]" or "(8,)": a tensor list, or a tuple of numbers. */
static int parse_list(struct explain *ex, const char *arg)
{
	char items[256];
	size_t len = strlen(arg);
	if (len >= sizeof(items)) {
		push_other(ex, arg);
		return 0;
	}
	strcpy(items, arg + 1);
	len--;
	if (len > 0 && (items[len - 1] == ']' || items[len - 1] == ')'))
		items[--len] = '\0';

	bool numbers_only = true;
	for (char *item = strtok(items, ", "); item; item = strtok(NULL, ", ")) {
		enum number_category category;
		if (!parse_number(item, &category))
			numbers_only = false;
	}
	if (numbers_only) {
		push_other(ex, arg);
		return 0;
	}
	strcpy(items, arg + 1);
	if (len > 0)
		items[len] = '\0';
	for (char *item = strtok(items, ", "); item; item = strtok(NULL, ", ")) {
		struct amp_plan_arg tensor;
		if (strcmp(item, "none") == 0 || strcmp(item, "None") == 0) {
			tensor = (struct amp_plan_arg){ .optional = true,
							.dtype = AMP_DTYPE_F32,
							.device = ex->device };
		} else {
			int status = parse_tensor(ex, item, arg, &tensor);
			if (status != 0)
				return status;
		}
		/* strtok's buffer is reused: tensors keep the whole ARG text */
		int status = push_tensor(ex, &tensor, arg);
		if (status != 0)
			return status;
	}
	return 0;
}

static int parse_arg(struct explain *ex, const char *arg)
{
	enum number_category category;

	if (strncmp(arg, "dtype=", 6) == 0) {
		const char *value = arg + 6;
		if (strcmp(value, "None") == 0 || strcmp(value, "none") == 0) {
			ex->call.dtype_given = AMP_DTYPE_NONE;
			return 0;
		}
		if (amp_dtype_from_name(value, &ex->call.dtype_given) != 0)
			return bad_dtype(value, arg);
		return 0;
	}
	if (strcmp(arg, "none") == 0 || strcmp(arg, "None") == 0) {
		struct amp_plan_arg absent = { .optional = true,
					       .dtype = AMP_DTYPE_F32,
					       .device = ex->device };
		return push_tensor(ex, &absent, arg);
	}
	if (arg[0] == '[' || arg[0] == '(')
		return parse_list(ex, arg);
	if (parse_number(arg, &category))
		return push_number(ex, category, arg);
	if (strpbrk(arg, "=,'\"->( ") != NULL || arg[0] == '\0') {
		push_other(ex, arg);
		return 0;
	}
	struct amp_plan_arg tensor;
	int status = parse_tensor(ex, arg, arg, &tensor);
	if (status != 0)
		return status;
	return push_tensor(ex, &tensor, arg);
}

/* ------------------------------------------------------------ outcome */

static int dtype_category(enum amp_dtype dtype)
{
	if (dtype == AMP_DTYPE_BOOL)
		return NUMBER_BOOL;
	return amp_dtype_is_floating(dtype) ? NUMBER_FLOAT : NUMBER_INT;
}

static enum amp_dtype arg_dtype_after(const struct explain_step *s, int i)
{
	return s->plan.casts[i].cast ? s->plan.casts[i].to : s->args[i].dtype;
}

/* torch.result_type over the tensors as the kernel receives them and the
 * Python numbers (which only raise the category: int -> i64, float ->
 * the default dtype f32). */
static enum amp_dtype native_result_type(const struct explain_step *s)
{
	bool any_tensor = false;
	enum amp_dtype result = AMP_DTYPE_F32;
	for (int i = 0; i < s->nargs; i++) {
		if (!s->args[i].defined)
			continue;
		enum amp_dtype dtype = arg_dtype_after(s, i);
		result = any_tensor ? amp_promote_types(result, dtype) : dtype;
		any_tensor = true;
	}
	int number_category = -1;
	for (int i = 0; i < s->nnumbers; i++)
		if ((int)s->numbers[i] > number_category)
			number_category = (int)s->numbers[i];
	if (number_category < 0)
		return result;
	if (any_tensor && number_category <= dtype_category(result))
		return result;
	switch (number_category) {
	case NUMBER_BOOL:
		return AMP_DTYPE_BOOL;
	case NUMBER_INT:
		return AMP_DTYPE_I64;
	default:
		return AMP_DTYPE_F32;
	}
}

static const char *complex_name(enum amp_dtype dtype)
{
	switch (dtype) {
	case AMP_DTYPE_F16:
		return "c32";
	case AMP_DTYPE_F64:
		return "c128";
	default:
		return "c64";
	}
}

static const char *output_item(const struct explain_step *s, const char *item,
			       size_t len)
{
	enum amp_dtype compute = s->compute;
	bool floating = amp_dtype_is_floating(compute);

	if (len == 1 && item[0] == '=')
		return amp_dtype_name(compute);
	if (len == 4 && strncmp(item, "self", 4) == 0) {
		for (int i = 0; i < s->nargs; i++)
			if (s->args[i].defined)
				return amp_dtype_name(arg_dtype_after(s, i));
		return amp_dtype_name(compute);
	}
	if (len == 5 && strncmp(item, "float", 5) == 0)
		return amp_dtype_name(floating ? compute : AMP_DTYPE_F32);
	if (len == 4 && strncmp(item, "long", 4) == 0)
		return amp_dtype_name(floating ? compute : AMP_DTYPE_I64);
	if (len == 7 && strncmp(item, "complex", 7) == 0)
		return complex_name(compute);
	char name[16];
	enum amp_dtype fixed;
	if (len < sizeof(name)) {
		memcpy(name, item, len);
		name[len] = '\0';
		if (amp_dtype_from_name(name, &fixed) == 0)
			return amp_dtype_name(fixed);
	}
	return "?";
}

/* Plans the step and derives its compute and output dtypes. */
static void evaluate(struct explain_step *s, const struct explain *ex)
{
	amp_autocast_plan(ex->torch, s->row, ex->device, ex->lp,
			  ex->cache_enabled, s->nargs, s->args, s->dtype_given,
			  &s->plan);
	for (int i = 0; i < s->nargs; i++) {
		if (s->untouched[i]) {
			s->plan.casts[i].cast = false;
			s->plan.casts[i].to = s->args[i].dtype;
		}
	}
	s->noutputs = 0;
	s->compute = AMP_DTYPE_NONE;
	if (s->plan.status != AMP_OK)
		return;
	if (s->plan.dtype_arg != AMP_DTYPE_NONE)
		s->compute = s->plan.dtype_arg;
	else if (s->dtype_given != AMP_DTYPE_NONE)
		s->compute = s->dtype_given;
	else
		s->compute = native_result_type(s);

	const char *rule = s->output_rule != NULL ? s->output_rule : "=";
	while (*rule != '\0' && s->noutputs < EXPLAIN_MAX_OUTPUTS) {
		size_t len = strcspn(rule, ",");
		s->outputs[s->noutputs++] = output_item(s, rule, len);
		rule += len;
		if (*rule == ',')
			rule++;
	}
}

static void set_label(struct explain_step *s, const char *name, const char *overload)
{
	snprintf(s->label, sizeof(s->label), "%s%s%s", name,
		 overload[0] ? "." : "", overload);
}

/* Unlisted composites (CUDA cross_entropy_loss): run the inner ops. */
static void evaluate_inner(struct explain *ex)
{
	const struct explain_step *call = &ex->call;
	if (ex->op.inner[0] == NULL || call->nargs == 0)
		return;

	for (int k = 0; k < 2; k++) {
		char buf[EXPLAIN_NAME_MAX];
		struct explain_op op;
		if (explain_resolve_op(ex->op.inner[k], ex->torch, ex->device,
				       buf, &op) != EXPLAIN_RESOLVED)
			return;
		struct explain_step *s = &ex->inner[k];
		*s = (struct explain_step){ .row = op.row,
				    .output_rule = op.output,
				    .dtype_given = AMP_DTYPE_NONE };
		set_label(s, op.name, op.overload);
		if (k == 0) {
			s->args[0] = call->args[0];
			s->arg_text[0] = call->arg_text[0];
			s->nargs = 1;
		} else {
			const struct explain_step *first = &ex->inner[0];
			enum amp_dtype dtype;
			if (first->noutputs == 0 ||
			    amp_dtype_from_name(first->outputs[0], &dtype) != 0)
				return;
			s->args[0] = (struct amp_plan_arg){
				.defined = true,
				.dtype = dtype,
				.device = call->args[0].device,
				.requires_grad = call->args[0].requires_grad,
				.is_leaf = !call->args[0].requires_grad,
			};
			s->arg_text[0] = first->label;
			for (int i = 1; i < call->nargs; i++) {
				s->args[i] = call->args[i];
				s->arg_text[i] = call->arg_text[i];
			}
			s->nargs = call->nargs;
		}
		evaluate(s, ex);
		ex->ninner = k + 1;
		if (s->plan.status != AMP_OK)
			return;
	}
}

/* ------------------------------------------------------------- notes */

/* What the chosen PyTorch version does differently from the newest. */
static void collect_version_notes(struct explain *ex)
{
	const struct explain_op *op = &ex->op;
	const struct explain_step *call = &ex->call;
	const struct amp_torch_table *table = amp_torch_table(ex->torch);

	if (op->other_version != NULL) {
		const struct amp_policy_row *row = op->other_version;
		char where[128];
		snprintf(where, sizeof(where), "the %s lists have it (%s %s)",
			 amp_torch_table(row->added)->name,
			 amp_device_type_name(row->device),
			 amp_policy_name(row->policy));
		add_note(ex, "%s is on no autocast list of PyTorch %s; %s",
			 op->name, table->name, where);
	}
	if (call->row != NULL && (call->row->flags & AMP_ROW_ARGS_UNTOUCHED))
		add_note(ex,
			 "PyTorch %s registers %s with a `const ITensorListRef&` "
			 "argument that its prioritize()/cached_cast() have no "
			 "overload for: the wrapper casts nothing and the op's "
			 "own type promotion decides",
			 table->name, call->label, NULL);
	if (call->plan.status == AMP_ERR_AUTOCAST &&
	    call->plan.error == amp_cpu_bf16_only_message)
		add_note(ex,
			 "PyTorch %s CPU autocast supports only bf16: "
			 "torch.autocast(\"cpu\", dtype=torch.float16) warns, "
			 "then raises when the region is entered",
			 table->name, NULL, NULL);
	if (table->cache_scope == AMP_CACHE_PER_PROCESS ||
	    call->plan.status != AMP_OK)
		return;
	for (int i = 0; i < call->nargs; i++) {
		if (call->plan.casts[i].cast && call->plan.casts[i].cacheable) {
			add_note(ex,
				 "PyTorch %s keeps the weight-cast cache %s: a "
				 "region in another thread casts the weight again "
				 "(newest keeps one per process)",
				 table->name,
				 amp_cache_scope_name(table->cache_scope), NULL);
			break;
		}
	}
}

static void collect_notes(struct explain *ex)
{
	const struct explain_op *op = &ex->op;
	const struct explain_step *call = &ex->call;
	const char *device = amp_device_type_name(ex->device);

	if (op->note != NULL)
		add_note(ex, "%s", op->note, NULL, NULL);
	if (op->overload_guessed)
		add_note(ex,
			 "no overload given and %s has no default overload%s; "
			 "using %s",
			 op->name, op->row ? " on this list" : "", call->label);
	if (op->row == NULL && op->inner[0] != NULL && ex->ninner > 0)
		add_note(ex,
			 "%s is not on the %s lists, but its inner ops are "
			 "autocast on their own (see inner)",
			 op->name, device, NULL);
	collect_version_notes(ex);
	if (call->plan.status != AMP_OK ||
	    (call->row != NULL && (call->row->flags & AMP_ROW_ARGS_UNTOUCHED)))
		return;

	enum amp_policy policy = call->plan.policy;
	if (policy == AMP_POLICY_FP32_SET_OPT_DTYPE &&
	    call->plan.dtype_arg == AMP_DTYPE_NONE)
		add_note(ex,
			 "the first argument is not eligible (not floating, "
			 "f64, absent or on another device): the dtype "
			 "argument stays as given",
			 NULL, NULL, NULL);
	if (policy == AMP_POLICY_PROMOTE) {
		for (int i = 0; i < call->nargs; i++) {
			if (call->args[i].optional && !call->untouched[i]) {
				add_note(ex,
					 "optional tensor arguments do not take "
					 "part in choosing the promote type, but "
					 "are cast to it",
					 NULL, NULL, NULL);
				break;
			}
		}
	}
	if (policy == AMP_POLICY_LOWER_PRECISION_FP ||
	    policy == AMP_POLICY_FP32 || policy == AMP_POLICY_PROMOTE) {
		enum amp_dtype seen = AMP_DTYPE_NONE;
		for (int i = 0; i < call->nargs; i++) {
			if (!call->args[i].defined || call->untouched[i] ||
			    !amp_dtype_is_floating(call->args[i].dtype))
				continue;
			enum amp_dtype dtype = arg_dtype_after(call, i);
			if (seen != AMP_DTYPE_NONE && dtype != seen) {
				add_note(ex,
					 "floating inputs reach the op in "
					 "different dtypes (autocast never casts "
					 "f64 or other-device tensors); an op "
					 "that needs equal dtypes raises natively",
					 NULL, NULL, NULL);
				break;
			}
			seen = dtype;
		}
	}
}

/* --------------------------------------------------------------- main */

static int resolve(struct explain *ex, const char *text)
{
	switch (explain_resolve_op(text, ex->torch, ex->device, ex->name,
				   &ex->op)) {
	case EXPLAIN_RESOLVED:
		return 0;
	case EXPLAIN_UNKNOWN_OVERLOAD:
		fprintf(stderr,
			"amptrace explain: unknown overload '%s'; known "
			"overloads: ",
			text);
		explain_print_overloads(ex->name, ex->torch, stderr);
		fputs("\n", stderr);
		return 2;
	case EXPLAIN_UNKNOWN_OP:
		break;
	}
	fprintf(stderr, "amptrace explain: unknown op '%s'", text);
	char *dot = strchr(ex->name, '.');
	if (dot != NULL)
		*dot = '\0';
	fputs(" (on no autocast list and not a known unlisted op)", stderr);
	fputs("; did you mean: ", stderr);
	if (explain_suggest_ops(ex->name[0] ? ex->name : text, ex->torch,
				stderr) == 0)
		fputs("(nothing close; amptrace explain --list shows the "
		      "lists)",
		      stderr);
	fputs("\n", stderr);
	const struct amp_torch_table *before =
		explain_listed_before(ex->name[0] ? ex->name : text, ex->torch);
	if (before != NULL)
		fprintf(stderr,
			"PyTorch %s's lists have %s, %s's do not: try --torch "
			"%s\n",
			before->name, ex->name[0] ? ex->name : text,
			amp_torch_table(ex->torch)->name, before->name);
	return 2;
}

/* --torch: a version name or a release.  Returns 0 or 2. */
static int parse_torch(struct explain *ex, const char *value)
{
	bool exact;
	int status = amp_torch_version_from_string(value, &ex->torch, &exact);
	if (status == AMP_OK) {
		const struct amp_torch_table *table = amp_torch_table(ex->torch);
		int major = 0, minor = 0;
		sscanf(value, "%d.%d", &major, &minor);
		bool below = table->major * 1000 + table->minor <=
			     major * 1000 + minor;
		if (!exact)
			add_note(ex,
				 "PyTorch %s has no table of its own: explained "
				 "with the %s lists (%s)",
				 value, table->name,
				 below ? "the nearest table below it"
				       : "the nearest table above it: none "
					 "below it has its major version");
		return 0;
	}
	fprintf(stderr, "amptrace explain: %s PyTorch version '%s'; versions: ",
		status == AMP_ERR_UNSUPPORTED ? "no table for" : "unknown",
		value);
	for (int v = 0; v < AMP_TORCH_VERSION_COUNT; v++)
		fprintf(stderr, "%s%s", v ? ", " : "",
			amp_torch_table((enum amp_torch_version)v)->name);
	fputs(" (or a release such as 1.13.1)\n", stderr);
	return 2;
}

enum {
	OPTION_JSON = 256,
	OPTION_NO_CACHE,
	OPTION_LIST,
	OPTION_DEVICE,
	OPTION_DTYPE,
	OPTION_TORCH,
};

static const struct option explain_options[] = {
	{ "json", no_argument, NULL, OPTION_JSON },
	{ "no-cache", no_argument, NULL, OPTION_NO_CACHE },
	{ "list", no_argument, NULL, OPTION_LIST },
	{ "device", required_argument, NULL, OPTION_DEVICE },
	{ "dtype", required_argument, NULL, OPTION_DTYPE },
	{ "torch", required_argument, NULL, OPTION_TORCH },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* A negative number ("-100", "-.5") is an ARG, not an option. */
static bool is_number_arg(const char *arg)
{
	return isdigit((unsigned char)arg[1]) || arg[1] == '.';
}

/* For "did you mean": the values of --device and --dtype. */
static const char *const device_names[] = { "cuda", "cpu", NULL };
static const char *const autocast_dtype_names[] = { "f16", "bf16", NULL };

/* One option with its value (optarg); 0, or the exit status. */
static int set_option(struct explain *ex, int option, bool *dtype_set,
		      bool *list)
{
	switch (option) {
	case OPTION_JSON:
		ex->json = true;
		return 0;
	case OPTION_NO_CACHE:
		ex->cache_enabled = false;
		return 0;
	case OPTION_LIST:
		*list = true;
		return 0;
	case OPTION_TORCH:
		return parse_torch(ex, optarg);
	case OPTION_DEVICE:
		if (amp_device_type_from_name(optarg, &ex->device) != 0)
			return command_line_value_error(
				&explain_command, optarg, device_names,
				"unknown device '%s' (cuda or cpu)", optarg);
		return 0;
	case OPTION_DTYPE:
		if (amp_dtype_from_name(optarg, &ex->lp) != 0 ||
		    (ex->lp != AMP_DTYPE_F16 && ex->lp != AMP_DTYPE_BF16))
			return command_line_value_error(
				&explain_command, optarg, autocast_dtype_names,
				"unsupported autocast dtype '%s' (f16 or bf16)",
				optarg);
		*dtype_set = true;
		return 0;
	default:
		return COMMAND_LINE_BAD_USAGE;
	}
}

/* Options may come anywhere (before "--"); the rest are OP and ARGs,
 * collected in order into `positional`.  Returns 0, 1 after --help, or
 * the exit status. */
static int parse_options(struct explain *ex, int argc, char **argv,
			 char **positional, int *npositional, bool *list)
{
	struct command_line cl = { "amptrace explain", "h", explain_options,
				   argc, argv, .is_operand = is_number_arg };
	bool dtype_set = false;
	int option;

	while ((option = command_line_next(&cl)) != -1) {
		if (option == 'h') {
			usage(stdout);
			return 1;
		}
		int status = set_option(ex, option, &dtype_set, list);
		if (status != 0)
			return status;
	}
	*npositional = 0;
	for (int i = optind; i < argc; i++)
		positional[(*npositional)++] = argv[i];
	if (!dtype_set)
		ex->lp = ex->device == AMP_DEVICE_CPU ? AMP_DTYPE_BF16
						      : AMP_DTYPE_F16;
	return 0;
}

/* Answers for OP and ARGs (positional) once the options are parsed. */
static int run(struct explain *ex, int npositional, char **positional,
	       bool list)
{
	if (list)
		return explain_list_table(ex->torch, ex->device, ex->json);
	if (npositional == 0) {
		usage(stderr);
		return 2;
	}

	ex->query = positional[0];
	int status = resolve(ex, positional[0]);
	for (int i = 1; status == 0 && i < npositional; i++)
		status = parse_arg(ex, positional[i]);
	if (status == 0 && ex->call.dtype_given != AMP_DTYPE_NONE &&
	    !ex->op.takes_dtype)
		status = usage_error("%s has no dtype argument", ex->op.name);
	if (status != 0)
		return status;

	struct explain_step *call = &ex->call;
	call->row = ex->op.row;
	call->output_rule = ex->op.output;
	set_label(call, ex->op.name, ex->op.overload);
	for (int i = 0; i < call->nargs; i++) {
		if (i == ex->op.optional_tensor)
			call->args[i].optional = true;
		if (ex->op.list_of_optional && i > 0 && i < call->nargs - 1) {
			call->args[i].optional = true;
			call->untouched[i] = true;
		}
	}
	evaluate(call, ex);

	if (call->nargs == 0 && ex->nother == 0 &&
	    call->dtype_given == AMP_DTYPE_NONE) {
		explain_describe_op(ex);
		return 0;
	}
	if (call->plan.policy == AMP_POLICY_NONE)
		evaluate_inner(ex);
	collect_notes(ex);
	if (ex->json)
		explain_print_json(ex);
	else
		explain_print_text(ex);
	return 0;
}

int amptrace_explain(int argc, char **argv)
{
	struct explain *ex = calloc(1, sizeof(*ex));
	if (ex == NULL) {
		fputs("amptrace explain: out of memory\n", stderr);
		return 1;
	}
	ex->torch = AMP_TORCH_NEWEST;
	ex->device = AMP_DEVICE_CUDA;
	ex->cache_enabled = true;
	ex->call.dtype_given = AMP_DTYPE_NONE;

	int npositional = 0;
	bool list = false;
	char **positional = calloc((size_t)argc + 1, sizeof(*positional));
	if (positional == NULL) {
		free(ex);
		fputs("amptrace explain: out of memory\n", stderr);
		return 1;
	}
	int status = parse_options(ex, argc, argv, positional, &npositional,
				   &list);
	status = status == 0 ? run(ex, npositional, positional, list)
			     : status == 1 ? 0 : status;
	free(positional);
	free(ex);
	return status;
}
