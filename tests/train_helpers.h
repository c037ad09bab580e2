/* Small helpers shared by the training suites (test_scaler, test_optim,
 * test_custom_op): tensors from literals, reading values back, a hook
 * that records scaler events and op names. */
#ifndef TRAIN_HELPERS_H
#define TRAIN_HELPERS_H

#include "amp.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

/* A 1-D tensor of `n` values given as doubles, converted to dtype. */
static inline amp_tensor *vec(enum amp_dtype dtype, enum amp_device_type device,
			      int n, const double *values)
{
	int64_t shape[1] = { n };
	amp_tensor *t = amp_from_data(1, shape, AMP_DTYPE_F64, device, values);
	amp_tensor *converted = amp_to(t, dtype);

	amp_tensor_free(t);
	ck_assert_ptr_nonnull(converted);
	return converted;
}
#define VEC(dtype, device, ...)                                              \
	vec(dtype, device,                                                   \
	    (int)(sizeof((double[]){ __VA_ARGS__ }) / sizeof(double)),       \
	    (double[]){ __VA_ARGS__ })

/* A leaf parameter (requires grad) from f32 values. */
static inline amp_tensor *param_from(int n, const double *values)
{
	amp_tensor *p = vec(AMP_DTYPE_F32, AMP_DEVICE_CPU, n, values);

	ck_assert_int_eq(amp_tensor_set_requires_grad(p, true), AMP_OK);
	return p;
}
#define PARAM(...)                                                           \
	param_from((int)(sizeof((double[]){ __VA_ARGS__ }) / sizeof(double)), \
		   (double[]){ __VA_ARGS__ })

/* Replaces p's .grad with the given values (p's dtype and device). */
static inline void set_grad(amp_tensor *p, int n, const double *values)
{
	amp_tensor *g = vec(amp_tensor_dtype(p), amp_tensor_device(p), n, values);

	ck_assert_int_eq(amp_tensor_set_grad(p, g), AMP_OK);
	amp_tensor_free(g);
}
#define SET_GRAD(p, ...)                                                     \
	set_grad(p, (int)(sizeof((double[]){ __VA_ARGS__ }) / sizeof(double)), \
		 (double[]){ __VA_ARGS__ })

/* Element i of t as a double (f32 values are exact in a double). */
static inline double at(const amp_tensor *t, int i)
{
	double values[64];

	ck_assert_int_le(amp_tensor_numel(t), 64);
	ck_assert_int_eq(amp_tensor_read(t, AMP_DTYPE_F64, values,
					 (size_t)amp_tensor_numel(t)),
			 AMP_OK);
	return values[i];
}

/* Element i of p's gradient. */
static inline double grad_at(const amp_tensor *p, int i)
{
	amp_tensor *g = amp_tensor_grad(p);

	ck_assert_ptr_nonnull(g);
	double value = at(g, i);
	amp_tensor_free(g);
	return value;
}

#define ck_assert_error(status, expected_status, text)                       \
	do {                                                                 \
		ck_assert_int_eq((status), (expected_status));              \
		ck_assert_str_eq(amp_last_error(), (text));                  \
	} while (0)

/* A recorder of scaler events and op names (in order). */
#define MAX_EVENTS 128
struct event_log {
	int nscaler;
	struct amp_scaler_event scaler[MAX_EVENTS];
	char what[MAX_EVENTS][16];
	int nops;
	char ops[MAX_EVENTS][48];
	enum amp_policy policy[MAX_EVENTS];
};

static inline void log_event(const struct amp_event *e, void *user)
{
	struct event_log *log = user;

	if (e->kind == AMP_EVENT_SCALER && log->nscaler < MAX_EVENTS) {
		log->scaler[log->nscaler] = e->scaler;
		snprintf(log->what[log->nscaler], sizeof log->what[0], "%s",
			 e->scaler.what);
		log->scaler[log->nscaler].what = log->what[log->nscaler];
		log->nscaler++;
	} else if (e->kind == AMP_EVENT_OP_END && log->nops < MAX_EVENTS &&
		   e->op.parent_op_id == 0) {
		snprintf(log->ops[log->nops], sizeof log->ops[0], "%s",
			 e->op.op);
		log->policy[log->nops++] = e->op.policy;
	}
}

/* "op1 op2 ..." of the recorded top-level ops. */
static inline const char *op_sequence(const struct event_log *log, char *buf,
				      size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < log->nops && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, i ? " %s" : "%s",
					 log->ops[i]);
	return buf;
}

#endif /* TRAIN_HELPERS_H */
