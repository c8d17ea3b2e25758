/*
 * sort_backend.h — the engine's GPU: one interface, chosen at run time.
 *
 * The engine (dispatch.c) sorts on a GPU only through the backend its
 * process set with gs_engine_set_backend(), before its first sort:
 *
 *   - the GPU service's client (service/client.c, gpu_service_backend):
 *     gpusort.so sets it in _PG_init, so a backend's sorts go to
 *     gpusort-gpud; without the service (no shared_preload_libraries) it
 *     says why no GPU is usable;
 *   - the CUDA kernels in this process (backend_kernels.c,
 *     gs_kernels_backend), linked only where the kernels are:
 *     gpusort-gpud on a real GPU, and the unit tests, the GPU checks and
 *     the benchmarks built with CUDA;
 *   - none (NULL, the default): every sort runs on the CPU, and a probe
 *     says "no GPU backend in this process" (a build without CUDA, the
 *     service's test mode, whose "GPU" is itself the CPU engine).
 *
 * The types are the engine's own: what a backend is asked (a job), what
 * it answers (gs_status, with GS_ERR_GPU_BUSY for a job the service did
 * not admit in the time allowed) and what it measured (the GPU's times,
 * and for the service the wait in its queue and which of its GPUs ran the
 * job). The kernels' API (kernels/gpu_api.h) knows nothing of a service;
 * backend_kernels.c translates.
 *
 * A backend never throws and never calls back into its caller but
 * through the job's poll function. Its functions may be called from any
 * thread of the process that set it (gpusort-gpud serves jobs from many).
 */
#ifndef GPUSORT_SORT_BACKEND_H
#define GPUSORT_SORT_BACKEND_H

#include "gpusort_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a job took on the GPU, in milliseconds; zero where not measured. */
typedef struct gs_backend_timing
{
	float		upload_ms;
	float		sort_ms;
	float		download_ms;
	size_t		device_bytes;	/* device memory the job held */
	float		queue_ms;		/* waited for admission (the service's queue) */
	int			device_index;	/* which of the service's GPUs ran it */
} gs_backend_timing;

/* Exact sort of keys (uint32_t or uint64_t) in host memory, in place.
 * With row_index, it also receives the permutation (the input position of
 * each output) and ties keep input order. */
typedef struct gs_backend_sort_job
{
	size_t		n;
	unsigned	key_bytes;		/* 4 or 8 */
	unsigned	key_bits;		/* keys < 2^key_bits */
	void	   *keys;
	uint32_t   *row_index;		/* or NULL; receives the permutation */
	gs_algorithm algorithm;		/* GS_ALGO_BITONIC, _BUTTERFLY or _RADIX */
	size_t		memory_limit;	/* bytes of device memory; 0 = no cap */
	gs_poll_fn	poll;
	void	   *poll_arg;
	/* out: set once results start landing in host memory; after that a
	 * failure leaves the host arrays neither input nor output, and the
	 * CPU cannot take over */
	bool		host_data_touched;
} gs_backend_sort_job;

/* Exact sort of n rows by nwords words each, whole on the GPU: word w of
 * row r at words[w * n + r] (word 0 decides first), below 2^word_bits[w];
 * row_index receives the rows in order, ties in input order. The words are
 * only read, so after a failure the CPU can always take over. */
typedef struct gs_backend_words_job
{
	size_t		n;
	unsigned	nwords;
	const unsigned *word_bits;
	const uint64_t *words;
	uint32_t   *row_index;
	size_t		memory_limit;
	gs_poll_fn	poll;
	void	   *poll_arg;
} gs_backend_words_job;

/* Approximate (interval) sort: [min, max] of the keys cut into `intervals`
 * equal-width intervals as gs_approx_interval() (interval_map.h) does, or
 * in quantile mode the 2 * intervals - 1 buckets of the splitters drawn
 * from the sample that `seed` picks (interval_map.h), the elements of
 * intervals 0, 1, ... written in that order; with limit > 0 only the
 * intervals up to the one holding output number `limit`. */
typedef struct gs_backend_approx_job
{
	size_t		n;
	unsigned	key_bytes;
	void	   *keys;
	uint32_t   *row_index;		/* or NULL; receives the permutation */
	uint32_t	intervals;
	gs_approx_mode mode;
	uint64_t	seed;			/* quantile mode: the sample's (never 0) */
	size_t		limit;
	size_t		memory_limit;
	gs_poll_fn	poll;
	void	   *poll_arg;
	/* out */
	bool		host_data_touched;
	size_t		valid_outputs;
	uint64_t	min_key;
	uint64_t	max_key;
	size_t		sample_size;	/* quantile mode */
	size_t		largest_interval;	/* quantile mode: rows of the fullest bucket */
} gs_backend_approx_job;

typedef struct gs_sort_backend
{
	const char *name;			/* "CUDA kernels", "GPU service" */

	/* Fills *info; never fails: an unusable GPU is info->usable = false
	 * with info->reason saying why. May initialise the GPU. */
	void		(*probe) (gs_gpu_info *info);

	/* The sorts and the min-max. On failure last_error() says why. */
	gs_status	(*sort) (gs_backend_sort_job *job, gs_backend_timing *timing);
	gs_status	(*approx_sort) (gs_backend_approx_job *job, gs_backend_timing *timing);
	/* NULL where the backend cannot (the engine then sorts such rows one
	 * word per sort, gathering each word on the host) */
	gs_status	(*sort_words) (gs_backend_words_job *job, gs_backend_timing *timing);
	/* approx_sort does the quantile mode too (false: the CPU does it) */
	bool		approx_quantile;
	gs_status	(*minmax) (const uint64_t *keys, size_t n, uint64_t *min_key,
						   uint64_t *max_key, gs_backend_timing *timing);

	/* Page-locked host memory for fast transfers; NULL where the backend
	 * has none (the engine then uses malloc). */
	gs_status	(*host_alloc) (size_t bytes, void **pointer);
	void		(*host_free) (void *pointer);

	/* What the last failure of this thread (or process) was. */
	const char *(*last_error) (void);
} gs_sort_backend;

/* The process's backend: set once, before the first sort (NULL: none). */
extern void gs_engine_set_backend(const gs_sort_backend *backend);
extern const gs_sort_backend *gs_engine_backend(void);

/* The CUDA kernels in this process (backend_kernels.c): defined only
 * where the kernels are linked. */
extern const gs_sort_backend gs_kernels_backend;

#ifdef __cplusplus
}
#endif

#endif							/* GPUSORT_SORT_BACKEND_H */
