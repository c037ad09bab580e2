/* Outputs: never over an input, replaced whole where that is safe
 * (output_file.h). */
#include "output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The descriptor "-" writes to (output_file_stdout_is). */
static int stdout_fd = STDOUT_FILENO;

void output_file_stdout_is(int fd)
{
	stdout_fd = fd;
}

/* What `output` names: "-" is standard output wherever it leads. */
static int output_stat(const char *output, struct stat *st)
{
	if (strcmp(output, "-") == 0)
		return fstat(stdout_fd, st);
	return stat(output, st);
}

const char *output_is_input(const char *output, const char *const *inputs,
			    size_t count)
{
	struct stat out, in;

	/* not there yet, or no file (a device, a FIFO): nothing to destroy */
	if (output_stat(output, &out) != 0 || !S_ISREG(out.st_mode))
		return NULL;
	for (size_t i = 0; i < count; i++)
		if (inputs[i] && stat(inputs[i], &in) == 0 &&
		    in.st_dev == out.st_dev && in.st_ino == out.st_ino)
			return inputs[i];
	return NULL;
}

bool output_refuse_input(const char *who, const char *output,
			 const char *const *inputs, size_t count)
{
	const char *input = output_is_input(output, inputs, count);

	if (input)
		fprintf(stderr, "%s: %s is %s, an input: write to another "
			"file\n", who, output, input);
	return input != NULL;
}

static double monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Keeps errno: ENXIO is also a socket's or an absent device's. */
static bool is_fifo(const char *path)
{
	struct stat st;
	int err = errno;
	bool fifo = stat(path, &st) == 0 && S_ISFIFO(st.st_mode);

	errno = err;
	return fifo;
}

/* Opening a FIFO for writing blocks until a reader comes, for ever when
 * none does: without blocking, the open fails with ENXIO while no process
 * reads, so it is tried again until one does or the wait is over. */
static int open_waiting_for_reader(const char *path)
{
	const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC;
	const struct timespec pause = { 0, 20 * 1000 * 1000 };
	double deadline = monotonic_ms() + OUTPUT_FIFO_WAIT_MS;
	int fd;

	while ((fd = open(path, flags, 0666)) < 0 &&
	       (errno == EINTR || (errno == ENXIO && is_fifo(path))) &&
	       monotonic_ms() < deadline)
		nanosleep(&pause, NULL);
	if (fd < 0)
		return -1;
	/* writes block as a shell's `>` would: a slow reader is no error */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

int output_fd_open(const char *path)
{
	/* the descriptor itself, never its name reopened: that would
	 * truncate a file appended to (>>) and fail on a socket */
	if (strcmp(path, "-") == 0)
		return fcntl(stdout_fd, F_DUPFD_CLOEXEC, 3);
	return open_waiting_for_reader(path);
}

const char *output_strerror(int err)
{
	if (err == ENXIO)
		return "no process reads it (a FIFO without a reader?)";
	return strerror(err);
}

/* The file a regular one of its own (one name) replaces: `path`, or
 * what a symlink leads to (the link stays a link), and in *mode the
 * mode of the one there ((mode_t)-1: none yet); NULL with errno 0
 * when the output is written through ("-", a second hard link, a FIFO,
 * a device, a link leading to none of those or to nothing yet), with
 * errno when out of memory. */
static char *replaced_file(const char *path, mode_t *mode)
{
	struct stat st;

	errno = 0;
	*mode = (mode_t)-1;
	if (strcmp(path, "-") == 0)
		return NULL;
	if (lstat(path, &st) != 0) {
		if (errno != ENOENT) {
			errno = 0;
			return NULL;
		}
		return strdup(path);
	}
	bool link = S_ISLNK(st.st_mode);
	if ((link && stat(path, &st) != 0) || !S_ISREG(st.st_mode) ||
	    st.st_nlink != 1) {
		errno = 0;
		return NULL;
	}
	char *file = link ? realpath(path, NULL) : strdup(path);
	if (!file && link)
		errno = errno == ENOMEM ? ENOMEM : 0;
	*mode = st.st_mode & 07777;
	return file;
}

/* The temporaries being written, removed by a signal that ends the
 * command (Ctrl-C, kill, a closed terminal) before it does: a half-made
 * output is not left beside the real one.  Only where the signal's
 * action is the default (a command of its own, as `run`, keeps its
 * own handlers; an ignored signal stays ignored). */
enum { PENDING = 4 };
static char pending[PENDING][PATH_MAX];
static volatile sig_atomic_t pending_used[PENDING];
static const int ending_signals[] = { SIGINT, SIGTERM, SIGHUP };

static void remove_pending(int sig)
{
	for (int i = 0; i < PENDING; i++)
		if (pending_used[i])
			unlink(pending[i]);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void watch_ending_signals(void)
{
	static bool watched;

	for (size_t i = 0; !watched && i < sizeof ending_signals /
					   sizeof *ending_signals; i++) {
		struct sigaction now;
		if (sigaction(ending_signals[i], NULL, &now) == 0 &&
		    now.sa_handler == SIG_DFL) {
			struct sigaction on = { .sa_handler = remove_pending };
			sigfillset(&on.sa_mask);
			sigaction(ending_signals[i], &on, NULL);
		}
	}
	watched = true;
}

/* Notes o's temporary as pending (not when PENDING are: it is then left
 * to the command's own end). */
static void pending_add(const struct output_file *o)
{
	if (strlen(o->temporary) >= PATH_MAX)
		return;
	watch_ending_signals();
	for (int i = 0; i < PENDING; i++)
		if (!pending_used[i]) {
			strcpy(pending[i], o->temporary);
			/* the name whole before a handler may read it */
			atomic_signal_fence(memory_order_seq_cst);
			pending_used[i] = 1;
			return;
		}
}

/* o's temporary is renamed or removed: no longer pending. */
static void pending_remove(const struct output_file *o)
{
	for (int i = 0; o->temporary && i < PENDING; i++)
		if (pending_used[i] && !strcmp(pending[i], o->temporary))
			pending_used[i] = 0;
}

/* Frees what output_file_open took; keeps errno.  Returns -1. */
static int open_failed(struct output_file *o)
{
	int err = errno;

	free(o->path);
	free(o->temporary);
	*o = (struct output_file){ 0 };
	errno = err;
	return -1;
}

/* Opens `path` to be written through; o->path set, o->temporary NULL. */
static int open_through(struct output_file *o, const char *path)
{
	if (!o->path && !(o->path = strdup(path)))
		return -1;
	int fd = output_fd_open(path);
	o->f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!o->f && fd >= 0) {
		int err = errno;
		close(fd);
		errno = err;
	}
	return o->f ? 0 : open_failed(o);
}

int output_file_open(struct output_file *o, const char *path)
{
	mode_t mode;

	*o = (struct output_file){ .path = replaced_file(path, &mode) };
	if (!o->path)
		return errno ? -1 : open_through(o, path);
	size_t size = strlen(o->path) + 16;
	o->temporary = malloc(size);
	if (!o->temporary)
		return open_failed(o);
	snprintf(o->temporary, size, "%s.XXXXXX", o->path);
	int fd = mkostemp(o->temporary, O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS)) {
		/* a file that may be written in a directory that may not:
		 * written through, as a shell's `>` would */
		free(o->path);
		free(o->temporary);
		*o = (struct output_file){ 0 };
		return open_through(o, path);
	}
	if (fd < 0)
		return open_failed(o);
	pending_add(o);
	/* mkostemp made it 0600: the mode of the file it replaces, else
	 * the one open(O_CREAT, 0666) would give (reading the umask sets it:
	 * the commands run one thread) */
	mode_t mask = umask(0);
	umask(mask);
	fchmod(fd, mode != (mode_t)-1 ? mode : 0666 & ~mask);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int err = errno;
		close(fd);
		unlink(o->temporary);
		pending_remove(o);
		errno = err;
		return open_failed(o);
	}
	return 0;
}

int output_file_close(struct output_file *o)
{
	int status = 0, err = 0;

	if (!o->f)
		return -1;
	if (ferror(o->f)) {
		status = -1;
		err = errno ? errno : EIO;
	}
	if (fclose(o->f) != 0 && !status) {
		status = -1;
		err = errno;
	}
	o->f = NULL;
	if (o->temporary) {
		if (!status && rename(o->temporary, o->path) != 0) {
			status = -1;
			err = errno;
		}
		if (status)
			unlink(o->temporary);
		pending_remove(o);
		free(o->temporary);
	}
	free(o->path);
	*o = (struct output_file){ 0 };
	errno = err;
	return status;
}

void output_file_abandon(struct output_file *o)
{
	if (o->f)
		fclose(o->f);
	if (o->temporary)
		unlink(o->temporary);
	pending_remove(o);
	free(o->temporary);
	free(o->path);
	*o = (struct output_file){ 0 };
}
