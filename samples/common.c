/* Shared sample code: see common.h. */
#include "common.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *sample_name = "sample";

/* ------------------------------------------------------------- parsing */

static void usage(FILE *out, const struct sample_info *info)
{
	const struct sample_options *d = &info->defaults;

	fprintf(out,
		"usage: %s [--steps N] [--batch N] [--hidden N] [--layers N]\n"
		"       [--device cpu|cuda] [--dtype f16|bf16] [--seed N] [--lr X]%s%s%s%s\n"
		"%s\n"
		"Defaults: --steps %ld --batch %ld --hidden %ld --layers %ld "
		"--device %s --seed %ld --lr %g;\n"
		"--dtype is the device's autocast default (cpu bf16, cuda f16); "
		"device cuda is emulated\nwithout a GPU.  Prints `step N loss X` "
		"per step.\n",
		info->name,
		info->flags & SAMPLE_FLAG_ACCUMULATE ? " [--accumulate N]" : "",
		info->flags & SAMPLE_FLAG_MAX_NORM ? " [--max-norm X]" : "",
		info->flags & SAMPLE_FLAG_THREADS ? " [--threads N]" : "",
		info->flags & SAMPLE_FLAG_SEQ ? " [--seq N]" : "", info->summary,
		d->steps, d->batch, d->hidden, d->layers,
		amp_device_type_name(d->device), d->seed, d->lr);
	if (info->flags & SAMPLE_FLAG_ACCUMULATE)
		fprintf(out, "--accumulate %ld: micro-batches per optimizer step\n",
			d->accumulate);
	if (info->flags & SAMPLE_FLAG_MAX_NORM)
		fprintf(out, "--max-norm %g: clip_grad_norm_ threshold\n",
			d->max_norm);
	if (info->flags & SAMPLE_FLAG_THREADS)
		fprintf(out, "--threads %ld: forward worker threads\n",
			d->threads);
	if (info->flags & SAMPLE_FLAG_SEQ)
		fprintf(out, "--seq %ld: sequence length\n", d->seq);
}

static _Noreturn void bad_flag(const struct sample_info *info, const char *fmt,
			       const char *arg)
{
	fprintf(stderr, "%s: ", info->name);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	usage(stderr, info);
	exit(2);
}

static long parse_count(const struct sample_info *info, const char *value)
{
	char *end;
	long n = strtol(value, &end, 10);

	if (*value == '\0' || *end || n < 1 || n > 1 << 20)
		bad_flag(info, "expected a positive integer, got '%s'", value);
	return n;
}

static double parse_positive(const struct sample_info *info, const char *value)
{
	char *end;
	double x = strtod(value, &end);

	if (*value == '\0' || *end || !(x > 0) || isinf(x))
		bad_flag(info, "expected a positive number, got '%s'", value);
	return x;
}

void sample_parse(int argc, char **argv, const struct sample_info *info,
		  struct sample_options *opts)
{
	enum { SEED = 256, LR, ACCUMULATE, MAX_NORM, THREADS, SEQ };
	static const struct option options[] = {
		{ "steps", required_argument, NULL, 's' },
		{ "batch", required_argument, NULL, 'b' },
		{ "hidden", required_argument, NULL, 'H' },
		{ "layers", required_argument, NULL, 'l' },
		{ "device", required_argument, NULL, 'd' },
		{ "dtype", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, SEED },
		{ "lr", required_argument, NULL, LR },
		{ "accumulate", required_argument, NULL, ACCUMULATE },
		{ "max-norm", required_argument, NULL, MAX_NORM },
		{ "threads", required_argument, NULL, THREADS },
		{ "seq", required_argument, NULL, SEQ },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, index;

	sample_name = info->name;
	*opts = info->defaults;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", options, &index)) != -1) {
		switch (c) {
		case 's': opts->steps = parse_count(info, optarg); break;
		case 'b': opts->batch = parse_count(info, optarg); break;
		case 'H': opts->hidden = parse_count(info, optarg); break;
		case 'l': opts->layers = parse_count(info, optarg); break;
		case SEED: opts->seed = parse_count(info, optarg); break;
		case LR: opts->lr = parse_positive(info, optarg); break;
		case 'd':
			if (amp_device_type_from_name(optarg, &opts->device))
				bad_flag(info, "unknown device '%s' (cpu or cuda)",
					 optarg);
			break;
		case 't':
			if (amp_dtype_from_name(optarg, &opts->dtype) ||
			    (opts->dtype != AMP_DTYPE_F16 &&
			     opts->dtype != AMP_DTYPE_BF16))
				bad_flag(info, "--dtype expects f16 or bf16 "
					 "(or fp16, float16, torch.bfloat16, ...), "
					 "got '%s'",
					 optarg);
			break;
		case ACCUMULATE:
		case MAX_NORM:
		case THREADS:
		case SEQ: {
			unsigned needed = c == ACCUMULATE ? SAMPLE_FLAG_ACCUMULATE
					  : c == MAX_NORM ? SAMPLE_FLAG_MAX_NORM
					  : c == THREADS	 ? SAMPLE_FLAG_THREADS
							 : SAMPLE_FLAG_SEQ;
			/* argv[optind - 1] may be the flag's value */
			if (!(info->flags & needed))
				bad_flag(info, "unknown option '--%s'",
					 options[index].name);
			if (c == MAX_NORM)
				opts->max_norm = parse_positive(info, optarg);
			else if (c == ACCUMULATE)
				opts->accumulate = parse_count(info, optarg);
			else if (c == THREADS)
				opts->threads = parse_count(info, optarg);
			else
				opts->seq = parse_count(info, optarg);
			break;
		}
		case 'h':
			usage(stdout, info);
			exit(0);
		default: {
			/* argv[optind - 1] is an unknown long option (optopt
			 * 0), --help=X, or a long option missing its value
			 * (the last argument); an unknown short option is
			 * optopt, since optind has not passed its group
			 * (-xh) */
			char short_option[3] = { '-', (char)optopt, '\0' };
			bool whole = optopt == 0 || optopt == 'h' ||
				     (optind == argc &&
				      strncmp(argv[optind - 1], "--", 2) == 0);
			bad_flag(info, "unknown or incomplete option '%s'",
				 whole ? argv[optind - 1] : short_option);
		}
		}
	}
	if (optind < argc)
		bad_flag(info, "unexpected argument '%s'", argv[optind]);
	if (opts->dtype == AMP_DTYPE_NONE)
		opts->dtype = amp_autocast_get_dtype(opts->device);
}

/* ------------------------------------------------------------- failures */

static _Noreturn void fail(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", sample_name, what, amp_last_error());
	exit(1);
}

amp_tensor *sample_check(amp_tensor *t, const char *what)
{
	if (!t)
		fail(what);
	return t;
}

void sample_check_status(int status, const char *what)
{
	if (status != AMP_OK)
		fail(what);
}

void *sample_check_ptr(void *p, const char *what)
{
	if (!p) {
		fprintf(stderr, "%s: %s: out of memory\n", sample_name, what);
		exit(1);
	}
	return p;
}

/* ----------------------------------------------------------------- data */

uint64_t sample_rng_next(struct sample_rng *rng)
{
	uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double sample_rng_uniform(struct sample_rng *rng)
{
	return (double)(sample_rng_next(rng) >> 11) * 0x1p-53;
}

double sample_rng_normal(struct sample_rng *rng)
{
	double u = sample_rng_uniform(rng), v = sample_rng_uniform(rng);

	return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}

void sample_data_init(struct sample_data *data, int features, int classes,
		      uint64_t seed, enum amp_device_type device)
{
	*data = (struct sample_data){ .features = features, .classes = classes,
				      .device = device,
				      .rng = { seed * 7919 + 1 } };
	data->centers = sample_check_ptr(
		malloc((size_t)classes * (size_t)features * sizeof(float)),
		"dataset");
	for (int i = 0; i < classes * features; i++)
		data->centers[i] = (float)sample_rng_normal(&data->rng);
}

void sample_data_batch(struct sample_data *data, int batch, amp_tensor **x,
		       amp_tensor **y)
{
	float *values = sample_check_ptr(
		malloc((size_t)batch * (size_t)data->features * sizeof(float)),
		"batch");
	int64_t *labels = sample_check_ptr(
		malloc((size_t)batch * sizeof(int64_t)), "batch");

	for (int b = 0; b < batch; b++) {
		int c = (int)(sample_rng_next(&data->rng) % (uint64_t)data->classes);
		labels[b] = c;
		for (int f = 0; f < data->features; f++)
			values[b * data->features + f] =
				data->centers[c * data->features + f] +
				0.7f * (float)sample_rng_normal(&data->rng);
	}
	int64_t xshape[2] = { batch, data->features }, yshape[1] = { batch };
	*x = sample_check(amp_from_data(2, xshape, AMP_DTYPE_F32, data->device,
					values),
			  "input batch");
	*y = sample_check(amp_from_data(1, yshape, AMP_DTYPE_I64, data->device,
					labels),
			  "target batch");
	amp_tensor_set_name(*x, "input");
	amp_tensor_set_name(*y, "target");
	free(values);
	free(labels);
}

void sample_data_free(struct sample_data *data)
{
	free(data->centers);
	data->centers = NULL;
}

/* ---------------------------------------------------------------- model */

amp_tensor *sample_param(int ndim, const int64_t *shape, double bound,
			 struct sample_rng *rng, enum amp_device_type device,
			 const char *name)
{
	int64_t n = 1;

	for (int d = 0; d < ndim; d++)
		n *= shape[d];
	float *values = sample_check_ptr(malloc((size_t)n * sizeof(float)),
					 "parameter");
	for (int64_t i = 0; i < n; i++)
		values[i] = (float)((2.0 * sample_rng_uniform(rng) - 1.0) * bound);
	amp_tensor *p = sample_check(
		amp_from_data(ndim, shape, AMP_DTYPE_F32, device, values), name);
	free(values);
	sample_check_status(amp_tensor_set_requires_grad(p, true), name);
	amp_tensor_set_name(p, name);
	return p;
}

void mlp_init(struct mlp *m, int in, int hidden, int out, int layers,
	      struct sample_rng *rng, enum amp_device_type device,
	      const char *prefix)
{
	m->layers = layers;
	m->weight = sample_check_ptr(calloc((size_t)layers, sizeof *m->weight),
				     "model");
	m->bias = sample_check_ptr(calloc((size_t)layers, sizeof *m->bias),
				   "model");
	for (int l = 0; l < layers; l++) {
		int fan_in = l == 0 ? in : hidden;
		int fan_out = l == layers - 1 ? out : hidden;
		int64_t wshape[2] = { fan_out, fan_in }, bshape[1] = { fan_out };
		char name[64];
		double bound = 1.0 / sqrt((double)fan_in);
		snprintf(name, sizeof name, "%sfc%d.weight", prefix, l + 1);
		m->weight[l] = sample_param(2, wshape, bound, rng, device, name);
		snprintf(name, sizeof name, "%sfc%d.bias", prefix, l + 1);
		m->bias[l] = sample_param(1, bshape, bound, rng, device, name);
	}
}

amp_tensor *mlp_forward(const struct mlp *m, amp_tensor *x)
{
	amp_tensor *h = amp_tensor_ref(x);

	for (int l = 0; l < m->layers; l++) {
		amp_tensor *y = sample_check(amp_linear(h, m->weight[l], m->bias[l]),
					     "linear");
		amp_tensor_free(h);
		h = y;
		if (l + 1 < m->layers) {
			y = sample_check(amp_relu(h), "relu");
			amp_tensor_free(h);
			h = y;
		}
	}
	return h;
}

int mlp_params(const struct mlp *m, amp_tensor **params, int capacity)
{
	int n = 0;

	for (int l = 0; l < m->layers && n + 2 <= capacity; l++) {
		params[n++] = m->weight[l];
		params[n++] = m->bias[l];
	}
	return n;
}

void mlp_free(struct mlp *m)
{
	for (int l = 0; l < m->layers; l++) {
		amp_tensor_free(m->weight[l]);
		amp_tensor_free(m->bias[l]);
	}
	free(m->weight);
	free(m->bias);
	m->layers = 0;
}

amp_tensor *sample_cross_entropy(amp_tensor *logits, amp_tensor *y)
{
	return sample_check(amp_cross_entropy(logits, y, NULL,
					      AMP_REDUCTION_MEAN, -100),
			    "cross_entropy");
}

void sample_task_init(struct sample_task *task, const struct sample_options *opts,
		      const char *prefix)
{
	task->rng = (struct sample_rng){ (uint64_t)opts->seed };
	sample_data_init(&task->data, (int)opts->hidden, SAMPLE_CLASSES,
			 (uint64_t)opts->seed, opts->device);
	mlp_init(&task->model, (int)opts->hidden, (int)opts->hidden,
		 SAMPLE_CLASSES, (int)opts->layers, &task->rng, opts->device,
		 prefix);
	task->nparams = mlp_params(&task->model, task->params, SAMPLE_MAX_PARAMS);
}

void sample_task_free(struct sample_task *task)
{
	mlp_free(&task->model);
	sample_data_free(&task->data);
}

amp_tensor *sample_task_loss(const struct sample_task *task, amp_tensor *x,
			     amp_tensor *y)
{
	amp_tensor *logits = mlp_forward(&task->model, x);
	amp_tensor *loss = sample_cross_entropy(logits, y);

	amp_tensor_free(logits);
	return loss;
}

amp_optimizer *sample_sgd(amp_tensor *const *params, int count,
			  const struct sample_options *opts)
{
	return sample_check_ptr(amp_sgd_new(params, count, opts->lr, 0.9, 0, 0,
					    false),
				"SGD");
}

amp_grad_scaler *sample_scaler(const struct sample_options *opts)
{
	struct amp_grad_scaler_opts scaler = AMP_GRAD_SCALER_OPTS(opts->device);

	return sample_check_ptr(amp_grad_scaler_new(&scaler), "GradScaler");
}

/* -------------------------------------------------------------- running */

void sample_autocast_enter(const struct sample_options *opts, const char *scope)
{
	struct amp_autocast_opts region = AMP_AUTOCAST_OPTS(opts->device);

	region.dtype = opts->dtype;
	region.scope = scope;
	sample_check_status(amp_autocast_enter(&region), "autocast");
}

void sample_autocast_disable(const struct sample_options *opts,
			     const char *scope)
{
	struct amp_autocast_opts region = AMP_AUTOCAST_OPTS(opts->device);

	region.enabled = false;
	region.scope = scope;
	sample_check_status(amp_autocast_enter(&region), "autocast");
}

amp_tensor *sample_scaler_scale(amp_grad_scaler *scaler, amp_tensor *loss)
{
	return sample_check(amp_grad_scaler_scale(scaler, loss), "scale");
}

void sample_backward(amp_tensor *scaled)
{
	sample_check_status(amp_backward(scaled, NULL, false, false), "backward");
}

void sample_scaler_unscale_(amp_grad_scaler *scaler, amp_optimizer *optimizer)
{
	sample_check_status(amp_grad_scaler_unscale_(scaler, optimizer),
			    "scaler.unscale_");
}

void sample_scaler_step(amp_grad_scaler *scaler, amp_optimizer *optimizer)
{
	sample_check_status(amp_grad_scaler_step(scaler, optimizer, NULL),
			    "scaler.step");
}

void sample_scaler_update(amp_grad_scaler *scaler)
{
	sample_check_status(amp_grad_scaler_update(scaler), "scaler.update");
}

void sample_free_tensors(amp_tensor *const *tensors, size_t count)
{
	for (size_t i = 0; i < count; i++)
		amp_tensor_free(tensors[i]);
}

double sample_item(const amp_tensor *t)
{
	if (amp_tensor_numel(t) != 1) {
		fprintf(stderr, "%s: item() of a tensor with %lld elements\n",
			sample_name, (long long)amp_tensor_numel(t));
		exit(1);
	}
	return amp_tensor_item(t);
}

void sample_print_loss(long step, double loss)
{
	printf("step %ld loss %.4f\n", step, loss);
	fflush(stdout);
}

double sample_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double sample_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double sample_median(double *values, int n)
{
	if (n <= 0)
		return 0;
	qsort(values, (size_t)n, sizeof *values, compare_doubles);
	return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}
