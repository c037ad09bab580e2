/* The raw directory of `amptrace run` (raw.h): where it goes, and that it
 * goes away whatever happens to amptrace. */
#ifndef AMPTRACE_RAW_DIR_H
#define AMPTRACE_RAW_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Below this much free space /dev/shm is passed over (Docker gives it
 * 64 MiB): the raw files hold up to two 1 MiB chunks per thread. */
#define RAW_DIR_MIN_FREE (128ull << 20)

struct raw_dir {
	char path[4096];
	int guard;              /* write end of the guard's pipe, or -1 */
	pid_t guard_pid;
};

/* Creates amptrace-XXXXXX under `base` (--raw-dir), else $TMPDIR, else
 * /dev/shm when it has RAW_DIR_MIN_FREE free, else /tmp.  -1 with a
 * message on stderr when it cannot. */
int raw_dir_create(struct raw_dir *d, const char *base);
/* Starts the guard: a small process in a session of its own that removes
 * the directory once amptrace is gone, however it ended (even SIGKILL).
 * The traced program's recorder stops writing once amptrace is gone. */
void raw_dir_guard(struct raw_dir *d);
/* Whether a recorder stopped for want of room (a p<pid>/stopped file). */
bool raw_dir_ran_out(const struct raw_dir *d);
/* Removes the directory and ends the guard. */
void raw_dir_remove(struct raw_dir *d);

#endif /* AMPTRACE_RAW_DIR_H */
