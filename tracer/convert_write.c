/* The converter's writing half: each trace event as its JSON line
 * (FORMAT.md), and, when the process has an in-memory trace, the same
 * event decoded there (see convert_internal.h). */
#include "convert_internal.h"
#include "event_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ keeping */

/* Each event written is also kept, decoded, in the process's in-memory
 * trace (conv_process.trace) when it has one: the same values trace_load
 * would read back from the line, so that findings computed from it are
 * those of the file.  The helpers return NULL when nothing is kept. */

static bool keeping(const struct conv_process *p)
{
	return p->trace && !p->trace_lost;
}

const char *conv_keep_str(struct conv_process *p, const char *s, size_t len)
{
	if (!s || !keeping(p))
		return NULL;
	const char *kept = trace_intern_n(p->trace, s, len);
	if (!kept)
		p->trace_lost = true;
	return kept;
}

const char *conv_keep_cstr(struct conv_process *p, const char *s)
{
	return conv_keep_str(p, s, s ? strlen(s) : 0);
}

const char *conv_keep_name(struct conv_process *p, enum name_table t,
			     unsigned value)
{
	if (!keeping(p))
		return NULL;
	if (value < p->name_count[t])
		return p->trace_names[t][value];
	return conv_keep_cstr(p, "unknown");
}

/* Interns p's name tables once, when it gets its trace. */
void conv_keep_names(struct conv_process *p)
{
	for (int k = 0; k < NAMES_COUNT && keeping(p); k++) {
		p->trace_names[k] = calloc(p->name_count[k] + 1,
					   sizeof *p->trace_names[k]);
		if (!p->trace_names[k]) {
			p->trace_lost = true;
			break;
		}
		for (size_t i = 0; i < p->name_count[k]; i++)
			p->trace_names[k][i] = conv_keep_cstr(p, p->names[k][i]);
	}
}

/* Microseconds, as a reader parses jsonw_us's text (the double nearest
 * ns / 1000, which the division gives too). */
double conv_to_us(int64_t ns)
{
	return (double)ns / 1000.0;
}

/* An M event: `value` is its args.name or args.labels. */
struct trace_event conv_meta_event(struct conv_process *p, const char *name,
				     int64_t pid, uint64_t tid,
				     const char *value, int64_t sort_index)
{
	return (struct trace_event){
		.kind = TRACE_META, .ph = 'M', .name = conv_keep_cstr(p, name),
		.cat = conv_keep_cstr(p, ""), .pid = pid, .tid = (int64_t)tid,
		.meta = { .value = conv_keep_cstr(p, value),
			  .sort_index = sort_index, .rank = -1 },
	};
}

/* ------------------------------------------------------------ writing */

/* The event's first keys, written into w (replacing what it held) and
 * kept in e (`kind` is what the reader classifies cat and ph as). */
void conv_event_head(struct jsonw *w, struct trace_event *e,
		       enum trace_kind kind, const char *name, size_t name_len,
		       const char *cat, char ph, int64_t ts_ns,
		       struct conv_process *p, uint64_t tid)
{
	*e = (struct trace_event){
		.kind = kind, .ph = ph, .name = conv_keep_str(p, name, name_len),
		.cat = conv_keep_cstr(p, cat), .pid = p->pid, .tid = (int64_t)tid,
		.ts = conv_to_us(ts_ns),
	};
	event_json_head(w, name, name_len, cat, ph, ts_ns, p->pid,
			(int64_t)tid);
}

/* Writes the event in w and keeps e, its decoded twin. */
void conv_emit(struct conv_process *p, struct jsonw *w,
		 const struct trace_event *e)
{
	if (p->writer)
		trace_writer_event(p->writer, w->data, w->len);
	if (keeping(p) && !trace_append(p->trace, e))
		p->trace_lost = true;
	p->events++;
}

static void keep_tensor(struct conv_process *p,
			const struct amp_tensor_info *t, struct trace_tensor *kept)
{
	*kept = (struct trace_tensor){
		.id = t->id, .dtype = conv_keep_name(p, NAMES_DTYPE, t->dtype),
		.name = conv_keep_cstr(p, t->name),
		.ndim = t->ndim < TRACE_MAX_DIMS ? t->ndim : TRACE_MAX_DIMS,
		.requires_grad = t->requires_grad, .leaf = t->is_leaf,
		.view = t->is_view,
	};
	memcpy(kept->shape, t->shape, (size_t)kept->ndim * sizeof *kept->shape);
}

struct trace_tensor *conv_keep_tensors(struct conv_process *p,
					 const struct amp_tensor_info *list,
					 int n)
{
	if (!keeping(p))
		return NULL;
	struct trace_tensor *kept =
		trace_alloc(p->trace, (n ? n : 1) * sizeof *kept);
	if (!kept) {
		p->trace_lost = true;
		return NULL;
	}
	for (int i = 0; i < n; i++)
		keep_tensor(p, &list[i], &kept[i]);
	return kept;
}

/* The named regions open on t, outermost first (NULL when none). */
static const char **keep_named_scopes(struct conv_process *p,
				      const struct conv_thread *t, int *count)
{
	*count = 0;
	if (!keeping(p))
		return NULL;
	size_t named = 0;
	for (size_t i = 0; i < t->nscopes; i++)
		named += t->scopes[i].name != NULL;
	if (!named)
		return NULL;
	const char **scopes = trace_alloc(p->trace, named * sizeof *scopes);
	if (!scopes) {
		p->trace_lost = true;
		return NULL;
	}
	for (size_t i = 0; i < t->nscopes; i++)
		if (t->scopes[i].name)
			scopes[(*count)++] = conv_keep_cstr(p, t->scopes[i].name);
	return scopes;
}

struct trace_autocast conv_keep_autocast(struct conv_process *p,
					   const struct conv_thread *t,
					   const struct amp_autocast_info *a)
{
	struct trace_autocast kept = {
		.enabled = a->enabled,
		.device = conv_keep_name(p, NAMES_DEVICE, a->device),
		.dtype = conv_keep_name(p, NAMES_DTYPE, a->dtype),
		.cache_enabled = a->cache_enabled, .depth = a->depth,
		.scope = conv_keep_cstr(p, a->scope),
	};
	kept.scopes = keep_named_scopes(p, t, &kept.nscopes);
	return kept;
}

void conv_write_shape(struct jsonw *w, const struct amp_tensor_info *t)
{
	jsonw_raw(w, "[", 1);
	for (int d = 0; d < t->ndim; d++) {
		if (d)
			jsonw_raw(w, ",", 1);
		jsonw_i64(w, t->shape[d]);
	}
	jsonw_raw(w, "]", 1);
}

void conv_write_tensor(struct jsonw *w, const struct conv_process *p,
			 const struct amp_tensor_info *t)
{
	jsonw_lit(w, "{\"tensor\":");
	jsonw_u64(w, t->id);
	jsonw_lit(w, ",\"dtype\":");
	jsonw_str(w, conv_name_of(p, NAMES_DTYPE, t->dtype));
	jsonw_lit(w, ",\"shape\":");
	conv_write_shape(w, t);
	if (t->name) {
		jsonw_lit(w, ",\"name\":");
		jsonw_str(w, t->name);
	}
	if (t->requires_grad)
		jsonw_lit(w, ",\"requires_grad\":true");
	if (t->is_leaf)
		jsonw_lit(w, ",\"leaf\":true");
	if (t->is_view)
		jsonw_lit(w, ",\"view\":true");
	if (t->device != 0)
		jsonw_printf(w, ",\"device\":\"%s\"",
			     conv_name_of(p, NAMES_DEVICE, t->device));
	jsonw_raw(w, "}", 1);
}

static void write_named_scopes(struct jsonw *w, const struct conv_thread *t)
{
	size_t named = 0;

	for (size_t i = 0; i < t->nscopes; i++)
		named += t->scopes[i].name != NULL;
	if (!named)
		return;
	jsonw_lit(w, ",\"scopes\":[");
	named = 0;
	for (size_t i = 0; i < t->nscopes; i++) {
		if (!t->scopes[i].name)
			continue;
		if (named++)
			jsonw_raw(w, ",", 1);
		jsonw_str(w, t->scopes[i].name);
	}
	jsonw_raw(w, "]", 1);
}

void conv_write_autocast(struct jsonw *w, const struct conv_process *p,
			   const struct conv_thread *t,
			   const struct amp_autocast_info *a)
{
	jsonw_lit(w, ",\"autocast\":{\"enabled\":");
	jsonw_bool(w, a->enabled);
	jsonw_lit(w, ",\"device\":");
	jsonw_str(w, conv_name_of(p, NAMES_DEVICE, a->device));
	jsonw_lit(w, ",\"dtype\":");
	jsonw_str(w, conv_name_of(p, NAMES_DTYPE, a->dtype));
	jsonw_lit(w, ",\"cache_enabled\":");
	jsonw_bool(w, a->cache_enabled);
	jsonw_lit(w, ",\"depth\":");
	jsonw_i64(w, a->depth);
	jsonw_lit(w, ",\"scope\":");
	jsonw_str(w, a->scope);
	write_named_scopes(w, t);
	jsonw_raw(w, "}", 1);
}

/* An op without a name (a producer's bug) is "unknown". */
const char *conv_op_or_unknown(const char *op)
{
	return op ? op : "unknown";
}

void conv_op_name(struct jsonw *name, const char *op, const char *overload)
{
	jsonw_reset(name);
	jsonw_cstr(name, conv_op_or_unknown(op));
	if (overload && *overload) {
		jsonw_raw(name, ".", 1);
		jsonw_cstr(name, overload);
	}
}

