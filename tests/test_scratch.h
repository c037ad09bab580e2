/* A test program's scratch directory, in $TMPDIR: main makes it before
 * the tests run and removes it, with all it holds, after them.  A failing
 * check ends its test (a forked child) before the test's own unlink, so a
 * file a test writes is left to the directory's removal, which the parent
 * always reaches. */
#ifndef AMP_TEST_SCRATCH_H
#define AMP_TEST_SCRATCH_H

#include "test_dirs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static char scratch_dir[4096];

/* Makes the directory, $TMPDIR/amptrace-PROGRAM-XXXXXX; exits when it
 * cannot (no test could write its files). */
static inline void scratch_make(const char *program)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(scratch_dir, sizeof scratch_dir, "%s/amptrace-%s-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp", program);
	if (!mkdtemp(scratch_dir)) {
		perror(scratch_dir);
		exit(EXIT_FAILURE);
	}
}

/* NAME in the directory (a static buffer, as a test uses one at a time). */
static inline const char *scratch_path(const char *name)
{
	static char path[4096 + 256];

	snprintf(path, sizeof path, "%s/%s", scratch_dir, name);
	return path;
}

/* A fresh directory PREFIX-XXXXXX in the scratch directory, made in
 * `dir` (of `size` bytes); NULL when it cannot be made or named. */
static inline char *scratch_mkdtemp(char *dir, size_t size, const char *prefix)
{
	int length = snprintf(dir, size, "%s/%s-XXXXXX", scratch_dir, prefix);

	return length >= 0 && (size_t)length < size ? mkdtemp(dir) : NULL;
}

/* 0 when the directory and all it held are gone. */
static inline int scratch_remove(void)
{
	return remove_tree(scratch_dir);
}

#endif
