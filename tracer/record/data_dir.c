/* Where amptrace finds what it runs with, relative to its own executable
 * first: a tree installed by `meson install --destdir` and moved, or a
 * pip environment (wheels are relocatable), has no fixed absolute path.
 * The build tree mirrors neither layout exactly, so it is tried first
 * with names of its own. */
#include "data_dir.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef AMPTRACE_DATA_RELDIR
#define AMPTRACE_DATA_RELDIR "../lib/amptrace"
#endif
#ifndef AMPTRACE_RECORDER_INSTALL_DIR
#define AMPTRACE_RECORDER_INSTALL_DIR "/usr/local/lib/amptrace"
#endif

/* The directory of the running executable, symlinks resolved. */
static bool exe_dir(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);

	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (!slash)
		return false;
	*slash = '\0';
	return true;
}

/* buf = a/b (b may be empty); true when buf/file is readable. */
static bool holds(char *buf, size_t size, const char *a, const char *b,
		  const char *file)
{
	char probe[PATH_MAX * 2 + 64];

	int n = snprintf(buf, size, "%s%s%s", a, *b ? "/" : "", b);
	if (n < 0 || (size_t)n >= size)
		return false;
	snprintf(probe, sizeof probe, "%s/%s", buf, file);
	return access(probe, R_OK) == 0;
}

bool data_dir_find(const char *build_subdir, const char *install_subdir,
		   const char *file, char *buf, size_t size)
{
	char exe[PATH_MAX], installed[PATH_MAX + 256];

	if (exe_dir(exe, sizeof exe)) {
		if (holds(buf, size, exe, build_subdir, file))
			return true;
		snprintf(installed, sizeof installed, "%s/%s", exe,
			 AMPTRACE_DATA_RELDIR);
		if (holds(buf, size, installed, install_subdir, file))
			return true;
	}
	return *AMPTRACE_RECORDER_INSTALL_DIR &&
	       holds(buf, size, AMPTRACE_RECORDER_INSTALL_DIR, install_subdir,
		     file);
}
