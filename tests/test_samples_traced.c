/* Every sample runs under `amptrace run` on both devices and its trace is
 * one Perfetto / chrome://tracing can open: a JSON object with a
 * traceEvents array whose events have known phases and the fields each
 * phase needs; and it follows FORMAT.md (the validator: metadata, nesting,
 * tensor-id continuity). */
#include "trace.h"
#include "test_scratch.h"
#include "traced.h"
#include "validate.h"

#include <cJSON.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if !defined(AMPTRACE_PATH) || !defined(SAMPLES_DIR)
#error "AMPTRACE_PATH and SAMPLES_DIR must be defined"
#endif

/* Small flags so each traced run takes a fraction of a second. */
static const struct {
	const char *name;
	const char *args;
} samples[] = {
	{ "infer", "--layers 2 --repeat 2" },
	{ "mlp", "--steps 6" },
	{ "clip", "--steps 6" },
	{ "accumulate", "--steps 8" },
	{ "penalty", "--steps 6" },
	{ "multi", "--steps 6" },
	{ "custom", "--steps 6" },
	{ "roipool", "--steps 6" },
	{ "nested", "--steps 6" },
	{ "threads", "--steps 4" },
	{ "whole_loop", "--steps 6" },
	{ "transformer", "--steps 4" },
};
#define NSAMPLES (int)(sizeof samples / sizeof samples[0])
static const char *const devices[] = { "cpu", "cuda" };

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0) {
		long size = ftell(f);
		rewind(f);
		text = malloc((size_t)size + 1);
		if (text && fread(text, 1, (size_t)size, f) == (size_t)size) {
			text[size] = '\0';
			*len = (size_t)size;
		} else {
			free(text);
			text = NULL;
		}
	}
	fclose(f);
	return text;
}

/* What a Chrome-trace viewer needs of each event, by phase. */
static void assert_event_loadable(const cJSON *e, size_t index)
{
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
	ck_assert_msg(cJSON_IsString(ph) && strlen(ph->valuestring) == 1,
		      "event %zu has no one-letter ph", index);
	char phase = ph->valuestring[0];
	ck_assert_msg(strchr("XBEiICMsf", phase), "event %zu: unknown phase %c",
		      index, phase);
	ck_assert_msg(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "name")),
		      "event %zu has no name", index);
	ck_assert_msg(cJSON_GetObjectItemCaseSensitive(e, "pid") &&
			      cJSON_GetObjectItemCaseSensitive(e, "tid"),
		      "event %zu lacks pid/tid", index);
	if (phase == 'M')
		return;
	ck_assert_msg(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "ts")),
		      "event %zu (%c) has no numeric ts", index, phase);
	if (phase == 'X')
		ck_assert_msg(
			cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "dur")),
			"X event %zu has no dur (Perfetto drops it)", index);
	if (phase == 'C')
		ck_assert_msg(
			cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(e, "args")),
			"counter %zu has no args", index);
}

START_TEST(test_sample_traces_load)
{
	const char *sample = samples[_i / 2].name;
	const char *device = devices[_i % 2];
	char path[sizeof scratch_dir + 128], prog[1024], args[512], buf[1024];
	const char *words[32];

	snprintf(path, sizeof path, "%s/%s-%s.json", scratch_dir, sample,
		 device);
	snprintf(prog, sizeof prog, "%s/%s", SAMPLES_DIR, sample);
	snprintf(args, sizeof args, "%s --device %s", samples[_i / 2].args,
		 device);
	const struct traced how = { .trace = path, .out = "/dev/null" };
	int status = traced_run(&how, traced_command(prog, args, buf, sizeof buf,
						     words, 32));
	ck_assert_msg(status == 0, "traced run of %s %s: exit status %d", sample,
		      args, status);

	size_t len = 0;
	char *text = read_all(path, &len);
	ck_assert_ptr_nonnull(text);
	cJSON *root = cJSON_ParseWithLength(text, len);
	ck_assert_msg(cJSON_IsObject(root), "%s: not a JSON object", path);
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
	ck_assert_msg(cJSON_IsArray(events), "%s: no traceEvents array", path);
	size_t index = 0, ops = 0, threads_named = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, events)
	{
		assert_event_loadable(e, index++);
		const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
		if (cJSON_IsString(cat) && !strcmp(cat->valuestring, "amp.op"))
			ops++;
		if (!strcmp(name->valuestring, "thread_name"))
			threads_named++;
	}
	ck_assert_uint_gt(ops, 0);
	ck_assert_uint_gt(threads_named, 0);
	cJSON_Delete(root);

	struct trace trace;
	struct trace_error error;
	ck_assert_msg(trace_load_text(path, text, len, &trace, &error) == 0,
		      "%s does not load", path);
	struct validate_report report;
	size_t problems = trace_validate(&trace, &report);
	ck_assert_msg(problems == 0, "%s: %zu problems, first: %s", path,
		      problems, report.nmessages ? report.messages[0] : "");
	trace_free(&trace);
	free(text);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("samples_traced");
	TCase *tc = tcase_create("samples");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_sample_traces_load, 0, 2 * NSAMPLES);
	suite_add_tcase(s, tc);
	SRunner *runner = srunner_create(s);
	scratch_make("samples");
	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	if (scratch_remove() != 0)
		failed = 1;
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
