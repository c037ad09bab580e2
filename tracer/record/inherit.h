/* What amptrace inherited from whoever started it (signal dispositions,
 * the signal mask, closed standard descriptors), kept so that
 * `amptrace run` hands the program exactly that, whatever amptrace itself
 * changed to do its work.  The program must not be able to tell it runs
 * traced: `nohup amptrace run -- PROG` keeps PROG immune to SIGHUP, a
 * closed stdin stays closed for it. */
#ifndef AMPTRACE_INHERIT_H
#define AMPTRACE_INHERIT_H

#include <sys/types.h>

/* First thing in main: saves the inherited state, then sets amptrace's
 * own: SIGXFSZ ignored (a write past `ulimit -f` fails with EFBIG and the
 * writer says so, instead of the signal killing amptrace), SIGCHLD at its
 * default (inherited ignored, the kernel reaps children itself and their
 * exit status is lost). */
void inherit_save(void);

/* `amptrace run`'s start: standard descriptors that came closed get
 * /dev/null, close-on-exec, so that none of amptrace's own files or pipes
 * takes their number (the program still finds them closed). */
void inherit_hold_closed_std_fds(void);

/* `amptrace run`: SIGINT, SIGQUIT, SIGTERM and SIGHUP sent to amptrace
 * (kill, Popen.send_signal, a container's stop signal) are passed on to
 * the program, which decides, as timeout(1) does; those the terminal sends
 * to the whole foreground group (^C, ^\, hangup) reached the program
 * already and are not sent twice, nor are those our parent `timeout`
 * sends its whole group (it follows them with SIGCONT).  A signal
 * amptrace inherited ignored stays ignored: the program would not have
 * received it. */
void inherit_forward_signals(void);
/* The program to forward to, from its fork on; a signal that came
 * before it existed is passed on now.  0 once it ended: then a signal
 * sent to amptrace alone is amptrace's again (its default action). */
void inherit_set_program(pid_t pid);

/* In the child, just before exec: the inherited dispositions and mask. */
void inherit_restore(void);

#endif /* AMPTRACE_INHERIT_H */
