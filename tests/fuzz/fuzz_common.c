/* What every harness shares: the process's scratch directory (removed at
 * exit), output that goes nowhere, the real trace read once, and the
 * libFuzzer start-up. */
#include "fuzz_common.h"

#include "trace.h"
#include "trace_scan.h"

#include <sys/stat.h>

static char fuzz_dir[PATH_MAX];
static char *good_text;
static size_t good_len;
static struct trace good;

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

static ssize_t discard(void *cookie, const char *buf, size_t size)
{
	(void)cookie;
	(void)buf;
	return (ssize_t)size;
}

/* The tables the commands print are formatted (that code is fuzzed too)
 * and dropped, with no system call: stdout is a stream to nowhere.  The
 * descriptor stays /dev/null for what writes it directly (merge -o -). */
static void output_nowhere(void)
{
	int null = open("/dev/null", O_WRONLY);
	cookie_io_functions_t nowhere = { .write = discard };
	FILE *f = fopencookie(NULL, "w", nowhere);

	if (null < 0 || dup2(null, STDOUT_FILENO) < 0 || !f)
		abort();
	close(null);
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	stdout = f;
}

/* Once per process: the scratch directory (removed at exit; memory when
 * /dev/shm is there), output nowhere, the real trace loaded. */
static void fuzz_setup(void)
{
	const char *tmp = getenv("TMPDIR");
	struct stat st;

	if (!tmp || !*tmp)
		tmp = stat("/dev/shm", &st) == 0 && access("/dev/shm", W_OK) == 0
			      ? "/dev/shm" : "/tmp";
	int n = snprintf(fuzz_dir, sizeof fuzz_dir, "%s/ampfuzz-XXXXXX", tmp);
	if (n < 0 || (size_t)n >= sizeof fuzz_dir || !mkdtemp(fuzz_dir))
		abort();
	atexit(fuzz_cleanup);
	output_nowhere();
	struct trace_error err;
	good_text = trace_read_file(FUZZ_GOOD_TRACE, &good_len, &err);
	if (!good_text ||
	    trace_load_text(FUZZ_GOOD_TRACE, good_text, good_len, &good, &err))
		abort();
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

char *fuzz_text(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	return text;
}

const char *fuzz_good_text(size_t *len)
{
	*len = good_len;
	return good_text;
}

const struct trace *fuzz_good_trace(void)
{
	return &good;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_setup();
	return 0;
}
