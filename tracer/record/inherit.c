/* The state amptrace inherited and gives back to the program it runs
 * (inherit.h). */
#include "inherit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

/* Every signal whose disposition amptrace may change. */
static const int changed_signals[] = { SIGINT,  SIGQUIT, SIGTERM,
				       SIGHUP,  SIGXFSZ, SIGCHLD };
static const int forwarded_signals[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP };
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static struct sigaction inherited_action[COUNT(changed_signals)];
static sigset_t inherited_mask;
static bool saved;

/* 0 until the program is forked, -1 once it ended */
static volatile sig_atomic_t program_pid;
static volatile sig_atomic_t early_signal; /* came before the program */

void inherit_save(void)
{
	sigprocmask(SIG_SETMASK, NULL, &inherited_mask);
	for (size_t i = 0; i < COUNT(changed_signals); i++)
		sigaction(changed_signals[i], NULL, &inherited_action[i]);
	saved = true;
	struct sigaction ignore = { .sa_handler = SIG_IGN };
	struct sigaction fallback = { .sa_handler = SIG_DFL };
	sigaction(SIGXFSZ, &ignore, NULL);
	sigaction(SIGCHLD, &fallback, NULL);
}

void inherit_hold_closed_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* open() takes the lowest free number: this one */
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0 && null != fd)
			close(null);
	}
}

static bool inherited_ignored(int sig)
{
	for (size_t i = 0; saved && i < COUNT(changed_signals); i++)
		if (changed_signals[i] == sig)
			return inherited_action[i].sa_handler == SIG_IGN;
	return false;
}

static void forward(int sig, siginfo_t *info, void *context)
{
	int saved_errno = errno;

	(void)context;
	/* The terminal signals the whole foreground process group, the
	 * program with it (SI_KERNEL: the tty driver); only a signal meant
	 * for amptrace alone is the program's through us. */
	if (info->si_code == SI_KERNEL)
		return;
	pid_t pid = (pid_t)program_pid;
	if (pid > 0) {
		kill(pid, sig);
	} else if (pid == 0) {
		early_signal = sig;
	} else {
		/* The program is gone and amptrace finishes the trace: a
		 * signal sent to amptrace now is for amptrace (what is
		 * written so far loads: readers repair a cut trace). */
		signal(sig, SIG_DFL);
		raise(sig);
	}
	errno = saved_errno;  /* kill() fails with ESRCH once it is gone */
}

void inherit_forward_signals(void)
{
	struct sigaction action = { .sa_sigaction = forward,
				    .sa_flags = SA_SIGINFO | SA_RESTART };

	sigemptyset(&action.sa_mask);
	for (size_t i = 0; i < COUNT(forwarded_signals); i++)
		if (!inherited_ignored(forwarded_signals[i]))
			sigaction(forwarded_signals[i], &action, NULL);
}

void inherit_set_program(pid_t pid)
{
	program_pid = pid > 0 ? pid : -1;
	int sig = early_signal;
	if (pid > 0 && sig) {
		early_signal = 0;
		kill(pid, sig);
	}
}

void inherit_restore(void)
{
	if (!saved)
		return;
	for (size_t i = 0; i < COUNT(changed_signals); i++)
		sigaction(changed_signals[i], &inherited_action[i], NULL);
	sigprocmask(SIG_SETMASK, &inherited_mask, NULL);
}
