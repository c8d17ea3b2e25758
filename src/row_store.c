/*
 * row_store.c — the rows of one GpuSort: gathered, sorted, spilled, read back.
 *
 * Beyond work_mem with the GPU service (gpusort.spill_to_gpu, serial and
 * unbounded sorts), or beyond GPU_RUN_EARLY_BYTES where the rows are read
 * forward once: the rows go to a GPU's memory instead, the first batch
 * from memory, every later row straight from the scan into the service's
 * slot; the service sorts them there and they are read back from the slot
 * in order ("runs in a GPU's memory" below). What does not fit the room
 * the service gave goes to files as other runs do (row_store_runs.c),
 * merged with the GPU's run. A parallel sort's shares all stream into one
 * such job, from their first row.
 *
 * Parts of the store by job have files of their own:
 *
 *   row_store_memory.c    the rows in memory: the arena, memory accounting,
 *                         sorting them, a bounded sort's pruning
 *   row_store_runs.c      sorted runs in temporary files
 *   row_store_merge.c     merging runs
 *
 * and row_store_int.h, what they share (the RowStore itself).
 *
 * Memory is counted as the memory contexts allocated it. Everything lives
 * in the store's own context and the files belong to the resource owner,
 * so an error at any row leaks nothing.
 */
#include "gpusort.h"

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"

#include "row_store_int.h"

/* Smallest buffer of rows a bounded sort prunes: small, so that a small
 * bound has its threshold early (bench/README.md, "Top-N"). */
#define MIN_PRUNE_ROWS 1024

/* A GPU run's record's header: those fields and their padding; returns its
 * size. */
static Size
pack_header(const RowStore *store, char *header, uint32 length, const uint64_t *keys,
			const bool *nulls)
{
	Size		size = job_header_size(store);
	Size		used = pack_fields(store, header, length, keys, nulls);

	memset(header + used, 0, size - used);
	return size;
}

/* What follows a record's tuple: padding, and the length last, laid out in
 * `tail`; returns its size (4 to 11 bytes). */
static Size
pack_tail(const RowStore *store, char *tail, uint32 length)
{
	Size		size = job_record_size(store, length) - job_header_size(store) - length;

	memset(tail, 0, size - sizeof(length));
	memcpy(tail + size - sizeof(length), &length, sizeof(length));
	return size;
}

/* ---- runs in a GPU's memory ---- */

/*
 * Beyond work_mem, the rows may go to a GPU's memory instead of temporary
 * files (gpusort.spill_to_gpu): the batch that first fills work_mem (or,
 * for an unbounded exact sort read forward once, GPU_RUN_EARLY_BYTES of
 * it) is appended, unsorted, to one rows job of the GPU service (service.h), and
 * every later row goes straight into the job's slot; at the end the
 * service sorts them all and lays them out in order, and they are read
 * back from the slot (READ_GPU below). Rows that do not fit the room the
 * service gave go to files as before, and that run is merged with theirs
 * (read through a chunk of up to MAX_GPU_READ_CHUNK). Bounded sorts keep
 * to files.
 *
 * A parallel share (spec.gpu_share) attaches to the leader's shared rows
 * job instead and streams every row from its first; it never sorts or
 * reads the job. row_store_finish_share() reports its part, and the
 * leader's store (row_store_begin_merge()) makes the parts of all shares
 * its one GPU run.
 */

/* The rows in memory as records: their bytes together, and the largest. */
void
measure_records(const RowStore *store, Size *total, Size *largest)
{
	*total = 0;
	*largest = 0;
	for (size_t i = 0; i < store->ntuples; i++)
	{
		Size		size = job_record_size(store, store->tuples[i]->t_len);

		*total += size;
		*largest = Max(*largest, size);
	}
}

/* The GPU run out of the runs and closed (its memory goes back to the
 * service); rows no longer go to it. */
static void
drop_gpu_run(RowStore *store)
{
	SortedRun  *run = store->gpu_run;
	int			r = 0;

	while (store->runs[r] != run)
		r++;
	memmove(&store->runs[r], &store->runs[r + 1], (store->nruns - r - 1) * sizeof(SortedRun *));
	store->nruns--;
	store->gpu_run_open = false;
	drop_run(store, run);
}

/* The store's memory goes: in an abort, the resource owner closes the
 * job's file; otherwise drop_run() or row_store_end() closed the job. */
static void
abandon_gpu_rows(void *arg)
{
	service_rows_abandon((ServiceRows *) arg);
}

bool
gpu_run_allowed(const RowStore *store)
{
	return store->spec.spill_to_gpu && gpusort_device != GS_DEVICE_CPU && gpu_service != NULL &&
		store->spec.bound == 0 && store->spec.share_files == NULL && store->ntuples > 0;
}

/* The run whose rows `rows` holds (or, streaming, will), and its slot;
 * the connection closes with the store's memory. */
void
start_gpu_run(RowStore *store, ServiceRows *rows, bool streaming)
{
	MemoryContext old_context = MemoryContextSwitchTo(store->context);
	MemoryContextCallback *callback;
	SortedRun  *run;
	uint64		slot_bytes;

	callback = palloc0(sizeof(MemoryContextCallback));
	callback->func = abandon_gpu_rows;
	callback->arg = rows;
	MemoryContextRegisterResetCallback(store->context, callback);

	run = palloc0(sizeof(SortedRun));
	run->file_number = -1;
	run->gpu = rows;
	for (int k = 0; k < store->nkeys; k++)
		gs_key_column_init(&run->columns[k], store->plan->descending[k],
						   store->plan->nulls_first[k]);
	add_run(store, run);
	store->gpu_run = run;
	store->gpu_run_open = streaming;
	store->stream_slot = service_rows_slot(rows, &slot_bytes);
	store->stream_half = (Size) (slot_bytes / 2) & ~(Size) 7;
	MemoryContextSwitchTo(old_context);
}

uint64
row_store_gpu_room(double rows, Size record_bytes)
{
	double		room = rows * record_bytes * 2;

	return Max((uint64) Min(room, (double) PG_INT64_MAX / 2), (uint64) MIN_GPU_RUN_BYTES);
}

/* The rows job, asked for at the first spill or early move: room for the
 * rows the planner expects (and work_mem, below). Declined: memory and
 * files, as before. */
static void
open_gpu_run(RowStore *store, Size total)
{
	Size		average = total / store->ntuples;
	uint64		capacity = row_store_gpu_room(Max(store->spec.expected_rows,
												  (double) store->ntuples), average);
	uint64		memory_limit = (uint64) gpusort_gpu_memory_limit_mb << 20;
	MemoryContext old_context;
	ServiceRows *rows;
	char		why[256];

	/* moving early, past the planner's estimate: room for at least what
	 * work_mem would have held in memory */
	if (store->ntuples > store->spec.expected_rows &&
		memory_to_sort(store) < store->spec.work_mem_bytes)
		capacity = Max(capacity, (uint64) store->spec.work_mem_bytes);
	old_context = MemoryContextSwitchTo(store->context);
	rows = service_rows_open(capacity, Max(average / 2, job_record_size(store, 0)), store->nkeys,
							 store->plan->descending, store->plan->nulls_first, memory_limit,
							 false, why, sizeof(why));
	MemoryContextSwitchTo(old_context);
	if (rows != NULL)
		start_gpu_run(store, rows, true);
}

/* A parallel share's rows go to the shared rows job from its first row
 * (it attaches as it begins); if it cannot attach (the job's process gone,
 * no slot free), to files. */
void
attach_gpu_run(RowStore *store)
{
	MemoryContext old_context = MemoryContextSwitchTo(store->context);
	char		why[256];
	ServiceRows *rows;

	store->gpu_run_tried = true;
	rows = service_rows_attach(store->spec.gpu_share, why, sizeof(why));
	MemoryContextSwitchTo(old_context);
	if (rows != NULL)
		start_gpu_run(store, rows, true);
}

/* The service failed the rows it holds: they are lost, and so is the query. */
void
gpu_run_failed(void)
{
	CHECK_FOR_INTERRUPTS();
	ereport(ERROR,
			(errcode(ERRCODE_SYSTEM_ERROR),
			 errmsg("gpusort: the GPU service lost the rows of a sort beyond work_mem"),
			 errdetail("%s", gpu_last_error()),
			 errhint("Run the query again. With gpusort.spill_to_gpu = off, such sorts keep "
					 "their rows in temporary files.")));
}

/* Sends the half of the slot being filled, and turns to the other. */
static void
flush_stream(RowStore *store)
{
	instr_time	start,
				duration;

	if (store->stream_records == 0)
		return;
	INSTR_TIME_SET_CURRENT(start);
	if (!service_rows_append(store->gpu_run->gpu, store->stream_side * store->stream_half,
							 store->stream_records, store->stream_used))
		gpu_run_failed();
	store->stream_side ^= 1;
	store->stream_used = 0;
	store->stream_records = 0;
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	store->stats.write_ms += INSTR_TIME_GET_MILLISEC(duration);
}

/*
 * Room for one record of a `length`-byte tuple in the slot for the GPU
 * run, its header and tail laid out and the row counted; returns where
 * the tuple goes, or NULL (nothing written) when the run has no room left.
 */
static char *
stream_reserve(RowStore *store, const uint64_t *keys, const bool *nulls, uint32 length)
{
	SortedRun  *run = store->gpu_run;
	Size		size = job_record_size(store, length);
	char	   *record;

	if (size > store->stream_half ||
		!service_rows_room(run->gpu, store->stream_records + 1, store->stream_used + size))
		return NULL;
	if (store->stream_used + size > store->stream_half)
		flush_stream(store);
	record = store->stream_slot + store->stream_side * store->stream_half + store->stream_used;
	record += pack_header(store, record, length, keys, nulls);
	service_rows_note_sent(run->gpu, length, keys, nulls);
	pack_tail(store, record + length, length);
	store->stream_used += size;
	store->stream_records++;
	run->largest_record = Max(run->largest_record, size);
	for (int k = 0; k < store->nkeys; k++)
		gs_key_column_observe(&run->columns[k], nulls[k], keys[k]);
	run->rows++;
	run->bytes += size;
	return record;
}

/* One row's tuple bytes as a record in the slot for the GPU run; false
 * (nothing written) when the run has no room left for it. */
static bool
stream_record(RowStore *store, const uint64_t *keys, const bool *nulls, const char *tuple,
			  uint32 length)
{
	char	   *into = stream_reserve(store, keys, nulls, length);

	if (into == NULL)
		return false;
	memcpy(into, tuple, length);
	memcpy(into, &length, sizeof(length));	/* t_len */
	return true;
}

/* The slot's row straight to the GPU run (no copy in memory first). */
bool
stream_row(RowStore *store, const uint64_t *keys, const bool *nulls, TupleTableSlot *slot)
{
	Size		formed = formed_length(store, slot);
	bool		should_free;
	uint32		length;
	char	   *bytes;
	bool		done;

	if (formed > 0)
	{
		char	   *into = stream_reserve(store, keys, nulls, formed);

		if (into == NULL)
			return false;
		tuple_former_fill(&store->former, slot, into);
		return true;
	}
	bytes = slot_tuple_bytes(slot, &length, &should_free);
	done = stream_record(store, keys, nulls, bytes, length);
	if (should_free)
		pfree(bytes);
	return done;
}

/* No more rows to the GPU run: the last half goes, and later rows (if
 * any) stay in memory and files. */
void
stop_streaming(RowStore *store)
{
	flush_stream(store);
	store->gpu_run_open = false;
}

/*
 * A share's part of the shared rows job, once it sends no more (its room
 * ran out, or its rows ended): its last batch taken (so the leader's sort
 * finds it there), its totals in store->gpu_part, the room it did not use
 * given back, and its connection and slot freed at once (a slot held
 * while the share's runs wait for one to sort in could keep them waiting).
 */
void
finish_gpu_part(RowStore *store)
{
	SortedRun  *run = store->gpu_run;
	RowStoreRun *part = &store->gpu_part;

	stop_streaming(store);
	if (!service_rows_wait(run->gpu))
		gpu_run_failed();
	memset(part, 0, sizeof(RowStoreRun));
	part->rows = run->rows;
	part->bytes = run->bytes;
	part->largest_record = run->largest_record;
	memcpy(part->columns, run->columns, sizeof(part->columns));
	part->file_number = -1;
	part->share = -1;
	store->stats.gpu_run_rows = run->rows;
	store->stats.gpu_run_bytes = run->bytes;
	service_rows_detach(run->gpu);
	drop_gpu_run(store);
}

/* Appends the rows in memory (`total` bytes as records, the largest
 * `largest`), in the order they came, to the GPU run; false (nothing sent)
 * when they do not fit the room left. */
bool
append_to_gpu_run(RowStore *store, Size total, Size largest)
{
	SortedRun  *run = store->gpu_run;

	if (largest > store->stream_half ||
		!service_rows_room(run->gpu, store->stream_records + store->ntuples,
						   store->stream_used + total))
		return false;
	for (size_t i = 0; i < store->ntuples; i++)
	{
		uint64_t	keys[GS_MAX_KEY_COLUMNS];
		bool		nulls[GS_MAX_KEY_COLUMNS];

		if (i + PREFETCH_DISTANCE < store->ntuples)
			prefetch_tuple(store->tuples[i + PREFETCH_DISTANCE]);
		for (int k = 0; k < store->nkeys; k++)
		{
			keys[k] = store->column_keys[k][i];
			nulls[k] = store->column_nulls[k][i];
		}
		if (!stream_record(store, keys, nulls, (char *) store->tuples[i],
						   store->tuples[i]->t_len))
			elog(ERROR, "gpusort: the GPU's room for rows ran out unexpectedly");
		if ((i & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	return true;
}

/* The service sorts the GPU run: from here on it is read like any run. */
void
sort_gpu_run(RowStore *store)
{
	gpu_timing	timing;
	gs_sort_report report;
	instr_time	start,
				duration;

	stop_streaming(store);
	store->stats.gpu_run_rows = store->gpu_run->rows;
	store->stats.gpu_run_bytes = store->gpu_run->bytes;
	INSTR_TIME_SET_CURRENT(start);
	if (!service_rows_sort(store->gpu_run->gpu, &timing))
		gpu_run_failed();
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	store->stats.sort_ms += INSTR_TIME_GET_MILLISEC(duration);
	store->stats.sorts++;
	store->stats.gpu_sorts++;
	store->stats.gpu_index = timing.device_index;
	/* for EXPLAIN: the rows twice (as gathered and in order) */
	memset(&report, 0, sizeof(report));
	report.ran_on = GS_DEVICE_GPU;
	report.algorithm = GS_ALGO_RADIX;
	report.upload_ms = timing.upload_ms;
	report.sort_ms = timing.sort_ms;
	report.gpu_bytes = 2 * (size_t) store->gpu_run->bytes;
	report.gpu_index = timing.device_index;
	gs_sort_report_add(&store->stats.report, &report, !store->have_report);
	store->have_report = true;
}

/* ---- reading the GPU run straight from its slot ---- */

/* Can the GPU run, alone, be read from its slot (READ_GPU)? Each half keeps
 * room for the largest record before the piece it receives. */
bool
gpu_read_possible(RowStore *store)
{
	return store->nruns == 1 && store->runs[0] == store->gpu_run && store->ntuples == 0 &&
		MAXALIGN(store->gpu_run->largest_record) <= store->stream_half / 4;
}

/* Asks for the next piece of the GPU run into half `side` of the slot. */
static void
request_gpu_piece(RowStore *store, int side)
{
	SortedRun  *run = store->gpu_run;
	Size		length = (Size) Min((int64) (store->stream_half - store->read_reserve),
									run->bytes - store->read_requested);

	if (!service_rows_request(run->gpu, store->read_requested, length,
							  side * store->stream_half + store->read_reserve))
		gpu_run_failed();
	store->read_requested += length;
	store->read_coming = length;
}

/* Moves reading to the piece that came into the other half; what is left
 * of a record in this half goes just before it. The half left is asked to
 * be filled again: no row returned lies in it any more. */
static void
turn_to_other_half(RowStore *store)
{
	Size		left = store->read_end - store->read_next;
	int			other = store->read_side ^ 1;
	char	   *piece = store->stream_slot + other * store->stream_half + store->read_reserve;
	Size		length = store->read_coming;

	if (!service_rows_wait(store->gpu_run->gpu))
		gpu_run_failed();
	if (left > store->read_reserve)
		elog(ERROR, "gpusort: the GPU service returned a row longer than any it was given");
	memmove(piece - left, store->read_next, left);
	store->read_next = piece - left;
	store->read_end = piece + length;
	store->read_side = other;
	store->read_coming = 0;
	if (store->read_requested < store->gpu_run->bytes)
		request_gpu_piece(store, other ^ 1);
}

/*
 * Every row was read: the GPU memory goes back now rather than when the
 * query ends (a cursor left open, a sort below a long join). READ_GPU is
 * never asked to go back, and a rescan sorts again
 * (row_store_rewindable()).
 */
void
release_gpu_run(RowStore *store)
{
	if (store->gpu_run != NULL)
		drop_gpu_run(store);
}

/* Reads the GPU run from its start: its first piece, the next on its way. */
void
start_gpu_read(RowStore *store)
{
	store->read_reserve = MAXALIGN(store->gpu_run->largest_record);
	store->read_requested = 0;
	store->read_side = 1;
	store->read_next = store->read_end = store->stream_slot + store->stream_half +
		store->read_reserve;
	if (!service_rows_wait(store->gpu_run->gpu))
		gpu_run_failed();
	request_gpu_piece(store, 0);
	turn_to_other_half(store);
}

/* The GPU run's next row into *tuple, valid until the next call; false at
 * its end. */
bool
next_gpu_row(RowStore *store, MinimalTuple *tuple)
{
	Size		header_size = job_header_size(store);
	uint32		length = 0;
	char	   *data;
	uint32		trailer;

	if (store->gpu_run == NULL)
		return false;			/* read to its end and given back */

	for (;;)
	{
		Size		left = store->read_end - store->read_next;

		if (left >= header_size)
		{
			memcpy(&length, store->read_next, sizeof(length));
			if (length < GS_MIN_TUPLE_BYTES)
				elog(ERROR, "gpusort: the GPU service returned a corrupt row");
			if (left >= job_record_size(store, length))
				break;
		}
		if (store->read_coming == 0)
		{
			if (left > 0)
				elog(ERROR, "gpusort: the GPU service returned a row cut short");
			release_gpu_run(store);
			return false;
		}
		turn_to_other_half(store);
	}
	if (!service_rows_check_record(store->gpu_run->gpu, store->read_next))
		gpu_run_failed();
	data = store->read_next + header_size;
	store->read_next += job_record_size(store, length);
	memcpy(&trailer, store->read_next - sizeof(trailer), sizeof(trailer));
	if (trailer != length)
		elog(ERROR, "gpusort: the GPU service returned a corrupt row");
	/* the last row: the caller may not ask again, so the rows are proved
	 * those sent before it gets it */
	if (store->read_coming == 0 && store->read_next == store->read_end &&
		!service_rows_check_end(store->gpu_run->gpu))
		gpu_run_failed();
	/* records are multiples of 8 bytes from an aligned start */
	Assert((uintptr_t) data % MAXIMUM_ALIGNOF == 0);
	*tuple = (MinimalTuple) data;
	return true;
}

/*
 * Opens the GPU run and moves the rows in memory into it; later rows go
 * there as they come. False, with the rows still in memory, when the
 * service declines or not even this batch fits (a row wider than half the
 * slot, too little room). Tried once per sort.
 */
bool
move_to_gpu_run(RowStore *store, bool more_rows)
{
	Size		total,
				largest;

	store->gpu_run_tried = true;
	measure_records(store, &total, &largest);
	open_gpu_run(store, total);
	if (store->gpu_run == NULL)
		return false;
	if (!append_to_gpu_run(store, total, largest))
	{
		drop_gpu_run(store);
		return false;
	}
	store->stats.external = true;
	/* rows come back to memory only when the GPU's room runs out */
	MemoryContextDelete(store->rows_context);
	allocate_rows(store, more_rows ? MIN_RUN_ROWS : 1);
	return true;
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
