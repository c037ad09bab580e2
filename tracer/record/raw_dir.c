/* The raw directory of `amptrace run`: its choice, the directory it
 * spills into, and their removal by amptrace, by a guard process when
 * amptrace dies without doing it, or by a later run when both died
 * (raw_dir.h). */
#include "raw_dir.h"

#include "proc_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define RAW_DIR_PREFIX "amptrace-"
#define OWNER_FILE "owner"

/* ----------------------------------------------------------- removal */

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void remove_tree(const char *path)
{
	if (*path)
		nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* --------------------------------------------------------- ownership */

/* Pids mean something only in their own namespace: a directory shared
 * between containers is judged by the one that made it. */
static bool pid_namespace(char *out, size_t size)
{
	ssize_t n = readlink("/proc/self/ns/pid", out, size - 1);

	if (n <= 0)
		return false;
	out[n] = '\0';
	return true;
}

static bool same_process_alive(long pid, unsigned long long start)
{
	return pid > 0 && start && proc_start_time((pid_t)pid) == start;
}

/* <dir>/owner: amptrace's and its guard's pids and start times.  Without
 * /proc there is none, and the directory is never taken for stale. */
static void write_owner(const char *dir, pid_t guard)
{
	char path[PATH_MAX + 16], ns[64];
	unsigned long long own_start = proc_start_time(getpid());

	if (!*dir || !own_start || !pid_namespace(ns, sizeof ns))
		return;
	snprintf(path, sizeof path, "%s/%s", dir, OWNER_FILE);
	FILE *f = fopen(path, "wxe");
	if (!f)
		return;
	fprintf(f, "%s %ld %llu %ld %llu\n", ns, (long)getpid(), own_start,
		(long)guard, guard > 0 ? proc_start_time(guard) : 0ull);
	fclose(f);
}

static bool owners_gone(const char *dir)
{
	char path[PATH_MAX + 16], ns[64], own_ns[64];
	long pid, guard;
	unsigned long long start, guard_start;

	snprintf(path, sizeof path, "%s/%s", dir, OWNER_FILE);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false; /* being made, or not amptrace's */
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return false;
	}
	int fields = fscanf(f, "%63s %ld %llu %ld %llu", ns, &pid, &start,
			    &guard, &guard_start);
	fclose(f);
	return fields == 5 && pid_namespace(own_ns, sizeof own_ns) &&
	       !strcmp(ns, own_ns) && !same_process_alive(pid, start) &&
	       !same_process_alive(guard, guard_start);
}

/* Removes the amptrace-XXXXXX directories under `base` that belong to
 * this user and whose amptrace and guard are both gone (killed together:
 * a process-tree or cgroup kill, a cancelled CI job), so that memory is
 * not held forever. */
static void sweep_stale(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *e;
	char path[PATH_MAX];
	struct stat st;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, RAW_DIR_PREFIX, strlen(RAW_DIR_PREFIX)) ||
		    strlen(e->d_name) != strlen(RAW_DIR_PREFIX) + 6)
			continue;
		if ((size_t)snprintf(path, sizeof path, "%s/%s", base,
				     e->d_name) >= sizeof path)
			continue;
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_uid == geteuid() && owners_gone(path))
			remove_tree(path);
	}
	closedir(d);
}

/* ------------------------------------------------------------ choice */

static bool writable_dir(const char *path, struct stat *st)
{
	return stat(path, st) == 0 && S_ISDIR(st->st_mode) &&
	       access(path, W_OK | X_OK) == 0;
}

static unsigned long long free_bytes(const char *path)
{
	struct statvfs vfs;

	if (statvfs(path, &vfs) != 0)
		return 0;
	return (unsigned long long)vfs.f_bavail * vfs.f_frsize;
}

/* The defaults: $TMPDIR when set, memory (/dev/shm: the raw files are a
 * buffer, given back chunk by chunk as they are converted), then disk.
 * The first two with room, on different file systems; a full first one
 * spills into the second.  With none roomy enough, the roomiest alone. */
static void choose_defaults(const char **primary, const char **spill)
{
	const char *tmp = getenv("TMPDIR");
	const char *candidates[] = { tmp && *tmp ? tmp : NULL, "/dev/shm",
				     "/tmp" };
	const char *roomiest = NULL;
	unsigned long long most = 0;
	dev_t primary_dev = 0;
	struct stat st;

	*primary = *spill = NULL;
	for (size_t i = 0; i < 3 && !*spill; i++) {
		if (!candidates[i] || !writable_dir(candidates[i], &st))
			continue;
		unsigned long long room = free_bytes(candidates[i]);
		if (room > most || !roomiest) {
			roomiest = candidates[i];
			most = room;
		}
		if (room < RAW_DIR_MIN_FREE || (*primary && st.st_dev == primary_dev))
			continue;
		if (!*primary) {
			*primary = candidates[i];
			primary_dev = st.st_dev;
		} else {
			*spill = candidates[i];
		}
	}
	if (!*primary)
		*primary = roomiest ? roomiest : "/tmp";
	if (tmp && *tmp && *primary != tmp)
		fprintf(stderr, "amptrace run: TMPDIR=%s %s: the raw files go "
			"to %s\n", tmp,
			writable_dir(tmp, &st) ? "has too little room"
					       : "is not a writable directory",
			*primary);
}

static int make_dir(char *out, size_t size, const char *base,
		    const char *origin)
{
	struct stat st;

	if (!writable_dir(base, &st)) {
		fprintf(stderr, "amptrace run: the raw directory %s%s is not a "
			"writable directory\n", base, origin);
		return -1;
	}
	sweep_stale(base);
	if ((size_t)snprintf(out, size, "%s/" RAW_DIR_PREFIX "XXXXXX",
			     base) >= size || !mkdtemp(out)) {
		fprintf(stderr, "amptrace run: cannot create a directory in "
			"%s: %s\n", base, strerror(errno));
		return -1;
	}
	return 0;
}

int raw_dir_create(struct raw_dir *d, const char *const *given, size_t ngiven)
{
	const char *primary = ngiven ? given[0] : NULL;
	const char *spill = ngiven > 1 ? given[1] : NULL;

	d->guard = -1;
	d->guard_pid = 0;
	d->path[0] = d->spill[0] = '\0';
	if (!ngiven)
		choose_defaults(&primary, &spill);
	if (make_dir(d->path, sizeof d->path, primary,
		     ngiven ? " (--raw-dir)" : "") != 0)
		return -1;
	if (spill && make_dir(d->spill, sizeof d->spill, spill,
			      ngiven ? " (--raw-dir)" : "") != 0) {
		remove_tree(d->path);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------- guard */

/* Waits for the end of amptrace (the pipe's), then removes the
 * directories. */
static int guard_wait(int pipe_fd, char **dirs, int count)
{
	char byte;

	while (read(pipe_fd, &byte, 1) < 0 && errno == EINTR)
		;
	for (int i = 0; i < count; i++)
		remove_tree(dirs[i]);
	return 0;
}

int raw_dir_guard_main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	/* exec named it after the file it ran, /proc/self/exe */
	prctl(PR_SET_NAME, RAW_DIR_GUARD_NAME);
	return guard_wait(atoi(argv[1]), argv + 2, argc - 2);
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
		 * kill -- -PGID) do not reach it; it ends when the pipe does.
		 * Its own name: ps and pgrep tell it from amptrace. */
		setsid();
		close(pipe_fds[1]);
		int null = open("/dev/null", O_RDWR);
		for (int fd = 0; fd < 3 && null >= 0; fd++)
			dup2(null, fd);
		prctl(PR_SET_NAME, RAW_DIR_GUARD_NAME);
		char fd_arg[16];
		char *dirs[] = { d->path, d->spill };
		snprintf(fd_arg, sizeof fd_arg, "%d", pipe_fds[0]);
		fcntl(pipe_fds[0], F_SETFD, 0);
		execl("/proc/self/exe", RAW_DIR_GUARD_NAME, fd_arg, d->path,
		      *d->spill ? d->spill : (char *)NULL, (char *)NULL);
		_exit(guard_wait(pipe_fds[0], dirs, *d->spill ? 2 : 1));
	}
	close(pipe_fds[0]);
	d->guard = pipe_fds[1];
	d->guard_pid = pid;
	write_owner(d->path, pid);
	write_owner(d->spill, pid);
}

/* -------------------------------------------------------------- ends */

int raw_dir_stop_errno(const struct raw_dir *d)
{
	DIR *dir = opendir(d->path);
	struct dirent *e;
	int err = 0;
	char path[sizeof d->path + 2 * 256];

	if (!dir)
		return 0;
	while (!err && (e = readdir(dir)) != NULL) {
		if (e->d_name[0] != 'p')
			continue;
		snprintf(path, sizeof path, "%s/%s/stopped", d->path, e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		/* "<errno> <text>"; empty when even that found no room */
		if (fscanf(f, "%d", &err) != 1 || err <= 0)
			err = ENOSPC;
		fclose(f);
	}
	closedir(dir);
	return err;
}

bool raw_dir_spilled(const struct raw_dir *d)
{
	DIR *dir = *d->spill ? opendir(d->spill) : NULL;
	struct dirent *e;
	bool spilled = false;

	if (!dir)
		return false;
	while (!spilled && (e = readdir(dir)) != NULL)
		spilled = e->d_name[0] == 'p';
	closedir(dir);
	return spilled;
}

void raw_dir_remove(struct raw_dir *d)
{
	remove_tree(d->path);
	remove_tree(d->spill);
	if (d->guard >= 0) {
		close(d->guard);
		d->guard = -1;
		while (waitpid(d->guard_pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
}
