/* Where an output may go: never over an input, and into a file the way
 * that keeps what is there what it is.  Every writer of amptrace and
 * ampview asks here (report, merge, check --junit, ampview -o, run).
 *
 * Two names are special for every writer: "-" is standard output, and a
 * FIFO that no process reads is given up after OUTPUT_FIFO_WAIT_MS (as
 * trace_scan gives up an input FIFO no process writes) instead of
 * blocking for ever. */
#ifndef AMPTRACE_OUTPUT_FILE_H
#define AMPTRACE_OUTPUT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The input that `output` is, by device and inode (whatever names lead
 * to it: a link, ./t.json, a second hard link, "-" redirected to it), or
 * NULL: writing there would destroy what is being read.  Only a regular
 * file can be: /dev/null as an input and an output destroys nothing. */
const char *output_is_input(const char *output, const char *const *inputs,
			    size_t count);
/* output_is_input, said on stderr as "WHO: OUTPUT is INPUT, an input:
 * write to another file"; true when refused. */
bool output_refuse_input(const char *who, const char *output,
			 const char *const *inputs, size_t count);

/* An output written whole before it replaces what was there: a regular
 * file of its own (one name), or the one a symlink leads to, is written
 * next to it and renamed over it, so a reader never sees half of it (the
 * link stays a link).  Anything else (a second hard link, a FIFO, a
 * device, /dev/stdout, a link to none of those) is written through, as
 * a shell's `>` would: renaming over it would replace the device or part
 * the names; so is a file in a directory that may not be written. */
struct output_file {
	FILE *f;
	char *path;
	char *temporary; /* the name written, renamed to path; NULL when
			  * written through */
};

/* How long an output FIFO is waited for until a process reads it: the
 * same 10 s an input FIFO gets (trace_scan.c). */
#define OUTPUT_FIFO_WAIT_MS 10000

/* A descriptor to write `path` through (created or truncated as a
 * shell's `>` would), close-on-exec: "-" gives a descriptor of its own on
 * standard output (closing it leaves stdout open).  -1 with errno when
 * it cannot; ENXIO when `path` is a FIFO that no process opened for
 * reading within OUTPUT_FIFO_WAIT_MS. */
int output_fd_open(const char *path);

/* Makes "-" write to `fd` rather than to STDOUT_FILENO: a command that
 * moved its text off standard output (check --junit -) keeps the first
 * standard output there. */
void output_file_stdout_is(int fd);

/* strerror(err), saying what ENXIO from output_fd_open means: "no
 * process reads it (a FIFO without a reader?)". */
const char *output_strerror(int err);

/* Opens `path` for writing ("-": standard output); -1 with errno when it
 * cannot (output_strerror says why). */
int output_file_open(struct output_file *o, const char *path);
/* Closes it and puts it in place; -1 with errno when any write failed
 * (the temporary is removed and the old file stays). */
int output_file_close(struct output_file *o);

/* Closes it without putting it in place: a temporary is removed (what
 * was there stays), what was written through stays as written.  For a
 * writer that found, half-way, that it cannot finish. */
void output_file_abandon(struct output_file *o);

#endif /* AMPTRACE_OUTPUT_FILE_H */
