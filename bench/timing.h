/*
 * timing.h — host timing shared by the engine-level benchmarks
 * (approx_quality.c, crossover.c): a monotonic clock and a median.
 */
#ifndef GPUSORT_BENCH_TIMING_H
#define GPUSORT_BENCH_TIMING_H

#include <stdlib.h>
#include <time.h>

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

#endif							/* GPUSORT_BENCH_TIMING_H */
