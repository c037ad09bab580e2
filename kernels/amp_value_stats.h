/* The value checks' questions of a tensor, answered in one pass: what
 * the CUDA module's value_stats entry computes on a GPU, and the host's
 * reference (the tests).  Written once for both compilers (AMP_HD, as
 * amp_scalar.h), and shipped with the PyTorch observer: includes nothing
 * but <math.h>.
 *
 * Of a result: its NaN and infinities, and its largest finite |x|.  Of
 * the f32 source of a cast, against the limits of the cast's target, the
 * raw numbers of the cast verdict (lib/diag_scan.h): finite |x| at or
 * above the overflow point, above 0, at or above the smallest normal,
 * above the zero point, and the sums of finite |x| (all, and those below
 * the smallest normal: the magnitude a cast flushes).  Counts are
 * doubles: exact to 2^53 values, and one type lets a partial be merged
 * field by field.  lib/diag_scan.h's amp_cast_verdict_of_stats judges a
 * cast source's. */
#ifndef AMP_VALUE_STATS_H
#define AMP_VALUE_STATS_H

#include <math.h>

#ifndef AMP_HD /* as amp_scalar.h defines it */
#ifdef __CUDACC__
#define AMP_HD __host__ __device__
#else
#define AMP_HD
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct amp_value_stats {
	double nan, inf, max_abs;
	double overflowed, nonzero, normal, above_zero, flushed_sum, sum;
};

/* A cast target's smallest normal, zero point and overflow point; a
 * result's check passes none (the cast fields stay 0). */
struct amp_value_limits {
	float tiny, zero, overflow;
	int cast; /* the limits apply */
};

static inline AMP_HD void amp_value_stats_init(struct amp_value_stats *s)
{
	s->nan = s->inf = s->max_abs = 0.0;
	s->overflowed = s->nonzero = s->normal = s->above_zero = 0.0;
	s->flushed_sum = s->sum = 0.0;
}

static inline AMP_HD void amp_value_stats_add(struct amp_value_stats *s,
					      float value,
					      const struct amp_value_limits *l)
{
	if (value != value) {
		s->nan += 1.0;
		return;
	}
	float a = fabsf(value);
	if (a == INFINITY) {
		s->inf += 1.0;
		return;
	}
	if (a > s->max_abs)
		s->max_abs = a;
	if (!l->cast)
		return;
	s->overflowed += a >= l->overflow;
	s->nonzero += a > 0.0f;
	s->above_zero += a > l->zero;
	s->sum += a;
	if (a >= l->tiny)
		s->normal += 1.0;
	else
		s->flushed_sum += a;
}

static inline AMP_HD void amp_value_stats_merge(struct amp_value_stats *s,
						const struct amp_value_stats *o)
{
	s->nan += o->nan;
	s->inf += o->inf;
	if (o->max_abs > s->max_abs)
		s->max_abs = o->max_abs;
	s->overflowed += o->overflowed;
	s->nonzero += o->nonzero;
	s->normal += o->normal;
	s->above_zero += o->above_zero;
	s->flushed_sum += o->flushed_sum;
	s->sum += o->sum;
}

#ifdef __cplusplus
}
#endif

#endif /* AMP_VALUE_STATS_H */
