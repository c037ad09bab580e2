/* Where the results of a no_grad region go (window_flow.h): a table from
 * tensor id to the undecided slots whose results it holds, shared by the
 * program's threads (a teacher may run on one, its student on another).
 * The table exists only while some slot is undecided, and is emptied as
 * soon as none is: a frozen backbone's region is decided by the head's
 * first op, and the rest of the step runs on the fast path. */
#include "window_flow.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Tensors marked at most, by all the regions in the table together (the
 * undecided ones, and those that ended while one was, until
 * sweep_ended()): tensors beyond are unmarked.  8 MB of table at most. */
#define MAX_MARKED (1u << 18)

struct marked {
	uint64_t id;      /* 0: empty */
	uint64_t slots;
};

atomic_bool window_flow_following;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t open_slots;    /* taken, not yet ended */
static uint64_t trained_slots; /* decided: reached training */
static uint64_t used_slots;    /* may still be in the table */
static struct marked *table;
static size_t table_size, table_count; /* size: a power of 2 */
static __thread int region_slot = -1;  /* the region open on this thread */

static uint64_t undecided(void)
{
	return open_slots & ~trained_slots;
}

/* Called with the lock held whenever the slots change. */
static void follow_or_forget(void)
{
	bool follow = undecided() != 0;

	if (!follow) {
		free(table);
		table = NULL;
		table_size = table_count = 0;
		used_slots = 0;
	}
	atomic_store_explicit(&window_flow_following, follow,
			      memory_order_relaxed);
}

static size_t hash(uint64_t id)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdULL;
	id ^= id >> 33;
	return (size_t)id;
}

static struct marked *find(uint64_t id)
{
	if (!table)
		return NULL;
	for (size_t i = hash(id) & (table_size - 1);; i = (i + 1) &
						       (table_size - 1)) {
		if (table[i].id == id)
			return &table[i];
		if (!table[i].id)
			return NULL;
	}
}

static void put(struct marked *entries, size_t size, uint64_t id,
		uint64_t slots)
{
	size_t i = hash(id) & (size - 1);

	while (entries[i].id && entries[i].id != id)
		i = (i + 1) & (size - 1);
	entries[i].id = id;
	entries[i].slots |= slots;
}

/* Room for one more, kept at most half full; false past MAX_MARKED or
 * out of memory. */
static bool room(void)
{
	if (table_count >= MAX_MARKED)
		return false;
	if (2 * (table_count + 1) <= table_size)
		return true;
	size_t size = table_size ? 2 * table_size : 1024;
	struct marked *grown = calloc(size, sizeof *grown);
	if (!grown)
		return false;
	for (size_t i = 0; i < table_size; i++)
		if (table[i].id)
			put(grown, size, table[i].id, table[i].slots);
	free(table);
	table = grown;
	table_size = size;
	return true;
}

static void mark(uint64_t id, uint64_t slots)
{
	struct marked *m = find(id);

	if (m)
		m->slots |= slots;
	else if (room()) {
		put(table, table_size, id, slots);
		table_count++;
	}
}

/* Called with the lock held when every slot is open or used: the marks
 * of the regions that ended leave the table, so their slots serve again.
 * Without it a program in which some region is always undecided (no
 * optimizer: each step's regions are judged when the next step ends)
 * runs out of slots after 64 regions, and every later region, a frozen
 * backbone's too, is an evaluation unheard.  Once per 64 regions at
 * most: the table's size each time. */
static void sweep_ended(void)
{
	size_t kept = 0;

	for (size_t i = 0; i < table_size; i++)
		if (table[i].id && !(table[i].slots &= open_slots))
			table[i].id = 0;
	used_slots = open_slots;
	if (!table)
		return;
	/* open addressing: the survivors are placed again, gaps closed */
	struct marked *old = table;
	struct marked *placed = calloc(table_size, sizeof *placed);
	if (!placed) {
		/* keep what can be kept: an emptied table forgets marks,
		 * never gives a slot an ended region's */
		memset(table, 0, table_size * sizeof *table);
		table_count = 0;
		return;
	}
	for (size_t i = 0; i < table_size; i++)
		if (old[i].id) {
			put(placed, table_size, old[i].id, old[i].slots);
			kept++;
		}
	free(old);
	table = placed;
	table_count = kept;
}

int window_flow_open(void)
{
	int slot = -1;

	pthread_mutex_lock(&lock);
	if (!~(open_slots | used_slots))
		sweep_ended();
	uint64_t taken = open_slots | used_slots;
	for (int i = 0; i < 64 && slot < 0; i++)
		if (!(taken & (1ull << i)))
			slot = i;
	if (slot >= 0) {
		open_slots |= 1ull << slot;
		used_slots |= 1ull << slot;
		trained_slots &= ~(1ull << slot);
		follow_or_forget();
	}
	pthread_mutex_unlock(&lock);
	region_slot = slot;
	return slot;
}

void window_flow_close(int slot)
{
	if (region_slot == slot)
		region_slot = -1;
}

bool window_flow_end(int slot)
{
	if (slot < 0 || slot > 63)
		return false;
	pthread_mutex_lock(&lock);
	bool trained = trained_slots & (1ull << slot);
	open_slots &= ~(1ull << slot);
	trained_slots &= ~(1ull << slot);
	follow_or_forget();
	pthread_mutex_unlock(&lock);
	return trained;
}

void window_flow_after_fork(void)
{
	pthread_mutex_init(&lock, NULL);
	open_slots = trained_slots = used_slots = 0;
	region_slot = -1;
	/* dropped, not freed: a thread of the parent may have been growing
	 * it (room() frees the old table before it stores the new one), and
	 * the child's copy is the parent's pages until written */
	table = NULL;
	table_size = table_count = 0;
	atomic_store_explicit(&window_flow_following, false,
			      memory_order_relaxed);
}

/* An op trains when autograd records it: grad on, and an input that
 * requires grad (a parameter, or what was computed from one). */
static bool trains(const struct obs_args *inputs, bool grad_enabled)
{
	for (int i = 0; grad_enabled && i < inputs->ntensors; i++)
		if (inputs->tensors[i].flags & PRODUCER_TENSOR_REQUIRES_GRAD)
			return true;
	return false;
}

uint64_t window_flow_inputs(const struct obs_args *inputs, bool grad_enabled)
{
	uint64_t slots = 0;

	if (!window_flow_followed())
		return 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; table && i < inputs->ntensors; i++) {
		const struct marked *m = inputs->tensors[i].id
			? find(inputs->tensors[i].id) : NULL;
		if (m)
			slots |= m->slots;
	}
	slots &= undecided();
	if (slots && trains(inputs, grad_enabled)) {
		trained_slots |= slots;
		slots = 0;
		follow_or_forget();
	}
	pthread_mutex_unlock(&lock);
	return slots;
}

void window_flow_outputs(uint64_t slots, const struct obs_args *outputs)
{
	if (!window_flow_followed())
		return;
	if (region_slot >= 0)
		slots |= 1ull << region_slot;
	if (!slots)
		return;
	pthread_mutex_lock(&lock);
	slots &= undecided();
	for (int i = 0; slots && i < outputs->ntensors; i++)
		if (outputs->tensors[i].id)
			mark(outputs->tensors[i].id, slots);
	pthread_mutex_unlock(&lock);
}
