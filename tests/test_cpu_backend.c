/* The CPU backend's speed machinery, checked for results: the GEMM engine
 * choice (OpenBLAS core re-selection, amp_backend_info, bf16 products on
 * the bf16 engine against the widened f32 product), column-wise sums
 * against the transposed row sums they replace (same bits), the AVX-512
 * copies of the optimizer and unscale loops (vector bodies, not just the
 * short tails other suites reach), the blocked f16/bf16 elementwise
 * kernels against widen + f32 kernel + round (same bits, every pattern),
 * and the storage cache (reuse, alignment, size classes, cross-thread
 * frees, huge-page alignment). */
#include "amp.h"
#include "amp_train.h"
#include "amp_autograd.h"
#include "alloc.h"
#include "cpu/cpu_ops.h"

#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ GEMM */

START_TEST(test_wanted_core)
{
	/* OpenBLAS's SSE3 fallback on an AVX-512 CPU: re-chosen */
	ck_assert_str_eq(cpu_blas_wanted_core("Prescott", 2, false), "SkylakeX");
	ck_assert_str_eq(cpu_blas_wanted_core("Prescott", 2, true), "Cooperlake");
	ck_assert_str_eq(cpu_blas_wanted_core("Haswell", 2, false), "SkylakeX");
	ck_assert_str_eq(cpu_blas_wanted_core("Nehalem", 1, false), "Haswell");
	/* a core with the CPU's vector class, or better, stays */
	ck_assert_ptr_null(cpu_blas_wanted_core("SkylakeX", 2, true));
	ck_assert_ptr_null(cpu_blas_wanted_core("cooperlake", 2, true));
	ck_assert_ptr_null(cpu_blas_wanted_core("Zen", 1, false));
	ck_assert_ptr_null(cpu_blas_wanted_core("SkylakeX", 1, false));
	ck_assert_ptr_null(cpu_blas_wanted_core("Prescott", 0, false));
}
END_TEST

START_TEST(test_backend_info)
{
	const char *info = amp_backend_info();

	ck_assert_ptr_nonnull(strstr(info, "f32 gemm: "));
	ck_assert_ptr_nonnull(strstr(info, "bf16 gemm: "));
	/* the test environment sets no thread count: the default is 1 */
	ck_assert_msg(strstr(info, ", 1 thread;"), "%s", info);
	ck_assert_ptr_eq(info, amp_backend_info());
	/* AMP_BF16_GEMM=f32 (the cpu_backend_widened run) turns the bf16
	 * engine off */
	const char *choice = getenv("AMP_BF16_GEMM");
	if (choice && strcmp(choice, "f32") == 0) {
		ck_assert_msg(strstr(info, "widened to f32 (AMP_BF16_GEMM=f32)"),
			      "%s", info);
		ck_assert(!cpu_gemm_bf16_wanted(512, 512, 512));
	}
}
END_TEST

/* Runs body() in a child process of its own (so that its first product
 * or allocation is the process's first) with `name`=`value` in its
 * environment; the child must exit 0.  Returns its stderr in text. */
static void child_stderr(const char *name, const char *value,
			 bool (*body)(void), char *text, size_t size)
{
	char path[] = "/tmp/amp_child_XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	fflush(stderr);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		setenv(name, value, 1);
		dup2(fd, STDERR_FILENO);
		_exit(body() ? 0 : 1);
	}
	int status = 0;
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ssize_t got = pread(fd, text, size - 1, 0);
	close(fd);
	text[got > 0 ? got : 0] = '\0';
}

static bool f32_product(void)
{
	int64_t shape[2] = { 4, 4 };
	amp_tensor *a = amp_full(2, shape, 1.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *p = amp_mm(a, a);
	return p && amp_tensor_dtype(p) == AMP_DTYPE_F32;
}

/* AMP_VERBOSE=1 names the engines at the first product, whatever its
 * dtype: an f32-only program once printed nothing (only bf16 products
 * loaded the engines). */
START_TEST(test_verbose_at_first_f32_product)
{
	char text[1024];

	child_stderr("AMP_VERBOSE", "1", f32_product, text, sizeof text);
	ck_assert_msg(strstr(text, "libamp: f32 gemm: "), "stderr: %s", text);
}
END_TEST

static amp_tensor *random_matrix(int64_t rows, int64_t cols,
				 enum amp_dtype dtype)
{
	int64_t shape[2] = { rows, cols };
	amp_tensor *f = amp_randn(2, shape, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *t = amp_to(f, dtype);

	amp_tensor_free(f);
	return t;
}

static float *values_of(amp_tensor *t)
{
	size_t n = (size_t)amp_tensor_numel(t);
	float *v = malloc(n * sizeof *v);

	ck_assert_int_eq(amp_tensor_read(t, AMP_DTYPE_F32, v, n), AMP_OK);
	return v;
}

/* a (m, k) @ b (k, n) in bf16, big enough for the bf16 engine, against
 * the same bf16 values widened and multiplied in f32: the products are
 * exact either way, only the summation order may differ, so the bf16
 * results agree to within one bf16 rounding step. */
static void check_bf16_product(bool transposed_b)
{
	const int64_t m = 96, k = 80, n = 72;
	amp_manual_seed(7);
	amp_tensor *a = random_matrix(m, k, AMP_DTYPE_BF16);
	amp_tensor *bt = random_matrix(n, k, AMP_DTYPE_BF16);
	amp_tensor *view = amp_t(bt);
	amp_tensor *b = transposed_b ? amp_tensor_ref(view) : amp_contiguous(view);
	ck_assert(cpu_gemm_bf16_wanted(m, n, k) || !strstr(amp_backend_info(),
							    "oneDNN"));
	amp_tensor *got = amp_mm(a, b);
	amp_tensor *a32 = amp_to(a, AMP_DTYPE_F32), *b32 = amp_to(b, AMP_DTYPE_F32);
	amp_tensor *want = amp_mm(a32, b32);
	ck_assert_int_eq(amp_tensor_dtype(got), AMP_DTYPE_BF16);
	float *g = values_of(got), *w = values_of(want);
	for (int64_t i = 0; i < m * n; i++)
		ck_assert_msg(fabsf(g[i] - w[i]) <= fabsf(w[i]) * 0x1p-7f + 1e-4f,
			      "element %lld: %g, f32 product %g", (long long)i,
			      g[i], w[i]);
	free(g);
	free(w);
	amp_tensor_free(want);
	amp_tensor_free(got);
	amp_tensor_free(a32);
	amp_tensor_free(b32);
	amp_tensor_free(a);
	amp_tensor_free(b);
	amp_tensor_free(view);
	amp_tensor_free(bt);
}

START_TEST(test_bf16_product)
{
	check_bf16_product(false);
	check_bf16_product(true);
}
END_TEST

/* The bf16 engine's OpenMP thread count is set for its product only: the
 * program's own OpenMP regions on this thread keep the count it chose.
 * (Without AVX512_BF16 or oneDNN no OpenMP runtime is touched and the
 * count stays trivially.) */
START_TEST(test_bf16_product_keeps_omp_threads)
{
	void *gomp = dlopen("libgomp.so.1", RTLD_NOW);
	/* no OpenMP runtime: oneDNN (which needs one) cannot run either */
	ck_assert(gomp || !strstr(amp_backend_info(), "oneDNN"));
	if (!gomp)
		return;
	void (*set)(int) = (void (*)(int))dlsym(gomp, "omp_set_num_threads");
	int (*get)(void) = (int (*)(void))dlsym(gomp, "omp_get_max_threads");
	ck_assert(set && get);
	set(3);
	amp_tensor *a = random_matrix(128, 128, AMP_DTYPE_BF16);
	amp_tensor *p = amp_mm(a, a);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(get(), 3);
	amp_tensor_free(p);
	amp_tensor_free(a);
	/* no dlclose: unloading libgomp would orphan the thread state
	 * set() made (LeakSanitizer reports it from an unknown module) */
}
END_TEST

START_TEST(test_bf16_linear)
{
	amp_manual_seed(3);
	amp_tensor *x = random_matrix(64, 128, AMP_DTYPE_BF16);
	amp_tensor *w = random_matrix(96, 128, AMP_DTYPE_BF16);
	int64_t bias_shape[1] = { 96 };
	amp_tensor *bias = amp_full(1, bias_shape, 0.5, AMP_DTYPE_BF16,
				    AMP_DEVICE_CPU);
	amp_tensor *got = amp_linear(x, w, bias);
	amp_tensor *x32 = amp_to(x, AMP_DTYPE_F32), *w32 = amp_to(w, AMP_DTYPE_F32);
	amp_tensor *b32 = amp_to(bias, AMP_DTYPE_F32);
	amp_tensor *want = amp_linear(x32, w32, b32);
	float *g = values_of(got), *v = values_of(want);
	for (int i = 0; i < 64 * 96; i++)
		ck_assert_msg(fabsf(g[i] - v[i]) <= fabsf(v[i]) * 0x1p-7f + 1e-4f,
			      "element %d: %g, f32 linear %g", i, g[i], v[i]);
	free(g);
	free(v);
	amp_tensor *all[] = { x, w, bias, got, x32, w32, b32, want };
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		amp_tensor_free(all[i]);
}
END_TEST

/* ------------------------------------------------------------------ sums */

/* sum / mean over the leading dims of a contiguous tensor give the bits
 * of the same reduction over the trailing dims of its transpose. */
static void check_column_sums(enum amp_dtype dtype, int64_t rows, int64_t cols,
			      bool mean)
{
	amp_manual_seed(11);
	amp_tensor *x = random_matrix(rows, cols, dtype);
	amp_tensor *view = amp_t(x);
	amp_tensor *xt = amp_contiguous(view);
	int64_t lead = 0, trail = 1;
	amp_tensor *got = mean ? amp_mean_dim(x, 1, &lead, false, AMP_DTYPE_NONE)
			       : amp_sum_dim(x, 1, &lead, false, AMP_DTYPE_NONE);
	amp_tensor *want = mean ? amp_mean_dim(xt, 1, &trail, false, AMP_DTYPE_NONE)
				: amp_sum_dim(xt, 1, &trail, false, AMP_DTYPE_NONE);
	ck_assert_int_eq(amp_tensor_ndim(got), 1);
	ck_assert_int_eq(amp_tensor_shape(got)[0], cols);
	double *g = malloc((size_t)cols * sizeof *g), *w = malloc((size_t)cols * sizeof *w);
	amp_tensor_read(got, AMP_DTYPE_F64, g, (size_t)cols);
	amp_tensor_read(want, AMP_DTYPE_F64, w, (size_t)cols);
	for (int64_t c = 0; c < cols; c++)
		ck_assert_msg(memcmp(&g[c], &w[c], sizeof g[c]) == 0,
			      "%s column %lld: %.17g, row-wise %.17g",
			      amp_dtype_name(dtype), (long long)c, g[c], w[c]);
	free(g);
	free(w);
	amp_tensor_free(got);
	amp_tensor_free(want);
	amp_tensor_free(xt);
	amp_tensor_free(view);
	amp_tensor_free(x);
}

START_TEST(test_column_sums)
{
	/* past the 256-row leaf and the 256-column block, ragged both ways
	 * (bf16 rows are widened as they are read) */
	check_column_sums(AMP_DTYPE_F32, 1000, 70, false);
	check_column_sums(AMP_DTYPE_F32, 7, 3, true);
	check_column_sums(AMP_DTYPE_BF16, 300, 129, false);
	check_column_sums(AMP_DTYPE_BF16, 300, 600, true);
	check_column_sums(AMP_DTYPE_F32, 9, 531, false);
	check_column_sums(AMP_DTYPE_F64, 513, 65, true);
}
END_TEST

START_TEST(test_column_sums_keepdim)
{
	int64_t shape[3] = { 4, 5, 6 }, dims[2] = { 0, 1 };
	amp_tensor *x = amp_full(3, shape, 1.5, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *s = amp_sum_dim(x, 2, dims, true, AMP_DTYPE_NONE);
	float v[6];

	ck_assert_int_eq(amp_tensor_ndim(s), 3);
	ck_assert_int_eq(amp_tensor_shape(s)[0], 1);
	ck_assert_int_eq(amp_tensor_shape(s)[1], 1);
	ck_assert_int_eq(amp_tensor_shape(s)[2], 6);
	amp_tensor_read(s, AMP_DTYPE_F32, v, 6);
	for (int i = 0; i < 6; i++)
		ck_assert_float_eq(v[i], 30.0f);
	amp_tensor_free(s);
	amp_tensor_free(x);
}
END_TEST

/* ------------------------------------------------------- wide loops */

#define WIDE 1003 /* vector bodies and a ragged tail */

static amp_tensor *ramp(double scale)
{
	float v[WIDE];
	int64_t shape[1] = { WIDE };

	for (int i = 0; i < WIDE; i++)
		v[i] = (float)((i - 500) * scale);
	return amp_from_data(1, shape, AMP_DTYPE_F32, AMP_DEVICE_CPU, v);
}

START_TEST(test_wide_add)
{
	amp_tensor *x = ramp(0.25), *a = ramp(-0.125);
	float got[WIDE];

	ck_assert_int_eq(amp_add_(x, a, 0.5), AMP_OK);
	amp_tensor_read(x, AMP_DTYPE_F32, got, WIDE);
	for (int i = 0; i < WIDE; i++) {
		float want = (float)((i - 500) * 0.25) +
			     0.5f * (float)((i - 500) * -0.125);
		ck_assert_msg(got[i] == want, "x[%d] = %g, want %g", i, got[i],
			      want);
	}
	amp_tensor_free(x);
	amp_tensor_free(a);
}
END_TEST

/* unscale over a long gradient: every element multiplied, and an inf or
 * a NaN found wherever it sits */
static bool unscale_finds(int bad_index, float bad_value)
{
	amp_tensor *g = ramp(1.0);
	int64_t one[1] = { 1 };
	amp_tensor *found = amp_zeros(1, one, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *inv = amp_full(1, one, 0.25, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	float v[WIDE], flag;

	amp_tensor_read(g, AMP_DTYPE_F32, v, WIDE);
	if (bad_index >= 0) {
		v[bad_index] = bad_value;
		amp_tensor_free(g);
		int64_t shape[1] = { WIDE };
		g = amp_from_data(1, shape, AMP_DTYPE_F32, AMP_DEVICE_CPU, v);
	}
	ck_assert_int_eq(amp_non_finite_check_and_unscale_(&g, 1, found, inv),
			 AMP_OK);
	amp_tensor_read(g, AMP_DTYPE_F32, v, WIDE);
	for (int i = 0; i < WIDE; i++)
		if (i != bad_index)
			ck_assert_float_eq(v[i], (float)(i - 500) * 0.25f);
	amp_tensor_read(found, AMP_DTYPE_F32, &flag, 1);
	amp_tensor_free(g);
	amp_tensor_free(found);
	amp_tensor_free(inv);
	return flag == 1.0f;
}

START_TEST(test_wide_unscale)
{
	ck_assert(!unscale_finds(-1, 0));
	ck_assert(unscale_finds(517, INFINITY));
	ck_assert(unscale_finds(16, -INFINITY));
	ck_assert(unscale_finds(WIDE - 1, NAN));
	ck_assert(unscale_finds(0, NAN));
}
END_TEST

/* ---------------------------------------------------- blocked kernels */

/* Every 16-bit pattern, then random ones past a multiple of CPU_BLOCK. */
#define PATTERNS (65536 + 2 * CPU_BLOCK + 77)

static amp_tensor *patterns(enum amp_dtype dtype, unsigned seed)
{
	uint16_t *bits = malloc(PATTERNS * sizeof *bits);
	int64_t shape[1] = { PATTERNS };

	srand(seed);
	for (int i = 0; i < PATTERNS; i++)
		bits[i] = (uint16_t)(seed == 0 && i < 65536 ? i : rand());
	amp_tensor *t = amp_from_data(1, shape, dtype, AMP_DEVICE_CPU, bits);
	free(bits);
	return t;
}

static void assert_same_bits(amp_tensor *got, amp_tensor *want,
			     const char *what)
{
	uint16_t *g = malloc(PATTERNS * sizeof *g), *w = malloc(PATTERNS * sizeof *w);

	ck_assert_int_eq(amp_tensor_dtype(got), amp_tensor_dtype(want));
	amp_tensor_read(got, amp_tensor_dtype(got), g, PATTERNS);
	amp_tensor_read(want, amp_tensor_dtype(want), w, PATTERNS);
	for (int i = 0; i < PATTERNS; i++)
		ck_assert_msg(g[i] == w[i], "%s %s element %d: 0x%04x, widened "
			      "0x%04x", amp_dtype_name(amp_tensor_dtype(got)),
			      what, i, g[i], w[i]);
	free(g);
	free(w);
}

/* relu(x) and its backward (threshold_backward) on f16/bf16 run blocked;
 * the old path, widening whole tensors, is spelled out as the reference.
 * NaNs, infinities, signed zeros and subnormals are all among the
 * patterns. */
static void check_blocked(enum amp_dtype dtype)
{
	amp_tensor *x = patterns(dtype, 0), *grad = patterns(dtype, 1);
	amp_tensor *x32 = amp_to(x, AMP_DTYPE_F32);
	amp_tensor *grad32 = amp_to(grad, AMP_DTYPE_F32);
	amp_tensor *relu = amp_relu(x), *relu32 = amp_relu(x32);
	amp_tensor *want = amp_to(relu32, dtype);
	assert_same_bits(relu, want, "relu");

	amp_tensor *leaf = amp_detach(x), *leaf32 = amp_detach(x32);
	amp_tensor_set_requires_grad(leaf, true);
	amp_tensor_set_requires_grad(leaf32, true);
	amp_tensor *y = amp_relu(leaf), *y32 = amp_relu(leaf32);
	ck_assert_int_eq(amp_backward(y, grad, false, false), AMP_OK);
	ck_assert_int_eq(amp_backward(y32, grad32, false, false), AMP_OK);
	amp_tensor *back = amp_to(amp_tensor_grad(leaf32), dtype);
	assert_same_bits(amp_tensor_grad(leaf), back, "threshold_backward");
	amp_tensor *all[] = { x, grad, x32, grad32, relu, relu32, want,
			      leaf, leaf32, y, y32, back };
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		amp_tensor_free(all[i]);
}

START_TEST(test_blocked_bf16)
{
	check_blocked(AMP_DTYPE_BF16);
}
END_TEST

START_TEST(test_blocked_f16)
{
	check_blocked(AMP_DTYPE_F16);
}
END_TEST

/* ---------------------------------------------------------------- cache */

/* Blocks of 2 MiB and more start on a 2 MiB boundary (huge pages). */
START_TEST(test_cache_huge_alignment)
{
	size_t sizes[] = { (size_t)2 << 20, ((size_t)5 << 20) + 64,
			   (size_t)80 << 20 };

	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		char *p = amp_host_alloc(sizes[i]);
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % ((size_t)2 << 20), 0);
		p[0] = 1;
		p[sizes[i] - 1] = 2;
		amp_host_free(p, sizes[i]);
	}
	void *small = amp_host_alloc(((size_t)2 << 20) - 64);
	ck_assert_uint_eq((uintptr_t)small % 64, 0);
	amp_host_free(small, ((size_t)2 << 20) - 64);
}
END_TEST

START_TEST(test_cache_reuses_blocks)
{
	void *a = amp_host_alloc(1000);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq((uintptr_t)a % 64, 0);
	memset(a, 0xab, 1000);
	amp_host_free(a, 1000);
	/* 1000 and 1010 share a class; the block comes back */
	void *b = amp_host_alloc(1010);
	ck_assert_ptr_eq(a, b);
	memset(b, 0xcd, 1010);
	/* a size of another class does not get it */
	amp_host_free(b, 1010);
	void *c = amp_host_alloc(4000);
	ck_assert_ptr_ne(c, b);
	memset(c, 0, 4000);
	amp_host_free(c, 4000);
	void *d = amp_host_alloc(1000);
	ck_assert_ptr_eq(d, b);
	amp_host_free(d, 1000);
	/* beyond the largest class: plain allocations, still aligned */
	size_t big = (size_t)80 << 20;
	void *e = amp_host_alloc(big);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq((uintptr_t)e % 64, 0);
	amp_host_free(e, big);
	amp_host_free(NULL, 100);
}
END_TEST

static void *free_elsewhere(void *block)
{
	amp_host_free(block, 5000);
	/* this thread's cache took it; the thread's exit releases it */
	void *again = amp_host_alloc(5000);
	bool reused = again == block;
	amp_host_free(again, 5000);
	return (void *)(uintptr_t)reused;
}

START_TEST(test_cache_cross_thread)
{
	void *block = amp_host_alloc(5000);
	pthread_t thread;
	void *reused;

	ck_assert_int_eq(pthread_create(&thread, NULL, free_elsewhere, block), 0);
	ck_assert_int_eq(pthread_join(thread, &reused), 0);
	ck_assert(reused != NULL);
}
END_TEST

static bool host_alloc_round_trip(void)
{
	void *block = amp_host_alloc(1000);

	amp_host_free(block, 1000);
	return block != NULL;
}

/* A bad AMP_ALLOC_CACHE_MB is a warning, not silently the default (and a
 * huge one no longer wraps around to a small limit). */
START_TEST(test_cache_limit_warnings)
{
	static const char *const bad[] = { "abc", "-1", "64k",
					   "99999999999999999999",
					   "17592186044416" };
	char text[1024];

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		child_stderr("AMP_ALLOC_CACHE_MB", bad[i], host_alloc_round_trip,
			     text, sizeof text);
		ck_assert_msg(strstr(text, "ignoring AMP_ALLOC_CACHE_MB="),
			      "%s: stderr: %s", bad[i], text);
	}
	child_stderr("AMP_ALLOC_CACHE_MB", "0", host_alloc_round_trip, text,
		     sizeof text);
	ck_assert_str_eq(text, "");
}
END_TEST

START_TEST(test_tensors_use_the_cache)
{
	int64_t shape[2] = { 33, 17 };
	amp_tensor *t = amp_zeros(2, shape, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	float v[33 * 17];

	amp_tensor_free(t);
	/* a recycled block must not leak old values into zeros() */
	t = amp_full(2, shape, 3.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor_free(t);
	t = amp_zeros(2, shape, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor_read(t, AMP_DTYPE_F32, v, 33 * 17);
	for (int i = 0; i < 33 * 17; i++)
		ck_assert_float_eq(v[i], 0.0f);
	amp_tensor_free(t);
}
END_TEST

static Suite *cpu_backend_suite(void)
{
	Suite *s = suite_create("cpu_backend");
	TCase *gemm = tcase_create("gemm");
	TCase *sums = tcase_create("sums");
	TCase *wide = tcase_create("wide loops");
	TCase *cache = tcase_create("cache");
	TCase *blocked = tcase_create("blocked");

	tcase_add_test(gemm, test_wanted_core);
	tcase_add_test(gemm, test_backend_info);
	tcase_add_test(gemm, test_verbose_at_first_f32_product);
	tcase_add_test(gemm, test_bf16_product);
	tcase_add_test(gemm, test_bf16_linear);
	tcase_add_test(gemm, test_bf16_product_keeps_omp_threads);
	tcase_add_test(sums, test_column_sums);
	tcase_add_test(sums, test_column_sums_keepdim);
	tcase_add_test(wide, test_wide_add);
	tcase_add_test(wide, test_wide_unscale);
	tcase_add_test(blocked, test_blocked_bf16);
	tcase_add_test(blocked, test_blocked_f16);
	tcase_add_test(cache, test_cache_reuses_blocks);
	tcase_add_test(cache, test_cache_huge_alignment);
	tcase_add_test(cache, test_cache_cross_thread);
	tcase_add_test(cache, test_tensors_use_the_cache);
	tcase_add_test(cache, test_cache_limit_warnings);
	suite_add_tcase(s, gemm);
	suite_add_tcase(s, sums);
	suite_add_tcase(s, wide);
	suite_add_tcase(s, blocked);
	suite_add_tcase(s, cache);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(cpu_backend_suite());

	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
