/* The producer (see producer.h and raw.h): writes events into the raw
 * stream, one MAP_SHARED file per thread.
 *
 * Why this shape:
 *   - Each thread writes its own file through a MAP_SHARED mapping: an
 *     event costs one bounded encode into memory and one release store, no
 *     lock and no system call (one mmap per RAW_CHUNK bytes).  Formatting
 *     JSON happens in `amptrace run`, another process.
 *   - Pages of a shared file mapping belong to the page cache, so whatever
 *     the process completed survives abort(), SIGSEGV and SIGKILL: the
 *     flush granularity is one event.
 *   - GPU activities arrive in batches on whichever thread the profiler
 *     delivers them and go, under a lock, into a stream of their own
 *     (tgpu.raw), written like a thread's.
 *   - It needs libamp's header (the enums' sizes, GPU activities) but not
 *     the library: a producer that never loads libamp (the PyTorch
 *     bridge) links it alone.
 */
#include "producer.h"

#include "libamp_encode.h"
#include "proc_file.h"
#include "producer_internal.h"
#include "raw.h"
#include "xfsz.h"
#ifdef AMPTRACE_PRODUCER_CHECKS
#include "producer_check.h"
#include "raw_decode.h"
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Weak: the enum names a producer may take from libamp
 * (producer_amp_names), NULL where the process has no libamp. */
#pragma weak amp_dtype_name
#pragma weak amp_dtype_profiler_name
#pragma weak amp_policy_name
#pragma weak amp_device_type_name
#pragma weak amp_phase_name
#pragma weak amp_cache_result_name

/* A thread maps its file RAW_WINDOW_CHUNKS chunks at a time: one mmap and
 * one munmap per window instead of per chunk (a third of what a fresh
 * page costs the program here, with the populate in map_chunk_of). */
#define RAW_WINDOW_CHUNKS 16
#define RAW_WINDOW ((size_t)RAW_WINDOW_CHUNKS * RAW_CHUNK)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Per-thread writer state.  `generation` ties it to one process image:
 * after fork() the child starts a new generation and its inherited state
 * is dropped unused.  It holds no file descriptor: the program owns its
 * descriptor table and may close every number it did not open itself
 * (closefrom, os.closerange, daemon libraries) and get the same number
 * back for a file of its own; a kept descriptor would then extend and map
 * the program's file.  The file is opened by path for each chunk and
 * closed at once; the mapping alone keeps it. */
struct thread_writer {
	uint64_t amp_thread;   /* whose stream: names its file */
	uint8_t *chunk;        /* the current chunk, or NULL */
	uint32_t offset;       /* next record, inside chunk */
	uint64_t chunk_index;
	uint8_t *window;       /* the mapping chunk lies in (map_chunk_of) */
	uint64_t window_first; /* the index of its first chunk */
	unsigned generation;
	int suffix;            /* the file is t<thread>-<suffix>.raw when > 0 */
	bool spilled;          /* the file is in the spill directory */
	bool continued;        /* ... named c<name>: it continues a stream */
	bool busy;             /* inside producer_emit: a re-entrant event drops */
	uint32_t unreported;   /* bytes written, not yet in raw_bytes */
	bool failed;           /* could not create the file: events drop */
};

/* initial-exec: no call on the hot path.  A producer dlopen()ed late
 * (the PyTorch bridge, loaded into Python after libtorch) cannot have it:
 * glibc keeps only a small reserve of static TLS for late modules. */
static PRODUCER_TLS struct thread_writer writer;

/* The name the calling thread's stream carries, when its runtime named
 * it (producer_set_thread_name); else the OS thread name. */
static __thread char thread_name[32];
_Static_assert(sizeof thread_name ==
	       sizeof ((struct raw_thread_header *)0)->name,
	       "a thread name fits the raw header as it is");

#ifdef AMPTRACE_PRODUCER_CHECKS
/* A thread's contract state and room to decode its records into (~50
 * KiB: made on its first event, freed at its exit). */
struct checked {
	struct producer_check check;
	struct raw_decoded decoded;
};
static __thread struct checked *checked;

static void checked_free(void)
{
	free(checked);
	checked = NULL;
}

#endif

static char process_dir[PATH_MAX + 32];
/* p<pid>/exit and the pid it belongs to, made with the directory: marking
 * the exit happens inside _exit (recorder_exit.c), where it should do no
 * more than open and close, and where a vfork child, which shares this
 * memory, must not mark its parent's exit. */
static char exit_path[sizeof process_dir + 8];
static pid_t process_pid;
static char raw_root[PATH_MAX];
/* Where streams go on when raw_root is full (AMPTRACE_RAW_SPILL), or "";
 * spill_dir is this process's directory there, made when first needed. */
static char spill_root[PATH_MAX];
static char spill_dir[sizeof spill_root + 64];
static struct producer_info info;
static char framework[128];
static char policy_table[32];
/* amptrace's pid (AMPTRACE_PID): once it is gone nobody converts the raw
 * files, so threads stop recording (and remove their file) instead of
 * filling memory.  Checked once per chunk. */
static pid_t converter_pid;
static atomic_uint generation = 1;
static atomic_bool attached;
static atomic_bool warned;
/* bytes this process's streams wrote (each thread tells every 64 KiB) */
static _Atomic uint64_t raw_bytes;

static void warn_once(const char *what, const char *path)
{
	if (atomic_exchange(&warned, true))
		return;
	fprintf(stderr, "amptrace recorder: %s %s: %s (events of this thread "
		"are not recorded)\n", what, path, strerror(errno));
}

/* ------------------------------------------------------- thread files */

static void writer_drop(struct thread_writer *w)
{
	if (w->chunk)
		munmap(w->window, RAW_WINDOW);
	*w = (struct thread_writer){ .generation = w->generation,
				     .busy = w->busy };
}

static bool converter_gone(void)
{
	int saved = errno;
	bool gone = converter_pid > 0 && kill(converter_pid, 0) != 0 &&
		    errno == ESRCH;

	errno = saved;
	return gone;
}

/* Room kept free at every chunk's end: the next-chunk marker, or the
 * recording-stopped record and its thread-end marker (stop_recording). */
#define STOP_MESSAGE_MAX 511
#define STOP_RESERVE (sizeof(struct raw_record) + 16 + 2 + 17 + 2 + \
		      STOP_MESSAGE_MAX + 7 + 8)

/* Set once MADV_POPULATE_WRITE failed with EINVAL (Linux before 5.14):
 * from then on populate_chunk maps chunks in with MAP_POPULATE. */
static atomic_bool populate_by_mmap;

void producer_populate_by_mmap(void)
{
	atomic_store(&populate_by_mmap, true);
}

/* Maps the pages of chunk `index` (at `chunk`, its space reserved) into
 * the process with one system call instead of one page fault per page on
 * the hot path.  Before Linux 5.14 madvise has no MADV_POPULATE_WRITE:
 * there the chunk is mapped again over its own slot of the window (same
 * file, same offset, so the window stays whole) with MAP_POPULATE,
 * which faults a shared mapping's pages in for reading: on tmpfs, where
 * the raw files live, that maps them writable too.
 * Returns false only when that mapping failed: the slot may then be a
 * hole, and the chunk must not be used. */
static bool populate_chunk(int fd, uint8_t *chunk, uint64_t index)
{
	if (!atomic_load_explicit(&populate_by_mmap, memory_order_relaxed)) {
		if (madvise(chunk, RAW_CHUNK, MADV_POPULATE_WRITE) == 0 ||
		    errno != EINVAL)
			return true; /* else pages fault in as written */
		atomic_store(&populate_by_mmap, true);
	}
	return mmap(chunk, RAW_CHUNK, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd,
		    (off_t)(index * RAW_CHUNK)) != MAP_FAILED;
}

/* Growing a file past RLIMIT_FSIZE (ulimit -f) raises SIGXFSZ, whose
 * default kills the program.  The recorder's own growth must fail with
 * EFBIG instead (recording stops, as when the directory is full): the
 * signal is blocked around it, and one it raised is taken back before the
 * mask returns (one the program had pending already is left to it). */
/* Reserves chunk `index` of the file open on `fd`: the space first, since
 * a write into a file page that the file system cannot back (tmpfs full)
 * is a SIGBUS that would kill the traced program. */
static bool reserve_chunk(int fd, uint64_t index)
{
	int err = xfsz_reserve(fd, (off_t)(index * RAW_CHUNK), RAW_CHUNK);

	errno = err;
	return err == 0;
}

/* Makes chunk `index` of the file open on `fd` current, its pages reserved
 * first (the converter reads these pages too).  The window may reach past
 * the end of the file: only reserved chunks are ever touched.  The caller
 * closes `fd`: the mapping keeps the file. */
static bool map_chunk_of(struct thread_writer *w, int fd, uint64_t index)
{
	if (!reserve_chunk(fd, index))
		return false;
	uint8_t *window = w->window;
	uint64_t first = w->window_first;
	if (!w->chunk || index >= first + RAW_WINDOW_CHUNKS) {
		void *mapped = mmap(NULL, RAW_WINDOW, PROT_READ | PROT_WRITE,
				    MAP_SHARED, fd, (off_t)(index * RAW_CHUNK));
		if (mapped == MAP_FAILED)
			return false;
		window = mapped;
		first = index;
	}
	uint8_t *chunk = window + (index - first) * RAW_CHUNK;
	if (!populate_chunk(fd, chunk, index)) {
		/* The current chunk (in another slot) is untouched: the
		 * caller ends the stream there. */
		if (window != w->window)
			munmap(window, RAW_WINDOW);
		return false;
	}
	uint8_t *old = w->chunk, *old_window = w->window;
	uint32_t old_offset = w->offset;
	w->chunk = chunk;
	w->chunk_index = index;
	w->offset = 0;
	w->window = window;
	w->window_first = first;
	if (old) {
		/* Only now that the next chunk exists may the reader follow. */
		struct raw_record *marker = (struct raw_record *)(old + old_offset);
		atomic_store_explicit(&marker->size, RAW_SIZE_NEXT_CHUNK,
				      memory_order_release);
		if (old_window != window)
			munmap(old_window, RAW_WINDOW);
	}
	return true;
}

static void stream_path(char *path, size_t size, const struct thread_writer *w);

/* The next chunk of w's stream, its file opened by path for the while. */
static bool map_next_chunk(struct thread_writer *w)
{
	char path[sizeof spill_dir + 64];

	stream_path(path, sizeof path, w);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool mapped = map_chunk_of(w, fd, w->chunk_index + 1);
	int saved = errno;
	close(fd);
	errno = saved;
	return mapped;
}

static pthread_key_t exit_key;

/* Thread exit (a pthread key destructor): end the stream and give the
 * mapping back, so short-lived threads cost nothing once gone. */
static void on_thread_exit(void *unused)
{
	struct thread_writer *w = &writer;

	(void)unused;
	producer_steps_thread_exit();
	if (!w->chunk ||
	    w->generation != atomic_load_explicit(&generation,
						  memory_order_relaxed))
		return;
	struct raw_record *marker = (struct raw_record *)(w->chunk + w->offset);
	atomic_store_explicit(&marker->size, RAW_SIZE_THREAD_END,
			      memory_order_release);
	writer_drop(w);
	w->failed = true; /* a late event must not reopen the file */
#ifdef AMPTRACE_PRODUCER_CHECKS
	checked_free();
#endif
}

static void record_commit(struct thread_writer *w, struct raw_record *r,
			  uint16_t kind, uint64_t time_ns, const uint8_t *end);

/* p<pid>/stopped tells `amptrace run` that recording stopped for want of
 * room, and why: the first stop's error text (a few bytes: it fits where
 * a chunk did not).  A stream that could not even begin has no record to
 * say so in: the converter reports it from this file. */
static void mark_stopped(int err)
{
	char path[sizeof process_dir + 16];
	struct xfsz_block block;

	snprintf(path, sizeof path, "%s/stopped", process_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	char reason[128];
	int len = snprintf(reason, sizeof reason, "%d %s\n", err, strerror(err));
	xfsz_block(&block);
	ssize_t written = write(fd, reason, (size_t)len);
	xfsz_unblock(&block);
	(void)written; /* the file's existence is the message */
	close(fd);
}

/* The raw directory is full: this stream ends here, cleanly.  The
 * program runs on; its last record says where and why, as an amp.diag
 * event `recording-stopped` that the converter passes through like any
 * other (it fits in the STOP_RESERVE every chunk keeps), then the
 * stream's end marker lets the converter give the file's space back. */
static void stop_recording(struct thread_writer *w, uint64_t amp_thread,
			   int err)
{
	char message[STOP_MESSAGE_MAX + 1];
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(message, sizeof message,
		 "recording stopped here: no room for more raw events in %.200s "
		 "(%.60s); later events of this %s are not in the trace, the "
		 "program ran on", w->spilled ? spill_root : raw_root,
		 strerror(err),
		 amp_thread == RAW_GPU_STREAM ? "process's GPU stream"
					      : "thread");
	struct producer_event e = {
		.kind = PRODUCER_DIAG,
		.time_ns = (uint64_t)ts.tv_sec * 1000000000u +
			   (uint64_t)ts.tv_nsec,
		.thread = amp_thread,
		.diag = { .kind = "recording-stopped", .message = message },
	};
	struct raw_record *r = (struct raw_record *)(w->chunk + w->offset);
	record_commit(w, r, PRODUCER_DIAG, e.time_ns,
		      raw_event_encode((uint8_t *)(r + 1), &e));
	struct raw_record *end = (struct raw_record *)(w->chunk + w->offset);
	atomic_store_explicit(&end->size, RAW_SIZE_THREAD_END,
			      memory_order_release);
	writer_drop(w);
	w->failed = true;
	mark_stopped(err);
}

/* The file of w's stream: t<n>.raw, tgpu.raw, or with a -<suffix> when
 * that name was taken (a thread number seen again), in this process's
 * directory or, once spilled, in its spill directory; there a stream
 * that began in the raw directory goes on in c<name> (the converter
 * reaches it from the stream, never as a thread of its own). */
static void stream_path(char *path, size_t size, const struct thread_writer *w)
{
	char name[24] = "gpu";
	char tail[16] = "";

	if (w->amp_thread != RAW_GPU_STREAM)
		snprintf(name, sizeof name, "%llu",
			 (unsigned long long)w->amp_thread);
	if (w->suffix > 0)
		snprintf(tail, sizeof tail, "-%d", w->suffix);
	snprintf(path, size, "%s/%st%s%s.raw",
		 w->spilled ? spill_dir : process_dir, w->continued ? "c" : "",
		 name, tail);
}

/* The stream's first chunk begins with its header; the magic goes last,
 * so the converter reads a whole header or none. */
static void write_header(struct thread_writer *w)
{
	struct raw_thread_header *h = (struct raw_thread_header *)w->chunk;

	h->version = RAW_VERSION;
	h->header_size = (uint32_t)((sizeof *h + 7) & ~(size_t)7);
	h->amp_thread = w->amp_thread;
	h->os_tid = (int64_t)syscall(SYS_gettid);
	if (w->amp_thread == RAW_GPU_STREAM)
		snprintf(h->name, sizeof h->name, "gpu");
	else if (thread_name[0])
		memcpy(h->name, thread_name, sizeof h->name);
	else
		pthread_getname_np(pthread_self(), h->name, sizeof h->name);
	h->name[sizeof h->name - 1] = '\0';
	atomic_store_explicit(&h->magic, RAW_THREAD_MAGIC, memory_order_release);
	w->offset = h->header_size;
}

/* Creates w's file (the first free suffix, a continuation keeps its
 * stream's) in its directory and maps its first chunk; false with errno
 * when there is no room or no file. */
static bool create_stream(struct thread_writer *w)
{
	char path[sizeof spill_dir + 64];
	int fd = -1;

	if (w->spilled && mkdir(spill_dir, 0700) != 0 && errno != EEXIST)
		return false;
	for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
		if (w->continued && attempt > 0)
			break;
		if (!w->continued)
			w->suffix = attempt;
		stream_path(path, sizeof path, w);
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		if (!converter_gone())
			warn_once("cannot create", path);
		return false;
	}
	bool mapped = map_chunk_of(w, fd, 0);
	int err = errno;
	close(fd);
	if (!mapped) {
		unlink(path);
		errno = err;
		return false;
	}
	write_header(w);
	return true;
}

/* p<pid>/unbegun: a stream could not even begin, so no record of it
 * says it stopped; the converter says so for it. */
static void mark_unbegun(void)
{
	char path[sizeof process_dir + 16];

	snprintf(path, sizeof path, "%s/unbegun", process_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
}

static bool can_spill(const struct thread_writer *w, int err)
{
	return err == ENOSPC && *spill_root && !w->spilled;
}

static bool writer_open(struct thread_writer *w, uint64_t amp_thread)
{
	w->amp_thread = amp_thread;
	bool created = create_stream(w);
	if (!created && can_spill(w, errno)) {
		w->spilled = true;
		created = create_stream(w);
	}
	if (!created) {
		/* No room (amptrace run says so, and the trace from the
		 * reason left here): the program's stderr stays its own. */
		if (errno == ENOSPC || errno == EFBIG) {
			mark_stopped(errno);
			mark_unbegun();
		}
		return false;
	}
	if (amp_thread != RAW_GPU_STREAM)
		pthread_setspecific(exit_key, w);
	return true;
}

/* The raw directory is full: the stream goes on in the spill directory,
 * in c<its file's name>, which the converter follows from the
 * RAW_SIZE_MOVED marker left here (the disk holds what memory could not,
 * rather than recording stopping). */
static bool spill_stream(struct thread_writer *w)
{
	struct thread_writer next = { .amp_thread = w->amp_thread,
				      .suffix = w->suffix,
				      .generation = w->generation,
				      .busy = w->busy, .spilled = true,
				      .continued = true };

	if (!create_stream(&next))
		return false;
	/* Only now that the new file is whole may the reader follow. */
	struct raw_record *marker = (struct raw_record *)(w->chunk + w->offset);
	atomic_store_explicit(&marker->size, RAW_SIZE_MOVED,
			      memory_order_release);
	munmap(w->window, RAW_WINDOW);
	*w = next;
	return true;
}

/* Room for a record of at most `payload` bytes in w's stream, opened on
 * first use; NULL when the stream cannot be written (events drop). */
static struct raw_record *record_reserve(struct thread_writer *w,
					 size_t payload, uint64_t amp_thread)
{
	unsigned gen = atomic_load_explicit(&generation, memory_order_relaxed);

	if (__builtin_expect(w->generation != gen, 0)) {
		/* First record of this stream, or inherited across fork(). */
		if (w->generation)
			writer_drop(w);
		*w = (struct thread_writer){ .generation = gen, .busy = w->busy };
	}
	if (w->failed)
		return NULL;
	size_t bound = (sizeof(struct raw_record) + payload + 7) & ~(size_t)7;
	if (__builtin_expect(!w->chunk, 0) && !writer_open(w, amp_thread)) {
		w->failed = true;
		return NULL;
	}
	if (__builtin_expect(w->offset + bound + STOP_RESERVE > RAW_CHUNK, 0)) {
		if (converter_gone()) {
			char path[sizeof spill_dir + 64];
			stream_path(path, sizeof path, w);
			unlink(path);
			writer_drop(w);
			w->failed = true;
			return NULL;
		}
		bool mapped = map_next_chunk(w);
		if (mapped)
			producer_steps_chunk();
		if (!mapped) {
			int err = errno;
			if (!can_spill(w, err) || !spill_stream(w)) {
				stop_recording(w, amp_thread, err);
				return NULL;
			}
		}
	}
	return (struct raw_record *)(w->chunk + w->offset);
}

/* Publishes the record that ends at `end`: its size goes last, with
 * release order, so the reader sees all of it or nothing. */
static void record_commit(struct thread_writer *w, struct raw_record *r,
			  uint16_t kind, uint64_t time_ns, const uint8_t *end)
{
	uint32_t size = (uint32_t)(((size_t)(end - (uint8_t *)r) + 7) &
				   ~(size_t)7);

	r->kind = kind;
	r->reserved = 0;
	r->time_ns = time_ns;
	w->offset += size;
	/* the size limit's measure, told in 64 KiB steps (no atomic per
	 * record) */
	w->unreported += size;
	if (__builtin_expect(w->unreported >= 65536, 0)) {
		atomic_fetch_add_explicit(&raw_bytes, w->unreported,
					  memory_order_relaxed);
		w->unreported = 0;
	}
	atomic_store_explicit(&r->size, size, memory_order_release);
}

/* ------------------------------------------------------------ GPU stream */

/* The GPU stream: one per process image, shared by whichever threads
 * deliver activities, hence the lock (batches are rare: one per buffer). */
static struct thread_writer gpu_writer;
static pthread_mutex_t gpu_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t gpu_lost;        /* activities that found no room */
static uint64_t gpu_aggregated;  /* activities of folded ops: counted */

/* A new recording (attach, a forked child) counts from nothing. */
static void gpu_counts_reset(void)
{
	gpu_lost = 0;
	gpu_aggregated = 0;
}

void producer_gpu_activities(const struct amp_gpu_activity *activities,
			     size_t count)
{
	if (!atomic_load(&attached))
		return;
	pthread_mutex_lock(&gpu_lock);
	for (size_t i = 0; i < count; i++) {
		const struct amp_gpu_activity *a = &activities[i];
		if (producer_steps_folded_op(a->op_id)) {
			gpu_aggregated++;
			continue;
		}
		struct raw_record *r =
			record_reserve(&gpu_writer, raw_bound_gpu_activity(a),
				       RAW_GPU_STREAM);
		if (!r) {
			gpu_lost++;
			continue; /* the writer has failed: the rest are lost */
		}
		uint8_t *p = raw_encode_gpu_activity((uint8_t *)(r + 1), a);
		record_commit(&gpu_writer, r, RAW_KIND_GPU_ACTIVITY, a->start_ns,
			      p);
	}
	pthread_mutex_unlock(&gpu_lock);
}

void producer_gpu_status(uint64_t thread, uint64_t time_ns, int result,
			 const char *reason)
{
	struct thread_writer *w = &writer;

	if (!atomic_load(&attached))
		return;
	struct raw_gpu_status status = { result, reason };
	struct raw_record *r = record_reserve(w, raw_bound_gpu_status(&status),
					      thread);
	if (!r)
		return;
	uint8_t *p = raw_encode_gpu_status((uint8_t *)(r + 1), &status);
	record_commit(w, r, RAW_KIND_GPU_STATUS, time_ns, p);
}

void producer_rank(int rank, uint64_t thread, uint64_t time_ns)
{
	struct thread_writer *w = &writer;

	if (w->busy || !atomic_load(&attached) || rank < 0)
		return;
	w->busy = true;
	struct raw_rank learned = { rank };
	struct raw_record *r = record_reserve(w, raw_bound_rank(&learned),
					      thread);
	if (r)
		record_commit(w, r, RAW_KIND_RANK, time_ns,
			      raw_encode_rank((uint8_t *)(r + 1), &learned));
	w->busy = false;
}

/* The counts, then the end of the GPU stream. */
void producer_gpu_stats(const struct amp_gpu_profiler_stats *stats)
{
	pthread_mutex_lock(&gpu_lock);
	struct raw_gpu_stats counts = { *stats, gpu_lost, gpu_aggregated };
	struct raw_record *r = record_reserve(&gpu_writer,
					      raw_bound_gpu_stats(&counts),
					      RAW_GPU_STREAM);
	if (r) {
		uint8_t *p = raw_encode_gpu_stats((uint8_t *)(r + 1), &counts);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		record_commit(&gpu_writer, r, RAW_KIND_GPU_STATS,
			      (uint64_t)ts.tv_sec * 1000000000u +
				      (uint64_t)ts.tv_nsec,
			      p);
		struct raw_record *marker =
			(struct raw_record *)(gpu_writer.chunk + gpu_writer.offset);
		atomic_store_explicit(&marker->size, RAW_SIZE_THREAD_END,
				      memory_order_release);
		writer_drop(&gpu_writer);
		gpu_writer.failed = true;
	}
	pthread_mutex_unlock(&gpu_lock);
}

/* ---------------------------------------------------------------- events */

/* Room for a record of `bound` payload bytes in the calling thread's
 * stream, the thread marked busy until emit_commit; NULL: the event
 * drops (not recording, re-entered, not a recorded kind, no room). */
static inline struct raw_record *emit_reserve(size_t bound, uint64_t thread)
{
	struct thread_writer *w = &writer;

	if (w->busy || !atomic_load_explicit(&attached, memory_order_relaxed) ||
	    !bound)
		return NULL;
	w->busy = true;
	struct raw_record *r = record_reserve(w, bound, thread);
	if (!r)
		w->busy = false;
	return r;
}

#ifdef AMPTRACE_PRODUCER_CHECKS
/* The record just written, decoded as the converter will, against the
 * contract; a broken rule goes into the stream right after it as a
 * `producer-contract` diag (the program's stderr stays its own). */
static void check_record(struct thread_writer *w, const struct raw_record *r,
			 uint64_t thread)
{
	if (!checked && !(checked = calloc(1, sizeof *checked)))
		return;
	if (!raw_decode(r, &checked->decoded))
		return; /* the converter counts it as a raw error */
	checked->decoded.event.thread = thread;
	const char *broken = producer_check(&checked->check,
					    &checked->decoded.event);
	if (!broken)
		return;
	struct producer_event e = {
		.kind = PRODUCER_DIAG, .time_ns = r->time_ns, .thread = thread,
		.diag = { .kind = "producer-contract", .message = broken },
	};
	struct raw_record *diag = record_reserve(w, raw_event_bound(&e), thread);
	if (diag)
		record_commit(w, diag, PRODUCER_DIAG, e.time_ns,
			      raw_event_encode((uint8_t *)(diag + 1), &e));
}
#endif

static inline void emit_commit(struct raw_record *r, uint16_t kind,
			       uint64_t time_ns, const uint8_t *end,
			       uint64_t thread)
{
	record_commit(&writer, r, kind, time_ns, end);
#ifdef AMPTRACE_PRODUCER_CHECKS
	check_record(&writer, r, thread);
#else
	(void)thread;
#endif
	writer.busy = false;
}

/* Whether the calling thread records now: attached, and not inside
 * producer_emit already. */
static inline bool recording(void)
{
	return !writer.busy &&
	       atomic_load_explicit(&attached, memory_order_relaxed);
}

/* A diag with keys (../producer_keys.h: the PyTorch bridge's note of an
 * FSDP policy) is a fact the per-step aggregates cannot hold (a diag row
 * keeps a kind and a message): written whatever the step, as GradScaler's
 * events are. */
#define DIAG_KEY_SET(X, type, f, key, check, since) || e->diag.f
static inline bool keyed_diag(const struct producer_event *e)
{
	return e->kind == PRODUCER_DIAG &&
	       (false PRODUCER_DIAG_KEYS(DIAG_KEY_SET, _));
}
#undef DIAG_KEY_SET

void producer_emit(const struct producer_event *e)
{
	if (!recording())
		return;
	enum step_route route = producer_steps_route(e->kind, e->thread);
	if (__builtin_expect(route != STEP_WRITE, 0) && !keyed_diag(e)) {
		if (route == STEP_FOLD)
			producer_steps_fold(e);
		return;
	}
	struct raw_record *r = emit_reserve(raw_event_bound(e), e->thread);

	if (r)
		emit_commit(r, (uint16_t)e->kind, e->time_ns,
			    raw_event_encode((uint8_t *)(r + 1), e), e->thread);
}

void producer_emit_libamp(const struct amp_event *e)
{
	if (!recording())
		return;
	enum step_route route = producer_steps_route(libamp_event_kind(e),
						     e->thread);
	if (__builtin_expect(route != STEP_WRITE, 0)) {
		if (route == STEP_FOLD)
			producer_steps_fold_libamp(e);
		return;
	}
	struct raw_record *r = emit_reserve(libamp_event_bound(e), e->thread);

	if (r)
		emit_commit(r, libamp_event_kind(e), e->time_ns,
			    libamp_event_encode((uint8_t *)(r + 1), e), e->thread);
}

bool producer_write(uint16_t kind, uint64_t time_ns, uint64_t thread,
		    size_t bound, producer_encode_fn *encode, const void *model)
{
	struct thread_writer *w = &writer;

	if (w->busy || !atomic_load_explicit(&attached, memory_order_relaxed))
		return false;
	w->busy = true;
	struct raw_record *r = record_reserve(w, bound, thread);
	if (r)
		record_commit(w, r, kind, time_ns, encode((uint8_t *)(r + 1),
							   model));
	w->busy = false;
	return r != NULL;
}

bool producer_open_stream(uint64_t thread)
{
	struct thread_writer *w = &writer;

	if (w->busy || !atomic_load_explicit(&attached, memory_order_relaxed))
		return false;
	w->busy = true;
	bool open = record_reserve(w, 0, thread) != NULL;
	w->busy = false;
	return open;
}

const char *producer_process_dir(void)
{
	return process_dir;
}

const char *producer_raw_root(void)
{
	return raw_root;
}

uint64_t producer_raw_bytes(void)
{
	return atomic_load_explicit(&raw_bytes, memory_order_relaxed);
}

/* ------------------------------------------------------- process state */

static const char *rank_from_env(void)
{
	static const char *const vars[] = { "RANK", "OMPI_COMM_WORLD_RANK",
					    "PMI_RANK" };

	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v) {
			char *end;
			errno = 0;
			long rank = strtol(v, &end, 10);
			if (!*end && !errno && rank >= 0 && rank <= INT_MAX)
				return v;
		}
	}
	return NULL;
}

static void json_string(FILE *f, const char *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_names(FILE *f, const char *key, int count,
		       const char *(*name)(int))
{
	fprintf(f, "%s\"%s\":[", strcmp(key, "dtype") ? "," : "", key);
	for (int i = 0; i < count; i++) {
		char number[16];
		const char *n = name ? name(i) : NULL;
		if (!n) {
			snprintf(number, sizeof number, "%d", i);
			n = number;
		}
		if (i)
			fputc(',', f);
		json_string(f, n, strlen(n));
	}
	fputc(']', f);
}

static void write_cmdline(FILE *f)
{
	char buf[8192];
	size_t len = 0;
	FILE *in = fopen("/proc/self/cmdline", "rb");

	if (in) {
		len = fread(buf, 1, sizeof buf, in);
		fclose(in);
	}
	fputs(",\"argv\":[", f);
	for (size_t i = 0, n = 0; i < len; n++) {
		size_t arg = strnlen(buf + i, len - i);
		if (n)
			fputc(',', f);
		json_string(f, buf + i, arg);
		i += arg + 1;
	}
	fputc(']', f);
}

/* Writes p<pid>/process.json (through a temporary name, so the parent
 * never reads half of it). */
static int write_process_file_unguarded(void)
{
	char tmp[sizeof process_dir + 16], path[sizeof process_dir + 16];
	char exe[PATH_MAX];
	struct timespec ts;
	const char *rank = rank_from_env();

	snprintf(tmp, sizeof tmp, "%s/process.tmp", process_dir);
	snprintf(path, sizeof path, "%s/process.json", process_dir);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = '\0';
	fprintf(f, "{\"raw_version\":%d,\"pid\":%ld,\"ppid\":%ld,\"rank\":%s",
		RAW_VERSION, (long)getpid(), (long)getppid(), rank ? rank : "null");
	/* with the pid, names the process across exec(): the converter
	 * tells an image that exec()ed from one that died */
	unsigned long long start = proc_start_time(getpid());
	if (start)
		fprintf(f, ",\"start_time\":%llu", start);
	fprintf(f, ",\"attach_ns\":%llu,\"exe\":",
		(unsigned long long)ts.tv_sec * 1000000000ull +
			(unsigned long long)ts.tv_nsec);
	json_string(f, exe, strlen(exe));
	write_cmdline(f);
	if (info.framework) {
		fputs(",\"framework\":", f);
		json_string(f, info.framework, strlen(info.framework));
	}
	if (info.policy_table) {
		fputs(",\"policy_table\":", f);
		json_string(f, info.policy_table, strlen(info.policy_table));
	}
	fputs(",\"names\":{", f);
	json_names(f, "dtype", AMP_DTYPE_COUNT, info.names.dtype);
	json_names(f, "profiler", AMP_DTYPE_COUNT, info.names.profiler_dtype);
	json_names(f, "policy", AMP_POLICY_COUNT, info.names.policy);
	json_names(f, "device", AMP_DEVICE_TYPE_COUNT, info.names.device);
	json_names(f, "phase", PRODUCER_PHASE_COUNT, info.names.phase);
	json_names(f, "cache", AMP_CACHE_RESULT_COUNT, info.names.cache);
	fputs("}}\n", f);
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path);
}

static int write_process_file(void)
{
	struct xfsz_block block;

	xfsz_block(&block);
	int status = write_process_file_unguarded();
	xfsz_unblock(&block);
	return status;
}

/* One directory per process image: a child between fork() and exec()
 * and the program it execs are two (the rank may only be set for the
 * second), so an existing directory gets a numbered sibling. */
static int open_process_dir(void)
{
	for (int attempt = 0; attempt < 1000; attempt++) {
		if (attempt == 0)
			snprintf(process_dir, sizeof process_dir, "%s/p%ld",
				 raw_root, (long)getpid());
		else
			snprintf(process_dir, sizeof process_dir, "%s/p%ld-%d",
				 raw_root, (long)getpid(), attempt);
		if (mkdir(process_dir, 0700) == 0) {
			snprintf(exit_path, sizeof exit_path, "%s/exit",
				 process_dir);
			/* the same name under the spill directory */
			snprintf(spill_dir, sizeof spill_dir, "%s%s", spill_root,
				 process_dir + strlen(raw_root));
			process_pid = getpid();
			return write_process_file();
		}
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

static void after_fork_in_child(void)
{
	if (!atomic_load(&attached))
		return;
	/* The forking thread's mapping belongs to the parent's stream, and
	 * CUPTI does not follow a fork. */
	atomic_fetch_add(&generation, 1);
	atomic_store(&raw_bytes, 0);
	producer_steps_after_fork();
	pthread_mutex_init(&gpu_lock, NULL);
	gpu_counts_reset();
	if (open_process_dir() != 0) {
		/* write(2), not stdio: a stream lock another thread held at
		 * fork() stays held in the child */
		char line[PATH_MAX + 128];
		int n = snprintf(line, sizeof line, "amptrace recorder: cannot "
				 "record forked process %ld into %s: %s\n",
				 (long)getpid(), raw_root, strerror(errno));
		if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0)
			return;  /* nowhere left to say it */
	}
}

static void install_once(void)
{
	pthread_atfork(NULL, NULL, after_fork_in_child);
	pthread_key_create(&exit_key, on_thread_exit);
	/* _exit runs no destructor: the preloaded recorder's _exit marks
	 * the exit of every producer in the process, this one too (a copy
	 * in the PyTorch bridge finds it here; without `amptrace run` there
	 * is none). */
	void (*exit_mark_add)(void (*)(void)) =
		(void (*)(void (*)(void)))dlsym(RTLD_DEFAULT,
						"amptrace_exit_mark_add");
	if (exit_mark_add)
		exit_mark_add(producer_mark_exit);
}

/* Adapters with one signature for the name table; NULL (the producer
 * writes numbers) when libamp lacks the function. */
#define NAME_ADAPTER(fn, type)                                      \
	static const char *fn##_at(int i)                           \
	{                                                           \
		return fn ? fn((type)i) : NULL;                     \
	}
NAME_ADAPTER(amp_dtype_name, enum amp_dtype)
NAME_ADAPTER(amp_dtype_profiler_name, enum amp_dtype)
NAME_ADAPTER(amp_policy_name, enum amp_policy)
NAME_ADAPTER(amp_device_type_name, enum amp_device_type)
/* libamp's phases and the producers' own "other" (producer.h) */
static const char *amp_phase_name_at(int i)
{
	if (!amp_phase_name)
		return NULL;
	return i == PRODUCER_PHASE_OTHER ? "other"
					 : amp_phase_name((enum amp_phase)i);
}
NAME_ADAPTER(amp_cache_result_name, enum amp_cache_result)

struct producer_names producer_amp_names(void)
{
	return (struct producer_names){
		amp_dtype_name_at, amp_dtype_profiler_name_at,
		amp_policy_name_at, amp_device_type_name_at,
		amp_phase_name_at, amp_cache_result_name_at,
	};
}

static int attach_locked(const char *raw_dir, const struct producer_info *what,
			 const char *pid)
{
	if (strlen(raw_dir) >= sizeof raw_root - 32) {
		fprintf(stderr, "amptrace recorder: raw directory name too "
			"long\n");
		return -1;
	}
	info = *what;
	if (what->framework) {
		snprintf(framework, sizeof framework, "%s", what->framework);
		info.framework = framework;
	}
	if (what->policy_table) {
		snprintf(policy_table, sizeof policy_table, "%s",
			 what->policy_table);
		info.policy_table = policy_table;
	}
	if (pid)
		converter_pid = (pid_t)atol(pid);
	strcpy(raw_root, raw_dir);
	const char *spill = getenv(RAW_ENV_SPILL);
	if (spill && strlen(spill) < sizeof spill_root - 32)
		strcpy(spill_root, spill);
	if (open_process_dir() != 0) {
		fprintf(stderr, "amptrace recorder: cannot write %s: %s\n",
			process_dir, strerror(errno));
		return -1;
	}
	/* Threads start new files (matters when attaching a second time). */
	atomic_fetch_add(&generation, 1);
	gpu_counts_reset();
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	producer_steps_attach((uint64_t)now.tv_sec * 1000000000u +
			      (uint64_t)now.tv_nsec);
	atomic_store(&attached, true);
	return 0;
}

int producer_attach(const char *raw_dir, const struct producer_info *what)
{
	static pthread_once_t install_done = PTHREAD_ONCE_INIT;
	/* One attach at a time: the state below is written unguarded. */
	static atomic_bool attaching;
	const char *pid = getenv(RAW_ENV_PID);

	if (atomic_load(&attached) || atomic_exchange(&attaching, true)) {
		fprintf(stderr, "amptrace recorder: already recording this "
			"process\n");
		return -1;
	}
	/* The thread-exit key exists before any thread may record. */
	pthread_once(&install_done, install_once);
	int status = attach_locked(raw_dir, what, pid);
	atomic_store(&attaching, false);
	return status;
}

void producer_detach(void)
{
	atomic_store(&attached, false);
}

bool producer_attached(void)
{
	return atomic_load(&attached);
}

void producer_set_thread_name(const char *name)
{
	snprintf(thread_name, sizeof thread_name, "%s", name);
}

void producer_mark_exit(void)
{
	if (!atomic_load(&attached) || getpid() != process_pid)
		return;
	producer_steps_exit();
	int fd = open(exit_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
}
