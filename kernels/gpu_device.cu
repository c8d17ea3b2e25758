/*
 * gpu_device.cu — the device and the bookkeeping every call shares:
 * gpu_device_probe (lazy CUDA initialisation, cached), gpu_last_error,
 * pinned host memory, and the gs_gpu::Job machinery declared in
 * gpu_common.cuh (errors, capped stream-ordered allocations, polling
 * waits, cleanup).
 *
 * Nothing here runs at library load: the first CUDA call happens inside the
 * first API call that needs the GPU, so a PostgreSQL backend forked from a
 * postmaster that never touched CUDA can use it.
 */
#include "gpu_common.cuh"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <mutex>
#include <vector>

namespace gs_gpu {

/* ------------------------------------------------------------------------
 * Messages
 * ------------------------------------------------------------------------ */

static thread_local char message_buffer[512] = "no GPU error";

void
set_message(const char *format, ...)
{
	va_list		args;

	va_start(args, format);
	vsnprintf(message_buffer, sizeof(message_buffer), format, args);
	va_end(args);
}

const char *
last_message()
{
	return message_buffer;
}

const char *
format_bytes(size_t bytes, char *buffer, size_t length)
{
	const double kib = 1024.0,
				mib = kib * 1024.0,
				gib = mib * 1024.0;

	if (bytes >= (size_t) gib)
		snprintf(buffer, length, "%.1f GiB", bytes / gib);
	else if (bytes >= (size_t) mib)
		snprintf(buffer, length, "%.0f MiB", (double) ((bytes + (size_t) mib - 1) / (size_t) mib));
	else if (bytes >= (size_t) kib)
		snprintf(buffer, length, "%.0f KiB", (double) ((bytes + (size_t) kib - 1) / (size_t) kib));
	else
		snprintf(buffer, length, "%zu bytes", bytes);
	return buffer;
}

gpu_status
status_of(cudaError_t error)
{
	if (error == cudaSuccess)
		return GPU_OK;
	if (error == cudaErrorMemoryAllocation)
		return GPU_OUT_OF_MEMORY;
	if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver)
		return GPU_UNAVAILABLE;
	return GPU_FAILED;
}

gpu_status
entry_failed(const char *entry, const char *what)
{
	set_message("%s: %s", entry, what);
	return GPU_FAILED;
}

gpu_status
cuda_failure(cudaError_t error, const char *what)
{
	if (error == cudaSuccess)
		return GPU_OK;
	set_message("%s: %s", what, cudaGetErrorString(error));
	return status_of(error);
}

/* ------------------------------------------------------------------------
 * The device
 * ------------------------------------------------------------------------ */

static bool probed = false;
static gpu_device_info probe_result;
static cudaDeviceProp properties;
static cudaStream_t stream_of_process = nullptr;
static cudaStream_t copy_stream_of_process = nullptr;	/* transfers beside the work */

/* The oldest compute capability the fat binary has machine code for. */
static const int MIN_MAJOR = 8;

static void
probe(gpu_device_info *info)
{
	int			count = 0;
	cudaError_t error;

	memset(info, 0, sizeof(*info));
	info->built_with_cuda = true;
	cudaRuntimeGetVersion(&info->runtime_version);
	if (cudaDriverGetVersion(&info->driver_version) != cudaSuccess)
		info->driver_version = 0;

	error = cudaGetDeviceCount(&count);
	if (error != cudaSuccess)
	{
		cudaGetLastError();
		if (error == cudaErrorInsufficientDriver && info->driver_version == 0)
			snprintf(info->reason, sizeof(info->reason),
					 "no NVIDIA driver found (%.180s)", cudaGetErrorString(error));
		else if (error == cudaErrorInsufficientDriver)
			snprintf(info->reason, sizeof(info->reason),
					 "the NVIDIA driver is too old: it supports CUDA %d.%d, gpusort was built with CUDA %d.%d",
					 info->driver_version / 1000, info->driver_version % 1000 / 10,
					 info->runtime_version / 1000, info->runtime_version % 1000 / 10);
		else if (error == cudaErrorNoDevice)
			snprintf(info->reason, sizeof(info->reason), "no CUDA-capable GPU found");
		else
			snprintf(info->reason, sizeof(info->reason),
					 "cannot use the GPU: cudaGetDeviceCount: %.180s", cudaGetErrorString(error));
		return;
	}
	if (count == 0)
	{
		snprintf(info->reason, sizeof(info->reason), "no CUDA-capable GPU found");
		return;
	}
	error = cudaSetDevice(0);
	if (error == cudaSuccess)
		error = cudaGetDeviceProperties(&properties, 0);
	if (error != cudaSuccess)
	{
		cudaGetLastError();
		snprintf(info->reason, sizeof(info->reason), "cannot use GPU 0: %.180s",
				 cudaGetErrorString(error));
		return;
	}
	snprintf(info->name, sizeof(info->name), "%.250s", properties.name);
	info->compute_major = properties.major;
	info->compute_minor = properties.minor;
	info->multiprocessors = properties.multiProcessorCount;
	info->total_memory = properties.totalGlobalMem;
	if (properties.major < MIN_MAJOR)
	{
		snprintf(info->reason, sizeof(info->reason),
				 "GPU 0 (%.100s) has compute capability %d.%d; gpusort needs %d.0 or newer",
				 properties.name, properties.major, properties.minor, MIN_MAJOR);
		return;
	}

	int			pools = 0;

	cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0);
	if (!pools)
	{
		snprintf(info->reason, sizeof(info->reason),
				 "GPU 0 (%.100s) does not support stream-ordered memory allocation",
				 properties.name);
		return;
	}
	/* creates the context: the expensive part (~0.4 s) */
	error = cudaMemGetInfo(&info->free_memory, &info->total_memory);
	if (error != cudaSuccess)
	{
		cudaGetLastError();
		snprintf(info->reason, sizeof(info->reason), "cannot initialise GPU 0: %.180s",
				 cudaGetErrorString(error));
		return;
	}
	info->usable = true;
}

gpu_status
ensure_device()
{
	if (!probed)
	{
		probe(&probe_result);
		probed = true;
	}
	if (!probe_result.usable)
	{
		set_message("%s", probe_result.reason);
		return GPU_UNAVAILABLE;
	}
	if (stream_of_process == nullptr)
	{
		cudaError_t error = cudaStreamCreateWithFlags(&stream_of_process, cudaStreamNonBlocking);

		if (error != cudaSuccess)
		{
			stream_of_process = nullptr;
			return cuda_failure(error, "cudaStreamCreateWithFlags");
		}
	}
	if (copy_stream_of_process == nullptr)
	{
		cudaError_t error = cudaStreamCreateWithFlags(&copy_stream_of_process,
													  cudaStreamNonBlocking);

		if (error != cudaSuccess)
		{
			copy_stream_of_process = nullptr;
			return cuda_failure(error, "cudaStreamCreateWithFlags (copies)");
		}
	}
	return GPU_OK;
}

cudaStream_t
work_stream()
{
	return stream_of_process;
}

cudaStream_t
copy_stream()
{
	return copy_stream_of_process;
}

const cudaDeviceProp &
device_properties()
{
	return properties;
}

/* ------------------------------------------------------------------------
 * Job
 * ------------------------------------------------------------------------ */

Job::Job(size_t memory_limit, gpu_poll_fn poll, void *poll_arg)
	: memory_limit_(memory_limit), poll_(poll), poll_arg_(poll_arg),
	  stream_(nullptr), status_(GPU_OK), begun_(false), finished_(false),
	  allocations_(0), held_bytes_(0), peak_bytes_(0),
	  next_checkpoint_(0), checkpoint_pending_(false), work_since_checkpoint_(0)
{
	for (int i = 0; i < MARK_COUNT; i++)
	{
		marks_[i] = nullptr;
		marked_[i] = false;
	}
	checkpoints_[0] = checkpoints_[1] = nullptr;
}

Job::~Job()
{
	if (begun_ && !finished_)
		finish();
}

gpu_status
Job::fail(gpu_status status)
{
	if (status_ == GPU_OK)
		status_ = status;
	return status;
}

gpu_status
Job::check(cudaError_t error, const char *what)
{
	if (error == cudaSuccess)
		return GPU_OK;
	if (status_ != GPU_OK)
		return status_;		/* keep the first failure's message */
	return fail(cuda_failure(error, what));
}

gpu_status
Job::begin()
{
	gpu_status	status = ensure_device();

	if (status != GPU_OK)
		return fail(status);
	begun_ = true;
	stream_ = work_stream();
	for (int i = 0; i < MARK_COUNT; i++)
		GS_TRY(check(cudaEventCreate(&marks_[i]), "cudaEventCreate"));
	for (int i = 0; i < 2; i++)
		GS_TRY(check(cudaEventCreateWithFlags(&checkpoints_[i], cudaEventDisableTiming),
					 "cudaEventCreateWithFlags"));
	return GPU_OK;
}

gpu_status
Job::check_budget(size_t bytes, const char *what)
{
	char		need[32],
				cap[32];

	if (memory_limit_ == 0 || bytes <= memory_limit_)
		return GPU_OK;
	set_message("%s needs %s of GPU memory, over the limit of %s (gpusort.gpu_memory_limit)",
				what, format_bytes(bytes, need, sizeof(need)),
				format_bytes(memory_limit_, cap, sizeof(cap)));
	return fail(GPU_OUT_OF_MEMORY);
}

gpu_status
Job::allocate(void **pointer, size_t bytes, const char *what)
{
	char		need[32],
				cap[32];
	cudaError_t error;

	*pointer = nullptr;
	if (status_ != GPU_OK)
		return status_;
	if (bytes == 0)
		bytes = 16;
	if (memory_limit_ != 0 && held_bytes_ + bytes > memory_limit_)
	{
		set_message("%s: %s more GPU memory would exceed the limit of %s (gpusort.gpu_memory_limit)",
					what, format_bytes(bytes, need, sizeof(need)),
					format_bytes(memory_limit_, cap, sizeof(cap)));
		return fail(GPU_OUT_OF_MEMORY);
	}
	if (allocations_ == MAX_ALLOCATIONS)
	{
		set_message("%s: too many device allocations in one job", what);
		return fail(GPU_FAILED);
	}
	error = cudaMallocAsync(pointer, bytes, stream_);
	if (error != cudaSuccess)
	{
		cudaGetLastError();
		*pointer = nullptr;
		if (error == cudaErrorMemoryAllocation)
		{
			set_message("cudaMallocAsync: out of memory (needs %s for %s)",
						format_bytes(bytes, need, sizeof(need)), what);
			return fail(GPU_OUT_OF_MEMORY);
		}
		return fail(cuda_failure(error, "cudaMallocAsync"));
	}
	pointers_[allocations_] = *pointer;
	sizes_[allocations_] = bytes;
	allocations_++;
	held_bytes_ += bytes;
	if (held_bytes_ > peak_bytes_)
		peak_bytes_ = held_bytes_;
	return GPU_OK;
}

void
Job::release(void *pointer)
{
	if (pointer == nullptr)
		return;
	for (int i = 0; i < allocations_; i++)
	{
		if (pointers_[i] != pointer)
			continue;
		check(cudaFreeAsync(pointer, stream_), "cudaFreeAsync");
		held_bytes_ -= sizes_[i];
		allocations_--;
		pointers_[i] = pointers_[allocations_];
		sizes_[i] = sizes_[allocations_];
		return;
	}
}

gpu_status
Job::launched(const char *kernel)
{
	cudaError_t error = cudaGetLastError();

	if (error == cudaSuccess)
		return status_;
	char		what[96];

	snprintf(what, sizeof(what), "launching %s", kernel);
	return check(error, what);
}

static double
now_seconds()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * Waits for an event, calling the poll function before each query (so a
 * wait always polls at least once, however quick the GPU was): spins for
 * the first 200 microseconds (short waits should not pay a sleep), then
 * sleeps 50 microseconds between queries.
 */
gpu_status
Job::wait_event(cudaEvent_t event)
{
	double		start = now_seconds();

	for (;;)
	{
		if (poll_ != nullptr && poll_(poll_arg_))
		{
			set_message("the GPU sort was interrupted");
			return fail(GPU_INTERRUPTED);
		}

		cudaError_t error = cudaEventQuery(event);

		if (error == cudaSuccess)
			return GPU_OK;
		if (error != cudaErrorNotReady)
			return check(error, "waiting for the GPU");
		if (now_seconds() - start > 200e-6)
		{
			struct timespec pause = {0, 50 * 1000};

			nanosleep(&pause, nullptr);
		}
	}
}

gpu_status
Job::progress(uint64_t work)
{
	if (status_ != GPU_OK)
		return status_;
	work_since_checkpoint_ += work;
	if (work_since_checkpoint_ < GS_CHECKPOINT_WORK)
		return GPU_OK;
	work_since_checkpoint_ = 0;
	GS_TRY(check(cudaEventRecord(checkpoints_[next_checkpoint_], stream_), "cudaEventRecord"));
	if (checkpoint_pending_)
		GS_TRY(wait_event(checkpoints_[next_checkpoint_ ^ 1]));
	else if (poll_ != nullptr && poll_(poll_arg_))
	{
		set_message("the GPU sort was interrupted");
		return fail(GPU_INTERRUPTED);
	}
	checkpoint_pending_ = true;
	next_checkpoint_ ^= 1;
	return GPU_OK;
}

gpu_status
Job::wait_all()
{
	if (status_ != GPU_OK)
		return status_;
	GS_TRY(check(cudaEventRecord(checkpoints_[next_checkpoint_], stream_), "cudaEventRecord"));
	GS_TRY(wait_event(checkpoints_[next_checkpoint_]));
	checkpoint_pending_ = false;
	return status_;
}

gpu_status
Job::mark(int which)
{
	if (status_ != GPU_OK)
		return status_;
	GS_TRY(check(cudaEventRecord(marks_[which], stream_), "cudaEventRecord"));
	marked_[which] = true;
	return GPU_OK;
}

float
Job::elapsed_ms(int from, int to) const
{
	float		ms = 0;

	if (!marked_[from] || !marked_[to])
		return 0;
	if (cudaEventElapsedTime(&ms, marks_[from], marks_[to]) != cudaSuccess)
	{
		cudaGetLastError();
		return 0;
	}
	return ms;
}

void
Job::report_timing(gpu_timing *timing) const
{
	if (timing == nullptr)
		return;
	timing->upload_ms = elapsed_ms(MARK_START, MARK_UPLOADED);
	timing->sort_ms = elapsed_ms(MARK_UPLOADED, MARK_SORTED);
	timing->download_ms = elapsed_ms(MARK_SORTED, MARK_DOWNLOADED);
	timing->device_bytes = peak_bytes();
}

gpu_status
Job::finish()
{
	if (finished_)
		return status_;
	finished_ = true;
	if (!begun_)
		return status_;

	/* nothing may still use the memory we give back */
	check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
	while (allocations_ > 0)
		release(pointers_[allocations_ - 1]);
	check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");

	/* the pool keeps freed memory for reuse; hand it back to the driver */
	cudaMemPool_t pool;
	int			device = 0;

	if (cudaGetDevice(&device) == cudaSuccess &&
		cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess)
		check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
	for (int i = 0; i < MARK_COUNT; i++)
		if (marks_[i] != nullptr)
			cudaEventDestroy(marks_[i]);
	for (int i = 0; i < 2; i++)
		if (checkpoints_[i] != nullptr)
			cudaEventDestroy(checkpoints_[i]);
	cudaGetLastError();
	return status_;
}

}								/* namespace gs_gpu */

/* ------------------------------------------------------------------------
 * C entry points
 * ------------------------------------------------------------------------ */
using namespace gs_gpu;

static gpu_status
device_probe(gpu_device_info *info)
{
	if (!probed)
	{
		probe(&probe_result);
		probed = true;
	}
	*info = probe_result;
	if (probe_result.usable)
	{
		size_t		free_bytes = 0,
					total_bytes = 0;

		if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
			info->free_memory = free_bytes;
		else
			cudaGetLastError();
	}
	return GPU_OK;
}

extern "C" gpu_status
gpu_device_probe(gpu_device_info *info)
{
	return guard_entry("gpu_device_probe", [&] { return device_probe(info); });
}

extern "C" const char *
gpu_last_error(void)
{
	return last_message();
}

/*
 * Page-locked host memory. Pinning and unpinning cost about as much as the
 * copies they speed up (a sort of 10M rows' keys spent most of its time in
 * cudaHostAlloc and cudaFreeHost), so blocks given back are kept for the
 * next request, up to HOST_CACHE_BLOCKS of them and HOST_CACHE_BYTES in
 * all; the GPU service's process asks for the same sizes sort after sort.
 */
#define HOST_CACHE_BLOCKS 4
#define HOST_CACHE_BYTES ((size_t) 512 << 20)

struct HostBlock
{
	void	   *pointer;
	size_t		bytes;
};

static std::mutex host_lock;
static HostBlock host_cache[HOST_CACHE_BLOCKS];	/* free, kept pinned */
static std::vector<HostBlock> host_lent;	/* given out */

/* The smallest kept block of at least `bytes` (and not more than four
 * times that, so that a large block is not tied up by a small request),
 * taken out of the cache; nullptr if none. Under host_lock. */
static void *
take_cached(size_t bytes, size_t *block_bytes)
{
	int			best = -1;

	for (int i = 0; i < HOST_CACHE_BLOCKS; i++)
		if (host_cache[i].pointer != nullptr && host_cache[i].bytes >= bytes &&
			host_cache[i].bytes / 4 <= bytes &&
			(best < 0 || host_cache[i].bytes < host_cache[best].bytes))
			best = i;
	if (best < 0)
		return nullptr;
	void	   *pointer = host_cache[best].pointer;

	*block_bytes = host_cache[best].bytes;
	host_cache[best].pointer = nullptr;
	return pointer;
}

static gpu_status
host_alloc(size_t bytes, void **pointer)
{
	char		need[32];
	cudaError_t error;
	size_t		block_bytes = bytes > 0 ? bytes : 1;

	*pointer = nullptr;
	GS_TRY(ensure_device());
	{
		std::lock_guard<std::mutex> guard(host_lock);

		*pointer = take_cached(block_bytes, &block_bytes);
		if (*pointer != nullptr)
		{
			host_lent.push_back({*pointer, block_bytes});
			return GPU_OK;
		}
	}
	error = cudaHostAlloc(pointer, block_bytes, cudaHostAllocDefault);
	if (error != cudaSuccess)
	{
		cudaGetLastError();
		*pointer = nullptr;
		if (error == cudaErrorMemoryAllocation)
		{
			set_message("cudaHostAlloc: out of memory (needs %s of pinned host memory)",
						format_bytes(bytes, need, sizeof(need)));
			return GPU_OUT_OF_MEMORY;
		}
		return cuda_failure(error, "cudaHostAlloc");
	}
	std::lock_guard<std::mutex> guard(host_lock);
	host_lent.push_back({*pointer, block_bytes});
	return GPU_OK;
}

extern "C" gpu_status
gpu_host_alloc(size_t bytes, void **pointer)
{
	*pointer = nullptr;
	return guard_entry("gpu_host_alloc", [&] { return host_alloc(bytes, pointer); });
}

/* Keeps the block if the cache has room for it (making room by unpinning
 * smaller kept blocks), else unpins it. */
static void
host_free(void *pointer)
{
	HostBlock	block = {pointer, 0};
	void	   *unpin[HOST_CACHE_BLOCKS + 1];
	int			nunpin = 0;

	{
		std::lock_guard<std::mutex> guard(host_lock);
		size_t		kept = 0;
		int			empty = -1;

		for (size_t i = 0; i < host_lent.size(); i++)
			if (host_lent[i].pointer == pointer)
			{
				block = host_lent[i];
				host_lent[i] = host_lent.back();
				host_lent.pop_back();
				break;
			}
		for (int i = 0; i < HOST_CACHE_BLOCKS; i++)
			if (host_cache[i].pointer != nullptr)
				kept += host_cache[i].bytes;
		/* smaller kept blocks go first while the new one does not fit */
		while (block.bytes > 0 && block.bytes <= HOST_CACHE_BYTES)
		{
			int			smallest = -1;

			empty = -1;
			for (int i = 0; i < HOST_CACHE_BLOCKS; i++)
			{
				if (host_cache[i].pointer == nullptr)
					empty = i;
				else if (smallest < 0 || host_cache[i].bytes < host_cache[smallest].bytes)
					smallest = i;
			}
			if (empty >= 0 && kept + block.bytes <= HOST_CACHE_BYTES)
				break;
			if (smallest < 0 || host_cache[smallest].bytes >= block.bytes)
			{
				empty = -1;		/* the kept ones are larger: they stay */
				break;
			}
			unpin[nunpin++] = host_cache[smallest].pointer;
			kept -= host_cache[smallest].bytes;
			host_cache[smallest].pointer = nullptr;
		}
		if (block.bytes > 0 && block.bytes <= HOST_CACHE_BYTES && empty >= 0)
			host_cache[empty] = block;
		else
			unpin[nunpin++] = pointer;
	}
	for (int i = 0; i < nunpin; i++)
		if (cudaFreeHost(unpin[i]) != cudaSuccess)
			cudaGetLastError();
}

extern "C" void
gpu_host_free(void *pointer)
{
	if (pointer == nullptr)
		return;
	try
	{
		host_free(pointer);
	}
	catch (...)
	{
		/* nothing is thrown past an extern "C" entry */
	}
}

static gpu_status
device_check()
{
	void	   *probe_memory = nullptr;
	cudaError_t error;

	GS_TRY(ensure_device());
	error = cudaMalloc(&probe_memory, 256);
	if (error == cudaErrorMemoryAllocation)
	{
		/* full, not broken */
		cudaGetLastError();
		return GPU_OK;
	}
	if (error == cudaSuccess)
		error = cudaMemset(probe_memory, 0, 256);
	if (error == cudaSuccess)
		error = cudaDeviceSynchronize();
	if (probe_memory != nullptr)
	{
		cudaError_t freed = cudaFree(probe_memory);

		if (error == cudaSuccess)
			error = freed;
	}
	return cuda_failure(error, "the CUDA context after a failed job");
}

extern "C" gpu_status
gpu_device_check(void)
{
	return guard_entry("gpu_device_check", [&] { return device_check(); });
}

static gpu_status
device_count(int *count)
{
	cudaError_t error = cudaGetDeviceCount(count);

	if (error == cudaSuccess)
		return GPU_OK;
	*count = 0;
	if (error == cudaErrorNoDevice)
		return GPU_OK;
	return cuda_failure(error, "cudaGetDeviceCount");
}

extern "C" gpu_status
gpu_device_count(int *count)
{
	*count = 0;
	return guard_entry("gpu_device_count", [&] { return device_count(count); });
}

static gpu_status
host_register(void *pointer, size_t bytes)
{
	GS_TRY(ensure_device());
	cudaError_t error = cudaHostRegister(pointer, bytes, cudaHostRegisterDefault);

	if (error != cudaSuccess)
		return cuda_failure(error, "cudaHostRegister (the staging area)");
	return GPU_OK;
}

extern "C" gpu_status
gpu_host_register(void *pointer, size_t bytes)
{
	return guard_entry("gpu_host_register", [&] { return host_register(pointer, bytes); });
}

extern "C" void
gpu_host_unregister(void *pointer)
{
	if (pointer != nullptr && cudaHostUnregister(pointer) != cudaSuccess)
		cudaGetLastError();
}
