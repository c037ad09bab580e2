/* A path as one word of a shell command (shell_word.h). */
#include "shell_word.h"

#include <stdio.h>
#include <string.h>

void shell_word(char *buf, size_t size, const char *path)
{
	size_t used = 0;

	if (path[0] && strspn(path, "abcdefghijklmnopqrstuvwxyz"
			      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			      "._/+-,:@%=") == strlen(path)) {
		snprintf(buf, size, "%s", path);
		return;
	}
	buf[used++] = '\'';
	for (const char *c = path; *c && used + 6 < size; c++) {
		if (*c == '\'') { /* ends the quotes, an escaped ', again */
			memcpy(buf + used, "'\\''", 4);
			used += 4;
		} else {
			buf[used++] = *c;
		}
	}
	buf[used++] = '\'';
	buf[used] = '\0';
}
