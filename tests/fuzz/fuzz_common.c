/* What every harness shares: the process's scratch directory (removed at
 * exit, standard output to /dev/null) and the libFuzzer start-up. */
#include "fuzz_common.h"

static char fuzz_dir[PATH_MAX];

static int fuzz_remove_entry(const char *path, const struct stat *st,
			     int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void fuzz_remove_tree(const char *path)
{
	nftw(path, fuzz_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void fuzz_cleanup(void)
{
	fuzz_remove_tree(fuzz_dir);
}

/* Once per process: the scratch directory (removed at exit), stdout to
 * /dev/null. */
static void fuzz_setup(void)
{
	const char *tmp = getenv("TMPDIR");

	int n = snprintf(fuzz_dir, sizeof fuzz_dir, "%s/ampfuzz-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
	if (n < 0 || (size_t)n >= sizeof fuzz_dir || !mkdtemp(fuzz_dir))
		abort();
	atexit(fuzz_cleanup);
	int null = open("/dev/null", O_WRONLY);
	if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
		abort();
	close(null);
}

const char *fuzz_path(char *buf, size_t size, const char *name)
{
	if (!fuzz_dir[0])
		abort(); /* before fuzz_setup: never write outside it */
	snprintf(buf, size, "%s/%s", fuzz_dir, name);
	return buf;
}

void fuzz_write(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_setup();
	return 0;
}
