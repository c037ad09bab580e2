/* The precision bar of the findings (issue 13): every sample, run under
 * `amptrace run` at its default size and at a smaller and a larger one,
 * on the cpu (bf16) and the emulated cuda device (f16), gives no finding
 * of severity warning or error except the pitfalls the sample exists to
 * show, and does show those.  A false alarm on a healthy program makes
 * `amptrace check` useless as a CI gate.
 *
 * The default size runs the sample's default step count (its default
 * run, GradScaler's calibration included); the other sizes run 8 steps to
 * keep the suite fast. */
#include "findings.h"
#include "test_scratch.h"
#include "traced.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if !defined(AMPTRACE_PATH) || !defined(SAMPLES_DIR)
#error "AMPTRACE_PATH and SAMPLES_DIR must be defined"
#endif

/* Each sample and the warnings it exists to show (NULL-terminated). */
static const struct {
	const char *name;
	const char *shows[3];
} samples[] = {
	{ "mlp", { NULL } },
	{ "clip", { NULL } },
	{ "accumulate", { NULL } },
	{ "penalty", { NULL } },
	{ "multi", { NULL } },
	{ "custom", { NULL } },
	{ "roipool", { NULL } },
	{ "nested", { NULL } },
	{ "threads", { "autocast-off-in-thread", NULL } },
	{ "whole_loop", { "stale-cache", "backward-under-autocast", NULL } },
	{ "transformer", { NULL } },
	{ "infer", { NULL } },
};
#define NSAMPLES (int)(sizeof samples / sizeof samples[0])

/* Flags per size; infer has no --steps, roipool takes at most 8 per batch. */
static const char *size_flags(const char *sample, int size)
{
	bool infer = !strcmp(sample, "infer");
	bool roipool = !strcmp(sample, "roipool");

	switch (size) {
	case 0:
		return "";
	case 1:
		return infer ? "--hidden 16 --layers 2 --batch 4"
			     : "--hidden 16 --layers 2 --batch 4 --steps 8";
	default:
		return infer ? "--hidden 128 --layers 4 --batch 64"
		       : roipool ? "--hidden 128 --layers 4 --batch 8 --steps 8"
				 : "--hidden 128 --layers 4 --batch 64 --steps 8";
	}
}
#define NSIZES 3
static const char *const devices[] = { "cpu", "cuda" };
#define NDEVICES 2

static bool shows(int sample, const char *kind)
{
	for (int k = 0; samples[sample].shows[k]; k++)
		if (!strcmp(samples[sample].shows[k], kind))
			return true;
	return false;
}

START_TEST(test_sample_precision)
{
	int sample = _i / (NSIZES * NDEVICES);
	int size = _i / NDEVICES % NSIZES;
	const char *name = samples[sample].name;
	const char *device = devices[_i % NDEVICES];
	const char *flags = size_flags(name, size);
	char path[sizeof scratch_dir + 32], prog[1024], args[512], run[1024], buf[1024], why[1024];
	const char *words[32];
	struct trace trace;
	struct findings f;

	snprintf(path, sizeof path, "%s/%d.json", scratch_dir, _i);
	snprintf(run, sizeof run, "%s %s --device %s", name, flags, device);
	snprintf(prog, sizeof prog, "%s/%s", SAMPLES_DIR, name);
	snprintf(args, sizeof args, "%s --device %s", flags, device);
	const struct traced how = { .trace = path, .out = "/dev/null" };
	ck_assert_msg(traced_load(&how, traced_command(prog, args, buf, sizeof buf,
						       words, 32),
				  &trace, why, sizeof why) == 0,
		      "%s: %s", run, why);
	ck_assert_int_eq(findings_compute(&trace, &f), 0);
	for (size_t i = 0; i < f.count; i++) {
		const struct trace_finding *x = &f.items[i];
		ck_assert_msg(x->severity == FINDING_INFO || shows(sample, x->kind),
			      "%s: %s %s (x%zu): %s", run,
			      finding_severity_name(x->severity), x->kind,
			      x->count, x->message);
	}
	for (int k = 0; samples[sample].shows[k]; k++)
		ck_assert_msg(findings_get(&f, samples[sample].shows[k]),
			      "%s does not show its %s", run,
			      samples[sample].shows[k]);
	findings_free(&f);
	trace_free(&trace);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("samples_precision");
	TCase *tc = tcase_create("samples");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_sample_precision, 0,
			    NSAMPLES * NSIZES * NDEVICES);
	suite_add_tcase(s, tc);
	SRunner *runner = srunner_create(s);
	scratch_make("precision");
	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	if (scratch_remove() != 0)
		failed = 1;
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
