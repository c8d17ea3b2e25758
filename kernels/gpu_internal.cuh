/*
 * gpu_internal.cuh — the CUDA layer's device-resident entry points: the
 * sorts on data already in device memory, shared by the C entry points
 * (which add the transfers) and by the benchmark (bench/bench_kernels.cu),
 * which times them without transfers. Every function queues work on the
 * job's stream and returns without waiting; memory it allocates for itself
 * is released (stream-ordered) before it returns.
 */
#ifndef GPUSORT_GPU_INTERNAL_CUH
#define GPUSORT_GPU_INTERNAL_CUH

#include "gpu_common.cuh"
#include "interval_map.h"

namespace gs_gpu {

/* ------------------------------------------------------------------------
 * Sorting networks (gpu_networks.cu)
 * ------------------------------------------------------------------------ */

/* What the network compares. */
enum ElementKind
{
	ELEMENT_U32 = 0,			/* 32-bit keys only */
	ELEMENT_U64,				/* 64-bit keys only */
	ELEMENT_PACKED62,			/* key << b | index below 2^62 (gs_net::Packed62) */
	ELEMENT_PAIR16				/* {uint64 key, uint32 index}, 16 bytes */
};

size_t		element_bytes(ElementKind kind);

/* What a network sorts for keys of key_bits bits, with or without the row
 * index: Packed62 when the key and b = packed_index_bits(n) fit in 62 bits. */
ElementKind network_element_kind(unsigned key_bytes, unsigned key_bits, size_t n,
								 bool with_index);
int			packed_index_bits(size_t n);

/* Kernel shapes a network may use, for tuning from the benchmark: shape i of
 * an element kind is (LOG_R, LOG_NT), 2^(LOG_R+LOG_NT) elements a group. */
int			network_shape_count(ElementKind kind);
void		network_shape(ElementKind kind, int index, int *log_r, int *log_nt);

struct NetworkTuning
{
	int			first_shape;	/* -1: the default */
	int			tile_shape;		/* -1: the default */
	int			wide_shape;		/* -1: the default */
	int			min_run_bits;	/* -1: the default (128-byte rows) */
};

/* Elements the network's buffer holds: the next power of two of n for the
 * bitonic network (padded with sentinels), n for the butterfly. */
size_t		network_buffer_length(gpu_algorithm algorithm, size_t n);

/* Number of global passes the network makes (for byte counts). */
int			network_pass_count(gpu_algorithm algorithm, ElementKind kind, size_t n,
							   const NetworkTuning *tuning);

/*
 * Sorts the first n elements of `elements` (a buffer of
 * network_buffer_length() elements) with the bitonic or butterfly network;
 * the bitonic padding is filled here.
 */
gpu_status	network_sort_device(Job &job, gpu_algorithm algorithm, ElementKind kind,
								void *elements, size_t n, const NetworkTuning *tuning);

/* keys (+ the row index i of each key) -> network elements, and back. */
gpu_status	pack_elements(Job &job, ElementKind kind, const void *keys, unsigned key_bytes,
						  size_t n, void *elements);
gpu_status	unpack_elements(Job &job, ElementKind kind, const void *elements, size_t n,
							void *keys, unsigned key_bytes, uint32_t *row_index);

/* row_index[i] = first + i */
gpu_status	iota_device(Job &job, uint32_t *row_index, size_t n, uint32_t first);

/* ------------------------------------------------------------------------
 * Radix sort through CUB (gpu_radix.cu)
 * ------------------------------------------------------------------------ */

/* Temporary storage CUB asks for. */
gpu_status	radix_temp_bytes(unsigned key_bytes, unsigned key_bits, size_t n,
							 bool with_index, size_t *bytes);

/*
 * Sorts keys (and the row index, which must hold 0..n-1) by their low
 * key_bits bits, ping-ponging with the _alt buffers; *in_alt says where the
 * result landed.
 */
gpu_status	radix_sort_device(Job &job, unsigned key_bytes, unsigned key_bits, size_t n,
							  void *keys, void *keys_alt, uint32_t *row_index,
							  uint32_t *row_index_alt, bool *in_alt);

/* ------------------------------------------------------------------------
 * Merging two sorted runs (gpu_merge.cu)
 * ------------------------------------------------------------------------ */
struct MergeRuns
{
	unsigned	key_bytes;		/* 4 or 8 */
	const void *a_keys;			/* run A: sorted, and before B in input order */
	const uint32_t *a_index;	/* or NULL (keys only) */
	size_t		na;
	const void *b_keys;
	const uint32_t *b_index;
	size_t		nb;
	void	   *out_keys;		/* na + nb; overlaps neither run */
	uint32_t   *out_index;		/* or NULL */
};

/* The merge works in tiles of merge_output_per_tile() outputs. */
size_t		merge_tile_count(size_t n);
size_t		merge_output_per_tile();

/* splits[t] (merge_tile_count(na + nb) + 1 entries, device memory): how many
 * of tile t's predecessors' outputs come from A. */
gpu_status	merge_splits_device(Job &job, const MergeRuns &runs, size_t *splits);

/* Writes output tiles first_tile .. first_tile + tile_count - 1 (needs the
 * splits); equal keys keep A before B. */
gpu_status	merge_tiles_device(Job &job, const MergeRuns &runs, const size_t *splits,
							   size_t first_tile, size_t tile_count);

/* ------------------------------------------------------------------------
 * Exact sort of device-resident keys (gpu_sort.cu): picks the element
 * kind, packs, sorts, unpacks.
 * ------------------------------------------------------------------------ */
struct ExactLayout
{
	size_t		key_capacity;	/* elements the keys buffer must hold */
	bool		needs_alt;		/* radix: alternate keys (and index) buffers */
	ElementKind element_kind;
	size_t		element_count;	/* a separate element buffer, 0 = sort in place */
	size_t		temp_bytes;		/* scratch allocated inside (CUB) */
	size_t		total_bytes;	/* everything, keys and index included */
};

gpu_status	exact_sort_layout(gpu_algorithm algorithm, unsigned key_bytes, unsigned key_bits,
							  size_t n, bool with_index, ExactLayout *layout);

struct ExactBuffers
{
	void	   *keys;			/* layout.key_capacity keys, n of them filled */
	uint32_t   *row_index;		/* n, or NULL for keys only */
	void	   *keys_alt;		/* radix only */
	uint32_t   *row_index_alt;	/* radix with index only */
	void	   *elements;		/* networks with index only */
};

/* Sorts; the result is in keys/row_index, or in the _alt buffers when
 * *in_alt (radix only). */
gpu_status	exact_sort_device(Job &job, gpu_algorithm algorithm, unsigned key_bytes,
							  unsigned key_bits, size_t n, const ExactLayout &layout,
							  const ExactBuffers &buffers, const NetworkTuning *tuning,
							  bool *in_alt);

/* ------------------------------------------------------------------------
 * Min and max (gpu_minmax.cu)
 * ------------------------------------------------------------------------ */

/* Scratch memory minmax_device allocates. */
size_t		minmax_temp_bytes(size_t n, unsigned key_bytes);

/* result[0] = min, result[1] = max (device memory, 2 uint64). */
gpu_status	minmax_device(Job &job, const void *keys, unsigned key_bytes, size_t n,
						  uint64_t *result);

/* ------------------------------------------------------------------------
 * Approximate interval sort (gpu_approx.cu)
 * ------------------------------------------------------------------------ */

/* What the approximate sort leaves in device memory for the host. */
struct ApproxResult
{
	uint64_t	min_key;
	uint64_t	max_key;
	uint64_t	valid_outputs;
	uint64_t	cut;			/* last interval written */
	gs_interval_map map;		/* made once from min and max, read by every
								 * block of the counting and scattering */
	uint32_t	largest;		/* quantile mode: the fullest bucket's count */
};

/* The quantile mode (interval_map.h): `intervals` splitter intervals make
 * 2 * intervals - 1 buckets, the sample drawn with this seed. */
struct ApproxQuantile
{
	uint64_t	seed;
};

/* Device memory the quantile mode adds: the sample twice (CUB sorts it
 * from one copy into the other), the splitters and their map. */
size_t		approx_quantile_bytes(size_t n, uint32_t intervals);

enum ApproxScatter
{
	APPROX_SCATTER_PARTITION = 0,	/* tiles ranked in shared memory and
									 * written in runs (the default) */
	APPROX_SCATTER_CURSORS		/* the paper's: one global atomic per key */
};

/* The partition's thread blocks: threads x keys per thread (gpu_approx.cu
 * says how many per SM, and which the default picks). */
enum ApproxShape
{
	APPROX_SHAPE_DEFAULT = 0,
	APPROX_SHAPE_512x8,
	APPROX_SHAPE_384x8,
	APPROX_SHAPE_320x8
};

/* How the scatter claims output slots (benchmark tuning; NULL = default). */
struct ApproxTuning
{
	ApproxScatter scatter;
	int			single_pass_max;	/* partition: up to this many intervals in
									 * one pass (0 = default) */
	ApproxShape first_shape;	/* partition: the first (or only) pass */
	ApproxShape second_shape;	/* partition: the second pass */
};

size_t		approx_temp_bytes(size_t n, unsigned key_bytes, uint32_t intervals,
							  const ApproxTuning *tuning);

/*
 * Writes the keys of intervals 0 .. cut (and their row index, if out_index)
 * to out_keys in interval order; `result` (device memory) receives min,
 * max, the interval map, cut and the number of outputs written. The keys
 * must be 16-byte aligned (device allocations are) and fewer than 2^32.
 * With `quantile` (else NULL), the intervals are the quantile mode's
 * buckets, cut and the map count in buckets, and result->largest is set
 * (the map's splitters are gone when this returns).
 */
gpu_status	approx_sort_device(Job &job, const void *keys, unsigned key_bytes, size_t n,
							   uint32_t intervals, size_t limit, void *out_keys,
							   uint32_t *out_index, ApproxResult *result,
							   const ApproxTuning *tuning,
							   const ApproxQuantile *quantile = nullptr);

}								/* namespace gs_gpu */

#endif							/* GPUSORT_GPU_INTERNAL_CUH */
