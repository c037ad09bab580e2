/* `amptrace run -- python3 train.py`: PyTorch programs are recorded by
 * the bridge (tracer/torch/), which Python loads at start-up from the
 * sitecustomize.py this puts first on PYTHONPATH.  The interpreter is the
 * one the user named; it finds torch (or says it has none) itself.
 *
 * Interpreter options that make Python ignore PYTHONPATH or skip site
 * (-E, -I, -S) defeat the injection: that is said here, before the
 * program runs, rather than leaving an empty trace unexplained. */
#include "run_python.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef AMPTRACE_RECORDER_INSTALL_DIR
#define AMPTRACE_RECORDER_INSTALL_DIR "/usr/local/lib/amptrace"
#endif

static bool is_interpreter(const char *path)
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

/* A Python script run as a program (torchrun, accelerate launch, a
 * console script): its #! line names a Python interpreter, itself or
 * through env.  `prog` is looked up on PATH as exec would. */
static bool is_python_script(const char *prog)
{
	char path[PATH_MAX], line[256];
	const char *found = strchr(prog, '/') ? prog : NULL;
	const char *dirs = getenv("PATH");

	for (const char *d = dirs; !found && d && *d;) {
		size_t n = strcspn(d, ":");
		snprintf(path, sizeof path, "%.*s/%s", (int)n, n ? d : ".", prog);
		if (access(path, X_OK) == 0)
			found = path;
		d += n + (d[n] == ':');
	}
	FILE *f = found ? fopen(found, "r") : NULL;
	bool python = false;
	if (f && fgets(line, sizeof line, f) && !strncmp(line, "#!", 2)) {
		char *rest, *interpreter = strtok_r(line + 2, " \t\r\n", &rest);
		const char *base = interpreter ? strrchr(interpreter, '/') : NULL;
		if (base && !strcmp(base, "/env"))
			interpreter = strtok_r(NULL, " \t\r\n", &rest);
		python = interpreter && is_interpreter(interpreter);
	}
	if (f)
		fclose(f);
	return python;
}

static bool is_python(const char *prog)
{
	return is_interpreter(prog) || is_python_script(prog);
}

const char *run_no_ops_message(const char *prog, char *buf, size_t size)
{
	if (!prog)
		snprintf(buf, size, "no ops recorded: is the program linked to "
			 "libamp / importing torch?");
	else if (is_python(prog))
		snprintf(buf, size, "no ops recorded: is %s importing torch?",
			 prog);
	else
		snprintf(buf, size, "no ops recorded: is %s linked to libamp "
			 "(dynamically)?", prog);
	return buf;
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

/* The bridge's directory: next to amptrace in the build tree
 * (tracer/torch), or the installed one; AMPTRACE_TORCH_DIR overrides. */
static bool find_bridge(char *buf, size_t size)
{
	const char *env = getenv("AMPTRACE_TORCH_DIR");
	char exe[PATH_MAX], probe[PATH_MAX + 64];

	if (size < PATH_MAX + 16)
		return false;

	if (env && *env) {
		snprintf(buf, size, "%s", env);
		snprintf(probe, sizeof probe, "%s/sitecustomize.py", buf);
		return access(probe, R_OK) == 0;
	}
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(buf, size, "%.*s/torch", PATH_MAX - 1, exe);
			snprintf(probe, sizeof probe, "%s/sitecustomize.py", buf);
			if (access(probe, R_OK) == 0)
				return true;
		}
	}
	snprintf(buf, size, "%s/python", AMPTRACE_RECORDER_INSTALL_DIR);
	snprintf(probe, sizeof probe, "%s/sitecustomize.py", buf);
	return access(probe, R_OK) == 0;
}

void run_python_prepare(char **command)
{
	char dir[PATH_MAX + 16];

	if (!is_python(command[0]))
		return;
	char option = is_interpreter(command[0]) ? defeating_option(command)
						 : 0;
	if (option) {
		fprintf(stderr, "amptrace run: python -%c %s, so the PyTorch "
			"bridge cannot be injected and nothing will be recorded "
			"(drop -%c, or call amptrace_torch.trace() in the "
			"program)\n", option,
			option == 'S' ? "skips site and sitecustomize"
				      : "ignores PYTHONPATH",
			option);
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
	setenv("AMPTRACE_TORCH_NOTE", "1", 1);
}
