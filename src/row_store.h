/*
 * row_store.h — the rows of one GpuSort: gathered, sorted, read back.
 *
 * The GpuSort node (executor.c) puts its child's rows in, asks for the sort
 * once, then reads the rows back in order, as nodeSort.c does with
 * tuplesort.c. The store keeps its memory within work_mem: rows that
 * outgrow it are sorted (on the GPU when one is usable) and written as a
 * sorted run to a temporary file, and the runs are merged as they are read;
 * or, with the GPU service, they are held and sorted in a GPU's memory.
 */
#ifndef GPUSORT_ROW_STORE_H
#define GPUSORT_ROW_STORE_H

#include "gpusort.h"

#include "executor/tuptable.h"
#include "storage/buffile.h"

typedef struct RowStore RowStore;

/* What the sort does; everything comes from the plan and the settings as
 * the node starts. */
typedef struct RowStoreSpec
{
	const GpuSortPlanInfo *plan;
	const GpuSortType *key_types[GS_MAX_KEY_COLUMNS];
	TupleDesc	tuple_desc;		/* of the rows (the node's scan tuples) */
	Size		work_mem_bytes;
	int64		bound;			/* keep only the first `bound` rows; 0: all */
	bool		random_access;	/* backward reads, rewind, mark/restore */
	bool		approximate;	/* approximate order (in memory only) */
	int			intervals;		/* ... with this many intervals */
	gs_approx_mode approx_mode; /* ... cut so */
	double		expected_rows;	/* the planner's estimate, to size arrays */
	FileSet    *share_files;	/* a parallel share's runs go here ... */
	int			share;			/* ... named with this share's number */
	bool		sample_runs;	/* ... noting samples for a merge by key ranges */
	bool		spill_to_gpu;	/* beyond work_mem, rows may go to a GPU's
								 * memory (read through row_store_sort only) */
	struct ServiceRowsShared *gpu_share;	/* a parallel share: its rows go to
											 * this shared rows job first */
	/* a string key whose prefix the store narrows to what its first rows
	 * need (NULL: none), the type its key readers encode with, and its
	 * first key column */
	GpuSortType *prefix_choice;
	int			prefix_choice_key;

	/*
	 * A parallel share's choice, agreed with the other shares (whose rows
	 * the GPU sorts and the leader merges with its, encoded alike): called
	 * once with the bytes this store's rows call for (the widest where it
	 * saw no value) and the rows it looked at; returns the bytes every
	 * share uses (the first share's to choose) and sets *rows_looked_at
	 * to the rows that share looked at. NULL: the store's choice stands.
	 */
	int			(*agree_prefix) (void *arg, int bytes, int64 *rows_looked_at);
	void	   *agree_prefix_arg;
	/* the leader's merge of the shares: the rows the agreed width was
	 * chosen from (with spec.prefix_choice's prefix_bytes the width, 0
	 * the widest) */
	int64		prefix_rows_looked_at;
} RowStoreSpec;

/* How the sort went, for EXPLAIN ANALYZE. */
typedef struct RowStoreStats
{
	int64		rows_read;		/* rows put in */
	size_t		rows_sorted;	/* rows kept and sorted (all runs together) */
	size_t		rows_out;		/* rows the store gives back */
	bool		approximate;	/* the rows came back in approximate order */
	int			pruned;			/* bounded: times the kept rows were cut */
	int			group_prunes;	/* top-N per group: times the rows in memory
								 * were cut to their groups' first rows */
	int64		rows_skipped;	/* top-N per group: rows dropped as their
								 * groups' later rows */
	Size		peak_memory;	/* bytes of memory, as allocated */

	/* external sort: sorted runs in temporary files, merged */
	bool		external;
	int			runs;			/* sorted runs in files written while
								 * gathering (not the GPU's run) */
	int			merge_passes;	/* merges before the last, when too many runs */
	int64		disk_bytes;		/* the most bytes on disk at one time */
	int64		gpu_run_rows;	/* of them held in a GPU's memory instead */
	int64		gpu_run_bytes;
	bool		gpu_run_given_back; /* ... until the service moved them to a
									 * file of its own for a waiting sort */

	/* the engine's sorts, all runs together */
	int			sorts;			/* sorts the engine ran (one per run) */
	int			gpu_sorts;		/* of them on a GPU */
	int			gpu_index;		/* the last of those's GPU */
	gs_sort_report report;
	unsigned	layout_words;
	double		sort_ms;		/* in the engine */
	double		write_ms;		/* writing runs */
	double		merge_ms;		/* merge passes before reading */
	/* a partitioned merge: key ranges, and how many parallel workers merged */
	int			partitions;
	int			partitions_by_workers;
	/* prefix keys: ties put in order by PostgreSQL's comparator */
	int64		tie_groups;		/* groups of rows tied after a sort */
	int64		tie_rows;		/* rows in them */
	int64		tie_comparisons;	/* comparisons of tied rows in merges */
	/* a prefix chosen from the rows: its bytes of value, from how many */
	int			prefix_bytes_chosen;	/* 0: none chosen */
	int64		prefix_sample_rows;
} RowStoreStats;

extern RowStore *row_store_begin(const RowStoreSpec *spec);
extern void row_store_put(RowStore *store, TupleTableSlot *slot);
extern bool row_store_wants(RowStore *store, const uint64_t *keys, const bool *nulls);
extern void row_store_keep(RowStore *store, const uint64_t *keys, const bool *nulls,
						   TupleTableSlot *slot);
extern void row_store_sort(RowStore *store);

/*
 * Parallel sorts (parallel_sort.c): each process sorts its share of the
 * rows into sorted runs, in exact order whatever the opt-in, as files of
 * the shared file set spec.share_files (named by
 * row_store_share_file_name()) or, without one, private temporary files;
 * the leader merges the runs of every share as one store merges its own.
 * row_store_finish_share() replaces row_store_sort(): it merges the runs
 * down to at most max_runs and hands them over (shared files closed,
 * private ones open). row_store_begin_merge() takes files over (closing
 * them at the end); the store is then sorted and read as any other.
 *
 * With spec.gpu_share, a share's rows go first, unsorted, to a rows job
 * of the GPU service that every share appends to (service.h); only what
 * does not fit its room becomes runs. row_store_finish_share() then says
 * in *gpu_part how many rows (and bytes) the share put there. The leader
 * passes each share's part, with `gpu` set to the job it opened, to
 * row_store_begin_merge(), which makes them one run that the service
 * sorts: read straight from the GPU when it holds every row, else merged
 * with the files.
 *
 * A string key's prefix chosen from the rows (spec.prefix_choice): each
 * share holds its first rows (PREFIX_SAMPLE_ROWS, or fewer where its
 * memory fills or its rows end first) before any goes to the job or a
 * file, and chooses through spec.agree_prefix, so that every
 * share encodes at the width the first to choose found; the leader's
 * merge is begun with that width set in its spec.prefix_choice (its
 * ties are resolved from there).
 */
typedef struct RowStoreRun
{
	BufFile    *file;			/* a private file, or NULL: a shared one */
	int			file_number;	/* the shared file's number, or -1 */
	int			share;			/* the share that wrote the shared file */
	int64		rows;
	int64		bytes;
	int64		nsamples;		/* in its samples file (see below) */
	gs_key_column columns[GS_MAX_KEY_COLUMNS];	/* its keys' ranges */
	/* a share's part of a shared rows job (no file): the job, as the
	 * process that opened it holds it, and the share's largest record */
	struct ServiceRows *gpu;
	Size		largest_record;
} RowStoreRun;

extern void row_store_share_file_name(char *name, size_t size, int share, int file_number);
extern int	row_store_finish_share(RowStore *store, int max_runs, RowStoreRun **runs,
								   RowStoreRun *gpu_part);
extern int	row_store_merge_order(Size work_mem_bytes);
/* Bytes of a run file's record of a `tuple_length`-byte tuple with `nkeys`
 * keys (in a run read forward). */
extern Size row_store_file_record_bytes(int nkeys, Size tuple_length);
extern int	row_store_cascade_order(Size work_mem_bytes);
/* Room to ask a GPU rows job for, for `rows` rows of `record_bytes` as
 * records: twice that, and at least 64 MB. */
extern uint64 row_store_gpu_room(double rows, Size record_bytes);
extern RowStore *row_store_begin_merge(const RowStoreSpec *spec, int nruns,
									   const RowStoreRun *runs);
/*
 * A partitioned merge (parallel_sort.c): the key space is cut at
 * splitters into ranges, every run holding a part of each; a range of all
 * runs merges on its own, and the ranges in turn are the whole order. The
 * leader reads them in turn, merging a range itself or reading the file a
 * parallel worker merged it into, whichever its source says.
 *
 * A share's runs, when spec.sample_runs, note samples (a record's offset
 * and keys, every few kB) as they are written, each run to a file of the
 * shared set named by row_store_share_samples_name(); no sample stays in
 * memory. The leader's merge reads them from the set twice, a run at a
 * time: row_store_choose_splitters() keeps a bounded subsample to cut the
 * key space; row_store_find_partitions() finds where each range starts in
 * each run and writes those offsets to a file, from which the other
 * processes' stores, opened on the same runs in the same order, take them
 * (row_store_set_partitions()). row_store_write_partition() merges one
 * range into a file; it gives up, returning false, once *stop is set (the
 * leader will read no more).
 */
#define ROW_STORE_MAX_PARTITIONS 64

typedef struct RowStoreKey
{
	uint64_t	keys[GS_MAX_KEY_COLUMNS];
	bool		nulls[GS_MAX_KEY_COLUMNS];
} RowStoreKey;

/* Partition p: true when the caller is to merge it itself (claimed);
 * false with the file a worker merged it into, open for reading. */
typedef bool (*RowStorePartitionSource) (void *arg, int partition, BufFile **file);

extern void row_store_share_samples_name(char *name, size_t size, int share, int file_number);
extern int64 row_store_total_bytes(const RowStore *store);
extern int	row_store_choose_splitters(RowStore *store, FileSet *samples_files, int partitions,
									   RowStoreKey *splitters);
extern void row_store_find_partitions(RowStore *store, FileSet *samples_files, int npartitions,
									  const RowStoreKey *splitters, BufFile *starts);
extern void row_store_set_partitions(RowStore *store, int npartitions,
									 const RowStoreKey *splitters, BufFile *starts);
extern bool row_store_write_partition(RowStore *store, int partition, BufFile *file,
									  const volatile bool *stop);
extern void row_store_read_partitions(RowStore *store, RowStorePartitionSource source,
									  void *arg);

/* The next row in `forward` direction into `slot` (a minimal tuple slot),
 * valid until the next call; false, with the slot cleared, past either end. */
extern bool row_store_get(RowStore *store, bool forward, TupleTableSlot *slot);
extern bool row_store_rewindable(const RowStore *store);
extern void row_store_rewind(RowStore *store);
extern void row_store_mark(RowStore *store);
extern void row_store_restore(RowStore *store);
extern const RowStoreStats *row_store_stats(RowStore *store);
extern void row_store_end(RowStore *store);

#endif							/* GPUSORT_ROW_STORE_H */
