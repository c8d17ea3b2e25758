/*
 * row_store_gpu.c — the row store's runs in a GPU's memory.
 *
 * Beyond work_mem with the GPU service (gpusort.spill_to_gpu, serial and
 * unbounded sorts), or beyond GPU_RUN_EARLY_BYTES where the rows are read
 * forward once: the rows go to a GPU's memory instead, the first batch
 * from memory, every later row straight from the scan into the service's
 * slot; the service sorts them there and they are read back from the slot
 * in order ("runs in a GPU's memory" below). What does not fit the room
 * the service gave goes to files as other runs do (row_store_runs.c),
 * merged with the GPU's run. A parallel sort's shares all stream into one
 * such job, from their first row (or, choosing a string key's prefix,
 * from the first rows they held for it).
 */
#include "gpusort.h"

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"

#include "row_store_int.h"

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
 * job instead and streams every row from its first (a share that chooses
 * a prefix from its rows holds them until it has, then moves them there:
 * move_share_to_gpu_run()); it never sorts or
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
	/* (with prefix keys too: the ties of the rows that come back in the
	 * order of their encoded keys are put in order as they are read, see
	 * next_tied_row()) */
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

/* A parallel share's rows go to the shared rows job (it attaches as it
 * begins, or once it chose a prefix); if it cannot attach (the job's
 * process gone, no slot free), to files. */
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
			 errdetail("%s", gpu_service_last_error()),
			 errhint("Run the query again. With gpusort.spill_to_gpu = off, such sorts keep "
					 "their rows in temporary files.")));
}

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
 * A record of a `length`-byte tuple at `record` (where the slot's next
 * record goes) laid out around its tuple, and counted: its header, its
 * tail, the check's note of it, the run's totals. False (nothing counted)
 * when the run has no room left for it.
 */
static bool
stream_commit(RowStore *store, char *record, const uint64_t *keys, const bool *nulls,
			  uint32 length)
{
	SortedRun  *run = store->gpu_run;
	Size		size = job_record_size(store, length);

	if (!service_rows_room(run->gpu, store->stream_records + 1, store->stream_used + size))
		return false;
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
	return true;
}

/*
 * Room for one record of a `length`-byte tuple in the slot for the GPU
 * run, its header and tail laid out and the row counted; returns where
 * the tuple goes, or NULL (nothing written) when the run has no room left.
 */
static char *
stream_reserve(RowStore *store, const uint64_t *keys, const bool *nulls, uint32 length)
{
	Size		size = job_record_size(store, length);
	char	   *record;

	if (size > store->stream_half)
		return NULL;
	if (store->stream_used + size > store->stream_half)
		flush_stream(store);
	/* (stream_commit() asks whether the run has room for it) */
	record = store->stream_slot + store->stream_side * store->stream_half + store->stream_used;
	if (!stream_commit(store, record, keys, nulls, length))
		return NULL;
	return record + job_header_size(store);
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

/*
 * The slot's row straight to the GPU run (no copy in memory first). A
 * join's or a projection's row is formed in one pass where the next
 * record goes, while the half being filled has room for it (its length is
 * known only once formed); otherwise it is measured first.
 */
bool
stream_row(RowStore *store, const uint64_t *keys, const bool *nulls, TupleTableSlot *slot)
{
	Size		header = job_header_size(store);
	Size		left = store->stream_half - store->stream_used;
	bool		should_free;
	uint32		length;
	char	   *bytes;
	bool		done;

	if (TTS_IS_VIRTUAL(slot))
	{
		Size		formed = 0;

		if (left >= header + MAXIMUM_ALIGNOF)
		{
			char	   *record = store->stream_slot + store->stream_side * store->stream_half +
				store->stream_used;

			/* the tuple and the tail's length in what is left (both it and
			 * the header are 8-byte multiples) */
			formed = tuple_former_form(&store->former, slot, record + header,
									   left - header - sizeof(uint32));
			if (formed > 0)
				return stream_commit(store, record, keys, nulls, formed);
		}
		formed = tuple_former_measure(&store->former, slot);
		if (formed > 0)
		{
			char	   *into = stream_reserve(store, keys, nulls, formed);

			if (into == NULL)
				return false;
			tuple_former_fill(&store->former, slot, into);
			return true;
		}
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
	choose_prefix(store);
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
 * A parallel share whose prefix is chosen (choose_prefix() agrees on it
 * with the other shares first) attaches to the shared rows job and moves
 * the rows it held there; later rows stream. Where it cannot attach, or
 * they do not fit, the rows stay in memory for the share's files.
 */
void
move_share_to_gpu_run(RowStore *store)
{
	Size		total,
				largest;

	choose_prefix(store);
	attach_gpu_run(store);
	if (store->gpu_run == NULL)
		return;
	measure_records(store, &total, &largest);
	if (!append_to_gpu_run(store, total, largest))
	{
		finish_gpu_part(store);
		return;
	}
	MemoryContextDelete(store->rows_context);
	allocate_rows(store, MIN_RUN_ROWS);
}

/* The service sorts the GPU run: from here on it is read like any run. */
void
sort_gpu_run(RowStore *store)
{
	gs_backend_timing timing;
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
	restart_gpu_ties(store);
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

/* The GPU run's next record read from its slot: its keys, NULL flags
 * and tuple, valid until the next call; false at its end. */
static bool
read_gpu_record(RowStore *store, void *source, uint64_t *keys, bool *nulls, MinimalTuple *tuple)
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
	memcpy(keys, store->read_next + sizeof(length), store->nkeys * sizeof(uint64_t));
	read_null_flags(nulls, store->read_next + sizeof(length) + store->nkeys * sizeof(uint64_t),
					store->nkeys);
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

/* ---- ties of prefix keys in the GPU run ---- */

/*
 * The service sorts a rows job's records by their encoded keys (and,
 * where those are equal, keeps the order they were sent in): it cannot
 * compare values. With prefix keys (store->ties), rows whose prefixes tie
 * where the prefix may not determine the value (compare_keys_tied()) come
 * back together, but in the order they were sent. As the run is read,
 * back from the slot (READ_GPU) or as a merge's input, each such group is
 * read whole (one row past its end, which is kept for the next group) and
 * put in order by PostgreSQL's comparator (tie_resolver_sort()) before its
 * first row is returned. A row whose prefixes determine their values
 * (no tie flag set) cannot tie with another and is returned as it lies.
 *
 * Memory: a group is copied into memory within gpu_tie_memory(), a
 * quarter of work_mem (which a merge reading the run leaves it, see
 * start_merge()). A group larger than that (many rows sharing a long
 * prefix; numerics equal in their abbreviated key) goes, rows already
 * copied first, to PostgreSQL's own sort of the same keys (a tuplesort
 * with as much memory, which spills to its own temporary files beyond
 * it), and its rows are returned from there: bounded memory, and
 * PostgreSQL's order, whatever the group's size.
 */

/* The memory a group of tied rows may take in memory, and again in a
 * tuplesort beyond that. */
Size
gpu_tie_memory(const RowStore *store)
{
	return Max(store->spec.work_mem_bytes / 4, MIN_TIE_GROUP_BYTES);
}

/* What one more row of `length` bytes adds to a group in memory: its copy,
 * its place in the arrays, and tie_resolver_sort()'s note of its values. */
static Size
tied_row_bytes(const RowStore *store, uint32 length)
{
	return MAXALIGN(length) + sizeof(MinimalTuple) + sizeof(uint32_t) +
		store->nkeys * (2 * sizeof(uint64_t) + 2) + 32;
}

/* The group's rows in memory dropped, and their count: its memory is
 * free for the next group (or for the rest of one gone to a tuplesort). */
static void
empty_tie_group(GpuTieGroup *group)
{
	group->count = group->next = 0;
	group->copies_used = 0;
	group->bytes = 0;
}

/* The group's rows are all in: `tuples` points at their copies, `order`
 * lists them as they came. */
static void
complete_tie_group(GpuTieGroup *group)
{
	Size		offset = 0;

	for (size_t i = 0; i < group->count; i++)
	{
		group->tuples[i] = (MinimalTuple) (group->copies + offset);
		group->order[i] = (uint32_t) i;
		offset += MAXALIGN(group->tuples[i]->t_len);
	}
}

/* Reading the GPU run starts (again): no group, no row read ahead. */
void
restart_gpu_ties(RowStore *store)
{
	GpuTieGroup *group = store->gpu_ties;

	if (store->ties == NULL)
		return;
	if (group == NULL)
	{
		MemoryContext old_context = MemoryContextSwitchTo(store->context);

		group = palloc0(sizeof(GpuTieGroup));
		group->budget = gpu_tie_memory(store);
		group->spill_slot = MakeSingleTupleTableSlot(store->spec.tuple_desc,
													 &TTSOpsMinimalTuple);
		store->gpu_ties = group;
		MemoryContextSwitchTo(old_context);
	}
	if (group->spilled != NULL)
		tuplesort_end(group->spilled);
	group->spilled = NULL;
	empty_tie_group(group);
	group->have_pending = false;
}

/* Can the row with these keys tie with a later one undecided? Only where
 * a prefix key's flag says its prefix may not determine the value. */
static inline bool
may_tie(const RowStore *store, const uint64_t *keys, const bool *nulls)
{
	for (int k = 0; k < store->nkeys; k++)
		if (store->ties->is_flag[k] && !nulls[k] && (keys[k] & 0xFF) != 0)
			return true;
	return false;
}

/* The row read past a group, copied to the group's pending row. */
static void
keep_pending(RowStore *store, GpuTieGroup *group, const uint64_t *keys, const bool *nulls,
			 MinimalTuple tuple)
{
	if (group->pending_size < tuple->t_len)
	{
		Size		size = Max(MAXALIGN(tuple->t_len), 2 * group->pending_size);

		if (group->pending != NULL)
			pfree(group->pending);
		group->pending = MemoryContextAllocHuge(store->context, size);
		group->pending_size = size;
	}
	memcpy(group->pending, tuple, tuple->t_len);
	memcpy(group->pending_keys, keys, store->nkeys * sizeof(uint64_t));
	memcpy(group->pending_nulls, nulls, store->nkeys);
	group->have_pending = true;
}

/* The group's rows from here on go to PostgreSQL's sort: those copied so
 * far move there now, and their memory goes. */
static void
spill_group(RowStore *store, GpuTieGroup *group)
{
	MemoryContext old_context = MemoryContextSwitchTo(store->context);

	group->spilled = tie_resolver_begin_tuplesort(store->ties, (int) (group->budget / 1024));
	MemoryContextSwitchTo(old_context);
	memcpy(group->spill_keys, group->keys, store->nkeys * sizeof(uint64_t));
	memcpy(group->spill_nulls, group->nulls, store->nkeys);
	complete_tie_group(group);
	for (size_t i = 0; i < group->count; i++)
	{
		ExecStoreMinimalTuple(group->tuples[i], group->spill_slot, false);
		tuplesort_puttupleslot(group->spilled, group->spill_slot);
	}
	store->ties->rows += group->count;
	ExecClearTuple(group->spill_slot);
	/* (a group still coming in: none of it was read yet) */
	empty_tie_group(group);
}

/* One more row of the group: copied into memory, or to the tuplesort once
 * the group outgrew its memory. */
static void
add_tied_row(RowStore *store, GpuTieGroup *group, const uint64_t *keys, const bool *nulls,
			 MinimalTuple tuple)
{
	Size		bytes = tied_row_bytes(store, tuple->t_len);

	if (group->spilled == NULL && group->count > 0 && group->bytes + bytes > group->budget)
		spill_group(store, group);
	if (group->spilled != NULL)
	{
		ExecStoreMinimalTuple(tuple, group->spill_slot, false);
		tuplesort_puttupleslot(group->spilled, group->spill_slot);
		ExecClearTuple(group->spill_slot);
		store->ties->rows++;
		return;
	}
	if (group->count == group->allocated)
	{
		size_t		allocated = Max(group->allocated * 2, 16);
		MemoryContext old_context = MemoryContextSwitchTo(store->context);

		if (group->tuples == NULL)
		{
			group->tuples = palloc(allocated * sizeof(MinimalTuple));
			group->order = palloc(allocated * sizeof(uint32_t));
			group->keys = palloc(allocated * store->nkeys * sizeof(uint64_t));
			group->nulls = palloc(allocated * store->nkeys);
		}
		else
		{
			group->tuples = repalloc_huge(group->tuples, allocated * sizeof(MinimalTuple));
			group->order = repalloc_huge(group->order, allocated * sizeof(uint32_t));
			group->keys = repalloc_huge(group->keys, allocated * store->nkeys * sizeof(uint64_t));
			group->nulls = repalloc_huge(group->nulls, allocated * store->nkeys);
		}
		group->allocated = allocated;
		MemoryContextSwitchTo(old_context);
	}
	if (group->copies_used + MAXALIGN(tuple->t_len) > group->copies_size)
	{
		/* double, but past the budget only by what this row needs */
		Size		needed = group->copies_used + MAXALIGN(tuple->t_len);
		Size		size = Max(Min(Max(group->copies_size * 2, (Size) 65536), group->budget),
							   needed);

		group->copies = group->copies == NULL ?
			MemoryContextAllocHuge(store->context, size) :
			repalloc_huge(group->copies, size);
		group->copies_size = size;
	}
	memcpy(group->copies + group->copies_used, tuple, tuple->t_len);
	group->copies_used += MAXALIGN(tuple->t_len);
	memcpy(group->keys + group->count * store->nkeys, keys, store->nkeys * sizeof(uint64_t));
	memcpy(group->nulls + group->count * store->nkeys, nulls, store->nkeys);
	group->count++;
	group->bytes += bytes;
	store->stats.peak_memory = Max(store->stats.peak_memory, store->memory_used + group->bytes);
}

/*
 * The GPU run's next row in SQL order (see above), read through `read`:
 * its keys, NULL flags and tuple, valid until the next call; false at the
 * run's end. The rows of a group sorted by PostgreSQL's sort are returned
 * with its first row's keys: the keys up to and including the prefix key
 * they tie on are every row's own, and those after it decide no
 * comparison (a merge compares two such rows' later keys only where that
 * prefix key does not tie undecided, compare_keys_tied()).
 */
bool
next_tied_row(RowStore *store, GpuRecordReader read, void *source, uint64_t *keys, bool *nulls,
			  MinimalTuple *tuple)
{
	GpuTieGroup *group = store->gpu_ties;
	uint64_t	next_keys[GS_MAX_KEY_COLUMNS];
	bool		next_nulls[GS_MAX_KEY_COLUMNS];
	MinimalTuple next;
	bool		undecided;
	uint64		read_rows = 0;

	/* a group being returned */
	if (group->next < group->count)
	{
		uint32_t	row = group->order[group->next++];

		memcpy(keys, group->keys + row * store->nkeys, store->nkeys * sizeof(uint64_t));
		memcpy(nulls, group->nulls + row * store->nkeys, store->nkeys);
		*tuple = group->tuples[row];
		return true;
	}
	if (group->spilled != NULL)
	{
		if (tuplesort_gettupleslot(group->spilled, true, false, group->spill_slot, NULL))
		{
			bool		should_free;

			memcpy(keys, group->spill_keys, store->nkeys * sizeof(uint64_t));
			memcpy(nulls, group->spill_nulls, store->nkeys);
			*tuple = ExecFetchSlotMinimalTuple(group->spill_slot, &should_free);
			Assert(!should_free);
			return true;
		}
		ExecClearTuple(group->spill_slot);
		tuplesort_end(group->spilled);
		group->spilled = NULL;
	}

	/* the next group's first row: the one read past the last group, or
	 * the run's next */
	empty_tie_group(group);
	if (group->have_pending)
	{
		group->have_pending = false;
		memcpy(keys, group->pending_keys, store->nkeys * sizeof(uint64_t));
		memcpy(nulls, group->pending_nulls, store->nkeys);
		*tuple = (MinimalTuple) group->pending;
	}
	else if (!read(store, source, keys, nulls, tuple))
		return false;
	if (!may_tie(store, keys, nulls))
		return true;			/* (a pending row stays valid until then) */

	/* its group: every row after it that ties with it undecided */
	add_tied_row(store, group, keys, nulls, *tuple);
	while (read(store, source, next_keys, next_nulls, &next))
	{
		compare_keys_tied(store, keys, nulls, next_keys, next_nulls, &undecided);
		if (!undecided)
		{
			keep_pending(store, group, next_keys, next_nulls, next);
			break;
		}
		add_tied_row(store, group, next_keys, next_nulls, next);
		if ((++read_rows & 0x3fff) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	if (group->spilled != NULL)
	{
		tuplesort_performsort(group->spilled);
		return next_tied_row(store, read, source, keys, nulls, tuple);
	}
	complete_tie_group(group);
	if (group->count > 1)
		tie_resolver_sort(store->ties, group->tuples, group->order, group->count);
	return next_tied_row(store, read, source, keys, nulls, tuple);
}


/* The GPU run's next row into *tuple, read from its slot (READ_GPU), in
 * SQL order; valid until the next call; and its keys (top-N per group
 * reads them to pass over rows no one wants); false at its end. */
bool
next_gpu_row(RowStore *store, MinimalTuple *tuple, uint64_t *keys, bool *nulls)
{
	if (store->ties != NULL)
		return next_tied_row(store, read_gpu_record, NULL, keys, nulls, tuple);
	return read_gpu_record(store, NULL, keys, nulls, tuple);
}
