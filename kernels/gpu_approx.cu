/*
 * gpu_approx.cu — the approximate interval sort of Xiao, Chen and Sun
 * (approximate-sort-xiao): [min, max] of the keys is cut into equal-width
 * intervals, the keys are counted per interval, the counts scanned, and
 * every key scattered into its interval's slice of the output. Intervals
 * come out in order; within one, the order is whatever the atomics made.
 *
 *   1. min/max: per-block partial results (one launch; the count array is
 *      zeroed in the same kernel), reduced by every counting block;
 *   2. the interval map: kernels/interval_map.h, the same integer formula as
 *      the CPU, bit for bit; made by each counting block from min/max, and
 *      left in `result` (with min and max) for the later kernels and the
 *      host;
 *   3. counts: per-block shared-memory histograms (a warp whose lanes all
 *      hit one interval adds once, so sorted input does not serialise on
 *      one counter), then added to the global counts; with more intervals
 *      than shared memory holds, warp-merged global atomics;
 *   4. exclusive scan of the counts: one block (scan_cut_kernel) up to
 *      SMALL_SCAN_ENTRIES counts, cub::DeviceScan beyond;
 *   5. with a limit: the cut interval, the first whose end reaches the
 *      limit, found on the device by binary search; only intervals up to it
 *      are written, and valid_outputs is its end;
 *   6. scatter, one of two ways:
 *      "partition" (the default): tiles of keys ranked by interval in
 *      shared memory and written in runs, in one pass up to 256 intervals
 *      and two beyond (by groups of intervals, then by interval); one
 *      global atomic per digit per tile; see the kernel's comment;
 *      "cursors" (the paper's scatter; used beyond PARTITION_MAX_INTERVALS
 *      and measured beside the partition in the benchmark): a global cursor
 *      per interval, claimed with warp-merged atomics, one per key.
 *      Either way, within an interval the order is whatever the atomics
 *      made.
 */
#include "gpu_internal.cuh"

#include <type_traits>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

namespace gs_gpu {

static const int APPROX_THREADS = 512;
/* In flight per thread: 16-byte loads when counting (4 measured the same),
 * keys in the per-key loops (4 and 16 measured the same). */
static const int APPROX_COUNT_VECTORS = 2;
static const int APPROX_UNROLL = 8;
static const uint32_t APPROX_SMEM_BINS = 24576;	/* 96 KiB of shared counters */
static const uint32_t NO_INTERVAL = 0xffffffffu;

/* Default: the partition (bench/README.md compares the methods). */
static const ApproxTuning default_tuning = {APPROX_SCATTER_PARTITION, 0, APPROX_SHAPE_DEFAULT,
	APPROX_SHAPE_DEFAULT};
/* Blocks per SM of the grid-stride kernels; 64 registers a thread (3 or 4
 * blocks per SM measured slower or the same). */
static const int APPROX_BLOCKS_PER_SM = 2;
/* the min/max kernel runs twice as many blocks: all the SM's warps keep
 * loads in flight (27.7 against 29.5 us at 2^24) */
static const unsigned MINMAX_GRID_FACTOR = 2;

/* ------------------------------------------------------------------------
 * Device helpers
 * ------------------------------------------------------------------------ */

/* reduction operators (cub's own changed names across CCCL versions) */
struct LowerOf
{
	__device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a < b ? a : b; }
};
struct HigherOf
{
	__device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a > b ? a : b; }
};

/* 16-byte loads of keys: 4 32-bit or 2 64-bit keys */
template <class K>
struct KeyVector
{
	typedef typename std::conditional<sizeof(K) == 4, uint4, ulonglong2>::type type;
	static constexpr int keys = (int) (sizeof(type) / sizeof(K));
};

/*
 * Step 1: each block's min and max of the keys (16-byte loads, grid-stride),
 * into partials[2 * block], partials[2 * block + 1]; the count array is
 * zeroed on the way (it does not depend on the min/max). The counting
 * kernel reduces the partials: no launch for a final reduction.
 */
template <class K>
__global__ void __launch_bounds__(APPROX_THREADS)
minmax_partial_kernel(const K *keys, size_t n, uint64_t *partials, uint32_t *counts,
					  size_t entries)
{
	typedef typename KeyVector<K>::type Vector;
	typedef cub::BlockReduce<uint64_t, APPROX_THREADS> BlockReduce;
	__shared__ typename BlockReduce::TempStorage storage;
	const int	per_vector = KeyVector<K>::keys;
	const Vector *vectors = reinterpret_cast<const Vector *>(keys);
	const size_t vector_count = n / per_vector;
	const size_t threads = (size_t) gridDim.x * APPROX_THREADS;
	const size_t me = (size_t) blockIdx.x * APPROX_THREADS + threadIdx.x;
	uint64_t	low = UINT64_MAX,
				high = 0;

	for (size_t i = me; i < entries; i += threads)
		counts[i] = 0;
#pragma unroll 4
	for (size_t v = me; v < vector_count; v += threads)
	{
		Vector		loaded = vectors[v];
		K			k[KeyVector<K>::keys];

		memcpy(k, &loaded, sizeof(loaded));
#pragma unroll
		for (int u = 0; u < KeyVector<K>::keys; u++)
		{
			low = k[u] < low ? (uint64_t) k[u] : low;
			high = k[u] > high ? (uint64_t) k[u] : high;
		}
	}
	for (size_t i = vector_count * per_vector + me; i < n; i += threads)
	{
		low = keys[i] < low ? (uint64_t) keys[i] : low;
		high = keys[i] > high ? (uint64_t) keys[i] : high;
	}
	low = BlockReduce(storage).Reduce(low, LowerOf());
	__syncthreads();
	high = BlockReduce(storage).Reduce(high, HigherOf());
	if (threadIdx.x == 0)
	{
		partials[2 * blockIdx.x] = low;
		partials[2 * blockIdx.x + 1] = high;
	}
}

/*
 * Step 2, at the start of the counting kernel: every block reduces the
 * partials and makes the interval map (its 128-bit division is slow on the
 * device, but the blocks do it at once, not one after another); block 0
 * leaves min, max and the map in `result` for the later kernels and the
 * host.
 */
__device__ gs_interval_map
block_interval_map(const uint64_t *partials, unsigned partial_count, uint32_t intervals,
				   const gs_interval_map *quantile_map, ApproxResult *result)
{
	typedef cub::BlockReduce<uint64_t, APPROX_THREADS> BlockReduce;
	__shared__ typename BlockReduce::TempStorage storage;
	__shared__ gs_interval_map shared_map;
	uint64_t	low = UINT64_MAX,
				high = 0;

	for (unsigned p = threadIdx.x; p < partial_count; p += APPROX_THREADS)
	{
		low = partials[2 * p] < low ? partials[2 * p] : low;
		high = partials[2 * p + 1] > high ? partials[2 * p + 1] : high;
	}
	low = BlockReduce(storage).Reduce(low, LowerOf());
	__syncthreads();
	high = BlockReduce(storage).Reduce(high, HigherOf());
	if (threadIdx.x == 0)
	{
		/* the quantile mode's map was made before (quantile_map_kernel) */
		shared_map = quantile_map != nullptr ? *quantile_map :
			gs_interval_map_make(low, high, intervals);
		if (blockIdx.x == 0)
		{
			/* without partials the count folds min/max in itself */
			if (partial_count > 0)
			{
				result->min_key = low;
				result->max_key = high;
			}
			result->map = shared_map;
		}
	}
	__syncthreads();
	return shared_map;
}

/*
 * The quantile mode's search (gs_quantile_tree_bucket, interval_map.h): the
 * splitter tree's top levels are staged in shared memory by the kernels
 * that have room for them (TREE_TOP_BYTES at `top`), the rest read from
 * global memory. Every key takes the same number of steps, without
 * branches; the top levels' nodes are consecutive words, so a warp's reads
 * of one level hit few banks (one bank each for the first five levels).
 * Before, a binary search in global memory per key and per pass cost
 * 2.8 ms at 2^26 keys (bench/README.md, quantile mode).
 */
static const uint32_t TREE_TOP_BYTES = 8192;

/* levels of the tree that fit in TREE_TOP_BYTES (node 0 unused) */
template <class K>
__host__ __device__ constexpr uint32_t
tree_top_levels_max()
{
	return sizeof(K) == 4 ? 11 : 10;
}
static_assert((1u << 11) * 4 <= TREE_TOP_BYTES && (1u << 10) * 8 <= TREE_TOP_BYTES,
			  "the tree's top levels fit");

/*
 * Copies the tree's top levels to `top` (shared memory, TREE_TOP_BYTES);
 * returns how many levels it holds, 0 when the map is not the quantile
 * mode's. The caller synchronises the block before using them.
 */
template <class K>
__device__ __forceinline__ uint32_t
stage_tree_top(const gs_interval_map &map, K *top)
{
	if (!map.quantile)
		return 0;

	const uint32_t levels = map.tree_levels < tree_top_levels_max<K>() ?
		map.tree_levels : tree_top_levels_max<K>();

	/* a 32-bit key's splitters fit in 32 bits; the padding UINT64_MAX
	 * becomes UINT32_MAX, still never below a key */
	for (uint32_t k = threadIdx.x + 1; k < (1u << levels); k += blockDim.x)
		top[k] = (K) map.tree[k];
	return levels;
}

template <class K>
__device__ __forceinline__ uint32_t
tree_bucket(const gs_interval_map &map, const K *top, uint32_t top_levels, K key)
{
	uint32_t	k = 1;
	uint64_t	first_not_below = UINT64_MAX;
	uint32_t	level = 0;

	for (; level < top_levels; level++)
	{
		const K		node = top[k];
		const bool	right = node < key;

		first_not_below = right ? first_not_below : (uint64_t) node;
		k = 2 * k + (right ? 1u : 0u);
	}
	for (; level < map.tree_levels; level++)
	{
		const uint64_t node = __ldg(&map.tree[k]);
		const bool	right = node < (uint64_t) key;

		first_not_below = right ? first_not_below : node;
		k = 2 * k + (right ? 1u : 0u);
	}

	const uint32_t below = k - (1u << map.tree_levels);

	return 2 * below + (below < map.splitter_count && first_not_below == (uint64_t) key ? 1u : 0u);
}

/*
 * The quantile bucket of a key known to lie in group `group` of 2^shift
 * buckets (shift >= 1; the partition's second pass). The group's buckets
 * 2i and 2i + 1 have i (the splitters below the key) in
 * [group 2^(shift-1), (group + 1) 2^(shift-1) - 1]: a binary search over the
 * 2^(shift-1) - 1 splitters from the first, all below the key before it.
 * The lanes of a warp mostly share the group: their loads coincide.
 */
__device__ __forceinline__ uint32_t
quantile_bucket_in_group(const gs_interval_map &map, uint32_t group, uint32_t shift, uint64_t key)
{
	const uint32_t count = map.splitter_count;
	uint32_t	below = group << (shift - 1);
	uint32_t	length = (1u << (shift - 1)) - 1;

	if (below >= count)
		length = 0;
	else if (length > count - below)
		length = count - below;
	while (length > 0)
	{
		uint32_t	half = length / 2;

		if (map.splitters[below + half] < key)
		{
			below += half + 1;
			length -= half + 1;
		}
		else
			length = half;
	}
	return 2 * below + (below < count && map.splitters[below] == key ? 1u : 0u);
}

/*
 * bin[u] = the interval of key[u]. The map's shape is tested once for all
 * the keys, not per key (the compiler cannot know that it is the same for
 * every lane). Keys past the end may be anything: their bins are not used.
 * The quantile mode's search uses the tree's top levels at `top` where
 * the kernel staged them (top_levels > 0).
 */
template <int ITEMS, class K>
__device__ __forceinline__ void
intervals_of(const gs_interval_map &map, const K (&key)[ITEMS], uint32_t (&bin)[ITEMS],
			 const K *top = nullptr, uint32_t top_levels = 0)
{
	if (map.quantile)
	{
#pragma unroll
		for (int u = 0; u < ITEMS; u++)
			bin[u] = tree_bucket(map, top, top_levels, key[u]);
	}
	else if (map.range32 && !map.narrow)
	{
#pragma unroll
		for (int u = 0; u < ITEMS; u++)
			bin[u] = gs_approx_interval_range32(&map, key[u]);
	}
	else
	{
#pragma unroll
		for (int u = 0; u < ITEMS; u++)
			bin[u] = gs_approx_interval(&map, key[u]);
	}
}

/*
 * Calls visit(key, bin, position, valid) for keys [begin, end): each warp
 * takes runs of 32 * APPROX_UNROLL consecutive keys (coalesced, all loads
 * issued before the first use). All lanes of a warp call visit together, as
 * the warp-level merging needs.
 */
template <class K, class Visit>
__device__ __forceinline__ void
for_each_key(const K *keys, size_t begin, size_t end, size_t first_warp, size_t warp_count,
			 const gs_interval_map &map, Visit visit)
{
	const unsigned lane = threadIdx.x & 31;
	const size_t run_length = 32 * APPROX_UNROLL;

	for (size_t run = begin + first_warp * run_length; run < end; run += warp_count * run_length)
	{
		K			k[APPROX_UNROLL];
		uint32_t	bin[APPROX_UNROLL];

#pragma unroll
		for (int u = 0; u < APPROX_UNROLL; u++)
		{
			size_t		i = run + u * 32 + lane;

			k[u] = i < end ? keys[i] : (K) 0;
		}
		intervals_of(map, k, bin);
#pragma unroll
		for (int u = 0; u < APPROX_UNROLL; u++)
		{
			size_t		i = run + u * 32 + lane;

			visit(k[u], bin[u], i, i < end);
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

/*
 * warp_merged_add for counters in shared memory, cheaper where the lanes'
 * bins mostly differ (uniform keys over many intervals): when all lanes are
 * active on one bin (sorted or clustered input), one atomic adds 32;
 * otherwise each active lane adds 1, and the shared-memory atomic unit
 * serialises lanes that meet on one counter. Slots as warp_merged_add's.
 * (warp_merged_add itself measured 3-4% slower here at 2^24: more
 * instructions per key, for inputs that rarely need them.)
 */
template <bool RETURN_SLOT>
__device__ __forceinline__ uint32_t
shared_add(uint32_t *counters, uint32_t bin, bool active)
{
	const unsigned lane = threadIdx.x & 31;
	const uint32_t first = __shfl_sync(0xffffffffu, bin, 0);

	if (__all_sync(0xffffffffu, active && bin == first))
	{
		uint32_t	base = 0;

		if (lane == 0)
			base = atomicAdd(&counters[bin], 32u);
		return RETURN_SLOT ? __shfl_sync(0xffffffffu, base, 0) + lane : 0;
	}
	if (!active)
		return 0;
	return atomicAdd(&counters[bin], 1u);
}

/* ------------------------------------------------------------------------
 * Kernels: counting
 * ------------------------------------------------------------------------ */

/*
 * Shared-memory histogram per block, added at the end to the global counts.
 * Keys are read 16 bytes at a time (the keys are 16-byte aligned,
 * approx_sort_device checks), APPROX_COUNT_VECTORS per thread in flight;
 * the loop runs while any lane of the warp has work, so that shared_add
 * sees the whole warp.
 */
template <class K, bool FOLD_MINMAX>
__global__ void __launch_bounds__(APPROX_THREADS, APPROX_BLOCKS_PER_SM)
count_smem_kernel(const K *keys, size_t n, const uint64_t *partials, unsigned partial_count,
				  const gs_interval_map *quantile_map, ApproxResult *result, uint32_t intervals,
				  uint32_t *counts, uint8_t *group_bytes, uint32_t group_shift)
{
	/* FOLD_MINMAX (the quantile mode, no partials): this kernel finds min
	 * and max (a template parameter: the width mode's count keeps its
	 * registers) */
	const bool	fold_minmax = FOLD_MINMAX;
	K			low = (K) ~(K) 0,
				high = 0;

	typedef typename KeyVector<K>::type Vector;
	constexpr int PER_VECTOR = KeyVector<K>::keys;
	constexpr int KEYS = APPROX_COUNT_VECTORS * PER_VECTOR;
	extern __shared__ uint32_t histogram[];
	const gs_interval_map map = block_interval_map(partials, partial_count, intervals,
												   quantile_map, result);
	const Vector *vectors = reinterpret_cast<const Vector *>(keys);
	const uint32_t vector_count = (uint32_t) (n / PER_VECTOR);
	const uint32_t threads = gridDim.x * APPROX_THREADS;
	const uint32_t me = blockIdx.x * APPROX_THREADS + threadIdx.x;
	const uint32_t warp_first = me & ~31u;

	/* the quantile mode's tree top after the histogram (the host gave it
	 * the room) */
	K		   *tree_top = reinterpret_cast<K *>(histogram + ((intervals + 3) & ~3u));
	const uint32_t top_levels = stage_tree_top(map, tree_top);

	for (uint32_t b = threadIdx.x; b < intervals; b += APPROX_THREADS)
		histogram[b] = 0;
	__syncthreads();
	const uint32_t step = threads * APPROX_COUNT_VECTORS;
	auto		load = [&](uint32_t start, K (&k)[KEYS], bool (&valid)[APPROX_COUNT_VECTORS]) {
#pragma unroll
		for (int u = 0; u < APPROX_COUNT_VECTORS; u++)
		{
			uint32_t	v = start + u * threads + me;
			Vector		loaded = {};

			valid[u] = v < vector_count;
			if (valid[u])
				loaded = vectors[v];
			memcpy(&k[u * PER_VECTOR], &loaded, sizeof(loaded));
		}
	};
	K			k[KEYS];
	bool		valid[APPROX_COUNT_VECTORS];

	/* each iteration loads the next one's keys before counting its own
	 * (46 against 48 us at 2^24) */
	load(0, k, valid);
	for (uint32_t start = 0; start + warp_first < vector_count; start += step)
	{
		K			next_k[KEYS];
		bool		next_valid[APPROX_COUNT_VECTORS];
		uint32_t	bin[KEYS];

		load(start + step, next_k, next_valid);
		intervals_of(map, k, bin, tree_top, top_levels);
		if (group_bytes != nullptr)
		{
			/* the quantile mode keeps each key's group for the partition's
			 * first pass: one byte a key instead of a second search */
#pragma unroll
			for (int u = 0; u < APPROX_COUNT_VECTORS; u++)
			{
				uint32_t	v = start + u * threads + me;
				uint32_t	word = 0;

#pragma unroll
				for (int j = 0; j < PER_VECTOR; j++)
					word |= (bin[u * PER_VECTOR + j] >> group_shift) << (8 * j);
				if (!valid[u])
					continue;
				if (PER_VECTOR == 4)
					reinterpret_cast<uint32_t *>(group_bytes)[v] = word;
				else
					reinterpret_cast<uint16_t *>(group_bytes)[v] = (uint16_t) word;
			}
		}
#pragma unroll
		for (int i = 0; i < KEYS; i++)
			shared_add<false>(histogram, bin[i], valid[i / PER_VECTOR]);
		if (fold_minmax)
		{
#pragma unroll
			for (int i = 0; i < KEYS; i++)
				if (valid[i / PER_VECTOR])
				{
					low = k[i] < low ? k[i] : low;
					high = k[i] > high ? k[i] : high;
				}
		}
#pragma unroll
		for (int i = 0; i < KEYS; i++)
			k[i] = next_k[i];
#pragma unroll
		for (int u = 0; u < APPROX_COUNT_VECTORS; u++)
			valid[u] = next_valid[u];
	}
	/* the last n % PER_VECTOR keys: one warp */
	if (blockIdx.x == 0 && threadIdx.x < 32)
	{
		uint32_t	i = vector_count * PER_VECTOR + threadIdx.x;
		K			tail[1] = {i < n ? keys[i] : (K) 0};
		uint32_t	tail_bin[1];

		intervals_of(map, tail, tail_bin, tree_top, top_levels);
		if (group_bytes != nullptr && i < n)
			group_bytes[i] = (uint8_t) (tail_bin[0] >> group_shift);
		shared_add<false>(histogram, tail_bin[0], i < n);
		if (fold_minmax && i < n)
		{
			low = tail[0] < low ? tail[0] : low;
			high = tail[0] > high ? tail[0] : high;
		}
	}
	if (fold_minmax)
	{
		/* per warp, then one atomic each (the host set min to all ones and
		 * max to 0 before) */
		for (int offset = 16; offset > 0; offset /= 2)
		{
			K			other_low = __shfl_down_sync(0xffffffffu, low, offset);
			K			other_high = __shfl_down_sync(0xffffffffu, high, offset);

			low = other_low < low ? other_low : low;
			high = other_high > high ? other_high : high;
		}
		if ((threadIdx.x & 31) == 0)
		{
			atomicMin(reinterpret_cast<unsigned long long *>(&result->min_key),
					  (unsigned long long) low);
			atomicMax(reinterpret_cast<unsigned long long *>(&result->max_key),
					  (unsigned long long) high);
		}
	}
	__syncthreads();
	for (uint32_t b = threadIdx.x; b < intervals; b += APPROX_THREADS)
		if (histogram[b] != 0)
			atomicAdd(&counts[b], histogram[b]);
}

/* Too many intervals for shared memory: warp-merged global atomics. */
template <class K>
__global__ void __launch_bounds__(APPROX_THREADS)
count_global_kernel(const K *keys, size_t n, const uint64_t *partials, unsigned partial_count,
					const gs_interval_map *quantile_map, ApproxResult *result, uint32_t intervals,
					uint32_t *counts, uint8_t *, uint32_t)
{
	const gs_interval_map map = block_interval_map(partials, partial_count, intervals,
												   quantile_map, result);
	const size_t warps = APPROX_THREADS / 32;

	for_each_key(keys, 0, n, blockIdx.x * warps + threadIdx.x / 32, gridDim.x * warps, map,
				 [&](K, uint32_t bin, size_t, bool valid) {
					 warp_merged_add<false>(counts, bin, valid);
				 });
}

/* ------------------------------------------------------------------------
 * Kernels: the quantile mode (interval_map.h)
 * ------------------------------------------------------------------------ */

/* sample[d] = the key at draw d's position: the CPU engine's draws */
template <class K>
__global__ void
quantile_sample_kernel(const K *keys, size_t n, uint64_t seed, uint32_t sample_size,
					   uint64_t *sample)
{
	uint32_t	draw = blockIdx.x * blockDim.x + threadIdx.x;

	if (draw < sample_size)
		sample[draw] = (uint64_t) keys[gs_quantile_sample_position(seed, draw, n)];
}

/* The splitters from the sorted sample, and the map over them (one
 * thread writes it, after the launch every splitter is there) */
__global__ void
quantile_splitters_kernel(const uint64_t *sorted, uint32_t sample_size, uint32_t intervals,
						  uint64_t *splitters)
{
	uint32_t	j = blockIdx.x * blockDim.x + threadIdx.x + 1;

	if (j < intervals)
		splitters[j - 1] = sorted[gs_quantile_splitter_position(j, sample_size, intervals)];
}

/* The splitters as the search tree the kernels use (interval_map.h) */
__global__ void
quantile_tree_kernel(const uint64_t *splitters, uint32_t count, uint32_t levels, uint64_t *tree)
{
	for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < (1u << levels);
		 k += gridDim.x * blockDim.x)
		tree[k] = k == 0 ? 0 : gs_quantile_tree_node(splitters, count, levels, k);
}

__global__ void
quantile_map_kernel(const uint64_t *splitters, uint32_t count, const uint64_t *tree,
					gs_interval_map *map)
{
	gs_interval_map made = gs_interval_map_quantile(splitters, count);

	made.tree = tree;
	made.tree_levels = gs_quantile_tree_levels(count);
	*map = made;
}

/* result->largest = the largest count (zeroed before) */
__global__ void
largest_count_kernel(const uint32_t *counts, uint32_t entries, ApproxResult *result)
{
	uint32_t	largest = 0;

	for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < entries;
		 b += gridDim.x * blockDim.x)
		largest = counts[b] > largest ? counts[b] : largest;
	for (int offset = 16; offset > 0; offset /= 2)
	{
		uint32_t	other = __shfl_down_sync(0xffffffffu, largest, offset);

		largest = other > largest ? other : largest;
	}
	if ((threadIdx.x & 31) == 0 && largest > 0)
		atomicMax(&result->largest, largest);
}

/*
 * The quantile mode's scratch, one allocation: the sample and the sort's
 * other buffer, the splitters, their search tree (2^levels words, node 0
 * unused), then the map. Offsets in uint64 words, and the map's in bytes.
 */
struct QuantileScratch
{
	size_t		sample_alt,
				splitters,
				tree,
				map_bytes,
				groups_bytes,	/* n bytes: each key's group (approx_typed) */
				total_bytes;
};

static QuantileScratch
quantile_scratch(size_t n, uint32_t intervals)
{
	const size_t sample_size = gs_quantile_sample_size(n, intervals);
	const size_t tree_words = (size_t) 1 << gs_quantile_tree_levels(intervals - 1);
	QuantileScratch q;

	q.sample_alt = sample_size;
	q.splitters = 2 * sample_size;
	q.tree = q.splitters + intervals - 1;
	q.map_bytes = ((q.tree + tree_words) * sizeof(uint64_t) + 255) & ~(size_t) 255;
	q.groups_bytes = (q.map_bytes + sizeof(gs_interval_map) + 255) & ~(size_t) 255;
	q.total_bytes = q.groups_bytes + n;
	return q;
}

/*
 * The quantile mode's map, in device memory at *map: the sample drawn,
 * sorted (CUB, through radix_sort_device), the splitters picked, their
 * search tree built. `scratch` is laid out by quantile_scratch and must
 * outlive the sort (the map points at the splitters and the tree in it).
 */
template <class K>
static gpu_status
quantile_map_device(Job &job, const K *keys, size_t n, uint32_t intervals, uint64_t seed,
					uint32_t sample_size, uint64_t *scratch, gs_interval_map *map)
{
	const QuantileScratch layout = quantile_scratch(n, intervals);
	const uint32_t levels = gs_quantile_tree_levels(intervals - 1);
	uint64_t   *sample = scratch;
	uint64_t   *sample_alt = scratch + layout.sample_alt;
	uint64_t   *splitters = scratch + layout.splitters;
	uint64_t   *tree = scratch + layout.tree;
	bool		in_alt = false;

	quantile_sample_kernel<K><<<grid_for(sample_size, 256), 256, 0, job.stream()>>>(
		keys, n, seed, sample_size, sample);
	GS_TRY(job.launched("approximate sort: quantile sample"));
	GS_TRY(radix_sort_device(job, 8, sizeof(K) * 8, sample_size, sample, sample_alt, nullptr,
							 nullptr, &in_alt));
	if (intervals > 1)
	{
		quantile_splitters_kernel<<<grid_for(intervals - 1, 256), 256, 0, job.stream()>>>(
			in_alt ? sample_alt : sample, sample_size, intervals, splitters);
		GS_TRY(job.launched("approximate sort: quantile splitters"));
	}
	quantile_tree_kernel<<<grid_for((size_t) 1 << levels, 256, 1024), 256, 0, job.stream()>>>(
		splitters, intervals - 1, levels, tree);
	GS_TRY(job.launched("approximate sort: quantile tree"));
	quantile_map_kernel<<<1, 1, 0, job.stream()>>>(splitters, intervals - 1, tree, map);
	return job.launched("approximate sort: quantile map");
}

/* ------------------------------------------------------------------------
 * Kernels: the cut
 * ------------------------------------------------------------------------ */

/*
 * end(b) = offsets[b + 1]: where interval b's outputs end. The
 * cut is the first interval whose end reaches the limit (the last interval
 * without one), exactly the CPU's binary search.
 */
__device__ void
find_cut(const uint32_t *offsets, uint32_t intervals, size_t n, size_t limit,
		 ApproxResult *result)
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

__global__ void
cut_kernel(const uint32_t *offsets, uint32_t intervals, size_t n, size_t limit,
		   ApproxResult *result)
{
	find_cut(offsets, intervals, n, limit, result);
}

/* the partition's first-pass cursors: the start of each group of intervals */
__global__ void
group_cursors_kernel(const uint32_t *offsets, uint32_t groups, uint32_t shift, uint32_t *cursors)
{
	for (uint32_t g = blockIdx.x * blockDim.x + threadIdx.x; g < groups;
		 g += gridDim.x * blockDim.x)
		cursors[g] = offsets[(size_t) g << shift];
}

/*
 * Up to SMALL_SCAN_ENTRIES counts: the exclusive scan, the cut and the
 * group cursors in one block (one launch instead of four).
 */
static const int SMALL_SCAN_THREADS = 1024;
static const int SMALL_SCAN_ITEMS = 16;
static const size_t SMALL_SCAN_ENTRIES = (size_t) SMALL_SCAN_THREADS * SMALL_SCAN_ITEMS;

__global__ void __launch_bounds__(SMALL_SCAN_THREADS)
scan_cut_kernel(const uint32_t *counts, uint32_t entries, size_t n, size_t limit,
				uint32_t groups, uint32_t shift, uint32_t *offsets, uint32_t *group_cursors,
				ApproxResult *result)
{
	typedef cub::BlockScan<uint32_t, SMALL_SCAN_THREADS> BlockScan;
	__shared__ typename BlockScan::TempStorage storage;
	uint32_t	values[SMALL_SCAN_ITEMS];

#pragma unroll
	for (int j = 0; j < SMALL_SCAN_ITEMS; j++)
	{
		uint32_t	e = threadIdx.x * SMALL_SCAN_ITEMS + j;

		values[j] = e < entries ? counts[e] : 0;
	}
	BlockScan(storage).ExclusiveSum(values, values);
#pragma unroll
	for (int j = 0; j < SMALL_SCAN_ITEMS; j++)
	{
		uint32_t	e = threadIdx.x * SMALL_SCAN_ITEMS + j;

		if (e < entries)
			offsets[e] = values[j];
	}
	__syncthreads();			/* the offsets, written above, are read below */
	for (uint32_t g = threadIdx.x; g < groups; g += SMALL_SCAN_THREADS)
		group_cursors[g] = offsets[(size_t) g << shift];
	if (threadIdx.x == 0)
		find_cut(offsets, entries - 1, n, limit, result);
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

	for_each_key(keys, 0, n, blockIdx.x * warps + threadIdx.x / 32, gridDim.x * warps, map,
				 [&](K key, uint32_t bin, size_t i, bool valid) {
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
 * digit in shared memory (shared atomics, see shared_add), claims each digit's
 * run of output slots with one global atomic, reorders the tile in shared
 * memory and writes it out: consecutive threads write consecutive slots of
 * a run. With at most PARTITION_BINS digits per tile, a run averages tile /
 * digits keys; so for many intervals, two passes: the first by coarse
 * group (interval >> shift, at most ~256 groups) into a temporary array,
 * the second, over that array, by interval relative to the tile's first
 * group (a tile spans one or two groups, unless they are small; keys
 * beyond the tile's PARTITION_BINS claim their slot one by one).
 * ------------------------------------------------------------------------ */

/*
 * Block shapes: THREADS x ITEMS keys per tile, MIN_BLOCKS blocks per SM
 * (which caps the registers). More, smaller blocks per SM keep it busier
 * through each tile's chain of barriers: at 10000 intervals, for 32-bit
 * keys, and 64-bit keys alone, 384 x 8 with 3 per SM in the first pass and
 * 320 x 8 with 4 per SM in the second took 0.308 ms at 2^24 (u32+index)
 * against 0.322 for 512 x 8 with 2 per SM in both; 64-bit keys with the
 * index (larger tiles in shared memory) stay with 512 x 8 (0.47 against
 * 0.50-0.53 ms), as do the single pass and histograms of more than 256
 * digits (partition_passes, partition_pass).
 * Measured and dropped: 256 x 8 with 4 or 5 per SM, 192 x 8 with 6, 448 x 8
 * with 3 (spills), 384 x 6 with 4; earlier, 16 keys per thread.
 */
template <int THREADS_, int ITEMS_, int MIN_BLOCKS_>
struct PartitionShape
{
	static constexpr int THREADS = THREADS_;
	static constexpr int ITEMS = ITEMS_;
	static constexpr int MIN_BLOCKS = MIN_BLOCKS_;
	static constexpr size_t TILE = (size_t) THREADS_ * ITEMS_;
};
typedef PartitionShape<512, 8, 2> LargeBlocks;
static const uint32_t PARTITION_BINS = 2048;	/* digits a tile can rank */
static const uint32_t PARTITION_SMALL_BINS = 256;	/* ... where fewer will do */
static const uint32_t PARTITION_COARSE_GROUPS = 256;	/* first pass: ~this many digits */
static const uint32_t PARTITION_MAX_GROUP = PARTITION_BINS / 2;	/* intervals per group */
static const uint32_t PARTITION_MAX_INTERVALS = PARTITION_BINS * PARTITION_MAX_GROUP;
/* Up to this many intervals one pass (0.23 ms at 256 intervals, 2^24
 * u32+index); beyond, two passes, already faster at 1000 intervals than one
 * (0.311 ms against 0.434 in one pass). */
static const uint32_t PARTITION_SINGLE_PASS_MAX = 256;
static const uint32_t NO_DIGIT = 0xffffffffu;
static_assert(PARTITION_BINS <= 0xffff, "digit and rank share 32 bits");

template <class K, bool WITH_INDEX>
__host__ __device__ constexpr size_t
partition_smem_bytes(size_t tile, uint32_t bins)
{
	return 2 * bins * sizeof(uint32_t) +
		tile * (sizeof(K) + (WITH_INDEX ? sizeof(uint32_t) : 0) + sizeof(uint16_t));
}

/*
 * FROM_INPUT: reads the original keys (row index = position), digit =
 * interval >> shift, cursors indexed by digit. Otherwise: reads the first
 * pass's output (valid_outputs keys and their index, or PAIRS), digit =
 * interval - the tile's first group's first interval, cursors indexed by
 * interval. Keys of intervals beyond the cut are dropped. BINS: the tile's
 * histogram (digits beyond it, in the second pass only, claim one by one).
 */

template <class K, bool FROM_INPUT, bool WITH_INDEX, bool PAIRS, uint32_t BINS, class Shape>
__global__ void __launch_bounds__(Shape::THREADS, Shape::MIN_BLOCKS)
partition_kernel(const K *in_keys, const uint32_t *in_index, size_t n,
				 const ApproxResult *result, uint32_t shift,
				 uint32_t *cursors, K *out_keys, uint32_t *out_index, uint64_t *pairs,
				 const uint32_t *group_ends, const uint8_t *in_groups)
{
	/* 32-bit keys with their index move as one 64-bit word (key low, index
	 * high): in shared memory always, through the temporary array if PAIRS */
	constexpr bool WORDS = WITH_INDEX && sizeof(K) == 4;
	constexpr int THREADS = Shape::THREADS;
	constexpr int ITEMS = Shape::ITEMS;
	static_assert(!PAIRS || WORDS, "pairs are for 32-bit keys with the index");
	static_assert(Shape::TILE <= 0x10000, "digit and rank share 32 bits");

	typedef cub::BlockScan<uint32_t, THREADS> BlockScan;
	const int	BINS_PER_THREAD = (int) ((BINS + THREADS - 1) / THREADS);
	__shared__ typename BlockScan::TempStorage scan_storage;
	__shared__ uint32_t tile_first_interval;
	extern __shared__ __align__(16) unsigned char partition_smem[];
	uint32_t   *local_count = (uint32_t *) partition_smem;	/* then: local starts */
	uint32_t   *local_to_global = local_count + BINS;
	K		   *tile_keys = (K *) (local_to_global + BINS);
	uint32_t   *tile_index = (uint32_t *) (tile_keys + THREADS * ITEMS);
	uint16_t   *tile_digit = (uint16_t *) (tile_index + (WITH_INDEX ? THREADS * ITEMS : 0));
	uint64_t   *tile_words = (uint64_t *) tile_keys;	/* WORDS: instead of both */
	/* the quantile mode's tree top, last (the host gives the room then) */
	K		   *tree_top = (K *) (partition_smem +
								  ((partition_smem_bytes<K, WITH_INDEX>(Shape::TILE, BINS) + 15) &
								   ~(size_t) 15));

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

		if (PAIRS && !FROM_INPUT)
		{
			uint64_t	word = i < count ? pairs[i] : 0;

			key[u] = (K) (uint32_t) word;
			index[u] = (uint32_t) (word >> 32);
			continue;
		}
		key[u] = i < count ? in_keys[i] : (K) 0;
		if (WITH_INDEX)
			index[u] = FROM_INPUT ? i : (i < count ? in_index[i] : 0);
	}
	if (!FROM_INPUT && threadIdx.x == 0)
		tile_first_interval = (gs_approx_interval(&map, key[0]) >> shift) << shift;
	for (uint32_t b = threadIdx.x; b < BINS; b += THREADS)
		local_count[b] = 0;

	/* the second pass, and the first given the groups, find quantile
	 * buckets without the tree (below) */
	const uint32_t top_levels = FROM_INPUT && in_groups == nullptr ?
		stage_tree_top(map, tree_top) : 0;

	__syncthreads();

	const uint32_t first_interval = FROM_INPUT ? 0 : tile_first_interval;
	uint32_t	bins[ITEMS];

	if (FROM_INPUT && in_groups != nullptr)
	{
		/*
		 * The quantile mode's first pass, given each key's group by the
		 * count: the digit is the group. Only the cut's group needs the
		 * bucket itself (which of its keys are kept); any other key gets
		 * its group's first bucket, on the same side of the cut.
		 */
		const uint32_t cut_group = cut >> shift;

#pragma unroll
		for (int u = 0; u < ITEMS; u++)
		{
			uint32_t	i = tile_begin + u * THREADS + threadIdx.x;
			uint32_t	group = i < count ? in_groups[i] : 0;

			bins[u] = group == cut_group ?
				quantile_bucket_in_group(map, group, shift, key[u]) : group << shift;
		}
	}
	else if (!FROM_INPUT && map.quantile)
	{
		/*
		 * The quantile mode's second pass: a key's group is known from its
		 * position (the first pass left group g's keys before
		 * group_ends[g]), so only the few splitters of that group are
		 * searched, not the whole tree. A thread's positions increase with
		 * u, and so does its group.
		 */
		uint32_t	group = first_interval >> shift;

#pragma unroll
		for (int u = 0; u < ITEMS; u++)
		{
			uint32_t	i = tile_begin + u * THREADS + threadIdx.x;

			bins[u] = 0;
			if (i < count)
			{
				while (group_ends[group] <= i)
					group++;
				bins[u] = quantile_bucket_in_group(map, group, shift, key[u]);
			}
		}
	}
	else
		intervals_of(map, key, bins, tree_top, top_levels);
#pragma unroll
	for (int u = 0; u < ITEMS; u++)
	{
		uint32_t	i = tile_begin + u * THREADS + threadIdx.x;
		bool		valid = i < count;
		uint32_t	bin = bins[u];
		bool		keep = valid && bin <= cut;
		uint32_t	d = FROM_INPUT ? bin >> shift : bin - first_interval;
		bool		local = keep && d < BINS;

		if (!FROM_INPUT && keep && !local)
		{
			/* a tile spanning many small groups: this key goes on its own */
			uint32_t	slot = atomicAdd(&cursors[bin], 1u);

			out_keys[slot] = key[u];
			if (WITH_INDEX)
				out_index[slot] = index[u];
		}
		uint32_t	rank = shared_add<true>(local_count, local ? d : 0, local);

		digit_rank[u] = local ? d << 16 | rank : NO_DIGIT;
	}
	__syncthreads();

	/*
	 * Local starts by exclusive scan; each digit's run claimed globally. The
	 * claims' results are used only after the reordering, so their latency
	 * hides behind it.
	 */
	uint32_t	counts[BINS_PER_THREAD];
	uint32_t	starts[BINS_PER_THREAD];
	uint32_t	claimed[BINS_PER_THREAD];
	uint32_t	total;

#pragma unroll
	for (int j = 0; j < BINS_PER_THREAD; j++)
	{
		uint32_t	b = threadIdx.x * BINS_PER_THREAD + j;

		counts[j] = b < BINS ? local_count[b] : 0;
	}
	BlockScan(scan_storage).ExclusiveSum(counts, starts, total);
#pragma unroll
	for (int j = 0; j < BINS_PER_THREAD; j++)
	{
		uint32_t	b = threadIdx.x * BINS_PER_THREAD + j;

		if (counts[j] != 0)
			claimed[j] = atomicAdd(&cursors[first_interval + b], counts[j]);
		if (b < BINS)
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

			if (WORDS)
				tile_words[position] = (uint64_t) index[u] << 32 | (uint32_t) key[u];
			else
			{
				tile_keys[position] = key[u];
				if (WITH_INDEX)
					tile_index[position] = index[u];
			}
			tile_digit[position] = (uint16_t) d;
		}
#pragma unroll
	for (int j = 0; j < BINS_PER_THREAD; j++)
		if (counts[j] != 0)
			local_to_global[threadIdx.x * BINS_PER_THREAD + j] = claimed[j] - starts[j];
	__syncthreads();

	/* write the runs: consecutive threads, consecutive slots */
	for (uint32_t j = threadIdx.x; j < total; j += THREADS)
	{
		uint32_t	slot = local_to_global[tile_digit[j]] + j;

		if (PAIRS && FROM_INPUT)
			pairs[slot] = tile_words[j];
		else if (WORDS)
		{
			uint64_t	word = tile_words[j];

			out_keys[slot] = (K) (uint32_t) word;
			out_index[slot] = (uint32_t) (word >> 32);
		}
		else
		{
			out_keys[slot] = tile_keys[j];
			if (WITH_INDEX)
				out_index[slot] = tile_index[j];
		}
	}
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

/*
 * Where every temporary of one sort lives in its single device allocation:
 * one cudaMallocAsync before the first kernel instead of one per buffer
 * (host calls before the min/max kernel are time the GPU waits), and the
 * same sizes for the budget check (approx_temp_bytes) as for the sort.
 */
struct ApproxLayout
{
	size_t		counts = 0,		/* entries: per interval, then the total */
				partials = 0,	/* 2 per min/max block */
				offsets = 0,	/* entries */
				group_cursors = 0,	/* groups (two passes only) */
				grouped_keys = 0,	/* n keys, or n 64-bit pairs */
				grouped_index = 0,	/* n (keys of 64 bits with the index) */
				scan_temp = 0,	/* cub::DeviceScan's, beyond SMALL_SCAN_ENTRIES */
				scan_bytes = 0,
				total = 0;
	bool		grouped_pairs = false;	/* 32-bit keys with the index, as pairs */
};

static size_t
place(size_t &cursor, size_t bytes)
{
	size_t		at = cursor;

	cursor += (bytes + 255) & ~(size_t) 255;
	return at;
}

static void
approx_layout(size_t n, unsigned key_bytes, uint32_t intervals, bool with_index,
			  const ApproxTuning &t, ApproxLayout *layout)
{
	const size_t entries = (size_t) intervals + 1;
	const uint32_t shift = t.scatter == APPROX_SCATTER_PARTITION ? partition_shift(intervals, t) : 0;
	size_t		cursor = 0;

	*layout = ApproxLayout();
	if (entries > SMALL_SCAN_ENTRIES &&
		scan_counts(nullptr, layout->scan_bytes, nullptr, nullptr, entries, nullptr) != cudaSuccess)
	{
		/* only a size query; should it fail, the scan itself reports it */
		cudaGetLastError();
		layout->scan_bytes = entries * sizeof(uint32_t);
	}
	layout->counts = place(cursor, entries * sizeof(uint32_t));
	layout->partials = place(cursor, 2 * sizeof(uint64_t) * approx_grid(n) * MINMAX_GRID_FACTOR);
	layout->offsets = place(cursor, entries * sizeof(uint32_t));
	if (shift > 0)
	{
		layout->group_cursors = place(cursor, partition_groups(intervals, shift) * sizeof(uint32_t));
		layout->grouped_pairs = with_index && key_bytes == 4;
		if (layout->grouped_pairs)
			layout->grouped_keys = place(cursor, n * sizeof(uint64_t));
		else
		{
			layout->grouped_keys = place(cursor, n * key_bytes);
			if (with_index)
				layout->grouped_index = place(cursor, n * sizeof(uint32_t));
		}
	}
	if (layout->scan_bytes > 0)
		layout->scan_temp = place(cursor, layout->scan_bytes);
	layout->total = cursor;
}

size_t
approx_temp_bytes(size_t n, unsigned key_bytes, uint32_t intervals, const ApproxTuning *tuning)
{
	ApproxLayout layout;

	/* with the index: the larger of the two */
	approx_layout(n, key_bytes, intervals, true, resolve_tuning(tuning, intervals), &layout);
	return layout.total;
}

/*
 * Lets `kernel` use up to `bytes` of dynamic shared memory. Callers do it
 * once per kernel (a static flag, as gpu_networks.cu's launch_pass):
 * cudaFuncSetAttribute costs host time, and a sort's first kernels wait for
 * the host work before them.
 */
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

/* One partition pass, with a tile histogram of BINS digits. */
template <class K, bool FROM_INPUT, bool WITH_INDEX, bool PAIRS, uint32_t BINS, class Shape>
static gpu_status
launch_partition(Job &job, const K *in_keys, const uint32_t *in_index, size_t n,
				 ApproxResult *result, uint32_t shift, uint32_t *cursors, K *out_keys,
				 uint32_t *out_index, uint64_t *pairs, bool quantile,
				 const uint32_t *group_ends, const uint8_t *in_groups, const char *what)
{
	const auto	kernel = partition_kernel<K, FROM_INPUT, WITH_INDEX, PAIRS, BINS, Shape>;
	/* the quantile mode's tree top goes last, 16-byte aligned */
	const size_t tiles_bytes = (partition_smem_bytes<K, WITH_INDEX>(Shape::TILE, BINS) + 15) &
		~(size_t) 15;
	const size_t smem = quantile ? tiles_bytes + TREE_TOP_BYTES :
		partition_smem_bytes<K, WITH_INDEX>(Shape::TILE, BINS);
	const unsigned blocks = (unsigned) ((n + Shape::TILE - 1) / Shape::TILE);
	static bool configured = false;	/* per instantiation */

	if (!configured)
	{
		GS_TRY(set_shared_limit(job, (const void *) kernel, tiles_bytes + TREE_TOP_BYTES));
		configured = true;
	}
	kernel<<<blocks, Shape::THREADS, smem, job.stream()>>>(in_keys, in_index, n, result, shift,
														   cursors, out_keys, out_index, pairs,
														   group_ends, in_groups);
	return job.launched(what);
}

/*
 * ... with the smaller histogram where the pass's digits (mostly) fit in
 * it; the larger one always with the large blocks (the smaller blocks' few
 * registers do not hold a thread's share of it: 100000 intervals took 0.70
 * ms against 0.57 at 2^24).
 */
template <class K, bool FROM_INPUT, bool WITH_INDEX, bool PAIRS, class Shape>
static gpu_status
partition_pass(Job &job, uint32_t digits, const K *in_keys, const uint32_t *in_index, size_t n,
			   ApproxResult *result, uint32_t shift, uint32_t *cursors, K *out_keys,
			   uint32_t *out_index, uint64_t *pairs, bool quantile, const uint32_t *group_ends,
			   const uint8_t *in_groups, const char *what)
{
	if (digits <= PARTITION_SMALL_BINS)
		return launch_partition<K, FROM_INPUT, WITH_INDEX, PAIRS, PARTITION_SMALL_BINS, Shape>(
			job, in_keys, in_index, n, result, shift, cursors, out_keys, out_index, pairs,
			quantile, group_ends, in_groups, what);
	return launch_partition<K, FROM_INPUT, WITH_INDEX, PAIRS, PARTITION_BINS, LargeBlocks>(
		job, in_keys, in_index, n, result, shift, cursors, out_keys, out_index, pairs, quantile,
		group_ends, in_groups, what);
}

/*
 * The first partition pass's output, when there are two: 32-bit keys with
 * the index as 64-bit pairs, else keys and (maybe) the index.
 */
template <class K>
struct GroupedKeys
{
	K		   *keys = nullptr;
	uint32_t   *index = nullptr;
	uint64_t   *pairs = nullptr;
};

/* Calls f with the block shape `shape` (never APPROX_SHAPE_DEFAULT). */
template <class F>
static gpu_status
with_partition_shape(ApproxShape shape, F f)
{
	switch (shape)
	{
		case APPROX_SHAPE_384x8:
			return f(PartitionShape<384, 8, 3>());
		case APPROX_SHAPE_320x8:
			return f(PartitionShape<320, 8, 4>());
		default:
			return f(LargeBlocks());
	}
}

/*
 * The shape one of two passes runs with: the tuning's, or by default the
 * smaller blocks, except for 64-bit keys with the index. (The single pass
 * always takes the large blocks: its runs go straight to the output, and
 * shorter ones cost more, 0.27 against 0.23 ms at 256 intervals, 2^24.)
 */
static ApproxShape
pass_shape(ApproxShape asked, bool first_pass, unsigned key_bytes, bool with_index)
{
	if (asked != APPROX_SHAPE_DEFAULT)
		return asked;
	if (key_bytes == 8 && with_index)
		return APPROX_SHAPE_512x8;
	return first_pass ? APPROX_SHAPE_384x8 : APPROX_SHAPE_320x8;
}

/*
 * The partition: one pass (shift 0: digit = interval), or two (digit =
 * group of 2^shift intervals, into `grouped`; then digit = interval
 * relative to the tile's first group, where a tile mostly spans one or two
 * groups: four groups' worth of digits are provided for). The offsets serve
 * as the interval cursors.
 */
template <class K, bool WITH_INDEX>
static gpu_status
partition_passes(Job &job, const K *keys, size_t n, uint32_t intervals, uint32_t shift,
				 uint32_t groups, ApproxResult *result, uint32_t *offsets,
				 uint32_t *group_cursors, const GroupedKeys<K> &grouped, K *out_keys,
				 uint32_t *out_index, const ApproxTuning &t, bool quantile,
				 const uint8_t *in_groups)
{
	/* 32-bit keys with the index: the temporary array holds 64-bit pairs */
	constexpr bool PAIRS = WITH_INDEX && sizeof(K) == 4;

	if (shift == 0)
		return partition_pass<K, true, WITH_INDEX, false, LargeBlocks>(
			job, intervals, keys, nullptr, n, result, 0, offsets, out_keys, out_index, nullptr,
			quantile, nullptr, nullptr, "approximate sort: partition");
	GS_TRY(with_partition_shape(pass_shape(t.first_shape, true, sizeof(K), WITH_INDEX),
								[&](auto shape) {
		return partition_pass<K, true, WITH_INDEX, PAIRS, decltype(shape)>(
			job, groups, keys, nullptr, n, result, shift, group_cursors, grouped.keys,
			grouped.index, grouped.pairs,
			quantile && in_groups == nullptr, nullptr, in_groups,
			"approximate sort: partition by group");
	}));
	GS_TRY(job.progress(n));
	return with_partition_shape(pass_shape(t.second_shape, false, sizeof(K), WITH_INDEX),
								[&](auto shape) {
		return partition_pass<K, false, WITH_INDEX, PAIRS, decltype(shape)>(
			job, 4u << shift, grouped.keys, grouped.index, n, result, shift, offsets, out_keys,
			out_index, grouped.pairs, false, group_cursors, nullptr,
			"approximate sort: partition by interval");
	});
}

template <class K>
static gpu_status
approx_typed(Job &job, const K *keys, size_t n, uint32_t intervals, size_t limit, K *out_keys,
			 uint32_t *out_index, ApproxResult *result, const ApproxTuning &t,
			 const gs_interval_map *quantile_map, uint8_t *group_bytes)
{
	const size_t entries = (size_t) intervals + 1;	/* the last: the total */
	const bool	partition = t.scatter == APPROX_SCATTER_PARTITION;
	const uint32_t shift = partition ? partition_shift(intervals, t) : 0;
	const uint32_t groups = shift > 0 ? partition_groups(intervals, shift) : 0;
	const bool	small_scan = entries <= SMALL_SCAN_ENTRIES;
	const unsigned grid = approx_grid(n);
	const unsigned minmax_grid = grid * MINMAX_GRID_FACTOR;
	ApproxLayout layout;
	unsigned char *temp = nullptr;
	static bool count_configured = false;	/* per key type, for the most bins */
	/* the quantile mode: each key's group (a byte) kept by the count for
	 * the partition's first pass, where the groups fit in a byte and the
	 * count is the shared-memory one */
	uint8_t    *kept_groups = quantile_map != nullptr && group_bytes != nullptr && partition &&
		shift > 0 && groups <= 256 && intervals <= APPROX_SMEM_BINS ? group_bytes : nullptr;
	gpu_status	status;

	approx_layout(n, sizeof(K), intervals, out_index != nullptr, t, &layout);
	GS_TRY(job.allocate(reinterpret_cast<void **>(&temp), layout.total,
						"approximate sort: temporary buffers"));

	uint32_t   *counts = reinterpret_cast<uint32_t *>(temp + layout.counts);
	uint64_t   *partials = reinterpret_cast<uint64_t *>(temp + layout.partials);
	uint32_t   *offsets = reinterpret_cast<uint32_t *>(temp + layout.offsets);
	uint32_t   *group_cursors = groups > 0 ?
		reinterpret_cast<uint32_t *>(temp + layout.group_cursors) : nullptr;
	void	   *scan_temp = layout.scan_bytes > 0 ? temp + layout.scan_temp : nullptr;
	GroupedKeys<K> grouped;

	if (groups > 0 && layout.grouped_pairs)
		grouped.pairs = reinterpret_cast<uint64_t *>(temp + layout.grouped_keys);
	else if (groups > 0)
	{
		grouped.keys = reinterpret_cast<K *>(temp + layout.grouped_keys);
		if (out_index != nullptr)
			grouped.index = reinterpret_cast<uint32_t *>(temp + layout.grouped_index);
	}

	/* 1. per-block min and max (and the counts zeroed), launched first: the
	 * host work below overlaps it. The quantile mode's map needs no min and
	 * max; its count finds them on the way (one read of the keys less),
	 * from a start of all ones and 0. */
	const bool	fold_minmax = quantile_map != nullptr && intervals <= APPROX_SMEM_BINS;

	if (fold_minmax)
	{
		status = job.check(cudaMemsetAsync(counts, 0, entries * sizeof(uint32_t), job.stream()),
						   "cudaMemsetAsync (counts)");
		if (status == GPU_OK)
			status = job.check(cudaMemsetAsync(&result->min_key, 0xff, sizeof(result->min_key),
											   job.stream()), "cudaMemsetAsync (min)");
		if (status == GPU_OK)
			status = job.check(cudaMemsetAsync(&result->max_key, 0, sizeof(result->max_key),
											   job.stream()), "cudaMemsetAsync (max)");
	}
	else
	{
		minmax_partial_kernel<K><<<minmax_grid, APPROX_THREADS, 0, job.stream()>>>(
			keys, n, partials, counts, entries);
		status = job.launched("approximate sort: min/max");
	}

	if (status == GPU_OK && !count_configured)
	{
		status = set_shared_limit(job, (const void *) count_smem_kernel<K, false>,
								  APPROX_SMEM_BINS * sizeof(uint32_t) + TREE_TOP_BYTES);
		if (status == GPU_OK)
			status = set_shared_limit(job, (const void *) count_smem_kernel<K, true>,
									  APPROX_SMEM_BINS * sizeof(uint32_t) + TREE_TOP_BYTES);
		count_configured = status == GPU_OK;
	}

	/* 2-3. the interval map, and the counts */
	if (status == GPU_OK)
	{
		const bool	in_smem = intervals <= APPROX_SMEM_BINS;
		const auto	kernel = !in_smem ? count_global_kernel<K> :
			fold_minmax ? count_smem_kernel<K, true> : count_smem_kernel<K, false>;

		/* the histogram, then (quantile mode) the tree's top levels */
		const size_t smem = !in_smem ? 0 : quantile_map == nullptr ? intervals * sizeof(uint32_t) :
			((intervals + 3) & ~(size_t) 3) * sizeof(uint32_t) + TREE_TOP_BYTES;

		kernel<<<grid, APPROX_THREADS, smem, job.stream()>>>(
			keys, n, partials, fold_minmax ? 0 : minmax_grid, quantile_map, result, intervals, counts,
			in_smem ? kept_groups : nullptr, shift);
		status = job.launched("approximate sort: count");
	}
	/* the quantile mode's fullest bucket (EXPLAIN ANALYZE shows it) */
	if (status == GPU_OK && quantile_map != nullptr)
	{
		status = job.check(cudaMemsetAsync(&result->largest, 0, sizeof(result->largest),
										   job.stream()), "cudaMemsetAsync");
		if (status == GPU_OK)
		{
			largest_count_kernel<<<grid_for(intervals, 256, 1024), 256, 0, job.stream()>>>(
				counts, intervals, result);
			status = job.launched("approximate sort: largest interval");
		}
	}
	if (status == GPU_OK)
		status = job.progress(n);

	/* 4-5. scan, the cut (and valid_outputs), the partition's group cursors */
	if (status == GPU_OK && small_scan)
	{
		scan_cut_kernel<<<1, SMALL_SCAN_THREADS, 0, job.stream()>>>(
			counts, (uint32_t) entries, n, limit, groups, shift, offsets, group_cursors, result);
		status = job.launched("approximate sort: scan and cut");
	}
	else if (status == GPU_OK)
	{
		size_t		scan_bytes = layout.scan_bytes;

		status = job.check(scan_counts(scan_temp, scan_bytes, counts, offsets, entries, job.stream()),
						   "cub::DeviceScan");
		if (status == GPU_OK)
		{
			cut_kernel<<<1, 1, 0, job.stream()>>>(offsets, intervals, n, limit, result);
			status = job.launched("approximate sort: cut");
		}
		if (status == GPU_OK && groups > 0)
		{
			group_cursors_kernel<<<grid_for(groups, 256), 256, 0, job.stream()>>>(
				offsets, groups, shift, group_cursors);
			status = job.launched("approximate sort: group cursors");
		}
	}

	/* 6. scatter; the offsets serve as the intervals' cursors */
	if (status == GPU_OK && partition)
		status = out_index != nullptr ?
			partition_passes<K, true>(job, keys, n, intervals, shift, groups, result, offsets,
									  group_cursors, grouped, out_keys, out_index, t,
									  quantile_map != nullptr, kept_groups) :
			partition_passes<K, false>(job, keys, n, intervals, shift, groups, result, offsets,
									   group_cursors, grouped, out_keys, out_index, t,
									   quantile_map != nullptr, kept_groups);
	else if (status == GPU_OK)
	{
		scatter_cursors_kernel<K><<<grid, APPROX_THREADS, 0, job.stream()>>>(
			keys, n, result, offsets, out_keys, out_index);
		status = job.launched("approximate sort: scatter");
	}
	job.release(temp);
	if (status != GPU_OK)
		return status;
	return job.progress(n);
}

gpu_status
approx_sort_device(Job &job, const void *keys, unsigned key_bytes, size_t n, uint32_t intervals,
				   size_t limit, void *out_keys, uint32_t *out_index, ApproxResult *result,
				   const ApproxTuning *tuning, const ApproxQuantile *quantile)
{
	if (intervals < 1)
	{
		set_message("the approximate sort needs at least one interval");
		return GPU_INVALID;
	}
	if (n >= UINT32_MAX || ((uintptr_t) keys % 16) != 0)
	{
		set_message("the approximate sort needs fewer than 2^32 keys, 16-byte aligned");
		return GPU_INVALID;
	}
	if (n == 0)
		return job.check(cudaMemsetAsync(result, 0, sizeof(*result), job.stream()),
						 "cudaMemsetAsync");

	if (quantile == nullptr)
	{
		ApproxTuning t = resolve_tuning(tuning, intervals);

		if (key_bytes == 4)
			return approx_typed(job, static_cast<const uint32_t *>(keys), n, intervals, limit,
								static_cast<uint32_t *>(out_keys), out_index, result, t, nullptr,
								nullptr);
		return approx_typed(job, static_cast<const uint64_t *>(keys), n, intervals, limit,
							static_cast<uint64_t *>(out_keys), out_index, result, t, nullptr,
							nullptr);
	}

	/* the quantile mode: its map first, then the same pipeline over its
	 * buckets */
	const uint32_t buckets = gs_quantile_buckets(intervals);
	const uint32_t sample_size = gs_quantile_sample_size(n, intervals);
	const size_t map_at = quantile_scratch(n, intervals).map_bytes;
	const size_t groups_at = quantile_scratch(n, intervals).groups_bytes;
	ApproxTuning t = resolve_tuning(tuning, buckets);
	unsigned char *scratch = nullptr;
	gs_interval_map *map;
	gpu_status	status;

	if (intervals > GS_QUANTILE_MAX_INTERVALS)
	{
		set_message("the quantile mode takes at most %u intervals", GS_QUANTILE_MAX_INTERVALS);
		return GPU_INVALID;
	}
	GS_TRY(job.allocate(reinterpret_cast<void **>(&scratch), approx_quantile_bytes(n, intervals),
						"approximate sort: quantile sample"));
	map = reinterpret_cast<gs_interval_map *>(scratch + map_at);
	if (key_bytes == 4)
	{
		status = quantile_map_device(job, static_cast<const uint32_t *>(keys), n, intervals,
									 quantile->seed, sample_size,
									 reinterpret_cast<uint64_t *>(scratch), map);
		if (status == GPU_OK)
			status = approx_typed(job, static_cast<const uint32_t *>(keys), n, buckets, limit,
								  static_cast<uint32_t *>(out_keys), out_index, result, t, map,
								  scratch + groups_at);
	}
	else
	{
		status = quantile_map_device(job, static_cast<const uint64_t *>(keys), n, intervals,
									 quantile->seed, sample_size,
									 reinterpret_cast<uint64_t *>(scratch), map);
		if (status == GPU_OK)
			status = approx_typed(job, static_cast<const uint64_t *>(keys), n, buckets, limit,
								  static_cast<uint64_t *>(out_keys), out_index, result, t, map,
								  scratch + groups_at);
	}
	/* freed in stream order: the kernels that read the splitters run first */
	job.release(scratch);
	return status;
}

size_t
approx_quantile_bytes(size_t n, uint32_t intervals)
{
	return quantile_scratch(n, intervals).total_bytes;
}

}								/* namespace gs_gpu */

/* ------------------------------------------------------------------------
 * C entry point
 * ------------------------------------------------------------------------ */
using namespace gs_gpu;

static gpu_status
approx_sort_entry(gpu_approx_job *request, gpu_timing *timing)
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
	request->sample_size = 0;
	request->largest_interval = 0;
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
	const bool	quantile = request->quantile;
	const ApproxQuantile quantile_request = {request->seed};
	const uint32_t buckets = quantile ? gs_quantile_buckets(request->intervals) : request->intervals;

	if (quantile && request->intervals > GS_QUANTILE_MAX_INTERVALS)
	{
		set_message("gpu_approx_sort: the quantile mode takes at most %u intervals, not %u",
					GS_QUANTILE_MAX_INTERVALS, request->intervals);
		return GPU_INVALID;
	}
	status = job.begin();
	if (status == GPU_OK)
		status = job.check_budget(2 * n * kb + (request->row_index ? n * 4 : 0) +
								  sizeof(ApproxResult) +
								  approx_temp_bytes(n, kb, buckets, nullptr) +
								  (quantile ? approx_quantile_bytes(n, request->intervals) : 0),
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
									out_keys, out_index, result, nullptr,
									quantile ? &quantile_request : nullptr);
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
			if (quantile)
			{
				/* one interval needs no splitters: no sample, as on the CPU */
				request->sample_size = request->intervals < 2 ? 0 :
					gs_quantile_sample_size(n, request->intervals);
				request->largest_interval = host_result.largest;
			}
		}
	}
	job.report_timing(timing);
	return job.finish();
}

extern "C" gpu_status
gpu_approx_sort(gpu_approx_job *request, gpu_timing *timing)
{
	return guard_entry("gpu_approx_sort", [&] { return approx_sort_entry(request, timing); });
}
