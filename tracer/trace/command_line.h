/* The command line as every amptrace command and ampview read it:
 * options parsed by getopt_long (GNU style: options and operands in any
 * order unless the short options start with '+', `--` ends the options,
 * `--name=value` or `--name value`, unambiguous prefixes of long names),
 * and one way to say it is wrong: "PROGRAM: what is wrong", with the
 * closest option for a mistyped one ("did you mean '--junit'?"), then
 * "Try 'PROGRAM --help'." on stderr and exit status 2. */
#ifndef AMPTRACE_COMMAND_LINE_H
#define AMPTRACE_COMMAND_LINE_H

#include <getopt.h>
#include <stdbool.h>

#define COMMAND_LINE_BAD_USAGE 2

struct command_line {
	const char *program;  /* "amptrace check", "ampview": names messages */
	const char *short_options;         /* getopt's, without ':' */
	const struct option *long_options; /* ends with a zeroed entry */
	int argc;
	char **argv;          /* argv[0] is the command's name */
	/* the arguments that are operands although they start with '-'
	 * (explain's negative numbers), or NULL */
	bool (*is_operand)(const char *arg);
	bool started;
};

/* The next option, as getopt_long returns it (optarg holds its value),
 * or -1 after the last one: the operands are then argv[optind..argc).
 * A bad option (unknown, ambiguous, or missing its value) is said on
 * stderr and returns '?'; an option given a value it does not take
 * ("--json=1") too. */
int command_line_next(struct command_line *c);

/* Says "PROGRAM: MESSAGE" and "Try 'PROGRAM --help'." on stderr and
 * returns COMMAND_LINE_BAD_USAGE. */
int command_line_error(const struct command_line *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* command_line_error for an option's value `text` out of a fixed set,
 * `names` (NULL-ended): the message ends in "; did you mean 'NAME'?"
 * when `text` is a typo of one of them ('--format dto': 'dot'). */
int command_line_value_error(const struct command_line *c, const char *text,
			     const char *const *names, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* An option's value `text` as a whole number from min to max (within
 * int) into *out: returns -1, else says "NAME must be a number from MIN
 * to MAX, not 'TEXT'" (command_line_error) and returns its status. */
int command_line_number(const struct command_line *c, const char *name,
			const char *text, long min, long max, int *out);

#endif /* AMPTRACE_COMMAND_LINE_H */
