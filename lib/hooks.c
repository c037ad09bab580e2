/* The hook API: callbacks registered for a mask of event kinds.
 * The dispatcher tests `amp_hook_mask` once per op, so with no hook
 * registered the cost is one predictable branch.  Registration is rare and
 * takes a mutex; emission walks a fixed slot array without locking.  A slot
 * is a seqlock: an emitter on another thread that reads it while a remove
 * and an add reuse it retries rather than pairing one hook's fn with
 * another's user pointer. */
#include "amp_internal.h"

#include <pthread.h>
#include <time.h>

#define AMP_MAX_HOOKS 32

struct hook_slot {
	atomic_uint sequence; /* odd while the slot is being rewritten */
	atomic_uint mask;     /* 0 = free */
	_Atomic(amp_hook_fn) fn;
	_Atomic(void *) user;
};

static struct hook_slot slots[AMP_MAX_HOOKS];
/* One past the highest slot ever used: emission walks only these (a
 * recorder alone is one slot, not 32).  It only grows, so an emitter that
 * reads a stale value misses at most a hook added during its event. */
static atomic_int slots_used;
static pthread_mutex_t hooks_lock = PTHREAD_MUTEX_INITIALIZER;
atomic_uint amp_hook_mask;

/* Rewrites a slot; called with hooks_lock held (one writer at a time). */
static void slot_write(struct hook_slot *slot, unsigned mask, amp_hook_fn fn,
		       void *user)
{
	unsigned sequence =
		atomic_load_explicit(&slot->sequence, memory_order_relaxed);

	atomic_store_explicit(&slot->sequence, sequence + 1,
			      memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&slot->fn, fn, memory_order_relaxed);
	atomic_store_explicit(&slot->user, user, memory_order_relaxed);
	atomic_store_explicit(&slot->mask, mask, memory_order_relaxed);
	atomic_store_explicit(&slot->sequence, sequence + 2,
			      memory_order_release);
}

/* A consistent (mask, fn, user) of a slot. */
static unsigned slot_read(struct hook_slot *slot, amp_hook_fn *fn, void **user)
{
	unsigned sequence, mask;

	do {
		sequence = atomic_load_explicit(&slot->sequence,
						memory_order_acquire);
		mask = atomic_load_explicit(&slot->mask, memory_order_relaxed);
		*fn = atomic_load_explicit(&slot->fn, memory_order_relaxed);
		*user = atomic_load_explicit(&slot->user, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
	} while ((sequence & 1) ||
		 sequence != atomic_load_explicit(&slot->sequence,
						  memory_order_relaxed));
	return mask;
}

static void recompute_mask(void)
{
	unsigned mask = 0;

	for (int i = 0; i < AMP_MAX_HOOKS; i++)
		mask |= atomic_load(&slots[i].mask);
	atomic_store(&amp_hook_mask, mask);
}

int amp_hook_add(unsigned mask, amp_hook_fn fn, void *user)
{
	int handle = -1;

	AMP_ASSERT(fn);
	mask &= AMP_EVENT_MASK_ALL;
	if (!mask)
		return amp_error(AMP_ERR_INVALID, "amp_hook_add: empty mask");
	pthread_mutex_lock(&hooks_lock);
	for (int i = 0; i < AMP_MAX_HOOKS; i++) {
		if (atomic_load(&slots[i].mask) == 0) {
			slot_write(&slots[i], mask, fn, user);
			handle = i + 1;
			if (handle > atomic_load(&slots_used))
				atomic_store_explicit(&slots_used, handle,
						      memory_order_release);
			break;
		}
	}
	recompute_mask();
	pthread_mutex_unlock(&hooks_lock);
	if (handle < 0)
		return amp_error(AMP_ERR_STATE, "amp_hook_add: more than %d hooks",
				 AMP_MAX_HOOKS);
	return handle;
}

void amp_hook_remove(int handle)
{
	if (handle < 1 || handle > AMP_MAX_HOOKS)
		return;
	pthread_mutex_lock(&hooks_lock);
	slot_write(&slots[handle - 1], 0, NULL, NULL);
	recompute_mask();
	pthread_mutex_unlock(&hooks_lock);
}

uint64_t amp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static atomic_uint_fast64_t next_thread_number = 1;
/* Not initial-exec: the PyTorch bridge dlopen()s libamp into a Python
 * that has used up glibc's static TLS reserve ("cannot allocate memory
 * in static TLS block"). */
static _Thread_local uint64_t thread_number;

uint64_t amp_thread_number(void)
{
	if (!thread_number)
		thread_number = atomic_fetch_add(&next_thread_number, 1);
	return thread_number;
}

void amp_hook_emit(struct amp_event *event)
{
	unsigned bit = AMP_EVENT_MASK(event->kind);

	if (!(atomic_load_explicit(&amp_hook_mask, memory_order_relaxed) & bit))
		return;
	if (!event->time_ns)
		event->time_ns = amp_now_ns();
	if (!event->thread)
		event->thread = amp_thread_number();
	int used = atomic_load_explicit(&slots_used, memory_order_acquire);
	for (int i = 0; i < used; i++) {
		amp_hook_fn fn;
		void *user;
		if (!(atomic_load_explicit(&slots[i].mask, memory_order_relaxed) &
		      bit))
			continue;
		if (slot_read(&slots[i], &fn, &user) & bit)
			fn(event, user);
	}
}

const char *amp_phase_name(enum amp_phase phase)
{
	static const char *const names[AMP_PHASE_COUNT] = {
		[AMP_PHASE_FORWARD] = "forward",
		[AMP_PHASE_BACKWARD] = "backward",
		[AMP_PHASE_OPTIMIZER] = "optimizer",
	};
	return phase < AMP_PHASE_COUNT ? names[phase] : "unknown";
}

const char *amp_cache_result_name(enum amp_cache_result result)
{
	static const char *const names[AMP_CACHE_RESULT_COUNT] = {
		[AMP_CACHE_HIT] = "hit",
		[AMP_CACHE_MISS] = "miss",
		[AMP_CACHE_UNCACHEABLE] = "uncacheable",
		[AMP_CACHE_DISABLED] = "disabled",
	};
	return result < AMP_CACHE_RESULT_COUNT ? names[result] : "unknown";
}
