/* Training steps as the producer marked them (producer.h) -> amp.step
 * events on tid 0, the process's own track: a step's slice when it ends,
 * an evaluation window's when it ends (within its step), the note that
 * full detail stopped for size; and each thread's aggregates of a step
 * without full detail -> one amp.aggregate event once its totals come,
 * or, for the step a thread was in when its process ended, from the file
 * it counted in (cut short when the process died; FORMAT.md §8, §3.12,
 * §7). */
#include "convert_internal.h"

#include "raw.h"
#include "step_aggregate.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* `name` is p's own (interned, or copied). */
static struct trace_event step_head(struct converter *cv,
				    struct convert_process *p, char ph,
				    const char *name, uint64_t begin_ns)
{
	return convert_head(cv, p, 0, TRACE_STEP, name, LIT_CAT_STEP, ph,
			    begin_ns);
}

static void on_step(struct converter *cv, struct convert_process *p,
		    const struct raw_step *s, uint64_t end_ns)
{
	char name[48];
	uint64_t begin_ns = s->begin_ns < cv->base_ns ? cv->base_ns : s->begin_ns;

	if (begin_ns > end_ns)
		begin_ns = end_ns;
	snprintf(name, sizeof name, "step %llu", (unsigned long long)s->step);
	struct trace_event e = step_head(cv, p, 'X', convert_copy_cstr(p, name),
					 begin_ns);
	e.dur = convert_to_us((int64_t)(end_ns - begin_ns));
	e.step = (struct trace_step){
		.step = (int64_t)s->step,
		.marker = convert_intern_cstr(p, s->marker ? s->marker
							   : "unknown"),
		.detail = s->detail,
	};
	convert_emit(cv, p, &e);
	p->steps++;
	p->detail_steps += s->detail;
	p->previous_step_begin_ns = p->step_begin_ns;
	p->step_begin_ns = end_ns;
	p->step_in_progress = s->step + 1;
}

/* A window is drawn inside its step: the step's slice and the window's
 * nest on the process's track.  Its step is the one in progress, or the
 * one before: a region under no_grad is known for a window when a later
 * step ends, at the latest (FORMAT.md §8). */
static void on_evaluation(struct converter *cv, struct convert_process *p,
			  const struct raw_evaluation *w, uint64_t end_ns)
{
	uint64_t begin_ns = w->begin_ns;
	uint64_t step_begin_ns = w->step < p->step_in_progress
					 ? p->previous_step_begin_ns
					 : p->step_begin_ns;

	if (begin_ns < step_begin_ns)
		begin_ns = step_begin_ns;
	if (begin_ns < cv->base_ns)
		begin_ns = cv->base_ns;
	if (begin_ns > end_ns)
		begin_ns = end_ns;
	struct trace_event e = step_head(cv, p, 'X',
					 convert_intern_cstr(p, "evaluation"),
					 begin_ns);
	e.dur = convert_to_us((int64_t)(end_ns - begin_ns));
	e.step = (struct trace_step){
		.step = (int64_t)w->step,
		.evaluation = convert_intern_cstr(p, w->how ? w->how : "unknown"),
	};
	convert_emit(cv, p, &e);
}

static void on_detail_stop(struct converter *cv, struct convert_process *p,
			   const struct raw_detail_stop *s, uint64_t time_ns)
{
	const char *measured = s->measured ? s->measured : "the trace";
	struct trace_event e = step_head(
		cv, p, 'i', convert_intern_cstr(p, "full detail stops"),
		time_ns);

	e.step = (struct trace_step){
		.step = (int64_t)s->step, .size_limit = s->limit,
		.measured = convert_intern_cstr(p, measured), .scope = 'p',
	};
	convert_emit(cv, p, &e);
	p->detail_stopped = true;
	p->detail_stop_step = s->step;
	p->detail_stop_limit = s->limit;
	free(p->detail_stop_measured);
	p->detail_stop_measured = convert_dupn(measured, strlen(measured));
}

/* ---------------------------------------------------------- aggregates */

static const char *dtype_or_null(struct convert_process *p, bool has,
				 unsigned dtype)
{
	return has ? convert_name(p, NAMES_DTYPE, dtype) : NULL;
}

static void on_step_op(struct convert_process *p, struct convert_thread *t,
		       const struct raw_step_op *m)
{
	t->aggregate_ops = convert_grow(t->aggregate_ops, &t->cap_aggregate_ops,
					t->naggregate_ops + 1,
					sizeof *t->aggregate_ops);
	t->aggregate_ops[t->naggregate_ops++] = (struct trace_aggregate_op){
		.op = convert_intern_cstr(p, m->op ? m->op : "unknown"),
		.overload = convert_intern_cstr(p, m->overload ? m->overload
							       : ""),
		.phase = convert_name(p, NAMES_PHASE, m->phase),
		.policy = convert_name(p, NAMES_POLICY, m->policy),
		.dtype = dtype_or_null(p, m->has_dtype, m->dtype),
		.device = convert_name(p, NAMES_DEVICE, m->device),
		.count = m->count, .failed = m->failed,
		.dur_ns = (int64_t)m->dur_ns,
	};
	p->aggregated_ops += m->count;
}

static void on_step_cast(struct convert_process *p, struct convert_thread *t,
			 const struct raw_step_cast *m)
{
	t->aggregate_casts = convert_grow(t->aggregate_casts,
					  &t->cap_aggregate_casts,
					  t->naggregate_casts + 1,
					  sizeof *t->aggregate_casts);
	t->aggregate_casts[t->naggregate_casts++] = (struct trace_aggregate_cast){
		.op = convert_intern_cstr(p, m->op ? m->op : ""),
		.phase = convert_name(p, NAMES_PHASE, m->phase),
		.from = convert_name(p, NAMES_DTYPE, m->from),
		.to = convert_name(p, NAMES_DTYPE, m->to),
		.cache = convert_name(p, NAMES_CACHE, m->cache),
		.count = m->count, .bytes = m->bytes, .stale = m->stale,
		.dur_ns = (int64_t)m->dur_ns,
		.origin = m->origin ? convert_intern_cstr(p, m->origin) : NULL,
	};
}

static void on_step_diag(struct convert_process *p, struct convert_thread *t,
			 const struct raw_step_diag *m)
{
	t->aggregate_diags = convert_grow(t->aggregate_diags,
					  &t->cap_aggregate_diags,
					  t->naggregate_diags + 1,
					  sizeof *t->aggregate_diags);
	t->aggregate_diags[t->naggregate_diags++] = (struct trace_aggregate_diag){
		.kind = convert_intern_cstr(p, m->kind ? m->kind : "diag"),
		.phase = convert_name(p, NAMES_PHASE, m->phase),
		.message = m->message ? convert_intern_cstr(p, m->message) : NULL,
		.count = m->count, .op_id = m->op_id, .tensor = m->tensor,
	};
}

/* What an aggregate's empty list points to (never NULL, as the reader
 * makes it): one room for all, not a row of each step's own. */
static union {
	struct trace_aggregate_op op;
	struct trace_aggregate_cast cast;
	struct trace_aggregate_diag diag;
} no_rows;

/* The rows, copied where the kept trace's strings live, or the thread's
 * last step's copy (`last`) when it holds the same (their strings are
 * interned: alike rows are alike bytes, and they have no padding). */
static void *kept(struct convert_process *p, struct convert_kept_rows *last,
		  const void *rows, size_t n, size_t size)
{
	size_t bytes = n * size;

	if (!n)
		return &no_rows;
	if (last->bytes == bytes && !memcmp(last->rows, rows, bytes))
		return (void *)last->rows;
	void *copy = convert_alloc(p, bytes);

	memcpy(copy, rows, bytes);
	*last = (struct convert_kept_rows){ copy, bytes };
	return copy;
}

static void on_step_totals(struct converter *cv, struct convert_process *p,
			   struct convert_thread *t,
			   const struct raw_step_totals *m, uint64_t time_ns,
			   bool cut_short)
{
	char name[48];

	snprintf(name, sizeof name, "step %llu aggregates",
		 (unsigned long long)m->step);
	struct trace_event e = convert_head(cv, p, t->tid, TRACE_AGGREGATE,
					    convert_copy_cstr(p, name),
					    LIT_CAT_AGGREGATE, 'i', time_ns);
	uint64_t begin_ns = m->begin_ns < cv->base_ns ? cv->base_ns : m->begin_ns;
	uint64_t end_ns = m->end_ns < begin_ns ? begin_ns : m->end_ns;
	e.aggregate = (struct trace_aggregate){
		.step = (int64_t)m->step,
		.begin_ns = (int64_t)(begin_ns - cv->base_ns),
		.end_ns = (int64_t)(end_ns - cv->base_ns),
		.events = m->events, .regions = m->regions,
		.cache = { .clears = m->clears, .entries = m->cache_entries,
			   .bytes = m->cache_bytes,
			   .max_entries = m->cache_max_entries,
			   .max_bytes = m->cache_max_bytes },
		.nops = (int)t->naggregate_ops,
		.ncasts = (int)t->naggregate_casts,
		.ndiags = (int)t->naggregate_diags,
		.ops = t->aggregate_ops, .casts = t->aggregate_casts,
		.diags = t->aggregate_diags,
		.cut_short = cut_short,
	};
	convert_write(cv, p, &e);
	if (convert_keeps(p)) {
		struct trace_aggregate *g = &e.aggregate;
		/* the thread's rows are gathered anew for its next step */
		if (cv->trim_kept_aggregate)
			cv->trim_kept_aggregate(g);
		g->ops = kept(p, &t->kept_ops, g->ops, (size_t)g->nops,
			      sizeof *g->ops);
		g->casts = kept(p, &t->kept_casts, g->casts, (size_t)g->ncasts,
				sizeof *g->casts);
		g->diags = kept(p, &t->kept_diags, g->diags, (size_t)g->ndiags,
				sizeof *g->diags);
		convert_keep(p, &e);
	}
	p->aggregates++;
	t->naggregate_ops = t->naggregate_casts = t->naggregate_diags = 0;
}

bool convert_step_record(struct converter *cv, struct convert_process *p,
			 struct convert_thread *t, const struct raw_decoded *d)
{
	switch (d->kind) {
	case RAW_KIND_STEP:
		on_step(cv, p, &d->step, d->time_ns);
		return true;
	case RAW_KIND_EVALUATION:
		on_evaluation(cv, p, &d->evaluation, d->time_ns);
		return true;
	case RAW_KIND_DETAIL_STOP:
		on_detail_stop(cv, p, &d->detail_stop, d->time_ns);
		return true;
	case RAW_KIND_STEP_OP:
		on_step_op(p, t, &d->step_op);
		return true;
	case RAW_KIND_STEP_CAST:
		on_step_cast(p, t, &d->step_cast);
		return true;
	case RAW_KIND_STEP_DIAG:
		on_step_diag(p, t, &d->step_diag);
		return true;
	case RAW_KIND_STEP_TOTALS:
		on_step_totals(cv, p, t, &d->step_totals, d->time_ns, false);
		t->aggregate_flushes++;
		return true;
	default:
		return false;
	}
}

/* ------------------------------------------------ a step cut short */

struct left {
	struct converter *cv;
	struct convert_process *p;
	struct convert_thread *t;
	uint64_t when;
	bool cut_short;
};

static bool left_row(void *user, uint16_t kind, const void *model)
{
	struct left *l = user;

	switch (kind) {
	case RAW_KIND_STEP_OP:
		on_step_op(l->p, l->t, model);
		break;
	case RAW_KIND_STEP_CAST:
		on_step_cast(l->p, l->t, model);
		break;
	case RAW_KIND_STEP_DIAG:
		on_step_diag(l->p, l->t, model);
		break;
	default:
		on_step_totals(l->cv, l->p, l->t, model, l->when,
			       l->cut_short);
		break;
	}
	return true;
}

/* The whole of a small file, or NULL; its size in *size. */
static void *read_file(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	void *data = NULL;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && st.st_size > 0 &&
	    (data = malloc((size_t)st.st_size)) &&
	    read(fd, data, (size_t)st.st_size) != st.st_size) {
		free(data);
		data = NULL;
	}
	close(fd);
	*size = data ? (size_t)st.st_size : 0;
	return data;
}

static struct convert_thread *thread_of(struct convert_process *p,
					uint64_t tid)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i]->tid == tid && p->threads[i]->started)
			return p->threads[i];
	return NULL;
}

static void thread_left(struct converter *cv, struct convert_process *p,
			uint64_t tid, uint64_t when, bool died)
{
	char path[PATH_MAX + 320];
	size_t size;

	snprintf(path, sizeof path, "%s/" RAW_AGGREGATE_FILE, p->dir,
		 (unsigned long long)tid);
	struct convert_thread *t = thread_of(p, tid);
	void *data = t ? read_file(path, &size) : NULL;
	bool whole = false;
	struct step_aggregate *a =
		data ? step_aggregate_left(data, size, t->aggregate_flushes,
					   &whole)
		     : NULL;
	free(data);
	if (!a)
		return;
	/* rows the thread's stream began and did not end are the file's */
	t->naggregate_ops = t->naggregate_casts = t->naggregate_diags = 0;
	/* a whole step sealed and not yet written: its process died after
	 * the step, not in it */
	struct left l = { cv, p, t, when, died && !whole };
	step_aggregate_rows(a, left_row, &l);
	step_aggregate_free(a);
}

void convert_steps_left(struct converter *cv, struct convert_process *p,
			uint64_t when, bool died)
{
	DIR *dir = opendir(p->dir);
	struct dirent *d;

	if (!dir)
		return;
	while ((d = readdir(dir))) {
		unsigned long long tid;
		char name[64];
		if (sscanf(d->d_name, "t%llu", &tid) != 1)
			continue;
		snprintf(name, sizeof name, RAW_AGGREGATE_FILE, tid);
		if (!strcmp(name, d->d_name))
			thread_left(cv, p, tid, when, died);
	}
	closedir(dir);
}
