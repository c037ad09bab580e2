/* Optimal string alignment distance (see edit_distance.h). */
#include "edit_distance.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int smallest(int a, int b)
{
	return a < b ? a : b;
}

/* Three rows of the table: the one two back is where a transposition of
 * the last two bytes comes from. */
int edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int *rows = malloc(3 * (lb + 1) * sizeof(*rows));
	if (rows == NULL)
		return (int)(la > lb ? la : lb);
	int *before = rows, *above = rows + lb + 1, *row = rows + 2 * (lb + 1);
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int *oldest = before;
		before = above;
		above = row;
		row = oldest;
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int best = above[j - 1] + (a[i - 1] != b[j - 1]);
			best = smallest(best, above[j] + 1);
			best = smallest(best, row[j - 1] + 1);
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1])
				best = smallest(best, before[j - 2] + 1);
			row[j] = best;
		}
	}
	int distance = row[lb];
	free(rows);
	return distance;
}

void closest_name_offer(struct closest_name *c, const char *word,
			const char *candidate)
{
	/* SUMMARY for summary: one typo (caps lock), not seven */
	int distance = strcasecmp(word, candidate) == 0
			       ? 1 : edit_distance(word, candidate);

	if (distance < c->distance) {
		c->distance = distance;
		c->name = candidate;
	}
}

bool closest_name_is_typo(const char *word, int distance)
{
	int allowed = strlen(word) < 6 ? 1 : CLOSEST_NAME_MAX_TYPOS;

	return distance <= allowed;
}

const char *closest_name_among(const char *word, const char *const *names)
{
	struct closest_name closest = CLOSEST_NAME_INIT;

	for (size_t i = 0; names[i]; i++)
		closest_name_offer(&closest, word, names[i]);
	if (!closest.name || !closest_name_is_typo(word, closest.distance))
		return NULL;
	return closest.name;
}
