/* Levenshtein distance (see edit_distance.h). */
#include "edit_distance.h"

#include <stdlib.h>
#include <string.h>

int edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int *row = malloc((lb + 1) * sizeof(*row));
	if (row == NULL)
		return (int)(la > lb ? la : lb);
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diagonal = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int above = row[j];
			int best = diagonal + (a[i - 1] != b[j - 1]);
			if (above + 1 < best)
				best = above + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diagonal = above;
		}
	}
	int distance = row[lb];
	free(row);
	return distance;
}

void closest_name_offer(struct closest_name *c, const char *word,
			const char *candidate)
{
	int distance = edit_distance(word, candidate);

	if (distance < c->distance) {
		c->distance = distance;
		c->name = candidate;
	}
}
