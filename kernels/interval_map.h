/*
 * interval_map.h — which interval a key falls in, for the approximate sort.
 * Shared by the CPU engine and the CUDA kernels (host and device), so both
 * compute the same interval for every key, bit for bit.
 *
 * The keys' observed [min, max] is cut into `intervals` equal-width
 * intervals of width w = (max - min + 1) / intervals, and
 *     interval(key) = floor((key - min) * intervals / (max - min + 1)).
 * It is computed exactly: a fixed-point estimate that is at most one too
 * small, then one correction. Hence: monotone in key; two keys in one
 * interval differ by less than w; the result is always < intervals.
 */
#ifndef GPUSORT_INTERVAL_MAP_H
#define GPUSORT_INTERVAL_MAP_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __CUDACC__
#define INTERVAL_MAP_FN __host__ __device__ static inline
#else
#define INTERVAL_MAP_FN static inline
#endif

typedef struct gs_interval_map
{
	uint64_t	min_key;
	uint64_t	range;			/* max_key - min_key */
	uint32_t	intervals;
	bool		narrow;			/* intervals > range: 64-bit arithmetic is exact */
	bool		range32;		/* range < 2^32: the estimate and its check fit
								 * in 64 bits (all 32-bit keys) */
	uint64_t	scale;			/* floor(2^64 * intervals / (range + 1)) */
} gs_interval_map;

INTERVAL_MAP_FN gs_interval_map
gs_interval_map_make(uint64_t min_key, uint64_t max_key, uint32_t intervals)
{
	gs_interval_map map;

	map.min_key = min_key;
	map.range = max_key - min_key;
	map.intervals = intervals;
	map.narrow = intervals > map.range;
	map.range32 = map.range <= 0xffffffffu;
	map.scale = 0;
	if (!map.narrow && map.range32)
	{
		/*
		 * The same floor with two 64-bit divisions: on the GPU, where every
		 * counting block makes the map, the 128-bit one is a long software
		 * loop. intervals * 2^32 / (range + 1) < 2^32 since intervals <=
		 * range, and the remainder times 2^32 fits in 64 bits.
		 */
		uint64_t	divisor = map.range + 1;	/* <= 2^32 */
		uint64_t	upper = ((uint64_t) intervals << 32) / divisor;
		uint64_t	rest = ((uint64_t) intervals << 32) % divisor;

		map.scale = upper << 32 | ((rest << 32) / divisor);
	}
	else if (!map.narrow)
		map.scale = (uint64_t) ((((unsigned __int128) intervals) << 64) /
								((unsigned __int128) map.range + 1));
	return map;
}

/*
 * The interval of a key when the range is below 2^32 (all 32-bit keys) and
 * not narrow: offset < 2^32, so floor(offset * scale / 2^64) comes from two
 * 32x32-bit products (adding the low product's high half before the last
 * shift loses nothing: its dropped bits are below 2^32), and the check fits
 * in 64 bits, since offset * intervals and estimate * (range + 1) are both
 * below 2^64. The same value as the general formula, in a few instructions.
 */
INTERVAL_MAP_FN uint32_t
gs_approx_interval_range32(const gs_interval_map *map, uint64_t key)
{
	uint32_t	offset = (uint32_t) (key - map->min_key);
	uint32_t	range = (uint32_t) map->range;
	uint64_t	low = (uint64_t) offset * (uint32_t) map->scale;
	uint64_t	high = (uint64_t) offset * (uint32_t) (map->scale >> 32);
	uint64_t	estimate = (high + (low >> 32)) >> 32;	/* < intervals */
	/* estimate * (range + 1), without forming range + 1 (it may be 2^32) */
	uint64_t	taken = (uint64_t) (uint32_t) estimate * range + estimate;

	if ((uint64_t) offset * map->intervals - taken > range)
		estimate++;
	return (uint32_t) estimate;
}

INTERVAL_MAP_FN uint32_t
gs_approx_interval(const gs_interval_map *map, uint64_t key)
{
	uint64_t	offset = key - map->min_key;
	uint64_t	estimate;
	unsigned __int128 divisor;

	if (map->narrow)
		return (uint32_t) ((offset * map->intervals) / (map->range + 1));
	if (map->range32)
		return gs_approx_interval_range32(map, key);
	estimate = (uint64_t) (((unsigned __int128) offset * map->scale) >> 64);
	divisor = (unsigned __int128) map->range + 1;
	if ((unsigned __int128) offset * map->intervals -
		(unsigned __int128) estimate * divisor >= divisor)
		estimate++;
	return (uint32_t) estimate;
}

/* The width of one interval, in key units. */
INTERVAL_MAP_FN double
gs_interval_width(const gs_interval_map *map)
{
	return ((double) map->range + 1.0) / (double) map->intervals;
}

#endif							/* GPUSORT_INTERVAL_MAP_H */
