/*
 * cpu_sort.c — the CPU implementation of every algorithm: the reference the
 * GPU kernels are tested against, and the fallback where no GPU is usable.
 * The algorithms themselves live in cpu_sort_template.h, instantiated here for
 * 32-bit and 64-bit keys.
 */
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>

#define KEY_T uint32_t
#define KEY_SUFFIX u32
#include "cpu_sort_template.h"
#undef KEY_T
#undef KEY_SUFFIX

#define KEY_T uint64_t
#define KEY_SUFFIX u64
#include "cpu_sort_template.h"
#undef KEY_T
#undef KEY_SUFFIX

/*
 * The classic network needs a power-of-two length: other lengths are padded
 * with keys no real key exceeds (index UINT32_MAX keeps them after real keys
 * of the same value), and the first n outputs are the real ones.
 */
gs_status
cpu_bitonic_sort(const cpu_sort_job *job)
{
	size_t		n = job->n;
	size_t		padded = next_power_of_two(n);
	void	   *keys = job->keys;
	uint32_t   *index = job->row_index;
	gs_status	status;

	if (n < 2)
		return GS_OK;
	if (padded != n)
	{
		keys = engine_alloc(job->allocator, padded * job->key_bytes);
		index = NULL;
		if (job->row_index != NULL)
			index = engine_alloc(job->allocator, padded * sizeof(uint32_t));
		if (keys == NULL || (job->row_index != NULL && index == NULL))
		{
			engine_free(job->allocator, keys);
			engine_free(job->allocator, index);
			return GS_ERR_OUT_OF_MEMORY;
		}
		memcpy(keys, job->keys, n * job->key_bytes);
		memset((char *) keys + n * job->key_bytes, 0xff, (padded - n) * job->key_bytes);
		if (index != NULL)
		{
			memcpy(index, job->row_index, n * sizeof(uint32_t));
			memset(index + n, 0xff, (padded - n) * sizeof(uint32_t));
		}
	}
	if (job->key_bytes == 4)
		status = bitonic_network_u32(keys, index, padded, job->poll, job->poll_arg);
	else
		status = bitonic_network_u64(keys, index, padded, job->poll, job->poll_arg);
	if (padded != n)
	{
		if (status == GS_OK)
		{
			memcpy(job->keys, keys, n * job->key_bytes);
			if (index != NULL)
				memcpy(job->row_index, index, n * sizeof(uint32_t));
		}
		engine_free(job->allocator, keys);
		engine_free(job->allocator, index);
	}
	return status;
}

gs_status
cpu_butterfly_sort(const cpu_sort_job *job)
{
	if (job->key_bytes == 4)
		return butterfly_network_u32(job->keys, job->row_index, job->n,
									 job->poll, job->poll_arg);
	return butterfly_network_u64(job->keys, job->row_index, job->n,
								 job->poll, job->poll_arg);
}

gs_status
cpu_radix_sort(const cpu_sort_job *job)
{
	if (job->key_bytes == 4)
		return radix_sort_u32(job);
	return radix_sort_u64(job);
}

gs_status
cpu_approx_sort(const cpu_sort_job *job, const gs_interval_map *map,
				size_t limit, size_t *valid_outputs, size_t *largest_interval)
{
	*valid_outputs = 0;
	*largest_interval = 0;
	if (job->n == 0)
		return GS_OK;
	if (job->key_bytes == 4)
		return approx_sort_u32(job, map, limit, valid_outputs, largest_interval);
	return approx_sort_u64(job, map, limit, valid_outputs, largest_interval);
}

/*
 * The quantile mode's splitters (interval_map.h): the same draws, sort and
 * positions as the GPU's (gpu_approx.cu), so both cut at the same keys.
 */
gs_status
cpu_quantile_splitters(const cpu_sort_job *job, uint32_t intervals, uint64_t seed,
					   uint64_t *splitters, size_t *sample_size)
{
	uint32_t	size = gs_quantile_sample_size(job->n, intervals);
	uint64_t   *sample;
	cpu_sort_job sample_job;
	gs_status	status;

	*sample_size = 0;
	if (job->n == 0 || intervals < 2)
		return GS_OK;
	sample = engine_alloc(job->allocator, (size_t) size * sizeof(uint64_t));
	if (sample == NULL)
		return GS_ERR_OUT_OF_MEMORY;
	for (uint32_t draw = 0; draw < size; draw++)
	{
		uint32_t	at = gs_quantile_sample_position(seed, draw, job->n);

		sample[draw] = job->key_bytes == 4 ? ((const uint32_t *) job->keys)[at] :
			((const uint64_t *) job->keys)[at];
	}
	memset(&sample_job, 0, sizeof(sample_job));
	sample_job.n = size;
	sample_job.key_bytes = 8;
	sample_job.key_bits = job->key_bytes * 8;
	sample_job.keys = sample;
	sample_job.allocator = job->allocator;
	sample_job.poll = job->poll;
	sample_job.poll_arg = job->poll_arg;
	status = radix_sort_u64(&sample_job);
	if (status == GS_OK)
	{
		for (uint32_t j = 1; j < intervals; j++)
			splitters[j - 1] = sample[gs_quantile_splitter_position(j, size, intervals)];
		*sample_size = size;
	}
	engine_free(job->allocator, sample);
	return status;
}

/*
 * The min-max butterfly of Jan et al.: log2(T) stages over a tile of T keys,
 * stage s comparing positions i and i + 2^(s-1) within blocks of 2^s and
 * putting the smaller first. The tile's minimum ends at its first position
 * and its maximum at its last. Tiles are reduced the same way, on their
 * (min, max) candidates, until one tile remains. Short tiles are padded with
 * copies of their first key, which changes neither extreme.
 */
#define MINMAX_TILE 256

static void
minmax_butterfly_tile(uint64_t *tile)
{
	for (size_t half = 1; half < MINMAX_TILE; half <<= 1)
	{
		for (size_t t = 0; t < MINMAX_TILE / 2; t++)
		{
			size_t		low = (t / half) * 2 * half + t % half;
			size_t		high = low + half;

			if (tile[low] > tile[high])
			{
				uint64_t	swap = tile[low];

				tile[low] = tile[high];
				tile[high] = swap;
			}
		}
	}
}

static void
minmax_pad_and_run(uint64_t *tile, size_t count)
{
	for (size_t i = count; i < MINMAX_TILE; i++)
		tile[i] = tile[0];
	minmax_butterfly_tile(tile);
}

void
cpu_minmax(const uint64_t *keys, size_t n, uint64_t *min_key, uint64_t *max_key)
{
	uint64_t	tile[MINMAX_TILE];
	uint64_t	winners[MINMAX_TILE];	/* (min, max) of the tiles so far */
	size_t		nwinners = 0;

	*min_key = *max_key = 0;
	if (n == 0)
		return;
	for (size_t start = 0; start < n; start += MINMAX_TILE)
	{
		size_t		count = n - start < MINMAX_TILE ? n - start : MINMAX_TILE;

		memcpy(tile, keys + start, count * sizeof(uint64_t));
		minmax_pad_and_run(tile, count);
		if (nwinners == MINMAX_TILE)
		{
			minmax_butterfly_tile(winners);
			winners[1] = winners[MINMAX_TILE - 1];
			nwinners = 2;
		}
		winners[nwinners++] = tile[0];
		winners[nwinners++] = tile[MINMAX_TILE - 1];
	}
	minmax_pad_and_run(winners, nwinners);
	*min_key = winners[0];
	*max_key = winners[MINMAX_TILE - 1];
}
