/*
 * timing.h — host timing shared by the engine-level benchmarks
 * (approx_quality.c, crossover.c): a monotonic clock, a median, and the
 * median time of a sort through the engine.
 */
#ifndef GPUSORT_BENCH_TIMING_H
#define GPUSORT_BENCH_TIMING_H

#include "../engine/gpusort_engine.h"
#include "../engine/sort_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The engine's GPU: the kernels, when built with them (the Makefile's
 * GPUSORT_WITH_CUDA); otherwise none, and every sort runs on the CPU. */
static inline void
use_kernels(void)
{
#if GPUSORT_WITH_CUDA
	gs_engine_set_backend(&gs_kernels_backend);
#endif
}

static inline double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
compare_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* The median of count times (reordered). */
static inline double
median_ms(double *times, int count)
{
	qsort(times, count, sizeof(double), compare_double);
	return times[count / 2];
}

/*
 * The median of `runs` (at most 15) sorts as `request` asks, each of a fresh
 * copy of `input` (request->n 32-bit keys) into request->keys, host to
 * host; *report is the last run's. Exits on failure.
 */
static inline double
median_sort_ms(const gs_sort_request *request, const uint32_t *input, int runs,
			   gs_sort_report *report)
{
	double		times[15];

	if (runs > 15)
		runs = 15;
	for (int r = 0; r < runs; r++)
	{
		gs_sort_request run = *request;
		double		start;

		memcpy(run.keys, input, run.n * sizeof(uint32_t));
		start = now_ms();
		if (gs_sort(&run, report) != GS_OK)
		{
			fprintf(stderr, "sort failed on %s: %s\n", gs_device_name(run.device),
					report->gpu_message);
			exit(1);
		}
		times[r] = now_ms() - start;
	}
	return median_ms(times, runs);
}

#endif							/* GPUSORT_BENCH_TIMING_H */
