/* Check suite for the policy table's PyTorch versions (lib/amp_policy.h):
 * each version's rules, picking a version from a torch version string, the
 * row counts of 1.13's lists, the rows that differ between versions, and
 * the plan's version-specific behaviour (1.13's inert CPU cat, its
 * bf16-only CPU autocast, rows a version does not hold).  The 1.13 rows are
 * checked against the installed PyTorch by tests/test_torch_policy.py. */
#include "amp_policy.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define CUDA AMP_DEVICE_CUDA
#define CPU AMP_DEVICE_CPU
#define F32 AMP_DTYPE_F32
#define F16 AMP_DTYPE_F16
#define BF16 AMP_DTYPE_BF16
#define V1_13 AMP_TORCH_1_13
#define V2_13 AMP_TORCH_2_13
#define V2_14 AMP_TORCH_2_14
#define NEWEST AMP_TORCH_NEWEST
#define INVALID (-1000) /* "expect this status", not a version */

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static struct amp_plan_arg tensor(enum amp_dtype dtype,
				  enum amp_device_type device)
{
	return (struct amp_plan_arg){ .defined = true, .dtype = dtype,
				      .device = device, .is_leaf = true };
}

/* ------------------------------------------------------------ versions */

START_TEST(test_tables)
{
	const struct amp_torch_table *old = amp_torch_table(V1_13);
	const struct amp_torch_table *newest = amp_torch_table(NEWEST);
	ck_assert_str_eq(old->name, "1.13");
	ck_assert_int_eq(old->major, 1);
	ck_assert_int_eq(old->minor, 13);
	ck_assert_int_eq(old->cache_scope, AMP_CACHE_PER_THREAD);
	ck_assert(!old->cpu_f16);
	ck_assert_int_eq(NEWEST, V2_14);
	ck_assert_str_eq(newest->name, "2.14");
	ck_assert_int_eq(newest->major, 2);
	ck_assert_int_eq(newest->minor, 14);
	ck_assert_int_eq(newest->cache_scope, AMP_CACHE_PER_PROCESS);
	ck_assert(newest->cpu_f16);
	const struct amp_torch_table *v2_13 = amp_torch_table(V2_13);
	ck_assert_str_eq(v2_13->name, "2.13");
	ck_assert_int_eq(v2_13->minor, 13);
	ck_assert_int_eq(v2_13->cache_scope, AMP_CACHE_PER_PROCESS);
	ck_assert(v2_13->cpu_f16);
	ck_assert_ptr_nonnull(strstr(old->source, "v1.13.1"));
	ck_assert_ptr_nonnull(strstr(v2_13->source, "008ec6b1840c"));
	ck_assert_ptr_nonnull(strstr(v2_13->source, "torch 2.13.0"));
	ck_assert_ptr_nonnull(strstr(newest->source, "torch 2.14.1"));
	ck_assert_ptr_null(amp_torch_table(AMP_TORCH_VERSION_COUNT));
	ck_assert_str_eq(amp_cache_scope_name(AMP_CACHE_PER_THREAD),
			 "per-thread");
	ck_assert_str_eq(amp_cache_scope_name(AMP_CACHE_PER_PROCESS),
			 "per-process");
}
END_TEST

/* What amp_torch_version_from_string() relies on: every version has a
 * name and a release series, the series ascend, newest is the last. */
START_TEST(test_table_order)
{
	int previous = -1;
	for (int v = 0; v < AMP_TORCH_VERSION_COUNT; v++) {
		const struct amp_torch_table *table =
			amp_torch_table((enum amp_torch_version)v);
		ck_assert_ptr_nonnull(table);
		ck_assert_ptr_nonnull(table->name);
		ck_assert_ptr_nonnull(table->source);
		ck_assert_int_lt(table->cache_scope, AMP_CACHE_SCOPE_COUNT);
		int series = table->major * 1000 + table->minor;
		ck_assert_int_gt(series, previous);
		previous = series;
	}
}
END_TEST

static const struct {
	const char *text;
	int version; /* or INVALID with `status` */
	bool exact;
	int status;
} version_cases[] = {
	{ "newest", NEWEST, true, AMP_OK },
	{ "1.13", V1_13, true, AMP_OK },
	{ "1.13.1", V1_13, true, AMP_OK },
	{ "1.13.0a0", V1_13, true, AMP_OK }, /* Debian's torch.__version__ */
	{ "1.13.1+cpu", V1_13, true, AMP_OK },
	{ "2.13", V2_13, true, AMP_OK },
	{ "2.13.0+cpu", V2_13, true, AMP_OK }, /* pip's CPU wheel */
	{ "2.13.1", V2_13, true, AMP_OK },
	{ "2.14", V2_14, true, AMP_OK },
	{ "2.14.1+cu130", V2_14, true, AMP_OK }, /* pip's CUDA wheel */
	/* the nearest table below it in its major version */
	{ "1.14.0.dev20221201", V1_13, false, AMP_OK },
	{ "2.15.0", V2_14, false, AMP_OK },
	/* none below it in its major: the nearest above it */
	{ "2.1.0+cu121", V2_13, false, AMP_OK },
	{ "2.6.0", V2_13, false, AMP_OK }, /* Debian 13's python3-torch */
	/* newer than every table: the newest */
	{ "10.0", NEWEST, false, AMP_OK },
	/* older than every table */
	{ "1.12.1", INVALID, false, AMP_ERR_UNSUPPORTED },
	{ "0.4.1", INVALID, false, AMP_ERR_UNSUPPORTED },
	/* not versions */
	{ "", INVALID, false, AMP_ERR_INVALID },
	{ "torch", INVALID, false, AMP_ERR_INVALID },
	{ "1", INVALID, false, AMP_ERR_INVALID },
	{ "1.", INVALID, false, AMP_ERR_INVALID },
	{ "v1.13.1", INVALID, false, AMP_ERR_INVALID },
	{ "1.x", INVALID, false, AMP_ERR_INVALID },
	{ "1.13x", INVALID, false, AMP_ERR_INVALID },
	{ "1.13-1", INVALID, false, AMP_ERR_INVALID },
	{ "1.13 ", INVALID, false, AMP_ERR_INVALID },
	{ "newest ", INVALID, false, AMP_ERR_INVALID },
	{ "99999.1", INVALID, false, AMP_ERR_INVALID },
};

START_TEST(test_version_from_string)
{
	enum amp_torch_version version = AMP_TORCH_VERSION_COUNT;
	bool exact = !version_cases[_i].exact;
	int status = amp_torch_version_from_string(version_cases[_i].text,
						   &version, &exact);
	ck_assert_msg(status == version_cases[_i].status, "'%s': status %d",
		      version_cases[_i].text, status);
	if (status != AMP_OK)
		return;
	ck_assert_msg((int)version == version_cases[_i].version,
		      "'%s': version %d", version_cases[_i].text, version);
	ck_assert_msg(exact == version_cases[_i].exact, "'%s': exact %d",
		      version_cases[_i].text, exact);
}
END_TEST

START_TEST(test_version_from_string_args)
{
	enum amp_torch_version version;
	ck_assert_int_eq(amp_torch_version_from_string(NULL, &version, NULL),
			 AMP_ERR_INVALID);
	ck_assert_int_eq(amp_torch_version_from_string("1.13.1", &version,
						       NULL),
			 AMP_OK); /* exact may be NULL */
	ck_assert_int_eq(version, V1_13);
}
END_TEST

/* ------------------------------------------------------------- 1.13 rows */

struct row_count {
	enum amp_device_type device;
	enum amp_policy policy;
	size_t count;
};

/* v1.13.1's lists: 107 CUDA and 126 CPU registrations. */
static const struct row_count counts_1_13[] = {
	{ CUDA, AMP_POLICY_LOWER_PRECISION_FP, 32 },
	{ CUDA, AMP_POLICY_FP32, 47 },
	{ CUDA, AMP_POLICY_FP32_SET_OPT_DTYPE, 14 },
	{ CUDA, AMP_POLICY_FP32_APPEND_DTYPE, 3 },
	{ CUDA, AMP_POLICY_PROMOTE, 10 },
	{ CUDA, AMP_POLICY_BANNED, 1 },
	{ CPU, AMP_POLICY_LOWER_PRECISION_FP, 15 },
	{ CPU, AMP_POLICY_FP32, 107 },
	{ CPU, AMP_POLICY_PROMOTE, 4 },
};

START_TEST(test_row_counts_1_13)
{
	size_t count = 0, total = 0;
	for (size_t i = 0; i < amp_policy_row_count(); i++) {
		const struct amp_policy_row *row = amp_policy_row_at(i);
		if (!amp_policy_row_in(row, V1_13))
			continue;
		total++;
		count += row->device == counts_1_13[_i].device &&
			 row->policy == counts_1_13[_i].policy;
	}
	ck_assert_msg(count == counts_1_13[_i].count, "%s %s: %zu rows",
		      amp_device_type_name(counts_1_13[_i].device),
		      amp_policy_name(counts_1_13[_i].policy), count);
	ck_assert_uint_eq(total, 107 + 126);
}
END_TEST

/* Rows that differ between the versions (reference/autocast-semantics.md
 * 5.5), and some that do not. */
static const struct {
	int version;
	enum amp_device_type device;
	const char *op;
	const char *overload;
	enum amp_policy policy; /* NONE: not listed in that version */
} version_rows[] = {
	{ V1_13, CPU, "conv_transpose2d", "input", AMP_POLICY_FP32 },
	{ NEWEST, CPU, "conv_transpose2d", "input",
	  AMP_POLICY_LOWER_PRECISION_FP },
	{ V1_13, CPU, "conv_transpose1d", "", AMP_POLICY_FP32 },
	{ V1_13, CUDA, "conv_transpose1d", "", AMP_POLICY_LOWER_PRECISION_FP },
	{ V1_13, CPU, "prelu", "", AMP_POLICY_NONE },
	{ NEWEST, CPU, "prelu", "", AMP_POLICY_LOWER_PRECISION_FP },
	{ V1_13, CPU, "linalg_vecdot", "", AMP_POLICY_NONE },
	{ V1_13, CUDA, "linalg_vecdot", "", AMP_POLICY_NONE },
	{ V1_13, CPU, "symeig", "", AMP_POLICY_FP32 },
	{ NEWEST, CPU, "symeig", "", AMP_POLICY_NONE },
	{ V1_13, CPU, "linalg_matrix_norm", "str_ord", AMP_POLICY_FP32 },
	{ NEWEST, CPU, "linalg_matrix_norm", "str_ord", AMP_POLICY_NONE },
	{ V1_13, CUDA, "linalg_matrix_norm", "", AMP_POLICY_NONE },
	{ NEWEST, CUDA, "linalg_matrix_norm", "",
	  AMP_POLICY_FP32_SET_OPT_DTYPE },
	{ V1_13, CUDA, "frobenius_norm", "", AMP_POLICY_FP32 },
	{ NEWEST, CUDA, "frobenius_norm", "", AMP_POLICY_NONE },
	{ V1_13, CUDA, "frobenius_norm", "dim", AMP_POLICY_FP32 },
	{ V1_13, CUDA, "upsample_bilinear2d", "", AMP_POLICY_NONE },
	{ V1_13, CUDA, "vdot", "", AMP_POLICY_NONE },
	{ V1_13, CUDA, "dot", "", AMP_POLICY_PROMOTE },
	{ V1_13, CUDA, "_scaled_dot_product_flash_attention", "",
	  AMP_POLICY_NONE },
	{ V1_13, CPU, "cat", "", AMP_POLICY_PROMOTE },
	{ V1_13, CPU, "stack", "", AMP_POLICY_PROMOTE },
	{ V1_13, CPU, "mm", "", AMP_POLICY_LOWER_PRECISION_FP },
	{ V1_13, CUDA, "binary_cross_entropy", "", AMP_POLICY_BANNED },
	/* 2.13 registers no Dimname overload; CUDA's rms_norm is new */
	{ V1_13, CPU, "prod", "dim_Dimname", AMP_POLICY_FP32 },
	{ V2_13, CPU, "prod", "dim_Dimname", AMP_POLICY_NONE },
	{ V1_13, CUDA, "softmax", "Dimname", AMP_POLICY_FP32_SET_OPT_DTYPE },
	{ V2_13, CUDA, "softmax", "Dimname", AMP_POLICY_NONE },
	{ V2_13, CUDA, "softmax", "int", AMP_POLICY_FP32_SET_OPT_DTYPE },
	{ V1_13, CUDA, "rms_norm", "", AMP_POLICY_NONE },
	{ V2_13, CUDA, "rms_norm", "", AMP_POLICY_FP32 },
};

START_TEST(test_version_rows)
{
	const struct amp_policy_row *row = amp_policy_lookup(
		(enum amp_torch_version)version_rows[_i].version,
		version_rows[_i].device, version_rows[_i].op,
		version_rows[_i].overload);
	enum amp_policy policy = row ? row->policy : AMP_POLICY_NONE;
	ck_assert_msg(policy == version_rows[_i].policy, "%s %s %s.%s: %s",
		      amp_torch_table(version_rows[_i].version)->name,
		      amp_device_type_name(version_rows[_i].device),
		      version_rows[_i].op, version_rows[_i].overload,
		      amp_policy_name(policy));
}
END_TEST

/* Only 1.13's CPU cat carries a flag. */
START_TEST(test_flags)
{
	int flagged = 0;
	for (size_t i = 0; i < amp_policy_row_count(); i++) {
		const struct amp_policy_row *row = amp_policy_row_at(i);
		if (row->flags == 0)
			continue;
		flagged++;
		ck_assert_str_eq(row->op, "cat");
		ck_assert_int_eq(row->device, CPU);
		ck_assert(amp_policy_row_in(row, V1_13));
		ck_assert(!amp_policy_row_in(row, NEWEST));
		ck_assert_uint_eq(row->flags, AMP_ROW_ARGS_UNTOUCHED);
	}
	ck_assert_int_eq(flagged, 1);
}
END_TEST

/* ------------------------------------------------------------ the plan */

/* 1.13's CPU cat wrapper neither picks a type nor casts; newest's does. */
START_TEST(test_plan_cat)
{
	struct amp_plan_arg args[] = { tensor(BF16, CPU), tensor(F32, CPU) };
	struct amp_plan plan;

	amp_autocast_plan(V1_13, amp_policy_lookup(V1_13, CPU, "cat", ""), CPU,
			  BF16, true, 2, args, AMP_DTYPE_NONE, &plan);
	ck_assert_int_eq(plan.status, AMP_OK);
	ck_assert_int_eq(plan.policy, AMP_POLICY_PROMOTE);
	ck_assert_int_eq(plan.target, AMP_DTYPE_NONE);
	ck_assert(!plan.casts[0].cast && !plan.casts[1].cast);

	amp_autocast_plan(NEWEST, amp_policy_lookup(NEWEST, CPU, "cat", ""),
			  CPU, BF16, true, 2, args, AMP_DTYPE_NONE, &plan);
	ck_assert_int_eq(plan.target, F32);
	ck_assert(plan.casts[0].cast && !plan.casts[1].cast);

	/* f16 under bf16: newest raises, 1.13 lets native cat decide */
	args[0] = tensor(F16, CPU);
	args[1] = tensor(F16, CPU);
	amp_autocast_plan(NEWEST, amp_policy_lookup(NEWEST, CPU, "cat", ""),
			  CPU, BF16, true, 2, args, AMP_DTYPE_NONE, &plan);
	ck_assert_int_eq(plan.status, AMP_ERR_AUTOCAST);
	amp_autocast_plan(V1_13, amp_policy_lookup(V1_13, CPU, "cat", ""), CPU,
			  BF16, true, 2, args, AMP_DTYPE_NONE, &plan);
	ck_assert_int_eq(plan.status, AMP_OK);
}
END_TEST

/* A row the version does not hold plans as "not listed". */
START_TEST(test_plan_row_of_other_version)
{
	struct amp_plan_arg args[] = { tensor(BF16, CPU), tensor(BF16, CPU) };
	struct amp_plan plan;
	const struct amp_policy_row *lp = amp_policy_lookup(
		NEWEST, CPU, "conv_transpose2d", "input");
	const struct amp_policy_row *fp32 = amp_policy_lookup(
		V1_13, CPU, "conv_transpose2d", "input");
	ck_assert_ptr_ne(lp, fp32);

	amp_autocast_plan(V1_13, lp, CPU, BF16, true, 2, args, AMP_DTYPE_NONE,
			  &plan);
	ck_assert_int_eq(plan.policy, AMP_POLICY_NONE);
	ck_assert(!plan.casts[0].cast);
	amp_autocast_plan(V1_13, fp32, CPU, BF16, true, 2, args,
			  AMP_DTYPE_NONE, &plan);
	ck_assert_int_eq(plan.policy, AMP_POLICY_FP32);
	ck_assert(plan.casts[0].cast && plan.casts[0].to == F32);
	amp_autocast_plan(NEWEST, fp32, CPU, BF16, true, 2, args,
			  AMP_DTYPE_NONE, &plan);
	ck_assert_int_eq(plan.policy, AMP_POLICY_NONE);
}
END_TEST

/* 1.13 CPU autocast is bf16 only: entering an f16 region raises. */
START_TEST(test_plan_cpu_f16)
{
	struct amp_plan_arg args[] = { tensor(F32, CPU), tensor(F32, CPU) };
	struct amp_plan plan;

	amp_autocast_plan(V1_13, amp_policy_lookup(V1_13, CPU, "mm", ""), CPU,
			  F16, true, 2, args, AMP_DTYPE_NONE, &plan);
	ck_assert_int_eq(plan.status, AMP_ERR_AUTOCAST);
	ck_assert_ptr_eq(plan.error, amp_cpu_bf16_only_message);
	ck_assert_str_eq(amp_cpu_bf16_only_message,
			 "Currently, AutocastCPU only support Bfloat16 as the "
			 "autocast_cpu_dtype");
	/* even an unlisted op: the region itself cannot be entered */
	amp_autocast_plan(V1_13, NULL, CPU, F16, true, 2, args,
			  AMP_DTYPE_NONE, &plan);
	ck_assert_int_eq(plan.status, AMP_ERR_AUTOCAST);

	amp_autocast_plan(NEWEST, amp_policy_lookup(NEWEST, CPU, "mm", ""),
			  CPU, F16, true, 2, args, AMP_DTYPE_NONE, &plan);
	ck_assert_int_eq(plan.status, AMP_OK);
	ck_assert(plan.casts[0].cast && plan.casts[0].to == F16);
	args[0].device = args[1].device = CUDA;
	amp_autocast_plan(V1_13, amp_policy_lookup(V1_13, CUDA, "mm", ""),
			  CUDA, F16, true, 2, args, AMP_DTYPE_NONE, &plan);
	ck_assert_int_eq(plan.status, AMP_OK);
}
END_TEST

static Suite *versions_suite(void)
{
	Suite *suite = suite_create("policy_versions");

	TCase *versions = tcase_create("versions");
	tcase_add_test(versions, test_tables);
	tcase_add_test(versions, test_table_order);
	tcase_add_loop_test(versions, test_version_from_string, 0,
			    (int)COUNT(version_cases));
	tcase_add_test(versions, test_version_from_string_args);
	suite_add_tcase(suite, versions);

	TCase *rows = tcase_create("rows");
	tcase_add_loop_test(rows, test_row_counts_1_13, 0,
			    (int)COUNT(counts_1_13));
	tcase_add_loop_test(rows, test_version_rows, 0,
			    (int)COUNT(version_rows));
	tcase_add_test(rows, test_flags);
	suite_add_tcase(suite, rows);

	TCase *plan = tcase_create("plan");
	tcase_add_test(plan, test_plan_cat);
	tcase_add_test(plan, test_plan_row_of_other_version);
	tcase_add_test(plan, test_plan_cpu_f16);
	suite_add_tcase(suite, plan);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(versions_suite());
	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
