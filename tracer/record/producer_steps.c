/* Training steps in the producer (producer.h): which step is in progress,
 * whether it is recorded in full detail, and the per-step aggregates of
 * the steps that are not.
 *
 * Why this shape:
 *   - The choice "full detail or not" is made once per step, when a step
 *     ends (producer_step_end), never per event: producer_steps_gate, on
 *     the hot path of every event, compares a version number it read
 *     before and takes one predictable branch.
 *   - Each thread follows a new step at its next event outside any op
 *     (an op's BEGIN and END, and its casts, are kept or folded
 *     together), and a region's exit is kept exactly when its entry was:
 *     the trace's slices stay whole and its B/E events balanced.
 *   - Aggregates are per thread (no lock): a thread writes its rows into
 *     its own stream when it moves on to another step, when it ends, at
 *     the process's clean end, and every AGGREGATE_FLUSH_EVENTS events.
 *     Until then they are counted in a file of the raw directory
 *     (step_aggregate.h), which a killed process leaves to amptrace run:
 *     the step in progress is in the trace, cut short.  A flush is
 *     numbered in the file before its first row: killed before the
 *     stream has its totals row, the thread leaves the file's rows for
 *     amptrace run to take (no window loses a step, no lock is added).
 *   - The state lives in a shared anonymous mapping: a forked child (a
 *     DataLoader worker) follows its parent's steps, so its recording is
 *     bounded too, until it marks steps of its own.
 *   - The ops folded are remembered by id, in a window indexed by the id
 *     (ids grow by one per op): the GPU's kernel records, delivered on
 *     CUPTI's thread a flush interval later, name only their op. */
#include "producer.h"

#include "producer_internal.h"
#include "raw.h"
#include "raw_encode.h"
#include "step_aggregate.h"
#include "step_select.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define AGGREGATE_FLUSH_EVENTS (1u << 20)
/* Trace bytes per raw byte (the JSON against the varint records, its
 * findings and flows included; measured with --steps all: 5.7 for
 * libamp's mlp and transformer samples, 4.8 for a torch MLP): the
 * producer's own estimate that the trace passed the limit, for when
 * amptrace run lags behind the program. */
#define TRACE_BYTES_PER_RAW_BYTE 5

struct step_state {
	_Atomic uint64_t version;   /* changes after every change below */
	_Atomic uint64_t step;      /* in progress, from 0 */
	_Atomic uint64_t begin_ns;  /* when it began */
	atomic_bool detail;         /* recorded in full */
	atomic_bool size_stopped;   /* full detail ended for size */
	atomic_bool stop_announced; /* ... and a record says so */
	_Atomic uint64_t stop_step; /* the first step without it */
	pid_t attacher;             /* the process that attached */
};

static struct step_state private_state;
static struct step_state *state = &private_state;
static struct step_select selection;
static uint64_t max_size;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint generation = 1;
static atomic_bool marked; /* this process marked a step */

struct step_thread {
	unsigned generation;
	uint64_t version;      /* of the state it follows */
	bool detail;
	uint64_t thread;       /* its stream */
	int op_depth;          /* ops begun and not ended */
	int scope_depth;
	uint64_t scope_kept;   /* bit d: the region at depth d+1 is kept */
	struct step_aggregate *aggregate;
};

static PRODUCER_TLS struct step_thread me;

/* Slot id % FOLDED_OP_WINDOW: the latest op folded there (0: none).
 * Never emptied: op ids are unique in the process (PRODUCERS.md), a
 * second recording's too. */
static _Atomic uint64_t folded_ops[FOLDED_OP_WINDOW];

/* The clock of event times (the producer needs no libamp). */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool detail_of(uint64_t step)
{
	return step_select_has(&selection, step) &&
	       !atomic_load(&state->size_stopped);
}

/* ------------------------------------------------------------ writing */

#define ROW_ENCODER(name, number, model, fields)                            \
	static uint8_t *encode_##name(uint8_t *p, const void *m)            \
	{                                                                   \
		return raw_encode_##name(p, m);                             \
	}                                                                   \
	static bool write_##name(uint64_t time_ns, uint64_t thread,         \
				 const model *m)                            \
	{                                                                   \
		return producer_write(number, time_ns, thread,              \
				      raw_bound_##name(m), encode_##name,   \
				      m);                                   \
	}
RAW_STEP_KINDS(ROW_ENCODER)
#undef ROW_ENCODER

struct flush {
	uint64_t time_ns, thread;
	unsigned written;
};

static bool write_row(void *user, uint16_t kind, const void *model)
{
	const struct flush *f = user;

	switch (kind) {
	case RAW_KIND_STEP_OP:
		return write_step_op(f->time_ns, f->thread, model);
	case RAW_KIND_STEP_CAST:
		return write_step_cast(f->time_ns, f->thread, model);
	case RAW_KIND_STEP_DIAG:
		return write_step_diag(f->time_ns, f->thread, model);
	default:
		return write_step_totals(f->time_ns, f->thread, model);
	}
}

/* write_row, then the test's stop (a test's flushes alone pay for it) */
static bool write_row_and_stop(void *user, uint16_t kind, const void *model)
{
	struct flush *f = user;
	bool written = write_row(user, kind, model);

	amptrace_test_flush_point(++f->written);
	return written;
}

/* The thread's aggregates go into its stream; it keeps counting the same
 * step.  Sealed first: a kill before the totals row is written leaves
 * the rows to amptrace run in the file (step_aggregate.h).  `whole`: the
 * step's rows end here (the thread moves on or ends). */
static void flush(struct step_thread *t, bool whole)
{
	if (!t->aggregate || !step_aggregate_events(t->aggregate))
		return;
	struct flush f = { now_ns(), t->thread, 0 };
	step_aggregate_seal(t->aggregate, whole);
	if (amptrace_test_flush_point)
		amptrace_test_flush_point(0);
	step_aggregate_rows(t->aggregate, amptrace_test_flush_point
						  ? write_row_and_stop
						  : write_row,
			    &f);
	step_aggregate_reset(t->aggregate, step_aggregate_step(t->aggregate));
}

/* -------------------------------------------------------- size limit */

static bool too_big(void)
{
	char path[PATH_MAX];

	if (!max_size)
		return false;
	if (producer_raw_bytes() >= max_size / TRACE_BYTES_PER_RAW_BYTE)
		return true;
	snprintf(path, sizeof path, "%s/" STEP_DETAIL_STOP_FILE,
		 producer_raw_root());
	return access(path, F_OK) == 0;
}

/* Full detail ends from step `step` on (the caller changes the version). */
static void stop_for_size(uint64_t step)
{
	atomic_store(&state->stop_step, step);
	atomic_store(&state->size_stopped, true);
}

/* The record that says full detail stopped, written by the first thread
 * to see it. */
static void announce_stop(uint64_t thread)
{
	if (!atomic_load_explicit(&state->size_stopped, memory_order_relaxed) ||
	    atomic_exchange(&state->stop_announced, true))
		return;
	struct raw_detail_stop m = {
		atomic_load(&state->stop_step), max_size,
		producer_raw_bytes() >= max_size / TRACE_BYTES_PER_RAW_BYTE
			? "the raw stream (estimated)" : "the trace",
	};
	write_detail_stop(now_ns(), thread, &m);
}

/* ------------------------------------------------------------- threads */

/* The thread takes up the state's step: its aggregates of the previous
 * one go out first. */
static void follow(struct step_thread *t, uint64_t version, uint64_t thread)
{
	flush(t, t->aggregate && step_aggregate_step(t->aggregate) !=
				       atomic_load(&state->step));
	t->version = version;
	t->thread = thread;
	t->detail = atomic_load(&state->detail);
	announce_stop(thread);
	if (t->detail)
		return;
	if (!t->aggregate) {
		char path[PATH_MAX + 64];
		int n = snprintf(path, sizeof path, "%s/" RAW_AGGREGATE_FILE,
				 producer_process_dir(),
				 (unsigned long long)thread);
		t->aggregate = step_aggregate_new(n < (int)sizeof path ? path
								     : NULL);
		producer_open_stream(thread);
	}
	if (t->aggregate)
		step_aggregate_reset(t->aggregate, atomic_load(&state->step));
}

static void remember_folded_op(uint64_t op_id)
{
	if (!op_id)
		return;
	atomic_store_explicit(&folded_ops[op_id % FOLDED_OP_WINDOW], op_id,
			      memory_order_relaxed);
}

bool producer_steps_folded_op(uint64_t op_id)
{
	_Atomic uint64_t *slot = &folded_ops[op_id % FOLDED_OP_WINDOW];

	return op_id &&
	       atomic_load_explicit(slot, memory_order_relaxed) == op_id;
}

static void fold(struct step_thread *t, const struct producer_event *e)
{
	/* by its END too: one whose BEGIN came before attach has no other */
	if (e->kind == PRODUCER_OP_BEGIN || e->kind == PRODUCER_OP_END)
		remember_folded_op(e->op.op_id);
	if (!t->aggregate)
		return; /* out of memory: the step's events are lost */
	step_aggregate_add(t->aggregate, e);
	if (step_aggregate_events(t->aggregate) >= AGGREGATE_FLUSH_EVENTS)
		flush(t, false);
}

static enum step_route scope_enter(struct step_thread *t)
{
	int depth = t->scope_depth++;

	if (depth < 64)
		t->scope_kept = t->detail ? t->scope_kept | 1ull << depth
					  : t->scope_kept & ~(1ull << depth);
	return t->detail ? STEP_WRITE : STEP_FOLD;
}

static enum step_route scope_exit(struct step_thread *t)
{
	if (!t->scope_depth)
		return t->detail ? STEP_WRITE : STEP_DROP; /* entered before
							   * recording began */
	int depth = --t->scope_depth;
	bool kept = depth < 64 ? t->scope_kept >> depth & 1 : t->detail;
	return kept ? STEP_WRITE : STEP_DROP;
}

enum step_route producer_steps_route(unsigned kind, uint64_t thread)
{
	struct step_thread *t = &me;
	unsigned gen = atomic_load_explicit(&generation, memory_order_relaxed);

	if (__builtin_expect(t->generation != gen, 0)) {
		/* first event, or inherited through fork(): the parent's
		 * aggregates are the parent's to write */
		step_aggregate_free(t->aggregate);
		*t = (struct step_thread){ .generation = gen };
	}
	uint64_t version = atomic_load_explicit(&state->version,
						memory_order_acquire);
	if (__builtin_expect(t->version != version, 0) && !t->op_depth)
		follow(t, version, thread);
	switch (kind) {
	case PRODUCER_OP_BEGIN:
		t->op_depth++;
		break;
	case PRODUCER_OP_END:
		if (t->op_depth)
			t->op_depth--;
		break;
	case PRODUCER_SCOPE_ENTER:
		return scope_enter(t);
	case PRODUCER_SCOPE_EXIT:
		return scope_exit(t);
	case PRODUCER_SCALER:
		return STEP_WRITE;
	default:
		if (kind >= PRODUCER_KIND_COUNT)
			return STEP_WRITE; /* not recorded: the writer drops it */
		break;
	}
	return __builtin_expect(t->detail, 1) ? STEP_WRITE : STEP_FOLD;
}

void producer_steps_fold(const struct producer_event *e)
{
	fold(&me, e);
}

/* libamp's event as the producer model, as far as the aggregates read it:
 * the names, codes and numbers they count by (libamp's members bear the
 * model's names), the first output's dtype. */
void producer_steps_fold_libamp(const struct amp_event *e)
{
	struct producer_event m = { .time_ns = e->time_ns, .thread = e->thread };
	struct producer_tensor first = { 0 };

	switch (e->kind) {
	case AMP_EVENT_OP_BEGIN:
	case AMP_EVENT_OP_END:
		m.kind = e->kind == AMP_EVENT_OP_BEGIN ? PRODUCER_OP_BEGIN
						       : PRODUCER_OP_END;
		m.op = (struct producer_op){
			.op_id = e->op.op_id, .op = e->op.op,
			.overload = e->op.overload, .phase = e->op.phase,
			.policy = e->op.policy, .device = e->op.device,
			.status = e->op.status, .begin_ns = e->op.begin_ns,
		};
		if (e->op.noutputs > 0) {
			first.dtype = (uint8_t)e->op.outputs[0].dtype;
			m.op.noutputs = 1;
			m.op.outputs = &first;
		}
		break;
	case AMP_EVENT_CAST:
		m.kind = PRODUCER_CAST;
		m.cast = (struct producer_cast){
			.op_id = e->cast.op_id, .from = e->cast.from,
			.to = e->cast.to, .cache = e->cast.cache,
			.stale = e->cast.stale,
			.cache_counted = e->cast.cache_counted,
			.cache_entries = e->cast.cache_entries,
			.cache_bytes = e->cast.cache_bytes,
			.bytes = e->cast.bytes, .begin_ns = e->cast.begin_ns,
		};
		break;
	case AMP_EVENT_SCOPE_ENTER:
		m.kind = PRODUCER_SCOPE_ENTER;
		break;
	case AMP_EVENT_CACHE_CLEAR:
		m.kind = PRODUCER_CACHE_CLEAR;
		break;
	case AMP_EVENT_DIAG:
		m.kind = PRODUCER_DIAG;
		m.diag = (struct producer_diag){
			.op_id = e->diag.op_id, .tensor_id = e->diag.tensor_id,
			.kind = e->diag.kind, .message = e->diag.message,
		};
		break;
	default:
		return;
	}
	fold(&me, &m);
}

void producer_steps_thread_exit(void)
{
	struct step_thread *t = &me;

	if (t->generation != atomic_load(&generation))
		return;
	flush(t, true);
	step_aggregate_free(t->aggregate);
	t->aggregate = NULL;
}

void producer_steps_exit(void)
{
	producer_steps_thread_exit();
}

/* ------------------------------------------------------------- process */

static void read_environment(void)
{
	const char *spec = getenv(STEP_SELECT_ENV);
	const char *size = getenv(STEP_MAX_SIZE_ENV);
	char error[160];

	if (!spec || step_select_parse(spec, &selection, error,
				       sizeof error) != 0) {
		if (spec)
			fprintf(stderr, "amptrace recorder: %s=%s: %s; "
				"recording steps %s in full\n", STEP_SELECT_ENV,
				spec, error, STEP_SELECT_DEFAULT);
		step_select_parse(STEP_SELECT_DEFAULT, &selection, error,
				  sizeof error);
	}
	max_size = STEP_MAX_SIZE_DEFAULT;
	if (size && step_size_parse(size, &max_size, error, sizeof error) != 0) {
		fprintf(stderr, "amptrace recorder: %s=%s: %s\n",
			STEP_MAX_SIZE_ENV, size, error);
		max_size = STEP_MAX_SIZE_DEFAULT;
	}
}

void producer_steps_attach(uint64_t now_ns)
{
	if (state == &private_state) {
		void *shared = mmap(NULL, sizeof *state, PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (shared != MAP_FAILED)
			state = shared;
	}
	read_environment();
	uint64_t version = atomic_load(&state->version);
	atomic_store(&state->step, 0);
	atomic_store(&state->begin_ns, now_ns);
	atomic_store(&state->size_stopped, false);
	atomic_store(&state->stop_announced, false);
	atomic_store(&state->detail, detail_of(0));
	state->attacher = getpid();
	atomic_store(&marked, false);
	atomic_fetch_add(&generation, 1);
	atomic_store_explicit(&state->version, version + 1,
			      memory_order_release);
}

void producer_steps_after_fork(void)
{
	pthread_mutex_init(&lock, NULL);
	atomic_store(&marked, false);
	atomic_fetch_add(&generation, 1);
}

/* A forked child that marks steps counts its own, from 0. */
static void own_steps(uint64_t now_ns)
{
	if (atomic_exchange(&marked, true) || state->attacher == getpid())
		return;
	uint64_t version = atomic_load(&state->version);
	bool stopped = atomic_load(&state->size_stopped);
	private_state = (struct step_state){ .attacher = getpid() };
	state = &private_state;
	atomic_store(&state->begin_ns, now_ns);
	atomic_store(&state->size_stopped, stopped);
	atomic_store(&state->detail, detail_of(0));
	atomic_store_explicit(&state->version, version + 1,
			      memory_order_release);
}

void producer_step_end(const char *marker, uint64_t time_ns, uint64_t thread)
{
	pthread_mutex_lock(&lock);
	own_steps(time_ns);
	uint64_t step = atomic_load(&state->step);
	struct raw_step m = {
		step, atomic_load(&state->begin_ns), atomic_load(&state->detail),
		marker,
	};
	write_step(time_ns, thread, &m);
	if (!atomic_load(&state->size_stopped) && atomic_load(&state->detail) &&
	    too_big()) {
		stop_for_size(step + 1);
		announce_stop(thread);
	}
	atomic_store(&state->step, step + 1);
	atomic_store(&state->begin_ns, time_ns);
	atomic_store(&state->detail, detail_of(step + 1));
	atomic_fetch_add_explicit(&state->version, 1, memory_order_release);
	pthread_mutex_unlock(&lock);
}

void producer_steps_chunk(void)
{
	/* a process that marks steps stops at a step's end, whole */
	if (atomic_load_explicit(&marked, memory_order_relaxed) ||
	    state->attacher != getpid() ||
	    atomic_load(&state->size_stopped) || !atomic_load(&state->detail) ||
	    !too_big())
		return;
	pthread_mutex_lock(&lock);
	if (!atomic_load(&state->size_stopped)) {
		stop_for_size(atomic_load(&state->step));
		atomic_store(&state->detail, false);
		atomic_fetch_add_explicit(&state->version, 1,
					  memory_order_release);
	}
	pthread_mutex_unlock(&lock);
}

void producer_evaluation(uint64_t step, uint64_t begin_ns, uint64_t end_ns,
			 const char *how, uint64_t thread)
{
	struct raw_evaluation m = { begin_ns, step, how };

	write_evaluation(end_ns, thread, &m);
	producer_window_edge();
}

void producer_window_edge(void)
{
	/* in full detail the events are the trace: nothing to split */
	if (!atomic_load(&state->detail))
		atomic_fetch_add_explicit(&state->version, 1,
					  memory_order_release);
}

uint64_t producer_step_now(void)
{
	return atomic_load(&state->step);
}

bool producer_step_detail(void)
{
	return atomic_load(&state->detail);
}
