/* Incremental trace file writer (see trace_writer.h). */
#include "trace_writer.h"

#include "event_json.h"
#include "jsonw.h"
#include "output_file.h"

#include <fcntl.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 1 MiB: the kernel's cost per write() call dominated with stdio's 4 KiB
 * (one call per ~8 events).  Flushes (trace_writer_flush) still decide
 * what a killed writer leaves behind. */
#define WRITE_BUFFER_SIZE (1u << 20)

/* The header into w->f, open. */
static int writer_start(struct trace_writer *w, const char *path,
			const struct trace_header *h, uint64_t base_ns)
{
	struct trace_header header = *h;
	struct jsonw text;

	/* Events are copied into buf, one memcpy each, and handed to the
	 * kernel from there; without it they go through stdio's own buffer:
	 * slower, as correct. */
	w->buf = malloc(WRITE_BUFFER_SIZE);
	if (w->buf)
		setvbuf(w->f, NULL, _IONBF, 0);
	/* Only this thread writes: stdio's per-call locking is not needed. */
	__fsetlocking(w->f, FSETLOCKING_BYCALLER);
	w->path = strdup(path);
	/* displayTimeUnit first: Perfetto only honours it near the start. */
	header.format = TRACE_FORMAT_VERSION;
	jsonw_init(&text);
	event_json_header(&text, &header);
	fprintf(w->f,
		"{\"displayTimeUnit\":\"ms\",\"schemaVersion\":1,"
		"\"amptrace\":%s,"
		"\"baseTimeNanoseconds\":%llu,\n\"traceEvents\":[",
		text.failed ? "{}" : text.data, (unsigned long long)base_ns);
	w->failed = text.failed;
	jsonw_free(&text);
	return 0;
}

int trace_writer_open(struct trace_writer *w, const char *path,
		      const struct trace_header *h, uint64_t base_ns)
{
	*w = (struct trace_writer){ 0 };
	/* "-" and a FIFO without a reader as every writer has them */
	int fd = output_fd_open(path);
	w->f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!w->f) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return writer_start(w, path, h, base_ns);
}

int trace_writer_open_whole(struct trace_writer *w, const char *path,
			    const struct trace_header *h, uint64_t base_ns)
{
	*w = (struct trace_writer){ 0 };
	if (output_file_open(&w->whole, path) != 0)
		return -1;
	w->f = w->whole.f;
	return writer_start(w, path, h, base_ns);
}

/* Hands buf to the file. */
static void drain(struct trace_writer *w)
{
	if (w->used && fwrite(w->buf, 1, w->used, w->f) != w->used)
		w->failed = true;
	w->used = 0;
}

void trace_writer_event(struct trace_writer *w, const char *json, size_t len)
{
	if (!w->f)
		return;
	/* The separator goes before an event, so the file always ends with a
	 * complete element. */
	const char *separator = w->events ? ",\n" : "\n";
	size_t n = w->events ? 2 : 1;
	w->events++;
	w->bytes += n + len;
	if (!w->buf) {
		fputs(separator, w->f);
		if (fwrite(json, 1, len, w->f) != len)
			w->failed = true;
		return;
	}
	if (w->used + n + len > WRITE_BUFFER_SIZE)
		drain(w);
	memcpy(w->buf + w->used, separator, n);
	w->used += n;
	if (len > WRITE_BUFFER_SIZE - w->used) {
		drain(w);
		if (fwrite(json, 1, len, w->f) != len)
			w->failed = true;
		return;
	}
	memcpy(w->buf + w->used, json, len);
	w->used += len;
}

void trace_writer_events(struct trace_writer *w, const char *text, size_t len,
			 uint64_t count)
{
	if (!w->f || !count)
		return;
	/* The separator, then the text handed to the file as it is (no copy
	 * through buf): it ends with a whole event, as each drain does. */
	const char *separator = w->events ? ",\n" : "\n";
	w->bytes += (w->events ? 2 : 1) + len;
	w->events += count;
	if (w->buf)
		drain(w);
	if (fputs(separator, w->f) == EOF || fwrite(text, 1, len, w->f) != len)
		w->failed = true;
}

void trace_writer_flush(struct trace_writer *w)
{
	if (!w->f)
		return;
	if (w->buf)
		drain(w);
	if (fflush(w->f) != 0)
		w->failed = true;
}

/* What close gives back, the file closed. */
static void writer_release(struct trace_writer *w)
{
	w->f = NULL;
	free(w->buf);
	w->buf = NULL;
	free(w->path);
	w->path = NULL;
}

void trace_writer_abandon(struct trace_writer *w)
{
	if (!w->f)
		return;
	if (w->buf)
		drain(w);
	if (w->whole.f)
		output_file_abandon(&w->whole);
	else
		fclose(w->f);
	writer_release(w);
}

int trace_writer_close(struct trace_writer *w, const struct trace_trailer *t)
{
	int status = 0;
	struct jsonw text;

	if (!w->f)
		return -1;
	if (w->buf)
		drain(w);
	jsonw_init(&text);
	event_json_trailer(&text, t);
	fprintf(w->f, "\n],\n\"amptraceEnd\":%s\n}\n",
		text.failed ? "{}" : text.data);
	w->failed |= text.failed;
	jsonw_free(&text);
	if (ferror(w->f) || w->failed)
		status = -1;
	if (w->whole.f && status)
		output_file_abandon(&w->whole);
	else if (w->whole.f)
		status = output_file_close(&w->whole);
	else if (fclose(w->f) != 0)
		status = -1;
	writer_release(w);
	return status;
}
