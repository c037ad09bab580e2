/* The producer contract, one event at a time (producer_check.h): each
 * rule of ../PRODUCERS.md that one thread's events show, a row of the
 * table below and a test in check_<kind>. */
#include "producer_check.h"

#include "amp.h"
#include "producer.h"
#include "raw_schema.h"

#include <stddef.h>
#include <string.h>

/* The rules, as PRODUCERS.md states them. */
#define PRODUCER_RULES(X)                                                   \
	X(THREAD, "an event's thread is numbered from 1")                   \
	X(TIME, "a thread's events come in the order of their times")      \
	X(CODE, "a dtype, device, policy, phase or cache code is one the "  \
		"producer named")                                           \
	X(OP_ID, "an op's id is not 0 and grows on its thread")            \
	X(OP_NAME, "an op has a name and an overload (\"\" for none)")     \
	X(PARENT, "an op's parent_op_id is the innermost op open on its "   \
		  "thread")                                                 \
	X(END, "an op's END closes the innermost op open on its thread, "   \
	       "with its BEGIN's time")                                     \
	X(TENSORS, "an op has at most 255 inputs and 255 outputs, each "    \
		   "with an id and at most 8 dimensions")                   \
	X(ERROR, "a failed op (status not 0) says why")                     \
	X(CAST_OP, "a cast is for the innermost op open on its thread")    \
	X(CAST, "a cast changes a tensor's dtype, from a tensor with an "   \
		"id to one with an id (a compiled graph's: none), and a "   \
		"hit writes no bytes")                                      \
	X(CACHE_COUNTED, "a cache miss carries the cache's size after it "  \
			 "(FORMAT.md 3.5)")                                 \
	X(SCOPE, "a region's depth counts it: 1 for the outermost")        \
	X(TEXT, "a scaler event says what it is, a diag event its kind "    \
		"and message")

enum producer_rule {
#define RULE_ENUM(name, text) RULE_##name,
	PRODUCER_RULES(RULE_ENUM)
#undef RULE_ENUM
	RULE_COUNT
};

static const char *const rule_text[RULE_COUNT] = {
#define RULE_TEXT(name, text) [RULE_##name] = text,
	PRODUCER_RULES(RULE_TEXT)
#undef RULE_TEXT
};

_Static_assert(RULE_COUNT <= 32, "the reported set is a 32-bit mask");

/* Checks accumulate the first broken rule of an event. */
struct verdict {
	int broken; /* RULE_COUNT: none */
};

static void require(struct verdict *v, bool holds, enum producer_rule rule)
{
	if (!holds && v->broken == RULE_COUNT)
		v->broken = rule;
}

static bool valid_tensor(const struct producer_tensor *t)
{
	return t->id && t->ndim <= PRODUCER_MAX_DIMS &&
	       t->dtype < AMP_DTYPE_COUNT && t->device < AMP_DEVICE_TYPE_COUNT;
}

static bool valid_tensors(const struct producer_tensor *list, int32_t n)
{
	if (n < 0 || n > RAW_MAX_TENSORS)
		return false;
	for (int32_t i = 0; i < n; i++)
		if (!valid_tensor(&list[i]))
			return false;
	return true;
}

static uint64_t innermost_op(const struct producer_check *c)
{
	return c->nops > 0 && c->nops <= PRODUCER_CHECK_DEPTH
		       ? c->open_ops[c->nops - 1]
		       : 0;
}

static void check_op_begin(struct producer_check *c,
			   const struct producer_op *op, uint64_t time_ns,
			   struct verdict *v)
{
	require(v, op->op_id && op->op_id > c->last_op_id, RULE_OP_ID);
	require(v, op->op && op->overload, RULE_OP_NAME);
	require(v, op->phase < PRODUCER_PHASE_COUNT &&
		   op->device < AMP_DEVICE_TYPE_COUNT, RULE_CODE);
	/* ops open before the producer attached are not known */
	require(v, !op->parent_op_id || !c->nops ||
		   op->parent_op_id == innermost_op(c) ||
		   c->nops > PRODUCER_CHECK_DEPTH, RULE_PARENT);
	c->last_op_id = op->op_id > c->last_op_id ? op->op_id : c->last_op_id;
	if (c->nops < PRODUCER_CHECK_DEPTH) {
		c->open_ops[c->nops] = op->op_id;
		c->open_begin_ns[c->nops] = time_ns;
	}
	c->nops++;
}

static void check_op_end(struct producer_check *c,
			 const struct producer_op *op, struct verdict *v)
{
	require(v, op->op && op->overload, RULE_OP_NAME);
	require(v, op->phase < PRODUCER_PHASE_COUNT &&
		   op->policy < AMP_POLICY_COUNT &&
		   op->device < AMP_DEVICE_TYPE_COUNT, RULE_CODE);
	require(v, valid_tensors(op->inputs, op->ninputs) &&
		   valid_tensors(op->outputs, op->noutputs), RULE_TENSORS);
	require(v, !op->status || op->error, RULE_ERROR);
	if (!c->nops)
		return; /* began before the producer attached */
	if (c->nops <= PRODUCER_CHECK_DEPTH)
		require(v, op->op_id == c->open_ops[c->nops - 1] &&
			   op->begin_ns == c->open_begin_ns[c->nops - 1],
			RULE_END);
	c->nops--;
}

static void check_cast(const struct producer_check *c,
		       const struct producer_cast *cast, uint64_t time_ns,
		       struct verdict *v)
{
	require(v, !c->nops || cast->op_id == innermost_op(c) ||
		   c->nops > PRODUCER_CHECK_DEPTH, RULE_CAST_OP);
	require(v, cast->from < AMP_DTYPE_COUNT && cast->to < AMP_DTYPE_COUNT &&
		   cast->cache < AMP_CACHE_RESULT_COUNT, RULE_CODE);
	bool compiled = cast->origin && !strcmp(cast->origin, "compiled");
	require(v, cast->from != cast->to &&
		   (compiled || (cast->source.id && cast->result.id)) &&
		   (!compiled || cast->graph) && cast->begin_ns <= time_ns &&
		   (cast->cache != AMP_CACHE_HIT || !cast->bytes), RULE_CAST);
	require(v, cast->cache != AMP_CACHE_MISS || cast->cache_counted,
		RULE_CACHE_COUNTED);
}

static void check_scope(struct producer_check *c,
			const struct producer_scope *scope, bool enter,
			struct verdict *v)
{
	require(v, scope->device < AMP_DEVICE_TYPE_COUNT &&
		   scope->dtype < AMP_DTYPE_COUNT, RULE_CODE);
	/* regions opened before the producer attached count in depth */
	require(v, scope->depth >= (enter ? c->nregions + 1 : c->nregions) &&
		   scope->depth >= 1, RULE_SCOPE);
	if (enter)
		c->nregions++;
	else if (c->nregions)
		c->nregions--;
}

const char *producer_check(struct producer_check *c,
			   const struct producer_event *e)
{
	struct verdict v = { RULE_COUNT };

	require(&v, e->thread >= 1, RULE_THREAD);
	require(&v, e->time_ns >= c->last_ns, RULE_TIME);
	c->last_ns = e->time_ns;
	switch (e->kind) {
	case PRODUCER_OP_BEGIN:
		check_op_begin(c, &e->op, e->time_ns, &v);
		break;
	case PRODUCER_OP_END:
		check_op_end(c, &e->op, &v);
		break;
	case PRODUCER_CAST:
		check_cast(c, &e->cast, e->time_ns, &v);
		break;
	case PRODUCER_SCOPE_ENTER:
	case PRODUCER_SCOPE_EXIT:
		check_scope(c, &e->scope, e->kind == PRODUCER_SCOPE_ENTER, &v);
		break;
	case PRODUCER_SCALER:
		require(&v, e->scaler.what != NULL, RULE_TEXT);
		break;
	case PRODUCER_DIAG:
		require(&v, e->diag.kind && e->diag.message, RULE_TEXT);
		break;
	default:
		break;
	}
	if (v.broken == RULE_COUNT || c->reported & 1u << v.broken)
		return NULL;
	c->reported |= 1u << v.broken;
	return rule_text[v.broken];
}
