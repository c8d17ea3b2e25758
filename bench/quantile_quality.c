/*
 * quantile_quality.c — the approximate sort's two modes on skewed keys:
 * how far rows land from their exact rank, and how fast, against the exact
 * radix sort.
 *
 *   bench/quantile_quality [OUT.csv] [SIZES] [REPS] [INTERVALS]
 *       SIZES      comma-separated element counts (default 10000000,100000000)
 *       REPS       seeds per quantile case (default 3; width has none)
 *       INTERVALS  comma-separated interval counts (default 1000,100000)
 *
 * For uniform, Zipf (s = 1.1 and 1.5, over 2^20 values), clustered (8 tight
 * clusters far apart) and sorted-with-noise (1% of keys random) 32-bit
 * keys it sorts the same (key, row) pairs through the engine (on the GPU
 * when one is usable, else on the CPU) exactly (radix) and approximately in
 * both modes, and reports per case:
 *   - the fraction of pairs out of order (strictly: ties are not inverted),
 *     counted by merge sort;
 *   - the largest and the mean rank error: the distance from a row's output
 *     position to the nearest position its key takes in sorted order;
 *   - in quantile mode the engine's rank bound D (interval_map.h) and
 *     whether the largest error passed it (a violation; the goal is
 *     none over all repetitions), the sample size and the fullest bucket;
 *   - the median time of 3 sorts, host to host (transfers included), and
 *     the radix sort's.
 * One CSV row per case (bench/plot.py --quantile draws them); the
 * violations in total last: the exit status is 1 if there was one.
 */
#include "timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545F4914F6CDD1DULL;

static uint64_t
next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double
uniform01(void)
{
	return (double) (next_random() >> 11) / (double) (UINT64_C(1) << 53);
}

/* Zipf of exponent s over 1 .. 2^20, by the continuous inverse CDF */
static uint32_t
zipf_value(double s)
{
	const double max = 1048576.0;
	double		one_minus = 1.0 - s;
	double		top = pow(max + 1.0, one_minus) - 1.0;

	return (uint32_t) floor(pow(1.0 + uniform01() * top, 1.0 / one_minus));
}

static const char *const distributions[] = {
	"uniform", "zipf-1.1", "zipf-1.5", "clustered", "sorted-noise"
};
#define DISTRIBUTION_COUNT 5

static void
fill(uint32_t *keys, size_t n, int distribution)
{
	for (size_t i = 0; i < n; i++)
	{
		switch (distribution)
		{
			case 0:
				keys[i] = (uint32_t) next_random();
				break;
			case 1:
				keys[i] = zipf_value(1.1);
				break;
			case 2:
				keys[i] = zipf_value(1.5);
				break;
			case 3:
				keys[i] = (uint32_t) (next_random() % 8) * (UINT32_C(1) << 29) +
					(uint32_t) (next_random() % 65536);
				break;
			default:
				keys[i] = next_random() % 100 == 0 ? (uint32_t) next_random() :
					(uint32_t) ((double) i / (double) n * 4294967295.0);
				break;
		}
	}
}

/* Pairs with a[j] < a[i], i < j, of a[0..n) (a is reordered). */
static uint64_t
count_inversions(uint32_t *a, uint32_t *tmp, size_t n)
{
	uint64_t	inversions = 0;

	for (size_t width = 1; width < n; width *= 2)
	{
		/* the merges of one level are independent (OpenMP where built with it) */
#pragma omp parallel for reduction(+:inversions) schedule(dynamic, 1)
		for (size_t lo = 0; lo < n; lo += 2 * width)
		{
			size_t		mid = lo + width < n ? lo + width : n;
			size_t		hi = lo + 2 * width < n ? lo + 2 * width : n;
			size_t		i = lo,
						j = mid,
						k = lo;

			while (i < mid && j < hi)
			{
				if (a[j] < a[i])
				{
					inversions += mid - i;
					tmp[k++] = a[j++];
				}
				else
					tmp[k++] = a[i++];
			}
			while (i < mid)
				tmp[k++] = a[i++];
			while (j < hi)
				tmp[k++] = a[j++];
		}
		memcpy(a, tmp, n * sizeof(uint32_t));
	}
	return inversions;
}

/* Largest and total rank error of out[0..n) against sorted[0..n). */
static void
rank_errors(const uint32_t *sorted, const uint32_t *out, size_t n, uint64_t *largest,
			double *total)
{
	uint64_t	most = 0;
	double		sum = 0;

#pragma omp parallel for reduction(max:most) reduction(+:sum)
	for (size_t p = 0; p < n; p++)
	{
		size_t		low = 0,
					high = n,
					first,
					last;
		uint64_t	error = 0;

		while (low < high)
		{
			size_t		middle = low + (high - low) / 2;

			if (sorted[middle] < out[p])
				low = middle + 1;
			else
				high = middle;
		}
		first = low;
		high = n;
		while (low < high)
		{
			size_t		middle = low + (high - low) / 2;

			if (sorted[middle] <= out[p])
				low = middle + 1;
			else
				high = middle;
		}
		last = low - 1;
		if (first > p)
			error = first - p;
		else if (p > last)
			error = p - last;
		if (error > most)
			most = error;
		sum += (double) error;
	}
	*largest = most;
	*total = sum;
}

static size_t
parse_list(const char *text, uint64_t *values, size_t most)
{
	size_t		count = 0;

	while (text != NULL && *text != '\0' && count < most)
	{
		char	   *end;

		values[count++] = strtoull(text, &end, 10);
		text = *end == ',' ? end + 1 : NULL;
	}
	return count;
}

int
main(int argc, char **argv)
{
	const char *csv_path = argc > 1 ? argv[1] : "quantile_quality.csv";
	uint64_t	sizes[16],
				interval_counts[16];
	size_t		size_count = parse_list(argc > 2 ? argv[2] : "10000000,100000000", sizes, 16);
	int			reps = argc > 3 ? atoi(argv[3]) : 3;
	size_t		interval_count = parse_list(argc > 4 ? argv[4] : "1000,100000",
											interval_counts, 16);
	FILE	   *csv = fopen(csv_path, "w");
	gs_gpu_info gpu;
	int			violations = 0,
				quantile_cases = 0;

	if (csv == NULL)
	{
		perror(csv_path);
		return 1;
	}
	use_kernels();
	gs_gpu_info_get(&gpu);
	printf("device: %s\n", gpu.usable ? gpu.name : gpu.reason);
	fprintf(csv, "device,distribution,n,mode,intervals,seed,inverted_pair_fraction,"
			"max_rank_error,mean_rank_error,rank_bound,violation,sample_size,"
			"largest_interval,approx_ms,radix_ms,speedup\n");
	printf("%-12s %10s %-8s %7s %4s %10s %10s %10s %10s %9s %9s %6s\n", "dist", "n", "mode",
		   "m", "seed", "inverted", "max_err", "mean_err", "bound", "ms", "radix_ms", "x");

	for (size_t s = 0; s < size_count; s++)
	{
		size_t		n = (size_t) sizes[s];
		uint32_t   *input = malloc(n * 4);
		uint32_t   *sorted = malloc(n * 4);
		uint32_t   *keys = malloc(n * 4);
		uint32_t   *index = malloc(n * 4);
		uint32_t   *tmp = malloc(n * 4);

		if (input == NULL || sorted == NULL || keys == NULL || index == NULL || tmp == NULL)
		{
			fprintf(stderr, "out of memory for n = %zu\n", n);
			return 1;
		}
		for (int d = 0; d < DISTRIBUTION_COUNT; d++)
		{
			gs_sort_request request;
			gs_sort_report report;
			double		radix_ms;

			fill(input, n, d);
			gs_sort_request_init(&request);
			gs_sort_request_set_keys(&request, sorted, n, 4, 32, index);
			request.algorithm = GS_ALGO_RADIX;
			radix_ms = median_sort_ms(&request, input, 3, &report);

			for (size_t c = 0; c < interval_count; c++)
				for (int mode = 0; mode <= 1; mode++)
					for (int rep = 0; rep < (mode == 1 ? reps : 1); rep++)
					{
						uint64_t	seed = (uint64_t) rep + 1;
						uint64_t	largest;
						double		total,
									approx_ms,
									fraction;
						bool		violated;

						gs_sort_request_set_keys(&request, keys, n, 4, 32, index);
						request.algorithm = GS_ALGO_APPROX;
						request.approx_mode = mode == 1 ? GS_APPROX_QUANTILE : GS_APPROX_WIDTH;
						request.approx_seed = seed;
						request.intervals = (uint32_t) interval_counts[c];
						approx_ms = median_sort_ms(&request, input, 3, &report);
						rank_errors(sorted, keys, n, &largest, &total);
						fraction = (double) count_inversions(keys, tmp, n) /
							((double) n * (double) (n - 1) / 2.0);
						violated = mode == 1 && largest > report.rank_bound;
						violations += violated;
						quantile_cases += mode == 1;
						fprintf(csv, "%s,%s,%zu,%s,%u,%llu,%.3e,%llu,%.2f,%llu,%d,%zu,%zu,%.3f,%.3f,%.2f\n",
								report.ran_on == GS_DEVICE_GPU ? "GPU" : "CPU", distributions[d], n,
								gs_approx_mode_name(request.approx_mode), request.intervals,
								mode == 1 ? (unsigned long long) seed : 0ULL, fraction,
								(unsigned long long) largest, total / (double) n,
								mode == 1 ? (unsigned long long) report.rank_bound : 0ULL,
								violated, report.sample_size, report.largest_interval,
								approx_ms, radix_ms, radix_ms / approx_ms);
						printf("%-12s %10zu %-8s %7u %4llu %10.3e %10llu %10.1f %10llu %9.2f %9.2f %6.2f%s\n",
							   distributions[d], n, gs_approx_mode_name(request.approx_mode),
							   request.intervals, mode == 1 ? (unsigned long long) seed : 0ULL,
							   fraction, (unsigned long long) largest, total / (double) n,
							   mode == 1 ? (unsigned long long) report.rank_bound : 0ULL,
							   approx_ms, radix_ms, radix_ms / approx_ms,
							   violated ? "  VIOLATION" : "");
						fflush(stdout);
						fflush(csv);
					}
		}
		free(input);
		free(sorted);
		free(keys);
		free(index);
		free(tmp);
	}
	fclose(csv);
	printf("%d quantile cases, %d violations of the rank bound\n", quantile_cases, violations);
	return violations == 0 ? 0 : 1;
}
