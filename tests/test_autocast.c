/* Autocast through the real dispatcher: every policy on real tensors, the
 * cache conditions one by one, nesting and cache clearing, thread-local
 * state, the global cache, hooks, and the rules of the reference's last
 * section that concern execution. */
#include "amp.h"

#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- helpers */

#define MAX_RECORDED 256

struct recorded_cast {
	char op[32];
	enum amp_dtype from, to;
	enum amp_cache_result cache;
	bool stale;
	uint64_t source;
};

struct recorded_op {
	char op[32];
	char overload[32];
	enum amp_policy policy;
	bool autocast_enabled;
	bool emulated;
	int depth;
	char scope[32];
	enum amp_dtype out;
	uint64_t parent;
	uint64_t id;
};

static struct recorded_cast casts[MAX_RECORDED];
static struct recorded_op ops[MAX_RECORDED];
static int ncasts, nops, nscope_enter, nscope_exit, ncache_clear;
static char current_op[32];

static void record(const struct amp_event *e, void *user)
{
	(void)user;
	switch (e->kind) {
	case AMP_EVENT_OP_BEGIN:
		snprintf(current_op, sizeof current_op, "%s", e->op.op);
		break;
	case AMP_EVENT_OP_END:
		if (nops < MAX_RECORDED) {
			struct recorded_op *r = &ops[nops++];
			snprintf(r->op, sizeof r->op, "%s", e->op.op);
			snprintf(r->overload, sizeof r->overload, "%s",
				 e->op.overload);
			r->policy = e->op.policy;
			r->autocast_enabled = e->op.autocast.enabled;
			r->emulated = e->op.emulated;
			r->depth = e->op.autocast.depth;
			snprintf(r->scope, sizeof r->scope, "%s",
				 e->op.autocast.scope ? e->op.autocast.scope : "");
			r->out = e->op.noutputs ? e->op.outputs[0].dtype
						: AMP_DTYPE_COUNT;
			r->parent = e->op.parent_op_id;
			r->id = e->op.op_id;
		}
		break;
	case AMP_EVENT_CAST:
		if (ncasts < MAX_RECORDED) {
			struct recorded_cast *c = &casts[ncasts++];
			snprintf(c->op, sizeof c->op, "%s", current_op);
			c->from = e->cast.from;
			c->to = e->cast.to;
			c->cache = e->cast.cache;
			c->stale = e->cast.stale;
			c->source = e->cast.source.id;
		}
		break;
	case AMP_EVENT_SCOPE_ENTER:
		nscope_enter++;
		break;
	case AMP_EVENT_SCOPE_EXIT:
		nscope_exit++;
		break;
	case AMP_EVENT_CACHE_CLEAR:
		ncache_clear++;
		break;
	default:
		break;
	}
}

static int hook;

static void setup(void)
{
	ncasts = nops = nscope_enter = nscope_exit = ncache_clear = 0;
	hook = amp_hook_add(AMP_EVENT_MASK_ALL, record, NULL);
	ck_assert_int_gt(hook, 0);
	amp_manual_seed(1234);
}

static void teardown(void)
{
	amp_hook_remove(hook);
	ck_assert_int_eq(amp_autocast_nesting(), 0);
}

static amp_tensor *matrix(int64_t rows, int64_t cols, enum amp_dtype dtype,
			  enum amp_device_type device)
{
	amp_tensor *t = amp_randn(2, (int64_t[]){ rows, cols }, dtype, device);
	ck_assert_ptr_nonnull(t);
	return t;
}

static amp_tensor *weight(int64_t rows, int64_t cols,
			  enum amp_device_type device)
{
	amp_tensor *w = matrix(rows, cols, AMP_DTYPE_F32, device);
	ck_assert_int_eq(amp_tensor_set_requires_grad(w, true), AMP_OK);
	amp_tensor_set_name(w, "fc.weight");
	return w;
}

static void enter(enum amp_device_type device, enum amp_dtype dtype)
{
	struct amp_autocast_opts o = AMP_AUTOCAST_OPTS(device);
	o.dtype = dtype;
	ck_assert_int_eq(amp_autocast_enter(&o), AMP_OK);
}

static int count_cache(enum amp_cache_result result)
{
	int n = 0;
	for (int i = 0; i < ncasts; i++)
		n += casts[i].cache == result;
	return n;
}

static const struct recorded_op *last_op(const char *name)
{
	for (int i = nops - 1; i >= 0; i--)
		if (!strcmp(ops[i].op, name))
			return &ops[i];
	return NULL;
}

/* --------------------------------------------------------------- state */

START_TEST(test_defaults)
{
	ck_assert(!amp_autocast_is_enabled(AMP_DEVICE_CPU));
	ck_assert(!amp_autocast_is_enabled(AMP_DEVICE_CUDA));
	ck_assert_int_eq(amp_autocast_get_dtype(AMP_DEVICE_CPU), AMP_DTYPE_BF16);
	ck_assert_int_eq(amp_autocast_get_dtype(AMP_DEVICE_CUDA), AMP_DTYPE_F16);
	ck_assert(amp_autocast_cache_enabled());
	ck_assert_int_eq(amp_autocast_nesting(), 0);
	ck_assert(amp_cuda_is_emulated());
}
END_TEST

START_TEST(test_region_restores_state)
{
	struct amp_autocast_opts o = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
	o.dtype = AMP_DTYPE_F16;
	o.cache_enabled = 0;
	ck_assert_int_eq(amp_autocast_enter(&o), AMP_OK);
	ck_assert(amp_autocast_is_enabled(AMP_DEVICE_CPU));
	ck_assert(!amp_autocast_is_enabled(AMP_DEVICE_CUDA));
	ck_assert_int_eq(amp_autocast_get_dtype(AMP_DEVICE_CPU), AMP_DTYPE_F16);
	ck_assert(!amp_autocast_cache_enabled());
	ck_assert_int_eq(amp_autocast_nesting(), 1);
	amp_autocast_exit();
	ck_assert(!amp_autocast_is_enabled(AMP_DEVICE_CPU));
	ck_assert_int_eq(amp_autocast_get_dtype(AMP_DEVICE_CPU), AMP_DTYPE_BF16);
	ck_assert(amp_autocast_cache_enabled());
	ck_assert_int_eq(nscope_enter, 1);
	ck_assert_int_eq(nscope_exit, 1);
}
END_TEST

/* dtype=None and cache_enabled=None inherit the thread's current values. */
START_TEST(test_nested_region_inherits)
{
	struct amp_autocast_opts outer = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
	outer.dtype = AMP_DTYPE_F16;
	outer.cache_enabled = 0;
	ck_assert_int_eq(amp_autocast_enter(&outer), AMP_OK);
	struct amp_autocast_opts inner = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
	ck_assert_int_eq(amp_autocast_enter(&inner), AMP_OK);
	ck_assert_int_eq(amp_autocast_get_dtype(AMP_DEVICE_CPU), AMP_DTYPE_F16);
	ck_assert(!amp_autocast_cache_enabled());
	amp_tensor *a = matrix(2, 3, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *b = matrix(3, 2, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *c = amp_mm(a, b);
	ck_assert_int_eq(amp_tensor_dtype(c), AMP_DTYPE_F16);
	amp_autocast_exit();
	amp_autocast_exit();
	amp_tensor_free(a);
	amp_tensor_free(b);
	amp_tensor_free(c);
}
END_TEST

static char last_warning[512];
static void capture_warning(const char *message, void *user)
{
	(void)user;
	snprintf(last_warning, sizeof last_warning, "%s", message);
}

/* CPU autocast supports bf16 and f16; another dtype warns and disables. */
START_TEST(test_cpu_unsupported_dtype_disables)
{
	last_warning[0] = '\0';
	amp_set_warning_handler(capture_warning, NULL);
	enter(AMP_DEVICE_CPU, AMP_DTYPE_F32);
	ck_assert(!amp_autocast_is_enabled(AMP_DEVICE_CPU));
	ck_assert_ptr_nonnull(strstr(last_warning,
				     "In CPU autocast, but the target dtype is "
				     "not supported. Disabling autocast."));
	amp_tensor *a = matrix(2, 2, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *c = amp_mm(a, a);
	ck_assert_int_eq(amp_tensor_dtype(c), AMP_DTYPE_F32);
	amp_autocast_exit();
	amp_set_warning_handler(NULL, NULL);
	amp_tensor_free(a);
	amp_tensor_free(c);
}
END_TEST

static void *thread_reads_state(void *arg)
{
	bool *enabled = arg;
	amp_tensor *a = matrix(2, 2, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *c = amp_mm(a, a);
	enabled[0] = amp_autocast_is_enabled(AMP_DEVICE_CPU);
	enabled[1] = amp_tensor_dtype(c) != AMP_DTYPE_F32;
	enabled[2] = amp_autocast_nesting() != 0;
	amp_tensor_free(a);
	amp_tensor_free(c);
	return NULL;
}

/* Autocast state is per thread: a new thread starts with it off. */
START_TEST(test_second_thread_starts_off)
{
	bool seen[3] = { true, true, true };
	pthread_t thread;

	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	ck_assert_int_eq(pthread_create(&thread, NULL, thread_reads_state, seen),
			 0);
	pthread_join(thread, NULL);
	amp_autocast_exit();
	ck_assert(!seen[0]);
	ck_assert(!seen[1]);
	ck_assert(!seen[2]);
}
END_TEST

struct decorated_ctx {
	amp_tensor *a;
	enum amp_dtype seen;
	bool enabled_inside;
};

static int decorated_forward(void *user)
{
	struct decorated_ctx *ctx = user;
	amp_tensor *r = amp_mm(ctx->a, ctx->a);
	ctx->seen = amp_tensor_dtype(r);
	ctx->enabled_inside = amp_autocast_is_enabled(AMP_DEVICE_CPU);
	amp_tensor_free(r);
	return 42;
}

/* The decorator form runs the function inside a region and returns its
 * value; the state is restored afterwards. */
START_TEST(test_decorator_form)
{
	struct decorated_ctx ctx = { matrix(2, 2, AMP_DTYPE_F32, AMP_DEVICE_CPU),
				     AMP_DTYPE_COUNT, false };
	struct amp_autocast_opts o = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
	ck_assert_int_eq(amp_autocast_call(&o, decorated_forward, &ctx), 42);
	ck_assert(ctx.enabled_inside);
	ck_assert_int_eq(ctx.seen, AMP_DTYPE_BF16);
	ck_assert(!amp_autocast_is_enabled(AMP_DEVICE_CPU));
	ck_assert_int_eq(amp_autocast_nesting(), 0);
	amp_tensor_free(ctx.a);
}
END_TEST

/* ------------------------------------------------------------ policies */

START_TEST(test_lower_precision_cpu_bf16)
{
	amp_tensor *a = matrix(4, 8, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *b = matrix(8, 3, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	amp_tensor *c = amp_mm(a, b);
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(c), AMP_DTYPE_BF16);
	const struct recorded_op *r = last_op("mm");
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->policy, AMP_POLICY_LOWER_PRECISION_FP);
	ck_assert(r->autocast_enabled);
	ck_assert(!r->emulated);
	ck_assert_int_eq(ncasts, 2);
	ck_assert_int_eq(casts[0].to, AMP_DTYPE_BF16);
	ck_assert_int_eq(count_cache(AMP_CACHE_UNCACHEABLE), 2);
	amp_tensor_free(a);
	amp_tensor_free(b);
	amp_tensor_free(c);
}
END_TEST

START_TEST(test_lower_precision_cuda_emulated_f16)
{
	amp_tensor *x = matrix(4, 8, AMP_DTYPE_F32, AMP_DEVICE_CUDA);
	amp_tensor *w = weight(3, 8, AMP_DEVICE_CUDA);
	enter(AMP_DEVICE_CUDA, AMP_DTYPE_NONE);
	amp_tensor *y = amp_linear(x, w, NULL);
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(y), AMP_DTYPE_F16);
	ck_assert_int_eq(amp_tensor_device(y), AMP_DEVICE_CUDA);
	const struct recorded_op *r = last_op("linear");
	ck_assert_int_eq(r->policy, AMP_POLICY_LOWER_PRECISION_FP);
	ck_assert(r->emulated);
	amp_tensor_free(x);
	amp_tensor_free(w);
	amp_tensor_free(y);
}
END_TEST

/* Autocast of one device does not touch another device's tensors. */
START_TEST(test_other_device_untouched)
{
	amp_tensor *a = matrix(2, 2, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	enter(AMP_DEVICE_CUDA, AMP_DTYPE_NONE);
	amp_tensor *c = amp_mm(a, a);
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(c), AMP_DTYPE_F32);
	ck_assert_int_eq(ncasts, 0);
	ck_assert_int_eq(last_op("mm")->policy, AMP_POLICY_NONE);
	amp_tensor_free(a);
	amp_tensor_free(c);
}
END_TEST

START_TEST(test_fp32_policy)
{
	amp_tensor *h = matrix(2, 3, AMP_DTYPE_F16, AMP_DEVICE_CUDA);
	enter(AMP_DEVICE_CUDA, AMP_DTYPE_NONE);
	amp_tensor *e = amp_exp(h);
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(e), AMP_DTYPE_F32);
	ck_assert_int_eq(last_op("exp")->policy, AMP_POLICY_FP32);
	/* exp is not on the CPU lists: it runs in the input dtype there. */
	amp_tensor *b = matrix(2, 3, AMP_DTYPE_BF16, AMP_DEVICE_CPU);
	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	amp_tensor *eb = amp_exp(b);
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(eb), AMP_DTYPE_BF16);
	ck_assert_int_eq(last_op("exp")->policy, AMP_POLICY_NONE);
	amp_tensor_free(h);
	amp_tensor_free(e);
	amp_tensor_free(b);
	amp_tensor_free(eb);
}
END_TEST

/* mse_loss is fp32 on CPU, and f16 is eligible there even under bf16. */
START_TEST(test_cpu_fp32_list_takes_f16)
{
	amp_tensor *a = matrix(2, 3, AMP_DTYPE_F16, AMP_DEVICE_CPU);
	amp_tensor *b = matrix(2, 3, AMP_DTYPE_F16, AMP_DEVICE_CPU);
	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	amp_tensor *l = amp_mse_loss(a, b, AMP_REDUCTION_MEAN);
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(l), AMP_DTYPE_F32);
	ck_assert_int_eq(ncasts, 2);
	amp_tensor_free(a);
	amp_tensor_free(b);
	amp_tensor_free(l);
}
END_TEST

START_TEST(test_fp32_set_opt_dtype)
{
	amp_tensor *h = matrix(2, 5, AMP_DTYPE_F16, AMP_DEVICE_CUDA);
	enter(AMP_DEVICE_CUDA, AMP_DTYPE_NONE);
	amp_tensor *s = amp_softmax(h, 1, AMP_DTYPE_NONE);
	amp_tensor *s16 = amp_softmax(h, 1, AMP_DTYPE_F16);
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(s), AMP_DTYPE_F32);
	ck_assert_int_eq(amp_tensor_dtype(s16), AMP_DTYPE_F16);
	/* the policy never casts inputs */
	ck_assert_int_eq(ncasts, 0);
	ck_assert_int_eq(last_op("softmax")->policy,
			 AMP_POLICY_FP32_SET_OPT_DTYPE);
	amp_tensor_free(h);
	amp_tensor_free(s);
	amp_tensor_free(s16);
}
END_TEST

/* sum of an ineligible first argument keeps native behaviour (i32 -> i64),
 * and f64 stays f64. */
START_TEST(test_set_opt_dtype_ineligible_first_arg)
{
	int32_t values[4] = { 1, 2, 3, 4 };
	amp_tensor *i = amp_from_data(1, (int64_t[]){ 4 }, AMP_DTYPE_I32,
				      AMP_DEVICE_CUDA, values);
	amp_tensor *d = matrix(2, 2, AMP_DTYPE_F64, AMP_DEVICE_CUDA);
	enter(AMP_DEVICE_CUDA, AMP_DTYPE_NONE);
	amp_tensor *si = amp_sum(i, AMP_DTYPE_NONE);
	amp_tensor *sd = amp_sum(d, AMP_DTYPE_NONE);
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(si), AMP_DTYPE_I64);
	ck_assert_int_eq((int)amp_tensor_item(si), 10);
	ck_assert_int_eq(amp_tensor_dtype(sd), AMP_DTYPE_F64);
	amp_tensor_free(i);
	amp_tensor_free(d);
	amp_tensor_free(si);
	amp_tensor_free(sd);
}
END_TEST

START_TEST(test_promote_cpu_cat_order)
{
	amp_tensor *b = matrix(2, 2, AMP_DTYPE_BF16, AMP_DEVICE_CPU);
	amp_tensor *f = matrix(2, 2, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *h = matrix(2, 2, AMP_DTYPE_F16, AMP_DEVICE_CPU);
	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	amp_tensor *bf[2] = { b, f };
	amp_tensor *r1 = amp_cat(bf, 2, 0);
	ck_assert_int_eq(amp_tensor_dtype(r1), AMP_DTYPE_F32);
	ck_assert_int_eq(last_op("cat")->policy, AMP_POLICY_PROMOTE);
	/* f32 first: everything eligible goes to f32 */
	amp_tensor *fh[2] = { f, h };
	amp_tensor *r2 = amp_stack(fh, 2, 0);
	ck_assert_int_eq(amp_tensor_dtype(r2), AMP_DTYPE_F32);
	/* f16 before any f32 under bf16 autocast: prioritize raises */
	amp_tensor *hf[2] = { h, f };
	amp_tensor *r3 = amp_stack(hf, 2, 0);
	ck_assert_ptr_null(r3);
	ck_assert_int_eq(amp_last_status(), AMP_ERR_AUTOCAST);
	ck_assert_str_eq(amp_last_error(),
			 "Unexpected floating ScalarType in "
			 "at::autocast::prioritize");
	/* all lower precision stays lower precision */
	amp_tensor *bb[2] = { b, b };
	amp_tensor *r4 = amp_cat(bb, 2, 1);
	ck_assert_int_eq(amp_tensor_dtype(r4), AMP_DTYPE_BF16);
	amp_autocast_exit();
	amp_tensor_free(b);
	amp_tensor_free(f);
	amp_tensor_free(h);
	amp_tensor_free(r1);
	amp_tensor_free(r2);
	amp_tensor_free(r4);
}
END_TEST

/* f64 arguments are neither considered nor cast by promote. */
START_TEST(test_promote_ignores_f64)
{
	amp_tensor *h = matrix(2, 2, AMP_DTYPE_F16, AMP_DEVICE_CUDA);
	amp_tensor *d = matrix(2, 2, AMP_DTYPE_F64, AMP_DEVICE_CUDA);
	enter(AMP_DEVICE_CUDA, AMP_DTYPE_NONE);
	amp_tensor *r = amp_addcmul(h, d, h, 1.0);
	amp_autocast_exit();
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(last_op("addcmul")->policy, AMP_POLICY_PROMOTE);
	ck_assert_int_eq(ncasts, 0);
	/* native promotion then gives f64 */
	ck_assert_int_eq(amp_tensor_dtype(r), AMP_DTYPE_F64);
	amp_tensor *f = matrix(2, 2, AMP_DTYPE_F32, AMP_DEVICE_CUDA);
	enter(AMP_DEVICE_CUDA, AMP_DTYPE_NONE);
	amp_tensor *r2 = amp_addcmul(h, f, h, 1.0);
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(r2), AMP_DTYPE_F32);
	amp_tensor_free(h);
	amp_tensor_free(d);
	amp_tensor_free(f);
	amp_tensor_free(r);
	amp_tensor_free(r2);
}
END_TEST

START_TEST(test_banned_bce_on_cuda)
{
	amp_tensor *p = amp_rand(1, (int64_t[]){ 4 }, AMP_DTYPE_F32,
				 AMP_DEVICE_CUDA);
	amp_tensor *t = amp_rand(1, (int64_t[]){ 4 }, AMP_DTYPE_F32,
				 AMP_DEVICE_CUDA);
	enter(AMP_DEVICE_CUDA, AMP_DTYPE_NONE);
	amp_tensor *l = amp_binary_cross_entropy(p, t, NULL,
						 AMP_REDUCTION_MEAN);
	amp_autocast_exit();
	ck_assert_ptr_null(l);
	ck_assert_int_eq(amp_last_status(), AMP_ERR_AUTOCAST);
	ck_assert_ptr_nonnull(strstr(amp_last_error(),
				     "torch.nn.functional.binary_cross_entropy "
				     "and torch.nn.BCELoss are unsafe to "
				     "autocast."));
	ck_assert_int_eq(last_op("binary_cross_entropy")->policy,
			 AMP_POLICY_BANNED);
	/* on CPU binary_cross_entropy is simply fp32 */
	amp_tensor *pc = amp_to_device(p, AMP_DEVICE_CPU);
	amp_tensor *tc = amp_to_device(t, AMP_DEVICE_CPU);
	amp_tensor *pb = amp_to(pc, AMP_DTYPE_BF16);
	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	amp_tensor *lc = amp_binary_cross_entropy(pb, tc, NULL,
						  AMP_REDUCTION_MEAN);
	amp_autocast_exit();
	ck_assert_ptr_nonnull(lc);
	ck_assert_int_eq(amp_tensor_dtype(lc), AMP_DTYPE_F32);
	amp_tensor_free(p);
	amp_tensor_free(t);
	amp_tensor_free(pc);
	amp_tensor_free(tc);
	amp_tensor_free(pb);
	amp_tensor_free(lc);
}
END_TEST

/* f64, integer tensors pass through untouched; the op then behaves
 * natively (mm(f64, f16) under autocast is the op's own error). */
START_TEST(test_ineligible_pass_through)
{
	amp_tensor *d = matrix(2, 2, AMP_DTYPE_F64, AMP_DEVICE_CUDA);
	amp_tensor *h = matrix(2, 2, AMP_DTYPE_F16, AMP_DEVICE_CUDA);
	enter(AMP_DEVICE_CUDA, AMP_DTYPE_NONE);
	amp_tensor *dd = amp_mm(d, d);
	ck_assert_int_eq(amp_tensor_dtype(dd), AMP_DTYPE_F64);
	amp_tensor *dh = amp_mm(d, h);
	ck_assert_ptr_null(dh);
	ck_assert_int_eq(amp_last_status(), AMP_ERR_DTYPE);
	amp_autocast_exit();
	ck_assert_int_eq(ncasts, 0);
	amp_tensor_free(d);
	amp_tensor_free(h);
	amp_tensor_free(dd);
}
END_TEST

/* Inside a listed op autocast is off: CPU cross_entropy_loss (fp32) runs
 * its log_softmax and nll_loss with autocast excluded; on CUDA it is not
 * listed, so they autocast one by one. */
START_TEST(test_listed_op_excludes_inner_ops)
{
	int64_t labels[3] = { 0, 2, 1 };
	amp_tensor *logits = matrix(3, 4, AMP_DTYPE_BF16, AMP_DEVICE_CPU);
	amp_tensor *target = amp_from_data(1, (int64_t[]){ 3 }, AMP_DTYPE_I64,
					   AMP_DEVICE_CPU, labels);
	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	amp_tensor *l = amp_cross_entropy(logits, target, NULL,
					  AMP_REDUCTION_MEAN, -100);
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(l), AMP_DTYPE_F32);
	const struct recorded_op *ce = last_op("cross_entropy_loss");
	const struct recorded_op *ls = last_op("log_softmax");
	ck_assert_int_eq(ce->policy, AMP_POLICY_FP32);
	ck_assert(!ls->autocast_enabled);
	ck_assert_int_eq(ls->policy, AMP_POLICY_NONE);
	ck_assert_uint_eq(ls->parent, ce->id);

	amp_tensor *lg = amp_to_device(logits, AMP_DEVICE_CUDA);
	amp_tensor *lh = amp_to(lg, AMP_DTYPE_F16);
	amp_tensor *tg = amp_to_device(target, AMP_DEVICE_CUDA);
	enter(AMP_DEVICE_CUDA, AMP_DTYPE_NONE);
	amp_tensor *l2 = amp_cross_entropy(lh, tg, NULL, AMP_REDUCTION_MEAN,
					   -100);
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(l2), AMP_DTYPE_F32);
	ck_assert_int_eq(last_op("cross_entropy_loss")->policy, AMP_POLICY_NONE);
	ck_assert_int_eq(last_op("log_softmax")->policy,
			 AMP_POLICY_FP32_SET_OPT_DTYPE);
	ck_assert_int_eq(last_op("nll_loss")->policy, AMP_POLICY_FP32);
	amp_tensor *all[] = { logits, target, l, lg, lh, tg, l2 };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		amp_tensor_free(all[i]);
}
END_TEST

START_TEST(test_mixed_devices_error)
{
	amp_tensor *a = matrix(2, 2, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *b = matrix(2, 2, AMP_DTYPE_F32, AMP_DEVICE_CUDA);
	amp_tensor *c = amp_add(a, b);
	ck_assert_ptr_null(c);
	ck_assert_int_eq(amp_last_status(), AMP_ERR_DEVICE);
	ck_assert_str_eq(amp_last_error(),
			 "Expected all tensors to be on the same device, but "
			 "found at least two devices, cpu and cuda:0!");
	amp_tensor_free(a);
	amp_tensor_free(b);
}
END_TEST

START_TEST(test_dtype_mismatch_outside_autocast)
{
	amp_tensor *a = matrix(2, 2, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *h = matrix(2, 2, AMP_DTYPE_F16, AMP_DEVICE_CPU);
	amp_tensor_set_name(h, "act");
	amp_tensor *c = amp_mm(a, h);
	ck_assert_ptr_null(c);
	ck_assert_int_eq(amp_last_status(), AMP_ERR_DTYPE);
	ck_assert_ptr_nonnull(strstr(amp_last_error(),
				     "expected m1 and m2 to have the same "
				     "dtype, but got: float != c10::Half"));
	ck_assert_ptr_nonnull(strstr(amp_last_error(), "'act'"));
	amp_tensor_free(a);
	amp_tensor_free(h);
}
END_TEST

/* --------------------------------------------------------------- cache */

/* Runs mm(x, w) three times in one region; returns the region's casts of w. */
static void three_uses(amp_tensor *x, amp_tensor *w, int cache_enabled)
{
	struct amp_autocast_opts o = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
	o.cache_enabled = cache_enabled;
	ck_assert_int_eq(amp_autocast_enter(&o), AMP_OK);
	for (int i = 0; i < 3; i++) {
		amp_tensor *y = amp_mm(x, w);
		ck_assert_ptr_nonnull(y);
		amp_tensor_free(y);
	}
	amp_autocast_exit();
}

static int casts_of(uint64_t id, enum amp_cache_result result)
{
	int n = 0;
	for (int i = 0; i < ncasts; i++)
		n += casts[i].source == id && casts[i].cache == result;
	return n;
}

START_TEST(test_cache_leaf_weight_cast_once)
{
	amp_tensor *x = matrix(2, 4, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *w = weight(4, 4, AMP_DEVICE_CPU);
	three_uses(x, w, -1);
	ck_assert_int_eq(casts_of(amp_tensor_id(w), AMP_CACHE_MISS), 1);
	ck_assert_int_eq(casts_of(amp_tensor_id(w), AMP_CACHE_HIT), 2);
	/* the input is not a weight: cast every time */
	ck_assert_int_eq(casts_of(amp_tensor_id(x), AMP_CACHE_UNCACHEABLE), 3);
	/* cleared when the outermost region exits */
	ck_assert_uint_eq(amp_autocast_cache_stats().entries, 0);
	ck_assert_int_eq(ncache_clear, 1);
	amp_tensor_free(x);
	amp_tensor_free(w);
}
END_TEST

START_TEST(test_cache_requires_grad)
{
	amp_tensor *x = matrix(2, 4, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *w = matrix(4, 4, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	three_uses(x, w, -1);
	ck_assert_int_eq(casts_of(amp_tensor_id(w), AMP_CACHE_UNCACHEABLE), 3);
	amp_tensor_free(x);
	amp_tensor_free(w);
}
END_TEST

START_TEST(test_cache_view_of_leaf)
{
	amp_tensor *x = matrix(2, 4, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	/* a leaf requiring grad that is a view: only is_view fails */
	amp_tensor *w = matrix(4, 4, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *v = amp_transpose(w, 0, 1);
	ck_assert(amp_tensor_is_view(v));
	ck_assert(amp_tensor_is_leaf(v));
	ck_assert_int_eq(amp_tensor_set_requires_grad(v, true), AMP_OK);
	three_uses(x, v, -1);
	ck_assert_int_eq(casts_of(amp_tensor_id(v), AMP_CACHE_UNCACHEABLE), 3);
	amp_tensor_free(x);
	amp_tensor_free(w);
	amp_tensor_free(v);
}
END_TEST

START_TEST(test_cache_non_leaf)
{
	amp_tensor *x = matrix(2, 4, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *w = weight(4, 4, AMP_DEVICE_CPU);
	amp_tensor *nl = amp_mul_scalar(w, 1.0);
	ck_assert(!amp_tensor_is_leaf(nl));
	ck_assert(amp_tensor_requires_grad(nl));
	three_uses(x, nl, -1);
	ck_assert_int_eq(casts_of(amp_tensor_id(nl), AMP_CACHE_UNCACHEABLE), 3);
	amp_tensor_free(x);
	amp_tensor_free(w);
	amp_tensor_free(nl);
}
END_TEST

START_TEST(test_cache_disabled)
{
	amp_tensor *x = matrix(2, 4, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *w = weight(4, 4, AMP_DEVICE_CPU);
	three_uses(x, w, 0);
	ck_assert_int_eq(casts_of(amp_tensor_id(w), AMP_CACHE_DISABLED), 3);
	amp_tensor_free(x);
	amp_tensor_free(w);
}
END_TEST

/* Under no_grad the leaf still caches (PyTorch: 1 cast). */
START_TEST(test_cache_under_no_grad)
{
	amp_tensor *x = matrix(2, 4, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *w = weight(4, 4, AMP_DEVICE_CPU);
	bool grad = amp_set_grad_enabled(false);
	three_uses(x, w, -1);
	amp_set_grad_enabled(grad);
	ck_assert_int_eq(casts_of(amp_tensor_id(w), AMP_CACHE_MISS), 1);
	ck_assert_int_eq(casts_of(amp_tensor_id(w), AMP_CACHE_HIT), 2);
	amp_tensor_free(x);
	amp_tensor_free(w);
}
END_TEST

/* Casts to f32 (fp32 policy) of a low-precision leaf are never cached. */
START_TEST(test_cache_never_for_fp32_casts)
{
	amp_tensor *b = matrix(2, 3, AMP_DTYPE_BF16, AMP_DEVICE_CPU);
	ck_assert_int_eq(amp_tensor_set_requires_grad(b, true), AMP_OK);
	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	for (int i = 0; i < 2; i++) {
		amp_tensor *l = amp_mse_loss(b, b, AMP_REDUCTION_SUM);
		amp_tensor_free(l);
	}
	amp_autocast_exit();
	ck_assert_int_eq(casts_of(amp_tensor_id(b), AMP_CACHE_UNCACHEABLE), 4);
	amp_tensor_free(b);
}
END_TEST

/* Only the outermost exit clears, and regions of any device count, enabled
 * or not. */
START_TEST(test_cache_cleared_only_at_outermost_exit)
{
	amp_tensor *x = matrix(2, 4, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *w = weight(4, 4, AMP_DEVICE_CPU);
	struct amp_autocast_opts outer = AMP_AUTOCAST_OPTS(AMP_DEVICE_CUDA);
	outer.enabled = false;
	ck_assert_int_eq(amp_autocast_enter(&outer), AMP_OK);
	for (int i = 0; i < 2; i++) {
		enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
		amp_tensor *y = amp_mm(x, w);
		amp_tensor_free(y);
		amp_autocast_exit();
		ck_assert_uint_eq(amp_autocast_cache_stats().entries, 1);
	}
	amp_autocast_exit();
	ck_assert_uint_eq(amp_autocast_cache_stats().entries, 0);
	ck_assert_int_eq(casts_of(amp_tensor_id(w), AMP_CACHE_MISS), 1);
	ck_assert_int_eq(casts_of(amp_tensor_id(w), AMP_CACHE_HIT), 1);
	amp_tensor_free(x);
	amp_tensor_free(w);
}
END_TEST

/* An in-place update inside the region is not seen: the hit is stale. */
START_TEST(test_cache_stale_after_in_place_update)
{
	amp_tensor *x = matrix(2, 4, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *w = weight(4, 4, AMP_DEVICE_CPU);
	float twos[16];
	for (int i = 0; i < 16; i++)
		twos[i] = 2.0f;
	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	amp_tensor *y1 = amp_mm(x, w);
	ck_assert_int_eq(amp_tensor_write(w, AMP_DTYPE_F32, twos, 16), AMP_OK);
	amp_tensor *y2 = amp_mm(x, w);
	amp_autocast_exit();
	ck_assert_int_eq(casts_of(amp_tensor_id(w), AMP_CACHE_HIT), 1);
	/* the miss was fresh, the hit after the write is stale */
	for (int i = 0; i < ncasts; i++)
		if (casts[i].source == amp_tensor_id(w))
			ck_assert_int_eq(casts[i].stale,
					 casts[i].cache == AMP_CACHE_HIT);
	/* the stale copy was used: same result as before the update */
	float a[8], b[8];
	amp_tensor_read(y1, AMP_DTYPE_F32, a, 8);
	amp_tensor_read(y2, AMP_DTYPE_F32, b, 8);
	ck_assert_mem_eq(a, b, sizeof a);
	amp_tensor_free(x);
	amp_tensor_free(w);
	amp_tensor_free(y1);
	amp_tensor_free(y2);
}
END_TEST

struct shared_cache_ctx {
	amp_tensor *x, *w;
	pthread_barrier_t *cast_done, *region_done;
	int hits;
};

static void count_hits(const struct amp_event *e, void *user)
{
	struct shared_cache_ctx *ctx = user;
	if (e->cast.cache == AMP_CACHE_HIT)
		__atomic_add_fetch(&ctx->hits, 1, __ATOMIC_RELAXED);
}

static void *second_thread_uses_weight(void *arg)
{
	struct shared_cache_ctx *ctx = arg;
	pthread_barrier_wait(ctx->cast_done);
	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	amp_tensor *y = amp_mm(ctx->x, ctx->w);
	amp_tensor_free(y);
	amp_autocast_exit();
	pthread_barrier_wait(ctx->region_done);
	return NULL;
}

/* The cache is process-global (newest PyTorch): another thread's region
 * reuses the cast while the first thread's region is still open. */
START_TEST(test_cache_is_global)
{
	pthread_barrier_t cast_done, region_done;
	struct shared_cache_ctx ctx = { 0 };
	pthread_t thread;

	pthread_barrier_init(&cast_done, NULL, 2);
	pthread_barrier_init(&region_done, NULL, 2);
	ctx.x = matrix(2, 4, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	ctx.w = weight(4, 4, AMP_DEVICE_CPU);
	ctx.cast_done = &cast_done;
	ctx.region_done = &region_done;
	int h = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_CAST), count_hits, &ctx);
	pthread_create(&thread, NULL, second_thread_uses_weight, &ctx);
	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	amp_tensor *y = amp_mm(ctx.x, ctx.w);
	pthread_barrier_wait(&cast_done);
	pthread_barrier_wait(&region_done);
	amp_autocast_exit();
	pthread_join(thread, NULL);
	amp_hook_remove(h);
	ck_assert_int_eq(ctx.hits, 1);
	amp_tensor_free(y);
	amp_tensor_free(ctx.x);
	amp_tensor_free(ctx.w);
}
END_TEST

/* ------------------------------------------------------ nesting, hooks */

START_TEST(test_nested_disabled_region)
{
	amp_tensor *a = matrix(2, 2, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	amp_tensor *r1 = amp_mm(a, a);
	struct amp_autocast_opts off = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
	off.enabled = false;
	ck_assert_int_eq(amp_autocast_enter(&off), AMP_OK);
	amp_tensor *r2 = amp_mm(a, a);
	ck_assert_int_eq(amp_autocast_nesting(), 2);
	amp_autocast_exit();
	amp_tensor *r3 = amp_mm(a, a);
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(r1), AMP_DTYPE_BF16);
	ck_assert_int_eq(amp_tensor_dtype(r2), AMP_DTYPE_F32);
	ck_assert_int_eq(amp_tensor_dtype(r3), AMP_DTYPE_BF16);
	amp_tensor_free(a);
	amp_tensor_free(r1);
	amp_tensor_free(r2);
	amp_tensor_free(r3);
}
END_TEST

START_TEST(test_scope_names_and_depth)
{
	amp_tensor *a = matrix(2, 2, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	struct amp_autocast_opts o = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
	o.scope = "model";
	ck_assert_int_eq(amp_autocast_enter(&o), AMP_OK);
	struct amp_autocast_opts inner = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
	ck_assert_int_eq(amp_autocast_enter(&inner), AMP_OK);
	amp_tensor *r = amp_mm(a, a);
	amp_autocast_exit();
	amp_autocast_exit();
	const struct recorded_op *mm = last_op("mm");
	ck_assert_str_eq(mm->scope, "model");
	ck_assert_int_eq(mm->depth, 2);
	amp_tensor_free(a);
	amp_tensor_free(r);
}
END_TEST

static int exits;
static void count_exits(const struct amp_event *e, void *user)
{
	(void)e;
	(void)user;
	exits++;
}

START_TEST(test_hook_mask_and_remove)
{
	amp_tensor *a = matrix(2, 2, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	exits = 0;
	int h = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_SCOPE_EXIT), count_exits,
			     NULL);
	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	amp_tensor *r = amp_mm(a, a);
	amp_autocast_exit();
	ck_assert_int_eq(exits, 1); /* ops and casts are not delivered */
	amp_hook_remove(h);
	enter(AMP_DEVICE_CPU, AMP_DTYPE_NONE);
	amp_autocast_exit();
	ck_assert_int_eq(exits, 1);
	ck_assert_int_lt(amp_hook_add(0, count_exits, NULL), 0);
	amp_tensor_free(a);
	amp_tensor_free(r);
}
END_TEST

/* A hook slot reused by remove + add while another thread emits: the
 * emitter must call each fn with its own user pointer, never one hook's
 * fn with the previous hook's user. */
static int hook_a_tag, hook_b_tag, hook_mismatches, emitter_stop;

static void hook_a(const struct amp_event *e, void *user)
{
	(void)e;
	if (user != &hook_a_tag)
		__atomic_add_fetch(&hook_mismatches, 1, __ATOMIC_RELAXED);
}

static void hook_b(const struct amp_event *e, void *user)
{
	(void)e;
	if (user != &hook_b_tag)
		__atomic_add_fetch(&hook_mismatches, 1, __ATOMIC_RELAXED);
}

static void *emit_until_stopped(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&emitter_stop, __ATOMIC_RELAXED)) {
		struct amp_event event = { .kind = AMP_EVENT_DIAG };
		event.diag.kind = "test";
		event.diag.message = "";
		amp_hook_emit(&event);
	}
	return NULL;
}

START_TEST(test_hook_slot_reuse_while_emitting)
{
	pthread_t thread;

	hook_mismatches = emitter_stop = 0;
	ck_assert_int_eq(pthread_create(&thread, NULL, emit_until_stopped, NULL),
			 0);
	for (int i = 0; i < 20000; i++) {
		int a = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_DIAG), hook_a,
				     &hook_a_tag);
		amp_hook_remove(a);
		int b = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_DIAG), hook_b,
				     &hook_b_tag);
		ck_assert_int_eq(a, b); /* the same slot, reused */
		amp_hook_remove(b);
	}
	__atomic_store_n(&emitter_stop, 1, __ATOMIC_RELAXED);
	pthread_join(thread, NULL);
	ck_assert_int_eq(hook_mismatches, 0);
}
END_TEST

/* Emission walks the hook slots up to the highest one used: a hook in
 * the last free slot, the ones before it removed, still gets its
 * events, and none once removed. */
static int diags;
static void count_diags(const struct amp_event *e, void *user)
{
	(void)e;
	(void)user;
	diags++;
}

static void emit_diag(void)
{
	struct amp_event event = { .kind = AMP_EVENT_DIAG };
	event.diag.kind = "test";
	event.diag.message = "";
	amp_hook_emit(&event);
}

START_TEST(test_hook_in_the_last_slot_is_called)
{
	int handles[64], n = 0;

	while (n < 64 && (handles[n] = amp_hook_add(
				  AMP_EVENT_MASK(AMP_EVENT_DIAG), count_diags,
				  NULL)) > 0)
		n++;
	amp_clear_error();
	ck_assert_int_gt(n, 1);
	ck_assert_int_lt(n, 64);
	for (int i = 0; i < n - 1; i++)
		amp_hook_remove(handles[i]);
	diags = 0;
	emit_diag();
	ck_assert_int_eq(diags, 1);
	amp_hook_remove(handles[n - 1]);
	emit_diag();
	ck_assert_int_eq(diags, 1);
}
END_TEST

static void abort_to_signal(const char *file, int line, const char *message)
{
	(void)file;
	(void)line;
	(void)message;
	raise(SIGABRT);
}

START_TEST(test_exit_without_region_aborts)
{
	amp_set_abort_handler(abort_to_signal);
	amp_autocast_exit();
}
END_TEST

static Suite *autocast_suite(void)
{
	Suite *s = suite_create("autocast");
	TCase *state = tcase_create("state");
	tcase_add_checked_fixture(state, setup, teardown);
	tcase_add_test(state, test_defaults);
	tcase_add_test(state, test_hook_in_the_last_slot_is_called);
	tcase_add_test(state, test_region_restores_state);
	tcase_add_test(state, test_nested_region_inherits);
	tcase_add_test(state, test_cpu_unsupported_dtype_disables);
	tcase_add_test(state, test_second_thread_starts_off);
	tcase_add_test(state, test_decorator_form);
	tcase_add_test(state, test_nested_disabled_region);
	tcase_add_test(state, test_scope_names_and_depth);
	tcase_add_test(state, test_hook_mask_and_remove);
	tcase_add_test(state, test_hook_slot_reuse_while_emitting);
	tcase_add_test_raise_signal(state, test_exit_without_region_aborts,
				    SIGABRT);
	suite_add_tcase(s, state);

	TCase *policy = tcase_create("policy");
	tcase_add_checked_fixture(policy, setup, teardown);
	tcase_add_test(policy, test_lower_precision_cpu_bf16);
	tcase_add_test(policy, test_lower_precision_cuda_emulated_f16);
	tcase_add_test(policy, test_other_device_untouched);
	tcase_add_test(policy, test_fp32_policy);
	tcase_add_test(policy, test_cpu_fp32_list_takes_f16);
	tcase_add_test(policy, test_fp32_set_opt_dtype);
	tcase_add_test(policy, test_set_opt_dtype_ineligible_first_arg);
	tcase_add_test(policy, test_promote_cpu_cat_order);
	tcase_add_test(policy, test_promote_ignores_f64);
	tcase_add_test(policy, test_banned_bce_on_cuda);
	tcase_add_test(policy, test_ineligible_pass_through);
	tcase_add_test(policy, test_listed_op_excludes_inner_ops);
	tcase_add_test(policy, test_mixed_devices_error);
	tcase_add_test(policy, test_dtype_mismatch_outside_autocast);
	suite_add_tcase(s, policy);

	TCase *cache = tcase_create("cache");
	tcase_add_checked_fixture(cache, setup, teardown);
	tcase_add_test(cache, test_cache_leaf_weight_cast_once);
	tcase_add_test(cache, test_cache_requires_grad);
	tcase_add_test(cache, test_cache_view_of_leaf);
	tcase_add_test(cache, test_cache_non_leaf);
	tcase_add_test(cache, test_cache_disabled);
	tcase_add_test(cache, test_cache_under_no_grad);
	tcase_add_test(cache, test_cache_never_for_fp32_casts);
	tcase_add_test(cache, test_cache_cleared_only_at_outermost_exit);
	tcase_add_test(cache, test_cache_stale_after_in_place_update);
	tcase_add_test(cache, test_cache_is_global);
	suite_add_tcase(s, cache);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(autocast_suite());
	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
