/*
 * gpu_common.cuh — what every .cu file of the CUDA layer shares (internal,
 * not part of the C ABI):
 *
 *   - error reporting: every CUDA call is checked; a failure becomes a
 *     gpu_status plus a message that gpu_last_error() returns;
 *   - the device: initialised lazily on first use (never at load time), one
 *     non-blocking stream per process;
 *   - gs_gpu::Job, the life of one API call: stream-ordered device memory
 *     (cudaMallocAsync / cudaFreeAsync) held under the caller's memory cap,
 *     timing events, checkpoints where the caller's poll function may stop
 *     the work, and a cleanup that gives every byte back on every path.
 *
 * The definitions live in gpu_device.cu.
 */
#ifndef GPUSORT_GPU_COMMON_CUH
#define GPUSORT_GPU_COMMON_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include <exception>
#include <new>

#include "gpu_api.h"

/* Propagates a non-OK status out of the calling function. */
#define GS_TRY(expr) \
	do { \
		gpu_status gs_try_status_ = (expr); \
		if (gs_try_status_ != GPU_OK) \
			return gs_try_status_; \
	} while (0)

namespace gs_gpu {

/* ---- messages ---- */

/* Stores the message gpu_last_error() returns (printf format). */
void		set_message(const char *format, ...) __attribute__((format(printf, 1, 2)));
const char *last_message();

/* "1.5 GiB", "64 MiB", "512 bytes": for messages. */
const char *format_bytes(size_t bytes, char *buffer, size_t length);

/* The status for a CUDA error (out of memory, or a failure). */
gpu_status	status_of(cudaError_t error);

/* Records "what: <CUDA's words>" and returns the status; GPU_OK for success. */
gpu_status	cuda_failure(cudaError_t error, const char *what);

/*
 * Runs the body of an extern "C" entry point: nothing may unwind into C
 * (a C++ exception there aborts the PostgreSQL backend), so whatever the
 * host code throws (std::bad_alloc from a container, say) becomes
 * GPU_FAILED with a message. Device memory is still given back: the Job's
 * destructor runs as the exception leaves the body.
 */
gpu_status	entry_failed(const char *entry, const char *what);

template <class Body>
gpu_status
guard_entry(const char *entry, Body body) noexcept
{
	try
	{
		return body();
	}
	catch (const std::bad_alloc &)
	{
		return entry_failed(entry, "out of host memory");
	}
	catch (const std::exception &exception)
	{
		return entry_failed(entry, exception.what());
	}
	catch (...)
	{
		return entry_failed(entry, "unexpected C++ exception");
	}
}

/* ---- the device ---- */

/* Initialises CUDA on first call; GPU_UNAVAILABLE (with the reason as
 * message) when no usable GPU is there. */
gpu_status	ensure_device();

/* The process's non-blocking work stream (valid after ensure_device). */
cudaStream_t work_stream();

/* A second one, for transfers that overlap the work stream's kernels. */
cudaStream_t copy_stream();

/* Properties of the device in use (valid after ensure_device). */
const cudaDeviceProp &device_properties();

/* ---- one API call's resources ---- */

/* Between two checkpoints the device does about this many element
 * operations: at the H100's rate a few hundred microseconds. */
#define GS_CHECKPOINT_WORK ((uint64_t) 1 << 27)

/* Timing marks recorded by a job. */
enum
{
	MARK_START = 0,
	MARK_UPLOADED,
	MARK_SORTED,
	MARK_DOWNLOADED,
	MARK_COUNT
};

class Job
{
  public:
	Job(size_t memory_limit, gpu_poll_fn poll, void *poll_arg);
	~Job();

	/* Initialises the device if needed and takes the stream and events. */
	gpu_status	begin();

	/* Fails up front (GPU_OUT_OF_MEMORY, message naming the setting) when
	 * `bytes` exceed the caller's cap. */
	gpu_status	check_budget(size_t bytes, const char *what);

	/* Stream-ordered device memory, counted against the cap. */
	gpu_status	allocate(void **pointer, size_t bytes, const char *what);
	template <class T>
	gpu_status	allocate_array(T **pointer, size_t count, const char *what)
	{
		void	   *raw = nullptr;
		gpu_status	status = allocate(&raw, count * sizeof(T), what);

		*pointer = static_cast<T *>(raw);
		return status;
	}
	void		release(void *pointer);

	/* Checks a CUDA call's result; a failure is recorded (first one wins). */
	gpu_status	check(cudaError_t error, const char *what);

	/* Checks that the kernel just launched was accepted. */
	gpu_status	launched(const char *kernel);

	/*
	 * A point between kernel launches where the caller may stop the work:
	 * `work` is what was queued since the last call (element operations).
	 * Every GS_CHECKPOINT_WORK it records an event and waits for the
	 * previous one, polling; the GPU stays busy with the work queued since.
	 */
	gpu_status	progress(uint64_t work);

	/* Waits for everything queued, polling. */
	gpu_status	wait_all();

	gpu_status	mark(int which);
	float		elapsed_ms(int from, int to) const;

	/* Upload, sort and download times between the marks, and the peak
	 * device memory, into *timing (when not NULL). */
	void		report_timing(gpu_timing *timing) const;

	/* Waits for the stream, gives back all memory (trimming the pool to
	 * zero), destroys events; returns the job's final status. */
	gpu_status	finish();

	cudaStream_t stream() const { return stream_; }
	gpu_status	status() const { return status_; }
	size_t		peak_bytes() const { return peak_bytes_; }
	size_t		memory_limit() const { return memory_limit_; }

  private:
	gpu_status	wait_event(cudaEvent_t event);
	gpu_status	fail(gpu_status status);

	static const int MAX_ALLOCATIONS = 32;

	size_t		memory_limit_;
	gpu_poll_fn poll_;
	void	   *poll_arg_;
	cudaStream_t stream_;
	gpu_status	status_;
	bool		begun_;
	bool		finished_;

	void	   *pointers_[MAX_ALLOCATIONS];
	size_t		sizes_[MAX_ALLOCATIONS];
	int			allocations_;
	size_t		held_bytes_;
	size_t		peak_bytes_;

	cudaEvent_t marks_[MARK_COUNT];
	bool		marked_[MARK_COUNT];
	cudaEvent_t checkpoints_[2];
	int			next_checkpoint_;
	bool		checkpoint_pending_;
	uint64_t	work_since_checkpoint_;
};

/* Grid size for a grid-stride kernel over `items` items. */
static inline unsigned
grid_for(size_t items, unsigned block_threads, unsigned max_blocks = 65535u * 4)
{
	size_t		blocks = (items + block_threads - 1) / block_threads;

	if (blocks < 1)
		blocks = 1;
	if (blocks > max_blocks)
		blocks = max_blocks;
	return (unsigned) blocks;
}

}								/* namespace gs_gpu */

#endif							/* GPUSORT_GPU_COMMON_CUH */
