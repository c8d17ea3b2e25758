/*
 * gpud.c — gpusort-gpud, the GPU service's CUDA process: one per GPU,
 * started and restarted by the service's background worker (worker.c).
 *
 * It owns the GPU: the CUDA context, the staging area (a memfd, page-locked
 * here, handed to every backend that connects), the GPU memory budget and
 * the queue of jobs waiting for it. Backends speak protocol.h to it over a
 * Unix socket; each connection gets a thread that admits, runs and answers
 * one job. It runs no PostgreSQL code and does not map PostgreSQL's shared
 * memory, so if it dies (kill -9, a segfault, a GPU fault) only its own jobs
 * are lost: the worker starts it again, and backends sort those jobs on the
 * CPU under gpusort.device = auto.
 *
 * Admission is first come, first served: a job is admitted with its slot of
 * the staging area and its share of the GPU budget together, never one
 * without the other, and a running sort never waits for anything, so sorts
 * waiting in the queue cannot deadlock. A rows job (and a connection
 * attached to a shared one, which holds a slot but no budget) lives as
 * long as its client's query: it asks for admission without waiting, so
 * that it never holds the queue up, but its client may still submit other
 * jobs (the sorts of runs in files) while it holds its slot. A job that
 * would not fit even in an idle service is refused at once; one that waits
 * longer than the client allows is refused with GS_REFUSED_QUEUE_TIMEOUT.
 * Waits sleep on poll(2): the client's socket (a cancel) and an eventfd
 * (the grant).
 *
 * A sorted rows job whose client asks for nothing for
 * ROWS_IDLE_GIVE_BACK_MS, while the first job in the queue waits for GPU
 * memory that the rows job's would make enough, gives its memory back: its
 * rows go, in order, to an unnamed temporary file in the directory its
 * client named (its temporary tablespace's), unless they are more than the
 * client's temp_file_limit, and its client reads them from there as before
 * (a client that reads slowly, a cursor fetched now and then).
 *
 * A GPU failure (GPU_FAILED) may leave the context unusable, so the process
 * answers the job and then exits with GPUD_EXIT_DEVICE_FAULT; the worker
 * restarts it, and marks the GPU unusable if that keeps happening.
 *
 * Test mode: with GPUSORT_SERVICE_EMULATE=<MB> in its environment the
 * process plays a GPU of that much memory with the CPU engine (so CI, which
 * has no GPU, tests the whole service); GPUSORT_SERVICE_EMULATE_GPUS sets
 * how many such GPUs there are, GPUSORT_SERVICE_EMULATE_DELAY_MS makes every
 * job take at least that long (queueing and cancellation tests).
 */
#define _GNU_SOURCE
#include "protocol.h"
#include "../engine/gpusort_engine.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define GPUD_EXIT_USAGE 2

/* Slots are carved out of the staging area at this alignment. */
#define SLOT_ALIGN 4096
/* A chunked job moves through a slot of this much (or the whole area). */
#define CHUNK_SLOT_BYTES ((uint64_t) 64 << 20)
/* Every job is counted for this much GPU memory beyond its buffers
 * (temporary storage, alignment, the allocator's granularity). */
#define JOB_OVERHEAD_BYTES ((uint64_t) 16 << 20)
#define MAX_SLOTS 4096
/* A sorted rows job idle this long while another job waits for GPU memory
 * gives its memory back (see the header); its rows go to the file through
 * a buffer of this size. */
#define ROWS_IDLE_GIVE_BACK_MS 200
#define GIVE_BACK_BUFFER_BYTES ((uint64_t) 16 << 20)

static struct
{
	const char *socket_name;
	int			gpu_index;
	char		build[64];
	uint64_t	staging_bytes;
	uint64_t	budget_bytes;
	uint64_t	generation;
	gpu_device_info device;
	bool		emulated;
	unsigned	emulate_delay_ms;
	char	   *staging;
	int			staging_fd;
} service;

static void
log_line(const char *format,...)
{
	char		line[1024];
	va_list		args;

	va_start(args, format);
	vsnprintf(line, sizeof(line), format, args);
	va_end(args);
	fprintf(stderr, "gpusort-gpud[%d] GPU %d: %s\n", (int) getpid(), service.gpu_index, line);
	fflush(stderr);
}

/* ------------------------------------------------------------------------
 * Admission: the staging area and the GPU budget, granted first come,
 * first served
 * ------------------------------------------------------------------------ */

typedef struct Waiter
{
	uint64_t	slot_bytes;
	uint64_t	gpu_bytes;
	int			event_fd;		/* written once the job is granted */
	bool		granted;
	uint64_t	slot_offset;
	struct Waiter *next;
} Waiter;

typedef struct Slot
{
	uint64_t	offset;
	uint64_t	bytes;
} Slot;

static pthread_mutex_t admission_lock = PTHREAD_MUTEX_INITIALIZER;
static Slot slots[MAX_SLOTS];	/* taken slots, by offset */
static int	nslots = 0;
static uint64_t budget_used = 0;
static Waiter *queue_head = NULL;
static Waiter *queue_tail = NULL;

/* First fit in the staging area for `bytes` (a multiple of SLOT_ALIGN);
 * false when no gap is large enough. */
static bool
slot_take(uint64_t bytes, uint64_t *offset)
{
	uint64_t	start = 0;
	int			i;

	if (nslots == MAX_SLOTS)
		return false;
	for (i = 0; i <= nslots; i++)
	{
		uint64_t	end = i < nslots ? slots[i].offset : service.staging_bytes;

		if (end >= start && end - start >= bytes)
			break;
		if (i < nslots)
			start = slots[i].offset + slots[i].bytes;
	}
	if (i > nslots)
		return false;
	memmove(&slots[i + 1], &slots[i], (nslots - i) * sizeof(Slot));
	slots[i].offset = start;
	slots[i].bytes = bytes;
	nslots++;
	*offset = start;
	return true;
}

static void
slot_give_back(uint64_t offset)
{
	for (int i = 0; i < nslots; i++)
		if (slots[i].offset == offset)
		{
			memmove(&slots[i], &slots[i + 1], (nslots - i - 1) * sizeof(Slot));
			nslots--;
			return;
		}
}

/* Grants waiting jobs in queue order while the first one fits. Lock held. */
static void
grant_waiters(void)
{
	while (queue_head != NULL)
	{
		Waiter	   *w = queue_head;
		uint64_t	one = 1;

		if (budget_used + w->gpu_bytes > service.budget_bytes ||
			!slot_take(w->slot_bytes, &w->slot_offset))
			return;
		budget_used += w->gpu_bytes;
		w->granted = true;
		queue_head = w->next;
		if (queue_head == NULL)
			queue_tail = NULL;
		if (write(w->event_fd, &one, sizeof(one)) < 0)
			log_line("eventfd write failed: %s", strerror(errno));
	}
}

static void
release(uint64_t slot_offset, uint64_t gpu_bytes)
{
	pthread_mutex_lock(&admission_lock);
	slot_give_back(slot_offset);
	budget_used -= gpu_bytes;
	grant_waiters();
	pthread_mutex_unlock(&admission_lock);
}

/* A rows job's GPU memory given back before the job ends (its slot stays). */
static void
release_budget(uint64_t gpu_bytes)
{
	pthread_mutex_lock(&admission_lock);
	budget_used -= gpu_bytes;
	grant_waiters();
	pthread_mutex_unlock(&admission_lock);
}

/* Whether the first job in the queue waits for GPU memory (not a slot)
 * that `held` bytes given back would make enough. */
static bool
job_waits_for(uint64_t held)
{
	bool		waits;

	pthread_mutex_lock(&admission_lock);
	waits = queue_head != NULL && queue_head->gpu_bytes > 0 &&
		budget_used + queue_head->gpu_bytes > service.budget_bytes &&
		budget_used - held + queue_head->gpu_bytes <= service.budget_bytes;
	pthread_mutex_unlock(&admission_lock);
	return waits;
}

/* Removes a waiter that gave up; true if it had been granted meanwhile
 * (then its grant must be released or used). Lock held. */
static bool
leave_queue(Waiter *w)
{
	Waiter	  **link = &queue_head;
	Waiter	   *previous = NULL;

	if (w->granted)
		return true;
	while (*link != NULL && *link != w)
	{
		previous = *link;
		link = &(*link)->next;
	}
	if (*link == w)
	{
		*link = w->next;
		if (queue_tail == w)
			queue_tail = previous;
	}
	/* whoever follows may fit now */
	grant_waiters();
	return false;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef enum
{
	ADMIT_GRANTED,
	ADMIT_TIMEOUT,
	ADMIT_CLIENT_GONE,
	ADMIT_FAILED
} admit_result;

/*
 * Waits for a slot and budget, watching the client's socket (a message or
 * EOF while waiting is a cancel) and the wait bound.
 */
static admit_result
admit(int client_fd, uint64_t slot_bytes, uint64_t gpu_bytes, int64_t wait_ms,
	  uint64_t *slot_offset, double *waited_ms)
{
	Waiter		w;
	double		start = now_ms();
	admit_result result = ADMIT_FAILED;

	memset(&w, 0, sizeof(w));
	w.slot_bytes = slot_bytes;
	w.gpu_bytes = gpu_bytes;
	w.event_fd = eventfd(0, EFD_CLOEXEC);
	if (w.event_fd < 0)
		return ADMIT_FAILED;

	pthread_mutex_lock(&admission_lock);
	if (queue_tail != NULL)
		queue_tail->next = &w;
	else
		queue_head = &w;
	queue_tail = &w;
	grant_waiters();
	pthread_mutex_unlock(&admission_lock);

	for (;;)
	{
		struct pollfd fds[2] = {{client_fd, POLLIN, 0}, {w.event_fd, POLLIN, 0}};
		int			timeout = -1;

		if (wait_ms >= 0)
		{
			double		left = wait_ms - (now_ms() - start);

			timeout = left > 0 ? (int) left + 1 : 0;
		}
		pthread_mutex_lock(&admission_lock);
		if (w.granted)
		{
			pthread_mutex_unlock(&admission_lock);
			result = ADMIT_GRANTED;
			break;
		}
		pthread_mutex_unlock(&admission_lock);

		int			ready = poll(fds, 2, timeout);

		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0 || (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
		{
			result = ready < 0 ? ADMIT_FAILED : ADMIT_CLIENT_GONE;
			break;
		}
		if (ready == 0)
		{
			result = ADMIT_TIMEOUT;
			break;
		}
	}

	if (result != ADMIT_GRANTED)
	{
		bool		granted;

		pthread_mutex_lock(&admission_lock);
		granted = leave_queue(&w);
		pthread_mutex_unlock(&admission_lock);
		if (granted && result == ADMIT_TIMEOUT)
			result = ADMIT_GRANTED;		/* it came in time after all */
		else if (granted)
			release(w.slot_offset, gpu_bytes);
	}
	close(w.event_fd);
	*slot_offset = w.slot_offset;
	*waited_ms = now_ms() - start;
	return result;
}

/* ------------------------------------------------------------------------
 * Jobs
 * ------------------------------------------------------------------------ */

static uint64_t
next_power_of_two(uint64_t n)
{
	uint64_t	p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/*
 * The GPU memory a job is counted for: its buffers as the kernels lay them
 * out (gpu_sort.cu, gpu_approx.cu), plus an allowance. The kernels enforce
 * the per-sort cap themselves; this keeps the jobs admitted together within
 * the budget.
 */
static uint64_t
estimate_gpu_bytes(const gs_message *job)
{
	const uint64_t n = job->n;
	const uint64_t kb = job->key_bytes;
	const uint64_t index = job->with_index ? n * 2 * sizeof(uint32_t) : 0;

	switch (job->kind)
	{
		case GS_JOB_ROWS:
			/* the rows twice while they are laid out in order, their
			 * offsets, and the sort of their keys with its row index */
			return 2 * job->capacity_bytes + n * (3 * sizeof(uint64_t)) +
				n * (2 * sizeof(uint64_t) + 2 * sizeof(uint32_t)) + JOB_OVERHEAD_BYTES;
		case GS_JOB_MINMAX:
			return n * sizeof(uint64_t) + JOB_OVERHEAD_BYTES;
		case GS_JOB_APPROX:
			return 3 * n * kb + index + (uint64_t) job->intervals * 16 + JOB_OVERHEAD_BYTES;
		default:
			if (job->algorithm == GPU_ALGO_RADIX)
				return 2 * n * kb + index + n * kb / 2 + JOB_OVERHEAD_BYTES;
			if (!job->with_index)
				return next_power_of_two(n) * kb + JOB_OVERHEAD_BYTES;
			return n * (kb + sizeof(uint32_t)) + next_power_of_two(n) * 16 + JOB_OVERHEAD_BYTES;
	}
}

/* The job's poll function: any message from the client, or its leaving,
 * cancels the job. */
static bool
client_cancelled(void *arg)
{
	int			fd = *(int *) arg;
	char		byte;
	ssize_t		got = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);

	return got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static gs_algorithm
engine_algorithm(uint32_t algorithm)
{
	return algorithm == GPU_ALGO_BITONIC ? GS_ALGO_BITONIC :
		algorithm == GPU_ALGO_BUTTERFLY ? GS_ALGO_BUTTERFLY : GS_ALGO_RADIX;
}

static gpu_status
gpu_status_of(gs_status status)
{
	switch (status)
	{
		case GS_OK:
			return GPU_OK;
		case GS_ERR_INTERRUPTED:
			return GPU_INTERRUPTED;
		case GS_ERR_INVALID_ARGUMENT:
			return GPU_INVALID;
		case GS_ERR_OUT_OF_MEMORY:
		case GS_ERR_GPU_OUT_OF_MEMORY:
			return GPU_OUT_OF_MEMORY;
		default:
			return GPU_FAILED;
	}
}

/* The test mode's "GPU": the CPU engine, after the configured delay. */
static gpu_status
run_emulated(gs_message *job, char *area, int *client_fd, gs_message *done)
{
	gs_sort_request request;
	gs_sort_report report;
	double		until = now_ms() + service.emulate_delay_ms;
	gs_status	status;

	while (now_ms() < until)
	{
		struct timespec pause = {0, 2 * 1000 * 1000};

		if (client_cancelled(client_fd))
			return GPU_INTERRUPTED;
		nanosleep(&pause, NULL);
	}
	if (job->memory_limit > 0 && estimate_gpu_bytes(job) > job->memory_limit)
	{
		snprintf(done->message, sizeof(done->message),
				 "the sort needs %llu MB of GPU memory, over the limit of %llu MB "
				 "(gpusort.gpu_memory_limit)",
				 (unsigned long long) (estimate_gpu_bytes(job) >> 20),
				 (unsigned long long) (job->memory_limit >> 20));
		return GPU_OUT_OF_MEMORY;
	}
	gs_sort_request_init(&request);
	request.device = GS_DEVICE_CPU;
	request.poll = client_cancelled;
	request.poll_arg = client_fd;
	if (job->kind == GS_JOB_MINMAX)
	{
		gs_sort_request_set_keys(&request, area, job->n, 8, 64, NULL);
		status = gs_minmax(&request, &done->min_key, &done->max_key, &report);
		return gpu_status_of(status);
	}
	gs_sort_request_set_keys(&request, area, job->n, job->key_bytes, job->key_bits,
							 job->with_index ?
							 (uint32_t *) (area + gs_job_index_offset(job->n, job->key_bytes)) :
							 NULL);
	if (job->kind == GS_JOB_APPROX)
	{
		request.algorithm = GS_ALGO_APPROX;
		request.intervals = job->intervals;
		request.limit = job->limit;
	}
	else
		request.algorithm = engine_algorithm(job->algorithm);
	status = gs_sort(&request, &report);
	if (status == GS_OK && job->kind == GS_JOB_APPROX)
	{
		done->valid_outputs = report.valid_outputs;
		done->min_key = report.interval_map.min_key;
		done->max_key = report.interval_map.min_key + report.interval_map.range;
	}
	done->timing.sort_ms = (float) service.emulate_delay_ms;
	return gpu_status_of(status);
}

/* Runs the job on the data in `area`, filling `done`. */
static gpu_status
run_job(gs_message *job, char *area, int *client_fd, gs_message *done)
{
	uint32_t   *row_index = job->with_index ?
		(uint32_t *) (area + gs_job_index_offset(job->n, job->key_bytes)) : NULL;
	gpu_status	status;

	if (service.emulated)
		return run_emulated(job, area, client_fd, done);
	if (job->kind == GS_JOB_MINMAX)
		return gpu_minmax((const uint64_t *) area, job->n, &done->min_key, &done->max_key,
						  &done->timing);
	if (job->kind == GS_JOB_APPROX)
	{
		gpu_approx_job approx;

		memset(&approx, 0, sizeof(approx));
		approx.n = job->n;
		approx.key_bytes = job->key_bytes;
		approx.keys = area;
		approx.row_index = row_index;
		approx.intervals = job->intervals;
		approx.limit = job->limit;
		approx.memory_limit = job->memory_limit;
		approx.poll = client_cancelled;
		approx.poll_arg = client_fd;
		status = gpu_approx_sort(&approx, &done->timing);
		done->valid_outputs = approx.valid_outputs;
		done->min_key = approx.min_key;
		done->max_key = approx.max_key;
		return status;
	}

	gpu_sort_job sort;

	memset(&sort, 0, sizeof(sort));
	sort.n = job->n;
	sort.key_bytes = job->key_bytes;
	sort.key_bits = job->key_bits;
	sort.keys = area;
	sort.row_index = row_index;
	sort.algorithm = (gpu_algorithm) job->algorithm;
	sort.memory_limit = job->memory_limit;
	sort.poll = client_cancelled;
	sort.poll_arg = client_fd;
	return gpu_sort(&sort, &done->timing);
}

/* ------------------------------------------------------------------------
 * Connections
 * ------------------------------------------------------------------------ */

static bool
send_message(int fd, gs_message *message, int pass_fd)
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

/* A whole message, or false at EOF or on a malformed one. */
static bool
receive_message(int fd, gs_message *message)
{
	for (;;)
	{
		ssize_t		got = recv(fd, message, sizeof(*message), 0);

		if (got < 0 && errno == EINTR)
			continue;
		return got == (ssize_t) sizeof(*message) && message->magic == GS_SERVICE_MAGIC;
	}
}

static void
refuse(int fd, gs_refusal refusal, double queue_ms, const char *format,...)
{
	gs_message	reply;
	va_list		args;

	memset(&reply, 0, sizeof(reply));
	reply.type = GS_MSG_REFUSED;
	reply.refusal = refusal;
	reply.queue_ms = queue_ms;
	va_start(args, format);
	vsnprintf(reply.message, sizeof(reply.message), format, args);
	va_end(args);
	send_message(fd, &reply, -1);
}

static bool
valid_job(const gs_message *job)
{
	if (job->n == 0 || job->n >= UINT32_MAX)
		return false;
	if (job->kind == GS_JOB_MINMAX)
		return job->key_bytes == 8 && !job->with_index;
	if (job->kind == GS_JOB_ROWS)
		return job->capacity_bytes > 0 && job->capacity_bytes <= service.budget_bytes &&
			job->n <= INT32_MAX && job->nkeys >= 1 && job->nkeys <= GS_MAX_KEY_COLUMNS &&
			job->temp_dir[0] != '\0' &&
			memchr(job->temp_dir, '\0', sizeof(job->temp_dir)) != NULL &&
			job->temp_file_limit_bytes >= -1;
	if (job->kind != GS_JOB_SORT && job->kind != GS_JOB_APPROX)
		return false;
	if ((job->key_bytes != 4 && job->key_bytes != 8) || job->key_bits > job->key_bytes * 8)
		return false;
	if (job->kind == GS_JOB_APPROX)
		return job->intervals >= 1;
	return job->algorithm <= GPU_ALGO_RADIX;
}

static void
welcome(int fd)
{
	gs_message	reply;

	memset(&reply, 0, sizeof(reply));
	reply.type = GS_MSG_WELCOME;
	reply.protocol = GS_SERVICE_PROTOCOL;
	snprintf(reply.build, sizeof(reply.build), "%s", service.build);
	reply.device = service.device;
	reply.staging_bytes = service.staging_bytes;
	reply.budget_bytes = service.budget_bytes;
	reply.generation = service.generation;
	reply.emulated = service.emulated;
	send_message(fd, &reply, service.staging_fd);
}

/* Moves pieces of a chunked job's area through its slot until `until`
 * arrives (RUN after the input, EOF after the output). */
static bool
move_pieces(int fd, char *buffer, uint64_t area_bytes, char *slot, uint64_t slot_bytes,
			gs_message_type until)
{
	gs_message	message;

	for (;;)
	{
		if (!receive_message(fd, &message))
			return until == 0;
		if (message.type == until)
			return true;
		if ((message.type != GS_MSG_PUT && message.type != GS_MSG_GET) ||
			message.length > slot_bytes || message.offset > area_bytes ||
			message.length > area_bytes - message.offset)
			return false;
		if (message.type == GS_MSG_PUT)
			memcpy(buffer + message.offset, slot, message.length);
		else
			memcpy(slot, buffer + message.offset, message.length);
		message.type = GS_MSG_ACK;
		if (!send_message(fd, &message, -1))
			return false;
	}
}

/* ------------------------------------------------------------------------
 * Rows jobs: a spilled sort's rows, held until the client that opened the
 * job closes; a shared job also takes batches from attached connections
 * ------------------------------------------------------------------------ */

/* A rows job's slot: records move through it a batch at a time. */
#define ROWS_SLOT_BYTES ((uint64_t) 16 << 20)

/* A rows job's (or attached connection's) slot: ROWS_SLOT_BYTES, or a
 * quarter of a small staging area. */
static uint64_t
rows_slot_bytes(void)
{
	uint64_t	bytes = service.staging_bytes / 4 < ROWS_SLOT_BYTES ?
		service.staging_bytes / 4 : ROWS_SLOT_BYTES;

	return bytes / SLOT_ALIGN * SLOT_ALIGN;
}

/* ADMITTED: the job's slot (moved through in pieces when chunked), the GPU
 * memory it is counted for, and a shared rows job's token (else 0). */
static bool
send_admitted(int fd, const gs_message *job, uint64_t slot_offset, uint64_t slot_bytes,
			  bool chunked, uint64_t gpu_bytes, double queue_ms, uint64_t token)
{
	gs_message	reply = *job;

	reply.type = GS_MSG_ADMITTED;
	reply.slot_offset = slot_offset;
	reply.slot_bytes = slot_bytes;
	reply.chunked = chunked;
	reply.estimate_bytes = gpu_bytes;
	reply.queue_ms = queue_ms;
	reply.token = token;
	return send_message(fd, &reply, -1);
}

typedef struct RowsJob
{
	gs_message	submit;
	/* appends, the sort and reads take the lock: attached connections'
	 * threads append to a shared job concurrently */
	pthread_mutex_t lock;
	bool		closed;			/* the opener left: the memory is gone */
	gpu_rows   *device;			/* the records on the GPU, or (emulated) */
	char	   *host;			/* ... in this process's memory, or (given
								 * back, in order) */
	int			file;			/* ... in an unnamed temporary file; -1 */
	bool		give_back_failed;	/* (tried once: the disk, say) */
	uint64_t	used;			/* bytes held */
	uint64_t	n;				/* records held */
	uint64_t	allocated;		/* records the arrays below have room for */
	uint32_t   *lengths;		/* each record's bytes, one after another */
	uint64_t   *column_keys[GS_MAX_KEY_COLUMNS];
	bool	   *column_nulls[GS_MAX_KEY_COLUMNS];
	gs_key_column columns[GS_MAX_KEY_COLUMNS];
	bool		sorted;
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
	for (int k = 0; k < GS_MAX_KEY_COLUMNS; k++)
	{
		free(rows->column_keys[k]);
		rows->column_keys[k] = NULL;
		free(rows->column_nulls[k]);
		rows->column_nulls[k] = NULL;
	}
	rows->allocated = 0;
}

/* The records, wherever they are: GPU, host memory or file. */
static void
rows_job_free_records(RowsJob *rows)
{
	gpu_rows_destroy(rows->device);
	rows->device = NULL;
	free(rows->host);
	rows->host = NULL;
	if (rows->file >= 0)
		close(rows->file);
	rows->file = -1;
}

/* Frees what the job holds (not the job): under its lock, or alone. */
static void
rows_job_free_memory(RowsJob *rows)
{
	rows_job_free_records(rows);
	rows_job_free_keys(rows);
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
	rows_job_free_memory(rows);
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

/* realloc that keeps the old block when it fails (rows_job_free_memory
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
			bool		is_null = record[sizeof(uint32_t) + nkeys * sizeof(uint64_t) + k] != 0;

			memcpy(&key, record + sizeof(uint32_t) + k * sizeof(uint64_t), sizeof(key));
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
	if (rows->host != NULL)
		memcpy(rows->host + rows->used, slot, length);
	else
	{
		gpu_status	status = gpu_rows_append(rows->device, slot, length);

		if (status != GPU_OK)
		{
			rows->n = first;
			snprintf(message, message_size, "%s", gpu_last_error());
			return status;
		}
	}
	rows->used += length;
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
	/* page-locked where it can be: permute uploads it */
	bool		order_pinned = false;
	uint32_t   *order = gs_host_buffer_alloc(rows->n * sizeof(uint32_t),
											 rows->host == NULL, &order_pinned);

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
	 * memory), this process's CPU does */
	settings.device = service.emulated ? GS_DEVICE_CPU : GS_DEVICE_AUTO;
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
	if (rows->host != NULL)
	{
		/* (emulated) the records' offsets are the sums of the lengths
		 * before them, as gpu_rows_permute() finds them */
		char	   *ordered = malloc(rows->used > 0 ? rows->used : 1);
		uint64_t   *offsets = malloc((rows->n > 0 ? rows->n : 1) * sizeof(uint64_t));
		uint64_t	position = 0;

		if (ordered == NULL || offsets == NULL)
		{
			snprintf(done->message, sizeof(done->message), "the service is out of host memory");
			free(ordered);
			free(offsets);
			gs_host_buffer_free(order, order_pinned);
			return GPU_OUT_OF_MEMORY;
		}
		for (uint64_t i = 0; i < rows->n; i++)
		{
			offsets[i] = position;
			position += rows->lengths[i];
		}
		position = 0;
		for (uint64_t i = 0; i < rows->n; i++)
		{
			memcpy(ordered + position, rows->host + offsets[order[i]], rows->lengths[order[i]]);
			position += rows->lengths[order[i]];
		}
		free(offsets);
		free(rows->host);
		rows->host = ordered;
	}
	else
	{
		gpu_timing	permute;

		memset(&permute, 0, sizeof(permute));
		status = gpu_rows_permute(rows->device, order, rows->lengths, rows->n, &permute);
		if (status != GPU_OK)
			snprintf(done->message, sizeof(done->message), "%s", gpu_last_error());
		done->timing.upload_ms += permute.upload_ms;
		done->timing.sort_ms += permute.sort_ms;
	}
	gs_host_buffer_free(order, order_pinned);
	if (status == GPU_OK)
	{
		rows->sorted = true;
		done->valid_outputs = rows->n;
		rows_job_free_keys(rows);	/* the records are in order now */
	}
	return status;
}

/* Reads bytes [offset, offset + length) of the ordered records into the
 * slot; the message says why not. */
static gpu_status
rows_job_read(RowsJob *rows, char *slot, uint64_t offset, uint64_t length,
			  char *message, size_t message_size)
{
	gpu_status	status = GPU_OK;

	if (rows->file >= 0)
	{
		for (uint64_t done = 0; done < length;)
		{
			ssize_t		got = pread(rows->file, slot + done, length - done,
									(off_t) (offset + done));

			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
			{
				snprintf(message, message_size,
						 "the service could not read back the rows it moved to a file: %s",
						 got < 0 ? strerror(errno) : "the file is short");
				return GPU_INVALID;
			}
			done += (uint64_t) got;
		}
	}
	else if (rows->host != NULL)
		memcpy(slot, rows->host + offset, length);
	else if ((status = gpu_rows_read(rows->device, offset, slot, length)) != GPU_OK)
		snprintf(message, message_size, "%s", gpu_last_error());
	return status;
}

/* Writes all of `length` bytes, or says why not. */
static bool
write_all(int file, const char *data, uint64_t length, char *message, size_t message_size)
{
	while (length > 0)
	{
		ssize_t		written = write(file, data, length);

		if (written < 0 && errno == EINTR)
			continue;
		if (written <= 0)
		{
			snprintf(message, message_size, "%s",
					 written < 0 ? strerror(errno) : "nothing written");
			return false;
		}
		data += written;
		length -= (uint64_t) written;
	}
	return true;
}

/* An unnamed file in directory `dir` (made if missing), or -1. */
static int
open_unnamed_file(const char *dir, char *message, size_t message_size)
{
	char		path[1100];
	int			file;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
	{
		snprintf(message, message_size, "cannot make %s: %s", dir, strerror(errno));
		return -1;
	}
	file = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (file >= 0)
		return file;
	/* (a file system without O_TMPFILE: a named one, removed at once) */
	snprintf(path, sizeof(path), "%s/gpusort_gpud.XXXXXX", dir);
	file = mkostemp(path, O_CLOEXEC);
	if (file < 0)
	{
		snprintf(message, message_size, "cannot make a file in %s: %s", dir, strerror(errno));
		return -1;
	}
	unlink(path);
	return file;
}

/*
 * A sorted job gives its GPU memory back: every ordered record goes to an
 * unnamed temporary file, which the reads use from then on. False (the
 * memory kept, the reason logged) if the file cannot be written or would
 * pass the client's temp_file_limit. Under the job's lock.
 */
static bool
rows_job_give_back(RowsJob *rows)
{
	char		message[1200] = "";	/* (a directory's name, a reason) */
	uint64_t	buffer_bytes = rows->used < GIVE_BACK_BUFFER_BYTES ?
		rows->used : GIVE_BACK_BUFFER_BYTES;
	char	   *buffer = rows->host != NULL ? NULL : malloc(buffer_bytes > 0 ? buffer_bytes : 1);
	int			file = -1;
	bool		ok = rows->host != NULL || buffer != NULL;

	if (!ok)
		snprintf(message, sizeof(message), "out of host memory");
	if (ok && rows->submit.temp_file_limit_bytes >= 0 &&
		rows->used > (uint64_t) rows->submit.temp_file_limit_bytes)
	{
		snprintf(message, sizeof(message), "its %llu kB of rows exceed the client's "
				 "temp_file_limit (%lld kB)", (unsigned long long) (rows->used >> 10),
				 (long long) (rows->submit.temp_file_limit_bytes >> 10));
		ok = false;
	}
	if (ok)
		ok = (file = open_unnamed_file(rows->submit.temp_dir, message, sizeof(message))) >= 0;
	for (uint64_t offset = 0; ok && offset < rows->used;)
	{
		uint64_t	piece = rows->used - offset < GIVE_BACK_BUFFER_BYTES ?
			rows->used - offset : GIVE_BACK_BUFFER_BYTES;
		const char *data = rows->host + offset;

		if (rows->host == NULL)
		{
			ok = gpu_rows_read(rows->device, offset, buffer, piece) == GPU_OK;
			if (!ok)
				snprintf(message, sizeof(message), "%s", gpu_last_error());
			data = buffer;
		}
		ok = ok && write_all(file, data, piece, message, sizeof(message));
		offset += piece;
	}
	free(buffer);
	if (!ok)
	{
		log_line("a rows job idle for %d ms kept its GPU memory: %s", ROWS_IDLE_GIVE_BACK_MS,
				 message);
		if (file >= 0)
			close(file);
		rows->give_back_failed = true;
		return false;
	}
	rows_job_free_records(rows);
	rows->file = file;
	return true;
}

/*
 * The next message of a rows job's client. Meanwhile a sorted job whose
 * client asks for nothing gives its GPU memory back to a job that waits
 * for memory (*gpu_bytes becomes 0: the budget has it again).
 */
static bool
receive_rows_message(int fd, RowsJob *rows, uint64_t *gpu_bytes, gs_message *message)
{
	while (rows->sorted && *gpu_bytes > 0 && !rows->give_back_failed)
	{
		struct pollfd client = {fd, POLLIN, 0};
		int			ready = poll(&client, 1, ROWS_IDLE_GIVE_BACK_MS);
		bool		gave_back;

		if (ready < 0 && errno == EINTR)
			continue;
		if (ready != 0)
			break;				/* a message, or the client left */
		if (!job_waits_for(*gpu_bytes))
			continue;
		pthread_mutex_lock(&rows->lock);
		gave_back = rows_job_give_back(rows);
		pthread_mutex_unlock(&rows->lock);
		if (gave_back)
		{
			log_line("a rows job idle for %d ms gave its %llu MB of GPU memory to a waiting "
					 "job (its %llu MB of rows went to a temporary file)",
					 ROWS_IDLE_GIVE_BACK_MS, (unsigned long long) (*gpu_bytes >> 20),
					 (unsigned long long) (rows->used >> 20));
			release_budget(*gpu_bytes);
			*gpu_bytes = 0;
		}
	}
	return receive_message(fd, message);
}

/* A failure ends the connection with a DONE that says so; a GPU failure
 * then ends the process, as a failed sort does. */
static void
rows_job_failed(int fd, gpu_status status, gs_message *reply)
{
	reply->type = GS_MSG_DONE;
	reply->status = status;
	if (reply->message[0] == '\0')
		snprintf(reply->message, sizeof(reply->message), "%s",
				 service.emulated ? "the emulated GPU failed" : gpu_last_error());
	send_message(fd, reply, -1);
	if (status == GPU_FAILED && !service.emulated)
	{
		log_line("a GPU failure: %s; restarting the GPU's process", reply->message);
		exit(GPUD_EXIT_DEVICE_FAULT);
	}
}

/* A PUT of `records` records at `slot_position`: appended under the job's
 * lock, answered with the connection's totals. */
static gpu_status
rows_put(RowsJob *rows, const gs_message *message, char *slot, uint64_t slot_bytes,
		 uint64_t *records, uint64_t *bytes, gs_message *reply)
{
	gpu_status	status;

	if (message->slot_position > slot_bytes || message->length > slot_bytes - message->slot_position)
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
	return GPU_OK;
}

/*
 * An admitted rows job, to its end: its memory, ADMITTED (or REFUSED when
 * the memory cannot be had), PUTs until RUN, then GETs until the client
 * closes.
 */
static void
serve_rows(int fd, const gs_message *job, uint64_t slot_offset, uint64_t slot_bytes,
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
		return;
	}
	rows->submit = *job;
	rows->file = -1;
	rows->references = 1;
	pthread_mutex_init(&rows->lock, NULL);
	for (uint32_t k = 0; k < job->nkeys; k++)
		gs_key_column_init(&rows->columns[k], (job->descending_mask >> k) & 1,
						   (job->nulls_first_mask >> k) & 1);
	if (service.emulated ? (rows->host = malloc(job->capacity_bytes)) == NULL :
		gpu_rows_create(job->capacity_bytes, &rows->device) != GPU_OK)
	{
		refuse(fd, GS_REFUSED_OUT_OF_MEMORY, queue_ms,
			   "the service could not allocate %llu MB of %s memory for the rows: %s",
			   (unsigned long long) (job->capacity_bytes >> 20),
			   service.emulated ? "host" : "GPU", service.emulated ? "" : gpu_last_error());
		rows_job_release(rows);
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
				 message.slot_position <= slot_bytes &&
				 message.length <= slot_bytes - message.slot_position &&
				 message.offset <= rows->used && message.length <= rows->used - message.offset)
		{
			pthread_mutex_lock(&rows->lock);
			status = rows_job_read(rows, slot + message.slot_position, message.offset,
								   message.length, reply.message, sizeof(reply.message));
			pthread_mutex_unlock(&rows->lock);
			reply.type = GS_MSG_ACK;
			reply.offset = message.offset;
			reply.length = message.length;
			reply.given_back = rows->file >= 0;
		}
		else
			break;				/* out of turn, or a cancel: the job ends */
		if (status != GPU_OK)
			break;
		if (!send_message(fd, &reply, -1))
			break;
	}
	/* the memory goes now, whoever is still attached (their next PUT fails) */
	if (rows->token != 0)
		rows_job_unregister(rows);
	pthread_mutex_lock(&rows->lock);
	rows->closed = true;
	rows_job_free_memory(rows);
	pthread_mutex_unlock(&rows->lock);
	rows_job_release(rows);
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
		if (status == GPU_OK && !send_message(fd, &reply, -1))
			break;
	}
	if (status != GPU_OK)
		rows_job_failed(fd, status, &reply);
}

/* SUBMIT of an attach: the shared job by its token, a slot (never waited
 * for: files are the fallback), then its PUTs. */
static void
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
	switch (admit(fd, slot_bytes, 0, 0, &slot_offset, &queue_ms))
	{
		case ADMIT_GRANTED:
			serve_attached(fd, job, rows, slot_offset, slot_bytes, queue_ms);
			release(slot_offset, 0);
			break;
		case ADMIT_TIMEOUT:
			refuse(fd, GS_REFUSED_QUEUE_TIMEOUT, queue_ms, "no room in the staging area");
			break;
		default:
			break;
	}
	rows_job_release(rows);
}

static void *
serve_connection(void *arg)
{
	int			fd = (int) (intptr_t) arg;
	gs_message	message;
	gs_message	job;
	gs_message	done;
	uint64_t	area_bytes,
				slot_bytes,
				gpu_bytes,
				slot_offset = 0;
	double		queue_ms = 0;
	bool		chunked;
	char	   *buffer = NULL;
	gpu_status	status;

	/* HELLO: the same protocol and the same build, or nothing */
	if (!receive_message(fd, &message) || message.type != GS_MSG_HELLO)
		goto out;
	if (message.protocol != GS_SERVICE_PROTOCOL ||
		strncmp(message.build, service.build, sizeof(message.build)) != 0)
	{
		refuse(fd, GS_REFUSED_VERSION, 0,
			   "gpusort-gpud %s (protocol %d) cannot serve gpusort %.60s (protocol %u): "
			   "restart the server after installing a new version of gpusort",
			   service.build, GS_SERVICE_PROTOCOL, message.build, message.protocol);
		goto out;
	}
	welcome(fd);

	/* SUBMIT, or the connection was only a look (the worker's) */
	if (!receive_message(fd, &job) || job.type != GS_MSG_SUBMIT)
		goto out;
	if (!service.device.usable)
	{
		refuse(fd, GS_REFUSED_NO_GPU, 0, "%s", service.device.reason);
		goto out;
	}
	if (job.kind == GS_JOB_ROWS_ATTACH)
	{
		serve_attach(fd, &job);
		goto out;
	}
	if (!valid_job(&job))
	{
		refuse(fd, GS_REFUSED_BAD_REQUEST, 0, "invalid job");
		goto out;
	}
	area_bytes = gs_job_area_bytes(job.n, job.key_bytes, job.with_index);
	/* the slot holds the whole area, or (chunked) pieces of it; a rows job
	 * moves batches through a slot of its own size */
	chunked = job.kind != GS_JOB_ROWS &&
		area_bytes > service.staging_bytes / SLOT_ALIGN * SLOT_ALIGN;
	if (job.kind == GS_JOB_ROWS)
		slot_bytes = rows_slot_bytes();
	else if (chunked)
		slot_bytes = (service.staging_bytes < CHUNK_SLOT_BYTES ?
					  service.staging_bytes : CHUNK_SLOT_BYTES) / SLOT_ALIGN * SLOT_ALIGN;
	else
		slot_bytes = (area_bytes + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
	gpu_bytes = estimate_gpu_bytes(&job);
	if (gpu_bytes > service.budget_bytes)
	{
		refuse(fd, GS_REFUSED_TOO_LARGE, 0,
			   "the sort needs about %llu MB of GPU memory, more than the service's "
			   "budget of %llu MB (gpusort.service_memory_budget)",
			   (unsigned long long) (gpu_bytes >> 20),
			   (unsigned long long) (service.budget_bytes >> 20));
		goto out;
	}

	switch (admit(fd, slot_bytes, gpu_bytes, job.wait_ms, &slot_offset, &queue_ms))
	{
		case ADMIT_GRANTED:
			break;
		case ADMIT_TIMEOUT:
			refuse(fd, GS_REFUSED_QUEUE_TIMEOUT, queue_ms,
				   "waited %.0f ms for GPU memory (gpusort.queue_timeout)", queue_ms);
			goto out;
		default:
			goto out;
	}

	if (job.kind == GS_JOB_ROWS)
	{
		serve_rows(fd, &job, slot_offset, slot_bytes, &gpu_bytes, queue_ms);
		goto done_with_slot;
	}
	if (chunked && (buffer = malloc(area_bytes)) == NULL)
	{
		refuse(fd, GS_REFUSED_OUT_OF_MEMORY, queue_ms,
			   "the service could not allocate %llu MB of host memory for the job",
			   (unsigned long long) (area_bytes >> 20));
		release(slot_offset, gpu_bytes);
		goto out;
	}
	if (!send_admitted(fd, &job, slot_offset, slot_bytes, chunked, gpu_bytes, queue_ms, 0))
		goto done_with_slot;
	if (chunked)
	{
		if (!move_pieces(fd, buffer, area_bytes, service.staging + slot_offset, slot_bytes,
						 GS_MSG_RUN))
			goto done_with_slot;
	}
	else if (!receive_message(fd, &message) || message.type != GS_MSG_RUN)
		goto done_with_slot;

	memset(&done, 0, sizeof(done));
	done.type = GS_MSG_DONE;
	status = run_job(&job, chunked ? buffer : service.staging + slot_offset, &fd, &done);
	done.status = status;
	done.queue_ms = queue_ms;
	if (status != GPU_OK && done.message[0] == '\0')
		snprintf(done.message, sizeof(done.message), "%s",
				 service.emulated ? "the emulated GPU failed" : gpu_last_error());
	if (status != GPU_INTERRUPTED)
		send_message(fd, &done, -1);
	if (status == GPU_FAILED && !service.emulated)
	{
		log_line("a GPU failure: %s; restarting the GPU's process", done.message);
		exit(GPUD_EXIT_DEVICE_FAULT);
	}
	/* the client reads its results (pieces of them, when chunked), then
	 * closes: only then is the slot free */
	if (chunked)
		move_pieces(fd, buffer, area_bytes, service.staging + slot_offset, slot_bytes, 0);
	else
		while (receive_message(fd, &message))
			;

done_with_slot:
	release(slot_offset, gpu_bytes);
out:
	free(buffer);
	close(fd);
	return NULL;
}

/* ------------------------------------------------------------------------
 * Start-up
 * ------------------------------------------------------------------------ */

static void
usage(void)
{
	fprintf(stderr,
			"usage: gpusort-gpud --socket NAME --gpu-index N --staging-mb MB --budget-mb MB\n"
			"                    --build VERSION\n"
			"       gpusort-gpud --count    (prints how many GPUs it sees)\n"
			"Started by gpusort's background worker, not by hand.\n");
	exit(GPUD_EXIT_USAGE);
}

static unsigned
env_number(const char *name)
{
	const char *value = getenv(name);

	return value != NULL ? (unsigned) strtoul(value, NULL, 10) : 0;
}

static void
probe_device(void)
{
	unsigned	emulate_mb = env_number("GPUSORT_SERVICE_EMULATE");

	if (emulate_mb > 0)
	{
		gpu_device_info *d = &service.device;

		service.emulated = true;
		service.emulate_delay_ms = env_number("GPUSORT_SERVICE_EMULATE_DELAY_MS");
		memset(d, 0, sizeof(*d));
		d->usable = true;
		snprintf(d->name, sizeof(d->name), "emulated GPU %d (the CPU engine)", service.gpu_index);
		d->total_memory = d->free_memory = (size_t) emulate_mb << 20;
		d->compute_major = 9;
		return;
	}
	gpu_device_probe(&service.device);
}

static void
make_staging_area(void)
{
	service.staging_fd = memfd_create("gpusort-staging", MFD_CLOEXEC);
	if (service.staging_fd < 0 ||
		ftruncate(service.staging_fd, (off_t) service.staging_bytes) != 0)
	{
		log_line("cannot create the staging area (%llu MB): %s",
				 (unsigned long long) (service.staging_bytes >> 20), strerror(errno));
		exit(1);
	}
	service.staging = mmap(NULL, service.staging_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
						   service.staging_fd, 0);
	if (service.staging == MAP_FAILED)
	{
		log_line("cannot map the staging area: %s", strerror(errno));
		exit(1);
	}
	if (service.device.usable && !service.emulated &&
		gpu_host_register(service.staging, service.staging_bytes) != GPU_OK)
		log_line("the staging area stays pageable (slower copies): %s", gpu_last_error());
}

static int
listen_socket(void)
{
	struct sockaddr_un address;
	size_t		length = strlen(service.socket_name);
	int			fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	memset(&address, 0, sizeof(address));
	address.sun_family = AF_UNIX;
	if (fd < 0 || length + 1 >= sizeof(address.sun_path))
	{
		log_line("cannot make a socket: %s", strerror(errno));
		exit(1);
	}
	/* abstract namespace: sun_path[0] stays '\0' */
	memcpy(address.sun_path + 1, service.socket_name, length);
	if (bind(fd, (struct sockaddr *) &address,
			 (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + length)) != 0 ||
		listen(fd, 256) != 0)
	{
		log_line("cannot listen on @%s: %s", service.socket_name, strerror(errno));
		exit(1);
	}
	return fd;
}

int
main(int argc, char **argv)
{
	uint64_t	budget_mb = 0;
	int			listen_fd;

	service.gpu_index = -1;
	for (int i = 1; i < argc; i++)
	{
		const char *value = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], "--count") == 0)
		{
			int			count = 0;

			if (env_number("GPUSORT_SERVICE_EMULATE") > 0)
				count = env_number("GPUSORT_SERVICE_EMULATE_GPUS") > 0 ?
					(int) env_number("GPUSORT_SERVICE_EMULATE_GPUS") : 1;
			else if (gpu_device_count(&count) != GPU_OK || count == 0)
			{
				/* the probe words it best: no driver, too old a driver... */
				gpu_device_info info;

				gpu_device_probe(&info);
				printf("0 %s\n", info.reason[0] ? info.reason : "no CUDA-capable GPU found");
				return 0;
			}
			printf("%d\n", count);
			return 0;
		}
		if (value == NULL)
			usage();
		if (strcmp(argv[i], "--socket") == 0)
			service.socket_name = value;
		else if (strcmp(argv[i], "--gpu-index") == 0)
			service.gpu_index = atoi(value);
		else if (strcmp(argv[i], "--staging-mb") == 0)
			service.staging_bytes = strtoull(value, NULL, 10) << 20;
		else if (strcmp(argv[i], "--budget-mb") == 0)
			budget_mb = strtoull(value, NULL, 10);
		else if (strcmp(argv[i], "--build") == 0)
			snprintf(service.build, sizeof(service.build), "%s", value);
		else
			usage();
		i++;
	}
	if (service.socket_name == NULL || service.gpu_index < 0 || service.staging_bytes == 0 ||
		service.build[0] == '\0')
		usage();

	signal(SIGPIPE, SIG_IGN);
	service.generation = ((uint64_t) getpid() << 32) | (uint32_t) time(NULL);

	probe_device();				/* creates the CUDA context */
	if (service.device.usable)
		service.budget_bytes = budget_mb > 0 ? budget_mb << 20 :
			(uint64_t) service.device.total_memory / 10 * 9;
	make_staging_area();
	listen_fd = listen_socket();
	if (service.device.usable)
		log_line("ready: %s, %llu MB of GPU memory, budget %llu MB, staging %llu MB",
				 service.device.name,
				 (unsigned long long) (service.device.total_memory >> 20),
				 (unsigned long long) (service.budget_bytes >> 20),
				 (unsigned long long) (service.staging_bytes >> 20));
	else
		log_line("no usable GPU: %s", service.device.reason);

	for (;;)
	{
		struct ucred peer;
		socklen_t	peer_length = sizeof(peer);
		pthread_t	thread;
		pthread_attr_t attributes;
		int			fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0)
		{
			if (errno != EINTR && errno != ECONNABORTED)
				log_line("accept: %s", strerror(errno));
			continue;
		}
		/* only the server's own processes: the same user */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_length) != 0 ||
			peer.uid != geteuid())
		{
			close(fd);
			continue;
		}
		pthread_attr_init(&attributes);
		pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&thread, &attributes, serve_connection, (void *) (intptr_t) fd) != 0)
		{
			log_line("cannot start a thread: %s", strerror(errno));
			close(fd);
		}
		pthread_attr_destroy(&attributes);
	}
}
