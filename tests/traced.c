/* Running a program under `amptrace run` for the tests (traced.h). */
#include "traced.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef AMPTRACE_PATH
#error "AMPTRACE_PATH must be defined"
#endif

/* In the child: `path` (NULL: as it is) as file descriptor `fd`. */
static void redirect(const char *path, int fd)
{
	if (!path)
		return;
	int f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (f < 0 || dup2(f, fd) < 0)
		_exit(126);
	close(f);
}

pid_t traced_start(char *const argv[], const char *out, const char *err,
		   const char *const env[])
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	redirect(out, STDOUT_FILENO);
	redirect(err, STDERR_FILENO);
	for (size_t i = 0; env && env[i]; i++)
		putenv((char *)env[i]);
	execv(argv[0], argv);
	_exit(127);
}

int traced_finish(pid_t pid, int *signal)
{
	int status;

	if (signal)
		*signal = 0;
	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (!WIFSIGNALED(status))
		return WEXITSTATUS(status);
	if (signal)
		*signal = WTERMSIG(status);
	return 128 + WTERMSIG(status);
}

const char *const *traced_command(const char *prog, const char *args,
				  char *buf, size_t size, const char **words,
				  size_t max)
{
	size_t n = 0;
	char *rest;

	words[n++] = prog;
	snprintf(buf, size, "%s", args ? args : "");
	for (char *w = strtok_r(buf, " ", &rest); w && n < max - 1;
	     w = strtok_r(NULL, " ", &rest))
		words[n++] = w;
	words[n] = NULL;
	return words;
}

int traced_run(const struct traced *how, const char *const command[])
{
	size_t n = 0, k = 0;

	for (size_t i = 0; how->options && how->options[i]; i++)
		n++;
	for (size_t i = 0; command[i]; i++)
		n++;
	const char **argv = calloc(n + 7, sizeof *argv);
	if (!argv)
		return -1;
	argv[k++] = AMPTRACE_PATH;
	argv[k++] = "run";
	argv[k++] = "-q";
	argv[k++] = "-o";
	argv[k++] = how->trace;
	for (size_t i = 0; how->options && how->options[i]; i++)
		argv[k++] = how->options[i];
	argv[k++] = "--";
	for (size_t i = 0; command[i]; i++)
		argv[k++] = command[i];
	int status = traced_finish(traced_start((char *const *)argv, how->out,
						how->err, how->env), NULL);
	free(argv);
	return status;
}

int traced_load(const struct traced *how, const char *const command[],
		struct trace *trace, char *why, size_t size)
{
	struct trace_error err;
	int status = traced_run(how, command);

	if (status != 0) {
		snprintf(why, size, "amptrace run -- %s: exit status %d",
			 command[0], status);
		return -1;
	}
	if (trace_load(how->trace, trace, &err) != 0) {
		snprintf(why, size, "%s", err.message);
		return -1;
	}
	return 0;
}
