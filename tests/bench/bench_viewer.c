/* ampview's time from trace file to SVG for traces of about 100, 1,000
 * and 10,000 ops: load, build the graph (select, fold), lay out with dot
 * and render, in process as ampview does.  Targets: a 1,000-op trace in
 * at most 2 s drawn in full; 10,000 ops (folded) in at most 5 s.
 *
 * The traces are written here: a one-step training run of a residual
 * MLP with distinct weights per layer, every op and cast an event as
 * `amptrace run` writes them (forward under autocast with weight casts,
 * backward, then an SGD-with-momentum update per weight). */
#include "trace.h"
#include "view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BATCH 32
#define WIDTH 256

struct writer {
	FILE *f;
	unsigned long ops, tensors;
	double ts;
	bool first;
};

struct tensor {
	unsigned long id;
	const char *dtype;
	int rows, cols;       /* cols 0: a vector */
	const char *name;
};

static struct tensor new_tensor(struct writer *w, const char *dtype, int rows,
				int cols, const char *name)
{
	return (struct tensor){ ++w->tensors, dtype, rows, cols, name };
}

static void event_start(struct writer *w)
{
	fputs(w->first ? "\n" : ",\n", w->f);
	w->first = false;
	w->ts += 2.0;
}

static void write_tensor(FILE *f, const struct tensor *t)
{
	fprintf(f, "{\"tensor\":%lu,\"dtype\":\"%s\",\"shape\":", t->id, t->dtype);
	if (t->cols)
		fprintf(f, "[%d,%d]", t->rows, t->cols);
	else
		fprintf(f, "[%d]", t->rows);
	if (t->name)
		fprintf(f, ",\"name\":\"%s\"", t->name);
	fputs("}", f);
}

static void write_list(FILE *f, const char *key, const struct tensor *list,
		       int n)
{
	fprintf(f, ",\"%s\":[", key);
	for (int i = 0; i < n; i++) {
		fputs(i ? "," : "", f);
		write_tensor(f, &list[i]);
	}
	fputs("]", f);
}

/* One amp.op event; returns its op_id. */
static unsigned long op(struct writer *w, const char *name, const char *phase,
			const char *policy, bool autocast, unsigned long forward,
			const struct tensor *in, int nin, const struct tensor *out,
			int nout)
{
	unsigned long id = ++w->ops;

	event_start(w);
	fprintf(w->f, "{\"name\":\"%s\",\"cat\":\"amp.op\",\"ph\":\"X\",\"ts\":%.3f,"
		"\"pid\":1,\"tid\":1,\"dur\":1.5,\"args\":{\"op_id\":%lu,"
		"\"op\":\"%s\",\"overload\":\"\",\"phase\":\"%s\",\"policy\":\"%s\","
		"\"device\":\"cuda\",\"emulated\":true", name, w->ts, id, name,
		phase, policy);
	if (forward)
		fprintf(w->f, ",\"forward_op_id\":%lu", forward);
	fprintf(w->f, ",\"autocast\":{\"enabled\":%s,\"device\":\"cuda\","
		"\"dtype\":\"f16\",\"cache_enabled\":true,\"depth\":%d,"
		"\"scope\":%s}", autocast ? "true" : "false", autocast ? 1 : 0,
		autocast ? "\"forward\",\"scopes\":[\"forward\"]" : "null");
	write_list(w->f, "inputs", in, nin);
	write_list(w->f, "outputs", out, nout);
	fputs(",\"Input type\":[", w->f);
	for (int i = 0; i < nin; i++)
		fprintf(w->f, "%s\"%s\"", i ? "," : "", in[i].dtype);
	fputs("],\"Input Dims\":[", w->f);
	for (int i = 0; i < nin; i++)
		fprintf(w->f, "%s[%d]", i ? "," : "", in[i].rows);
	fputs("]}}", w->f);
	return id;
}

/* A cast autocast makes for the next op (op_id = w->ops + 1). */
static struct tensor cast(struct writer *w, const struct tensor *from, int arg,
			  const char *cache)
{
	struct tensor to = new_tensor(w, "f16", from->rows, from->cols, NULL);
	unsigned long bytes = (unsigned long)from->rows *
			      (unsigned long)(from->cols ? from->cols : 1) * 2;

	event_start(w);
	fprintf(w->f, "{\"name\":\"cast f32->f16\",\"cat\":\"amp.cast\",\"ph\":\"X\","
		"\"ts\":%.3f,\"pid\":1,\"tid\":1,\"dur\":0.5,\"args\":{\"op_id\":%lu,"
		"\"op\":\"linear\",\"phase\":\"forward\",\"scope\":\"forward\","
		"\"arg\":%d,\"tensor\":%lu,\"result\":%lu,\"from\":\"f32\","
		"\"to\":\"f16\",\"cache\":\"%s\",\"reason\":\"bench\",\"bytes\":%lu",
		w->ts, w->ops + 1, arg, from->id, to.id, cache, bytes);
	if (from->name)
		fprintf(w->f, ",\"name\":\"%s\"", from->name);
	fputs("}}", w->f);
	return to;
}

static void scope(struct writer *w, bool begin)
{
	event_start(w);
	if (begin)
		fprintf(w->f, "{\"name\":\"forward\",\"cat\":\"amp.scope\",\"ph\":\"B\","
			"\"ts\":%.3f,\"pid\":1,\"tid\":1,\"args\":{\"scope\":\"forward\","
			"\"depth\":1,\"device\":\"cuda\",\"dtype\":\"f16\","
			"\"enabled\":true,\"cache_enabled\":true}}", w->ts);
	else
		fprintf(w->f, "{\"name\":\"forward\",\"cat\":\"amp.scope\",\"ph\":\"E\","
			"\"ts\":%.3f,\"pid\":1,\"tid\":1,\"args\":{\"depth\":1}}", w->ts);
}

struct layer {
	struct tensor ln, w1, w2;          /* weights (f32, named) */
	struct tensor x, a, h, g, y;       /* saved activations */
	struct tensor w1h, w2h, a16;       /* casts */
	unsigned long op_ln, op_fc1, op_gelu, op_fc2, op_add;
	char names[3][32];
};

/* A trace of about `target` ops (25 per layer).  Returns the op count. */
static unsigned long write_trace(const char *path, unsigned long target)
{
	int nlayers = (int)(target / 25 ? target / 25 : 1);
	struct layer *layers = calloc((size_t)nlayers, sizeof *layers);
	struct writer w = { .f = fopen(path, "w"), .first = true };

	if (!w.f || !layers) {
		perror(path);
		exit(1);
	}
	fputs("{\"displayTimeUnit\":\"ms\",\"amptrace\":{\"format\":\"1.0\","
	      "\"generator\":\"bench_viewer\",\"command\":[\"bench\"]},"
	      "\"traceEvents\":[", w.f);
	for (int l = 0; l < nlayers; l++) {
		struct layer *L = &layers[l];
		snprintf(L->names[0], sizeof L->names[0], "layers.%d.norm", l);
		snprintf(L->names[1], sizeof L->names[1], "layers.%d.fc1", l);
		snprintf(L->names[2], sizeof L->names[2], "layers.%d.fc2", l);
		L->ln = new_tensor(&w, "f32", WIDTH, 0, L->names[0]);
		L->w1 = new_tensor(&w, "f32", WIDTH, WIDTH, L->names[1]);
		L->w2 = new_tensor(&w, "f32", WIDTH, WIDTH, L->names[2]);
		op(&w, "ones", "forward", "none", false, 0, NULL, 0, &L->ln, 1);
		op(&w, "randn", "forward", "none", false, 0, NULL, 0, &L->w1, 1);
		op(&w, "randn", "forward", "none", false, 0, NULL, 0, &L->w2, 1);
	}
	struct tensor x = new_tensor(&w, "f32", BATCH, WIDTH, "input");
	op(&w, "tensor", "forward", "none", false, 0, NULL, 0, &x, 1);

	scope(&w, true);
	for (int l = 0; l < nlayers; l++) {
		struct layer *L = &layers[l];
		L->x = x;
		L->a = new_tensor(&w, "f32", BATCH, WIDTH, NULL);
		struct tensor in[3] = { x, L->ln };
		L->op_ln = op(&w, "layer_norm", "forward", "fp32", true, 0, in, 2,
			      &L->a, 1);
		L->a16 = cast(&w, &L->a, 0, "uncacheable");
		L->w1h = cast(&w, &L->w1, 1, "miss");
		L->h = new_tensor(&w, "f16", BATCH, WIDTH, NULL);
		in[0] = L->a16;
		in[1] = L->w1h;
		L->op_fc1 = op(&w, "linear", "forward", "lower_precision_fp", true,
			       0, in, 2, &L->h, 1);
		L->g = new_tensor(&w, "f16", BATCH, WIDTH, NULL);
		L->op_gelu = op(&w, "gelu", "forward", "none", true, 0, &L->h, 1,
				&L->g, 1);
		L->w2h = cast(&w, &L->w2, 1, "miss");
		struct tensor o = new_tensor(&w, "f16", BATCH, WIDTH, NULL);
		in[0] = L->g;
		in[1] = L->w2h;
		L->op_fc2 = op(&w, "linear", "forward", "lower_precision_fp", true,
			       0, in, 2, &o, 1);
		L->y = new_tensor(&w, "f32", BATCH, WIDTH, NULL);
		in[0] = x;
		in[1] = o;
		L->op_add = op(&w, "add", "forward", "promote", true, 0, in, 2,
			       &L->y, 1);
		x = L->y;
	}
	struct tensor loss = new_tensor(&w, "f32", 1, 0, NULL);
	unsigned long op_loss = op(&w, "mean", "forward", "none", true, 0, &x, 1,
				   &loss, 1);
	scope(&w, false);

	struct tensor grad = new_tensor(&w, "f32", BATCH, WIDTH, NULL);
	op(&w, "mean_backward", "backward", "none", false, op_loss, &loss, 1,
	   &grad, 1);
	for (int l = nlayers - 1; l >= 0; l--) {
		struct layer *L = &layers[l];
		struct tensor g16 = new_tensor(&w, "f16", BATCH, WIDTH, NULL);
		op(&w, "to", "backward", "none", false, L->op_add, &grad, 1, &g16, 1);
		struct tensor dg = new_tensor(&w, "f16", BATCH, WIDTH, NULL);
		struct tensor in[3] = { g16, L->w2h };
		op(&w, "mm", "backward", "none", false, L->op_fc2, in, 2, &dg, 1);
		struct tensor dw2 = new_tensor(&w, "f16", WIDTH, WIDTH, NULL);
		in[1] = L->g;
		op(&w, "mm", "backward", "none", false, L->op_fc2, in, 2, &dw2, 1);
		struct tensor dh = new_tensor(&w, "f16", BATCH, WIDTH, NULL);
		in[0] = dg;
		in[1] = L->h;
		op(&w, "gelu_backward", "backward", "none", false, L->op_gelu, in, 2,
		   &dh, 1);
		struct tensor da = new_tensor(&w, "f16", BATCH, WIDTH, NULL);
		in[0] = dh;
		in[1] = L->w1h;
		op(&w, "mm", "backward", "none", false, L->op_fc1, in, 2, &da, 1);
		struct tensor dw1 = new_tensor(&w, "f16", WIDTH, WIDTH, NULL);
		in[1] = L->a16;
		op(&w, "mm", "backward", "none", false, L->op_fc1, in, 2, &dw1, 1);
		struct tensor da32 = new_tensor(&w, "f32", BATCH, WIDTH, NULL);
		op(&w, "to", "backward", "none", false, L->op_fc1, &da, 1, &da32, 1);
		struct tensor dx = new_tensor(&w, "f32", BATCH, WIDTH, NULL);
		struct tensor dln = new_tensor(&w, "f32", WIDTH, 0, NULL);
		struct tensor outs[2] = { dx, dln };
		in[0] = da32;
		in[1] = L->x;
		in[2] = L->ln;
		op(&w, "native_layer_norm_backward", "backward", "none", false,
		   L->op_ln, in, 3, outs, 2);
		struct tensor next = new_tensor(&w, "f32", BATCH, WIDTH, NULL);
		in[0] = dx;
		in[1] = grad;
		op(&w, "add", "backward", "none", false, L->op_add, in, 2, &next, 1);
		struct tensor dw1f = new_tensor(&w, "f32", WIDTH, WIDTH, NULL);
		op(&w, "to", "backward", "none", false, L->op_fc1, &dw1, 1, &dw1f, 1);
		struct tensor dw2f = new_tensor(&w, "f32", WIDTH, WIDTH, NULL);
		op(&w, "to", "backward", "none", false, L->op_fc2, &dw2, 1, &dw2f, 1);
		grad = next;
		/* SGD with momentum on the layer's weights */
		struct tensor grads[3] = { dln, dw1f, dw2f };
		struct tensor *params[3] = { &L->ln, &L->w1, &L->w2 };
		for (int p = 0; p < 3; p++) {
			struct tensor m = new_tensor(&w, "f32", params[p]->rows,
						     params[p]->cols, NULL);
			op(&w, "mul_", "forward", "none", false, 0, &grads[p], 1,
			   &m, 1);
			in[0] = *params[p];
			in[1] = m;
			op(&w, "add_", "forward", "none", false, 0, in, 2,
			   params[p], 1);
		}
	}
	fputs("\n]}\n", w.f);
	fclose(w.f);
	free(layers);
	return w.ops;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* trace file → SVG as ampview does it; returns the total milliseconds. */
static double measure(const char *path, unsigned long ops,
		      const struct view_options *o, const char *what)
{
	struct trace t;
	struct trace_error err;
	struct view_stats stats;
	char *dot, *svg;
	size_t dot_len, svg_len;
	double start = now_ms();

	if (trace_load(path, &t, &err) != 0 ||
	    view_dot(&t, o, &dot, &dot_len, &stats, &err) != 0) {
		fprintf(stderr, "bench_viewer: %s\n", err.message);
		exit(1);
	}
	double built = now_ms();
	if (view_render(dot, dot_len, VIEW_FORMAT_SVG, &svg, &svg_len, &err)) {
		fprintf(stderr, "bench_viewer: %s\n", err.message);
		exit(1);
	}
	double done = now_ms();
	printf("%6lu ops %-26s %5zu drawn %5zu folded %5zu left out %5zu nodes"
	       "  load+graph %5.0f ms  layout+SVG %6.0f ms  total %6.0f ms\n",
	       ops, what, stats.ops_shown, stats.ops_folded, stats.ops_left_out,
	       stats.nodes, built - start, done - built, done - start);
	free(dot);
	free(svg);
	trace_free(&t);
	return done - start;
}

int main(void)
{
	static const unsigned long sizes[] = { 100, 1000, 10000 };
	char dir[] = "/tmp/bench-viewer-XXXXXX", path[64];
	struct view_options folded, full, unlimited;
	double thousand_full = 0, ten_thousand_folded = 0;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	view_options_init(&folded);
	full = folded;
	full.fold = false;
	unlimited = full;
	unlimited.max_ops = 0;
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		snprintf(path, sizeof path, "%s/%lu.json", dir, sizes[i]);
		unsigned long ops = write_trace(path, sizes[i]);
		double t = measure(path, ops, &folded, "(default: folded)");
		if (sizes[i] == 10000)
			ten_thousand_folded = t;
		/* every op drawn up to 1,000; beyond, the first --ops 1000 */
		if (sizes[i] <= 1000)
			t = measure(path, ops, &unlimited, "--no-fold --ops 0");
		else
			t = measure(path, ops, &full, "--no-fold");
		if (sizes[i] == 1000)
			thousand_full = t;
		unlink(path);
	}
	rmdir(dir);
	printf("targets: 1,000 ops drawn in full %.2f s (<= 2 s: %s); "
	       "10,000 ops folded %.2f s (<= 5 s: %s)\n", thousand_full / 1e3,
	       thousand_full <= 2000 ? "met" : "MISSED",
	       ten_thousand_folded / 1e3,
	       ten_thousand_folded <= 5000 ? "met" : "MISSED");
	return 0;
}
