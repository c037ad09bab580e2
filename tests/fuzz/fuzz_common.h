/* Shared by the libFuzzer harnesses (tests/fuzz/README.md): each input
 * goes into a file of a private scratch directory, and the harness calls
 * the same entry points the commands do (amptrace summary/check/diff/
 * merge, ampview, amptrace run's converter).  Standard output goes to
 * /dev/null: the commands print their tables there. */
#ifndef AMPTRACE_FUZZ_COMMON_H
#define AMPTRACE_FUZZ_COMMON_H

#include <fcntl.h>
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_dir[64];

static inline int fuzz_remove_entry(const char *path, const struct stat *st,
				    int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static inline void fuzz_cleanup(void)
{
	nftw(fuzz_dir, fuzz_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Once per process: the scratch directory (removed at exit), stdout to
 * /dev/null. */
static inline void fuzz_setup(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(fuzz_dir, sizeof fuzz_dir, "%.40s/ampfuzz-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(fuzz_dir))
		abort();
	atexit(fuzz_cleanup);
	int null = open("/dev/null", O_WRONLY);
	if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
		abort();
	close(null);
}

/* fuzz_dir/name, the path in buf. */
static inline const char *fuzz_path(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", fuzz_dir, name);
	return buf;
}

static inline void fuzz_write(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
}

#endif /* AMPTRACE_FUZZ_COMMON_H */
