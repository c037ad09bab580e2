/* The CUDA backend on a real GPU.  Exits 77 (meson: SKIP) when device
 * cuda is emulated, printing why.  With a GPU:
 *   - every case of tests/cuda_compare.c (each kernel the module runs, and
 *     the host-copy fallback) against the CPU backend on random data, in
 *     f32, f16 and bf16, by relative error;
 *   - GEMM (cuBLAS, f32 accumulation) against an f64 reference computed
 *     from the same rounded inputs, with an error bound per element;
 *   - the cast kernels bit for bit against amp_convert on edge values
 *     (NaN payloads, inf, subnormals, ties), contiguous, misaligned and
 *     strided;
 *   - the fused unscale and the scale update against the CPU backend;
 *   - CUPTI: kernels arrive linked to the ops and casts that launched
 *     them, inside the host time window, none dropped;
 *   - the value checks' statistics (value_stats) against the host's one
 *     pass (kernels/amp_value_stats.h) on the same values.
 * No fork: CUDA does not survive fork() once initialised. */
#include "amp.h"
#include "amp_cuda_module.h"
#include "amp_train.h"
#include "backend.h"
#include "cuda_compare.h"
#include "diag_scan.h"
#include "value_spread.h"

#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const enum amp_dtype float_dtypes[] = { AMP_DTYPE_F32, AMP_DTYPE_F16,
					       AMP_DTYPE_BF16 };

START_TEST(test_cases)
{
	char message[512];

	for (int d = 0; d < 3; d++) {
		if (d > 0 && !cuda_cases[_i].low_precision)
			break;
		ck_assert_msg(cuda_case_run((size_t)_i, float_dtypes[d], message,
					    sizeof message),
			      "%s", message);
	}
}
END_TEST

/* --------------------------------------------------------------- GEMM */

struct gemm_shape {
	int64_t batch, m, k, n;
	bool transpose_b;
};

static const struct gemm_shape gemm_shapes[] = {
	{ 1, 64, 96, 80, false }, { 1, 1, 128, 33, false },
	{ 1, 257, 129, 31, true }, { 3, 17, 40, 23, false },
	{ 2, 128, 1024, 64, true },
};

/* C = A @ B in f64 from the values the GPU saw, and |A| @ |B| for the
 * bound: f32 accumulation over k terms errs by at most ~k * 2^-24 * that,
 * then the output rounds once. */
START_TEST(test_gemm_against_f64)
{
	const struct gemm_shape *g = &gemm_shapes[_i % 5];
	enum amp_dtype dtype = float_dtypes[_i / 5];
	int64_t as[3] = { g->batch, g->m, g->k };
	int64_t bs[3] = { g->batch, g->transpose_b ? g->n : g->k,
			  g->transpose_b ? g->k : g->n };
	int ndim = g->batch > 1 ? 3 : 2;
	amp_tensor *a = cuda_random(ndim, as + (3 - ndim), dtype, CUDA_VALUES_SIGNED, 11);
	amp_tensor *b = cuda_random(ndim, bs + (3 - ndim), dtype, CUDA_VALUES_SIGNED, 12);
	amp_tensor *ga = amp_to_device(a, AMP_DEVICE_CUDA);
	amp_tensor *gb = amp_to_device(b, AMP_DEVICE_CUDA);
	amp_tensor *gbt = g->transpose_b ? amp_transpose(gb, ndim - 2, ndim - 1)
					 : amp_tensor_ref(gb);
	amp_tensor *gc = ndim == 3 ? amp_bmm(ga, gbt) : amp_mm(ga, gbt);
	ck_assert_msg(gc, "%s", amp_last_error());
	ck_assert_int_eq(amp_tensor_dtype(gc), dtype);

	int64_t na = amp_tensor_numel(a), nb = amp_tensor_numel(b);
	int64_t nc = g->batch * g->m * g->n;
	double *va = malloc((size_t)na * sizeof *va), *vb = malloc((size_t)nb * sizeof *vb);
	double *vc = malloc((size_t)nc * sizeof *vc);
	ck_assert_int_eq(amp_tensor_read(a, AMP_DTYPE_F64, va, (size_t)na), AMP_OK);
	ck_assert_int_eq(amp_tensor_read(b, AMP_DTYPE_F64, vb, (size_t)nb), AMP_OK);
	ck_assert_int_eq(amp_tensor_read(gc, AMP_DTYPE_F64, vc, (size_t)nc), AMP_OK);
	double output_rtol = dtype == AMP_DTYPE_F32 ? 0x1p-24
			     : dtype == AMP_DTYPE_F16 ? 0x1p-11
						      : 0x1p-8;
	for (int64_t p = 0; p < g->batch; p++)
		for (int64_t i = 0; i < g->m; i++)
			for (int64_t j = 0; j < g->n; j++) {
				double exact = 0.0, magnitude = 0.0;
				for (int64_t l = 0; l < g->k; l++) {
					double x = va[(p * g->m + i) * g->k + l];
					double y = g->transpose_b
							   ? vb[(p * g->n + j) * g->k + l]
							   : vb[(p * g->k + l) * g->n + j];
					exact += x * y;
					magnitude += fabs(x * y);
				}
				double got = vc[(p * g->m + i) * g->n + j];
				double bound = (double)g->k * 0x1p-24 * magnitude +
					       output_rtol * fabs(exact) * 1.01;
				ck_assert_msg(fabs(got - exact) <= bound,
					      "%s C[%lld][%lld][%lld] = %.9g, f64 %.9g, "
					      "bound %.3g",
					      amp_dtype_name(dtype), (long long)p,
					      (long long)i, (long long)j, got, exact,
					      bound);
			}
	free(va);
	free(vb);
	free(vc);
	amp_tensor_free(gc);
	amp_tensor_free(gbt);
	amp_tensor_free(gb);
	amp_tensor_free(ga);
	amp_tensor_free(b);
	amp_tensor_free(a);
}
END_TEST

/* -------------------------------------------------------------- casts */

/* f32 patterns around every edge of f16 and bf16, then random bits. */
static void edge_values(float *v, size_t n)
{
	static const uint32_t edges[] = {
		0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
		0x7f800001, 0xffc12345, 0x7fa00000, 0x00000001, 0x807fffff,
		0x33800000, 0x33000000, 0x33000001, 0x387fe000, 0x38800000,
		0x477fe000, 0x477fefff, 0x477ff000, 0x47800000, 0x3f808000,
		0x3f818000, 0x3f80ffff, 0x7f7fffff, 0x3fc00000, 0xc0490fdb,
	};
	uint64_t state = 0x243f6a8885a308d3ull;

	for (size_t i = 0; i < n; i++) {
		uint32_t bits;
		if (i < sizeof edges / sizeof edges[0]) {
			bits = edges[i];
		} else {
			state ^= state << 13;
			state ^= state >> 7;
			state ^= state << 17;
			bits = (uint32_t)state;
		}
		memcpy(&v[i], &bits, sizeof bits);
	}
}

/* to(dtype) on the GPU equals amp_convert bit for bit, for f32 -> low
 * and low -> f32, contiguous (vector path), offset by one element
 * (misaligned: element path) and strided. */
START_TEST(test_casts_bit_exact)
{
	enum amp_dtype low = _i ? AMP_DTYPE_BF16 : AMP_DTYPE_F16;
	const int64_t n = (1 << 20) + 3;
	float *values = malloc((size_t)n * sizeof *values);
	uint16_t *expected = malloc((size_t)n * 2), *got = malloc((size_t)n * 2);
	float *back = malloc((size_t)n * sizeof *back), *expected_back = malloc((size_t)n * sizeof *back);

	edge_values(values, (size_t)n);
	amp_tensor *h = amp_from_data(1, &n, AMP_DTYPE_F32, AMP_DEVICE_CPU, values);
	amp_tensor *d = amp_to_device(h, AMP_DEVICE_CUDA);
	for (int layout = 0; layout < 3; layout++) {
		/* 0: whole, 1: from element 1 (misaligned), 2: every other */
		amp_tensor *src = layout == 0 ? amp_tensor_ref(d)
				  : layout == 1 ? amp_slice(d, 0, 1, n, 1)
						: amp_slice(d, 0, 0, n, 2);
		int64_t count = amp_tensor_numel(src);
		const float *first = values + (layout == 1);
		int64_t step = layout == 2 ? 2 : 1;
		for (int64_t i = 0; i < count; i++)
			amp_convert(&expected[i], low, &first[i * step],
				    AMP_DTYPE_F32, 1);
		amp_tensor *cast = amp_to(src, low);
		ck_assert_ptr_nonnull(cast);
		ck_assert_int_eq(amp_tensor_read(cast, low, got, (size_t)count), AMP_OK);
		for (int64_t i = 0; i < count; i++)
			ck_assert_msg(got[i] == expected[i],
				      "layout %d element %lld: 0x%04x, expected 0x%04x",
				      layout, (long long)i, got[i], expected[i]);
		amp_tensor *wide = amp_to(cast, AMP_DTYPE_F32);
		ck_assert_int_eq(amp_tensor_read(wide, AMP_DTYPE_F32, back, (size_t)count), AMP_OK);
		amp_convert(expected_back, AMP_DTYPE_F32, expected, low, (size_t)count);
		ck_assert_int_eq(memcmp(back, expected_back, (size_t)count * 4), 0);
		amp_tensor_free(wide);
		amp_tensor_free(cast);
		amp_tensor_free(src);
	}
	amp_tensor_free(d);
	amp_tensor_free(h);
	free(values);
	free(expected);
	free(got);
	free(back);
	free(expected_back);
}
END_TEST

/* --------------------------------------------------------- GradScaler */

START_TEST(test_scaler)
{
	const int64_t n = 100003;
	enum amp_device_type devices[2] = { AMP_DEVICE_CPU, AMP_DEVICE_CUDA };
	amp_tensor *grads[2][2], *found[2], *inv[2], *scale[2], *tracker[2];
	char message[256];

	for (int d = 0; d < 2; d++) {
		amp_tensor *h = cuda_random(1, &n, AMP_DTYPE_F32, CUDA_VALUES_SIGNED, 5);
		amp_tensor *h16 = cuda_random(1, &n, AMP_DTYPE_F16, CUDA_VALUES_SIGNED, 6);
		grads[d][0] = amp_to_device(h, devices[d]);
		grads[d][1] = amp_to_device(h16, devices[d]);
		amp_tensor_free(h);
		amp_tensor_free(h16);
		found[d] = amp_zeros(0, NULL, AMP_DTYPE_F32, devices[d]);
		inv[d] = amp_full(0, NULL, 1.0 / 3.0, AMP_DTYPE_F32, devices[d]);
		scale[d] = amp_full(0, NULL, 3e38, AMP_DTYPE_F32, devices[d]);
		tracker[d] = amp_zeros(0, NULL, AMP_DTYPE_I32, devices[d]);
		ck_assert_int_eq(amp_non_finite_check_and_unscale_(grads[d], 2, found[d], inv[d]), AMP_OK);
		ck_assert_double_eq(amp_tensor_item(found[d]), 0.0);
		/* growth that would overflow f32 is refused */
		ck_assert_int_eq(amp_update_scale_(scale[d], tracker[d], found[d], 2.0, 0.5, 1), AMP_OK);
		float nan = NAN;
		amp_tensor *one = amp_slice(grads[d][1], 0, 7, 8, 1);
		ck_assert_int_eq(amp_tensor_write(one, AMP_DTYPE_F32, &nan, 1), AMP_OK);
		ck_assert_int_eq(amp_non_finite_check_and_unscale_(grads[d], 2, found[d], inv[d]), AMP_OK);
		ck_assert_double_eq(amp_tensor_item(found[d]), 1.0);
		ck_assert_int_eq(amp_update_scale_(scale[d], tracker[d], found[d], 2.0, 0.5, 1), AMP_OK);
		amp_tensor_free(one);
	}
	for (int i = 0; i < 2; i++)
		ck_assert_msg(cuda_tensors_close(grads[1][i], grads[0][i], 0, 0, message, sizeof message),
			      "%s", message);
	ck_assert_double_eq(amp_tensor_item(scale[1]), amp_tensor_item(scale[0]));
	ck_assert_double_eq(amp_tensor_item(tracker[1]), amp_tensor_item(tracker[0]));
	for (int d = 0; d < 2; d++) {
		amp_tensor_free(grads[d][0]);
		amp_tensor_free(grads[d][1]);
		amp_tensor_free(found[d]);
		amp_tensor_free(inv[d]);
		amp_tensor_free(scale[d]);
		amp_tensor_free(tracker[d]);
	}
}
END_TEST

/* -------------------------------------------------------------- CUPTI */

#define MAX_ACTIVITIES 4096

static struct {
	pthread_mutex_t lock;
	struct amp_gpu_activity items[MAX_ACTIVITIES];
	int count;
	uint64_t ops[256], casts[64];
	int nops, ncasts;
} seen = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void collect(const struct amp_gpu_activity *activities, size_t count,
		    void *user)
{
	(void)user;
	pthread_mutex_lock(&seen.lock);
	for (size_t i = 0; i < count && seen.count < MAX_ACTIVITIES; i++)
		seen.items[seen.count++] = activities[i];
	pthread_mutex_unlock(&seen.lock);
}

static void record(const struct amp_event *event, void *user)
{
	(void)user;
	if (event->kind == AMP_EVENT_OP_BEGIN && seen.nops < 256)
		seen.ops[seen.nops++] = event->op.op_id;
	if (event->kind == AMP_EVENT_CAST && seen.ncasts < 64)
		seen.casts[seen.ncasts++] = event->cast.result.id;
}

static bool in(const uint64_t *ids, int n, uint64_t id)
{
	for (int i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

static void assert_same_stats(const struct amp_value_stats *got,
			      const struct amp_value_stats *want, int row)
{
	const double *g = (const double *)got, *w = (const double *)want;
	for (size_t f = 0; f < sizeof *got / sizeof(double); f++)
		ck_assert_msg(fabs(g[f] - w[f]) <= 1e-9 * fabs(w[f]),
			      "row %d field %zu: %.17g, host %.17g", row, f,
			      g[f], w[f]);
}

/* Rows of every dtype and size (empty, one block's, many blocks'), as a
 * result's and against a cast's limits, past a chunk of rows (1024), each
 * as the host computes it; then rows start over, and an ask for more rows
 * than were made fails. */
START_TEST(test_value_stats)
{
	const struct amp_cuda_module *m = amp_cuda_backend_module();
	ck_assert_ptr_nonnull(m);
	ck_assert(m->value_stats && m->value_stats_read);
	enum { rows = 1100, big = 300000 };
	size_t sizes[] = { 0, 1, 255, 256 * 32 + 1, big };
	struct amp_cast_limits f16 = amp_cast_limits_of(AMP_DTYPE_F16);
	struct amp_value_limits cast = { f16.tiny, f16.zero, f16.overflow, 1 };
	struct amp_value_limits result = { 0 };
	float *exact = malloc(big * sizeof *exact);
	void *bits = malloc(big * sizeof(float));
	void *device = m->alloc(big * sizeof(float));
	struct amp_value_stats *want = calloc(rows, sizeof *want);
	struct amp_value_stats *got = calloc(rows, sizeof *got);
	ck_assert(exact && bits && device && want && got);

	for (int r = 0; r < rows; r++) {
		enum amp_dtype dtype = float_dtypes[r % 3];
		size_t n = r < 15 ? sizes[r / 3] : (size_t)(r % 50);
		const struct amp_value_limits *limits = r % 2 ? &cast : &result;
		value_spread_fill(dtype, n, 7u + (unsigned)r, bits, exact);
		ck_assert_int_eq(m->copy(device, bits, n * amp_dtype_size(dtype),
					 AMP_CUDA_COPY_HOST_TO_DEVICE), 0);
		amp_value_stats_init(&want[r]);
		for (size_t i = 0; i < n; i++)
			amp_value_stats_add(&want[r], exact[i], limits);
		int64_t row = -1;
		ck_assert_int_eq(m->value_stats(device, dtype, (int64_t)n, limits,
						0, NULL, &row), 0);
		ck_assert_int_eq(row, r);
		/* the next row's values may overwrite these: wait */
		ck_assert_int_eq(m->synchronize(), 0);
	}
	ck_assert_int_eq(m->value_stats_read(0, NULL, got, rows), 0);
	for (int r = 0; r < rows; r++)
		assert_same_stats(&got[r], &want[r], r);
	/* row 11: 8193 bf16 values against f16's limits */
	ck_assert(got[11].inf > 0 && got[11].nan > 0 &&
		  got[11].overflowed > 0 && got[11].nonzero > got[11].normal);

	/* a failed read keeps the rows, with their numbers */
	int64_t row = -1;
	ck_assert_int_eq(m->value_stats(device, AMP_DTYPE_F32, 1, &result, 0,
					NULL, &row), 0);
	ck_assert_int_eq(row, 0);
	ck_assert_int_eq(m->value_stats_read(0, NULL, got, 2), -1);
	ck_assert_int_eq(m->value_stats(device, AMP_DTYPE_F32, 1, &result, 0,
					NULL, &row), 0);
	ck_assert_int_eq(row, 1);
	ck_assert_int_eq(m->value_stats_read(0, NULL, got, 2), 0);
	ck_assert_int_eq(m->value_stats(device, AMP_DTYPE_F32, 1, &result, 0,
					NULL, &row), 0);
	ck_assert_int_eq(row, 0);
	ck_assert_int_eq(m->value_stats_read(0, NULL, got, 1), 0);
	ck_assert_int_eq(m->value_stats(device, AMP_DTYPE_F64, 1, &result, 0,
					NULL, &row), AMP_CUDA_UNSUPPORTED);
	m->free(device);
	free(exact);
	free(bits);
	free(want);
	free(got);
}
END_TEST

START_TEST(test_cupti_links_kernels)
{
	int64_t xs[2] = { 64, 128 }, ws[2] = { 96, 128 };
	amp_tensor *hx = cuda_random(2, xs, AMP_DTYPE_F32, CUDA_VALUES_SIGNED, 1);
	amp_tensor *hw = cuda_random(2, ws, AMP_DTYPE_F32, CUDA_VALUES_SIGNED, 2);
	amp_tensor *x = amp_to_device(hx, AMP_DEVICE_CUDA);
	amp_tensor *w = amp_to_device(hw, AMP_DEVICE_CUDA);

	ck_assert_msg(amp_gpu_profiler_start(collect, NULL) == AMP_OK, "%s",
		      amp_last_error());
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_OP_BEGIN) |
					AMP_EVENT_MASK(AMP_EVENT_CAST),
				record, NULL);
	uint64_t begin = amp_now_ns();
	struct amp_autocast_opts opts = AMP_AUTOCAST_OPTS(AMP_DEVICE_CUDA);
	ck_assert_int_eq(amp_autocast_enter(&opts), AMP_OK);
	amp_tensor *y = amp_linear(x, w, NULL);
	amp_tensor *p = y ? amp_softmax(y, -1, AMP_DTYPE_NONE) : NULL;
	amp_autocast_exit();
	ck_assert_ptr_nonnull(p);
	amp_tensor *sum = amp_sum(p, AMP_DTYPE_F32);
	double total = amp_tensor_item(sum); /* syncs */
	amp_tensor_free(sum);
	uint64_t end = amp_now_ns();
	amp_hook_remove(hook);
	struct amp_gpu_profiler_stats stats;
	ck_assert_int_eq(amp_gpu_profiler_stop(&stats), AMP_OK);
	ck_assert_double_eq_tol(total, 64.0, 0.1);

	int kernels = 0, linked_to_op = 0, linked_to_cast = 0;
	for (int i = 0; i < seen.count; i++) {
		const struct amp_gpu_activity *a = &seen.items[i];
		if (a->kind != AMP_GPU_ACTIVITY_KERNEL)
			continue;
		kernels++;
		ck_assert_msg(a->start_ns >= begin - 1000000 && a->end_ns <= end + 1000000 &&
				      a->start_ns <= a->end_ns,
			      "%s at [%llu, %llu] outside [%llu, %llu]", a->name,
			      (unsigned long long)a->start_ns,
			      (unsigned long long)a->end_ns,
			      (unsigned long long)begin, (unsigned long long)end);
		if (a->op_id) {
			ck_assert_msg(in(seen.ops, seen.nops, a->op_id),
				      "%s linked to unknown op %llu", a->name,
				      (unsigned long long)a->op_id);
			linked_to_op++;
		}
		if (a->cast_id) {
			ck_assert(in(seen.casts, seen.ncasts, a->cast_id));
			linked_to_cast++;
		}
	}
	ck_assert_int_ge(kernels, 4); /* 2 casts, GEMM, softmax, sum */
	ck_assert_int_ge(linked_to_op, 3);
	ck_assert_int_eq(linked_to_cast, seen.ncasts);
	ck_assert_uint_eq(stats.dropped, 0);
	ck_assert_uint_eq(stats.kernels, (uint64_t)kernels);
	amp_tensor_free(p);
	amp_tensor_free(y);
	amp_tensor_free(w);
	amp_tensor_free(x);
	amp_tensor_free(hw);
	amp_tensor_free(hx);
}
END_TEST

static Suite *cuda_suite(void)
{
	Suite *s = suite_create("cuda");
	TCase *tc = tcase_create("kernels");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_cases, 0, (int)cuda_case_count);
	tcase_add_loop_test(tc, test_gemm_against_f64, 0, 15);
	tcase_add_loop_test(tc, test_casts_bit_exact, 0, 2);
	tcase_add_test(tc, test_scaler);
	tcase_add_test(tc, test_value_stats);
	suite_add_tcase(s, tc);
	tc = tcase_create("cupti");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_cupti_links_kernels);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* NVTX on (no tool attached: the calls are no-ops, the code runs) */
	setenv("AMP_NVTX", "1", 0);
	if (amp_cuda_is_emulated()) {
		printf("SKIP: no GPU: device cuda is %s\n", amp_cuda_backend_status());
		return 77;
	}
	printf("device %s\n", amp_cuda_backend_status());
	SRunner *sr = srunner_create(cuda_suite());
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
