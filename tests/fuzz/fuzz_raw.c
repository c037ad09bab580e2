/* A recorder thread file (raw.h) through amptrace run's converter: the
 * input is t1.raw of one process (header and records, as the recorder
 * writes them; padded to whole chunks), next to a real process.json made
 * once.  The converter maps files, so the input is the one file per input
 * (in the scratch directory: memory, where /dev/shm is); it writes the
 * trace (to /dev/null) and keeps its events, from which the findings are
 * computed, as `amptrace run` does. */
#include "fuzz_common.h"

#include "convert.h"
#include "findings.h"
#include "raw.h"

#include <sys/stat.h>
#include <sys/wait.h>

static const char process_json[] =
	"{\"raw_version\":1,\"pid\":100,\"ppid\":1,\"rank\":null,"
	"\"attach_ns\":0,\"exe\":\"/fuzz\",\"argv\":[\"fuzz\"],"
	"\"framework\":\"libamp\",\"names\":{"
	"\"dtype\":[\"f64\",\"f32\",\"f16\",\"bf16\",\"i64\",\"i32\",\"bool\"],"
	"\"profiler\":[\"double\",\"float\",\"c10::Half\",\"c10::BFloat16\","
	"\"long int\",\"int\",\"bool\"],"
	"\"policy\":[\"none\",\"lower_precision_fp\",\"fp32\","
	"\"fp32_set_opt_dtype\",\"fp32_append_dtype\",\"promote\",\"banned\"],"
	"\"device\":[\"cpu\",\"cuda\"],\"phase\":[\"forward\",\"backward\"],"
	"\"cache\":[\"hit\",\"miss\",\"uncacheable\",\"disabled\"]}}\n";

struct sink {
	struct trace_writer writer;
	bool open;
	struct trace kept;
	char path[PATH_MAX];
};

static struct trace_writer *writer_for(void *ctx,
				       const struct convert_process *p)
{
	struct sink *s = ctx;

	(void)p;
	if (!s->open &&
	    trace_writer_open(&s->writer, "-",
			      &(struct trace_header){ .generator = "fuzz" },
			      0) == 0)
		s->open = true;
	return s->open ? &s->writer : NULL;
}

static struct trace *trace_for(void *ctx, const struct convert_process *p)
{
	(void)p;
	return &((struct sink *)ctx)->kept;
}

/* raw/p100/process.json, made once; the raw directory's path. */
static const char *raw_dir(void)
{
	static char raw[PATH_MAX];
	char dir[PATH_MAX + 8], file[PATH_MAX + 24];

	if (raw[0])
		return raw;
	fuzz_path(raw, sizeof raw, "raw");
	snprintf(dir, sizeof dir, "%s/p100", raw);
	if (mkdir(raw, 0700) != 0 || mkdir(dir, 0700) != 0)
		abort();
	snprintf(file, sizeof file, "%s/process.json", dir);
	fuzz_write(file, (const uint8_t *)process_json, strlen(process_json));
	return raw;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char file[PATH_MAX + 24];
	struct sink s = { 0 };

	if (size > 4 * RAW_CHUNK)
		return 0;
	const char *raw = raw_dir();
	snprintf(file, sizeof file, "%s/p100/t1.raw", raw);
	fuzz_write(file, data, size);
	if (truncate(file, (off_t)((size + RAW_CHUNK - 1) / RAW_CHUNK *
				   RAW_CHUNK + (size ? 0 : RAW_CHUNK))) != 0)
		abort();
	snprintf(s.path, sizeof s.path, "fuzz.json");
	if (trace_init(&s.kept, s.path) != 0)
		abort();

	struct converter cv;
	convert_init(&cv, raw, 0, writer_for, &s);
	cv.trace_for = trace_for;
	while (convert_poll(&cv))
		;
	convert_finish(&cv, 100, W_EXITCODE(0, 0), 1000000);
	struct findings f;
	if (findings_compute(&s.kept, &f) == 0)
		findings_free(&f);
	convert_free(&cv);
	if (s.open)
		trace_writer_close(&s.writer,
				   &(struct trace_trailer){ .complete = true });
	trace_free(&s.kept);
	unlink(file); /* unless the converter did (a thread-end marker) */
	return 0;
}
