/*
 * backend_kernels.c — the CUDA kernels in this process as the engine's GPU
 * backend (sort_backend.h): kernels/gpu_api.h's functions and types
 * translated to the engine's. Not part of the engine's library
 * (gpusort.so has no kernels): linked only where the kernels are, into
 * gpusort-gpud (which sets it for a real GPU: gpud/device_cuda.c) and the
 * unit tests, GPU checks and benchmarks built with CUDA.
 */
#include "sort_backend.h"
#include "../kernels/gpu_api.h"

#include <stdio.h>
#include <string.h>

static gs_status
status_of(gpu_status status)
{
	switch (status)
	{
		case GPU_OK:
			return GS_OK;
		case GPU_UNAVAILABLE:
			return GS_ERR_GPU_UNAVAILABLE;
		case GPU_OUT_OF_MEMORY:
			return GS_ERR_GPU_OUT_OF_MEMORY;
		case GPU_INTERRUPTED:
			return GS_ERR_INTERRUPTED;
		case GPU_INVALID:
			return GS_ERR_INVALID_ARGUMENT;
		case GPU_FAILED:
			break;
	}
	return GS_ERR_GPU_FAILURE;
}

static void
set_timing(gs_backend_timing *into, const gpu_timing *timing)
{
	memset(into, 0, sizeof(*into));
	into->upload_ms = timing->upload_ms;
	into->sort_ms = timing->sort_ms;
	into->download_ms = timing->download_ms;
	into->device_bytes = timing->device_bytes;
}

static void
kernels_probe(gs_gpu_info *info)
{
	gpu_device_info device;
	gpu_status	status;

	memset(&device, 0, sizeof(device));
	status = gpu_device_probe(&device);
	memset(info, 0, sizeof(*info));
	info->built_with_cuda = device.built_with_cuda;
	info->usable = status == GPU_OK && device.usable;
	snprintf(info->reason, sizeof(info->reason), "%s",
			 status != GPU_OK && device.reason[0] == '\0' ? gpu_last_error() : device.reason);
	snprintf(info->name, sizeof(info->name), "%s", device.name);
	info->compute_major = device.compute_major;
	info->compute_minor = device.compute_minor;
	info->multiprocessors = device.multiprocessors;
	info->total_memory = device.total_memory;
	info->free_memory = device.free_memory;
	info->driver_version = device.driver_version;
	info->runtime_version = device.runtime_version;
}

static gs_status
kernels_sort(gs_backend_sort_job *request, gs_backend_timing *timing)
{
	gpu_sort_job job;
	gpu_timing	measured;
	gpu_status	status;

	memset(&job, 0, sizeof(job));
	memset(&measured, 0, sizeof(measured));
	job.n = request->n;
	job.key_bytes = request->key_bytes;
	job.key_bits = request->key_bits;
	job.keys = request->keys;
	job.row_index = request->row_index;
	job.algorithm = request->algorithm == GS_ALGO_BITONIC ? GPU_ALGO_BITONIC :
		request->algorithm == GS_ALGO_BUTTERFLY ? GPU_ALGO_BUTTERFLY : GPU_ALGO_RADIX;
	job.memory_limit = request->memory_limit;
	job.poll = request->poll;
	job.poll_arg = request->poll_arg;
	status = gpu_sort(&job, &measured);
	request->host_data_touched = job.host_data_touched;
	set_timing(timing, &measured);
	return status_of(status);
}

static gs_status
kernels_sort_words(gs_backend_words_job *request, gs_backend_timing *timing)
{
	gpu_sort_words_job job;
	gpu_timing	measured;
	gpu_status	status;

	memset(&job, 0, sizeof(job));
	memset(&measured, 0, sizeof(measured));
	job.n = request->n;
	job.nwords = request->nwords;
	job.word_bits = request->word_bits;
	job.words = request->words;
	job.row_index = request->row_index;
	job.memory_limit = request->memory_limit;
	job.poll = request->poll;
	job.poll_arg = request->poll_arg;
	status = gpu_sort_words(&job, &measured);
	set_timing(timing, &measured);
	return status_of(status);
}

static gs_status
kernels_approx_sort(gs_backend_approx_job *request, gs_backend_timing *timing)
{
	gpu_approx_job job;
	gpu_timing	measured;
	gpu_status	status;

	memset(&job, 0, sizeof(job));
	memset(&measured, 0, sizeof(measured));
	job.n = request->n;
	job.key_bytes = request->key_bytes;
	job.keys = request->keys;
	job.row_index = request->row_index;
	job.intervals = request->intervals;
	job.quantile = request->mode == GS_APPROX_QUANTILE;
	job.seed = request->seed;
	job.limit = request->limit;
	job.memory_limit = request->memory_limit;
	job.poll = request->poll;
	job.poll_arg = request->poll_arg;
	status = gpu_approx_sort(&job, &measured);
	request->host_data_touched = job.host_data_touched;
	request->valid_outputs = job.valid_outputs;
	request->min_key = job.min_key;
	request->max_key = job.max_key;
	request->sample_size = job.sample_size;
	request->largest_interval = job.largest_interval;
	set_timing(timing, &measured);
	return status_of(status);
}

static gs_status
kernels_minmax(const uint64_t *keys, size_t n, uint64_t *min_key, uint64_t *max_key,
			   gs_backend_timing *timing)
{
	gpu_timing	measured;
	gpu_status	status;

	memset(&measured, 0, sizeof(measured));
	status = gpu_minmax(keys, n, min_key, max_key, &measured);
	set_timing(timing, &measured);
	return status_of(status);
}

static gs_status
kernels_host_alloc(size_t bytes, void **pointer)
{
	return status_of(gpu_host_alloc(bytes, pointer));
}

const gs_sort_backend gs_kernels_backend = {
	.name = "CUDA kernels",
	.probe = kernels_probe,
	.sort = kernels_sort,
	.approx_sort = kernels_approx_sort,
	.sort_words = kernels_sort_words,
	.approx_quantile = true,
	.minmax = kernels_minmax,
	.host_alloc = kernels_host_alloc,
	.host_free = gpu_host_free,
	.last_error = gpu_last_error,
};
