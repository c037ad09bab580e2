/* infer: a small MLP forward pass under autocast that prints every op with
 * its input/output dtypes and every cast autocast made for it — the first
 * answer to "where do the casts happen?".  It subscribes to libamp's hook
 * API directly, as any tool can.
 *
 *   infer [--device cpu|cuda] [--dtype f16|bf16] [--batch N] [--hidden N]
 *         [--layers N] [--repeat N] [--seed N]
 */
#include "amp.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PENDING_CASTS 64

struct printer {
	char casts[MAX_PENDING_CASTS][160];
	uint64_t cast_op[MAX_PENDING_CASTS];
	int ncasts;
	int depth; /* ops currently open (composites nest) */
};

static void format_tensor(char *buf, size_t size,
			  const struct amp_tensor_info *t)
{
	int n = snprintf(buf, size, "%s[", amp_dtype_name(t->dtype));
	for (int d = 0; d < t->ndim && n < (int)size; d++)
		n += snprintf(buf + n, size - (size_t)n, d ? ",%lld" : "%lld",
			      (long long)t->shape[d]);
	if (n < (int)size)
		n += snprintf(buf + n, size - (size_t)n, "]");
	if (t->name && n < (int)size)
		snprintf(buf + n, size - (size_t)n, "(%s)", t->name);
}

static void print_event(const struct amp_event *e, void *user)
{
	struct printer *p = user;
	char text[96];

	switch (e->kind) {
	case AMP_EVENT_OP_BEGIN:
		p->depth++;
		break;
	case AMP_EVENT_CAST:
		if (p->ncasts < MAX_PENDING_CASTS) {
			format_tensor(text, sizeof text, &e->cast.source);
			snprintf(p->casts[p->ncasts], sizeof p->casts[0],
				 "cast arg %d %s: %s -> %s, cache %s (%s)",
				 e->cast.arg, text, amp_dtype_name(e->cast.from),
				 amp_dtype_name(e->cast.to),
				 amp_cache_result_name(e->cast.cache),
				 e->cast.reason);
			p->cast_op[p->ncasts++] = e->cast.op_id;
		}
		break;
	case AMP_EVENT_OP_END: {
		p->depth--;
		printf("%*s%-12s %-20s", 2 * p->depth, "", e->op.op,
		       amp_policy_name(e->op.policy));
		for (int i = 0; i < e->op.ninputs; i++) {
			format_tensor(text, sizeof text, &e->op.inputs[i]);
			printf(" %s", text);
		}
		printf(" ->");
		for (int i = 0; i < e->op.noutputs; i++) {
			format_tensor(text, sizeof text, &e->op.outputs[i]);
			printf(" %s", text);
		}
		printf("\n");
		int kept = 0;
		for (int i = 0; i < p->ncasts; i++) {
			if (p->cast_op[i] == e->op.op_id)
				printf("%*s  %s\n", 2 * p->depth, "", p->casts[i]);
			else {
				memmove(p->casts[kept], p->casts[i],
					sizeof p->casts[0]);
				p->cast_op[kept++] = p->cast_op[i];
			}
		}
		p->ncasts = kept;
		if (e->op.status != AMP_OK)
			printf("%*s  error: %s\n", 2 * p->depth, "", e->op.error);
		break;
	}
	default:
		break;
	}
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: infer [--device cpu|cuda] [--dtype f16|bf16] [--batch N]\n"
		"             [--hidden N] [--layers N] [--repeat N] [--seed N]\n"
		"Runs an MLP forward pass (linear + relu layers, softmax, mean)\n"
		"under autocast and prints each op with its dtypes and casts.\n"
		"Defaults: --device cpu (autocast dtype bf16), cuda uses f16;\n"
		"--batch 4 --hidden 16 --layers 3 --repeat 2 --seed 0.\n"
		"--repeat runs the forward several times in one region so the\n"
		"weight-cast cache can hit.\n");
}

static long parse_count(const char *flag, const char *value)
{
	char *end;
	long n = strtol(value, &end, 10);
	if (*end || n < 1 || n > 1 << 20) {
		fprintf(stderr, "infer: %s expects a positive integer, got '%s'\n",
			flag, value);
		exit(2);
	}
	return n;
}

int main(int argc, char **argv)
{
	enum amp_device_type device = AMP_DEVICE_CPU;
	enum amp_dtype dtype = AMP_DTYPE_NONE;
	long batch = 4, hidden = 16, layers = 3, repeat = 2, seed = 0;
	static const struct option options[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "dtype", required_argument, NULL, 't' },
		{ "batch", required_argument, NULL, 'b' },
		{ "hidden", required_argument, NULL, 'H' },
		{ "layers", required_argument, NULL, 'l' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (amp_device_type_from_name(optarg, &device) != 0) {
				fprintf(stderr, "infer: unknown device '%s' "
						"(cpu or cuda)\n", optarg);
				return 2;
			}
			break;
		case 't':
			if (amp_dtype_from_name(optarg, &dtype) != 0 ||
			    (dtype != AMP_DTYPE_F16 && dtype != AMP_DTYPE_BF16)) {
				fprintf(stderr, "infer: --dtype expects f16 or "
						"bf16, got '%s'\n", optarg);
				return 2;
			}
			break;
		case 'b': batch = parse_count("--batch", optarg); break;
		case 'H': hidden = parse_count("--hidden", optarg); break;
		case 'l': layers = parse_count("--layers", optarg); break;
		case 'r': repeat = parse_count("--repeat", optarg); break;
		case 's': seed = parse_count("--seed", optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "infer: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	amp_manual_seed((uint64_t)seed);
	amp_tensor **weights = calloc((size_t)layers, sizeof *weights);
	amp_tensor **biases = calloc((size_t)layers, sizeof *biases);
	if (!weights || !biases)
		return 1;
	for (long l = 0; l < layers; l++) {
		char name[32];
		weights[l] = amp_randn(2, (int64_t[]){ hidden, hidden },
				       AMP_DTYPE_F32, device);
		biases[l] = amp_zeros(1, (int64_t[]){ hidden }, AMP_DTYPE_F32,
				      device);
		snprintf(name, sizeof name, "fc%ld.weight", l + 1);
		amp_tensor_set_name(weights[l], name);
		snprintf(name, sizeof name, "fc%ld.bias", l + 1);
		amp_tensor_set_name(biases[l], name);
		amp_tensor_set_requires_grad(weights[l], true);
		amp_tensor_set_requires_grad(biases[l], true);
	}
	amp_tensor *input = amp_randn(2, (int64_t[]){ batch, hidden },
				      AMP_DTYPE_F32, device);
	amp_tensor_set_name(input, "input");

	struct amp_autocast_opts region = AMP_AUTOCAST_OPTS(device);
	region.dtype = dtype;
	region.scope = "forward";
	printf("autocast(%s, %s)%s\n", amp_device_type_name(device),
	       amp_dtype_name(dtype == AMP_DTYPE_NONE
				      ? amp_autocast_get_dtype(device)
				      : dtype),
	       device == AMP_DEVICE_CUDA && amp_cuda_is_emulated()
		       ? " on the emulated cuda device (CPU kernels)"
		       : "");

	struct printer printer = { 0 };
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_OP_BEGIN) |
					AMP_EVENT_MASK(AMP_EVENT_OP_END) |
					AMP_EVENT_MASK(AMP_EVENT_CAST),
				print_event, &printer);
	int status = 0;
	amp_autocast_enter(&region);
	for (long r = 0; r < repeat && !status; r++) {
		printf("-- forward %ld\n", r + 1);
		amp_tensor *x = amp_tensor_ref(input);
		for (long l = 0; l < layers && x; l++) {
			amp_tensor *y = amp_linear(x, weights[l], biases[l]);
			amp_tensor_free(x);
			x = y;
			if (x && l + 1 < layers) {
				y = amp_relu(x);
				amp_tensor_free(x);
				x = y;
			}
		}
		amp_tensor *probs = x ? amp_softmax(x, 1, AMP_DTYPE_NONE) : NULL;
		amp_tensor *mean = probs ? amp_mean(probs, AMP_DTYPE_NONE) : NULL;
		if (!mean) {
			fprintf(stderr, "infer: %s\n", amp_last_error());
			status = 1;
		}
		amp_tensor_free(x);
		amp_tensor_free(probs);
		amp_tensor_free(mean);
	}
	amp_autocast_exit();
	amp_hook_remove(hook);

	for (long l = 0; l < layers; l++) {
		amp_tensor_free(weights[l]);
		amp_tensor_free(biases[l]);
	}
	free(weights);
	free(biases);
	amp_tensor_free(input);
	return status;
}
