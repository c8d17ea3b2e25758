/*
 * gpu_merge.cu — merges two sorted runs of (key, row index) on the GPU, the
 * last step of gpu_sort's overlapped path (gpu_sort.cu): chunks are sorted
 * as they arrive, then merged, and each piece of the merged output goes
 * back to the host while the next piece is being merged.
 *
 * Merge path: output position d of the merge of A and B takes the first i
 * elements of A and d - i of B, where i is found by a binary search along
 * the diagonal d. One thread per tile boundary finds its i (a separate small
 * kernel, so no block waits on a chain of global reads), then each block
 * loads its tile's two slices into shared memory, every thread merges its
 * few outputs there, and the block writes the tile out coalesced. Ties go
 * to A: with A the earlier chunk, the merge keeps input order among equal
 * keys, as the stable sort must.
 */
#include "gpu_internal.cuh"

namespace gs_gpu {

static const int MERGE_THREADS = 256;
static const int MERGE_ITEMS = 8;
static const size_t MERGE_TILE = (size_t) MERGE_THREADS * MERGE_ITEMS;

/* How many of the first d outputs come from A (ties taken from A). */
template <class K>
__device__ __forceinline__ size_t
diagonal_split(const K *a, size_t na, const K *b, size_t nb, size_t d)
{
	size_t		low = d > nb ? d - nb : 0;
	size_t		high = d < na ? d : na;

	while (low < high)
	{
		size_t		mid = (low + high) / 2;

		if (a[mid] <= b[d - 1 - mid])
			low = mid + 1;
		else
			high = mid;
	}
	return low;
}

template <class K>
__global__ void
merge_split_kernel(const K *a, size_t na, const K *b, size_t nb, size_t tiles, size_t *splits)
{
	size_t		t = blockIdx.x * (size_t) blockDim.x + threadIdx.x;

	if (t <= tiles)
		splits[t] = diagonal_split(a, na, b, nb, min(t * MERGE_TILE, na + nb));
}

template <class K>
__global__ void __launch_bounds__(MERGE_THREADS)
merge_tile_kernel(const K *a_keys, const uint32_t *a_index, size_t na,
				  const K *b_keys, const uint32_t *b_index, size_t nb,
				  const size_t *splits, size_t first_tile,
				  K *out_keys, uint32_t *out_index)
{
	__shared__ K keys[MERGE_TILE];
	__shared__ uint32_t index[MERGE_TILE];
	__shared__ uint16_t source[MERGE_TILE];
	const size_t tile = first_tile + blockIdx.x;
	const size_t begin = tile * MERGE_TILE;
	const size_t end = min(begin + MERGE_TILE, na + nb);
	const size_t a_begin = splits[tile];
	const size_t a_count = splits[tile + 1] - a_begin;
	const size_t b_begin = begin - a_begin;
	const size_t count = end - begin;
	const size_t b_count = count - a_count;

	/* the tile's slices of A then B, side by side in shared memory */
	for (size_t i = threadIdx.x; i < count; i += MERGE_THREADS)
	{
		bool		from_a = i < a_count;
		size_t		at = from_a ? a_begin + i : b_begin + (i - a_count);

		keys[i] = from_a ? a_keys[at] : b_keys[at];
		if (out_index != nullptr)
			index[i] = from_a ? a_index[at] : b_index[at];
	}
	__syncthreads();

	/* each thread's outputs: a merge path search in shared memory, then a
	 * sequential merge of MERGE_ITEMS */
	const size_t d = min((size_t) threadIdx.x * MERGE_ITEMS, count);
	size_t		i = diagonal_split(keys, a_count, keys + a_count, b_count, d);
	size_t		j = d - i;

	for (int k = 0; k < MERGE_ITEMS && d + k < count; k++)
	{
		bool		take_a = j >= b_count || (i < a_count && keys[i] <= keys[a_count + j]);

		source[d + k] = (uint16_t) (take_a ? i++ : a_count + j++);
	}
	__syncthreads();

	for (size_t o = threadIdx.x; o < count; o += MERGE_THREADS)
	{
		out_keys[begin + o] = keys[source[o]];
		if (out_index != nullptr)
			out_index[begin + o] = index[source[o]];
	}
}

size_t
merge_tile_count(size_t n)
{
	return (n + MERGE_TILE - 1) / MERGE_TILE;
}

size_t
merge_output_per_tile()
{
	return MERGE_TILE;
}

template <class K>
static gpu_status
merge_splits_typed(Job &job, const MergeRuns &runs, size_t *splits)
{
	size_t		tiles = merge_tile_count(runs.na + runs.nb);

	merge_split_kernel<K><<<grid_for(tiles + 1, 256, 0x7fffffffu), 256, 0, job.stream()>>>(
		static_cast<const K *>(runs.a_keys), runs.na, static_cast<const K *>(runs.b_keys),
		runs.nb, tiles, splits);
	return job.launched("merge splits");
}

gpu_status
merge_splits_device(Job &job, const MergeRuns &runs, size_t *splits)
{
	if (runs.na + runs.nb == 0)
		return GPU_OK;
	if (runs.key_bytes == 4)
		return merge_splits_typed<uint32_t>(job, runs, splits);
	return merge_splits_typed<uint64_t>(job, runs, splits);
}

template <class K>
static gpu_status
merge_tiles_typed(Job &job, const MergeRuns &runs, const size_t *splits, size_t first_tile,
				  size_t tile_count)
{
	if (tile_count > 0x7fffffffu)
	{
		set_message("merge: %zu tiles is too many", tile_count);
		return GPU_INVALID;
	}
	merge_tile_kernel<K><<<(unsigned) tile_count, MERGE_THREADS, 0, job.stream()>>>(
		static_cast<const K *>(runs.a_keys), runs.a_index, runs.na,
		static_cast<const K *>(runs.b_keys), runs.b_index, runs.nb, splits, first_tile,
		static_cast<K *>(runs.out_keys), runs.out_index);
	return job.launched("merge");
}

gpu_status
merge_tiles_device(Job &job, const MergeRuns &runs, const size_t *splits, size_t first_tile,
				   size_t tile_count)
{
	if (tile_count == 0)
		return GPU_OK;
	if (runs.key_bytes == 4)
		GS_TRY(merge_tiles_typed<uint32_t>(job, runs, splits, first_tile, tile_count));
	else
		GS_TRY(merge_tiles_typed<uint64_t>(job, runs, splits, first_tile, tile_count));
	return job.progress(tile_count * MERGE_TILE);
}

}								/* namespace gs_gpu */
