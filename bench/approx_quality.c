/*
 * approx_quality.c — how good and how fast the approximate interval sort is.
 *
 *   bench/approx_quality [OUT.csv] [max_log2_n]
 *
 * For uniform, gaussian (the mean of four uniforms, as in Xiao et al.) and
 * zipf keys, several sizes and several interval counts, it sorts the same
 * (key, row) pairs approximately and exactly through the engine (on the GPU
 * when one is usable, else on the CPU) and reports:
 *   - the fraction of inverted pairs against the exact order
 *     (inversions / (n (n-1) / 2), counted by merge sort);
 *   - the largest and the mean displacement of a row from its exact position;
 *   - the time of the approximate sort against the exact radix sort
 *     (median of 5, host to host, so transfers included).
 * One CSV row per case; a table last.
 */
#include "timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545F4914F6CDD1DULL;

static double
uniform01(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double) (rng >> 11) / (double) (UINT64_C(1) << 53);
}

static void
fill(uint32_t *keys, size_t n, const char *dist)
{
	for (size_t i = 0; i < n; i++)
	{
		double		v;

		if (strcmp(dist, "gaussian") == 0)
			v = (uniform01() + uniform01() + uniform01() + uniform01()) / 4.0;
		else if (strcmp(dist, "zipf") == 0)
			/* a zipf-like heavy head: rank ~ u^-1.2 on 1..2^30 */
			v = fmin(pow(uniform01() + 1e-12, -1.0 / 1.2) - 1.0, 1073741823.0) / 1073741823.0;
		else
			v = uniform01();
		keys[i] = (uint32_t) (v * 4294967295.0);
	}
}

/* Inversions of a[0..n) counted by merge sort (a is reordered). */
static uint64_t
count_inversions(uint32_t *a, uint32_t *tmp, size_t n)
{
	uint64_t	inversions = 0;

	for (size_t width = 1; width < n; width *= 2)
	{
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

/* Median of 5 sorts of input (n 32-bit keys, row index wanted). */
static double
timed_sort(const uint32_t *input, uint32_t *keys, uint32_t *index, size_t n,
		   gs_algorithm algorithm, uint32_t intervals, gs_sort_report *report)
{
	gs_sort_request request;

	gs_sort_request_init(&request);
	gs_sort_request_set_keys(&request, keys, n, 4, 32, index);
	request.algorithm = algorithm;
	request.intervals = intervals;
	return median_sort_ms(&request, input, 5, report);
}

int
main(int argc, char **argv)
{
	const char *csv_path = argc > 1 ? argv[1] : "approx_quality.csv";
	int			max_log2 = argc > 2 ? atoi(argv[2]) : 24;
	static const char *const dists[] = {"uniform", "gaussian", "zipf"};
	static const uint32_t interval_counts[] = {100, 1000, 10000, 100000, 1000000};
	FILE	   *csv = fopen(csv_path, "w");
	gs_gpu_info gpu;

	if (csv == NULL)
	{
		perror(csv_path);
		return 1;
	}
	use_kernels();
	gs_gpu_info_get(&gpu);
	printf("device: %s\n", gpu.usable ? gpu.name : gpu.reason);
	fprintf(csv, "device,distribution,n,intervals,inverted_pair_fraction,max_displacement,"
			"mean_displacement,approx_ms,radix_ms,speedup\n");
	printf("%-9s %9s %9s %14s %12s %12s %9s %9s %7s\n", "dist", "n", "intervals",
		   "inverted", "max_disp", "mean_disp", "approx_ms", "radix_ms", "x");

	for (int log2n = 20; log2n <= max_log2; log2n += 2)
	{
		size_t		n = (size_t) 1 << log2n;
		uint32_t   *input = malloc(n * 4);
		uint32_t   *keys = malloc(n * 4);
		uint32_t   *index = malloc(n * 4);
		uint32_t   *exact_position = malloc(n * 4);
		uint32_t   *ranks = malloc(n * 4);
		uint32_t   *tmp = malloc(n * 4);

		for (size_t d = 0; d < 3; d++)
		{
			gs_sort_report report;
			double		radix_ms;

			fill(input, n, dists[d]);
			radix_ms = timed_sort(input, keys, index, n, GS_ALGO_RADIX, 0, &report);
			for (size_t j = 0; j < n; j++)
				exact_position[index[j]] = (uint32_t) j;

			for (size_t c = 0; c < sizeof(interval_counts) / sizeof(interval_counts[0]); c++)
			{
				double		approx_ms = timed_sort(input, keys, index, n, GS_ALGO_APPROX,
												   interval_counts[c], &report);
				uint64_t	max_displacement = 0;
				double		total_displacement = 0;
				uint64_t	inversions;
				double		fraction;

				/* the approximate output as exact ranks: inversions there are
				 * pairs out of exact order */
				for (size_t j = 0; j < n; j++)
				{
					uint32_t	exact = exact_position[index[j]];
					uint64_t	displacement = exact > j ? exact - j : j - exact;

					ranks[j] = exact;
					if (displacement > max_displacement)
						max_displacement = displacement;
					total_displacement += (double) displacement;
				}
				inversions = count_inversions(ranks, tmp, n);
				fraction = (double) inversions / ((double) n * (double) (n - 1) / 2.0);
				fprintf(csv, "%s,%s,%zu,%u,%.3e,%llu,%.2f,%.3f,%.3f,%.2f\n",
						report.ran_on == GS_DEVICE_GPU ? "GPU" : "CPU", dists[d], n,
						interval_counts[c], fraction, (unsigned long long) max_displacement,
						total_displacement / n, approx_ms, radix_ms, radix_ms / approx_ms);
				printf("%-9s %9zu %9u %14.3e %12llu %12.2f %9.3f %9.3f %7.2f\n", dists[d], n,
					   interval_counts[c], fraction, (unsigned long long) max_displacement,
					   total_displacement / n, approx_ms, radix_ms, radix_ms / approx_ms);
			}
		}
		free(input);
		free(keys);
		free(index);
		free(exact_position);
		free(ranks);
		free(tmp);
	}
	fclose(csv);
	return 0;
}
