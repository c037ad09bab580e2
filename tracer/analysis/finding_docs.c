/* The documentation of the finding kinds, from their one source, the
 * table of kinds (findings_kinds.c):
 *
 *   finding_docs update RULES.md   rewrites RULES.md's table of kinds
 *   finding_docs check RULES.md README.md FORMAT.md
 *
 * `check` (a test, in TAP) fails when RULES.md's table is not the one the rows
 * give, when README.md's "Findings" section does not name every kind, or
 * when either names a kind (a `word-with-dashes` in backquotes) the table
 * lacks: a kind renamed, added or removed in the table must be so in the
 * documents too.  Built, not installed. */
#include "findings.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char table_begin[] =
	"<!-- the finding kinds: generated from their table "
	"(tracer/analysis/findings_kinds.c) by `ninja -C build finding-docs` "
	"-->\n";
static const char table_end[] = "<!-- end of the finding kinds -->\n";

/* The markdown table, into a buffer the caller frees. */
static char *kinds_table(void)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	if (!out)
		return NULL;
	fputs("| kind | severity | what | from |\n|---|---|---|---|\n", out);
	for (int k = 0; k < FINDING_KIND_COUNT; k++)
		fprintf(out, "| `%s` | %s | %s | %s |\n", finding_kinds[k].name,
			finding_severity_name(finding_kinds[k].severity),
			finding_kinds[k].doc,
			finding_source_name(finding_kinds[k].source));
	return fclose(out) == 0 ? text : NULL;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	size_t size = 0;

	if (!f) {
		perror(path);
		return NULL;
	}
	FILE *out = open_memstream(&text, &size);
	int c;
	while (out && (c = getc(f)) != EOF)
		putc(c, out);
	fclose(f);
	if (!out || fclose(out) != 0) {
		fprintf(stderr, "%s: out of memory\n", path);
		return NULL;
	}
	return text;
}

/* Where RULES.md's generated table starts and ends (after its begin
 * marker, at its end marker); false when a marker is missing. */
static bool table_span(const char *path, const char *text, const char **from,
		       const char **to)
{
	*from = strstr(text, table_begin);
	*to = *from ? strstr(*from, table_end) : NULL;
	if (!*to) {
		fprintf(stderr, "%s: no \"%.*s\" ... \"%.*s\" lines around the "
			"table of kinds\n", path, (int)strlen(table_begin) - 1,
			table_begin, (int)strlen(table_end) - 1, table_end);
		return false;
	}
	*from += strlen(table_begin);
	return true;
}

static int update(const char *path)
{
	char *text = read_text(path), *table = kinds_table();
	const char *from, *to;
	int status = 1;

	if (text && table && table_span(path, text, &from, &to)) {
		FILE *f = fopen(path, "wb");
		if (f && fwrite(text, 1, (size_t)(from - text), f) &&
		    fputs(table, f) >= 0 && fputs(to, f) >= 0 && fclose(f) == 0)
			status = 0;
		else
			perror(path);
	}
	free(text);
	free(table);
	return status;
}

static bool is_kind_like(const char *word, size_t len)
{
	bool dash = false;

	if (!len || !islower((unsigned char)word[0]) || word[len - 1] == '-')
		return false;
	for (size_t i = 0; i < len; i++) {
		if (word[i] == '-')
			dash = true;
		else if (!islower((unsigned char)word[i]) &&
			 !isdigit((unsigned char)word[i]))
			return false;
	}
	return dash;
}

/* Checks each `kind-like` word of text[from, to) names a kind; marks the
 * kinds named in `named` (may be NULL).  Returns the unknown ones'
 * count. */
static int check_names(const char *path, const char *from, const char *to,
		       bool named[FINDING_KIND_COUNT])
{
	int unknown = 0;

	for (const char *q = memchr(from, '`', (size_t)(to - from)); q && q < to;) {
		const char *end = memchr(q + 1, '`', (size_t)(to - q - 1));
		if (!end)
			break;
		size_t len = (size_t)(end - q - 1);
		char word[64];
		snprintf(word, sizeof word, "%.*s", (int)len, q + 1);
		const struct finding_kind *k = finding_kind_lookup(word);
		/* a kind without a dash (recompile) is one only by name */
		if (is_kind_like(q + 1, len) || k) {
			if (!k) {
				fprintf(stderr, "%s: names `%s`, which is not a "
					"finding kind\n", path, word);
				unknown++;
			} else if (named) {
				named[k - finding_kinds] = true;
			}
		}
		q = memchr(end + 1, '`', (size_t)(to - end - 1));
	}
	return unknown;
}

static int check_rules(const char *path)
{
	char *text = read_text(path), *table = kinds_table();
	const char *from, *to;
	int problems = 1;

	if (text && table && table_span(path, text, &from, &to)) {
		problems = (size_t)(to - from) != strlen(table) ||
			   memcmp(from, table, strlen(table));
		if (problems)
			fprintf(stderr, "%s: the table of kinds is not the one "
				"findings_kinds.c gives; run `ninja -C build "
				"finding-docs`.  It should be:\n%s", path, table);
	}
	free(text);
	free(table);
	return problems;
}

/* A markdown section: from its heading line to the next heading of the
 * same or a higher level. */
static bool section(const char *path, const char *text, const char *heading,
		    const char **from, const char **to)
{
	*from = strstr(text, heading);
	if (!*from) {
		fprintf(stderr, "%s: no section \"%s\"\n", path, heading);
		return false;
	}
	size_t level = strspn(heading, "#");
	*to = *from + strlen(heading);
	while ((*to = strstr(*to, "\n#")) && strspn(*to + 1, "#") > level)
		(*to)++;
	if (!*to)
		*to = *from + strlen(*from);
	return true;
}

static int check_named(const char *path, const char *heading, bool every)
{
	char *text = read_text(path);
	const char *from, *to;
	bool named[FINDING_KIND_COUNT] = { false };
	int problems = 1;

	if (text && section(path, text, heading, &from, &to)) {
		problems = check_names(path, from, to, named);
		for (int k = 0; every && k < FINDING_KIND_COUNT; k++)
			if (!named[k]) {
				fprintf(stderr, "%s: \"%s\" does not name `%s`\n",
					path, heading, finding_kinds[k].name);
				problems++;
			}
	}
	free(text);
	return problems;
}

/* One TAP line for a check with `problems`; 1 when it failed. */
static int tap(int problems, const char *what)
{
	printf("%sok - %s\n", problems ? "not " : "", what);
	return problems != 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "update"))
		return update(argv[2]);
	if (argc != 5 || strcmp(argv[1], "check")) {
		fputs("usage: finding_docs update RULES.md\n"
		      "       finding_docs check RULES.md README.md FORMAT.md\n",
		      stderr);
		return 2;
	}
	int problems = 0;
	problems += tap(check_rules(argv[2]), "RULES.md's table of kinds is "
			"the one findings_kinds.c gives");
	problems += tap(check_named(argv[3], "### Findings", true),
			"README.md's Findings section names every kind, and "
			"only kinds");
	problems += tap(check_named(argv[4], "### 3.7", false),
			"FORMAT.md's amp.diag section names only kinds");
	printf("1..3\n");
	return problems ? 1 : 0;
}
