/* The converter's building half (see convert_internal.h): each trace
 * event is built once, as a struct trace_event whose strings are interned
 * in the process's trace, then handed to the one writer (event_json.h)
 * for its JSON line and appended, as it is, to the kept trace. */
#include "convert_internal.h"
#include "event_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *convert_dupn(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (!d)
		abort(); /* the converter has no partial state to fall back to */
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

void *convert_grow(void *array, size_t *cap, size_t need, size_t elem)
{
	void *grown = trace_grow(array, cap, need, elem);

	if (!grown)
		abort(); /* as convert_dupn */
	return grown;
}

const char *convert_name_of(const struct convert_process *p, enum name_table t,
			   unsigned value)
{
	if (value < p->name_count[t])
		return p->names[t][value];
	return "unknown";
}

static const char *const literal_text[LIT_COUNT] = {
	[LIT_EMPTY] = "",
	[LIT_UNKNOWN] = "unknown",
	[LIT_CAT_OP] = "amp.op",
	[LIT_CAT_CAST] = "amp.cast",
	[LIT_CAT_SCOPE] = "amp.scope",
	[LIT_CAT_CACHE] = "amp.cache",
	[LIT_CAT_SCALER] = "amp.scaler",
	[LIT_CAT_DIAG] = "amp.diag",
	[LIT_CAT_KERNEL] = "kernel",
	[LIT_CAT_MEMCPY] = "gpu_memcpy",
	[LIT_AUTOCAST_CACHE] = "autocast cache",
	[LIT_ENTRIES] = "entries",
	[LIT_BYTES] = "bytes",
	[LIT_SCALE] = "scale",
	[LIT_SKIPPED] = "skipped",
	[LIT_SKIPPED_STEPS] = "skipped steps",
	[LIT_CACHE_CLEAR] = "cache clear",
	[LIT_PROCESS_NAME] = "process_name",
	[LIT_PROCESS_SORT_INDEX] = "process_sort_index",
	[LIT_PROCESS_LABELS] = "process_labels",
	[LIT_THREAD_NAME] = "thread_name",
	[LIT_THREAD_SORT_INDEX] = "thread_sort_index",
	[LIT_CAT_STEP] = "amp.step",
	[LIT_CAT_AGGREGATE] = "amp.aggregate",
	[LIT_EVALUATION] = "evaluation",
};

/* Event names made of other strings, by the interned strings they are
 * made of: an op's "softmax.int" and a cast's "cast f32->bf16" would
 * otherwise be formatted and interned again for every event; and lists
 * of open regions. */
#define OP_LABELS 256
#define CAST_LABEL_DTYPES 16
#define SCOPE_LISTS 32
struct scope_list {
	const char **names;
	int count;
};
/* The strings interned lately, by their length and first and last bytes:
 * a record's strings (op names, tensor names, regions) are the same few
 * hundred over and over, and finding one here (a compare) cost a third
 * of interning it again (a hash of every byte and a table probe). */
#define RECENT_STRINGS 512
struct recent_string {
	const char *kept;
	size_t len;
};
struct convert_label_cache {
	struct recent_string recent[RECENT_STRINGS];
	struct {
		const char *op, *overload, *label;
	} ops[OP_LABELS];
	const char *casts[CAST_LABEL_DTYPES][CAST_LABEL_DTYPES];
	/* the lists of open named regions made so far (named_scopes) */
	struct scope_list scope_lists[SCOPE_LISTS];
	size_t nscope_lists;
};

/* ------------------------------------------------------------ strings */

static bool keeping(const struct convert_process *p)
{
	return p->trace && !p->trace_lost;
}

/* When the kept trace runs out of memory it is lost (run then computes
 * no findings from it) and the strings go on in the process's own table:
 * the events are still written. */
static void lose_trace(struct convert_process *p)
{
	p->trace_lost = true;
	p->strings = &p->own_strings;
	if (p->labels)
		memset(p->labels->recent, 0, sizeof p->labels->recent);
}

const char *convert_intern(struct convert_process *p, const char *s, size_t len)
{
	if (!s)
		return NULL;
	const char *kept = trace_intern_n(p->strings, s, len);
	if (!kept && p->strings != &p->own_strings) {
		lose_trace(p);
		kept = trace_intern_n(p->strings, s, len);
	}
	if (!kept)
		abort(); /* as convert_dupn: no partial state to fall back to */
	return kept;
}

static struct recent_string *recent_slot(struct convert_process *p,
					 const char *s, size_t len)
{
	uint64_t head = 0, tail = 0;

	if (len >= 8) {
		memcpy(&head, s, 8);
		memcpy(&tail, s + len - 8, 8);
	} else {
		for (size_t i = 0; i < len; i++)
			head |= (uint64_t)(unsigned char)s[i] << (8 * i);
	}
	uint64_t h = (head * 0x9E3779B97F4A7C15ull) ^
		     (tail * 0xBF58476D1CE4E5B9ull) ^ len;
	return &p->labels->recent[(h ^ h >> 29) % RECENT_STRINGS];
}

const char *convert_intern_cstr(struct convert_process *p, const char *s)
{
	if (!s)
		return NULL;
	size_t len = strlen(s);
	struct recent_string *slot = p->labels ? recent_slot(p, s, len) : NULL;
	if (slot && slot->kept && slot->len == len &&
	    !memcmp(slot->kept, s, len))
		return slot->kept;
	const char *kept = convert_intern(p, s, len);
	if (slot)
		*slot = (struct recent_string){ kept, len };
	return kept;
}

/* A string no other event has (a step's name, "step 1234"), copied
 * where p's strings live, not interned: a long run names every step,
 * and each name would take a slot of the string table (and of the
 * recent strings) too. */
const char *convert_copy_cstr(struct convert_process *p, const char *s)
{
	size_t size = strlen(s) + 1;
	char *copy = convert_alloc(p, size);

	memcpy(copy, s, size);
	return copy;
}

/* Interns p's name tables and the literals once, when it is announced
 * (its trace chosen). */
void convert_intern_names(struct convert_process *p)
{
	p->strings = p->trace ? p->trace : &p->own_strings;
	p->literals = calloc(LIT_COUNT, sizeof *p->literals);
	p->labels = calloc(1, sizeof *p->labels);
	if (!p->literals || !p->labels)
		abort();
	for (int k = 0; k < LIT_COUNT; k++)
		p->literals[k] = convert_intern_cstr(p, literal_text[k]);
	for (int k = 0; k < NAMES_COUNT; k++) {
		p->interned_names[k] = calloc(p->name_count[k] + 1,
					      sizeof *p->interned_names[k]);
		if (!p->interned_names[k])
			abort();
		for (size_t i = 0; i < p->name_count[k]; i++)
			p->interned_names[k][i] =
				convert_intern_cstr(p, p->names[k][i]);
	}
}

/* `size` bytes that live as long as p's strings. */
void *convert_alloc(struct convert_process *p, size_t size)
{
	void *room = trace_alloc(p->strings, size);
	if (!room && p->strings != &p->own_strings) {
		lose_trace(p);
		room = trace_alloc(p->strings, size);
	}
	if (!room)
		abort();
	return room;
}

/* "softmax.int", or "softmax" for an empty overload. */
const char *convert_op_label(struct convert_process *p, const char *op,
			     const char *overload)
{
	size_t slot = (((uintptr_t)op >> 3) ^ ((uintptr_t)overload >> 5)) %
		      OP_LABELS;
	struct convert_label_cache *c = p->labels;

	if (c->ops[slot].op == op && c->ops[slot].overload == overload)
		return c->ops[slot].label;
	const char *label = op;
	if (*overload) {
		size_t n = strlen(op), k = strlen(overload);
		char *text = malloc(n + k + 2);
		if (!text)
			abort();
		memcpy(text, op, n);
		text[n] = '.';
		memcpy(text + n + 1, overload, k + 1);
		label = convert_intern(p, text, n + k + 1);
		free(text);
	}
	c->ops[slot].op = op;
	c->ops[slot].overload = overload;
	c->ops[slot].label = label;
	return label;
}

/* "cast f32->bf16" */
const char *convert_cast_label(struct convert_process *p, unsigned from,
			       unsigned to)
{
	const char **cached = from < CAST_LABEL_DTYPES && to < CAST_LABEL_DTYPES
				      ? &p->labels->casts[from][to]
				      : NULL;
	char label[64];

	if (cached && *cached)
		return *cached;
	int n = snprintf(label, sizeof label, "cast %s->%s",
			 convert_name_of(p, NAMES_DTYPE, from),
			 convert_name_of(p, NAMES_DTYPE, to));
	const char *kept = convert_intern(p, label,
					  (size_t)n < sizeof label ? (size_t)n
							      : sizeof label - 1);
	if (cached)
		*cached = kept;
	return kept;
}

/* ------------------------------------------------------------- events */

/* Microseconds, as a reader parses jsonw_us's text (the double nearest
 * ns / 1000, which the division gives too). */
double convert_to_us(int64_t ns)
{
	return (double)ns / 1000.0;
}

/* An event's first fields; `name` is interned. */
struct trace_event convert_head(struct converter *cv, struct convert_process *p,
				uint64_t tid, enum trace_kind kind,
				const char *name, enum convert_literal cat,
				char ph, uint64_t time_ns)
{
	return (struct trace_event){
		.kind = kind, .ph = ph, .name = name, .cat = p->literals[cat],
		.pid = p->pid, .tid = (int64_t)tid,
		.ts = convert_to_us((int64_t)(time_ns - cv->base_ns)),
	};
}

/* An M event: `value` is its args.name or args.labels. */
struct trace_event convert_meta_event(struct convert_process *p,
				      enum convert_literal name, int64_t pid,
				      uint64_t tid, const char *value,
				      int64_t sort_index)
{
	return (struct trace_event){
		.kind = TRACE_META, .ph = 'M', .name = p->literals[name],
		.cat = p->literals[LIT_EMPTY], .pid = pid, .tid = (int64_t)tid,
		.meta = { .value = convert_intern_cstr(p, value),
			  .sort_index = sort_index, .rank = -1 },
	};
}

void convert_write(struct converter *cv, struct convert_process *p,
		   const struct trace_event *e)
{
	event_json_write_memo(&cv->buf, e, cv->memo);
	if (p->writer && !cv->buf.failed)
		trace_writer_event(p->writer, cv->buf.data, cv->buf.len);
	p->events++;
}

bool convert_keeps(const struct convert_process *p)
{
	return keeping(p);
}

void convert_keep(struct convert_process *p, const struct trace_event *e)
{
	if (keeping(p) && !trace_append(p->trace, e))
		lose_trace(p);
}

/* Writes e and keeps it, unless the kept trace's reader does not read
 * it (keeps_event). */
void convert_emit(struct converter *cv, struct convert_process *p,
		  const struct trace_event *e)
{
	convert_write(cv, p, e);
	if (!cv->keeps_event || cv->keeps_event(e))
		convert_keep(p, e);
}

/* A shape, interned in the kept trace; else the producer's own sizes,
 * which live until the event is written. */
const int64_t *convert_shape(struct convert_process *p, const int64_t *sizes,
			     int ndim)
{
	const int64_t *kept = keeping(p) ? trace_intern_shape(p->trace, sizes,
							      ndim)
					 : NULL;
	if (!kept && keeping(p))
		lose_trace(p);
	return kept ? kept : sizes;
}

/* A tensor's kind, interned in the kept trace; else in scratch room
 * that the next event reuses (`slot` of it). */
const struct trace_tensor_info *
convert_tensor_info(struct converter *cv, struct convert_process *p,
		    const struct trace_tensor_info *info, int slot)
{
	const struct trace_tensor_info *kept =
		keeping(p) ? trace_intern_tensor_info(p->trace, info) : NULL;

	if (!kept && keeping(p))
		lose_trace(p);
	if (kept)
		return kept;
	cv->scratch_infos[slot] = *info;
	return &cv->scratch_infos[slot];
}

/* A compiled graph's cast's keys, in p's room; NULL when none is set
 * (a cast of the run). */
const struct trace_cast_compiled *
convert_cast_compiled(struct convert_process *p,
		      const struct trace_cast_compiled *keys)
{
	if (!trace_cast_compiled_set(keys))
		return NULL;
	struct trace_cast_compiled *kept = convert_alloc(p, sizeof *kept);
	*kept = *keys;
	return kept;
}

/* An event's tensors: in the kept trace, else in scratch room that the
 * next event reuses. */
struct trace_tensor *convert_tensors(struct converter *cv,
				     struct convert_process *p,
				     const struct producer_tensor *list, int n,
				     bool inputs)
{
	struct trace_tensor *out = NULL;
	int scratch = inputs ? 0 : RAW_MAX_TENSORS;

	if (keeping(p)) {
		out = trace_alloc(p->trace, (size_t)(n ? n : 1) * sizeof *out);
		if (!out)
			lose_trace(p);
	}
	if (!out)
		out = cv->scratch_tensors + scratch;
	for (int i = 0; i < n; i++) {
		const struct producer_tensor *t = &list[i];
		int ndim = t->ndim < TRACE_MAX_DIMS ? t->ndim : TRACE_MAX_DIMS;
		struct trace_tensor_info info = {
			.dtype = convert_name(p, NAMES_DTYPE, t->dtype),
			.name = convert_intern_cstr(p, t->name),
			.ndim = ndim,
			.shape = convert_shape(p, t->shape, ndim),
			.requires_grad = t->flags & PRODUCER_TENSOR_REQUIRES_GRAD,
			.leaf = t->flags & PRODUCER_TENSOR_LEAF,
			.view = t->flags & PRODUCER_TENSOR_VIEW,
			.device = t->device ? convert_name(p, NAMES_DEVICE,
							   t->device)
					    : NULL,
			.profiler_type = inputs ? convert_name(p, NAMES_PROFILER,
							       t->dtype)
						: NULL,
		};
		out[i] = (struct trace_tensor){
			.id = t->id,
			.producer_op_id = inputs ? t->producer_op_id : 0,
			.info = convert_tensor_info(cv, p, &info, scratch + i),
		};
	}
	return out;
}

/* The named regions open on t, outermost first: one array shared by the
 * thread's events until a region opens or closes, and by every later
 * time the same regions are open (p keeps the arrays it made), so that
 * ops in alike regions stay alike to the writer's templates. */
static void named_scopes(struct convert_process *p, struct convert_thread *t)
{
	if (!t->named_scopes_stale)
		return;
	t->named_scopes_stale = false;
	t->named_scopes = NULL;
	t->nnamed_scopes = 0;
	const char *open[64];
	int named = 0;
	for (size_t i = 0; i < t->nscopes && named < 64; i++)
		if (t->scopes[i].name)
			open[named++] = t->scopes[i].name;
	if (!named)
		return;
	struct convert_label_cache *c = p->labels;
	for (size_t i = 0; i < c->nscope_lists; i++)
		if (c->scope_lists[i].count == named &&
		    !memcmp(c->scope_lists[i].names, open,
			    (size_t)named * sizeof *open)) {
			t->named_scopes = c->scope_lists[i].names;
			t->nnamed_scopes = named;
			return;
		}
	const char **kept = convert_alloc(p, (size_t)named * sizeof *kept);
	memcpy(kept, open, (size_t)named * sizeof *open);
	if (c->nscope_lists < SCOPE_LISTS)
		c->scope_lists[c->nscope_lists++] =
			(struct scope_list){ kept, named };
	t->named_scopes = kept;
	t->nnamed_scopes = named;
}

/* `scope`: a's scope interned, when the caller knows it (or NULL). */
const struct trace_autocast *convert_autocast(struct convert_process *p,
					      struct convert_thread *t,
					      const struct producer_autocast *a,
					      const char *scope)
{
	struct trace_autocast state;

	named_scopes(p, t);
	memset(&state, 0, sizeof state);
	state.enabled = a->enabled;
	state.device = convert_name(p, NAMES_DEVICE, a->device);
	state.dtype = convert_name(p, NAMES_DTYPE, a->dtype);
	state.cache_enabled = a->cache_enabled;
	state.depth = a->depth;
	state.scope = a->scope && scope && !strcmp(a->scope, scope)
			      ? scope
			      : convert_intern_cstr(p, a->scope);
	state.scopes = t->named_scopes;
	state.nscopes = t->nnamed_scopes;
	if (t->autocast && !memcmp(&state, &t->autocast_made, sizeof state))
		return t->autocast;
	const struct trace_autocast *kept =
		trace_intern_autocast(p->strings, &state);
	if (!kept && p->strings != &p->own_strings) {
		lose_trace(p);
		kept = trace_intern_autocast(p->strings, &state);
	}
	if (!kept)
		abort(); /* as convert_intern */
	memcpy(&t->autocast_made, &state, sizeof state);
	t->autocast = kept;
	return kept;
}
