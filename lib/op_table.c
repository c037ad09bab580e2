/* The op table: one row per op of op_list.h, indexed by enum amp_op, with
 * the ATen name/overload the traces show, the op's kind and its CPU
 * forward function (lib/cpu/). */
#include "amp_internal.h"
#include "cpu/cpu_ops.h"

#include <assert.h>

#define AMP_OP_ROW(e, op_name, op_overload, op_kind, fn)                     \
	[AMP_OP_##e] = { .name = op_name,                                    \
			 .overload = op_overload,                            \
			 .kind = AMP_OP_KIND_##op_kind,                      \
			 .forward = fn },

const struct amp_op_def amp_op_defs[AMP_OP_COUNT] = {
	AMP_OP_LIST(AMP_OP_ROW)
};

#undef AMP_OP_ROW

/* The table is generated from AMP_OP_LIST, so it always has a row per op;
 * what a new op also needs (its backward in grad/grad_table.c, its tests,
 * its policy row) is not: adding one changes this number on purpose. */
static_assert(AMP_OP_COUNT == 90,
	      "a new op: add its gradient, policy row and tests, then count it");
