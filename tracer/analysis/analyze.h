/* What summary and check derive from a loaded trace: steps, cast and cache
 * statistics, GradScaler history and findings.  One pass, no output. */
#ifndef AMPTRACE_ANALYZE_H
#define AMPTRACE_ANALYZE_H

#include "findings.h"
#include "rank_findings.h"
#include "ranks.h"
#include "steps.h"
#include "trace.h"
#include "trace_index.h"

#include <stdint.h>

struct scale_change {
	double ts;
	double scale;
	int step;
	bool found_inf;
};

struct analysis {
	const struct trace *trace;
	/* Steps (steps.h, FORMAT.md §8); step_of[i], evaluating[i] and
	 * step_marker are steps' own, under the names readers use. */
	struct trace_steps steps;
	int *step_of;
	bool *evaluating;
	int nsteps;
	const char *step_marker;  /* "optimizer step", "scaler update", ... */
	/* an op or cast names its nn.Module (PyTorch traces of format 1.4;
	 * libamp's name none) */
	bool names_modules;
	/* casts by cache result (hit, miss, uncacheable, disabled, other) */
	uint64_t cache_hits, cache_misses, cache_uncacheable, cache_disabled;
	uint64_t cache_clears, cache_max_entries, cache_max_bytes;
	/* its processes' ranks: check's `per step` rules and the GradScaler
	 * counts below judge each rank apart (ranks.h) */
	struct trace_ranks ranks;
	/* the ranks that train (a job's: 2 or more, else 0) and the least
	 * and most steps any of them trained in */
	int ranks_training, rank_steps_least, rank_steps_most;
	/* GradScaler: steps and skips in all, and the most of any rank's
	 * (the ranks of a job step together); the same without ranks */
	uint64_t scaler_steps, skipped_steps;
	uint64_t rank_scaler_steps, rank_skipped_steps;
	int first_skipped_step;
	double scale_min, scale_max; /* NaN when no scale seen */
	/* The scale history and scale_final follow one process's
	 * GradScalers: the first of the lowest rank that has one (a job's
	 * ranks' GradScalers are replicas); GradScalers in all, the followed
	 * process's, and of the others how many end at another scale */
	int64_t history_pid;
	double scale_final;
	int nscalers, nscalers_followed, nscalers_ending_apart;
	struct scale_change *scale_history;
	size_t nscale_history;
	/* findings_compute()'s, most severe first (the analysis owns them) */
	struct trace_finding *findings;
	size_t nfindings;
	/* the findings as readers list them: one of a job's ranks' alike
	 * findings standing for all (rank_findings.h) */
	struct rank_findings listed;
	/* their occurrences (findings.h: chains from each finding) */
	struct finding_occurrence *finding_occurrences;
	size_t nfinding_occurrences;
	/* the steps GradScaler skipped, with their causes (findings.h) */
	struct finding_skip *skips;
	size_t nskips;
	/* ops by id, tensors' producers, names and uses (findings use it) */
	struct trace_index index;
};

/* Returns 0, or -1 when out of memory. */
int analysis_run(const struct trace *trace, struct analysis *a);
void analysis_free(struct analysis *a);
/* The amp.op event of (pid, op_id), or NULL. */
const struct trace_event *analysis_op(const struct analysis *a, int64_t pid,
				      uint64_t op_id);
/* The dtype of the op's first output, or NULL when it has none. */
const char *analysis_output_dtype(const struct trace_op *op);
/* True when the op ran inside a named region `scope` (at any depth). */
bool analysis_op_in_scope(const struct trace_op *op, const char *scope);
/* Whether `module` (an op's or cast's nn.Module path, or NULL) or a
 * module it is inside is `glob` or matches it: "h.*.attn" matches
 * "h.3.attn" and "h.3.attn.c_attn", not "h.3.mlp".  For rules
 * (RULES.md), '*' matches across dots too; ampview's _by_part keeps a
 * wildcard within one dot-separated part ("*fc1" is an outermost
 * module), so the module matched is as deep as the glob has parts. */
bool analysis_in_module(const char *module, const char *glob);
bool analysis_in_module_by_part(const char *module, const char *glob);
/* The length of `module`'s first `depth` dot-separated parts: the module
 * that is its ancestor at that depth ("h.3.attn.c_attn", 2: "h.3"). */
size_t analysis_module_prefix(const char *module, int depth);
/* How many dot-separated parts `module` has, its depth: "" (the model
 * itself) 0, "h.3.attn" 3; analysis_path_depth of module[0..len). */
int analysis_module_depth(const char *module);
int analysis_path_depth(const char *module, size_t len);
/* `module` when it is not the path seen last (`*last`, then updated),
 * else NULL (and for NULL): paths are interned, so a scan over ops meets
 * each once per run of its ops rather than once per op. */
const char *analysis_new_module(const char *module, const char **last);
/* The class of the module at exactly module[0..len), from the first op
 * that ran in it directly (a ModuleList, never called, has none). */
const char *analysis_module_class(const struct trace *t, const char *module,
				  size_t len);
/* The index of `dtype` in trace_dtype_names, or -1 (NULL, or a name the
 * format does not list): a column per dtype for module_table.h. */
int analysis_dtype_index(const char *dtype);
/* Same for a cast: its op's regions when the op is known. */
bool analysis_cast_in_scope(const struct analysis *a,
			    const struct trace_event *cast, const char *scope);

#endif /* AMPTRACE_ANALYZE_H */
