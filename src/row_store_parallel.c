/*
 * row_store_parallel.c — a parallel sort's shares in the row store.
 *
 * A share ends with row_store_finish_share(), which hands over its runs
 * (and its part of the shared GPU run); the leader's store takes the runs
 * of all shares over (row_store_begin_merge()) and merges them as its own.
 * That merge can be cut into key ranges (READ_PARTITIONS, row_store.h): the
 * splitters come from the samples the shares' runs noted as they were
 * written, and each range is merged on its own, here or by a worker into a
 * file.
 */
#include "gpusort.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "row_store_int.h"

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


int
row_store_finish_share(RowStore *store, int max_runs, RowStoreRun **runs_out,
					   RowStoreRun *gpu_part)
{
	size_t		limit = store->spec.bound > 0 ? (size_t) store->spec.bound : 0;
	bool		external;
	int			runs_written;
	size_t		total;
	RowStoreRun *runs;

	/* a share that held its rows to choose a prefix (fewer than it holds
	 * for that): they go to the shared rows job, not to a file */
	if (store->spec.gpu_share != NULL && !store->gpu_run_tried && store->ntuples > 0)
		move_share_to_gpu_run(store);
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
	merge_spec.agree_prefix = NULL;
	store = row_store_begin(&merge_spec);
	if (merge_spec.prefix_choice != NULL)
		adopt_chosen_prefix(store);
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
