/* transformer: an attention block under autocast, trained with AdamW and
 * the GradScaler.
 *
 *   h = embedding(tokens) + position
 *   repeat --layers times with the SAME block weights:
 *       a = layer_norm(h)
 *       q, k, v = a @ Wq^T, a @ Wk^T, a @ Wv^T
 *       h = h + softmax(q k^T / sqrt(D)) v @ Wo^T
 *       h = h + W2 gelu(W1 layer_norm(h) + b1) + b2
 *   logits = layer_norm(h) @ embedding^T          (tied weights)
 *   loss = cross_entropy(logits, next tokens)
 *
 * Under autocast the linears and bmm run in low precision; on cpu softmax,
 * layer_norm and gelu are not in the lists (they run in their input's
 * dtype), on cuda softmax and layer_norm run in f32.  Each block weight is
 * used --layers times per region, so the weight-cast cache hits.  The task:
 * predict the previous token of a random sequence (attention must look
 * one position back). */
#include "common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define VOCAB 16

struct block {
	amp_tensor *ln1_w, *ln1_b, *wq, *wk, *wv, *wo;
	amp_tensor *ln2_w, *ln2_b, *w1, *b1, *w2, *b2;
};

struct model {
	int d, seq;
	amp_tensor *embedding, *position, *lnf_w, *lnf_b;
	struct block block;
	amp_tensor *params[32];
	int nparams;
};

static amp_tensor *add_param(struct model *m, amp_tensor *p)
{
	m->params[m->nparams++] = p;
	return p;
}

static amp_tensor *uniform(struct model *m, struct sample_rng *rng,
			   const struct sample_options *o, int64_t rows,
			   int64_t cols, double bound, const char *name)
{
	int64_t shape[2] = { rows, cols };

	return add_param(m, sample_param(cols ? 2 : 1, cols ? shape : &rows,
					 bound, rng, o->device, name));
}

static amp_tensor *constant(struct model *m, const struct sample_options *o,
			    int64_t size, double value, const char *name)
{
	amp_tensor *p = sample_check(amp_full(1, &size, value, AMP_DTYPE_F32,
					      o->device),
				     name);

	sample_check_status(amp_tensor_set_requires_grad(p, true), name);
	amp_tensor_set_name(p, name);
	return add_param(m, p);
}

static void model_init(struct model *m, struct sample_rng *rng,
		       const struct sample_options *o)
{
	int64_t d = o->hidden;
	double bound = 1.0 / sqrt((double)d);
	struct block *b = &m->block;

	*m = (struct model){ .d = (int)d, .seq = (int)o->seq };
	m->embedding = uniform(m, rng, o, VOCAB, d, 0.5, "embedding.weight");
	m->position = uniform(m, rng, o, o->seq, d, 1.0, "position.weight");
	b->ln1_w = constant(m, o, d, 1.0, "block.ln1.weight");
	b->ln1_b = constant(m, o, d, 0.0, "block.ln1.bias");
	b->wq = uniform(m, rng, o, d, d, bound, "block.attn.q.weight");
	b->wk = uniform(m, rng, o, d, d, bound, "block.attn.k.weight");
	b->wv = uniform(m, rng, o, d, d, bound, "block.attn.v.weight");
	b->wo = uniform(m, rng, o, d, d, bound, "block.attn.out.weight");
	b->ln2_w = constant(m, o, d, 1.0, "block.ln2.weight");
	b->ln2_b = constant(m, o, d, 0.0, "block.ln2.bias");
	b->w1 = uniform(m, rng, o, 4 * d, d, bound, "block.mlp.fc1.weight");
	b->b1 = uniform(m, rng, o, 4 * d, 0, bound, "block.mlp.fc1.bias");
	b->w2 = uniform(m, rng, o, d, 4 * d, 0.5 * bound, "block.mlp.fc2.weight");
	b->b2 = uniform(m, rng, o, d, 0, 0.5 * bound, "block.mlp.fc2.bias");
	m->lnf_w = constant(m, o, d, 1.0, "ln_f.weight");
	m->lnf_b = constant(m, o, d, 0.0, "ln_f.bias");
}

static void model_free(struct model *m)
{
	sample_free_tensors(m->params, (size_t)m->nparams);
}

/* Tensors of one forward pass, freed together. */
struct scratch {
	amp_tensor *items[256];
	int count;
};

static amp_tensor *keep(struct scratch *s, amp_tensor *t, const char *what)
{
	sample_check(t, what);
	if (s->count == 256) {
		fprintf(stderr, "transformer: scratch full\n");
		exit(1);
	}
	return s->items[s->count++] = t;
}

static void scratch_free(struct scratch *s)
{
	sample_free_tensors(s->items, (size_t)s->count);
	s->count = 0;
}

static amp_tensor *layer_norm(struct scratch *s, amp_tensor *x, int64_t d,
			      amp_tensor *w, amp_tensor *b)
{
	return keep(s, amp_layer_norm(x, 1, &d, w, b, 1e-5), "layer_norm");
}

/* softmax(q k^T / sqrt(d)) v, one head */
static amp_tensor *attention(struct scratch *s, const struct model *m,
			     amp_tensor *a)
{
	const struct block *b = &m->block;
	amp_tensor *q = keep(s, amp_linear(a, b->wq, NULL), "q");
	amp_tensor *k = keep(s, amp_linear(a, b->wk, NULL), "k");
	amp_tensor *v = keep(s, amp_linear(a, b->wv, NULL), "v");
	amp_tensor *kt = keep(s, amp_transpose(k, 1, 2), "k^T");
	amp_tensor *scores = keep(s, amp_bmm(q, kt), "q k^T");
	amp_tensor *scaled = keep(s, amp_mul_scalar(scores, 1.0 / sqrt(m->d)),
				  "scale");
	amp_tensor *weights = keep(s, amp_softmax(scaled, -1, AMP_DTYPE_NONE),
				   "softmax");
	amp_tensor *mixed = keep(s, amp_bmm(weights, v), "attention");
	return keep(s, amp_linear(mixed, b->wo, NULL), "out projection");
}

static amp_tensor *mlp_block(struct scratch *s, const struct model *m,
			     amp_tensor *x)
{
	const struct block *b = &m->block;
	amp_tensor *n = layer_norm(s, x, m->d, b->ln2_w, b->ln2_b);
	amp_tensor *up = keep(s, amp_linear(n, b->w1, b->b1), "fc1");
	amp_tensor *act = keep(s, amp_gelu(up, false), "gelu");
	return keep(s, amp_linear(act, b->w2, b->b2), "fc2");
}

/* logits (batch * seq, VOCAB) */
static amp_tensor *forward(struct scratch *s, const struct model *m,
			   amp_tensor *tokens, int layers)
{
	const struct block *b = &m->block;
	amp_tensor *x = keep(s, amp_embedding(m->embedding, tokens), "embedding");
	x = keep(s, amp_add(x, m->position), "position");
	for (int l = 0; l < layers; l++) {
		amp_tensor *a = layer_norm(s, x, m->d, b->ln1_w, b->ln1_b);
		x = keep(s, amp_add(x, attention(s, m, a)), "residual");
		x = keep(s, amp_add(x, mlp_block(s, m, x)), "residual");
	}
	amp_tensor *n = layer_norm(s, x, m->d, m->lnf_w, m->lnf_b);
	amp_tensor *logits = keep(s, amp_linear(n, m->embedding, NULL), "head");
	int64_t flat[2] = { -1, VOCAB };
	return keep(s, amp_reshape(logits, 2, flat), "reshape");
}

/* tokens (batch, seq) random; targets the previous token (the first
 * position predicts itself). */
static void make_batch(struct sample_rng *rng, const struct sample_options *o,
		       amp_tensor **tokens, amp_tensor **targets)
{
	int64_t n = o->batch * o->seq;
	int64_t *t = sample_check_ptr(malloc((size_t)n * sizeof *t), "tokens");
	int64_t *y = sample_check_ptr(malloc((size_t)n * sizeof *y), "targets");

	for (int64_t i = 0; i < n; i++)
		t[i] = (int64_t)(sample_rng_next(rng) % VOCAB);
	for (int64_t i = 0; i < n; i++)
		y[i] = i % o->seq == 0 ? t[i] : t[i - 1];
	int64_t shape[2] = { o->batch, o->seq };
	*tokens = sample_check(amp_from_data(2, shape, AMP_DTYPE_I64, o->device, t),
			       "tokens");
	*targets = sample_check(amp_from_data(1, &n, AMP_DTYPE_I64, o->device, y),
				"targets");
	free(t);
	free(y);
}

static void count_hits(const struct amp_event *e, void *user)
{
	long *hits = user;

	if (e->kind == AMP_EVENT_CAST && e->cast.cache == AMP_CACHE_HIT)
		(*hits)++;
}

int main(int argc, char **argv)
{
	static const struct sample_info info = {
		.name = "transformer",
		.summary = "An attention block (embedding, layer_norm, softmax "
			   "attention, GELU MLP,\ncross_entropy) whose weights are "
			   "shared by --layers applications, so the\nweight-cast "
			   "cache hits; AdamW with the GradScaler.",
		.flags = SAMPLE_FLAG_SEQ,
		.defaults = { .device = AMP_DEVICE_CPU, .dtype = AMP_DTYPE_NONE,
			      .steps = 40, .batch = 16, .hidden = 32,
			      .layers = 2, .seed = 11, .lr = 0.01, .seq = 8 },
	};
	struct sample_options o;
	struct model m;
	struct scratch s = { .count = 0 };

	sample_parse(argc, argv, &info, &o);
	struct sample_rng rng = { (uint64_t)o.seed };
	model_init(&m, &rng, &o);
	struct amp_adam_opts adam = AMP_ADAMW_OPTS;
	adam.lr = o.lr;
	amp_optimizer *optimizer = sample_check_ptr(
		amp_adamw_new(m.params, m.nparams, &adam), "AdamW");
	amp_grad_scaler *scaler = sample_scaler(&o);

	for (long step = 1; step <= o.steps; step++) {
		amp_tensor *tokens, *targets;
		long hits = 0;
		make_batch(&rng, &o, &tokens, &targets);

		amp_optimizer_zero_grad(optimizer);
		int hook = step == 1 ? amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_CAST),
						    count_hits, &hits)
				     : 0;
		sample_autocast_enter(&o, "forward");
		amp_tensor *logits = forward(&s, &m, tokens, (int)o.layers);
		amp_tensor *loss = sample_cross_entropy(logits, targets);
		amp_autocast_exit();
		if (step == 1) {
			amp_hook_remove(hook);
			printf("logits %s, loss %s, weight-cast cache hits in one "
			       "forward: %ld\n",
			       amp_dtype_name(amp_tensor_dtype(logits)),
			       amp_dtype_name(amp_tensor_dtype(loss)), hits);
		}
		amp_tensor *scaled = sample_scaler_scale(scaler, loss);
		sample_backward(scaled);
		sample_scaler_step(scaler, optimizer);
		sample_scaler_update(scaler);
		sample_print_loss(step, sample_item(loss));
		SAMPLE_FREE_TENSORS(scaled, loss, tokens, targets);
		scratch_free(&s);
	}
	amp_grad_scaler_free(scaler);
	amp_optimizer_free(optimizer);
	model_free(&m);
	return 0;
}
