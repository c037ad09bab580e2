/* The producer contract (../PRODUCERS.md), checked one event at a time on
 * what a producer handed over: producer_emit runs it on every record it
 * writes in builds with AMPTRACE_PRODUCER_CHECKS (meson -Dproducer_checks,
 * on by default in debug builds), and writes a broken rule into the trace
 * as a `producer-contract` amp.diag event, never on the program's stderr.
 * What needs the whole trace (ids unique across threads, tensors made
 * before they are used) is the validator's (trace/validate.c). */
#ifndef AMPTRACE_PRODUCER_CHECK_H
#define AMPTRACE_PRODUCER_CHECK_H

#include "producer_event.h"

#include <stdbool.h>
#include <stdint.h>

/* What one thread's events left open: ops (innermost last) and regions. */
#define PRODUCER_CHECK_DEPTH 64
struct producer_check {
	uint64_t last_ns;
	uint64_t last_op_id;
	uint64_t open_ops[PRODUCER_CHECK_DEPTH];
	uint64_t open_begin_ns[PRODUCER_CHECK_DEPTH];
	int nops;             /* may pass PRODUCER_CHECK_DEPTH: not checked */
	int nregions;
	uint32_t reported;    /* rules already reported (bit per rule) */
};

/* Checks e, the next event of the thread `c` follows.  Returns NULL, or
 * the broken rule's text ("an op's END must close the innermost open
 * op"); each rule is returned once per thread (then NULL). */
const char *producer_check(struct producer_check *c,
			   const struct producer_event *e);

#endif /* AMPTRACE_PRODUCER_CHECK_H */
