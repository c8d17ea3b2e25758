/*
 * row_store.c — the rows of one GpuSort: gathered, sorted, spilled, read back.
 *
 * Parts of the store by job have files of their own:
 *
 *   row_store_memory.c    the rows in memory: the arena, memory accounting,
 *                         sorting them, a bounded sort's pruning
 *   row_store_runs.c      sorted runs in temporary files
 *   row_store_merge.c     merging runs
 *   row_store_gpu.c       runs in a GPU's memory
 *
 * and row_store_int.h, what they share (the RowStore itself).
 *
 * Memory is counted as the memory contexts allocated it. Everything lives
 * in the store's own context and the files belong to the resource owner,
 * so an error at any row leaks nothing.
 */
#include "gpusort.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "row_store_int.h"

/* Smallest buffer of rows a bounded sort prunes: small, so that a small
 * bound has its threshold early (bench/README.md, "Top-N"). */
#define MIN_PRUNE_ROWS 1024

/* ---- the public interface ---- */

/* Must the rows in memory go to disk as a run? */
static bool
run_is_full(const RowStore *store)
{
	return memory_to_sort(store) > store->spec.work_mem_bytes &&
		(store->ntuples >= MIN_RUN_ROWS || store->memory_used >= MIN_RUN_BYTES);
}

RowStore *
row_store_begin(const RowStoreSpec *spec)
{
	MemoryContext context = AllocSetContextCreate(CurrentMemoryContext, "GpuSort row store",
												  ALLOCSET_DEFAULT_SIZES);
	RowStore   *store = MemoryContextAllocZero(context, sizeof(RowStore));
	size_t		capacity = 1024;
	Size		array_limit;
	double		expected_rows;

	store->spec = *spec;
	store->plan = spec->plan;
	store->nkeys = spec->plan->nkeys;
	store->context = context;
	store->chunks_context = AllocSetContextCreate(context, "GpuSort merge chunks",
												  ALLOCSET_SMALL_SIZES);
	key_reader_init(&store->key_reader, spec->plan->nkeys, spec->plan->key_attno,
					spec->key_types);
	tuple_former_init(&store->former, context);
	store->position = -1;
	store->sample_runs = spec->share_files != NULL && spec->sample_runs;
	store->stats.approximate = spec->approximate;
	store->gpu_run_early = spec->spill_to_gpu && spec->bound == 0 && !spec->random_access &&
		!spec->approximate && spec->share_files == NULL && spec->gpu_share == NULL;
	/* start near the planner's estimate (or what a bounded sort keeps
	 * before it prunes), within work_mem (and the memory after which the
	 * rows may go to a GPU run) */
	array_limit = spec->work_mem_bytes;
	if (store->gpu_run_early)
		array_limit = Min(array_limit, GPU_RUN_EARLY_BYTES);
	expected_rows = spec->expected_rows;
	if (spec->bound > 0)
		expected_rows = Min(expected_rows, Max(2 * (double) spec->bound, MIN_PRUNE_ROWS));
	while (capacity < expected_rows &&
		   capacity * gpusort_row_overhead(store->nkeys) * 4 < array_limit)
		capacity *= 2;
	allocate_rows(store, capacity);
	gs_key_column_init(&store->approx_range, store->plan->descending[0],
					   store->plan->nulls_first[0]);
	if (spec->bound > 0 &&
		(double) spec->bound * store->nkeys * (sizeof(uint64_t) + 1) <= spec->work_mem_bytes / 4)
		store->best_bytes = spec->bound * store->nkeys * (sizeof(uint64_t) + 1);
	if (spec->gpu_share != NULL)
		attach_gpu_run(store);
	return store;
}

/* Does a row with these keys come before the bounded sort's threshold? */
static inline bool
before_threshold(const RowStore *store, const uint64_t *keys, const bool *nulls)
{
	/* the usual case, decided by the first key */
	if (!nulls[0] && !store->threshold_nulls[0] && keys[0] != store->threshold_keys[0])
		return (keys[0] < store->threshold_keys[0]) != store->plan->descending[0];
	return compare_keys(store, keys, nulls, store->threshold_keys, store->threshold_nulls) < 0;
}

static void keep_row(RowStore *store, const uint64_t *keys, const bool *nulls,
					 TupleTableSlot *slot);

/*
 * Counts the row read; false when a bounded sort's threshold drops it. A
 * caller that reads the rows' keys itself (table_pages.c, from the table
 * page) makes the row a slot's only when this says yes, for
 * row_store_keep().
 */
bool
row_store_wants(RowStore *store, const uint64_t *keys, const bool *nulls)
{
	store->stats.rows_read++;
	/* the approximate sort's intervals span every row, kept or not */
	if (store->spec.approximate)
		gs_key_column_observe(&store->approx_range, nulls[0], keys[0]);
	return !store->have_threshold || before_threshold(store, keys, nulls);
}

/*
 * Every row the child hands over comes here (table_pages.c reads the
 * keys of the rows it finds itself); under a bound most go no further
 * than their keys, so this part stays small (keep_row() has the rest).
 */
void
row_store_put(RowStore *store, TupleTableSlot *slot)
{
	uint64_t	keys[GS_MAX_KEY_COLUMNS];
	bool		nulls[GS_MAX_KEY_COLUMNS];

	key_reader_read(&store->key_reader, slot, keys, nulls);
	if (row_store_wants(store, keys, nulls))
		row_store_keep(store, keys, nulls, slot);
}

/* A row row_store_wants() wanted, with the keys it was given. */
void
row_store_keep(RowStore *store, const uint64_t *keys, const bool *nulls,
			   TupleTableSlot *slot)
{
	if (store->gpu_run_open && stream_row(store, keys, nulls, slot))
		return;
	keep_row(store, keys, nulls, slot);
}

/*
 * Should the rows move to a GPU run before work_mem is full? An unbounded,
 * exact sort read forward once does better there from GPU_RUN_EARLY_BYTES
 * on: gathering into the service's slot, one sort of all rows and reading
 * them back in sequence cost less than keeping them in memory and reading
 * them back in sorted order (bench/README.md, "Serial sorts: rows to the
 * GPU early"). When the planner expects that much, they go from the first
 * row; otherwise once they take that much memory.
 */
static inline bool
gpu_run_due(const RowStore *store)
{
	if (!store->gpu_run_early || store->gpu_run_tried)
		return false;
	/* the planner expects that much: from the first row, none copied */
	if (store->ntuples == 1 &&
		store->spec.expected_rows * job_record_size(store, store->tuples[0]->t_len) >=
		(double) GPU_RUN_EARLY_BYTES)
		return gpu_run_allowed(store);
	return memory_to_sort(store) >= GPU_RUN_EARLY_BYTES && gpu_run_allowed(store);
}

static pg_noinline void
keep_row(RowStore *store, const uint64_t *keys, const bool *nulls, TupleTableSlot *slot)
{
	bool		bounded = store->spec.bound > 0;
	size_t		i;

	if (store->gpu_run_open)
	{
		/* stream_row() found no room left: memory and files */
		if (store->spec.gpu_share != NULL)
			finish_gpu_part(store);
		else
			stop_streaming(store);
	}

	if (store->ntuples == store->capacity && !grow_rows(store))
	{
		/* full: the run closes before this row */
		if (bounded && store->ntuples > (size_t) store->spec.bound)
			prune_rows(store);
		if (store->ntuples == store->capacity)
			spill_rows(store, true);
	}
	i = store->ntuples++;
	for (int k = 0; k < store->nkeys; k++)
	{
		store->column_keys[k][i] = keys[k];
		store->column_nulls[k][i] = nulls[k];
		gs_key_column_observe(&store->columns[k], nulls[k], keys[k]);
	}
	store->tuples[i] = copy_row(store, slot);

	if (bounded && store->ntuples >= Max((size_t) store->spec.bound * 2, MIN_PRUNE_ROWS))
		prune_rows(store);
	if (gpu_run_due(store) && move_to_gpu_run(store, true))
		return;
	if (run_is_full(store))
	{
		if (bounded && store->ntuples > (size_t) store->spec.bound)
			prune_rows(store);
		if (run_is_full(store))
			spill_rows(store, true);
	}
}

/*
 * Runs on disk: everything left in memory is sorted (and spilled when the
 * runs' read buffers would not fit beside it), and runs are merged in
 * passes until the rest fit one merge. Returns the number of rows the
 * sort gives back.
 */
static size_t
prepare_final_merge(RowStore *store)
{
	size_t		limit = store->spec.bound > 0 ? (size_t) store->spec.bound : 0;
	size_t		total;
	int			merge_order;

	/* runs on disk: an exact order, merged */
	store->stats.approximate = false;
	store->stats.external = true;
	total = store->ntuples;
	for (int r = 0; r < store->nruns; r++)
		total += (size_t) store->runs[r]->rows;
	store->stats.rows_sorted = total;

	/* the rows held in a GPU's memory take the last rows too, if there is
	 * room, and are sorted there */
	if (store->gpu_run != NULL)
	{
		if (store->ntuples > 0 && store->gpu_run_open)
		{
			Size		record_bytes,
						largest;

			measure_records(store, &record_bytes, &largest);
			if (append_to_gpu_run(store, record_bytes, largest))
			{
				MemoryContextDelete(store->rows_context);
				allocate_rows(store, 1);
			}
		}
		sort_gpu_run(store);
	}

	/* the last rows stay in memory only if the runs can be read at full
	 * speed beside them: writing them is cheaper than small chunks (the
	 * buffers of files written here are in memory_to_sort() already) */
	if (store->ntuples > 0 &&
		memory_to_sort(store) + store->nruns * MAX_READ_CHUNK +
		(Size) Max(store->nruns - store->open_run_files, 0) * BLCKSZ > store->spec.work_mem_bytes)
		spill_rows(store, false);
	else if (store->ntuples > 0)
		sort_rows(store, limit, (gs_algorithm) store->plan->algorithm);

	/* as many runs at once as their read buffers fit in work_mem */
	merge_order = Max(MIN_MERGE_ORDER,
					  (int) Min((Size) INT_MAX / 2, merge_memory(store) / RUN_READ_BYTES));
	merge_runs_down_to(store, merge_order, limit);
	return limit > 0 ? Min(total, limit) : total;
}

void
row_store_sort(RowStore *store)
{
	size_t		limit = store->spec.bound > 0 ? (size_t) store->spec.bound : 0;

	if (store->mode == READ_PARTITIONS)
		return;					/* row_store_read_partitions() set it up */
	/* no more runs to write: the best rows' keys have done their job */
	if (store->best_keys != NULL)
	{
		pfree(store->best_keys);
		pfree(store->best_nulls);
		store->best_keys = NULL;
		store->best_nulls = NULL;
	}
	store->best_bytes = 0;

	if (store->nruns == 0)
	{
		bool		approximate = store->spec.approximate;

		store->stats.rows_sorted = store->ntuples;
		sort_rows(store, limit, approximate ? GS_ALGO_APPROX : (gs_algorithm) store->plan->algorithm);
		if (approximate)
			store->noutputs = store->stats.report.valid_outputs;
		else
			store->noutputs = limit > 0 ? Min(store->ntuples, limit) : store->ntuples;

		/* tuple pointers in output order: reading then goes in sequence */
		store->sorted = MemoryContextAllocHuge(store->rows_context,
											   Max(store->noutputs, 1) * sizeof(MinimalTuple));
		for (size_t i = 0; i < store->noutputs; i++)
		{
			if (i + PREFETCH_DISTANCE < store->noutputs)
				__builtin_prefetch(&store->tuples[store->order[i + PREFETCH_DISTANCE]]);
			store->sorted[i] = store->tuples[store->order[i]];
		}
		pfree(store->order);
		store->order = NULL;
		count_memory(store);
		store->mode = READ_MEMORY;
		store->stats.rows_out = store->noutputs;
		return;
	}

	store->noutputs = prepare_final_merge(store);
	if (store->spec.random_access)
	{
		/* one file, read either way */
		store->final = new_run(store);
		store->final->backward = true;
		merge_into_run(store, store->final, 0, store->nruns, store->ntuples > 0, limit);
		store->runs[0] = store->final;
		store->nruns = 1;
		MemoryContextDelete(store->rows_context);
		allocate_rows(store, 1);
		store->mode = READ_FILE;
		store->position = -1;
	}
	else if (gpu_read_possible(store))
	{
		start_gpu_read(store);
		store->mode = READ_GPU;
	}
	else
	{
		start_merge(store, 0, store->nruns, store->ntuples > 0, merge_memory(store), -1);
		store->mode = READ_MERGE;
	}
	store->stats.rows_out = store->noutputs;
}

/* Opens the samples file of run r of a merge of shares' runs. */
static BufFile *
open_samples(RowStore *store, FileSet *samples_files, int r)
{
	SortedRun  *run = store->runs[r];
	char		name[MAXPGPATH];

	if (run->source_share < 0)
		elog(ERROR, "gpusort: a sorted run to merge by key ranges is not a share's");
	row_store_share_samples_name(name, sizeof(name), run->source_share, run->source_number);
	return BufFileOpenFileSet(samples_files, name, O_RDONLY, false);
}

/* A kept sample and the bytes of its run up to the next one kept. */
typedef struct WeightedSample
{
	RowStoreKey key;
	int64		bytes;
} WeightedSample;

static int
compare_weighted_samples(const void *a, const void *b, void *arg)
{
	const RowStoreKey *x = &((const WeightedSample *) a)->key;
	const RowStoreKey *y = &((const WeightedSample *) b)->key;

	return compare_keys((const RowStore *) arg, x->keys, x->nulls, y->keys, y->nulls);
}

/*
 * Up to partitions - 1 splitters that cut the runs' bytes into ranges of
 * about equal size, from the runs' samples (each standing for the bytes up
 * to the next); returns the number of ranges, fewer where keys repeat.
 * Every stride-th sample of a run is kept, the stride chosen so that those
 * kept take at most a quarter of work_mem (and 64K of them at most).
 */
int
row_store_choose_splitters(RowStore *store, FileSet *samples_files, int partitions,
						   RowStoreKey *splitters)
{
	int64		most = Max(1024, Min(65536, (int64) (store->spec.work_mem_bytes / 4 /
													  sizeof(WeightedSample))));
	int64		all = 0,
				stride,
				capacity = 0,
				count = 0,
				total = 0,
				seen = 0;
	int			chosen = 0;
	WeightedSample *samples;

	partitions = Max(1, Min(partitions, ROW_STORE_MAX_PARTITIONS));
	for (int r = 0; r < store->nruns; r++)
		all += store->runs[r]->nsamples;
	stride = Max(1, (all + most - 1) / most);
	for (int r = 0; r < store->nruns; r++)
		capacity += (store->runs[r]->nsamples + stride - 1) / stride;
	samples = MemoryContextAllocHuge(store->context, Max(capacity, 1) * sizeof(WeightedSample));
	store->stats.peak_memory = Max(store->stats.peak_memory,
								   store->memory_used + capacity * sizeof(WeightedSample));
	for (int r = 0; r < store->nruns; r++)
	{
		SortedRun  *run = store->runs[r];
		BufFile    *file = open_samples(store, samples_files, r);
		RunSample	sample;
		int64		last_kept = -1;

		for (int64 i = 0; read_sample(store, file, &sample); i++)
		{
			if (i >= run->nsamples || sample.offset < 0 || sample.offset >= run->bytes)
				elog(ERROR, "gpusort: a file of a sorted run's samples is corrupt");
			if (i % stride != 0)
				continue;
			/* the last kept one stands for the bytes up to this one */
			if (last_kept >= 0)
				samples[last_kept].bytes = sample.offset - samples[last_kept].bytes;
			samples[count].key = sample.key;
			samples[count].bytes = sample.offset;	/* its end comes later */
			last_kept = count++;
		}
		if (last_kept >= 0)
			samples[last_kept].bytes = run->bytes - samples[last_kept].bytes;
		BufFileClose(file);
		CHECK_FOR_INTERRUPTS();
	}
	for (int64 i = 0; i < count; i++)
		total += samples[i].bytes;
	qsort_arg(samples, count, sizeof(WeightedSample), compare_weighted_samples, store);
	for (int64 i = 0; i < count && chosen < partitions - 1; i++)
	{
		/* the next range starts at the first sample past its share */
		const RowStoreKey *key = &samples[i].key;

		if (seen >= total / partitions * (chosen + 1) &&
			(chosen == 0 || compare_keys(store, key->keys, key->nulls, splitters[chosen - 1].keys,
										 splitters[chosen - 1].nulls) > 0))
			splitters[chosen++] = *key;
		seen += samples[i].bytes;
	}
	pfree(samples);
	return chosen + 1;
}

int64
row_store_total_bytes(const RowStore *store)
{
	int64		bytes = 0;

	for (int r = 0; r < store->nruns; r++)
		bytes += store->runs[r]->bytes;
	return bytes;
}

static void
set_splitters(RowStore *store, int npartitions, const RowStoreKey *splitters)
{
	if (npartitions < 1 || npartitions > ROW_STORE_MAX_PARTITIONS)
		elog(ERROR, "gpusort: %d key ranges to merge, more than %d",
			 npartitions, ROW_STORE_MAX_PARTITIONS);
	store->npartitions = npartitions;
	memcpy(store->splitters, splitters, (npartitions - 1) * sizeof(RowStoreKey));
	store->stats.partitions = npartitions;
	for (int r = 0; r < store->nruns; r++)
	{
		if (store->runs[r]->partition_starts != NULL)
			pfree(store->runs[r]->partition_starts);
		store->runs[r]->partition_starts =
			MemoryContextAllocZero(store->context, npartitions * sizeof(int64));
	}
}

/*
 * Where each key range starts in each run: at the last sample before the
 * range's first key (the merge skips the few records before the range),
 * read from the run's samples in one pass, as they and the splitters are
 * both in order. Then `starts` gets them for the other processes.
 */
void
row_store_find_partitions(RowStore *store, FileSet *samples_files, int npartitions,
						  const RowStoreKey *splitters, BufFile *starts)
{
	set_splitters(store, npartitions, splitters);
	for (int r = 0; r < store->nruns; r++)
	{
		SortedRun  *run = store->runs[r];
		BufFile    *file = open_samples(store, samples_files, r);
		RunSample	sample;
		int64		before = 0; /* the last sample before splitters[p - 1] */
		int			p = 1;

		while (p < npartitions && read_sample(store, file, &sample))
		{
			while (p < npartitions &&
				   compare_keys(store, sample.key.keys, sample.key.nulls,
								splitters[p - 1].keys, splitters[p - 1].nulls) >= 0)
				run->partition_starts[p++] = before;
			before = sample.offset;
		}
		while (p < npartitions)
			run->partition_starts[p++] = before;
		BufFileClose(file);
		write_bytes(starts, run->partition_starts, npartitions * sizeof(int64));
		CHECK_FOR_INTERRUPTS();
	}
}

void
row_store_set_partitions(RowStore *store, int npartitions, const RowStoreKey *splitters,
						 BufFile *starts)
{
	set_splitters(store, npartitions, splitters);
	for (int r = 0; r < store->nruns; r++)
	{
		SortedRun  *run = store->runs[r];

		read_bytes(starts, run->partition_starts, npartitions * sizeof(int64), false);
		for (int p = 0; p < npartitions; p++)
			if (run->partition_starts[p] < 0 || run->partition_starts[p] > run->bytes)
				elog(ERROR, "gpusort: a file of key ranges' starts is corrupt");
	}
}

bool
row_store_write_partition(RowStore *store, int partition, BufFile *file,
						  const volatile bool *stop)
{
	SortedRun	out;
	MergeInput *input;
	int64		written = 0;

	memset(&out, 0, sizeof(out));
	out.file = file;
	out.file_number = -1;
	start_merge(store, 0, store->nruns, false, merge_memory(store), partition);
	while ((input = next_merged(store)) != NULL)
	{
		if ((written & 0x3fff) == 0)
		{
			CHECK_FOR_INTERRUPTS();
			if (*stop)
				break;
		}
		write_record(store, &out, input->keys, input->nulls, input->tuple);
		written++;
	}
	flush_records(store, &out);
	store->disk_bytes -= out.bytes; /* the caller's file, not ours */
	return input == NULL;
}

void
row_store_read_partitions(RowStore *store, RowStorePartitionSource source, void *arg)
{
	size_t		total = (size_t) store->stats.rows_read;	/* its runs' rows */

	store->partition_source = source;
	store->partition_source_arg = arg;
	store->partition = 0;
	store->partition_open = false;
	store->mode = READ_PARTITIONS;
	store->noutputs = total;
	store->stats.rows_sorted = total;
	store->stats.rows_out = total;
	store->stats.approximate = false;
	store->stats.external = true;
}

/* READ_PARTITIONS: the next partition, merged here or read from its file */
void
open_partition(RowStore *store)
{
	int			p = store->partition;
	BufFile    *file = NULL;

	if (store->partition_source(store->partition_source_arg, p, &file))
	{
		start_merge(store, 0, store->nruns, false, merge_memory(store), p);
		store->partition_here = true;
	}
	else
	{
		MergeInput *input = &store->partition_input;

		memset(&store->partition_file, 0, sizeof(SortedRun));
		store->partition_file.file = file;
		store->partition_file.file_number = -1;
		start_run_input(store, input, &store->partition_file, MAX_READ_CHUNK, 0, NULL);
		input->done = false;
		store->partition_here = false;
		store->stats.partitions_by_workers++;
	}
	store->partition_open = true;
}

void
close_partition(RowStore *store)
{
	if (store->partition_open && !store->partition_here)
		BufFileClose(store->partition_file.file);
	store->partition_open = false;
}

int
row_store_finish_share(RowStore *store, int max_runs, RowStoreRun **runs_out,
					   RowStoreRun *gpu_part)
{
	size_t		limit = store->spec.bound > 0 ? (size_t) store->spec.bound : 0;
	bool		external;
	int			runs_written;
	size_t		total;
	RowStoreRun *runs;

	if (store->gpu_run != NULL)
		finish_gpu_part(store);
	*gpu_part = store->gpu_part;
	external = store->stats.external;
	runs_written = store->stats.runs;
	total = store->ntuples + (size_t) store->gpu_part.rows;
	for (int r = 0; r < store->nruns; r++)
		total += (size_t) store->runs[r]->rows;
	/* the rows in memory become a run (sorted exactly, also under the
	 * approximate opt-in: this is one input of a merge); beside a part in
	 * the GPU's memory it counts as a run written */
	if (store->ntuples > 0)
	{
		spill_rows(store, false);
		if (store->gpu_part.rows == 0)
		{
			store->stats.external = external;
			store->stats.runs = runs_written;
		}
	}
	merge_runs_down_to(store, Max(max_runs, MIN_MERGE_ORDER), limit);
	store->stats.approximate = false;
	store->stats.rows_sorted = total;
	store->stats.rows_out = limit > 0 ? Min(total, limit) : total;

	runs = palloc0(Max(store->nruns, 1) * sizeof(RowStoreRun));
	for (int r = 0; r < store->nruns; r++)
	{
		SortedRun  *run = store->runs[r];

		runs[r].file_number = run->file_number;
		runs[r].share = run->file_number >= 0 ? store->spec.share : -1;
		runs[r].rows = run->rows;
		runs[r].bytes = run->bytes;
		runs[r].nsamples = run->nsamples;
		memcpy(runs[r].columns, run->columns, sizeof(runs[r].columns));
		runs[r].file = run->file;
		if (run->file_number >= 0)
		{
			/* shared files, opened again by name by the leader */
			BufFileClose(run->file);
			runs[r].file = NULL;
		}
	}
	*runs_out = runs;
	{
		int			nruns = store->nruns;

		store->nruns = 0;		/* the files are the caller's now */
		return nruns;
	}
}

RowStore *
row_store_begin_merge(const RowStoreSpec *spec, int nruns, const RowStoreRun *runs)
{
	RowStore   *store;
	RowStoreSpec merge_spec = *spec;

	merge_spec.expected_rows = 0;
	merge_spec.gpu_share = NULL;	/* it reads the shares, appends nothing */
	store = row_store_begin(&merge_spec);
	for (int i = 0; i < nruns; i++)
	{
		MemoryContext old_context;
		SortedRun  *run;

		if (runs[i].gpu != NULL)
		{
			/* the shares' parts of one rows job: one run */
			if (store->gpu_run == NULL)
				start_gpu_run(store, runs[i].gpu, false);
			else if (store->gpu_run->gpu != runs[i].gpu)
				elog(ERROR, "gpusort: parallel shares in more than one GPU rows job");
			run = store->gpu_run;
			run->rows += runs[i].rows;
			run->bytes += runs[i].bytes;
			run->largest_record = Max(run->largest_record, runs[i].largest_record);
			for (int k = 0; k < store->nkeys; k++)
				cover_column(&run->columns[k], &runs[i].columns[k]);
			store->stats.rows_read += runs[i].rows;
			continue;
		}
		old_context = MemoryContextSwitchTo(store->context);
		run = palloc0(sizeof(SortedRun));
		MemoryContextSwitchTo(old_context);
		run->file = runs[i].file;
		run->file_number = -1;	/* closed, never deleted, here */
		run->source_share = runs[i].share;
		run->source_number = runs[i].file_number;
		run->rows = runs[i].rows;
		run->bytes = runs[i].bytes;
		run->nsamples = runs[i].nsamples;
		memcpy(run->columns, runs[i].columns, sizeof(run->columns));
		add_run(store, run);
		store->disk_bytes += runs[i].bytes;
		store->stats.rows_read += runs[i].rows;
	}
	if (store->gpu_run != NULL)
		service_rows_expect(store->gpu_run->gpu, store->gpu_run->rows, store->gpu_run->bytes);
	store->stats.disk_bytes = store->disk_bytes;
	store->stats.runs = store->nruns - (store->gpu_run != NULL ? 1 : 0);
	store->stats.external = true;
	return store;
}

/* READ_FILE: the record at `offset`, whose tuple is `length` long. */
static void
read_file_row(RowStore *store, int64 offset, TupleTableSlot *slot)
{
	uint32		length;

	seek_file(store->final->file, offset);
	if (!read_backward_record(store, store->final->file, &store->buffer, &store->buffer_size,
							  &length))
		elog(ERROR, "gpusort: a temporary file of sorted rows ended early");
	store->offset = offset;
	store->length = length;
	ExecStoreMinimalTuple((MinimalTuple) store->buffer, slot, false);
}

/* READ_FILE: the tuple length of the record that ends at `end`. */
static uint32
length_before(RowStore *store, int64 end)
{
	uint32		length;

	seek_file(store->final->file, end - (int64) sizeof(uint32));
	read_bytes(store->final->file, &length, sizeof(length), false);
	return length;
}

bool
row_store_get(RowStore *store, bool forward, TupleTableSlot *slot)
{
	int64		n = (int64) store->noutputs;

	switch (store->mode)
	{
		case READ_MEMORY:
			if (forward && store->position + 1 < n)
			{
				store->position++;
				/* the tuples lie scattered in memory: fetch a few ahead */
				if (store->position + PREFETCH_DISTANCE < n)
					prefetch_tuple(store->sorted[store->position + PREFETCH_DISTANCE]);
				ExecStoreMinimalTuple(store->sorted[store->position], slot, false);
				return true;
			}
			if (!forward && store->position > 0)
			{
				store->position--;
				ExecStoreMinimalTuple(store->sorted[store->position], slot, false);
				return true;
			}
			break;

		case READ_MERGE:
			if (!forward)
				elog(ERROR, "gpusort: backward scan of a sort that was not planned for it");
			if (store->position + 1 < n)
			{
				MergeInput *input = next_merged(store);

				if (input != NULL)
				{
					store->position++;
					ExecStoreMinimalTuple(input->tuple, slot, false);
					return true;
				}
			}
			break;

		case READ_GPU:
			if (!forward)
				elog(ERROR, "gpusort: backward scan of a sort that was not planned for it");
			if (store->position + 1 < n)
			{
				MinimalTuple tuple;

				if (next_gpu_row(store, &tuple))
				{
					store->position++;
					ExecStoreMinimalTuple(tuple, slot, false);
					return true;
				}
			}
			/* the last row is no longer the caller's: the GPU memory goes */
			release_gpu_run(store);
			break;

		case READ_PARTITIONS:
			if (!forward)
				elog(ERROR, "gpusort: backward scan of a sort that was not planned for it");
			while (store->partition < store->npartitions)
			{
				if (!store->partition_open)
					open_partition(store);
				if (store->partition_here)
				{
					MergeInput *input = next_merged(store);

					if (input != NULL)
					{
						store->position++;
						ExecStoreMinimalTuple(input->tuple, slot, false);
						return true;
					}
				}
				else if (read_chunk_record(store, &store->partition_input))
				{
					store->position++;
					ExecStoreMinimalTuple(store->partition_input.tuple, slot, false);
					return true;
				}
				close_partition(store);
				store->partition++;
			}
			break;

		case READ_FILE:
			if (forward && store->position + 1 < n)
			{
				int64		next = store->position < 0 ? 0 :
					store->offset + (int64) file_record_size(store, store->length, true);

				read_file_row(store, next, slot);
				store->position++;
				return true;
			}
			if (!forward && store->position > 0)
			{
				int64		end = store->position >= n ? store->final->bytes : store->offset;
				uint32		length = length_before(store, end);

				read_file_row(store, end - (int64) file_record_size(store, length, true), slot);
				store->position--;
				return true;
			}
			break;
	}
	/* past either end: stand just beyond it, as tuplesort does */
	if (forward)
	{
		if (store->mode == READ_FILE && store->position < n)
		{
			store->offset = store->final->bytes;
			store->length = 0;
		}
		store->position = n;
	}
	else
		store->position = -1;
	ExecClearTuple(slot);
	return false;
}

/* Can the sorted rows be read again from the start? Not once the GPU's
 * memory that held them was given back. */
bool
row_store_rewindable(const RowStore *store)
{
	return store->mode != READ_GPU || store->gpu_run != NULL;
}

void
row_store_rewind(RowStore *store)
{
	store->position = -1;
	if (store->mode == READ_PARTITIONS)
	{
		/* (not reached: a merge of shares sorts again) read it whole */
		close_partition(store);
		store->mode = READ_MERGE;
	}
	if (store->mode == READ_MERGE)
		start_merge(store, 0, store->nruns, store->ntuples > 0, merge_memory(store), -1);
	else if (store->mode == READ_GPU)
		start_gpu_read(store);
}

void
row_store_mark(RowStore *store)
{
	if (store->mode == READ_MERGE || store->mode == READ_PARTITIONS || store->mode == READ_GPU)
		elog(ERROR, "gpusort: mark of a sort that was not planned for it");
	store->marked_position = store->position;
	store->marked_offset = store->offset;
	store->marked_length = store->length;
}

void
row_store_restore(RowStore *store)
{
	if (store->mode == READ_MERGE || store->mode == READ_PARTITIONS || store->mode == READ_GPU)
		elog(ERROR, "gpusort: restore of a sort that was not planned for it");
	store->position = store->marked_position;
	store->offset = store->marked_offset;
	store->length = store->marked_length;
}

const RowStoreStats *
row_store_stats(RowStore *store)
{
	/* (a GPU run still open is asked now) */
	if (store->gpu_run != NULL && service_rows_given_back(store->gpu_run->gpu))
		store->stats.gpu_run_given_back = true;
	return &store->stats;
}

void
row_store_end(RowStore *store)
{
	close_partition(store);
	for (int r = 0; r < store->nruns; r++)
	{
		if (store->runs[r]->gpu != NULL)
			service_rows_close(store->runs[r]->gpu);
		else
			BufFileClose(store->runs[r]->file);
	}
	MemoryContextDelete(store->context);
}
