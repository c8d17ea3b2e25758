/*
 * gpusort_engine.h — the sort engine's public API (plain C, no postgres.h).
 *
 * The engine sorts arrays of unsigned integer keys, optionally carrying a
 * 32-bit row index along, with one of several algorithms, on the GPU when one
 * is usable and on the CPU otherwise. Everything SQL-specific (Datums, NULLs,
 * ASC/DESC, int2/int4/int8/float8) is turned into such keys first by the key
 * encoder declared here too, so only the sort itself differs between CPU and
 * GPU, and that part is tested against itself on every machine.
 *
 * Contract of an exact sort (bitonic, butterfly, radix):
 *   - keys come out in nondecreasing unsigned order;
 *   - when asked for, the permutation comes out too (the input position of
 *     each output), with ties in input order: a stable sort, so the result
 *     is the same permutation whatever the algorithm or device.
 * Contract of the approximate (interval) sort: see kernels/interval_map.h.
 *
 * Layering: PostgreSQL glue (src/) -> this engine (engine/) -> the GPU
 * backend its process chose at start (sort_backend.h: the GPU service's
 * client, the CUDA kernels, or none).
 * Nothing here may include PostgreSQL headers or throw (longjmp): errors are
 * status codes, and a long sort stops early when the caller's poll function
 * says so.
 */
#ifndef GPUSORT_ENGINE_H
#define GPUSORT_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../kernels/interval_map.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------ */
typedef enum gs_status
{
	GS_OK = 0,
	GS_ERR_INVALID_ARGUMENT,	/* the request itself is wrong */
	GS_ERR_OUT_OF_MEMORY,		/* host memory */
	GS_ERR_GPU_UNAVAILABLE,		/* no driver, no device, or CPU-only build */
	GS_ERR_GPU_OUT_OF_MEMORY,	/* device memory, or over the configured cap */
	GS_ERR_GPU_FAILURE,			/* any other CUDA error (launch, kernel, copy) */
	GS_ERR_INTERRUPTED,			/* the caller's poll function asked to stop */
	GS_ERR_GPU_BUSY				/* the GPU stayed busy longer than allowed */
} gs_status;

extern const char *gs_status_name(gs_status status);

/* ------------------------------------------------------------------------
 * Algorithms and devices
 * ------------------------------------------------------------------------ */
typedef enum gs_algorithm
{
	GS_ALGO_AUTO = 0,
	GS_ALGO_BITONIC,			/* Batcher's bitonic network, padded to 2^k */
	GS_ALGO_BUTTERFLY,			/* butterfly network sort (flip + half-cleaners) */
	GS_ALGO_RADIX,				/* LSD radix sort (CUB on the GPU) */
	GS_ALGO_APPROX				/* approximate interval sort */
} gs_algorithm;

#define GS_ALGORITHM_COUNT 5

extern const char *gs_algorithm_name(gs_algorithm algorithm);
/* Parses "auto", "bitonic", "butterfly", "radix" (and "approx" when allowed);
 * returns false for anything else. */
extern bool gs_algorithm_parse(const char *name, bool allow_approx,
							   gs_algorithm *result);

/* How the approximate sort cuts the keys into intervals (interval_map.h). */
typedef enum gs_approx_mode
{
	GS_APPROX_WIDTH = 0,		/* equal-width intervals of [min, max] */
	GS_APPROX_QUANTILE			/* intervals at a sample's quantiles */
} gs_approx_mode;

extern const char *gs_approx_mode_name(gs_approx_mode mode);
/* Parses "width" or "quantile"; false for anything else. */
extern bool gs_approx_mode_parse(const char *name, gs_approx_mode *result);

typedef enum gs_device
{
	GS_DEVICE_AUTO = 0,			/* the GPU when usable and worth it, else CPU */
	GS_DEVICE_GPU,				/* the GPU or an error */
	GS_DEVICE_CPU
} gs_device;

extern const char *gs_device_name(gs_device device);

/* ------------------------------------------------------------------------
 * Memory and interruption hooks supplied by the caller
 * ------------------------------------------------------------------------ */

/* Host memory for the engine's scratch buffers. NULL functions mean malloc. */
typedef struct gs_allocator
{
	void	   *(*alloc) (size_t bytes, void *context);	/* NULL on failure */
	void		(*release) (void *pointer, void *context);
	void	   *context;
} gs_allocator;

/* Called now and then during a long sort; returning true stops the sort,
 * which then returns GS_ERR_INTERRUPTED after releasing what it holds. */
typedef bool (*gs_poll_fn) (void *arg);

/* ------------------------------------------------------------------------
 * Sorting
 * ------------------------------------------------------------------------ */
typedef struct gs_sort_request
{
	size_t		n;				/* number of keys (< 2^32 - 1) */
	unsigned	key_bytes;		/* 4 (uint32_t keys) or 8 (uint64_t keys) */
	unsigned	key_bits;		/* significant low bits of every key, 0..64;
								 * keys must be < 2^key_bits */
	void	   *keys;			/* n keys, sorted in place */
	uint32_t   *row_index;		/* NULL, or room for n indices: receives the
								 * permutation (the input position of each
								 * output); ties keep input order */
	gs_algorithm algorithm;
	gs_device	device;

	/* approximate sort only */
	uint32_t	intervals;		/* number of intervals, >= 1 (quantile mode:
								 * at most GS_QUANTILE_MAX_INTERVALS) */
	gs_approx_mode approx_mode;
	uint64_t	approx_seed;	/* quantile mode: the sample's seed (0: the
								 * default, GS_QUANTILE_DEFAULT_SEED) */
	/* gs_sort_rows only: cut [approx_min_key, approx_max_key] (the column's
	 * encoded values) into intervals instead of the rows' own range */
	bool		approx_range_given;
	uint64_t	approx_min_key;
	uint64_t	approx_max_key;

	/* Only the first `limit` outputs are needed (0 = all). Exact sorts may
	 * ignore it; the approximate sort materialises only the intervals up to
	 * the one holding output `limit`. */
	size_t		limit;

	/* GPU settings */
	size_t		gpu_min_elements;	/* under AUTO, smaller sorts use the CPU */
	size_t		gpu_memory_limit;	/* bytes of device memory a sort may use;
									 * 0 = whatever the device has */

	gs_allocator allocator;
	gs_poll_fn	poll;
	void	   *poll_arg;
} gs_sort_request;

typedef struct gs_sort_report
{
	gs_device	ran_on;			/* GS_DEVICE_GPU or GS_DEVICE_CPU */
	gs_algorithm algorithm;		/* the algorithm actually used */
	gs_status	gpu_status;		/* GS_OK if the GPU sorted; otherwise why
								 * not (unavailable, or the failure that made
								 * AUTO fall back to the CPU) */
	bool		fell_back;		/* a usable GPU failed and the CPU took over */
	char		gpu_message[256];	/* the GPU's own words when gpu_status != OK */

	/* approximate sort */
	size_t		valid_outputs;	/* outputs in final position (n, or >= limit) */
	gs_interval_map interval_map;	/* the intervals it used (quantile mode:
									 * the bucket count only; the splitters
									 * are not kept) */
	gs_approx_mode approx_mode;
	size_t		sample_size;	/* quantile mode: keys sampled */
	size_t		largest_interval;	/* quantile mode: rows of the fullest
									 * bucket (all rows counted, also those
									 * past a limit's cut) */
	uint64_t	rank_bound;		/* quantile mode: D(n, intervals, sample),
								 * the distance from its exact rank every
								 * output stays within (interval_map.h) */

	/* milliseconds (GPU: measured with events) */
	double		upload_ms;
	double		sort_ms;
	double		download_ms;
	size_t		gpu_bytes;		/* device memory the sort used */
	double		queue_ms;		/* waited for the GPU (the service's queue) */
	int			gpu_index;		/* which of the service's GPUs ran it */
} gs_sort_report;

/* Adds a pass's report to a total (first: the total starts from it). */
extern void gs_sort_report_add(gs_sort_report *total, const gs_sort_report *pass,
							   bool first);

/* Fills a request with defaults (auto algorithm, auto device, malloc). */
extern void gs_sort_request_init(gs_sort_request *request);

/* Points a request at n keys of key_bytes bytes, each < 2^key_bits, and at
 * room for their row index (NULL: none wanted). */
extern void gs_sort_request_set_keys(gs_sort_request *request, void *keys, size_t n,
									 unsigned key_bytes, unsigned key_bits,
									 uint32_t *row_index);

/* Sorts as requested. On GS_OK the report says where and how. Under
 * GS_DEVICE_AUTO a failing GPU makes it sort on the CPU (report->fell_back),
 * so the only errors are bad arguments, host memory and interruption; under
 * GS_DEVICE_GPU the GPU's own failure is returned. */
extern gs_status gs_sort(const gs_sort_request *request, gs_sort_report *report);

/* The algorithm AUTO resolves to for this shape on this device. */
extern gs_algorithm gs_auto_algorithm(size_t n, unsigned key_bits,
									  bool with_index, gs_device device);

/* ------------------------------------------------------------------------
 * Min/max (the min-max butterfly network)
 * ------------------------------------------------------------------------ */
/* Min and max of request->n uint64_t keys (key_bytes 8); the request's
 * device settings apply, its algorithm is ignored. */
extern gs_status gs_minmax(const gs_sort_request *request,
						   uint64_t *min_key, uint64_t *max_key,
						   gs_sort_report *report);

/* ------------------------------------------------------------------------
 * Key encoding: SQL values -> order-preserving unsigned keys
 * ------------------------------------------------------------------------ */

/* Monotone maps into uint64: a < b  <=>  enc(a) < enc(b) (unsigned). */
static inline uint64_t
gs_encode_int64(int64_t value)
{
	return (uint64_t) value ^ ((uint64_t) 1 << 63);
}

static inline int64_t
gs_decode_int64(uint64_t key)
{
	return (int64_t) (key ^ ((uint64_t) 1 << 63));
}

/* float8 in PostgreSQL's order: -Inf < ... < -0 = +0 < ... < +Inf < NaN,
 * all NaNs equal. */
extern uint64_t gs_encode_float8(double value);
extern double gs_decode_float8(uint64_t key);

/*
 * One sort column. The caller fills type-independent settings, feeds every
 * row's encoded value (or NULL) through gs_key_column_observe(), then
 * gs_key_layout_build() packs all columns into as few 64-bit words as the
 * observed ranges allow (values are stored relative to the column's minimum,
 * so a column of int4 values in [0, 10^6] takes 20 bits, not 64).
 */
typedef struct gs_key_column
{
	bool		descending;
	bool		nulls_first;

	/* observed */
	bool		has_null;
	bool		has_value;
	uint64_t	min_key;
	uint64_t	max_key;
} gs_key_column;

extern void gs_key_column_init(gs_key_column *column, bool descending,
							   bool nulls_first);

static inline void
gs_key_column_observe(gs_key_column *column, bool is_null, uint64_t key)
{
	if (is_null)
	{
		column->has_null = true;
		return;
	}
	if (!column->has_value)
	{
		column->has_value = true;
		column->min_key = column->max_key = key;
		return;
	}
	if (key < column->min_key)
		column->min_key = key;
	if (key > column->max_key)
		column->max_key = key;
}

#define GS_MAX_KEY_COLUMNS 8
#define GS_MAX_KEY_FIELDS (2 * GS_MAX_KEY_COLUMNS)

/* A field is either a column's null flag (1 bit) or its value bits. */
typedef struct gs_key_field
{
	int			column;
	bool		is_null_flag;
	unsigned	bits;
	unsigned	word;			/* which word it lands in */
	unsigned	shift;			/* its lowest bit within the word */
} gs_key_field;

typedef struct gs_key_layout
{
	int			ncolumns;
	gs_key_column columns[GS_MAX_KEY_COLUMNS];
	int			nfields;
	gs_key_field fields[GS_MAX_KEY_FIELDS];
	unsigned	nwords;			/* 0 when every key is equal */
	unsigned	word_bits[GS_MAX_KEY_FIELDS];	/* significant bits per word */
} gs_key_layout;

extern gs_status gs_key_layout_build(gs_key_layout *layout,
									 const gs_key_column *columns, int ncolumns);

/* gs_sort_rows() packs the words (word 0 decides first); see row_sort.c. */

/*
 * Sorts n rows by `layout`, given each column's encoded values
 * (column_keys[c][row]) and NULL flags (column_nulls[c][row], or a NULL
 * array for a column without NULLs). Fills order[0..n) with row numbers in
 * SQL order, ties in input order. settings supplies algorithm, device,
 * limits and hooks (its n/keys/key_* fields are ignored). With the
 * approximate algorithm (one column only) the rows come in interval order,
 * NULLs first or last, and only report->valid_outputs of them when
 * settings->limit is set.
 */
extern gs_status gs_sort_rows(const gs_key_layout *layout, size_t n,
							  const uint64_t *const *column_keys,
							  const bool *const *column_nulls,
							  const gs_sort_request *settings, uint32_t *order,
							  gs_sort_report *report);

/* ------------------------------------------------------------------------
 * Verification helpers (tests, and optional checks of GPU results)
 * ------------------------------------------------------------------------ */

/* Keys nondecreasing, and ties ordered by index when an index is given. */
extern bool gs_check_sorted(const void *keys, unsigned key_bytes,
							const uint32_t *row_index, size_t n);

/* `after` holds the same multiset of keys as `before`. */
extern bool gs_check_permutation(const void *before_keys, const void *after_keys,
								 unsigned key_bytes, size_t n);

/* `row_index` is a permutation of 0..n-1 and after[i] == before[row_index[i]]. */
extern bool gs_check_row_permutation(const void *before_keys,
									 const void *after_keys,
									 const uint32_t *row_index,
									 unsigned key_bytes, size_t n);

/* ------------------------------------------------------------------------
 * The GPU as the engine sees it
 * ------------------------------------------------------------------------ */
typedef struct gs_gpu_info
{
	bool		usable;
	char		reason[256];	/* why not, when not usable */
	char		name[256];
	int			compute_major;
	int			compute_minor;
	int			multiprocessors;
	size_t		total_memory;
	size_t		free_memory;
	int			driver_version;	/* e.g. 13000 for 13.0 */
	int			runtime_version;
	bool		built_with_cuda;
} gs_gpu_info;

/* Probes (and on first call initialises) the process's GPU backend's GPU
 * (sort_backend.h). Never fails: an unusable GPU, or no backend, is
 * reported in info->usable / info->reason. */
extern void gs_gpu_info_get(gs_gpu_info *info);

/* Pinned host memory for transfer buffers; falls back to plain malloc when
 * no GPU is usable or its backend has none. *pinned says which it got.
 * NULL when out of memory. */
extern void *gs_host_buffer_alloc(size_t bytes, bool want_pinned, bool *pinned);
extern void gs_host_buffer_free(void *pointer, bool pinned);

#ifdef __cplusplus
}
#endif

#endif							/* GPUSORT_ENGINE_H */
