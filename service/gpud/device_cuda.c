/*
 * device_cuda.c — gpusort-gpud's GPU when it is one: the CUDA kernels
 * (kernels/gpu_api.h) behind the device interface of gpud_int.h, and the
 * engine's GPU backend in this process (engine/backend_kernels.c). The
 * wire's types (protocol.h) are translated to and from the kernels' here.
 * Built with CUDA only; a build without has device_none.c instead.
 */
#include "gpud_int.h"

#include <stdio.h>
#include <string.h>

static gpu_algorithm
kernel_algorithm(uint32_t algorithm)
{
	return algorithm == GS_WIRE_BITONIC ? GPU_ALGO_BITONIC :
		algorithm == GS_WIRE_BUTTERFLY ? GPU_ALGO_BUTTERFLY : GPU_ALGO_RADIX;
}

static void
set_wire_timing(gs_wire_timing *into, const gpu_timing *timing)
{
	into->upload_ms = timing->upload_ms;
	into->sort_ms = timing->sort_ms;
	into->download_ms = timing->download_ms;
	into->device_bytes = timing->device_bytes;
}

static void
set_wire_device(gs_wire_device *into, const gpu_device_info *info)
{
	memset(into, 0, sizeof(*into));
	into->built_with_cuda = info->built_with_cuda;
	into->usable = info->usable;
	snprintf(into->reason, sizeof(into->reason), "%s", info->reason);
	snprintf(into->name, sizeof(into->name), "%s", info->name);
	into->compute_major = info->compute_major;
	into->compute_minor = info->compute_minor;
	into->multiprocessors = info->multiprocessors;
	into->total_memory = info->total_memory;
	into->free_memory = info->free_memory;
	into->driver_version = info->driver_version;
	into->runtime_version = info->runtime_version;
}

static int
cuda_count(char *reason, size_t reason_size)
{
	int			count = 0;

	if (gpu_device_count(&count) != GPU_OK || count == 0)
	{
		/* the probe words it best: no driver, too old a driver... */
		gpu_device_info info;

		gpu_device_probe(&info);
		snprintf(reason, reason_size, "%s",
				 info.reason[0] ? info.reason : "no CUDA-capable GPU found");
		return 0;
	}
	return count;
}

static void
cuda_probe(gs_wire_device *device)
{
	gpu_device_info info;

	gpu_device_probe(&info);
	set_wire_device(device, &info);
}

/* After a failure: whether the CUDA context is broken (a sticky error). */
static bool
cuda_broken_after_failure(void)
{
	return gpu_device_check() != GPU_OK;
}

/* Runs the job on the data in `area` with the kernels, filling `done`
 * but its timing. */
static gpu_status
run_on_gpu(gs_message *job, char *area, int *client_fd, gs_message *done, gpu_timing *timing)
{
	uint32_t   *row_index = job->with_index ?
		(uint32_t *) (area + gs_job_index_offset(job->n, job->key_bytes)) : NULL;
	gpu_status	status;

	if (job->kind == GS_JOB_MINMAX)
		return gpu_minmax((const uint64_t *) area, job->n, &done->min_key, &done->max_key,
						  timing);
	if (job->kind == GS_JOB_APPROX)
	{
		gpu_approx_job approx;

		memset(&approx, 0, sizeof(approx));
		approx.n = job->n;
		approx.key_bytes = job->key_bytes;
		approx.keys = area;
		approx.row_index = row_index;
		approx.intervals = job->intervals;
		approx.quantile = job->approx_mode == 1;
		approx.seed = job->seed;
		approx.limit = job->limit;
		approx.memory_limit = job->memory_limit;
		approx.poll = client_cancelled;
		approx.poll_arg = client_fd;
		status = gpu_approx_sort(&approx, timing);
		done->valid_outputs = approx.valid_outputs;
		done->min_key = approx.min_key;
		done->max_key = approx.max_key;
		done->sample_size = approx.sample_size;
		done->largest_interval = approx.largest_interval;
		return status;
	}

	gpu_sort_job sort;

	memset(&sort, 0, sizeof(sort));
	sort.n = job->n;
	sort.key_bytes = job->key_bytes;
	sort.key_bits = job->key_bits;
	sort.keys = area;
	sort.row_index = row_index;
	sort.algorithm = kernel_algorithm(job->algorithm);
	sort.memory_limit = job->memory_limit;
	sort.poll = client_cancelled;
	sort.poll_arg = client_fd;
	return gpu_sort(&sort, timing);
}

static gpu_status
cuda_run_job(gs_message *job, char *area, int *client_fd, gs_message *done)
{
	gpu_timing	timing;
	gpu_status	status;

	memset(&timing, 0, sizeof(timing));
	status = run_on_gpu(job, area, client_fd, done, &timing);
	set_wire_timing(&done->timing, &timing);
	return status;
}

static gpu_status
cuda_rows_create(size_t capacity_bytes, void **rows)
{
	return gpu_rows_create(capacity_bytes, (gpu_rows **) rows);
}

static gpu_status
cuda_rows_append(void *rows, const void *host, size_t bytes)
{
	return gpu_rows_append(rows, host, bytes);
}

static gpu_status
cuda_rows_permute(void *rows, const uint32_t *order, const uint32_t *lengths, size_t n,
				  gs_wire_timing *timing)
{
	gpu_timing	permute;
	gpu_status	status;

	memset(&permute, 0, sizeof(permute));
	status = gpu_rows_permute(rows, order, lengths, n, &permute);
	timing->upload_ms += permute.upload_ms;
	timing->sort_ms += permute.sort_ms;
	return status;
}

static gpu_status
cuda_rows_read(void *rows, size_t offset, void *host, size_t bytes)
{
	return gpu_rows_read(rows, offset, host, bytes);
}

static void
cuda_rows_destroy(void *rows)
{
	gpu_rows_destroy(rows);
}

const GpudDevice gpud_cuda_device = {
	.emulated = false,
	.engine_backend = &gs_kernels_backend,
	.engine_device = GS_DEVICE_AUTO,
	.pins_host_memory = true,
	.count = cuda_count,
	.probe = cuda_probe,
	.register_host = gpu_host_register,
	.broken_after_failure = cuda_broken_after_failure,
	.run_job = cuda_run_job,
	.rows_create = cuda_rows_create,
	.rows_append = cuda_rows_append,
	.rows_permute = cuda_rows_permute,
	.rows_read = cuda_rows_read,
	.rows_destroy = cuda_rows_destroy,
	.last_error = gpu_last_error,
};
