/* Which training steps a recording keeps in full detail: `amptrace run
 * --steps SPEC`, `amptrace_torch.trace(steps=SPEC)`, AMPTRACE_STEPS in
 * the traced program.  Every other step is recorded as per-step
 * aggregates (steps.h).  Steps count from 0.
 *
 * SPEC is a comma-separated list of
 *   N          step N
 *   A:B        steps A to B, both included
 *   A:         step A and every later one
 *   every:K    steps 0, K, 2K, ...
 *   all        every step (no bound)
 *   none       no step (aggregates only)
 * e.g. "0:4,every:100", "10:13".  The default, STEP_SELECT_DEFAULT, is the
 * first 20 steps.
 *
 * One parser for the command line (which refuses a bad SPEC with its
 * message) and the producer (which reads what the command line passed). */
#ifndef AMPTRACE_STEP_SELECT_H
#define AMPTRACE_STEP_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STEP_SELECT_DEFAULT "0:19"
#define STEP_SELECT_ENV "AMPTRACE_STEPS"
/* The trace size past which full detail stops (bytes; 0: no limit);
 * the default is 1G as --max-size reads it (decimal). */
#define STEP_MAX_SIZE_ENV "AMPTRACE_MAX_SIZE"
#define STEP_MAX_SIZE_DEFAULT ((uint64_t)1000000000)
#define STEP_SELECT_MAX_ITEMS 16
/* The file `amptrace run` creates in the raw directory once the trace has
 * passed the size limit: producers stop full detail at their next step. */
#define STEP_DETAIL_STOP_FILE "detail-stop"

enum step_select_kind {
	STEP_SELECT_RANGE, /* first..last, both included */
	STEP_SELECT_EVERY, /* multiples of `first` */
};

struct step_select_item {
	enum step_select_kind kind;
	uint64_t first, last;
};

struct step_select {
	int count;
	struct step_select_item items[STEP_SELECT_MAX_ITEMS];
};

/* Parses `spec`; returns 0, or -1 with a message in `error` naming what
 * is wrong ("'10:3': the range ends before it begins"). */
int step_select_parse(const char *spec, struct step_select *out, char *error,
		      size_t size);
/* Whether step `step` is kept in full detail. */
bool step_select_has(const struct step_select *s, uint64_t step);
/* The steps in words: "0-19", "5", "0, 100, 200, ...", "all", "none". */
void step_select_describe(const struct step_select *s, char *out,
			  size_t size);
/* Whether it keeps every step (`all`, or `0:`). */
bool step_select_all(const struct step_select *s);

/* "100M", "1.5G", "2GiB", "500000" (bytes), "0" or "none" (no limit).
 * Returns 0, or -1 with a message in `error`. */
int step_size_parse(const char *text, uint64_t *bytes, char *error,
		    size_t size);

/* A size as step_size_parse reads it back: "2 MB", "1.5 GB", "900 kB". */
void step_size_text(uint64_t bytes, char *out, size_t size);

#endif /* AMPTRACE_STEP_SELECT_H */
