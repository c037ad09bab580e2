/* Check suite for the autocast policy table (lib/policy_table.c) and the
 * plan (lib/policy.c): every policy, the rules of
 * reference/autocast-semantics.md section 11 that the plan decides, the row
 * counts of PyTorch's lists, and the policies of the ops libamp executes. */
#include "amp_internal.h"

#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define CUDA AMP_DEVICE_CUDA
#define CPU AMP_DEVICE_CPU
#define F64 AMP_DTYPE_F64
#define F32 AMP_DTYPE_F32
#define F16 AMP_DTYPE_F16
#define BF16 AMP_DTYPE_BF16
#define I64 AMP_DTYPE_I64
#define I32 AMP_DTYPE_I32
#define BOOL AMP_DTYPE_BOOL
#define NONE AMP_DTYPE_NONE
#define NEWEST AMP_TORCH_NEWEST

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* A plain tensor: a leaf that does not require grad, on `device`. */
static struct amp_plan_arg tensor(enum amp_dtype dtype,
				  enum amp_device_type device)
{
	return (struct amp_plan_arg){ .defined = true, .dtype = dtype,
				      .device = device, .is_leaf = true };
}

/* A parameter: a leaf f32 (or other) tensor that requires grad. */
static struct amp_plan_arg weight(enum amp_dtype dtype,
				  enum amp_device_type device)
{
	struct amp_plan_arg arg = tensor(dtype, device);
	arg.requires_grad = true;
	return arg;
}

static struct amp_plan_arg optional(struct amp_plan_arg arg)
{
	arg.optional = true;
	return arg;
}

static const struct amp_policy_row *row_of(enum amp_device_type device,
					   const char *op,
					   const char *overload)
{
	const struct amp_policy_row *row = amp_policy_lookup(NEWEST, device, op,
							     overload);
	ck_assert_msg(row != NULL, "%s.%s not on the %s list", op, overload,
		      amp_device_type_name(device));
	return row;
}

static void plan_for(const char *op, const char *overload,
		     enum amp_device_type device, enum amp_dtype lp, int nargs,
		     const struct amp_plan_arg *args, enum amp_dtype dtype_arg,
		     struct amp_plan *plan)
{
	amp_autocast_plan(NEWEST, row_of(device, op, overload), device, lp, true,
			  nargs, args, dtype_arg, plan);
}

/* ------------------------------------------------------------- table */

struct row_count {
	enum amp_device_type device;
	enum amp_policy policy;
	size_t count;
};

/* The newest (2.14) lists: aten/src/ATen/autocast_mode.{h,cpp} as torch
 * 2.13.0 registers them (119 CUDA and 127 CPU ops), less 2.14's removed
 * cholesky and qr (CPU fp32), plus its linalg_matrix_sqrth (fp32 on both):
 * 120 CUDA and 126 CPU ops, as torch 2.14.1 registers them (its cuDNN
 * build adds CUDA's _cudnn_rnn, not a row). */
static const struct row_count row_counts[] = {
	{ CUDA, AMP_POLICY_LOWER_PRECISION_FP, 35 },
	{ CUDA, AMP_POLICY_FP32, 60 },
	{ CUDA, AMP_POLICY_FP32_SET_OPT_DTYPE, 11 },
	{ CUDA, AMP_POLICY_FP32_APPEND_DTYPE, 2 },
	{ CUDA, AMP_POLICY_PROMOTE, 11 },
	{ CUDA, AMP_POLICY_BANNED, 1 },
	{ CPU, AMP_POLICY_LOWER_PRECISION_FP, 24 },
	{ CPU, AMP_POLICY_FP32, 99 },
	{ CPU, AMP_POLICY_FP32_SET_OPT_DTYPE, 0 },
	{ CPU, AMP_POLICY_FP32_APPEND_DTYPE, 0 },
	{ CPU, AMP_POLICY_PROMOTE, 3 },
	{ CPU, AMP_POLICY_BANNED, 0 },
};

START_TEST(test_row_counts)
{
	const struct row_count *expected = &row_counts[_i];
	size_t count = 0;
	for (size_t i = 0; i < amp_policy_row_count(); i++) {
		const struct amp_policy_row *row = amp_policy_row_at(i);
		if (row->device == expected->device &&
		    row->policy == expected->policy &&
		    amp_policy_row_in(row, NEWEST))
			count++;
	}
	ck_assert_msg(count == expected->count, "%s %s: %zu rows, want %zu",
		      amp_device_type_name(expected->device),
		      amp_policy_name(expected->policy), count,
		      expected->count);
}
END_TEST

START_TEST(test_row_total)
{
	size_t newest = 0;
	for (size_t i = 0; i < amp_policy_row_count(); i++)
		newest += amp_policy_row_in(amp_policy_row_at(i), NEWEST);
	ck_assert_uint_eq(newest, 119 + 127);
	ck_assert_ptr_null(amp_policy_row_at(amp_policy_row_count()));
	ck_assert_int_eq(AMP_POLICY_NONE, 0); /* zeroed tables mean "none" */
}
END_TEST

static bool output_item_valid(const char *item, size_t len)
{
	static const char *const words[] = { "=", "self", "float", "long",
					     "complex" };
	for (size_t i = 0; i < COUNT(words); i++)
		if (strlen(words[i]) == len && strncmp(words[i], item, len) == 0)
			return true;
	char name[16];
	enum amp_dtype dtype;
	if (len == 0 || len >= sizeof(name))
		return false;
	memcpy(name, item, len);
	name[len] = '\0';
	return amp_dtype_from_name(name, &dtype) == 0;
}

/* Every row is found by lookup in each version holding it, is unique
 * there, has a real policy and an output rule in the documented grammar. */
START_TEST(test_every_row)
{
	const struct amp_policy_row *row = amp_policy_row_at((size_t)_i);
	ck_assert_ptr_nonnull(row);
	ck_assert(row->op != NULL && row->op[0] != '\0');
	ck_assert_ptr_nonnull(row->overload);
	ck_assert(row->policy > AMP_POLICY_NONE &&
		  row->policy < AMP_POLICY_COUNT);
	int versions = 0;
	for (int v = 0; v < AMP_TORCH_VERSION_COUNT; v++) {
		if (!amp_policy_row_in(row, (enum amp_torch_version)v))
			continue;
		versions++;
		ck_assert_ptr_eq(amp_policy_lookup((enum amp_torch_version)v,
						   row->device, row->op,
						   row->overload),
				 row);
		for (size_t j = 0; j < amp_policy_row_count(); j++) {
			const struct amp_policy_row *other = amp_policy_row_at(j);
			ck_assert_msg(other == row ||
					      other->device != row->device ||
					      !amp_policy_row_in(
						      other,
						      (enum amp_torch_version)v) ||
					      strcmp(other->op, row->op) != 0 ||
					      strcmp(other->overload,
						     row->overload) != 0,
				      "duplicate row %s.%s", row->op,
				      row->overload);
		}
	}
	ck_assert_msg(versions > 0, "%s.%s holds in no version", row->op,
		      row->overload);
	if (row->output != NULL) {
		const char *rule = row->output;
		int items = 0;
		while (*rule != '\0') {
			size_t len = strcspn(rule, ",");
			ck_assert_msg(output_item_valid(rule, len),
				      "%s.%s: bad output rule '%s'", row->op,
				      row->overload, row->output);
			items++;
			rule += len;
			if (*rule == ',')
				rule++;
		}
		ck_assert_int_le(items, AMP_MAX_OUTPUTS);
	}
}
END_TEST

START_TEST(test_lookup_rules)
{
	/* "" and NULL both mean the default overload */
	ck_assert_ptr_eq(amp_policy_lookup(NEWEST, CUDA, "mm", NULL),
			 amp_policy_lookup(NEWEST, CUDA, "mm", ""));
	/* exact overloads only */
	ck_assert_ptr_null(amp_policy_lookup(NEWEST, CUDA, "softmax", ""));
	ck_assert_ptr_nonnull(amp_policy_lookup(NEWEST, CUDA, "softmax", "int"));
	ck_assert_ptr_null(amp_policy_lookup(NEWEST, CUDA, "conv2d", "padding"));
	ck_assert_ptr_nonnull(amp_policy_lookup(NEWEST, CPU, "conv2d", "padding"));
	/* in-place and out= variants are never registered */
	ck_assert_ptr_null(amp_policy_lookup(NEWEST, CUDA, "addmm_", ""));
	ck_assert_ptr_null(amp_policy_lookup(NEWEST, CUDA, "mm", "out"));
	/* norm's dtype-taking overloads are deliberately unregistered */
	ck_assert_ptr_null(amp_policy_lookup(NEWEST, CUDA, "norm", "ScalarOpt_dtype"));
	ck_assert_ptr_null(amp_policy_lookup(NEWEST, CUDA, "nosuchop", ""));
	ck_assert_ptr_null(amp_policy_lookup(NEWEST, CUDA, NULL, ""));
}
END_TEST

START_TEST(test_policy_names)
{
	static const char *const names[AMP_POLICY_COUNT] = {
		"none", "lower_precision_fp", "fp32", "fp32_set_opt_dtype",
		"fp32_append_dtype", "promote", "banned",
	};
	for (int p = 0; p < AMP_POLICY_COUNT; p++)
		ck_assert_str_eq(amp_policy_name((enum amp_policy)p), names[p]);
}
END_TEST

struct listed {
	enum amp_device_type device;
	const char *op;
	const char *overload;
	enum amp_policy policy; /* NONE: not on that device's list */
};

/* Rule 7: CPU and CUDA lists differ. */
static const struct listed device_differences[] = {
	{ CUDA, "softmax", "int", AMP_POLICY_FP32_SET_OPT_DTYPE },
	{ CPU, "softmax", "int", AMP_POLICY_NONE },
	{ CUDA, "sum", "", AMP_POLICY_FP32_SET_OPT_DTYPE },
	{ CPU, "sum", "", AMP_POLICY_NONE },
	{ CUDA, "prod", "", AMP_POLICY_FP32_SET_OPT_DTYPE },
	{ CPU, "prod", "", AMP_POLICY_FP32 },
	{ CUDA, "exp", "", AMP_POLICY_FP32 },
	{ CPU, "exp", "", AMP_POLICY_NONE },
	{ CUDA, "layer_norm", "", AMP_POLICY_FP32 },
	{ CPU, "layer_norm", "", AMP_POLICY_NONE },
	{ CUDA, "norm", "Scalar", AMP_POLICY_FP32_APPEND_DTYPE },
	{ CPU, "norm", "Scalar", AMP_POLICY_NONE },
	{ CUDA, "binary_cross_entropy", "", AMP_POLICY_BANNED },
	{ CPU, "binary_cross_entropy", "", AMP_POLICY_FP32 },
	{ CUDA, "cat", "", AMP_POLICY_NONE },
	{ CPU, "cat", "", AMP_POLICY_PROMOTE },
	{ CUDA, "addcmul", "", AMP_POLICY_PROMOTE },
	{ CPU, "addcmul", "", AMP_POLICY_NONE },
	{ CUDA, "cross_entropy_loss", "", AMP_POLICY_NONE },
	{ CPU, "cross_entropy_loss", "", AMP_POLICY_FP32 },
	{ CUDA, "conv2d", "padding", AMP_POLICY_NONE },
	{ CPU, "conv2d", "padding", AMP_POLICY_LOWER_PRECISION_FP },
	{ CUDA, "_convolution", "", AMP_POLICY_LOWER_PRECISION_FP },
	{ CPU, "_convolution", "", AMP_POLICY_NONE },
	{ CPU, "_convolution", "deprecated", AMP_POLICY_LOWER_PRECISION_FP },
	{ CUDA, "cudnn_convolution", "", AMP_POLICY_LOWER_PRECISION_FP },
	{ CPU, "cudnn_convolution", "", AMP_POLICY_NONE },
	{ CUDA, "conv_transpose2d", "input", AMP_POLICY_LOWER_PRECISION_FP },
	{ CPU, "conv_transpose2d", "input", AMP_POLICY_LOWER_PRECISION_FP },
	{ CUDA, "upsample_bilinear2d", "", AMP_POLICY_FP32 },
	{ CPU, "upsample_bilinear2d", "", AMP_POLICY_NONE },
	{ CUDA, "linalg_vecdot", "", AMP_POLICY_LOWER_PRECISION_FP },
	{ CPU, "linalg_vecdot", "", AMP_POLICY_LOWER_PRECISION_FP },
	{ CPU, "_native_multi_head_attention", "",
	  AMP_POLICY_LOWER_PRECISION_FP },
	{ CUDA, "vdot", "", AMP_POLICY_PROMOTE },
	{ CPU, "index_copy", "dimname", AMP_POLICY_NONE }, /* 2.13: no Dimname */
	{ CUDA, "rms_norm", "", AMP_POLICY_FP32 },
	{ CPU, "rms_norm", "", AMP_POLICY_NONE },
	{ CPU, "linalg_matrix_rank", "atol_rtol_float", AMP_POLICY_FP32 },
};

START_TEST(test_device_differences)
{
	const struct listed *expected = &device_differences[_i];
	const struct amp_policy_row *row = amp_policy_lookup(NEWEST, 
		expected->device, expected->op, expected->overload);
	enum amp_policy policy = row ? row->policy : AMP_POLICY_NONE;
	ck_assert_msg(policy == expected->policy, "%s %s.%s: %s, want %s",
		      amp_device_type_name(expected->device), expected->op,
		      expected->overload, amp_policy_name(policy),
		      amp_policy_name(expected->policy));
}
END_TEST

/* The policy every op libamp executes resolves to, per device; ops not
 * named here (views, factories, in-place and out= variants...) are on no
 * list. */
static const enum amp_policy executable_cuda[AMP_OP_COUNT] = {
	[AMP_OP_MM] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_MATMUL] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_BMM] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_ADDMM] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_BADDBMM] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_LINEAR] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_CONV1D] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_CONV2D] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_POW] = AMP_POLICY_FP32,
	[AMP_OP_POW_SCALAR] = AMP_POLICY_FP32,
	[AMP_OP_EXP] = AMP_POLICY_FP32,
	[AMP_OP_LOG] = AMP_POLICY_FP32,
	[AMP_OP_ADDCMUL] = AMP_POLICY_PROMOTE,
	[AMP_OP_SOFTMAX] = AMP_POLICY_FP32_SET_OPT_DTYPE,
	[AMP_OP_LOG_SOFTMAX] = AMP_POLICY_FP32_SET_OPT_DTYPE,
	[AMP_OP_LAYER_NORM] = AMP_POLICY_FP32,
	[AMP_OP_SUM] = AMP_POLICY_FP32_SET_OPT_DTYPE,
	[AMP_OP_SUM_DIM] = AMP_POLICY_FP32_SET_OPT_DTYPE,
	[AMP_OP_MSE_LOSS] = AMP_POLICY_FP32,
	[AMP_OP_NLL_LOSS] = AMP_POLICY_FP32,
	[AMP_OP_BINARY_CROSS_ENTROPY] = AMP_POLICY_BANNED,
	[AMP_OP_BCE_WITH_LOGITS] = AMP_POLICY_FP32,
	[AMP_OP_RECIPROCAL] = AMP_POLICY_FP32,
	[AMP_OP_LINALG_VECTOR_NORM] = AMP_POLICY_FP32_SET_OPT_DTYPE,
};

static const enum amp_policy executable_cpu[AMP_OP_COUNT] = {
	[AMP_OP_MM] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_MATMUL] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_BMM] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_ADDMM] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_BADDBMM] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_LINEAR] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_CONV1D] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_CONV2D] = AMP_POLICY_LOWER_PRECISION_FP,
	[AMP_OP_CAT] = AMP_POLICY_PROMOTE,
	[AMP_OP_STACK] = AMP_POLICY_PROMOTE,
	[AMP_OP_MSE_LOSS] = AMP_POLICY_FP32,
	[AMP_OP_NLL_LOSS] = AMP_POLICY_FP32,
	[AMP_OP_CROSS_ENTROPY] = AMP_POLICY_FP32,
	[AMP_OP_BINARY_CROSS_ENTROPY] = AMP_POLICY_FP32,
	[AMP_OP_BCE_WITH_LOGITS] = AMP_POLICY_FP32,
};

static const struct {
	const char *name;
	const char *overload;
} executable_ops[AMP_OP_COUNT] = {
#define AMP_OP_NAME(e, name, overload, ...) [AMP_OP_##e] = { name, overload },
	AMP_OP_LIST(AMP_OP_NAME)
#undef AMP_OP_NAME
};

START_TEST(test_executable_ops)
{
	const char *name = executable_ops[_i].name;
	const char *overload = executable_ops[_i].overload;
	const struct amp_policy_row *cuda = amp_policy_lookup(NEWEST, CUDA, name,
							      overload);
	const struct amp_policy_row *cpu = amp_policy_lookup(NEWEST, CPU, name,
							     overload);
	ck_assert_msg((cuda ? cuda->policy : AMP_POLICY_NONE) ==
			      executable_cuda[_i],
		      "cuda %s.%s", name, overload);
	ck_assert_msg((cpu ? cpu->policy : AMP_POLICY_NONE) ==
			      executable_cpu[_i],
		      "cpu %s.%s", name, overload);
}
END_TEST

/* -------------------------------------------------------- eligibility */

START_TEST(test_eligibility)
{
	struct amp_plan_arg arg = tensor(F32, CUDA);
	ck_assert(amp_autocast_eligible(&arg, CUDA));
	ck_assert(!amp_autocast_eligible(&arg, CPU)); /* another device */
	arg.dtype = F16;
	ck_assert(amp_autocast_eligible(&arg, CUDA));
	arg.dtype = BF16;
	ck_assert(amp_autocast_eligible(&arg, CUDA));
	arg.dtype = F64; /* doubles are never touched */
	ck_assert(!amp_autocast_eligible(&arg, CUDA));
	arg.dtype = I64;
	ck_assert(!amp_autocast_eligible(&arg, CUDA));
	arg.dtype = I32;
	ck_assert(!amp_autocast_eligible(&arg, CUDA));
	arg.dtype = BOOL;
	ck_assert(!amp_autocast_eligible(&arg, CUDA));
	arg = tensor(F32, CUDA);
	arg.defined = false;
	ck_assert(!amp_autocast_eligible(&arg, CUDA));
}
END_TEST

/* Rule 2: ineligible arguments pass through untouched, under every policy
 * that casts. */
START_TEST(test_ineligible_pass_through)
{
	struct amp_plan_arg args[] = {
		tensor(F64, CUDA), tensor(I64, CUDA), tensor(BOOL, CUDA),
		tensor(F32, CPU), tensor(F16, CPU),
		optional((struct amp_plan_arg){ .dtype = F32, .device = CUDA }),
		tensor(F32, CUDA),
	};
	int n = (int)COUNT(args);
	struct amp_plan plan;

	plan_for("mm", "", CUDA, F16, n, args, NONE, &plan);
	for (int i = 0; i < n - 1; i++) {
		ck_assert_msg(!plan.casts[i].cast, "arg %d cast", i);
		ck_assert_int_eq(plan.casts[i].to, args[i].dtype);
	}
	ck_assert(plan.casts[n - 1].cast);

	plan_for("exp", "", CUDA, F16, n, args, NONE, &plan);
	for (int i = 0; i < n; i++)
		ck_assert(!plan.casts[i].cast); /* the f32 one is already f32 */
}
END_TEST

/* ----------------------------------------------------------- policies */

START_TEST(test_no_row)
{
	struct amp_plan_arg args[] = { tensor(F32, CUDA), tensor(F16, CUDA) };
	struct amp_plan plan;
	amp_autocast_plan(NEWEST, NULL, CUDA, F16, true, 2, args, F16, &plan);
	ck_assert_int_eq(plan.policy, AMP_POLICY_NONE);
	ck_assert_int_eq(plan.status, AMP_OK);
	ck_assert_ptr_null(plan.error);
	ck_assert_int_eq(plan.target, NONE);
	ck_assert_int_eq(plan.dtype_arg, NONE);
	ck_assert_int_eq(plan.lower_precision, F16);
	ck_assert_int_eq(plan.nargs, 2);
	ck_assert(!plan.casts[0].cast && !plan.casts[1].cast);
}
END_TEST

START_TEST(test_lower_precision_fp)
{
	struct amp_plan_arg args[] = {
		tensor(F32, CUDA),
		weight(F32, CUDA),
		optional(tensor(F32, CUDA)), /* optional tensors are cast too */
		tensor(F16, CUDA),
		tensor(BF16, CUDA),
	};
	struct amp_plan plan;
	plan_for("linear", "", CUDA, F16, 5, args, NONE, &plan);
	ck_assert_int_eq(plan.policy, AMP_POLICY_LOWER_PRECISION_FP);
	ck_assert_int_eq(plan.target, F16);
	ck_assert_int_eq(plan.status, AMP_OK);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(plan.casts[i].to, F16);
	ck_assert(plan.casts[0].cast && plan.casts[1].cast &&
		  plan.casts[2].cast && plan.casts[4].cast);
	ck_assert(!plan.casts[3].cast); /* already f16 */

	/* CPU: the lower precision dtype is whatever the region says */
	plan_for("mm", "", CPU, BF16, 2,
		 (struct amp_plan_arg[]){ tensor(F32, CPU), tensor(F16, CPU) },
		 NONE, &plan);
	ck_assert_int_eq(plan.target, BF16);
	ck_assert(plan.casts[0].cast && plan.casts[1].cast);
	ck_assert_str_eq(plan.casts[1].reason, "source is not f32");
	plan_for("mm", "", CPU, F16, 1, (struct amp_plan_arg[]){ tensor(F32, CPU) },
		 NONE, &plan);
	ck_assert_int_eq(plan.casts[0].to, F16);
}
END_TEST

START_TEST(test_fp32)
{
	struct amp_plan_arg args[] = { tensor(F16, CUDA), weight(BF16, CUDA),
				       tensor(F32, CUDA), tensor(I64, CUDA) };
	struct amp_plan plan;
	plan_for("mse_loss", "", CUDA, F16, 4, args, NONE, &plan);
	ck_assert_int_eq(plan.policy, AMP_POLICY_FP32);
	ck_assert_int_eq(plan.target, F32);
	ck_assert(plan.casts[0].cast && plan.casts[1].cast);
	ck_assert(!plan.casts[2].cast && !plan.casts[3].cast);
	ck_assert_int_eq(plan.casts[0].to, F32);
	ck_assert(!plan.casts[1].cacheable); /* only casts to lp are cached */
	ck_assert_str_eq(plan.casts[1].reason, "cast to f32 is never cached");

	/* CPU prod is plain fp32: the input is cast, a given dtype passes */
	plan_for("prod", "", CPU, BF16, 1,
		 (struct amp_plan_arg[]){ tensor(BF16, CPU) }, F16, &plan);
	ck_assert_int_eq(plan.policy, AMP_POLICY_FP32);
	ck_assert(plan.casts[0].cast);
	ck_assert_int_eq(plan.dtype_arg, NONE);
}
END_TEST

/* Rule 4: fp32_set_opt_dtype never casts and fills dtype only when the
 * FIRST argument is eligible. */
START_TEST(test_fp32_set_opt_dtype)
{
	struct amp_plan plan;
	struct amp_plan_arg f16 = tensor(F16, CUDA);

	plan_for("softmax", "int", CUDA, F16, 1, &f16, NONE, &plan);
	ck_assert_int_eq(plan.policy, AMP_POLICY_FP32_SET_OPT_DTYPE);
	ck_assert_int_eq(plan.dtype_arg, F32);
	ck_assert_int_eq(plan.target, NONE);
	ck_assert(!plan.casts[0].cast);

	plan_for("softmax", "int", CUDA, F16, 1, &f16, F16, &plan);
	ck_assert_int_eq(plan.dtype_arg, F16); /* an explicit dtype wins */

	static const struct amp_plan_arg ineligible_first[] = {
		{ .defined = true, .dtype = F64, .device = CUDA, .is_leaf = true },
		{ .defined = true, .dtype = I32, .device = CUDA, .is_leaf = true },
		{ .defined = true, .dtype = F16, .device = CPU, .is_leaf = true },
		{ .defined = false, .dtype = F16, .device = CUDA },
	};
	for (size_t i = 0; i < COUNT(ineligible_first); i++) {
		struct amp_plan_arg args[2] = { ineligible_first[i],
						tensor(F16, CUDA) };
		plan_for("sum", "", CUDA, F16, 2, args, NONE, &plan);
		ck_assert_int_eq(plan.dtype_arg, NONE);
		plan_for("sum", "", CUDA, F16, 2, args, F16, &plan);
		ck_assert_int_eq(plan.dtype_arg, NONE); /* left as given */
		ck_assert(!plan.casts[0].cast && !plan.casts[1].cast);
	}
	plan_for("sum", "", CUDA, F16, 0, NULL, NONE, &plan);
	ck_assert_int_eq(plan.dtype_arg, NONE);
}
END_TEST

START_TEST(test_fp32_append_dtype)
{
	struct amp_plan plan;
	struct amp_plan_arg arg = tensor(F16, CUDA);

	plan_for("norm", "Scalar", CUDA, F16, 1, &arg, NONE, &plan);
	ck_assert_int_eq(plan.policy, AMP_POLICY_FP32_APPEND_DTYPE);
	ck_assert_int_eq(plan.dtype_arg, F32);
	ck_assert(!plan.casts[0].cast);
	arg.dtype = BF16;
	plan_for("norm", "ScalarOpt_dim", CUDA, F16, 1, &arg, NONE, &plan);
	ck_assert_int_eq(plan.dtype_arg, F32);
	arg.dtype = F64; /* not eligible: the first argument's own dtype */
	plan_for("norm", "ScalarOpt_dim", CUDA, F16, 1, &arg, NONE, &plan);
	ck_assert_int_eq(plan.dtype_arg, F64);
	arg.dtype = I64;
	plan_for("norm", "Scalar", CUDA, F16, 1, &arg, NONE, &plan);
	ck_assert_int_eq(plan.dtype_arg, I64);
	arg = tensor(F16, CPU);
	plan_for("norm", "Scalar", CUDA, F16, 1, &arg, NONE, &plan);
	ck_assert_int_eq(plan.dtype_arg, F16);
}
END_TEST

START_TEST(test_banned)
{
	static const char expected[] =
		"torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss "
		"are unsafe to autocast.\n"
		"Many models use a sigmoid layer right before the binary cross "
		"entropy layer.\n"
		"In this case, combine the two layers using "
		"torch.nn.functional.binary_cross_entropy_with_logits\n"
		"or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits "
		"and BCEWithLogits are\n"
		"safe to autocast.";
	ck_assert_str_eq(amp_banned_bce_message, expected);

	/* raised for any input dtype */
	static const enum amp_dtype dtypes[] = { F32, F16, BF16, F64, I64 };
	for (size_t i = 0; i < COUNT(dtypes); i++) {
		struct amp_plan_arg args[] = { tensor(dtypes[i], CUDA),
					       tensor(dtypes[i], CUDA) };
		struct amp_plan plan;
		plan_for("binary_cross_entropy", "", CUDA, F16, 2, args, NONE,
			 &plan);
		ck_assert_int_eq(plan.policy, AMP_POLICY_BANNED);
		ck_assert_int_eq(plan.status, AMP_ERR_AUTOCAST);
		ck_assert_ptr_eq(plan.error, amp_banned_bce_message);
		ck_assert(!plan.casts[0].cast && !plan.casts[1].cast);
	}
}
END_TEST

/* ---------------------------------------------------- promote (rule 1) */

struct promote_case {
	enum amp_dtype lp;
	int nargs;
	struct {
		enum amp_dtype dtype;
		bool optional;
		bool other_device;
	} args[4];
	enum amp_dtype target; /* NONE: autocast raises */
	const char *error;
};

#define UNEXPECTED "Unexpected floating ScalarType in at::autocast::prioritize"
#define DOUBLE "promote type is double in at::autocast::prioritize"

static const struct promote_case promote_cases[] = {
	/* all lp stays lp; any f32 wins */
	{ F16, 2, { { F16 }, { F16 } }, F16, NULL },
	{ F16, 2, { { F16 }, { F32 } }, F32, NULL },
	{ F16, 2, { { F32 }, { F16 } }, F32, NULL },
	{ F16, 3, { { F32 }, { F16 }, { F16 } }, F32, NULL },
	/* order dependence: a non-lp float before any f32 raises */
	{ F16, 2, { { F32 }, { BF16 } }, F32, NULL },
	{ F16, 2, { { BF16 }, { F32 } }, NONE, UNEXPECTED },
	{ F16, 2, { { F16 }, { BF16 } }, NONE, UNEXPECTED },
	{ F16, 1, { { BF16 } }, NONE, UNEXPECTED },
	{ BF16, 2, { { F16 }, { F32 } }, NONE, UNEXPECTED },
	{ BF16, 2, { { F32 }, { F16 } }, F32, NULL },
	{ BF16, 2, { { F16 }, { F16 } }, NONE, UNEXPECTED },
	/* doubles and ineligible tensors are ignored */
	{ F16, 2, { { F64 }, { F16 } }, F16, NULL },
	{ F16, 2, { { F16 }, { F64 } }, F16, NULL },
	{ F16, 3, { { I64 }, { BOOL }, { F16 } }, F16, NULL },
	{ F16, 2, { { F32, false, true }, { F16 } }, F16, NULL },
	{ F16, 2, { { BF16, false, true }, { F16 } }, F16, NULL },
	{ F16, 0, { { F16 } }, F16, NULL },
	/* optional tensors do not take part in the choice */
	{ F16, 3, { { F16 }, { F16 }, { F32, true } }, F16, NULL },
	{ F16, 2, { { BF16, true }, { F16 } }, F16, NULL },
	/* unreachable with f16/bf16, but PyTorch's first check */
	{ F64, 1, { { F32 } }, NONE, DOUBLE },
	{ F64, 1, { { I64 } }, NONE, DOUBLE },
	{ F64, 1, { { F32, true } }, F64, NULL },
};

START_TEST(test_promote)
{
	const struct promote_case *c = &promote_cases[_i];
	struct amp_plan_arg args[4];
	for (int i = 0; i < c->nargs; i++) {
		args[i] = tensor(c->args[i].dtype,
				 c->args[i].other_device ? CPU : CUDA);
		args[i].optional = c->args[i].optional;
	}
	struct amp_plan plan;
	plan_for("cross", "", CUDA, c->lp, c->nargs, args, NONE, &plan);
	ck_assert_int_eq(plan.policy, AMP_POLICY_PROMOTE);
	if (c->error != NULL) {
		ck_assert_int_eq(plan.status, AMP_ERR_AUTOCAST);
		ck_assert_str_eq(plan.error, c->error);
		for (int i = 0; i < c->nargs; i++)
			ck_assert(!plan.casts[i].cast);
		return;
	}
	ck_assert_int_eq(plan.status, AMP_OK);
	ck_assert_int_eq(plan.target, c->target);
	for (int i = 0; i < c->nargs; i++) {
		bool eligible = amp_autocast_eligible(&args[i], CUDA);
		bool expect_cast = eligible && args[i].dtype != c->target;
		ck_assert_msg(plan.casts[i].cast == expect_cast, "case %d arg %d",
			      _i, i);
		ck_assert_int_eq(plan.casts[i].to,
				 expect_cast ? c->target : args[i].dtype);
	}
}
END_TEST

/* The lists' own promote cases (test_autocast_list torch_need_autocast_
 * promote): a CPU stack of a bf16 and an f32 under bf16 autocast. */
START_TEST(test_promote_cpu_list)
{
	struct amp_plan_arg args[] = { tensor(BF16, CPU), tensor(F32, CPU) };
	struct amp_plan plan;
	plan_for("stack", "", CPU, BF16, 2, args, NONE, &plan);
	ck_assert_int_eq(plan.target, F32);
	ck_assert(plan.casts[0].cast && !plan.casts[1].cast);
	args[0].dtype = F16;
	plan_for("cat", "", CPU, F16, 2, args, NONE, &plan);
	ck_assert_int_eq(plan.target, F32);
	plan_for("cat", "", CPU, BF16, 2, args, NONE, &plan);
	ck_assert_int_eq(plan.status, AMP_ERR_AUTOCAST);
}
END_TEST

/* ------------------------------------------------- the cache (rule 3) */

struct cache_case {
	const char *op; /* mm (lp) or mse_loss (fp32) */
	enum amp_dtype from;
	bool requires_grad;
	bool is_leaf;
	bool is_view;
	bool cache_enabled;
	bool cacheable;
	enum amp_cache_result result;
	const char *reason;
};

static const struct cache_case cache_cases[] = {
	{ "mm", F32, true, true, false, true, true, AMP_CACHE_MISS,
	  "leaf f32 weight requiring grad" },
	{ "mm", F32, true, true, false, false, true, AMP_CACHE_DISABLED,
	  "cache disabled" },
	{ "mse_loss", F16, true, true, false, true, false,
	  AMP_CACHE_UNCACHEABLE, "cast to f32 is never cached" },
	{ "mm", BF16, true, true, false, true, false, AMP_CACHE_UNCACHEABLE,
	  "source is not f32" },
	{ "mm", F32, false, true, false, true, false, AMP_CACHE_UNCACHEABLE,
	  "does not require grad" },
	{ "mm", F32, true, false, false, true, false, AMP_CACHE_UNCACHEABLE,
	  "not a leaf" },
	{ "mm", F32, true, true, true, true, false, AMP_CACHE_UNCACHEABLE,
	  "is a view" },
	/* the first failing condition is the one reported */
	{ "mm", F32, false, false, true, false, false, AMP_CACHE_UNCACHEABLE,
	  "does not require grad" },
	{ "mm", F32, true, false, true, true, false, AMP_CACHE_UNCACHEABLE,
	  "not a leaf" },
	{ "mm", BF16, false, false, true, false, false, AMP_CACHE_UNCACHEABLE,
	  "source is not f32" },
	{ "mse_loss", BF16, false, false, true, false, false,
	  AMP_CACHE_UNCACHEABLE, "cast to f32 is never cached" },
};

START_TEST(test_cache_conditions)
{
	const struct cache_case *c = &cache_cases[_i];
	struct amp_plan_arg arg = {
		.defined = true,
		.dtype = c->from,
		.device = CUDA,
		.requires_grad = c->requires_grad,
		.is_leaf = c->is_leaf,
		.is_view = c->is_view,
	};
	struct amp_plan plan;
	amp_autocast_plan(NEWEST, row_of(CUDA, c->op, ""), CUDA, F16, c->cache_enabled,
			  1, &arg, NONE, &plan);
	ck_assert(plan.casts[0].cast);
	ck_assert_int_eq(plan.casts[0].cacheable, c->cacheable);
	ck_assert_int_eq(plan.casts[0].cache_if_cast, c->result);
	ck_assert_str_eq(plan.casts[0].reason, c->reason);
}
END_TEST

/* A promote to f32 is never cached; a promote to lp of a parameter is. */
START_TEST(test_cache_promote)
{
	struct amp_plan_arg args[] = { weight(F32, CUDA), tensor(F16, CUDA) };
	struct amp_plan plan;
	plan_for("dot", "", CUDA, F16, 2, args, NONE, &plan);
	ck_assert(!plan.casts[0].cast && plan.casts[1].cast);
	ck_assert_int_eq(plan.casts[1].cache_if_cast, AMP_CACHE_UNCACHEABLE);

	args[1] = optional(weight(F32, CUDA));
	args[0] = tensor(F16, CUDA);
	plan_for("bilinear", "", CUDA, F16, 2, args, NONE, &plan);
	ck_assert_int_eq(plan.target, F16);
	ck_assert(plan.casts[1].cast);
	ck_assert_int_eq(plan.casts[1].cache_if_cast, AMP_CACHE_MISS);
}
END_TEST

/* The abort that test_too_many_args expects, without its message. */
static void quiet_abort(const char *file, int line, const char *message)
{
	(void)file;
	(void)line;
	(void)message;
}

START_TEST(test_too_many_args)
{
	struct amp_plan plan;
	amp_set_abort_handler(quiet_abort);
	amp_autocast_plan(NEWEST, NULL, CUDA, F16, true, AMP_PLAN_MAX_ARGS + 1, NULL,
			  NONE, &plan);
}
END_TEST

static Suite *policy_suite(void)
{
	Suite *suite = suite_create("policy");

	TCase *table = tcase_create("table");
	tcase_add_loop_test(table, test_row_counts, 0, (int)COUNT(row_counts));
	tcase_add_test(table, test_row_total);
	tcase_add_loop_test(table, test_every_row, 0,
			    (int)amp_policy_row_count());
	tcase_add_test(table, test_lookup_rules);
	tcase_add_test(table, test_policy_names);
	tcase_add_loop_test(table, test_device_differences, 0,
			    (int)COUNT(device_differences));
	tcase_add_loop_test(table, test_executable_ops, 0, AMP_OP_COUNT);
	suite_add_tcase(suite, table);

	TCase *plan = tcase_create("plan");
	tcase_add_test(plan, test_eligibility);
	tcase_add_test(plan, test_ineligible_pass_through);
	tcase_add_test(plan, test_no_row);
	tcase_add_test(plan, test_lower_precision_fp);
	tcase_add_test(plan, test_fp32);
	tcase_add_test(plan, test_fp32_set_opt_dtype);
	tcase_add_test(plan, test_fp32_append_dtype);
	tcase_add_test(plan, test_banned);
	tcase_add_loop_test(plan, test_promote, 0, (int)COUNT(promote_cases));
	tcase_add_test(plan, test_promote_cpu_list);
	tcase_add_loop_test(plan, test_cache_conditions, 0,
			    (int)COUNT(cache_cases));
	tcase_add_test(plan, test_cache_promote);
	tcase_add_test_raise_signal(plan, test_too_many_args, SIGABRT);
	suite_add_tcase(suite, plan);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(policy_suite());
	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
