/*
 * gpud/rows_jobs.c — gpusort-gpud's rows jobs: a spilled sort's rows,
 * appended a batch at a time (a shared job's from attached connections
 * too), sorted by their keys and laid out in that order, read back, and
 * given back to the client's file when a waiting job needs the memory.
 *
 * Rows jobs (a spilled sort's rows, protocol.h) live as long as their
 * client's query. A rows job whose client sends nothing for
 * ROWS_IDLE_GIVE_BACK_MS (its input paused, or its sorted rows read
 * slowly) while a waiting job needs GPU memory that idle jobs hold (all of
 * them together, or its session's) gives its memory back: its rows go to
 * the temporary file its client passed, within the size the client grew
 * it to (the client's temp_file_limit counts it). A job given back while
 * its rows still come in takes the rest in the file, sorts the keys on the
 * CPU and reads the rows from the file in that order; one given back once
 * sorted writes them in order.
 */
#define _GNU_SOURCE
#include "gpud_int.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(GS_ROWS_MAX_KEYS == GS_MAX_KEY_COLUMNS,
			   "a rows job has as many key columns as the engine sorts by");

/* A rows job idle this long while another job waits for GPU memory gives
 * its memory back (see the header); its rows go to the file through a
 * buffer of this size. */
#define ROWS_IDLE_GIVE_BACK_MS 200
#define GIVE_BACK_BUFFER_BYTES ((uint64_t) 16 << 20)

/* ------------------------------------------------------------------------
 * Rows jobs: a spilled sort's rows, held until the client that opened the
 * job closes; a shared job also takes batches from attached connections
 * ------------------------------------------------------------------------ */

/* A rows job's slot: records move through it a batch at a time. */
#define ROWS_SLOT_BYTES ((uint64_t) 16 << 20)

/* A rows job's (or attached connection's) slot: ROWS_SLOT_BYTES, or a
 * quarter of a small staging area. */
uint64_t
rows_slot_bytes(void)
{
	uint64_t	bytes = service.staging_bytes / 4 < ROWS_SLOT_BYTES ?
		service.staging_bytes / 4 : ROWS_SLOT_BYTES;

	return bytes / SLOT_ALIGN * SLOT_ALIGN;
}

/*
 * Where a rows job's records are. In the GPU's memory (gpud_device's: in
 * the test mode, this process's) until they are given back; then in the client's file: in
 * order if they were sorted first, else as they came, read in the order of
 * `order` once sorted.
 */
typedef enum RowsPlace
{
	ROWS_IN_MEMORY,
	ROWS_IN_FILE,				/* as they came, or in order once sorted */
	ROWS_IN_FILE_BY_ORDER		/* as they came, read through `order` */
} RowsPlace;

typedef struct RowsJob
{
	gs_message	submit;
	/* appends, the sort, reads and a give-back take the lock: attached
	 * connections' threads append to a shared job concurrently */
	pthread_mutex_t lock;
	bool		closed;			/* the opener left: the memory is gone */
	RowsPlace	place;
	void	   *device;			/* the records on the GPU (gpud_device's) */
	int			file;			/* the client's give-back file, or -1 */
	bool		give_back_failed;	/* (tried once: the disk, say) */
	bool		file_too_small; /* (said once in the log) */
	uint64_t	used;			/* bytes held */
	uint64_t	n;				/* records held */
	uint64_t	allocated;		/* records the arrays below have room for */
	uint32_t   *lengths;		/* each record's bytes, one after another */
	uint64_t   *column_keys[GS_ROWS_MAX_KEYS];
	bool	   *column_nulls[GS_ROWS_MAX_KEYS];
	gs_key_column columns[GS_ROWS_MAX_KEYS];
	bool		sorted;
	/* ROWS_IN_FILE_BY_ORDER: the i-th record in order is record order[i],
	 * at source[order[i]] in the file, and starts at byte starts[i] of
	 * the ordered rows */
	uint32_t   *order;
	uint64_t   *source;
	uint64_t   *starts;
	/* a shared job: in the registry under its token (under registry_lock,
	 * with the count of connections that use it) */
	uint64_t	token;
	int			references;
	struct RowsJob *next;
} RowsJob;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static RowsJob *shared_jobs = NULL;

/* The records' lengths and keys, which only the sort needs. */
static void
rows_job_free_keys(RowsJob *rows)
{
	free(rows->lengths);
	rows->lengths = NULL;
	for (int k = 0; k < GS_ROWS_MAX_KEYS; k++)
	{
		free(rows->column_keys[k]);
		rows->column_keys[k] = NULL;
		free(rows->column_nulls[k]);
		rows->column_nulls[k] = NULL;
	}
	rows->allocated = 0;
}

/* The records in memory, once they are in the file (or the job ends). */
static void
rows_job_free_memory_records(RowsJob *rows)
{
	if (rows->device != NULL)
		gpud_device->rows_destroy(rows->device);
	rows->device = NULL;
}

/* Frees what the job holds (not the job): under its lock, or alone. */
static void
rows_job_free_all(RowsJob *rows)
{
	rows_job_free_memory_records(rows);
	rows_job_free_keys(rows);
	free(rows->order);
	free(rows->source);
	free(rows->starts);
	rows->order = NULL;
	rows->source = NULL;
	rows->starts = NULL;
	if (rows->file >= 0)
	{
		close(rows->file);
		if (rows->place != ROWS_IN_MEMORY)
			__atomic_sub_fetch(&files_held, 1, __ATOMIC_RELAXED);
	}
	rows->file = -1;
}

/* A connection lets go of the job; the last one frees it. */
static void
rows_job_release(RowsJob *rows)
{
	bool		last;

	pthread_mutex_lock(&registry_lock);
	last = --rows->references == 0;
	pthread_mutex_unlock(&registry_lock);
	if (!last)
		return;
	rows_job_free_all(rows);
	pthread_mutex_destroy(&rows->lock);
	free(rows);
}

/* The opener ends a shared job: nobody attaches to it any more. */
static void
rows_job_unregister(RowsJob *rows)
{
	pthread_mutex_lock(&registry_lock);
	for (RowsJob **link = &shared_jobs; *link != NULL; link = &(*link)->next)
		if (*link == rows)
		{
			*link = rows->next;
			break;
		}
	pthread_mutex_unlock(&registry_lock);
}

/* A shared job by its token, with a reference for the caller; NULL when
 * none is open under it. */
static RowsJob *
rows_job_find(uint64_t token)
{
	RowsJob    *found = NULL;

	pthread_mutex_lock(&registry_lock);
	for (RowsJob *rows = shared_jobs; rows != NULL; rows = rows->next)
		if (rows->token == token)
		{
			rows->references++;
			found = rows;
			break;
		}
	pthread_mutex_unlock(&registry_lock);
	return found;
}

/* A token nobody can guess from another job's (getrandom, else the clock). */
static uint64_t
new_token(void)
{
	static uint64_t counter = 0;
	uint64_t	token = 0;

	if (getrandom(&token, sizeof(token), 0) != sizeof(token))
		token = ((uint64_t) time(NULL) << 32) ^ (uint64_t) now_ms() ^
			__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
	return token != 0 ? token : 1;
}

/* realloc that keeps the old block when it fails (rows_job_free_all
 * frees it) */
static bool
grow_array(void **array, size_t bytes)
{
	void	   *grown = realloc(*array, bytes);

	if (grown == NULL)
		return false;
	*array = grown;
	return true;
}

static bool
rows_job_grow(RowsJob *rows, uint64_t records)
{
	uint64_t	size = rows->allocated;

	if (records <= size)
		return true;
	while (size < records)
		size = size < 65536 ? 65536 : size * 2;
	size = size < rows->submit.n ? size : rows->submit.n;
	if (!grow_array((void **) &rows->lengths, size * sizeof(uint32_t)))
		return false;
	for (uint32_t k = 0; k < rows->submit.nkeys; k++)
		if (!grow_array((void **) &rows->column_keys[k], size * sizeof(uint64_t)) ||
			!grow_array((void **) &rows->column_nulls[k], size))
			return false;
	rows->allocated = size;
	return true;
}

/* Whether the client's file has room for `bytes` (the client grows it
 * ahead of what it sends: protocol.h). */
static bool
file_has_room(int file, uint64_t bytes)
{
	struct stat status;

	return file >= 0 && fstat(file, &status) == 0 && (uint64_t) status.st_size >= bytes;
}

/* Writes all of `length` bytes at `offset`, or says why not. */
static bool
write_all(int file, const char *data, uint64_t length, uint64_t offset, char *message,
		  size_t message_size)
{
	while (length > 0)
	{
		ssize_t		written = pwrite(file, data, length, (off_t) offset);

		if (written < 0 && errno == EINTR)
			continue;
		if (written <= 0)
		{
			snprintf(message, message_size, "%s",
					 written < 0 ? strerror(errno) : "nothing written");
			return false;
		}
		data += written;
		offset += (uint64_t) written;
		length -= (uint64_t) written;
	}
	return true;
}

/* Reads all of `length` bytes at `offset`, or says why not. */
static bool
read_all(int file, char *data, uint64_t length, uint64_t offset, char *message,
		 size_t message_size)
{
	while (length > 0)
	{
		ssize_t		got = pread(file, data, length, (off_t) offset);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
		{
			snprintf(message, message_size,
					 "the service could not read back the rows it moved to a file: %s",
					 got < 0 ? strerror(errno) : "the file is short");
			return false;
		}
		data += got;
		offset += (uint64_t) got;
		length -= (uint64_t) got;
	}
	return true;
}

/*
 * A batch of `records` records in the slot's first `length` bytes: each is
 * checked (its two lengths agree, it ends within the batch), its keys
 * noted, and the batch appended. The status, and a message when not OK.
 * Under the job's lock.
 */
static gpu_status
rows_job_append(RowsJob *rows, const char *slot, uint64_t length, uint64_t records,
				char *message, size_t message_size)
{
	const uint32_t nkeys = rows->submit.nkeys;
	const uint64_t header = gs_row_header_bytes(nkeys);
	uint64_t	position = 0;
	uint64_t	first = rows->n;

	if (rows->closed || rows->sorted)
	{
		snprintf(message, message_size, "the sort's rows job has ended");
		return GPU_INVALID;
	}
	if (records > rows->submit.n - rows->n || length > rows->submit.capacity_bytes - rows->used ||
		records > length / gs_row_record_bytes(nkeys, 0))
	{
		snprintf(message, message_size, "more rows than the job was admitted for");
		return GPU_INVALID;
	}
	if (!rows_job_grow(rows, rows->n + records))
	{
		snprintf(message, message_size, "the service is out of host memory");
		return GPU_OUT_OF_MEMORY;
	}
	for (uint64_t i = 0; i < records; i++)
	{
		uint32_t	tuple_length,
					trailer;
		const char *record = slot + position;
		uint64_t	row = first + i;

		if (length - position < header)
			break;
		memcpy(&tuple_length, record, sizeof(tuple_length));
		if (tuple_length < GS_MIN_TUPLE_BYTES ||
			length - position < gs_row_record_bytes(nkeys, tuple_length))
			break;
		memcpy(&trailer, record + gs_row_record_bytes(nkeys, tuple_length) - sizeof(trailer),
			   sizeof(trailer));
		if (trailer != tuple_length)
			break;
		for (uint32_t k = 0; k < nkeys; k++)
		{
			uint64_t	key;
			bool		is_null = record[gs_row_null_offset(nkeys, k)] != 0;

			memcpy(&key, record + gs_row_key_offset(k), sizeof(key));
			rows->column_keys[k][row] = is_null ? 0 : key;
			rows->column_nulls[k][row] = is_null;
			gs_key_column_observe(&rows->columns[k], is_null, key);
		}
		rows->lengths[row] = (uint32_t) gs_row_record_bytes(nkeys, tuple_length);
		position += rows->lengths[row];
		rows->n++;
	}
	if (rows->n != first + records || position != length)
	{
		rows->n = first;
		snprintf(message, message_size, "a batch of rows is malformed");
		return GPU_INVALID;
	}
	if (rows->place != ROWS_IN_MEMORY)
	{
		/* given back while the rows came in: the rest goes to the file */
		if (!file_has_room(rows->file, rows->used + length) ||
			!write_all(rows->file, slot, length, rows->used, message, message_size))
		{
			rows->n = first;
			if (message[0] == '\0')
				snprintf(message, message_size, "the sort's file has no room for its rows");
			return GPU_INVALID;
		}
	}
	else
	{
		gpu_status	status = gpud_device->rows_append(rows->device, slot, length);

		if (status != GPU_OK)
		{
			rows->n = first;
			snprintf(message, message_size, "%s", gpud_device->last_error());
			return status;
		}
	}
	rows->used += length;
	return GPU_OK;
}

/*
 * Records given back before the sort (ROWS_IN_FILE, as they came) are
 * read through `order`: where each lies in the file, and where it starts
 * in the ordered rows.
 */
static gpu_status
rows_job_order_file(RowsJob *rows, uint32_t *order, gs_message *done)
{
	uint64_t	n = rows->n > 0 ? rows->n : 1;

	rows->source = malloc(n * sizeof(uint64_t));
	rows->starts = malloc(n * sizeof(uint64_t));
	if (rows->source == NULL || rows->starts == NULL)
	{
		snprintf(done->message, sizeof(done->message), "the service is out of host memory");
		return GPU_OUT_OF_MEMORY;
	}
	for (uint64_t i = 0, position = 0; i < rows->n; i++)
	{
		rows->source[i] = position;
		position += rows->lengths[i];
	}
	for (uint64_t i = 0, position = 0; i < rows->n; i++)
	{
		rows->starts[i] = position;
		position += rows->lengths[order[i]];
	}
	rows->order = order;
	rows->place = ROWS_IN_FILE_BY_ORDER;
	return GPU_OK;
}

/* Sorts the records by their keys and lays them out in that order. */
static gpu_status
rows_job_sort(RowsJob *rows, int *client_fd, gs_message *done)
{
	gs_key_layout layout;
	gs_sort_request settings;
	gs_sort_report report;
	gs_status	sorted;
	gpu_status	status = GPU_OK;
	bool		in_memory = rows->place == ROWS_IN_MEMORY;
	/* page-locked where it can be: permute uploads it */
	bool		order_pinned = false;
	uint32_t   *order = gs_host_buffer_alloc((rows->n > 0 ? rows->n : 1) * sizeof(uint32_t),
											 in_memory && gpud_device->pins_host_memory, &order_pinned);

	if (order == NULL)
	{
		snprintf(done->message, sizeof(done->message), "the service is out of host memory");
		return GPU_OUT_OF_MEMORY;
	}
	if (gs_key_layout_build(&layout, rows->columns, (int) rows->submit.nkeys) != GS_OK)
	{
		snprintf(done->message, sizeof(done->message), "cannot lay out the sort keys");
		gs_host_buffer_free(order, order_pinned);
		return GPU_INVALID;
	}
	gs_sort_request_init(&settings);
	settings.algorithm = GS_ALGO_RADIX;
	/* the rows are here either way: if the GPU cannot sort their keys (its
	 * memory), this process's CPU does; a job that gave its GPU memory
	 * back sorts on the CPU, outside the budget */
	settings.device = in_memory ? gpud_device->engine_device : GS_DEVICE_CPU;
	settings.gpu_memory_limit = rows->submit.memory_limit;
	settings.poll = client_cancelled;
	settings.poll_arg = client_fd;
	memset(&report, 0, sizeof(report));
	sorted = rows->n > 0 ?
		gs_sort_rows(&layout, rows->n, (const uint64_t *const *) rows->column_keys,
					 (const bool *const *) rows->column_nulls, &settings, order, &report) :
		GS_OK;
	if (sorted != GS_OK)
	{
		snprintf(done->message, sizeof(done->message), "%s",
				 report.gpu_message[0] ? report.gpu_message : "the sort of the rows' keys failed");
		gs_host_buffer_free(order, order_pinned);
		return gpu_status_of(sorted);
	}
	done->timing.upload_ms = (float) report.upload_ms;
	done->timing.sort_ms = (float) (report.sort_ms + report.download_ms);
	if (!in_memory)
	{
		uint32_t   *kept = order;

		if (order_pinned)
		{
			/* kept for the reads: in plain memory */
			kept = malloc((rows->n > 0 ? rows->n : 1) * sizeof(uint32_t));
			if (kept != NULL)
				memcpy(kept, order, rows->n * sizeof(uint32_t));
			gs_host_buffer_free(order, order_pinned);
			if (kept == NULL)
			{
				snprintf(done->message, sizeof(done->message), "the service is out of host memory");
				return GPU_OUT_OF_MEMORY;
			}
		}
		status = rows_job_order_file(rows, kept, done);
		if (status != GPU_OK)
			free(kept);
	}
	else
	{
		status = gpud_device->rows_permute(rows->device, order, rows->lengths, rows->n,
										   &done->timing);
		if (status != GPU_OK)
			snprintf(done->message, sizeof(done->message), "%s", gpud_device->last_error());
		gs_host_buffer_free(order, order_pinned);
	}
	if (status == GPU_OK)
	{
		rows->sorted = true;
		done->valid_outputs = rows->n;
		rows_job_free_keys(rows);	/* the records are in order now */
	}
	return status;
}

/* ROWS_IN_FILE_BY_ORDER: bytes [offset, offset + length) of the ordered
 * rows, record by record from where each lies in the file. */
static bool
read_by_order(RowsJob *rows, char *into, uint64_t offset, uint64_t length, char *message,
			  size_t message_size)
{
	uint64_t	low = 0,
				high = rows->n;

	/* the last record that starts at or before offset */
	while (high - low > 1)
	{
		uint64_t	middle = low + (high - low) / 2;

		if (rows->starts[middle] <= offset)
			low = middle;
		else
			high = middle;
	}
	for (uint64_t i = low, done = 0; done < length; i++)
	{
		uint64_t	end = i + 1 < rows->n ? rows->starts[i + 1] : rows->used;
		uint64_t	within = offset + done - rows->starts[i];
		uint64_t	piece = end - rows->starts[i] - within;

		if (i >= rows->n)
		{
			snprintf(message, message_size, "a read beyond the rows");
			return false;
		}
		piece = piece < length - done ? piece : length - done;
		if (!read_all(rows->file, into + done, piece, rows->source[rows->order[i]] + within,
					  message, message_size))
			return false;
		done += piece;
	}
	return true;
}

/* Reads bytes [offset, offset + length) of the ordered records into the
 * slot; the message says why not. */
static gpu_status
rows_job_read(RowsJob *rows, char *slot, uint64_t offset, uint64_t length,
			  char *message, size_t message_size)
{
	gpu_status	status = GPU_OK;

	if (rows->place == ROWS_IN_FILE)
	{
		if (!read_all(rows->file, slot, length, offset, message, message_size))
			return GPU_INVALID;
	}
	else if (rows->place == ROWS_IN_FILE_BY_ORDER)
	{
		if (!read_by_order(rows, slot, offset, length, message, message_size))
			return GPU_INVALID;
	}
	else if ((status = gpud_device->rows_read(rows->device, offset, slot, length)) != GPU_OK)
		snprintf(message, message_size, "%s", gpud_device->last_error());
	return status;
}

/*
 * The job gives its GPU memory back: every record held goes to the
 * client's file, in order if sorted, else as they came (the rest follows
 * them there). False (the memory kept, the reason logged) if the file has
 * not the room (the client grows it ahead of what it sends; a shared job
 * only before its sort) or cannot be written. Under the job's lock.
 */
static bool
rows_job_give_back(RowsJob *rows)
{
	char		message[512] = "";
	uint64_t	buffer_bytes = rows->used < GIVE_BACK_BUFFER_BYTES ?
		rows->used : GIVE_BACK_BUFFER_BYTES;
	char	   *buffer = NULL;
	bool		ok;

	if (!file_has_room(rows->file, rows->used))
	{
		/* the client did not grow its file to hold them (its
		 * temp_file_limit, or a shared job before its sort): not now */
		if (!rows->file_too_small)
			log_line("a rows job idle for %d ms keeps its GPU memory: its client's file "
					 "has no room for its %llu kB of rows (temp_file_limit)",
					 ROWS_IDLE_GIVE_BACK_MS, (unsigned long long) (rows->used >> 10));
		rows->file_too_small = true;
		return false;
	}
	ok = (buffer = malloc(buffer_bytes > 0 ? buffer_bytes : 1)) != NULL;
	if (!ok)
		snprintf(message, sizeof(message), "out of host memory");
	for (uint64_t offset = 0; ok && offset < rows->used;)
	{
		uint64_t	piece = rows->used - offset < GIVE_BACK_BUFFER_BYTES ?
			rows->used - offset : GIVE_BACK_BUFFER_BYTES;

		ok = gpud_device->rows_read(rows->device, offset, buffer, piece) == GPU_OK;
		if (!ok)
			snprintf(message, sizeof(message), "%s", gpud_device->last_error());
		ok = ok && write_all(rows->file, buffer, piece, offset, message, sizeof(message));
		offset += piece;
	}
	free(buffer);
	if (!ok)
	{
		log_line("a rows job idle for %d ms kept its GPU memory: %s", ROWS_IDLE_GIVE_BACK_MS,
				 message);
		rows->give_back_failed = true;
		return false;
	}
	rows_job_free_memory_records(rows);
	rows->place = ROWS_IN_FILE;
	__atomic_add_fetch(&files_held, 1, __ATOMIC_RELAXED);
	return true;
}

/* Whether the job may give its memory back now (its client idle): it has
 * a file, and is not a shared job still taking others' batches. */
static bool
may_give_back(const RowsJob *rows, uint64_t gpu_bytes)
{
	return gpu_bytes > 0 && rows->file >= 0 && !rows->give_back_failed &&
		(rows->sorted || !rows->submit.shared);
}

/*
 * The next message of a rows job's client. Meanwhile, while the client
 * asks for nothing, the job gives its GPU memory back when a waiting job
 * needs it (*gpu_bytes becomes 0: the budget has it again).
 */
static bool
receive_rows_message(int fd, RowsJob *rows, uint64_t *gpu_bytes, gs_message *message)
{
	bool		idle = false;

	while (may_give_back(rows, *gpu_bytes))
	{
		struct pollfd client = {fd, POLLIN, 0};
		int			ready = poll(&client, 1, ROWS_IDLE_GIVE_BACK_MS);
		bool		gave_back;
		uint64_t	held = *gpu_bytes;

		if (ready < 0 && errno == EINTR)
			continue;
		if (ready != 0)
			break;				/* a message, or the client left */
		if (!idle)
		{
			mark_idle(rows->submit.session_id, held, true);
			idle = true;
		}
		if (!give_back_wanted(rows->submit.session_id))
			continue;
		pthread_mutex_lock(&rows->lock);
		gave_back = rows_job_give_back(rows);
		pthread_mutex_unlock(&rows->lock);
		if (gave_back)
		{
			log_line("a rows job idle for %d ms gave its %llu MB of GPU memory to a waiting "
					 "job (its %llu MB of %s rows went to its client's file)",
					 ROWS_IDLE_GIVE_BACK_MS, (unsigned long long) (held >> 20),
					 (unsigned long long) (rows->used >> 20),
					 rows->sorted ? "sorted" : "unsorted");
			mark_idle(rows->submit.session_id, held, false);
			idle = false;
			*gpu_bytes = 0;
			release_budget(held, rows->submit.session_id);
		}
	}
	if (idle)
		mark_idle(rows->submit.session_id, *gpu_bytes, false);
	return receive_message(fd, message);
}

/* A failure ends the connection with a DONE that says so. */
static void
rows_job_failed(int fd, gpu_status status, gs_message *reply)
{
	reply->type = GS_MSG_DONE;
	reply->status = wire_status(status);
	if (reply->message[0] == '\0')
		snprintf(reply->message, sizeof(reply->message), "%s", gpud_device->last_error());
	gs_send_message(fd, reply, -1);
	job_failed(status, reply->message);
}

/* A PUT of `records` records at `slot_position`: appended under the job's
 * lock, answered with the connection's totals. */
static gpu_status
rows_put(RowsJob *rows, const gs_message *message, char *slot, uint64_t slot_bytes,
		 uint64_t *records, uint64_t *bytes, gs_message *reply)
{
	gpu_status	status;

	if (!gs_range_within(message->slot_position, message->length, slot_bytes))
	{
		snprintf(reply->message, sizeof(reply->message), "a batch beyond the slot");
		return GPU_INVALID;
	}
	pthread_mutex_lock(&rows->lock);
	status = rows_job_append(rows, slot + message->slot_position, message->length,
							 message->records, reply->message, sizeof(reply->message));
	pthread_mutex_unlock(&rows->lock);
	if (status != GPU_OK)
		return status;
	*records += message->records;
	*bytes += message->length;
	reply->type = GS_MSG_ACK;
	reply->records = *records;
	reply->offset = *bytes;
	reply->given_back = rows->place != ROWS_IN_MEMORY;
	return GPU_OK;
}

/*
 * An admitted rows job, to its end: its memory, ADMITTED (or REFUSED when
 * the memory cannot be had), PUTs until RUN, then GETs until the client
 * closes. `file` is the client's give-back file (the job's now), or -1.
 */
void
serve_rows(int fd, const gs_message *job, int file, uint64_t slot_offset, uint64_t slot_bytes,
		   uint64_t *gpu_bytes, double queue_ms)
{
	RowsJob    *rows = calloc(1, sizeof(RowsJob));
	char	   *slot = service.staging + slot_offset;
	gs_message	message;
	gs_message	reply;
	gpu_status	status = GPU_OK;
	uint64_t	records = 0,
				bytes = 0;

	if (rows == NULL)
	{
		refuse(fd, GS_REFUSED_OUT_OF_MEMORY, queue_ms, "the service is out of host memory");
		if (file >= 0)
			close(file);
		return;
	}
	__atomic_add_fetch(&rows_jobs_open, 1, __ATOMIC_RELAXED);
	rows->submit = *job;
	rows->file = file;
	rows->place = ROWS_IN_MEMORY;
	rows->references = 1;
	pthread_mutex_init(&rows->lock, NULL);
	for (uint32_t k = 0; k < job->nkeys; k++)
		gs_key_column_init(&rows->columns[k], (job->descending_mask >> k) & 1,
						   (job->nulls_first_mask >> k) & 1);
	if (gpud_device->rows_create(job->capacity_bytes, &rows->device) != GPU_OK)
	{
		refuse(fd, GS_REFUSED_OUT_OF_MEMORY, queue_ms,
			   "the service could not allocate %llu MB of GPU memory for the rows: %s",
			   (unsigned long long) (job->capacity_bytes >> 20), gpud_device->last_error());
		rows_job_release(rows);
		__atomic_sub_fetch(&rows_jobs_open, 1, __ATOMIC_RELAXED);
		return;
	}
	if (job->shared)
	{
		rows->token = new_token();
		pthread_mutex_lock(&registry_lock);
		rows->next = shared_jobs;
		shared_jobs = rows;
		pthread_mutex_unlock(&registry_lock);
	}

	memset(&reply, 0, sizeof(reply));
	if (!send_admitted(fd, job, slot_offset, slot_bytes, false, *gpu_bytes, queue_ms, rows->token))
		status = GPU_INTERRUPTED;

	while (status == GPU_OK && receive_rows_message(fd, rows, gpu_bytes, &message))
	{
		memset(&reply, 0, sizeof(reply));
		if (message.type == GS_MSG_PUT)
			status = rows_put(rows, &message, slot, slot_bytes, &records, &bytes, &reply);
		else if (message.type == GS_MSG_RUN && !rows->sorted)
		{
			reply.type = GS_MSG_DONE;
			pthread_mutex_lock(&rows->lock);
			status = rows_job_sort(rows, &fd, &reply);
			pthread_mutex_unlock(&rows->lock);
			reply.queue_ms = queue_ms;
			if (status == GPU_INTERRUPTED)
				break;
		}
		else if (message.type == GS_MSG_GET && rows->sorted &&
				 gs_range_within(message.slot_position, message.length, slot_bytes) &&
				 gs_range_within(message.offset, message.length, rows->used))
		{
			pthread_mutex_lock(&rows->lock);
			status = rows_job_read(rows, slot + message.slot_position, message.offset,
								   message.length, reply.message, sizeof(reply.message));
			pthread_mutex_unlock(&rows->lock);
			reply.type = GS_MSG_ACK;
			reply.offset = message.offset;
			reply.length = message.length;
			reply.given_back = rows->place != ROWS_IN_MEMORY;
		}
		else
			break;				/* out of turn, or a cancel: the job ends */
		if (status != GPU_OK)
			break;
		if (!gs_send_message(fd, &reply, -1))
			break;
	}
	/* the memory goes now, whoever is still attached (their next PUT fails) */
	if (rows->token != 0)
		rows_job_unregister(rows);
	pthread_mutex_lock(&rows->lock);
	rows->closed = true;
	rows_job_free_all(rows);
	pthread_mutex_unlock(&rows->lock);
	rows_job_release(rows);
	__atomic_sub_fetch(&rows_jobs_open, 1, __ATOMIC_RELAXED);
	if (status != GPU_OK && status != GPU_INTERRUPTED)
		rows_job_failed(fd, status, &reply);
}

/*
 * A connection attached to a shared rows job: its PUTs until it closes.
 * It holds a slot but no GPU memory (the opener's job counts that).
 */
static void
serve_attached(int fd, const gs_message *job, RowsJob *rows, uint64_t slot_offset,
			   uint64_t slot_bytes, double queue_ms)
{
	char	   *slot = service.staging + slot_offset;
	gs_message	message;
	gs_message	reply;
	gpu_status	status = GPU_OK;
	uint64_t	records = 0,
				bytes = 0;

	memset(&reply, 0, sizeof(reply));
	if (!send_admitted(fd, job, slot_offset, slot_bytes, false, 0, queue_ms, rows->token))
		return;
	while (status == GPU_OK && receive_message(fd, &message) && message.type == GS_MSG_PUT)
	{
		memset(&reply, 0, sizeof(reply));
		status = rows_put(rows, &message, slot, slot_bytes, &records, &bytes, &reply);
		if (status == GPU_OK && !gs_send_message(fd, &reply, -1))
			break;
	}
	if (status != GPU_OK)
		rows_job_failed(fd, status, &reply);
}

/* SUBMIT of an attach: the shared job by its token, a slot (never waited
 * for: files are the fallback), then its PUTs. */
void
serve_attach(int fd, const gs_message *job)
{
	RowsJob    *rows = rows_job_find(job->token);
	uint64_t	slot_bytes = rows_slot_bytes();
	uint64_t	slot_offset = 0;
	double		queue_ms = 0;

	if (rows == NULL)
	{
		refuse(fd, GS_REFUSED_BAD_REQUEST, 0, "the shared rows job has ended");
		return;
	}
	switch (admit(fd, slot_bytes, 0, job->session_id, 0, 0, &slot_offset, &queue_ms))
	{
		case ADMIT_GRANTED:
			serve_attached(fd, job, rows, slot_offset, slot_bytes, queue_ms);
			release(slot_offset, 0, job->session_id);
			break;
		case ADMIT_TIMEOUT:
			refuse(fd, GS_REFUSED_QUEUE_TIMEOUT, queue_ms, "no room in the staging area");
			break;
		default:
			break;
	}
	rows_job_release(rows);
}
