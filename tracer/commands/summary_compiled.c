/* summary's compiled graphs: per graph, its calls and the casts each
 * call runs (recorded once, when the graph was compiled). */
#include "summary_compiled.h"

#include "compiled_graphs.h"
#include "textfit.h"

void summary_compiled_text(const struct trace *trace, FILE *out)
{
	struct compiled_graphs g;
	char compile[32];

	if (compiled_graphs_build(trace, &g) != 0 || !g.count) {
		compiled_graphs_free(&g);
		return;
	}
	fputs("\nCompiled graphs (torch.compile: a graph's casts are recorded "
	      "once, when it is\ncompiled, and run at each of its calls)\n",
	      out);
	fprintf(out, "  %5s  %-20s %9s %9s %8s %7s %8s %11s\n", "graph",
		"region", "calls f/b", "casts f/b", "autocast", "program",
		"autograd", "compile");
	for (size_t i = 0; i < g.count; i++) {
		const struct compiled_graph *c = &g.items[i];
		char calls[32], casts[32];
		textfit_duration(c->compile_us, compile, sizeof compile);
		snprintf(calls, sizeof calls, "%zu/%zu", c->calls[COMPILED_FORWARD],
			 c->calls[COMPILED_BACKWARD]);
		snprintf(casts, sizeof casts, "%zu/%zu", c->casts[COMPILED_FORWARD],
			 c->casts[COMPILED_BACKWARD]);
		fprintf(out, "  %5llu  ", (unsigned long long)c->graph);
		textfit_cell(out, c->name ? c->name : "?", 20, true);
		fprintf(out, " %9s %9s %8zu %7zu %8zu %11s%s\n", calls, casts,
			c->by_autocast, c->by_program, c->by_autograd, compile,
			c->failed ? " (failed)" : "");
	}
	if (g.unattributed_calls)
		fprintf(out, "  and %zu calls in steps recorded as aggregates, of "
			"regions compiled to several graphs\n  (the aggregates do "
			"not say which graph ran; run --steps all records it)\n",
			g.unattributed_calls);
	compiled_graphs_free(&g);
}

void summary_compiled_json(const struct trace *trace, cJSON *root)
{
	struct compiled_graphs g;
	cJSON *list = cJSON_AddArrayToObject(root, "compiled_graphs");

	if (compiled_graphs_build(trace, &g) != 0)
		g.count = 0;
	for (size_t i = 0; list && i < g.count; i++) {
		const struct compiled_graph *c = &g.items[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "pid", (double)c->pid);
		cJSON_AddNumberToObject(o, "graph", (double)c->graph);
		if (c->name)
			cJSON_AddStringToObject(o, "region", c->name);
		else
			cJSON_AddNullToObject(o, "region");
		cJSON_AddNumberToObject(o, "compiles", (double)c->compiles);
		cJSON_AddNumberToObject(o, "failed_compiles", (double)c->failed);
		cJSON_AddNumberToObject(o, "compile_us", c->compile_us);
		cJSON_AddNumberToObject(o, "forward_calls",
					(double)c->calls[COMPILED_FORWARD]);
		cJSON_AddNumberToObject(o, "backward_calls",
					(double)c->calls[COMPILED_BACKWARD]);
		cJSON_AddNumberToObject(o, "forward_casts",
					(double)c->casts[COMPILED_FORWARD]);
		cJSON_AddNumberToObject(o, "backward_casts",
					(double)c->casts[COMPILED_BACKWARD]);
		cJSON_AddNumberToObject(o, "by_autocast", (double)c->by_autocast);
		cJSON_AddNumberToObject(o, "by_program", (double)c->by_program);
		cJSON_AddNumberToObject(o, "by_autograd", (double)c->by_autograd);
		cJSON_AddItemToArray(list, o);
	}
	cJSON_AddNumberToObject(root, "compiled_calls_unattributed",
				(double)g.unattributed_calls);
	compiled_graphs_free(&g);
}
