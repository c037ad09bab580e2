/* The report's per-process aggregates: series over steps (ops and op time
 * by output dtype, casts by direction, bytes cast, cache results, the
 * loss scale) and the tables (op groups, cast directions, uncacheable
 * reasons, autocast regions), fed one record at a time and written as
 * JSON.  It knows nothing of the trace model: report_data.c (the adapter)
 * turns trace events into these records, so a change of the trace model
 * touches the adapter only.
 *
 * Strings passed in must outlive the aggregate; they are compared by
 * content (equal strings at one address, as an interning reader gives,
 * compare fastest).  Steps are 0 .. nsteps - 1.
 *
 * Ownership: report_agg_new() returns a handle report_agg_free() releases;
 * report_agg_json() returns a new cJSON tree the caller owns. */
#ifndef AMPTRACE_REPORT_AGG_H
#define AMPTRACE_REPORT_AGG_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct report_agg;

struct report_op {
	int64_t pid, tid;
	int step;
	const char *op, *overload;     /* "softmax", "int" (or "") */
	const char *phase, *policy;    /* policy NULL when unknown */
	const char *dtype;             /* the first output's; NULL: none */
	double dur_us;
	bool top_level;                /* not run inside another op */
	/* how many ops this is: a step recorded as aggregates gives its
	 * ops by the row, their time summed (and no region is known) */
	size_t count;
	bool aggregated;
};

struct report_cast {
	int64_t pid, tid;
	int step;
	const char *from, *to;
	const char *cache;             /* hit, miss, uncacheable, disabled */
	const char *reason;            /* why uncacheable, or NULL */
	uint64_t bytes;
	double dur_us;
	size_t count;                  /* as report_op's */
	bool aggregated;
};

struct report_region {
	int64_t pid, tid;
	int step;
	double ts_us;
	const char *scope;             /* NULL: unnamed */
	const char *device, *dtype;
	bool enabled;
	int depth;
};

/* `dtype_order`: the dtype names in the order the page lists them,
 * NULL-terminated (other names follow in the order seen).  NULL when out
 * of memory. */
struct report_agg *report_agg_new(int nsteps, const char *const *dtype_order);
void report_agg_free(struct report_agg *agg);

/* Names a process (a merged trace's rank; rank -1: none). */
void report_agg_process(struct report_agg *agg, int64_t pid, int rank,
			const char *name);
/* Process `pid` is of the group the page opens on (ranks.h,
 * trace_ranks_training: ampview's graph's), not a parent or a launcher
 * that only started the ones that train (a Hogwild job's, mp.spawn's). */
void report_agg_process_opens(struct report_agg *agg, int64_t pid);
/* Counts an op; returns its group (for report_agg_cast_for_group), or -1. */
int report_agg_op(struct report_agg *agg, const struct report_op *op);
void report_agg_cast(struct report_agg *agg, const struct report_cast *cast);
/* A cast (not a cache hit) made for an op of `group` in process `pid`. */
void report_agg_cast_for_group(struct report_agg *agg, int64_t pid, int group,
			       uint64_t bytes);
/* `count` casts (not cache hits) of a step recorded as aggregates, made
 * for op `op` (its name only): given to its forward group, else its
 * first. */
void report_agg_casts_for_op(struct report_agg *agg, int64_t pid,
			     const char *op, size_t count, uint64_t bytes);
/* A GradScaler event; `scale` NaN when it carries none. */
void report_agg_scaler(struct report_agg *agg, int64_t pid, int step,
		       double scale, bool found_inf, bool skipped);
/* Regions entered in a step recorded as aggregates: counted, unnamed. */
void report_agg_aggregated_regions(struct report_agg *agg, int64_t pid,
				   int step, uint64_t entered);
void report_agg_region_begin(struct report_agg *agg,
			     const struct report_region *region);
void report_agg_region_end(struct report_agg *agg, int64_t pid, int64_t tid,
			   double ts_us);

/* The anchor of an op group's row in the page ("p0-g3") into buf. */
void report_agg_group_id(const struct report_agg *agg, int64_t pid, int group,
			 char *buf, size_t size);
/* True once any call ran out of memory. */
bool report_agg_failed(const struct report_agg *agg);

/* Adds "dtypes", "directions" and "processes" to `root` (keys in
 * report_data.c). */
void report_agg_json(const struct report_agg *agg, cJSON *root);

#endif /* AMPTRACE_REPORT_AGG_H */
