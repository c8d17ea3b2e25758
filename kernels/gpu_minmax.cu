/*
 * gpu_minmax.cu — min and max of n keys by the min-max butterfly network of
 * Jan et al. (butterfly-sort-jan2013): over a tile of T = 2^k positions,
 * stage s = 1..k compares positions i and i + 2^(s-1) within blocks of 2^s
 * and puts the smaller first, so after stage s every block of 2^s holds its
 * minimum at its first position and its maximum at its last. The tile's
 * extremes end at positions 0 and T-1; the tiles' (min, max) candidates
 * are then reduced the same way, level after level, until one tile is left.
 *
 * On the GPU a block takes a tile of 4096 keys: each thread holds 16
 * consecutive positions in registers and runs stages 1-4 on them in full;
 * stages 5-12 run across threads in shared memory. From stage 5 on only the
 * comparators that lead to positions 0 and T-1 are evaluated (the first
 * positions of the sub-blocks, for the minimum, and their last positions,
 * for the maximum): the others cannot change the two outputs. Short tiles
 * are padded with copies of their first key, as on the CPU.
 */
#include "gpu_internal.cuh"

namespace gs_gpu {

static const int MINMAX_THREADS = 256;
static const int MINMAX_PER_THREAD = 16;
static const size_t MINMAX_TILE = (size_t) MINMAX_THREADS * MINMAX_PER_THREAD;

template <class K>
__device__ __forceinline__ void
order_pair(K &low, K &high)
{
	K			a = low,
				b = high;

	low = a < b ? a : b;
	high = a < b ? b : a;
}

/*
 * One level: tile t of `in` -> candidates out[2t] (min), out[2t+1] (max).
 * On the last level (one tile), the pair also goes to result[0..1].
 */
template <class K>
__global__ void __launch_bounds__(MINMAX_THREADS)
minmax_tile_kernel(const K *in, size_t n, K *out, uint64_t *result)
{
	__shared__ K lows[MINMAX_THREADS];
	__shared__ K highs[MINMAX_THREADS];
	const size_t tile_start = (size_t) blockIdx.x * MINMAX_TILE;
	const size_t first = tile_start + (size_t) threadIdx.x * MINMAX_PER_THREAD;
	const K		pad = in[tile_start];	/* copies of the tile's first key */
	K			v[MINMAX_PER_THREAD];

	if (first + MINMAX_PER_THREAD <= n && ((uintptr_t) in & 15) == 0)
	{
		/* 16-byte loads (our buffers are 256-byte aligned; levels 16) */
		const uint4 *vec = reinterpret_cast<const uint4 *>(in + first);
		const int	per_vector = 16 / sizeof(K);

#pragma unroll
		for (int k = 0; k < MINMAX_PER_THREAD / per_vector; k++)
		{
			uint4		raw = vec[k];
			const K    *parts = reinterpret_cast<const K *>(&raw);

#pragma unroll
			for (int j = 0; j < per_vector; j++)
				v[k * per_vector + j] = parts[j];
		}
	}
	else
	{
#pragma unroll
		for (int k = 0; k < MINMAX_PER_THREAD; k++)
			v[k] = first + k < n ? in[first + k] : pad;
	}

	/* stages 1-4: the full network on this thread's 16 positions */
#pragma unroll
	for (int half = 1; half < MINMAX_PER_THREAD; half <<= 1)
#pragma unroll
		for (int i = 0; i < MINMAX_PER_THREAD; i++)
			if (!(i & half))
				order_pair(v[i], v[i + half]);

	/* stages 5-12 across threads: chunk c's first and last positions */
	lows[threadIdx.x] = v[0];
	highs[threadIdx.x] = v[MINMAX_PER_THREAD - 1];
	for (int chunks = 1; chunks < MINMAX_THREADS; chunks <<= 1)
	{
		__syncthreads();
		if ((threadIdx.x & (2 * chunks - 1)) == 0)
		{
			unsigned	t = threadIdx.x;

			/* first of chunk t vs first of chunk t + chunks: minimum stays first */
			K			a = lows[t],
						b = lows[t + chunks];

			order_pair(a, b);
			lows[t] = a;
			/* last of chunk t+chunks-1 vs last of chunk t+2chunks-1: maximum goes last */
			a = highs[t + chunks - 1];
			b = highs[t + 2 * chunks - 1];
			order_pair(a, b);
			highs[t + 2 * chunks - 1] = b;
		}
	}
	__syncthreads();
	if (threadIdx.x == 0)
	{
		out[2 * (size_t) blockIdx.x] = lows[0];
		out[2 * (size_t) blockIdx.x + 1] = highs[MINMAX_THREADS - 1];
		if (result != nullptr)
		{
			result[0] = (uint64_t) lows[0];
			result[1] = (uint64_t) highs[MINMAX_THREADS - 1];
		}
	}
}

static size_t
tiles_of(size_t n)
{
	return (n + MINMAX_TILE - 1) / MINMAX_TILE;
}

/* Room for one level's candidates, rounded so the next level stays
 * 16-byte aligned. */
static size_t
candidate_slots(size_t tiles)
{
	return (2 * tiles + 3) & ~(size_t) 3;
}

size_t
minmax_temp_bytes(size_t n, unsigned key_bytes)
{
	size_t		total = 0;

	/* candidates of every level */
	for (size_t count = n; count > 0;)
	{
		size_t		tiles = tiles_of(count);

		total += candidate_slots(tiles);
		if (tiles <= 1)
			break;
		count = 2 * tiles;
	}
	return total * key_bytes;
}

template <class K>
static gpu_status
minmax_levels(Job &job, const K *keys, size_t n, uint64_t *result)
{
	K		   *candidates = nullptr;
	const K    *in = keys;
	size_t		count = n;
	size_t		offset = 0;
	gpu_status	status;

	status = job.allocate_array(&candidates, minmax_temp_bytes(n, sizeof(K)) / sizeof(K),
								"min/max candidates");
	while (status == GPU_OK)
	{
		size_t		tiles = tiles_of(count);
		K		   *out = candidates + offset;

		minmax_tile_kernel<K><<<(unsigned) tiles, MINMAX_THREADS, 0, job.stream()>>>(
			in, count, out, tiles == 1 ? result : nullptr);
		status = job.launched("min/max butterfly");
		if (status != GPU_OK || tiles == 1)
			break;
		in = out;
		count = 2 * tiles;
		offset += candidate_slots(tiles);
	}
	job.release(candidates);
	if (status != GPU_OK)
		return status;
	return job.progress(n);
}

gpu_status
minmax_device(Job &job, const void *keys, unsigned key_bytes, size_t n, uint64_t *result)
{
	if (n == 0)
		return job.check(cudaMemsetAsync(result, 0, 2 * sizeof(uint64_t), job.stream()),
						 "cudaMemsetAsync");
	if (key_bytes == 4)
		return minmax_levels(job, static_cast<const uint32_t *>(keys), n, result);
	return minmax_levels(job, static_cast<const uint64_t *>(keys), n, result);
}

}								/* namespace gs_gpu */

using namespace gs_gpu;

static gpu_status
minmax_entry(const uint64_t *keys, size_t n, uint64_t *min_key, uint64_t *max_key,
			 gpu_timing *timing)
{
	uint64_t	extremes[2] = {0, 0};
	uint64_t   *device_keys = nullptr;
	uint64_t   *device_result = nullptr;

	if (timing != nullptr)
		memset(timing, 0, sizeof(*timing));
	*min_key = *max_key = 0;
	if (n > 0 && keys == nullptr)
	{
		set_message("gpu_minmax: no keys");
		return GPU_INVALID;
	}
	if (n == 0)
		return GPU_OK;

	Job			job(0, nullptr, nullptr);

	if (job.begin() == GPU_OK &&
		job.allocate_array(&device_keys, n, "min/max keys") == GPU_OK &&
		job.allocate_array(&device_result, 2, "min/max result") == GPU_OK &&
		job.mark(MARK_START) == GPU_OK &&
		job.check(cudaMemcpyAsync(device_keys, keys, n * sizeof(uint64_t),
								  cudaMemcpyHostToDevice, job.stream()),
				  "cudaMemcpyAsync (upload keys)") == GPU_OK &&
		job.mark(MARK_UPLOADED) == GPU_OK &&
		minmax_device(job, device_keys, 8, n, device_result) == GPU_OK &&
		job.mark(MARK_SORTED) == GPU_OK &&
		job.wait_all() == GPU_OK &&
		job.check(cudaMemcpyAsync(extremes, device_result, sizeof(extremes),
								  cudaMemcpyDeviceToHost, job.stream()),
				  "cudaMemcpyAsync (download min/max)") == GPU_OK &&
		job.mark(MARK_DOWNLOADED) == GPU_OK &&
		job.wait_all() == GPU_OK)
	{
		*min_key = extremes[0];
		*max_key = extremes[1];
	}
	job.report_timing(timing);
	return job.finish();
}

extern "C" gpu_status
gpu_minmax(const uint64_t *keys, size_t n, uint64_t *min_key, uint64_t *max_key,
		   gpu_timing *timing)
{
	return guard_entry("gpu_minmax",
					   [&] { return minmax_entry(keys, n, min_key, max_key, timing); });
}
