/* The CUDA backend's checks that need no GPU, run everywhere:
 *   - CUPTI record -> event conversion on records built in memory from
 *     cupti_activity.h, and the CUPTI clock -> trace clock mapping;
 *   - the row-major -> cuBLAS GEMM mapping against a column-major
 *     reference;
 *   - the built module: its undefined symbols resolve against cudart,
 *     cuBLAS, CUPTI and glibc only, it exports one symbol, and without a
 *     GPU its init fails with a reason instead of crashing;
 *   - the loader, in child processes: no driver, AMP_CUDA_DISABLE,
 *     AMP_CUDA_VERBOSE (one line, once), a stub driver, a missing module;
 *   - libamp's CUDA glue against a fake module (tests/cuda_fake.c): every
 *     op of tests/cuda_compare.c matches the CPU backend, with kernels and
 *     with the host-copy fallback, and autocast casts and ops push their
 *     ids for CUPTI.
 * Built by meson with AMP_TEST_HAVE_CUPTI when the CUDA headers exist and
 * AMP_TEST_CUDA_MODULE="path" when the module is built. */
#include "amp.h"
#include "amp_train.h"
#include "backend.h"
#include "cuda_compare.h"
#include "cuda_fake.h"
#include "gemm_map.h"
#include "test_scratch.h"

#include <check.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef AMP_TEST_HAVE_CUPTI
#include "cupti_convert.h"
#endif

/* ---------------------------------------------------------------- CUPTI */

#ifdef AMP_TEST_HAVE_CUPTI
static struct amp_cupti_converter *converter;

static void converter_setup(void)
{
	converter = malloc(sizeof *converter);
	ck_assert_ptr_nonnull(converter);
	amp_cupti_converter_init(converter, 0);
}

static void converter_teardown(void)
{
	free(converter);
}

static amp_cupti_kernel_record kernel(uint32_t correlation, uint64_t start,
				      uint64_t end, const char *name)
{
	amp_cupti_kernel_record k;

	memset(&k, 0, sizeof k);
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.correlationId = correlation;
	k.start = start;
	k.end = end;
	k.name = name;
	k.deviceId = 0;
	k.streamId = 7;
	k.gridX = 64;
	k.gridY = 2;
	k.gridZ = 1;
	k.blockX = 256;
	k.blockY = 1;
	k.blockZ = 1;
	k.registersPerThread = 32;
	k.staticSharedMemory = 128;
	k.dynamicSharedMemory = 1024;
	return k;
}

static CUpti_ActivityExternalCorrelation external(CUpti_ExternalCorrelationKind kind,
						  uint64_t id,
						  uint32_t correlation)
{
	CUpti_ActivityExternalCorrelation e;

	memset(&e, 0, sizeof e);
	e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
	e.externalKind = kind;
	e.externalId = id;
	e.correlationId = correlation;
	return e;
}

static CUpti_ActivityAPI runtime_call(uint32_t correlation)
{
	CUpti_ActivityAPI a;

	memset(&a, 0, sizeof a);
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.correlationId = correlation;
	a.start = 900;
	a.end = 950;
	return a;
}

/* A copy made by the runtime call `runtime` through the driver call
 * `driver` (the ids CUPTI gives them), 4096 bytes from 100 to 200 ns. */
static amp_cupti_memcpy_record copy_record(uint8_t copy_kind, uint32_t runtime,
					   uint32_t driver)
{
	amp_cupti_memcpy_record m;

	memset(&m, 0, sizeof m);
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = copy_kind;
	m.bytes = 4096;
	m.start = 100;
	m.end = 200;
	m.runtimeCorrelationId = runtime;
	m.correlationId = driver;
	return m;
}

#define RECORD(r) ((const CUpti_Activity *)&(r))
#define OP CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0
#define CAST CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1

START_TEST(test_cupti_kernel_linked_to_op)
{
	CUpti_ActivityExternalCorrelation e = external(OP, 42, 7);
	CUpti_ActivityAPI api = runtime_call(7);
	amp_cupti_kernel_record k = kernel(7, 1000, 2500, "gemm_kernel");
	const CUpti_Activity *records[] = { RECORD(e), RECORD(api), RECORD(k) };
	struct amp_gpu_activity out[3];

	ck_assert_uint_eq(amp_cupti_convert(converter, records, 3, out), 1);
	ck_assert_int_eq(out[0].kind, AMP_GPU_ACTIVITY_KERNEL);
	ck_assert_str_eq(out[0].name, "gemm_kernel");
	ck_assert_uint_eq(out[0].op_id, 42);
	ck_assert_uint_eq(out[0].cast_id, 0);
	ck_assert_uint_eq(out[0].start_ns, 1000);
	ck_assert_uint_eq(out[0].end_ns, 2500);
	ck_assert_uint_eq(out[0].correlation_id, 7);
	ck_assert_uint_eq(out[0].stream, 7);
	ck_assert_int_eq(out[0].grid[0], 64);
	ck_assert_int_eq(out[0].grid[1], 2);
	ck_assert_int_eq(out[0].block[0], 256);
	ck_assert_int_eq(out[0].registers, 32);
	ck_assert_int_eq(out[0].shared_memory, 1152);
	ck_assert_uint_eq(converter->stats.kernels, 1);
	ck_assert_uint_eq(converter->stats.unlinked, 0);
}
END_TEST

/* The external record may come after the kernel in the same buffer. */
START_TEST(test_cupti_link_order_in_batch)
{
	amp_cupti_kernel_record k = kernel(9, 10, 20, "k");
	CUpti_ActivityExternalCorrelation e = external(OP, 5, 9);
	const CUpti_Activity *records[] = { RECORD(k), RECORD(e) };
	struct amp_gpu_activity out[2];

	ck_assert_uint_eq(amp_cupti_convert(converter, records, 2, out), 1);
	ck_assert_uint_eq(out[0].op_id, 5);
}
END_TEST

/* Links outlive their buffer: the kernel completes in a later one. */
START_TEST(test_cupti_link_across_batches)
{
	CUpti_ActivityExternalCorrelation e = external(OP, 77, 100);
	amp_cupti_kernel_record k = kernel(100, 10, 20, "k");
	const CUpti_Activity *first[] = { RECORD(e) };
	const CUpti_Activity *second[] = { RECORD(k) };
	struct amp_gpu_activity out[1];

	ck_assert_uint_eq(amp_cupti_convert(converter, first, 1, out), 0);
	ck_assert_uint_eq(amp_cupti_convert(converter, second, 1, out), 1);
	ck_assert_uint_eq(out[0].op_id, 77);
}
END_TEST

/* An autocast cast kernel carries both its op and its cast (result id). */
START_TEST(test_cupti_cast_and_op)
{
	CUpti_ActivityExternalCorrelation op = external(OP, 12, 3);
	CUpti_ActivityExternalCorrelation cast = external(CAST, 4001, 3);
	amp_cupti_kernel_record k = kernel(3, 10, 20, "cast_contiguous_kernel");
	amp_cupti_kernel_record other = kernel(4, 30, 40, "other");
	const CUpti_Activity *records[] = { RECORD(op), RECORD(cast), RECORD(k),
					    RECORD(other) };
	struct amp_gpu_activity out[4];

	ck_assert_uint_eq(amp_cupti_convert(converter, records, 4, out), 2);
	ck_assert_uint_eq(out[0].op_id, 12);
	ck_assert_uint_eq(out[0].cast_id, 4001);
	ck_assert_uint_eq(out[1].op_id, 0);
	ck_assert_uint_eq(out[1].cast_id, 0);
	ck_assert_uint_eq(converter->stats.unlinked, 1);
}
END_TEST

/* The value checks' reductions run inside the op they check: pushed as
 * amptrace's own work, their kernels and copies are not the op's. */
START_TEST(test_cupti_own_work_left_out)
{
	CUpti_ActivityExternalCorrelation op = external(OP, 42, 7);
	CUpti_ActivityExternalCorrelation own = external(OP, AMP_GPU_OWN_WORK, 8);
	CUpti_ActivityExternalCorrelation own_copy =
		external(OP, AMP_GPU_OWN_WORK, 9);
	amp_cupti_kernel_record gemm = kernel(7, 10, 20, "gemm_kernel");
	amp_cupti_kernel_record reduce = kernel(8, 30, 40, "reduce_kernel");
	amp_cupti_memcpy_record read =
		copy_record(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 9, 10);
	const CUpti_Activity *records[] = { RECORD(op), RECORD(own),
					    RECORD(own_copy), RECORD(gemm),
					    RECORD(reduce), RECORD(read) };
	struct amp_gpu_activity out[6];

	ck_assert_uint_eq(amp_cupti_convert(converter, records, 6, out), 1);
	ck_assert_str_eq(out[0].name, "gemm_kernel");
	ck_assert_uint_eq(out[0].op_id, 42);
	ck_assert_uint_eq(converter->stats.own, 2);
	ck_assert_uint_eq(converter->stats.kernels, 1);
	ck_assert_uint_eq(converter->stats.memcpys, 0);
	ck_assert_uint_eq(converter->stats.unlinked, 0);
}
END_TEST

START_TEST(test_cupti_untimed_and_other_kinds)
{
	amp_cupti_kernel_record untimed = kernel(1, 0, 0, "untimed");
	amp_cupti_kernel_record serial = kernel(2, 5, 6, "serial");
	CUpti_ActivityAPI api = runtime_call(2);
	const CUpti_Activity *records[] = { RECORD(untimed), RECORD(api),
					    RECORD(serial) };
	struct amp_gpu_activity out[3];

	serial.kind = CUPTI_ACTIVITY_KIND_KERNEL; /* the serialising kind */
	ck_assert_uint_eq(amp_cupti_convert(converter, records, 3, out), 1);
	ck_assert_str_eq(out[0].name, "serial");
	ck_assert_uint_eq(converter->stats.untimed, 1);
	ck_assert_uint_eq(converter->stats.kernels, 1);
}
END_TEST

START_TEST(test_cupti_memcpy)
{
	CUpti_ActivityExternalCorrelation runtime = external(OP, 21, 50);
	CUpti_ActivityExternalCorrelation driver = external(OP, 22, 61);
	/* cudaMemcpy (50), which we pushed around, and its driver call (51) */
	amp_cupti_memcpy_record h2d =
		copy_record(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 50, 51);
	/* not linked by the runtime's id (60): the driver's (61) is */
	amp_cupti_memcpy_record d2h =
		copy_record(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 60, 61);
	const CUpti_Activity *records[] = { RECORD(runtime), RECORD(driver),
					    RECORD(h2d), RECORD(d2h) };
	struct amp_gpu_activity out[4];

	ck_assert_uint_eq(amp_cupti_convert(converter, records, 4, out), 2);
	ck_assert_int_eq(out[0].kind, AMP_GPU_ACTIVITY_MEMCPY);
	ck_assert_str_eq(out[0].name, "Memcpy HtoD");
	ck_assert_uint_eq(out[0].bytes, 4096);
	ck_assert_uint_eq(out[0].op_id, 21);
	ck_assert_str_eq(out[1].name, "Memcpy DtoH");
	ck_assert_uint_eq(out[1].op_id, 22);
	ck_assert_uint_eq(converter->stats.memcpys, 2);
}
END_TEST

/* A slot reused by a later correlation id does not link the old one. */
START_TEST(test_cupti_slot_reuse)
{
	uint32_t later = 3 + AMP_CUPTI_LINK_SLOTS;
	CUpti_ActivityExternalCorrelation old = external(OP, 1, 3);
	CUpti_ActivityExternalCorrelation reuse = external(OP, 2, later);
	amp_cupti_kernel_record stale = kernel(later, 1, 2, "stale");
	amp_cupti_kernel_record fresh = kernel(later, 3, 4, "fresh");
	amp_cupti_kernel_record gone = kernel(3, 5, 6, "gone");
	const CUpti_Activity *first[] = { RECORD(old), RECORD(stale) };
	const CUpti_Activity *second[] = { RECORD(reuse), RECORD(fresh),
					   RECORD(gone) };
	struct amp_gpu_activity out[3];

	ck_assert_uint_eq(amp_cupti_convert(converter, first, 2, out), 1);
	ck_assert_uint_eq(out[0].op_id, 0);
	ck_assert_uint_eq(amp_cupti_convert(converter, second, 3, out), 2);
	ck_assert_uint_eq(out[0].op_id, 2);
	ck_assert_uint_eq(out[1].op_id, 0);
}
END_TEST

START_TEST(test_cupti_launching_calls)
{
	/* as cuptiGetCallbackName spells them */
	const char *launching[] = {
		"cudaLaunchKernel_v7000", "cudaLaunchKernelExC_ptsz_v11060",
		"cudaGraphLaunch_v10000", "cudaMemcpyAsync_v3020",
		"cuLaunchKernel", "cuLaunchKernelEx", "cuMemcpyDtoHAsync_v2",
		"cuGraphLaunch_ptsz",
	};
	const char *others[] = {
		"cudaGetDevice_v3020", "cudaStreamIsCapturing_v10000",
		"cudaEventRecord_v3020", "cudaMemsetAsync_v3020",
		"cuCtxGetCurrent", "cuKernelGetAttribute", "cuMemAlloc_v2", "",
	};

	for (size_t i = 0; i < sizeof launching / sizeof *launching; i++)
		ck_assert_msg(amp_cupti_launches_work(launching[i]), "%s", launching[i]);
	for (size_t i = 0; i < sizeof others / sizeof *others; i++)
		ck_assert_msg(!amp_cupti_launches_work(others[i]), "%s", others[i]);
	ck_assert(!amp_cupti_launches_work(NULL));
}
END_TEST

START_TEST(test_clock_offset_tightest_sample)
{
	struct amp_clock_sample samples[] = {
		{ 100, 1000, 300 },  /* 200 ns wide */
		{ 500, 1300, 520 },  /* 20 ns wide: this one */
		{ 900, 1700, 800 },  /* inverted: ignored */
	};

	ck_assert_int_eq(amp_clock_offset(samples, 3), 510 - 1300);
	ck_assert_int_eq(amp_clock_offset(samples, 0), 0);
	ck_assert_int_eq(amp_clock_offset(samples + 2, 1), 0);
}
END_TEST

START_TEST(test_clock_map)
{
	ck_assert_uint_eq(amp_clock_map(-790, 0), 0);      /* no timestamp */
	ck_assert_uint_eq(amp_clock_map(-790, 500), 0);    /* clamped */
	ck_assert_uint_eq(amp_clock_map(-790, 2000), 1210);
	ck_assert_uint_eq(amp_clock_map(5, 10), 15);
	/* CLOCK_REALTIME (2024) onto CLOCK_MONOTONIC (an hour of uptime) */
	uint64_t realtime = 1700000000000000000ull, monotonic = 3600000000000ull;
	int64_t offset = (int64_t)(monotonic - realtime);
	ck_assert_uint_eq(amp_clock_map(offset, realtime + 1234), monotonic + 1234);
}
END_TEST

START_TEST(test_cupti_converter_applies_offset)
{
	amp_cupti_kernel_record k = kernel(1, 5000, 6000, "k");
	const CUpti_Activity *records[] = { RECORD(k) };
	struct amp_gpu_activity out[1];

	amp_cupti_converter_init(converter, -4000);
	ck_assert_uint_eq(amp_cupti_convert(converter, records, 1, out), 1);
	ck_assert_uint_eq(out[0].start_ns, 1000);
	ck_assert_uint_eq(out[0].end_ns, 2000);
}
END_TEST
#endif /* AMP_TEST_HAVE_CUPTI */

/* ----------------------------------------------------------------- GEMM */

/* cublasGemmEx on doubles, column-major: C = op(A) op(B). */
static void column_major_gemm(const struct amp_cublas_gemm *g, const double *a,
			      const double *b, double *c)
{
	for (int batch = 0; batch < g->batch; batch++)
		for (int i = 0; i < g->m; i++)
			for (int j = 0; j < g->n; j++) {
				double sum = 0.0;
				for (int l = 0; l < g->k; l++) {
					const double *pa = a + batch * g->stride_first;
					const double *pb = b + batch * g->stride_second;
					sum += (g->trans_first ? pa[l + i * g->ld_first]
							       : pa[i + l * g->ld_first]) *
					       (g->trans_second ? pb[j + l * g->ld_second]
								: pb[l + j * g->ld_second]);
				}
				c[batch * g->stride_c + i + j * g->ldc] = sum;
			}
}

/* Every transposition, padded leading dimensions and two batches: the
 * cuBLAS call computes the row-major product. */
START_TEST(test_gemm_mapping)
{
	const int64_t m = 3, n = 5, k = 4, pad = 2, batch = 2;
	bool trans_a = _i & 1, trans_b = _i & 2;
	/* stored shapes: A (m, k) or (k, m); B (k, n) or (n, k) */
	int64_t lda = (trans_a ? m : k) + pad, ldb = (trans_b ? k : n) + pad;
	int64_t stride_a = (trans_a ? k : m) * lda, stride_b = (trans_b ? n : k) * ldb;
	int64_t ldc = n + pad, stride_c = m * ldc;
	double a[2 * 64], b[2 * 64], c[2 * 64], expected[2][3][5];

	for (int i = 0; i < 2 * 64; i++) {
		a[i] = (i * 7 % 11) - 5.0;
		b[i] = (i * 5 % 13) - 6.0;
		c[i] = NAN;
	}
	for (int64_t p = 0; p < batch; p++)
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				double sum = 0.0;
				for (int64_t l = 0; l < k; l++)
					sum += a[p * stride_a + (trans_a ? l * lda + i : i * lda + l)] *
					       b[p * stride_b + (trans_b ? j * ldb + l : l * ldb + j)];
				expected[p][i][j] = sum;
			}
	struct amp_cuda_gemm g = {
		.dtype = AMP_DTYPE_F32, .trans_a = trans_a, .trans_b = trans_b,
		.m = m, .n = n, .k = k, .a = a, .lda = lda, .stride_a = stride_a,
		.b = b, .ldb = ldb, .stride_b = stride_b, .c = c, .ldc = ldc,
		.stride_c = stride_c, .batch = batch, .alpha = 1, .beta = 0,
	};
	struct amp_cublas_gemm cublas;
	ck_assert(amp_gemm_to_cublas(&g, &cublas));
	ck_assert_int_eq(cublas.batch, 2);
	ck_assert_ptr_eq(cublas.first, b); /* row-major C = A B: cuBLAS sees B A */
	column_major_gemm(&cublas, cublas.first, cublas.second, c);
	for (int64_t p = 0; p < batch; p++)
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++)
				ck_assert_double_eq(c[p * stride_c + i * ldc + j],
						    expected[p][i][j]);
}
END_TEST

START_TEST(test_gemm_mapping_int_range)
{
	struct amp_cuda_gemm g = { .m = (int64_t)1 << 31, .n = 1, .k = 1,
				   .lda = 1, .ldb = 1, .ldc = 1, .batch = 1 };
	struct amp_cublas_gemm cublas;

	ck_assert(!amp_gemm_to_cublas(&g, &cublas));
	g.m = 1;
	g.ldb = -1;
	ck_assert(!amp_gemm_to_cublas(&g, &cublas));
}
END_TEST

/* --------------------------------------------------------- the module */

/* Runs a command and returns its whole stdout (malloc'ed), or NULL. */
static char *command_output(const char *command)
{
	FILE *pipe = popen(command, "r");
	size_t used = 0, size = 4096;
	char *text = malloc(size);

	if (!pipe || !text) {
		if (pipe)
			pclose(pipe);
		free(text);
		return NULL;
	}
	for (size_t got; (got = fread(text + used, 1, size - used - 1, pipe)) > 0;) {
		used += got;
		if (used + 1 == size) {
			char *bigger = realloc(text, size * 2);
			if (!bigger)
				break;
			text = bigger;
			size *= 2;
		}
	}
	text[used] = '\0';
	if (pclose(pipe) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

static bool has_prefix(const char *text, const char *prefix)
{
	return strncmp(text, prefix, strlen(prefix)) == 0;
}

#ifdef AMP_TEST_CUDA_MODULE
/* Symbols and libraries -Db_sanitize adds to every target. */
static bool sanitizer_runtime(const char *name)
{
	return has_prefix(name, "__asan") || has_prefix(name, "__odr_asan") ||
	       has_prefix(name, "__ubsan") || has_prefix(name, "__lsan") ||
	       has_prefix(name, "__sanitizer") || has_prefix(name, "libasan") ||
	       has_prefix(name, "libubsan") || has_prefix(name, "[libasan") ||
	       has_prefix(name, "[libubsan");
}

/* Every undefined symbol is versioned by glibc, cudart, cuBLAS or CUPTI
 * (or a weak glibc hook); no C++ runtime. */
START_TEST(test_module_undefined_symbols)
{
	static const char *allowed[] = { "GLIBC_", "libcudart.so", "libcublas.so",
					 "libcupti.so" };
	char *out = command_output("nm -D --undefined-only " AMP_TEST_CUDA_MODULE);
	int checked = 0;

	ck_assert_msg(out, "nm failed on %s", AMP_TEST_CUDA_MODULE);
	/* a sanitizer runtime interposes libc functions: unversioned then */
	bool sanitized = strstr(out, "__asan_init") || strstr(out, "__ubsan_");
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		char type, name[256];
		ck_assert_int_eq(sscanf(line, " %c %255s", &type, name), 2);
		ck_assert_msg(!has_prefix(name, "_Z") && !strstr(name, "__gxx") &&
				      !strstr(name, "__cxa_guard"),
			      "C++ runtime symbol %s", name);
		checked++;
		if (type == 'w' || sanitizer_runtime(name))
			continue; /* __gmon_start__, _ITM_*: optional hooks */
		const char *version = strchr(name, '@');
		bool ok = sanitized && !version;
		for (size_t i = 0; version && i < sizeof allowed / sizeof *allowed; i++)
			ok = ok || has_prefix(version + 1, allowed[i]) ||
			     (version[1] == '@' && has_prefix(version + 2, allowed[i]));
		ck_assert_msg(ok, "%s is not from glibc, cudart, cuBLAS or CUPTI", name);
	}
	ck_assert_int_gt(checked, 10);
	free(out);
}
END_TEST

START_TEST(test_module_exports_one_symbol)
{
	char *out = command_output("nm -D --defined-only " AMP_TEST_CUDA_MODULE);
	int count = 0;

	ck_assert_ptr_nonnull(out);
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		char address[32], type, name[256];
		ck_assert_int_eq(sscanf(line, "%31s %c %255s", address, &type, name), 3);
		if (sanitizer_runtime(name))
			continue;
		ck_assert_str_eq(name, AMP_CUDA_MODULE_SYMBOL);
		count++;
	}
	ck_assert_int_eq(count, 1);
	free(out);
}
END_TEST

START_TEST(test_module_needed_libraries)
{
	static const char *allowed[] = { "libcudart.so", "libcublas.so",
					 "libcupti.so", "libc.so", "libm.so",
					 "libdl.so", "libpthread.so", "librt.so",
					 "ld-linux" };
	char *out = command_output("readelf -d " AMP_TEST_CUDA_MODULE);
	int needed = 0;

	ck_assert_ptr_nonnull(out);
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		const char *open = strstr(line, "(NEEDED)");
		if (!open || !(open = strchr(open, '[')))
			continue;
		bool ok = sanitizer_runtime(open);
		for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
			ok = ok || has_prefix(open + 1, allowed[i]);
		ck_assert_msg(ok, "unexpected dependency %s", open);
		needed++;
	}
	ck_assert_int_ge(needed, 3);
	free(out);
}
END_TEST

/* Loaded directly: without a GPU init says why; kernels then fail with a
 * message rather than crash.  With a GPU, init succeeds. */
START_TEST(test_module_init_without_gpu)
{
	void *handle = dlopen(AMP_TEST_CUDA_MODULE, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(handle, "dlopen: %s", dlerror());
	const struct amp_cuda_module *m = dlsym(handle, AMP_CUDA_MODULE_SYMBOL);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->version, AMP_CUDA_MODULE_VERSION);
	ck_assert_uint_eq(m->size, sizeof(struct amp_cuda_module));
	ck_assert_ptr_nonnull(strstr(m->build, "sm_"));
	struct amp_cuda_device_info info;
	char message[512] = "";
	if (m->init(&info, message, sizeof message) == 0) {
		ck_assert_str_ne(info.name, "");
		return; /* a GPU: tests/test_cuda.c takes over */
	}
	ck_assert_msg(strstr(message, "cuda") || strstr(message, "CUDA"),
		      "unhelpful reason: %s", message);
	struct amp_cuda_shape shape = { .ndim = 1, .size = { 4 } };
	int64_t strides[1] = { 1 };
	ck_assert_int_eq(m->unary(AMP_CUDA_UNARY_EXP, (void *)0x1000,
				  (void *)0x2000, AMP_DTYPE_F32, &shape, strides,
				  0.0f),
			 -1);
	ck_assert_str_ne(m->error(), "");
	ck_assert_ptr_null(m->alloc(64));
	ck_assert_int_ne(m->profiler_start(NULL, NULL), 0);
	ck_assert_str_ne(m->error(), "");
}
END_TEST
#endif /* AMP_TEST_CUDA_MODULE */

/* ------------------------------------------------------------- loader */

struct probe {
	int emulated;
	char status[1024];
	double sum;
	int again;
	char err[4096];
};

/* Runs tests/cuda_probe.c with `environment` ("VAR=value ..." added to a
 * copy of ours without the AMP_CUDA_* variables). */
static void run_probe(const char *environment, struct probe *p)
{
	char dir[PATH_MAX], command[2 * PATH_MAX + 1024];

	ck_assert_ptr_nonnull(scratch_mkdtemp(dir, sizeof dir, "probe"));
	snprintf(command, sizeof command,
		 "env -u AMP_CUDA_MODULE -u AMP_CUDA_DISABLE -u AMP_CUDA_VERBOSE "
		 "-u AMP_NVTX %s %s 2>'%s/err'",
		 environment, AMP_TEST_CUDA_PROBE, dir);
	char *out = command_output(command);
	ck_assert_msg(out, "%s failed", command);
	memset(p, 0, sizeof *p);
	p->sum = NAN;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		if (has_prefix(line, "status="))
			snprintf(p->status, sizeof p->status, "%s", line + 7);
		sscanf(line, "emulated=%d", &p->emulated);
		sscanf(line, "sum=%lf", &p->sum);
		sscanf(line, "again=%d", &p->again);
	}
	free(out);
	char path[PATH_MAX + 8];
	snprintf(path, sizeof path, "%s/err", dir);
	FILE *err = fopen(path, "r");
	ck_assert_ptr_nonnull(err);
	size_t got = fread(p->err, 1, sizeof p->err - 1, err);
	p->err[got] = '\0';
	fclose(err);
	unlink(path);
	rmdir(dir);
	/* whatever device cuda turned out to be, it computed */
	ck_assert_double_eq(p->sum, 12.0);
	ck_assert_int_eq(p->again, 1);
}

static bool driver_loadable(void)
{
	void *handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);

	if (handle)
		dlclose(handle);
	return handle != NULL;
}

START_TEST(test_loader_default)
{
	struct probe p;

	run_probe("", &p);
	ck_assert_str_eq(p.err, ""); /* silent unless asked */
	if (!p.emulated) {
		ck_assert_msg(has_prefix(p.status, "cuda: "), "%s", p.status);
		return;
	}
	ck_assert_msg(has_prefix(p.status, "emulated on the CPU: "), "%s", p.status);
#ifndef AMP_TEST_CUDA_MODULE
	ck_assert_msg(strstr(p.status, "built without the CUDA module"), "%s",
		      p.status);
	return;
#endif
	if (!driver_loadable())
		ck_assert_msg(strstr(p.status, "no CUDA driver") &&
				      strstr(p.status, "libcuda.so.1"),
			      "%s", p.status);
}
END_TEST

START_TEST(test_loader_disabled)
{
	struct probe p;

	run_probe("AMP_CUDA_DISABLE=1", &p);
	ck_assert_int_eq(p.emulated, 1);
	ck_assert_str_eq(p.status, "emulated on the CPU: disabled by AMP_CUDA_DISABLE");
}
END_TEST

START_TEST(test_loader_verbose_once)
{
	struct probe p;

	run_probe("AMP_CUDA_DISABLE=1 AMP_CUDA_VERBOSE=1", &p);
	ck_assert_str_eq(p.err, "amptrace: device emulated on the CPU: disabled "
				"by AMP_CUDA_DISABLE\n");
}
END_TEST

#if defined(AMP_TEST_CUDA_MODULE) && defined(AMP_TEST_CUDA_STUB)
/* A directory whose libcuda.so.1 is the toolkit's stub driver: the
 * loader's driver check passes, the module loads, cudart then refuses. */
static void with_stub_driver(const char *more, struct probe *p)
{
	char dir[PATH_MAX], link[PATH_MAX + 16], environment[PATH_MAX + 512];

	ck_assert_ptr_nonnull(scratch_mkdtemp(dir, sizeof dir, "stub"));
	snprintf(link, sizeof link, "%s/libcuda.so.1", dir);
	ck_assert_int_eq(symlink(AMP_TEST_CUDA_STUB, link), 0);
	snprintf(environment, sizeof environment, "LD_LIBRARY_PATH='%s' %s", dir,
		 more);
	run_probe(environment, p);
	unlink(link);
	rmdir(dir);
}

START_TEST(test_loader_stub_driver)
{
	struct probe p;

	with_stub_driver("AMP_CUDA_MODULE=" AMP_TEST_CUDA_MODULE, &p);
	ck_assert_int_eq(p.emulated, 1);
	ck_assert_msg(strstr(p.status, "stub"), "%s", p.status);
	ck_assert_str_eq(p.err, "");
}
END_TEST

START_TEST(test_loader_missing_module)
{
	struct probe p;

	with_stub_driver("AMP_CUDA_MODULE=/nonexistent/libamp_cuda.so", &p);
	ck_assert_int_eq(p.emulated, 1);
	ck_assert_msg(strstr(p.status, "cannot load the CUDA module") &&
			      strstr(p.status, "/nonexistent/libamp_cuda.so"),
		      "%s", p.status);
}
END_TEST
#endif

/* ------------------------------------------------- the glue, faked */

static void install_full(void)
{
	cuda_fake_reset();
	amp_cuda_backend_install(cuda_fake_module(CUDA_FAKE_FULL), "fake");
}

static void install_bare(void)
{
	cuda_fake_reset();
	amp_cuda_backend_install(cuda_fake_module(CUDA_FAKE_BARE), "fake bare");
}

static const enum amp_dtype float_dtypes[] = { AMP_DTYPE_F32, AMP_DTYPE_F16,
					       AMP_DTYPE_BF16 };

START_TEST(test_fake_cases)
{
	char message[512];

	for (int d = 0; d < 3; d++) {
		if (d > 0 && !cuda_cases[_i].low_precision)
			break;
		cuda_fake_reset();
		ck_assert_msg(cuda_case_run((size_t)_i, float_dtypes[d], message,
					    sizeof message),
			      "%s", message);
	}
}
END_TEST

START_TEST(test_fake_status)
{
	ck_assert(!amp_cuda_is_emulated());
	ck_assert(amp_cuda_active());
	ck_assert(has_prefix(amp_cuda_backend_status(), "cuda: fake"));
}
END_TEST

/* The GPU kernels ran for ops the glue handles (not the fallback). */
START_TEST(test_fake_kernels_used)
{
	int64_t shape[2] = { 8, 8 };
	amp_tensor *a = cuda_random(2, shape, AMP_DTYPE_F16, CUDA_VALUES_SIGNED, 1);
	amp_tensor *g = amp_to_device(a, AMP_DEVICE_CUDA);

	cuda_fake_reset();
	amp_tensor *p = amp_mm(g, g);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cuda_fake_counts.gemm, 1);
	amp_tensor *s = amp_softmax(p, -1, AMP_DTYPE_F32);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(cuda_fake_counts.convert, 1); /* f16 -> f32 first */
	ck_assert_int_eq(cuda_fake_counts.kernels, 3);
	amp_tensor_free(s);
	amp_tensor_free(p);
	amp_tensor_free(g);
	amp_tensor_free(a);
}
END_TEST

START_TEST(test_fake_factories)
{
	int64_t shape[2] = { 3, 5 };

	amp_manual_seed(7);
	amp_tensor *cpu = amp_randn(2, shape, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_manual_seed(7);
	amp_tensor *gpu = amp_randn(2, shape, AMP_DTYPE_F32, AMP_DEVICE_CUDA);
	char message[256];

	ck_assert_int_eq(amp_tensor_device(gpu), AMP_DEVICE_CUDA);
	ck_assert_msg(cuda_tensors_close(gpu, cpu, 0, 0, message, sizeof message),
		      "%s", message);
	amp_tensor *full = amp_full(2, shape, 2.5, AMP_DTYPE_BF16, AMP_DEVICE_CUDA);
	amp_tensor *sum = amp_sum(full, AMP_DTYPE_F32);
	ck_assert_double_eq(amp_tensor_item(sum), 37.5);
	amp_tensor_free(sum);
	amp_tensor_free(full);
	amp_tensor_free(gpu);
	amp_tensor_free(cpu);
}
END_TEST

START_TEST(test_fake_read_write_views)
{
	int64_t shape[2] = { 3, 4 };
	float values[12], row[4] = { 9, 8, 7, 6 }, back[12];
	amp_tensor *t = amp_zeros(2, shape, AMP_DTYPE_F32, AMP_DEVICE_CUDA);

	for (int i = 0; i < 12; i++)
		values[i] = (float)i + 1;
	ck_assert_int_eq(amp_tensor_write(t, AMP_DTYPE_F32, values, 12), AMP_OK);
	uint64_t version = amp_tensor_version(t);
	amp_tensor *second_row = amp_slice(t, 0, 1, 2, 1);
	ck_assert_int_eq(amp_tensor_write(second_row, AMP_DTYPE_F32, row, 4), AMP_OK);
	ck_assert_uint_gt(amp_tensor_version(t), version);
	ck_assert_int_eq(amp_tensor_read(t, AMP_DTYPE_F32, back, 12), AMP_OK);
	ck_assert_float_eq(back[3], 4);
	ck_assert_float_eq(back[4], 9);
	ck_assert_float_eq(back[7], 6);
	ck_assert_float_eq(back[8], 9);
	amp_tensor *column = amp_slice(t, 1, 2, 3, 1);
	amp_tensor *sum = amp_sum(column, AMP_DTYPE_NONE);
	ck_assert_double_eq(amp_tensor_item(sum), 3 + 7 + 11);
	amp_tensor_free(sum);
	amp_tensor *host = amp_to_device(column, AMP_DEVICE_CPU);
	ck_assert_int_eq(amp_tensor_device(host), AMP_DEVICE_CPU);
	ck_assert_int_eq(amp_tensor_read(host, AMP_DTYPE_F32, back, 3), AMP_OK);
	ck_assert_float_eq(back[1], 7);
	amp_tensor_free(host);
	amp_tensor_free(column);
	amp_tensor_free(second_row);
	amp_tensor_free(t);
}
END_TEST

/* In-place ops take the fallback: their writes reach device memory. */
START_TEST(test_fake_inplace)
{
	int64_t shape[2] = { 4, 6 };
	amp_tensor *a = cuda_random(2, shape, AMP_DTYPE_F32, CUDA_VALUES_SIGNED, 3);
	amp_tensor *b = cuda_random(2, shape, AMP_DTYPE_F32, CUDA_VALUES_SIGNED, 4);
	amp_tensor *ga = amp_to_device(a, AMP_DEVICE_CUDA);
	amp_tensor *gb = amp_to_device(b, AMP_DEVICE_CUDA);
	char message[256];

	uint64_t version = amp_tensor_version(ga);
	ck_assert_int_eq(amp_add_(a, b, 2.0), AMP_OK);
	ck_assert_int_eq(amp_add_(ga, gb, 2.0), AMP_OK);
	ck_assert_uint_gt(amp_tensor_version(ga), version);
	ck_assert_msg(cuda_tensors_close(ga, a, 1e-6, 0, message, sizeof message),
		      "%s", message);
	/* through a view: the base changes */
	amp_tensor *view = amp_slice(ga, 1, 0, 6, 2);
	amp_tensor *cpu_view = amp_slice(a, 1, 0, 6, 2);
	ck_assert_int_eq(amp_mul_scalar_(view, -3.0), AMP_OK);
	ck_assert_int_eq(amp_mul_scalar_(cpu_view, -3.0), AMP_OK);
	ck_assert_msg(cuda_tensors_close(ga, a, 1e-6, 0, message, sizeof message),
		      "%s", message);
	amp_tensor_free(cpu_view);
	amp_tensor_free(view);
	amp_tensor_free(gb);
	amp_tensor_free(ga);
	amp_tensor_free(b);
	amp_tensor_free(a);
}
END_TEST

/* The fused unscale and the scale update, cuda against cpu. */
START_TEST(test_fake_scaler)
{
	float g0[5] = { 1, -2, 3, 4096, -0.5f }, g1[3] = { 1, INFINITY, 2 };
	int64_t s0[1] = { 5 }, s1[1] = { 3 };
	amp_tensor *grads[2][2], *found[2], *inv[2], *scale[2], *tracker[2];
	enum amp_device_type devices[2] = { AMP_DEVICE_CPU, AMP_DEVICE_CUDA };
	char message[256];

	for (int d = 0; d < 2; d++) {
		amp_tensor *h0 = amp_from_data(1, s0, AMP_DTYPE_F32, AMP_DEVICE_CPU, g0);
		amp_tensor *h1 = amp_from_data(1, s1, AMP_DTYPE_F32, AMP_DEVICE_CPU, g1);
		amp_tensor *h1f16 = amp_to(h1, AMP_DTYPE_F16);
		grads[d][0] = amp_to_device(h0, devices[d]);
		grads[d][1] = amp_to_device(h1f16, devices[d]);
		found[d] = amp_zeros(0, NULL, AMP_DTYPE_F32, devices[d]);
		inv[d] = amp_full(0, NULL, 0.25, AMP_DTYPE_F32, devices[d]);
		scale[d] = amp_full(0, NULL, 65536.0, AMP_DTYPE_F32, devices[d]);
		tracker[d] = amp_zeros(0, NULL, AMP_DTYPE_I32, devices[d]);
		amp_tensor_free(h0);
		amp_tensor_free(h1);
		amp_tensor_free(h1f16);
		ck_assert_int_eq(amp_non_finite_check_and_unscale_(grads[d], 2,
								   found[d], inv[d]),
				 AMP_OK);
		ck_assert_double_eq(amp_tensor_item(found[d]), 1.0);
		/* an overflow backs off; two clean steps grow (interval 2) */
		ck_assert_int_eq(amp_update_scale_(scale[d], tracker[d], found[d],
						   2.0, 0.5, 2), AMP_OK);
		amp_tensor *clean = amp_zeros(0, NULL, AMP_DTYPE_F32, devices[d]);
		for (int step = 0; step < 3; step++)
			ck_assert_int_eq(amp_update_scale_(scale[d], tracker[d],
							   clean, 2.0, 0.5, 2),
					 AMP_OK);
		amp_tensor_free(clean);
	}
	ck_assert_int_eq(cuda_fake_counts.unscale, 2); /* one per gradient */
	ck_assert_int_eq(cuda_fake_counts.update_scale, 4);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(cuda_tensors_close(grads[1][i], grads[0][i], 0, 0,
						 message, sizeof message),
			      "%s", message);
	ck_assert_double_eq(amp_tensor_item(scale[1]), 65536.0);
	ck_assert_double_eq(amp_tensor_item(scale[0]), 65536.0);
	ck_assert_double_eq(amp_tensor_item(tracker[1]), 1.0);
	ck_assert_double_eq(amp_tensor_item(tracker[0]), 1.0);
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

/* Factors that f32 cannot hold reach the module as doubles: the scale is
 * multiplied in f64 and rounded once, as on the CPU (7 * 1.1f rounded to
 * f32 is 7.70000029, 7 * 1.1 is 7.69999981). */
START_TEST(test_fake_scaler_f64_factors)
{
	enum amp_device_type devices[2] = { AMP_DEVICE_CPU, AMP_DEVICE_CUDA };
	float expected = (float)(7.0 * 1.1);

	ck_assert_float_ne(expected, 7.0f * 1.1f);
	expected = (float)((double)expected * 0.3);
	for (int d = 0; d < 2; d++) {
		amp_tensor *scale = amp_full(0, NULL, 7.0, AMP_DTYPE_F32, devices[d]);
		amp_tensor *tracker = amp_zeros(0, NULL, AMP_DTYPE_I32, devices[d]);
		amp_tensor *clean = amp_zeros(0, NULL, AMP_DTYPE_F32, devices[d]);
		amp_tensor *inf = amp_full(0, NULL, 1.0, AMP_DTYPE_F32, devices[d]);
		ck_assert_int_eq(amp_update_scale_(scale, tracker, clean, 1.1, 0.3, 1),
				 AMP_OK);
		ck_assert_float_eq((float)amp_tensor_item(scale), (float)(7.0 * 1.1));
		ck_assert_int_eq(amp_update_scale_(scale, tracker, inf, 1.1, 0.3, 1),
				 AMP_OK);
		ck_assert_float_eq((float)amp_tensor_item(scale), expected);
		amp_tensor_free(inf);
		amp_tensor_free(clean);
		amp_tensor_free(tracker);
		amp_tensor_free(scale);
	}
	ck_assert_int_eq(cuda_fake_counts.update_scale, 2);
}
END_TEST

static void ignore_activities(const struct amp_gpu_activity *activities,
			      size_t count, void *user)
{
	(void)activities;
	(void)count;
	(void)user;
}

static uint64_t cast_results[8];
static int cast_count;
static uint64_t linear_op;
static bool saw_emulated;

static void record_events(const struct amp_event *event, void *user)
{
	(void)user;
	if (event->kind == AMP_EVENT_CAST && cast_count < 8)
		cast_results[cast_count++] = event->cast.result.id;
	if (event->kind == AMP_EVENT_OP_BEGIN) {
		if (!strcmp(event->op.op, "linear"))
			linear_op = event->op.op_id;
		saw_emulated = saw_emulated || event->op.emulated;
	}
}

/* linear(x, w, b) under CUDA autocast (f16). */
static amp_tensor *autocast_linear(amp_tensor *x, amp_tensor *w, amp_tensor *b)
{
	struct amp_autocast_opts opts = AMP_AUTOCAST_OPTS(AMP_DEVICE_CUDA);

	ck_assert_int_eq(amp_autocast_enter(&opts), AMP_OK);
	amp_tensor *y = amp_linear(x, w, b);
	amp_autocast_exit();
	return y;
}

static bool logged(const char *line)
{
	for (int i = 0; i < cuda_fake_log_count; i++)
		if (!strcmp(cuda_fake_log[i], line))
			return true;
	return false;
}

/* Autocast's casts push the cast's result id, ops their op id, around
 * the work they launch, balanced (what CUPTI turns into "External id"). */
START_TEST(test_fake_correlation_ids)
{
	int64_t xs[2] = { 4, 8 }, ws[2] = { 3, 8 }, bs[1] = { 3 };
	amp_tensor *x = cuda_random_on_device(2, xs, AMP_DTYPE_F32,
					      CUDA_VALUES_SIGNED, 1);
	amp_tensor *w = cuda_random_on_device(2, ws, AMP_DTYPE_F32,
					      CUDA_VALUES_SIGNED, 2);
	amp_tensor *b = cuda_random_on_device(1, bs, AMP_DTYPE_F32,
					      CUDA_VALUES_SIGNED, 3);
	char line[64];

	ck_assert_int_eq(amp_gpu_profiler_start(ignore_activities, NULL), AMP_OK);
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_CAST) |
					AMP_EVENT_MASK(AMP_EVENT_OP_BEGIN),
				record_events, NULL);
	cuda_fake_reset();
	amp_tensor *y = autocast_linear(x, w, b);
	amp_hook_remove(hook);
	ck_assert_ptr_nonnull(y);
	ck_assert_int_eq(amp_tensor_dtype(y), AMP_DTYPE_F16);
	ck_assert(!saw_emulated);
	ck_assert_int_eq(cast_count, 3);
	for (int i = 0; i < cast_count; i++) {
		snprintf(line, sizeof line, "push cast %llu",
			 (unsigned long long)cast_results[i]);
		ck_assert_msg(logged(line), "no \"%s\"", line);
	}
	snprintf(line, sizeof line, "push op %llu", (unsigned long long)linear_op);
	ck_assert_msg(logged(line), "no \"%s\"", line);
	int depth = 0;
	for (int i = 0; i < cuda_fake_log_count; i++) {
		depth += has_prefix(cuda_fake_log[i], "push") ? 1 : -1;
		ck_assert_int_ge(depth, 0);
	}
	ck_assert_int_eq(depth, 0);
	/* the casts ran before the op's forward, each inside its own push
	 * and one of the op it is for (its kernel names both) */
	ck_assert_str_eq(cuda_fake_log[0], line);
	ck_assert(has_prefix(cuda_fake_log[1], "push cast"));
	struct amp_gpu_profiler_stats stats;
	ck_assert_int_eq(amp_gpu_profiler_stop(&stats), AMP_OK);
	ck_assert_int_eq(amp_gpu_profiler_stop(&stats), AMP_ERR_STATE);
	/* no pushes once stopped */
	cuda_fake_reset();
	amp_tensor *z = amp_exp(x);
	ck_assert_int_eq(cuda_fake_log_count, 0);
	amp_tensor_free(z);
	amp_tensor_free(y);
	amp_tensor_free(b);
	amp_tensor_free(w);
	amp_tensor_free(x);
}
END_TEST

static uint64_t own_linked;

static void count_own(const struct amp_gpu_activity *activities, size_t count,
		      void *user)
{
	(void)user;
	for (size_t i = 0; i < count; i++)
		own_linked += activities[i].op_id == AMP_GPU_OWN_WORK;
}

/* The value checks read an f16 result back to the host: that copy is
 * amptrace's own work, pushed as such, and kernel timing leaves it out. */
START_TEST(test_fake_value_checks_own_work)
{
	int64_t xs[2] = { 4, 8 }, ws[2] = { 3, 8 };
	amp_tensor *x = cuda_random_on_device(2, xs, AMP_DTYPE_F32,
					      CUDA_VALUES_SIGNED, 1);
	amp_tensor *w = cuda_random_on_device(2, ws, AMP_DTYPE_F32,
					      CUDA_VALUES_SIGNED, 2);
	char line[64];

	own_linked = 0;
	ck_assert_int_eq(amp_gpu_profiler_start(count_own, NULL), AMP_OK);
	amp_set_value_checks(true);
	cuda_fake_reset();
	amp_tensor *y = autocast_linear(x, w, NULL);
	amp_set_value_checks(false);
	ck_assert_ptr_nonnull(y);
	snprintf(line, sizeof line, "push op %llu",
		 (unsigned long long)AMP_GPU_OWN_WORK);
	ck_assert_msg(logged(line), "no \"%s\"", line);
	struct amp_gpu_profiler_stats stats;
	ck_assert_int_eq(amp_gpu_profiler_stop(&stats), AMP_OK);
	ck_assert_uint_gt(stats.own, 0);
	ck_assert_uint_eq(own_linked, 0);
	amp_tensor_free(y);
	amp_tensor_free(w);
	amp_tensor_free(x);
}
END_TEST

START_TEST(test_fake_kernel_error)
{
	int64_t shape[1] = { 4 };
	amp_tensor *x = amp_full(1, shape, 1.0, AMP_DTYPE_F32, AMP_DEVICE_CUDA);

	cuda_fake_fail = true;
	ck_assert_ptr_null(amp_exp(x));
	ck_assert_int_eq(amp_last_status(), AMP_ERR_DEVICE);
	ck_assert_str_eq(amp_last_error(), "CUDA: fake failure");
	amp_tensor *y = amp_exp(x); /* the next one works */
	ck_assert_ptr_nonnull(y);
	amp_tensor_free(y);
	amp_tensor_free(x);
}
END_TEST

/* Kernel timing without a GPU: a clear error, not a crash. */
START_TEST(test_profiler_needs_gpu)
{
	setenv("AMP_CUDA_DISABLE", "1", 1);
	ck_assert(amp_cuda_is_emulated());
	ck_assert_int_eq(amp_gpu_profiler_start(ignore_activities, NULL),
			 AMP_ERR_DEVICE);
	ck_assert_msg(strstr(amp_last_error(), "needs a GPU") &&
			      strstr(amp_last_error(), "AMP_CUDA_DISABLE"),
		      "%s", amp_last_error());
}
END_TEST

static Suite *cuda_host_suite(void)
{
	Suite *s = suite_create("cuda_host");
	TCase *tc;

#ifdef AMP_TEST_HAVE_CUPTI
	tc = tcase_create("cupti");
	tcase_add_checked_fixture(tc, converter_setup, converter_teardown);
	tcase_add_test(tc, test_cupti_kernel_linked_to_op);
	tcase_add_test(tc, test_cupti_link_order_in_batch);
	tcase_add_test(tc, test_cupti_link_across_batches);
	tcase_add_test(tc, test_cupti_cast_and_op);
	tcase_add_test(tc, test_cupti_own_work_left_out);
	tcase_add_test(tc, test_cupti_untimed_and_other_kinds);
	tcase_add_test(tc, test_cupti_memcpy);
	tcase_add_test(tc, test_cupti_slot_reuse);
	tcase_add_test(tc, test_cupti_launching_calls);
	tcase_add_test(tc, test_clock_offset_tightest_sample);
	tcase_add_test(tc, test_clock_map);
	tcase_add_test(tc, test_cupti_converter_applies_offset);
	suite_add_tcase(s, tc);
#endif

	tc = tcase_create("gemm_mapping");
	tcase_add_loop_test(tc, test_gemm_mapping, 0, 4);
	tcase_add_test(tc, test_gemm_mapping_int_range);
	suite_add_tcase(s, tc);

#ifdef AMP_TEST_CUDA_MODULE
	tc = tcase_create("module");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_module_undefined_symbols);
	tcase_add_test(tc, test_module_exports_one_symbol);
	tcase_add_test(tc, test_module_needed_libraries);
	tcase_add_test(tc, test_module_init_without_gpu);
	suite_add_tcase(s, tc);
#endif

	tc = tcase_create("loader");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_loader_default);
	tcase_add_test(tc, test_loader_disabled);
	tcase_add_test(tc, test_loader_verbose_once);
#if defined(AMP_TEST_CUDA_MODULE) && defined(AMP_TEST_CUDA_STUB)
	tcase_add_test(tc, test_loader_stub_driver);
	tcase_add_test(tc, test_loader_missing_module);
#endif
	tcase_add_test(tc, test_profiler_needs_gpu);
	suite_add_tcase(s, tc);

	tc = tcase_create("fake_full");
	tcase_add_checked_fixture(tc, install_full, NULL);
	tcase_add_loop_test(tc, test_fake_cases, 0, (int)cuda_case_count);
	tcase_add_test(tc, test_fake_status);
	tcase_add_test(tc, test_fake_kernels_used);
	tcase_add_test(tc, test_fake_factories);
	tcase_add_test(tc, test_fake_read_write_views);
	tcase_add_test(tc, test_fake_inplace);
	tcase_add_test(tc, test_fake_scaler);
	tcase_add_test(tc, test_fake_scaler_f64_factors);
	tcase_add_test(tc, test_fake_correlation_ids);
	tcase_add_test(tc, test_fake_value_checks_own_work);
	tcase_add_test(tc, test_fake_kernel_error);
	suite_add_tcase(s, tc);

	tc = tcase_create("fake_fallback");
	tcase_add_checked_fixture(tc, install_bare, NULL);
	tcase_add_loop_test(tc, test_fake_cases, 0, (int)cuda_case_count);
	tcase_add_test(tc, test_fake_factories);
	tcase_add_test(tc, test_fake_read_write_views);
	tcase_add_test(tc, test_fake_inplace);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cuda_host_suite());

	/* every case forks: the loader state is per process */
	srunner_set_fork_status(sr, CK_FORK);
	scratch_make("cuda-host");
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return scratch_remove() != 0 || failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
