/* The raw directory of `amptrace run`: its choice, and its removal by
 * amptrace or, when amptrace dies without doing it, by a guard process
 * (raw_dir.h). */
#include "raw_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

static bool writable_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
	       access(path, W_OK | X_OK) == 0;
}

static bool has_room(const char *path)
{
	struct statvfs vfs;

	return statvfs(path, &vfs) == 0 &&
	       (unsigned long long)vfs.f_bavail * vfs.f_frsize >=
		       RAW_DIR_MIN_FREE;
}

/* Memory (/dev/shm) unless told otherwise or too small: the raw files are
 * a buffer between the recorder and the converter, given back chunk by
 * chunk as they are converted. */
static const char *choose_base(const char *option)
{
	const char *tmp = getenv("TMPDIR");

	if (option)
		return option;
	if (tmp && *tmp)
		return tmp;
	if (writable_dir("/dev/shm") && has_room("/dev/shm"))
		return "/dev/shm";
	return "/tmp";
}

int raw_dir_create(struct raw_dir *d, const char *option)
{
	const char *base = choose_base(option);

	d->guard = -1;
	d->guard_pid = 0;
	if (!writable_dir(base)) {
		fprintf(stderr, "amptrace run: the raw directory %s%s is not a "
			"writable directory\n", base,
			option ? " (--raw-dir)" : base == getenv("TMPDIR")
							  ? " (TMPDIR)" : "");
		return -1;
	}
	if ((size_t)snprintf(d->path, sizeof d->path, "%s/amptrace-XXXXXX",
			     base) >= sizeof d->path || !mkdtemp(d->path)) {
		fprintf(stderr, "amptrace run: cannot create a directory in "
			"%s: %s\n", base, strerror(errno));
		return -1;
	}
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void raw_dir_guard(struct raw_dir *d)
{
	int pipe_fds[2];

	if (pipe2(pipe_fds, O_CLOEXEC) != 0)
		return; /* amptrace still removes it when it ends normally */
	pid_t pid = fork();
	if (pid < 0) {
		close(pipe_fds[0]);
		close(pipe_fds[1]);
		return;
	}
	if (pid == 0) {
		/* Its own session: signals to amptrace's process group (^C,
		 * kill -- -PGID) do not reach it; it ends when the pipe does. */
		setsid();
		close(pipe_fds[1]);
		int null = open("/dev/null", O_RDWR);
		for (int fd = 0; fd < 3 && null >= 0; fd++)
			dup2(null, fd);
		char byte;
		while (read(pipe_fds[0], &byte, 1) < 0 && errno == EINTR)
			;
		nftw(d->path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		_exit(0);
	}
	close(pipe_fds[0]);
	d->guard = pipe_fds[1];
	d->guard_pid = pid;
}

bool raw_dir_ran_out(const struct raw_dir *d)
{
	DIR *dir = opendir(d->path);
	struct dirent *e;
	bool stopped = false;
	char path[sizeof d->path + 2 * 256];

	if (!dir)
		return false;
	while (!stopped && (e = readdir(dir)) != NULL) {
		if (e->d_name[0] != 'p')
			continue;
		snprintf(path, sizeof path, "%s/%s/stopped", d->path, e->d_name);
		stopped = access(path, F_OK) == 0;
	}
	closedir(dir);
	return stopped;
}

void raw_dir_remove(struct raw_dir *d)
{
	nftw(d->path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (d->guard >= 0) {
		close(d->guard);
		d->guard = -1;
		while (waitpid(d->guard_pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
}
