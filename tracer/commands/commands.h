/* The amptrace subcommands, one file each (amptrace.c dispatches to
 * them): argv starts at the command's name, the command answers --help
 * itself (command_line.h: every one reads its options the same way), and
 * the return value is the exit status, 2 for bad usage or bad input. */
#ifndef AMPTRACE_COMMANDS_H
#define AMPTRACE_COMMANDS_H

int amptrace_run(int argc, char **argv);     /* run.c */
int amptrace_summary(int argc, char **argv); /* summary.c */
int amptrace_check(int argc, char **argv);   /* check.c */
int amptrace_diff(int argc, char **argv);    /* diff.c */
int amptrace_merge(int argc, char **argv);   /* merge.c */
int amptrace_explain(int argc, char **argv); /* explain.c */
int amptrace_report(int argc, char **argv);  /* report.c */

#endif /* AMPTRACE_COMMANDS_H */
