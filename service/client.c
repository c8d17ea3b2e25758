/*
 * client.c — the backends' side of the GPU service. It implements
 * kernels/gpu_api.h, so the engine's "run it on the GPU" reaches the
 * service: the keys go into a slot of the service's staging area, the job
 * runs in gpusort-gpud, the results come back through the slot.
 *
 * A backend never starts CUDA. Whether a GPU is usable is read from shared
 * memory (the worker publishes it), so planning costs no GPU call at all.
 *
 * Each job is one connection (protocol.h). Waits sleep on the backend's
 * latch and the socket, so statement_timeout and pg_cancel_backend stop a
 * job at once: the client sends CANCEL and leaves; the service stops the
 * job, frees its GPU memory and slot. The caller's buffers are written only
 * after the job succeeded, so any failure (the service refusing, the GPU
 * failing, gpusort-gpud dying mid-job) leaves the input intact and the
 * engine can sort on the CPU instead (gpusort.device = auto).
 *
 * Nothing here raises an ERROR: failures are status codes with a message
 * (gpu_last_error()), as the kernels' own API promises.
 */
#include "postgres.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "access/xact.h"
#include "catalog/pg_tablespace_d.h"
#include "commands/tablespace.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/postmaster.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

#include "gpusort.h"
#include "service.h"

int			gpusort_queue_timeout_ms = 1000;

static char last_error[512] = "no GPU error";

/* The start of the last statement one of whose jobs waited out its time
 * in the service's queue (admission_wait_ms) */
static TimestampTz refused_statement = 0;

/* This backend's mapping of each GPU's staging area (the memfd it was
 * handed), kept while that gpusort-gpud lives. */
typedef struct StagingMapping
{
	uint64		generation;
	char	   *base;
	uint64		bytes;
	int			rows_jobs;		/* open rows jobs whose slot lies in it */
} StagingMapping;

static StagingMapping mappings[GS_SERVICE_MAX_GPUS];

/* Mappings of a staging area whose process has gone, kept while a rows
 * job of this backend still points into them (its reads then fail with
 * the connection, not on unmapped memory). */
#define MAX_RETIRED_MAPPINGS 16
static StagingMapping retired[MAX_RETIRED_MAPPINGS];

static void
set_error(const char *format,...)
pg_attribute_printf(1, 2);

static void
set_error(const char *format,...)
{
	va_list		args;

	va_start(args, format);
	vsnprintf(last_error, sizeof(last_error), format, args);
	va_end(args);
}

const char *
gpu_last_error(void)
{
	return last_error;
}

/* ------------------------------------------------------------------------
 * Statistics
 * ------------------------------------------------------------------------ */

/* A sort that did not run on the GPU although it could have: a fallback
 * under gpusort.device = auto (the CPU sorts it), an error under gpu. */
void
gpu_service_count_fallback(int gpu, GpuFallbackReason reason)
{
	if (gpu_service == NULL)
		return;
	if (gpusort_device == GS_DEVICE_GPU)
	{
		pg_atomic_fetch_add_u64(&gpu_service->counters.errors, 1);
		if (gpu >= 0)
			pg_atomic_fetch_add_u64(&gpu_service->gpus[gpu].counters.errors, 1);
		return;
	}
	pg_atomic_fetch_add_u64(&gpu_service->counters.fallbacks[reason], 1);
	if (gpu >= 0)
		pg_atomic_fetch_add_u64(&gpu_service->gpus[gpu].counters.fallbacks[reason], 1);
}

static void
count_job(int gpu, const gs_message *done, uint64 n, uint64 bytes)
{
	GpuServiceCounters *each[2] = {&gpu_service->counters, &gpu_service->gpus[gpu].counters};
	uint64		gpu_us = (uint64) ((done->timing.upload_ms + done->timing.sort_ms +
									done->timing.download_ms) * 1000.0);

	for (int i = 0; i < 2; i++)
	{
		pg_atomic_fetch_add_u64(&each[i]->jobs, 1);
		pg_atomic_fetch_add_u64(&each[i]->rows, n);
		pg_atomic_fetch_add_u64(&each[i]->bytes_moved, bytes);
		pg_atomic_fetch_add_u64(&each[i]->gpu_time_us, gpu_us);
	}
}

static void
count_queue_wait(int gpu, double queue_ms)
{
	/* under a millisecond is being admitted at once, not waiting */
	if (queue_ms < 1.0)
		return;
	pg_atomic_fetch_add_u64(&gpu_service->counters.queued_jobs, 1);
	pg_atomic_fetch_add_u64(&gpu_service->gpus[gpu].counters.queued_jobs, 1);
	pg_atomic_fetch_add_u64(&gpu_service->counters.queue_wait_us, (uint64) (queue_ms * 1000));
	pg_atomic_fetch_add_u64(&gpu_service->gpus[gpu].counters.queue_wait_us,
							(uint64) (queue_ms * 1000));
}

/* ------------------------------------------------------------------------
 * Which GPU, and whether any
 * ------------------------------------------------------------------------ */

static const char *
state_phrase(GpuServiceState state)
{
	switch (state)
	{
		case GPU_SERVICE_NOT_STARTED:
			return "has not started yet";
		case GPU_SERVICE_DISABLED:
			return "is disabled";
		case GPU_SERVICE_STARTING:
			return "is starting";
		case GPU_SERVICE_READY:
			return "is ready";
		case GPU_SERVICE_NO_GPU:
			return "found no usable GPU";
		case GPU_SERVICE_RESTARTING:
			return "is restarting";
		case GPU_SERVICE_FAILED:
			return "failed";
	}
	return "is in an unknown state";
}

/* Why no GPU is usable, in words a user can act on. */
static void
describe_unavailable(char *why, size_t size)
{
	GpuServiceState state;

	if (gpu_service == NULL)
	{
		snprintf(why, size, "the GPU service is not running: add gpusort to "
				 "shared_preload_libraries and restart the server");
		return;
	}
	SpinLockAcquire(&gpu_service->mutex);
	state = gpu_service->state;
	if (state == GPU_SERVICE_READY && gpu_service->ngpus > 0)
	{
		GpuServiceGpu *g = &gpu_service->gpus[0];

		state = g->state;
		if (g->reason[0] != '\0')
			snprintf(why, size, "the GPU service %s on GPU 0: %s",
					 state_phrase(state), g->reason);
		else
			snprintf(why, size, "the GPU service %s on GPU 0", state_phrase(state));
	}
	else if (gpu_service->reason[0] != '\0')
		snprintf(why, size, "the GPU service %s: %s", state_phrase(state),
				 gpu_service->reason);
	else
		snprintf(why, size, "the GPU service %s", state_phrase(state));
	SpinLockRelease(&gpu_service->mutex);
}

/* The usable GPU with the fewest jobs of backends now, taking turns among
 * equally loaded ones when `take_turn`; -1 if none. */
static int
choose_gpu(bool take_turn)
{
	int			best = -1;
	uint32		best_load = PG_UINT32_MAX;
	int			ngpus;
	uint32		start;

	if (gpu_service == NULL)
		return -1;
	ngpus = gpu_service->ngpus;
	if (ngpus <= 0)
		return -1;
	start = take_turn ? pg_atomic_fetch_add_u32(&gpu_service->next_gpu, 1) :
		pg_atomic_read_u32(&gpu_service->next_gpu);
	for (int k = 0; k < ngpus; k++)
	{
		int			gpu = (int) ((start + k) % ngpus);
		uint32		load;

		if (gpu_service->gpus[gpu].state != GPU_SERVICE_READY)
			continue;
		load = pg_atomic_read_u32(&gpu_service->gpus[gpu].in_flight);
		if (load < best_load)
		{
			best = gpu;
			best_load = load;
		}
	}
	return best;
}

gpu_status
gpu_device_probe(gpu_device_info *info)
{
	int			gpu;

	memset(info, 0, sizeof(*info));
	info->built_with_cuda = GPUSORT_WITH_CUDA;
	gpu = choose_gpu(false);
	if (gpu < 0)
	{
		describe_unavailable(info->reason, sizeof(info->reason));
		return GPU_OK;
	}
	SpinLockAcquire(&gpu_service->mutex);
	*info = gpu_service->gpus[gpu].device;
	SpinLockRelease(&gpu_service->mutex);
	info->built_with_cuda = GPUSORT_WITH_CUDA;
	return GPU_OK;
}

gpu_status
gpu_device_count(int *count)
{
	*count = 0;
	if (gpu_service != NULL)
		for (int gpu = 0; gpu < gpu_service->ngpus; gpu++)
			if (gpu_service->gpus[gpu].state == GPU_SERVICE_READY)
				(*count)++;
	return GPU_OK;
}

/* Backends have no page-locked memory of their own: the staging area is. */
gpu_status
gpu_host_alloc(size_t bytes, void **pointer)
{
	(void) bytes;
	*pointer = NULL;
	set_error("backends use the GPU service's staging area");
	return GPU_UNAVAILABLE;
}

void
gpu_host_free(void *pointer)
{
	(void) pointer;
}

gpu_status
gpu_host_register(void *pointer, size_t bytes)
{
	(void) pointer;
	(void) bytes;
	return GPU_UNAVAILABLE;
}

void
gpu_host_unregister(void *pointer)
{
	(void) pointer;
}

/* ------------------------------------------------------------------------
 * Talking to gpusort-gpud
 * ------------------------------------------------------------------------ */

typedef enum
{
	WAIT_OK,
	WAIT_CLOSED,				/* the service went away */
	WAIT_CANCELLED,				/* the poll function asked to stop */
	WAIT_TIMED_OUT
} wait_result;

static int
connect_to(int gpu)
{
	struct sockaddr_un address;
	char		name[64];
	size_t		length;
	int			fd;

	gs_service_socket_name(name, sizeof(name), (int) PostmasterPid, PostPortNumber, gpu);
	length = strlen(name);
	memset(&address, 0, sizeof(address));
	address.sun_family = AF_UNIX;
	memcpy(address.sun_path + 1, name, length);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *) &address,
				(socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + length)) != 0)
	{
		int			save_errno = errno;

		close(fd);
		errno = save_errno;
		return -1;
	}
	return fd;
}

static bool
send_message(int fd, gs_message *message, gs_message_type type)
{
	message->magic = GS_SERVICE_MAGIC;
	message->type = type;
	for (;;)
	{
		ssize_t		sent = send(fd, message, sizeof(*message), MSG_NOSIGNAL);

		if (sent == (ssize_t) sizeof(*message))
			return true;
		if (sent < 0 && errno == EINTR)
			continue;
		return false;
	}
}

/*
 * Receives one message, sleeping on the latch and the socket. `poll` (the
 * engine's cancel check) is asked after every wake-up; timeout_ms < 0 waits
 * without bound. A descriptor passed along (WELCOME) lands in *passed_fd.
 */
static wait_result
receive_message(int fd, gs_message *message, gpu_poll_fn poll, void *poll_arg,
				long timeout_ms, int *passed_fd)
{
	TimestampTz start = GetCurrentTimestamp();

	for (;;)
	{
		struct iovec iov = {message, sizeof(*message)};
		struct msghdr header;
		char		control[CMSG_SPACE(sizeof(int))];
		ssize_t		got;
		int			events;
		long		left = -1;

		memset(&header, 0, sizeof(header));
		header.msg_iov = &iov;
		header.msg_iovlen = 1;
		header.msg_control = control;
		header.msg_controllen = sizeof(control);
		got = recvmsg(fd, &header, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (got >= 0)
		{
			struct cmsghdr *cmsg = CMSG_FIRSTHDR(&header);

			if (cmsg != NULL && cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS)
			{
				int			received;

				memcpy(&received, CMSG_DATA(cmsg), sizeof(int));
				if (passed_fd != NULL && *passed_fd < 0)
					*passed_fd = received;
				else
					close(received);
			}
			if (got != (ssize_t) sizeof(*message) || message->magic != GS_SERVICE_MAGIC)
				return WAIT_CLOSED;
			return WAIT_OK;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return WAIT_CLOSED;

		if (timeout_ms >= 0)
		{
			long		secs;
			int			usecs;

			TimestampDifference(start, GetCurrentTimestamp(), &secs, &usecs);
			left = timeout_ms - (secs * 1000 + usecs / 1000);
			if (left <= 0)
				return WAIT_TIMED_OUT;
		}
		events = WaitLatchOrSocket(MyLatch,
								   WL_LATCH_SET | WL_SOCKET_READABLE | WL_EXIT_ON_PM_DEATH |
								   (left >= 0 ? WL_TIMEOUT : 0),
								   fd, left, PG_WAIT_EXTENSION);
		if (events & WL_LATCH_SET)
			ResetLatch(MyLatch);
		if (poll != NULL && poll(poll_arg))
			return WAIT_CANCELLED;
	}
}

/* Maps GPU `gpu`'s staging area if this backend has not yet, or if its
 * process is new since. Takes ownership of memfd. */
static bool
map_staging(int gpu, const gs_message *welcome, int memfd)
{
	StagingMapping *m = &mappings[gpu];

	if (m->base != NULL && m->generation == welcome->generation)
	{
		if (memfd >= 0)
			close(memfd);
		return true;
	}
	if (m->base != NULL && m->rows_jobs > 0)
	{
		int			i = 0;

		while (i < MAX_RETIRED_MAPPINGS && retired[i].base != NULL)
			i++;
		if (i < MAX_RETIRED_MAPPINGS)
			retired[i] = *m;	/* else left mapped for good */
	}
	else if (m->base != NULL)
		munmap(m->base, m->bytes);
	m->base = NULL;
	m->rows_jobs = 0;
	if (memfd < 0)
	{
		set_error("the GPU service did not pass its staging area");
		return false;
	}
	m->base = mmap(NULL, welcome->staging_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	close(memfd);
	if (m->base == MAP_FAILED)
	{
		m->base = NULL;
		set_error("cannot map the GPU service's staging area: %m");
		return false;
	}
	m->bytes = welcome->staging_bytes;
	m->generation = welcome->generation;
	return true;
}

/* HELLO and WELCOME; the connection stays open for a job. -1 on failure
 * (*why says what); -2 if `poll` (NULL: none) says the wait is cancelled. */
static int
open_session(int gpu, gs_message *welcome, int *memfd, char *why, size_t why_size,
			 gpu_poll_fn poll, void *poll_arg)
{
	gs_message	hello;
	int			fd = connect_to(gpu);
	wait_result result = WAIT_CLOSED;

	*memfd = -1;
	if (fd < 0)
	{
		snprintf(why, why_size, "cannot reach the GPU service's process for GPU %d: %m", gpu);
		return -1;
	}
	memset(&hello, 0, sizeof(hello));
	hello.protocol = GS_SERVICE_PROTOCOL;
	strlcpy(hello.build, GPUSORT_BUILD, sizeof(hello.build));
	if (!send_message(fd, &hello, GS_MSG_HELLO) ||
		(result = receive_message(fd, welcome, poll, poll_arg, 10000, memfd)) != WAIT_OK)
	{
		snprintf(why, why_size, "the GPU service's process for GPU %d did not answer", gpu);
		close(fd);
		return result == WAIT_CANCELLED ? -2 : -1;
	}
	if (welcome->type == GS_MSG_REFUSED)
	{
		snprintf(why, why_size, "%s", welcome->message);
		close(fd);
		return -1;
	}
	if (welcome->type != GS_MSG_WELCOME)
	{
		snprintf(why, why_size, "the GPU service's process for GPU %d answered out of turn", gpu);
		close(fd);
		return -1;
	}
	return fd;
}

bool
gpu_service_hello(int gpu, gs_message *welcome, char *why, size_t why_size)
{
	int			memfd;
	int			fd = open_session(gpu, welcome, &memfd, why, why_size, NULL, NULL);

	if (fd < 0)
		return false;
	if (memfd >= 0)
		close(memfd);
	close(fd);
	return true;
}

/* What the engine asked for, in one shape for the three kinds of job. */
typedef struct ClientJob
{
	gs_message	submit;
	void	   *keys;			/* in: keys; out: sorted keys */
	uint32_t   *row_index;		/* out, or NULL */
	gpu_poll_fn poll;
	void	   *poll_arg;
	bool		copied_back;	/* the caller's buffers hold the results */
	const char *short_wait;		/* why it may wait less than usual, or NULL */
} ClientJob;

/* Moves [offset, offset + length) of the area between `host` and the slot,
 * piece by piece (a chunked job). */
static wait_result
move_through_slot(int fd, ClientJob *job, char *slot, uint64 slot_bytes, bool put,
				  uint64 offset, uint64 length, char *host)
{
	for (uint64 done = 0; done < length;)
	{
		gs_message	message;
		uint64		piece = Min(slot_bytes, length - done);
		wait_result result;

		memset(&message, 0, sizeof(message));
		message.offset = offset + done;
		message.length = piece;
		if (put)
			memcpy(slot, host + done, piece);
		if (!send_message(fd, &message, put ? GS_MSG_PUT : GS_MSG_GET))
			return WAIT_CLOSED;
		result = receive_message(fd, &message, job->poll, job->poll_arg, -1, NULL);
		if (result != WAIT_OK)
			return result;
		if (message.type != GS_MSG_ACK)
			return WAIT_CLOSED;
		if (!put)
			memcpy(host + done, slot, piece);
		done += piece;
	}
	return WAIT_OK;
}

/*
 * What came back must be an answer to what went out: the first `count`
 * row numbers each below n and none twice, and an exact sort's keys in
 * order. Memory shared with another process is checked, not trusted: a
 * wrong permutation would make the executor return wrong rows.
 */
static bool
results_plausible(const ClientJob *job, uint64 count)
{
	uint64		n = job->submit.n;

	if (job->row_index != NULL)
	{
		uint64	   *seen = calloc((n + 63) / 64, sizeof(uint64));
		bool		ok = seen != NULL;

		for (uint64 i = 0; ok && i < count; i++)
		{
			uint32_t	row = job->row_index[i];

			if (row >= n || (seen[row / 64] >> (row % 64)) & 1)
				ok = false;
			else
				seen[row / 64] |= (uint64) 1 << (row % 64);
		}
		free(seen);
		if (!ok)
			return false;
	}
	if (job->submit.kind == GS_JOB_SORT)
		return gs_check_sorted(job->keys, job->submit.key_bytes, job->row_index, n);
	return true;
}

static gpu_status
status_of_refusal(const gs_message *refused, int gpu)
{
	switch ((gs_refusal) refused->refusal)
	{
		case GS_REFUSED_TOO_LARGE:
			gpu_service_count_fallback(gpu, FALLBACK_TOO_LARGE);
			return GPU_OUT_OF_MEMORY;
		case GS_REFUSED_QUEUE_TIMEOUT:
			gpu_service_count_fallback(gpu, FALLBACK_QUEUE_TIMEOUT);
			refused_statement = GetCurrentStatementStartTimestamp();
			return GPU_BUSY;
		case GS_REFUSED_OUT_OF_MEMORY:
			gpu_service_count_fallback(gpu, FALLBACK_TOO_LARGE);
			return GPU_OUT_OF_MEMORY;
		case GS_REFUSED_NO_GPU:
		case GS_REFUSED_VERSION:
			gpu_service_count_fallback(gpu, FALLBACK_NO_SERVICE);
			return GPU_UNAVAILABLE;
		case GS_REFUSED_BAD_REQUEST:
			return GPU_INVALID;
	}
	return GPU_FAILED;
}

/* One job, start to end, on `gpu`. */
static gpu_status
run_on_service(int gpu, ClientJob *job, gs_message *done)
{
	gs_message	message;
	char		why[256];
	int			memfd;
	int			fd;
	uint64		n = job->submit.n;
	uint64		key_area = n * job->submit.key_bytes;
	char	   *slot;
	wait_result result;

	fd = open_session(gpu, &message, &memfd, why, sizeof(why), job->poll, job->poll_arg);
	if (fd == -2)
	{
		set_error("the GPU sort was interrupted");
		return GPU_INTERRUPTED;
	}
	if (fd < 0)
	{
		set_error("%s", why);
		gpu_service_count_fallback(gpu, FALLBACK_SERVICE_LOST);
		return GPU_UNAVAILABLE;
	}
	if (!map_staging(gpu, &message, memfd))
	{
		close(fd);
		return GPU_UNAVAILABLE;
	}

	/* admission */
	message = job->submit;
	if (!send_message(fd, &message, GS_MSG_SUBMIT))
		goto lost;
	result = receive_message(fd, &message, job->poll, job->poll_arg, -1, NULL);
	if (result != WAIT_OK)
		goto wait_failed;
	if (message.type == GS_MSG_REFUSED)
	{
		if (message.refusal == GS_REFUSED_QUEUE_TIMEOUT && job->short_wait != NULL)
			set_error("%s; %s", message.message, job->short_wait);
		else
			set_error("%s", message.message);
		close(fd);
		count_queue_wait(gpu, message.queue_ms);
		done->queue_ms = message.queue_ms;
		return status_of_refusal(&message, gpu);
	}
	if (message.type != GS_MSG_ADMITTED ||
		message.slot_offset + message.slot_bytes > mappings[gpu].bytes)
		goto lost;
	count_queue_wait(gpu, message.queue_ms);
	slot = mappings[gpu].base + message.slot_offset;

	/* the keys in, the job run, the results out */
	if (message.chunked)
	{
		result = move_through_slot(fd, job, slot, message.slot_bytes, true, 0, key_area,
								   job->keys);
		if (result != WAIT_OK)
			goto wait_failed;
	}
	else
		memcpy(slot, job->keys, key_area);
	if (!send_message(fd, &message, GS_MSG_RUN))
		goto lost;
	{
		double		queue_ms = message.queue_ms;
		bool		chunked = message.chunked;
		uint64		slot_bytes = message.slot_bytes;

		result = receive_message(fd, done, job->poll, job->poll_arg, -1, NULL);
		if (result != WAIT_OK)
			goto wait_failed;
		if (done->type != GS_MSG_DONE)
			goto lost;
		done->queue_ms = queue_ms;
		if (done->status != GPU_OK)
		{
			set_error("%s", done->message);
			close(fd);
			if (done->status == GPU_OUT_OF_MEMORY)
				gpu_service_count_fallback(gpu, FALLBACK_TOO_LARGE);
			else if (done->status != GPU_INTERRUPTED)
				gpu_service_count_fallback(gpu, FALLBACK_GPU_ERROR);
			return (gpu_status) done->status;
		}
		if (job->submit.kind != GS_JOB_MINMAX)
		{
			uint64		index_offset = gs_job_index_offset(n, job->submit.key_bytes);

			job->copied_back = true;

			if (chunked)
			{
				result = move_through_slot(fd, job, slot, slot_bytes, false, 0, key_area,
										   job->keys);
				if (result == WAIT_OK && job->row_index != NULL)
					result = move_through_slot(fd, job, slot, slot_bytes, false, index_offset,
											   n * sizeof(uint32_t), (char *) job->row_index);
				if (result != WAIT_OK)
					goto wait_failed;
			}
			else
			{
				memcpy(job->keys, slot, key_area);
				if (job->row_index != NULL)
					memcpy(job->row_index, slot + index_offset, n * sizeof(uint32_t));
			}
		}
	}
	close(fd);
	if (job->submit.kind != GS_JOB_MINMAX &&
		!results_plausible(job, job->submit.kind == GS_JOB_APPROX ? done->valid_outputs : n))
	{
		set_error("the GPU service returned a sort that is not a permutation of the input");
		gpu_service_count_fallback(gpu, FALLBACK_GPU_ERROR);
		return GPU_FAILED;
	}
	count_job(gpu, done, n, key_area * 2 + (job->row_index ? n * sizeof(uint32_t) : 0));
	return GPU_OK;

wait_failed:
	if (result == WAIT_CANCELLED)
	{
		/* tell the service, and leave: it frees the job's memory itself */
		gs_message	cancel;

		memset(&cancel, 0, sizeof(cancel));
		send_message(fd, &cancel, GS_MSG_CANCEL);
		close(fd);
		set_error("the GPU sort was interrupted");
		return GPU_INTERRUPTED;
	}
lost:
	close(fd);
	gpu_service_count_fallback(gpu, FALLBACK_SERVICE_LOST);
	set_error("the GPU service's process for GPU %d ended during the sort (see the server log)",
			  gpu);
	return GPU_FAILED;
}

static gpu_status
run_job(ClientJob *job, gs_message *done, gpu_timing *timing)
{
	int			gpu;
	gpu_status	status;

	memset(done, 0, sizeof(*done));
	if (timing != NULL)
		memset(timing, 0, sizeof(*timing));
	/* nothing to sort: nothing to send (the service refuses empty jobs) */
	if (job->submit.n == 0)
		return GPU_OK;
	gpu = choose_gpu(true);
	if (gpu < 0)
	{
		char		why[256];

		describe_unavailable(why, sizeof(why));
		set_error("%s", why);
		gpu_service_count_fallback(-1, FALLBACK_NO_SERVICE);
		return GPU_UNAVAILABLE;
	}
	pg_atomic_fetch_add_u32(&gpu_service->gpus[gpu].in_flight, 1);
	status = run_on_service(gpu, job, done);
	pg_atomic_fetch_sub_u32(&gpu_service->gpus[gpu].in_flight, 1);
	if (timing != NULL)
	{
		if (status == GPU_OK)
			*timing = done->timing;
		timing->queue_ms = (float) done->queue_ms;
		timing->device_index = gpu;
	}
	return status;
}

static bool
cancel_requested(void *arg)
{
	(void) arg;
	return INTERRUPTS_PENDING_CONDITION() && INTERRUPTS_CAN_BE_PROCESSED() &&
		(QueryCancelPending || ProcDiePending);
}

/* Whether this backend holds a rows job: some sort's rows in the service. */
static bool
holds_rows_job(void)
{
	for (int gpu = 0; gpu < GS_SERVICE_MAX_GPUS; gpu++)
		if (mappings[gpu].rows_jobs > 0)
			return true;
	return false;
}

/*
 * How long a job may wait for admission: gpusort.device = gpu as long as
 * it takes (statement_timeout still applies), auto gpusort.queue_timeout
 * and then it sorts on the CPU. Where a wait could be for the waiter
 * itself, gpu waits no longer than auto:
 * - a backend holding a rows job: the memory or slot it waits for may be
 *   its own job's, or held by another backend that waits for this one's;
 * - a process of a parallel query: the slots may be held by the query's
 *   other processes, which wait on the Gather, which waits for this one.
 * Once a job of the statement has waited its time out, the statement's
 * later jobs do not wait at all.
 */
static int64
admission_wait_ms(const char **short_wait)
{
	bool		holding = holds_rows_job();

	*short_wait = NULL;
	if (refused_statement != 0 && refused_statement == GetCurrentStatementStartTimestamp())
	{
		*short_wait = "an earlier sort of this statement already waited its time";
		return 0;
	}
	if (gpusort_device != GS_DEVICE_GPU)
		return gpusort_queue_timeout_ms;
	if (!holding && !IsInParallelMode())
		return -1;
	*short_wait = holding ?
		"a query holding rows in the GPU service waits at most gpusort.queue_timeout for more" :
		"a parallel query's processes wait at most gpusort.queue_timeout";
	return gpusort_queue_timeout_ms;
}

static void
submit_init(ClientJob *job, gs_job_kind kind, size_t n, unsigned key_bytes, void *keys,
			uint32_t *row_index, size_t memory_limit, gpu_poll_fn poll, void *poll_arg)
{
	memset(job, 0, sizeof(*job));
	job->submit.kind = kind;
	job->submit.n = n;
	job->submit.key_bytes = key_bytes;
	job->submit.with_index = row_index != NULL;
	job->submit.memory_limit = memory_limit;
	job->submit.wait_ms = admission_wait_ms(&job->short_wait);
	job->keys = keys;
	job->row_index = row_index;
	job->poll = poll;
	job->poll_arg = poll_arg;
}

gpu_status
gpu_sort(gpu_sort_job *request, gpu_timing *timing)
{
	ClientJob	job;
	gs_message	done;
	gpu_status	status;

	request->host_data_touched = false;
	submit_init(&job, GS_JOB_SORT, request->n, request->key_bytes, request->keys,
				request->row_index, request->memory_limit, request->poll, request->poll_arg);
	job.submit.key_bits = request->key_bits;
	job.submit.algorithm = request->algorithm;
	status = run_job(&job, &done, timing);
	request->host_data_touched = job.copied_back && status != GPU_OK;
	return status;
}

gpu_status
gpu_approx_sort(gpu_approx_job *request, gpu_timing *timing)
{
	ClientJob	job;
	gs_message	done;
	gpu_status	status;

	request->host_data_touched = false;
	submit_init(&job, GS_JOB_APPROX, request->n, request->key_bytes, request->keys,
				request->row_index, request->memory_limit, request->poll, request->poll_arg);
	job.submit.key_bits = request->key_bytes * 8;
	job.submit.intervals = request->intervals;
	job.submit.limit = request->limit;
	status = run_job(&job, &done, timing);
	request->host_data_touched = job.copied_back && status != GPU_OK;
	if (status == GPU_OK)
	{
		request->valid_outputs = done.valid_outputs;
		request->min_key = done.min_key;
		request->max_key = done.max_key;
	}
	return status;
}

gpu_status
gpu_minmax(const uint64_t *keys, size_t n, uint64_t *min_key, uint64_t *max_key,
		   gpu_timing *timing)
{
	ClientJob	job;
	gs_message	done;
	gpu_status	status;

	/* gpu_minmax() takes no poll function: the job still stops for a
	 * cancel, through the one below */
	submit_init(&job, GS_JOB_MINMAX, n, 8, (void *) keys, NULL, 0, cancel_requested, NULL);
	job.submit.key_bits = 64;
	status = run_job(&job, &done, timing);
	if (status == GPU_OK)
	{
		*min_key = done.min_key;
		*max_key = done.max_key;
	}
	return status;
}

/* ------------------------------------------------------------------------
 * Rows jobs: a spilled sort's rows in the service's GPU memory
 * ------------------------------------------------------------------------ */

struct ServiceRows
{
	int			fd;
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
	bool		counted;		/* in the GPU's in_flight */
	bool		given_back;		/* the service gave its GPU memory back */
	char	   *mapping;		/* the staging mapping its slot lies in, or
								 * NULL */
	/* a shared job: the opener's token; an attached connection's room is
	 * granted from `room` a part at a time (capacity_bytes and max_records
	 * are then what it was granted so far) */
	uint64		token;
	uint64		generation;
	ServiceRowsShared *room;
};

/* An attached connection takes room for this much at a time. */
#define ROOM_GRANT_BYTES ((uint64) 16 << 20)

/* Ends the job: the service frees its memory when the connection closes. */
void
service_rows_close(ServiceRows *rows)
{
	if (rows == NULL || rows->fd < 0)
		return;
	close(rows->fd);
	rows->fd = -1;
	if (rows->counted)
		pg_atomic_fetch_sub_u32(&gpu_service->gpus[rows->gpu].in_flight, 1);
	rows->counted = false;
	if (rows->mapping != NULL && rows->mapping == mappings[rows->gpu].base)
		mappings[rows->gpu].rows_jobs--;
	else if (rows->mapping != NULL)
	{
		for (int i = 0; i < MAX_RETIRED_MAPPINGS; i++)
			if (retired[i].base == rows->mapping && --retired[i].rows_jobs == 0)
			{
				munmap(retired[i].base, retired[i].bytes);
				retired[i].base = NULL;
			}
	}
	rows->mapping = NULL;
}

/* A connection for a rows job, its staging area mapped; NULL (and *why).
 * A cancel while waiting for the service's WELCOME returns NULL at once:
 * the caller goes on without the job and its next interrupt check ends
 * the query. */
static ServiceRows *
connect_rows(int gpu, char *why, size_t why_size)
{
	ServiceRows *rows;
	gs_message	welcome;
	int			memfd;

	rows = palloc0(sizeof(ServiceRows));
	rows->gpu = gpu;
	rows->fd = open_session(gpu, &welcome, &memfd, why, why_size, cancel_requested, NULL);
	if (rows->fd < 0)
	{
		pfree(rows);
		return NULL;
	}
	rows->generation = welcome.generation;
	if (!map_staging(gpu, &welcome, memfd))
	{
		snprintf(why, why_size, "%s", last_error);
		service_rows_close(rows);
		return NULL;
	}
	pg_atomic_fetch_add_u32(&gpu_service->gpus[gpu].in_flight, 1);
	rows->counted = true;
	return rows;
}

/* Sends the SUBMIT in *message and takes the slot of its ADMITTED (left in
 * *message); false (the connection closed, and *why) otherwise. */
static bool
submit_rows(ServiceRows *rows, gs_message *message, char *why, size_t why_size)
{
	int			gpu = rows->gpu;

	if (!send_message(rows->fd, message, GS_MSG_SUBMIT) ||
		receive_message(rows->fd, message, cancel_requested, NULL, -1, NULL) != WAIT_OK)
	{
		snprintf(why, why_size, "the GPU service did not answer");
		service_rows_close(rows);
		return false;
	}
	if (message->type != GS_MSG_ADMITTED ||
		message->slot_offset + message->slot_bytes > mappings[gpu].bytes)
	{
		snprintf(why, why_size, "%s",
				 message->type == GS_MSG_REFUSED ? message->message :
				 "the GPU service answered out of turn");
		service_rows_close(rows);
		return false;
	}
	rows->slot = mappings[gpu].base + message->slot_offset;
	rows->slot_bytes = message->slot_bytes;
	rows->mapping = mappings[gpu].base;
	mappings[gpu].rows_jobs++;
	return true;
}

/*
 * Where the service may write a rows job's rows when it gives their GPU
 * memory back to a waiting job, and how much: as this backend's own
 * temporary files, in its next temporary tablespace (else its database's
 * default) and within its temp_file_limit.
 */
static void
give_back_file_limits(gs_message *message)
{
	Oid			tablespace;
	char		relative[MAXPGPATH];

	PrepareTempTablespaces();
	tablespace = GetNextTempTableSpace();
	if (!OidIsValid(tablespace))
		tablespace = OidIsValid(MyDatabaseTableSpace) ? MyDatabaseTableSpace : DEFAULTTABLESPACE_OID;
	TempTablespacePath(relative, tablespace);
	snprintf(message->temp_dir, sizeof(message->temp_dir), "%s/%s", DataDir, relative);
	message->temp_file_limit_bytes = temp_file_limit < 0 ? -1 : (int64) temp_file_limit * 1024;
}

/*
 * Asks for room for about `capacity_bytes` of records (less where a
 * quarter of the GPU's budget, or the per-sort cap with the service's
 * working space, is less), none under `min_record_bytes`.
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

	if (gpu < 0)
	{
		describe_unavailable(why, why_size);
		return NULL;
	}
	SpinLockAcquire(&gpu_service->mutex);
	budget = gpu_service->gpus[gpu].budget_bytes;
	SpinLockRelease(&gpu_service->mutex);
	/*
	 * The service counts the job for twice its rows and 48 bytes a record
	 * (offsets, the sort of the keys) beyond 16 MB: all that within a
	 * quarter of its budget and of the per-sort cap.
	 */
	{
		uint64		share = budget / 4;

		if (memory_limit > 0)
			share = Min(share, memory_limit);
		share = share > ((uint64) 16 << 20) ? share - ((uint64) 16 << 20) : 0;
		min_record_bytes = Max(min_record_bytes, 1);
		capacity_bytes = Min(capacity_bytes,
							 (uint64) ((double) share / (2.0 + 48.0 / min_record_bytes)));
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
	/* rows in the GPU's memory are a speed-up, never worth a wait */
	message.wait_ms = 0;
	give_back_file_limits(&message);
	if (!submit_rows(rows, &message, why, why_size))
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
	return rows;
}

/* What attached connections need to find a shared job (in the parallel
 * query's shared memory), with all of its room still free. */
void
service_rows_share(const ServiceRows *rows, ServiceRowsShared *into)
{
	memset(into, 0, sizeof(*into));
	into->gpu = rows->gpu;
	into->token = rows->token;
	into->generation = rows->generation;
	into->capacity_bytes = rows->capacity_bytes;
	into->max_records = rows->max_records;
	pg_atomic_init_u64(&into->bytes_taken, 0);
	pg_atomic_init_u64(&into->records_taken, 0);
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
	if (!submit_rows(rows, &message, why, why_size))
		return NULL;
	rows->token = shared->token;
	rows->room = shared;
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
		pg_atomic_fetch_sub_u64(&rows->room->bytes_taken, rows->capacity_bytes - rows->bytes);
		pg_atomic_fetch_sub_u64(&rows->room->records_taken, rows->max_records - rows->records);
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

/* The reply to a request, checked; false (why in gpu_last_error()) if the
 * service failed it, went away, or the backend was asked to stop. */
static bool
rows_reply(ServiceRows *rows, gs_message *reply, gs_message_type expected)
{
	wait_result result = receive_message(rows->fd, reply, cancel_requested, NULL, -1, NULL);

	if (result == WAIT_CANCELLED)
	{
		set_error("the GPU sort was interrupted");
		return false;
	}
	if (result != WAIT_OK)
		return rows_lost(rows);
	if (reply->type != expected || (expected == GS_MSG_DONE && reply->status != GPU_OK))
	{
		set_error("%s", reply->message[0] ? reply->message :
				  "the GPU service answered out of turn");
		pg_atomic_fetch_add_u64(&gpu_service->gpus[rows->gpu].counters.errors, 1);
		return false;
	}
	return true;
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
	if (pending == GS_MSG_PUT ?
		(message.records > rows->records || message.offset > rows->bytes) :
		(message.offset != rows->pending_offset || message.length != rows->pending_length))
	{
		set_error("the GPU service answered another request than the sort's");
		return false;
	}
	if (pending == GS_MSG_GET && message.given_back && !rows->given_back)
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
	if (!send_message(rows->fd, &message, type))
		return rows_lost(rows);
	rows->pending = type;
	rows->pending_offset = offset;
	rows->pending_length = length;
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
	if (!rows_request(rows, GS_MSG_PUT, slot_position, bytes, records, 0))
		return false;
	rows->records += records;
	rows->bytes += bytes;
	return true;
}

/*
 * Asks for bytes [offset, offset + length) of the ordered rows at
 * `slot_position` in the slot, without waiting for them: they are there
 * once service_rows_wait() returned true.
 */
bool
service_rows_request(ServiceRows *rows, uint64 offset, uint64 length, uint64 slot_position)
{
	return rows_request(rows, GS_MSG_GET, slot_position, length, 0, offset);
}

/* Sorts the rows held; *timing gets the GPU's times. */
bool
service_rows_sort(ServiceRows *rows, gpu_timing *timing)
{
	gs_message	message;

	if (!service_rows_wait(rows))
		return false;
	memset(&message, 0, sizeof(message));
	if (!send_message(rows->fd, &message, GS_MSG_RUN) ||
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
		*timing = message.timing;
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

		if (!service_rows_request(rows, offset + done, piece, 0) || !service_rows_wait(rows))
			return false;
		memcpy(into + done, rows->slot, piece);
		done += piece;
	}
	return true;
}
