/* One thread's aggregates of one step recorded without full detail: what
 * the trace keeps of such a step instead of its events (FORMAT.md,
 * amp.aggregate).  Ops are counted per (op, overload, phase, policy,
 * output dtype, device), casts per (op, from, to, cache result, origin),
 * amp.diag events per (kind, phase), plus the regions, cache clears and
 * the cache's size.  A table the producer fills on the traced thread (no lock, no
 * allocation once its rows exist) and writes as raw rows (raw_schema.h)
 * when the thread moves on to another step; kept in a file, so that the
 * step in progress is not lost with a killed process.
 *
 * Strings are copied: the PyTorch bridge's op names live in a buffer per
 * call. */
#ifndef AMPTRACE_STEP_AGGREGATE_H
#define AMPTRACE_STEP_AGGREGATE_H

#include "producer_event.h"
#include "raw_schema.h"

#include <stdbool.h>
#include <stdint.h>

struct step_aggregate;

/* Counts into the file `path` (made here, mapped: FORMAT.md §7), so that
 * a thread killed in a step leaves its counts there; in memory only when
 * `path` is NULL or the file cannot be made or grow.  NULL when out of
 * memory. */
struct step_aggregate *step_aggregate_new(const char *path);
/* Removes its file when this process made it (a forked child's copy of
 * its parent's aggregates leaves the parent's file). */
void step_aggregate_free(struct step_aggregate *a);
/* Its rows are about to be written into the stream, as flush number
 * n (from 1): until the reset, a reader of the file takes them as
 * written when the stream has n totals rows, as left when it has fewer.
 * `whole`: they are a whole step's (the thread moved on, or ended). */
void step_aggregate_seal(struct step_aggregate *a, bool whole);
/* Empties it for step `step`, keeping its storage. */
void step_aggregate_reset(struct step_aggregate *a, uint64_t step);
uint64_t step_aggregate_step(const struct step_aggregate *a);
/* Events folded since the reset. */
uint64_t step_aggregate_events(const struct step_aggregate *a);

/* Folds one event in: an op's END (its BEGIN opens it: the casts and
 * diags inside take its name and phase), a cast, a region's entry, a
 * cache clear, a diag.  Returns false when a new row found no memory (the
 * event is counted in the totals only). */
bool step_aggregate_add(struct step_aggregate *a,
			const struct producer_event *e);

/* Its rows, in the order they were first seen, then its totals: each
 * handed to `row` with `kind` (RAW_KIND_STEP_OP, _CAST, _DIAG, _TOTALS)
 * and the model to encode.  Stops early when `row` returns false. */
typedef bool step_aggregate_row_fn(void *user, uint16_t kind,
				   const void *model);
void step_aggregate_rows(const struct step_aggregate *a,
			 step_aggregate_row_fn *row, void *user);

/* `amptrace run`'s side: the aggregates a thread left in its file
 * (`size` bytes at `data`, read once its process ended; `written`: the
 * totals rows its stream holds) as a table to hand to
 * step_aggregate_rows, or NULL when it left none (nothing counted, rows
 * already in the stream, a file of another build).  *whole: they are a
 * whole step's, sealed by a flush the thread did not finish. */
struct step_aggregate *step_aggregate_left(const void *data, size_t size,
					   uint64_t written, bool *whole);

#endif /* AMPTRACE_STEP_AGGREGATE_H */
