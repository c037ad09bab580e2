/* Reading /proc about one process (proc_file.h). */
#include "proc_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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

/* A zombie is dead: its parent has not reaped it yet (a killed guard
 * waits for init). */
unsigned long long proc_start_time(pid_t pid)
{
	char text[1024];
	unsigned long long start = 0;

	if (!proc_file_read(pid, "stat", text, sizeof text))
		return 0;
	/* the name, in parentheses, may hold spaces: count after it */
	char *field = strrchr(text, ')');
	if (field && (field[1] != ' ' || field[2] == 'Z' || field[2] == 'X'))
		return 0;
	for (int i = 2; field && i < 22; i++)
		field = strchr(field + 1, ' ');
	if (field)
		sscanf(field + 1, "%llu", &start);
	return start;
}
