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

#include <math.h>
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
	/* quantile mode (below): the sorted splitters; `intervals` is then the
	 * number of buckets, 2 * count + 1 */
	bool		quantile;
	const uint64_t *splitters;
	uint32_t	splitter_count;
	/* the GPU's copy of the splitters as a search tree (see
	 * gs_quantile_tree_node), or null; its height */
	const uint64_t *tree;
	uint32_t	tree_levels;
} gs_interval_map;

INTERVAL_MAP_FN uint32_t gs_quantile_bucket(const uint64_t *splitters, uint32_t count,
											uint64_t key);

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
	map.quantile = false;
	map.splitters = 0;
	map.splitter_count = 0;
	map.tree = 0;
	map.tree_levels = 0;
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

	if (map->quantile)
		return gs_quantile_bucket(map->splitters, map->splitter_count, key);
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

/* ------------------------------------------------------------------------
 * Quantile intervals (gpusort.approximate_mode = quantile)
 *
 * Equal-width intervals hold few rows each only where the keys are spread
 * evenly; on skewed keys most rows fall into a few of them. The quantile
 * mode cuts where the keys themselves are: a sample of s keys is drawn
 * (positions from a seeded hash, so the CPU engine and the GPU draw the
 * same sample and compute the same intervals, bit for bit), sorted, and
 * the m - 1 keys at sample positions floor(j * s / m), j = 1 .. m - 1, are
 * the splitters t_1 <= ... <= t_(m-1). A key goes to bucket
 *     2 i + (t_(i+1) == key),  i = #{ j : t_j < key },
 * so there are 2m - 1 buckets: the even ones hold the keys strictly
 * between two splitters, the odd ones the keys equal to a splitter (a key
 * that fills many sample places, as Zipf's head does, gets a bucket of its
 * own, where its rows are all tied). Buckets come out in order.
 *
 * The guarantee, in ranks. Rows in earlier buckets have smaller keys, rows
 * in later ones larger keys, so a row's output position lies in its
 * bucket's slice and so does its exact rank (any position its key's ties
 * could take): the distance from the exact rank is below the bucket's row
 * count, and 0 in an equality bucket. An even bucket holds the rows of an
 * open key range with at most g = ceil(s / m) sample keys in it (they lie
 * between two splitter positions). Its rows are consecutive in sorted
 * order, so if it held L rows, some window of L consecutive rows of the
 * sorted input (n - L + 1 of them, fixed by the data, not the sample)
 * would have caught at most g of the s draws, each falling in it with
 * probability L / n. With mu = s L / n and a = ln(n / eps), Chernoff's
 * bound P(X <= (1 - delta) mu) <= exp(-delta^2 mu / 2) with
 * (1 - delta) mu = g gives probability <= eps / n per window when
 *     mu = ((sqrt(2a) + sqrt(2a + 4g)) / 2)^2,
 * and eps over all windows. So, with probability >= 1 - eps over the
 * seed, every row's output position is within
 *     D(n, m, s) = ceil(mu * n / s) - 1     (at most n - 1)
 * of its exact rank; about (1 + sqrt(2a / g))^2 * n / m. With a limit k,
 * the rows returned include every row of exact rank below k - D.
 * ------------------------------------------------------------------------ */

/* Draws per interval, and the cap on the sample (host memory and the time
 * to sort it: the sample should cost little beside the n keys). */
#define GS_QUANTILE_OVERSAMPLE 256
#define GS_QUANTILE_MAX_SAMPLE (UINT32_C(1) << 24)
/* The probability that the rank bound fails, over the sample's seed. */
#define GS_QUANTILE_FAILURE 1e-6
/* The most intervals the quantile mode takes: 2m - 1 buckets stay within
 * the equal widths' 2^26. */
#define GS_QUANTILE_MAX_INTERVALS (UINT32_C(1) << 25)
/* The seed when the caller gives none. */
#define GS_QUANTILE_DEFAULT_SEED UINT64_C(0x5eed0f9e05e7)

/* The sample size for n keys cut into m intervals: GS_QUANTILE_OVERSAMPLE
 * per interval, but at most n / 4 (beyond that the sample costs as much as
 * the sort it avoids), at least m, and at most GS_QUANTILE_MAX_SAMPLE. */
INTERVAL_MAP_FN uint32_t
gs_quantile_sample_size(uint64_t n, uint32_t intervals)
{
	uint64_t	size = (uint64_t) intervals * GS_QUANTILE_OVERSAMPLE;

	if (size > n / 4)
		size = n / 4;
	if (size < intervals)
		size = intervals;
	if (size > GS_QUANTILE_MAX_SAMPLE)
		size = GS_QUANTILE_MAX_SAMPLE;
	if (size < 1)
		size = 1;
	return (uint32_t) size;
}

/* Position (< n) of sample draw number `draw`: splitmix64 of the seed and
 * the draw; the modulo's bias is below n / 2^64. */
INTERVAL_MAP_FN uint32_t
gs_quantile_sample_position(uint64_t seed, uint32_t draw, uint64_t n)
{
	uint64_t	z = seed + ((uint64_t) draw + 1) * UINT64_C(0x9E3779B97F4A7C15);

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	z ^= z >> 31;
	return (uint32_t) (z % n);
}

/* Sample position of splitter j (1 .. m - 1) in the sorted sample. */
INTERVAL_MAP_FN uint32_t
gs_quantile_splitter_position(uint32_t j, uint32_t sample_size, uint32_t intervals)
{
	return (uint32_t) (((uint64_t) j * sample_size) / intervals);
}

/* The number of buckets the quantile mode makes of m intervals. */
INTERVAL_MAP_FN uint32_t
gs_quantile_buckets(uint32_t intervals)
{
	return 2 * intervals - 1;
}

/* The map of the quantile mode over `count` sorted splitters (m - 1 of
 * them for m intervals); min_key and range are left 0. */
INTERVAL_MAP_FN gs_interval_map
gs_interval_map_quantile(const uint64_t *splitters, uint32_t count)
{
	gs_interval_map map;

	map.min_key = 0;
	map.range = 0;
	map.intervals = 2 * count + 1;
	map.narrow = false;
	map.range32 = false;		/* never the width formula's fast path */
	map.scale = 0;
	map.quantile = true;
	map.splitters = splitters;
	map.splitter_count = count;
	map.tree = 0;
	map.tree_levels = 0;
	return map;
}

/* A key's bucket among the sorted splitters (see above). */
INTERVAL_MAP_FN uint32_t
gs_quantile_bucket(const uint64_t *splitters, uint32_t count, uint64_t key)
{
	uint32_t	low = 0,
				high = count;

	while (low < high)
	{
		uint32_t	middle = low + (high - low) / 2;

		if (splitters[middle] < key)
			low = middle + 1;
		else
			high = middle;
	}
	return 2 * low + (low < count && splitters[low] == key);
}

/*
 * The splitters as a perfect binary search tree in breadth-first
 * ("Eytzinger") order, for the GPU: node k (1 .. 2^levels - 1) has its
 * children at 2k and 2k + 1, so the top levels are a few consecutive
 * words every lane of a warp reads (shared memory without bank conflicts),
 * and the search has no branches: `levels` steps k = 2k + (node < key),
 * the same number for every key. After them, k - 2^levels is the number
 * of nodes below the key, i.e. of splitters below it, since the nodes past
 * the last splitter hold UINT64_MAX (never below a key). The last node
 * where the search went left is the first splitter >= key: the equality
 * test needs no second look-up. The same bucket as gs_quantile_bucket,
 * key for key (the unit tests compare them).
 */

/* The tree's height for `count` splitters: the least h with 2^h - 1 >= count. */
INTERVAL_MAP_FN uint32_t
gs_quantile_tree_levels(uint32_t count)
{
	uint32_t	levels = 0;

	while ((((uint64_t) 1) << levels) - 1 < count)
		levels++;
	return levels;
}

/* Node k (1 .. 2^levels - 1) of the tree: at depth d, place p = k - 2^d in
 * its level, it is the splitter of sorted index (2p + 1) 2^(levels-1-d) - 1. */
INTERVAL_MAP_FN uint64_t
gs_quantile_tree_node(const uint64_t *splitters, uint32_t count, uint32_t levels, uint32_t k)
{
	uint32_t	depth = 0;
	uint64_t	sorted_index;

	while ((k >> (depth + 1)) != 0)
		depth++;
	sorted_index = ((2 * (uint64_t) (k - (1u << depth)) + 1) << (levels - 1 - depth)) - 1;
	return sorted_index < count ? splitters[sorted_index] : UINT64_MAX;
}

/* A key's bucket by the tree (node 0 unused): gs_quantile_bucket's. */
INTERVAL_MAP_FN uint32_t
gs_quantile_tree_bucket(const uint64_t *tree, uint32_t levels, uint32_t count, uint64_t key)
{
	uint32_t	k = 1;
	uint64_t	first_not_below = UINT64_MAX;
	uint32_t	below;

	for (uint32_t level = 0; level < levels; level++)
	{
		uint64_t	node = tree[k];
		bool		right = node < key;

		first_not_below = right ? first_not_below : node;
		k = 2 * k + (right ? 1 : 0);
	}
	below = k - (1u << levels);
	return 2 * below + (below < count && first_not_below == key);
}

/*
 * D(n, m, s): the distance from the exact rank that every row's position
 * stays within, with probability >= 1 - GS_QUANTILE_FAILURE (derivation
 * above). Host only (libm).
 */
static inline uint64_t
gs_quantile_rank_bound(uint64_t n, uint32_t intervals, uint32_t sample_size)
{
	double		a,
				g,
				root,
				mu,
				rows;

	if (n <= 1)
		return 0;
	a = log((double) n / GS_QUANTILE_FAILURE);
	g = ceil((double) sample_size / (double) intervals);
	root = (sqrt(2.0 * a) + sqrt(2.0 * a + 4.0 * g)) / 2.0;
	mu = root * root;
	rows = ceil(mu * (double) n / (double) sample_size);
	if (rows - 1.0 >= (double) (n - 1))
		return n - 1;
	return (uint64_t) rows - 1;
}

#endif							/* GPUSORT_INTERVAL_MAP_H */
