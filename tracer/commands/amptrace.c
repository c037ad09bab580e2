/* amptrace: the command-line front end.  Each subcommand lives in its own
 * file and is one row of `commands` below; adding one is a row plus its
 * declaration in commands.h.  A subcommand gets argv starting at its own
 * name, answers `--help` itself, and returns the exit status (2 for bad
 * usage). */
#include "command_line.h"
#include "commands.h"
#include "edit_distance.h"
#include "help_topics.h"
#include "inherit.h"
#include "raw_dir.h"
#include "terminal_text.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#ifndef AMPTRACE_VERSION
#define AMPTRACE_VERSION "unknown"
#endif

struct command {
	const char *name;
	const char *help; /* one line */
	int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
	{ "explain", "why an op runs in the dtype it runs in under autocast",
	  amptrace_explain },
	{ "run", "run a PyTorch or libamp program and write its JSON trace",
	  amptrace_run },
	{ "summary", "ops, casts, cache, regions, scaler, findings of a trace",
	  amptrace_summary },
	{ "check", "check cast assertions against a trace (for CI)",
	  amptrace_check },
	{ "diff", "cast behaviour that changed between two traces",
	  amptrace_diff },
	{ "merge", "join per-rank traces into one", amptrace_merge },
	{ "report", "one self-contained HTML page: findings, charts, tables, graph",
	  amptrace_report },
	{ "completion", "the bash completion script: eval \"$(amptrace completion bash)\"",
	  amptrace_completion },
};

#define COMMAND_COUNT (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	fputs("usage: amptrace COMMAND [ARGS...]\n"
	      "       amptrace help COMMAND\n"
	      "       amptrace help rules      the grammar of check's rules\n"
	      "       amptrace --version\n\ncommands:\n",
	      out);
	for (size_t i = 0; i < COMMAND_COUNT; i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
	fputs("\n`amptrace COMMAND --help` describes a command.\n", out);
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < COMMAND_COUNT; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* Suggests the closest command within two typos (summry -> summary). */
static int unknown_command(const char *name)
{
	struct closest_name closest = CLOSEST_NAME_INIT;

	for (size_t i = 0; i < COMMAND_COUNT; i++)
		closest_name_offer(&closest, name, commands[i].name);
	fprintf(stderr, "amptrace: unknown command '%s'", name);
	if (closest.name)
		fprintf(stderr, "; did you mean '%s'?", closest.name);
	fputs("\ncommands:", stderr);
	for (size_t i = 0; i < COMMAND_COUNT; i++)
		fprintf(stderr, " %s", commands[i].name);
	fputs("\n", stderr);
	return 2;
}

/* Output that could not be written (a full disk, /dev/full, a closed
 * pipe) must not pass for success: stdout is checked once, at the end.
 * Closed, not flushed: its filter (terminal_text.h) lets go of what it
 * holds only then. */
static int output_written(int status, const char *command)
{
	errno = 0;
	bool failed = ferror(stdout);
	if (fclose(stdout) != 0)
		failed = true;
	if (!failed)
		return status;
	fprintf(stderr, "amptrace%s%s: cannot write standard output%s%s\n",
		command ? " " : "", command ? command : "", errno ? ": " : "",
		errno ? strerror(errno) : "");
	return 2;
}

enum { OPTION_VERSION = 256 };

static const struct option amptrace_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPTION_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* `amptrace help [COMMAND | rules]`. */
static int help(int argc, char **argv)
{
	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "rules") == 0) {
		help_rules(stdout);
		return 0;
	}
	if (strcmp(argv[1], "help") == 0) { /* help's help is the usage */
		usage(stdout);
		return 0;
	}
	const struct command *command = find_command(argv[1]);
	if (command == NULL)
		return unknown_command(argv[1]);
	char *help_argv[] = { argv[1], "--help", NULL };
	return command->run(2, help_argv);
}

/* amptrace's own options end at the command ('+'): the rest is the
 * command's, which it reads the same way (command_line.h). */
static int run_command(int argc, char **argv)
{
	struct command_line cl = { "amptrace", "+h", amptrace_options, argc,
				   argv };
	int option;

	while ((option = command_line_next(&cl)) != -1) {
		switch (option) {
		case 'h':
			usage(stdout);
			return 0;
		case OPTION_VERSION:
			printf("amptrace %s\n", AMPTRACE_VERSION);
			return 0;
		default:
			return COMMAND_LINE_BAD_USAGE;
		}
	}
	if (optind == argc) {
		usage(stderr);
		return 2;
	}
	argc -= optind;
	argv += optind;
	if (strcmp(argv[0], "help") == 0)
		return help(argc, argv);
	const struct command *command = find_command(argv[0]);
	if (command == NULL)
		return unknown_command(argv[0]);
	return command->run(argc, argv);
}

int main(int argc, char **argv)
{
	/* `amptrace run`'s guard, started under its own name (raw_dir.h) */
	if (argc > 0 && strcmp(argv[0], RAW_DIR_GUARD_NAME) == 0)
		return raw_dir_guard_main(argc, argv);
	inherit_save();
	terminal_filter_stdout();
	terminal_filter_stderr();
	/* amptrace's own options (--help, --version) come before the
	 * command, and end the run */
	const char *command = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
	return output_written(run_command(argc, argv), command);
}
