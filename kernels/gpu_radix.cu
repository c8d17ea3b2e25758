/*
 * gpu_radix.cu — the exact radix sort: CUB's cub::DeviceRadixSort (LSD,
 * stable), keys with the row index as value (SortPairs) or keys alone
 * (SortKeys), over bits [0, key_bits) only, so narrow keys take fewer
 * passes. CUB's two-phase temporary storage comes from the job's capped
 * stream-ordered allocator, and the DoubleBuffer form lets CUB ping-pong
 * between our two buffers instead of copying back at the end: the caller
 * downloads from whichever buffer holds the result.
 *
 * Stability plus an index that starts as 0..n-1 gives exactly the CPU's
 * result (ties in input order).
 */
#include "gpu_internal.cuh"

#include <cub/device/device_radix_sort.cuh>

namespace gs_gpu {

/* Runs (or sizes, when temp == nullptr) CUB's sort for one key type. */
template <class K>
static cudaError_t
cub_radix(void *temp, size_t &temp_bytes, K *keys, K *keys_alt, uint32_t *index,
		  uint32_t *index_alt, size_t n, unsigned key_bits, cudaStream_t stream, bool *in_alt)
{
	cub::DoubleBuffer<K> key_buffers(keys, keys_alt);
	cudaError_t error;

	if (index != nullptr)
	{
		cub::DoubleBuffer<uint32_t> index_buffers(index, index_alt);

		error = cub::DeviceRadixSort::SortPairs(temp, temp_bytes, key_buffers, index_buffers,
												(uint32_t) n, 0, (int) key_bits, stream);
	}
	else
		error = cub::DeviceRadixSort::SortKeys(temp, temp_bytes, key_buffers, (uint32_t) n, 0,
											   (int) key_bits, stream);
	if (in_alt != nullptr)
		*in_alt = key_buffers.selector != 0;
	return error;
}

static cudaError_t
cub_radix_any(void *temp, size_t &temp_bytes, unsigned key_bytes, void *keys, void *keys_alt,
			  uint32_t *index, uint32_t *index_alt, size_t n, unsigned key_bits,
			  cudaStream_t stream, bool *in_alt)
{
	if (key_bytes == 4)
		return cub_radix<uint32_t>(temp, temp_bytes, static_cast<uint32_t *>(keys),
								   static_cast<uint32_t *>(keys_alt), index, index_alt, n,
								   key_bits, stream, in_alt);
	return cub_radix<uint64_t>(temp, temp_bytes, static_cast<uint64_t *>(keys),
							   static_cast<uint64_t *>(keys_alt), index, index_alt, n, key_bits,
							   stream, in_alt);
}

gpu_status
radix_temp_bytes(unsigned key_bytes, unsigned key_bits, size_t n, bool with_index, size_t *bytes)
{
	/* any distinct non-null pointers will do for the size query */
	uint32_t	dummy_index[2];

	*bytes = 0;
	if (n < 2 || key_bits == 0)
		return GPU_OK;
	return cuda_failure(cub_radix_any(nullptr, *bytes, key_bytes, dummy_index, dummy_index + 1,
									  with_index ? dummy_index : nullptr,
									  with_index ? dummy_index + 1 : nullptr, n, key_bits,
									  work_stream(), nullptr),
						"cub::DeviceRadixSort (temporary storage size)");
}

gpu_status
radix_sort_device(Job &job, unsigned key_bytes, unsigned key_bits, size_t n, void *keys,
				  void *keys_alt, uint32_t *row_index, uint32_t *row_index_alt, bool *in_alt)
{
	size_t		temp_bytes = 0;
	void	   *temp = nullptr;
	gpu_status	status;

	*in_alt = false;
	if (n < 2 || key_bits == 0)
		return GPU_OK;			/* nothing to order: the input is the output */
	GS_TRY(job.check(cub_radix_any(nullptr, temp_bytes, key_bytes, keys, keys_alt, row_index,
								   row_index_alt, n, key_bits, job.stream(), nullptr),
					 "cub::DeviceRadixSort (temporary storage size)"));
	GS_TRY(job.allocate(&temp, temp_bytes, "radix sort temporary storage"));
	status = job.check(cub_radix_any(temp, temp_bytes, key_bytes, keys, keys_alt, row_index,
									 row_index_alt, n, key_bits, job.stream(), in_alt),
					   "cub::DeviceRadixSort");
	job.release(temp);
	if (status != GPU_OK)
		return status;
	return job.progress((uint64_t) n * ((key_bits + 7) / 8));
}

}								/* namespace gs_gpu */
