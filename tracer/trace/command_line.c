/* The command line every amptrace command and ampview read the same way
 * (command_line.h). */
#include "command_line.h"

#include "edit_distance.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "PROGRAM: MESSAGE", the name `close` offered when there is one, and
 * where to look. */
static int say_bad_usage(const struct command_line *c, const char *close,
			 const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", c->program);
	vfprintf(stderr, fmt, ap);
	if (close)
		fprintf(stderr, "; did you mean '%s'?", close);
	fprintf(stderr, "\nTry '%s --help'.\n", c->program);
	return COMMAND_LINE_BAD_USAGE;
}

int command_line_error(const struct command_line *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int status = say_bad_usage(c, NULL, fmt, ap);
	va_end(ap);
	return status;
}

int command_line_value_error(const struct command_line *c, const char *text,
			     const char *const *names, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int status = say_bad_usage(c, closest_name_among(text, names), fmt, ap);
	va_end(ap);
	return status;
}

int command_line_number(const struct command_line *c, const char *name,
			const char *text, long min, long max, int *out)
{
	char *end;
	long value = strtol(text, &end, 10);

	if (*end || end == text || value < min || value > max)
		return command_line_error(c, "%s must be a number from %ld to "
					  "%ld, not '%s'", name, min, max, text);
	*out = (int)value;
	return -1;
}

/* getopt stands for operands that look like options ("-1"): they are
 * swapped for this one while it parses, and back after. */
static char operand_stand_in[] = "";

/* getopt moves operands but keeps their order, so the k-th stand-in in
 * argv is the k-th operand taken out; an option's value may have been
 * one (optarg, the argument before optind). */
static void put_operands_back(struct command_line *c, char **taken, int count)
{
	for (int i = 1, k = 0; i < c->argc && k < count; i++) {
		if (c->argv[i] != operand_stand_in)
			continue;
		if (optarg == operand_stand_in && i == optind - 1)
			optarg = taken[k];
		c->argv[i] = taken[k++];
	}
}

/* Swaps the operands that look like options (before any "--") for the
 * stand-in; returns those taken out, in order, or NULL when none. */
static char **take_operands(struct command_line *c, int *count)
{
	char **taken = NULL;

	*count = 0;
	for (int i = 1; c->is_operand && i < c->argc; i++) {
		if (!strcmp(c->argv[i], "--"))
			break;
		if (c->argv[i][0] != '-' || !c->is_operand(c->argv[i]))
			continue;
		if (!taken && !(taken = calloc((size_t)c->argc, sizeof *taken)))
			return NULL;
		taken[(*count)++] = c->argv[i];
		c->argv[i] = operand_stand_in;
	}
	return taken;
}

/* How many long options `name` (len bytes) may abbreviate: 1 for an
 * exact name; *match is the first, or the exact one. */
static int prefix_matches(const struct command_line *c, const char *name,
			  size_t len, const struct option **match)
{
	int n = 0;

	for (const struct option *o = c->long_options; o && o->name; o++) {
		if (strncmp(o->name, name, len))
			continue;
		if (strlen(o->name) == len) {
			*match = o;
			return 1;
		}
		if (!n++)
			*match = o;
	}
	return n;
}

/* Whether getopt refused `arg` as a long option (rather than a short one
 * of a cluster that follows it): optopt is then 0 (unknown) or the
 * option's value. */
static bool refused_long(const struct command_line *c, const char *arg)
{
	const struct option *match = NULL;

	if (strncmp(arg, "--", 2))
		return false;
	return !optopt || (prefix_matches(c, arg + 2, strcspn(arg + 2, "="),
					  &match) &&
			   match->val == optopt);
}

/* "unknown option '--junti'; did you mean '--junit'?", or ambiguous. */
static void bad_long_option(const struct command_line *c, const char *arg)
{
	const char *name = arg + 2;
	size_t len = strcspn(name, "=");
	const struct option *match = NULL;
	struct closest_name closest = CLOSEST_NAME_INIT;
	char word[64];

	if (prefix_matches(c, name, len, &match) > 1) {
		fprintf(stderr, "%s: option '--%.*s' is ambiguous:", c->program,
			(int)len, name);
		for (const struct option *o = match; o->name; o++)
			if (!strncmp(o->name, name, len))
				fprintf(stderr, " --%s", o->name);
		fprintf(stderr, "\nTry '%s --help'.\n", c->program);
		return;
	}
	if (match && match->has_arg == no_argument && name[len] == '=') {
		command_line_error(c, "option '--%s' takes no value", match->name);
		return;
	}
	snprintf(word, sizeof word, "%.*s", (int)len, name);
	for (const struct option *o = c->long_options; o && o->name; o++)
		closest_name_offer(&closest, word, o->name);
	if (closest.name)
		command_line_error(c, "unknown option '%s'; did you mean '--%s'?",
				   arg, closest.name);
	else
		command_line_error(c, "unknown option '%s'", arg);
}

/* The argument getopt just refused, or the short option in it. */
static int bad_option(const struct command_line *c, int option)
{
	const char *arg = c->argv[optind - 1];

	if (!refused_long(c, arg))
		command_line_error(c, option == ':' ? "option '-%c' needs a value"
						    : "unknown option '-%c'",
				   optopt);
	else if (option == ':')
		command_line_error(c, "option '%.*s' needs a value",
				   (int)strcspn(arg, "="), arg);
	else
		bad_long_option(c, arg);
	return '?';
}

int command_line_next(struct command_line *c)
{
	char short_options[64];
	bool in_order = c->short_options && c->short_options[0] == '+';
	int ntaken;

	snprintf(short_options, sizeof short_options, "%s:%s",
		 in_order ? "+" : "",
		 c->short_options ? c->short_options + in_order : "");
	if (!c->started) {
		c->started = true;
		optind = 0; /* glibc: start afresh, as for a new argv */
		opterr = 0;
	}
	char **taken = take_operands(c, &ntaken);
	optopt = 0;
	int option = getopt_long(c->argc, c->argv, short_options,
				 c->long_options, NULL);
	if (taken) {
		put_operands_back(c, taken, ntaken);
		free(taken);
	}
	if (option == '?' || option == ':')
		return bad_option(c, option);
	return option;
}
