/*
 * engine_internal.h — what the engine's own files share and nobody else
 * sees: the CPU algorithms and host-memory helpers. (The GPU is reached
 * through sort_backend.h.)
 */
#ifndef GPUSORT_ENGINE_INTERNAL_H
#define GPUSORT_ENGINE_INTERNAL_H

#include "gpusort_engine.h"

/* One sort for the CPU algorithms. row_index, when present, already holds
 * 0..n-1 (input order), so comparing (key, index) pairs sorts stably. */
typedef struct cpu_sort_job
{
	size_t		n;
	unsigned	key_bytes;
	unsigned	key_bits;
	void	   *keys;
	uint32_t   *row_index;
	const gs_allocator *allocator;
	gs_poll_fn	poll;
	void	   *poll_arg;
} cpu_sort_job;

extern gs_status cpu_bitonic_sort(const cpu_sort_job *job);
extern gs_status cpu_butterfly_sort(const cpu_sort_job *job);
extern gs_status cpu_radix_sort(const cpu_sort_job *job);
extern gs_status cpu_approx_sort(const cpu_sort_job *job,
								 const gs_interval_map *map, size_t limit,
								 size_t *valid_outputs, size_t *largest_interval);
/* Quantile mode: draws the sample of job->keys, sorts it and writes the
 * intervals - 1 splitters (interval_map.h); *sample_size gets its size. */
extern gs_status cpu_quantile_splitters(const cpu_sort_job *job, uint32_t intervals,
										uint64_t seed, uint64_t *splitters,
										size_t *sample_size);
extern void cpu_minmax(const uint64_t *keys, size_t n,
					   uint64_t *min_key, uint64_t *max_key);

/*
 * Rows keyed by several words, sorted whole on the GPU (dispatch.c): word
 * w of row r at words[w * n + r], word 0 deciding first, below
 * 2^word_bits[w]; row_index receives the rows in order, ties in input
 * order. Only where gs_gpu_sorts_words() said yes (the caller asks first,
 * before it packs the words). *ran says whether the GPU sorted them, or
 * failed for good (any status but GS_OK is the sort's); when the GPU failed
 * and settings->device lets the CPU take over (GS_OK, report->fell_back),
 * the caller sorts word by word. (settings' n and keys are ignored.)
 */
extern gs_status gs_sort_words_on_gpu(const gs_sort_request *settings, size_t n,
									  const uint64_t *words, unsigned nwords,
									  const unsigned *word_bits, uint32_t *row_index,
									  gs_sort_report *report, bool *ran);
/* Whether this sort of n rows may go to gs_sort_words_on_gpu: the
 * process's GPU backend sorts words whole and `settings` let it use the
 * GPU. */
extern bool gs_gpu_sorts_words(const gs_sort_request *settings, size_t n);

/* Largest number of intervals the approximate sort accepts. */
#define GS_MAX_INTERVALS (UINT32_C(1) << 26)

/* Between polls, CPU loops do about this many element operations. */
#define CPU_POLL_EVERY (UINT64_C(1) << 20)

extern void *engine_alloc(const gs_allocator *allocator, size_t bytes);
extern void engine_free(const gs_allocator *allocator, void *pointer);

static inline size_t
next_power_of_two(size_t n)
{
	size_t		p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

#endif							/* GPUSORT_ENGINE_INTERNAL_H */
