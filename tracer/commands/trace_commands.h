/* The trace subcommands of amptrace (one file each): argv starts at the
 * command's name, the return value is the exit status. */
#ifndef AMPTRACE_TRACE_COMMANDS_H
#define AMPTRACE_TRACE_COMMANDS_H

int amptrace_run(int argc, char **argv);     /* run.c */
int amptrace_summary(int argc, char **argv); /* summary.c */
int amptrace_check(int argc, char **argv);   /* check.c */
int amptrace_diff(int argc, char **argv);    /* diff.c */
int amptrace_merge(int argc, char **argv);   /* merge.c */

#endif /* AMPTRACE_TRACE_COMMANDS_H */
