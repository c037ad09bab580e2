/* `amptrace help rules` and `amptrace completion bash` (help_topics.c). */
#ifndef AMPTRACE_HELP_TOPICS_H
#define AMPTRACE_HELP_TOPICS_H

#include <stdio.h>

/* The rules grammar (RULES.md's), then the finding kinds `no finding`
 * takes, one line: "finding kinds: a b c". */
void help_rules(FILE *out);

#endif /* AMPTRACE_HELP_TOPICS_H */
