/* Check suite for the dtype layer: lib/dtype.c, lib/cast_rows.c and
 * kernels/amp_scalar.h.  Names, promotion, amp_convert between all pairs
 * on edge values, and the float-format conversions on every input: all
 * 2^32 f32 patterns to f16 and bf16, all 2^16 f16 and bf16 patterns to
 * f32, each against a reference written independently of the code under
 * test (gcc's _Float16 for f16, FPU rounding in double for bf16). */
#include "amp.h"
#include "amp_scalar.h"
#include "cast_rows.h"
#include "test_bits.h"

#include <check.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------ references */


static uint64_t f64_bits(double value)
{
	uint64_t bits;
	memcpy(&bits, &value, sizeof bits);
	return bits;
}

static double f64_from_bits(uint64_t bits)
{
	double value;
	memcpy(&value, &bits, sizeof value);
	return value;
}

/* gcc's _Float16 conversions: vcvtps2ph / vcvtph2ps where the CPU has
 * F16C, libgcc's soft-float otherwise.  Either way not our code. */
#if defined(__x86_64__) || defined(__i386__)
#define REF_F16C __attribute__((target("f16c")))
static bool have_f16c(void)
{
	return __builtin_cpu_supports("f16c");
}
#else
#define REF_F16C
static bool have_f16c(void)
{
	return false;
}
#endif

REF_F16C static void ref_f16_rows_f16c(uint16_t *out, const float *in,
				       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		_Float16 h = (_Float16)in[i];
		memcpy(&out[i], &h, sizeof h);
	}
}

static void ref_f16_rows_soft(uint16_t *out, const float *in, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		_Float16 h = (_Float16)in[i];
		memcpy(&out[i], &h, sizeof h);
	}
}

REF_F16C static float ref_f16_to_f32_f16c(uint16_t bits)
{
	_Float16 h;
	memcpy(&h, &bits, sizeof h);
	return (float)h;
}

static float ref_f16_to_f32_soft(uint16_t bits)
{
	_Float16 h;
	memcpy(&h, &bits, sizeof h);
	return (float)h;
}

static void ref_f16_rows(uint16_t *out, const float *in, size_t n)
{
	if (have_f16c())
		ref_f16_rows_f16c(out, in, n);
	else
		ref_f16_rows_soft(out, in, n);
}

static uint16_t ref_f16(float value)
{
	uint16_t bits;
	ref_f16_rows(&bits, &value, 1);
	return bits;
}

static float ref_f16_to_f32(uint16_t bits)
{
	return have_f16c() ? ref_f16_to_f32_f16c(bits)
			   : ref_f16_to_f32_soft(bits);
}

/* f32 -> bf16 by letting the FPU round: adding M = 1.5 * 2^(u + 52), whose
 * double ulp is 2^u, rounds |x| to a multiple of 2^u (bf16's spacing in
 * x's binade) to nearest even; subtracting M back is exact.  A result of
 * 2^128 becomes inf in the final (float) conversion.  NaN is left to the
 * caller (any quiet NaN of the right sign is correct). */
static uint16_t ref_bf16(float value)
{
	uint32_t bits = f32_bits(value);
	uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
	int binade = (int)((bits >> 23) & 0xffu) - 127;

	if (isinf(value))
		return sign | 0x7f80u;
	if (isnan(value))
		return sign | 0x7fc0u;
	if (binade < -126)
		binade = -126; /* subnormals share the smallest spacing */
	int ulp_exponent = binade - 7;
	double magic = f64_from_bits(((uint64_t)(ulp_exponent + 52 + 1023) << 52) |
				     (UINT64_C(1) << 51));
	double magnitude = fabs((double)value);
	double rounded = (magnitude + magic) - magic;
	return sign | (uint16_t)(f32_bits((float)rounded) >> 16);
}

/* bf16 -> f32 from the fields, by arithmetic. */
static float ref_bf16_to_f32(uint16_t bits)
{
	int exponent = (bits >> 7) & 0xff;
	int mantissa = bits & 0x7f;
	float magnitude;

	if (exponent == 0xff)
		magnitude = mantissa ? NAN : INFINITY;
	else if (exponent == 0)
		magnitude = ldexpf((float)mantissa, -133);
	else
		magnitude = ldexpf((float)(mantissa + 128), exponent - 134);
	return (bits & 0x8000u) ? -magnitude : magnitude;
}

static bool f16_is_nan(uint16_t bits)
{
	return (bits & 0x7c00u) == 0x7c00u && (bits & 0x03ffu) != 0;
}

static bool bf16_is_nan(uint16_t bits)
{
	return (bits & 0x7f80u) == 0x7f80u && (bits & 0x007fu) != 0;
}

/* A NaN input must give a quiet NaN of the same sign, as c10::Half and
 * c10::BFloat16 do; the payload may differ from the reference. */
static bool nan_f16_ok(uint32_t input, uint16_t got)
{
	return f16_is_nan(got) && (got & 0x0200u) &&
	       (got >> 15) == (input >> 31);
}

static bool nan_bf16_ok(uint32_t input, uint16_t got)
{
	return bf16_is_nan(got) && (got & 0x0040u) &&
	       (got >> 15) == (input >> 31);
}

/* ------------------------------------------------- exhaustive f32 -> 16 */

enum sweep_format { SWEEP_F16, SWEEP_BF16 };

#define SWEEP_CHUNK 16384u
#define SWEEP_CHUNKS ((UINT64_C(1) << 32) / SWEEP_CHUNK)
#define SWEEP_MAX_THREADS 8

struct sweep {
	enum sweep_format format;
	atomic_uint_fast64_t next_chunk;
	atomic_bool failed;
	pthread_mutex_t lock;
	/* the first failure */
	char path[32];
	uint32_t input;
	uint16_t got;
	uint16_t want;
};

struct sweep_buffers {
	float in[SWEEP_CHUNK];
	uint16_t want[SWEEP_CHUNK];
	uint16_t base[SWEEP_CHUNK];
	uint16_t out[SWEEP_CHUNK];
};

static void sweep_fail(struct sweep *sweep, const char *path, uint32_t input,
		       uint16_t got, uint16_t want)
{
	pthread_mutex_lock(&sweep->lock);
	if (!atomic_load(&sweep->failed)) {
		snprintf(sweep->path, sizeof sweep->path, "%s", path);
		sweep->input = input;
		sweep->got = got;
		sweep->want = want;
		atomic_store(&sweep->failed, true);
	}
	pthread_mutex_unlock(&sweep->lock);
}

/* The scalar tier against the reference: bits equal, NaNs by the NaN
 * rule.  Returns false after recording the first difference. */
static bool sweep_check_reference(struct sweep *sweep,
				  const struct sweep_buffers *b)
{
	if (memcmp(b->base, b->want, sizeof b->base) == 0)
		return true;
	for (size_t i = 0; i < SWEEP_CHUNK; i++) {
		uint32_t input = f32_bits(b->in[i]);
		if (b->base[i] == b->want[i])
			continue;
		bool nan_ok = sweep->format == SWEEP_F16
				      ? nan_f16_ok(input, b->base[i])
				      : nan_bf16_ok(input, b->base[i]);
		if (isnan(b->in[i]) && nan_ok)
			continue;
		sweep_fail(sweep, "scalar", input, b->base[i], b->want[i]);
		return false;
	}
	return true;
}

/* Any other path must give the scalar tier's bits exactly, NaNs too. */
static bool sweep_check_same(struct sweep *sweep, const char *path,
			     const struct sweep_buffers *b)
{
	if (memcmp(b->out, b->base, sizeof b->out) == 0)
		return true;
	for (size_t i = 0; i < SWEEP_CHUNK; i++) {
		if (b->out[i] != b->base[i]) {
			sweep_fail(sweep, path, f32_bits(b->in[i]), b->out[i],
				   b->base[i]);
			break;
		}
	}
	return false;
}

static void sweep_chunk(struct sweep *sweep, struct sweep_buffers *b,
			uint32_t first)
{
	bool f16 = sweep->format == SWEEP_F16;
	enum amp_cast_pair pair = f16 ? AMP_CAST_F32_TO_F16
				      : AMP_CAST_F32_TO_BF16;
	enum amp_isa best = amp_isa_best();

	for (uint32_t i = 0; i < SWEEP_CHUNK; i++)
		b->in[i] = f32_from_bits(first + i);
	if (f16) {
		ref_f16_rows(b->want, b->in, SWEEP_CHUNK);
	} else {
		for (size_t i = 0; i < SWEEP_CHUNK; i++)
			b->want[i] = ref_bf16(b->in[i]);
	}

	amp_cast_row(AMP_ISA_SCALAR, pair)(b->base, b->in, SWEEP_CHUNK);
	if (!sweep_check_reference(sweep, b))
		return;

	/* The public functions wrap the header function the scalar tier
	 * loops over: every 16th input shows the wiring and keeps the
	 * sweep's time for the paths that differ. */
	for (size_t i = 0; i < SWEEP_CHUNK; i += 16) {
		uint16_t got = f16 ? amp_f32_to_f16(b->in[i])
				   : amp_f32_to_bf16(b->in[i]);
		if (got != b->base[i]) {
			sweep_fail(sweep, f16 ? "amp_f32_to_f16"
					      : "amp_f32_to_bf16",
				   f32_bits(b->in[i]), got, b->base[i]);
			return;
		}
	}

	/* amp_convert (the best tier) and every SIMD tier below it */
	amp_convert(b->out, f16 ? AMP_DTYPE_F16 : AMP_DTYPE_BF16, b->in,
		    AMP_DTYPE_F32, SWEEP_CHUNK);
	if (!sweep_check_same(sweep, "amp_convert", b))
		return;
	for (int isa = AMP_ISA_SCALAR + 1; isa < (int)best; isa++) {
		amp_cast_row((enum amp_isa)isa, pair)(b->out, b->in,
						      SWEEP_CHUNK);
		if (!sweep_check_same(sweep, amp_isa_name((enum amp_isa)isa),
				      b))
			return;
	}
}

static void *sweep_thread(void *arg)
{
	struct sweep *sweep = arg;
	struct sweep_buffers *b = malloc(sizeof *b);

	if (!b) {
		sweep_fail(sweep, "malloc", 0, 0, 0);
		return NULL;
	}
	for (;;) {
		uint64_t chunk = atomic_fetch_add(&sweep->next_chunk, 1);
		if (chunk >= SWEEP_CHUNKS || atomic_load(&sweep->failed))
			break;
		sweep_chunk(sweep, b, (uint32_t)(chunk * SWEEP_CHUNK));
	}
	free(b);
	return NULL;
}

static void run_sweep(enum sweep_format format)
{
	struct sweep sweep = { .format = format };
	pthread_t threads[SWEEP_MAX_THREADS];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int count = cpus < 1 ? 1 : cpus > SWEEP_MAX_THREADS ? SWEEP_MAX_THREADS
							    : (int)cpus;

	atomic_init(&sweep.next_chunk, 0);
	atomic_init(&sweep.failed, false);
	pthread_mutex_init(&sweep.lock, NULL);
	for (int i = 0; i < count; i++)
		ck_assert_int_eq(pthread_create(&threads[i], NULL,
						sweep_thread, &sweep),
				 0);
	for (int i = 0; i < count; i++)
		pthread_join(threads[i], NULL);
	pthread_mutex_destroy(&sweep.lock);
	ck_assert_msg(!atomic_load(&sweep.failed),
		      "%s: f32 0x%08x -> 0x%04x, expected 0x%04x", sweep.path,
		      sweep.input, sweep.got, sweep.want);
}

START_TEST(test_f32_to_f16_exhaustive)
{
	run_sweep(SWEEP_F16);
}
END_TEST

START_TEST(test_f32_to_bf16_exhaustive)
{
	run_sweep(SWEEP_BF16);
}
END_TEST

/* ------------------------------------------------- exhaustive 16 -> f32 */

/* Every path of one 16-bit format to f32 on all 2^16 inputs: the scalar
 * tier against `reference` (NaNs: same sign, and quiet when `quiets_nan`),
 * every other path bit-identical to the scalar tier. */
static void check_widen(enum amp_dtype format, enum amp_cast_pair pair,
			float (*reference)(uint16_t),
			float (*public_fn)(uint16_t), bool quiets_nan)
{
	enum { N = 65536 };
	static uint16_t in[N];
	static float base[N], out[N];

	for (uint32_t i = 0; i < N; i++)
		in[i] = (uint16_t)i;
	amp_cast_row(AMP_ISA_SCALAR, pair)(base, in, N);
	for (uint32_t i = 0; i < N; i++) {
		float want = reference(in[i]);
		uint32_t got = f32_bits(base[i]);
		if (isnan(want)) {
			bool quiet = (got & 0x00400000u) || !quiets_nan;
			ck_assert_msg(isnan(base[i]) && quiet &&
					      (got >> 31) == (i >> 15),
				      "0x%04x -> 0x%08x, expected a quiet NaN",
				      i, got);
			continue;
		}
		ck_assert_msg(got == f32_bits(want),
			      "0x%04x -> 0x%08x, expected 0x%08x", i, got,
			      f32_bits(want));
	}

	for (uint32_t i = 0; i < N; i++)
		out[i] = public_fn(in[i]);
	ck_assert(memcmp(out, base, sizeof out) == 0);
	amp_convert(out, AMP_DTYPE_F32, in, format, N);
	ck_assert(memcmp(out, base, sizeof out) == 0);
	for (int isa = AMP_ISA_SCALAR + 1; isa <= (int)amp_isa_best(); isa++) {
		amp_cast_row((enum amp_isa)isa, pair)(out, in, N);
		ck_assert_msg(memcmp(out, base, sizeof out) == 0, "%s",
			      amp_isa_name((enum amp_isa)isa));
	}
}

START_TEST(test_f16_to_f32_exhaustive)
{
	check_widen(AMP_DTYPE_F16, AMP_CAST_F16_TO_F32, ref_f16_to_f32,
		    amp_f16_to_f32, true);
}
END_TEST

START_TEST(test_bf16_to_f32_exhaustive)
{
	check_widen(AMP_DTYPE_BF16, AMP_CAST_BF16_TO_F32, ref_bf16_to_f32,
		    amp_bf16_to_f32, false);
	/* bf16 -> f32 is a shift: even signalling NaNs keep their bits */
	ck_assert_uint_eq(f32_bits(amp_bf16_to_f32(0x7f81)), 0x7f810000u);
}
END_TEST

/* Lengths that leave tails of every size after the vector bodies, in
 * every tier and through amp_convert, both directions. */
static void check_tails(enum amp_dtype format, enum amp_cast_pair narrow,
			enum amp_cast_pair widen, size_t n)
{
	enum { N = 100 };
	float in[N], back[N], want_back[N];
	uint16_t half[N], want[N];
	bool f16 = format == AMP_DTYPE_F16;

	for (size_t i = 0; i < N; i++)
		in[i] = (float)i * 1.37f - 50.0f + 1e-3f * (float)i;
	memset(want, 0xab, sizeof want);
	for (size_t i = 0; i < n; i++) {
		want[i] = f16 ? amp_scalar_f32_to_f16(in[i])
			      : amp_scalar_f32_to_bf16(in[i]);
		want_back[i] = f16 ? amp_scalar_f16_to_f32(want[i])
				   : amp_scalar_bf16_to_f32(want[i]);
	}
	/* tier -1 is amp_convert */
	for (int isa = -1; isa <= (int)amp_isa_best(); isa++) {
		memset(half, 0xab, sizeof half);
		memset(back, 0, sizeof back);
		if (isa < 0) {
			amp_convert(half, format, in, AMP_DTYPE_F32, n);
			amp_convert(back, AMP_DTYPE_F32, half, format, n);
		} else {
			amp_cast_row((enum amp_isa)isa, narrow)(half, in, n);
			amp_cast_row((enum amp_isa)isa, widen)(back, half, n);
		}
		ck_assert_msg(memcmp(half, want, sizeof half) == 0 &&
				      memcmp(back, want_back,
					     n * sizeof(float)) == 0,
			      "%s tier %d n=%zu", amp_dtype_name(format), isa,
			      n);
	}
}

START_TEST(test_row_tails)
{
	for (size_t n = 0; n <= 100; n++) {
		check_tails(AMP_DTYPE_F16, AMP_CAST_F32_TO_F16,
			    AMP_CAST_F16_TO_F32, n);
		check_tails(AMP_DTYPE_BF16, AMP_CAST_F32_TO_BF16,
			    AMP_CAST_BF16_TO_F32, n);
	}
}
END_TEST

/* ------------------------------------------------------ names, promotion */

static const struct {
	enum amp_dtype dtype;
	const char *name;
	const char *torch_name;
	const char *profiler_name;
	size_t size;
	bool floating;
} dtype_rows[AMP_DTYPE_COUNT] = {
	{ AMP_DTYPE_F64, "f64", "Double", "double", 8, true },
	{ AMP_DTYPE_F32, "f32", "Float", "float", 4, true },
	{ AMP_DTYPE_F16, "f16", "Half", "c10::Half", 2, true },
	{ AMP_DTYPE_BF16, "bf16", "BFloat16", "c10::BFloat16", 2, true },
	{ AMP_DTYPE_I64, "i64", "Long", "long int", 8, false },
	{ AMP_DTYPE_I32, "i32", "Int", "int", 4, false },
	{ AMP_DTYPE_BOOL, "bool", "Bool", "bool", 1, false },
};

START_TEST(test_dtype_traits)
{
	enum amp_dtype dtype = dtype_rows[_i].dtype;
	enum amp_dtype parsed = AMP_DTYPE_NONE;

	ck_assert_str_eq(amp_dtype_name(dtype), dtype_rows[_i].name);
	ck_assert_str_eq(amp_dtype_torch_name(dtype), dtype_rows[_i].torch_name);
	ck_assert_str_eq(amp_dtype_profiler_name(dtype),
			 dtype_rows[_i].profiler_name);
	ck_assert_uint_eq(amp_dtype_size(dtype), dtype_rows[_i].size);
	ck_assert(amp_dtype_is_floating(dtype) == dtype_rows[_i].floating);
	ck_assert_int_eq(amp_dtype_from_name(amp_dtype_name(dtype), &parsed), 0);
	ck_assert_int_eq(parsed, dtype);
}
END_TEST

static const struct {
	const char *name;
	enum amp_dtype dtype;
} dtype_spellings[] = {
	{ "float64", AMP_DTYPE_F64 }, { "double", AMP_DTYPE_F64 },
	{ "float32", AMP_DTYPE_F32 }, { "float", AMP_DTYPE_F32 },
	{ "float16", AMP_DTYPE_F16 }, { "half", AMP_DTYPE_F16 },
	{ "bfloat16", AMP_DTYPE_BF16 }, { "int64", AMP_DTYPE_I64 },
	{ "long", AMP_DTYPE_I64 },    { "int32", AMP_DTYPE_I32 },
	{ "int", AMP_DTYPE_I32 },     { "bool", AMP_DTYPE_BOOL },
	/* the short spellings and torch.-prefixed PyTorch ones */
	{ "fp64", AMP_DTYPE_F64 },    { "fp32", AMP_DTYPE_F32 },
	{ "fp16", AMP_DTYPE_F16 },    { "torch.float16", AMP_DTYPE_F16 },
	{ "torch.half", AMP_DTYPE_F16 }, { "torch.bfloat16", AMP_DTYPE_BF16 },
	{ "torch.float32", AMP_DTYPE_F32 }, { "torch.float", AMP_DTYPE_F32 },
	{ "torch.float64", AMP_DTYPE_F64 }, { "torch.double", AMP_DTYPE_F64 },
	{ "torch.int64", AMP_DTYPE_I64 }, { "torch.long", AMP_DTYPE_I64 },
	{ "torch.int32", AMP_DTYPE_I32 }, { "torch.int", AMP_DTYPE_I32 },
	{ "torch.bool", AMP_DTYPE_BOOL },
};

START_TEST(test_dtype_spellings)
{
	enum amp_dtype parsed = AMP_DTYPE_NONE;

	ck_assert_int_eq(amp_dtype_from_name(dtype_spellings[_i].name, &parsed),
			 0);
	ck_assert_int_eq(parsed, dtype_spellings[_i].dtype);
}
END_TEST

START_TEST(test_dtype_unknown_names)
{
	const char *bad[] = { "", "F32", "Float", "float8", "torch.f32", "torch.fp16",
			      "torch.", "fp8", "bf", "torch.float32 ",
			      "f32 ", "int16", "complex64", NULL };

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		enum amp_dtype parsed = AMP_DTYPE_NONE;
		ck_assert_int_eq(amp_dtype_from_name(bad[i], &parsed), -1);
		ck_assert_int_eq(parsed, AMP_DTYPE_NONE);
	}
	ck_assert_str_eq(amp_dtype_name(AMP_DTYPE_NONE), "none");
	ck_assert_str_eq(amp_dtype_torch_name(AMP_DTYPE_NONE), "None");
	ck_assert_str_eq(amp_dtype_profiler_name(AMP_DTYPE_NONE), "");
}
END_TEST

static void quiet_abort(const char *file, int line, const char *message)
{
	(void)file;
	(void)line;
	(void)message;
	abort();
}

START_TEST(test_dtype_invalid_aborts)
{
	amp_set_abort_handler(quiet_abort);
	amp_dtype_size((enum amp_dtype)(AMP_DTYPE_COUNT + 3));
}
END_TEST

/* torch.promote_types, from PyTorch's table (c10/core/ScalarType.cpp),
 * rows and columns in enum order: f64 f32 f16 bf16 i64 i32 bool. */
#define F8 AMP_DTYPE_F64
#define F4 AMP_DTYPE_F32
#define F2 AMP_DTYPE_F16
#define BF AMP_DTYPE_BF16
#define I8 AMP_DTYPE_I64
#define I4 AMP_DTYPE_I32
#define B1 AMP_DTYPE_BOOL
static const enum amp_dtype promotion[AMP_DTYPE_COUNT][AMP_DTYPE_COUNT] = {
	/*         f64 f32 f16 bf16 i64 i32 bool */
	/* f64 */ { F8, F8, F8, F8, F8, F8, F8 },
	/* f32 */ { F8, F4, F4, F4, F4, F4, F4 },
	/* f16 */ { F8, F4, F2, F4, F2, F2, F2 },
	/* bf16 */ { F8, F4, F4, BF, BF, BF, BF },
	/* i64 */ { F8, F4, F2, BF, I8, I8, I8 },
	/* i32 */ { F8, F4, F2, BF, I8, I4, I4 },
	/* bool */ { F8, F4, F2, BF, I8, I4, B1 },
};
#undef F8
#undef F4
#undef F2
#undef BF
#undef I8
#undef I4
#undef B1

START_TEST(test_promote_types)
{
	enum amp_dtype a = (enum amp_dtype)(_i / AMP_DTYPE_COUNT);
	enum amp_dtype b = (enum amp_dtype)(_i % AMP_DTYPE_COUNT);

	ck_assert_msg(amp_promote_types(a, b) == promotion[a][b],
		      "promote(%s, %s) = %s, expected %s", amp_dtype_name(a),
		      amp_dtype_name(b), amp_dtype_name(amp_promote_types(a, b)),
		      amp_dtype_name(promotion[a][b]));
}
END_TEST

START_TEST(test_device_names)
{
	const struct {
		const char *name;
		int status;
		enum amp_device_type device;
	} cases[] = {
		{ "cpu", 0, AMP_DEVICE_CPU },    { "cuda", 0, AMP_DEVICE_CUDA },
		{ "cuda:0", 0, AMP_DEVICE_CUDA }, { "cuda:12", 0, AMP_DEVICE_CUDA },
		{ "cpu:0", 0, AMP_DEVICE_CPU },  { "cuda:", -1, 0 },
		{ "cuda:x", -1, 0 },             { "cuda:0x", -1, 0 },
		{ "cud", -1, 0 },                { "cudaa", -1, 0 },
		{ "CUDA", -1, 0 },               { "gpu", -1, 0 },
		{ "", -1, 0 },                   { NULL, -1, 0 },
	};

	ck_assert_str_eq(amp_device_type_name(AMP_DEVICE_CPU), "cpu");
	ck_assert_str_eq(amp_device_type_name(AMP_DEVICE_CUDA), "cuda");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		enum amp_device_type device = AMP_DEVICE_TYPE_COUNT;
		ck_assert_msg(amp_device_type_from_name(cases[i].name,
							&device) ==
				      cases[i].status,
			      "%s", cases[i].name ? cases[i].name : "NULL");
		if (cases[i].status == 0)
			ck_assert_int_eq(device, cases[i].device);
	}
}
END_TEST

/* ----------------------------------------------- amp_convert, all pairs */

/* Source values for floating dtypes (each first rounded to the source
 * dtype) and for integer dtypes (each first wrapped to the source dtype). */
static const double float_edges[] = {
	NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.5, 2.5, -2.5,
	0.5, -0.99999, 3.14159265358979, 65504.0, 65519.0, 65520.0, -65520.0,
	1e-8, -1e-8, 5.9604644775390625e-08, 2.98023223876953125e-08,
	1e-40, 3.0e38, 1e300, -1e300, 2147483647.0, 2147483648.0,
	-2147483648.0, -2147483648.75, -2147483649.0, 4294967296.5,
	9223372036854775807.0, -9223372036854775808.0, 1e20, -1e20,
	1.0 + 0x1p-11 + 0x1p-40, 16777217.0,
};

static const int64_t int_edges[] = {
	INT64_MIN, INT64_MAX, (int64_t)INT32_MIN - 1, INT32_MIN, INT32_MAX,
	(int64_t)INT32_MAX + 1, 0, 1, -1, 2, 65504, 65520, -65520, 16777217,
	(INT64_C(1) << 30) + (INT64_C(1) << 22) + 1, 123456789,
	-9007199254740993,
};

union element {
	double f64;
	float f32;
	uint16_t f16;
	int64_t i64;
	int32_t i32;
	uint8_t b;
	unsigned char bytes[8];
};

/* The value a float source element holds, exactly. */
static double float_value(enum amp_dtype dtype, const union element *e)
{
	switch (dtype) {
	case AMP_DTYPE_F64: return e->f64;
	case AMP_DTYPE_F32: return e->f32;
	case AMP_DTYPE_F16: return ref_f16_to_f32(e->f16);
	case AMP_DTYPE_BF16: return ref_bf16_to_f32(e->f16);
	default: ck_abort_msg("not a float dtype");
	}
	return 0;
}

static union element make_float(enum amp_dtype dtype, double value)
{
	union element e;
	memset(&e, 0, sizeof e);
	switch (dtype) {
	case AMP_DTYPE_F64: e.f64 = value; break;
	case AMP_DTYPE_F32: e.f32 = (float)value; break;
	case AMP_DTYPE_F16: e.f16 = ref_f16((float)value); break;
	case AMP_DTYPE_BF16: e.f16 = ref_bf16((float)value); break;
	default: ck_abort_msg("not a float dtype");
	}
	return e;
}

static union element make_int(enum amp_dtype dtype, int64_t value)
{
	union element e;
	memset(&e, 0, sizeof e);
	switch (dtype) {
	case AMP_DTYPE_I64: e.i64 = value; break;
	case AMP_DTYPE_I32: e.i32 = (int32_t)(uint32_t)(uint64_t)value; break;
	case AMP_DTYPE_BOOL: e.b = value != 0; break;
	default: ck_abort_msg("not an integer dtype");
	}
	return e;
}

static int64_t int_value(enum amp_dtype dtype, const union element *e)
{
	switch (dtype) {
	case AMP_DTYPE_I64: return e->i64;
	case AMP_DTYPE_I32: return e->i32;
	case AMP_DTYPE_BOOL: return e->b;
	default: ck_abort_msg("not an integer dtype");
	}
	return 0;
}

/* PyTorch on x86: truncate; NaN and anything outside the range is the
 * integer indefinite (the most negative value). */
static int64_t ref_truncate(double value, double low, double high,
			    int64_t indefinite)
{
	if (isnan(value))
		return indefinite;
	double t = trunc(value);
	if (t < low || t > high)
		return indefinite;
	return (int64_t)t;
}

static union element expect_from_float(enum amp_dtype dst, double value)
{
	union element e;
	memset(&e, 0, sizeof e);
	switch (dst) {
	case AMP_DTYPE_F64: e.f64 = value; break;
	case AMP_DTYPE_F32: e.f32 = (float)value; break;
	/* through float, as c10::Half(float) and c10::BFloat16(float) */
	case AMP_DTYPE_F16: e.f16 = ref_f16((float)value); break;
	case AMP_DTYPE_BF16: e.f16 = ref_bf16((float)value); break;
	case AMP_DTYPE_I64:
		e.i64 = ref_truncate(value, -0x1p63, 0x1p63 - 1024.0, INT64_MIN);
		break;
	case AMP_DTYPE_I32:
		e.i32 = (int32_t)ref_truncate(value, -2147483648.0,
					      2147483647.0, INT32_MIN);
		break;
	case AMP_DTYPE_BOOL: e.b = value != 0; break;
	default: ck_abort();
	}
	return e;
}

static union element expect_from_int(enum amp_dtype dst, int64_t value)
{
	union element e;
	memset(&e, 0, sizeof e);
	switch (dst) {
	case AMP_DTYPE_F64: e.f64 = (double)value; break;
	case AMP_DTYPE_F32: e.f32 = (float)value; break;
	case AMP_DTYPE_F16: e.f16 = ref_f16((float)value); break;
	case AMP_DTYPE_BF16: e.f16 = ref_bf16((float)value); break;
	default: return make_int(dst, value);
	}
	return e;
}

static bool element_is_nan(enum amp_dtype dtype, const union element *e,
			   bool *negative)
{
	switch (dtype) {
	case AMP_DTYPE_F64:
		*negative = signbit(e->f64);
		return isnan(e->f64);
	case AMP_DTYPE_F32:
		*negative = signbit(e->f32);
		return isnan(e->f32);
	case AMP_DTYPE_F16:
		*negative = e->f16 >> 15;
		return f16_is_nan(e->f16);
	case AMP_DTYPE_BF16:
		*negative = e->f16 >> 15;
		return bf16_is_nan(e->f16);
	default: return false;
	}
}

static bool element_matches(enum amp_dtype dtype, const union element *got,
			    const union element *want)
{
	bool got_negative, want_negative;
	if (element_is_nan(dtype, want, &want_negative))
		return element_is_nan(dtype, got, &got_negative) &&
		       got_negative == want_negative;
	return memcmp(got->bytes, want->bytes, amp_dtype_size(dtype)) == 0;
}

static void format_element(char *text, size_t size, enum amp_dtype dtype,
			   const union element *e)
{
	switch (dtype) {
	case AMP_DTYPE_F64:
		snprintf(text, size, "%a (0x%016llx)", e->f64,
			 (unsigned long long)f64_bits(e->f64));
		break;
	case AMP_DTYPE_F32:
		snprintf(text, size, "%a (0x%08x)", e->f32, f32_bits(e->f32));
		break;
	case AMP_DTYPE_F16:
	case AMP_DTYPE_BF16: snprintf(text, size, "0x%04x", e->f16); break;
	default:
		snprintf(text, size, "%lld", (long long)int_value(dtype, e));
	}
}

static void check_converted(enum amp_dtype dst, enum amp_dtype src,
			    const union element *in, const union element *got,
			    const union element *want)
{
	char in_text[64], got_text[64], want_text[64];

	if (element_matches(dst, got, want))
		return;
	format_element(in_text, sizeof in_text, src, in);
	format_element(got_text, sizeof got_text, dst, got);
	format_element(want_text, sizeof want_text, dst, want);
	ck_abort_msg("%s %s -> %s: got %s, expected %s", amp_dtype_name(src),
		     in_text, amp_dtype_name(dst), got_text, want_text);
}

/* Packs elements contiguously in `dtype` and back. */
static void pack(void *dst, enum amp_dtype dtype, const union element *in,
		 size_t n)
{
	size_t size = amp_dtype_size(dtype);
	for (size_t i = 0; i < n; i++)
		memcpy((char *)dst + i * size, in[i].bytes, size);
}

static void unpack(union element *out, enum amp_dtype dtype, const void *src,
		   size_t n)
{
	size_t size = amp_dtype_size(dtype);
	for (size_t i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof out[i]);
		memcpy(out[i].bytes, (const char *)src + i * size, size);
	}
}

START_TEST(test_convert_pairs)
{
	enum amp_dtype dst = (enum amp_dtype)(_i / AMP_DTYPE_COUNT);
	enum amp_dtype src = (enum amp_dtype)(_i % AMP_DTYPE_COUNT);
	enum { N = ARRAY_SIZE(float_edges) + ARRAY_SIZE(int_edges) };
	union element in[N], want[N], got[N];
	unsigned char packed_in[N * 8], packed_out[N * 8];
	size_t n = 0;

	if (amp_dtype_is_floating(src)) {
		for (size_t i = 0; i < ARRAY_SIZE(float_edges); i++)
			in[n++] = make_float(src, float_edges[i]);
	} else {
		for (size_t i = 0; i < ARRAY_SIZE(int_edges); i++)
			in[n++] = make_int(src, int_edges[i]);
	}
	for (size_t i = 0; i < n; i++) {
		if (src == dst)
			want[i] = in[i];
		else if (amp_dtype_is_floating(src))
			want[i] = expect_from_float(dst, float_value(src, &in[i]));
		else
			want[i] = expect_from_int(dst, int_value(src, &in[i]));
	}
	pack(packed_in, src, in, n);
	amp_convert(packed_out, dst, packed_in, src, n);
	unpack(got, dst, packed_out, n);
	for (size_t i = 0; i < n; i++)
		check_converted(dst, src, &in[i], &got[i], &want[i]);
	/* a copy between equal dtypes keeps every bit, NaN payloads too */
	if (src == dst)
		ck_assert(memcmp(packed_out, packed_in,
				 n * amp_dtype_size(dst)) == 0);
}
END_TEST

/* Hand-checked results, PyTorch's on x86, for the cases that matter most. */
static const struct {
	enum amp_dtype src;
	double value;      /* float sources */
	int64_t integer;   /* integer sources */
	enum amp_dtype dst;
	uint64_t want;     /* the destination's bits (ints: the value) */
} known_casts[] = {
	{ AMP_DTYPE_F32, 65504.0, 0, AMP_DTYPE_F16, 0x7bff },
	{ AMP_DTYPE_F32, 65519.99609375, 0, AMP_DTYPE_F16, 0x7bff },
	{ AMP_DTYPE_F32, 65520.0, 0, AMP_DTYPE_F16, 0x7c00 },
	{ AMP_DTYPE_F32, -65520.0, 0, AMP_DTYPE_F16, 0xfc00 },
	{ AMP_DTYPE_F32, -0.0, 0, AMP_DTYPE_F16, 0x8000 },
	{ AMP_DTYPE_F32, 1e-8, 0, AMP_DTYPE_F16, 0x0000 },
	{ AMP_DTYPE_F32, 2.98023223876953125e-08, 0, AMP_DTYPE_F16, 0x0000 },
	{ AMP_DTYPE_F32, 3e-8, 0, AMP_DTYPE_F16, 0x0001 },
	{ AMP_DTYPE_F32, 3.14159, 0, AMP_DTYPE_F16, 0x4248 },
	{ AMP_DTYPE_F32, 3.14159, 0, AMP_DTYPE_BF16, 0x4049 },
	{ AMP_DTYPE_F32, 1e-40, 0, AMP_DTYPE_BF16, 0x0001 },
	{ AMP_DTYPE_F32, 3.4028234663852886e38, 0, AMP_DTYPE_BF16, 0x7f80 },
	{ AMP_DTYPE_F32, -INFINITY, 0, AMP_DTYPE_BF16, 0xff80 },
	/* f64 -> f16 rounds through float: 1 + 2^-11 + 2^-40 becomes the
	 * tie 1 + 2^-11, which goes to even (1.0), not up */
	{ AMP_DTYPE_F64, 1.0 + 0x1p-11 + 0x1p-40, 0, AMP_DTYPE_F16, 0x3c00 },
	{ AMP_DTYPE_F64, NAN, 0, AMP_DTYPE_I64, (uint64_t)INT64_MIN },
	{ AMP_DTYPE_F64, 1e300, 0, AMP_DTYPE_F32, 0x7f800000 },
	{ AMP_DTYPE_F64, -2147483648.75, 0, AMP_DTYPE_I32, (uint64_t)INT32_MIN },
	{ AMP_DTYPE_F64, 2147483647.9, 0, AMP_DTYPE_I32, 2147483647 },
	{ AMP_DTYPE_F32, 3e9, 0, AMP_DTYPE_I32, (uint64_t)INT32_MIN },
	{ AMP_DTYPE_F32, -1.9, 0, AMP_DTYPE_I64, (uint64_t)-1 },
	{ AMP_DTYPE_F32, INFINITY, 0, AMP_DTYPE_I64, (uint64_t)INT64_MIN },
	{ AMP_DTYPE_F32, NAN, 0, AMP_DTYPE_BOOL, 1 },
	{ AMP_DTYPE_F32, -0.0, 0, AMP_DTYPE_BOOL, 0 },
	{ AMP_DTYPE_F32, 1e-40, 0, AMP_DTYPE_BOOL, 1 },
	{ AMP_DTYPE_F16, 0.5, 0, AMP_DTYPE_I32, 0 },
	{ AMP_DTYPE_I64, 0, INT64_MAX, AMP_DTYPE_F16, 0x7c00 },
	{ AMP_DTYPE_I64, 0, INT64_MIN, AMP_DTYPE_BF16, 0xdf00 },
	{ AMP_DTYPE_I64, 0, 65520, AMP_DTYPE_F16, 0x7c00 },
	/* int64 -> bf16 rounds through float too */
	{ AMP_DTYPE_I64, 0, (INT64_C(1) << 30) + (INT64_C(1) << 22) + 1,
	  AMP_DTYPE_BF16, 0x4e80 },
	{ AMP_DTYPE_I64, 0, (int64_t)INT32_MAX + 2, AMP_DTYPE_I32,
	  (uint64_t)(INT32_MIN + 1) },
	{ AMP_DTYPE_I64, 0, INT64_C(9007199254740993), AMP_DTYPE_F64,
	  0x4340000000000000 },
	{ AMP_DTYPE_I32, 0, 16777217, AMP_DTYPE_F32, 0x4b800000 },
	{ AMP_DTYPE_I32, 0, -7, AMP_DTYPE_BOOL, 1 },
	{ AMP_DTYPE_BOOL, 0, 1, AMP_DTYPE_F16, 0x3c00 },
	{ AMP_DTYPE_BOOL, 0, 1, AMP_DTYPE_BF16, 0x3f80 },
	{ AMP_DTYPE_BOOL, 0, 1, AMP_DTYPE_I64, 1 },
};

START_TEST(test_convert_known)
{
	enum amp_dtype src = known_casts[_i].src;
	enum amp_dtype dst = known_casts[_i].dst;
	union element in = amp_dtype_is_floating(src)
				   ? make_float(src, known_casts[_i].value)
				   : make_int(src, known_casts[_i].integer);
	union element got;
	uint64_t got_bits = 0;

	memset(&got, 0, sizeof got);
	amp_convert(got.bytes, dst, in.bytes, src, 1);
	switch (dst) {
	case AMP_DTYPE_F64: got_bits = f64_bits(got.f64); break;
	case AMP_DTYPE_F32: got_bits = f32_bits(got.f32); break;
	case AMP_DTYPE_F16:
	case AMP_DTYPE_BF16: got_bits = got.f16; break;
	default: got_bits = (uint64_t)int_value(dst, &got);
	}
	ck_assert_msg(got_bits == known_casts[_i].want,
		      "case %d: %s -> %s gave 0x%llx, expected 0x%llx", _i,
		      amp_dtype_name(src), amp_dtype_name(dst),
		      (unsigned long long)got_bits,
		      (unsigned long long)known_casts[_i].want);
}
END_TEST

/* More than one chunk of the generic path, and dst == src copies. */
START_TEST(test_convert_long_rows)
{
	enum { N = 1000 };
	static int32_t ints[N];
	static double doubles[N];
	static int32_t back[N];

	for (int i = 0; i < N; i++)
		ints[i] = i * 7919 - 3000000;
	amp_convert(doubles, AMP_DTYPE_F64, ints, AMP_DTYPE_I32, N);
	for (int i = 0; i < N; i++)
		ck_assert(doubles[i] == (double)ints[i]);
	amp_convert(back, AMP_DTYPE_I32, doubles, AMP_DTYPE_F64, N);
	ck_assert(memcmp(back, ints, sizeof ints) == 0);
	amp_convert(back, AMP_DTYPE_I32, back, AMP_DTYPE_I32, N);
	ck_assert(memcmp(back, ints, sizeof ints) == 0);
	amp_convert(NULL, AMP_DTYPE_F16, NULL, AMP_DTYPE_F32, 0);
}
END_TEST

static Suite *dtype_suite(void)
{
	Suite *s = suite_create("dtype");

	TCase *names = tcase_create("names");
	tcase_add_loop_test(names, test_dtype_traits, 0, AMP_DTYPE_COUNT);
	tcase_add_loop_test(names, test_dtype_spellings, 0,
			    (int)ARRAY_SIZE(dtype_spellings));
	tcase_add_test(names, test_dtype_unknown_names);
	tcase_add_test_raise_signal(names, test_dtype_invalid_aborts, SIGABRT);
	tcase_add_loop_test(names, test_promote_types, 0,
			    AMP_DTYPE_COUNT * AMP_DTYPE_COUNT);
	tcase_add_test(names, test_device_names);
	suite_add_tcase(s, names);

	TCase *convert = tcase_create("convert");
	tcase_add_loop_test(convert, test_convert_pairs, 0,
			    AMP_DTYPE_COUNT * AMP_DTYPE_COUNT);
	tcase_add_loop_test(convert, test_convert_known, 0,
			    (int)ARRAY_SIZE(known_casts));
	tcase_add_test(convert, test_convert_long_rows);
	tcase_add_test(convert, test_row_tails);
	tcase_add_test(convert, test_f16_to_f32_exhaustive);
	tcase_add_test(convert, test_bf16_to_f32_exhaustive);
	suite_add_tcase(s, convert);

	/* Every f32 bit pattern: seconds with the threads, not minutes. */
	TCase *exhaustive = tcase_create("exhaustive");
	tcase_set_timeout(exhaustive, 280);
	tcase_add_test(exhaustive, test_f32_to_f16_exhaustive);
	tcase_add_test(exhaustive, test_f32_to_bf16_exhaustive);
	suite_add_tcase(s, exhaustive);

	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dtype_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
