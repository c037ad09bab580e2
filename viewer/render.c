/* DOT text → SVG or PNG in process, through libgvc (Graphviz's C API):
 * no `dot` process, no temporary files. */
#include "view.h"

#include <gvc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Graphviz reports through a process-wide callback; the last message
 * becomes the error's detail. */
static char graphviz_message[512];

static int keep_message(char *message)
{
	size_t len = strlen(message);

	while (len && (message[len - 1] == '\n' || message[len - 1] == ' '))
		len--;
	if (len >= sizeof graphviz_message)
		len = sizeof graphviz_message - 1;
	memcpy(graphviz_message, message, len);
	graphviz_message[len] = '\0';
	return 0;
}

static int copy_out(const char *data, size_t len, char **out, size_t *out_len)
{
	*out = malloc(len + 1);
	if (!*out)
		return -1;
	memcpy(*out, data, len);
	(*out)[len] = '\0';
	*out_len = len;
	return 0;
}

/* A context and `dot` read and laid out: 0, or -1 with err set (and
 * whatever was made freed). */
static int lay_out(const char *dot, GVC_t **gvc, Agraph_t **g,
		   struct trace_error *err)
{
	*gvc = gvContext();
	*g = *gvc ? agmemread(dot) : NULL;
	if (!*gvc)
		trace_error_set(err, "graphviz: cannot create a context");
	else if (!*g)
		trace_error_set(err, "graphviz cannot read the DOT text: %s",
				graphviz_message);
	else if (gvLayout(*gvc, *g, "dot") != 0)
		trace_error_set(err, "graphviz layout failed: %s",
				graphviz_message);
	else
		return 0;
	if (*g)
		agclose(*g);
	if (*gvc)
		gvFreeContext(*gvc);
	*g = NULL;
	*gvc = NULL;
	return -1;
}

static void close_layout(GVC_t *gvc, Agraph_t *g)
{
	if (g) {
		gvFreeLayout(gvc, g);
		agclose(g);
	}
	if (gvc)
		gvFreeContext(gvc);
}

/* Graphviz's Pango plugin remembers the font name of the last text it
 * measured, a string owned by that text's graph, and compares the next
 * text's with it: a layout after the previous graph was closed reads
 * freed memory (valgrind shows it when ampview lays out each depth).
 * So the graph laid out last stays open until the next one is laid out:
 * one graph at a time, as the plugin's own memory is per process. */
static GVC_t *kept_gvc;
static Agraph_t *kept_graph;

static void close_after_next_layout(GVC_t *gvc, Agraph_t *g)
{
	if (!g) {
		close_layout(gvc, g);
		return;
	}
	close_layout(kept_gvc, kept_graph);
	kept_gvc = gvc;
	kept_graph = g;
}

int view_layout_size(const char *dot, double *width_pt, double *height_pt,
		     struct trace_error *err)
{
	GVC_t *gvc;
	Agraph_t *g;
	int status = -1;

	graphviz_message[0] = '\0';
	agusererrf previous = agseterrf(keep_message);
	agerrlevel_t level = agseterr(AGERR);
	if (lay_out(dot, &gvc, &g, err) == 0) {
		/* the layout's bounding box, the title and legend included */
		boxf bb = GD_bb(g);
		*width_pt = bb.UR.x - bb.LL.x;
		*height_pt = bb.UR.y - bb.LL.y;
		status = 0;
	}
	close_after_next_layout(gvc, g);
	agseterr(level);
	agseterrf(previous);
	return status;
}

int view_render(const char *dot, size_t len, enum view_format format,
		char **out, size_t *out_len, struct trace_error *err)
{
	*out = NULL;
	*out_len = 0;
	if (format == VIEW_FORMAT_DOT)
		return copy_out(dot, len, out, out_len) ? trace_error_set(
			err, "out of memory") : 0;

	graphviz_message[0] = '\0';
	agusererrf previous = agseterrf(keep_message);
	agerrlevel_t level = agseterr(AGERR);
	GVC_t *gvc;
	Agraph_t *g;
	int status = -1;
	char *data = NULL;
	unsigned int size = 0;

	int laid_out = lay_out(dot, &gvc, &g, err);
	if (laid_out == 0 && (gvRenderData(gvc, g, view_format_name(format),
					   &data, &size) != 0 || !data))
		trace_error_set(err, "graphviz cannot render %s%s%s",
				view_format_name(format),
				graphviz_message[0] ? ": " : "",
				graphviz_message);
	else if (laid_out == 0 && copy_out(data, size, out, out_len) != 0)
		trace_error_set(err, "out of memory");
	else if (laid_out == 0)
		status = 0;
	if (data)
		gvFreeRenderData(data);
	close_after_next_layout(gvc, g);
	agseterr(level);
	agseterrf(previous);
	return status;
}
