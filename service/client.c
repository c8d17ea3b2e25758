/*
 * client.c — the backends' side of the GPU service. It is the engine's
 * GPU backend in the server (gpu_service_backend, engine/sort_backend.h,
 * set by _PG_init), so the engine's "run it on the GPU" reaches the
 * service: the keys go into a slot of the service's staging area, the job
 * runs in gpusort-gpud, the results come back through the slot. The
 * connection and its session (HELLO, the staging area mapped) are here
 * for the rows jobs too, whose side is client_rows.c (client_int.h says
 * what the two share).
 *
 * A backend never starts CUDA. Whether a GPU is usable, and where its
 * process listens, is read from shared memory (the worker publishes it),
 * so planning costs no GPU call at all.
 *
 * Nothing the service says is trusted (protocol.h, "Trust"): a connection
 * is used only if its peer is the process the worker started, as the
 * server's user; the staging memfd is mapped only at its real, sealed
 * size; every offset and length is checked against what it must lie in;
 * and a result is used only once it is proved a permutation of the input
 * (verify.h) in the order asked for. Checks run while the GPU works where
 * they can, and stop for a cancel.
 *
 * Each job is one connection (protocol.h). Waits sleep on the backend's
 * latch and the socket, so statement_timeout and pg_cancel_backend stop a
 * job at once: the client sends CANCEL and leaves; the service stops the
 * job, frees its GPU memory and slot. A wait also ends when the GPU's
 * process is gone or replaced (the worker restarts one that stops
 * answering), and admission never waits longer than gpusort.queue_timeout.
 * The caller's buffers are written only after the job succeeded, so any
 * failure (the service refusing, the GPU failing, gpusort-gpud dying
 * mid-job, a result that fails its check) leaves the input intact and the
 * engine can sort on the CPU instead (gpusort.device = auto).
 *
 * Nothing here raises an ERROR: failures are status codes with a message
 * (gpu_service_last_error()), as the engine's backend interface asks.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "client_int.h"
#include "service.h"
#include "sort_backend.h"
#include "verify.h"

int			gpusort_queue_timeout_ms = 1000;
int			gpusort_session_gpu_memory_limit_mb = 0;

/* gpusort.device = gpu: a sort the GPU could not take is an error */
static bool gpu_required = false;

/* How often a wait on the service looks whether its process is still the
 * one it talks to. */
#define LIVENESS_CHECK_MS 1000
/* Result checks look for a cancel this often (elements). */
#define CHECK_STRIDE ((size_t) 1 << 20)

char		last_error[512] = "no GPU error";

/* The start of the last statement one of whose jobs waited out its time
 * in the service's queue (admission_wait_ms) */
static TimestampTz refused_statement = 0;

/* this backend's mappings of the staging areas (client_int.h) */
StagingMapping client_mappings[GS_SERVICE_MAX_GPUS];
StagingMapping client_retired[MAX_RETIRED_MAPPINGS];

void
set_error(const char *format,...)
{
	va_list		args;

	va_start(args, format);
	vsnprintf(last_error, sizeof(last_error), format, args);
	va_end(args);
}

const char *
gpu_service_last_error(void)
{
	return last_error;
}

/* ------------------------------------------------------------------------
 * Statistics
 * ------------------------------------------------------------------------ */

void
gpu_service_set_gpu_required(bool required)
{
	gpu_required = required;
}

/* A sort that did not run on the GPU although it could have: a fallback
 * under gpusort.device = auto (the CPU sorts it), an error under gpu. */
void
gpu_service_count_fallback(int gpu, GpuFallbackReason reason)
{
	if (gpu_service == NULL)
		return;
	if (gpu_required)
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

void
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
void
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
int
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

/* ---- the wire's types to the engine's (sort_backend.h) ---- */

static gs_status
status_of_wire(int32 status)
{
	switch (status)
	{
		case GS_STATUS_OK:
			return GS_OK;
		case GS_STATUS_UNAVAILABLE:
			return GS_ERR_GPU_UNAVAILABLE;
		case GS_STATUS_OUT_OF_MEMORY:
			return GS_ERR_GPU_OUT_OF_MEMORY;
		case GS_STATUS_INTERRUPTED:
			return GS_ERR_INTERRUPTED;
		case GS_STATUS_INVALID:
			return GS_ERR_INVALID_ARGUMENT;
		default:
			return GS_ERR_GPU_FAILURE;
	}
}

static uint32
wire_algorithm(gs_algorithm algorithm)
{
	return algorithm == GS_ALGO_BITONIC ? GS_WIRE_BITONIC :
		algorithm == GS_ALGO_BUTTERFLY ? GS_WIRE_BUTTERFLY : GS_WIRE_RADIX;
}

/* A job's times as the service measured them; queue_ms and device_index
 * are the client's to fill. */
void
set_timing(gs_backend_timing *into, const gs_wire_timing *timing)
{
	memset(into, 0, sizeof(*into));
	into->upload_ms = timing->upload_ms;
	into->sort_ms = timing->sort_ms;
	into->download_ms = timing->download_ms;
	into->device_bytes = (size_t) timing->device_bytes;
}

static void
set_device_info(gs_gpu_info *into, const gs_wire_device *device)
{
	memset(into, 0, sizeof(*into));
	into->built_with_cuda = device->built_with_cuda;
	into->usable = device->usable;
	strlcpy(into->reason, device->reason, sizeof(into->reason));
	strlcpy(into->name, device->name, sizeof(into->name));
	into->compute_major = device->compute_major;
	into->compute_minor = device->compute_minor;
	into->multiprocessors = device->multiprocessors;
	into->total_memory = (size_t) device->total_memory;
	into->free_memory = (size_t) device->free_memory;
	into->driver_version = device->driver_version;
	into->runtime_version = device->runtime_version;
}

static void
service_probe(gs_gpu_info *info)
{
	gs_wire_device device;
	int			gpu;

	memset(info, 0, sizeof(*info));
	info->built_with_cuda = GPUSORT_WITH_CUDA;
	gpu = choose_gpu(false);
	if (gpu < 0)
	{
		describe_unavailable(info->reason, sizeof(info->reason));
		return;
	}
	SpinLockAcquire(&gpu_service->mutex);
	device = gpu_service->gpus[gpu].device;
	SpinLockRelease(&gpu_service->mutex);
	set_device_info(info, &device);
	info->built_with_cuda = GPUSORT_WITH_CUDA;
}

/* ------------------------------------------------------------------------
 * Talking to gpusort-gpud
 * ------------------------------------------------------------------------ */

/* Whether GPU `gpu`'s process is still `pid`, and serving. */
static bool
peer_alive(const Peer *peer)
{
	bool		alive;

	SpinLockAcquire(&gpu_service->mutex);
	alive = gpu_service->gpus[peer->gpu].pid == peer->pid &&
		(gpu_service->gpus[peer->gpu].state == GPU_SERVICE_READY ||
		 gpu_service->gpus[peer->gpu].state == GPU_SERVICE_NO_GPU);
	SpinLockRelease(&gpu_service->mutex);
	return alive;
}

/*
 * Connects to GPU `gpu`'s process where the worker said it listens, and
 * makes sure the peer is that process, of the server's user (an impostor
 * is logged and left). False, and *why, otherwise.
 */
static bool
connect_to(int gpu, Peer *peer, char *why, size_t why_size)
{
	struct sockaddr_un address;
	char		name[GS_SOCKET_NAME_BYTES];
	GpuServiceState state;
	struct ucred credentials;
	socklen_t	credentials_length = sizeof(credentials);
	size_t		length;
	int			fd;

	peer->fd = -1;
	peer->gpu = gpu;
	SpinLockAcquire(&gpu_service->mutex);
	state = gpu_service->gpus[gpu].state;
	peer->pid = gpu_service->gpus[gpu].pid;
	memcpy(name, gpu_service->gpus[gpu].socket_name, sizeof(name));
	SpinLockRelease(&gpu_service->mutex);
	name[sizeof(name) - 1] = '\0';
	length = strlen(name);
	if ((state != GPU_SERVICE_READY && state != GPU_SERVICE_NO_GPU) || peer->pid <= 0 ||
		length == 0)
	{
		snprintf(why, why_size, "the GPU service's process for GPU %d is not running", gpu);
		return false;
	}
	memset(&address, 0, sizeof(address));
	address.sun_family = AF_UNIX;
	memcpy(address.sun_path + 1, name, length);
	/* non-blocking: a process too busy to take connections is not waited for */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 ||
		connect(fd, (struct sockaddr *) &address,
				(socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + length)) != 0)
	{
		snprintf(why, why_size, "cannot reach the GPU service's process for GPU %d: %m", gpu);
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &credentials_length) != 0 ||
		credentials.uid != geteuid() || credentials.pid != peer->pid)
	{
		ereport(LOG,
				(errmsg("gpusort: the socket of GPU %d's service is held by pid %d of uid %d, "
						"not by the service's process %d: not using it",
						gpu, (int) credentials.pid, (int) credentials.uid, (int) peer->pid)));
		snprintf(why, why_size, "the socket of GPU %d's service is held by another process", gpu);
		close(fd);
		return false;
	}
	if (fcntl(fd, F_SETFL, 0) != 0)
	{
		snprintf(why, why_size, "cannot use the GPU service's socket: %m");
		close(fd);
		return false;
	}
	peer->fd = fd;
	return true;
}

void
client_disconnect(Peer *peer)
{
	if (peer->fd >= 0)
		close(peer->fd);
	peer->fd = -1;
}

/* Sends a message of `type`, with a descriptor (SCM_RIGHTS) if
 * pass_fd >= 0. */
bool
client_send_message(const Peer *peer, gs_message *message, gs_message_type type, int pass_fd)
{
	message->type = type;
	return gs_send_message(peer->fd, message, pass_fd);
}

/* The strings of a message from the service, terminated wherever they
 * were cut. */
static void
terminate_strings(gs_message *message)
{
	message->build[sizeof(message->build) - 1] = '\0';
	message->message[sizeof(message->message) - 1] = '\0';
	message->device.name[sizeof(message->device.name) - 1] = '\0';
	message->device.reason[sizeof(message->device.reason) - 1] = '\0';
}

/*
 * Receives one message, sleeping on the latch and the socket. `poll` (the
 * engine's cancel check) is asked after every wake-up; timeout_ms < 0 waits
 * until the message comes, the connection closes, or the peer is no longer
 * the GPU's process (looked at every LIVENESS_CHECK_MS). A descriptor
 * passed along (WELCOME) lands in *passed_fd; any other is closed.
 */
wait_result
client_receive_message(const Peer *peer, gs_message *message, gs_poll_fn poll, void *poll_arg,
					   long timeout_ms, int *passed_fd)
{
	TimestampTz start = GetCurrentTimestamp();
	TimestampTz checked = start;

	for (;;)
	{
		struct iovec iov = {message, sizeof(*message)};
		struct msghdr header;
		char		control[CMSG_SPACE(sizeof(int))];
		ssize_t		got;
		int			events;
		long		left = LIVENESS_CHECK_MS;
		TimestampTz now;

		memset(&header, 0, sizeof(header));
		header.msg_iov = &iov;
		header.msg_iovlen = 1;
		header.msg_control = control;
		header.msg_controllen = sizeof(control);
		got = recvmsg(peer->fd, &header, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (got >= 0)
		{
			for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(&header); cmsg != NULL;
				 cmsg = CMSG_NXTHDR(&header, cmsg))
				if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS)
				{
					int			count = (int) ((cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int));

					for (int i = 0; i < count; i++)
					{
						int			received;

						memcpy(&received, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
						if (passed_fd != NULL && *passed_fd < 0)
							*passed_fd = received;
						else
							close(received);
					}
				}
			if (got != (ssize_t) sizeof(*message) || (header.msg_flags & MSG_CTRUNC) ||
				message->magic != GS_SERVICE_MAGIC)
				return WAIT_CLOSED;
			terminate_strings(message);
			return WAIT_OK;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return WAIT_CLOSED;

		now = GetCurrentTimestamp();
		if (TimestampDifferenceExceeds(checked, now, LIVENESS_CHECK_MS))
		{
			if (!peer_alive(peer))
				return WAIT_CLOSED;
			checked = now;
		}
		if (timeout_ms >= 0)
		{
			long		remaining = timeout_ms - TimestampDifferenceMilliseconds(start, now);

			if (remaining <= 0)
				return WAIT_TIMED_OUT;
			left = Min(left, remaining);
		}
		events = WaitLatchOrSocket(MyLatch,
								   WL_LATCH_SET | WL_SOCKET_READABLE | WL_EXIT_ON_PM_DEATH |
								   WL_TIMEOUT,
								   peer->fd, left, PG_WAIT_EXTENSION);
		if (events & WL_LATCH_SET)
			ResetLatch(MyLatch);
		if (poll != NULL && poll(poll_arg))
			return WAIT_CANCELLED;
	}
}

/*
 * Maps GPU `gpu`'s staging area if this backend has not yet, or if its
 * process is new since. Takes ownership of memfd. The memfd must be the
 * size the WELCOME claims, sealed against shrinking (a mapping of a file
 * that shrinks later faults with SIGBUS).
 */
static bool
map_staging(const Peer *peer, const gs_message *welcome, int memfd)
{
	StagingMapping *m = &client_mappings[peer->gpu];
	struct stat file;
	int			seals;

	if (m->base != NULL && m->generation == welcome->generation)
	{
		if (memfd >= 0)
			close(memfd);
		return true;
	}
	if (m->base != NULL && m->rows_jobs > 0)
	{
		int			i = 0;

		while (i < MAX_RETIRED_MAPPINGS && client_retired[i].base != NULL)
			i++;
		if (i < MAX_RETIRED_MAPPINGS)
			client_retired[i] = *m;	/* else left mapped for good */
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
	if ((welcome->generation >> 32) != (uint64) peer->pid || welcome->staging_bytes == 0 ||
		welcome->staging_bytes > ((uint64) 1 << 40) || fstat(memfd, &file) != 0 ||
		(uint64) file.st_size != welcome->staging_bytes ||
		(seals = fcntl(memfd, F_GET_SEALS)) < 0 || !(seals & F_SEAL_SHRINK))
	{
		close(memfd);
		set_error("the GPU service's staging area is not what it says");
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

/*
 * Connects, HELLO and WELCOME, the staging area mapped; the connection
 * stays open for a job. 1 on success; 0 on failure (*why says what); -1 if
 * `poll` (NULL: none) says the wait is cancelled.
 */
int
client_open_session(int gpu, Peer *peer, char *why, size_t why_size, gs_poll_fn poll,
					void *poll_arg)
{
	gs_message	hello;
	gs_message	welcome;
	int			memfd = -1;
	wait_result result = WAIT_CLOSED;

	if (!connect_to(gpu, peer, why, why_size))
		return 0;
	memset(&hello, 0, sizeof(hello));
	hello.protocol = GS_SERVICE_PROTOCOL;
	strlcpy(hello.build, GPUSORT_BUILD, sizeof(hello.build));
	if (!client_send_message(peer, &hello, GS_MSG_HELLO, -1) ||
		(result = client_receive_message(peer, &welcome, poll, poll_arg, 10000, &memfd)) != WAIT_OK)
	{
		snprintf(why, why_size, "the GPU service's process for GPU %d did not answer", gpu);
		client_disconnect(peer);
		return result == WAIT_CANCELLED ? -1 : 0;
	}
	if (welcome.type == GS_MSG_REFUSED)
		snprintf(why, why_size, "%s", welcome.message);
	else if (welcome.type != GS_MSG_WELCOME || welcome.protocol != GS_SERVICE_PROTOCOL ||
			 strcmp(welcome.build, GPUSORT_BUILD) != 0)
		snprintf(why, why_size, "the GPU service's process for GPU %d answered out of turn", gpu);
	else if (!map_staging(peer, &welcome, memfd))
	{
		snprintf(why, why_size, "%s", last_error);
		memfd = -1;
	}
	else
		return 1;
	if (memfd >= 0)
		close(memfd);
	client_disconnect(peer);
	return 0;
}

/* Whether ADMITTED's slot lies within the GPU's mapped staging area and
 * holds at least `needed` bytes. */
bool
slot_acceptable(int gpu, const gs_message *admitted, uint64 needed)
{
	return admitted->slot_bytes >= needed &&
		gs_range_within(admitted->slot_offset, admitted->slot_bytes, client_mappings[gpu].bytes) &&
		admitted->slot_offset % 8 == 0 && admitted->slot_bytes % 8 == 0;
}

/* What the engine asked for, in one shape for the three kinds of job. */
typedef struct ClientJob
{
	gs_message	submit;
	void	   *keys;			/* in: keys; out: sorted keys */
	uint32_t   *row_index;		/* out, or NULL */
	gs_poll_fn	poll;
	void	   *poll_arg;
	bool		copied_back;	/* the caller's buffers hold the results */
	const char *short_wait;		/* why it may wait less than usual, or NULL */
	/* what the result must be, worked out from the input (verify.h) */
	gs_fingerprint_point point;
	uint64		input_fingerprint;
	uint64		min_key;		/* of the input: approximate sorts, min-max */
	uint64		max_key;
	/* quantile mode: room for the sample, and the splitters drawn from the
	 * input as the service must have drawn them (interval_map.h) */
	uint64	   *sample;
	uint64	   *splitters;
} ClientJob;

static inline uint64
key_at(const void *keys, unsigned key_bytes, size_t i)
{
	return key_bytes == 4 ? ((const uint32 *) keys)[i] : ((const uint64 *) keys)[i];
}

/* Whether the job's poll function asks to stop (checked between strides
 * of the long loops below). */
static bool
job_cancelled(const ClientJob *job)
{
	return job->poll != NULL && job->poll(job->poll_arg);
}

/*
 * The quantile mode's splitters, from the input, as the service draws them:
 * the same positions, the sample sorted on the CPU. False if the CPU sort
 * failed or was asked to stop (the result is then not trusted).
 */
static bool
expect_splitters(ClientJob *job)
{
	const uint64 n = job->submit.n;
	const uint32 intervals = job->submit.intervals;
	const uint32 size = gs_quantile_sample_size(n, intervals);
	gs_sort_request request;
	gs_sort_report report;

	for (uint32 draw = 0; draw < size; draw++)
		job->sample[draw] = key_at(job->keys, job->submit.key_bytes,
								   gs_quantile_sample_position(job->submit.seed, draw, n));
	gs_sort_request_init(&request);
	gs_sort_request_set_keys(&request, job->sample, size, 8, job->submit.key_bytes * 8, NULL);
	request.algorithm = GS_ALGO_RADIX;
	request.device = GS_DEVICE_CPU;
	request.poll = job->poll;
	request.poll_arg = job->poll_arg;
	if (gs_sort(&request, &report) != GS_OK)
		return false;
	for (uint32 j = 1; j < intervals; j++)
		job->splitters[j - 1] = job->sample[gs_quantile_splitter_position(j, size, intervals)];
	return true;
}

/*
 * What the result must be, from the input, while the GPU works on it: the
 * input's fingerprint (whole; an approximate sort with a limit returns a
 * part, fingerprinted once that part is known) and its min and max. False
 * if asked to stop.
 */
static bool
expect_result(ClientJob *job)
{
	const uint64 n = job->submit.n;
	const unsigned key_bytes = job->submit.key_bytes;
	bool		with_rows = job->row_index != NULL;
	bool		partial = job->submit.kind == GS_JOB_APPROX && job->submit.limit > 0 &&
		job->submit.limit < n;
	uint64		product = 1;
	uint64		low = PG_UINT64_MAX,
				high = 0;

	for (uint64 first = 0; first < n; first += CHECK_STRIDE)
	{
		uint64		count = Min(CHECK_STRIDE, n - first);

		if (job->submit.kind != GS_JOB_SORT)
			for (uint64 i = first; i < first + count; i++)
			{
				uint64		key = key_at(job->keys, key_bytes, i);

				low = Min(low, key);
				high = Max(high, key);
			}
		if (job->submit.kind != GS_JOB_MINMAX && !partial)
			product = gs_fingerprint_add(&job->point, product, job->keys, key_bytes, with_rows,
										 NULL, first, count);
		if (job_cancelled(job))
			return false;
	}
	job->input_fingerprint = product;
	job->min_key = low;
	job->max_key = high;
	if (job->splitters != NULL)
		return expect_splitters(job);
	return true;
}

typedef enum
{
	RESULT_RIGHT,
	RESULT_WRONG,
	RESULT_CANCELLED
} result_check;

/*
 * Whether `count` outputs (keys, and rows unless NULL) answer the job:
 *   - exact sort: the input reordered (fingerprint), keys in order, equal
 *     keys in input order when rows come back;
 *   - approximate sort: the input reordered, or with a limit the input's
 *     first intervals, whole and at least `limit` rows (fingerprint of the
 *     input's keys up to the last interval returned), in interval order
 *     under the input's own min and max (quantile mode: the buckets of
 *     the splitters drawn from the input, expect_splitters()).
 * The keys of the input must still be in job->keys.
 */
static result_check
check_result(ClientJob *job, const void *keys, const uint32 *rows, uint64 count)
{
	const uint64 n = job->submit.n;
	const unsigned key_bytes = job->submit.key_bytes;
	bool		approx = job->submit.kind == GS_JOB_APPROX;
	bool		partial = approx && job->submit.limit > 0 && job->submit.limit < n;
	gs_interval_map map;
	uint64		expected = job->input_fingerprint;
	uint64		product = 1;
	uint64		previous_key = 0;
	uint32		previous_row = 0;
	uint32		previous_interval = 0;

	if (partial ? count < job->submit.limit || count > n : count != n)
		return RESULT_WRONG;
	if (approx && job->submit.approx_mode == 1)
		map = gs_interval_map_quantile(job->splitters, job->submit.intervals - 1);
	else if (approx)
		map = gs_interval_map_make(job->min_key, job->max_key, job->submit.intervals);
	for (uint64 first = 0; first < count; first += CHECK_STRIDE)
	{
		uint64		end = Min(first + CHECK_STRIDE, count);

		for (uint64 i = first; i < end; i++)
		{
			uint64		key = key_at(keys, key_bytes, i);

			if (approx)
			{
				uint32		interval;

				if (key < job->min_key || key > job->max_key)
					return RESULT_WRONG;
				interval = gs_approx_interval(&map, key);
				if (i > 0 && interval < previous_interval)
					return RESULT_WRONG;
				previous_interval = interval;
			}
			else if (i > 0 && (key < previous_key ||
							   (rows != NULL && key == previous_key && rows[i] <= previous_row)))
				return RESULT_WRONG;
			previous_key = key;
			if (rows != NULL)
				previous_row = rows[i];
		}
		product = gs_fingerprint_add(&job->point, product, keys, key_bytes, rows != NULL, rows,
									 first, end - first);
		if (job_cancelled(job))
			return RESULT_CANCELLED;
	}
	if (partial && count > 0)
	{
		/* the largest key in the last interval returned: every input key
		 * up to it, and no other, must be in the output */
		uint64		low = key_at(keys, key_bytes, count - 1);
		uint64		high = job->max_key;
		uint64		taken = 0;

		while (low < high)
		{
			uint64		middle = high - (high - low) / 2;	/* > low; no overflow */

			if (gs_approx_interval(&map, middle) <= previous_interval)
				low = middle;
			else
				high = middle - 1;
		}
		expected = 1;
		for (uint64 first = 0; first < n; first += CHECK_STRIDE)
		{
			expected = gs_fingerprint_add_upto(&job->point, expected, job->keys, key_bytes,
											   rows != NULL, first, Min(CHECK_STRIDE, n - first),
											   low, &taken);
			if (job_cancelled(job))
				return RESULT_CANCELLED;
		}
		if (taken != count)
			return RESULT_WRONG;
	}
	return product == expected ? RESULT_RIGHT : RESULT_WRONG;
}

/* Moves [offset, offset + length) of the area between `host` and the slot,
 * piece by piece (a chunked job). */
static wait_result
move_through_slot(const Peer *peer, ClientJob *job, char *slot, uint64 slot_bytes, bool put,
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
		if (!client_send_message(peer, &message, put ? GS_MSG_PUT : GS_MSG_GET, -1))
			return WAIT_CLOSED;
		result = client_receive_message(peer, &message, job->poll, job->poll_arg, -1, NULL);
		if (result != WAIT_OK)
			return result;
		if (message.type != GS_MSG_ACK || message.offset != offset + done ||
			message.length != piece)
			return WAIT_CLOSED;
		if (!put)
			memcpy(host + done, slot, piece);
		done += piece;
	}
	return WAIT_OK;
}

static gs_status
status_of_refusal(const gs_message *refused, int gpu)
{
	switch ((gs_refusal) refused->refusal)
	{
		case GS_REFUSED_TOO_LARGE:
			gpu_service_count_fallback(gpu, FALLBACK_TOO_LARGE);
			return GS_ERR_GPU_OUT_OF_MEMORY;
		case GS_REFUSED_QUEUE_TIMEOUT:
			gpu_service_count_fallback(gpu, FALLBACK_QUEUE_TIMEOUT);
			refused_statement = GetCurrentStatementStartTimestamp();
			return GS_ERR_GPU_BUSY;
		case GS_REFUSED_OUT_OF_MEMORY:
			gpu_service_count_fallback(gpu, FALLBACK_TOO_LARGE);
			return GS_ERR_GPU_OUT_OF_MEMORY;
		case GS_REFUSED_NO_GPU:
		case GS_REFUSED_VERSION:
			gpu_service_count_fallback(gpu, FALLBACK_NO_SERVICE);
			return GS_ERR_GPU_UNAVAILABLE;
		case GS_REFUSED_BAD_REQUEST:
			return GS_ERR_INVALID_ARGUMENT;
	}
	return GS_ERR_GPU_FAILURE;
}

/* A result that failed its check: the sort runs on the CPU (if its input
 * is still there) or fails; it is never used. */
static gs_status
wrong_result(int gpu)
{
	ereport(LOG,
			(errmsg("gpusort: the GPU service's process for GPU %d returned a result that is "
					"not the sort asked for; it was not used", gpu)));
	set_error("the GPU service returned a result that is not the sort asked for");
	gpu_service_count_fallback(gpu, FALLBACK_GPU_ERROR);
	return GS_ERR_GPU_FAILURE;
}

/*
 * The results of a job that ran, from its slot into the caller's buffers,
 * checked. A direct job's results are checked where they lie, then copied:
 * a wrong one leaves the input intact. A chunked job's come piece by piece
 * into the caller's buffers and are checked there (an approximate one with
 * a limit: its keys in a buffer of their own first, since the check reads
 * the input).
 */
static gs_status
take_results(const Peer *peer, ClientJob *job, const gs_message *admitted, const gs_message *done)
{
	const uint64 n = job->submit.n;
	const unsigned key_bytes = job->submit.key_bytes;
	uint64		count = job->submit.kind == GS_JOB_APPROX ? done->valid_outputs : n;
	uint64		index_offset = gs_job_index_offset(n, key_bytes);
	char	   *slot = client_mappings[peer->gpu].base + admitted->slot_offset;
	result_check check;

	if (count > n)
		return wrong_result(peer->gpu);
	if (!admitted->chunked)
	{
		check = check_result(job, slot, job->row_index != NULL ?
							 (uint32 *) (slot + index_offset) : NULL, count);
		if (check == RESULT_CANCELLED)
			return GS_ERR_INTERRUPTED;
		if (check == RESULT_WRONG)
			return wrong_result(peer->gpu);
		job->copied_back = true;
		memcpy(job->keys, slot, count * key_bytes);
		if (job->row_index != NULL)
			memcpy(job->row_index, slot + index_offset, count * sizeof(uint32));
		return GS_OK;
	}
	else
	{
		bool		partial = job->submit.kind == GS_JOB_APPROX && job->submit.limit > 0 &&
			job->submit.limit < n;
		char	   *keys = job->keys;
		wait_result result;

		if (partial)
		{
			keys = MemoryContextAllocExtended(CurrentMemoryContext, Max(count * key_bytes, 1),
											  MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
			if (keys == NULL)
			{
				set_error("out of memory for the results of a GPU sort");
				return GS_ERR_GPU_OUT_OF_MEMORY;
			}
		}
		else
			job->copied_back = true;
		result = move_through_slot(peer, job, slot, admitted->slot_bytes, false, 0,
								   count * key_bytes, keys);
		if (result == WAIT_OK && job->row_index != NULL)
		{
			job->copied_back = true;
			result = move_through_slot(peer, job, slot, admitted->slot_bytes, false,
									   index_offset, count * sizeof(uint32),
									   (char *) job->row_index);
		}
		check = result == WAIT_CANCELLED ? RESULT_CANCELLED :
			result != WAIT_OK ? RESULT_WRONG : check_result(job, keys, job->row_index, count);
		if (check == RESULT_RIGHT && partial)
		{
			job->copied_back = true;
			memcpy(job->keys, keys, count * key_bytes);
		}
		if (partial)
			pfree(keys);
		if (check == RESULT_CANCELLED)
			return GS_ERR_INTERRUPTED;
		if (result != WAIT_OK)
		{
			set_error("the GPU service's process for GPU %d ended during the sort "
					  "(see the server log)", peer->gpu);
			gpu_service_count_fallback(peer->gpu, FALLBACK_SERVICE_LOST);
			return GS_ERR_GPU_FAILURE;
		}
		return check == RESULT_RIGHT ? GS_OK : wrong_result(peer->gpu);
	}
}

/* A min-max job's answer against the min and max of the input. */
static gs_status
take_minmax(const Peer *peer, const ClientJob *job, const gs_message *done)
{
	if (done->min_key != job->min_key || done->max_key != job->max_key)
		return wrong_result(peer->gpu);
	return GS_OK;
}

/* One job, start to end, on `gpu`. */
static gs_status
run_on_service(int gpu, ClientJob *job, gs_message *done)
{
	gs_message	admitted;
	gs_message	message;
	char		why[256];
	Peer		peer;
	uint64		n = job->submit.n;
	uint64		key_area = n * job->submit.key_bytes;
	uint64		area = gs_job_area_bytes(n, job->submit.key_bytes, job->row_index != NULL);
	char	   *slot;
	wait_result result;
	gs_status	status;
	uint8		random[24];

	switch (client_open_session(gpu, &peer, why, sizeof(why), job->poll, job->poll_arg))
	{
		case -1:
			set_error("the GPU sort was interrupted");
			return GS_ERR_INTERRUPTED;
		case 0:
			set_error("%s", why);
			gpu_service_count_fallback(gpu, FALLBACK_SERVICE_LOST);
			return GS_ERR_GPU_UNAVAILABLE;
	}
	if (!pg_strong_random(random, sizeof(random)))
	{
		client_disconnect(&peer);
		set_error("no random numbers to check the GPU's result with");
		return GS_ERR_GPU_FAILURE;
	}
	gs_fingerprint_point_make(&job->point, random);

	/* admission */
	message = job->submit;
	if (!client_send_message(&peer, &message, GS_MSG_SUBMIT, -1))
		goto lost;
	result = client_receive_message(&peer, &admitted, job->poll, job->poll_arg,
									ADMISSION_ANSWER_MS(job->submit.wait_ms), NULL);
	if (result != WAIT_OK)
		goto wait_failed;
	if (admitted.type == GS_MSG_REFUSED)
	{
		if (admitted.refusal == GS_REFUSED_QUEUE_TIMEOUT && job->short_wait != NULL)
			set_error("%s; %s", admitted.message, job->short_wait);
		else
			set_error("%s", admitted.message);
		client_disconnect(&peer);
		count_queue_wait(gpu, admitted.queue_ms);
		done->queue_ms = admitted.queue_ms;
		return status_of_refusal(&admitted, gpu);
	}
	if (admitted.type != GS_MSG_ADMITTED ||
		!slot_acceptable(gpu, &admitted, admitted.chunked ? 8 : area))
		goto lost;
	count_queue_wait(gpu, admitted.queue_ms);
	slot = client_mappings[gpu].base + admitted.slot_offset;

	/* the keys in, the job run, the result worked out meanwhile */
	if (admitted.chunked)
	{
		result = move_through_slot(&peer, job, slot, admitted.slot_bytes, true, 0, key_area,
								   job->keys);
		if (result != WAIT_OK)
			goto wait_failed;
	}
	else
		memcpy(slot, job->keys, key_area);
	memset(&message, 0, sizeof(message));
	if (!client_send_message(&peer, &message, GS_MSG_RUN, -1))
		goto lost;
	if (!expect_result(job))
	{
		result = WAIT_CANCELLED;
		goto wait_failed;
	}
	result = client_receive_message(&peer, done, job->poll, job->poll_arg, -1, NULL);
	if (result != WAIT_OK)
		goto wait_failed;
	if (done->type != GS_MSG_DONE)
		goto lost;
	done->queue_ms = admitted.queue_ms;
	if (done->status != GS_STATUS_OK)
	{
		set_error("%s", done->message);
		client_disconnect(&peer);
		if (done->status == GS_STATUS_OUT_OF_MEMORY)
			gpu_service_count_fallback(gpu, FALLBACK_TOO_LARGE);
		else if (done->status != GS_STATUS_INTERRUPTED)
			gpu_service_count_fallback(gpu, FALLBACK_GPU_ERROR);
		return status_of_wire(done->status);
	}
	status = job->submit.kind == GS_JOB_MINMAX ? take_minmax(&peer, job, done) :
		take_results(&peer, job, &admitted, done);
	if (status == GS_ERR_INTERRUPTED)
	{
		result = WAIT_CANCELLED;
		goto wait_failed;
	}
	client_disconnect(&peer);
	if (status == GS_OK)
		count_job(gpu, done, n, key_area * 2 + (job->row_index ? n * sizeof(uint32_t) : 0));
	return status;

wait_failed:
	if (result == WAIT_CANCELLED)
	{
		/* tell the service, and leave: it frees the job's memory itself */
		gs_message	cancel;

		memset(&cancel, 0, sizeof(cancel));
		client_send_message(&peer, &cancel, GS_MSG_CANCEL, -1);
		client_disconnect(&peer);
		set_error("the GPU sort was interrupted");
		return GS_ERR_INTERRUPTED;
	}
lost:
	client_disconnect(&peer);
	gpu_service_count_fallback(gpu, FALLBACK_SERVICE_LOST);
	set_error("the GPU service's process for GPU %d ended during the sort (see the server log)",
			  gpu);
	return GS_ERR_GPU_FAILURE;
}

static gs_status
run_job(ClientJob *job, gs_message *done, gs_backend_timing *timing)
{
	int			gpu;
	gs_status	status;

	memset(done, 0, sizeof(*done));
	if (timing != NULL)
		memset(timing, 0, sizeof(*timing));
	/* nothing to sort: nothing to send (the service refuses empty jobs) */
	if (job->submit.n == 0)
		return GS_OK;
	gpu = choose_gpu(true);
	if (gpu < 0)
	{
		char		why[256];

		describe_unavailable(why, sizeof(why));
		set_error("%s", why);
		gpu_service_count_fallback(-1, FALLBACK_NO_SERVICE);
		return GS_ERR_GPU_UNAVAILABLE;
	}
	pg_atomic_fetch_add_u32(&gpu_service->gpus[gpu].in_flight, 1);
	status = run_on_service(gpu, job, done);
	pg_atomic_fetch_sub_u32(&gpu_service->gpus[gpu].in_flight, 1);
	if (timing != NULL)
	{
		if (status == GS_OK)
			set_timing(timing, &done->timing);
		timing->queue_ms = (float) done->queue_ms;
		timing->device_index = gpu;
	}
	return status;
}

bool
cancel_requested(void *arg)
{
	(void) arg;
	return INTERRUPTS_PENDING_CONDITION() && INTERRUPTS_CAN_BE_PROCESSED() &&
		(QueryCancelPending || ProcDiePending);
}

/* The session a job counts against: this backend, or the leader of the
 * parallel query it works for. */
int32
client_session_id(void)
{
	if (MyProc != NULL && MyProc->lockGroupLeader != NULL)
		return (int32) MyProc->lockGroupLeader->pid;
	return (int32) MyProcPid;
}

/*
 * How long a job may wait for admission: gpusort.queue_timeout, then under
 * gpusort.device = auto it sorts on the CPU and under gpu it fails (53400).
 * Once a job of the statement has waited its time out, the statement's
 * later jobs do not wait at all.
 */
static int64
admission_wait_ms(const char **short_wait)
{
	*short_wait = NULL;
	if (refused_statement != 0 && refused_statement == GetCurrentStatementStartTimestamp())
	{
		*short_wait = "an earlier sort of this statement already waited its time";
		return 0;
	}
	return gpusort_queue_timeout_ms;
}

static void
submit_init(ClientJob *job, gs_job_kind kind, size_t n, unsigned key_bytes, void *keys,
			uint32_t *row_index, size_t memory_limit, gs_poll_fn poll, void *poll_arg)
{
	memset(job, 0, sizeof(*job));
	job->submit.kind = kind;
	job->submit.n = n;
	job->submit.key_bytes = key_bytes;
	job->submit.with_index = row_index != NULL;
	job->submit.memory_limit = memory_limit;
	job->submit.wait_ms = admission_wait_ms(&job->short_wait);
	job->submit.session_id = client_session_id();
	job->submit.session_memory_limit = (uint64) gpusort_session_gpu_memory_limit_mb << 20;
	job->keys = keys;
	job->row_index = row_index;
	job->poll = poll;
	job->poll_arg = poll_arg;
}

static gs_status
service_sort(gs_backend_sort_job *request, gs_backend_timing *timing)
{
	ClientJob	job;
	gs_message	done;
	gs_status	status;

	request->host_data_touched = false;
	submit_init(&job, GS_JOB_SORT, request->n, request->key_bytes, request->keys,
				request->row_index, request->memory_limit, request->poll, request->poll_arg);
	job.submit.key_bits = request->key_bits;
	job.submit.algorithm = wire_algorithm(request->algorithm);
	status = run_job(&job, &done, timing);
	request->host_data_touched = job.copied_back && status != GS_OK;
	return status;
}

static gs_status
service_approx_sort(gs_backend_approx_job *request, gs_backend_timing *timing)
{
	ClientJob	job;
	gs_message	done;
	gs_status	status;

	request->host_data_touched = false;
	submit_init(&job, GS_JOB_APPROX, request->n, request->key_bytes, request->keys,
				request->row_index, request->memory_limit, request->poll, request->poll_arg);
	job.submit.key_bits = request->key_bytes * 8;
	job.submit.intervals = request->intervals;
	job.submit.limit = request->limit;
	if (request->mode == GS_APPROX_QUANTILE && request->n > 0)
	{
		uint32		size = gs_quantile_sample_size(request->n, request->intervals);

		job.submit.approx_mode = 1;
		job.submit.seed = request->seed;
		/* before the service has anything: no room, no job */
		job.sample = MemoryContextAllocExtended(CurrentMemoryContext,
												(Size) size * sizeof(uint64),
												MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
		job.splitters = MemoryContextAllocExtended(CurrentMemoryContext,
												   (Size) request->intervals * sizeof(uint64),
												   MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
		if (job.sample == NULL || job.splitters == NULL)
		{
			if (job.sample != NULL)
				pfree(job.sample);
			if (job.splitters != NULL)
				pfree(job.splitters);
			set_error("out of memory for the quantile sample of a GPU sort");
			return GS_ERR_OUT_OF_MEMORY;
		}
	}
	status = run_job(&job, &done, timing);
	request->host_data_touched = job.copied_back && status != GS_OK;
	if (status == GS_OK)
	{
		/* the checked count, and the input's own min and max */
		request->valid_outputs = request->n == 0 ? 0 : done.valid_outputs;
		request->min_key = job.min_key;
		request->max_key = job.max_key;
		/* the service's word: shown by EXPLAIN, not relied upon */
		request->sample_size = Min(done.sample_size, request->n);
		request->largest_interval = Min(done.largest_interval, request->n);
	}
	if (job.sample != NULL)
		pfree(job.sample);
	if (job.splitters != NULL)
		pfree(job.splitters);
	return status;
}

static gs_status
service_minmax(const uint64_t *keys, size_t n, uint64_t *min_key, uint64_t *max_key,
			   gs_backend_timing *timing)
{
	ClientJob	job;
	gs_message	done;
	gs_status	status;

	/* the backend's min-max takes no poll function: the job still stops
	 * for a cancel, through the one below */
	submit_init(&job, GS_JOB_MINMAX, n, 8, (void *) keys, NULL, 0, cancel_requested, NULL);
	job.submit.key_bits = 64;
	status = run_job(&job, &done, timing);
	if (status == GS_OK)
	{
		*min_key = done.min_key;
		*max_key = done.max_key;
	}
	return status;
}

/* The engine's GPU in the server (sort_backend.h). */
const gs_sort_backend gpu_service_backend = {
	.name = "GPU service",
	.probe = service_probe,
	.sort = service_sort,
	.approx_sort = service_approx_sort,
	.approx_quantile = true,
	.minmax = service_minmax,
	/* backends have no page-locked memory of their own: the staging area is */
	.host_alloc = NULL,
	.host_free = NULL,
	.last_error = gpu_service_last_error,
};
