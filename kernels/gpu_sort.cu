/*
 * gpu_sort.cu — gpu_sort(), the exact sort of host keys on the GPU: checks
 * the request, sizes and takes device memory (under the caller's cap),
 * uploads the keys, makes the row index on the device (never uploaded),
 * sorts with the chosen algorithm, downloads, and reports timings. Every
 * allocation is given back before it returns, whatever happened.
 *
 * Also the device-resident core shared with the benchmark: which element
 * type a network sorts (keys alone; key << 32 | index when the key has at
 * most 32 bits; a 16-byte pair otherwise), and the radix path.
 */
#include "gpu_internal.cuh"

#include <string.h>

namespace gs_gpu {

gpu_status
exact_sort_layout(gpu_algorithm algorithm, unsigned key_bytes, unsigned key_bits, size_t n,
				  bool with_index, ExactLayout *layout)
{
	memset(layout, 0, sizeof(*layout));
	layout->key_capacity = n;
	if (algorithm == GPU_ALGO_RADIX)
	{
		layout->needs_alt = true;
		GS_TRY(radix_temp_bytes(key_bytes, key_bits, n, with_index, &layout->temp_bytes));
		layout->total_bytes = 2 * n * key_bytes + (with_index ? 2 * n * sizeof(uint32_t) : 0) +
			layout->temp_bytes;
		return GPU_OK;
	}
	if (algorithm != GPU_ALGO_BITONIC && algorithm != GPU_ALGO_BUTTERFLY)
	{
		set_message("unknown GPU algorithm %d", (int) algorithm);
		return GPU_INVALID;
	}
	if (!with_index)
	{
		/* keys sorted in place, in a buffer long enough for the padding */
		layout->element_kind = key_bytes == 4 ? ELEMENT_U32 : ELEMENT_U64;
		layout->key_capacity = network_buffer_length(algorithm, n);
		layout->total_bytes = layout->key_capacity * key_bytes;
		return GPU_OK;
	}
	layout->element_kind = key_bits + 32 <= 64 ? ELEMENT_U64 : ELEMENT_PAIR16;
	layout->element_count = network_buffer_length(algorithm, n);
	layout->total_bytes = n * key_bytes + n * sizeof(uint32_t) +
		layout->element_count * element_bytes(layout->element_kind);
	return GPU_OK;
}

gpu_status
exact_sort_device(Job &job, gpu_algorithm algorithm, unsigned key_bytes, unsigned key_bits,
				  size_t n, const ExactLayout &layout, const ExactBuffers &buffers,
				  const NetworkTuning *tuning, bool *in_alt)
{
	*in_alt = false;
	if (algorithm == GPU_ALGO_RADIX)
	{
		if (buffers.row_index != nullptr)
			GS_TRY(iota_device(job, buffers.row_index, n));
		return radix_sort_device(job, key_bytes, key_bits, n, buffers.keys, buffers.keys_alt,
								 buffers.row_index, buffers.row_index_alt, in_alt);
	}
	if (buffers.row_index == nullptr)
		return network_sort_device(job, algorithm, layout.element_kind, buffers.keys, n, tuning);
	GS_TRY(pack_elements(job, layout.element_kind, buffers.keys, key_bytes, n, buffers.elements));
	GS_TRY(network_sort_device(job, algorithm, layout.element_kind, buffers.elements, n, tuning));
	return unpack_elements(job, layout.element_kind, buffers.elements, n, buffers.keys, key_bytes,
						   buffers.row_index);
}

/* The whole gpu_sort() once the request is known to be valid. */
static gpu_status
sort_on_device(Job &job, gpu_sort_job *request)
{
	const size_t n = request->n;
	const unsigned kb = request->key_bytes;
	const bool	with_index = request->row_index != nullptr;
	ExactLayout layout;
	ExactBuffers buffers;
	bool		in_alt = false;

	memset(&buffers, 0, sizeof(buffers));
	GS_TRY(job.begin());
	GS_TRY(exact_sort_layout(request->algorithm, kb, request->key_bits, n, with_index, &layout));
	GS_TRY(job.check_budget(layout.total_bytes, "the sort"));

	GS_TRY(job.allocate(&buffers.keys, layout.key_capacity * kb, "keys"));
	if (with_index)
		GS_TRY(job.allocate_array(&buffers.row_index, n, "row index"));
	if (layout.needs_alt)
	{
		GS_TRY(job.allocate(&buffers.keys_alt, n * kb, "radix sort keys"));
		if (with_index)
			GS_TRY(job.allocate_array(&buffers.row_index_alt, n, "radix sort row index"));
	}
	if (layout.element_count > 0)
		GS_TRY(job.allocate(&buffers.elements,
							layout.element_count * element_bytes(layout.element_kind),
							"network elements"));

	GS_TRY(job.mark(MARK_START));
	GS_TRY(job.check(cudaMemcpyAsync(buffers.keys, request->keys, n * kb, cudaMemcpyHostToDevice,
									 job.stream()), "cudaMemcpyAsync (upload keys)"));
	GS_TRY(job.mark(MARK_UPLOADED));
	GS_TRY(exact_sort_device(job, request->algorithm, kb, request->key_bits, n, layout, buffers,
							 nullptr, &in_alt));
	GS_TRY(job.mark(MARK_SORTED));
	/* wait, polling, before copies that block the host (pageable memory) */
	GS_TRY(job.wait_all());

	request->host_data_touched = true;
	GS_TRY(job.check(cudaMemcpyAsync(request->keys, in_alt ? buffers.keys_alt : buffers.keys,
									 n * kb, cudaMemcpyDeviceToHost, job.stream()),
					 "cudaMemcpyAsync (download keys)"));
	if (with_index)
		GS_TRY(job.check(cudaMemcpyAsync(request->row_index,
										 in_alt ? buffers.row_index_alt : buffers.row_index,
										 n * sizeof(uint32_t), cudaMemcpyDeviceToHost,
										 job.stream()),
						 "cudaMemcpyAsync (download row index)"));
	GS_TRY(job.mark(MARK_DOWNLOADED));
	return job.wait_all();
}

}								/* namespace gs_gpu */

using namespace gs_gpu;

extern "C" gpu_status
gpu_sort(gpu_sort_job *request, gpu_timing *timing)
{
	if (timing != nullptr)
		memset(timing, 0, sizeof(*timing));
	if (request == nullptr)
	{
		set_message("gpu_sort: no job");
		return GPU_INVALID;
	}
	request->host_data_touched = false;
	if ((request->key_bytes != 4 && request->key_bytes != 8) ||
		request->key_bits > request->key_bytes * 8 || request->n >= UINT32_MAX ||
		(request->n > 0 && request->keys == nullptr) ||
		(request->algorithm != GPU_ALGO_BITONIC && request->algorithm != GPU_ALGO_BUTTERFLY &&
		 request->algorithm != GPU_ALGO_RADIX))
	{
		set_message("gpu_sort: invalid arguments (n=%zu, key_bytes=%u, key_bits=%u, algorithm=%d)",
					request->n, request->key_bytes, request->key_bits, (int) request->algorithm);
		return GPU_INVALID;
	}
	if (request->n == 0)
		return GPU_OK;

	Job			job(request->memory_limit, request->poll, request->poll_arg);

	sort_on_device(job, request);
	job.report_timing(timing);
	return job.finish();
}
