/* The PyTorch bridge's value statistics (tracer/torch/amptrace_torch/
 * value_stats.c), the route of a GPU's value checks: the host's rows (the
 * tests' path, device -1) hold what kernels/amp_value_stats.h computes of
 * f32, f16 and bf16 values, start over only once read, and refuse other
 * dtypes; a device's go to the CUDA module when it is loaded and has value
 * statistics, and are refused otherwise (the observer then reduces with
 * torch's ops).  The module here is a fake that records what it is given;
 * gpu_module() is this file's. */
#include "gpu.h"
#include "value_spread.h"
#include "value_stats.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static const struct amp_cuda_module *loaded;

const struct amp_cuda_module *gpu_module(void)
{
	return loaded;
}

static struct {
	const void *data;
	enum amp_dtype dtype;
	const struct amp_value_limits *limits;
	struct amp_value_stats *rows;
	int device;
	void *stream;
	int64_t count;
} given;

static int fake_value_stats(const void *data, enum amp_dtype dtype,
			    int64_t count, const struct amp_value_limits *limits,
			    int device, void *stream, int64_t *row)
{
	given.data = data;
	given.dtype = dtype;
	given.limits = limits;
	given.device = device;
	given.stream = stream;
	given.count = count;
	*row = 41;
	return 0;
}

static int fake_value_stats_read(int device, void *stream,
				 struct amp_value_stats *rows, int64_t count)
{
	given.rows = rows;
	given.device = device;
	given.stream = stream;
	given.count = count;
	return 0;
}

static const struct amp_value_limits result_limits = { 0 };

START_TEST(test_host_rows)
{
	enum amp_dtype dtypes[] = { AMP_DTYPE_F32, AMP_DTYPE_F16, AMP_DTYPE_BF16 };
	struct amp_cast_limits c = amp_cast_limits_of(AMP_DTYPE_F16);
	struct amp_value_limits cast = { c.tiny, c.zero, c.overflow, 1 };
	enum { n = 3000 };
	static float bits[n], exact[n];
	struct amp_value_stats want[6], got[6];

	for (int r = 0; r < 6; r++) {
		const struct amp_value_limits *limits = r % 2 ? &cast : &result_limits;
		value_spread_fill(dtypes[r % 3], n, 3u + (unsigned)r, bits, exact);
		amp_value_stats_init(&want[r]);
		for (size_t i = 0; i < n; i++)
			amp_value_stats_add(&want[r], exact[i], limits);
		int64_t row = -1;
		ck_assert_int_eq(value_stats(bits, dtypes[r % 3], n, limits, -1,
					     NULL, &row), 0);
		ck_assert_int_eq(row, r);
	}
	ck_assert_int_eq(value_stats_read(-1, NULL, got, 6), 0);
	ck_assert(!memcmp(got, want, sizeof got));
	/* row 5: bf16 values against f16's limits */
	ck_assert(got[5].inf > 0 && got[5].nan > 0 && got[5].overflowed > 0);
}
END_TEST

/* Rows start over once read; a failed read (more asked than made) keeps
 * them and their numbers. */
START_TEST(test_host_rows_start_over_once_read)
{
	float one = 1.0f;
	int64_t row = -1;
	struct amp_value_stats got[3];

	ck_assert_int_eq(value_stats(&one, AMP_DTYPE_F32, 1, &result_limits, -1,
				     NULL, &row), 0);
	ck_assert_int_eq(row, 0);
	ck_assert_int_eq(value_stats_read(-1, NULL, got, 2), -1);
	ck_assert_int_eq(value_stats(&one, AMP_DTYPE_F32, 1, &result_limits, -1,
				     NULL, &row), 0);
	ck_assert_int_eq(row, 1);
	ck_assert_int_eq(value_stats_read(-1, NULL, got, 2), 0);
	ck_assert_double_eq(got[1].max_abs, 1.0);
	ck_assert_int_eq(value_stats(&one, AMP_DTYPE_F32, 1, &result_limits, -1,
				     NULL, &row), 0);
	ck_assert_int_eq(row, 0);
	ck_assert_int_eq(value_stats_read(-1, NULL, got, 1), 0);
}
END_TEST

START_TEST(test_other_dtypes_refused)
{
	double d = 1.0;
	int64_t row = -1;

	ck_assert_int_eq(value_stats(&d, AMP_DTYPE_F64, 1, &result_limits, -1,
				     NULL, &row), AMP_CUDA_UNSUPPORTED);
	ck_assert_int_eq(value_stats(&d, AMP_DTYPE_I64, 1, &result_limits, 0,
				     NULL, &row), AMP_CUDA_UNSUPPORTED);
	ck_assert_int_eq(row, -1);
}
END_TEST

/* A device's rows: refused without a module, or with one that has no
 * value statistics or cannot read them; else handed to it as given. */
START_TEST(test_device_rows_go_to_the_module)
{
	struct amp_cuda_module module = { .version = AMP_CUDA_MODULE_VERSION };
	float x[4] = { 0 };
	int stream;
	int64_t row = -1;
	struct amp_value_stats rows[1];

	loaded = NULL;
	ck_assert_int_eq(value_stats(x, AMP_DTYPE_F32, 4, &result_limits, 0,
				     &stream, &row), AMP_CUDA_UNSUPPORTED);
	ck_assert_int_eq(value_stats_read(0, &stream, rows, 1), -1);
	loaded = &module;
	ck_assert_int_eq(value_stats(x, AMP_DTYPE_F32, 4, &result_limits, 0,
				     &stream, &row), AMP_CUDA_UNSUPPORTED);
	module.value_stats = fake_value_stats;
	ck_assert_int_eq(value_stats(x, AMP_DTYPE_F32, 4, &result_limits, 0,
				     &stream, &row), AMP_CUDA_UNSUPPORTED);
	module.value_stats_read = fake_value_stats_read;
	ck_assert_int_eq(value_stats(x, AMP_DTYPE_BF16, 4, &result_limits, 2,
				     &stream, &row), 0);
	ck_assert_int_eq(row, 41);
	ck_assert(given.data == x && given.dtype == AMP_DTYPE_BF16 &&
		  given.limits == &result_limits && given.device == 2 &&
		  given.stream == &stream && given.count == 4);
	memset(&given, 0, sizeof given);
	ck_assert_int_eq(value_stats_read(3, &stream, rows, 1), 0);
	ck_assert(given.rows == rows && given.device == 3 &&
		  given.stream == &stream && given.count == 1);
	loaded = NULL;
}
END_TEST

static Suite *value_stats_suite(void)
{
	Suite *s = suite_create("value_stats");
	TCase *tc = tcase_create("route");

	tcase_add_test(tc, test_host_rows);
	tcase_add_test(tc, test_host_rows_start_over_once_read);
	tcase_add_test(tc, test_other_dtypes_refused);
	tcase_add_test(tc, test_device_rows_go_to_the_module);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(value_stats_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
