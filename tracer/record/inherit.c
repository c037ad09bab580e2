/* The state amptrace inherited and gives back to the program it runs
 * (inherit.h). */
#include "inherit.h"

#include "proc_file.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Every signal whose disposition amptrace may change. */
static const int changed_signals[] = { SIGINT,  SIGQUIT, SIGTERM, SIGHUP,
				       SIGXFSZ, SIGCHLD, SIGCONT };
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

/* ---------------------------------------- signals sent to the group */

/* coreutils' `timeout` (without --foreground) leads its own process
 * group: when time is up it signals its child, then the whole group (the
 * program with it), then sends both SIGCONT.  The kernel does not say a
 * signal went to a group, but that SIGCONT does: a signal from our parent
 * `timeout`, the leader of the group the program is in, that its SIGCONT
 * follows has reached the program already, and passing it on would
 * deliver it twice.  Only `timeout` is trusted so: another parent may
 * send SIGCONT for its own reasons. */
#define GROUP_CONTINUE_WAIT_NS (100 * 1000 * 1000)
#define GROUP_REPEAT_NS (1000 * 1000 * 1000)

static _Atomic int64_t continue_ns;   /* when the last SIGCONT came */
static _Atomic int continue_sender;   /* and from whom */
static _Atomic int64_t group_ns;      /* when a group's signal was seen */
static _Atomic int group_signal, group_sender;
static pid_t timeout_parent;          /* our parent, when it is timeout */

/* Our parent when it is `timeout` (its command name), else 0: read
 * before any signal is forwarded, as a handler cannot read files. */
static pid_t parent_timeout(void)
{
	char name[32];
	pid_t parent = getppid();

	if (!proc_file_read(parent, "comm", name, sizeof name))
		return 0;
	return strcmp(name, "timeout\n") == 0 ? parent : 0;
}

static int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void note_continue(int sig, siginfo_t *info, void *context)
{
	(void)sig;
	(void)context;
	atomic_store(&continue_sender, info->si_pid);
	atomic_store(&continue_ns, monotonic_ns());
}

static bool continued_by(pid_t sender, int64_t since_ns)
{
	return atomic_load(&continue_sender) == sender &&
	       atomic_load(&continue_ns) >= since_ns;
}

/* Whether `info`'s signal went to our whole process group (the program
 * has it): waits up to GROUP_CONTINUE_WAIT_NS for the sender's SIGCONT,
 * which runs note_continue in between (nanosleep is interrupted). */
static bool sent_to_group(int sig, const siginfo_t *info, pid_t program)
{
	pid_t sender = info->si_pid;

	/* getppid, getpgrp and getpgid are bare system calls in glibc and
	 * musl, safe in a handler (POSIX lists only the first two) */
	if (info->si_code != SI_USER || !timeout_parent ||
	    sender != timeout_parent || sender != getppid() ||
	    sender != getpgrp() || program <= 0 ||
	    getpgid(program) != sender)
		return false;
	int64_t now = monotonic_ns();
	/* the group's copy of a signal already found sent to the group */
	if (atomic_load(&group_signal) == sig &&
	    atomic_load(&group_sender) == sender &&
	    now - atomic_load(&group_ns) < GROUP_REPEAT_NS)
		return true;
	int64_t since = now - GROUP_CONTINUE_WAIT_NS;
	struct timespec step = { 0, 1000 * 1000 };
	while (!continued_by(sender, since) &&
	       monotonic_ns() - now < GROUP_CONTINUE_WAIT_NS)
		nanosleep(&step, NULL);
	if (!continued_by(sender, since))
		return false;
	atomic_store(&group_signal, sig);
	atomic_store(&group_sender, sender);
	atomic_store(&group_ns, now);
	return true;
}

static void forward(int sig, siginfo_t *info, void *context)
{
	int saved_errno = errno;

	(void)context;
	/* The terminal signals the whole foreground process group, the
	 * program with it (SI_KERNEL: the tty driver); only a signal meant
	 * for amptrace alone is the program's through us. */
	pid_t pid = (pid_t)program_pid;
	if (info->si_code == SI_KERNEL || sent_to_group(sig, info, pid)) {
		errno = saved_errno;
		return;
	}
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

	timeout_parent = parent_timeout();
	sigemptyset(&action.sa_mask);
	for (size_t i = 0; i < COUNT(forwarded_signals); i++)
		if (!inherited_ignored(forwarded_signals[i]))
			sigaction(forwarded_signals[i], &action, NULL);
	/* a stopped amptrace still continues: the kernel does that before
	 * any handler */
	struct sigaction note = { .sa_sigaction = note_continue,
				  .sa_flags = SA_SIGINFO | SA_RESTART };
	sigemptyset(&note.sa_mask);
	sigaction(SIGCONT, &note, NULL);
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
