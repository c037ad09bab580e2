/* GPU kernel activity in traces, without a GPU: the fake CUDA module
 * (cuda_fake.c) stands in for CUPTI.  The recorder is linked in and
 * attached as its constructor does under `amptrace run`, a small autocast
 * model runs on device cuda, and the converter turns the raw directory
 * into a trace whose `kernel` events name, through "External id", the ops
 * and casts that launched them, and which passes the format validator.
 * Without a module (device cuda emulated) the trailer says why kernel
 * timing was unavailable. */
#include "backend.h"
#include "convert.h"
#include "cuda_fake.h"
#include "recorder.h"
#include "trace.h"
#include "commands.h"
#include "validate.h"
#include "test_dirs.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char raw[64], out[96];
static struct trace_writer writer;
static uint64_t base_ns;

static struct trace_writer *writer_for(void *ctx,
				       const struct convert_process *p)
{
	(void)ctx;
	(void)p;
	if (!writer.f)
		ck_assert_int_eq(trace_writer_open(&writer, out,
						   &(struct trace_header){
							   .generator = "test" },
						   0),
				 0);
	return &writer;
}

static void begin(void)
{
	snprintf(raw, sizeof raw, "/tmp/amptrace-gpu-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(raw));
	snprintf(out, sizeof out, "%s.json", raw);
	base_ns = amp_now_ns();
	ck_assert_int_eq(recorder_attach(raw), 0);
}

/* Detaches (which stops kernel timing) and converts the raw directory
 * into the trace file `out`. */
static void convert(void)
{
	struct converter c;
	struct trace_process_end end;
	struct trace_gpu_timing gpu;
	struct trace_process_steps steps;

	recorder_detach();
	convert_init(&c, raw, base_ns, writer_for, NULL);
	convert_finish(&c, getpid(), 0, amp_now_ns());
	ck_assert_uint_eq(c.nprocs, 1);
	convert_process_end(c.procs[0], &end, &gpu, &steps);
	ck_assert_int_eq(trace_writer_close(&writer,
					    &(struct trace_trailer){
						    .complete = true,
						    .processes = &end,
						    .nprocesses = 1 }),
			 0);
	convert_free(&c);
	remove_tree(raw);
}

/* Converts, and loads the trace. */
static void finish(struct trace *t)
{
	struct trace_error err;

	convert();
	ck_assert_msg(trace_load(out, t, &err) == 0, "%s", err.message);
	remove(out);
}

static const struct trace_gpu_timing *process_gpu(const struct trace *t)
{
	return t->trailer.nprocesses ? t->trailer.processes[0].gpu : NULL;
}

/* Records ids as the program sees them, to compare with the trace. */
static uint64_t linear_op, cast_results[8];
static int ncasts;

static void watch(const struct amp_event *e, void *user)
{
	(void)user;
	if (e->kind == AMP_EVENT_OP_BEGIN && !strcmp(e->op.op, "linear"))
		linear_op = e->op.op_id;
	if (e->kind == AMP_EVENT_CAST && ncasts < 8)
		cast_results[ncasts++] = e->cast.result.id;
}

/* A linear layer and a relu under CUDA autocast, and the copy back. */
static void run_linear(void)
{
	int64_t xs[2] = { 4, 8 }, ws[2] = { 3, 8 }, bs[1] = { 3 };
	amp_tensor *x = amp_randn(2, xs, AMP_DTYPE_F32, AMP_DEVICE_CUDA);
	amp_tensor *w = amp_randn(2, ws, AMP_DTYPE_F32, AMP_DEVICE_CUDA);
	amp_tensor *b = amp_randn(1, bs, AMP_DTYPE_F32, AMP_DEVICE_CUDA);
	amp_tensor_set_name(w, "fc.weight");
	amp_tensor_set_name(b, "fc.bias");
	struct amp_autocast_opts opts = AMP_AUTOCAST_OPTS(AMP_DEVICE_CUDA);
	ck_assert_int_eq(amp_autocast_enter(&opts), AMP_OK);
	amp_tensor *y = amp_linear(x, w, b);
	amp_tensor *r = amp_relu(y);
	amp_autocast_exit();
	float values[12];
	ck_assert_int_eq(amp_tensor_read(r, AMP_DTYPE_F32, values, 12), AMP_OK);
	amp_tensor_free(r);
	amp_tensor_free(y);
	amp_tensor_free(b);
	amp_tensor_free(w);
	amp_tensor_free(x);
}

START_TEST(test_kernels_linked_to_ops)
{
	struct trace t;

	amp_cuda_backend_install(cuda_fake_module(CUDA_FAKE_FULL), "fake");
	begin();
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_OP_BEGIN) |
					AMP_EVENT_MASK(AMP_EVENT_CAST),
				watch, NULL);
	run_linear();
	amp_hook_remove(hook);
	finish(&t);

	struct validate_report report;
	size_t problems = trace_validate(&t, &report);
	ck_assert_msg(problems == 0, "%zu problems, first: %s", problems,
		      report.messages[0]);
	ck_assert_uint_gt(t.counts[TRACE_KERNEL], 0);
	ck_assert_int_eq(ncasts, 3);
	bool linear_kernel = false;
	int cast_kernels = 0;
	for (size_t i = 0; i < t.nevents; i++) {
		const struct trace_event *e = &t.events[i];
		if (e->kind != TRACE_KERNEL)
			continue;
		ck_assert_int_eq(e->tid, 7);
		ck_assert_int_eq(e->kernel.host_pid, getpid());
		ck_assert(e->pid != getpid());
		ck_assert_uint_ne(e->kernel.external_id, 0);
		if (!e->kernel.cast && e->kernel.external_id == linear_op)
			linear_kernel = true;
		for (int k = 0; k < ncasts && e->kernel.cast; k++)
			cast_kernels += e->kernel.external_id == cast_results[k];
		/* a cast's kernel names the op it cast for */
		if (e->kernel.cast)
			ck_assert_uint_eq(e->kernel.op_id, linear_op);
	}
	ck_assert(linear_kernel);
	ck_assert_int_eq(cast_kernels, 3);
	/* the copy back to the host is a gpu_memcpy with its bytes */
	bool memcpy_seen = false, gpu_named = false;
	for (size_t i = 0; i < t.nevents; i++) {
		const struct trace_event *e = &t.events[i];
		memcpy_seen |= !strcmp(e->cat, "gpu_memcpy") &&
			       !strcmp(e->name, "Memcpy DtoH");
		gpu_named |= e->kind == TRACE_META &&
			     !strcmp(e->name, "process_name") && e->meta.value &&
			     !strncmp(e->meta.value, "GPU 0 (pid ", 11);
	}
	ck_assert(memcpy_seen);
	ck_assert(gpu_named);
	const struct trace_gpu_timing *gpu = process_gpu(&t);
	ck_assert_ptr_nonnull(gpu);
	ck_assert(gpu->timing);
	ck_assert(gpu->complete);
	ck_assert_uint_eq(gpu->kernels, t.counts[TRACE_KERNEL]);
	ck_assert_uint_eq(gpu->dropped, 0);
	ck_assert_uint_eq(gpu->aggregated, 0);
	trace_free(&t);
}
END_TEST

/* A step recorded without full detail keeps none of its ops' kernels and
 * copies: the trailer counts them instead, so every one written names an
 * op or cast of the trace.  AMPTRACE_STEPS=0: the second outermost region
 * begins step 1. */
START_TEST(test_folded_step_gpu_work_counted)
{
	struct trace t;

	amp_cuda_backend_install(cuda_fake_module(CUDA_FAKE_FULL), "fake");
	cuda_fake_reset();
	setenv("AMPTRACE_STEPS", "0", 1);
	begin();
	run_linear();
	run_linear();
	finish(&t);

	struct validate_report report;
	size_t problems = trace_validate(&t, &report);
	ck_assert_msg(problems == 0, "%zu problems, first: %s", problems,
		      report.messages[0]);
	const struct trace_gpu_timing *gpu = process_gpu(&t);
	ck_assert_ptr_nonnull(gpu);
	ck_assert(gpu->complete);
	/* the second region's three casts, linear (two kernels) and relu;
	 * the copy back runs in no op, so it is written */
	ck_assert_uint_eq(gpu->aggregated, 6);
	ck_assert_uint_eq(gpu->kernels + gpu->memcpys + gpu->aggregated,
			  cuda_fake_counts.activities);
	ck_assert_uint_eq(gpu->kernels, t.counts[TRACE_KERNEL]);
	ck_assert_uint_eq(gpu->memcpys, t.counts[TRACE_MEMCPY]);
	ck_assert_uint_gt(gpu->kernels, 0);
	trace_free(&t);
	unsetenv("AMPTRACE_STEPS");
}
END_TEST

/* Merging two ranks whose host processes had the same pid: each GPU
 * process follows its host to the rank's pid (2^30 + device*2^22 + rank)
 * and each kernel's "amp.pid" names the rank, so the merged trace passes
 * the validator. */
START_TEST(test_merge_renumbers_gpu_processes)
{
	struct trace t;
	struct trace_error err;
	struct validate_report report;
	char merged[128];

	amp_cuda_backend_install(cuda_fake_module(CUDA_FAKE_FULL), "fake");
	begin();
	run_linear();
	convert();
	snprintf(merged, sizeof merged, "%s.merged.json", raw);
	char *argv[] = { "merge", out, out, "-o", merged };
	ck_assert_int_eq(amptrace_merge(5, argv), 0);
	remove(out);
	ck_assert_msg(trace_load(merged, &t, &err) == 0, "%s", err.message);
	remove(merged);

	size_t problems = trace_validate(&t, &report);
	ck_assert_msg(problems == 0, "%zu problems, first: %s", problems,
		      report.messages[0]);
	size_t kernels[2] = { 0, 0 }, gpu_processes = 0;
	for (size_t i = 0; i < t.nevents; i++) {
		const struct trace_event *e = &t.events[i];
		if (e->kind == TRACE_KERNEL) {
			/* merged ranks are pids 1 and 2 */
			ck_assert(e->kernel.host_pid == 1 || e->kernel.host_pid == 2);
			ck_assert_int_eq(e->pid, ((int64_t)1 << 30) + e->kernel.host_pid);
			kernels[e->kernel.host_pid - 1]++;
		}
		gpu_processes += e->kind == TRACE_META &&
				 !strcmp(e->name, "process_name") &&
				 e->pid >= ((int64_t)1 << 30);
	}
	ck_assert_uint_gt(kernels[0], 0);
	ck_assert_uint_eq(kernels[0], kernels[1]);
	ck_assert_uint_eq(gpu_processes, 2);
	trace_free(&t);
}
END_TEST

/* A kernel naming an op that is not in the trace is a validation
 * problem. */
START_TEST(test_validator_unknown_external_id)
{
	static const char text[] =
		"{\"amptrace\":{\"format\":\"1.0\"},\"traceEvents\":[\n"
		"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":5,\"tid\":0,"
		"\"args\":{\"name\":\"p\"}},\n"
		"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1073741829,"
		"\"tid\":0,\"args\":{\"name\":\"GPU 0 (pid 5)\"}},\n"
		"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1073741829,"
		"\"tid\":7,\"args\":{\"name\":\"stream 7\"}},\n"
		"{\"name\":\"k\",\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":1,\"dur\":1,"
		"\"pid\":1073741829,\"tid\":7,\"args\":{\"External id\":42,"
		"\"amp.pid\":5}}\n"
		"],\"amptraceEnd\":{\"complete\":true}}\n";
	struct trace t;
	struct trace_error err;
	struct validate_report report;

	ck_assert_int_eq(trace_load_text("k.json", text, strlen(text), &t, &err),
			 0);
	ck_assert_uint_eq(trace_validate(&t, &report), 1);
	ck_assert_msg(strstr(report.messages[0], "External id 42"), "%s",
		      report.messages[0]);
	trace_free(&t);
}
END_TEST

/* Emulated cuda: no kernel events, and the trailer says why. */
START_TEST(test_no_gpu_says_why)
{
	int64_t shape[1] = { 4 };
	struct trace t;

	setenv("AMP_CUDA_DISABLE", "1", 1);
	begin();
	amp_tensor *x = amp_full(1, shape, 1.0, AMP_DTYPE_F32, AMP_DEVICE_CUDA);
	amp_tensor *y = amp_exp(x);
	ck_assert_str_eq(amp_last_error(), "");
	amp_tensor_free(y);
	amp_tensor_free(x);
	finish(&t);
	ck_assert_uint_eq(t.counts[TRACE_KERNEL], 0);
	const struct trace_gpu_timing *gpu = process_gpu(&t);
	ck_assert_ptr_nonnull(gpu);
	ck_assert(!gpu->timing);
	const char *reason = gpu->reason;
	ck_assert_ptr_nonnull(reason);
	ck_assert_msg(strstr(reason, "emulated") && strstr(reason, "AMP_CUDA_DISABLE"),
		      "%s", reason);
	trace_free(&t);
}
END_TEST

/* A program that never uses device cuda: no "gpu" entry at all. */
START_TEST(test_cpu_only_no_gpu_entry)
{
	int64_t shape[1] = { 4 };
	struct trace t;

	begin();
	amp_tensor *x = amp_full(1, shape, 1.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor_free(amp_exp(x));
	amp_tensor_free(x);
	finish(&t);
	ck_assert_ptr_null(process_gpu(&t));
	trace_free(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("trace_gpu");
	TCase *tc = tcase_create("kernels");
	SRunner *sr;

	tcase_add_test(tc, test_kernels_linked_to_ops);
	tcase_add_test(tc, test_folded_step_gpu_work_counted);
	tcase_add_test(tc, test_merge_renumbers_gpu_processes);
	tcase_add_test(tc, test_validator_unknown_external_id);
	tcase_add_test(tc, test_no_gpu_says_why);
	tcase_add_test(tc, test_cpu_only_no_gpu_entry);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
