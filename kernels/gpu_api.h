/*
 * gpu_api.h — the C ABI of the CUDA layer.
 *
 * Everything under kernels/ is reached through these functions only. They
 * never throw, never call back into PostgreSQL, and report every CUDA failure
 * as a status code plus a message (gpu_last_error()). Device memory is taken
 * per call and given back before the call returns, whatever happens, so a
 * failed or interrupted sort leaves nothing behind on the GPU.
 *
 * CUDA is initialised on the first call that needs it, never earlier: a
 * process that forks after initialising CUDA leaves its children unable to
 * use the GPU, and PostgreSQL's postmaster forks every backend.
 *
 * Who calls it: gpusort-gpud (service/gpud/device_cuda.c), and the engine
 * through engine/backend_kernels.c, which offers these functions as one
 * of its GPU backends (engine/sort_backend.h); the unit tests, GPU checks
 * and benchmarks. A build without CUDA links none of kernels/.
 */
#ifndef GPUSORT_GPU_API_H
#define GPUSORT_GPU_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interval_map.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gpu_status
{
	GPU_OK = 0,
	GPU_UNAVAILABLE,			/* no driver, no device */
	GPU_OUT_OF_MEMORY,			/* device memory, or over the caller's cap */
	GPU_FAILED,					/* any other CUDA error */
	GPU_INTERRUPTED,			/* the poll function asked to stop */
	GPU_INVALID					/* bad arguments */
} gpu_status;

typedef enum gpu_algorithm
{
	GPU_ALGO_BITONIC = 0,
	GPU_ALGO_BUTTERFLY,
	GPU_ALGO_RADIX
} gpu_algorithm;

/* Returns true to ask a running GPU job to stop at its next checkpoint. */
typedef bool (*gpu_poll_fn) (void *arg);

typedef struct gpu_device_info
{
	bool		built_with_cuda;
	bool		usable;
	char		reason[256];	/* why not usable */
	char		name[256];
	int			compute_major;
	int			compute_minor;
	int			multiprocessors;
	size_t		total_memory;
	size_t		free_memory;
	int			driver_version;
	int			runtime_version;
} gpu_device_info;

typedef struct gpu_timing
{
	float		upload_ms;
	float		sort_ms;
	float		download_ms;
	size_t		device_bytes;	/* device memory the job held */
} gpu_timing;

/* Exact sort of keys (uint32_t or uint64_t) in host memory (pinned or not),
 * in place. With row_index, it also receives the permutation (the input
 * position of each output) and ties keep input order. */
typedef struct gpu_sort_job
{
	size_t		n;
	unsigned	key_bytes;		/* 4 or 8 */
	unsigned	key_bits;		/* keys < 2^key_bits */
	void	   *keys;
	uint32_t   *row_index;		/* or NULL; receives the permutation */
	gpu_algorithm algorithm;
	size_t		memory_limit;	/* bytes; 0 = no cap */
	gpu_poll_fn poll;
	void	   *poll_arg;
	/* Radix sorts of pinned host memory can overlap the transfers with the
	 * sort: the keys go up in chunks, each sorted as soon as it is there,
	 * and the merged result comes back in pieces while the rest is still
	 * being merged. 0 = decide (large sorts overlap), 1 = never, 2, 4 or
	 * 8 = that many chunks at any size (tests and the benchmark). Ignored
	 * for pageable memory and the networks. */
	unsigned	chunks;
	/* out: set once results start landing in host memory; after that a
	 * failure leaves the host arrays neither input nor output */
	bool		host_data_touched;
} gpu_sort_job;

/* Exact sort of n rows by several words each (gpu_sort_words.cu): words
 * holds word w of row r at words[w * n + r], word 0 deciding first, word w
 * below 2^word_bits[w]. row_index receives the rows in order, ties in input
 * order; words is only read, so a failure leaves the input as it was. */
#define GPU_MAX_KEY_WORDS 16

typedef struct gpu_sort_words_job
{
	size_t		n;
	unsigned	nwords;			/* 1 .. GPU_MAX_KEY_WORDS */
	const unsigned *word_bits;
	const uint64_t *words;
	uint32_t   *row_index;
	size_t		memory_limit;	/* bytes; 0 = no cap */
	gpu_poll_fn poll;
	void	   *poll_arg;
} gpu_sort_words_job;

/* Approximate (interval) sort. The GPU finds the keys' min and max, cuts
 * [min, max] into `intervals` equal-width intervals exactly as
 * gs_approx_interval() (interval_map.h) does, and writes the elements of
 * intervals 0, 1, ... in that order; within an interval the order is
 * unspecified. With limit > 0 only the intervals up to the one holding output
 * number `limit` are written. With `quantile`, the intervals are the
 * 2 * intervals - 1 buckets of interval_map.h's quantile mode instead:
 * splitters from the sample that `seed` picks, the same as the CPU's. */
typedef struct gpu_approx_job
{
	size_t		n;
	unsigned	key_bytes;
	void	   *keys;
	uint32_t   *row_index;		/* or NULL; receives the permutation */
	uint32_t	intervals;
	bool		quantile;		/* quantile mode (else equal widths) */
	uint64_t	seed;			/* quantile mode: the sample's */
	size_t		limit;
	size_t		memory_limit;
	gpu_poll_fn poll;
	void	   *poll_arg;
	/* out */
	bool		host_data_touched;
	size_t		valid_outputs;
	uint64_t	min_key;
	uint64_t	max_key;
	size_t		sample_size;	/* quantile mode: keys sampled */
	size_t		largest_interval;	/* quantile mode: rows of the fullest bucket */
} gpu_approx_job;

extern gpu_status gpu_device_probe(gpu_device_info *info);

/* How many CUDA devices this process sees (CUDA_VISIBLE_DEVICES applies).
 * Initialises the driver: call it only in a process that will not fork. */
extern gpu_status gpu_device_count(int *count);
extern const char *gpu_last_error(void);

/* Whether this process's CUDA context still works, after a job failed: a
 * sticky error (an illegal address, a trap in a kernel) fails every later
 * call, and only a new process recovers from it. GPU_OK if it works. */
extern gpu_status gpu_device_check(void);

extern gpu_status gpu_sort(gpu_sort_job *job, gpu_timing *timing);
extern gpu_status gpu_approx_sort(gpu_approx_job *job, gpu_timing *timing);
extern gpu_status gpu_sort_words(gpu_sort_words_job *job, gpu_timing *timing);

/* Min and max of n uint64 keys by the min-max butterfly network. */
extern gpu_status gpu_minmax(const uint64_t *keys, size_t n,
							 uint64_t *min_key, uint64_t *max_key,
							 gpu_timing *timing);

/*
 * A spilled sort's rows in device memory (the GPU service's rows jobs):
 * unlike the sorts above, the buffer outlives the call that made it and is
 * the caller's to destroy. Bytes are appended at the end; permute lays the
 * n records (record r: lengths[r] bytes, right after record r - 1) out
 * again in `order` (order[i]: the record that goes i-th), the ordered bytes
 * replacing the input; read copies any range back.
 */
typedef struct gpu_rows gpu_rows;
extern gpu_status gpu_rows_create(size_t capacity_bytes, gpu_rows **rows);
extern gpu_status gpu_rows_append(gpu_rows *rows, const void *host, size_t bytes);
extern gpu_status gpu_rows_permute(gpu_rows *rows, const uint32_t *order,
								   const uint32_t *lengths, size_t n, gpu_timing *timing);
extern gpu_status gpu_rows_read(gpu_rows *rows, size_t offset, void *host, size_t bytes);
extern void gpu_rows_destroy(gpu_rows *rows);

/* Page-locked host memory, for fast transfers. */
extern gpu_status gpu_host_alloc(size_t bytes, void **pointer);
extern void gpu_host_free(void *pointer);

/* Page-locks memory the caller mapped (the GPU service's shared staging
 * area), so copies from and to it run at pinned speed. */
extern gpu_status gpu_host_register(void *pointer, size_t bytes);
extern void gpu_host_unregister(void *pointer);

#ifdef __cplusplus
}
#endif

#endif							/* GPUSORT_GPU_API_H */
