/* The graph's storage (nodes, edges, clusters and their attribute text)
 * and the text helpers labels are made with (graph.h). */
#include "graph.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(struct graph *g, void **array, size_t *cap, size_t n,
		    size_t size)
{
	if (n < *cap)
		return true;
	size_t grown_cap = *cap ? *cap * 2 : 64;
	void *grown = realloc(*array, grown_cap * size);
	if (!grown) {
		g->failed = true;
		return false;
	}
	*array = grown;
	*cap = grown_cap;
	return true;
}

static void add_item(struct graph *g, bool cluster, size_t index)
{
	if (reserve(g, (void **)&g->items, &g->cap_items, g->nitems,
		    sizeof *g->items))
		g->items[g->nitems++] = (struct graph_item){ cluster, index };
}

size_t graph_new_node(struct graph *g, int cluster, const char *fmt, ...)
{
	va_list ap;

	if (!reserve(g, (void **)&g->nodes, &g->cap_nodes, g->nnodes,
		     sizeof *g->nodes))
		return 0;
	struct graph_node *n = &g->nodes[g->nnodes];
	*n = (struct graph_node){ .cluster = cluster,
				  .attrs = { g->text.len, 0 } };
	va_start(ap, fmt);
	vsnprintf(n->id, sizeof n->id, fmt, ap);
	va_end(ap);
	add_item(g, false, g->nnodes);
	return g->nnodes++;
}

void graph_declare_first(struct graph *g, size_t node)
{
	for (size_t i = 0; i < g->nitems; i++)
		if (!g->items[i].cluster && g->items[i].index == node) {
			memmove(&g->items[1], &g->items[0], i * sizeof *g->items);
			g->items[0] = (struct graph_item){ false, node };
			return;
		}
}

void graph_end_node(struct graph *g, size_t node)
{
	if (node < g->nnodes)
		g->nodes[node].attrs.len = g->text.len - g->nodes[node].attrs.at;
}

size_t graph_new_edge(struct graph *g, size_t from, size_t to)
{
	if (!reserve(g, (void **)&g->edges, &g->cap_edges, g->nedges,
		     sizeof *g->edges))
		return 0;
	g->edges[g->nedges] = (struct graph_edge){ from, to,
						   { g->text.len, 0 } };
	return g->nedges++;
}

void graph_end_edge(struct graph *g, size_t edge)
{
	if (edge < g->nedges)
		g->edges[edge].attrs.len = g->text.len - g->edges[edge].attrs.at;
}

int graph_new_cluster(struct graph *g, int parent, const char *fmt, ...)
{
	va_list ap;

	if (!reserve(g, (void **)&g->clusters, &g->cap_clusters, g->nclusters,
		     sizeof *g->clusters))
		return -1;
	struct graph_cluster *c = &g->clusters[g->nclusters];
	*c = (struct graph_cluster){ .parent = parent,
				     .attrs = { g->text.len, 0 } };
	va_start(ap, fmt);
	vsnprintf(c->id, sizeof c->id, fmt, ap);
	va_end(ap);
	add_item(g, true, g->nclusters);
	return (int)g->nclusters++;
}

void graph_end_cluster(struct graph *g, int cluster)
{
	if (cluster >= 0 && (size_t)cluster < g->nclusters)
		g->clusters[cluster].attrs.len =
			g->text.len - g->clusters[cluster].attrs.at;
}

/* key="value" after a comma when the list (begun at `start`) has one. */
void graph_attr(struct graph *g, size_t start, const char *key,
		 const char *value)
{
	if (g->text.len > start)
		jsonw_cstr(&g->text, ", ");
	jsonw_cstr(&g->text, key);
	jsonw_cstr(&g->text, "=");
	graph_quote(&g->text, value);
}

/* ------------------------------------------------------------- labels */

size_t graph_slack(size_t len)
{
	return len / 16 + 1;
}

void graph_text(struct jsonw *w, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	jsonw_cstr(w, buf);
}

/* "f16[32,64]"; dtype alone when the tensor is unknown. */
const char *graph_tensor_text(char *buf, size_t size, const char *dtype,
			       const struct trace_tensor *t)
{
	size_t used = (size_t)snprintf(buf, size, "%s", dtype ? dtype : "?");

	if (!t)
		return buf;
	used += (size_t)snprintf(buf + used, size - used, "[");
	for (int d = 0; d < t->info->ndim && used < size; d++)
		used += (size_t)snprintf(buf + used, size - used, "%s%lld",
					 d ? "," : "", (long long)t->info->shape[d]);
	if (used < size)
		snprintf(buf + used, size - used, "]");
	return buf;
}

const char *graph_bytes_text(char *buf, size_t size, uint64_t bytes)
{
	if (bytes < 1024)
		snprintf(buf, size, "%llu B", (unsigned long long)bytes);
	else if (bytes < 1024 * 1024)
		snprintf(buf, size, "%.1f KiB", (double)bytes / 1024);
	else
		snprintf(buf, size, "%.1f MiB", (double)bytes / (1024.0 * 1024));
	return buf;
}

const char *graph_time_text(char *buf, size_t size, double us)
{
	if (us < 1000)
		snprintf(buf, size, "%.1f µs", us);
	else if (us < 1e6)
		snprintf(buf, size, "%.2f ms", us / 1e3);
	else
		snprintf(buf, size, "%.2f s", us / 1e6);
	return buf;
}

/* Wraps `text` at spaces into at most `max_lines` lines of about `width`
 * bytes; what does not fit becomes "…". */
void graph_wrap(struct jsonw *w, const char *text, size_t width,
		      int max_lines)
{
	size_t line = 0;
	int lines = 1;

	while (*text) {
		size_t word = strcspn(text, " ");
		if (line && line + 1 + word > width) {
			if (lines == max_lines) {
				jsonw_cstr(w, " …");
				return;
			}
			jsonw_cstr(w, "\n");
			lines++;
			line = 0;
		} else if (line) {
			jsonw_cstr(w, " ");
			line++;
		}
		jsonw_raw(w, text, word);
		line += word;
		text += word;
		while (*text == ' ')
			text++;
	}
}

void graph_free(struct graph *g)
{
	jsonw_free(&g->text);
	free(g->nodes);
	free(g->edges);
	free(g->clusters);
	free(g->items);
	free(g->findings);
	free(g->elsewhere);
	free(g->flags);
	free(g->folds);
	free(g->boxes);
	free(g->modules);
	free(g->heads);
	*g = (struct graph){ 0 };
}
