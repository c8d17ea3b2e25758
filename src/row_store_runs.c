/*
 * row_store_runs.c — the row store's sorted runs in temporary files.
 *
 * Beyond work_mem: the rows in memory are sorted by the engine and written,
 * in order and with their encoded keys, as a sorted run to a temporary file;
 * memory starts over (spill_rows(), in row_store.c, decides between a run
 * here and the GPU's memory). A parallel share's runs are files of the shared set,
 * each noting samples of its keys in a file beside it for a partitioned
 * merge.
 */
#include "gpusort.h"

#include "commands/tablespace.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"

#include "row_store_int.h"

/* A parallel share's runs note a record's keys and offset every so many
 * bytes (work_mem / 512, within these), so that a partitioned merge finds
 * where a key range starts in a run by reading a little of it. */
#define MIN_SAMPLE_BYTES ((Size) 8 * 1024)
#define MAX_SAMPLE_BYTES ((Size) 64 * 1024)

/* ---- runs on disk ---- */

void
write_bytes(BufFile *file, const void *data, size_t length)
{
	BufFileWrite(file, (void *) data, length);
}

/* Reads exactly `length` bytes; false at the end of the file before any. */
bool
read_bytes(BufFile *file, void *data, size_t length, bool eof_allowed)
{
	size_t		got = BufFileRead(file, data, length);

	if (got == length)
		return true;
	if (got == 0 && eof_allowed)
		return false;
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("gpusort: could not read from a temporary file: read only %zu of %zu bytes",
					got, length)));
	return false;				/* not reached */
}

Size
row_store_file_record_bytes(int nkeys, Size tuple_length)
{
	return file_header_size(nkeys) + tuple_length - MINIMAL_TUPLE_DATA_OFFSET;
}

/* The length, keys and NULL flags that start a record of either layout,
 * laid out unpadded in `header` (at most MAX_FILE_HEADER bytes); returns
 * their size, a file record's whole header. */
Size
pack_fields(const RowStore *store, char *header, uint32 length, const uint64_t *keys,
			const bool *nulls)
{
	memcpy(header, &length, sizeof(length));
	memcpy(header + sizeof(length), keys, store->nkeys * sizeof(uint64_t));
	memcpy(header + sizeof(length) + store->nkeys * sizeof(uint64_t), nulls, store->nkeys);
	return file_header_size(store->nkeys);
}

/* Writes the buffered records to the file of the run they belong to. */
void
flush_records(RowStore *store, SortedRun *run)
{
	if (store->write_buffered > 0)
		write_bytes(run->file, store->write_buffer, store->write_buffered);
	store->write_buffered = 0;
}

/* Appends bytes of a record to `run` through the store's write buffer
 * (straight to the file when they are larger than it). */
static void
append_to_run(RowStore *store, SortedRun *run, const void *data, Size length)
{
	if (store->write_buffered + length > RUN_WRITE_BUFFER)
		flush_records(store, run);
	if (length > RUN_WRITE_BUFFER)
		write_bytes(run->file, data, length);
	else
	{
		memcpy(store->write_buffer + store->write_buffered, data, length);
		store->write_buffered += length;
	}
}

/* A run is written: its records flushed, and its samples file closed (the
 * leader opens it again by name), so a share's runs hold no buffer for it. */
void
finish_run(RowStore *store, SortedRun *run)
{
	flush_records(store, run);
	if (run->samples != NULL)
		BufFileClose(run->samples);
	run->samples = NULL;
}

/* Notes the keys of the record about to start at the run's end, in the
 * run's samples file (memory holds none). */
static void
note_sample(RowStore *store, SortedRun *run, const uint64_t *keys, const bool *nulls)
{
	write_bytes(run->samples, &run->bytes, sizeof(int64));
	write_bytes(run->samples, keys, store->nkeys * sizeof(uint64_t));
	write_bytes(run->samples, nulls, store->nkeys);
	run->nsamples++;
	run->next_sample = run->bytes +
		Max(MIN_SAMPLE_BYTES, Min(MAX_SAMPLE_BYTES, store->spec.work_mem_bytes / 512));
}

/* The next sample of a samples file into `sample`; false at its end. */
bool
read_sample(RowStore *store, BufFile *file, RunSample *sample)
{
	if (!read_bytes(file, &sample->offset, sizeof(int64), true))
		return false;
	read_bytes(file, sample->key.keys, store->nkeys * sizeof(uint64_t), false);
	read_bytes(file, sample->key.nulls, store->nkeys, false);
	return true;
}

/*
 * Appends one record to `run`, through the store's write buffer: records
 * of one run follow each other until flush_records(), which must come
 * before the run is read or another run is written.
 */
void
write_record(RowStore *store, SortedRun *run, const uint64_t *keys, const bool *nulls,
			 MinimalTuple tuple)
{
	uint32		length = tuple->t_len;
	Size		size = file_record_size(store, length, run->backward);
	char		header[MAX_FILE_HEADER];

	if (run->samples != NULL && run->bytes >= run->next_sample)
		note_sample(store, run, keys, nulls);

	if (store->write_buffer == NULL)
		store->write_buffer = MemoryContextAlloc(store->context, RUN_WRITE_BUFFER);
	append_to_run(store, run, header, pack_fields(store, header, length, keys, nulls));
	append_to_run(store, run, (char *) tuple + MINIMAL_TUPLE_DATA_OFFSET,
				  length - MINIMAL_TUPLE_DATA_OFFSET);
	if (run->backward)
		append_to_run(store, run, &length, sizeof(length));
	run->rows++;
	run->bytes += size;
	store->disk_bytes += size;
	store->stats.disk_bytes = Max(store->stats.disk_bytes, store->disk_bytes);
}

/* Reads the record at the position of a file read backward (its records
 * end with their length) into a buffer, grown as needed, as a MAXALIGNed
 * tuple; false at the file's end. */
bool
read_backward_record(RowStore *store, BufFile *file, char **buffer, Size *buffer_size,
					 uint32 *tuple_length)
{
	char		header[MAX_FILE_HEADER];
	Size		need;
	uint32		length;
	uint32		trailer;

	if (!read_bytes(file, header, file_header_size(store->nkeys), true))
		return false;
	length = file_record_length(header);
	/* the tuple after its length and padding, and the trailing length, in
	 * one read */
	need = (Size) length + sizeof(trailer);
	if (*buffer_size < need)
	{
		Size		size = Max(need, 256);

		if (*buffer != NULL)
			pfree(*buffer);
		*buffer = MemoryContextAllocHuge(store->context, size);
		*buffer_size = size;
	}
	read_bytes(file, *buffer + MINIMAL_TUPLE_DATA_OFFSET, need - MINIMAL_TUPLE_DATA_OFFSET, false);
	memcpy(&trailer, *buffer + length, sizeof(trailer));
	if (trailer != length)
		elog(ERROR, "gpusort: a temporary file of sorted rows is corrupt");
	((MinimalTuple) *buffer)->t_len = length;
	*tuple_length = length;
	return true;
}

/* Seeks to a byte offset of a file of any size (BufFile's segments are
 * whole blocks, so the block seek crosses segments and the rest does not). */
void
seek_file(BufFile *file, int64 offset)
{
	if (BufFileSeekBlock(file, (long) (offset / BLCKSZ)) != 0 ||
		(offset % BLCKSZ != 0 && BufFileSeek(file, 0, (off_t) (offset % BLCKSZ), SEEK_CUR) != 0))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("gpusort: could not seek in a temporary file of sorted rows")));
}

void
row_store_share_file_name(char *name, size_t size, int share, int file_number)
{
	snprintf(name, size, "gpusort-share-%d-%d", share, file_number);
}

void
row_store_share_samples_name(char *name, size_t size, int share, int file_number)
{
	snprintf(name, size, "gpusort-share-%d-%d-samples", share, file_number);
}

/* A new, empty run; the caller puts it in the list of runs. A parallel
 * share's runs are files of the shared set, for the leader to read. */
SortedRun *
new_run(RowStore *store)
{
	MemoryContext old_context = MemoryContextSwitchTo(store->context);
	SortedRun  *run = palloc0(sizeof(SortedRun));

	if (store->spec.share_files != NULL)
	{
		char		name[MAXPGPATH];

		run->file_number = store->files_created++;
		row_store_share_file_name(name, sizeof(name), store->spec.share, run->file_number);
		run->file = BufFileCreateFileSet(store->spec.share_files, name);
		if (store->sample_runs)
		{
			row_store_share_samples_name(name, sizeof(name), store->spec.share,
										 run->file_number);
			run->samples = BufFileCreateFileSet(store->spec.share_files, name);
		}
	}
	else
	{
		if (store->runs_allocated == 0)
			PrepareTempTablespaces();
		run->file_number = -1;
		run->file = BufFileCreateTemp(false);
	}
	run->file_counted = true;
	store->open_run_files++;
	MemoryContextSwitchTo(old_context);
	return run;
}

/* Appends a run to the list, which stays in input order. */
void
add_run(RowStore *store, SortedRun *run)
{
	if (store->nruns == store->runs_allocated)
	{
		store->runs_allocated = Max(16, store->runs_allocated * 2);
		store->runs = store->runs == NULL ?
			MemoryContextAlloc(store->context, store->runs_allocated * sizeof(SortedRun *)) :
			repalloc(store->runs, store->runs_allocated * sizeof(SortedRun *));
	}
	store->runs[store->nruns++] = run;
}

void
drop_run(RowStore *store, SortedRun *run)
{
	if (run->gpu != NULL)
	{
		if (service_rows_given_back(run->gpu))
			store->stats.gpu_run_given_back = true;
		service_rows_close(run->gpu);
		if (store->gpu_run == run)
			store->gpu_run = NULL;
	}
	else
	{
		BufFileClose(run->file);
		store->disk_bytes -= run->bytes;
		if (run->file_counted)
			store->open_run_files--;
	}
	if (run->file_number >= 0)
	{
		/* a shared file stays until deleted */
		char		name[MAXPGPATH];

		row_store_share_file_name(name, sizeof(name), store->spec.share, run->file_number);
		BufFileDeleteFileSet(store->spec.share_files, name, false);
		if (store->sample_runs)
		{
			row_store_share_samples_name(name, sizeof(name), store->spec.share,
										 run->file_number);
			BufFileDeleteFileSet(store->spec.share_files, name, false);
		}
	}
	if (run->partition_starts != NULL)
		pfree(run->partition_starts);
	pfree(run);
}

/*
 * Writes the sorted rows in memory (store->order, the first `nout`) to
 * `run` in order. With a bound, the bound-th row is a threshold too. Top-N
 * per group: only each group's first rows (GroupCounter).
 */
void
write_sorted_rows(RowStore *store, SortedRun *run, size_t nout)
{
	size_t		limit = store->spec.bound > 0 ? (size_t) store->spec.bound : 0;
	uint64_t	keys[GS_MAX_KEY_COLUMNS];
	bool		nulls[GS_MAX_KEY_COLUMNS];
	instr_time	start,
				duration;
	GroupCounter counter;

	memset(&counter, 0, sizeof(counter));
	INSTR_TIME_SET_CURRENT(start);
	for (size_t i = 0; i < nout; i++)
	{
		uint32_t	row = store->order[i];

		/*
		 * The rows lie scattered in memory: fetch ahead, in two steps, as
		 * the tuple's address is itself scattered: its pointer and keys
		 * twice the distance ahead, the tuple once (its pointer is in the
		 * cache by then).
		 */
		if (i + 2 * PREFETCH_DISTANCE < nout)
		{
			uint32_t	far = store->order[i + 2 * PREFETCH_DISTANCE];

			__builtin_prefetch(&store->tuples[far]);
			for (int k = 0; k < store->nkeys; k++)
			{
				__builtin_prefetch(&store->column_keys[k][far]);
				__builtin_prefetch(&store->column_nulls[k][far]);
			}
		}
		if (i + PREFETCH_DISTANCE < nout)
			prefetch_tuple(store->tuples[store->order[i + PREFETCH_DISTANCE]]);

		sorted_keys_of(store, i, keys, nulls);
		if (store->topn && !group_keeps(store, &counter, keys, nulls))
		{
			store->stats.rows_skipped++;
			continue;
		}
		write_record(store, run, keys, nulls, store->tuples[row]);
	}
	finish_run(store, run);
	if (limit > 0 && nout > 0 && note_best_keys(store, nout))
	{
		/* the bound-th best row written so far */
		if (store->nbest == limit)
		{
			keys_of(store, limit - 1, store->best_keys, store->best_nulls, keys, nulls);
			lower_threshold(store, keys, nulls);
		}
	}
	else if (limit > 0 && nout == limit)
		lower_threshold(store, keys, nulls);	/* this run's last row */
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	store->stats.write_ms += INSTR_TIME_GET_MILLISEC(duration);
}
