/* summary's line on GPU kernel timing (summary_gpu.h). */
#include "summary_gpu.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>

/* The trailer's entries summed over the processes that ran device cuda;
 * where some could not time their kernels, the first one's reason. */
struct gpu_totals {
	int processes, timed;
	const char *reason;
	uint64_t kernels, memcpys, aggregated, dropped;
	bool incomplete; /* a process ended before its counts */
};

static struct gpu_totals totals_of(const struct trace *t)
{
	struct gpu_totals g = { 0 };

	for (int i = 0; i < t->trailer.nprocesses; i++) {
		const struct trace_gpu_timing *p = t->trailer.processes[i].gpu;
		if (!p)
			continue;
		g.processes++;
		if (!p->timing) {
			if (!g.reason && p->reason && p->reason[0])
				g.reason = p->reason;
			continue;
		}
		g.timed++;
		g.kernels += p->kernels;
		g.memcpys += p->memcpys;
		g.aggregated += p->aggregated;
		g.dropped += p->dropped;
		g.incomplete |= !p->complete;
	}
	return g;
}

static void print_untimed(const struct gpu_totals *g, FILE *out)
{
	if (g->timed)
		fprintf(out, "; not timed in %d of %d processes",
			g->processes - g->timed, g->processes);
	else
		fputs("unavailable", out);
	if (g->reason)
		fprintf(out, " (%s)", g->reason);
}

void summary_gpu_text(const struct trace *t, FILE *out)
{
	struct gpu_totals g = totals_of(t);

	if (!g.processes)
		return;
	fputs("GPU kernel timing: ", out);
	if (g.timed) {
		fprintf(out, "%" PRIu64 " kernels, %" PRIu64 " copies",
			g.kernels, g.memcpys);
		if (g.aggregated)
			fprintf(out, "; %" PRIu64 " more in the steps without "
				"full detail, counted", g.aggregated);
		if (g.dropped)
			fprintf(out, "; %" PRIu64 " lost (CUPTI's buffers or the "
				"raw stream full)", g.dropped);
		if (g.incomplete)
			fputs("; a process ended before its last counts", out);
	}
	if (g.timed < g.processes)
		print_untimed(&g, out);
	fputc('\n', out);
}

void summary_gpu_json(const struct trace *t, cJSON *root)
{
	struct gpu_totals g = totals_of(t);

	if (!g.processes) {
		cJSON_AddNullToObject(root, "gpu");
		return;
	}
	cJSON *gpu = cJSON_AddObjectToObject(root, "gpu");
	cJSON_AddNumberToObject(gpu, "processes", g.processes);
	cJSON_AddNumberToObject(gpu, "timed", g.timed);
	cJSON_AddNumberToObject(gpu, "kernels", (double)g.kernels);
	cJSON_AddNumberToObject(gpu, "memcpys", (double)g.memcpys);
	cJSON_AddNumberToObject(gpu, "aggregated", (double)g.aggregated);
	cJSON_AddNumberToObject(gpu, "dropped", (double)g.dropped);
	cJSON_AddBoolToObject(gpu, "complete", !g.incomplete);
	if (g.reason)
		cJSON_AddStringToObject(gpu, "reason", g.reason);
	else
		cJSON_AddNullToObject(gpu, "reason");
}
