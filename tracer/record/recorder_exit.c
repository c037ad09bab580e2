/* The recorder's _exit and _Exit.  A process that ends with _exit (the
 * normal end of a forked child: fork() + _exit(), os.fork() +
 * os._exit()) runs no atexit handler and no destructor, so nothing
 * recorded that it exited, and its trace said it died (process-died).
 * The recorder is preloaded, so the program's calls reach these first:
 * each producer in the process marks its exit, then the process ends as
 * glibc's _exit ends it. */
#include "recorder.h"

#include <stdatomic.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The producers of this process: the recorder's own, and the PyTorch
 * bridge's copy in its extension module. */
#define EXIT_MARKS_MAX 4

static void (*exit_marks[EXIT_MARKS_MAX])(void);
static atomic_int exit_mark_count;

/* Each producer adds its exit mark once (producer.c finds this with
 * dlsym: it is exported for that). */
void amptrace_exit_mark_add(void (*mark)(void))
{
	int slot = atomic_fetch_add(&exit_mark_count, 1);

	if (slot < EXIT_MARKS_MAX)
		exit_marks[slot] = mark;
}

void _exit(int status)
{
	int count = atomic_load(&exit_mark_count);

	for (int i = 0; i < count && i < EXIT_MARKS_MAX; i++)
		if (exit_marks[i])
			exit_marks[i]();
	for (;;)
		syscall(SYS_exit_group, status);
}

void _Exit(int status)
{
	_exit(status);
}
