/*
 * test_engine.c — unit tests of the engine with plain cc: no PostgreSQL, and
 * no GPU needed (built without CUDA the engine has no GPU backend and
 * answers "unavailable"; built with CUDA the kernels are its backend, and
 * on a GPU machine the same tests also drive the GPU).
 *
 * Every sort test checks that the output is ordered AND that it is a
 * permutation of the input, and that every exact algorithm returns exactly
 * what the radix sort (stable, the reference) returns.
 *
 * Prints one line per failed case, and a last line "N passed, M failed".
 */
#include "../../engine/gpusort_engine.h"
#include "../../engine/sort_backend.h"
#if GPUSORT_WITH_CUDA
#include "../../kernels/gpu_api.h"
#endif
#include "../../service/verify.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int	passed;
static int	failed;

#define CHECK(condition, ...) \
	do { \
		if (condition) \
			passed++; \
		else \
		{ \
			failed++; \
			printf("FAILED %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
	} while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t
next_random(void)
{
	uint64_t	x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

typedef enum distribution
{
	DIST_RANDOM,
	DIST_SORTED,
	DIST_REVERSE,
	DIST_ALL_EQUAL,
	DIST_FEW_DISTINCT,
	DIST_EXTREMES,				/* INT_MIN / INT_MAX / 0 / -1 mixed */
	DIST_COUNT
} distribution;

static const char *const distribution_names[DIST_COUNT] = {
	"random", "sorted", "reverse", "all-equal", "few-distinct", "extremes"
};

/* Keys as the SQL layer makes them: int4 values encoded to unsigned. */
static void
fill_keys(void *keys, unsigned key_bytes, size_t n, distribution dist)
{
	for (size_t i = 0; i < n; i++)
	{
		int64_t		value;
		uint64_t	key;

		switch (dist)
		{
			case DIST_SORTED:
				value = (int64_t) i - (int64_t) n / 2;
				break;
			case DIST_REVERSE:
				value = (int64_t) n - (int64_t) i;
				break;
			case DIST_ALL_EQUAL:
				value = 42;
				break;
			case DIST_FEW_DISTINCT:
				value = (int64_t) (next_random() % 5) - 2;
				break;
			case DIST_EXTREMES:
				{
					static const int64_t extremes[] = {INT32_MIN, INT32_MAX, 0, -1, 1};

					value = extremes[next_random() % 5];
					if (key_bytes == 8 && (next_random() & 1))
						value = (next_random() & 1) ? INT64_MIN : INT64_MAX;
					break;
				}
			default:
				value = key_bytes == 4 ? (int64_t) (int32_t) next_random()
					: (int64_t) next_random();
				break;
		}
		key = gs_encode_int64(value);
		if (key_bytes == 4)
			((uint32_t *) keys)[i] = (uint32_t) (int32_t) value ^ UINT32_C(0x80000000);
		else
			((uint64_t *) keys)[i] = key;
	}
}

static const size_t sizes[] = {
	0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65,
	127, 128, 129, 255, 256, 257, 1023, 1024, 1025, 4093, 4096, 4097,
	65535, 65536, 65537, 100003
};

static gs_status
sort_with(gs_algorithm algorithm, gs_device device, void *keys,
		  unsigned key_bytes, uint32_t *row_index, size_t n, gs_sort_report *report)
{
	gs_sort_request request;

	gs_sort_request_init(&request);
	gs_sort_request_set_keys(&request, keys, n, key_bytes, key_bytes * 8, row_index);
	request.algorithm = algorithm;
	request.device = device;
	return gs_sort(&request, report);
}

/* Each exact algorithm, each width, with and without the index, each size
 * and distribution: sorted, a permutation, and identical to radix. */
static void
test_exact_sorts(gs_device device)
{
	static const gs_algorithm algorithms[] = {GS_ALGO_BITONIC, GS_ALGO_BUTTERFLY, GS_ALGO_RADIX, GS_ALGO_AUTO};

	for (unsigned key_bytes = 4; key_bytes <= 8; key_bytes += 4)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
			for (int dist = 0; dist < DIST_COUNT; dist++)
			{
				size_t		n = sizes[s];
				size_t		bytes = n * key_bytes + 8;
				void	   *input = malloc(bytes);
				void	   *reference = malloc(bytes);
				uint32_t   *reference_index = malloc(n * sizeof(uint32_t) + 4);
				gs_sort_report report;

				fill_keys(input, key_bytes, n, (distribution) dist);
				memcpy(reference, input, n * key_bytes);
				CHECK(sort_with(GS_ALGO_RADIX, GS_DEVICE_CPU, reference, key_bytes,
								reference_index, n, &report) == GS_OK,
					  "reference sort n=%zu", n);

				for (size_t a = 0; a < sizeof(algorithms) / sizeof(algorithms[0]); a++)
					for (int with_index = 0; with_index <= 1; with_index++)
					{
						void	   *keys = malloc(bytes);
						uint32_t   *index = with_index ? malloc(n * sizeof(uint32_t) + 4) : NULL;
						gs_status	status;
						const char *what = gs_algorithm_name(algorithms[a]);

						memcpy(keys, input, n * key_bytes);
						status = sort_with(algorithms[a], device, keys, key_bytes, index, n, &report);
						CHECK(status == GS_OK, "%s %s n=%zu %s: status %s (%s)", what,
							  gs_device_name(device), n, distribution_names[dist],
							  gs_status_name(status), report.gpu_message);
						if (status != GS_OK)
						{
							free(keys);
							free(index);
							continue;
						}
						CHECK(gs_check_sorted(keys, key_bytes, index, n),
							  "%s bytes=%u n=%zu %s index=%d: not sorted", what,
							  key_bytes, n, distribution_names[dist], with_index);
						CHECK(gs_check_permutation(input, keys, key_bytes, n),
							  "%s bytes=%u n=%zu %s index=%d: not a permutation", what,
							  key_bytes, n, distribution_names[dist], with_index);
						if (index != NULL)
						{
							CHECK(gs_check_row_permutation(input, keys, index, key_bytes, n),
								  "%s bytes=%u n=%zu %s: index is not the permutation",
								  what, key_bytes, n, distribution_names[dist]);
							CHECK(memcmp(index, reference_index, n * sizeof(uint32_t)) == 0,
								  "%s bytes=%u n=%zu %s: permutation differs from radix",
								  what, key_bytes, n, distribution_names[dist]);
						}
						CHECK(memcmp(keys, reference, n * key_bytes) == 0,
							  "%s bytes=%u n=%zu %s: keys differ from radix", what,
							  key_bytes, n, distribution_names[dist]);
						free(keys);
						free(index);
					}
				free(input);
				free(reference);
				free(reference_index);
			}
}

/* Fewer significant bits than the key width (as the key layout produces):
 * radix skips digits, and must still sort. */
static void
test_narrow_keys(void)
{
	for (unsigned bits = 1; bits <= 64; bits += 7)
	{
		size_t		n = 5000;
		uint64_t   *keys = malloc(n * 8);
		uint64_t   *input = malloc(n * 8);
		uint32_t   *index = malloc(n * 4);
		gs_sort_request request;
		gs_sort_report report;

		for (size_t i = 0; i < n; i++)
			input[i] = keys[i] = bits == 64 ? next_random() : next_random() & ((UINT64_C(1) << bits) - 1);
		gs_sort_request_init(&request);
		gs_sort_request_set_keys(&request, keys, n, 8, bits, index);
		request.algorithm = GS_ALGO_RADIX;
		request.device = GS_DEVICE_CPU;
		CHECK(gs_sort(&request, &report) == GS_OK, "narrow sort");
		CHECK(gs_check_sorted(keys, 8, index, n) &&
			  gs_check_row_permutation(input, keys, index, 8, n),
			  "radix with %u significant bits", bits);
		free(keys);
		free(input);
		free(index);
	}
}

/* floor(offset * intervals / (range + 1)) the slow, obvious way. */
static uint32_t
reference_interval(uint64_t min_key, uint64_t max_key, uint32_t intervals, uint64_t key)
{
	unsigned __int128 offset = key - min_key;
	unsigned __int128 range = (unsigned __int128) (max_key - min_key) + 1;

	return (uint32_t) ((offset * intervals) / range);
}

static void
test_interval_map(void)
{
	int			mismatches = 0,
				scale_mismatches = 0;

	for (int trial = 0; trial < 200000; trial++)
	{
		uint64_t	a = next_random(),
					b = next_random();
		uint32_t	intervals;
		uint64_t	key;
		gs_interval_map map;

		switch (trial % 5)
		{
			case 4:
				/* ranges below 2^32 (the 64-bit shortcut), up to its edge */
				b = a + (trial % 3 == 0 ? 0xffffffffu : next_random() >> 32);
				if (b < a)
					b = a;
				break;
			case 0:
				a = 0;
				b = UINT64_MAX;
				break;
			case 1:
				b = a + next_random() % 1000;
				if (b < a)
					b = a;
				break;
			case 2:
				b = a + (next_random() >> 20);
				if (b < a)
					b = UINT64_MAX;
				break;
			default:
				if (b < a)
				{
					uint64_t	t = a;

					a = b;
					b = t;
				}
		}
		intervals = 1 + (uint32_t) (next_random() % ((trial & 8) ? 10 : 100000));
		if (trial % 13 == 0)
			intervals = 1 + (uint32_t) (next_random() % (1u << 26));
		map = gs_interval_map_make(a, b, intervals);
		key = a + (b - a == UINT64_MAX ? next_random() : next_random() % (b - a + 1));
		if (trial % 7 == 0)
			key = b;
		if (trial % 11 == 0)
			key = a;
		if (gs_approx_interval(&map, key) != reference_interval(a, b, intervals, key))
			mismatches++;
		/* the 64-bit way of making the scale gives the 128-bit floor */
		if (!map.narrow &&
			map.scale != (uint64_t) ((((unsigned __int128) intervals) << 64) /
									 ((unsigned __int128) (b - a) + 1)))
			scale_mismatches++;
	}
	CHECK(mismatches == 0, "interval map disagrees with exact division %d times", mismatches);
	CHECK(scale_mismatches == 0, "interval map scale differs from the 128-bit floor %d times",
		  scale_mismatches);
}

/* The approximate sort's guarantee, checked on the output: intervals never
 * decrease, every element is in its interval, and any inverted pair differs
 * by less than one interval width. With a limit: the first valid outputs are
 * exactly the elements of the intervals up to the cut. */
static void
test_approx_sort(void)
{
	static const uint32_t interval_counts[] = {1, 2, 3, 10, 1000, 10000, 1u << 20};

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int dist = 0; dist < DIST_COUNT; dist++)
			for (size_t c = 0; c < sizeof(interval_counts) / sizeof(interval_counts[0]); c++)
				for (int limited = 0; limited <= 1; limited++)
				{
					size_t		n = sizes[s];
					uint64_t   *input = malloc(n * 8 + 8);
					uint64_t   *keys = malloc(n * 8 + 8);
					uint32_t   *index = malloc(n * 4 + 4);
					gs_sort_request request;
					gs_sort_report report;
					gs_status	status;
					size_t		valid;
					uint64_t	running_max = 0;
					bool		ordered = true,
								within = true,
								rows_match = true;

					fill_keys(input, 8, n, (distribution) dist);
					memcpy(keys, input, n * 8);
					gs_sort_request_init(&request);
					gs_sort_request_set_keys(&request, keys, n, 8, 64, index);
					request.algorithm = GS_ALGO_APPROX;
					request.device = GS_DEVICE_CPU;
					request.intervals = interval_counts[c];
					request.limit = limited ? n / 3 + 1 : 0;
					status = gs_sort(&request, &report);
					CHECK(status == GS_OK, "approx n=%zu", n);
					if (status != GS_OK)
						goto next;
					valid = report.valid_outputs;
					CHECK(limited ? (valid >= (n < request.limit ? n : request.limit) && valid <= n)
						  : valid == n, "approx valid outputs %zu of %zu", valid, n);
					for (size_t i = 0; i < valid; i++)
					{
						if (i > 0 && gs_approx_interval(&report.interval_map, keys[i - 1]) >
							gs_approx_interval(&report.interval_map, keys[i]))
							ordered = false;
						/* exact: difference * intervals < range + 1 */
						if (i > 0 && keys[i] < running_max &&
							(unsigned __int128) (running_max - keys[i]) * report.interval_map.intervals >=
							(unsigned __int128) report.interval_map.range + 1)
							within = false;
						if (i == 0 || keys[i] > running_max)
							running_max = keys[i];
						if (index[i] >= n || input[index[i]] != keys[i])
							rows_match = false;
					}
					CHECK(ordered, "approx n=%zu %s K=%u: intervals out of order", n,
						  distribution_names[dist], interval_counts[c]);
					CHECK(within, "approx n=%zu %s K=%u: inversion wider than an interval",
						  n, distribution_names[dist], interval_counts[c]);
					CHECK(rows_match, "approx n=%zu: index does not match keys", n);
					if (!limited)
						CHECK(gs_check_permutation(input, keys, 8, n) &&
							  gs_check_row_permutation(input, keys, index, 8, n),
							  "approx n=%zu %s: not a permutation", n, distribution_names[dist]);
					else if (valid > 0)
					{
						/* exactly the elements of the intervals up to the cut */
						uint32_t	cut = gs_approx_interval(&report.interval_map, keys[valid - 1]);
						size_t		expected = 0;

						for (size_t i = 0; i < n; i++)
							expected += gs_approx_interval(&report.interval_map, input[i]) <= cut;
						CHECK(expected == valid, "approx limit: %zu rows up to the cut, %zu returned",
							  expected, valid);
					}
			next:
					free(input);
					free(keys);
					free(index);
				}
}

/* ---- the quantile mode's search tree (the GPU's) against the binary search ---- */

static int
compare_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}



/*
 * gs_quantile_tree_bucket must give gs_quantile_bucket's bucket for every
 * key: splitter counts 0 .. 300 (every tree height, full and padded) and a
 * few larger, splitters with many ties, 0 and UINT64_MAX among them; keys
 * at, just below and just above every splitter, and random ones.
 */
static void
test_quantile_tree(void)
{
	static const uint32_t larger[] = {1023, 1024, 2047, 4095, 9999};
	uint64_t   *splitters = malloc(sizeof(uint64_t) * 10000);
	uint64_t   *tree = malloc(sizeof(uint64_t) * 16384);
	size_t		mismatches = 0,
				keys_tried = 0;

	for (uint32_t round = 0; round < 301 + 5; round++)
	{
		uint32_t	count = round < 301 ? round : larger[round - 301];
		uint64_t	spread = round % 3 == 0 ? 8 : (round % 3 == 1 ? 1000 : UINT64_MAX);
		uint32_t	levels = gs_quantile_tree_levels(count);

		for (uint32_t j = 0; j < count; j++)
			splitters[j] = spread == UINT64_MAX ? next_random() : next_random() % spread;
		if (count > 2 && round % 2 == 0)
		{
			splitters[0] = 0;
			splitters[1] = UINT64_MAX;
		}
		qsort(splitters, count, sizeof(uint64_t), compare_u64);
		CHECK((((uint64_t) 1) << levels) - 1 >= count &&
			  (levels == 0 || (((uint64_t) 1) << (levels - 1)) - 1 < count),
			  "tree levels %u for %u splitters", levels, count);
		for (uint32_t k = 1; k < (1u << levels); k++)
			tree[k] = gs_quantile_tree_node(splitters, count, levels, k);
		for (uint32_t j = 0; j < count + 50; j++)
		{
			uint64_t	base = j < count ? splitters[j] : next_random() % (spread == UINT64_MAX ? UINT64_MAX : spread + 2);

			for (int delta = -1; delta <= 1; delta++)
			{
				uint64_t	key = base + (uint64_t) (int64_t) delta;

				keys_tried++;
				if (gs_quantile_tree_bucket(tree, levels, count, key) !=
					gs_quantile_bucket(splitters, count, key))
					mismatches++;
			}
		}
	}
	CHECK(mismatches == 0, "the splitter tree disagrees with the binary search on %zu of %zu keys",
		  mismatches, keys_tried);
	CHECK(keys_tried > 10000, "the tree test tried only %zu keys", keys_tried);
	free(splitters);
	free(tree);
}

/* ---- the quantile mode's rank guarantee ---- */

typedef enum skew
{
	SKEW_UNIFORM,
	SKEW_ZIPF_11,				/* Zipf, s = 1.1, over 10^6 values */
	SKEW_ZIPF_15,				/* Zipf, s = 1.5 */
	SKEW_CLUSTERED,				/* a few tight clusters far apart */
	SKEW_SORTED_NOISE,			/* ascending, 1% of keys random */
	SKEW_ALL_EQUAL,
	SKEW_FEW_DISTINCT,
	SKEW_COUNT
} skew;

static const char *const skew_names[SKEW_COUNT] = {
	"uniform", "zipf-1.1", "zipf-1.5", "clustered", "sorted-noise", "all-equal", "few-distinct"
};

static double
uniform01(void)
{
	return (double) (next_random() >> 11) / 9007199254740992.0;
}

/* A Zipf value 1 .. max of exponent s, by inverting the continuous
 * distribution's CDF (close enough for a skewed test input). */
static uint64_t
zipf_value(double s, double max)
{
	double		u = uniform01();
	double		one_minus = 1.0 - s;
	double		top = pow(max + 1.0, one_minus) - 1.0;

	return (uint64_t) floor(pow(1.0 + u * top, 1.0 / one_minus));
}

/* int8 values of the distribution, encoded as the SQL layer encodes them. */
static void
fill_skewed(uint64_t *keys, size_t n, skew kind)
{
	for (size_t i = 0; i < n; i++)
	{
		int64_t		value = 0;

		switch (kind)
		{
			case SKEW_UNIFORM:
				value = (int64_t) (next_random() >> 1);
				break;
			case SKEW_ZIPF_11:
				value = (int64_t) zipf_value(1.1, 1e6);
				break;
			case SKEW_ZIPF_15:
				value = (int64_t) zipf_value(1.5, 1e6);
				break;
			case SKEW_CLUSTERED:
				value = (int64_t) (next_random() % 5) * ((int64_t) 1 << 50) +
					(int64_t) (next_random() % 1000);
				break;
			case SKEW_SORTED_NOISE:
				value = next_random() % 100 == 0 ? (int64_t) (next_random() % (n + 1)) : (int64_t) i;
				break;
			case SKEW_ALL_EQUAL:
				value = 42;
				break;
			case SKEW_FEW_DISTINCT:
				value = (int64_t) (next_random() % 3) - 1;
				break;
			case SKEW_COUNT:
				break;
		}
		keys[i] = gs_encode_int64(value);
	}
}

/*
 * The largest distance between an output position and the exact rank of
 * its key: the nearest position its key's ties occupy in sorted order
 * (`sorted`, the input sorted). Rows past `count` are not looked at.
 */
static uint64_t
max_rank_error(const uint64_t *sorted, size_t n, const uint64_t *out, size_t count)
{
	uint64_t	worst = 0;

	for (size_t p = 0; p < count; p++)
	{
		size_t		low = 0,
					high = n;
		size_t		first,
					last;

		while (low < high)		/* first position of the key */
		{
			size_t		middle = low + (high - low) / 2;

			if (sorted[middle] < out[p])
				low = middle + 1;
			else
				high = middle;
		}
		first = low;
		high = n;
		while (low < high)		/* one past its last */
		{
			size_t		middle = low + (high - low) / 2;

			if (sorted[middle] <= out[p])
				low = middle + 1;
			else
				high = middle;
		}
		last = low - 1;
		if (first > p && first - p > worst)
			worst = first - p;
		if (p > last && p - last > worst)
			worst = p - last;
	}
	return worst;
}

/*
 * The quantile mode's guarantee, checked on the output: every output's
 * position within gs_quantile_rank_bound() of its exact rank, the output a
 * permutation of the input (or with a limit the rows returned include all
 * rows of exact rank below limit - bound), the index matching the keys;
 * over skewed distributions, sizes below and above the interval count,
 * both key widths and several seeds. The equal widths are measured beside
 * on the Zipf keys: they break the same bound, so the check can fail. On
 * the GPU (--gpu), the same checks, and the same buckets as the CPU's: the
 * fullest bucket and a limit's cut agree.
 */
static void
test_quantile_sort(gs_device device)
{
	static const size_t ns[] = {0, 1, 2, 5, 100, 1000, 30000, 200000};
	static const uint32_t interval_counts[] = {1, 2, 7, 100, 1000, 4096};
	static const uint64_t seeds[] = {0, 1, 0xdeadbeef};
	int			width_violations = 0;

	for (size_t s = 0; s < sizeof(ns) / sizeof(ns[0]); s++)
		for (int kind = 0; kind < SKEW_COUNT; kind++)
			for (size_t c = 0; c < sizeof(interval_counts) / sizeof(interval_counts[0]); c++)
			{
				size_t		n = ns[s];
				uint64_t   *input = malloc(n * 8 + 8);
				uint64_t   *sorted = malloc(n * 8 + 8);
				uint64_t   *keys = malloc(n * 8 + 8);
				uint32_t   *narrow = malloc(n * 4 + 4);
				uint32_t   *index = malloc(n * 4 + 4);

				fill_skewed(input, n, (skew) kind);
				memcpy(sorted, input, n * 8);
				qsort(sorted, n, 8, compare_u64);
				for (size_t t = 0; t < sizeof(seeds) / sizeof(seeds[0]); t++)
					for (int variant = 0; variant < 3; variant++)
					{
						/* 0: 64-bit keys; 1: 32-bit keys (the high words dropped,
						 * as a narrow key layout does); 2: 64-bit with a limit */
						bool		wide = variant != 1;
						size_t		limit = variant == 2 ? n / 10 + 1 : 0;
						gs_sort_request request;
						gs_sort_report report;
						gs_status	status;
						uint64_t	bound,
									error;
						bool		rows_match = true;

						if (!wide)
							for (size_t i = 0; i < n; i++)
								narrow[i] = (uint32_t) (input[i] >> 32);
						memcpy(keys, input, n * 8);
						gs_sort_request_init(&request);
						gs_sort_request_set_keys(&request, wide ? (void *) keys : (void *) narrow,
												 n, wide ? 8 : 4, wide ? 64 : 32, index);
						request.algorithm = GS_ALGO_APPROX;
						request.approx_mode = GS_APPROX_QUANTILE;
						request.approx_seed = seeds[t];
						request.device = device;
						request.gpu_min_elements = 0;
						request.intervals = interval_counts[c];
						request.limit = limit;
						status = gs_sort(&request, &report);
						CHECK(status == GS_OK, "quantile n=%zu %s", n, skew_names[kind]);
						if (status != GS_OK)
							continue;
						if (device == GS_DEVICE_GPU && n > 0)
						{
							/* the CPU's buckets, on a copy of the input */
							gs_sort_request cpu_request = request;
							gs_sort_report cpu_report;
							void	   *copy = malloc(n * 8);
							uint32_t   *copy_index = malloc(n * 4);

							for (size_t i = 0; i < n; i++)
							{
								if (wide)
									((uint64_t *) copy)[i] = input[i];
								else
									((uint32_t *) copy)[i] = (uint32_t) (input[i] >> 32);
							}
							cpu_request.device = GS_DEVICE_CPU;
							cpu_request.keys = copy;
							cpu_request.row_index = copy_index;
							CHECK(gs_sort(&cpu_request, &cpu_report) == GS_OK &&
								  cpu_report.largest_interval == report.largest_interval &&
								  cpu_report.valid_outputs == report.valid_outputs &&
								  report.ran_on == GS_DEVICE_GPU,
								  "quantile n=%zu %s m=%u: the GPU's buckets (largest %zu, %zu "
								  "outputs) differ from the CPU's (%zu, %zu)", n, skew_names[kind],
								  request.intervals, report.largest_interval, report.valid_outputs,
								  cpu_report.largest_interval, cpu_report.valid_outputs);
							free(copy);
							free(copy_index);
						}
						bound = gs_quantile_rank_bound(n, request.intervals,
													   (uint32_t) report.sample_size);
						CHECK(report.rank_bound == bound, "quantile: the report's bound %" PRIu64 ", not %" PRIu64, report.rank_bound, bound);
						if (!wide)
						{
							/* the ranks among the 32-bit keys themselves */
							uint64_t   *high_sorted = malloc(n * 8 + 8);

							for (size_t i = 0; i < n; i++)
							{
								keys[i] = narrow[i];
								high_sorted[i] = input[i] >> 32;
								if (index[i] >= n || (uint32_t) (input[index[i]] >> 32) != narrow[i])
									rows_match = false;
							}
							qsort(high_sorted, n, 8, compare_u64);
							error = max_rank_error(high_sorted, n, keys, report.valid_outputs);
							free(high_sorted);
						}
						else
						{
							for (size_t i = 0; i < report.valid_outputs; i++)
								if (index[i] >= n || input[index[i]] != keys[i])
									rows_match = false;
							error = max_rank_error(sorted, n, keys, report.valid_outputs);
						}
						CHECK(error <= bound,
							  "quantile n=%zu %s m=%u seed %" PRIu64 " %s: rank error %" PRIu64
							  " over the bound %" PRIu64, n, skew_names[kind], request.intervals,
							  seeds[t], wide ? "64-bit" : "32-bit", error, bound);
						CHECK(rows_match, "quantile n=%zu %s: index does not match keys", n,
							  skew_names[kind]);
						CHECK(report.sample_size == (n == 0 || request.intervals < 2 ? 0 :
													 gs_quantile_sample_size(n, request.intervals)),
							  "quantile: sample size %zu", report.sample_size);
						CHECK(report.largest_interval <= n && (n == 0 || report.largest_interval > 0),
							  "quantile: largest interval %zu of %zu", report.largest_interval, n);
						if (limit == 0)
							CHECK(report.valid_outputs == n &&
								  (wide ? gs_check_permutation(input, keys, 8, n) &&
								   gs_check_row_permutation(input, keys, index, 8, n) : true),
								  "quantile n=%zu %s: not a permutation", n, skew_names[kind]);
						else
						{
							/* the exact top limit - bound are all among those returned:
							 * the returned keys' multiset covers sorted[0 .. limit - bound) */
							size_t		wanted = limit < n ? limit : n;
							size_t		sure = wanted > bound ? wanted - bound : 0;
							uint64_t   *returned = malloc(report.valid_outputs * 8 + 8);
							size_t		covered = 0;

							CHECK(report.valid_outputs >= (n < limit ? n : limit) &&
								  report.valid_outputs <= n,
								  "quantile limit: %zu outputs for %zu", report.valid_outputs, limit);
							memcpy(returned, keys, report.valid_outputs * 8);
							qsort(returned, report.valid_outputs, 8, compare_u64);
							for (size_t i = 0; i < report.valid_outputs && covered < sure; i++)
								if (returned[i] == sorted[covered])
									covered++;
							CHECK(covered == sure, "quantile limit %zu on %s: %zu of the exact top %zu",
								  limit, skew_names[kind], covered, sure);
							free(returned);
						}
						/* the equal widths on the same keys, for contrast */
						if (wide && limit == 0 && t == 0 && n >= 30000 && request.intervals >= 100 &&
							device == GS_DEVICE_CPU)
						{
							memcpy(keys, input, n * 8);
							request.approx_mode = GS_APPROX_WIDTH;
							request.keys = keys;
							if (gs_sort(&request, &report) == GS_OK &&
								max_rank_error(sorted, n, keys, n) > bound)
								width_violations++;
						}
					}
				free(input);
				free(sorted);
				free(keys);
				free(narrow);
				free(index);
			}
	if (device != GS_DEVICE_CPU)
		return;
	/* Zipf and the clusters pile most rows into a few equal-width intervals */
	CHECK(width_violations > 0, "the equal widths never broke the quantile bound: the check "
		  "cannot tell");

	/* the bound itself: at least n / m, at most n - 1, falling with the sample */
	CHECK(gs_quantile_rank_bound(1000000, 1000, 256000) >= 1000 &&
		  gs_quantile_rank_bound(1000000, 1000, 256000) < gs_quantile_rank_bound(1000000, 1000, 16000),
		  "quantile bound: %" PRIu64, gs_quantile_rank_bound(1000000, 1000, 256000));
	CHECK(gs_quantile_rank_bound(10, 1000, 1000) <= 9 && gs_quantile_rank_bound(1, 1, 1) == 0,
		  "quantile bound for tiny n");
}

/* Reference order of a row for the key layout tests: SQL semantics. */
typedef struct test_row
{
	int64_t		value[2];
	bool		null[2];
	uint32_t	id;
} test_row;

static bool layout_descending[2];
static bool layout_nulls_first[2];

static int
compare_rows_sql(const void *pa, const void *pb)
{
	const test_row *a = pa;
	const test_row *b = pb;

	for (int c = 0; c < 2; c++)
	{
		if (a->null[c] != b->null[c])
			return (a->null[c] == layout_nulls_first[c]) ? -1 : 1;
		if (!a->null[c] && a->value[c] != b->value[c])
		{
			int			order = a->value[c] < b->value[c] ? -1 : 1;

			return layout_descending[c] ? -order : order;
		}
	}
	return a->id < b->id ? -1 : a->id > b->id;
}

/* Two columns, every mix of ASC/DESC and NULLS FIRST/LAST, narrow and wide
 * ranges (one word, or up to four sorted least significant first; on the
 * GPU all of them in one job), and wide values with many ties. */
static void
test_key_layout(gs_device device)
{
	for (int mode = 0; mode < 16; mode++)
		for (int wide = 0; wide <= 3; wide++)
		{
			size_t		n = wide == 3 ? 100000 : 3000;
			test_row   *rows = malloc(n * sizeof(test_row));
			test_row   *expected = malloc(n * sizeof(test_row));
			uint32_t   *order = malloc(n * sizeof(uint32_t));
			gs_key_column columns[2];
			gs_key_layout layout;
			bool		same = true;

			layout_descending[0] = mode & 1;
			layout_nulls_first[0] = mode & 2;
			layout_descending[1] = mode & 4;
			layout_nulls_first[1] = mode & 8;
			for (int c = 0; c < 2; c++)
				gs_key_column_init(&columns[c], layout_descending[c], layout_nulls_first[c]);
			for (size_t i = 0; i < n; i++)
			{
				rows[i].id = (uint32_t) i;
				for (int c = 0; c < 2; c++)
				{
					rows[i].null[c] = next_random() % 7 == 0;
					rows[i].value[c] = wide == 3 ? (int64_t) (next_random() % 5) * INT64_C(0x3000000000000001)
						: wide == 2 ? (int64_t) next_random()
						: wide == 1 ? (int64_t) (int32_t) next_random()
						: (int64_t) (next_random() % 50) - 25;
					gs_key_column_observe(&columns[c], rows[i].null[c],
										  gs_encode_int64(rows[i].value[c]));
				}
			}
			CHECK(gs_key_layout_build(&layout, columns, 2) == GS_OK, "layout build");
			CHECK(wide >= 2 ? layout.nwords >= 2 : wide == 1 ? layout.nwords <= 2 : layout.nwords == 1,
				  "layout words %u for wide=%d", layout.nwords, wide);

			{
				uint64_t   *keys[2] = {malloc(n * 8), malloc(n * 8)};
				bool	   *nulls[2] = {malloc(n), malloc(n)};
				gs_sort_request settings;
				gs_sort_report report;

				for (size_t i = 0; i < n; i++)
					for (int c = 0; c < 2; c++)
					{
						keys[c][i] = gs_encode_int64(rows[i].value[c]);
						nulls[c][i] = rows[i].null[c];
					}
				gs_sort_request_init(&settings);
				settings.device = device;
				CHECK(gs_sort_rows(&layout, n, (const uint64_t *const *) keys,
								   (const bool *const *) nulls, &settings, order,
								   &report) == GS_OK, "gs_sort_rows");
				CHECK(report.ran_on == device && !report.fell_back,
					  "key layout on %s ran on %s", gs_device_name(device),
					  gs_device_name(report.ran_on));
				for (int c = 0; c < 2; c++)
				{
					free(keys[c]);
					free(nulls[c]);
				}
			}
			memcpy(expected, rows, n * sizeof(test_row));
			qsort(expected, n, sizeof(test_row), compare_rows_sql);
			for (size_t i = 0; i < n; i++)
				same = same && expected[i].id == order[i];
			CHECK(same, "key layout on %s, mode %d wide %d: order differs from SQL order",
				  gs_device_name(device), mode, wide);
			free(rows);
			free(expected);
			free(order);
		}
}

/* gs_sort_rows' approximate sort: NULLs set aside, and intervals over a
 * range the caller gives (a bounded sort's candidates are only part of the
 * input whose range the intervals must span). */
static void
test_approx_rows(void)
{
	uint64_t	keys[8];
	bool		nulls[8] = {false, true, false, false, false, true, false, false};
	const int64_t values[8] = {420, 0, 5, 150, 999, 0, 7, 160};
	const uint64_t *column_keys[1] = {keys};
	const bool *column_nulls[1] = {nulls};
	gs_key_column column;
	gs_key_layout layout;
	gs_sort_request settings;
	gs_sort_report report;
	uint32_t	order[8];

	gs_key_column_init(&column, false, false);
	for (int i = 0; i < 8; i++)
	{
		keys[i] = gs_encode_int64(values[i]);
		gs_key_column_observe(&column, nulls[i], keys[i]);
	}
	gs_key_layout_build(&layout, &column, 1);
	gs_sort_request_init(&settings);
	settings.device = GS_DEVICE_CPU;
	settings.algorithm = GS_ALGO_APPROX;
	settings.intervals = 10;
	CHECK(gs_sort_rows(&layout, 8, column_keys, column_nulls, &settings, order, &report) == GS_OK,
		  "approx rows");
	CHECK(report.valid_outputs == 8 && report.interval_map.range == 994,
		  "approx rows: own range 5..999 (got %llu)", (unsigned long long) report.interval_map.range);
	/* 5 and 7 share interval 0 (width 99.5): input order; NULLs last */
	CHECK(order[0] == 2 && order[1] == 6 && order[2] == 3 && order[3] == 7 && order[4] == 0 &&
		  order[5] == 4 && order[6] == 1 && order[7] == 5, "approx rows: interval order");

	/* the range of a larger input: [0, 9999], 10 intervals of 1000 */
	settings.approx_range_given = true;
	settings.approx_min_key = gs_encode_int64(0);
	settings.approx_max_key = gs_encode_int64(9999);
	settings.limit = 2;
	CHECK(gs_sort_rows(&layout, 8, column_keys, column_nulls, &settings, order, &report) == GS_OK,
		  "approx rows with a range");
	CHECK(report.interval_map.range == 9999, "the sentinels make the given range");
	/* all six values fall in interval 0, so the limit takes them all, and
	 * then the NULLs */
	CHECK(report.valid_outputs == 8, "approx rows with a range: %zu outputs", report.valid_outputs);
	CHECK(order[0] == 0 && order[1] == 2 && order[2] == 3, "approx rows with a range: input order within the interval");
}

static void
test_float8_encoding(void)
{
	const double ordered[] = {-INFINITY, -1e308, -1.5, -1e-300, -0.0, 0.0, 1e-300, 2.0, 1e308, INFINITY, NAN};
	int			n = sizeof(ordered) / sizeof(ordered[0]);

	for (int i = 0; i + 1 < n; i++)
	{
		uint64_t	a = gs_encode_float8(ordered[i]);
		uint64_t	b = gs_encode_float8(ordered[i + 1]);

		if (ordered[i] == ordered[i + 1])
			CHECK(a == b, "float8 %g and %g must encode equally", ordered[i], ordered[i + 1]);
		else
			CHECK(a < b, "float8 %g must encode below %g", ordered[i], ordered[i + 1]);
	}
	CHECK(gs_encode_float8(-NAN) == gs_encode_float8(NAN), "all NaNs are equal");
	for (int i = 0; i < n - 1; i++)
		CHECK(gs_decode_float8(gs_encode_float8(ordered[i])) == ordered[i], "float8 round trip");
}

static void
test_minmax(void)
{
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int dist = 0; dist < DIST_COUNT; dist++)
		{
			size_t		n = sizes[s];
			uint64_t   *keys = malloc(n * 8 + 8);
			uint64_t	lo = UINT64_MAX,
						hi = 0,
						got_lo,
						got_hi;
			gs_sort_request request;
			gs_sort_report report;

			fill_keys(keys, 8, n, (distribution) dist);
			for (size_t i = 0; i < n; i++)
			{
				lo = keys[i] < lo ? keys[i] : lo;
				hi = keys[i] > hi ? keys[i] : hi;
			}
			gs_sort_request_init(&request);
			request.n = n;
			request.key_bytes = 8;
			request.keys = keys;
			request.device = GS_DEVICE_CPU;
			CHECK(gs_minmax(&request, &got_lo, &got_hi, &report) == GS_OK, "minmax status");
			if (n > 0)
				CHECK(got_lo == lo && got_hi == hi, "minmax n=%zu %s", n, distribution_names[dist]);
			free(keys);
		}
}

static int	polls_until_stop;

static bool
stop_after_some_polls(void *arg)
{
	(void) arg;
	return --polls_until_stop <= 0;
}

static void
test_interruption(void)
{
	static const gs_algorithm algorithms[] = {GS_ALGO_BITONIC, GS_ALGO_BUTTERFLY, GS_ALGO_RADIX};

	for (size_t a = 0; a < 3; a++)
	{
		size_t		n = 1 << 21;
		uint32_t   *keys = malloc(n * 4);
		uint32_t   *index = malloc(n * 4);
		gs_sort_request request;
		gs_sort_report report;

		fill_keys(keys, 4, n, DIST_RANDOM);
		gs_sort_request_init(&request);
		gs_sort_request_set_keys(&request, keys, n, 4, 32, index);
		request.algorithm = algorithms[a];
		request.device = GS_DEVICE_CPU;
		request.poll = stop_after_some_polls;
		polls_until_stop = 2;
		CHECK(gs_sort(&request, &report) == GS_ERR_INTERRUPTED,
			  "%s must stop when the poll function says so", gs_algorithm_name(algorithms[a]));
		free(keys);
		free(index);
	}
}

/*
 * Rows of several words on the GPU in one job (gs_sort_rows with the CUDA
 * kernels as backend): the same order as the CPU's word-by-word passes;
 * a GPU cap too small for the job leaves AUTO to sort word by word (and
 * say why) and fails a sort that must run on the GPU; the poll function
 * stops it.
 */
static void
test_words_on_gpu(void)
{
	const size_t n = (size_t) 1 << 21;
	const int	ncolumns = 3;
	uint64_t   *keys[3];
	bool	   *nulls[3];
	gs_key_column columns[3];
	gs_key_layout layout;
	uint32_t   *cpu_order = malloc(n * sizeof(uint32_t));
	uint32_t   *gpu_order = malloc(n * sizeof(uint32_t));
	gs_sort_request settings;
	gs_sort_report report;
	gs_status	status;

	for (int c = 0; c < ncolumns; c++)
	{
		keys[c] = malloc(n * sizeof(uint64_t));
		nulls[c] = malloc(n);
		gs_key_column_init(&columns[c], c == 1, c == 2);
		for (size_t i = 0; i < n; i++)
		{
			/* column 0 full width with ties, 1 narrow, 2 full width */
			uint64_t	value = c == 0 ? (next_random() % 1000) * UINT64_C(0x0040000000000001)
				: c == 1 ? next_random() % 3 : next_random();

			nulls[c][i] = next_random() % 11 == 0;
			keys[c][i] = value;
			gs_key_column_observe(&columns[c], nulls[c][i], value);
		}
	}
	CHECK(gs_key_layout_build(&layout, columns, ncolumns) == GS_OK && layout.nwords >= 3,
		  "three wide columns take at least three words (%u)", layout.nwords);

	gs_sort_request_init(&settings);
	settings.device = GS_DEVICE_CPU;
	status = gs_sort_rows(&layout, n, (const uint64_t *const *) keys,
						  (const bool *const *) nulls, &settings, cpu_order, &report);
	CHECK(status == GS_OK, "words on the CPU: %s", gs_status_name(status));

	settings.device = GS_DEVICE_GPU;
	status = gs_sort_rows(&layout, n, (const uint64_t *const *) keys,
						  (const bool *const *) nulls, &settings, gpu_order, &report);
	CHECK(status == GS_OK && report.ran_on == GS_DEVICE_GPU && !report.fell_back,
		  "words on the GPU: %s", gs_status_name(status));
	CHECK(report.gpu_bytes >= (size_t) layout.nwords * n * sizeof(uint64_t),
		  "the GPU held every word at once (%zu bytes)", report.gpu_bytes);
	CHECK(memcmp(cpu_order, gpu_order, n * sizeof(uint32_t)) == 0,
		  "words: the GPU's order is the CPU's");

	/* a cap that holds one word's pass but not every word at once */
	settings.device = GS_DEVICE_AUTO;
	settings.gpu_memory_limit = (size_t) layout.nwords * n * sizeof(uint64_t);
	memset(gpu_order, 0, n * sizeof(uint32_t));
	status = gs_sort_rows(&layout, n, (const uint64_t *const *) keys,
						  (const bool *const *) nulls, &settings, gpu_order, &report);
	CHECK(status == GS_OK && report.fell_back && report.gpu_status == GS_ERR_GPU_OUT_OF_MEMORY,
		  "words over the cap under AUTO: %s, fell back %d, GPU %s", gs_status_name(status),
		  report.fell_back, gs_status_name(report.gpu_status));
	CHECK(memcmp(cpu_order, gpu_order, n * sizeof(uint32_t)) == 0,
		  "words over the cap: sorted word by word instead");
	settings.device = GS_DEVICE_GPU;
	status = gs_sort_rows(&layout, n, (const uint64_t *const *) keys,
						  (const bool *const *) nulls, &settings, gpu_order, &report);
	CHECK(status == GS_ERR_GPU_OUT_OF_MEMORY,
		  "words over the cap on the GPU: %s", gs_status_name(status));

	settings.gpu_memory_limit = 0;
	settings.poll = stop_after_some_polls;
	polls_until_stop = 1;
	status = gs_sort_rows(&layout, n, (const uint64_t *const *) keys,
						  (const bool *const *) nulls, &settings, gpu_order, &report);
	CHECK(status == GS_ERR_INTERRUPTED, "words on the GPU, stopped: %s",
		  gs_status_name(status));

	for (int c = 0; c < ncolumns; c++)
	{
		free(keys[c]);
		free(nulls[c]);
	}
	free(cpu_order);
	free(gpu_order);
}

static void
test_devices_and_errors(void)
{
	gs_gpu_info info;
	uint32_t	keys[4] = {3, 1, 2, 0};
	gs_sort_report report;
	gs_sort_request request;

	gs_gpu_info_get(&info);
	if (!info.usable)
	{
		CHECK(sort_with(GS_ALGO_RADIX, GS_DEVICE_GPU, keys, 4, NULL, 4, &report) ==
			  GS_ERR_GPU_UNAVAILABLE, "device=gpu without a GPU must fail");
		CHECK(report.gpu_message[0] != '\0', "and say why");
		CHECK(sort_with(GS_ALGO_RADIX, GS_DEVICE_AUTO, keys, 4, NULL, 4, &report) == GS_OK &&
			  report.ran_on == GS_DEVICE_CPU && !report.fell_back,
			  "device=auto without a GPU sorts quietly on the CPU");
	}
	else
	{
		/* a usable GPU that cannot take the sort (here: over the memory cap)
		 * makes AUTO sort on the CPU, saying so; GPU fails instead */
		size_t		n = 100000;
		uint32_t   *big = malloc(n * 4);
		uint32_t   *input = malloc(n * 4);
		uint32_t   *index = malloc(n * 4);

		fill_keys(input, 4, n, DIST_RANDOM);
		memcpy(big, input, n * 4);
		gs_sort_request_init(&request);
		gs_sort_request_set_keys(&request, big, n, 4, 32, index);
		request.gpu_memory_limit = 4096;
		CHECK(gs_sort(&request, &report) == GS_OK && report.fell_back &&
			  report.ran_on == GS_DEVICE_CPU && report.gpu_status == GS_ERR_GPU_OUT_OF_MEMORY,
			  "auto falls back to the CPU when the GPU cannot sort (%s)", report.gpu_message);
		CHECK(gs_check_sorted(big, 4, index, n) && gs_check_row_permutation(input, big, index, 4, n),
			  "and the fallback's result is right");
		memcpy(big, input, n * 4);
		request.device = GS_DEVICE_GPU;
		CHECK(gs_sort(&request, &report) == GS_ERR_GPU_OUT_OF_MEMORY,
			  "device=gpu reports the GPU's failure instead");
		free(big);
		free(input);
		free(index);
	}
	gs_sort_request_init(&request);
	request.n = 4;
	request.key_bytes = 3;
	request.keys = keys;
	CHECK(gs_sort(&request, &report) == GS_ERR_INVALID_ARGUMENT, "key width 3 is invalid");
	request.key_bytes = 4;
	request.algorithm = GS_ALGO_APPROX;
	request.intervals = 0;
	CHECK(gs_sort(&request, &report) == GS_ERR_INVALID_ARGUMENT, "zero intervals are invalid");
	{
		gs_algorithm parsed;

		CHECK(gs_algorithm_parse("bitonic", false, &parsed) && parsed == GS_ALGO_BITONIC, "parse");
		CHECK(!gs_algorithm_parse("approx", false, &parsed), "approx not allowed here");
		CHECK(!gs_algorithm_parse("quick", true, &parsed), "unknown name");
	}
}

#if GPUSORT_WITH_CUDA
/* kernels/gpu_rows.cu: records appended in pieces, laid out again in a
 * shuffled order, read back: every byte where the order puts it. */
static void
test_gpu_rows(void)
{
	size_t		n = 200000;
	uint64_t   *offsets = malloc(n * sizeof(uint64_t));
	uint32_t   *lengths = malloc(n * sizeof(uint32_t));
	uint32_t   *order = malloc(n * sizeof(uint32_t));
	size_t		total = 0;
	char	   *input;
	char	   *output;
	char	   *expected;
	gpu_rows   *rows;
	gpu_timing	timing;
	bool		same;

	srand(7);
	for (size_t i = 0; i < n; i++)
	{
		offsets[i] = total;
		lengths[i] = 1 + (uint32_t) (rand() % 300);
		total += lengths[i];
		order[i] = (uint32_t) i;
	}
	for (size_t i = n - 1; i > 0; i--)
	{
		size_t		j = (size_t) rand() % (i + 1);
		uint32_t	t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	input = malloc(total);
	output = malloc(total);
	expected = malloc(total);
	for (size_t i = 0; i < total; i++)
		input[i] = (char) (rand() & 0xff);
	for (size_t i = 0, at = 0; i < n; i++)
	{
		memcpy(expected + at, input + offsets[order[i]], lengths[order[i]]);
		at += lengths[order[i]];
	}
	CHECK(gpu_rows_create(total + 1000, &rows) == GPU_OK, "gpu_rows_create: %s", gpu_last_error());
	if (rows == NULL)
		return;
	CHECK(gpu_rows_append(rows, input, total / 3) == GPU_OK &&
		  gpu_rows_append(rows, input + total / 3, total - total / 3) == GPU_OK,
		  "gpu_rows_append in two pieces");
	CHECK(gpu_rows_append(rows, input, 2000) == GPU_INVALID, "an append beyond the room is refused");
	CHECK(gpu_rows_permute(rows, order, lengths, n, &timing) == GPU_OK,
		  "gpu_rows_permute: %s", gpu_last_error());
	CHECK(gpu_rows_read(rows, 0, output, total / 2) == GPU_OK &&
		  gpu_rows_read(rows, total / 2, output + total / 2, total - total / 2) == GPU_OK,
		  "gpu_rows_read in two pieces");
	same = memcmp(output, expected, total) == 0;
	CHECK(same, "the records come back in the order asked for (%zu records, %zu bytes)", n, total);
	CHECK(gpu_rows_read(rows, total - 10, output, 20) == GPU_INVALID, "a read beyond the end is refused");
	gpu_rows_destroy(rows);
	free(offsets);
	free(lengths);
	free(order);
	free(input);
	free(output);
	free(expected);
}

/* Page-locked blocks given back are lent again for requests of about their
 * size, and stay usable. */
static void
test_host_cache(void)
{
	void	   *first = NULL,
			   *second = NULL,
			   *again = NULL,
			   *small = NULL;
	size_t		bytes = 8 << 20;

	CHECK(gpu_host_alloc(bytes, &first) == GPU_OK && gpu_host_alloc(bytes, &second) == GPU_OK &&
		  first != second, "two pinned blocks: %s", gpu_last_error());
	if (first == NULL || second == NULL)
		return;
	memset(first, 1, bytes);
	memset(second, 2, bytes);
	gpu_host_free(first);
	CHECK(gpu_host_alloc(bytes - 4096, &again) == GPU_OK && again == first,
		  "a block given back is lent again");
	gpu_host_free(second);
	CHECK(gpu_host_alloc(1024, &small) == GPU_OK && small != second,
		  "a small request does not take a large kept block");
	memset(again, 3, bytes - 4096);
	CHECK(((unsigned char *) again)[bytes - 4097] == 3, "a lent block is writable to its end");
	gpu_host_free(again);
	gpu_host_free(small);
}
#endif

/*
 * The fingerprints the GPU service's client proves results with
 * (service/verify.c): a permutation of keys and rows agrees with its
 * input; any change of one key, of one row number, of which row a key
 * goes with, a lost or doubled element, or another part than the one
 * asked for does not.
 */
static void
test_fingerprints(void)
{
	enum
	{
		N = 1000
	};
	gs_fingerprint_point point;
	uint8_t		random[24];
	uint64_t	keys[N],
				out_keys[N];
	uint32_t	keys4[N],
				rows[N];

	for (int i = 0; i < 24; i++)
		random[i] = (uint8_t) next_random();
	gs_fingerprint_point_make(&point, random);
	for (int i = 0; i < N; i++)
	{
		keys[i] = next_random() % 50;	/* duplicates */
		keys4[i] = (uint32_t) keys[i];
		rows[i] = (uint32_t) i;
	}
	/* a shuffle of (key, row) pairs */
	for (int i = N - 1; i > 0; i--)
	{
		int			j = (int) (next_random() % (uint64_t) (i + 1));
		uint32_t	r = rows[i];

		rows[i] = rows[j];
		rows[j] = r;
	}
	for (int i = 0; i < N; i++)
		out_keys[i] = keys[rows[i]];

	{
		uint64_t	input = gs_fingerprint_add(&point, 1, keys, 8, true, NULL, 0, N);
		uint64_t	output = gs_fingerprint_add(&point, 1, out_keys, 8, true, rows, 0, N);
		uint64_t	pieces = 1;

		CHECK(input == output, "fingerprint: a permutation differs from its input");
		for (int first = 0; first < N; first += 97)
			pieces = gs_fingerprint_add(&point, pieces, out_keys, 8, true, rows, first,
										first + 97 < N ? 97 : N - first);
		CHECK(pieces == output, "fingerprint: in pieces it differs from at once");

		out_keys[5] ^= (uint64_t) 1 << 40;	/* a high bit of one key */
		CHECK(gs_fingerprint_add(&point, 1, out_keys, 8, true, rows, 0, N) != input,
			  "fingerprint: a changed key goes unseen");
		out_keys[5] ^= (uint64_t) 1 << 40;
		{
			uint32_t	r = rows[3];	/* two rows swap their keys' rows */

			rows[3] = rows[4];
			rows[4] = r;
			CHECK(keys[rows[3]] == keys[rows[4]] ||
				  gs_fingerprint_add(&point, 1, out_keys, 8, true, rows, 0, N) != input,
				  "fingerprint: keys paired with other rows go unseen");
			rows[4] = rows[3];	/* one row twice, one lost */
			CHECK(gs_fingerprint_add(&point, 1, out_keys, 8, true, rows, 0, N) != input,
				  "fingerprint: a doubled row goes unseen");
		}
		CHECK(gs_fingerprint_add(&point, 1, keys4, 4, false, NULL, 0, N) ==
			  gs_fingerprint_add(&point, 1, keys, 8, false, NULL, 0, N),
			  "fingerprint: 4- and 8-byte keys of one value differ");
	}
	{
		/* the part up to a key: the same elements as the keys up to it */
		uint64_t	taken = 0;
		uint64_t	part = gs_fingerprint_add_upto(&point, 1, keys, 8, false, 0, N, 20, &taken);
		uint64_t	expected = 1;
		uint64_t	count = 0;

		for (int i = 0; i < N; i++)
			if (keys[i] <= 20)
			{
				expected = gs_fingerprint_add(&point, expected, keys, 8, false, NULL, i, 1);
				count++;
			}
		CHECK(part == expected && taken == count, "fingerprint: a part up to a key differs");
		CHECK(gs_fingerprint_add_upto(&point, 1, keys, 8, false, 0, N, 21, &taken) != part ||
			  count == taken, "fingerprint: a larger part goes unseen");
	}
	{
		/* records: any changed coefficient, and the order of records, as
		 * multisets */
		gs_record_point record_point;
		uint64_t	a[3] = {40, 7, 9},
					b[3] = {40, 7, 10},
					c[3] = {48, 7, 9};
		uint64_t	ab,
					ba,
					ac;

		gs_record_point_make(&record_point, &point, 3);
		ab = gs_fingerprint_add_record(&record_point, gs_fingerprint_add_record(&record_point, 1, a, 3), b, 3);
		ba = gs_fingerprint_add_record(&record_point, gs_fingerprint_add_record(&record_point, 1, b, 3), a, 3);
		ac = gs_fingerprint_add_record(&record_point, gs_fingerprint_add_record(&record_point, 1, a, 3), c, 3);
		CHECK(ab == ba, "fingerprint: records in another order differ");
		CHECK(ab != ac, "fingerprint: a record's changed length goes unseen");
		CHECK(gs_fingerprint_combine(gs_fingerprint_add_record(&record_point, 1, a, 3),
									 gs_fingerprint_add_record(&record_point, 1, b, 3)) == ab,
			  "fingerprint: two parts combined differ from the whole");
	}
	{
		/* a record's coefficients: every part of it changes them, and none
		 * reaches 2^60 (below p, so that no two values of a part agree mod
		 * p): for every count of keys, the length, each NULL flag, each
		 * key's low and top bits (a low part of all ones against zero: the
		 * two that one coefficient mod p would confuse at 61 bits) */
		for (int nkeys = 1; nkeys <= GS_RECORD_MAX_KEYS; nkeys++)
		{
			int			ncoeffs = gs_record_coefficient_count(nkeys);
			uint64_t	keys[GS_RECORD_MAX_KEYS];
			uint64_t	base[GS_RECORD_MAX_COEFFS];
			uint64_t	other[GS_RECORD_MAX_COEFFS];
			int			variants = 0,
						seen = 0;

			CHECK(ncoeffs <= GS_RECORD_MAX_COEFFS, "fingerprint: %d keys make %d coefficients",
				  nkeys, ncoeffs);
			for (int k = 0; k < nkeys; k++)
				keys[k] = UINT64_C(0x0123456789abcdef) * (k + 1);
			gs_record_coefficients(1000, 0, keys, nkeys, base);
			for (int change = 0; change < 2 + 4 * nkeys; change++)
			{
				uint64_t	changed[GS_RECORD_MAX_KEYS];
				uint32_t	length = 1000,
							nulls = 0;
				int			k = (change - 2) / 4;
				bool		differs = false;

				memcpy(changed, keys, sizeof(keys));
				if (change == 0)
					length = (UINT32_C(1) << 30) - 1;
				else if (change == 1)
					length = 16;
				else if ((change - 2) % 4 == 0)
					nulls = UINT32_C(1) << k;
				else if ((change - 2) % 4 == 1)
					changed[k] ^= UINT64_C(1) << 63;
				else if ((change - 2) % 4 == 2)
					changed[k] |= (UINT64_C(1) << 60) - 1;
				else
					changed[k] &= ~((UINT64_C(1) << 60) - 1);
				gs_record_coefficients(length, nulls, changed, nkeys, other);
				for (int i = 0; i < ncoeffs; i++)
				{
					differs |= other[i] != base[i];
					CHECK(other[i] < (UINT64_C(1) << 60), "fingerprint: coefficient %d of %d keys at 2^60", i, nkeys);
				}
				variants++;
				seen += differs;
			}
			CHECK(seen == variants, "fingerprint: %d of %d changes to a record of %d keys go unseen",
				  variants - seen, variants, nkeys);
			{
				/* all ones and zero in a key's low part: apart mod p too */
				uint64_t	ones[GS_RECORD_MAX_KEYS] = {0},
							zeros[GS_RECORD_MAX_KEYS] = {0};
				gs_record_point record_point;

				ones[nkeys - 1] = (UINT64_C(1) << 60) - 1;
				gs_record_point_make(&record_point, &point, ncoeffs);
				gs_record_coefficients(64, 0, ones, nkeys, base);
				gs_record_coefficients(64, 0, zeros, nkeys, other);
				CHECK(gs_fingerprint_add_record(&record_point, 1, base, ncoeffs) !=
					  gs_fingerprint_add_record(&record_point, 1, other, ncoeffs),
					  "fingerprint: a key's low bits all ones taken for zero");
			}
		}
	}
	{
		/*
		 * The coefficients' layout, bit by bit: from an all-zero record,
		 * each input bit alone (the length's 30, each NULL flag, each key's
		 * 64) sets exactly one output bit, and no two input bits set the
		 * same one: nothing is lost, nothing shares a place.
		 */
		for (int nkeys = 1; nkeys <= GS_RECORD_MAX_KEYS; nkeys++)
		{
			int			ncoeffs = gs_record_coefficient_count(nkeys);
			int			inputs = 30 + nkeys + 64 * nkeys;
			static int	owner[GS_RECORD_MAX_COEFFS * 64];
			int			lost = 0,
						shared = 0;

			for (int i = 0; i < GS_RECORD_MAX_COEFFS * 64; i++)
				owner[i] = -1;
			for (int bit = 0; bit < inputs; bit++)
			{
				uint64_t	keys[GS_RECORD_MAX_KEYS] = {0};
				uint64_t	c[GS_RECORD_MAX_COEFFS];
				uint32_t	length = 0,
							nulls = 0;
				int			set = 0,
							where = -1;

				if (bit < 30)
					length = UINT32_C(1) << bit;
				else if (bit < 30 + nkeys)
					nulls = UINT32_C(1) << (bit - 30);
				else
					keys[(bit - 30 - nkeys) / 64] = UINT64_C(1) << ((bit - 30 - nkeys) % 64);
				gs_record_coefficients(length, nulls, keys, nkeys, c);
				for (int i = 0; i < ncoeffs; i++)
					for (int b = 0; b < 64; b++)
						if ((c[i] >> b) & 1)
						{
							set++;
							where = i * 64 + b;
						}
				if (set != 1)
					lost++;
				else if (owner[where] >= 0)
					shared++;
				else
					owner[where] = bit;
			}
			CHECK(lost == 0 && shared == 0,
				  "fingerprint: %d keys: %d input bits not one output bit, %d sharing one",
				  nkeys, lost, shared);
		}
	}
	{
		/* a record's factor against a slow one: r minus the sum of each
		 * coefficient times its power of s, each product taken mod p */
		const unsigned __int128 prime = GS_FIELD_PRIME;
		uint64_t	state = 88172645463325252ULL;
		int			wrong = 0;

		for (int trial = 0; trial < 20000; trial++)
		{
			int			ncoeffs = 1 + trial % GS_RECORD_MAX_COEFFS;
			gs_record_point record_point;
			gs_fingerprint_point trial_point = point;
			uint64_t	c[GS_RECORD_MAX_COEFFS];
			unsigned __int128 x = 0;
			uint64_t	expected;

			for (int i = 0; i < ncoeffs; i++)
			{
				state ^= state << 13;
				state ^= state >> 7;
				state ^= state << 17;
				/* every fourth trial at the largest coefficients */
				c[i] = trial % 4 == 0 ? (UINT64_C(1) << 60) - 1 : state >> 4;
			}
			if (trial % 8 == 1)
				trial_point.s = GS_FIELD_PRIME - 1;
			if (trial % 16 == 3)
				trial_point.r = 0;
			gs_record_point_make(&record_point, &trial_point, ncoeffs);
			{
				unsigned __int128 power = 1;

				for (int i = 0; i < ncoeffs; i++)
				{
					x = (x + (unsigned __int128) c[i] * power % prime) % prime;
					power = power * trial_point.s % prime;
				}
			}
			expected = (uint64_t) (((unsigned __int128) trial_point.r + prime - x) % prime);
			wrong += gs_record_factor(&record_point, c, ncoeffs) != expected;
		}
		CHECK(wrong == 0, "fingerprint: %d of 20000 record factors differ from the slow sum", wrong);
	}
	{
		/* records spread over chains (the rows jobs' checks) give the
		 * fingerprint of one chain; records of 2 to 10 coefficients */
		for (int ncoeffs = 2; ncoeffs <= GS_RECORD_MAX_COEFFS; ncoeffs++)
		{
			gs_record_point record_point;
			uint64_t	c[GS_RECORD_MAX_COEFFS] = {77, UINT64_C(0x0edcba9876543210), 3, 4, 5, 6, 7, 8, 9, 10};
			uint64_t	one_chain = 1,
						chains[4] = {1, 1, 1, 1},
						changed;

			gs_record_point_make(&record_point, &point, ncoeffs);
			for (int i = 0; i < 9; i++)
			{
				c[1] += (uint64_t) i << 40;
				one_chain = gs_fingerprint_add_record(&record_point, one_chain, c, ncoeffs);
				chains[i % 4] = gs_fingerprint_add_record(&record_point, chains[i % 4], c, ncoeffs);
			}
			CHECK(gs_fingerprint_chains(chains) == one_chain,
				  "fingerprint: records over four chains differ from one chain");
			c[0] = 78;
			changed = gs_fingerprint_add_record(&record_point, one_chain, c, ncoeffs);
			c[0] = 77;
			CHECK(changed != gs_fingerprint_add_record(&record_point, one_chain, c, ncoeffs),
				  "fingerprint: a record's changed length goes unseen");
			{
				uint64_t	before = gs_fingerprint_add_record(&record_point, one_chain, c, ncoeffs);

				c[ncoeffs - 1] ^= UINT64_C(1) << 59;
				CHECK(gs_fingerprint_add_record(&record_point, one_chain, c, ncoeffs) != before,
					  "fingerprint: a record's last coefficient goes unseen");
			}
		}
	}
}

int
main(int argc, char **argv)
{
	gs_gpu_info info;
	bool		gpu_too = argc > 1 && strcmp(argv[1], "--gpu") == 0;

#if GPUSORT_WITH_CUDA
	gs_engine_set_backend(&gs_kernels_backend);
#endif
	gs_gpu_info_get(&info);
	printf("GPU (%s): %s\n", gs_engine_backend() ? gs_engine_backend()->name : "no backend",
		   info.usable ? info.name : info.reason);

	test_exact_sorts(GS_DEVICE_CPU);
	if (gpu_too)
		test_exact_sorts(GS_DEVICE_GPU);
	test_narrow_keys();
	test_interval_map();
	test_quantile_tree();
	test_approx_sort();
	test_quantile_sort(GS_DEVICE_CPU);
	if (gpu_too && info.usable)
		test_quantile_sort(GS_DEVICE_GPU);
	test_key_layout(GS_DEVICE_CPU);
	if (gpu_too && info.usable)
	{
		test_key_layout(GS_DEVICE_GPU);
		test_words_on_gpu();
	}
	test_approx_rows();
	test_float8_encoding();
	test_minmax();
	test_interruption();
	test_devices_and_errors();
	test_fingerprints();
#if GPUSORT_WITH_CUDA
	if (gpu_too && info.usable)
	{
		test_gpu_rows();
		test_host_cache();
	}
#endif

	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
