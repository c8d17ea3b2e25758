/*
 * gpu_approx.cu — the approximate interval sort of Xiao, Chen and Sun
 * (approximate-sort-xiao): [min, max] of the keys is cut into equal-width
 * intervals, the keys are counted per interval, the counts scanned, and
 * every key scattered into its interval's slice of the output. Intervals
 * come out in order; within one, the order is whatever the atomics made.
 *
 *   1. min/max: the min-max butterfly (gpu_minmax.cu), left on the device;
 *   2. the interval map: kernels/interval_map.h, the same integer formula as
 *      the CPU, bit for bit; made once on the device from min/max (its
 *      128-bit division is slow there) and read by every block;
 *   3. counts: per-block shared-memory histograms (consecutive lanes of a
 *      warp that hit the same interval are merged first, so sorted or
 *      clustered inputs do not serialise on one counter), then added to the
 *      global counts; with more intervals than shared memory holds,
 *      warp-merged global atomics;
 *   4. exclusive scan of the counts: cub::DeviceScan;
 *   5. with a limit: the cut interval, the first whose end reaches the
 *      limit, found on the device by binary search; only intervals up to it
 *      are written, and valid_outputs is its end;
 *   6. scatter, one of two ways:
 *      "partition" (the default): tiles of keys ranked by interval in
 *      shared memory and written in runs, in one pass up to 1024 intervals
 *      and two beyond (by groups of intervals, then by interval); one
 *      global atomic per digit per tile; see the kernel's comment;
 *      "cursors" (the paper's scatter; used beyond PARTITION_MAX_INTERVALS
 *      and measured beside the partition in the benchmark): a global cursor
 *      per interval, claimed with warp-merged atomics, one per key.
 *      Either way, within an interval the order is whatever the atomics
 *      made.
 */
#include "gpu_internal.cuh"

#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

namespace gs_gpu {

static const int APPROX_THREADS = 512;
static const int APPROX_UNROLL = 8;		/* keys per thread in flight */
static const uint32_t APPROX_SMEM_BINS = 24576;	/* 96 KiB of shared counters */
static const uint32_t NO_INTERVAL = 0xffffffffu;

/* Default: the partition (bench/README.md compares the methods). */
static const ApproxTuning default_tuning = {APPROX_SCATTER_PARTITION, 0};
static const int APPROX_BLOCKS_PER_SM = 2;

/* ------------------------------------------------------------------------
 * Device helpers
 * ------------------------------------------------------------------------ */

/* The interval map: made once, by interval_map_kernel, after the min/max. */
__global__ void
interval_map_kernel(ApproxResult *result, uint32_t intervals)
{
	result->map = gs_interval_map_make(result->min_key, result->max_key, intervals);
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

/* Shared-memory histogram per block, added at the end to the global counts. */
template <class K>
__global__ void __launch_bounds__(APPROX_THREADS)
count_smem_kernel(const K *keys, size_t n, const ApproxResult *result, uint32_t intervals,
				  uint32_t *counts)
{
	extern __shared__ uint32_t histogram[];
	const gs_interval_map map = result->map;
	const size_t warps = APPROX_THREADS / 32;

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
			atomicAdd(&counts[b], histogram[b]);
}

/* Too many intervals for shared memory: warp-merged global atomics. */
template <class K>
__global__ void __launch_bounds__(APPROX_THREADS)
count_global_kernel(const K *keys, size_t n, const ApproxResult *result, uint32_t *counts)
{
	const gs_interval_map map = result->map;
	const size_t warps = APPROX_THREADS / 32;

	for_each_key(keys, 0, n, blockIdx.x * warps + threadIdx.x / 32, gridDim.x * warps,
				 [&](K key, size_t, bool valid) {
					 uint32_t	bin = valid ? gs_approx_interval(&map, key) : 0;

					 warp_merged_add<false>(counts, bin, valid);
				 });
}

/* ------------------------------------------------------------------------
 * Kernels: the cut
 * ------------------------------------------------------------------------ */

/*
 * end(b) = offsets[b + 1]: where interval b's outputs end. The
 * cut is the first interval whose end reaches the limit (the last interval
 * without one), exactly the CPU's binary search.
 */
__global__ void
cut_kernel(const uint32_t *offsets, uint32_t intervals, size_t n,
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

			if (offsets[mid + 1] >= limit)
				high = mid;
			else
				low = mid + 1;
		}
		cut = low;
	}
	result->cut = cut;
	result->valid_outputs = offsets[cut + 1];
}

/* ------------------------------------------------------------------------
 * Kernels: scattering
 * ------------------------------------------------------------------------ */

template <class K>
__global__ void __launch_bounds__(APPROX_THREADS)
scatter_cursors_kernel(const K *keys, size_t n, const ApproxResult *result, uint32_t *cursors,
					   K *out_keys, uint32_t *out_index)
{
	const gs_interval_map map = result->map;
	const uint32_t cut = (uint32_t) result->cut;
	const size_t warps = APPROX_THREADS / 32;

	for_each_key(keys, 0, n, blockIdx.x * warps + threadIdx.x / 32, gridDim.x * warps,
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

/* ------------------------------------------------------------------------
 * Kernels: partition (tiles ranked in shared memory, written in runs)
 *
 * A block takes a tile of keys, gives each key a digit, ranks the keys by
 * digit in shared memory (warp-merged shared atomics), claims each digit's
 * run of output slots with one global atomic, reorders the tile in shared
 * memory and writes it out: consecutive threads write consecutive slots of
 * a run. With at most PARTITION_BINS digits per tile, a run averages tile /
 * digits keys; so for many intervals, two passes: the first by coarse
 * group (interval >> shift, at most ~256 groups) into a temporary array,
 * the second, over that array, by interval relative to the tile's first
 * group (a tile spans one or two groups, unless they are small; keys
 * beyond the tile's PARTITION_BINS claim their slot one by one).
 * ------------------------------------------------------------------------ */

/* Block shape: 512 threads x 8 keys = 4096-key tiles (16 keys per thread
 * or 256-thread blocks measured slower). */
static const int PARTITION_THREADS = 512;
static const int PARTITION_ITEMS = 8;
static const size_t PARTITION_TILE = (size_t) PARTITION_THREADS * PARTITION_ITEMS;
static const uint32_t PARTITION_BINS = 2048;	/* digits a tile can rank */
static const uint32_t PARTITION_COARSE_GROUPS = 256;	/* first pass: ~this many digits */
static const uint32_t PARTITION_MAX_GROUP = PARTITION_BINS / 2;	/* intervals per group */
static const uint32_t PARTITION_MAX_INTERVALS = PARTITION_BINS * PARTITION_MAX_GROUP;
static const uint32_t PARTITION_SINGLE_PASS_MAX = 1024;	/* one pass measured faster at 1000
														 * intervals, slower at 2048 */
static const uint32_t NO_DIGIT = 0xffffffffu;
static_assert(PARTITION_BINS <= 0xffff && PARTITION_TILE <= 0x10000, "digit and rank share 32 bits");

template <class K, bool WITH_INDEX>
static size_t
partition_smem_bytes(size_t tile)
{
	return 2 * PARTITION_BINS * sizeof(uint32_t) +
		tile * (sizeof(K) + (WITH_INDEX ? sizeof(uint32_t) : 0) + sizeof(uint16_t));
}

/*
 * FROM_INPUT: reads the original keys (row index = position), digit =
 * interval >> shift, cursors indexed by digit. Otherwise: reads the first
 * pass's output (valid_outputs keys and their index), digit = interval -
 * the tile's first group's first interval, cursors indexed by interval.
 * Keys of intervals beyond the cut are dropped.
 */
template <class K, bool FROM_INPUT, bool WITH_INDEX, int THREADS, int ITEMS>
__global__ void __launch_bounds__(THREADS)
partition_kernel(const K *in_keys, const uint32_t *in_index, size_t n,
				 const ApproxResult *result, uint32_t intervals, uint32_t shift,
				 uint32_t *cursors, K *out_keys, uint32_t *out_index)
{
	typedef cub::BlockScan<uint32_t, THREADS> BlockScan;
	const int	BINS_PER_THREAD = PARTITION_BINS / THREADS;
	__shared__ typename BlockScan::TempStorage scan_storage;
	__shared__ uint32_t tile_first_interval;
	extern __shared__ __align__(16) unsigned char partition_smem[];
	uint32_t   *local_count = (uint32_t *) partition_smem;	/* then: local starts */
	uint32_t   *local_to_global = local_count + PARTITION_BINS;
	K		   *tile_keys = (K *) (local_to_global + PARTITION_BINS);
	uint32_t   *tile_index = (uint32_t *) (tile_keys + THREADS * ITEMS);
	uint16_t   *tile_digit = (uint16_t *) (tile_index + (WITH_INDEX ? THREADS * ITEMS : 0));

	const gs_interval_map map = result->map;
	const uint32_t cut = (uint32_t) result->cut;
	/* n < 2^32 (the C entry point checks): 32-bit positions */
	const uint32_t count = (uint32_t) (FROM_INPUT ? n : result->valid_outputs);
	const uint32_t tile_begin = blockIdx.x * THREADS * ITEMS;
	K			key[ITEMS];
	uint32_t	index[ITEMS];
	uint32_t	digit_rank[ITEMS];	/* digit << 16 | rank in the tile's digit */

	if (tile_begin >= count)
		return;					/* the whole block: past the valid outputs */

	/* loads first: their latency overlaps the setup below */
#pragma unroll
	for (int u = 0; u < ITEMS; u++)
	{
		uint32_t	i = tile_begin + u * THREADS + threadIdx.x;

		key[u] = i < count ? in_keys[i] : (K) 0;
		if (WITH_INDEX)
			index[u] = FROM_INPUT ? i : (i < count ? in_index[i] : 0);
	}
	if (!FROM_INPUT && threadIdx.x == 0)
		tile_first_interval = (gs_approx_interval(&map, key[0]) >> shift) << shift;
	for (uint32_t b = threadIdx.x; b < PARTITION_BINS; b += THREADS)
		local_count[b] = 0;
	__syncthreads();

	const uint32_t first_interval = FROM_INPUT ? 0 : tile_first_interval;

#pragma unroll
	for (int u = 0; u < ITEMS; u++)
	{
		uint32_t	i = tile_begin + u * THREADS + threadIdx.x;
		bool		valid = i < count;
		uint32_t	bin = valid ? gs_approx_interval(&map, key[u]) : 0;
		bool		keep = valid && bin <= cut;
		uint32_t	d = FROM_INPUT ? bin >> shift : bin - first_interval;
		bool		local = keep && d < PARTITION_BINS;

		if (!FROM_INPUT && keep && !local)
		{
			/* a tile spanning many small groups: this key goes on its own */
			uint32_t	slot = atomicAdd(&cursors[bin], 1u);

			out_keys[slot] = key[u];
			if (WITH_INDEX)
				out_index[slot] = index[u];
		}
		/* a run of lanes with the same digit: one shared atomic */
		uint32_t	rank = warp_merged_add<true>(local_count, local ? d : 0, local);

		digit_rank[u] = local ? d << 16 | rank : NO_DIGIT;
	}
	__syncthreads();

	/* local starts by exclusive scan; each digit's run claimed globally */
	uint32_t	counts[BINS_PER_THREAD];
	uint32_t	starts[BINS_PER_THREAD];
	uint32_t	total;

#pragma unroll
	for (int j = 0; j < BINS_PER_THREAD; j++)
		counts[j] = local_count[threadIdx.x * BINS_PER_THREAD + j];
	BlockScan(scan_storage).ExclusiveSum(counts, starts, total);
#pragma unroll
	for (int j = 0; j < BINS_PER_THREAD; j++)
	{
		uint32_t	b = threadIdx.x * BINS_PER_THREAD + j;

		if (counts[j] != 0)
			local_to_global[b] = atomicAdd(&cursors[first_interval + b], counts[j]) - starts[j];
		local_count[b] = starts[j];
	}
	__syncthreads();

	/* reorder the tile in shared memory */
#pragma unroll
	for (int u = 0; u < ITEMS; u++)
		if (digit_rank[u] != NO_DIGIT)
		{
			uint32_t	d = digit_rank[u] >> 16;
			uint32_t	position = local_count[d] + (digit_rank[u] & 0xffffu);

			tile_keys[position] = key[u];
			if (WITH_INDEX)
				tile_index[position] = index[u];
			tile_digit[position] = (uint16_t) d;
		}
	__syncthreads();

	/* write the runs: consecutive threads, consecutive slots */
	for (uint32_t j = threadIdx.x; j < total; j += THREADS)
	{
		uint32_t	slot = local_to_global[tile_digit[j]] + j;

		out_keys[slot] = tile_keys[j];
		if (WITH_INDEX)
			out_index[slot] = tile_index[j];
	}
}

/* first pass's cursors: the start of each coarse group */
__global__ void
group_cursors_kernel(const uint32_t *offsets, uint32_t groups, uint32_t shift, uint32_t *cursors)
{
	for (uint32_t g = blockIdx.x * blockDim.x + threadIdx.x; g < groups;
		 g += gridDim.x * blockDim.x)
		cursors[g] = offsets[(size_t) g << shift];
}

/* ------------------------------------------------------------------------
 * Host side
 * ------------------------------------------------------------------------ */

/* The tuning that will actually run. */
static ApproxTuning
resolve_tuning(const ApproxTuning *tuning, uint32_t intervals)
{
	ApproxTuning t = tuning ? *tuning : default_tuning;

	if (t.single_pass_max < 1)
		t.single_pass_max = (int) PARTITION_SINGLE_PASS_MAX;
	if ((uint32_t) t.single_pass_max > PARTITION_BINS)
		t.single_pass_max = (int) PARTITION_BINS;
	if (intervals > PARTITION_MAX_INTERVALS)
		t.scatter = APPROX_SCATTER_CURSORS;
	return t;
}

/* Blocks of the counting and cursor-scatter kernels. */
static unsigned
approx_grid(size_t n)
{
	return grid_for(n, APPROX_THREADS * APPROX_UNROLL,
					APPROX_BLOCKS_PER_SM * device_properties().multiProcessorCount);
}

/*
 * The partition's first-pass shift: 0 = one pass (each interval its own
 * digit); otherwise groups of 2^shift intervals, about
 * PARTITION_COARSE_GROUPS of them, each at most PARTITION_MAX_GROUP.
 */
static uint32_t
partition_shift(uint32_t intervals, const ApproxTuning &t)
{
	uint32_t	shift = 0;

	if (intervals <= (uint32_t) t.single_pass_max)
		return 0;
	while (((intervals - 1) >> shift) + 1 > PARTITION_COARSE_GROUPS &&
		   (1u << shift) < PARTITION_MAX_GROUP)
		shift++;
	return shift;
}

static uint32_t
partition_groups(uint32_t intervals, uint32_t shift)
{
	return ((intervals - 1) >> shift) + 1;
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
	ApproxTuning t = resolve_tuning(tuning, intervals);
	size_t		entries = (size_t) intervals + 1;
	size_t		scan_bytes = 0;
	size_t		partition_bytes = 0;

	if (scan_counts(nullptr, scan_bytes, nullptr, nullptr, entries, work_stream()) != cudaSuccess)
	{
		cudaGetLastError();
		scan_bytes = entries * sizeof(uint32_t);	/* a generous guess */
	}
	if (t.scatter == APPROX_SCATTER_PARTITION && partition_shift(intervals, t) > 0)
		partition_bytes = n * (key_bytes + sizeof(uint32_t)) +
			partition_groups(intervals, partition_shift(intervals, t)) * sizeof(uint32_t) + 1024;
	return minmax_temp_bytes(n, key_bytes) + 2 * entries * sizeof(uint32_t) + scan_bytes +
		partition_bytes + 1024;
}

static gpu_status
set_shared_limit(Job &job, const void *kernel, size_t bytes)
{
	gpu_status	status = job.check(cudaFuncSetAttribute(kernel,
															cudaFuncAttributeMaxDynamicSharedMemorySize,
															(int) bytes),
								   "cudaFuncSetAttribute(approximate sort)");

	/* as much shared memory as the SM has: more blocks fit */
	if (status == GPU_OK)
		status = job.check(cudaFuncSetAttribute(kernel,
												cudaFuncAttributePreferredSharedMemoryCarveout,
												(int) cudaSharedmemCarveoutMaxShared),
						   "cudaFuncSetAttribute(approximate sort carveout)");
	return status;
}

/* The partition: one or two passes (offsets serve as the interval cursors). */
template <class K, bool WITH_INDEX>
static gpu_status
partition_passes(Job &job, const K *keys, size_t n, uint32_t intervals, ApproxResult *result,
				 uint32_t *offsets, K *out_keys, uint32_t *out_index, const ApproxTuning &t)
{
	const uint32_t shift = partition_shift(intervals, t);
	const uint32_t groups = partition_groups(intervals, shift);
	const size_t tile = PARTITION_TILE;
	const size_t smem = partition_smem_bytes<K, WITH_INDEX>(tile);
	const unsigned blocks = (unsigned) ((n + tile - 1) / tile);
	K		   *group_keys = nullptr;
	uint32_t   *group_index = nullptr;
	uint32_t   *group_cursors = nullptr;
	gpu_status	status;

	status = set_shared_limit(job, (const void *) partition_kernel<K, true, WITH_INDEX, PARTITION_THREADS, PARTITION_ITEMS>, smem);
	if (status == GPU_OK && shift == 0)
	{
		partition_kernel<K, true, WITH_INDEX, PARTITION_THREADS, PARTITION_ITEMS><<<blocks, PARTITION_THREADS, smem, job.stream()>>>(
			keys, nullptr, n, result, intervals, 0, offsets, out_keys, out_index);
		return job.launched("approximate sort: partition");
	}
	if (status == GPU_OK)
		status = set_shared_limit(job, (const void *) partition_kernel<K, false, WITH_INDEX, PARTITION_THREADS, PARTITION_ITEMS>, smem);
	if (status == GPU_OK)
		status = job.allocate_array(&group_keys, n, "approximate sort: grouped keys");
	if (status == GPU_OK && WITH_INDEX)
		status = job.allocate_array(&group_index, n, "approximate sort: grouped row index");
	if (status == GPU_OK)
		status = job.allocate_array(&group_cursors, groups, "approximate sort: group cursors");
	if (status == GPU_OK)
	{
		group_cursors_kernel<<<grid_for(groups, 256), 256, 0, job.stream()>>>(offsets, groups, shift,
																				group_cursors);
		status = job.launched("approximate sort: group cursors");
	}
	if (status == GPU_OK)
	{
		partition_kernel<K, true, WITH_INDEX, PARTITION_THREADS, PARTITION_ITEMS><<<blocks, PARTITION_THREADS, smem, job.stream()>>>(
			keys, nullptr, n, result, intervals, shift, group_cursors, group_keys, group_index);
		status = job.launched("approximate sort: partition by group");
	}
	if (status == GPU_OK)
		status = job.progress(n);
	if (status == GPU_OK)
	{
		partition_kernel<K, false, WITH_INDEX, PARTITION_THREADS, PARTITION_ITEMS><<<blocks, PARTITION_THREADS, smem, job.stream()>>>(
			group_keys, group_index, n, result, intervals, shift, offsets, out_keys, out_index);
		status = job.launched("approximate sort: partition by interval");
	}
	job.release(group_cursors);
	job.release(group_index);
	job.release(group_keys);
	return status;
}

template <class K>
static gpu_status
approx_typed(Job &job, const K *keys, size_t n, uint32_t intervals, size_t limit, K *out_keys,
			 uint32_t *out_index, ApproxResult *result, const ApproxTuning &t)
{
	const size_t entries = (size_t) intervals + 1;	/* the last: the total */
	const size_t smem_bins = (size_t) intervals * sizeof(uint32_t);
	uint32_t   *counts = nullptr;
	uint32_t   *offsets = nullptr;
	void	   *scan_temp = nullptr;
	size_t		scan_bytes = 0;
	gpu_status	status;

	/* 1-2. min and max land in result->min_key, result->max_key; the map */
	GS_TRY(minmax_device(job, keys, sizeof(K), n, &result->min_key));
	interval_map_kernel<<<1, 1, 0, job.stream()>>>(result, intervals);
	GS_TRY(job.launched("approximate sort: interval map"));

	GS_TRY(job.allocate_array(&counts, entries, "interval counts"));
	status = job.allocate_array(&offsets, entries, "interval offsets");
	if (status == GPU_OK)
		status = job.check(scan_counts(nullptr, scan_bytes, counts, offsets, entries, job.stream()),
						   "cub::DeviceScan (temporary storage size)");
	if (status == GPU_OK)
		status = job.allocate(&scan_temp, scan_bytes, "scan temporary storage");

	/* 3. counts */
	if (status == GPU_OK)
		status = job.check(cudaMemsetAsync(counts, 0, entries * sizeof(uint32_t), job.stream()),
						   "cudaMemsetAsync");
	if (status == GPU_OK && intervals <= APPROX_SMEM_BINS)
	{
		status = set_shared_limit(job, (const void *) count_smem_kernel<K>, smem_bins);
		if (status == GPU_OK)
		{
			count_smem_kernel<K><<<approx_grid(n), APPROX_THREADS, smem_bins, job.stream()>>>(
				keys, n, result, intervals, counts);
			status = job.launched("approximate sort: count");
		}
	}
	else if (status == GPU_OK)
	{
		count_global_kernel<K><<<approx_grid(n), APPROX_THREADS, 0, job.stream()>>>(
			keys, n, result, counts);
		status = job.launched("approximate sort: count");
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
		cut_kernel<<<1, 1, 0, job.stream()>>>(offsets, intervals, n, limit, result);
		status = job.launched("approximate sort: cut");
	}

	/* 6. scatter; the offsets serve as the intervals' cursors */
	if (status == GPU_OK && t.scatter == APPROX_SCATTER_PARTITION)
		status = out_index != nullptr ?
			partition_passes<K, true>(job, keys, n, intervals, result, offsets, out_keys,
									  out_index, t) :
			partition_passes<K, false>(job, keys, n, intervals, result, offsets, out_keys,
									   out_index, t);
	else if (status == GPU_OK)
	{
		scatter_cursors_kernel<K><<<approx_grid(n), APPROX_THREADS, 0, job.stream()>>>(
			keys, n, result, offsets, out_keys, out_index);
		status = job.launched("approximate sort: scatter");
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

	ApproxTuning t = resolve_tuning(tuning, intervals);

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
