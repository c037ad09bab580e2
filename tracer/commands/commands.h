/* The amptrace subcommands, one file each (amptrace.c dispatches to
 * them): argv starts at the command's name, the command answers --help
 * itself (command_line.h: every one reads its options the same way), and
 * the return value is the exit status, 2 for bad usage or bad input. */
#ifndef AMPTRACE_COMMANDS_H
#define AMPTRACE_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>

int amptrace_run(int argc, char **argv);     /* run.c */
int amptrace_summary(int argc, char **argv); /* summary.c */
int amptrace_check(int argc, char **argv);   /* check.c */
int amptrace_diff(int argc, char **argv);    /* diff.c */
int amptrace_merge(int argc, char **argv);   /* merge.c */
int amptrace_explain(int argc, char **argv); /* explain.c */
int amptrace_report(int argc, char **argv);  /* report.c */
/* the bash completion script of amptrace and ampview */
int amptrace_completion(int argc, char **argv); /* help_topics.c */

/* The same commands on traces already in memory, past the command line
 * (the fuzz harnesses run them so, with no file per input).  Each prints
 * where its command prints and returns its exit status. */
struct trace;
struct analysis;
struct rules;
struct diff_side;

/* amptrace summary [--json] of `trace` (loaded), module paths cut to
 * `depth` parts, of rank `rank`'s processes only (-1: all; the others
 * are taken out of `trace`). */
int summary_print(struct trace *trace, bool json, bool color, int depth,
		  int rank);
/* One side of amptrace diff: `trace` (loaded) is taken over. */
struct diff_side *diff_side_new(struct trace *trace);
void diff_side_free(struct diff_side *side);
/* Module paths cut to `depth` parts (DIFF_MODULE_DEPTH by default). */
#define DIFF_MODULE_DEPTH 2
int diff_print(struct diff_side *base, struct diff_side *new, bool json,
	       int depth);
/* amptrace check of `rules` against `trace` and its analysis (both
 * kept), with a JUnit report in `junit` (or NULL). */
int check_rules(const struct trace *trace, struct analysis *a,
		const struct rules *rules, const char *junit);
/* amptrace merge of `count` trace texts (texts[i], lens[i] bytes, named
 * paths[i] in messages) into `out` ("-": standard output). */
int merge_texts(int count, const char *const *paths,
		const char *const *texts, const size_t *lens, const char *out);

#endif /* AMPTRACE_COMMANDS_H */
