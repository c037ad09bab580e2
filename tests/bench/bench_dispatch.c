/* Dispatcher overhead on small tensors: ns per op for the kernel called
 * directly, through the dispatcher with no hooks, with a no-op hook on
 * every event kind, and under autocast (which adds casts). */
#include "amp_internal.h"

#include <stdio.h>
#include <stdlib.h>

static void noop_hook(const struct amp_event *event, void *user)
{
	(void)event;
	(void)user;
}

static double best_ns_per_op(amp_tensor *a, amp_tensor *b, bool direct,
			     long iterations)
{
	double best = 1e30;

	for (int rep = 0; rep < 5; rep++) {
		uint64_t start = amp_now_ns();
		for (long i = 0; i < iterations; i++) {
			amp_tensor *out;
			if (direct) {
				struct amp_call call = {
					.op = AMP_OP_ADD,
					.nargs = 2,
					.args = { amp_arg_tensor(a),
						  amp_arg_tensor(b) },
				};
				amp_op_defs[AMP_OP_ADD].forward(&call);
				out = call.outputs[0];
			} else {
				out = amp_add(a, b);
			}
			amp_tensor_free(out);
		}
		double ns = (double)(amp_now_ns() - start) / (double)iterations;
		if (ns < best)
			best = ns;
	}
	return best;
}

static double best_mm_ns(amp_tensor *a, amp_tensor *w, long iterations)
{
	double best = 1e30;

	for (int rep = 0; rep < 5; rep++) {
		uint64_t start = amp_now_ns();
		for (long i = 0; i < iterations; i++)
			amp_tensor_free(amp_mm(a, w));
		double ns = (double)(amp_now_ns() - start) / (double)iterations;
		if (ns < best)
			best = ns;
	}
	return best;
}

int main(int argc, char **argv)
{
	long iterations = argc > 1 ? atol(argv[1]) : 200000;
	amp_tensor *a = amp_randn(1, (int64_t[]){ 4 }, AMP_DTYPE_F32,
				  AMP_DEVICE_CPU);
	amp_tensor *b = amp_randn(1, (int64_t[]){ 4 }, AMP_DTYPE_F32,
				  AMP_DEVICE_CPU);
	amp_tensor *m = amp_randn(2, (int64_t[]){ 4, 4 }, AMP_DTYPE_F32,
				  AMP_DEVICE_CPU);
	amp_tensor *w = amp_randn(2, (int64_t[]){ 4, 4 }, AMP_DTYPE_F32,
				  AMP_DEVICE_CPU);
	amp_tensor_set_requires_grad(w, true);

	double kernel = best_ns_per_op(a, b, true, iterations);
	double plain = best_ns_per_op(a, b, false, iterations);
	int hook = amp_hook_add(AMP_EVENT_MASK_ALL, noop_hook, NULL);
	double hooked = best_ns_per_op(a, b, false, iterations);
	amp_hook_remove(hook);

	struct amp_autocast_opts o = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
	double mm_plain = best_mm_ns(m, w, iterations / 4);
	amp_autocast_enter(&o);
	double add_autocast = best_ns_per_op(a, b, false, iterations);
	double mm_autocast = best_mm_ns(m, w, iterations / 4);
	amp_autocast_exit();

	printf("dispatcher overhead, add(f32[4], f32[4]), best of 5 x %ld\n",
	       iterations);
	printf("  %-44s %8.1f ns/op\n", "kernel called directly", kernel);
	printf("  %-44s %8.1f ns/op  (+%.1f)\n", "dispatched, no hooks", plain,
	       plain - kernel);
	printf("  %-44s %8.1f ns/op  (+%.1f)\n", "dispatched, no-op hook on all events",
	       hooked, hooked - kernel);
	printf("  %-44s %8.1f ns/op  (+%.1f)\n",
	       "dispatched, cpu autocast on (add not listed)", add_autocast,
	       add_autocast - kernel);
	printf("mm(f32[4,4], weight f32[4,4]):\n");
	printf("  %-44s %8.1f ns/op\n", "no autocast", mm_plain);
	printf("  %-44s %8.1f ns/op\n",
	       "cpu autocast (2 casts, weight cached)", mm_autocast);
	amp_tensor_free(a);
	amp_tensor_free(b);
	amp_tensor_free(m);
	amp_tensor_free(w);
	return 0;
}
