/*
 * gpu_rows.cu — a spilled sort's rows held in device memory (the GPU
 * service's rows jobs, service/gpud/rows_jobs.c): records appended as
 * they come, then laid out again in an order the caller computed, then
 * read back in pieces. Unlike the sorts of gpu_sort.cu, the buffer
 * outlives the call that made it: it is the caller's until
 * gpu_rows_destroy().
 *
 * Each handle has a stream of its own; every call waits for its work
 * before it returns, so a failure is reported by the call that caused it.
 */
#include "gpu_common.cuh"

#include <stdlib.h>

#include <cub/device/device_scan.cuh>

struct gpu_rows
{
	char	   *records;		/* capacity bytes */
	size_t		capacity;
	size_t		used;
	cudaStream_t stream;
};

namespace gs_gpu {

/* Record i of the output is bytes [from[i], from[i] + to[i + 1] - to[i])
 * of the input: one warp a record, its lanes copying bytes side by side. */
__global__ void
gather_records(const char *__restrict__ input, char *__restrict__ output,
			   const uint64_t *__restrict__ from, const uint64_t *__restrict__ to, size_t n)
{
	const size_t warp = ((size_t) blockIdx.x * blockDim.x + threadIdx.x) / 32;
	const unsigned lane = threadIdx.x % 32;
	const size_t warps = (size_t) gridDim.x * blockDim.x / 32;

	for (size_t i = warp; i < n; i += warps)
	{
		const char *source = input + from[i];
		char	   *target = output + to[i];
		const uint64_t length = to[i + 1] - to[i];

		for (uint64_t b = lane; b < length; b += 32)
			target[b] = source[b];
	}
}

/* wide[i] = lengths[i], to be summed into offsets. */
__global__ void
widen_lengths(const uint32_t *__restrict__ lengths, uint64_t *__restrict__ wide, size_t n)
{
	const size_t stride = (size_t) gridDim.x * blockDim.x;

	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		wide[i] = lengths[i];
}

/* from[i] = offsets[order[i]]; to[i + 1] = lengths[order[i]] (summed
 * after); to[0] = 0. */
__global__ void
ordered_offsets(const uint32_t *__restrict__ order, const uint64_t *__restrict__ offsets,
				const uint32_t *__restrict__ lengths, uint64_t *__restrict__ from,
				uint64_t *__restrict__ to, size_t n)
{
	const size_t stride = (size_t) gridDim.x * blockDim.x;

	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
	{
		uint32_t	row = order[i];

		from[i] = offsets[row];
		to[i + 1] = lengths[row];
	}
	if (blockIdx.x == 0 && threadIdx.x == 0)
		to[0] = 0;
}

static gpu_status
synchronized(gpu_rows *rows, cudaError_t error, const char *what)
{
	if (error == cudaSuccess)
		error = cudaStreamSynchronize(rows->stream);
	return cuda_failure(error, what);
}

}							/* namespace gs_gpu */

using namespace gs_gpu;

extern "C" gpu_status
gpu_rows_create(size_t capacity_bytes, gpu_rows **result)
{
	return guard_entry("gpu_rows_create", [&]() -> gpu_status {
		gpu_rows   *rows;
		gpu_status	status;

		*result = nullptr;
		GS_TRY(ensure_device());
		rows = static_cast<gpu_rows *>(calloc(1, sizeof(gpu_rows)));
		if (rows == nullptr)
			return entry_failed("gpu_rows_create", "out of host memory");
		status = cuda_failure(cudaStreamCreateWithFlags(&rows->stream, cudaStreamNonBlocking),
							  "cudaStreamCreateWithFlags");
		if (status != GPU_OK)
		{
			free(rows);
			return status;
		}
		status = cuda_failure(cudaMalloc(&rows->records, capacity_bytes > 0 ? capacity_bytes : 16),
							  "cudaMalloc (rows)");
		if (status != GPU_OK)
		{
			cudaStreamDestroy(rows->stream);
			free(rows);
			return status;
		}
		rows->capacity = capacity_bytes;
		*result = rows;
		return GPU_OK;
	});
}

extern "C" gpu_status
gpu_rows_append(gpu_rows *rows, const void *host, size_t bytes)
{
	return guard_entry("gpu_rows_append", [&]() -> gpu_status {
		if (bytes > rows->capacity - rows->used)
		{
			set_message("gpu_rows_append: %zu bytes do not fit the %zu left", bytes,
						rows->capacity - rows->used);
			return GPU_INVALID;
		}
		GS_TRY(synchronized(rows, cudaMemcpyAsync(rows->records + rows->used, host, bytes,
												  cudaMemcpyHostToDevice, rows->stream),
							"cudaMemcpyAsync (append rows)"));
		rows->used += bytes;
		return GPU_OK;
	});
}

extern "C" gpu_status
gpu_rows_permute(gpu_rows *rows, const uint32_t *order, const uint32_t *lengths, size_t n,
				 gpu_timing *timing)
{
	return guard_entry("gpu_rows_permute", [&]() -> gpu_status {
		uint32_t   *device_order = nullptr;
		uint32_t   *device_lengths = nullptr;
		uint64_t   *device_offsets = nullptr;
		uint64_t   *from = nullptr;
		uint64_t   *to = nullptr;
		void	   *scan_temp = nullptr;
		size_t		scan_bytes = 0;
		char	   *output = nullptr;
		cudaEvent_t marks[3] = {nullptr, nullptr, nullptr};
		gpu_status	status = GPU_OK;
		int			blocks = 0;

		for (int i = 0; i < 3 && status == GPU_OK; i++)
			status = cuda_failure(cudaEventCreate(&marks[i]), "cudaEventCreate");
		if (status == GPU_OK && n > 0)
		{
			size_t		offsets_scan_bytes = 0;

			blocks = device_properties().multiProcessorCount * 8;
			status = cuda_failure(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes,
																 (uint64_t *) nullptr,
																 (uint64_t *) nullptr, (int) n),
								  "cub::DeviceScan (size)");
			if (status == GPU_OK)
				status = cuda_failure(cub::DeviceScan::ExclusiveSum(nullptr, offsets_scan_bytes,
																	 (uint64_t *) nullptr,
																	 (uint64_t *) nullptr, (int) n),
									  "cub::DeviceScan (size)");
			scan_bytes = scan_bytes > offsets_scan_bytes ? scan_bytes : offsets_scan_bytes;
		}
		if (status == GPU_OK)
			status = cuda_failure(cudaMalloc(&device_order, (n + 1) * sizeof(uint32_t)), "cudaMalloc (order)");
		if (status == GPU_OK)
			status = cuda_failure(cudaMalloc(&device_lengths, (n + 1) * sizeof(uint32_t)), "cudaMalloc (lengths)");
		if (status == GPU_OK)
			status = cuda_failure(cudaMalloc(&device_offsets, (n + 1) * sizeof(uint64_t)), "cudaMalloc (offsets)");
		if (status == GPU_OK)
			status = cuda_failure(cudaMalloc(&from, (n + 1) * sizeof(uint64_t)), "cudaMalloc (offsets)");
		if (status == GPU_OK)
			status = cuda_failure(cudaMalloc(&to, (n + 1) * sizeof(uint64_t)), "cudaMalloc (offsets)");
		if (status == GPU_OK)
			status = cuda_failure(cudaMalloc(&scan_temp, scan_bytes + 16), "cudaMalloc (scan)");
		if (status == GPU_OK)
			status = cuda_failure(cudaMalloc(&output, rows->used > 0 ? rows->used : 16),
								  "cudaMalloc (ordered rows)");
		if (status == GPU_OK)
			status = cuda_failure(cudaEventRecord(marks[0], rows->stream), "cudaEventRecord");
		if (status == GPU_OK && n > 0)
			status = cuda_failure(cudaMemcpyAsync(device_order, order, n * sizeof(uint32_t),
												  cudaMemcpyHostToDevice, rows->stream),
								  "cudaMemcpyAsync (order)");
		if (status == GPU_OK && n > 0)
			status = cuda_failure(cudaMemcpyAsync(device_lengths, lengths, n * sizeof(uint32_t),
												  cudaMemcpyHostToDevice, rows->stream),
								  "cudaMemcpyAsync (lengths)");
		if (status == GPU_OK)
			status = cuda_failure(cudaEventRecord(marks[1], rows->stream), "cudaEventRecord");
		/* the records lie one after another in the order they came: their
		 * offsets are the sums of the lengths before them (in 64 bits) */
		if (status == GPU_OK && n > 0)
		{
			widen_lengths<<<blocks, 256, 0, rows->stream>>>(device_lengths, device_offsets, n);
			status = cuda_failure(cudaGetLastError(), "widen_lengths");
		}
		if (status == GPU_OK && n > 0)
			status = cuda_failure(cub::DeviceScan::ExclusiveSum(scan_temp, scan_bytes, device_offsets,
																 device_offsets, (int) n, rows->stream),
								  "cub::DeviceScan (offsets)");
		if (status == GPU_OK && n > 0)
		{
			/* from[i], and (from to[1] on) the lengths in order; to[0] = 0 */
			ordered_offsets<<<blocks, 256, 0, rows->stream>>>(device_order, device_offsets,
															  device_lengths, from, to, n);
			status = cuda_failure(cudaGetLastError(), "ordered_offsets");
		}
		if (status == GPU_OK && n > 0)
			status = cuda_failure(cub::DeviceScan::InclusiveSum(scan_temp, scan_bytes, to + 1,
																 to + 1, (int) n, rows->stream),
								  "cub::DeviceScan");
		if (status == GPU_OK && n > 0)
		{
			gather_records<<<blocks, 256, 0, rows->stream>>>(rows->records, output, from, to, n);
			status = cuda_failure(cudaGetLastError(), "gather_records");
		}
		if (status == GPU_OK)
			status = cuda_failure(cudaEventRecord(marks[2], rows->stream), "cudaEventRecord");
		if (status == GPU_OK)
			status = synchronized(rows, cudaSuccess, "gather_records");
		if (status == GPU_OK && n > 0)
		{
			uint64_t	total = 0;

			status = synchronized(rows, cudaMemcpyAsync(&total, to + n, sizeof(total),
														cudaMemcpyDeviceToHost, rows->stream),
								  "cudaMemcpyAsync (total)");
			if (status == GPU_OK && total != rows->used)
			{
				set_message("gpu_rows_permute: the order covers %llu bytes of %zu",
							(unsigned long long) total, rows->used);
				status = GPU_INVALID;
			}
		}
		if (status == GPU_OK && timing != nullptr)
		{
			cudaEventElapsedTime(&timing->upload_ms, marks[0], marks[1]);
			cudaEventElapsedTime(&timing->sort_ms, marks[1], marks[2]);
		}
		cudaFree(device_order);
		cudaFree(device_lengths);
		cudaFree(device_offsets);
		cudaFree(from);
		cudaFree(to);
		cudaFree(scan_temp);
		for (int i = 0; i < 3; i++)
			if (marks[i] != nullptr)
				cudaEventDestroy(marks[i]);
		if (status != GPU_OK)
		{
			cudaFree(output);
			return status;
		}
		/* the ordered copy replaces the input, which goes */
		cudaFree(rows->records);
		rows->records = output;
		rows->capacity = rows->used;
		return GPU_OK;
	});
}

extern "C" gpu_status
gpu_rows_read(gpu_rows *rows, size_t offset, void *host, size_t bytes)
{
	return guard_entry("gpu_rows_read", [&]() -> gpu_status {
		if (offset > rows->used || bytes > rows->used - offset)
		{
			set_message("gpu_rows_read: bytes [%zu, +%zu) are beyond the %zu held", offset,
						bytes, rows->used);
			return GPU_INVALID;
		}
		return synchronized(rows, cudaMemcpyAsync(host, rows->records + offset, bytes,
												  cudaMemcpyDeviceToHost, rows->stream),
							"cudaMemcpyAsync (read rows)");
	});
}

extern "C" void
gpu_rows_destroy(gpu_rows *rows)
{
	if (rows == nullptr)
		return;
	cudaStreamSynchronize(rows->stream);
	cudaFree(rows->records);
	cudaStreamDestroy(rows->stream);
	free(rows);
}
