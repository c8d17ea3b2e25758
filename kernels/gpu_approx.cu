/*
 * gpu_approx.cu — the approximate interval sort of Xiao, Chen and Sun
 * (approximate-sort-xiao): [min, max] of the keys is cut into equal-width
 * intervals, the keys are counted per interval, the counts scanned, and
 * every key scattered into its interval's slice of the output. Intervals
 * come out in order; within one, the order is whatever the atomics made.
 *
 *   1. min/max: the min-max butterfly (gpu_minmax.cu), left on the device;
 *   2. the interval map: kernels/interval_map.h, the same integer formula as
 *      the CPU, bit for bit (each block builds it from min/max; CUDA
 *      compiles its unsigned __int128 division for the device);
 *   3. counts: per-block shared-memory histograms (consecutive lanes of a
 *      warp that hit the same interval are merged first, so sorted or
 *      clustered inputs do not serialise on one counter), then added to the
 *      global counts; with more intervals than shared memory holds,
 *      warp-merged global atomics;
 *   4. exclusive scan of the counts: cub::DeviceScan;
 *   5. with a limit: the cut interval, the first whose end reaches the
 *      limit, found on the device by binary search; only intervals up to it
 *      are written, and valid_outputs is its end;
 *   6. scatter. Two ways, chosen by the caller (the benchmark compares them):
 *      "cursors": global cursors per interval, claimed with warp-merged
 *      atomics; each interval's slice fills front to back, so the partially
 *      written 32-byte sectors at any moment are few and stay in L2. The
 *      slice can be split into `lanes` parts, each with its own cursor and
 *      filled by its own blocks (counted apart), so fewer atomics meet on
 *      one address; cursors can be spaced out over more cache lines;
 *      "block offsets": the counting blocks keep their histograms apart
 *      (interval-major, so one scan gives every block its own offset in
 *      every interval) and each block re-reads its chunk and places its keys
 *      with shared-memory atomics only: no global atomics, but each slice is
 *      written by all blocks at once;
 *      "chunks" (the default where the intervals fit in shared memory): a
 *      block counts a chunk of keys in shared memory, claims each interval's
 *      share of the chunk with one global atomic, then re-reads the chunk
 *      (from L2) and places each key with a shared-memory atomic. Global
 *      atomics fall from one per key to one per interval per chunk, and each
 *      claim is a short contiguous run, so the writes still combine in L2.
 */
#include "gpu_internal.cuh"
#include "interval_map.h"

#include <cub/device/device_scan.cuh>

namespace gs_gpu {

static const int APPROX_THREADS = 512;
static const int APPROX_UNROLL = 8;		/* keys per thread in flight */
static const uint32_t APPROX_SMEM_BINS = 24576;	/* 96 KiB of shared counters */
static const uint32_t NO_INTERVAL = 0xffffffffu;

/*
 * Defaults, from the benchmark (bench/README.md): one cursor per interval,
 * each on its own 128-byte line (15% faster than packed cursors at 2^24;
 * more lanes were slower).
 */
static const ApproxTuning default_tuning = {APPROX_SCATTER_CURSORS, 1, 32, 0, 0};
/* keys alone (no row index) of 32 bits: chunks of 16384 keys measured 15%
 * faster than the cursors at 2^24; larger chunks and wider elements were
 * slower (bench/README.md) */
static const ApproxTuning default_narrow_keys_tuning = {APPROX_SCATTER_CHUNKS, 1, 1, 0, 16384};
static const size_t APPROX_DEFAULT_CHUNK = 16384;
static const int APPROX_BLOCKS_PER_SM = 2;

/* ------------------------------------------------------------------------
 * Device helpers
 * ------------------------------------------------------------------------ */

/* The interval map, built once per block from the min/max on the device. */
__device__ __forceinline__ gs_interval_map
block_interval_map(const ApproxResult *result, uint32_t intervals)
{
	__shared__ gs_interval_map shared_map;

	if (threadIdx.x == 0)
		shared_map = gs_interval_map_make(result->min_key, result->max_key, intervals);
	__syncthreads();
	return shared_map;
}

/*
 * Calls visit(key, position, valid) for keys [begin, end): each warp takes
 * runs of 32 * APPROX_UNROLL consecutive keys (coalesced, all loads issued
 * before the first use). All lanes of a warp call visit together, as the
 * warp-level merging needs.
 */
template <class K, class Visit>
__device__ __forceinline__ void
for_each_key(const K *keys, size_t begin, size_t end, size_t first_warp, size_t warp_count,
			 Visit visit)
{
	const unsigned lane = threadIdx.x & 31;
	const size_t run_length = 32 * APPROX_UNROLL;

	for (size_t run = begin + first_warp * run_length; run < end; run += warp_count * run_length)
	{
		K			k[APPROX_UNROLL];

#pragma unroll
		for (int u = 0; u < APPROX_UNROLL; u++)
		{
			size_t		i = run + u * 32 + lane;

			k[u] = i < end ? keys[i] : (K) 0;
		}
#pragma unroll
		for (int u = 0; u < APPROX_UNROLL; u++)
		{
			size_t		i = run + u * 32 + lane;

			visit(k[u], i, i < end);
		}
	}
}

/*
 * Adds 1 per active lane to counters[bin]. Consecutive lanes with the same
 * bin form a run whose first lane adds the run's length (a sorted or
 * clustered input then costs one atomic per run, not per key; equal bins
 * that are not adjacent just add separately). Returns, when asked, each
 * lane's slot: the counter's old value plus the lane's place in its run.
 */
template <bool RETURN_SLOT>
__device__ __forceinline__ uint32_t
warp_merged_add(uint32_t *counters, uint32_t bin, bool active)
{
	const unsigned lane = threadIdx.x & 31;
	const uint32_t key = active ? bin : NO_INTERVAL;
	const uint32_t previous = __shfl_up_sync(0xffffffffu, key, 1);
	const bool	head = lane == 0 || key != previous;
	const unsigned heads = __ballot_sync(0xffffffffu, head);
	const unsigned up_to_me = (2u << lane) - 1;	/* lanes 0..lane (all for 31) */
	const unsigned later_heads = heads & ~up_to_me;
	const int	next_head = later_heads ? __ffs(later_heads) - 1 : 32;
	uint32_t	slot = 0;

	if (head && active)
	{
		uint32_t	length = (uint32_t) (next_head - (int) lane);

		if (RETURN_SLOT)
			slot = atomicAdd(&counters[bin], length);
		else
			atomicAdd(&counters[bin], length);
	}
	if (!RETURN_SLOT)
		return 0;

	const int	my_head = 31 - __clz(heads & up_to_me);

	slot = __shfl_sync(0xffffffffu, slot, my_head);
	return slot + (uint32_t) ((int) lane - my_head);
}

/* ------------------------------------------------------------------------
 * Kernels: counting
 * ------------------------------------------------------------------------ */

/*
 * Shared-memory histogram per block, added at the end to the global counts
 * of the block's lane: counts[bin * lanes + blockIdx % lanes].
 */
template <class K>
__global__ void __launch_bounds__(APPROX_THREADS)
count_smem_kernel(const K *keys, size_t n, const ApproxResult *result, uint32_t intervals,
				  uint32_t lanes, uint32_t *counts)
{
	extern __shared__ uint32_t histogram[];
	const gs_interval_map map = block_interval_map(result, intervals);
	const size_t warps = APPROX_THREADS / 32;
	const uint32_t lane_of_block = blockIdx.x % lanes;

	for (uint32_t b = threadIdx.x; b < intervals; b += APPROX_THREADS)
		histogram[b] = 0;
	__syncthreads();
	for_each_key(keys, 0, n, blockIdx.x * warps + threadIdx.x / 32, gridDim.x * warps,
				 [&](K key, size_t, bool valid) {
					 uint32_t	bin = valid ? gs_approx_interval(&map, key) : 0;

					 warp_merged_add<false>(histogram, bin, valid);
				 });
	__syncthreads();
	for (uint32_t b = threadIdx.x; b < intervals; b += APPROX_THREADS)
		if (histogram[b] != 0)
			atomicAdd(&counts[(size_t) b * lanes + lane_of_block], histogram[b]);
}

/* Too many intervals for shared memory: warp-merged global atomics. */
template <class K>
__global__ void __launch_bounds__(APPROX_THREADS)
count_global_kernel(const K *keys, size_t n, const ApproxResult *result, uint32_t intervals,
					uint32_t lanes, uint32_t *counts)
{
	const gs_interval_map map = block_interval_map(result, intervals);
	const size_t warps = APPROX_THREADS / 32;
	const uint32_t lane_of_block = blockIdx.x % lanes;

	for_each_key(keys, 0, n, blockIdx.x * warps + threadIdx.x / 32, gridDim.x * warps,
				 [&](K key, size_t, bool valid) {
					 uint32_t	bin = valid ? gs_approx_interval(&map, key) : 0;

					 warp_merged_add<false>(counts, bin * lanes + lane_of_block, valid);
				 });
}

/*
 * Per-block histograms of consecutive chunks, stored interval-major
 * (matrix[bin * blocks + block]) so that one exclusive scan gives each
 * block its offset within each interval. matrix[intervals * blocks] = 0
 * makes the scan's last entry the total.
 */
template <class K>
__global__ void __launch_bounds__(APPROX_THREADS)
count_blocks_kernel(const K *keys, size_t n, size_t chunk, const ApproxResult *result,
					uint32_t intervals, uint32_t *matrix)
{
	extern __shared__ uint32_t histogram[];
	const gs_interval_map map = block_interval_map(result, intervals);
	const size_t begin = blockIdx.x * chunk;
	const size_t end = begin + chunk < n ? begin + chunk : n;

	for (uint32_t b = threadIdx.x; b < intervals; b += APPROX_THREADS)
		histogram[b] = 0;
	__syncthreads();
	for_each_key(keys, begin, end, threadIdx.x / 32, APPROX_THREADS / 32,
				 [&](K key, size_t, bool valid) {
					 uint32_t	bin = valid ? gs_approx_interval(&map, key) : 0;

					 warp_merged_add<false>(histogram, bin, valid);
				 });
	__syncthreads();
	for (uint32_t b = threadIdx.x; b < intervals; b += APPROX_THREADS)
		matrix[(size_t) b * gridDim.x + blockIdx.x] = histogram[b];
	if (blockIdx.x == 0 && threadIdx.x == 0)
		matrix[(size_t) intervals * gridDim.x] = 0;
}

/* ------------------------------------------------------------------------
 * Kernels: the cut, the cursors
 * ------------------------------------------------------------------------ */

/*
 * end(b) = offsets[(b + 1) * stride]: where interval b's outputs end. The
 * cut is the first interval whose end reaches the limit (the last interval
 * without one), exactly the CPU's binary search.
 */
__global__ void
cut_kernel(const uint32_t *offsets, size_t stride, uint32_t intervals, size_t n,
		   size_t limit, ApproxResult *result)
{
	uint32_t	cut = intervals - 1;

	if (limit > 0 && limit < n)
	{
		uint32_t	low = 0,
					high = intervals - 1;

		while (low < high)
		{
			uint32_t	mid = low + (high - low) / 2;

			if (offsets[(size_t) (mid + 1) * stride] >= limit)
				high = mid;
			else
				low = mid + 1;
		}
		cut = low;
	}
	result->cut = cut;
	result->valid_outputs = offsets[(size_t) (cut + 1) * stride];
}

/* cursors[i * stride] = offsets[i]: spaced-out cursors */
__global__ void
spread_cursors_kernel(const uint32_t *offsets, size_t count, uint32_t stride, uint32_t *cursors)
{
	for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < count;
		 i += (size_t) gridDim.x * blockDim.x)
		cursors[i * stride] = offsets[i];
}

/* ------------------------------------------------------------------------
 * Kernels: scattering
 * ------------------------------------------------------------------------ */

template <class K>
__global__ void __launch_bounds__(APPROX_THREADS)
scatter_cursors_kernel(const K *keys, size_t n, const ApproxResult *result, uint32_t intervals,
					   uint32_t lanes, uint32_t stride, uint32_t *cursors, K *out_keys,
					   uint32_t *out_index)
{
	const gs_interval_map map = block_interval_map(result, intervals);
	const uint32_t cut = (uint32_t) result->cut;
	const size_t warps = APPROX_THREADS / 32;
	const uint32_t lane_of_block = blockIdx.x % lanes;

	for_each_key(keys, 0, n, blockIdx.x * warps + threadIdx.x / 32, gridDim.x * warps,
				 [&](K key, size_t i, bool valid) {
					 uint32_t	bin = valid ? gs_approx_interval(&map, key) : 0;
					 bool		keep = valid && bin <= cut;
					 uint32_t	slot = warp_merged_add<true>(
						 cursors, (bin * lanes + lane_of_block) * stride, keep);

					 if (keep)
					 {
						 out_keys[slot] = key;
						 if (out_index != nullptr)
							 out_index[slot] = (uint32_t) i;
					 }
				 });
}

template <class K>
__global__ void __launch_bounds__(APPROX_THREADS)
scatter_blocks_kernel(const K *keys, size_t n, size_t chunk, const ApproxResult *result,
					  uint32_t intervals, const uint32_t *offsets, K *out_keys,
					  uint32_t *out_index)
{
	extern __shared__ uint32_t cursors[];
	const gs_interval_map map = block_interval_map(result, intervals);
	const uint32_t cut = (uint32_t) result->cut;
	const size_t begin = blockIdx.x * chunk;
	const size_t end = begin + chunk < n ? begin + chunk : n;

	for (uint32_t b = threadIdx.x; b < intervals; b += APPROX_THREADS)
		cursors[b] = offsets[(size_t) b * gridDim.x + blockIdx.x];
	__syncthreads();
	for_each_key(keys, begin, end, threadIdx.x / 32, APPROX_THREADS / 32,
				 [&](K key, size_t i, bool valid) {
					 uint32_t	bin = valid ? gs_approx_interval(&map, key) : 0;
					 bool		keep = valid && bin <= cut;
					 uint32_t	slot = warp_merged_add<true>(cursors, bin, keep);

					 if (keep)
					 {
						 out_keys[slot] = key;
						 if (out_index != nullptr)
							 out_index[slot] = (uint32_t) i;
					 }
				 });
}

/*
 * Chunks: per chunk of keys, count (shared atomics), claim each interval's
 * run of output slots (one global atomic per interval present), then place
 * the keys (shared atomics on the claimed bases). Blocks loop over chunks.
 */
template <class K>
__global__ void __launch_bounds__(APPROX_THREADS)
scatter_chunks_kernel(const K *keys, size_t n, size_t chunk, const ApproxResult *result,
					  uint32_t intervals, uint32_t *cursors, K *out_keys, uint32_t *out_index)
{
	extern __shared__ uint32_t bins[];
	const gs_interval_map map = block_interval_map(result, intervals);
	const uint32_t cut = (uint32_t) result->cut;
	const uint32_t claimed = cut + 1 < intervals ? cut + 1 : intervals;
	const size_t warps = APPROX_THREADS / 32;

	for (size_t begin = blockIdx.x * chunk; begin < n; begin += (size_t) gridDim.x * chunk)
	{
		const size_t end = begin + chunk < n ? begin + chunk : n;

		for (uint32_t b = threadIdx.x; b < claimed; b += APPROX_THREADS)
			bins[b] = 0;
		__syncthreads();
		for_each_key(keys, begin, end, threadIdx.x / 32, warps,
					 [&](K key, size_t, bool valid) {
						 uint32_t	bin = valid ? gs_approx_interval(&map, key) : 0;

						 warp_merged_add<false>(bins, bin, valid && bin <= cut);
					 });
		__syncthreads();
		for (uint32_t b = threadIdx.x; b < claimed; b += APPROX_THREADS)
			if (bins[b] != 0)
				bins[b] = atomicAdd(&cursors[b], bins[b]);
		__syncthreads();
		for_each_key(keys, begin, end, threadIdx.x / 32, warps,
					 [&](K key, size_t i, bool valid) {
						 uint32_t	bin = valid ? gs_approx_interval(&map, key) : 0;
						 bool		keep = valid && bin <= cut;
						 uint32_t	slot = warp_merged_add<true>(bins, bin, keep);

						 if (keep)
						 {
							 out_keys[slot] = key;
							 if (out_index != nullptr)
								 out_index[slot] = (uint32_t) i;
						 }
					 });
		__syncthreads();
	}
}

/* ------------------------------------------------------------------------
 * Host side
 * ------------------------------------------------------------------------ */

/* The tuning that will actually run. */
static ApproxTuning
resolve_tuning(const ApproxTuning *tuning, uint32_t intervals, unsigned key_bytes,
			   bool with_index)
{
	ApproxTuning t = tuning ? *tuning :
		(key_bytes == 4 && !with_index) ? default_narrow_keys_tuning : default_tuning;

	if (t.lanes < 1)
		t.lanes = 1;
	if (t.cursor_stride < 1)
		t.cursor_stride = 1;
	if (t.scatter == APPROX_SCATTER_CHUNKS)
	{
		t.lanes = 1;
		t.cursor_stride = 1;
		if (t.chunk_keys < 1)
			t.chunk_keys = (int) APPROX_DEFAULT_CHUNK;
	}
	if (intervals > APPROX_SMEM_BINS)
	{
		/* only the cursor method without lanes works without shared counters
		 * (and lanes would multiply a large count array) */
		t.scatter = APPROX_SCATTER_CURSORS;
		t.lanes = 1;
		t.cursor_stride = 1;
	}
	return t;
}

/* Blocks of the counting and cursor-scatter kernels: the same grid for
 * both, since a block's lane is its number modulo the lanes. */
static unsigned
approx_grid(size_t n)
{
	return grid_for(n, APPROX_THREADS * APPROX_UNROLL,
					APPROX_BLOCKS_PER_SM * device_properties().multiProcessorCount);
}

/* Blocks of the block-offsets method: a couple per SM (or as tuned), each
 * >= 8192 keys. */
static size_t
offset_blocks(size_t n, const ApproxTuning &t)
{
	size_t		blocks = t.offset_blocks > 0 ? (size_t) t.offset_blocks :
		(size_t) 2 * device_properties().multiProcessorCount;
	size_t		by_size = n / 8192;

	if (by_size < blocks)
		blocks = by_size;
	return blocks < 1 ? 1 : blocks;
}

/* Entries of the count array that get scanned. */
static size_t
scanned_entries(size_t n, uint32_t intervals, const ApproxTuning &t)
{
	if (t.scatter == APPROX_SCATTER_BLOCK_OFFSETS)
		return (size_t) intervals * offset_blocks(n, t) + 1;
	return (size_t) intervals * t.lanes + 1;
}

static size_t
cursor_entries(size_t n, uint32_t intervals, const ApproxTuning &t)
{
	if (t.scatter != APPROX_SCATTER_CURSORS || t.cursor_stride == 1)
		return 0;				/* the scanned offsets serve as cursors */
	(void) n;
	return (size_t) intervals * t.lanes * t.cursor_stride;
}

static cudaError_t
scan_counts(void *temp, size_t &temp_bytes, const uint32_t *counts, uint32_t *offsets,
			size_t entries, cudaStream_t stream)
{
	return cub::DeviceScan::ExclusiveSum(temp, temp_bytes, counts, offsets, entries, stream);
}

size_t
approx_temp_bytes(size_t n, unsigned key_bytes, uint32_t intervals, const ApproxTuning *tuning)
{
	/* with the default, whichever of its two shapes needs more */
	ApproxTuning t = resolve_tuning(tuning, intervals, key_bytes, true);
	size_t		entries = scanned_entries(n, intervals, t);
	size_t		scan_bytes = 0;

	if (scan_counts(nullptr, scan_bytes, nullptr, nullptr, entries, work_stream()) != cudaSuccess)
	{
		cudaGetLastError();
		scan_bytes = entries * sizeof(uint32_t);	/* a generous guess */
	}
	return minmax_temp_bytes(n, key_bytes) +
		(2 * entries + cursor_entries(n, intervals, t)) * sizeof(uint32_t) + scan_bytes + 1024;
}

static gpu_status
set_shared_limit(Job &job, const void *kernel, size_t bytes)
{
	return job.check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
										  (int) bytes),
					 "cudaFuncSetAttribute(approximate sort)");
}

template <class K>
static gpu_status
approx_typed(Job &job, const K *keys, size_t n, uint32_t intervals, size_t limit, K *out_keys,
			 uint32_t *out_index, ApproxResult *result, const ApproxTuning &t)
{
	const size_t entries = scanned_entries(n, intervals, t);
	const size_t smem_bins = (size_t) intervals * sizeof(uint32_t);
	const bool	block_offsets = t.scatter == APPROX_SCATTER_BLOCK_OFFSETS;
	const uint32_t lanes = (uint32_t) t.lanes;
	const uint32_t stride = (uint32_t) t.cursor_stride;
	uint32_t   *counts = nullptr;
	uint32_t   *offsets = nullptr;
	uint32_t   *cursors = nullptr;
	void	   *scan_temp = nullptr;
	size_t		scan_bytes = 0;
	gpu_status	status;

	/* 1. min and max land in result->min_key, result->max_key */
	GS_TRY(minmax_device(job, keys, sizeof(K), n, &result->min_key));

	GS_TRY(job.allocate_array(&counts, entries, "interval counts"));
	status = job.allocate_array(&offsets, entries, "interval offsets");
	if (status == GPU_OK)
		status = job.check(scan_counts(nullptr, scan_bytes, counts, offsets, entries, job.stream()),
						   "cub::DeviceScan (temporary storage size)");
	if (status == GPU_OK)
		status = job.allocate(&scan_temp, scan_bytes, "scan temporary storage");

	/* 2-3. counts */
	if (status == GPU_OK && block_offsets)
	{
		size_t		blocks = offset_blocks(n, t);
		size_t		chunk = (n + blocks - 1) / blocks;

		status = set_shared_limit(job, (const void *) count_blocks_kernel<K>, smem_bins);
		if (status == GPU_OK)
		{
			count_blocks_kernel<K><<<(unsigned) blocks, APPROX_THREADS, smem_bins, job.stream()>>>(
				keys, n, chunk, result, intervals, counts);
			status = job.launched("approximate sort: count");
		}
	}
	else if (status == GPU_OK)
	{
		status = job.check(cudaMemsetAsync(counts, 0, entries * sizeof(uint32_t), job.stream()),
						   "cudaMemsetAsync");
		if (status == GPU_OK && intervals <= APPROX_SMEM_BINS)
		{
			status = set_shared_limit(job, (const void *) count_smem_kernel<K>, smem_bins);
			if (status == GPU_OK)
			{
				count_smem_kernel<K><<<approx_grid(n), APPROX_THREADS, smem_bins, job.stream()>>>(
					keys, n, result, intervals, lanes, counts);
				status = job.launched("approximate sort: count");
			}
		}
		else if (status == GPU_OK)
		{
			count_global_kernel<K><<<approx_grid(n), APPROX_THREADS, 0, job.stream()>>>(
				keys, n, result, intervals, lanes, counts);
			status = job.launched("approximate sort: count");
		}
	}
	if (status == GPU_OK)
		status = job.progress(n);

	/* 4. scan */
	if (status == GPU_OK)
		status = job.check(scan_counts(scan_temp, scan_bytes, counts, offsets, entries, job.stream()),
						   "cub::DeviceScan");
	job.release(scan_temp);
	job.release(counts);

	/* 5. the cut (and valid_outputs) */
	if (status == GPU_OK)
	{
		size_t		end_stride = block_offsets ? offset_blocks(n, t) : lanes;

		cut_kernel<<<1, 1, 0, job.stream()>>>(offsets, end_stride, intervals, n, limit, result);
		status = job.launched("approximate sort: cut");
	}

	/* 6. scatter */
	if (status == GPU_OK && t.scatter == APPROX_SCATTER_CHUNKS)
	{
		size_t		chunk = (size_t) t.chunk_keys;
		size_t		chunks = (n + chunk - 1) / chunk;
		size_t		blocks = (size_t) APPROX_BLOCKS_PER_SM * device_properties().multiProcessorCount;

		if (chunks < blocks)
			blocks = chunks;
		status = set_shared_limit(job, (const void *) scatter_chunks_kernel<K>, smem_bins);
		if (status == GPU_OK)
		{
			scatter_chunks_kernel<K><<<(unsigned) blocks, APPROX_THREADS, smem_bins, job.stream()>>>(
				keys, n, chunk, result, intervals, offsets, out_keys, out_index);
			status = job.launched("approximate sort: scatter");
		}
	}
	else if (status == GPU_OK && block_offsets)
	{
		size_t		blocks = offset_blocks(n, t);
		size_t		chunk = (n + blocks - 1) / blocks;

		status = set_shared_limit(job, (const void *) scatter_blocks_kernel<K>, smem_bins);
		if (status == GPU_OK)
		{
			scatter_blocks_kernel<K><<<(unsigned) blocks, APPROX_THREADS, smem_bins, job.stream()>>>(
				keys, n, chunk, result, intervals, offsets, out_keys, out_index);
			status = job.launched("approximate sort: scatter");
		}
	}
	else if (status == GPU_OK)
	{
		size_t		count = (size_t) intervals * lanes;

		cursors = offsets;
		if (stride > 1)
		{
			status = job.allocate_array(&cursors, count * stride, "interval cursors");
			if (status == GPU_OK)
			{
				spread_cursors_kernel<<<grid_for(count, 256), 256, 0, job.stream()>>>(
					offsets, count, stride, cursors);
				status = job.launched("approximate sort: cursors");
			}
		}
		if (status == GPU_OK)
		{
			scatter_cursors_kernel<K><<<approx_grid(n), APPROX_THREADS, 0, job.stream()>>>(
				keys, n, result, intervals, lanes, stride, cursors, out_keys, out_index);
			status = job.launched("approximate sort: scatter");
		}
		if (cursors != offsets)
			job.release(cursors);
	}
	job.release(offsets);
	if (status != GPU_OK)
		return status;
	return job.progress(n);
}

gpu_status
approx_sort_device(Job &job, const void *keys, unsigned key_bytes, size_t n, uint32_t intervals,
				   size_t limit, void *out_keys, uint32_t *out_index, ApproxResult *result,
				   const ApproxTuning *tuning)
{
	if (intervals < 1)
	{
		set_message("the approximate sort needs at least one interval");
		return GPU_INVALID;
	}
	if (n == 0)
		return job.check(cudaMemsetAsync(result, 0, sizeof(*result), job.stream()),
						 "cudaMemsetAsync");

	ApproxTuning t = resolve_tuning(tuning, intervals, key_bytes, out_index != nullptr);

	if (key_bytes == 4)
		return approx_typed(job, static_cast<const uint32_t *>(keys), n, intervals, limit,
							static_cast<uint32_t *>(out_keys), out_index, result, t);
	return approx_typed(job, static_cast<const uint64_t *>(keys), n, intervals, limit,
						static_cast<uint64_t *>(out_keys), out_index, result, t);
}

}								/* namespace gs_gpu */

/* ------------------------------------------------------------------------
 * C entry point
 * ------------------------------------------------------------------------ */
using namespace gs_gpu;

extern "C" gpu_status
gpu_approx_sort(gpu_approx_job *request, gpu_timing *timing)
{
	const size_t n = request->n;
	const unsigned kb = request->key_bytes;
	void	   *keys = nullptr;
	void	   *out_keys = nullptr;
	uint32_t   *out_index = nullptr;
	ApproxResult *result = nullptr;
	ApproxResult host_result;
	gpu_status	status;

	if (timing != nullptr)
		memset(timing, 0, sizeof(*timing));
	request->host_data_touched = false;
	request->valid_outputs = 0;
	request->min_key = request->max_key = 0;
	if ((kb != 4 && kb != 8) || request->intervals < 1 || n >= UINT32_MAX ||
		(n > 0 && request->keys == nullptr))
	{
		set_message("gpu_approx_sort: invalid arguments (n=%zu, key_bytes=%u, intervals=%u)",
					n, kb, request->intervals);
		return GPU_INVALID;
	}
	if (n == 0)
		return GPU_OK;

	Job			job(request->memory_limit, request->poll, request->poll_arg);

	status = job.begin();
	if (status == GPU_OK)
		status = job.check_budget(2 * n * kb + (request->row_index ? n * 4 : 0) +
								  sizeof(ApproxResult) +
								  approx_temp_bytes(n, kb, request->intervals, nullptr),
								  "the approximate sort");
	if (status == GPU_OK)
		status = job.allocate(&keys, n * kb, "keys");
	if (status == GPU_OK)
		status = job.allocate(&out_keys, n * kb, "sorted keys");
	if (status == GPU_OK && request->row_index != nullptr)
		status = job.allocate_array(&out_index, n, "row index");
	if (status == GPU_OK)
		status = job.allocate_array(&result, 1, "approximate sort result");
	if (status == GPU_OK)
		status = job.mark(MARK_START);
	if (status == GPU_OK)
		status = job.check(cudaMemcpyAsync(keys, request->keys, n * kb, cudaMemcpyHostToDevice,
										   job.stream()), "cudaMemcpyAsync (upload keys)");
	if (status == GPU_OK)
		status = job.mark(MARK_UPLOADED);
	if (status == GPU_OK)
		status = approx_sort_device(job, keys, kb, n, request->intervals, request->limit,
									out_keys, out_index, result, nullptr);
	if (status == GPU_OK)
		status = job.mark(MARK_SORTED);
	/* wait (polling) before any blocking copy into pageable memory */
	if (status == GPU_OK)
		status = job.wait_all();
	if (status == GPU_OK)
		status = job.check(cudaMemcpyAsync(&host_result, result, sizeof(host_result),
										   cudaMemcpyDeviceToHost, job.stream()),
						   "cudaMemcpyAsync (download result)");
	if (status == GPU_OK)
		status = job.wait_all();
	if (status == GPU_OK)
	{
		size_t		valid = (size_t) host_result.valid_outputs;

		request->host_data_touched = true;
		status = job.check(cudaMemcpyAsync(request->keys, out_keys, valid * kb,
										   cudaMemcpyDeviceToHost, job.stream()),
						   "cudaMemcpyAsync (download keys)");
		if (status == GPU_OK && out_index != nullptr)
			status = job.check(cudaMemcpyAsync(request->row_index, out_index,
											   valid * sizeof(uint32_t), cudaMemcpyDeviceToHost,
											   job.stream()),
							   "cudaMemcpyAsync (download row index)");
		if (status == GPU_OK)
			status = job.mark(MARK_DOWNLOADED);
		if (status == GPU_OK)
			status = job.wait_all();
		if (status == GPU_OK)
		{
			request->valid_outputs = valid;
			request->min_key = host_result.min_key;
			request->max_key = host_result.max_key;
		}
	}
	if (timing != nullptr)
	{
		timing->upload_ms = job.elapsed_ms(MARK_START, MARK_UPLOADED);
		timing->sort_ms = job.elapsed_ms(MARK_UPLOADED, MARK_SORTED);
		timing->download_ms = job.elapsed_ms(MARK_SORTED, MARK_DOWNLOADED);
		timing->device_bytes = job.peak_bytes();
	}
	return job.finish();
}
