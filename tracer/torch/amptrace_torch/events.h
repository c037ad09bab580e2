/* The bridge's event logic (events.c): turns the observer's calls into
 * producer events (producer_event.h) and hands them to the producer API; and the entry points
 * the Python layer (module.c) uses for what the observer cannot see:
 * autocast regions, cache clears, phases, GradScaler. */
#ifndef AMPTRACE_TORCH_EVENTS_H
#define AMPTRACE_TORCH_EVENTS_H

#include "amp_policy.h"
#include "observer.h"

struct amp_policy_row;

/* The observer's calls (struct obs_events in observer.h); events_begin
 * is the same start for a caller that has read the autocast state
 * already (the pure-Python fallback). */
unsigned events_begin_asking(struct obs_op *op, bool scope_backward,
			     int64_t seq_nr, bool (*autocast_any)(void));
unsigned events_begin(struct obs_op *op, bool scope_backward, int64_t seq_nr,
		      bool autocast_any);
void events_begin_args(const struct obs_args *inputs,
		       const struct obs_autocast *autocast);
void events_end(const struct obs_args *outputs, bool failed);

/* THE one place that picks the policy table (policy_choice.c): the table
 * of the running torch version, set by events_policy_table(). */
const struct amp_policy_row *events_policy_lookup(enum amp_device_type device,
						  const char *op,
						  const char *overload);
/* Picks the table for `torch_version` ("1.13.0a0") and says which, for
 * the trace: "1.13", or "newest, none for torch 1.12.1" (process
 * metadata "framework").  Called once, before any op is recorded. */
const char *events_policy_table(const char *torch_version);
/* The table version events_policy_lookup and the plan use. */
enum amp_torch_version events_policy_version(void);
/* Whether the running torch makes the casts it caches with grad mode on
 * (2.11 and later): a cast cached under no_grad then keeps grad when it is
 * reused; set with the table by events_policy_table(). */
bool events_cache_keeps_grad(void);

/* Whether torch.inference_mode is on in the calling thread (its casts
 * are not cached from torch 2.11 on). */
void events_set_inference_mode(bool enabled);
/* The class name of a custom autograd Function of the program's (a
 * torch.autograd.Function subclass): its apply and its backward node are
 * ops of the trace from now on. */
void events_custom_function(const char *name);
/* Whether the calling thread is inside custom_fwd's casting of a custom
 * Function's inputs (torch.amp's _cast); returns the previous answer. */
bool events_custom_casts(bool inside);
/* The calling thread's phase outside autograd nodes (forward, or
 * optimizer while an optimizer steps, backward in autograd.backward). */
void events_set_phase(enum amp_phase phase);
enum amp_phase events_phase(void);
/* An autocast region entered (depth after) or exited (depth before);
 * `scope->scope` must stay valid for the process's life. */
void events_scope(bool enter, const struct producer_scope *scope);
/* nn.Modules (the Python layer's forward hooks): a handle for a module's
 * path ("h.3.attn") and class name ("Attention"), made once per module
 * (0: out of room, the module goes unnamed); its forward starting and
 * ending on the calling thread; how many run there now.  The ops that
 * begin inside carry the innermost's names (FORMAT.md §3.2). */
int events_module_name(const char *path, const char *class_name);
void events_module_enter(int module);
void events_module_exit(int module);
int events_module_depth(void);
/* The region nesting dropped to 0: torch emptied this thread's cache. */
void events_cache_clear(void);
/* Emits an event built elsewhere (scaler), stamped with time and thread. */
void events_emit(struct producer_event *event);
/* An exception reached the calling thread's top level ("Type: text"):
 * when the last op that ended on this thread failed, an `op-error` diag
 * of that op carrying the text (the observer does not see it); false when
 * there is no such op. */
bool events_op_exception(const char *exception);
/* Non-reentrant activation checkpointing (torch 2.1+) stops recomputing
 * once backward has the tensors it needs, by an exception raised while
 * an op saves the last one and caught around the recompute: the ops it
 * unwinds on the calling thread end without a failure, until the
 * recompute's context exits (events_recompute_unwound), an op begins or
 * one ends without failing. */
void events_recompute_stopped(void);
/* The recompute's context exited: the stop's exception has unwound every
 * op that began inside it, and an op that fails from here (one that was
 * open when the recompute started) really failed. */
void events_recompute_unwound(void);
/* torch.compile (compiled.c).  While ignoring, this thread's calls are
 * not recorded (a graph being compiled runs on fake tensors); returns
 * the previous setting. */
bool events_set_ignoring(bool ignoring);
/* The op of the compiled call running on this thread (0: none): the
 * parent of the ops the call runs.  Returns the previous one. */
uint64_t events_set_compiled_parent(uint64_t op_id);
/* An op id, unique in the process. */
uint64_t events_new_op_id(void);
/* Backward ops of autograd sequence number `seq` differentiate op
 * `op_id` (a compiled call's graph, whose forward is no aten op). */
void events_link_forward(int64_t seq, uint64_t op_id);
/* The autocast regions open on this thread: nesting and innermost name. */
void events_regions(int *depth, const char **scope);
/* While paused, the calling thread's calls are not recorded (the bridge's
 * own torch ops).  Returns the previous state. */
bool events_pause(bool paused);
/* In a forked child: calls in flight belong to the parent. */
void events_after_fork(void);

#endif /* AMPTRACE_TORCH_EVENTS_H */
