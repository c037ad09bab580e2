/* Growing a file past RLIMIT_FSIZE (ulimit -f) raises SIGXFSZ, which
 * kills the traced program by default: the recorder grows its files with
 * it blocked, so the growth fails with EFBIG instead, and takes back a
 * SIGXFSZ that it raised itself (one pending before stays the program's).
 * One model for every file the recorder grows (raw streams, aggregates,
 * its markers). */
#ifndef AMPTRACE_XFSZ_H
#define AMPTRACE_XFSZ_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>

struct xfsz_block {
	sigset_t old_mask;
	bool was_pending;
};

static inline void xfsz_block(struct xfsz_block *b)
{
	sigset_t xfsz, pending;

	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &xfsz, &b->old_mask);
	b->was_pending = sigpending(&pending) == 0 &&
			 sigismember(&pending, SIGXFSZ) == 1;
}

static inline void xfsz_unblock(struct xfsz_block *b)
{
	int saved = errno;
	sigset_t xfsz, pending;

	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	if (!b->was_pending && sigpending(&pending) == 0 &&
	    sigismember(&pending, SIGXFSZ) == 1) {
		struct timespec now = { 0, 0 };
		sigtimedwait(&xfsz, NULL, &now);
	}
	pthread_sigmask(SIG_SETMASK, &b->old_mask, NULL);
	errno = saved;
}

/* Reserves [offset, offset + size) of the file open on `fd`: the space
 * first, since a write into a page the file system cannot back (a full
 * tmpfs) is a SIGBUS.  Returns 0 or the error (ENOSPC, EFBIG). */
static inline int xfsz_reserve(int fd, off_t offset, off_t size)
{
	struct xfsz_block block;

	xfsz_block(&block);
	int err = posix_fallocate(fd, offset, size);
	xfsz_unblock(&block);
	return err;
}

#endif
