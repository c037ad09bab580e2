/* Reading /proc about one process (proc_file.h). */
#include "proc_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

bool proc_file_read(pid_t pid, const char *name, char *text, size_t size)
{
	char path[64];

	snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, text, size - 1);
	close(fd);
	if (n <= 0)
		return false;
	text[n] = '\0';
	return true;
}
