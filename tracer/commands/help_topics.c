/* Reference that the installed command carries itself: the rules grammar
 * (from RULES.md, compiled in) with the finding kinds of this build, and
 * the bash completion script.  A pip install has no man or share
 * directory to read them from. */
#include "help_topics.h"
#include "command_line.h"
#include "commands.h"
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
		if (!finding_kinds[i].note)  /* no rule counts a note */
			fprintf(out, " %s", finding_kinds[i].name);
	fputs("\n\nExamples and what each rule means: RULES.md "
	      "(share/doc/amptrace, or the source).\n", out);
}

static const char completion_usage[] =
	"usage: amptrace completion bash\n\n"
	"Prints the bash completion of amptrace and ampview (subcommands, "
	"options,\nfinding kinds and rule keywords). In ~/.bashrc:\n"
	"    eval \"$(amptrace completion bash)\"\n";

static const struct option completion_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int amptrace_completion(int argc, char **argv)
{
	struct command_line cl = { "amptrace completion", "h",
				   completion_options, argc, argv };
	int option;

	while ((option = command_line_next(&cl)) != -1) {
		if (option != 'h')
			return COMMAND_LINE_BAD_USAGE;
		fputs(completion_usage, stdout);
		return 0;
	}
	if (argc - optind != 1 || strcmp(argv[optind], "bash") != 0)
		return command_line_error(&cl, "only bash is supported: "
					  "amptrace completion bash");
	fputs(bash_completion_text, stdout);
	return 0;
}
