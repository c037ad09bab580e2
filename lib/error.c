/* Errors: the thread's last run-time failure, the abort handler for
 * programmer errors, and the warning handler. */
#include "amp_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AMP_ERROR_MAX 2048

static _Thread_local char last_error[AMP_ERROR_MAX];
static _Thread_local int last_status;

static void default_abort(const char *file, int line, const char *message)
{
	fprintf(stderr, "libamp: %s:%d: %s\n", file, line, message);
	abort();
}

static void default_warning(const char *message, void *user)
{
	(void)user;
	fprintf(stderr, "libamp: UserWarning: %s\n", message);
}

static amp_abort_fn abort_handler = default_abort;
static amp_warning_fn warning_handler = default_warning;
static void *warning_user;

void amp_set_abort_handler(amp_abort_fn handler)
{
	abort_handler = handler ? handler : default_abort;
}

void amp_set_warning_handler(amp_warning_fn handler, void *user)
{
	warning_handler = handler ? handler : default_warning;
	warning_user = user;
}

_Noreturn void amp_abort(const char *file, int line, const char *fmt, ...)
{
	char message[AMP_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	abort_handler(file, line, message);
	/* A handler that returns would let the caller run on broken state. */
	abort();
}

int amp_error(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof last_error, fmt, ap);
	va_end(ap);
	last_status = status;
	return status;
}

void amp_error_append(const char *fmt, ...)
{
	size_t used = strlen(last_error);
	va_list ap;

	if (used + 1 >= sizeof last_error)
		return;
	va_start(ap, fmt);
	vsnprintf(last_error + used, sizeof last_error - used, fmt, ap);
	va_end(ap);
}

void amp_warn(const char *fmt, ...)
{
	char message[AMP_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	warning_handler(message, warning_user);
}

const char *amp_last_error(void)
{
	return last_error;
}

int amp_last_status(void)
{
	return last_status;
}

void amp_clear_error(void)
{
	last_error[0] = '\0';
	last_status = AMP_OK;
}

const char *amp_status_string(int status)
{
	static const char *const names[] = {
		[0] = "ok",
		[-AMP_ERR_INVALID] = "invalid argument",
		[-AMP_ERR_DTYPE] = "dtype mismatch",
		[-AMP_ERR_DEVICE] = "device mismatch",
		[-AMP_ERR_AUTOCAST] = "autocast error",
		[-AMP_ERR_NOMEM] = "out of memory",
		[-AMP_ERR_UNSUPPORTED] = "unsupported",
		[-AMP_ERR_IO] = "I/O error",
		[-AMP_ERR_STATE] = "invalid state",
	};
	if (status > 0 || -status >= (int)(sizeof names / sizeof names[0]))
		return "unknown status";
	return names[-status];
}
