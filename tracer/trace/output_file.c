/* Outputs: never over an input, replaced whole where that is safe
 * (output_file.h). */
#include "output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *output_is_input(const char *output, const char *const *inputs,
			    size_t count)
{
	struct stat out, in;

	if (stat(output, &out) != 0)
		return NULL; /* not there yet: nothing to destroy */
	for (size_t i = 0; i < count; i++)
		if (inputs[i] && stat(inputs[i], &in) == 0 &&
		    in.st_dev == out.st_dev && in.st_ino == out.st_ino)
			return inputs[i];
	return NULL;
}

bool output_refuse_input(const char *who, const char *output,
			 const char *const *inputs, size_t count)
{
	const char *input = output_is_input(output, inputs, count);

	if (input)
		fprintf(stderr, "%s: %s is %s, an input: write to another "
			"file\n", who, output, input);
	return input != NULL;
}

/* A file that renaming over would leave as it was, only newer. */
static bool replaceable(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return errno == ENOENT;
	return S_ISREG(st.st_mode) && st.st_nlink == 1;
}

/* Frees what output_file_open took; keeps errno.  Returns -1. */
static int open_failed(struct output_file *o)
{
	int err = errno;

	free(o->path);
	free(o->temporary);
	*o = (struct output_file){ 0 };
	errno = err;
	return -1;
}

int output_file_open(struct output_file *o, const char *path)
{
	*o = (struct output_file){ .path = strdup(path) };
	if (!o->path)
		return -1;
	if (!replaceable(path)) {
		o->f = fopen(path, "we");
		return o->f ? 0 : open_failed(o);
	}
	size_t size = strlen(path) + 16;
	o->temporary = malloc(size);
	if (!o->temporary)
		return open_failed(o);
	snprintf(o->temporary, size, "%s.XXXXXX", path);
	int fd = mkostemp(o->temporary, O_CLOEXEC);
	if (fd < 0)
		return open_failed(o);
	/* mkostemp made it 0600: the mode open(O_CREAT, 0666) would give
	 * (reading the umask sets it: the commands run one thread) */
	mode_t mask = umask(0);
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int err = errno;
		close(fd);
		unlink(o->temporary);
		errno = err;
		return open_failed(o);
	}
	return 0;
}

int output_file_close(struct output_file *o)
{
	int status = 0, err = 0;

	if (!o->f)
		return -1;
	if (ferror(o->f)) {
		status = -1;
		err = errno ? errno : EIO;
	}
	if (fclose(o->f) != 0 && !status) {
		status = -1;
		err = errno;
	}
	o->f = NULL;
	if (o->temporary) {
		if (!status && rename(o->temporary, o->path) != 0) {
			status = -1;
			err = errno;
		}
		if (status)
			unlink(o->temporary);
		free(o->temporary);
	}
	free(o->path);
	*o = (struct output_file){ 0 };
	errno = err;
	return status;
}

void output_file_discard(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
		unlink(path);
}
