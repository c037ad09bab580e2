/* Op names for `amptrace explain`: resolving what the user typed to an ATen
 * (name, overload) and its policy row on the autocast device, the ops that
 * are on no autocast list but that explain still knows (native type
 * promotion), Python spellings, and close-match suggestions. */
#include "edit_distance.h"
#include "explain.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Ops on no autocast list of any device: autocast leaves them alone and
 * PyTorch's own type promotion decides.  `output` follows the grammar of
 * lib/policy_table.c.  Includes every op lib/op_list.h executes. */
struct unlisted_op {
	const char *name;
	const char *overload;
	const char *output;
	bool takes_dtype;
	const char *note;
};

static const char python_bool_note[] =
	"returns a Python bool, not a tensor";

static const struct unlisted_op unlisted_ops[] = {
	/* comparisons: bool tensors (promotion decides only how they compare) */
	{ "eq", "Tensor", "bool", false, NULL },
	{ "eq", "Scalar", "bool", false, NULL },
	{ "ne", "Tensor", "bool", false, NULL },
	{ "ne", "Scalar", "bool", false, NULL },
	{ "lt", "Tensor", "bool", false, NULL },
	{ "lt", "Scalar", "bool", false, NULL },
	{ "le", "Tensor", "bool", false, NULL },
	{ "le", "Scalar", "bool", false, NULL },
	{ "gt", "Tensor", "bool", false, NULL },
	{ "gt", "Scalar", "bool", false, NULL },
	{ "ge", "Tensor", "bool", false, NULL },
	{ "ge", "Scalar", "bool", false, NULL },
	{ "equal", "", "bool", false, python_bool_note },
	{ "allclose", "", "bool", false, python_bool_note },
	{ "isclose", "", "bool", false, NULL },
	{ "isnan", "", "bool", false, NULL },
	{ "isinf", "", "bool", false, NULL },
	{ "isfinite", "", "bool", false, NULL },
	{ "logical_not", "", "bool", false, NULL },
	{ "logical_and", "", "bool", false, NULL },
	{ "logical_or", "", "bool", false, NULL },
	{ "logical_xor", "", "bool", false, NULL },
	/* elementwise arithmetic */
	{ "add", "Tensor", NULL, false, NULL },
	{ "add", "Scalar", NULL, false, NULL },
	{ "sub", "Tensor", NULL, false, NULL },
	{ "sub", "Scalar", NULL, false, NULL },
	{ "rsub", "Tensor", NULL, false, NULL },
	{ "mul", "Tensor", NULL, false, NULL },
	{ "mul", "Scalar", NULL, false, NULL },
	{ "div", "Tensor", "float", false, NULL },
	{ "div", "Scalar", "float", false, NULL },
	{ "true_divide", "Tensor", "float", false, NULL },
	{ "floor_divide", "", NULL, false, NULL },
	{ "remainder", "Tensor", NULL, false, NULL },
	{ "maximum", "", NULL, false, NULL },
	{ "minimum", "", NULL, false, NULL },
	{ "where", "self", NULL, false, NULL },
	{ "neg", "", NULL, false, NULL },
	{ "abs", "", NULL, false, NULL },
	{ "square", "", NULL, false, NULL },
	{ "clamp", "", NULL, false, NULL },
	{ "sqrt", "", "float", false, NULL },
	{ "sin", "", "float", false, NULL },
	{ "cos", "", "float", false, NULL },
	{ "erf", "", "float", false, NULL },
	{ "sigmoid", "", "float", false, NULL },
	{ "tanh", "", "float", false, NULL },
	{ "relu", "", NULL, false, NULL },
	{ "gelu", "", NULL, false, NULL },
	{ "silu", "", NULL, false, NULL },
	{ "leaky_relu", "", NULL, false, NULL },
	{ "hardtanh", "", NULL, false, NULL },
	{ "elu", "", NULL, false, NULL },
	/* reductions */
	{ "mean", "", NULL, true, NULL },
	{ "mean", "dim", NULL, true, NULL },
	{ "nansum", "", "long", true, NULL },
	{ "var", "", NULL, false, NULL },
	{ "std", "", NULL, false, NULL },
	{ "amax", "", "self", false, NULL },
	{ "amin", "", "self", false, NULL },
	{ "max", "", "self", false, NULL },
	{ "min", "", "self", false, NULL },
	{ "argmax", "", "i64", false, NULL },
	{ "argmin", "", "i64", false, NULL },
	/* layers outside the lists: they keep the input's dtype */
	{ "embedding", "", "self", false, NULL },
	{ "dropout", "", "self", false, NULL },
	{ "batch_norm", "", "self", false, NULL },
	{ "native_batch_norm", "", "self", false, NULL },
	{ "instance_norm", "", "self", false, NULL },
	{ "max_pool2d", "", "self", false, NULL },
	{ "avg_pool2d", "", "self", false, NULL },
	{ "adaptive_avg_pool2d", "", "self", false, NULL },
	/* views, layout and copies */
	{ "transpose", "int", "self", false, NULL },
	{ "t", "", "self", false, NULL },
	{ "reshape", "", "self", false, NULL },
	{ "view", "", "self", false, NULL },
	{ "slice", "Tensor", "self", false, NULL },
	{ "unsqueeze", "", "self", false, NULL },
	{ "squeeze", "", "self", false, NULL },
	{ "permute", "", "self", false, NULL },
	{ "expand", "", "self", false, NULL },
	{ "flatten", "using_ints", "self", false, NULL },
	{ "contiguous", "", "self", false, NULL },
	{ "clone", "", "self", false, NULL },
	{ "detach", "", "self", false, NULL },
	{ "to", "dtype", NULL, true, NULL },
	{ "to", "device", "self", false, NULL },
	{ "_to_copy", "", NULL, true, NULL },
	/* backward ops libamp's autograd dispatches (lib/grad/): never on
	 * an autocast list, so never autocast themselves */
	{ "threshold_backward", "", NULL, false, NULL },
	{ "gelu_backward", "", NULL, false, NULL },
	{ "sigmoid_backward", "", NULL, false, NULL },
	{ "tanh_backward", "", NULL, false, NULL },
	{ "clamp_backward", "", NULL, false, NULL },
	{ "_softmax_backward_data", "", NULL, true, NULL },
	{ "_log_softmax_backward_data", "", NULL, true, NULL },
	{ "native_layer_norm_backward", "", NULL, false, NULL },
	{ "convolution_backward", "", NULL, false, NULL },
	{ "embedding_dense_backward", "", "self", false, NULL },
	{ "slice_backward", "", "self", false, NULL },
	{ "mse_loss_backward", "", NULL, false, NULL },
	{ "nll_loss_backward", "", NULL, false, NULL },
	{ "binary_cross_entropy_backward", "", NULL, false, NULL },
	/* in-place updates (optimizers, GradScaler): ATen names end in '_' */
	{ "copy_", "", "self", false, NULL },
	{ "fill_", "Scalar", "self", false, NULL },
	{ "lerp_", "Scalar", "self", false, NULL },
	{ "_amp_update_scale_", "", "self", false,
	  "updates the scale and growth tracker in place" },
	{ "_amp_foreach_non_finite_check_and_unscale_", "", "self", false,
	  "returns nothing: unscales the gradients and sets found_inf in "
	  "place" },
	/* factories: dtype= or the default dtype (f32; i64 for integer fill) */
	{ "empty", "memory_format", NULL, true, NULL },
	{ "zeros", "", NULL, true, NULL },
	{ "ones", "", NULL, true, NULL },
	{ "full", "", NULL, true, NULL },
	{ "tensor", "", NULL, true, NULL },
	{ "randn", "", NULL, true, NULL },
	{ "rand", "", NULL, true, NULL },
	{ "scalar_tensor", "", NULL, true, NULL },
};

/* Listed ops with a `ScalarType? dtype` argument. */
static const char *const dtype_taking_listed[] = {
	"prod", "softmax", "log_softmax", "cumprod", "cumsum",
	"linalg_vector_norm", "linalg_matrix_norm", "sum",
};

/* Unlisted composites whose inner ops are autocast (rule 5 of the
 * reference): CUDA cross_entropy_loss is log_softmax + nll_loss. */
static const struct {
	const char *name;
	const char *inner[2];
} composites[] = {
	{ "cross_entropy_loss", { "log_softmax.int", "nll_loss" } },
};

/* Python spellings: operators, torch.nn.functional names. */
static const struct {
	const char *python;
	const char *aten;
} aliases[] = {
	{ "__matmul__", "matmul" }, { "__rmatmul__", "matmul" },
	{ "__pow__", "pow" },       { "__rpow__", "pow.Scalar" },
	{ "__eq__", "eq" },         { "__ne__", "ne" },
	{ "__lt__", "lt" },         { "__le__", "le" },
	{ "__gt__", "gt" },         { "__ge__", "ge" },
	{ "__add__", "add" },       { "__radd__", "add" },
	{ "__sub__", "sub" },       { "__rsub__", "rsub" },
	{ "__mul__", "mul" },       { "__rmul__", "mul" },
	{ "__div__", "div" },       { "__truediv__", "div" },
	{ "__neg__", "neg" },       { "cross_entropy", "cross_entropy_loss" },
};

/* Module prefixes dropped (or turned into the ATen prefix they stand for)
 * so `torch.linalg.vecdot` finds linalg_vecdot. */
static const struct {
	const char *prefix;
	const char *aten_prefix;
} module_prefixes[] = {
	{ "aten::", "" },
	{ "torch.ops.aten.", "" },
	{ "torch.nn.functional.", "" },
	{ "torch._C._nn.", "" },
	{ "torch._C._linalg.", "" },
	{ "torch.linalg.", "linalg_" },
	{ "torch.fft.", "fft_" },
	{ "torch.Tensor.", "" },
	{ "torch.", "" },
	{ "Tensor.", "" },
	{ "F.", "" },
};

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static bool takes_dtype_listed(const char *name)
{
	for (size_t i = 0; i < COUNT(dtype_taking_listed); i++)
		if (strcmp(dtype_taking_listed[i], name) == 0)
			return true;
	return false;
}

/* The row for `name` on `device` in `version`: the exact overload when
 * given (non-NULL), else the default overload, else the first row of that
 * name. */
static const struct amp_policy_row *find_row(enum amp_torch_version version,
					     enum amp_device_type device,
					     const char *name,
					     const char *overload,
					     bool *guessed)
{
	if (overload != NULL)
		return amp_policy_lookup(version, device, name, overload);
	const struct amp_policy_row *row =
		amp_policy_lookup(version, device, name, "");
	if (row != NULL)
		return row;
	for (size_t i = 0; i < amp_policy_row_count(); i++) {
		row = amp_policy_row_at(i);
		if (row->device == device && amp_policy_row_in(row, version) &&
		    strcmp(row->op, name) == 0) {
			*guessed = true;
			return row;
		}
	}
	return NULL;
}

static const struct unlisted_op *find_unlisted(const char *name,
					       const char *overload,
					       bool *guessed)
{
	const struct unlisted_op *first = NULL;
	for (size_t i = 0; i < COUNT(unlisted_ops); i++) {
		const struct unlisted_op *op = &unlisted_ops[i];
		if (strcmp(op->name, name) != 0)
			continue;
		if (overload != NULL) {
			if (strcmp(op->overload, overload) == 0)
				return op;
		} else if (op->overload[0] == '\0') {
			return op;
		} else if (first == NULL) {
			first = op;
		}
	}
	if (first != NULL)
		*guessed = true;
	return first;
}

const struct amp_torch_table *
explain_listed_before(const char *name, enum amp_torch_version version)
{
	const struct amp_policy_row *found = NULL;
	for (size_t i = 0; i < amp_policy_row_count(); i++) {
		const struct amp_policy_row *row = amp_policy_row_at(i);
		if (row->removed != 0 && row->removed <= version &&
		    strcmp(row->op, name) == 0 &&
		    (found == NULL || found->removed < row->removed))
			found = row;
	}
	/* the last version holding it: the one before its removal */
	return found != NULL ? amp_torch_table(found->removed - 1) : NULL;
}

/* Rows explain knows in `version`: its own and newer versions' (ops only
 * newer lists have ran unlisted). */
static bool row_known(const struct amp_policy_row *row,
		      enum amp_torch_version version)
{
	return row->removed == 0 || version < row->removed;
}

/* Known in `version`: a row there, a newer version's row, or unlisted. */
static bool name_is_known(const char *name, enum amp_torch_version version)
{
	for (size_t i = 0; i < amp_policy_row_count(); i++) {
		const struct amp_policy_row *row = amp_policy_row_at(i);
		if (strcmp(row->op, name) == 0 && row_known(row, version))
			return true;
	}
	for (size_t i = 0; i < COUNT(unlisted_ops); i++)
		if (strcmp(unlisted_ops[i].name, name) == 0)
			return true;
	return false;
}

/* Copies `text` into buf, dropping a module prefix and mapping aliases. */
static void normalize_name(const char *text, char *buf)
{
	strcpy(buf, text);
	for (size_t i = 0; i < COUNT(module_prefixes); i++) {
		size_t n = strlen(module_prefixes[i].prefix);
		if (strncmp(text, module_prefixes[i].prefix, n) == 0) {
			strcpy(buf, module_prefixes[i].aten_prefix);
			strcat(buf, text + n);
			break;
		}
	}
	for (size_t i = 0; i < COUNT(aliases); i++) {
		if (strcmp(buf, aliases[i].python) == 0) {
			strcpy(buf, aliases[i].aten);
			break;
		}
	}
}

/* The op's row in a version newer than `version`, on `device` first:
 * the lists grew, so an op only newer versions list ran unlisted in this
 * one (if it existed).  Ops only older versions list are left unknown:
 * they may be gone from PyTorch (symeig). */
static const struct amp_policy_row *
find_newer_version(enum amp_torch_version version, enum amp_device_type device,
		   const char *name, const char *overload, bool *guessed)
{
	for (int v = (int)version + 1; v < AMP_TORCH_VERSION_COUNT; v++) {
		for (int k = 0; k < AMP_DEVICE_TYPE_COUNT; k++) {
			/* the asked device, then the others in order */
			int d = k == 0 ? (int)device : k - (k <= (int)device);
			*guessed = false;
			const struct amp_policy_row *row =
				find_row((enum amp_torch_version)v,
					 (enum amp_device_type)d, name,
					 overload, guessed);
			if (row != NULL)
				return row;
		}
	}
	return NULL;
}

static void take_row(struct explain_op *op, const struct amp_policy_row *row,
		     bool guessed)
{
	op->overload = row->overload;
	op->output = row->output;
	op->overload_guessed = guessed;
	op->takes_dtype = takes_dtype_listed(row->op);
}

static const char no_rule_note[] =
	"no autocast rule: on no autocast list amptrace knows (for any "
	"device or PyTorch version) nor among the unlisted ops it describes, "
	"so autocast leaves it alone and it runs in its inputs' dtypes (its "
	"outputs are its own)";

/* The smallest edit distance from `name` to a name explain knows. */
static int closest_distance(const char *name, enum amp_torch_version version)
{
	int best = INT_MAX;

	for (size_t i = 0; i < amp_policy_row_count(); i++) {
		const struct amp_policy_row *row = amp_policy_row_at(i);
		int d = row_known(row, version) ? edit_distance(name, row->op)
						: INT_MAX;
		if (d < best)
			best = d;
	}
	for (size_t i = 0; i < COUNT(unlisted_ops); i++) {
		int d = edit_distance(name, unlisted_ops[i].name);
		if (d < best)
			best = d;
	}
	return best;
}

/* A well-formed ATen name (lower case, digits, '_'). */
static bool aten_name(const char *name)
{
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
		      *c == '_'))
			return false;
	return name[0] != '\0';
}

/* A name on no list and not among the unlisted ops: an op of a trace
 * (lstm, native_dropout, ...) autocast leaves alone, answered as such,
 * unless it is a typo of a known name (closest_name_is_typo: "sofmax",
 * "linaer", "layer_nrom") or it only older lists had
 * (symeig: gone from PyTorch since). */
static enum explain_resolution unknown_name(char *name, const char *overload,
					    enum amp_torch_version version,
					    struct explain_op *op)
{
	if (!aten_name(name) || closest_name_is_typo(name, closest_distance(name, version)) ||
	    explain_listed_before(name, version))
		return EXPLAIN_UNKNOWN_OP;
	op->name = name;
	op->overload = overload ? overload : "";
	op->output = NULL;
	op->note = no_rule_note;
	return EXPLAIN_RESOLVED;
}

static enum explain_resolution resolve_plain(char *name, const char *overload,
					     enum amp_torch_version version,
					     enum amp_device_type device,
					     struct explain_op *op)
{
	bool guessed = false;

	op->name = name;
	op->row = find_row(version, device, name, overload, &guessed);
	if (op->row != NULL) {
		take_row(op, op->row, guessed);
		return EXPLAIN_RESOLVED;
	}
	for (int other = 0; other < AMP_DEVICE_TYPE_COUNT; other++) {
		if (other == (int)device)
			continue;
		guessed = false;
		op->elsewhere = find_row(version, other, name, overload,
					 &guessed);
		if (op->elsewhere != NULL) {
			take_row(op, op->elsewhere, guessed);
			return EXPLAIN_RESOLVED;
		}
	}
	op->other_version = find_newer_version(version, device, name, overload,
					       &guessed);
	if (op->other_version != NULL) {
		take_row(op, op->other_version, guessed);
		return EXPLAIN_RESOLVED;
	}
	guessed = false;
	const struct unlisted_op *unlisted = find_unlisted(name, overload,
							   &guessed);
	if (unlisted != NULL) {
		op->overload = unlisted->overload;
		op->output = unlisted->output;
		op->overload_guessed = guessed;
		op->takes_dtype = unlisted->takes_dtype;
		op->note = unlisted->note;
		return EXPLAIN_RESOLVED;
	}
	if (name_is_known(name, version))
		return EXPLAIN_UNKNOWN_OVERLOAD;
	return unknown_name(name, overload, version, op);
}

enum explain_resolution explain_resolve_op(const char *text,
					   enum amp_torch_version version,
					   enum amp_device_type device,
					   char *buf, struct explain_op *op)
{
	*op = (struct explain_op){ .optional_tensor = -1 };
	if (strlen(text) >= EXPLAIN_NAME_MAX) {
		buf[0] = '\0';
		return EXPLAIN_UNKNOWN_OP;
	}
	normalize_name(text, buf);

	char *dot = strchr(buf, '.');
	const char *overload = NULL;
	if (dot != NULL) {
		*dot = '\0';
		overload = dot + 1;
	}
	if (buf[0] == '\0')
		return EXPLAIN_UNKNOWN_OP;

	/* out= variants and in-place ops are never registered for autocast */
	if (overload != NULL && strcmp(overload, "out") == 0) {
		enum explain_resolution r =
			resolve_plain(buf, NULL, version, device, op);
		if (r != EXPLAIN_RESOLVED)
			return r;
		op->row = NULL;
		op->elsewhere = NULL;
		op->other_version = NULL;
		op->overload = "out";
		op->out_variant = true;
		return r;
	}
	size_t len = strlen(buf);
	bool in_place = len > 1 && buf[len - 1] == '_' && buf[len - 2] != '_';
	enum explain_resolution r;
	if (in_place && !name_is_known(buf, version)) {
		/* add_ is add's in-place form */
		buf[len - 1] = '\0';
		r = resolve_plain(buf, overload, version, device, op);
		buf[len - 1] = '_';
	} else {
		r = resolve_plain(buf, overload, version, device, op);
	}
	if (r != EXPLAIN_RESOLVED)
		return r;
	if (in_place) {
		op->row = NULL;
		op->elsewhere = NULL;
		op->other_version = NULL;
		op->output = "self";
		op->in_place = true;
		op->takes_dtype = false;
		return r;
	}
	if (strcmp(buf, "bilinear") == 0)
		op->optional_tensor = 3; /* bias: Tensor? */
	if (strcmp(buf, "index_put") == 0)
		op->list_of_optional = true;
	if (op->row == NULL) {
		for (size_t i = 0; i < COUNT(composites); i++) {
			if (strcmp(composites[i].name, buf) == 0) {
				op->inner[0] = composites[i].inner[0];
				op->inner[1] = composites[i].inner[1];
			}
		}
	}
	return r;
}

struct suggestion {
	const char *name;
	int distance;
};

static void consider(struct suggestion *best, int *count, const char *query,
		     const char *name)
{
	for (int i = 0; i < *count; i++)
		if (strcmp(best[i].name, name) == 0)
			return;
	int distance = edit_distance(query, name);
	int limit = (int)strlen(query) / 3;
	if (limit < 2)
		limit = 2;
	bool contains = strlen(query) >= 4 && strstr(name, query) != NULL;
	if (distance > limit && !contains)
		return;
	if (contains && distance > limit)
		distance = limit + 1;
	int at = *count < 5 ? (*count)++ : 5;
	while (at > 0 && best[at - 1].distance > distance) {
		if (at < 5)
			best[at] = best[at - 1];
		at--;
	}
	if (at < 5)
		best[at] = (struct suggestion){ name, distance };
}

int explain_suggest_ops(const char *name, enum amp_torch_version version,
			FILE *out)
{
	struct suggestion best[5];
	int count = 0;

	for (size_t i = 0; i < amp_policy_row_count(); i++)
		if (row_known(amp_policy_row_at(i), version))
			consider(best, &count, name, amp_policy_row_at(i)->op);
	for (size_t i = 0; i < COUNT(unlisted_ops); i++)
		consider(best, &count, name, unlisted_ops[i].name);
	for (size_t i = 0; i < COUNT(aliases); i++)
		consider(best, &count, name, aliases[i].python);
	for (int i = 0; i < count; i++)
		fprintf(out, "%s%s", i ? ", " : "", best[i].name);
	return count;
}

static void print_overload(const char *name, const char *overload, int *count,
			   const char **seen, FILE *out)
{
	for (int i = 0; i < *count && i < 64; i++)
		if (strcmp(seen[i], overload) == 0)
			return;
	if (*count < 64)
		seen[*count] = overload;
	fprintf(out, "%s%s%s%s", *count ? ", " : "", name,
		overload[0] ? "." : "", overload);
	(*count)++;
}

void explain_print_overloads(const char *name, enum amp_torch_version version,
			     FILE *out)
{
	const char *seen[64];
	int count = 0;

	for (size_t i = 0; i < amp_policy_row_count(); i++) {
		const struct amp_policy_row *row = amp_policy_row_at(i);
		if (strcmp(row->op, name) == 0 && row_known(row, version))
			print_overload(name, row->overload, &count, seen, out);
	}
	for (size_t i = 0; i < COUNT(unlisted_ops); i++)
		if (strcmp(unlisted_ops[i].name, name) == 0)
			print_overload(name, unlisted_ops[i].overload, &count,
				       seen, out);
}
