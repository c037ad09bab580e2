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

#define AMP_OP_ONE(e, name, overload, kind, fn) +1
static_assert(sizeof amp_op_defs / sizeof amp_op_defs[0] ==
		      0 AMP_OP_LIST(AMP_OP_ONE),
	      "amp_op_defs must have one row per AMP_OP_LIST entry");
#undef AMP_OP_ONE
