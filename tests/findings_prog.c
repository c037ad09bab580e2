/* A libamp program for the findings tests: each mode makes one AMP mistake
 * (or its fix) on purpose; test_findings runs it under `amptrace run` and
 * checks which findings the trace yields.
 *
 *   findings_prog MODE   (modes in the table at the bottom; each mistake
 *                         has a fixed twin that must give no finding) */
#include "amp.h"

#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static amp_tensor *check(amp_tensor *t, const char *what)
{
	if (!t) {
		fprintf(stderr, "findings_prog: %s: %s\n", what, amp_last_error());
		exit(3);
	}
	return t;
}

static void check_status(int status, const char *what)
{
	if (status != AMP_OK) {
		fprintf(stderr, "findings_prog: %s: %s\n", what, amp_last_error());
		exit(3);
	}
}

static amp_tensor *filled(int64_t rows, int64_t cols, double value)
{
	int64_t shape[2] = { rows, cols };
	return check(amp_full(2, shape, value, AMP_DTYPE_F32, AMP_DEVICE_CPU),
		     "full");
}

static amp_tensor *weight(int64_t rows, int64_t cols, const char *name)
{
	int64_t shape[2] = { rows, cols };
	amp_tensor *w = check(amp_randn(2, shape, AMP_DTYPE_F32, AMP_DEVICE_CPU),
			      "randn");
	amp_tensor *scaled = check(amp_mul_scalar(w, 0.1), "mul");
	amp_tensor_free(w);
	check_status(amp_tensor_set_requires_grad(scaled, true), "requires_grad");
	amp_tensor_set_name(scaled, name);
	return scaled;
}

static void enter(enum amp_device_type device, enum amp_dtype dtype,
		  const char *scope)
{
	struct amp_autocast_opts o = AMP_AUTOCAST_OPTS(device);
	o.dtype = dtype;
	o.scope = scope;
	check_status(amp_autocast_enter(&o), "autocast");
}

static void free_all(amp_tensor **tensors, int count)
{
	for (int i = 0; i < count; i++)
		amp_tensor_free(tensors[i]);
}

/* ----------------------------------------------- training-loop mistakes */

/* loss = sum(mm(x, w)), `steps` SGD steps.  whole_region: one autocast
 * region around the loop (backward and the optimizer step inside it);
 * otherwise a region around the forward only.  new_weight: a new weight
 * every step (a module rebuilt per batch), so the cache keeps growing. */
static void train(int steps, bool whole_region, bool new_weight)
{
	amp_tensor *x = filled(8, 16, 0.5);
	amp_tensor *w = weight(16, 16, "layer.weight");
	amp_grad_scaler *scaler = amp_grad_scaler_new(NULL);

	if (!scaler)
		check(NULL, "scaler");
	if (whole_region)
		enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "loop");
	for (int step = 0; step < steps; step++) {
		if (new_weight && step) {
			amp_tensor_free(w);
			w = weight(16, 16, "layer.weight");
		}
		amp_optimizer *sgd = amp_sgd_new(&w, 1, 0.1, 0, 0, 0, false);
		if (!sgd)
			check(NULL, "sgd");
		if (!whole_region)
			enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "forward");
		amp_tensor *y = check(amp_mm(x, w), "mm");
		amp_tensor *loss = check(amp_sum(y, AMP_DTYPE_NONE), "sum");
		if (!whole_region)
			amp_autocast_exit();
		amp_tensor *scaled = check(amp_grad_scaler_scale(scaler, loss),
					   "scale");
		check_status(amp_backward(scaled, NULL, false, false), "backward");
		check_status(amp_grad_scaler_step(scaler, sgd, NULL),
			     "step");
		check_status(amp_grad_scaler_update(scaler), "update");
		amp_optimizer_free(sgd);
		amp_tensor *done[] = { y, loss, scaled };
		free_all(done, 3);
	}
	if (whole_region)
		amp_autocast_exit();
	amp_grad_scaler_free(scaler);
	amp_tensor *done[] = { x, w };
	free_all(done, 2);
}

static void mode_backward_inside(void) { train(3, true, false); }

/* A region per micro-batch around forward and backward, no optimizer
 * step: each region after the first is entered right after a backward. */
static void mode_backward_per_step(void)
{
	amp_tensor *x = filled(8, 16, 0.5);
	amp_tensor *w = weight(16, 16, "layer.weight");

	for (int step = 0; step < 3; step++) {
		enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "micro");
		amp_tensor *y = check(amp_mm(x, w), "mm");
		amp_tensor *loss = check(amp_sum(y, AMP_DTYPE_NONE), "sum");
		check_status(amp_backward(loss, NULL, false, false), "backward");
		amp_autocast_exit();
		amp_tensor *done[] = { y, loss };
		free_all(done, 2);
	}
	amp_tensor *done[] = { x, w };
	free_all(done, 2);
}
static void mode_backward_outside(void) { train(3, false, false); }
static void mode_growth(void) { train(6, true, true); }
static void mode_no_growth(void) { train(6, false, true); }

/* GradScaler: an inf injected into the gradient on `inject_every`-th
 * steps (0: never). */
/* Injects an inf into the gradient every `inject_every` steps, and in
 * the first `calibrating` steps (GradScaler calibrating its scale). */
static void scaler_loop_of(int steps, int inject_every, int calibrating,
			   double x_value, enum amp_dtype dtype)
{
	amp_tensor *x = filled(4, 8, x_value);
	amp_tensor *w = weight(8, 8, "fc.weight");
	amp_optimizer *sgd = amp_sgd_new(&w, 1, 0.01, 0, 0, 0, false);
	amp_grad_scaler *scaler = amp_grad_scaler_new(NULL);

	if (!sgd || !scaler)
		check(NULL, "sgd/scaler");
	for (int step = 1; step <= steps; step++) {
		amp_optimizer_zero_grad(sgd);
		enter(AMP_DEVICE_CPU, dtype, "forward");
		amp_tensor *y = check(amp_mm(x, w), "mm");
		amp_tensor *loss = check(amp_mean(y, AMP_DTYPE_F32), "mean");
		amp_autocast_exit();
		amp_tensor *scaled = check(amp_grad_scaler_scale(scaler, loss),
					   "scale");
		check_status(amp_backward(scaled, NULL, false, false), "backward");
		if ((inject_every && step % inject_every == 0) ||
		    step <= calibrating) {
			amp_tensor *g = amp_tensor_grad(w);
			float values[64];
			check_status(amp_tensor_read(g, AMP_DTYPE_F32, values, 64),
				     "read grad");
			values[3] = INFINITY;
			check_status(amp_tensor_write(g, AMP_DTYPE_F32, values, 64),
				     "write grad");
			amp_tensor_free(g);
		}
		check_status(amp_grad_scaler_step(scaler, sgd, NULL), "step");
		check_status(amp_grad_scaler_update(scaler), "update");
		amp_tensor *done[] = { y, loss, scaled };
		free_all(done, 3);
	}
	amp_grad_scaler_free(scaler);
	amp_optimizer_free(sgd);
	amp_tensor *done[] = { x, w };
	free_all(done, 2);
}

static void scaler_loop(int steps, int inject_every, int calibrating)
{
	scaler_loop_of(steps, inject_every, calibrating, 0.5, AMP_DTYPE_BF16);
}

/* f16 with inputs of 10: at GradScaler's first scale (65536) the backward
 * mm's weight gradient, 4 x 10 x 65536 / 32 = 81920, overflows f16; the
 * scaler skips that step and halves the scale, and the rest fit. */
static void mode_scaler_start(void)
{
	scaler_loop_of(6, 0, 0, 10.0, AMP_DTYPE_F16);
}

static void mode_scaler_skip(void) { scaler_loop(6, 3, 0); }
static void mode_scaler_collapse(void) { scaler_loop(12, 1, 0); }
static void mode_scaler_clean(void) { scaler_loop(6, 0, 0); }
static void mode_scaler_calibrate(void) { scaler_loop(6, 0, 2); }

/* ------------------------------------------------------------ threads */

struct replica {
	amp_tensor *input, *output;
	bool own_region;
};

static void *worker(void *arg)
{
	struct replica *r = arg;
	amp_tensor *w = weight(8, 8, "replica.weight");

	if (r->own_region)
		enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "replica.forward");
	r->output = check(amp_linear(r->input, w, NULL), "linear");
	if (r->own_region)
		amp_autocast_exit();
	amp_tensor_free(w);
	return NULL;
}

/* DataParallel's forward inside the main thread's region: the batch
 * scattered to two workers, their outputs gathered. */
static void data_parallel(bool own_region)
{
	pthread_t threads[2];
	struct replica replicas[2];
	amp_tensor *x = filled(4, 8, 1.0);

	enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "main");
	for (int i = 0; i < 2; i++) {
		replicas[i] = (struct replica){
			.input = check(amp_slice(x, 0, 2 * i, 2 * i + 2, 1), "scatter"),
			.own_region = own_region,
		};
		if (pthread_create(&threads[i], NULL, worker, &replicas[i]) != 0)
			check(NULL, "pthread_create");
	}
	for (int i = 0; i < 2; i++)
		pthread_join(threads[i], NULL);
	amp_tensor *outputs[2] = { replicas[0].output, replicas[1].output };
	amp_tensor *gathered = check(amp_cat(outputs, 2, 0), "gather");
	amp_autocast_exit();
	amp_tensor *done[] = { x, gathered, replicas[0].input, replicas[1].input,
			       outputs[0], outputs[1] };
	free_all(done, 6);
}

static void mode_thread_pitfall(void) { data_parallel(false); }
static void mode_thread_fix(void) { data_parallel(true); }

/* Sibling workers, no region in the main thread: the first enters its
 * own region and stays in it while the second, started then, runs an f32
 * linear on tensors of its own.  Nothing passes between them: the second
 * does no work for the first's region. */
static sem_t sibling_entered, sibling_release;

static void *sibling_autocast(void *arg)
{
	amp_tensor *x = filled(4, 8, 1.0);
	amp_tensor *w = weight(8, 8, "a.weight");

	(void)arg;
	enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "a.forward");
	amp_tensor *y = check(amp_linear(x, w, NULL), "linear");
	sem_post(&sibling_entered);
	sem_wait(&sibling_release);
	amp_autocast_exit();
	amp_tensor *done[] = { x, w, y };
	free_all(done, 3);
	return NULL;
}

static void *sibling_f32(void *arg)
{
	amp_tensor *x = filled(4, 8, 1.0);
	amp_tensor *w = weight(8, 8, "b.weight");

	(void)arg;
	amp_tensor *y = check(amp_linear(x, w, NULL), "linear");
	amp_tensor *done[] = { x, w, y };
	free_all(done, 3);
	return NULL;
}

/* A worker started inside the main thread's region runs the region's
 * own layer (its weight) on an input made before the region, with no
 * region of its own: nothing is handed over, but it runs the parameters
 * the region runs.  The fix gives the worker a layer of its own. */
struct shared_layer {
	amp_tensor *input, *weight, *output;
};

static void *shared_worker(void *arg)
{
	struct shared_layer *s = arg;

	s->output = check(amp_linear(s->input, s->weight, NULL), "linear");
	return NULL;
}

static void shared_layer(bool own)
{
	amp_tensor *x = filled(4, 8, 1.0);
	amp_tensor *w = weight(8, 8, "layer.weight");
	amp_tensor *w2 = own ? weight(8, 8, "other.weight") : amp_tensor_ref(w);
	struct shared_layer s = { .input = x, .weight = w2 };
	pthread_t thread;

	enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "main");
	amp_tensor *y = check(amp_linear(x, w, NULL), "linear");
	if (pthread_create(&thread, NULL, shared_worker, &s) != 0)
		check(NULL, "pthread_create");
	pthread_join(thread, NULL);
	amp_autocast_exit();
	amp_tensor *done[] = { x, w, w2, y, s.output };
	free_all(done, 5);
}

static void mode_thread_shared(void) { shared_layer(false); }
static void mode_thread_own(void) { shared_layer(true); }

static void mode_thread_siblings(void)
{
	pthread_t a, b;

	if (sem_init(&sibling_entered, 0, 0) || sem_init(&sibling_release, 0, 0) ||
	    pthread_create(&a, NULL, sibling_autocast, NULL))
		check(NULL, "sibling a");
	sem_wait(&sibling_entered);
	if (pthread_create(&b, NULL, sibling_f32, NULL))
		check(NULL, "sibling b");
	pthread_join(b, NULL);
	sem_post(&sibling_release);
	pthread_join(a, NULL);
}

/* --------------------------------------------------- dtype mismatch */

/* h = mm(x, w) under autocast (bf16), then mm(h, w2) outside: PyTorch
 * rejects bf16 x f32; the fix casts h back with .float(). */
static void mismatch(bool fixed)
{
	amp_tensor *x = filled(4, 8, 1.0);
	amp_tensor *w = weight(8, 8, "encoder.weight");
	amp_tensor *w2 = weight(8, 8, "head.weight");

	enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "encoder");
	amp_tensor *h = check(amp_mm(x, w), "mm");
	amp_autocast_exit();
	amp_tensor *input = fixed ? check(amp_to(h, AMP_DTYPE_F32), "to") : amp_tensor_ref(h);
	amp_tensor *z = amp_mm(input, w2);
	if (fixed)
		check(z, "mm after .float()");
	amp_tensor *done[] = { x, w, w2, h, input, z };
	free_all(done, 6);
}

static void mode_mismatch(void) { mismatch(false); }
static void mode_mismatch_fixed(void) { mismatch(true); }

/* ---------------------------------------- the cache's copy in a dtype */

/* mm(w, v) of two weights in an f16 region, then again in a bf16 region
 * nested in it: the cache, keyed by each weight alone, hands the nested
 * mm both f16 copies and it runs in f16 without a word.  fixed: the bf16
 * region follows the f16 one instead of nesting in it, the cache emptied
 * between them. */
static void cache_dtypes(bool fixed)
{
	amp_tensor *w = weight(16, 16, "layer.weight");
	amp_tensor *v = weight(16, 16, "other.weight");

	enter(AMP_DEVICE_CPU, AMP_DTYPE_F16, "outer");
	amp_tensor_free(check(amp_mm(w, v), "mm"));
	if (fixed)
		amp_autocast_exit();
	enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "inner");
	amp_tensor_free(check(amp_mm(w, v), "mm"));
	amp_autocast_exit();
	if (!fixed)
		amp_autocast_exit();
	amp_tensor *done[] = { w, v };
	free_all(done, 2);
}

static void mode_cache_dtypes(void) { cache_dtypes(false); }
static void mode_cache_dtypes_fixed(void) { cache_dtypes(true); }

/* The same nesting with one dtype: the nested mm's hits are in the
 * region's dtype, as the cache is meant to serve. */
static void mode_cache_same_dtype(void)
{
	amp_tensor *w = weight(16, 16, "layer.weight");
	amp_tensor *v = weight(16, 16, "other.weight");

	enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "outer");
	amp_tensor_free(check(amp_mm(w, v), "mm"));
	enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "inner");
	amp_tensor_free(check(amp_mm(w, v), "mm"));
	amp_autocast_exit();
	amp_autocast_exit();
	amp_tensor *done[] = { w, v };
	free_all(done, 2);
}

/* ------------------------------------------------- cache_enabled off */

/* With the cache off, mm(w, v) twice in one region casts each weight
 * twice: the second casts are the cache's work redone.  once: one mm
 * per region, the weights cast once in each, as a cache would (it is
 * emptied when the outermost region exits); the regions are one name
 * entered twice, as a training loop's are. */
static void cache_off(bool once)
{
	amp_tensor *w = weight(16, 16, "layer.weight");
	amp_tensor *v = weight(16, 16, "other.weight");
	struct amp_autocast_opts o = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);

	o.dtype = AMP_DTYPE_BF16;
	o.cache_enabled = 0;
	o.scope = "loop";
	for (int region = 0; region < 2; region++) {
		check_status(amp_autocast_enter(&o), "autocast");
		for (int use = 0; use < (once ? 1 : 2); use++)
			amp_tensor_free(check(amp_mm(w, v), "mm"));
		amp_autocast_exit();
	}
	amp_tensor *done[] = { w, v };
	free_all(done, 2);
}

static void mode_cache_off_twice(void) { cache_off(false); }
static void mode_cache_off_once(void) { cache_off(true); }

/* ------------------------------------------------ overflow, underflow */

/* mm of 64-wide rows of 300s: each sum is 5.76e6, above f16's 65504. */
static void big_matmul(enum amp_dtype dtype)
{
	amp_tensor *x = filled(4, 64, 300.0);
	amp_tensor *w = filled(64, 4, 300.0);

	enter(AMP_DEVICE_CPU, dtype, "forward");
	for (int i = 0; i < 3; i++)
		amp_tensor_free(check(amp_mm(x, w), "mm"));
	amp_autocast_exit();
	amp_tensor *done[] = { x, w };
	free_all(done, 2);
}

static void mode_overflow(void) { big_matmul(AMP_DTYPE_F16); }
static void mode_no_overflow(void) { big_matmul(AMP_DTYPE_BF16); }

/* The f16 cast of 1e-8 inputs (below f16's smallest subnormal 6e-8). */
static void small_matmul(double value)
{
	amp_tensor *x = filled(4, 16, value);
	amp_tensor *w = weight(16, 4, "fc.weight");

	enter(AMP_DEVICE_CPU, AMP_DTYPE_F16, "forward");
	amp_tensor_free(check(amp_mm(x, w), "mm"));
	amp_autocast_exit();
	amp_tensor *done[] = { x, w };
	free_all(done, 2);
}

static void mode_underflow(void) { small_matmul(1e-8); }
static void mode_no_underflow(void) { small_matmul(1e-2); }

/* ----------------------------------------------------- redundant casts */

/* x.half().float() with nothing computed in f16 in between. */
static void mode_round_trip(void)
{
	amp_tensor *x = filled(4, 8, 1.5);
	amp_tensor *half = check(amp_to(x, AMP_DTYPE_F16), "to f16");
	amp_tensor *back = check(amp_to(half, AMP_DTYPE_F32), "to f32");
	amp_tensor *y = check(amp_relu(back), "relu");
	amp_tensor *done[] = { x, half, back, y };
	free_all(done, 4);
}

/* h.float() of a bf16 activation, passed to a linear under autocast,
 * which casts it straight back to bf16. */
static void mode_undo(void)
{
	amp_tensor *x = filled(4, 8, 1.5);
	amp_tensor *w = weight(8, 8, "fc1.weight");
	amp_tensor *w2 = weight(8, 8, "fc2.weight");

	enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "forward");
	amp_tensor *h = check(amp_linear(x, w, NULL), "linear");
	amp_tensor *h32 = check(amp_to(h, AMP_DTYPE_F32), "float");
	amp_tensor *y = check(amp_linear(h32, w2, NULL), "linear");
	amp_autocast_exit();
	amp_tensor *done[] = { x, w, w2, h, h32, y };
	free_all(done, 6);
}

/* x16 = x.to(bf16) used by one op, x itself by a linear under autocast,
 * which casts x to bf16 again. */
static void mode_repeat(void)
{
	amp_tensor *x = filled(4, 8, 1.5);
	amp_tensor *w = weight(8, 8, "fc.weight");

	enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "forward");
	amp_tensor *h = check(amp_softmax(x, 1, AMP_DTYPE_NONE), "softmax");
	amp_tensor *h16 = check(amp_to(h, AMP_DTYPE_BF16), "to bf16");
	amp_tensor *r = check(amp_relu(h16), "relu");
	amp_tensor *y = check(amp_linear(h, w, NULL), "linear");
	amp_autocast_exit();
	amp_tensor *done[] = { x, w, h, h16, r, y };
	free_all(done, 6);
}

/* Healthy: an f32 activation feeding the q, k and v projections under
 * autocast is cast once for each (uncacheable: not a weight), as PyTorch
 * does; the program wrote no cast. */
static void mode_qkv(void)
{
	amp_tensor *x = filled(4, 8, 1.5);
	amp_tensor *q = weight(8, 8, "q.weight");
	amp_tensor *k = weight(8, 8, "k.weight");
	amp_tensor *v = weight(8, 8, "v.weight");

	enter(AMP_DEVICE_CPU, AMP_DTYPE_BF16, "attention");
	amp_tensor *h = check(amp_softmax(x, 1, AMP_DTYPE_NONE), "softmax");
	amp_tensor *a = check(amp_linear(h, q, NULL), "linear q");
	amp_tensor *b = check(amp_linear(h, k, NULL), "linear k");
	amp_tensor *c = check(amp_linear(h, v, NULL), "linear v");
	amp_autocast_exit();
	amp_tensor *done[] = { x, q, k, v, h, a, b, c };
	free_all(done, 8);
}

/* The fix for all three: cast once, compute in f16, cast the result back. */
static void mode_cast_once(void)
{
	amp_tensor *x = filled(4, 8, 1.5);
	amp_tensor *w = filled(8, 8, 0.25);
	amp_tensor *x16 = check(amp_to(x, AMP_DTYPE_F16), "to f16");
	amp_tensor *w16 = check(amp_to(w, AMP_DTYPE_F16), "to f16");
	amp_tensor *a = check(amp_mm(x16, w16), "mm");
	amp_tensor *b = check(amp_mm(x16, w16), "mm");
	amp_tensor *sum = check(amp_add(a, b), "add");
	amp_tensor *back = check(amp_to(sum, AMP_DTYPE_F32), "to f32");
	amp_tensor *done[] = { x, w, x16, w16, a, b, sum, back };
	free_all(done, 8);
}

/* ------------------------------------------------------------- banned */

/* sigmoid + binary_cross_entropy under CUDA autocast: banned (fails);
 * the fix is binary_cross_entropy_with_logits on the logits. */
static void bce(bool with_logits)
{
	int64_t shape[2] = { 4, 1 };
	amp_tensor *x = check(amp_full(2, shape, 0.3, AMP_DTYPE_F32,
				       AMP_DEVICE_CUDA), "full");
	amp_tensor *target = check(amp_full(2, shape, 1.0, AMP_DTYPE_F32,
					    AMP_DEVICE_CUDA), "full");

	enter(AMP_DEVICE_CUDA, AMP_DTYPE_NONE, "loss");
	amp_tensor *p = NULL, *loss;
	if (with_logits) {
		loss = check(amp_binary_cross_entropy_with_logits(
				     x, target, NULL, NULL, AMP_REDUCTION_MEAN),
			     "bce_with_logits");
	} else {
		p = check(amp_sigmoid(x), "sigmoid");
		loss = amp_binary_cross_entropy(p, target, NULL,
						AMP_REDUCTION_MEAN);
	}
	amp_autocast_exit();
	amp_tensor *done[] = { x, target, p, loss };
	free_all(done, 4);
}

static void mode_bce(void) { bce(false); }
static void mode_bce_logits(void) { bce(true); }

static const struct {
	const char *name;
	void (*run)(void);
} modes[] = {
	{ "backward-inside", mode_backward_inside },
	{ "backward-per-step", mode_backward_per_step },
	{ "backward-outside", mode_backward_outside },
	{ "growth", mode_growth },
	{ "no-growth", mode_no_growth },
	{ "scaler-skip", mode_scaler_skip },
	{ "scaler-collapse", mode_scaler_collapse },
	{ "scaler-clean", mode_scaler_clean },
	{ "scaler-calibrate", mode_scaler_calibrate },
	{ "scaler-start", mode_scaler_start },
	{ "thread-pitfall", mode_thread_pitfall },
	{ "thread-fix", mode_thread_fix },
	{ "thread-siblings", mode_thread_siblings },
	{ "thread-shared", mode_thread_shared },
	{ "thread-own", mode_thread_own },
	{ "mismatch", mode_mismatch },
	{ "mismatch-fixed", mode_mismatch_fixed },
	{ "cache-dtypes", mode_cache_dtypes },
	{ "cache-dtypes-fixed", mode_cache_dtypes_fixed },
	{ "cache-same-dtype", mode_cache_same_dtype },
	{ "cache-off-twice", mode_cache_off_twice },
	{ "cache-off-once", mode_cache_off_once },
	{ "overflow", mode_overflow },
	{ "no-overflow", mode_no_overflow },
	{ "underflow", mode_underflow },
	{ "no-underflow", mode_no_underflow },
	{ "round-trip", mode_round_trip },
	{ "undo", mode_undo },
	{ "repeat", mode_repeat },
	{ "qkv", mode_qkv },
	{ "cast-once", mode_cast_once },
	{ "bce", mode_bce },
	{ "bce-logits", mode_bce_logits },
};

int main(int argc, char **argv)
{
	amp_manual_seed(7);
	for (size_t i = 0; argc == 2 && i < sizeof modes / sizeof modes[0]; i++) {
		if (!strcmp(argv[1], modes[i].name)) {
			modes[i].run();
			return 0;
		}
	}
	fprintf(stderr, "usage: findings_prog MODE (see the source)\n");
	return 2;
}
