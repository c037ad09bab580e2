/* Which GEMM runs, with how many threads, and saying so.
 *
 * f32/f64 products run on the linked CBLAS (OpenBLAS on Debian).  Two
 * OpenBLAS defaults cost a lot on small machines and are fixed here, at
 * load time, before any product runs:
 *   - its DYNAMIC_ARCH build picks kernels from the CPU model; a model it
 *     does not know (e.g. Sapphire Rapids under KVM in 0.3.21) falls back
 *     to SSE3 "Prescott" kernels at a sixth of the speed.  When the core it
 *     chose lacks vector extensions this CPU has, it is re-initialised with
 *     the core type matching CPUID (unless OPENBLAS_CORETYPE was given);
 *   - it starts one thread per core, slower than one at the sizes a
 *     training step multiplies on a 2-core machine.  libamp uses
 *     AMP_NUM_THREADS threads, 1 by default (OPENBLAS_NUM_THREADS /
 *     OMP_NUM_THREADS, when set, are left to OpenBLAS).
 * bf16 x bf16 products with f32 accumulation run on oneDNN's
 * dnnl_gemm_bf16bf16f32 (vdpbf16ps) when the CPU has AVX512_BF16 and
 * libdnnl.so.2 loads: the products of two bf16 values are exact in f32,
 * so the summation order differs from widening to f32 + sgemm, as it
 * does between any two sgemm kernels, and vdpbf16ps counts subnormal
 * inputs and results as zero.  This is PyTorch's own CPU path for bf16
 * matmuls (oneDNN), with the same flushing.  Everything else widens to f32, as do bf16 products when
 * AMP_BF16_GEMM=f32 (for CPUs whose vdpbf16ps is slower than their f32
 * FMAs; AMP_BF16_GEMM=onednn is the default).
 * AMP_VERBOSE=1 prints amp_backend_info() at the first product, fixes
 * included; slow kernels that stay because the fix is impossible are a
 * warning (those OPENBLAS_CORETYPE asks for are what the user chose, and
 * only amp_backend_info() says so). */
#include "cpu_ops.h"
#include "cast_rows.h"

#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Products smaller than this (m * n * k) widen to f32: oneDNN's per-call
 * set-up costs more than the conversions there. */
#define BF16_GEMM_MIN_WORK (64 * 64 * 64)

typedef int (*dnnl_bf16_gemm_fn)(char transa, char transb, int64_t m,
				 int64_t n, int64_t k, float alpha,
				 const uint16_t *a, int64_t lda,
				 const uint16_t *b, int64_t ldb, float beta,
				 float *c, int64_t ldc);

static struct {
	int threads;
	char core[64];   /* OpenBLAS's core name, "" when not OpenBLAS */
	char note[256];  /* what was fixed, or why it could not be */
	pthread_once_t once;
	pthread_once_t announced;
	dnnl_bf16_gemm_fn bf16_gemm;
	int (*omp_get_max_threads)(void);
	void (*omp_set_num_threads)(int);
	char bf16_status[160];
	char info[768];
} blas = { .threads = 1, .once = PTHREAD_ONCE_INIT,
	    .announced = PTHREAD_ONCE_INIT };

/* ------------------------------------------------------- CPU features */

/* 2: AVX-512 (F, BW, VL, DQ), 1: AVX2 + FMA, 0: older. */
static int cpu_vector_class(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512dq"))
		return 2;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return 1;
#endif
	return 0;
}

/* The vector class of the kernels an OpenBLAS core name stands for. */
static int core_vector_class(const char *core)
{
	static const char *const avx512[] = { "SkylakeX", "Cooperlake",
					      "SapphireRapids" };
	static const char *const avx2[] = { "Haswell", "Zen" };

	for (size_t i = 0; i < sizeof avx512 / sizeof *avx512; i++)
		if (strcasecmp(core, avx512[i]) == 0)
			return 2;
	for (size_t i = 0; i < sizeof avx2 / sizeof *avx2; i++)
		if (strcasecmp(core, avx2[i]) == 0)
			return 1;
	return 0;
}

const char *cpu_blas_wanted_core(const char *core, int cpu_class, bool bf16)
{
	if (core_vector_class(core) >= cpu_class)
		return NULL;
	if (cpu_class == 2)
		return bf16 ? "Cooperlake" : "SkylakeX";
	return cpu_class == 1 ? "Haswell" : NULL;
}

/* ------------------------------------------------------------ OpenBLAS */

static int threads_from_environment(void)
{
	const char *value = getenv("AMP_NUM_THREADS");
	char *end;

	if (value && *value) {
		long n = strtol(value, &end, 10);
		if (*end == '\0' && n >= 1 && n <= 1024)
			return (int)n;
		amp_warn("ignoring AMP_NUM_THREADS=%s (want a count "
			 "from 1 to 1024); using 1 thread", value);
		return 1;
	}
	return 0;
}

/* OpenBLAS's own entry points, looked up (so that any CBLAS links) in
 * the library that gives libamp cblas_sgemm, not in another BLAS the
 * program may have loaded globally. */
static void *openblas_symbol(const char *name)
{
	static void *library;
	static bool looked;
	Dl_info info;

	if (!looked) {
		looked = true;
		if (dladdr((void *)cblas_sgemm, &info) && info.dli_fname)
			library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	}
	return library ? dlsym(library, name) : NULL;
}

static void openblas_fix_core(void)
{
	const char *(*corename)(void) = openblas_symbol("openblas_get_corename");
	void (*quit)(void) = openblas_symbol("gotoblas_dynamic_quit");
	void (*init)(void) = openblas_symbol("gotoblas_dynamic_init");

	if (!corename)
		return;
	snprintf(blas.core, sizeof blas.core, "%s", corename());
	const char *wanted = cpu_blas_wanted_core(blas.core, cpu_vector_class(),
						  amp_cpu_has_avx512_bf16());
	if (!wanted)
		return;
	if (getenv("OPENBLAS_CORETYPE")) {
		/* The user's (or the machine's) own choice: honoured, and
		 * not a warning: one printed here, at load, would change the
		 * stderr of every program linked with libamp by where it
		 * runs.  amp_backend_info() (AMP_VERBOSE=1) still says it. */
		snprintf(blas.note, sizeof blas.note,
			 "OpenBLAS runs %s kernels on a CPU that runs %s ones "
			 "(OPENBLAS_CORETYPE asks for them)", blas.core, wanted);
	} else if (!quit || !init) {
		snprintf(blas.note, sizeof blas.note,
			 "OpenBLAS runs %s kernels on a CPU that runs %s ones "
			 "(this OpenBLAS cannot be re-initialised)", blas.core,
			 wanted);
		amp_warn("%s", blas.note);
	} else {
		/* gotoblas_dynamic_init reads the core type from the
		 * environment only; nothing has multiplied yet (load time),
		 * and the variable is removed again so child processes see
		 * the environment they were given. */
		char detected[64];
		snprintf(detected, sizeof detected, "%s", blas.core);
		setenv("OPENBLAS_CORETYPE", wanted, 1);
		quit();
		init();
		unsetenv("OPENBLAS_CORETYPE");
		snprintf(blas.core, sizeof blas.core, "%s", corename());
		snprintf(blas.note, sizeof blas.note,
			 "OpenBLAS chose %s kernels for this CPU; re-initialised "
			 "with %s", detected, blas.core);
	}
}

__attribute__((constructor)) static void blas_setup(void)
{
	int (*get_threads)(void) = openblas_symbol("openblas_get_num_threads");
	void (*set_threads)(int) = openblas_symbol("openblas_set_num_threads");
	int threads = threads_from_environment();

	openblas_fix_core();
	if (threads == 0 && !getenv("OPENBLAS_NUM_THREADS") &&
	    !getenv("OMP_NUM_THREADS"))
		threads = 1;
	if (threads && set_threads)
		set_threads(threads);
	blas.threads = get_threads ? get_threads() : (threads ? threads : 1);
	/* OpenBLAS started its workers at load; with one thread they would
	 * only spin on sched_yield for a while.  It restarts them itself if
	 * a later openblas_set_num_threads asks for more. */
	void (*shutdown)(void) = openblas_symbol("blas_thread_shutdown_");
	if (blas.threads == 1 && shutdown)
		shutdown();
}

/* -------------------------------------------------------------- oneDNN */

static void bf16_engine_load(void)
{
	const char *choice = getenv("AMP_BF16_GEMM");

	if (choice && strcmp(choice, "f32") == 0) {
		snprintf(blas.bf16_status, sizeof blas.bf16_status,
			 "widened to f32 (AMP_BF16_GEMM=f32)");
		return;
	}
	if (choice && *choice && strcmp(choice, "onednn") != 0)
		amp_warn("ignoring AMP_BF16_GEMM=%s (want onednn or f32)",
			 choice);
	if (!amp_cpu_has_avx512_bf16()) {
		snprintf(blas.bf16_status, sizeof blas.bf16_status,
			 "widened to f32 (no AVX512_BF16)");
		return;
	}
	/* Debian 12's libdnnl2, then Debian 13's libdnnl3.6 (oneDNN 3.x
	 * keeps dnnl_gemm_bf16bf16f32) */
	static const char *const sonames[] = { "libdnnl.so.2",
					       "libdnnl.so.3.6" };
	void *library = NULL;
	const char *error = NULL;
	for (size_t i = 0; !library && i < 2; i++) {
		library = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
		if (!library && i == 0)
			error = dlerror(); /* the first one's reason */
	}
	if (!library) {
		snprintf(blas.bf16_status, sizeof blas.bf16_status,
			 "widened to f32 (%s)",
			 error ? error : "libdnnl.so.2 not found");
		return;
	}
	/* the handle stays open: the function lives in it */
	blas.bf16_gemm = (dnnl_bf16_gemm_fn)dlsym(library,
						  "dnnl_gemm_bf16bf16f32");
	blas.omp_get_max_threads = (int (*)(void))dlsym(library,
							"omp_get_max_threads");
	blas.omp_set_num_threads = (void (*)(int))dlsym(library,
							"omp_set_num_threads");
	snprintf(blas.bf16_status, sizeof blas.bf16_status, "%s",
		 blas.bf16_gemm ? "oneDNN dnnl_gemm_bf16bf16f32 (avx512_bf16)"
				: "widened to f32 (oneDNN has no "
				  "dnnl_gemm_bf16bf16f32)");
}

static bool verbose(void)
{
	const char *value = getenv("AMP_VERBOSE");

	return value && *value && strcmp(value, "0") != 0;
}

static void engines_load(void)
{
	bf16_engine_load();
	char core[96] = "";
	if (blas.core[0])
		snprintf(core, sizeof core, "OpenBLAS, %s kernels", blas.core);
	else
		snprintf(core, sizeof core, "CBLAS");
	snprintf(blas.info, sizeof blas.info,
		 "f32 gemm: %s, %d thread%s; bf16 gemm: %s%s%s", core,
		 blas.threads, blas.threads == 1 ? "" : "s", blas.bf16_status,
		 blas.note[0] ? "; " : "", blas.note);
	if (verbose())
		fprintf(stderr, "libamp: %s\n", blas.info);
}

/* With AMP_VERBOSE the first f32/f64 product says what runs too (loading
 * the bf16 engine to say it); without, that waits for a bf16 product. */
static void announce(void)
{
	if (verbose())
		amp_backend_info();
}

void cpu_gemm_announce(void)
{
	pthread_once(&blas.announced, announce);
}

const char *amp_backend_info(void)
{
	pthread_once(&blas.once, engines_load);
	return blas.info;
}

/* ------------------------------------------------------------- products */

bool cpu_gemm_bf16_wanted(int64_t m, int64_t n, int64_t k)
{
	pthread_once(&blas.once, engines_load);
	return blas.bf16_gemm && m * n * k >= BF16_GEMM_MIN_WORK;
}

/* The f32 fallback when oneDNN refuses a product: the operands widened
 * (their rows up to the last element read) and sgemm. */
static int widened_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n,
			int64_t k, float alpha, const uint16_t *a, int64_t lda,
			const uint16_t *b, int64_t ldb, float beta, float *c)
{
	size_t count_a = (size_t)((trans_a ? k - 1 : m - 1) * lda +
				  (trans_a ? m : k));
	size_t count_b = (size_t)((trans_b ? n - 1 : k - 1) * ldb +
				  (trans_b ? k : n));
	float *wa = cpu_alloc(count_a, AMP_DTYPE_F32);
	float *wb = wa ? cpu_alloc(count_b, AMP_DTYPE_F32) : NULL;

	if (wb) {
		amp_convert(wa, AMP_DTYPE_F32, a, AMP_DTYPE_BF16, count_a);
		amp_convert(wb, AMP_DTYPE_F32, b, AMP_DTYPE_BF16, count_b);
		cpu_gemm(AMP_DTYPE_F32, trans_a, trans_b, m, n, k, alpha, wa,
			 lda, wb, ldb, beta, c);
	}
	free(wa);
	free(wb);
	return wb ? AMP_OK : amp_last_status();
}

int cpu_gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n,
		  int64_t k, float alpha, const uint16_t *a, int64_t lda,
		  const uint16_t *b, int64_t ldb, float beta, float *c)
{
	/* oneDNN's OpenMP team follows this thread's nthreads-var, which is
	 * the program's too (its own OpenMP regions): set for the product
	 * only. */
	int program_threads = 0;
	if (blas.omp_get_max_threads && blas.omp_set_num_threads) {
		program_threads = blas.omp_get_max_threads();
		if (program_threads != blas.threads)
			blas.omp_set_num_threads(blas.threads);
	}
	int refused = blas.bf16_gemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N',
				     m, n, k, alpha, a, lda, b, ldb, beta, c,
				     n);
	if (program_threads && program_threads != blas.threads)
		blas.omp_set_num_threads(program_threads);
	if (!refused)
		return AMP_OK;
	return widened_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
			    beta, c);
}
