/*
 * row_store.c — the rows of one GpuSort: gathered, sorted, spilled, read back.
 *
 * This file has the interface (row_store.h) and the course a store takes:
 * rows come in (row_store_put(), row_store_keep()) and stay in memory, or
 * go to sorted runs or to a GPU's memory; row_store_sort() sorts what
 * memory holds and prepares the merge; row_store_get() reads the rows back
 * in order, from memory, a merge, one merged file, a GPU run or a
 * partitioned merge's key ranges. The parts, by job:
 *
 *   row_store_memory.c    the rows in memory: the arena, memory accounting,
 *                         sorting them, a bounded sort's pruning
 *   row_store_runs.c      sorted runs in temporary files
 *   row_store_merge.c     merging runs
 *   row_store_gpu.c       runs in a GPU's memory
 *   row_store_parallel.c  a parallel sort's shares and key ranges
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
/* An unbounded serial sort's rows in memory that go to a GPU run even
 * within work_mem (gpu_run_due()). */
#define GPU_RUN_EARLY_BYTES ((Size) 64 * 1024 * 1024)

/* ---- the public interface ---- */

/* Must the rows in memory go to disk as a run? */
static bool
run_is_full(const RowStore *store)
{
	return memory_to_sort(store) > store->spec.work_mem_bytes &&
		(store->ntuples >= MIN_RUN_ROWS || store->memory_used >= MIN_RUN_BYTES);
}

/* Sorts the rows in memory (exactly) and writes them as a new run; memory
 * starts over, with room for as many rows again when more are coming. */
void
spill_rows(RowStore *store, bool more_rows)
{
	size_t		limit = store->spec.bound > 0 ? (size_t) store->spec.bound : 0;
	size_t		nout = limit > 0 ? Min(store->ntuples, limit) : store->ntuples;
	SortedRun  *run;

	if (!store->gpu_run_tried && gpu_run_allowed(store) && move_to_gpu_run(store, more_rows))
		return;
	/* a share that held its first rows to choose a prefix: they go to the
	 * shared rows job, not to a file, where it can attach */
	if (store->spec.gpu_share != NULL && !store->gpu_run_tried)
	{
		move_share_to_gpu_run(store);
		if (store->ntuples == 0)
			return;
	}

	sort_rows(store, limit, (gs_algorithm) store->plan->algorithm);
	run = new_run(store);
	memcpy(run->columns, store->columns, sizeof(run->columns));
	add_run(store, run);
	write_sorted_rows(store, run, nout);
	store->stats.runs++;
	store->stats.external = true;

	MemoryContextDelete(store->rows_context);
	allocate_rows(store, more_rows ? store->capacity : 1);
	if (more_rows)
		merge_newest_runs(store, limit);
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
					spec->key_types, spec->plan->key_part);
	if (gpusort_plan_has_prefix_keys(spec->plan))
		store->ties = tie_resolver_create(spec->plan, spec->tuple_desc, context);
	tuple_former_init(&store->former, context);
	store->position = -1;
	store->sample_runs = spec->share_files != NULL && spec->sample_runs;
	store->stats.approximate = spec->approximate;
	/* top-N per group: an exact, unbounded sort (the plans sort_sites.c
	 * marks are) */
	store->topn = spec->plan->topn_kind != GPUSORT_TOPN_NONE && spec->bound == 0 &&
		!spec->approximate;
	store->group_prunes_pay = store->topn;
	store->prefix_unchosen = spec->prefix_choice != NULL && spec->prefix_choice->prefix_bytes == 0;
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
	/* a share that chooses its prefix attaches once it has (keep_row()) */
	if (spec->gpu_share != NULL && !store->prefix_unchosen)
		attach_gpu_run(store);
	return store;
}

/*
 * Does a row with these keys come before the bounded sort's threshold?
 * Where prefix keys tie, a row whose keys equal the threshold's may still
 * come before the threshold's row: it is kept, and the comparator decides.
 */
static inline bool
before_threshold(const RowStore *store, const uint64_t *keys, const bool *nulls)
{
	/* the usual case, decided by the first key */
	if (!nulls[0] && !store->threshold_nulls[0] && keys[0] != store->threshold_keys[0])
		return (keys[0] < store->threshold_keys[0]) != store->plan->descending[0];
	if (store->ties != NULL)
	{
		bool		undecided;

		return compare_keys_tied(store, keys, nulls, store->threshold_keys,
								 store->threshold_nulls, &undecided) <= 0;
	}
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
	/* rows that pruning by group may leave few of stay here while it pays */
	if (store->group_prunes_pay)
		return false;
	/* the planner expects that much: from the first row, none copied (or
	 * once the rows a prefix is chosen from are in) */
	if (store->ntuples == (store->prefix_unchosen ? PREFIX_SAMPLE_ROWS : 1) &&
		store->spec.expected_rows * job_record_size(store, store->tuples[0]->t_len) >=
		(double) GPU_RUN_EARLY_BYTES)
		return gpu_run_allowed(store);
	return memory_to_sort(store) >= GPU_RUN_EARLY_BYTES && gpu_run_allowed(store);
}

static pg_noinline void
keep_row(RowStore *store, const uint64_t *keys, const bool *nulls, TupleTableSlot *slot)
{
	bool		bounded = store->spec.bound > 0;
	bool		prefix_unchosen = store->prefix_unchosen;
	uint64_t	row_keys[GS_MAX_KEY_COLUMNS];
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
		else if (store->group_prunes_pay)
			prune_groups(store);
		if (store->ntuples == store->capacity)
			spill_rows(store, true);
	}
	/* the run that closed before this row chose the prefix: this row's
	 * keys, encoded before, narrow as the stored rows' did */
	memcpy(row_keys, keys, store->nkeys * sizeof(uint64_t));
	if (prefix_unchosen && !store->prefix_unchosen &&
		store->spec.prefix_choice->prefix_bytes > 0 &&
		!nulls[store->spec.prefix_choice_key])
		narrow_prefix_words(&row_keys[store->spec.prefix_choice_key],
							store->spec.prefix_choice->nwords,
							(size_t) store->spec.prefix_choice->prefix_bytes);
	/* a share whose held rows just went to the shared rows job: this one
	 * follows them there */
	if (store->gpu_run_open && store->spec.gpu_share != NULL)
	{
		if (stream_row(store, row_keys, nulls, slot))
			return;
		finish_gpu_part(store);
	}
	i = store->ntuples++;
	for (int k = 0; k < store->nkeys; k++)
	{
		store->column_keys[k][i] = row_keys[k];
		store->column_nulls[k][i] = nulls[k];
		gs_key_column_observe(&store->columns[k], nulls[k], row_keys[k]);
	}
	store->tuples[i] = copy_row(store, slot);

	if (bounded && store->ntuples >= Max((size_t) store->spec.bound * 2, MIN_PRUNE_ROWS))
		prune_rows(store);
	if (gpu_run_due(store) && move_to_gpu_run(store, true))
		return;
	/* a share that held its first rows to choose a prefix: they go to the
	 * shared rows job now, and the rows after them as they come (a share
	 * whose memory filled first went there in spill_rows()) */
	if (store->spec.gpu_share != NULL && !store->gpu_run_tried &&
		store->ntuples >= PREFIX_SAMPLE_ROWS)
	{
		move_share_to_gpu_run(store);
		if (store->ntuples == 0)
			return;
	}
	if (run_is_full(store))
	{
		if (bounded && store->ntuples > (size_t) store->spec.bound)
			prune_rows(store);
		else if (store->group_prunes_pay)
			prune_groups(store);
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

/*
 * Top-N per group, the rows in memory sorted: only the first rows of each
 * group become the output (noutputs shrinks to them).
 */
static void
keep_sorted_groups(RowStore *store)
{
	GroupCounter counter;
	size_t		n = 0;

	memset(&counter, 0, sizeof(counter));
	for (size_t i = 0; i < store->noutputs; i++)
	{
		uint64_t	keys[GS_MAX_KEY_COLUMNS];
		bool		nulls[GS_MAX_KEY_COLUMNS];

		sorted_keys_of(store, i, keys, nulls);
		if (group_keeps(store, &counter, keys, nulls))
			store->sorted[n++] = store->tuples[store->order[i]];
	}
	store->stats.rows_skipped += (int64) (store->noutputs - n);
	store->noutputs = n;
}

/* Top-N per group, reading a stream: does the parent keep this row? */
static inline bool
read_keeps(RowStore *store, const uint64_t *keys, const bool *nulls)
{
	if (!store->topn || group_keeps(store, &store->read_counter, keys, nulls))
		return true;
	/* (a long stretch of rows passed over stays interruptible) */
	if ((++store->stats.rows_skipped & 0xffff) == 0)
		CHECK_FOR_INTERRUPTS();
	return false;
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
		if (store->topn)
			keep_sorted_groups(store);
		else
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
		/* (top-N per group wrote only the rows kept) */
		store->noutputs = (size_t) store->final->rows;
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
				MergeInput *input;

				while ((input = next_merged(store)) != NULL &&
					   !read_keeps(store, input->keys, input->nulls))
					;
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
				uint64_t	keys[GS_MAX_KEY_COLUMNS];
				bool		nulls[GS_MAX_KEY_COLUMNS];
				bool		found;

				while ((found = next_gpu_row(store, &tuple, keys, nulls)) &&
					   !read_keeps(store, keys, nulls))
					;
				if (found)
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
					MergeInput *input;

					while ((input = next_merged(store)) != NULL &&
						   !read_keeps(store, input->keys, input->nulls))
						;
					if (input != NULL)
					{
						store->position++;
						ExecStoreMinimalTuple(input->tuple, slot, false);
						return true;
					}
				}
				else
				{
					MergeInput *input = &store->partition_input;
					bool		found;

					while ((found = read_chunk_record(store, input)) &&
						   !read_keeps(store, input->keys, input->nulls))
						;
					if (found)
					{
						store->position++;
						ExecStoreMinimalTuple(input->tuple, slot, false);
						return true;
					}
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
	memset(&store->read_counter, 0, sizeof(store->read_counter));
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
	if (store->ties != NULL)
	{
		store->stats.tie_groups = store->ties->groups;
		store->stats.tie_rows = store->ties->rows;
		store->stats.tie_comparisons = store->ties->comparisons;
	}
	return &store->stats;
}

void
row_store_end(RowStore *store)
{
	close_partition(store);
	/* (a tuplesort's temporary files close now, not with the transaction) */
	if (store->gpu_ties != NULL && store->gpu_ties->spilled != NULL)
		tuplesort_end(store->gpu_ties->spilled);
	for (int r = 0; r < store->nruns; r++)
	{
		if (store->runs[r]->gpu != NULL)
			service_rows_close(store->runs[r]->gpu);
		else
			BufFileClose(store->runs[r]->file);
	}
	MemoryContextDelete(store->context);
}
