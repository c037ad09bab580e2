/* Moments of processes, counted by bisection (marks.h). */
#include "marks.h"

#include "trace.h"

#include <stdlib.h>

bool marks_add(struct marks *m, int64_t pid, double ts)
{
	struct mark *grown = trace_grow(m->items, &m->cap, m->count + 1,
					sizeof *grown);

	if (!grown)
		return false;
	m->items = grown;
	m->items[m->count++] = (struct mark){ pid, ts };
	return true;
}

static int compare_marks(const void *a, const void *b)
{
	const struct mark *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->ts > y->ts) - (x->ts < y->ts);
}

void marks_sort(struct marks *m)
{
	trace_sort(m->items, m->count, sizeof *m->items, compare_marks);
}

size_t marks_before(const struct marks *marks, int64_t pid, double ts,
		    bool inclusive)
{
	const struct mark *m = marks->items;
	size_t lo = 0, hi = marks->count;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t first = lo;
	hi = marks->count;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m[mid].pid < pid ||
		    (m[mid].pid == pid &&
		     (inclusive ? m[mid].ts <= ts : m[mid].ts < ts)))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - first;
}

void marks_free(struct marks *m)
{
	free(m->items);
	*m = (struct marks){ 0 };
}
