/* Levenshtein distance, for "did you mean" suggestions (explain's op and
 * dtype names, check's finding kinds). */
#ifndef AMPTRACE_EDIT_DISTANCE_H
#define AMPTRACE_EDIT_DISTANCE_H

/* The number of byte insertions, deletions and substitutions that turn
 * `a` into `b`. */
int edit_distance(const char *a, const char *b);

#endif /* AMPTRACE_EDIT_DISTANCE_H */
