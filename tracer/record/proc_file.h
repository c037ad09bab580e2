/* A small file of /proc about one process (its stat, its comm), read
 * whole in one read(): the kernel writes these at once. */
#ifndef AMPTRACE_PROC_FILE_H
#define AMPTRACE_PROC_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* /proc/PID/NAME into text (NUL-terminated, at most size - 1 bytes);
 * false when it cannot be read or is empty (the process is gone). */
bool proc_file_read(pid_t pid, const char *name, char *text, size_t size);

/* A process's start time (clock ticks after boot, /proc/PID/stat's 22nd
 * field): with the pid, it names one process even after the pid is
 * reused, and it stays the same across exec().  0 when the process is
 * gone, a zombie, or /proc cannot be read. */
unsigned long long proc_start_time(pid_t pid);

#endif /* AMPTRACE_PROC_FILE_H */
