/* Where ampview is, for `amptrace run --svg` and `amptrace report`
 * (ampview_path.h). */
#include "ampview_path.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *find_ampview(char *buf, size_t size)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(buf, size, "%s/ampview", exe);
			if (access(buf, X_OK) == 0)
				return buf;
			snprintf(buf, size, "%s/../viewer/ampview", exe);
			if (access(buf, X_OK) == 0)
				return buf;
		}
	}
	const char *path = getenv("PATH");
	while (path && *path) {
		const char *end = strchrnul(path, ':');
		snprintf(buf, size, "%.*s/ampview", (int)(end - path), path);
		if (end > path && access(buf, X_OK) == 0)
			return buf;
		path = *end ? end + 1 : end;
	}
	return NULL;
}
