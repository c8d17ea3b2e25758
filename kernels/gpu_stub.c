/*
 * gpu_stub.c — the CUDA layer of a CPU-only build (no nvcc found, or
 * WITH_CUDA=no): every entry point answers GPU_UNAVAILABLE, and the engine
 * sorts on the CPU.
 */
#include "gpu_api.h"

#include <stdio.h>
#include <string.h>

static const char *const no_cuda = "gpusort was built without CUDA (CPU-only build)";

gpu_status
gpu_device_probe(gpu_device_info *info)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->reason, sizeof(info->reason), "%s", no_cuda);
	return GPU_OK;
}

const char *
gpu_last_error(void)
{
	return no_cuda;
}

gpu_status
gpu_device_check(void)
{
	return GPU_UNAVAILABLE;
}

gpu_status
gpu_device_count(int *count)
{
	*count = 0;
	return GPU_OK;
}

gpu_status
gpu_sort(gpu_sort_job *job, gpu_timing *timing)
{
	(void) job;
	(void) timing;
	return GPU_UNAVAILABLE;
}

gpu_status
gpu_approx_sort(gpu_approx_job *job, gpu_timing *timing)
{
	(void) job;
	(void) timing;
	return GPU_UNAVAILABLE;
}

gpu_status
gpu_minmax(const uint64_t *keys, size_t n, uint64_t *min_key,
		   uint64_t *max_key, gpu_timing *timing)
{
	(void) keys;
	(void) n;
	(void) min_key;
	(void) max_key;
	(void) timing;
	return GPU_UNAVAILABLE;
}

gpu_status
gpu_host_alloc(size_t bytes, void **pointer)
{
	(void) bytes;
	*pointer = NULL;
	return GPU_UNAVAILABLE;
}

/* never called: gpu_host_alloc() above hands out nothing */
void
gpu_host_free(void *pointer)
{
	(void) pointer;
}

gpu_status
gpu_host_register(void *pointer, size_t bytes)
{
	(void) pointer;
	(void) bytes;
	return GPU_UNAVAILABLE;
}

void
gpu_host_unregister(void *pointer)
{
	(void) pointer;
}

gpu_status
gpu_rows_create(size_t capacity_bytes, gpu_rows **rows)
{
	(void) capacity_bytes;
	*rows = NULL;
	return GPU_UNAVAILABLE;
}

gpu_status
gpu_rows_append(gpu_rows *rows, const void *host, size_t bytes)
{
	(void) rows;
	(void) host;
	(void) bytes;
	return GPU_UNAVAILABLE;
}

gpu_status
gpu_rows_permute(gpu_rows *rows, const uint32_t *order, const uint32_t *lengths, size_t n,
				 gpu_timing *timing)
{
	(void) rows;
	(void) order;
	(void) lengths;
	(void) n;
	(void) timing;
	return GPU_UNAVAILABLE;
}

gpu_status
gpu_rows_read(gpu_rows *rows, size_t offset, void *host, size_t bytes)
{
	(void) rows;
	(void) offset;
	(void) host;
	(void) bytes;
	return GPU_UNAVAILABLE;
}

void
gpu_rows_destroy(gpu_rows *rows)
{
	(void) rows;
}
