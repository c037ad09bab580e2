/* Reference that the installed command carries itself: the rules grammar
 * (from RULES.md, compiled in) with the finding kinds of this build, and
 * the bash completion script.  A pip install has no man or share
 * directory to read them from. */
#include "help_topics.h"
#include "findings.h"

#include <string.h>

extern const char rules_grammar_text[];      /* RULES.md, "## Grammar" */
extern const char bash_completion_text[];    /* amptrace-completion.bash */

void help_rules(FILE *out)
{
	fputs("The rules `amptrace check TRACE.json RULES` reads: one rule a "
	      "line.\n\n", out);
	fputs(rules_grammar_text, out);
	fputs("\nfinding kinds:", out);
	for (size_t i = 0; i < FINDING_KIND_COUNT; i++)
		fprintf(out, " %s", finding_kinds[i].name);
	fputs("\n\nExamples and what each rule means: RULES.md "
	      "(share/doc/amptrace, or the source).\n", out);
}

int amptrace_completion(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		puts("usage: amptrace completion bash\n\n"
		     "Prints the bash completion of amptrace and ampview "
		     "(subcommands, options,\nfinding kinds and rule keywords). "
		     "In ~/.bashrc:\n    eval \"$(amptrace completion bash)\"");
		return 0;
	}
	if (argc != 2 || strcmp(argv[1], "bash") != 0) {
		fputs("amptrace completion: only bash is supported: amptrace "
		      "completion bash\n", stderr);
		return 2;
	}
	fputs(bash_completion_text, stdout);
	return 0;
}
