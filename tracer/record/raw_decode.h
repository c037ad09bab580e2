/* The raw record decoder, generated from raw_schema.h (the encoder's
 * tables): a record becomes its kind's model struct, the one the
 * producer encoded from, its strings pointing into the record (each is
 * NUL-terminated there) and its tensors in storage the decoder owns. */
#ifndef AMPTRACE_RAW_DECODE_H
#define AMPTRACE_RAW_DECODE_H

#include "raw_schema.h"

#include <stdbool.h>
#include <stddef.h>

/* One decoded record; its strings are valid as long as the record is,
 * its tensors until the next raw_decode on the same struct. */
struct raw_decoded {
	uint16_t kind;    /* enum producer_kind or enum raw_kind */
	uint64_t time_ns; /* the record's time */
	union {
		struct producer_event event; /* the producer's kinds (thread 0) */
		struct amp_gpu_activity gpu_activity;
		struct raw_gpu_status gpu_status;
		struct raw_gpu_stats gpu_stats;
#define RAW_DECODED_MEMBER(name, number, model, fields) model name;
		RAW_STEP_KINDS(RAW_DECODED_MEMBER)
		RAW_PROCESS_KINDS(RAW_DECODED_MEMBER)
#undef RAW_DECODED_MEMBER
	};
	/* storage: the record's tensors */
	struct producer_tensor tensors[2 * RAW_MAX_TENSORS];
	size_t ntensors;
};

/* Decodes r (its size already checked against the mapping).  false when
 * the kind is unknown or the payload does not hold its fields. */
bool raw_decode(const struct raw_record *r, struct raw_decoded *d);
void raw_decoded_free(struct raw_decoded *d);

#endif /* AMPTRACE_RAW_DECODE_H */
