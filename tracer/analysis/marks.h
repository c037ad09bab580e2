/* Moments of processes (a step's end, a region's entry, a GradScaler's
 * skip), sorted by process and time once and then counted by bisection:
 * the rules that ask, for each of many events, how many moments of its
 * process came before it stay linear in the trace. */
#ifndef AMPTRACE_MARKS_H
#define AMPTRACE_MARKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mark {
	int64_t pid;
	double ts;
};

struct marks {
	struct mark *items;
	size_t count, cap;
};

/* false when out of memory (m unchanged) */
bool marks_add(struct marks *m, int64_t pid, double ts);
/* By process, then time: before marks_before. */
void marks_sort(struct marks *m);
/* The marks of `pid` at `ts` or before (`inclusive`), or strictly
 * before. */
size_t marks_before(const struct marks *m, int64_t pid, double ts,
		    bool inclusive);
void marks_free(struct marks *m);

#endif
