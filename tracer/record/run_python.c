/* `amptrace run -- python3 train.py`: PyTorch programs are recorded by
 * the bridge (tracer/torch/), which Python loads at start-up from the
 * sitecustomize.py this puts first on PYTHONPATH.  The interpreter is the
 * one the user named; it finds torch itself, and when no op was recorded
 * run asks it whether it has torch (python_has_torch).
 *
 * Interpreter options that make Python ignore PYTHONPATH or skip site
 * (-E, -I, -S) defeat the injection: that is said here, before the
 * program runs, rather than leaving an empty trace unexplained. */
#include "run_python.h"
#include "data_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

bool run_is_python(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (strncmp(base, "python", 6) != 0)
		return false;
	/* python, python3, python3.11, python3.11d: digits and dots */
	for (const char *c = base + 6; *c; c++)
		if (!(*c >= '0' && *c <= '9') && *c != '.' && *c != 'd' &&
		    *c != 'm')
			return false;
	return true;
}

/* PROG as execvp would find it: itself when it names a path, else the
 * first executable of that name on PATH; false when there is none. */
static bool resolve_on_path(const char *prog, char *buf, size_t size)
{
	if (strchr(prog, '/')) {
		snprintf(buf, size, "%s", prog);
		return true;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *dir = path;;) {
		size_t len = strcspn(dir, ":");
		snprintf(buf, size, "%.*s%s%s", (int)len, dir, len ? "/" : "",
			 prog);
		if (access(buf, X_OK) == 0)
			return true;
		if (!dir[len])
			return false;
		dir += len + 1;
	}
}

/* The word at *p (blanks and the quotes of a shell line skipped), cut
 * out in place; NULL at the end of the line. */
static char *next_word(char **p)
{
	char *s = *p + strspn(*p, " \t\r'\"");
	if (!*s)
		return NULL;
	char *end = s + strcspn(s, " \t\r'\"");
	*p = *end ? end + 1 : end;
	*end = '\0';
	return s;
}

/* The Python a script's first lines start, into PYTHON:
 * `#!/venv/bin/python3`, `#!/usr/bin/env python3`, or pip's launcher for
 * an interpreter path too long for a shebang (`#!/bin/sh`, then
 * `'''exec' /long/python`); false when they start none.  Console
 * scripts are how launchers come: torchrun, accelerate, lightning,
 * deepspeed. */
static bool script_python(const char *path, char *python, size_t size)
{
	char head[PATH_MAX + 256];
	FILE *f = fopen(path, "re");

	if (!f)
		return false;
	size_t n = fread(head, 1, sizeof head - 1, f);
	fclose(f);
	head[n] = '\0';
	if (n < 2 || head[0] != '#' || head[1] != '!')
		return false;
	char *end = strchr(head, '\n');
	char *second = end ? end + 1 : NULL;
	if (end)
		*end = '\0';
	char *p = head + 2;
	char *word = next_word(&p);
	if (word && !strcmp(strrchr(word, '/') ? strrchr(word, '/') + 1 : word,
			    "env"))
		while ((word = next_word(&p)) && word[0] == '-')
			; /* env -S ... */
	if (!(word && run_is_python(word))) {
		if (!second || strncmp(second, "'''exec' ", 9) != 0)
			return false;
		second[strcspn(second, "\n")] = '\0';
		p = second + 9;
		word = next_word(&p);
		if (!(word && run_is_python(word)))
			return false;
	}
	snprintf(python, size, "%s", word);
	return true;
}

/* The Python interpreter PROG is, or that it starts as a script
 * (script_python), into PYTHON; false when neither. */
static bool python_of(const char *prog, char *python, size_t size)
{
	char path[PATH_MAX];

	if (run_is_python(prog)) {
		snprintf(python, size, "%s", prog);
		return true;
	}
	return resolve_on_path(prog, path, sizeof path) &&
	       script_python(path, python, size);
}

bool run_python_program(const char *prog)
{
	char python[PATH_MAX];

	return python_of(prog, python, sizeof python);
}

const char *run_no_ops_message(const char *prog, const char *framework,
			       char *buf, size_t size)
{
	if (framework && !strncmp(framework, "torch ", 6))
		/* its process is in the trace only when it died (with its
		 * process-died finding), not when it exited */
		snprintf(buf, size, "no ops recorded: %s imported torch but "
			 "ran no torch op before it ended",
			 prog ? prog : "the program");
	else if (framework)
		snprintf(buf, size, "no ops recorded: %s is linked to libamp "
			 "(its process was recorded) but ran no op before it "
			 "ended", prog ? prog : "the program");
	else if (!prog)
		snprintf(buf, size, "no ops recorded: is the program linked to "
			 "libamp / importing torch?");
	else if (run_python_program(prog))
		snprintf(buf, size, "no ops recorded: is %s importing torch?",
			 prog);
	else
		snprintf(buf, size, "no ops recorded: is %s linked to libamp "
			 "(dynamically)?", prog);
	return buf;
}

/* The script an interpreter's command runs: its first argument after the
 * options, NULL with -c or -m (no file) or none. */
static const char *script_of(char **command)
{
	for (char **a = command + 1; *a; a++) {
		const char *arg = *a;
		if (arg[0] != '-' || !arg[1])
			return arg[0] == '-' ? NULL : arg;  /* '-': stdin */
		if (!strcmp(arg, "--"))
			return a[1];
		for (const char *c = arg + 1; *c && arg[1] != '-'; c++) {
			if (*c == 'c' || *c == 'm')
				return NULL;
			if (*c == 'W' || *c == 'X') {
				if (!c[1] && !*++a)
					return NULL;
				break;
			}
		}
	}
	return NULL;
}

/* How long run waits for the probe (python_has_torch): a Python starts
 * and finds a spec in well under a second; one that hangs, or leaves a
 * child holding the pipe, must not hang run after its program ended. */
#define PROBE_SECONDS 5

/* Appends what FD holds now to BUF (SIZE > 0, *LEN used), NUL-ended;
 * the excess is read and dropped.  1 when it read some, 0 when there is
 * none yet, -1 at its end (EOF or an error). */
static int read_some(int fd, char *buf, size_t size, size_t *len)
{
	char spill[256];
	bool room = *len + 1 < size;
	ssize_t n;

	do
		n = read(fd, room ? buf + *len : spill,
			 room ? size - 1 - *len : sizeof spill);
	while (n < 0 && errno == EINTR);
	if (n > 0 && room)
		*len += (size_t)n;
	buf[*len] = '\0';
	return n > 0 ? 1 : n < 0 && errno == EAGAIN ? 0 : -1;
}

static long elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - since->tv_sec) * 1000 +
	       (now.tv_nsec - since->tv_nsec) / 1000000;
}

/* Reads the probe's stdout FD (non-blocking) into BUF until PID exits,
 * within PROBE_SECONDS; its exit status into *STATUS.  False when it
 * had not exited by then: its process group is killed (and it is
 * reaped).  A child it left behind holding FD is not waited for. */
static bool probe_output(pid_t pid, int fd, char *buf, size_t size,
			 int *status)
{
	struct timespec start;
	int got = 0;
	size_t len = 0;

	buf[0] = '\0';
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct pollfd p = { got >= 0 ? fd : -1, POLLIN, 0 };
		if (poll(&p, 1, 50) > 0)
			got = read_some(fd, buf, size, &len);
		pid_t done = waitpid(pid, status, WNOHANG);
		if (done == pid) {
			while (got >= 0 && (got = read_some(fd, buf, size,
							    &len)) > 0)
				;
			return true;
		}
		if (done < 0 && errno != EINTR)
			return false;
		if (elapsed_ms(&start) >= PROBE_SECONDS * 1000) {
			kill(-pid, SIGKILL);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			return false;
		}
	}
}

/* Whether `python` finds torch, asked without importing it (a fraction
 * of a second): -1 when it could not be asked.  `where` gets the
 * interpreter's own path (sys.executable: a shim or a bare name says
 * little), or "" when it did not say. */
static int python_has_torch(const char *python, char *where, size_t size)
{
	int fds[2];
	int status;

	where[0] = '\0';
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	/* the read end only: the probe's stdout blocks as any program's */
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		/* a group of its own, for probe_output to kill whole: what
		 * a launcher or a shim started with it goes too; no terminal
		 * input is the probe's */
		setpgid(0, 0);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 2);
		}
		dup2(fds[1], 1);
		execlp(python, python, "-c",
		       "import importlib.util, sys; "
		       "sys.stdout.write(sys.executable); "
		       "sys.exit(importlib.util.find_spec('torch') is None)",
		       (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);  /* as the child does: whichever runs first */
	close(fds[1]);
	bool exited = probe_output(pid, fds[0], where, size, &status);
	close(fds[0]);
	if (!exited || !WIFEXITED(status) || WEXITSTATUS(status) > 1)
		return -1;
	return WEXITSTATUS(status) == 0;
}

/* The first interpreter option among -E, -I, -S (alone or bundled, as in
 * -IS), before the script, -m or -c; 0 when none. */
static char defeating_option(char **command)
{
	for (char **a = command + 1; *a && (*a)[0] == '-' && (*a)[1]; a++) {
		const char *arg = *a;
		if (!strcmp(arg, "--") || arg[1] == '-')
			break;
		for (const char *c = arg + 1; *c; c++) {
			if (*c == 'E' || *c == 'I' || *c == 'S')
				return *c;
			/* -c CMD, -m MOD, -W ARG, -X ARG: the rest is an argument */
			if (*c == 'c' || *c == 'm')
				return 0;
			if (*c == 'W' || *c == 'X') {
				if (!c[1])
					a++;
				break;
			}
		}
		if (!*a)
			break;
	}
	return 0;
}

/* What that option does to the bridge's injection. */
static const char *defeat_reason(char option)
{
	return option == 'S' ? "skips site and sitecustomize"
			     : "ignores PYTHONPATH";
}

/* "no ops recorded: WHO (WHERE) has no torch", and what to do. */
static const char *no_torch(const char *who, const char *where, char *buf,
			    size_t size)
{
	bool named = where[0] && strcmp(where, who) != 0;

	snprintf(buf, size, "no ops recorded: %s%s%s%s has no torch (the "
		 "python on PATH is not the one with torch? activate the "
		 "environment that has it, name its python, or install a "
		 "pinned torch there, e.g. pip install torch==2.13.0: a bare "
		 "`pip install torch` takes a CUDA build of several GB)", who,
		 named ? " (" : "", named ? where : "", named ? ")" : "");
	return buf;
}

/* Why a script that starts a Python (a launcher, a `#!` script) ran no
 * op: its Python's torch is the one question run can ask of it. */
static const char *script_no_ops_why(const char *prog, const char *python,
				     char *buf, size_t size)
{
	char who[PATH_MAX + 16], where[PATH_MAX];

	if (python_has_torch(python, where, sizeof where) != 0)
		return run_no_ops_message(prog, NULL, buf, size);
	snprintf(who, sizeof who, "%s's python", prog);
	return no_torch(who, where[0] ? where : python, buf, size);
}

const char *run_no_ops_why(char **command, const char *framework, char *buf,
			   size_t size)
{
	const char *prog = command[0];
	char python[PATH_MAX], where[PATH_MAX];

	if (framework || !python_of(prog, python, sizeof python))
		return run_no_ops_message(prog, framework, buf, size);
	if (!run_is_python(prog))
		return script_no_ops_why(prog, python, buf, size);
	const char *script = script_of(command);
	char option = defeating_option(command);
	/* a missing script first: without -E it would not have run either */
	if (script && access(script, F_OK) != 0)
		snprintf(buf, size, "no ops recorded: %s found no script %s "
			 "(no such file)", prog, script);
	else if (option)
		snprintf(buf, size, "no ops recorded: python -%c %s, so the "
			 "PyTorch bridge was not injected (drop -%c, or call "
			 "amptrace_torch.trace() in the program)", option,
			 defeat_reason(option), option);
	else if (python_has_torch(prog, where, sizeof where) == 0)
		no_torch(prog, where, buf, size);
	else
		snprintf(buf, size, "no ops recorded: %s never imported torch "
			 "(the program ran without it)", prog);
	return buf;
}

/* The bridge's directory (the one holding sitecustomize.py): next to
 * amptrace in the build tree (tracer/torch), or the installed one
 * (data_dir.c); AMPTRACE_TORCH_DIR overrides. */
static bool find_bridge(char *buf, size_t size)
{
	const char *env = getenv("AMPTRACE_TORCH_DIR");
	char probe[PATH_MAX + 64];

	if (env && *env) {
		snprintf(buf, size, "%s", env);
		snprintf(probe, sizeof probe, "%s/sitecustomize.py", buf);
		return access(probe, R_OK) == 0;
	}
	return data_dir_find("torch", "python", "sitecustomize.py", buf, size);
}

void run_python_prepare(char **command)
{
	char dir[PATH_MAX + 16];

	if (!run_python_program(command[0]))
		return;
	/* a script's arguments are its own, not the interpreter's */
	char option = run_is_python(command[0]) ? defeating_option(command) : 0;
	if (option) {
		fprintf(stderr, "amptrace run: python -%c %s, so the PyTorch "
			"bridge cannot be injected and nothing will be recorded "
			"(drop -%c, or call amptrace_torch.trace() in the "
			"program)\n", option, defeat_reason(option), option);
		return;
	}
	if (!find_bridge(dir, sizeof dir)) {
		fprintf(stderr, "amptrace run: this amptrace was built without "
			"the PyTorch bridge (meson -Dtorch=enabled needs torch's "
			"C++ headers: Debian's libtorch-dev), so nothing will be "
			"recorded from %s\n", command[0]);
		return;
	}
	const char *old = getenv("PYTHONPATH");
	size_t size = strlen(dir) + (old ? strlen(old) : 0) + 2;
	char *path = malloc(size);
	if (!path)
		return;
	snprintf(path, size, "%s%s%s", dir, old && *old ? ":" : "",
		 old && *old ? old : "");
	setenv("PYTHONPATH", path, 1);
	free(path);
}
