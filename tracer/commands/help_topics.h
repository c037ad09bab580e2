/* `amptrace help rules` and `amptrace completion bash` (help_topics.c). */
#ifndef AMPTRACE_HELP_TOPICS_H
#define AMPTRACE_HELP_TOPICS_H

#include <stdio.h>

/* The rules grammar (RULES.md's), then the finding kinds `no finding`
 * takes, one line: "finding kinds: a b c". */
void help_rules(FILE *out);

/* `amptrace completion bash`: the bash completion script of amptrace and
 * ampview; returns the exit status (2 for another shell). */
int amptrace_completion(int argc, char **argv);

#endif /* AMPTRACE_HELP_TOPICS_H */
