/*
 * row_store_merge.c — merging the row store's sorted runs.
 *
 * When the input ends, the runs (and the last rows, if they fit beside the
 * runs' read buffers) are merged on their encoded keys: on the fly as rows
 * are read, or, when the caller needs to go backward or to mark a position,
 * into one file first. Too many runs to read at once within work_mem are
 * merged in passes first. Spilled sorts are exact, also under the
 * approximate opt-in. A merge cut into key ranges (row_store_parallel.c)
 * reads one range at a time: merged here, or from the file a worker
 * merged it into (open_partition).
 */
#include "gpusort.h"

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"

#include "row_store_int.h"

/* ---- merging ---- */

static void count_merge_memory(RowStore *store);

/* Up to `length` bytes of a run from where its reading stands. */
static size_t
read_run(SortedRun *run, char *into, size_t length)
{
	if (run->gpu == NULL)
		return BufFileRead(run->file, into, length);
	length = Min(length, (size_t) (run->bytes - run->gpu_position));
	if (length > 0 && !service_rows_read(run->gpu, run->gpu_position, length, into))
		gpu_run_failed();
	run->gpu_position += length;
	return length;
}

/*
 * Makes the input's chunk hold `need` bytes from chunk_pos on, reading
 * ahead in its run; the bytes not yet parsed move to the chunk's start
 * (which is MAXALIGNed, as palloc's memory is). False when the run ends
 * exactly at chunk_pos and that is allowed (the end of the last record).
 */
static bool
fill_chunk(RowStore *store, MergeInput *input, Size need, bool end_allowed)
{
	Size		left = input->chunk_used - input->chunk_pos;

	if (left >= need)
		return true;
	if (need > input->chunk_size)
	{
		/* a record larger than the chunk: the chunk grows to hold it */
		Size		size = Max(need, 2 * input->chunk_size);
		char	   *chunk = MemoryContextAllocHuge(store->chunks_context, size);

		if (left > 0)
			memcpy(chunk, input->chunk + input->chunk_pos, left);
		if (input->chunk != NULL)
			pfree(input->chunk);
		input->chunk = chunk;
		input->chunk_size = size;
		count_merge_memory(store);
	}
	else if (left > 0 && input->chunk_pos > 0)
		memmove(input->chunk, input->chunk + input->chunk_pos, left);
	input->chunk_pos = 0;
	input->chunk_used = left;
	while (input->chunk_used < need)
	{
		size_t		got = read_run(input->run, input->chunk + input->chunk_used,
								   input->chunk_size - input->chunk_used);

		if (got == 0)
			break;
		input->chunk_used += got;
	}
	if (input->chunk_used >= need)
		return true;
	if (input->chunk_used == 0 && end_allowed)
		return false;
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("gpusort: could not read from a temporary file: read only %zu of %zu bytes",
					input->chunk_used, need)));
	return false;				/* not reached */
}

/*
 * A run input's next record, parsed in its chunk; false at the run's end.
 * The tuple is used in the chunk: where it lies in a GPU run's record, and
 * moved back to an aligned place in a file's (see below).
 */
bool
read_chunk_record(RowStore *store, MergeInput *input)
{
	bool		in_file = input->run->gpu == NULL;
	bool		with_trailer = !in_file || input->run->backward;
	Size		header_size = in_file ? file_header_size(store->nkeys) : job_header_size(store);
	Size		size;
	uint32		length;
	char	   *record;
	char	   *tuple;

	/* (the chunk mostly holds the record already: no call then) */
	if (input->chunk_used - input->chunk_pos < header_size &&
		!fill_chunk(store, input, header_size, true))
		return false;
	record = input->chunk + input->chunk_pos;
	if (in_file)
	{
		length = file_record_length(record);
		size = file_record_size(store, length, input->run->backward);
	}
	else
	{
		memcpy(&length, record, sizeof(length));
		size = job_record_size(store, length);
	}
	if (input->chunk_used - input->chunk_pos < size)
		fill_chunk(store, input, size, false);
	record = input->chunk + input->chunk_pos;
	memcpy(input->keys, record + sizeof(length), store->nkeys * sizeof(uint64_t));
	read_null_flags(input->nulls, record + sizeof(length) + store->nkeys * sizeof(uint64_t),
					store->nkeys);
	if (input->stop != NULL &&
		compare_keys(store, input->keys, input->nulls, input->stop->keys, input->stop->nulls) >= 0)
		return false;			/* the next partition's */
	if (with_trailer)
	{
		uint32		trailer;

		memcpy(&trailer, record + size - sizeof(trailer), sizeof(trailer));
		if (trailer != length)
			elog(ERROR, "gpusort: a temporary file of sorted rows is corrupt");
	}
	if (in_file)
	{
		/*
		 * The tuple's bytes after its length and padding move back, by at
		 * most 7 bytes, so that the tuple starts MAXALIGNed over the
		 * record's header, which was copied out above (the header is
		 * longer than that length and padding, and the chunk starts
		 * aligned). Bytes before the record may be overwritten: the
		 * input's previous row was the caller's only until this call.
		 */
		char	   *body = record + header_size;

		tuple = (char *) TYPEALIGN_DOWN(MAXIMUM_ALIGNOF, body - MINIMAL_TUPLE_DATA_OFFSET);
		Assert(tuple >= input->chunk);
		memmove(tuple + MINIMAL_TUPLE_DATA_OFFSET, body, length - MINIMAL_TUPLE_DATA_OFFSET);
		((MinimalTuple) tuple)->t_len = length;
	}
	else
		tuple = record + header_size;
	/* (a GPU run's records are multiples of 8 bytes from the chunk's start) */
	Assert((uintptr_t) tuple % MAXIMUM_ALIGNOF == 0);
	input->tuple = (MinimalTuple) tuple;
	input->chunk_pos += size;
	return true;
}

/* A merge's input from the GPU run: its next record, parsed in its chunk
 * (read_chunk_record()). */
static bool
read_input_record(RowStore *store, void *source, uint64_t *keys, bool *nulls,
				  MinimalTuple *tuple)
{
	MergeInput *input = (MergeInput *) source;

	if (!read_chunk_record(store, input))
		return false;
	memcpy(keys, input->keys, store->nkeys * sizeof(uint64_t));
	memcpy(nulls, input->nulls, store->nkeys);
	*tuple = input->tuple;
	return true;
}

/* A merge's input from the GPU run: its next row in SQL order into its
 * keys, NULL flags and tuple; false at the run's end. */
static bool
next_gpu_input_row(RowStore *store, MergeInput *input)
{
	uint64_t	keys[GS_MAX_KEY_COLUMNS];
	bool		nulls[GS_MAX_KEY_COLUMNS];
	MinimalTuple tuple;

	if (store->ties == NULL)
		return read_chunk_record(store, input);
	if (!next_tied_row(store, read_input_record, input, keys, nulls, &tuple))
		return false;
	memcpy(input->keys, keys, store->nkeys * sizeof(uint64_t));
	memcpy(input->nulls, nulls, store->nkeys);
	input->tuple = tuple;
	return true;
}

/* The input's next row into its keys, nulls and tuple; false when done. */
static bool
advance_input(RowStore *store, MergeInput *input)
{
	uint32_t	row;

	if (input->run != NULL && input->run->gpu != NULL)
		return next_gpu_input_row(store, input);	/* its ties put in order */
	if (input->run != NULL)
		return read_chunk_record(store, input);
	if (input->next >= store->ntuples)
		return false;
	row = store->order[input->next++];
	for (int k = 0; k < store->nkeys; k++)
	{
		input->keys[k] = store->column_keys[k][row];
		input->nulls[k] = store->column_nulls[k][row];
	}
	input->tuple = store->tuples[row];
	return true;
}

/* Widens `into` to cover the values and NULLs `column` saw. */
void
cover_column(gs_key_column *into, const gs_key_column *column)
{
	into->has_null |= column->has_null;
	if (column->has_value)
	{
		gs_key_column_observe(into, false, column->min_key);
		gs_key_column_observe(into, false, column->max_key);
	}
}

/* The key ranges of the merge of runs[first .. first + count - 1] (and the
 * rows in memory when with_memory) into store->merge_ranges, and which
 * leading key columns a merge key's word packs: see MergeKey. */
static void
plan_merge_key(RowStore *store, int first, int count, bool with_memory)
{
	gs_key_column *ranges = store->merge_ranges;
	int			widths[GS_MAX_KEY_COLUMNS];
	int			total = 0;
	int			position;

	for (int k = 0; k < store->nkeys; k++)
	{
		gs_key_column_init(&ranges[k], store->plan->descending[k], store->plan->nulls_first[k]);
		for (int r = first; r < first + count; r++)
			cover_column(&ranges[k], &store->runs[r]->columns[k]);
		if (with_memory)
			cover_column(&ranges[k], &store->columns[k]);
	}
	store->packed_columns = 0;
	for (int k = 0; k < store->nkeys; k++)
	{
		uint64_t	range = ranges[k].has_value ? ranges[k].max_key - ranges[k].min_key : 0;
		int			width = range == 0 ? 0 : 64 - __builtin_clzll(range);

		if (k > 0 && total + width > 64)
			break;
		/* nothing after a prefix key's last word, whose ties the
		 * comparator decides, not the words after it */
		if (k > 0 && store->ties != NULL && store->ties->is_flag[k - 1])
			break;
		store->packed_min[k] = ranges[k].has_value ? ranges[k].min_key : 0;
		store->packed_range[k] = range;
		widths[k] = width;
		total += width;
		store->packed_columns++;
	}
	position = total;
	for (int k = 0; k < store->packed_columns; k++)
	{
		int			end = position;

		position -= widths[k];
		store->packed_shift[k] = widths[k] == 0 ? 64 : position;
		store->packed_null_last[k] = end >= 64 ? ~(uint64_t) 0 : ((uint64_t) 1 << end) - 1;
	}
}

/* Input i's current row as a merge key (see MergeKey). */
static inline MergeKey
merge_key(RowStore *store, int i)
{
	MergeInput *input = &store->inputs[i];
	uint64_t	rank = MERGE_RANK_VALUE;
	uint64_t	word = 0;

	if (input->done)
		rank = MERGE_RANK_DONE;
	else if (input->nulls[0])
		rank = store->plan->nulls_first[0] ? MERGE_RANK_NULL_FIRST : MERGE_RANK_NULL_LAST;
	else
	{
		for (int k = 0; k < store->packed_columns; k++)
		{
			int			shift = store->packed_shift[k];
			uint64_t	value;

			if (input->nulls[k])
			{
				/* NULLs last: this column and those after it at their end */
				if (!store->plan->nulls_first[k])
					word |= store->packed_null_last[k];
				break;
			}
			value = input->keys[k] - store->packed_min[k];
			if (store->plan->descending[k])
				value = store->packed_range[k] - value;
			if (shift < 64)
				word |= value << shift;
		}
	}
	return ((MergeKey) rank << MERGE_RANK_SHIFT) | ((MergeKey) word << MERGE_INPUT_BITS) |
		(MergeKey) i;
}

/* Does merge key a's row come before b's? (Equal keys: the earlier input
 * first; inputs are in input order, the rows in memory last.) */
static inline bool
merge_key_before(RowStore *store, MergeKey a, MergeKey b)
{
	if (store->nkeys > 1 && (a >> MERGE_INPUT_BITS) == (b >> MERGE_INPUT_BITS) &&
		(a >> MERGE_RANK_SHIFT) != MERGE_RANK_DONE)
	{
		MergeInput *x = &store->inputs[(int) (a & MERGE_INPUT_MASK)];
		MergeInput *y = &store->inputs[(int) (b & MERGE_INPUT_MASK)];
		int			order;
		bool		undecided = false;

		if (store->ties == NULL)
			order = compare_keys(store, x->keys, x->nulls, y->keys, y->nulls);
		else
			order = compare_keys_tied(store, x->keys, x->nulls, y->keys, y->nulls, &undecided);
		/* prefixes that tie and may not determine their values: the
		 * comparator decides (tie_resolver.c) */
		if (undecided)
			order = tie_resolver_compare(store->ties, x->tuple, y->tuple);
		if (order != 0)
			return order < 0;
	}
	return a < b;
}

/*
 * The merge is a tournament (loser) tree over the inputs: leaf i + n stands
 * for input i, each inner node 1 .. n - 1 holds the merge key of the row
 * that lost the match there, and tree[0] the overall winner's. When the
 * winner moves on, its new row replays the matches on its leaf's path only:
 * one comparison per level, half of what a binary heap needs, on keys held
 * in the tree itself.
 */
static MergeKey
build_tree(RowStore *store, int node)
{
	int			n = store->ninputs;
	MergeKey	left,
				right;

	if (node >= n)
		return merge_key(store, node - n);
	left = build_tree(store, 2 * node);
	right = build_tree(store, 2 * node + 1);
	if (merge_key_before(store, left, right))
	{
		store->tree[node] = right;
		return left;
	}
	store->tree[node] = left;
	return right;
}

/* Input i, the last winner, has a new row (or is done): replay its matches. */
static void
replay_tree(RowStore *store, int i)
{
	MergeKey	winner = merge_key(store, i);
	int			node = (i + store->ninputs) / 2;

	if (store->nkeys == 1 && store->ties == NULL)
	{
		/* merge keys alone decide: no branch on the data */
		for (; node >= 1; node /= 2)
		{
			MergeKey	other = store->tree[node];
			bool		other_first = other < winner;

			store->tree[node] = other_first ? winner : other;
			winner = other_first ? other : winner;
		}
	}
	else
	{
		for (; node >= 1; node /= 2)
		{
			MergeKey	other = store->tree[node];

			if (merge_key_before(store, other, winner))
			{
				store->tree[node] = winner;
				winner = other;
			}
		}
	}
	store->tree[0] = winner;
}

/* The memory reading the merge's runs takes (each run's file buffer, chunk
 * and tuple copy) counts toward the peak beside the rows in memory. */
static void
count_merge_memory(RowStore *store)
{
	Size		bytes = store->memory_used + files_memory(store);

	for (int i = 0; i < store->ninputs; i++)
		if (store->inputs[i].run != NULL)
			bytes += store->inputs[i].chunk_size +
				(store->inputs[i].run->file_counted ? 0 : BLCKSZ);
	store->stats.peak_memory = Max(store->stats.peak_memory, bytes);
}

/* The memory a merge may read its runs with: work_mem beside the rows in
 * memory (which prepare_final_merge() keeps only where every run's file
 * buffer and a whole chunk fit beside them). */
Size
merge_memory(RowStore *store)
{
	return store->spec.work_mem_bytes > store->memory_used ?
		store->spec.work_mem_bytes - store->memory_used : 0;
}

/* Where partition p's rows start and end: splitters, NULL for no limit. */
static const RowStoreKey *
partition_from(RowStore *store, int p)
{
	return p > 0 ? &store->splitters[p - 1] : NULL;
}

static const RowStoreKey *
partition_to(RowStore *store, int p)
{
	return p < store->npartitions - 1 ? &store->splitters[p] : NULL;
}

/* Makes `input` read `run` from `offset` on, a chunk of `chunk_size` at a
 * time, up to `stop` (NULL: the run's end). */
void
start_run_input(RowStore *store, MergeInput *input, SortedRun *run, Size chunk_size,
				int64 offset, const RowStoreKey *stop)
{
	input->run = run;
	input->stop = stop;
	if (run->gpu != NULL)
	{
		run->gpu_position = offset;
		restart_gpu_ties(store);
	}
	else
		seek_file(run->file, offset);
	if (input->chunk != NULL && input->chunk_size != chunk_size)
	{
		pfree(input->chunk);
		input->chunk = NULL;
	}
	if (input->chunk == NULL)
	{
		input->chunk = MemoryContextAlloc(store->chunks_context, chunk_size);
		input->chunk_size = chunk_size;
	}
	input->chunk_used = 0;
	input->chunk_pos = 0;
}

/* Starts merging runs[first .. first + count - 1], and the rows in memory
 * when with_memory, reading ahead within `memory` bytes: whole, or (runs
 * only, `partition` >= 0) only that key range of each, from its sample
 * before the range (see row_store_find_partitions()). */
void
start_merge(RowStore *store, int first, int count, bool with_memory, Size memory,
			int partition)
{
	const RowStoreKey *from = partition >= 0 ? partition_from(store, partition) : NULL;
	const RowStoreKey *to = partition >= 0 ? partition_to(store, partition) : NULL;
	int			ninputs = count + (with_memory ? 1 : 0);
	int			file_runs = count;
	Size		gpu_memory = 0;
	Size		chunk_size;
	Size		others = files_memory(store);

	/* the buffers of open runs not in this merge (other levels', the
	 * output's) and the write buffer are not the merge's to use */
	for (int r = first; r < first + count; r++)
		if (store->runs[r]->file_counted)
			others -= BLCKSZ;
	memory = memory > others ? memory - others : 0;
	/* a run in a GPU's memory is read a round trip at a time: it reads
	 * with half the memory (all of it alone), the files with the rest */
	for (int r = first; r < first + count; r++)
		if (store->runs[r]->gpu != NULL)
		{
			/* with prefix keys, its groups of tied rows take their part
			 * first (next_tied_row()) */
			if (store->ties != NULL)
				memory = memory > gpu_tie_memory(store) ? memory - gpu_tie_memory(store) : 0;
			file_runs--;
			gpu_memory = count > 1 ? memory / 2 : memory;
		}
	chunk_size = file_runs > 0 ? (memory - gpu_memory) / file_runs : 0;

	/* a chunk of records beside each run's file buffer */
	chunk_size = chunk_size > BLCKSZ ? chunk_size - BLCKSZ : 0;
	chunk_size = Max(MIN_READ_CHUNK, Min(MAX_READ_CHUNK, chunk_size));
	if (ninputs > MERGE_INPUT_MASK)
		elog(ERROR, "gpusort: too many sorted runs to merge at once (%d)", ninputs);
	if (store->inputs == NULL || store->inputs_allocated < ninputs)
	{
		MemoryContext old_context = MemoryContextSwitchTo(store->context);

		if (store->inputs != NULL)
		{
			for (int i = 0; i < store->inputs_allocated; i++)
			{
				if (store->inputs[i].chunk != NULL)
					pfree(store->inputs[i].chunk);
			}
			pfree(store->inputs);
			pfree(store->tree);
		}
		store->inputs = palloc0(ninputs * sizeof(MergeInput));
		store->tree = palloc(Max(ninputs, 1) * sizeof(MergeKey));
		store->inputs_allocated = ninputs;
		MemoryContextSwitchTo(old_context);
	}
	store->ninputs = ninputs;
	store->last_input = -1;
	plan_merge_key(store, first, count, with_memory);
	for (int i = 0; i < ninputs; i++)
	{
		MergeInput *input = &store->inputs[i];

		input->next = 0;
		if (i < count && store->runs[first + i]->gpu != NULL)
			start_run_input(store, input, store->runs[first + i],
							Max(MAX_READ_CHUNK, Min(MAX_GPU_READ_CHUNK, gpu_memory)), 0, to);
		else if (i < count)
			start_run_input(store, input, store->runs[first + i], chunk_size,
							partition >= 0 ? store->runs[first + i]->partition_starts[partition] : 0,
							to);
		else
		{
			input->run = NULL;
			input->stop = NULL;
		}
		input->done = !advance_input(store, input);
		while (from != NULL && input->run != NULL && !input->done &&
			   compare_keys(store, input->keys, input->nulls, from->keys, from->nulls) < 0)
			input->done = !advance_input(store, input);
	}
	if (ninputs > 0)
		store->tree[0] = build_tree(store, 1);
	count_merge_memory(store);
}

/* The merge's next row, or NULL; valid until the next call. */
MergeInput *
next_merged(RowStore *store)
{
	int			winner;

	if (store->ninputs == 0)
		return NULL;
	if (store->last_input >= 0)
	{
		/* the input of the row returned last moves on now, not before:
		 * that row stayed valid in its chunk or buffer until this call */
		MergeInput *input = &store->inputs[store->last_input];

		input->done = !advance_input(store, input);
		replay_tree(store, store->last_input);
		store->last_input = -1;
	}
	winner = (int) (store->tree[0] & MERGE_INPUT_MASK);
	if (store->inputs[winner].done)
		return NULL;
	store->last_input = winner;
	return &store->inputs[winner];
}

/* Merges runs[first .. first + count - 1] (and the rows in memory) into
 * `merged` (a new run when NULL), at most `limit` rows (0: all; top-N per
 * group: each group's first rows only), and drops them (their places in
 * the list are the caller's to fill). */
SortedRun *
merge_into_run(RowStore *store, SortedRun *merged, int first, int count, bool with_memory,
			   size_t limit)
{
	MergeInput *input;
	size_t		written = 0;
	instr_time	start,
				duration;
	GroupCounter counter;

	memset(&counter, 0, sizeof(counter));
	INSTR_TIME_SET_CURRENT(start);
	/* the output's file first: its buffer is not the merge's to read with */
	if (merged == NULL)
		merged = new_run(store);
	start_merge(store, first, count, with_memory, merge_memory(store), -1);
	memcpy(merged->columns, store->merge_ranges, sizeof(merged->columns));
	while ((limit == 0 || written < limit) && (input = next_merged(store)) != NULL)
	{
		if ((written & 0x3fff) == 0)
			CHECK_FOR_INTERRUPTS();
		if (store->topn && !group_keeps(store, &counter, input->keys, input->nulls))
		{
			store->stats.rows_skipped++;
			continue;
		}
		write_record(store, merged, input->keys, input->nulls, input->tuple);
		written++;
	}
	finish_run(store, merged);
	for (int i = 0; i < count; i++)
	{
		drop_run(store, store->runs[first + i]);
		store->runs[first + i] = NULL;
	}
	/* the chunks go too, back to the system rather than to a free list
	 * beside the rows that come next */
	for (int i = 0; i < store->inputs_allocated; i++)
		store->inputs[i].chunk = NULL;
	MemoryContextReset(store->chunks_context);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	store->stats.merge_ms += INSTR_TIME_GET_MILLISEC(duration);
	return merged;
}

/*
 * Every open run holds a file buffer (BLCKSZ) in the store's memory, which
 * counts against work_mem beside the rows (memory_to_sort()), so runs must
 * not pile up while rows still come: once the newest
 * row_store_cascade_order() runs (half the merge order) are of one level,
 * they are merged into one
 * run of the next (neighbours, so the runs stay in input order; never the
 * GPU run). The half leaves the rows most of work_mem: with the whole
 * order, the runs at 1MB were 810 against 461 and the sort about 10%
 * slower (bench/README.md). Each row is merged once a level, as in passes
 * at the end.
 */
void
merge_newest_runs(RowStore *store, size_t limit)
{
	int			order = row_store_cascade_order(store->spec.work_mem_bytes);

	for (;;)
	{
		int			first = store->nruns - order;
		int			level;
		SortedRun  *merged;

		if (first < 0)
			return;
		level = store->runs[first]->level;
		for (int i = first; i < store->nruns; i++)
			if (store->runs[i]->gpu != NULL || store->runs[i]->level != level)
				return;
		merged = merge_into_run(store, NULL, first, order, false, limit);
		merged->level = level + 1;
		/* (a level made is a pass over the rows so far, for EXPLAIN) */
		if (merged->level > store->run_levels)
		{
			store->run_levels = merged->level;
			store->stats.merge_passes++;
		}
		store->runs[first] = merged;
		store->nruns = first + 1;
	}
}

/*
 * Merges groups of neighbouring runs, in passes, until the runs (and the
 * rows in memory, if any) are at most `order`. Runs stay in input order.
 * The GPU run is never merged into a file (it is read where it is).
 */
void
merge_runs_down_to(RowStore *store, int order, size_t limit)
{
	while (store->nruns + (store->ntuples > 0 ? 1 : 0) > order)
	{
		/* one pass: groups of neighbouring runs become one run each, in
		 * order, until the rest fit one merge */
		int			excess = store->nruns + (store->ntuples > 0 ? 1 : 0) - order;
		int			merged = 0;
		int			first = 0;

		while (first < store->nruns)
		{
			int			count = Min(Min(order, store->nruns - first), excess + 1);

			/* the GPU run stays where it is: a group ends before it */
			for (int i = 0; i < count; i++)
				if (store->runs[first + i] == store->gpu_run)
				{
					count = i;
					break;
				}
			if (count <= 1)
				store->runs[merged++] = store->runs[first];
			else
			{
				store->runs[merged++] = merge_into_run(store, NULL, first, count, false, limit);
				excess -= count - 1;
			}
			first += Max(count, 1);
		}
		store->nruns = merged;
		store->stats.merge_passes++;
	}
}

int
row_store_merge_order(Size work_mem_bytes)
{
	return Max(MIN_MERGE_ORDER, (int) Min((Size) INT_MAX / 2, work_mem_bytes / RUN_READ_BYTES));
}

/* How many runs of one level are merged while rows still come
 * (merge_newest_runs()). */
int
row_store_cascade_order(Size work_mem_bytes)
{
	return Max(MIN_MERGE_ORDER, row_store_merge_order(work_mem_bytes) / 2);
}

/* ---- a merge cut into key ranges ---- */

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
