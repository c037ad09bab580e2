/* What `amptrace run` appends to a trace after its events (tail.h):
 * the findings and the flows, both computed from the events the
 * converter kept while writing them. */
#include "tail.h"
#include "event_json.h"
#include "findings.h"
#include "flow.h"
#include "trace_index.h"

#include <pthread.h>

/* One finding as an amp.diag instant event (FORMAT.md §3.7): process-wide
 * (tid 0, "s":"p") at `ts_ns`, the end of the run, so it follows every
 * thread's events and per-thread order holds. */
static void finding_event(const struct trace_finding *f, int64_t ts_ns,
			  struct jsonw *w)
{
	event_json_write(w, &(struct trace_event){
		.kind = TRACE_DIAG, .ph = 'i', .name = f->kind,
		.cat = "amp.diag", .pid = f->pid, .tid = 0,
		.ts = (double)ts_ns / 1000.0,
		.diag = { .kind = f->kind, .message = f->message, .scope = 'p',
			  .op_id = f->op_id, .tensor = f->tensor, .fix = f->fix,
			  .severity = finding_severity_name(f->severity),
			  .count = f->count, .thread = f->thread,
			  .other_thread = f->other_thread },
	});
}

/* Findings that are amp.diag events already (libamp's value checks,
 * process-died) are not repeated. */
static void append_findings(struct trace_writer *w, const struct trace *kept,
			    const struct trace_index *ix, int64_t ts_ns)
{
	struct findings f;
	struct jsonw json;

	if (ix)
		findings_compute_indexed(ix, &f);
	else
		findings_compute(kept, &f);
	jsonw_init(&json);
	for (size_t i = 0; i < f.count; i++) {
		if (f.items[i].from_trace)
			continue;
		finding_event(&f.items[i], ts_ns, &json);
		if (!json.failed)
			trace_writer_event(w, json.data, json.len);
	}
	jsonw_free(&json);
	findings_free(&f);
}

/* The flows' events, built and written as text on a thread of their own
 * while the findings are computed (both only read the kept trace and its
 * index): after the program has ended its cores are free, and these two
 * are most of what is left to do. */
struct flow_job {
	const struct trace_index *ix;
	struct jsonw text;
	uint64_t events;
};

/* The first flow's id (the tail writes no other flows). */
#define FIRST_FLOW_ID 1

/* Runs concurrently with the findings code: both must stay free of
 * shared mutable state (each writes only its own job's output). */
static void *flow_events(void *arg)
{
	struct flow_job *job = arg;
	struct trace_flows flows;

	if (flow_build(job->ix, &flows) == 0) {
		job->events = 2 * (flow_text(&flows, FIRST_FLOW_ID, &job->text) -
				   FIRST_FLOW_ID);
		flow_free(&flows);
	}
	return NULL;
}

void tail_append(struct trace_writer *w, const struct trace *kept,
		 struct trace_index *ix, int64_t ts_ns)
{
	if (!ix || trace_index_update(ix) != 0) {
		append_findings(w, kept, NULL, ts_ns);
		return;
	}
	struct flow_job job = { .ix = ix };
	jsonw_init(&job.text);
	pthread_t thread;
	bool threaded = pthread_create(&thread, NULL, flow_events, &job) == 0;
	append_findings(w, kept, ix, ts_ns);
	if (threaded)
		pthread_join(thread, NULL);
	else
		flow_events(&job);
	trace_writer_events(w, job.text.data, job.text.len, job.events);
	jsonw_free(&job.text);
}
