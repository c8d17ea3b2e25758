/*
 * protocol.h — what the GPU service's processes say to each other. Plain C,
 * no PostgreSQL: included by service/gpud/ (the CUDA process), by
 * service/client.c and client_rows.c (the backends' side) and by
 * service/worker.c (the supervisor).
 *
 * The service layer, in one picture:
 *
 *   backend ──(client.c)── Unix socket + shared staging memory ──> gpusort-gpud
 *                                                                  (gpud/, one per GPU)
 *   bgworker "gpusort GPU service" (worker.c): starts, watches and restarts
 *   the gpusort-gpud processes through a status page each (below); publishes
 *   their state in PostgreSQL's shared memory (service.h).
 *
 * gpusort-gpud owns everything CUDA: the context, the staging area (a sealed
 * memfd it page-locks; backends map it through the descriptor it passes
 * them), the GPU memory budget and the queue of jobs waiting for admission.
 * It runs no PostgreSQL code and is not attached to PostgreSQL's shared
 * memory, so its crash is not a crash of a server process: the postmaster
 * never sees it.
 *
 * Trust. Each process checks whom it talks to, and checks what it is told:
 *   - The worker makes each gpusort-gpud's listening socket itself, under a
 *     name nobody can guess (128 random bits, in Linux's abstract
 *     namespace), binds it before the process starts and hands it over as
 *     an inherited descriptor (GS_GPUD_LISTEN_FD), together with the status
 *     page (GS_GPUD_STATUS_FD). The name and the process's pid go to
 *     PostgreSQL's shared memory only.
 *   - A backend connects to that name and checks the peer's credentials
 *     (SO_PEERCRED): the server's own user, and the very pid the worker
 *     started. A process of another user that learnt the name (from
 *     /proc/net/unix, after the service bound it) and bound it after the
 *     service died gets no word from a backend.
 *   - gpusort-gpud serves only processes of its own user (SO_PEERCRED).
 *   - Every size, offset and count in a message, the staging memfd's real
 *     size and seals, and every result (a permutation of the input, in
 *     order) are checked before use (client.c, client_rows.c).
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
 * another part of the slot meanwhile. A record is laid out as
 * row_store_gpu.c writes its runs: uint32 tuple length, the encoded keys
 * (uint64 each), the NULL flags (a byte each), zero bytes up to a multiple
 * of 8, the tuple, zero bytes, and uint32 tuple length again as the
 * record's last bytes, which make a multiple of 8 (gs_row_record_bytes()).
 * Records that follow each other from an aligned address therefore keep
 * every tuple MAXALIGNed, and readers use tuples where they lie.
 *
 * A rows job's SUBMIT passes a temporary file of the client's (SCM_RIGHTS),
 * opened through PostgreSQL's temporary-file layer. When the service gives
 * the job's GPU memory back to others (the job idle, others waiting), its
 * rows go to that file, and only within the file's size: the client grows
 * the file before each batch it sends, so the rows count against its
 * temp_file_limit, and log_temp_files and temp_bytes see the file when it
 * closes.
 *
 * A shared rows job gathers the rows of a parallel sort: the client that
 * opens it (SUBMIT with `shared`) gets a `token` in its ADMITTED, and other
 * connections attach to the job with it (SUBMIT of GS_JOB_ROWS_ATTACH with
 * the token -> ADMITTED, a slot of their own but no GPU memory). They PUT
 * batches as above, concurrently (the service takes one batch at a time),
 * and close; an ACK then counts what that connection sent. Only the
 * opener sorts and reads, and it grows its file to all the shares' bytes
 * before it sorts. When the opener closes, the job's memory goes, and an
 * attached connection's next PUT fails.
 *
 * A job's data (its "area") is its keys, then (8-byte aligned) its row
 * index: gs_job_area_bytes(). It sits in the slot when it fits the staging
 * area ("direct"); otherwise it streams through the slot in pieces into a
 * buffer of the service's ("chunked").
 *
 * Admission (gpud/admission.c) counts each job's GPU memory
 * (gs_job_gpu_bytes()) against the GPU's budget and against the most its
 * session may hold (`session_memory_limit`,
 * gpusort.session_gpu_memory_limit; a session is a backend and its
 * parallel workers, `session_id`). No wait is unbounded: a job that waited
 * `wait_ms` is refused (GS_REFUSED_QUEUE_TIMEOUT).
 */
#ifndef GPUSORT_SERVICE_PROTOCOL_H
#define GPUSORT_SERVICE_PROTOCOL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* The module's build: a backend and a gpusort-gpud of different builds (a
 * package upgraded under a running server) refuse each other. The Makefile
 * makes it from the extension's version and a digest of this file. */
#ifndef GPUSORT_BUILD
#error "GPUSORT_BUILD is defined by the Makefile"
#endif

/* gpusort-gpud's exit code after a GPU failure that left its CUDA context
 * unusable: the worker counts it as a device fault (service/worker.c). */
#define GPUD_EXIT_DEVICE_FAULT 3

/* Bumped whenever a message, a record or the status page changes; both
 * sides refuse another version. */
#define GS_SERVICE_PROTOCOL 9
#define GS_SERVICE_MAGIC 0x67707364u	/* "gpsd" */

/* The most GPUs (gpusort-gpud processes) one server's service runs. */
#define GS_SERVICE_MAX_GPUS 16

/*
 * gpusort-gpud's command line, as the worker (worker.c) runs it:
 *
 *   gpusort-gpud --count
 *       prints how many GPUs the machine has ("3\n"), or "0 " and why
 *       there is none; the worker reads it with gs_gpud_parse_count();
 *   gpusort-gpud --gpu-index N --staging-mb MB --budget-mb MB --build B
 *       serves GPU N with a staging area of MB and a GPU memory budget of
 *       MB (0: 90% of the GPU's), for backends of build B only, on the
 *       descriptors below; it exits GPUD_EXIT_DEVICE_FAULT after a GPU
 *       fault that broke its context.
 */
#define GS_GPUD_COUNT "--count"
#define GS_GPUD_GPU_INDEX "--gpu-index"
#define GS_GPUD_STAGING_MB "--staging-mb"
#define GS_GPUD_BUDGET_MB "--budget-mb"
#define GS_GPUD_BUILD "--build"
/* the most GPUs --count may report */
#define GS_GPUD_MAX_COUNT 1024

/* The count in --count's output (-1: none there) and, after it, *why
 * (why there is no GPU, or ""), up to the end of its line. */
static inline int
gs_gpud_parse_count(const char *output, char *why, size_t why_size)
{
	char	   *rest;
	long		count = strtol(output, &rest, 10);
	size_t		length;

	why[0] = '\0';
	if (rest == output || count < 0 || count > GS_GPUD_MAX_COUNT)
		return -1;
	while (*rest == ' ')
		rest++;
	length = strcspn(rest, "\n");
	if (length >= why_size)
		length = why_size - 1;
	memcpy(why, rest, length);
	why[length] = '\0';
	return (int) count;
}

/* The descriptors a gpusort-gpud inherits from the worker: its listening
 * socket, bound but not yet listening, and its status page. */
#define GS_GPUD_LISTEN_FD 3
#define GS_GPUD_STATUS_FD 4

/* A socket's name in the abstract namespace: "gpusort-" and 32 hex digits
 * (128 random bits), NUL-terminated. */
#define GS_SOCKET_NAME_BYTES 48

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
	GS_REFUSED_TOO_LARGE,		/* larger than the whole budget, or than
								 * its session may hold */
	GS_REFUSED_QUEUE_TIMEOUT,	/* waited its bounded time in the queue */
	GS_REFUSED_BAD_REQUEST,
	GS_REFUSED_OUT_OF_MEMORY	/* host memory for a chunked job's buffer */
} gs_refusal;

/*
 * The wire's own types: what a gpud says of its GPU, how long a job took,
 * which algorithm a sort asks for and how a job ended. The engine's
 * backend interface (engine/sort_backend.h, the client's side) and the
 * kernels' API (kernels/gpu_api.h, gpusort-gpud's) have types like them;
 * each side translates, so that a change to those headers cannot change
 * the wire unseen.
 */
typedef struct gs_wire_device
{
	bool		built_with_cuda;
	bool		usable;
	char		reason[256];	/* why not usable */
	char		name[256];
	int32_t		compute_major;
	int32_t		compute_minor;
	int32_t		multiprocessors;
	uint64_t	total_memory;
	uint64_t	free_memory;
	int32_t		driver_version;
	int32_t		runtime_version;
} gs_wire_device;

typedef struct gs_wire_timing
{
	float		upload_ms;
	float		sort_ms;
	float		download_ms;
	uint64_t	device_bytes;	/* device memory the job held */
} gs_wire_timing;

typedef enum gs_wire_algorithm
{
	GS_WIRE_BITONIC = 0,
	GS_WIRE_BUTTERFLY,
	GS_WIRE_RADIX
} gs_wire_algorithm;

typedef enum gs_wire_status
{
	GS_STATUS_OK = 0,
	GS_STATUS_UNAVAILABLE,		/* no usable GPU */
	GS_STATUS_OUT_OF_MEMORY,	/* GPU or host memory, or over a cap */
	GS_STATUS_FAILED,			/* any other failure of the GPU */
	GS_STATUS_INTERRUPTED,		/* the client asked to stop */
	GS_STATUS_INVALID			/* a request the service refuses */
} gs_wire_status;

typedef struct gs_message
{
	uint32_t	magic;
	uint32_t	type;			/* gs_message_type */

	/* HELLO, WELCOME: both sides' protocol and build */
	uint32_t	protocol;
	char		build[64];

	/* WELCOME */
	gs_wire_device device;		/* usable, or why not */
	uint64_t	staging_bytes;
	uint64_t	budget_bytes;	/* GPU memory all admitted jobs may hold */
	uint64_t	generation;		/* this process's start: pid << 32 | start */
	uint32_t	emulated;		/* a test service: the CPU engine plays the GPU */

	/* SUBMIT */
	uint32_t	kind;			/* gs_job_kind */
	uint64_t	n;
	uint32_t	key_bytes;
	uint32_t	key_bits;
	uint32_t	algorithm;		/* gs_wire_algorithm */
	uint32_t	with_index;
	uint32_t	intervals;
	uint32_t	approx_mode;	/* approximate sorts: 0 equal widths, 1 the
								 * quantiles of a sample drawn with `seed`
								 * (kernels/interval_map.h's, which both
								 * sides compute alike) */
	uint64_t	seed;
	uint64_t	limit;
	uint64_t	memory_limit;	/* the per-sort cap, bytes, 0 = none */
	int64_t		wait_ms;		/* longest wait for admission (>= 0) */
	int32_t		session_id;		/* the backend's pid (its leader's, in a
								 * parallel worker) */
	uint64_t	session_memory_limit;	/* bytes its session may hold, 0 = no cap */
	/* SUBMIT, rows jobs: at most `n` records of at most `capacity_bytes`,
	 * `nkeys` key columns; bit k of the masks is key column k's; the
	 * give-back file comes with the message */
	uint64_t	capacity_bytes;
	uint32_t	nkeys;
	uint32_t	descending_mask;
	uint32_t	nulls_first_mask;
	uint32_t	shared;			/* others may attach (ADMITTED gives a token) */
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
	uint32_t	given_back;		/* a rows job's ACK: its rows are in its file,
								 * its GPU memory given back */

	/* DONE */
	int32_t		status;			/* gs_wire_status */
	uint32_t	host_data_touched;
	uint64_t	valid_outputs;
	uint64_t	min_key;
	uint64_t	max_key;
	uint64_t	sample_size;	/* approximate sorts, quantile mode: keys
								 * sampled, and the fullest bucket's rows */
	uint64_t	largest_interval;
	gs_wire_timing timing;

	/* ADMITTED, REFUSED, DONE */
	double		queue_ms;

	/* REFUSED, DONE: in words */
	char		message[256];
} gs_message;

/*
 * The status page: one shared page per gpusort-gpud, made by the worker
 * (a memfd, GS_GPUD_STATUS_FD) and written by the gpusort-gpud alone. The
 * worker reads it without ever waiting on the process: whether it is up,
 * what it found, how loaded it is, and whether it is alive (`heartbeat`
 * moves every GS_HEARTBEAT_MS while its accept loop runs). Fields other
 * than `heartbeat` are written between two increments of `sequence` (odd
 * while a write is under way); a reader copies the page and uses the copy
 * only if `sequence` was even and unchanged around it. The worker checks
 * every field of the copy before use: the page is another process's.
 */
typedef enum gs_gpud_state
{
	GS_GPUD_STARTING = 0,		/* (zeroed page) CUDA is starting */
	GS_GPUD_READY,				/* serving, on a usable GPU */
	GS_GPUD_NO_GPU				/* serving, but the GPU is unusable */
} gs_gpud_state;

#define GS_STATUS_MAGIC 0x67707374u	/* "gpst" */
#define GS_HEARTBEAT_MS 100

typedef struct gs_status_page
{
	uint32_t	sequence;
	uint32_t	magic;
	uint32_t	protocol;
	uint32_t	state;			/* gs_gpud_state */
	uint64_t	heartbeat;		/* a counter, stored atomically */
	gs_wire_device device;
	uint64_t	staging_bytes;
	uint64_t	budget_bytes;
	uint64_t	generation;
	uint32_t	emulated;
	/* the load now: for gpusort_info() and the tests' leak checks */
	uint32_t	connections;	/* open connections */
	uint32_t	jobs_waiting;	/* in the admission queue */
	uint32_t	slots_used;		/* staging slots taken */
	uint64_t	budget_used;	/* GPU memory admitted jobs are counted for */
	uint32_t	rows_jobs;		/* rows jobs open */
	uint32_t	files_open;		/* give-back files held */
	uint64_t	jobs_failed;	/* jobs a GPU error failed since the start */
} gs_status_page;

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

/* A rows job's key columns, at most (the engine's GS_MAX_KEY_COLUMNS). */
#define GS_ROWS_MAX_KEYS 8

/*
 * A rows job's record, as the backend lays it out and the service parses
 * it: the tuple's length (uint32), key k's encoded value (uint64) at
 * gs_row_key_offset(k), key k's NULL flag (one byte, 1 for NULL) at
 * gs_row_null_offset(nkeys, k), padding to 8 bytes, the tuple, padding,
 * and the tuple's length again as the record's last four bytes.
 */
static inline uint64_t
gs_row_key_offset(uint32_t k)
{
	return sizeof(uint32_t) + (uint64_t) k * sizeof(uint64_t);
}

static inline uint64_t
gs_row_null_offset(uint32_t nkeys, uint32_t k)
{
	return sizeof(uint32_t) + (uint64_t) nkeys * sizeof(uint64_t) + k;
}

/* Bytes of a rows job's record before its tuple: the tuple's length, the
 * keys and NULL flags, padded (see GS_JOB_ROWS above). */
static inline uint64_t
gs_row_header_bytes(uint32_t nkeys)
{
	return gs_align8(gs_row_null_offset(nkeys, nkeys));
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

/* Every job is counted for this much GPU memory beyond its buffers
 * (temporary storage, alignment, the allocator's granularity). */
#define GS_JOB_OVERHEAD_BYTES ((uint64_t) 16 << 20)

/* GPU memory a rows job is counted for per record beyond twice its bytes:
 * the records' offsets and the sort of their keys with its row index. */
#define GS_ROWS_BYTES_PER_RECORD (3 * sizeof(uint64_t) + 2 * sizeof(uint64_t) + \
								  2 * sizeof(uint32_t))

static inline uint64_t
gs_next_power_of_two(uint64_t n)
{
	uint64_t	p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/*
 * The GPU memory a job is counted for: its buffers as the kernels lay them
 * out (gpu_sort.cu, gpu_approx.cu, gpu_rows.cu), plus an allowance. Both
 * sides use it: the service to admit jobs within its budget, the client
 * to size a rows job that fits.
 */
static inline uint64_t
gs_job_gpu_bytes(const gs_message *job)
{
	const uint64_t n = job->n;
	const uint64_t kb = job->key_bytes;
	const uint64_t index = job->with_index ? n * 2 * sizeof(uint32_t) : 0;

	switch (job->kind)
	{
		case GS_JOB_ROWS:
			/* the rows twice while they are laid out in order */
			return 2 * job->capacity_bytes + n * GS_ROWS_BYTES_PER_RECORD + GS_JOB_OVERHEAD_BYTES;
		case GS_JOB_MINMAX:
			return n * sizeof(uint64_t) + GS_JOB_OVERHEAD_BYTES;
		case GS_JOB_APPROX:
			/* the quantile mode: 2m - 1 buckets, and its sample twice (at
			 * most n / 4 keys of 8 bytes) with CUB's scratch */
			return 3 * n * kb + index + (uint64_t) job->intervals * 16 +
				(job->approx_mode != 0 ? (uint64_t) job->intervals * 16 + 5 * n : 0) +
				GS_JOB_OVERHEAD_BYTES;
		default:
			if (job->algorithm == GS_WIRE_RADIX)
				return 2 * n * kb + index + n * kb / 2 + GS_JOB_OVERHEAD_BYTES;
			if (!job->with_index)
				return gs_next_power_of_two(n) * kb + GS_JOB_OVERHEAD_BYTES;
			return n * (kb + sizeof(uint32_t)) + gs_next_power_of_two(n) * 16 +
				GS_JOB_OVERHEAD_BYTES;
	}
}

/* The most record bytes a rows job may ask room for (capacity_bytes) so
 * that gs_job_gpu_bytes() counts it within `gpu_bytes`, none of its records
 * under `min_record_bytes` bytes: that function solved for the capacity. */
static inline uint64_t
gs_rows_capacity_within(uint64_t gpu_bytes, uint64_t min_record_bytes)
{
	uint64_t	room = gpu_bytes > GS_JOB_OVERHEAD_BYTES ? gpu_bytes - GS_JOB_OVERHEAD_BYTES : 0;

	if (min_record_bytes == 0)
		min_record_bytes = 1;
	return (uint64_t) ((double) room /
					   (2.0 + (double) GS_ROWS_BYTES_PER_RECORD / (double) min_record_bytes));
}

/* Sends one whole message on `fd`, with a descriptor (SCM_RIGHTS) if
 * pass_fd >= 0: how both sides frame what they say. */
static inline bool
gs_send_message(int fd, gs_message *message, int pass_fd)
{
	struct iovec iov = {message, sizeof(*message)};
	struct msghdr header;
	char		control[CMSG_SPACE(sizeof(int))];

	message->magic = GS_SERVICE_MAGIC;
	memset(&header, 0, sizeof(header));
	header.msg_iov = &iov;
	header.msg_iovlen = 1;
	if (pass_fd >= 0)
	{
		struct cmsghdr *cmsg;

		memset(control, 0, sizeof(control));
		header.msg_control = control;
		header.msg_controllen = sizeof(control);
		cmsg = CMSG_FIRSTHDR(&header);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cmsg), &pass_fd, sizeof(int));
	}
	for (;;)
	{
		ssize_t		sent = sendmsg(fd, &header, MSG_NOSIGNAL);

		if (sent == (ssize_t) sizeof(*message))
			return true;
		if (sent < 0 && errno == EINTR)
			continue;
		return false;
	}
}

/* Whether [offset, offset + length) lies within `size` bytes, without
 * overflow. */
static inline int
gs_range_within(uint64_t offset, uint64_t length, uint64_t size)
{
	return offset <= size && length <= size - offset;
}

#endif							/* GPUSORT_SERVICE_PROTOCOL_H */
