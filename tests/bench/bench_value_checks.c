/* The cost of libamp's value checks (fp16-overflow, cast-underflow; see
 * lib/diag.c): ms per step of a small training loop (a 3-layer MLP,
 * autocast to f16 and to bf16 on cpu, GradScaler, SGD) with
 * amp_set_value_checks(false) and (true), best of several repetitions.
 * The checks read every low-precision output and every cast, so their cost
 * grows with activation size, not with the op count. */
#include "amp.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LAYERS 3
#define REPETITIONS 3
#define STEPS 20

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static amp_tensor *must(amp_tensor *t)
{
	if (!t) {
		fprintf(stderr, "bench_value_checks: %s\n", amp_last_error());
		exit(1);
	}
	return t;
}

struct model {
	amp_tensor *weights[LAYERS];
	amp_optimizer *sgd;
	amp_grad_scaler *scaler;
	amp_tensor *input;
};

static void model_init(struct model *m, int64_t batch, int64_t width)
{
	int64_t wshape[2] = { width, width }, xshape[2] = { batch, width };

	amp_manual_seed(1);
	for (int l = 0; l < LAYERS; l++) {
		amp_tensor *w = must(amp_randn(2, wshape, AMP_DTYPE_F32, AMP_DEVICE_CPU));
		m->weights[l] = must(amp_mul_scalar(w, 0.05));
		amp_tensor_free(w);
		amp_tensor_set_requires_grad(m->weights[l], true);
	}
	m->sgd = amp_sgd_new(m->weights, LAYERS, 0.01, 0, 0, 0, false);
	m->scaler = amp_grad_scaler_new(NULL);
	m->input = must(amp_randn(2, xshape, AMP_DTYPE_F32, AMP_DEVICE_CPU));
	if (!m->sgd || !m->scaler)
		must(NULL);
}

static void model_free(struct model *m)
{
	for (int l = 0; l < LAYERS; l++)
		amp_tensor_free(m->weights[l]);
	amp_optimizer_free(m->sgd);
	amp_grad_scaler_free(m->scaler);
	amp_tensor_free(m->input);
}

static void step(struct model *m, enum amp_dtype dtype)
{
	struct amp_autocast_opts o = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
	o.dtype = dtype;

	amp_optimizer_zero_grad(m->sgd);
	amp_autocast_enter(&o);
	amp_tensor *h = amp_tensor_ref(m->input);
	for (int l = 0; l < LAYERS; l++) {
		amp_tensor *y = must(amp_mm(h, m->weights[l]));
		amp_tensor_free(h);
		h = must(amp_relu(y));
		amp_tensor_free(y);
	}
	amp_tensor *loss = must(amp_mean(h, AMP_DTYPE_F32));
	amp_autocast_exit();
	amp_tensor *scaled = must(amp_grad_scaler_scale(m->scaler, loss));
	if (amp_backward(scaled, NULL, false, false) != AMP_OK ||
	    amp_grad_scaler_step(m->scaler, m->sgd, NULL) != AMP_OK ||
	    amp_grad_scaler_update(m->scaler) != AMP_OK)
		must(NULL);
	amp_tensor_free(scaled);
	amp_tensor_free(loss);
	amp_tensor_free(h);
}

static double ms_per_step(struct model *m, enum amp_dtype dtype, bool checks)
{
	double best = 1e30;

	amp_set_value_checks(checks);
	step(m, dtype); /* warm-up */
	for (int r = 0; r < REPETITIONS; r++) {
		double start = now();
		for (int s = 0; s < STEPS; s++)
			step(m, dtype);
		double ms = (now() - start) * 1e3 / STEPS;
		if (ms < best)
			best = ms;
	}
	amp_set_value_checks(false);
	return best;
}

int main(void)
{
	static const int64_t sizes[][2] = { { 32, 128 }, { 128, 512 } };
	static const enum amp_dtype dtypes[] = { AMP_DTYPE_F16, AMP_DTYPE_BF16 };

	printf("value checks: ms/step, %d-layer MLP, cpu autocast, best of %d x %d "
	       "steps\n", LAYERS, REPETITIONS, STEPS);
	printf("%-6s %-12s %10s %10s %9s\n", "dtype", "batch x width", "off",
	       "on", "overhead");
	for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
		for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
			struct model m;
			model_init(&m, sizes[s][0], sizes[s][1]);
			double off = ms_per_step(&m, dtypes[d], false);
			double on = ms_per_step(&m, dtypes[d], true);
			char shape[32];
			snprintf(shape, sizeof shape, "%lld x %lld",
				 (long long)sizes[s][0], (long long)sizes[s][1]);
			printf("%-6s %-12s %10.3f %10.3f %8.1f%%\n",
			       amp_dtype_name(dtypes[d]), shape, off, on,
			       100.0 * (on - off) / off);
			model_free(&m);
		}
	}
	return 0;
}
