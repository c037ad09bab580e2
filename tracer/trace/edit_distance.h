/* Levenshtein distance, for "did you mean" suggestions (amptrace commands,
 * explain's options, op and dtype names, check's finding kinds, ampview's
 * options and scope names). */
#ifndef AMPTRACE_EDIT_DISTANCE_H
#define AMPTRACE_EDIT_DISTANCE_H

/* The number of byte insertions, deletions and substitutions that turn
 * `a` into `b`. */
int edit_distance(const char *a, const char *b);

/* The candidate closest to a mistyped word, within two typos: a caller
 * offers every candidate, then suggests `name` when it is not NULL
 * ("did you mean 'summary'?").  Ties keep the first offered. */
struct closest_name {
	const char *name;
	int distance;
};
#define CLOSEST_NAME_INIT { NULL, 3 }
void closest_name_offer(struct closest_name *c, const char *word,
			const char *candidate);

#endif /* AMPTRACE_EDIT_DISTANCE_H */
