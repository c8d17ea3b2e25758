/*
 * client_rows.c — the client side of a rows job (protocol.h): a spilled
 * sort's rows held in the GPU service's memory instead of temporary files
 * (service.h's service_rows_*, used by src/row_store_gpu.c and, for a
 * parallel sort's shared job, src/parallel_sort.c). It reserves a job and
 * a slot of the staging area (a connection of its own, through client.c's
 * session), stages the caller's batches of records in the slot and sends
 * them without waiting, has the service sort them all, and reads the
 * ordered records back through the slot, checking them as they come. A
 * shared job's other processes attach with a slot of their own, take room
 * from the counters in the query's shared memory a part at a time, and
 * append; only the opener sorts and reads.
 *
 * The same trust rules as client.c's hold: the slot is used only where it
 * lies within the mapped staging area, every batch and read only within
 * the slot and the rows, an answer only if it answers the request sent,
 * and the records read back only once they are proved those that were
 * sent, in the sort's order (RowsCheck below, verify.h's fingerprints).
 * Waits stop for a cancel and end when the GPU's process is gone; a job
 * whose process ended has lost its rows, and the caller's sort fails.
 *
 * The job's give-back file is one of the backend's temporary files, grown
 * ahead of what the service holds, so that rows the service gives back
 * count against temp_file_limit. The temporary-file layer's errors are
 * the only ERRORs raised here (service_rows_append, service_rows_sort);
 * other failures return false with gpu_service_last_error() saying why.
 */
#include "postgres.h"

#include <sys/mman.h>

#include "commands/tablespace.h"
#include "storage/fd.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "client_int.h"
#include "service.h"
#include "verify.h"

/*
 * The check of a rows job's result (verify.h): the records the service
 * returns, read from the start to the end in order, are those it was sent
 * (a fingerprint of each record's length, keys and NULL flags, at a point
 * the opener draws and shares with attached connections) and in the
 * sort's order. A record counts as sent as the caller lays it out
 * (service_rows_note_sent), and as returned as the caller reads it from
 * the slot (service_rows_check_record, then service_rows_check_end), so
 * that no row is looked at twice; service_rows_read() checks the pieces
 * it copies itself. A read that is not the next piece of the rows (a
 * reader that skips or goes back) ends the check for the job.
 */
StaticAssertDecl(GS_ROWS_MAX_KEYS <= GS_RECORD_MAX_KEYS, "a record's keys fit a record point");
StaticAssertDecl(GS_RECORD_MAX_KEYS == 8,
				 "gs_record_coefficients() has places for 8 keys' NULL flags and top bits");
StaticAssertDecl(MaxAllocSize < ((Size) 1 << 30),
				 "every length the check accepts fits a record's 30 bits of length");

typedef struct RowsCheck
{
	gs_record_point point;		/* the point, and the powers of its s */
	int			nkeys;
	uint32		descending_mask;
	uint32		nulls_first_mask;
	uint64		sent[4];		/* the records this connection laid out, in
								 * four chains of products */
	uint64		unsent;			/* ... of them not yet appended */
	bool		sent_malformed; /* one was laid out with an impossible length */
	uint64		expected;		/* all records (the opener, from its sort) */
	bool		reading;		/* the records read so far are checked */
	uint64		next_offset;	/* where the next read must start */
	uint64		received[4];	/* the records read so far, in four chains */
	uint64		records;
	/* the record being read: its header as far as it came, then the bytes
	 * of it still to skip */
	char		header[8 * (1 + GS_ROWS_MAX_KEYS) + 8];	/* >= gs_row_header_bytes() */
	uint64		header_have;
	uint64		skip;
	/* the record read before: its NULL flags (bit k: key k) and keys */
	uint32		previous_nulls;
	uint64		previous_keys[GS_ROWS_MAX_KEYS];
	bool		have_previous;
} RowsCheck;

/*
 * The parts below run once for every row sent and every row read. They
 * take the count of keys as an argument that the callers' switches make a
 * constant for the common counts, so that the compiler unrolls their loops.
 */

/* Whether a record of NULL flags `nulls` and keys `keys` may follow the
 * one read before in the sort's order. */
static GS_ALWAYS_INLINE bool
follows_previous(const RowsCheck *check, uint32 nulls, const uint64 *keys, int nkeys)
{
	for (int k = 0; k < nkeys; k++)
	{
		bool		a_null = (check->previous_nulls >> k) & 1;
		bool		b_null = (nulls >> k) & 1;

		if (a_null != b_null)
			return ((check->nulls_first_mask >> k) & 1) ? a_null : b_null;
		if (a_null || check->previous_keys[k] == keys[k])
			continue;
		return ((check->descending_mask >> k) & 1) ? check->previous_keys[k] > keys[k]
			: check->previous_keys[k] < keys[k];
	}
	return true;
}

/* One returned record's header, of `nkeys` keys: of a possible length, in
 * order after the one before, and into the fingerprint of those received;
 * its size in *record_bytes. */
static GS_ALWAYS_INLINE bool
check_header_of(RowsCheck *check, const char *header, uint64 *record_bytes, int nkeys)
{
	uint64		keys[GS_ROWS_MAX_KEYS];
	uint64		coefficients[GS_RECORD_MAX_COEFFS];
	uint32		length;
	uint32		nulls = 0;
	int			chain = check->records % 4;

	memcpy(&length, header, sizeof(length));
	if (length < GS_MIN_TUPLE_BYTES || length > MaxAllocSize)
	{
		set_error("the GPU service returned a record of an impossible length");
		return false;
	}
	for (int k = 0; k < nkeys; k++)
	{
		bool		null = header[gs_row_null_offset(nkeys, k)] != 0;

		memcpy(&keys[k], header + gs_row_key_offset(k), sizeof(uint64));
		if (null)
			keys[k] = 0;
		nulls |= (uint32) null << k;
	}
	if (check->have_previous && !follows_previous(check, nulls, keys, nkeys))
	{
		set_error("the GPU service returned rows out of order");
		return false;
	}
	check->previous_nulls = nulls;
	for (int k = 0; k < nkeys; k++)
		check->previous_keys[k] = keys[k];
	check->have_previous = true;
	/* four chains, combined at the end */
	gs_record_coefficients(length, nulls, keys, nkeys, coefficients);
	check->received[chain] = gs_fingerprint_add_record(&check->point, check->received[chain],
													   coefficients,
													   gs_record_coefficient_count(nkeys));
	check->records++;
	*record_bytes = gs_row_record_bytes(nkeys, length);
	return true;
}

static bool
check_returned_header(RowsCheck *check, const char *header, uint64 *record_bytes)
{
	switch (check->nkeys)
	{
		case 1:
			return check_header_of(check, header, record_bytes, 1);
		case 2:
			return check_header_of(check, header, record_bytes, 2);
		case 3:
			return check_header_of(check, header, record_bytes, 3);
		default:
			return check_header_of(check, header, record_bytes, check->nkeys);
	}
}

static bool
check_returned(RowsCheck *check, const char *data, uint64 offset, uint64 length,
			   uint64 total_bytes)
{
	uint64		header_bytes = gs_row_header_bytes(check->nkeys);

	if (!check->reading || offset != check->next_offset)
	{
		check->reading = false;	/* not read in one pass: not checked */
		return true;
	}
	for (uint64 position = 0; position < length;)
	{
		uint64		piece;
		uint64		size;

		if (check->skip > 0)
		{
			piece = Min(check->skip, length - position);
			check->skip -= piece;
			position += piece;
			continue;
		}
		if (check->header_have == 0 && length - position >= header_bytes)
		{
			/* the whole header here (most records): read in place */
			if (!check_returned_header(check, data + position, &size))
				return false;
			position += header_bytes;
			check->skip = size - header_bytes;
			continue;
		}
		piece = Min(header_bytes - check->header_have, length - position);
		memcpy(check->header + check->header_have, data + position, piece);
		check->header_have += piece;
		position += piece;
		if (check->header_have == header_bytes)
		{
			if (!check_returned_header(check, check->header, &size))
				return false;
			check->header_have = 0;
			check->skip = size - header_bytes;
		}
	}
	check->next_offset += length;
	if (check->next_offset == total_bytes &&
		(check->skip != 0 || check->header_have != 0 ||
		 gs_fingerprint_chains(check->received) != check->expected))
	{
		set_error("the GPU service returned other rows than it was given");
		return false;
	}
	return true;
}

struct ServiceRows
{
	Peer		peer;
	int			gpu;
	char	   *slot;
	uint64		slot_bytes;
	uint64		capacity_bytes;
	uint64		max_records;
	uint64		records;		/* appended so far (sent, if not yet answered) */
	uint64		bytes;
	gs_message_type pending;	/* a PUT or GET sent, its ACK not yet read */
	uint64		pending_offset; /* ... the GET's */
	uint64		pending_length;
	uint64		pending_records;	/* ... the PUT's totals once taken */
	uint64		pending_bytes;
	uint64		pending_position;	/* ... the GET's place in the slot */
	bool		pending_check;	/* ... checked here as it comes (else by the
								 * caller, record by record) */
	bool		counted;		/* in the GPU's in_flight */
	bool		given_back;		/* the service gave its GPU memory back */
	char	   *mapping;		/* the staging mapping its slot lies in, or
								 * NULL */
	/* the opener's give-back file (protocol.h): a temporary file of this
	 * backend's, grown to `reserved` bytes ahead of what the service holds */
	File		file;
	uint64		reserved;
	/* a shared job: the opener's token; an attached connection's room is
	 * granted from `room` a part at a time (capacity_bytes and max_records
	 * are then what it was granted so far) */
	uint64		token;
	uint64		generation;
	ServiceRowsShared *room;
	ServiceRowsShared *shared;	/* the opener's, where attached ones report */
	RowsCheck	check;
};

/* An attached connection takes room for this much at a time. */
#define ROOM_GRANT_BYTES ((uint64) 16 << 20)
/* The smallest slot a rows job can use: room for a large record twice. */
#define MIN_ROWS_SLOT_BYTES ((uint64) 64 << 10)

/* Bytes this backend's give-back files are grown to, together. */
static uint64 reserved_by_backend = 0;

/*
 * Grows the give-back file to `bytes`, the rows the service will hold, so
 * that the service may write them there (it writes within the file's size
 * only) and they count as this backend's temporary files: against
 * temp_file_limit, and in log_temp_files and temp_bytes when the file
 * closes. The file stays sparse until the service writes to it. Where the
 * backend's give-back files together would pass temp_file_limit the file
 * stays as it is: the service then keeps the rows in GPU memory rather
 * than give them back (the temporary-file layer's own check, which also
 * counts the backend's other files, may still raise its error).
 */
static void
reserve_file(ServiceRows *rows, uint64 bytes)
{
	char		zero = 0;
	uint64		more;

	if (rows->file <= 0 || bytes <= rows->reserved)
		return;
	more = bytes - rows->reserved;
	if (temp_file_limit >= 0 &&
		reserved_by_backend + more > (uint64) temp_file_limit * 1024)
		return;
	if (FileWrite(rows->file, &zero, 1, (off_t) bytes - 1, WAIT_EVENT_DATA_FILE_EXTEND) != 1)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not extend temporary file \"%s\": %m", FilePathName(rows->file))));
	rows->reserved = bytes;
	reserved_by_backend += more;
}

/* The file is closed, or left to the resource owner: its bytes no longer
 * count among this backend's give-back files. */
static void
unreserve_file(ServiceRows *rows)
{
	reserved_by_backend -= Min(rows->reserved, reserved_by_backend);
	rows->reserved = 0;
}

/*
 * Whether the service wrote the job's rows to its file (a give-back the
 * client may not have heard of: its last read came before it). The file's
 * first record begins with its tuple's length; a file only grown by
 * reserve_file() reads as zeros there.
 */
static bool
file_holds_rows(ServiceRows *rows)
{
	uint32		first = 0;

	return rows->reserved >= sizeof(first) &&
		FileRead(rows->file, (char *) &first, sizeof(first), 0, WAIT_EVENT_BUFFILE_READ) ==
		sizeof(first) && first != 0;
}

/* The connection and the slot go; the service frees the job's memory. */
static void
close_connection(ServiceRows *rows)
{
	if (rows->peer.fd < 0)
		return;
	client_disconnect(&rows->peer);
	if (rows->counted)
		pg_atomic_fetch_sub_u32(&gpu_service->gpus[rows->gpu].in_flight, 1);
	rows->counted = false;
	if (rows->mapping != NULL && rows->mapping == client_mappings[rows->gpu].base)
		client_mappings[rows->gpu].rows_jobs--;
	else if (rows->mapping != NULL)
	{
		for (int i = 0; i < MAX_RETIRED_MAPPINGS; i++)
			if (client_retired[i].base == rows->mapping && --client_retired[i].rows_jobs == 0)
			{
				munmap(client_retired[i].base, client_retired[i].bytes);
				client_retired[i].base = NULL;
			}
	}
	rows->mapping = NULL;
}

/*
 * Ends the job: the service frees its memory when the connection closes,
 * and the give-back file closes (counted in log_temp_files and temp_bytes
 * at the size of the rows it got, or empty if the service never used it).
 */
void
service_rows_close(ServiceRows *rows)
{
	if (rows == NULL)
		return;
	close_connection(rows);
	if (rows->file > 0)
	{
		if (!rows->given_back && !file_holds_rows(rows))
			FileTruncate(rows->file, 0, WAIT_EVENT_DATA_FILE_TRUNCATE);
		FileClose(rows->file);
		rows->file = 0;
	}
	unreserve_file(rows);
}

/* As service_rows_close, from a memory context's reset, which may come
 * during an abort: the resource owner closes the file then (or, outside
 * an abort, has it closed already through service_rows_close). */
void
service_rows_abandon(ServiceRows *rows)
{
	if (rows == NULL)
		return;
	close_connection(rows);
	unreserve_file(rows);
}

/* A connection for a rows job, its staging area mapped; NULL (and *why).
 * A cancel while waiting for the service's WELCOME returns NULL at once:
 * the caller goes on without the job and its next interrupt check ends
 * the query. */
static ServiceRows *
connect_rows(int gpu, char *why, size_t why_size)
{
	ServiceRows *rows;

	if (gpu < 0 || gpu >= GS_SERVICE_MAX_GPUS)
	{
		snprintf(why, why_size, "no such GPU");
		return NULL;
	}
	rows = palloc0(sizeof(ServiceRows));
	rows->gpu = gpu;
	if (client_open_session(gpu, &rows->peer, why, why_size, cancel_requested, NULL) != 1)
	{
		pfree(rows);
		return NULL;
	}
	rows->generation = client_mappings[gpu].generation;
	pg_atomic_fetch_add_u32(&gpu_service->gpus[gpu].in_flight, 1);
	rows->counted = true;
	return rows;
}

/* Sends the SUBMIT in *message (with the give-back file, if any) and takes
 * the slot of its ADMITTED (left in *message); false (the connection
 * closed, and *why) otherwise. */
static bool
submit_rows(ServiceRows *rows, gs_message *message, int file_fd, char *why, size_t why_size)
{
	int			gpu = rows->gpu;

	if (!client_send_message(&rows->peer, message, GS_MSG_SUBMIT, file_fd) ||
		client_receive_message(&rows->peer, message, cancel_requested, NULL,
							   ADMISSION_ANSWER_MS(message->wait_ms), NULL) != WAIT_OK)
	{
		snprintf(why, why_size, "the GPU service did not answer");
		service_rows_close(rows);
		return false;
	}
	if (message->type != GS_MSG_ADMITTED ||
		!slot_acceptable(gpu, message, MIN_ROWS_SLOT_BYTES))
	{
		snprintf(why, why_size, "%s",
				 message->type == GS_MSG_REFUSED ? message->message :
				 "the GPU service answered out of turn");
		service_rows_close(rows);
		return false;
	}
	rows->slot = client_mappings[gpu].base + message->slot_offset;
	rows->slot_bytes = message->slot_bytes;
	rows->mapping = client_mappings[gpu].base;
	client_mappings[gpu].rows_jobs++;
	return true;
}

/* The check of the job's rows, at a fresh random point (the opener's) or
 * at the shared one (an attached connection's). */
static bool
start_check(ServiceRows *rows, int nkeys, uint32 descending_mask, uint32 nulls_first_mask,
			const ServiceRowsShared *shared)
{
	RowsCheck  *check = &rows->check;
	gs_fingerprint_point point;

	memset(check, 0, sizeof(*check));
	if (shared != NULL)
		memcpy(&point, shared->check_point, sizeof(point));
	else
	{
		uint8		random[24];

		if (!pg_strong_random(random, sizeof(random)))
			return false;
		gs_fingerprint_point_make(&point, random);
	}
	check->nkeys = nkeys;
	check->descending_mask = descending_mask;
	check->nulls_first_mask = nulls_first_mask;
	gs_record_point_make(&check->point, &point, gs_record_coefficient_count(nkeys));
	check->expected = 1;
	for (int c = 0; c < 4; c++)
		check->sent[c] = check->received[c] = 1;
	check->reading = true;
	return true;
}

/*
 * Asks for room for about `capacity_bytes` of records (less where a
 * quarter of the GPU's budget, the per-sort cap or the session's cap, with
 * the service's working space, is less), none under `min_record_bytes`.
 */
ServiceRows *
service_rows_open(uint64 capacity_bytes, uint64 min_record_bytes, int nkeys,
				  const bool *descending, const bool *nulls_first, uint64 memory_limit,
				  bool shared, char *why, size_t why_size)
{
	ServiceRows *rows;
	gs_message	message;
	int			gpu = choose_gpu(true);
	uint64		budget;
	uint64		max_records;
	uint64		session_limit = (uint64) gpusort_session_gpu_memory_limit_mb << 20;

	if (gpu < 0)
	{
		describe_unavailable(why, why_size);
		return NULL;
	}
	SpinLockAcquire(&gpu_service->mutex);
	budget = gpu_service->gpus[gpu].budget_bytes;
	SpinLockRelease(&gpu_service->mutex);
	/* the service counts the job as gs_job_gpu_bytes() does */
	{
		uint64		share = budget / 4;

		if (memory_limit > 0)
			share = Min(share, memory_limit);
		if (session_limit > 0)
			share = Min(share, session_limit);
		min_record_bytes = Max(min_record_bytes, 1);
		capacity_bytes = Min(capacity_bytes, gs_rows_capacity_within(share, min_record_bytes));
	}
	max_records = Min(capacity_bytes / min_record_bytes, (uint64) PG_INT32_MAX);
	if (max_records == 0)
	{
		snprintf(why, why_size, "the GPU memory a sort may use is too small");
		return NULL;
	}
	rows = connect_rows(gpu, why, why_size);
	if (rows == NULL)
		return NULL;

	memset(&message, 0, sizeof(message));
	message.kind = GS_JOB_ROWS;
	message.shared = shared;
	message.n = max_records;
	message.capacity_bytes = capacity_bytes;
	message.nkeys = (uint32) nkeys;
	for (int k = 0; k < nkeys; k++)
	{
		message.descending_mask |= (descending[k] ? 1u : 0u) << k;
		message.nulls_first_mask |= (nulls_first[k] ? 1u : 0u) << k;
	}
	message.memory_limit = memory_limit;
	message.session_id = client_session_id();
	message.session_memory_limit = session_limit;
	/* rows in the GPU's memory are a speed-up, never worth a wait */
	message.wait_ms = 0;
	/* the give-back file: one of this backend's temporary files, in its
	 * temporary tablespaces (closed by the resource owner on abort) */
	PrepareTempTablespaces();
	rows->file = OpenTemporaryFile(false);
	if (!submit_rows(rows, &message, FileGetRawDesc(rows->file), why, why_size))
		return NULL;
	if (shared && message.token == 0)
	{
		snprintf(why, why_size, "the GPU service gave no token for a shared job");
		service_rows_close(rows);
		return NULL;
	}
	rows->token = message.token;
	rows->capacity_bytes = capacity_bytes;
	rows->max_records = max_records;
	if (!start_check(rows, nkeys, message.descending_mask, message.nulls_first_mask, NULL))
	{
		snprintf(why, why_size, "no random numbers to check the rows with");
		service_rows_close(rows);
		return NULL;
	}
	return rows;
}

/* What attached connections need to find a shared job (in the parallel
 * query's shared memory), with all of its room still free. */
void
service_rows_share(ServiceRows *rows, ServiceRowsShared *into)
{
	memset(into, 0, sizeof(*into));
	into->gpu = rows->gpu;
	into->token = rows->token;
	into->generation = rows->generation;
	into->capacity_bytes = rows->capacity_bytes;
	into->max_records = rows->max_records;
	pg_atomic_init_u64(&into->bytes_taken, 0);
	pg_atomic_init_u64(&into->records_taken, 0);
	StaticAssertStmt(sizeof(into->check_point) == sizeof(gs_fingerprint_point),
					 "a fingerprint point is three words");
	memcpy(into->check_point, &rows->check.point.point, sizeof(into->check_point));
	into->nkeys = rows->check.nkeys;
	pg_atomic_init_u64(&into->sent_fingerprint, 1);
	rows->shared = into;
}

/*
 * Attaches to the shared job `shared` describes, with a slot of its own,
 * to append batches to it (service_rows_room, service_rows_append,
 * service_rows_wait; no sort, no reads). NULL (and *why) when the job or
 * its service's process is gone, or the staging area has no room now.
 */
ServiceRows *
service_rows_attach(ServiceRowsShared *shared, char *why, size_t why_size)
{
	ServiceRows *rows = connect_rows(shared->gpu, why, why_size);
	gs_message	message;

	if (rows == NULL)
		return NULL;
	if (rows->generation != shared->generation)
	{
		snprintf(why, why_size, "the GPU service's process restarted");
		service_rows_close(rows);
		return NULL;
	}
	memset(&message, 0, sizeof(message));
	message.kind = GS_JOB_ROWS_ATTACH;
	message.token = shared->token;
	message.session_id = client_session_id();
	if (!submit_rows(rows, &message, -1, why, why_size))
		return NULL;
	rows->token = shared->token;
	rows->room = shared;
	start_check(rows, shared->nkeys, 0, 0, shared);
	return rows;
}

/* Takes `amount` of a shared room counter up to `limit`; false (nothing
 * taken) when it does not fit. */
static bool
take_room(pg_atomic_uint64 *taken, uint64 limit, uint64 amount)
{
	uint64		current = pg_atomic_read_u64(taken);

	for (;;)
	{
		if (amount > limit || current > limit - amount)
			return false;
		if (pg_atomic_compare_exchange_u64(taken, &current, current + amount))
			return true;
	}
}

/* An attached connection's grant grows to hold `records` more records of
 * `bytes` beyond what it sent: a part of the shared room, or what it needs. */
static bool
grow_grant(ServiceRows *rows, uint64 records, uint64 bytes)
{
	ServiceRowsShared *room = rows->room;
	uint64		need_records = rows->records + records > rows->max_records ?
		rows->records + records - rows->max_records : 0;
	uint64		need_bytes = rows->bytes + bytes > rows->capacity_bytes ?
		rows->bytes + bytes - rows->capacity_bytes : 0;
	/* a part of the room (a sixteenth at most, so that every process gets
	 * some), of what is short only; records in proportion to bytes, as the
	 * room's limits are */
	uint64		part_bytes = Min(ROOM_GRANT_BYTES, room->capacity_bytes / 16);
	uint64		part_records = (uint64) ((double) part_bytes / room->capacity_bytes *
										 room->max_records) + 1;
	uint64		grant_bytes = need_bytes > 0 ? Max(need_bytes, part_bytes) : 0;
	uint64		grant_records = need_records > 0 ? Max(need_records, part_records) : 0;

	if (!take_room(&room->records_taken, room->max_records, grant_records))
	{
		grant_records = need_records;
		if (!take_room(&room->records_taken, room->max_records, grant_records))
			return false;
	}
	if (!take_room(&room->bytes_taken, room->capacity_bytes, grant_bytes))
	{
		grant_bytes = need_bytes;
		if (!take_room(&room->bytes_taken, room->capacity_bytes, grant_bytes))
		{
			pg_atomic_fetch_sub_u64(&room->records_taken, grant_records);
			return false;
		}
	}
	rows->max_records += grant_records;
	rows->capacity_bytes += grant_bytes;
	return true;
}

/*
 * An attached connection that sends no more: the room it was granted and
 * did not use goes back to the others, and the connection closes. (Not
 * service_rows_close()'s job: that also runs in an aborting transaction,
 * when the shared memory of the room may be gone.)
 */
void
service_rows_detach(ServiceRows *rows)
{
	if (rows->room != NULL)
	{
		uint64		before = pg_atomic_read_u64(&rows->room->sent_fingerprint);

		pg_atomic_fetch_sub_u64(&rows->room->bytes_taken, rows->capacity_bytes - rows->bytes);
		pg_atomic_fetch_sub_u64(&rows->room->records_taken, rows->max_records - rows->records);
		/* what this connection sent joins what the others did */
		while (!pg_atomic_compare_exchange_u64(&rows->room->sent_fingerprint, &before,
											   gs_fingerprint_combine(before,
																	  gs_fingerprint_chains(rows->check.sent))))
			;
		rows->room = NULL;
	}
	service_rows_close(rows);
}

/* The opener of a shared job learns what the attached connections sent
 * (their totals), so that its sort checks the service holds all of it. */
void
service_rows_expect(ServiceRows *rows, uint64 records, uint64 bytes)
{
	rows->records = records;
	rows->bytes = bytes;
	if (rows->shared != NULL)
		rows->check.expected =
			gs_fingerprint_combine(gs_fingerprint_chains(rows->check.sent),
								   pg_atomic_read_u64(&rows->shared->sent_fingerprint));
}

/* The slot: where the caller lays out a batch for service_rows_append(). */
char *
service_rows_slot(ServiceRows *rows, uint64 *bytes)
{
	*bytes = rows->slot_bytes;
	return rows->slot;
}

/* Room for `records` more records of `bytes`? (An attached connection
 * takes more of the shared room when it needs it.) */
bool
service_rows_room(ServiceRows *rows, uint64 records, uint64 bytes)
{
	if (records <= rows->max_records - rows->records &&
		bytes <= rows->capacity_bytes - rows->bytes)
		return true;
	return rows->room != NULL && grow_grant(rows, records, bytes);
}

/* The connection to the service ended while it held the rows. */
static bool
rows_lost(ServiceRows *rows)
{
	set_error("the GPU service's process for GPU %d ended while it held the sort's rows "
			  "(see the server log)", rows->gpu);
	gpu_service_count_fallback(rows->gpu, FALLBACK_SERVICE_LOST);
	return false;
}

/* The reply to a request, checked; false (why in gpu_service_last_error()) if the
 * service failed it, went away, or the backend was asked to stop. */
static bool
rows_reply(ServiceRows *rows, gs_message *reply, gs_message_type expected)
{
	wait_result result = client_receive_message(&rows->peer, reply, cancel_requested, NULL,
												-1, NULL);

	if (result == WAIT_CANCELLED)
	{
		set_error("the GPU sort was interrupted");
		return false;
	}
	if (result != WAIT_OK)
		return rows_lost(rows);
	if (reply->type != expected || (expected == GS_MSG_DONE && reply->status != GS_STATUS_OK))
	{
		set_error("%s", reply->message[0] ? reply->message :
				  "the GPU service answered out of turn");
		pg_atomic_fetch_add_u64(&gpu_service->gpus[rows->gpu].counters.errors, 1);
		return false;
	}
	return true;
}

/* The rows returned failed their check (last_error says how): false. */
static bool
rows_check_failed(ServiceRows *rows)
{
	ereport(LOG,
			(errmsg("gpusort: the GPU service's process for GPU %d returned rows that fail "
					"their check: %s", rows->gpu, last_error)));
	pg_atomic_fetch_add_u64(&gpu_service->gpus[rows->gpu].counters.errors, 1);
	return false;
}

/* Reads the answer to the PUT or GET sent last, if any. */
bool
service_rows_wait(ServiceRows *rows)
{
	gs_message	message;
	gs_message_type pending = rows->pending;

	if (pending == 0)
		return true;
	rows->pending = 0;
	if (!rows_reply(rows, &message, GS_MSG_ACK))
		return false;
	/* a PUT's ACK: this connection's totals with the batch; a GET's: the
	 * range asked for */
	if (pending == GS_MSG_PUT ?
		(message.records != rows->pending_records || message.offset != rows->pending_bytes) :
		(message.offset != rows->pending_offset || message.length != rows->pending_length))
	{
		set_error("the GPU service answered another request than the sort's");
		return false;
	}
	if (pending == GS_MSG_GET && rows->pending_check &&
		!check_returned(&rows->check, rows->slot + rows->pending_position, rows->pending_offset,
						rows->pending_length, rows->bytes))
		return rows_check_failed(rows);
	if (message.given_back && !rows->given_back)
	{
		rows->given_back = true;
		pg_atomic_fetch_add_u64(&gpu_service->counters.given_back_jobs, 1);
		pg_atomic_fetch_add_u64(&gpu_service->gpus[rows->gpu].counters.given_back_jobs, 1);
	}
	return true;
}

/* Whether the service gave the job's GPU memory back while the rows were
 * read (they come from a file of the service's since). */
bool
service_rows_given_back(const ServiceRows *rows)
{
	return rows->given_back;
}

/*
 * Sends a PUT or GET of a rows job, after reading the answer to the one
 * before (at most one is on its way): `length` bytes at `slot_position` in
 * the slot, and for a PUT the number of records, for a GET where in the
 * ordered rows the bytes come from.
 */
static bool
rows_request(ServiceRows *rows, gs_message_type type, uint64 slot_position, uint64 length,
			 uint64 records, uint64 offset)
{
	gs_message	message;

	if (!service_rows_wait(rows))
		return false;
	memset(&message, 0, sizeof(message));
	message.slot_position = slot_position;
	message.length = length;
	message.records = records;
	message.offset = offset;
	if (!client_send_message(&rows->peer, &message, type, -1))
		return rows_lost(rows);
	rows->pending = type;
	rows->pending_offset = offset;
	rows->pending_length = length;
	rows->pending_position = slot_position;
	return true;
}

/*
 * Sends the batch laid out at `slot_position` in the slot: `records`
 * records, `bytes` bytes. It does not wait for the service to take it:
 * the caller fills another part of the slot meanwhile.
 */
bool
service_rows_append(ServiceRows *rows, uint64 slot_position, uint64 records, uint64 bytes)
{
	if (!gs_range_within(slot_position, bytes, rows->slot_bytes) ||
		records != rows->check.unsent || rows->check.sent_malformed)
	{
		set_error("a batch of rows beyond the slot, or not laid out as records");
		return false;
	}
	rows->check.unsent = 0;
	reserve_file(rows, rows->bytes + bytes);
	if (!rows_request(rows, GS_MSG_PUT, slot_position, bytes, records, 0))
		return false;
	rows->records += records;
	rows->bytes += bytes;
	rows->pending_records = rows->records;
	rows->pending_bytes = rows->bytes;
	return true;
}

/*
 * A record laid out in the slot for the next append, from the values its
 * header was made of (not read back from the slot, which the service
 * maps too): it counts among those sent.
 */
static GS_ALWAYS_INLINE void
note_sent_of(RowsCheck *check, uint32 length, const uint64 *keys, const bool *nulls, int nkeys)
{
	uint64		values[GS_ROWS_MAX_KEYS];
	uint64		coefficients[GS_RECORD_MAX_COEFFS];
	uint32		null_flags = 0;
	int			chain = check->unsent % 4;

	if (length < GS_MIN_TUPLE_BYTES || length > MaxAllocSize)
		check->sent_malformed = true;
	for (int k = 0; k < nkeys; k++)
	{
		values[k] = nulls[k] ? 0 : keys[k];
		null_flags |= (uint32) nulls[k] << k;
	}
	gs_record_coefficients(length, null_flags, values, nkeys, coefficients);
	check->sent[chain] = gs_fingerprint_add_record(&check->point, check->sent[chain], coefficients,
												   gs_record_coefficient_count(nkeys));
	check->unsent++;
}

void
service_rows_note_sent(ServiceRows *rows, uint32 length, const uint64 *keys, const bool *nulls)
{
	RowsCheck  *check = &rows->check;

	switch (check->nkeys)
	{
		case 1:
			note_sent_of(check, length, keys, nulls, 1);
			break;
		case 2:
			note_sent_of(check, length, keys, nulls, 2);
			break;
		case 3:
			note_sent_of(check, length, keys, nulls, 3);
			break;
		default:
			note_sent_of(check, length, keys, nulls, check->nkeys);
			break;
	}
}

/* A GET of bytes [offset, offset + length) of the ordered rows, checked
 * here as they come or by the caller. */
static bool
get_rows(ServiceRows *rows, uint64 offset, uint64 length, uint64 slot_position,
		 bool check_here)
{
	RowsCheck  *check = &rows->check;

	if (!gs_range_within(slot_position, length, rows->slot_bytes) ||
		!gs_range_within(offset, length, rows->bytes))
	{
		set_error("a read of rows beyond the slot or the rows");
		return false;
	}
	if (!rows_request(rows, GS_MSG_GET, slot_position, length, 0, offset))
		return false;
	rows->pending_check = check_here;
	if (!check_here)
	{
		/* check_returned() follows the offsets for the pieces it checks */
		if (offset != check->next_offset)
			check->reading = false;
		check->next_offset += length;
	}
	return true;
}

/*
 * Asks for bytes [offset, offset + length) of the ordered rows at
 * `slot_position` in the slot, without waiting for them: they are there
 * once service_rows_wait() returned true. The caller reads the records
 * in place, passing each to service_rows_check_record() and, after the
 * last, calling service_rows_check_end().
 */
bool
service_rows_request(ServiceRows *rows, uint64 offset, uint64 length, uint64 slot_position)
{
	return get_rows(rows, offset, length, slot_position, false);
}

/*
 * The next record of the ordered rows, read in place after a
 * service_rows_request(): false (gpu_service_last_error() says why) if it is not
 * in order after the one before or not framed as a record.
 */
bool
service_rows_check_record(ServiceRows *rows, const char *record)
{
	uint64		size;

	if (!rows->check.reading)
		return true;
	if (!check_returned_header(&rows->check, record, &size))
		return rows_check_failed(rows);
	return true;
}

/* The caller read every record: false if they are not those sent. */
bool
service_rows_check_end(ServiceRows *rows)
{
	RowsCheck  *check = &rows->check;

	if (!check->reading)
		return true;
	if (check->next_offset != rows->bytes || gs_fingerprint_chains(check->received) != check->expected)
	{
		set_error("the GPU service returned other rows than it was given");
		return rows_check_failed(rows);
	}
	return true;
}

/* Sorts the rows held; *timing gets the GPU's times. */
bool
service_rows_sort(ServiceRows *rows, gs_backend_timing *timing)
{
	gs_message	message;

	if (!service_rows_wait(rows))
		return false;
	/* a shared job's file holds every share's rows if given back */
	reserve_file(rows, rows->bytes);
	if (rows->shared == NULL)
		rows->check.expected = gs_fingerprint_chains(rows->check.sent);
	memset(&message, 0, sizeof(message));
	if (!client_send_message(&rows->peer, &message, GS_MSG_RUN, -1) ||
		!rows_reply(rows, &message, GS_MSG_DONE))
		return false;
	if (message.valid_outputs != rows->records)
	{
		set_error("the GPU service sorted %llu rows of %llu",
				  (unsigned long long) message.valid_outputs,
				  (unsigned long long) rows->records);
		return false;
	}
	if (timing != NULL)
	{
		set_timing(timing, &message.timing);
		timing->device_index = rows->gpu;
	}
	count_job(rows->gpu, &message, rows->records, rows->bytes * 2);
	return true;
}

/* Copies bytes [offset, offset + length) of the ordered rows into `into`. */
bool
service_rows_read(ServiceRows *rows, uint64 offset, uint64 length, char *into)
{
	for (uint64 done = 0; done < length;)
	{
		uint64		piece = Min(rows->slot_bytes, length - done);

		if (!get_rows(rows, offset + done, piece, 0, true) || !service_rows_wait(rows))
			return false;
		memcpy(into + done, rows->slot, piece);
		done += piece;
	}
	return true;
}
