/* `amptrace explain`: what PyTorch's autocast does to one call of an op,
 * decided by libamp's policy table and amp_autocast_plan() (the same code
 * the dispatcher runs), in the lists of a chosen PyTorch version.
 * explain.c parses and evaluates the call, explain_ops.c resolves op names
 * (overloads, Python spellings, ops on no autocast list), explain_output.c
 * prints the answer as text or JSON.  It uses the amp_policy library's
 * interface (amp_policy.h), not libamp's internals. */
#ifndef AMPTRACE_EXPLAIN_H
#define AMPTRACE_EXPLAIN_H

#include "amp_policy.h"

#include <stdio.h>

/* ------------------------------------------------------- op resolution */

/* Longest op name explain accepts (a buffer of this size holds any
 * resolved name). */
#define EXPLAIN_NAME_MAX 128
/* Most outputs an output rule lists (lib/policy_table.c). */
#define EXPLAIN_MAX_OUTPUTS 4

/* An op name resolved for one autocast device. */
struct explain_op {
	const char *name;      /* ATen name: "softmax" */
	const char *overload;  /* "int"; "" = the default overload */
	/* The device's policy row; NULL when autocast leaves the op alone
	 * (policy none). */
	const struct amp_policy_row *row;
	/* The op's row on another device when it has none here (CPU softmax
	 * is listed on CUDA), else NULL. */
	const struct amp_policy_row *elsewhere;
	/* The op's row in a newer PyTorch version when this version lists it
	 * on no device (linalg_vecdot under 1.13), else NULL. */
	const struct amp_policy_row *other_version;
	const char *output;    /* output rule (see lib/policy_table.c) */
	bool takes_dtype;      /* has a `ScalarType? dtype` argument */
	bool overload_guessed; /* no overload given and no default row */
	bool in_place;         /* add_ & co.: never autocast */
	bool out_variant;      /* .out overloads: never autocast */
	int optional_tensor;   /* tensor index of an optional<Tensor>, or -1 */
	bool list_of_optional; /* index_put: tensors between the first and
				* the last are a List[Optional[Tensor]] */
	const char *note;      /* a static remark, or NULL */
	/* An unlisted composite whose inner ops autocast on their own: the
	 * first runs on the first tensor, the second on its result followed by
	 * the remaining tensors.  NULL when not a composite. */
	const char *inner[2];
};

enum explain_resolution {
	EXPLAIN_RESOLVED,
	EXPLAIN_UNKNOWN_OP,
	EXPLAIN_UNKNOWN_OVERLOAD,
};

/* Resolves "softmax", "softmax.int", "aten::mm", "torch.linalg.vecdot",
 * "__matmul__", "add_" ... for `device` in `version`'s lists.  `buf`
 * (EXPLAIN_NAME_MAX bytes) receives the normalized name; op->name points
 * into it. */
enum explain_resolution explain_resolve_op(const char *text,
					   enum amp_torch_version version,
					   enum amp_device_type device,
					   char *buf, struct explain_op *op);
/* The newest version older than `version` whose lists have `name` while
 * `version`'s lists do not (symeig under newest: 1.13), else NULL. */
const struct amp_torch_table *
explain_listed_before(const char *name, enum amp_torch_version version);
/* Prints up to five known op names close to `name` (edit distance),
 * comma-separated; prints nothing and returns 0 when none is close. */
int explain_suggest_ops(const char *name, enum amp_torch_version version,
			FILE *out);
/* Prints the known overloads of `name` ("softmax.int, softmax.Dimname"). */
void explain_print_overloads(const char *name, enum amp_torch_version version,
			     FILE *out);

/* ------------------------------------------------------ the evaluation */

#define EXPLAIN_MAX_NUMBERS 64
#define EXPLAIN_MAX_OTHER 64
#define EXPLAIN_MAX_NOTES 6
#define EXPLAIN_NOTE_SIZE 320

enum number_category { NUMBER_BOOL, NUMBER_INT, NUMBER_FLOAT };

/* One op call as explain models it: the plan's tensor arguments, the
 * Python numbers, the dtype argument, and what came out. */
struct explain_step {
	char label[EXPLAIN_NAME_MAX + 40]; /* "softmax.int" */
	const struct amp_policy_row *row;  /* NULL: policy none */
	const char *output_rule;
	int nargs;
	struct amp_plan_arg args[AMP_PLAN_MAX_ARGS];
	bool untouched[AMP_PLAN_MAX_ARGS]; /* index_put's indices */
	const char *arg_text[AMP_PLAN_MAX_ARGS];
	int nnumbers;
	enum number_category numbers[EXPLAIN_MAX_NUMBERS];
	enum amp_dtype dtype_given;        /* AMP_DTYPE_NONE: not given */
	struct amp_plan plan;
	enum amp_dtype compute;            /* AMP_DTYPE_NONE on error */
	int noutputs;
	const char *outputs[EXPLAIN_MAX_OUTPUTS]; /* static: "f32", "c64" */
};

struct explain {
	enum amp_torch_version torch; /* whose lists and rules */
	enum amp_device_type device;
	enum amp_dtype lp;
	bool cache_enabled;
	bool json;
	const char *query;     /* OP as given */
	char name[EXPLAIN_NAME_MAX];
	struct explain_op op;
	struct explain_step call;
	int nother;            /* non-tensor ARGs, as given */
	const char *other[EXPLAIN_MAX_OTHER];
	int ninner;            /* composites: the inner ops evaluated */
	struct explain_step inner[2];
	int nnotes;
	char notes[EXPLAIN_MAX_NOTES][EXPLAIN_NOTE_SIZE];
};

/* ---------------------------------------------------------- the answer */

void explain_print_text(const struct explain *ex);
void explain_print_json(const struct explain *ex);
/* OP without ARGs: its rows on every device. */
void explain_describe_op(const struct explain *ex);
/* --list: the device's rows in `version`.  Returns the exit status. */
int explain_list_table(enum amp_torch_version version,
		       enum amp_device_type device, bool json);

#endif /* AMPTRACE_EXPLAIN_H */
