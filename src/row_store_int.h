/*
 * row_store_int.h — what the parts of the row store share: the RowStore
 * and its sorted runs, the layout of their records, and the functions one
 * part calls in another (row_store.c lists the parts). Only row_store*.c
 * include it; everything else goes through row_store.h.
 */
#ifndef GPUSORT_ROW_STORE_INT_H
#define GPUSORT_ROW_STORE_INT_H

#include "gpusort.h"

#include "storage/buffile.h"

#include "key_reader.h"
#include "row_store.h"
#include "service.h"
#include "tie_resolver.h"
#include "tuple_former.h"

/* How many rows ahead reading from memory prefetches tuples. */
#define PREFETCH_DISTANCE 16
/* Memory to read one run during a merge: its file's buffer and at least
 * MIN_READ_CHUNK of records read ahead. */
#define MIN_READ_CHUNK ((Size) 1024)
#define MAX_READ_CHUNK ((Size) 16 * 1024)
#define RUN_READ_BYTES ((Size) BLCKSZ + MIN_READ_CHUNK)
/* Records bound for a run gather in a buffer of this size and reach the
 * file in one write, not three (length and keys, tuple, trailing length). */
#define RUN_WRITE_BUFFER ((Size) 32 * 1024)
/* A sorted run holds MIN_RUN_ROWS rows or MIN_RUN_BYTES of memory, whichever
 * comes first, however small work_mem is: below MIN_RUN_BYTES a run may
 * take more than work_mem (as tuplesort's may), so that tiny settings do
 * not make thousands of runs. */
#define MIN_RUN_ROWS 1024
#define MIN_RUN_BYTES ((Size) 256 * 1024)
/* Fewest runs one merge pass takes, however small work_mem is. */
#define MIN_MERGE_ORDER 6
/* Rows held in a GPU's memory: room asked for, and the most read back at
 * once (within work_mem). */
#define MIN_GPU_RUN_BYTES ((Size) 64 * 1024 * 1024)
#define MAX_GPU_READ_CHUNK ((Size) 8 * 1024 * 1024)

/* With prefix keys, a group of the GPU run's rows that tie (see
 * GpuTieGroup) is sorted in memory within a quarter of work_mem, at least
 * MIN_TIE_GROUP_BYTES; a larger one by PostgreSQL's own sort, within as
 * much. */
#define MIN_TIE_GROUP_BYTES ((Size) 64 * 1024)

/* A sample of a run: a record's keys, and where it starts. */
typedef struct RunSample
{
	int64		offset;
	RowStoreKey key;
} RunSample;

/* A sorted run: in a temporary file (file_record_size() has its records'
 * layout) or in a GPU's memory (job_record_size()). */
typedef struct SortedRun
{
	BufFile    *file;
	bool		backward;		/* its records end with their length, so that
								 * it can be read backward (the final file) */
	bool		file_counted;	/* in RowStore.open_run_files */
	int			file_number;	/* in spec.share_files; -1: a private file */
	int64		rows;
	int64		bytes;
	gs_key_column columns[GS_MAX_KEY_COLUMNS];	/* its keys' ranges */
	/* a parallel share's run: its samples, written to a file of their own
	 * as the run is (int64 offset, keys, NULL flags each, in order); open
	 * only while the run is written */
	BufFile    *samples;
	int64		nsamples;
	int64		next_sample;	/* the first offset the next sample may have */
	/* a share's run merged here: the shared file it came from */
	int			source_share;
	int			source_number;
	/* a partitioned merge: where each key range starts in the run */
	int64	   *partition_starts;
	/* the rows held in a GPU's memory (file is NULL): where reading is,
	 * and the largest record */
	ServiceRows *gpu;
	int64		gpu_position;
	Size		largest_record;
	/* while rows come: 0 for a run spilled from memory, one more than its
	 * inputs' for a run merged from them (merge_newest_runs()) */
	int			level;
} SortedRun;

/* One input of a merge: a run on disk, or the sorted rows in memory. */
typedef struct MergeInput
{
	SortedRun  *run;			/* NULL: the rows in memory */
	size_t		next;			/* in memory: the next sorted row */
	uint64_t	keys[GS_MAX_KEY_COLUMNS];	/* the current row's */
	bool		nulls[GS_MAX_KEY_COLUMNS];
	MinimalTuple tuple;
	bool		done;			/* no rows left */
	const RowStoreKey *stop;	/* a partition's end: rows from here on are
								 * not its own (NULL: the run's end) */
	/* a run's records, read ahead a chunk at a time and parsed in place */
	char	   *chunk;
	Size		chunk_size;
	Size		chunk_used;		/* bytes read into the chunk */
	Size		chunk_pos;		/* where the next record starts */
} MergeInput;

/*
 * An input's current row as the merge's tournament tree compares it, in
 * 128 bits: its rank (NULLs first or last, inputs that are done after all),
 * a 64-bit word of its leading keys, and the input's number. The word packs
 * as many leading key columns as their ranges over the merge's inputs fit
 * (plan_merge_key()), each relative to its minimum and inverted for DESC;
 * a NULL in a packed column after the first sets it and the packed columns
 * after it to the end NULLs sort to. The word orders rows as the keys do
 * wherever two words differ; equal words of more than one key fall back to
 * comparing all keys. The input number breaks ties and makes every merge
 * key unique, so the merge is stable.
 */
typedef unsigned __int128 MergeKey;

#define MERGE_INPUT_BITS 28
#define MERGE_INPUT_MASK ((1 << MERGE_INPUT_BITS) - 1)
#define MERGE_RANK_SHIFT (64 + MERGE_INPUT_BITS)
#define MERGE_RANK_NULL_FIRST 0
#define MERGE_RANK_VALUE 1
#define MERGE_RANK_NULL_LAST 2
#define MERGE_RANK_DONE 3

/*
 * The GPU run read back with prefix keys (row_store_gpu.c, "ties of prefix
 * keys"): the service orders its rows by (encoded keys, row), so rows
 * whose prefixes tie where the prefix may not determine the value come
 * together but not yet in SQL order. Each such group is read whole, one
 * row past its end, and put in order before its first row is returned.
 */
typedef struct GpuTieGroup
{
	Size		budget;			/* the most a group takes in memory */
	/*
	 * The group in memory: copies of its rows, one after another in
	 * `copies` (each MAXALIGNed; `tuples` points at them once the group
	 * is whole), and their keys; `order` their order once sorted; `next` the
	 * next to return. The arrays keep their memory from group to group
	 * (within budget), so that each group does not touch new pages.
	 */
	char	   *copies;
	Size		copies_size;
	Size		copies_used;
	MinimalTuple *tuples;
	uint64_t   *keys;			/* nkeys to a row */
	bool	   *nulls;
	uint32_t   *order;
	size_t		count;
	size_t		allocated;
	size_t		next;
	Size		bytes;			/* what the group takes, counted against budget */
	/* a group larger than budget: PostgreSQL's sort of it, and the keys
	 * its rows are returned with (its first row's: those the rows tie on
	 * decide every later comparison, see next_tied_row()) */
	Tuplesortstate *spilled;
	TupleTableSlot *spill_slot;
	uint64_t	spill_keys[GS_MAX_KEY_COLUMNS];
	bool		spill_nulls[GS_MAX_KEY_COLUMNS];
	/* the row read past the group, copied: the next group's first */
	bool		have_pending;
	char	   *pending;
	Size		pending_size;
	uint64_t	pending_keys[GS_MAX_KEY_COLUMNS];
	bool		pending_nulls[GS_MAX_KEY_COLUMNS];
} GpuTieGroup;

/* Reads a GPU run's next record: its keys, NULL flags and tuple, valid
 * until the next call; false at the run's end. */
typedef bool (*GpuRecordReader) (RowStore *store, void *source, uint64_t *keys, bool *nulls,
								 MinimalTuple *tuple);

/*
 * Top-N per group (GpuSortPlanInfo.topn_kind, sort_sites.c): where a
 * stream of rows in sorted order stands in its current group, for
 * group_keeps(). Wherever the store produces sorted rows (the rows in
 * memory as they are read or pruned, a run as it is written, a merge, the
 * rows read back from a GPU run) each stream counts afresh: a row among
 * the first N of its group in the whole order, or of rank N or less, is so
 * in any part of the input that holds it, and so are the rows before it
 * (a part's stable order is the whole order's restricted to it), so
 * dropping the others of each part keeps every row the parent keeps.
 */
typedef struct GroupCounter
{
	bool		started;
	uint64_t	keys[GS_MAX_KEY_COLUMNS];	/* the last row's group and peer keys */
	bool		nulls[GS_MAX_KEY_COLUMNS];
	int64		rows;			/* of its group so far, it included */
	int64		rank;			/* its rank and dense rank in its group */
	int64		dense_rank;
} GroupCounter;

/* Where reading the output stands. */
typedef enum ReadMode
{
	READ_MEMORY,				/* the sorted rows in memory */
	READ_MERGE,					/* merging runs as rows are read (forward) */
	READ_FILE,					/* one merged file, read either way */
	READ_PARTITIONS,			/* a partitioned merge's key ranges in turn */
	READ_GPU					/* the GPU run alone, from its slot (forward) */
} ReadMode;

struct RowStore
{
	RowStoreSpec spec;
	const GpuSortPlanInfo *plan;
	int			nkeys;
	KeyReader	key_reader;
	TieResolver *ties;			/* prefix keys: orders rows their encoded
								 * keys tie (NULL: none can) */
	TupleFormer former;			/* virtual slots' rows as tuples */
	MemoryContext context;		/* the store and its files' structs */
	MemoryContext rows_context; /* the rows in memory (dropped whole) */
	MemoryContext chunks_context;	/* the merge inputs' read chunks (emptied
									 * after each merge into a run) */
	Size		memory_used;	/* what the contexts allocated */
	int			open_run_files; /* runs written here whose file, and its
								 * BLCKSZ buffer in `context`, is open */

	/* the rows in memory: tuples in arena chunks, in input order */
	char	   *arena_next;
	Size		arena_left;
	char	  **arena_chunks;	/* in the order they are filled */
	Size	   *arena_sizes;
	int			arena_nchunks;
	int			arena_max_chunks;
	int			arena_current;	/* the chunk arena_next lies in, or -1 */
	MinimalTuple *tuples;
	size_t		ntuples;
	size_t		capacity;
	uint64_t   *column_keys[GS_MAX_KEY_COLUMNS];
	bool	   *column_nulls[GS_MAX_KEY_COLUMNS];
	gs_key_column columns[GS_MAX_KEY_COLUMNS];
	gs_key_column approx_range; /* approximate: the key over all rows */
	uint32_t   *order;			/* after sorting: row numbers in order */
	MinimalTuple *sorted;		/* the tuples in output order */

	/* bounded: rows at or beyond this one are not kept */
	bool		have_threshold;
	uint64_t	threshold_keys[GS_MAX_KEY_COLUMNS];
	bool		threshold_nulls[GS_MAX_KEY_COLUMNS];
	/* bounded, when a run holds fewer than `bound` rows: the keys of the
	 * best rows written to runs so far (at most `bound`, in order, nkeys
	 * to a row), whose last becomes the threshold (note_best_keys());
	 * best_bytes of work_mem are set aside for them from the start */
	uint64_t   *best_keys;
	bool	   *best_nulls;
	size_t		nbest;
	Size		best_bytes;

	/* runs on disk */
	SortedRun **runs;
	int			nruns;
	int			run_levels;		/* the highest SortedRun.level made yet */
	int			runs_allocated;
	int			files_created;	/* in spec.share_files */
	int64		disk_bytes;
	char	   *write_buffer;	/* RUN_WRITE_BUFFER bytes, for write_record() */
	Size		write_buffered; /* bytes in it, not yet in their run's file */
	/* the run in a GPU's memory (also in runs); while gpu_run_open, every
	 * row after the first batch goes straight into the job's slot, one
	 * half filled while the service takes the other */
	SortedRun  *gpu_run;
	RowStoreRun gpu_part;		/* a parallel share's, once it sent its last */
	bool		gpu_run_tried;
	bool		gpu_run_early;	/* may go to a GPU run within work_mem */
	bool		gpu_run_open;
	GpuTieGroup *gpu_ties;		/* prefix keys: reading the GPU run */
	char	   *stream_slot;
	Size		stream_half;	/* bytes of each half */
	int			stream_side;	/* the half being filled */
	Size		stream_used;
	uint64		stream_records;
	/* READ_GPU: the ordered rows come into one half of the slot (after
	 * room for a record split between two pieces) while the other half is
	 * read; read_next .. read_end are the bytes not yet read */
	Size		read_reserve;
	int			read_side;
	char	   *read_next;
	char	   *read_end;
	int64		read_requested; /* bytes of the run asked for so far */
	Size		read_coming;	/* bytes on their way to the other half */

	/* reading */
	ReadMode	mode;
	size_t		noutputs;
	int64		position;		/* last row returned; -1 before the first */
	int64		marked_position;
	/* READ_MERGE */
	MergeInput *inputs;
	int			ninputs;
	int			inputs_allocated;
	MergeKey   *tree;			/* the tournament: see build_tree() */
	gs_key_column merge_ranges[GS_MAX_KEY_COLUMNS]; /* over the merge's inputs */
	int			packed_columns; /* key columns in a merge key's word */
	uint64_t	packed_min[GS_MAX_KEY_COLUMNS];
	uint64_t	packed_range[GS_MAX_KEY_COLUMNS];	/* max - min */
	int			packed_shift[GS_MAX_KEY_COLUMNS];	/* 64: no bits (one value) */
	uint64_t	packed_null_last[GS_MAX_KEY_COLUMNS];	/* the word's bits from
														 * this column down */
	int			last_input;		/* the input of the row last returned */
	/* READ_FILE */
	SortedRun  *final;
	int64		offset;			/* of the row at `position` (the end, past) */
	uint32		length;			/* that row's tuple length */
	int64		marked_offset;
	uint32		marked_length;
	char	   *buffer;
	Size		buffer_size;

	/* READ_PARTITIONS: the merge cut by key ranges (see row_store.h) */
	bool		sample_runs;	/* runs note samples as they are written */
	int			npartitions;
	RowStoreKey splitters[ROW_STORE_MAX_PARTITIONS - 1];
	int			partition;		/* the one being read */
	bool		partition_open;
	bool		partition_here; /* merged here; else read from its file */
	RowStorePartitionSource partition_source;
	void	   *partition_source_arg;
	SortedRun	partition_file;
	MergeInput	partition_input;

	/* top-N per group: whether the plan asks for it, whether pruning the
	 * rows in memory by it still pays (it stops once a prune keeps more
	 * than half), and where reading the output stands in its group */
	bool		topn;
	bool		group_prunes_pay;
	GroupCounter read_counter;

	/* a prefix chosen from the rows (spec.prefix_choice): not yet chosen,
	 * while every row is still in memory, encoded at the widest */
	bool		prefix_unchosen;

	RowStoreStats stats;
	bool		have_report;	/* stats.report holds a sort's */
};

/* Rows a prefix is chosen from (at most; those in memory when it must be,
 * spread over them). */
#define PREFIX_SAMPLE_ROWS 16384

/*
 * Fetches a tuple scattered in memory ahead of its use: its first two cache
 * lines, as a row of a few columns and a short text spans two (a tuple is
 * read whole, to copy it or to deform it).
 */
static inline void
prefetch_tuple(const void *tuple)
{
	__builtin_prefetch(tuple);
	__builtin_prefetch((const char *) tuple + 64);
}

/* The memory beside the rows: each open run file's buffer, and the
 * buffer records are written through once a run was written. */
static inline Size
files_memory(const RowStore *store)
{
	return (Size) store->open_run_files * BLCKSZ + (store->write_buffer ? RUN_WRITE_BUFFER : 0);
}

/* The memory the rows will take once sorted: sort_rows() adds their order;
 * what a bounded sort keeps for note_best_keys(); and the runs' file
 * buffers beside them, so that the runs written so far take their room. */
static inline Size
memory_to_sort(const RowStore *store)
{
	return store->memory_used + store->ntuples * sizeof(uint32_t) + store->best_bytes +
		files_memory(store);
}

/*
 * The length of the minimal tuple a virtual slot's values (a join's) form,
 * for tuple_former_fill() to form it where it is kept; 0 for any other
 * slot, or values PostgreSQL must form (slot_tuple_bytes()).
 */
static inline Size
formed_length(RowStore *store, TupleTableSlot *slot)
{
	return TTS_IS_VIRTUAL(slot) ? tuple_former_measure(&store->former, slot) : 0;
}

/* A record's NULL flags, one byte each, into bools: any byte but 0 is
 * NULL, as the rows check reads them (a record from the GPU service may
 * hold another non-zero byte, and a bool must hold 0 or 1). */
static inline void
read_null_flags(bool *nulls, const char *bytes, int nkeys)
{
	for (int k = 0; k < nkeys; k++)
		nulls[k] = bytes[k] != 0;
}

/* ---- order of encoded keys ---- */

/* SQL order of two rows' encoded keys: <0, 0, >0 */
static inline int
compare_keys(const RowStore *store, const uint64_t *keys_a, const bool *nulls_a,
			 const uint64_t *keys_b, const bool *nulls_b)
{
	for (int k = 0; k < store->nkeys; k++)
	{
		if (nulls_a[k] != nulls_b[k])
			return nulls_a[k] == store->plan->nulls_first[k] ? -1 : 1;
		if (!nulls_a[k] && keys_a[k] != keys_b[k])
		{
			int			order = keys_a[k] < keys_b[k] ? -1 : 1;

			return store->plan->descending[k] ? -order : order;
		}
	}
	return 0;
}

/*
 * With prefix keys (store->ties): compare_keys() up to the first prefix
 * key whose encoded words tie where its prefix may not determine its
 * value; there it stops with 0 and *undecided set, as the later keys'
 * words say nothing before the comparator has ordered that key's values.
 */
static inline int
compare_keys_tied(const RowStore *store, const uint64_t *keys_a, const bool *nulls_a,
				  const uint64_t *keys_b, const bool *nulls_b, bool *undecided)
{
	*undecided = false;
	for (int k = 0; k < store->nkeys; k++)
	{
		if (nulls_a[k] != nulls_b[k])
			return nulls_a[k] == store->plan->nulls_first[k] ? -1 : 1;
		if (nulls_a[k])
			continue;
		if (keys_a[k] != keys_b[k])
		{
			int			order = keys_a[k] < keys_b[k] ? -1 : 1;

			return store->plan->descending[k] ? -order : order;
		}
		if (store->ties->is_flag[k] && (keys_a[k] & 0xFF) != 0)
		{
			*undecided = true;
			return 0;
		}
	}
	return 0;
}

/* Are key columns [from, to) of two rows equal (NULLs equal to each other,
 * as the parent's grouping takes them)? */
static inline bool
same_keys(const uint64_t *keys_a, const bool *nulls_a, const uint64_t *keys_b,
		  const bool *nulls_b, int from, int to)
{
	for (int k = from; k < to; k++)
		if (nulls_a[k] != nulls_b[k] || (!nulls_a[k] && keys_a[k] != keys_b[k]))
			return false;
	return true;
}

/*
 * Top-N per group: does the parent keep this row, the next of a stream in
 * sorted order (see GroupCounter)? Counts it in its group.
 */
static inline bool
group_keeps(const RowStore *store, GroupCounter *counter, const uint64_t *keys,
			const bool *nulls)
{
	const GpuSortPlanInfo *plan = store->plan;
	int			groups = plan->topn_group_columns;
	int			peers = groups + plan->topn_peer_columns;
	bool		new_peers;

	if (!counter->started || !same_keys(counter->keys, counter->nulls, keys, nulls, 0, groups))
	{
		counter->started = true;
		counter->rows = 0;
		counter->rank = 0;
		counter->dense_rank = 0;
		new_peers = true;
	}
	else
		new_peers = !same_keys(counter->keys, counter->nulls, keys, nulls, groups, peers);
	counter->rows++;
	if (new_peers)
	{
		counter->rank = counter->rows;
		counter->dense_rank++;
		memcpy(counter->keys, keys, peers * sizeof(uint64_t));
		memcpy(counter->nulls, nulls, peers);
	}
	switch ((GpuSortTopNKind) plan->topn_kind)
	{
		case GPUSORT_TOPN_RANK:
			return counter->rank <= plan->topn_kept;
		case GPUSORT_TOPN_DENSE_RANK:
			return counter->dense_rank <= plan->topn_kept;
		default:
			return counter->rows <= plan->topn_kept;
	}
}

/* The keys of entry i of keys_in / nulls_in, nkeys to an entry. */
static inline void
keys_of(const RowStore *store, size_t i, const uint64_t *keys_in, const bool *nulls_in,
		uint64_t *keys, bool *nulls)
{
	memcpy(keys, keys_in + i * store->nkeys, store->nkeys * sizeof(uint64_t));
	memcpy(nulls, nulls_in + i * store->nkeys, store->nkeys);
}

/* Sets entry i of the best rows' keys (note_best_keys()). */
static inline void
set_best_keys(RowStore *store, size_t i, const uint64_t *keys, const bool *nulls)
{
	memcpy(store->best_keys + i * store->nkeys, keys, store->nkeys * sizeof(uint64_t));
	memcpy(store->best_nulls + i * store->nkeys, nulls, store->nkeys);
}

/* The keys of the i-th row in memory in sorted order (store->order). */
static inline void
sorted_keys_of(const RowStore *store, size_t i, uint64_t *keys, bool *nulls)
{
	uint32_t	row = store->order[i];

	for (int k = 0; k < store->nkeys; k++)
	{
		keys[k] = store->column_keys[k][row];
		nulls[k] = store->column_nulls[k][row];
	}
}

/*
 * A record in a GPU run and in the slot between it and this process
 * (service/protocol.h, GS_JOB_ROWS): the tuple's length, its keys and NULL
 * flags, padding, the tuple at a multiple of 8 bytes, padding, and the
 * length again as its last four bytes; its size is a multiple of 8. So
 * from an aligned start every tuple is MAXALIGNed where it lies.
 */
static inline Size
job_record_size(const RowStore *store, uint32 tuple_length)
{
	return gs_row_record_bytes(store->nkeys, tuple_length);
}

static inline Size
job_header_size(const RowStore *store)
{
	return gs_row_header_bytes(store->nkeys);
}

/*
 * A record in a run's file, packed with no padding: the tuple's length,
 * its keys (uint64 each) and NULL flags (one byte each), the tuple
 * without its first MINIMAL_TUPLE_DATA_OFFSET bytes (its length and
 * padding, as tuplesort writes it), and, in a run read backward, the
 * length again. Whoever reads a record moves its tuple to an aligned
 * place.
 */
static inline Size
file_header_size(int nkeys)
{
	return sizeof(uint32) + nkeys * (sizeof(uint64_t) + 1);
}

#define MAX_FILE_HEADER (sizeof(uint32) + GS_MAX_KEY_COLUMNS * (sizeof(uint64_t) + 1))

static inline Size
file_record_size(const RowStore *store, uint32 tuple_length, bool backward)
{
	return row_store_file_record_bytes(store->nkeys, tuple_length) +
		(backward ? sizeof(uint32) : 0);
}

/* A file record's length, checked. */
static inline uint32
file_record_length(const char *record)
{
	uint32		length;

	memcpy(&length, record, sizeof(length));
	if (length < MINIMAL_TUPLE_DATA_OFFSET)
		elog(ERROR, "gpusort: a temporary file of sorted rows is corrupt");
	return length;
}

/*
 * The functions one part calls in another: no part of the module's
 * interface, so hidden, as they were when they were static, from other
 * libraries (PostgreSQL 15 builds modules without -fvisibility=hidden),
 * and none of the same name elsewhere can stand in for them.
 */
#pragma GCC visibility push(hidden)

/* row_store.c: the rows in memory, full, go to a run (or the GPU) */
extern void spill_rows(RowStore *store, bool more_rows);

/* row_store_memory.c: the rows in memory, sorting them, a bounded sort's
 * pruning */
extern void count_memory(RowStore *store);
extern void allocate_rows(RowStore *store, size_t capacity);
extern bool grow_rows(RowStore *store);
extern char *slot_tuple_bytes(TupleTableSlot *slot, uint32 *length, bool *should_free);
extern MinimalTuple copy_row(RowStore *store, TupleTableSlot *slot);
extern void lower_threshold(RowStore *store, const uint64_t *keys, const bool *nulls);
extern void narrow_prefix_words(uint64_t *words, int nwords, size_t held);
extern void choose_prefix(RowStore *store);
extern void adopt_chosen_prefix(RowStore *store);
extern void sort_rows(RowStore *store, size_t limit, gs_algorithm algorithm);
extern void prune_rows(RowStore *store);
extern void prune_groups(RowStore *store);
extern bool note_best_keys(RowStore *store, size_t nout);

/* row_store_runs.c: sorted runs in temporary files */
extern void write_bytes(BufFile *file, const void *data, size_t length);
extern bool read_bytes(BufFile *file, void *data, size_t length, bool eof_allowed);
extern Size pack_fields(const RowStore *store, char *header, uint32 length,
						const uint64_t *keys, const bool *nulls);
extern void flush_records(RowStore *store, SortedRun *run);
extern void finish_run(RowStore *store, SortedRun *run);
extern bool read_sample(RowStore *store, BufFile *file, RunSample *sample);
extern void write_record(RowStore *store, SortedRun *run, const uint64_t *keys,
						 const bool *nulls, MinimalTuple tuple);
extern bool read_backward_record(RowStore *store, BufFile *file, char **buffer,
								 Size *buffer_size, uint32 *tuple_length);
extern void seek_file(BufFile *file, int64 offset);
extern SortedRun *new_run(RowStore *store);
extern void add_run(RowStore *store, SortedRun *run);
extern void drop_run(RowStore *store, SortedRun *run);
extern void write_sorted_rows(RowStore *store, SortedRun *run, size_t nout);

/* row_store_merge.c: merging sorted runs */
extern bool read_chunk_record(RowStore *store, MergeInput *input);
extern void cover_column(gs_key_column *into, const gs_key_column *column);
extern Size merge_memory(RowStore *store);
extern void start_run_input(RowStore *store, MergeInput *input, SortedRun *run,
							Size chunk_size, int64 offset, const RowStoreKey *stop);
extern void start_merge(RowStore *store, int first, int count, bool with_memory, Size memory,
						int partition);
extern MergeInput *next_merged(RowStore *store);
extern SortedRun *merge_into_run(RowStore *store, SortedRun *merged, int first, int count,
								 bool with_memory, size_t limit);
extern void merge_newest_runs(RowStore *store, size_t limit);
extern void merge_runs_down_to(RowStore *store, int order, size_t limit);
extern void open_partition(RowStore *store);
extern void close_partition(RowStore *store);

/* row_store_gpu.c: runs in a GPU's memory */
extern void measure_records(const RowStore *store, Size *total, Size *largest);
extern bool gpu_run_allowed(const RowStore *store);
extern void start_gpu_run(RowStore *store, ServiceRows *rows, bool streaming);
extern void attach_gpu_run(RowStore *store);
extern void gpu_run_failed(void);
extern bool stream_row(RowStore *store, const uint64_t *keys, const bool *nulls,
					   TupleTableSlot *slot);
extern void stop_streaming(RowStore *store);
extern void finish_gpu_part(RowStore *store);
extern bool append_to_gpu_run(RowStore *store, Size total, Size largest);
extern bool move_to_gpu_run(RowStore *store, bool more_rows);
extern void move_share_to_gpu_run(RowStore *store);
extern void sort_gpu_run(RowStore *store);
extern bool gpu_read_possible(RowStore *store);
extern void release_gpu_run(RowStore *store);
extern void start_gpu_read(RowStore *store);
extern bool next_gpu_row(RowStore *store, MinimalTuple *tuple, uint64_t *keys, bool *nulls);
extern Size gpu_tie_memory(const RowStore *store);
extern void restart_gpu_ties(RowStore *store);
extern bool next_tied_row(RowStore *store, GpuRecordReader read, void *source, uint64_t *keys,
						  bool *nulls, MinimalTuple *tuple);

#pragma GCC visibility pop

#endif							/* GPUSORT_ROW_STORE_INT_H */
