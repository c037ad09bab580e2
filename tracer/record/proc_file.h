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

#endif /* AMPTRACE_PROC_FILE_H */
