/* The raw directory of `amptrace run` (raw.h): where it goes, where the
 * raw files go on when it fills up, and that both go away whatever
 * happens to amptrace. */
#ifndef AMPTRACE_RAW_DIR_H
#define AMPTRACE_RAW_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A default candidate with less free space than this is passed over for
 * the next: a thread's stream begins with a 1 MiB chunk and reserves the
 * next one before it leaves the first. */
#define RAW_DIR_MIN_FREE (16ull << 20)

/* The guard's name (argv[0] and comm), which amptrace's main recognises. */
#define RAW_DIR_GUARD_NAME "amptrace-guard"

struct raw_dir {
	char path[4096];        /* where the recorder writes */
	char spill[4096];       /* where it goes on once path is full, or "" */
	int guard;              /* write end of the guard's pipe, or -1 */
	pid_t guard_pid;
};

/* Creates amptrace-XXXXXX under the directories given (--raw-dir, in
 * order: the first, then the second once the first is full), else under
 * the first two of $TMPDIR, /dev/shm and /tmp, on different file systems,
 * with RAW_DIR_MIN_FREE free (memory first unless TMPDIR says otherwise;
 * a TMPDIR passed over is said on stderr).  Directories that a run killed
 * with its guard left there are removed first.  -1 with a message on
 * stderr when it cannot. */
int raw_dir_create(struct raw_dir *d, const char *const *given, size_t ngiven);
/* Starts the guard: a small process in a session of its own, named
 * RAW_DIR_GUARD_NAME, that removes the directories once amptrace is gone,
 * however it ended (even SIGKILL), and records who owns them, so that a
 * later run removes them if amptrace and its guard die together (a
 * process-tree or cgroup kill).  The traced program's recorder stops
 * writing once amptrace is gone. */
void raw_dir_guard(struct raw_dir *d);
/* The guard process's main (amptrace's main hands it over when argv[0]
 * is RAW_DIR_GUARD_NAME). */
int raw_dir_guard_main(int argc, char **argv);
/* Why a recorder stopped (its errno: ENOSPC, EFBIG for ulimit -f), or 0
 * when none did. */
int raw_dir_stop_errno(const struct raw_dir *d);
/* Whether any raw file went on in the spill directory. */
bool raw_dir_spilled(const struct raw_dir *d);
/* Removes the directories and ends the guard. */
void raw_dir_remove(struct raw_dir *d);

#endif /* AMPTRACE_RAW_DIR_H */
