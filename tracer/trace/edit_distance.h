/* Edit distance, for "did you mean" suggestions (amptrace commands,
 * explain's options, op and dtype names, check's rule words and finding
 * kinds, ampview's options and scope names). */
#ifndef AMPTRACE_EDIT_DISTANCE_H
#define AMPTRACE_EDIT_DISTANCE_H

#include <stdbool.h>

/* The number of byte insertions, deletions, substitutions and swaps of
 * two neighbours that turn `a` into `b` (optimal string alignment: each
 * part of `a` is edited once).  A swap is one typo ("linaer"), not two. */
int edit_distance(const char *a, const char *b);

/* The candidate closest to a mistyped word, within two typos: a caller
 * offers every candidate, then suggests `name` when it is not NULL
 * ("did you mean 'summary'?").  Ties keep the first offered.  A word
 * that differs from a candidate in case only is one typo from it. */
struct closest_name {
	const char *name;
	int distance;
};
#define CLOSEST_NAME_MAX_TYPOS 2
#define CLOSEST_NAME_INIT { NULL, CLOSEST_NAME_MAX_TYPOS + 1 }
void closest_name_offer(struct closest_name *c, const char *word,
			const char *candidate);

/* Whether `word` is a typo of a name `distance` away, where a word that
 * is no typo is a name of its own (explain: an op it has no rule for):
 * within CLOSEST_NAME_MAX_TYPOS, but one for a word under six bytes,
 * where two would take real names for typos (lstm is two from lt). */
bool closest_name_is_typo(const char *word, int distance);

/* The name of `names` (NULL-ended) of which `word` is a typo
 * (closest_name_is_typo), else NULL: "did you mean" for a word out of a
 * fixed set (a rule's keyword, an option's value). */
const char *closest_name_among(const char *word, const char *const *names);

#endif /* AMPTRACE_EDIT_DISTANCE_H */
