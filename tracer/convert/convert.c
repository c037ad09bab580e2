/* The converter (convert.h): follows the raw directory, reads each
 * thread file's records in order and hands them to convert_record
 * (convert_records.c), and says how each process ended.  Record layouts
 * are raw_schema.h's, decoded by raw_decode.c; events are FORMAT.md's. */
#include "convert_internal.h"
#include "event_json.h"
#include "proc_file.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const name_table_keys[NAMES_COUNT] = {
	"dtype", "profiler", "policy", "device", "phase", "cache"
};

/* ------------------------------------------------------------ helpers */

const char *convert_signal_name(int sig, char *buf, size_t size)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, size, "SIG%s", abbrev);
	else
		snprintf(buf, size, "signal %d", sig);
	return buf;
}

/* ------------------------------------------------------- thread files */

/* "rank 1: python (pid 4242)", "python (pid 4242)": the process's name
 * and the messages about its end name it alike, so that in a merge of
 * ranks (pids renumbered) a death says which rank died. */
static const char *process_label(const struct convert_process *p, char *buf,
				 size_t size)
{
	if (p->rank >= 0)
		snprintf(buf, size, "rank %d: %s (pid %ld)", p->rank, p->name,
			 p->pid);
	else
		snprintf(buf, size, "%s (pid %ld)", p->name, p->pid);
	return buf;
}

static void process_metadata(struct converter *cv, struct convert_process *p)
{
	char name[256];

	process_label(p, name, sizeof name);
	struct trace_event e =
		convert_meta_event(p, LIT_PROCESS_NAME, p->pid, 0, name, 0);
	e.meta.rank = p->rank;
	e.meta.argv = convert_alloc(p, (size_t)(p->argc ? p->argc : 1) *
					    sizeof *e.meta.argv);
	for (int i = 0; i < p->argc; i++)
		e.meta.argv[i] = convert_intern_cstr(p, p->argv[i]);
	e.meta.nargv = p->argc;
	e.meta.framework = convert_intern_cstr(p, p->framework);
	convert_emit(cv, p, &e);
	long sort_index = p->rank >= 0 ? (long)p->rank : (long)cv->nprocs;
	e = convert_meta_event(p, LIT_PROCESS_SORT_INDEX, p->pid, 0, NULL,
			       sort_index);
	convert_emit(cv, p, &e);
}

/* The process that started p: the latest to attach with p's parent's
 * pid before p did (an earlier one may have had the pid before it). */
static struct convert_process *parent_of(const struct converter *cv,
					 const struct convert_process *p)
{
	struct convert_process *parent = NULL;

	for (size_t i = 0; i < cv->nprocs; i++) {
		struct convert_process *q = cv->procs[i];
		if (q->pid == p->ppid && q->attach_ns <= p->attach_ns &&
		    (!parent || q->attach_ns > parent->attach_ns))
			parent = q;
	}
	return parent;
}

void convert_rank_learned(struct converter *cv, struct convert_process *p,
			  int rank, uint64_t time_ns)
{
	if (rank < 0 || rank == p->rank)
		return;
	p->rank = rank;
	p->rank_ns = time_ns;
	if (p->announced)
		process_metadata(cv, p);
	/* Its children started since are its rank's, as they would be with
	 * the rank in the environment they inherit (a DataLoader's workers,
	 * forked or spawned); those not announced yet are when they are. */
	for (size_t i = 0; i < cv->nprocs; i++) {
		struct convert_process *child = cv->procs[i];
		if (child->announced && child->rank < 0 &&
		    child->attach_ns >= time_ns && parent_of(cv, child) == p)
			convert_rank_learned(cv, child, rank, child->attach_ns);
	}
}

/* A process started by one that had learned its rank late takes it
 * (and is named by it, being announced): whether it did. */
static bool inherit_rank(struct converter *cv, struct convert_process *p)
{
	const struct convert_process *parent = parent_of(cv, p);

	if (p->rank >= 0 || !parent || !parent->rank_ns ||
	    parent->rank_ns > p->attach_ns)
		return false;
	convert_rank_learned(cv, p, parent->rank, p->attach_ns);
	return true;
}

static void thread_metadata(struct converter *cv, struct convert_process *p,
			    struct convert_thread *t,
			    const struct raw_thread_header *h)
{
	char name[64];

	snprintf(name, sizeof name, "%.32s (thread %llu)",
		 h->name[0] ? h->name : "thread",
		 (unsigned long long)h->amp_thread);
	struct trace_event e =
		convert_meta_event(p, LIT_THREAD_NAME, p->pid, t->tid, name, 0);
	e.meta.os_tid = h->os_tid;
	convert_emit(cv, p, &e);
	e = convert_meta_event(p, LIT_THREAD_SORT_INDEX, p->pid, t->tid, NULL,
			       (int64_t)t->tid);
	convert_emit(cv, p, &e);
}

/* The process's first events: its writer, its trace, its names. */
static void announce(struct converter *cv, struct convert_process *p)
{
	p->announced = true;
	p->writer = cv->writer_for(cv->ctx, p);
	if (cv->trace_for)
		p->trace = cv->trace_for(cv->ctx, p);
	convert_intern_names(p);
	/* after its file is chosen (its parent's, not a rank's), before it
	 * is named: named once, by the rank, as with it in its environment */
	if (!inherit_rank(cv, p))
		process_metadata(cv, p);
}

static const uint8_t *map_chunk(struct convert_thread *t, uint64_t index)
{
	struct stat st;

	if (fstat(t->fd, &st) != 0 ||
	    (uint64_t)st.st_size < (index + 1) * RAW_CHUNK)
		return NULL;
	void *chunk = mmap(NULL, RAW_CHUNK, PROT_READ, MAP_SHARED, t->fd,
			   (off_t)(index * RAW_CHUNK));
	return chunk == MAP_FAILED ? NULL : chunk;
}

static bool header_valid(const struct raw_thread_header *h)
{
	return h->version == RAW_VERSION && h->header_size >= sizeof *h &&
	       h->header_size < RAW_CHUNK && h->header_size % 8 == 0;
}

/* The stream moved to the spill directory (RAW_SIZE_MOVED): the same
 * thread goes on after the header of c<this file's name> there; this
 * file, done, goes (it held memory). */
static bool follow_move(const struct converter *cv, const struct convert_process *p,
			struct convert_thread *t)
{
	char path[PATH_MAX + 640];
	const char *process = strrchr(p->dir, '/');
	const char *file = strrchr(t->path, '/');

	if (!cv->spill_dir || !process || !file)
		return false;
	snprintf(path, sizeof path, "%s%s/c%s", cv->spill_dir, process,
		 file + 1);
	struct convert_thread next = { .fd = open(path, O_RDWR | O_CLOEXEC) };
	if (next.fd < 0)
		return false;
	const uint8_t *chunk = map_chunk(&next, 0);
	const struct raw_thread_header *h = (const void *)chunk;
	if (!chunk || atomic_load_explicit(&h->magic, memory_order_acquire) !=
			      RAW_THREAD_MAGIC ||
	    !header_valid(h) || h->amp_thread != t->tid) {
		if (chunk)
			munmap((void *)chunk, RAW_CHUNK);
		close(next.fd);
		return false;
	}
	munmap((void *)t->chunk, RAW_CHUNK);
	close(t->fd);
	unlink(t->path);
	free(t->path);
	t->path = strdup(path);
	t->fd = next.fd;
	t->chunk = chunk;
	t->chunk_index = 0;
	t->offset = h->header_size;
	return true;
}

static size_t read_thread(struct converter *cv, struct convert_process *p,
			  struct convert_thread *t)
{
	size_t count = 0;

	if (t->stopped)
		return 0;
	if (!t->chunk) {
		t->chunk = map_chunk(t, 0);
		if (!t->chunk)
			return 0;
	}
	if (!t->started) {
		const struct raw_thread_header *h = (const void *)t->chunk;
		if (atomic_load_explicit(&((struct raw_thread_header *)h)->magic,
					 memory_order_acquire) != RAW_THREAD_MAGIC)
			return 0;
		if (!header_valid(h)) {
			t->stopped = true;
			p->raw_errors++;
			return 0;
		}
		t->tid = h->amp_thread;
		t->offset = h->header_size;
		t->started = true;
		if (!p->announced)
			announce(cv, p);
		if (t->tid == RAW_GPU_STREAM)
			p->gpu_stream = true;
		else
			thread_metadata(cv, p, t, h);
	}
	for (;;) {
		struct raw_record *r = (struct raw_record *)(t->chunk + t->offset);
		uint32_t size = RAW_CHUNK - t->offset >= 4
					? atomic_load_explicit(&r->size,
							       memory_order_acquire)
					: RAW_SIZE_NEXT_CHUNK;
		if (size == 0)
			break;
		if (size == RAW_SIZE_THREAD_END) {
			/* The thread is gone: its file with it. */
			munmap((void *)t->chunk, RAW_CHUNK);
			t->chunk = NULL;
			close(t->fd);
			t->fd = -1;
			unlink(t->path);
			t->stopped = true;
			break;
		}
		if (size == RAW_SIZE_MOVED) {
			if (follow_move(cv, p, t))
				continue;
			t->stopped = true;
			p->raw_errors++;
			break;
		}
		if (size == RAW_SIZE_NEXT_CHUNK) {
			const uint8_t *next = map_chunk(t, t->chunk_index + 1);
			if (!next)
				break;
			munmap((void *)t->chunk, RAW_CHUNK);
			/* The writer has moved on: give the disk space back. */
			fallocate(t->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  (off_t)(t->chunk_index * RAW_CHUNK), RAW_CHUNK);
			t->chunk = next;
			t->chunk_index++;
			t->offset = 0;
			continue;
		}
		if (size < sizeof *r || size % 8 || size > RAW_CHUNK - t->offset) {
			t->stopped = true;
			p->raw_errors++;
			break;
		}
		convert_record(cv, p, t, r);
		t->offset += size;
		count++;
	}
	return count;
}

/* ----------------------------------------------------- process files */

static char **string_array(const cJSON *array, size_t *count)
{
	size_t n = (size_t)cJSON_GetArraySize(array);
	char **out = calloc(n + 1, sizeof *out);
	size_t i = 0;
	const cJSON *item;

	if (!out)
		abort();
	cJSON_ArrayForEach(item, array)
		out[i++] = strdup(cJSON_IsString(item) ? item->valuestring : "?");
	*count = i;
	return out;
}

static char *read_small_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t len = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		text = convert_grow(text, &cap, len + 4097, 1);
		size_t n = fread(text + len, 1, 4096, f);
		len += n;
		if (n < 4096)
			break;
	}
	fclose(f);
	text[len] = '\0';
	return text;
}

/* Reads p<pid>/process.json; NULL while it is not there yet. */
static struct convert_process *load_process(struct converter *cv,
					    const char *dir)
{
	char path[PATH_MAX + 320];

	snprintf(path, sizeof path, "%s/process.json", dir);
	char *text = read_small_file(path);
	if (!text)
		return NULL;
	cJSON *root = cJSON_Parse(text);
	free(text);
	if (!root)
		return NULL;
	struct convert_process *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	const cJSON *v;
	p->pid = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(root, "pid"));
	p->ppid = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(root, "ppid"));
	p->attach_ns = (uint64_t)cJSON_GetNumberValue(
		cJSON_GetObjectItem(root, "attach_ns"));
	v = cJSON_GetObjectItem(root, "start_time");
	p->start_time = cJSON_IsNumber(v) ? (unsigned long long)v->valuedouble
					  : 0;
	v = cJSON_GetObjectItem(root, "rank");
	p->rank = cJSON_IsNumber(v) ? v->valueint : -1;
	v = cJSON_GetObjectItem(root, "exe");
	p->exe = strdup(cJSON_IsString(v) ? v->valuestring : "");
	size_t argc = 0;
	p->argv = string_array(cJSON_GetObjectItem(root, "argv"), &argc);
	p->argc = (int)argc;
	const char *argv0 = argc ? p->argv[0] : p->exe;
	const char *slash = strrchr(argv0, '/');
	p->name = strdup(slash ? slash + 1 : argv0);
	v = cJSON_GetObjectItem(root, "framework");
	p->framework = cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
	v = cJSON_GetObjectItem(root, "policy_table");
	p->policy_table = cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
	const cJSON *names = cJSON_GetObjectItem(root, "names");
	for (int i = 0; i < NAMES_COUNT; i++)
		p->names[i] = string_array(
			cJSON_GetObjectItem(names, name_table_keys[i]),
			&p->name_count[i]);
	cJSON_Delete(root);
	p->dir = strdup(dir);
	p->status = "running";
	return p;
}

static struct convert_thread *find_thread(const struct convert_process *p,
					  const char *path)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (!strcmp(p->threads[i]->path, path))
			return p->threads[i];
	return NULL;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the thread files in `dir` that are not known yet to `found`. */
static void list_threads(const struct convert_process *p, const char *dir,
			 char ***found, size_t *nfound, size_t *cap)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] != 't' || len < 5 ||
		    strcmp(e->d_name + len - 4, ".raw"))
			continue;
		char path[PATH_MAX + 640];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (find_thread(p, path))
			continue;
		*found = convert_grow(*found, cap, *nfound + 1, sizeof **found);
		(*found)[(*nfound)++] = strdup(path);
	}
	closedir(d);
}

/* New thread files of a process, in name order (t1.raw before t2.raw),
 * so thread metadata comes out in the same order every run; those begun
 * in the spill directory once the raw directory was full come after. */
static void scan_threads(const struct converter *cv, struct convert_process *p)
{
	char **found = NULL;
	size_t nfound = 0, cap = 0;
	const char *process = strrchr(p->dir, '/');

	list_threads(p, p->dir, &found, &nfound, &cap);
	if (cv->spill_dir && process) {
		char spilled[PATH_MAX + 320];
		snprintf(spilled, sizeof spilled, "%s%s", cv->spill_dir, process);
		list_threads(p, spilled, &found, &nfound, &cap);
	}
	trace_sort(found, nfound, sizeof *found, compare_names);
	for (size_t i = 0; i < nfound; i++) {
		int fd = open(found[i], O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			free(found[i]);
			continue;
		}
		struct convert_thread *t = calloc(1, sizeof *t);
		if (!t)
			abort();
		t->path = found[i];
		t->fd = fd;
		size_t cap_threads = p->nthreads;
		p->threads = convert_grow(p->threads, &cap_threads, p->nthreads + 1,
					  sizeof *p->threads);
		p->threads[p->nthreads++] = t;
	}
	free(found);
}

static bool known_dir(const struct converter *cv, const char *dir)
{
	for (size_t i = 0; i < cv->nprocs; i++)
		if (!strcmp(cv->procs[i]->dir, dir))
			return true;
	return false;
}

static void scan_processes(struct converter *cv)
{
	DIR *d = opendir(cv->raw_dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] != 'p')
			continue;
		char dir[PATH_MAX + 300];
		snprintf(dir, sizeof dir, "%s/%s", cv->raw_dir, e->d_name);
		if (known_dir(cv, dir))
			continue;
		struct convert_process *p = load_process(cv, dir);
		if (!p)
			continue;
		size_t cap = cv->nprocs;
		cv->procs = convert_grow(cv->procs, &cap, cv->nprocs + 1,
					 sizeof *cv->procs);
		cv->procs[cv->nprocs++] = p;
	}
	closedir(d);
}

void convert_init(struct converter *c, const char *raw_dir, uint64_t base_ns,
		  convert_writer_fn writer_for, void *ctx)
{
	*c = (struct converter){ .raw_dir = strdup(raw_dir), .base_ns = base_ns,
			    .writer_for = writer_for, .ctx = ctx,
			    .decoded = calloc(1, sizeof *c->decoded),
			    .scratch_tensors = calloc(2 * RAW_MAX_TENSORS,
						      sizeof *c->scratch_tensors),
			    .scratch_infos = calloc(CONVERT_SCRATCH_INFOS,
						    sizeof *c->scratch_infos),
			    .json_cache = calloc(1, sizeof *c->json_cache),
			    .memo = event_json_memo_new() };
	if (!c->decoded || !c->scratch_tensors || !c->scratch_infos ||
	    !c->json_cache || !c->memo)
		abort(); /* as dupn: no partial state to fall back to */
	jsonw_init(&c->buf);
	c->buf.cache = c->json_cache;
	jsonw_init(&c->label);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

size_t convert_poll(struct converter *c)
{
	size_t count = 0;
	/* New processes and threads are rare: look for them every few ms,
	 * not on every poll of a busy program. */
	uint64_t now = monotonic_ns();
	bool scan = c->final || now - c->last_scan_ns >= 5 * 1000 * 1000;

	if (scan) {
		c->last_scan_ns = now;
		scan_processes(c);
	}
	for (size_t i = 0; i < c->nprocs; i++) {
		struct convert_process *p = c->procs[i];
		if (scan)
			scan_threads(c, p);
		for (size_t j = 0; j < p->nthreads; j++)
			count += read_thread(c, p, p->threads[j]);
	}
	return count;
}

/* ------------------------------------------------------------- the end */

static void close_thread(struct converter *cv, struct convert_process *p,
			 struct convert_thread *t, uint64_t end_ns,
			 const char *closed_by)
{
	/* Innermost first, so the X events nest like the stack did. */
	while (t->nops) {
		convert_op_close(cv, p, t, &t->ops[--t->nops], end_ns,
				 closed_by);
		p->in_flight_ops++;
	}
	while (t->nscopes)
		convert_scope_end(cv, p, t, &t->scopes[--t->nscopes], end_ns,
				  closed_by);
}

static bool file_exists(const char *dir, const char *name)
{
	char path[PATH_MAX + 320];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* Why p's recorder stopped for want of room (p<pid>/stopped: its
 * errno and text), or false when it did not. */
static bool stopped_reason(const struct convert_process *p, char *reason,
			   size_t size)
{
	char path[PATH_MAX + 320], text[128] = "";
	int err = 0;

	snprintf(path, sizeof path, "%s/stopped", p->dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	if (fscanf(f, "%d %127[^\n]", &err, text) < 2)
		snprintf(text, sizeof text, "%s", strerror(ENOSPC));
	fclose(f);
	snprintf(reason, size, "%s", text);
	return true;
}

/* A recorder that stopped for want of room says so in the trace, as a
 * recording-stopped finding, where no stream of it could: a process
 * whose streams could not even begin (no room for a first chunk) would
 * otherwise hold nothing at all, and one whose later threads could not
 * begin (p<pid>/unbegun) would lose their events without a word. */
static void stopped_without_stream(struct converter *cv,
				   struct convert_process *p)
{
	char message[512], reason[128];

	if ((p->announced && !file_exists(p->dir, "unbegun")) ||
	    !stopped_reason(p, reason, sizeof reason))
		return;
	if (p->announced)
		snprintf(message, sizeof message,
			 "recording stopped: no room for a thread's first raw "
			 "events in %.200s (%s); the threads that could not "
			 "begin are not in the trace, the program ran on",
			 cv->raw_dir, reason);
	else
		snprintf(message, sizeof message,
			 "recording stopped at the start: no room for the "
			 "first raw events in %.200s (%s); nothing of this "
			 "process is in the trace, the program ran on",
			 cv->raw_dir, reason);
	if (!p->announced)
		announce(cv, p);
	if (p->last_ns < cv->base_ns)
		p->last_ns = cv->base_ns; /* no event: the run's start */
	convert_diag(cv, p, 0, p->last_ns, "recording-stopped", message, 0, 0,
		  'p', NULL);
}

/* The program itself (its latest image: a process that exec()s attaches
 * again), when it attached but recorded nothing and no other process did:
 * killed before its first event, it is still the trace's process, with
 * its process-died finding, rather than a trace of nothing. */
static struct convert_process *silent_program(const struct converter *c,
					      long child_pid)
{
	struct convert_process *program = NULL;

	for (size_t i = 0; i < c->nprocs; i++) {
		struct convert_process *p = c->procs[i];
		if (p->announced)
			return NULL;
		if (p->pid == child_pid &&
		    (!program || p->attach_ns >= program->attach_ns))
			program = p;
	}
	return program;
}

/* Whether p's image was replaced by exec(): a later image attached in
 * the same process (its pid and start time; a pid alone may be another
 * process's, reused).  Its end is then not the process's. */
static bool replaced_by_exec(const struct converter *c,
			     const struct convert_process *p)
{
	for (size_t i = 0; p->start_time && i < c->nprocs; i++) {
		const struct convert_process *q = c->procs[i];
		if (q != p && q->pid == p->pid &&
		    q->start_time == p->start_time &&
		    q->attach_ns > p->attach_ns)
			return true;
	}
	return false;
}

/* Whether p is still running as the recording ends: a worker that
 * outlives a trace() block (a DataLoader's persistent workers), a daemon
 * that outlives `amptrace run`'s command.  Its start time tells it from
 * another process that took its pid; a zombie counts as ended. */
static bool still_running(const struct convert_process *p)
{
	return p->start_time &&
	       proc_start_time((pid_t)p->pid) == p->start_time;
}

void convert_finish(struct converter *c, long child_pid, int wait_status,
		    uint64_t end_ns)
{
	c->final = true;
	while (convert_poll(c))
		;
	struct convert_process *silent = WIFSIGNALED(wait_status)
						 ? silent_program(c, child_pid)
						 : NULL;
	for (size_t i = 0; i < c->nprocs; i++) {
		struct convert_process *p = c->procs[i];
		char message[384], signame[32], label[256];
		bool died = false;

		if (replaced_by_exec(c, p)) {
			p->status = "exec";
		} else if (p->pid == child_pid && WIFSIGNALED(wait_status)) {
			p->status = "signaled";
			p->signal = WTERMSIG(wait_status);
			convert_signal_name(p->signal, p->signal_name,
					    sizeof p->signal_name);
			died = true;
			snprintf(message, sizeof message,
				 "%s was killed by %s (%s)",
				 process_label(p, label, sizeof label),
				 convert_signal_name(p->signal, signame,
						     sizeof signame),
				 strsignal(p->signal));
		} else if (p->pid == child_pid && WIFEXITED(wait_status)) {
			p->status = "exited";
			p->exit_code = WEXITSTATUS(wait_status);
		} else if (file_exists(p->dir, "exit")) {
			p->status = "exited";
			p->exit_code = -1;
		} else if (still_running(p)) {
			p->status = "running";
		} else {
			p->status = "died";
			died = true;
			snprintf(message, sizeof message,
				 "%s ended without a clean exit (crashed or "
				 "killed)", process_label(p, label, sizeof label));
		}
		stopped_without_stream(c, p);
		if (!p->announced && p == silent) {
			announce(c, p);
			if (p->last_ns < c->base_ns)
				p->last_ns = c->base_ns;
		}
		if (!p->announced)
			continue; /* it recorded nothing */
		uint64_t when = p->last_ns;
		if (p->pid == child_pid && end_ns > when)
			when = end_ns;
		const char *closed_by = died ? "process died"
				      : !strcmp(p->status, "exec") ? "process exec"
				      : !strcmp(p->status, "running") ? "recording end"
								   : "process exit";
		/* Where it died: the innermost op in flight, if any. */
		for (size_t j = 0; died && j < p->nthreads; j++) {
			const struct convert_thread *t = p->threads[j];
			if (!t->nops)
				continue;
			const struct trace_op *op = &t->ops[t->nops - 1].op;
			size_t len = strlen(message);
			snprintf(message + len, sizeof message - len,
				 " in op %.64s%s%.32s (op %llu, thread %llu)",
				 op->op, op->overload[0] ? "." : "", op->overload,
				 (unsigned long long)op->op_id,
				 (unsigned long long)t->tid);
			break;
		}
		convert_steps_left(c, p, when, died);
		for (size_t j = 0; j < p->nthreads; j++)
			close_thread(c, p, p->threads[j], when, closed_by);
		if (died)
			convert_diag(c, p, 0, when, "process-died", message, 0,
				     0, 'p', NULL);
		/* The last event: how the process ended, as a label. */
		if (!strcmp(p->status, "signaled"))
			snprintf(message, sizeof message, "killed by %s",
				 convert_signal_name(p->signal, signame,
						     sizeof signame));
		else if (!strcmp(p->status, "exited") && p->exit_code >= 0)
			snprintf(message, sizeof message, "exit %d",
				 p->exit_code);
		else if (!strcmp(p->status, "exec"))
			snprintf(message, sizeof message, "replaced by exec()");
		else if (!strcmp(p->status, "running"))
			snprintf(message, sizeof message,
				 "still running when the recording ended");
		else
			snprintf(message, sizeof message, "%s", p->status);
		struct trace_event e = convert_meta_event(
			p, LIT_PROCESS_LABELS, p->pid, 0, message, 0);
		convert_emit(c, p, &e);
	}
}

void convert_process_end(const struct convert_process *p,
			 struct trace_process_end *end,
			 struct trace_gpu_timing *gpu,
			 struct trace_process_steps *steps)
{
	*end = (struct trace_process_end){
		.pid = p->pid, .rank = p->rank,
		.argv = (const char **)p->argv, .nargv = p->argc,
		.framework = p->framework, .status = p->status,
		.exit_code = p->exit_code, .signal = p->signal,
		.threads = p->nthreads - (p->gpu_stream ? 1 : 0),
		.events = p->events, .ops = p->ops, .casts = p->casts,
		.in_flight_ops = p->in_flight_ops, .raw_errors = p->raw_errors,
	};
	if (!strcmp(p->status, "signaled"))
		end->signal_name = p->signal_name;
	if (p->steps || p->aggregates || p->detail_stopped) {
		*steps = (struct trace_process_steps){
			.ended = p->steps, .detail = p->detail_steps,
			.aggregates = p->aggregates,
			.aggregated_ops = p->aggregated_ops,
			.detail_stopped = p->detail_stopped,
			.detail_stopped_at = p->detail_stop_step,
		};
		end->steps = steps;
	}
	if (!p->gpu_status)
		return;
	*gpu = (struct trace_gpu_timing){
		.timing = p->gpu_status > 0,
		.reason = p->gpu_reason ? p->gpu_reason : "",
		.kernels = p->kernels, .memcpys = p->memcpys,
		.complete = p->gpu_stats_seen,
		.unlinked = p->gpu_unlinked, .untimed = p->gpu_untimed,
		.dropped = p->gpu_dropped, .buffers = p->gpu_buffers,
		.aggregated = p->gpu_aggregated,
	};
	end->gpu = gpu;
}

void convert_free(struct converter *c)
{
	for (size_t i = 0; i < c->nprocs; i++) {
		struct convert_process *p = c->procs[i];
		for (size_t j = 0; j < p->nthreads; j++) {
			struct convert_thread *t = p->threads[j];
			if (t->chunk)
				munmap((void *)t->chunk, RAW_CHUNK);
			if (t->fd >= 0)
				close(t->fd);
			free(t->ops);
			free(t->scopes);
			free(t->aggregate_ops);
			free(t->aggregate_casts);
			free(t->aggregate_diags);
			free(t->path);
			free(t);
		}
		free(p->threads);
		for (int k = 0; k < NAMES_COUNT; k++)
			free(p->interned_names[k]);
		free(p->literals);
		free(p->labels);
		trace_free(&p->own_strings);
		free(p->gpu_reason);
		free(p->gpu_tracks);
		free(p->detail_stop_measured);
		free(p->scalers);
		for (int k = 0; k < NAMES_COUNT; k++) {
			for (size_t n = 0; n < p->name_count[k]; n++)
				free(p->names[k][n]);
			free(p->names[k]);
		}
		for (int k = 0; k < p->argc; k++)
			free(p->argv[k]);
		free(p->argv);
		free(p->exe);
		free(p->name);
		free(p->framework);
		free(p->policy_table);
		free(p->dir);
		free(p);
	}
	free(c->procs);
	free(c->raw_dir);
	jsonw_free(&c->buf);
	jsonw_free(&c->label);
	free(c->scratch_tensors);
	free(c->scratch_infos);
	free(c->json_cache);
	event_json_memo_free(c->memo);
	if (c->decoded)
		raw_decoded_free(c->decoded);
	free(c->decoded);
}
