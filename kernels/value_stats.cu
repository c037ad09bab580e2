// The tracer's value checks on a GPU (lib/amp_cuda_module.h, value_stats):
// one launch per check, on the program's stream, into a row kept on the
// device; one read per step.  Costs the program a kernel launch per check,
// where torch's own reductions cost several ops, each with its dispatch and
// allocations.
//
// A row is the partials of a fixed number of blocks, each written whole by
// its block: nothing is zeroed or accumulated atomically, so rows need no
// set-up and are deterministic.  The read merges each row's partials on the
// device, then copies the merged rows.  Rows live in chunks that are kept
// for the process's life and are never moved (a launch in flight may be
// writing one); a step that needs more rows adds a chunk, up to a cap on
// the device memory they take outside the program's allocator (then the
// caller reduces another way).
#include "cuda_common.cuh"

#include <pthread.h>
#include <stdlib.h>

static const int stats_blocks = 32;
static const int stats_threads = 256;
static const int64_t chunk_rows = 1024; // 2.4 MB of partials
enum { max_devices = 64, max_chunks = 16 };

struct chunk {
	amp_value_stats *partials; // chunk_rows * stats_blocks
	amp_value_stats *merged;   // chunk_rows
};

struct device_rows {
	chunk chunks[max_chunks];
	int64_t chunk_count;
	int64_t used; // rows made since the last read
};

static pthread_mutex_t rows_lock = PTHREAD_MUTEX_INITIALIZER;
static device_rows *devices[max_devices];

__global__ void value_stats_kernel(const void *data, int dtype, int64_t count,
				   amp_value_limits limits,
				   amp_value_stats *partials)
{
	__shared__ amp_value_stats shared[stats_threads];
	amp_value_stats s;
	amp_value_stats_init(&s);
	int64_t stride = (int64_t)gridDim.x * blockDim.x;

	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	     i < count; i += stride)
		amp_value_stats_add(&s, load_f32(data, dtype, i), &limits);
	shared[threadIdx.x] = s;
	__syncthreads();
	for (int half = blockDim.x / 2; half > 0; half /= 2) {
		if (threadIdx.x < half)
			amp_value_stats_merge(&shared[threadIdx.x],
					      &shared[threadIdx.x + half]);
		__syncthreads();
	}
	if (threadIdx.x == 0)
		partials[blockIdx.x] = shared[0];
}

__global__ void merge_kernel(const amp_value_stats *partials,
			     amp_value_stats *merged, int64_t rows)
{
	int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (row >= rows)
		return;
	amp_value_stats s = partials[row * stats_blocks];
	for (int b = 1; b < stats_blocks; b++)
		amp_value_stats_merge(&s, &partials[row * stats_blocks + b]);
	merged[row] = s;
}

// The device's row `row`, adding a chunk when it is the first beyond them;
// NULL (error recorded) when that fails.  rows_lock held.
static amp_value_stats *row_partials(device_rows *rows, int64_t row)
{
	int64_t index = row / chunk_rows;
	if (index >= max_chunks) {
		amp_cuda_fail("value_stats", "the rows not yet read are full");
		return NULL;
	}
	if (index == rows->chunk_count) {
		chunk added = { NULL, NULL };
		cudaError_t error = cudaMalloc((void **)&added.partials,
					       chunk_rows * stats_blocks *
						       sizeof *added.partials);
		if (error == cudaSuccess)
			error = cudaMalloc((void **)&added.merged,
					   chunk_rows * sizeof *added.merged);
		if (error != cudaSuccess) {
			cudaFree(added.partials);
			amp_cuda_fail_call("cudaMalloc", error);
			return NULL;
		}
		rows->chunks[rows->chunk_count++] = added;
	}
	return rows->chunks[index].partials + (row % chunk_rows) * stats_blocks;
}

static device_rows *rows_of(int device)
{
	if (device < 0 || device >= max_devices) {
		amp_cuda_fail("value_stats", "no such device");
		return NULL;
	}
	if (!devices[device])
		devices[device] = (device_rows *)calloc(1, sizeof(device_rows));
	if (!devices[device])
		amp_cuda_fail("value_stats", "out of memory");
	return devices[device];
}

// Runs the caller's launches with `device` current, as it was after.
struct current_device {
	int previous;
	bool switched;
};

static int enter_device(int device, current_device *saved)
{
	cudaError_t error = cudaGetDevice(&saved->previous);
	if (error != cudaSuccess)
		return amp_cuda_fail_call("cudaGetDevice", error);
	saved->switched = saved->previous != device;
	error = saved->switched ? cudaSetDevice(device) : cudaSuccess;
	return error == cudaSuccess ? 0 : amp_cuda_fail_call("cudaSetDevice", error);
}

static void leave_device(const current_device *saved)
{
	if (saved->switched && cudaSetDevice(saved->previous) != cudaSuccess)
		cudaGetLastError(); // ours: not the program's to see
}

// An error the program has not checked yet stays the program's: our launch
// checks would take it for ours, and clear it.
static bool program_error_pending(const char *what)
{
	if (cudaPeekAtLastError() == cudaSuccess)
		return false;
	amp_cuda_fail(what, "a CUDA error is pending");
	return true;
}

extern "C" int amp_cuda_value_stats(const void *data, enum amp_dtype dtype,
				    int64_t count,
				    const struct amp_value_limits *limits,
				    int device, void *stream, int64_t *row)
{
	if (!amp_cuda_float_dtype(dtype) || count < 0)
		return AMP_CUDA_UNSUPPORTED;
	if (program_error_pending("value_stats"))
		return -1;
	current_device saved;
	if (enter_device(device, &saved) != 0)
		return -1;
	pthread_mutex_lock(&rows_lock);
	int status = -1;
	device_rows *rows = rows_of(device);
	amp_value_stats *partials = rows ? row_partials(rows, rows->used) : NULL;
	if (partials) {
		value_stats_kernel<<<stats_blocks, stats_threads, 0,
				     (cudaStream_t)stream>>>(data, dtype, count,
							     *limits, partials);
		status = amp_cuda_check_launch("value_stats_kernel");
		if (status == 0)
			*row = rows->used++;
	}
	pthread_mutex_unlock(&rows_lock);
	leave_device(&saved);
	return status;
}

// Merges chunk c's first `count` rows and copies them into `out`.
static int read_chunk(const chunk *c, cudaStream_t stream,
		      amp_value_stats *out, int64_t count)
{
	merge_kernel<<<(unsigned)((count + 127) / 128), 128, 0, stream>>>(
		c->partials, c->merged, count);
	if (amp_cuda_check_launch("merge_kernel") != 0)
		return -1;
	cudaError_t error = cudaMemcpyAsync(out, c->merged, count * sizeof *out,
					    cudaMemcpyDeviceToHost, stream);
	return error == cudaSuccess ? 0 : amp_cuda_fail_call("cudaMemcpyAsync", error);
}

// Rows start over only once read: a failed read keeps them (and their
// numbers) for the next, as launches in flight may still write them.
extern "C" int amp_cuda_value_stats_read(int device, void *stream,
					 struct amp_value_stats *out,
					 int64_t count)
{
	current_device saved;
	if (program_error_pending("value_stats_read") ||
	    enter_device(device, &saved) != 0)
		return -1;
	pthread_mutex_lock(&rows_lock);
	device_rows *rows = rows_of(device);
	int status = !rows ? -1
		     : count < 0 || count > rows->used
			     ? amp_cuda_fail("value_stats_read",
					     "more rows asked than made")
			     : 0;
	cudaStream_t s = (cudaStream_t)stream;
	for (int64_t first = 0; status == 0 && first < count;
	     first += chunk_rows) {
		int64_t n = count - first < chunk_rows ? count - first
						       : chunk_rows;
		status = read_chunk(&rows->chunks[first / chunk_rows], s,
				    out + first, n);
	}
	if (status == 0) {
		cudaError_t error = cudaStreamSynchronize(s);
		if (error != cudaSuccess)
			status = amp_cuda_fail_call("cudaStreamSynchronize", error);
	}
	if (status == 0)
		rows->used = 0;
	pthread_mutex_unlock(&rows_lock);
	leave_device(&saved);
	return status;
}
