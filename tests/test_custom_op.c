/* Custom ops with custom_fwd/custom_bwd semantics (reference section 7):
 * without cast_inputs the forward runs under the current autocast state
 * and the backward under the state the forward saw; with cast_inputs the
 * floating inputs on the device are cast and the forward runs with
 * autocast off; outside autocast both are no-ops.  Also the fallback for
 * functions one cannot change: a disabled region with explicit casts. */
#include "train_helpers.h"

#include <stdlib.h>

/* What the callbacks saw. */
struct seen {
	bool forward_autocast, backward_autocast;
	enum amp_dtype forward_dtype, backward_dtype;
	enum amp_dtype input_dtypes[4];
	int backward_calls;
};
static struct seen seen;

static amp_tensor *matrix(int rows, int cols, const float *values,
			  enum amp_device_type device)
{
	int64_t shape[2] = { rows, cols };
	amp_tensor *t = amp_from_data(2, shape, AMP_DTYPE_F32, device, values);

	ck_assert_int_eq(amp_tensor_set_requires_grad(t, true), AMP_OK);
	return t;
}

/* ------------------------------------------------------ MyMM (no cast) */

static int mymm_forward(amp_custom_ctx *ctx, int ninputs,
			amp_tensor *const *inputs, int noutputs,
			amp_tensor **outputs)
{
	enum amp_device_type device = *(enum amp_device_type *)
		amp_custom_ctx_user(ctx);

	seen.forward_autocast = amp_autocast_is_enabled(device);
	seen.forward_dtype = amp_autocast_get_dtype(device);
	for (int i = 0; i < ninputs; i++)
		seen.input_dtypes[i] = amp_tensor_dtype(inputs[i]);
	int status = amp_custom_ctx_save_for_backward(ctx, 2, inputs);
	outputs[0] = amp_mm(inputs[0], inputs[1]);
	return status == AMP_OK && outputs[0] ? AMP_OK : amp_last_status();
}

/* grad.mm(b.t()), a.t().mm(grad) */
static int mymm_backward(amp_custom_ctx *ctx, int noutputs,
			 amp_tensor *const *grad_outputs, int ninputs,
			 amp_tensor **grad_inputs)
{
	enum amp_device_type device = *(enum amp_device_type *)
		amp_custom_ctx_user(ctx);
	amp_tensor *a = amp_custom_ctx_saved(ctx, 0);
	amp_tensor *b = amp_custom_ctx_saved(ctx, 1);

	seen.backward_autocast = amp_autocast_is_enabled(device);
	seen.backward_dtype = amp_autocast_get_dtype(device);
	seen.backward_calls++;
	amp_tensor *bt = amp_t(b), *at_ = amp_t(a);
	grad_inputs[0] = amp_mm(grad_outputs[0], bt);
	grad_inputs[1] = amp_mm(at_, grad_outputs[0]);
	amp_tensor_free(bt);
	amp_tensor_free(at_);
	return grad_inputs[0] && grad_inputs[1] ? AMP_OK : amp_last_status();
}

static enum amp_device_type cpu = AMP_DEVICE_CPU;

static amp_custom_op *mymm_op(enum amp_device_type *device)
{
	struct amp_custom_op_def def = {
		.name = "MyMM",
		.device = *device,
		.cast_inputs = AMP_DTYPE_NONE,
		.ninputs = 2,
		.noutputs = 1,
		.forward = mymm_forward,
		.backward = mymm_backward,
		.user = device,
	};
	amp_custom_op *op = amp_custom_op_new(&def);

	ck_assert_ptr_nonnull(op);
	return op;
}

/* a = [1 2], b = [3 4]^T: out = 11, grad a = [3 4], grad b = [1 2]^T. */
static amp_tensor *run_mymm(amp_custom_op *op, amp_tensor **a, amp_tensor **b)
{
	*a = matrix(1, 2, (float[]){ 1, 2 }, AMP_DEVICE_CPU);
	*b = matrix(2, 1, (float[]){ 3, 4 }, AMP_DEVICE_CPU);
	amp_tensor *inputs[2] = { *a, *b }, *out;
	ck_assert_int_eq(amp_custom_op_apply(op, inputs, &out), AMP_OK);
	return out;
}

static void check_mymm_grads(amp_tensor *a, amp_tensor *b)
{
	amp_tensor *ga = amp_tensor_grad(a), *gb = amp_tensor_grad(b);

	ck_assert_int_eq(amp_tensor_dtype(ga), AMP_DTYPE_F32);
	ck_assert_int_eq(amp_tensor_dtype(gb), AMP_DTYPE_F32);
	ck_assert_double_eq(at(ga, 0), 3.0);
	ck_assert_double_eq(at(ga, 1), 4.0);
	ck_assert_double_eq(at(gb, 0), 1.0);
	ck_assert_double_eq(at(gb, 1), 2.0);
	amp_tensor_free(ga);
	amp_tensor_free(gb);
}

START_TEST(test_mymm_inside_autocast)
{
	amp_custom_op *op = mymm_op(&cpu);
	amp_tensor *a, *b;

	memset(&seen, 0, sizeof seen);
	amp_autocast_enter(&AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU));
	amp_tensor *out = run_mymm(op, &a, &b);
	amp_autocast_exit();
	/* custom_fwd left the inputs alone; autocast ran the mm in bf16 */
	ck_assert(seen.forward_autocast);
	ck_assert_int_eq(seen.input_dtypes[0], AMP_DTYPE_F32);
	ck_assert_int_eq(amp_tensor_dtype(out), AMP_DTYPE_BF16);
	ck_assert_double_eq(amp_tensor_item(out), 11.0);
	ck_assert_str_eq(amp_tensor_grad_fn_name(out), "MyMMBackward");
	/* the backward, run outside any region, sees the forward's state */
	ck_assert_int_eq(amp_backward(out, NULL, false, false), AMP_OK);
	ck_assert_int_eq(seen.backward_calls, 1);
	ck_assert(seen.backward_autocast);
	ck_assert_int_eq(seen.backward_dtype, AMP_DTYPE_BF16);
	ck_assert(!amp_autocast_is_enabled(AMP_DEVICE_CPU));
	check_mymm_grads(a, b);
	amp_tensor_free(out);
	amp_tensor_free(a);
	amp_tensor_free(b);
	amp_custom_op_free(op);
	amp_custom_op_free(NULL);
}
END_TEST

/* The backward region takes the forward's dtype (ctx._dtype), f16 here. */
START_TEST(test_mymm_forward_dtype_kept)
{
	amp_custom_op *op = mymm_op(&cpu);
	struct amp_autocast_opts f16 = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
	amp_tensor *a, *b;

	f16.dtype = AMP_DTYPE_F16;
	memset(&seen, 0, sizeof seen);
	amp_autocast_enter(&f16);
	amp_tensor *out = run_mymm(op, &a, &b);
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(out), AMP_DTYPE_F16);
	ck_assert_int_eq(amp_backward(out, NULL, false, false), AMP_OK);
	ck_assert(seen.backward_autocast);
	ck_assert_int_eq(seen.backward_dtype, AMP_DTYPE_F16);
	check_mymm_grads(a, b);
	amp_tensor_free(out);
	amp_tensor_free(a);
	amp_tensor_free(b);
	amp_custom_op_free(op);
}
END_TEST

/* Outside autocast the decorators change nothing, and a backward called
 * inside a region still runs with autocast off (the forward's state). */
START_TEST(test_mymm_outside_autocast)
{
	amp_custom_op *op = mymm_op(&cpu);
	amp_tensor *a, *b;

	memset(&seen, 0, sizeof seen);
	amp_tensor *out = run_mymm(op, &a, &b);
	ck_assert(!seen.forward_autocast);
	ck_assert_int_eq(amp_tensor_dtype(out), AMP_DTYPE_F32);
	amp_autocast_enter(&AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU));
	ck_assert_int_eq(amp_backward(out, NULL, false, false), AMP_OK);
	ck_assert(amp_autocast_is_enabled(AMP_DEVICE_CPU));
	amp_autocast_exit();
	ck_assert_int_eq(seen.backward_calls, 1);
	ck_assert(!seen.backward_autocast);
	check_mymm_grads(a, b);
	amp_tensor_free(out);
	amp_tensor_free(a);
	amp_tensor_free(b);
	amp_custom_op_free(op);
}
END_TEST

/* ------------------------------------- MyFloat32Func (cast_inputs f32) */

/* Records what it was given, returns inputs[0] * 2; backward grad * 2. */
static int float32_forward(amp_custom_ctx *ctx, int ninputs,
			   amp_tensor *const *inputs, int noutputs,
			   amp_tensor **outputs)
{
	seen.forward_autocast = amp_autocast_is_enabled(AMP_DEVICE_CUDA);
	for (int i = 0; i < ninputs; i++)
		seen.input_dtypes[i] = amp_tensor_dtype(inputs[i]);
	outputs[0] = amp_mul_scalar(inputs[0], 2.0);
	return outputs[0] ? AMP_OK : amp_last_status();
}

static int float32_backward(amp_custom_ctx *ctx, int noutputs,
			    amp_tensor *const *grad_outputs, int ninputs,
			    amp_tensor **grad_inputs)
{
	seen.backward_autocast = amp_autocast_is_enabled(AMP_DEVICE_CUDA);
	seen.backward_calls++;
	seen.backward_dtype = amp_tensor_dtype(grad_outputs[0]);
	grad_inputs[0] = amp_mul_scalar(grad_outputs[0], 2.0);
	return grad_inputs[0] ? AMP_OK : amp_last_status();
}

static amp_custom_op *float32_op(int ninputs)
{
	struct amp_custom_op_def def = {
		.name = "MyFloat32Func",
		.device = AMP_DEVICE_CUDA,
		.cast_inputs = AMP_DTYPE_F32,
		.ninputs = ninputs,
		.noutputs = 1,
		.forward = float32_forward,
		.backward = float32_backward,
	};
	amp_custom_op *op = amp_custom_op_new(&def);

	ck_assert_ptr_nonnull(op);
	return op;
}

START_TEST(test_cast_inputs_inside_autocast)
{
	amp_custom_op *op = float32_op(1);
	amp_tensor *x = VEC(AMP_DTYPE_F16, AMP_DEVICE_CUDA, 1.5, -2.0);
	amp_tensor *out;

	ck_assert_int_eq(amp_tensor_set_requires_grad(x, true), AMP_OK);
	memset(&seen, 0, sizeof seen);
	amp_autocast_enter(&AMP_AUTOCAST_OPTS(AMP_DEVICE_CUDA));
	ck_assert_int_eq(amp_custom_op_apply(op, &x, &out), AMP_OK);
	ck_assert(amp_autocast_is_enabled(AMP_DEVICE_CUDA));
	amp_autocast_exit();
	/* the f16 input arrived as f32 and ran with autocast off */
	ck_assert_int_eq(seen.input_dtypes[0], AMP_DTYPE_F32);
	ck_assert(!seen.forward_autocast);
	ck_assert_int_eq(amp_tensor_dtype(out), AMP_DTYPE_F32);
	amp_tensor *sum = amp_sum(out, AMP_DTYPE_NONE);
	amp_autocast_enter(&AMP_AUTOCAST_OPTS(AMP_DEVICE_CUDA));
	ck_assert_int_eq(amp_backward(sum, NULL, false, false), AMP_OK);
	amp_autocast_exit();
	/* _fwd_used_autocast is False: the backward runs with autocast off */
	ck_assert_int_eq(seen.backward_calls, 1);
	ck_assert(!seen.backward_autocast);
	/* the engine casts the gradient back to the f16 input's dtype */
	amp_tensor *g = amp_tensor_grad(x);
	ck_assert_int_eq(amp_tensor_dtype(g), AMP_DTYPE_F16);
	ck_assert_double_eq(at(g, 0), 2.0);
	amp_tensor_free(g);
	amp_tensor_free(sum);
	amp_tensor_free(out);
	amp_tensor_free(x);
	amp_custom_op_free(op);
}
END_TEST

/* _cast only touches floating, non-f64 tensors on the op's device. */
START_TEST(test_cast_inputs_rules)
{
	amp_custom_op *op = float32_op(4);
	amp_tensor *inputs[4] = {
		VEC(AMP_DTYPE_F16, AMP_DEVICE_CUDA, 1.0),
		VEC(AMP_DTYPE_F16, AMP_DEVICE_CPU, 1.0),
		VEC(AMP_DTYPE_F64, AMP_DEVICE_CUDA, 1.0),
		VEC(AMP_DTYPE_I64, AMP_DEVICE_CUDA, 1.0),
	};
	amp_tensor *out;

	memset(&seen, 0, sizeof seen);
	amp_autocast_enter(&AMP_AUTOCAST_OPTS(AMP_DEVICE_CUDA));
	ck_assert_int_eq(amp_custom_op_apply(op, inputs, &out), AMP_OK);
	amp_autocast_exit();
	ck_assert_int_eq(seen.input_dtypes[0], AMP_DTYPE_F32);
	ck_assert_int_eq(seen.input_dtypes[1], AMP_DTYPE_F16);
	ck_assert_int_eq(seen.input_dtypes[2], AMP_DTYPE_F64);
	ck_assert_int_eq(seen.input_dtypes[3], AMP_DTYPE_I64);
	amp_tensor_free(out);

	/* outside autocast (of its device) nothing is cast */
	amp_autocast_enter(&AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU));
	ck_assert_int_eq(amp_custom_op_apply(op, inputs, &out), AMP_OK);
	amp_autocast_exit();
	ck_assert_int_eq(seen.input_dtypes[0], AMP_DTYPE_F16);
	ck_assert_int_eq(amp_tensor_dtype(out), AMP_DTYPE_F16);
	amp_tensor_free(out);
	for (int i = 0; i < 4; i++)
		amp_tensor_free(inputs[i]);
	amp_custom_op_free(op);
}
END_TEST

/* An output that is an input becomes a view: the input stays a leaf. */
static int identity_forward(amp_custom_ctx *ctx, int ninputs,
			    amp_tensor *const *inputs, int noutputs,
			    amp_tensor **outputs)
{
	outputs[0] = amp_tensor_ref(inputs[0]);
	return AMP_OK;
}

START_TEST(test_output_aliasing_input)
{
	struct amp_custom_op_def def = {
		.name = "Identity", .device = AMP_DEVICE_CPU,
		.cast_inputs = AMP_DTYPE_NONE, .ninputs = 1, .noutputs = 1,
		.forward = identity_forward, .backward = float32_backward,
	};
	amp_custom_op *op = amp_custom_op_new(&def);
	amp_tensor *x = PARAM(1.0), *out;

	ck_assert_int_eq(amp_custom_op_apply(op, &x, &out), AMP_OK);
	ck_assert_ptr_ne(out, x);
	ck_assert(amp_tensor_is_leaf(x));
	ck_assert(!amp_tensor_is_leaf(out));
	amp_tensor_free(out);
	amp_tensor_free(x);
	amp_custom_op_free(op);
}
END_TEST

/* The fallback for a function one cannot change: inside autocast, a
 * disabled region and explicit .float() casts. */
START_TEST(test_imported_function_fallback)
{
	amp_tensor *a = matrix(1, 2, (float[]){ 1, 2 }, AMP_DEVICE_CPU);
	amp_tensor *b = matrix(2, 1, (float[]){ 3, 4 }, AMP_DEVICE_CPU);
	struct amp_autocast_opts off = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);

	off.enabled = false;
	amp_autocast_enter(&AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU));
	amp_tensor *low = amp_mm(a, b);
	amp_autocast_enter(&off);
	amp_tensor *low_f32 = amp_to(low, AMP_DTYPE_F32);
	amp_tensor *bt = amp_t(b);
	amp_tensor *bt_f32 = amp_to(bt, AMP_DTYPE_F32);
	amp_tensor *out = amp_mm(low_f32, bt_f32);
	amp_autocast_exit();
	amp_autocast_exit();
	ck_assert_int_eq(amp_tensor_dtype(low), AMP_DTYPE_BF16);
	ck_assert_int_eq(amp_tensor_dtype(out), AMP_DTYPE_F32);
	ck_assert_double_eq(at(out, 1), 44.0);
	amp_tensor *all[] = { a, b, low, low_f32, bt, bt_f32, out };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		amp_tensor_free(all[i]);
}
END_TEST

static Suite *custom_op_suite(void)
{
	Suite *suite = suite_create("custom_op");
	TCase *tc = tcase_create("custom_op");

	tcase_add_test(tc, test_mymm_inside_autocast);
	tcase_add_test(tc, test_mymm_forward_dtype_kept);
	tcase_add_test(tc, test_mymm_outside_autocast);
	tcase_add_test(tc, test_cast_inputs_inside_autocast);
	tcase_add_test(tc, test_cast_inputs_rules);
	tcase_add_test(tc, test_output_aliasing_input);
	tcase_add_test(tc, test_imported_function_fallback);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(custom_op_suite());

	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
