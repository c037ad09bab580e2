/* The dtype layer: one traits table (names, sizes, promotion category,
 * element loaders and storers), name lookups, torch.promote_types and
 * amp_convert.  Device type names live here too: they are the same kind
 * of name table.
 *
 * Conversion semantics are PyTorch's CPU casts (c10's static_cast rules):
 *   - float -> int truncates toward zero; NaN and out-of-range values give
 *     the x86 "integer indefinite" (INT64_MIN / INT32_MIN), as PyTorch's
 *     CPU kernels do there;
 *   - x -> bool is x != 0 (NaN is true); bool -> x is 0 or 1;
 *   - int64 -> int32 wraps modulo 2^32;
 *   - anything -> f16/bf16 goes through float first, because c10::Half and
 *     c10::BFloat16 only have a float constructor: f64 -> f16 and
 *     int64 -> bf16 round twice, exactly as in PyTorch. */
#include "amp_internal.h"

#include "amp_scalar.h"
#include "cast_rows.h"

#include <assert.h>
#include <string.h>

/* Promotion order of categories: any int beats bool, any float beats any
 * int. */
enum dtype_category {
	CATEGORY_BOOL,
	CATEGORY_INT,
	CATEGORY_FLOAT,
};

/* amp_convert's generic path goes through a chunk of double (floating
 * sources, every value exact) or int64 (integer and bool sources). */
typedef void (*load_float_fn)(double *out, const void *src, size_t n);
typedef void (*load_int_fn)(int64_t *out, const void *src, size_t n);
typedef void (*store_float_fn)(void *dst, const double *in, size_t n);
typedef void (*store_int_fn)(void *dst, const int64_t *in, size_t n);

#define DEFINE_LOAD(name, src_type, value_type, expr)                        \
	static void name(value_type *out, const void *src, size_t n)          \
	{                                                                     \
		const src_type *in = src;                                     \
		for (size_t i = 0; i < n; i++) {                              \
			src_type v = in[i];                                   \
			out[i] = (expr);                                      \
		}                                                             \
	}

#define DEFINE_STORE(name, dst_type, value_type, expr)                       \
	static void name(void *dst, const value_type *in, size_t n)           \
	{                                                                     \
		dst_type *out = dst;                                          \
		for (size_t i = 0; i < n; i++) {                              \
			value_type v = in[i];                                 \
			out[i] = (dst_type)(expr);                            \
		}                                                             \
	}

/* bool is stored as a byte; any nonzero byte reads as true. */
DEFINE_LOAD(load_f64, double, double, v)
DEFINE_LOAD(load_f32, float, double, v)
DEFINE_LOAD(load_f16, uint16_t, double, amp_scalar_f16_to_f32(v))
DEFINE_LOAD(load_bf16, uint16_t, double, amp_scalar_bf16_to_f32(v))
DEFINE_LOAD(load_i64, int64_t, int64_t, v)
DEFINE_LOAD(load_i32, int32_t, int64_t, v)
DEFINE_LOAD(load_bool, uint8_t, int64_t, v != 0)

DEFINE_STORE(store_f64_from_float, double, double, v)
DEFINE_STORE(store_f64_from_int, double, int64_t, v)
DEFINE_STORE(store_f32_from_float, float, double, v)
/* Directly, not through double: one rounding. */
DEFINE_STORE(store_f32_from_int, float, int64_t, v)
DEFINE_STORE(store_f16_from_float, uint16_t, double,
	     amp_scalar_f32_to_f16((float)v))
DEFINE_STORE(store_f16_from_int, uint16_t, int64_t,
	     amp_scalar_f32_to_f16((float)v))
DEFINE_STORE(store_bf16_from_float, uint16_t, double,
	     amp_scalar_f32_to_bf16((float)v))
DEFINE_STORE(store_bf16_from_int, uint16_t, int64_t,
	     amp_scalar_f32_to_bf16((float)v))
DEFINE_STORE(store_i64_from_float, int64_t, double, amp_scalar_f64_to_i64(v))
DEFINE_STORE(store_i64_from_int, int64_t, int64_t, v)
DEFINE_STORE(store_i32_from_float, int32_t, double, amp_scalar_f64_to_i32(v))
DEFINE_STORE(store_i32_from_int, int32_t, int64_t, v)
DEFINE_STORE(store_bool_from_float, uint8_t, double, v != 0)
DEFINE_STORE(store_bool_from_int, uint8_t, int64_t, v != 0)

struct dtype_traits {
	const char *name;          /* ours: CLI, traces, SVGs */
	const char *torch_name;    /* c10::ScalarType, as in error messages */
	const char *profiler_name; /* torch.profiler "Input type" */
	/* The one alias table every CLI, the rules and the samples accept
	 * (through amp_dtype_from_name): PyTorch's spellings, which also
	 * parse with a "torch." prefix, then common short ones (fp16). */
	const char *torch_aliases[2]; /* NULL-padded */
	const char *short_alias;      /* or NULL */
	size_t size;
	enum dtype_category category;
	load_float_fn load_float;  /* floating dtypes */
	load_int_fn load_int;      /* integer and bool dtypes */
	store_float_fn store_float;
	store_int_fn store_int;
};

static_assert(AMP_DTYPE_COUNT == 7,
	      "a new dtype needs its traits row and its tests");

static const struct dtype_traits traits[] = {
	[AMP_DTYPE_F64] = { "f64", "Double", "double", { "float64", "double" }, "fp64",
			    8, CATEGORY_FLOAT, load_f64, NULL,
			    store_f64_from_float, store_f64_from_int },
	[AMP_DTYPE_F32] = { "f32", "Float", "float", { "float32", "float" }, "fp32",
			    4, CATEGORY_FLOAT, load_f32, NULL,
			    store_f32_from_float, store_f32_from_int },
	[AMP_DTYPE_F16] = { "f16", "Half", "c10::Half", { "float16", "half" }, "fp16",
			    2, CATEGORY_FLOAT, load_f16, NULL,
			    store_f16_from_float, store_f16_from_int },
	[AMP_DTYPE_BF16] = { "bf16", "BFloat16", "c10::BFloat16",
			     { "bfloat16", NULL }, NULL,
			     2, CATEGORY_FLOAT, load_bf16, NULL,
			     store_bf16_from_float, store_bf16_from_int },
	[AMP_DTYPE_I64] = { "i64", "Long", "long int", { "int64", "long" }, NULL,
			    8, CATEGORY_INT, NULL, load_i64,
			    store_i64_from_float, store_i64_from_int },
	[AMP_DTYPE_I32] = { "i32", "Int", "int", { "int32", "int" }, NULL,
			    4, CATEGORY_INT, NULL, load_i32,
			    store_i32_from_float, store_i32_from_int },
	[AMP_DTYPE_BOOL] = { "bool", "Bool", "bool", { "bool", NULL }, NULL,
			     1, CATEGORY_BOOL, NULL, load_bool,
			     store_bool_from_float, store_bool_from_int },
};
static_assert(sizeof traits / sizeof traits[0] == AMP_DTYPE_COUNT,
	      "one traits row per dtype");

static const struct dtype_traits *dtype_traits(enum amp_dtype dtype)
{
	AMP_ASSERT((unsigned)dtype < AMP_DTYPE_COUNT);
	return &traits[dtype];
}

/* The name functions also answer for AMP_DTYPE_NONE (an optional dtype
 * argument left as None) so that printing one never aborts. */
const char *amp_dtype_name(enum amp_dtype dtype)
{
	return dtype == AMP_DTYPE_NONE ? "none" : dtype_traits(dtype)->name;
}

const char *amp_dtype_torch_name(enum amp_dtype dtype)
{
	return dtype == AMP_DTYPE_NONE ? "None"
				       : dtype_traits(dtype)->torch_name;
}

const char *amp_dtype_profiler_name(enum amp_dtype dtype)
{
	return dtype == AMP_DTYPE_NONE ? ""
				       : dtype_traits(dtype)->profiler_name;
}

size_t amp_dtype_size(enum amp_dtype dtype)
{
	return dtype_traits(dtype)->size;
}

bool amp_dtype_is_floating(enum amp_dtype dtype)
{
	return dtype_traits(dtype)->category == CATEGORY_FLOAT;
}

static bool names_dtype(const struct dtype_traits *t, const char *name)
{
	bool torch = strncmp(name, "torch.", 6) == 0;

	for (size_t i = 0; i < 2 && t->torch_aliases[i]; i++)
		if (strcmp(name + (torch ? 6 : 0), t->torch_aliases[i]) == 0)
			return true;
	return !torch && (strcmp(name, t->name) == 0 ||
			  (t->short_alias && strcmp(name, t->short_alias) == 0));
}

int amp_dtype_from_name(const char *name, enum amp_dtype *out)
{
	AMP_ASSERT(out != NULL);
	if (name == NULL)
		return -1;
	for (int dtype = 0; dtype < AMP_DTYPE_COUNT; dtype++)
		if (names_dtype(&traits[dtype], name)) {
			*out = (enum amp_dtype)dtype;
			return 0;
		}
	return -1;
}

/* torch.promote_types restricted to our dtypes: the higher category wins,
 * then the wider dtype.  The one pair of equal width, f16 and bf16, has no
 * common 16-bit type and meets in f32 (PyTorch's table says the same). */
enum amp_dtype amp_promote_types(enum amp_dtype a, enum amp_dtype b)
{
	const struct dtype_traits *ta = dtype_traits(a);
	const struct dtype_traits *tb = dtype_traits(b);

	if (a == b)
		return a;
	if (ta->category != tb->category)
		return ta->category > tb->category ? a : b;
	if (ta->size != tb->size)
		return ta->size > tb->size ? a : b;
	return AMP_DTYPE_F32;
}

uint16_t amp_f32_to_f16(float value)
{
	return amp_scalar_f32_to_f16(value);
}

float amp_f16_to_f32(uint16_t bits)
{
	return amp_scalar_f16_to_f32(bits);
}

uint16_t amp_f32_to_bf16(float value)
{
	return amp_scalar_f32_to_bf16(value);
}

float amp_bf16_to_f32(uint16_t bits)
{
	return amp_scalar_bf16_to_f32(bits);
}

/* Small enough to live on the stack and in L1 next to the rows. */
#define CONVERT_CHUNK 256

void amp_convert(void *dst, enum amp_dtype dst_dtype, const void *src,
		 enum amp_dtype src_dtype, size_t n)
{
	const struct dtype_traits *to = dtype_traits(dst_dtype);
	const struct dtype_traits *from = dtype_traits(src_dtype);

	if (n == 0)
		return;
	AMP_ASSERT(dst != NULL && src != NULL);
	/* A copy, never a round trip: f16 -> f32 -> f16 would quiet
	 * signalling NaNs. */
	if (dst_dtype == src_dtype) {
		memmove(dst, src, n * to->size);
		return;
	}
	amp_row_fn row = amp_cast_row_for(dst_dtype, src_dtype);
	if (row) {
		row(dst, src, n);
		return;
	}
	for (size_t done = 0; done < n; done += CONVERT_CHUNK) {
		size_t count = n - done < CONVERT_CHUNK ? n - done
							 : CONVERT_CHUNK;
		const char *in = (const char *)src + done * from->size;
		char *out = (char *)dst + done * to->size;
		if (from->load_float) {
			double values[CONVERT_CHUNK];
			from->load_float(values, in, count);
			to->store_float(out, values, count);
		} else {
			int64_t values[CONVERT_CHUNK];
			from->load_int(values, in, count);
			to->store_int(out, values, count);
		}
	}
}

/* --------------------------------------------------------------- devices */

static const char *const device_type_names[] = {
	[AMP_DEVICE_CPU] = "cpu",
	[AMP_DEVICE_CUDA] = "cuda",
};
static_assert(sizeof device_type_names / sizeof device_type_names[0] ==
		      AMP_DEVICE_TYPE_COUNT,
	      "one name per device type");

const char *amp_device_type_name(enum amp_device_type device)
{
	AMP_ASSERT((unsigned)device < AMP_DEVICE_TYPE_COUNT);
	return device_type_names[device];
}

/* "cuda", or torch.device's "cuda:0" form: the index is checked for shape
 * only (libamp has one device per type). */
static bool device_name_matches(const char *name, const char *type)
{
	size_t length = strlen(type);
	if (strncmp(name, type, length) != 0)
		return false;
	const char *rest = name + length;
	if (*rest == ':') {
		rest++;
		if (*rest == '\0')
			return false;
		while (*rest >= '0' && *rest <= '9')
			rest++;
	}
	return *rest == '\0';
}

int amp_device_type_from_name(const char *name, enum amp_device_type *out)
{
	AMP_ASSERT(out != NULL);
	if (name == NULL)
		return -1;
	for (int device = 0; device < AMP_DEVICE_TYPE_COUNT; device++) {
		if (device_name_matches(name, device_type_names[device])) {
			*out = (enum amp_device_type)device;
			return 0;
		}
	}
	return -1;
}
