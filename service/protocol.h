/*
 * protocol.h — what backends and the GPU service's CUDA process say to each
 * other. Plain C, no PostgreSQL: included by service/gpud.c (the CUDA
 * process) and by service/client.c (the backends' side).
 *
 * The service layer, in one picture:
 *
 *   backend ──(client.c)── Unix socket + shared staging memory ──> gpusort-gpud
 *                                                                  (gpud.c, one per GPU)
 *   bgworker "gpusort GPU service" (worker.c): starts, watches and restarts
 *   the gpusort-gpud processes; publishes their state in PostgreSQL's shared
 *   memory (service.h).
 *
 * gpusort-gpud owns everything CUDA: the context, the staging area (a memfd
 * it page-locks; backends map it through the descriptor it passes them), the
 * GPU memory budget and the queue of jobs waiting for admission. It runs no
 * PostgreSQL code and is not attached to PostgreSQL's shared memory, so its
 * crash is not a crash of a server process: the postmaster never sees it.
 *
 * A conversation, one job per connection (SOCK_SEQPACKET: every message
 * arrives whole):
 *
 *   client HELLO          -> WELCOME (+ the staging memfd)  or REFUSED
 *   client SUBMIT         -> ADMITTED (a slot of the staging area)  or REFUSED
 *   [client PUT, chunked jobs only: "the slot holds bytes [o, o+len)" -> ACK]*
 *   client RUN            -> DONE
 *   [client GET, chunked jobs only: "put bytes [o, o+len) in the slot" -> ACK]*
 *   client closes; the service frees the slot and the job's budget.
 *
 * Any message during a RUN, or the connection closing, cancels the job.
 *
 * A rows job (GS_JOB_ROWS) holds one spilled sort's rows in the service's
 * GPU memory instead of temporary files: the client PUTs batches of
 * records, in any order, through its slot ("the slot holds `records`
 * records, `length` bytes from `slot_position`" -> ACK with the totals);
 * RUN sorts them all by their keys on the GPU and lays them out in that
 * order (-> DONE); GETs ("bytes [offset, offset + length) of the ordered
 * records to `slot_position`" -> ACK) read them back, any range, any
 * number of times, until the client closes. The client may send its next
 * PUT or GET before it reads the last one's ACK, filling or reading
 * another part of the slot meanwhile. A record is laid out as row_store.c
 * writes its runs: uint32 tuple length, the encoded keys (uint64 each),
 * the NULL flags (a byte each), zero bytes up to a multiple of 8, the
 * tuple, zero bytes, and uint32 tuple length again as the record's last
 * bytes, which make a multiple of 8 (gs_row_record_bytes()). Records that
 * follow each other from an aligned address therefore keep every tuple
 * MAXALIGNed, and readers use tuples where they lie.
 *
 * A shared rows job gathers the rows of a parallel sort: the client that
 * opens it (SUBMIT with `shared`) gets a `token` in its ADMITTED, and other
 * connections attach to the job with it (SUBMIT of GS_JOB_ROWS_ATTACH with
 * the token -> ADMITTED, a slot of their own but no GPU memory). They PUT
 * batches as above, concurrently (the service takes one batch at a time),
 * and close; an ACK then counts what that connection sent. Only the
 * opener sorts and reads. When the opener closes, the job's memory goes,
 * and an attached connection's next PUT fails.
 *
 * A job's data (its "area") is its keys, then (8-byte aligned) its row
 * index: gs_job_area_bytes(). It sits in the slot when it fits the staging
 * area ("direct"); otherwise it streams through the slot in pieces into a
 * buffer of the service's ("chunked").
 */
#ifndef GPUSORT_SERVICE_PROTOCOL_H
#define GPUSORT_SERVICE_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../kernels/gpu_api.h"

/* The module's version: a backend and a gpusort-gpud of different builds
 * (a package upgraded under a running server) refuse each other. */
#define GPUSORT_BUILD "1.1"

/* gpusort-gpud's exit code after a GPU failure: the worker counts it as a
 * device fault (service/worker.c). */
#define GPUD_EXIT_DEVICE_FAULT 3

/* Bumped whenever a message or a record changes; both sides refuse
 * another version. */
#define GS_SERVICE_PROTOCOL 6
#define GS_SERVICE_MAGIC 0x67707364u	/* "gpsd" */

/* The most GPUs (gpusort-gpud processes) one server's service runs. */
#define GS_SERVICE_MAX_GPUS 16

typedef enum gs_message_type
{
	GS_MSG_HELLO = 1,
	GS_MSG_WELCOME,
	GS_MSG_SUBMIT,
	GS_MSG_ADMITTED,
	GS_MSG_REFUSED,
	GS_MSG_PUT,
	GS_MSG_GET,
	GS_MSG_ACK,
	GS_MSG_RUN,
	GS_MSG_DONE,
	GS_MSG_CANCEL
} gs_message_type;

typedef enum gs_job_kind
{
	GS_JOB_SORT = 1,			/* gpu_sort */
	GS_JOB_APPROX,				/* gpu_approx_sort */
	GS_JOB_MINMAX,				/* gpu_minmax */
	GS_JOB_ROWS,				/* a spilled sort's rows (gpu_rows_open) */
	GS_JOB_ROWS_ATTACH			/* batches for a shared rows job (by token) */
} gs_job_kind;

/* Why the service did not take a job (REFUSED). */
typedef enum gs_refusal
{
	GS_REFUSED_VERSION = 1,		/* another protocol or build */
	GS_REFUSED_NO_GPU,			/* the service has no usable GPU */
	GS_REFUSED_TOO_LARGE,		/* larger than the whole budget */
	GS_REFUSED_QUEUE_TIMEOUT,	/* waited its bounded time in the queue */
	GS_REFUSED_BAD_REQUEST,
	GS_REFUSED_OUT_OF_MEMORY	/* host memory for a chunked job's buffer */
} gs_refusal;

typedef struct gs_message
{
	uint32_t	magic;
	uint32_t	type;			/* gs_message_type */

	/* HELLO, WELCOME: both sides' protocol and build */
	uint32_t	protocol;
	char		build[64];

	/* WELCOME */
	gpu_device_info device;		/* usable, or why not */
	uint64_t	staging_bytes;
	uint64_t	budget_bytes;	/* GPU memory all admitted jobs may hold */
	uint64_t	generation;		/* this process's start: pid << 32 | start */
	uint32_t	emulated;		/* a test service: the CPU engine plays the GPU */

	/* SUBMIT */
	uint32_t	kind;			/* gs_job_kind */
	uint64_t	n;
	uint32_t	key_bytes;
	uint32_t	key_bits;
	uint32_t	algorithm;		/* gpu_algorithm */
	uint32_t	with_index;
	uint32_t	intervals;
	uint64_t	limit;
	uint64_t	memory_limit;	/* the per-sort cap, bytes, 0 = none */
	int64_t		wait_ms;		/* longest wait for admission; -1 = no bound */
	/* SUBMIT, rows jobs: at most `n` records of at most `capacity_bytes`,
	 * `nkeys` key columns; bit k of the masks is key column k's */
	uint64_t	capacity_bytes;
	uint32_t	nkeys;
	uint32_t	descending_mask;
	uint32_t	nulls_first_mask;
	uint32_t	shared;			/* others may attach (ADMITTED gives a token) */
	/* where the rows go if the job gives its GPU memory back (the client's
	 * temporary tablespace's directory), and the most bytes they may take
	 * there (the client's temp_file_limit; -1, none) */
	char		temp_dir[1024];
	int64_t		temp_file_limit_bytes;
	uint64_t	token;			/* ADMITTED of a shared job; SUBMIT of an attach */

	/* ADMITTED */
	uint64_t	slot_offset;	/* in the staging area */
	uint64_t	slot_bytes;
	uint32_t	chunked;
	uint64_t	estimate_bytes;	/* the GPU memory the job is counted for */

	/* REFUSED */
	uint32_t	refusal;		/* gs_refusal */

	/* PUT, GET: a piece of the area, through the slot (a rows job's PUT:
	 * `records` records of `length` bytes; its ACK: the totals so far) */
	uint64_t	offset;
	uint64_t	length;
	uint64_t	records;
	uint64_t	slot_position;	/* a rows job's PUT and GET: where in the slot */
	uint32_t	given_back;		/* a rows job's GET's ACK: its rows are in a
								 * file, its GPU memory given back */

	/* DONE */
	int32_t		status;			/* gpu_status */
	uint32_t	host_data_touched;
	uint64_t	valid_outputs;
	uint64_t	min_key;
	uint64_t	max_key;
	gpu_timing	timing;

	/* ADMITTED, REFUSED, DONE */
	double		queue_ms;

	/* REFUSED, DONE: in words */
	char		message[256];
} gs_message;

static inline uint64_t
gs_align8(uint64_t bytes)
{
	return (bytes + 7) & ~(uint64_t) 7;
}

/* Bytes of a job's area: keys, then the row index. */
static inline uint64_t
gs_job_area_bytes(uint64_t n, uint32_t key_bytes, int with_index)
{
	return gs_align8(n * key_bytes) + (with_index ? n * sizeof(uint32_t) : 0);
}

/* The shortest tuple a rows job's record may hold: a minimal tuple's
 * header (PostgreSQL's MinimalTupleData up to its data). */
#define GS_MIN_TUPLE_BYTES 16

/* Bytes of a rows job's record before its tuple: the tuple's length, the
 * keys and NULL flags, padded (see GS_JOB_ROWS above). */
static inline uint64_t
gs_row_header_bytes(uint32_t nkeys)
{
	return gs_align8(sizeof(uint32_t) + (uint64_t) nkeys * (sizeof(uint64_t) + 1));
}

/* Bytes of a rows job's record with `nkeys` keys around a tuple of
 * `tuple_length` bytes; the trailing length is its last four. */
static inline uint64_t
gs_row_record_bytes(uint32_t nkeys, uint32_t tuple_length)
{
	return gs_row_header_bytes(nkeys) + gs_align8((uint64_t) tuple_length + sizeof(uint32_t));
}

/* Where the row index starts in the area. */
static inline uint64_t
gs_job_index_offset(uint64_t n, uint32_t key_bytes)
{
	return gs_align8(n * key_bytes);
}

/*
 * The socket of GPU `gpu` of the server whose postmaster is `postmaster_pid`
 * on `port`: a name in Linux's abstract namespace (no file to clean up after
 * a crash). The service accepts only connections from its own user.
 */
static inline void
gs_service_socket_name(char *buffer, size_t size, int postmaster_pid, int port, int gpu)
{
	snprintf(buffer, size, "gpusort-%d-%d-gpu%d", postmaster_pid, port, gpu);
}

#endif							/* GPUSORT_SERVICE_PROTOCOL_H */
