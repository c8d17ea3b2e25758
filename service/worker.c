/*
 * worker.c — the GPU service's background worker, "gpusort GPU service":
 * starts one gpusort-gpud per GPU (gpud/), watches them, restarts one
 * that dies or stops answering, and publishes their state in shared memory
 * (service.h).
 *
 * Registered from _PG_init when gpusort is in shared_preload_libraries.
 * The worker never touches CUDA itself. Each gpusort-gpud is its child, not
 * the postmaster's, and runs no PostgreSQL code: the postmaster does not
 * see it die, so a crash there is not a crash of the server. It dies with
 * the worker (PR_SET_PDEATHSIG), and the worker with the server.
 *
 * A crash of the worker, on the other hand, restarts every session, so it
 * does as little as it can and never waits on anything its children do:
 * its loop sleeps on its latch (SIGCHLD sets it) and reads each child's
 * status page (protocol.h), a shared page only the child writes. It talks
 * to no socket. For each child it makes the listening socket under a fresh
 * random name before the child starts, hands it over with the page, and
 * publishes the name and the pid for backends once the page says the
 * child is ready.
 *
 * A child whose heartbeat stands still for GPUD_LIVENESS_TIMEOUT_MS once
 * ready (stopped, or stuck), or that is not ready GPUD_START_TIMEOUT_MS
 * after its start, is killed and started again: its backends' waits end
 * with the connection. After a crash the process comes back after a pause
 * that doubles from half a second up to 30 seconds while it keeps dying
 * young. One that exits with GPUD_EXIT_DEVICE_FAULT counts as a device
 * fault; after three, the GPU is marked unusable until the server
 * restarts.
 */
#include "postgres.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "service.h"

#define GPUD_PROGRAM "gpusort-gpud"
#define MAX_DEVICE_FAULTS 3
#define BACKOFF_FIRST_MS 500
#define BACKOFF_MAX_MS 30000
#define HEALTHY_AFTER_MS 60000
/* a child that is not ready this long after its start (CUDA's start
 * hangs), or whose heartbeat stands still this long once ready, is killed */
#define GPUD_START_TIMEOUT_MS 60000
#define GPUD_LIVENESS_TIMEOUT_MS 5000
/* how long `gpusort-gpud --count` may take */
#define COUNT_TIMEOUT_MS 60000
#define STATUS_PAGE_BYTES 4096

StaticAssertDecl(sizeof(gs_status_page) <= STATUS_PAGE_BYTES,
				 "the status page fits one page");

char	   *gpusort_devices = NULL;
int			gpusort_service_staging_mb = 256;
int			gpusort_service_memory_budget_mb = 0;

GpuServiceShared *gpu_service = NULL;

static shmem_request_hook_type previous_shmem_request_hook = NULL;
static shmem_startup_hook_type previous_shmem_startup_hook = NULL;

static volatile sig_atomic_t got_sigterm = false;
const char *
gpu_service_state_name(GpuServiceState state)
{
	switch (state)
	{
		case GPU_SERVICE_NOT_STARTED:
			return "not started";
		case GPU_SERVICE_DISABLED:
			return "disabled";
		case GPU_SERVICE_STARTING:
			return "starting";
		case GPU_SERVICE_READY:
			return "ready";
		case GPU_SERVICE_NO_GPU:
			return "no usable GPU";
		case GPU_SERVICE_RESTARTING:
			return "restarting";
		case GPU_SERVICE_FAILED:
			return "failed";
	}
	return "unknown";
}

/* ------------------------------------------------------------------------
 * Shared memory
 * ------------------------------------------------------------------------ */

static void
request_shared_memory(void)
{
	if (previous_shmem_request_hook)
		previous_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(GpuServiceShared)));
}

static void
init_counters(GpuServiceCounters *counters)
{
	pg_atomic_init_u64(&counters->jobs, 0);
	pg_atomic_init_u64(&counters->rows, 0);
	pg_atomic_init_u64(&counters->bytes_moved, 0);
	pg_atomic_init_u64(&counters->gpu_time_us, 0);
	pg_atomic_init_u64(&counters->queued_jobs, 0);
	pg_atomic_init_u64(&counters->queue_wait_us, 0);
	pg_atomic_init_u64(&counters->errors, 0);
	pg_atomic_init_u64(&counters->given_back_jobs, 0);
	for (int i = 0; i < FALLBACK_REASONS; i++)
		pg_atomic_init_u64(&counters->fallbacks[i], 0);
}

static void
attach_shared_memory(void)
{
	bool		found;

	if (previous_shmem_startup_hook)
		previous_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	gpu_service = ShmemInitStruct("gpusort GPU service", sizeof(GpuServiceShared), &found);
	if (!found)
	{
		memset(gpu_service, 0, sizeof(*gpu_service));
		SpinLockInit(&gpu_service->mutex);
		gpu_service->state = GPU_SERVICE_NOT_STARTED;
		init_counters(&gpu_service->counters);
		for (int i = 0; i < GS_SERVICE_MAX_GPUS; i++)
		{
			pg_atomic_init_u32(&gpu_service->gpus[i].in_flight, 0);
			init_counters(&gpu_service->gpus[i].counters);
		}
		pg_atomic_init_u32(&gpu_service->next_gpu, 0);
		gpu_service->stats_reset = GetCurrentTimestamp();
	}
	LWLockRelease(AddinShmemInitLock);
}

/* From _PG_init: the service's settings, and, when preloaded, its shared
 * memory and its worker. */
void
gpusort_service_init(void)
{
	BackgroundWorker worker;

	/* PostgreSQL takes server-start settings only from preloaded modules;
	 * a LOAD gets no service and no settings for it */
	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomStringVariable("gpusort.devices",
							   "GPUs the GPU service uses: all, none, or a list of device numbers.",
							   "Device numbers as nvidia-smi shows them (PCI bus order), "
							   "e.g. '0,1'. The service runs one process per GPU.",
							   &gpusort_devices, "all",
							   PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("gpusort.service_staging_size",
							"Shared, page-locked memory per GPU through which sorts reach the GPU.",
							"Made when the service starts. A sort whose keys do not fit "
							"streams through it in pieces, more slowly.",
							&gpusort_service_staging_mb, 256, 16, 65536,
							PGC_POSTMASTER, GUC_UNIT_MB, NULL, NULL, NULL);
	DefineCustomIntVariable("gpusort.service_memory_budget",
							"GPU memory all sorts on one GPU may hold at once; 0 means 90% of the GPU's memory.",
							"Sorts that would go over it wait in the service's queue "
							"(gpusort.queue_timeout).",
							&gpusort_service_memory_budget_mb, 0, 0, INT_MAX,
							PGC_POSTMASTER, GUC_UNIT_MB, NULL, NULL, NULL);

	previous_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = request_shared_memory;
	previous_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = attach_shared_memory;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_PostmasterStart;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "gpusort");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "gpusort_service_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "gpusort GPU service");
	snprintf(worker.bgw_type, BGW_MAXLEN, "gpusort GPU service");
	RegisterBackgroundWorker(&worker);
}

/* ------------------------------------------------------------------------
 * The worker
 * ------------------------------------------------------------------------ */

typedef struct GpudProcess
{
	int			device;			/* CUDA device number (PCI bus order) */
	pid_t		pid;			/* 0 while not running */
	TimestampTz started;
	TimestampTz next_start;
	int			backoff_ms;
	gs_status_page *status;		/* its status page, mapped while it runs */
	bool		published;		/* its ready (or unusable) state is public */
	uint64		heartbeat;		/* the last heartbeat seen, and when it moved */
	TimestampTz heartbeat_moved;
	const char *killed_because; /* the worker killed it: why */
} GpudProcess;

static GpudProcess processes[GS_SERVICE_MAX_GPUS];
static int	nprocesses = 0;
static char gpud_path[MAXPGPATH];

static void
on_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	got_sigterm = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

static void
on_sigchld(SIGNAL_ARGS)
{
	int			save_errno = errno;

	SetLatch(MyLatch);
	errno = save_errno;
}

static void
set_service_state(GpuServiceState state, const char *reason)
{
	SpinLockAcquire(&gpu_service->mutex);
	gpu_service->state = state;
	strlcpy(gpu_service->reason, reason ? reason : "", sizeof(gpu_service->reason));
	SpinLockRelease(&gpu_service->mutex);
}

static void
set_gpu_state(int gpu, GpuServiceState state, const char *reason)
{
	SpinLockAcquire(&gpu_service->mutex);
	gpu_service->gpus[gpu].state = state;
	strlcpy(gpu_service->gpus[gpu].reason, reason ? reason : "",
			sizeof(gpu_service->gpus[gpu].reason));
	SpinLockRelease(&gpu_service->mutex);
}

/* Moves `fd` to `target` in a child about to exec (FD_CLOEXEC cleared). */
static void
place_fd(int fd, int target)
{
	if (fd != target)
		dup2(fd, target);
	else
		fcntl(fd, F_SETFD, 0);
}

/*
 * Forks and execs gpusort-gpud. In the child, nothing of PostgreSQL's may
 * run: only async-signal-safe calls until exec, and _exit on failure. The
 * child keeps stdin and stderr (the server log), stdout_fd as its stdout
 * if >= 0, and listen_fd and status_fd (if >= 0) as GS_GPUD_LISTEN_FD and
 * GS_GPUD_STATUS_FD; nothing else.
 */
static pid_t
start_program(char *const argv[], int device, int stdout_fd, int listen_fd, int status_fd)
{
	pid_t		parent = getpid();
	pid_t		pid = fork();

	if (pid != 0)
		return pid;

	/* the child */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(1);
	{
		sigset_t	none;

		for (int s = 1; s < NSIG; s++)
			if (s != SIGKILL && s != SIGSTOP)
				signal(s, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}
	if (stdout_fd >= 0)
		dup2(stdout_fd, STDOUT_FILENO);
	if (listen_fd >= 0 && status_fd >= 0)
	{
		/* out of the way of the targets first, then onto them */
		int			high_listen = fcntl(listen_fd, F_DUPFD, 64);
		int			high_status = fcntl(status_fd, F_DUPFD, 64);

		if (high_listen < 0 || high_status < 0)
			_exit(1);
		place_fd(high_listen, GS_GPUD_LISTEN_FD);
		place_fd(high_status, GS_GPUD_STATUS_FD);
	}
	for (int fd = listen_fd >= 0 ? GS_GPUD_STATUS_FD + 1 : 3; fd < 1024; fd++)
		close(fd);
	setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
	if (device >= 0)
	{
		char		visible[16];

		snprintf(visible, sizeof(visible), "%d", device);
		setenv("CUDA_VISIBLE_DEVICES", visible, 1);
	}
	execv(argv[0], argv);
	_exit(127);
}

/* How many GPUs gpusort-gpud sees (run once, in a child: CUDA never
 * starts in the worker), within COUNT_TIMEOUT_MS. -1 if it could not be
 * run; *why says more. */
static int
count_gpus(char *why, size_t why_size)
{
	char	   *argv[] = {gpud_path, GS_GPUD_COUNT, NULL};
	int			pipe_fds[2];
	char		output[512];
	size_t		got = 0;
	pid_t		pid;
	int			status = 0;
	TimestampTz deadline;
	bool		timed_out = false;

	why[0] = '\0';
	if (pipe2(pipe_fds, O_CLOEXEC) != 0)
	{
		snprintf(why, why_size, "pipe: %m");
		return -1;
	}
	pid = start_program(argv, -1, pipe_fds[1], -1, -1);
	close(pipe_fds[1]);
	if (pid < 0)
	{
		close(pipe_fds[0]);
		snprintf(why, why_size, "fork: %m");
		return -1;
	}
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), COUNT_TIMEOUT_MS);
	while (got < sizeof(output) - 1 && !got_sigterm)
	{
		struct pollfd readable = {pipe_fds[0], POLLIN, 0};
		long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		ssize_t		n;

		if (left <= 0)
		{
			timed_out = true;
			break;
		}
		if (poll(&readable, 1, (int) Min(left, 1000)) <= 0)
			continue;
		n = read(pipe_fds[0], output + got, sizeof(output) - 1 - got);
		if (n > 0)
			got += n;
		else if (n == 0 || errno != EINTR)
			break;
	}
	close(pipe_fds[0]);
	output[got] = '\0';
	if (timed_out || got_sigterm)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (timed_out)
	{
		snprintf(why, why_size, "%s --count did not answer in %d s", gpud_path,
				 COUNT_TIMEOUT_MS / 1000);
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got == 0)
	{
		snprintf(why, why_size, "%s --count failed (%s)", gpud_path,
				 WIFEXITED(status) && WEXITSTATUS(status) == 127 ? "cannot execute it" :
				 "see the server log");
		return -1;
	}
	{
		int			count = gs_gpud_parse_count(output, why, why_size);

		if (count < 0)
			snprintf(why, why_size, "%s --count printed no count", gpud_path);
		return count;
	}
}

/* gpusort.devices as device numbers; false (and *why) when unusable. */
static bool
parse_devices(int available, char *why, size_t why_size)
{
	char	   *list = pstrdup(gpusort_devices ? gpusort_devices : "all");
	char	   *item;
	char	   *save = NULL;

	nprocesses = 0;
	if (pg_strcasecmp(list, "all") == 0)
	{
		for (int d = 0; d < available && d < GS_SERVICE_MAX_GPUS; d++)
			processes[nprocesses++].device = d;
		return true;
	}
	for (item = strtok_r(list, ", ", &save); item; item = strtok_r(NULL, ", ", &save))
	{
		char	   *end;
		long		device = strtol(item, &end, 10);

		if (*end != '\0' || device < 0 || device >= available)
		{
			snprintf(why, why_size, "gpusort.devices names \"%s\", but there %s %d GPU%s",
					 item, available == 1 ? "is" : "are", available, available == 1 ? "" : "s");
			return false;
		}
		if (nprocesses < GS_SERVICE_MAX_GPUS)
			processes[nprocesses++].device = (int) device;
	}
	return true;
}

/*
 * A listening socket for a new gpusort-gpud, bound (not yet listening:
 * the child listens, so that backends see its pid as the peer's) under a
 * fresh random name in the abstract namespace; -1 (and a LOG) on failure.
 */
static int
make_socket(char *name)
{
	for (int attempt = 0; attempt < 3; attempt++)
	{
		uint8		random[16];
		struct sockaddr_un address;
		size_t		length;
		int			fd;

		if (!pg_strong_random(random, sizeof(random)))
		{
			ereport(LOG, (errmsg("gpusort GPU service: no random bytes for a socket name")));
			return -1;
		}
		strcpy(name, "gpusort-");
		for (int i = 0; i < (int) sizeof(random); i++)
			sprintf(name + 8 + 2 * i, "%02x", random[i]);
		length = strlen(name);
		memset(&address, 0, sizeof(address));
		address.sun_family = AF_UNIX;
		memcpy(address.sun_path + 1, name, length);
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0)
		{
			ereport(LOG, (errmsg("gpusort GPU service: cannot make a socket: %m")));
			return -1;
		}
		if (bind(fd, (struct sockaddr *) &address,
				 (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + length)) == 0)
			return fd;
		ereport(LOG, (errmsg("gpusort GPU service: cannot bind @%s: %m", name)));
		close(fd);
	}
	return -1;
}

/* A zeroed status page for a new gpusort-gpud, mapped here; -1 on failure. */
static int
make_status_page(gs_status_page **page)
{
	int			fd = memfd_create("gpusort-status", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void	   *mapped;

	/* sealed at its size: the child cannot shrink it under the worker's
	 * mapping (a SIGBUS here would restart the server) */
	if (fd < 0 || ftruncate(fd, STATUS_PAGE_BYTES) != 0 ||
		fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
	{
		ereport(LOG, (errmsg("gpusort GPU service: cannot make a status page: %m")));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	mapped = mmap(NULL, STATUS_PAGE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
	if (mapped == MAP_FAILED)
	{
		ereport(LOG, (errmsg("gpusort GPU service: cannot map a status page: %m")));
		close(fd);
		return -1;
	}
	*page = (gs_status_page *) mapped;
	return fd;
}

static void
retry_later(GpudProcess *p)
{
	p->pid = 0;
	p->next_start = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), BACKOFF_MAX_MS);
}

static void
start_gpud(int gpu)
{
	GpudProcess *p = &processes[gpu];
	char		socket_name[GS_SOCKET_NAME_BYTES];
	char		index[16],
				staging[16],
				budget[16];
	char	   *argv[] = {gpud_path, GS_GPUD_GPU_INDEX, index, GS_GPUD_STAGING_MB, staging,
		GS_GPUD_BUDGET_MB, budget, GS_GPUD_BUILD, GPUSORT_BUILD, NULL};
	gs_status_page *page = NULL;
	int			status_fd;
	int			listen_fd;

	snprintf(index, sizeof(index), "%d", gpu);
	snprintf(staging, sizeof(staging), "%d", gpusort_service_staging_mb);
	snprintf(budget, sizeof(budget), "%d", gpusort_service_memory_budget_mb);

	status_fd = make_status_page(&page);
	if (status_fd < 0)
	{
		retry_later(p);
		return;
	}
	listen_fd = make_socket(socket_name);
	if (listen_fd < 0)
	{
		close(status_fd);
		munmap(page, STATUS_PAGE_BYTES);
		retry_later(p);
		return;
	}
	p->pid = start_program(argv, p->device, -1, listen_fd, status_fd);
	close(listen_fd);
	close(status_fd);
	if (p->pid < 0)
	{
		ereport(LOG, (errmsg("gpusort GPU service: cannot start %s: %m", gpud_path)));
		munmap(page, STATUS_PAGE_BYTES);
		retry_later(p);
		return;
	}
	p->status = page;
	p->started = GetCurrentTimestamp();
	p->published = false;
	p->heartbeat = 0;
	p->heartbeat_moved = p->started;
	p->killed_because = NULL;
	SpinLockAcquire(&gpu_service->mutex);
	gpu_service->gpus[gpu].state = GPU_SERVICE_STARTING;
	gpu_service->gpus[gpu].pid = p->pid;
	strlcpy(gpu_service->gpus[gpu].socket_name, socket_name,
			sizeof(gpu_service->gpus[gpu].socket_name));
	gpu_service->gpus[gpu].started_at = p->started;
	SpinLockRelease(&gpu_service->mutex);
}

/* A consistent copy of a status page, checked; false when the child is
 * writing it right now (read it next time) or it makes no sense. */
static bool
read_status(const GpudProcess *p, gs_status_page *copy)
{
	for (int attempt = 0; attempt < 4; attempt++)
	{
		uint32		before = __atomic_load_n(&p->status->sequence, __ATOMIC_ACQUIRE);

		if (before & 1)
			continue;
		memcpy(copy, p->status, sizeof(*copy));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&p->status->sequence, __ATOMIC_RELAXED) != before)
			continue;
		copy->device.name[sizeof(copy->device.name) - 1] = '\0';
		copy->device.reason[sizeof(copy->device.reason) - 1] = '\0';
		return copy->magic == GS_STATUS_MAGIC && copy->protocol == GS_SERVICE_PROTOCOL &&
			copy->state <= GS_GPUD_NO_GPU &&
			(copy->state == GS_GPUD_STARTING ||
			 ((copy->generation >> 32) == (uint64) p->pid && copy->staging_bytes > 0));
	}
	return false;
}

/* Kills a child that does not answer; reap_children() restarts it. */
static void
kill_unresponsive(int gpu, const char *why, long waited_ms)
{
	GpudProcess *p = &processes[gpu];

	ereport(LOG,
			(errmsg("gpusort GPU service: the process of GPU %d (pid %d) %s for %ld ms; "
					"killing it", gpu, (int) p->pid, why, waited_ms)));
	p->killed_because = why;
	kill(p->pid, SIGKILL);
	SpinLockAcquire(&gpu_service->mutex);
	gpu_service->gpus[gpu].hangs++;
	/* backends stop using it now, not at its death */
	gpu_service->gpus[gpu].state = GPU_SERVICE_RESTARTING;
	SpinLockRelease(&gpu_service->mutex);
}

/* Reads a running child's status page: publishes it once ready, copies
 * its load, and kills it if it stopped answering. */
static void
watch_gpud(int gpu, TimestampTz now)
{
	GpudProcess *p = &processes[gpu];
	GpuServiceGpu *g = &gpu_service->gpus[gpu];
	gs_status_page page;
	uint64		heartbeat = __atomic_load_n(&p->status->heartbeat, __ATOMIC_RELAXED);

	if (p->killed_because != NULL)
		return;					/* dying */
	if (heartbeat != p->heartbeat)
	{
		p->heartbeat = heartbeat;
		p->heartbeat_moved = now;
	}
	if (!read_status(p, &page) || page.state == GS_GPUD_STARTING)
	{
		long		waited = TimestampDifferenceMilliseconds(p->started, now);

		if (!p->published && waited > GPUD_START_TIMEOUT_MS)
			kill_unresponsive(gpu, "did not become ready", waited);
		else if (p->published &&
				 TimestampDifferenceExceeds(p->heartbeat_moved, now, GPUD_LIVENESS_TIMEOUT_MS))
			kill_unresponsive(gpu, "stopped answering",
							  TimestampDifferenceMilliseconds(p->heartbeat_moved, now));
		return;
	}
	if (p->published &&
		TimestampDifferenceExceeds(p->heartbeat_moved, now, GPUD_LIVENESS_TIMEOUT_MS))
	{
		kill_unresponsive(gpu, "stopped answering",
						  TimestampDifferenceMilliseconds(p->heartbeat_moved, now));
		return;
	}

	SpinLockAcquire(&gpu_service->mutex);
	g->connections = page.connections;
	g->jobs_waiting = page.jobs_waiting;
	g->slots_used = page.slots_used;
	g->budget_used = page.budget_used;
	g->rows_jobs = page.rows_jobs;
	g->files_open = page.files_open;
	g->jobs_failed = page.jobs_failed;
	if (!p->published)
	{
		bool		usable = page.state == GS_GPUD_READY && page.device.usable;

		g->device = page.device;
		g->staging_bytes = page.staging_bytes;
		g->budget_bytes = page.budget_bytes;
		g->emulated = page.emulated != 0;
		g->state = usable ? GPU_SERVICE_READY : GPU_SERVICE_NO_GPU;
		strlcpy(g->reason, usable ? "" : page.device.reason, sizeof(g->reason));
	}
	SpinLockRelease(&gpu_service->mutex);
	if (!p->published)
	{
		p->published = true;
		p->heartbeat_moved = now;
		if (page.state == GS_GPUD_READY && page.device.usable)
			ereport(LOG, (errmsg("gpusort GPU service: GPU %d ready (%s, pid %d)",
								 gpu, page.device.name, (int) p->pid)));
		else
			ereport(LOG, (errmsg("gpusort GPU service: GPU %d not usable: %s",
								 gpu, page.device.reason)));
	}
}

/* Collects every child that ended and plans its restart. */
static void
reap_children(void)
{
	pid_t		pid;
	int			status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
	{
		TimestampTz now = GetCurrentTimestamp();
		int			gpu;
		GpudProcess *p;
		GpuServiceGpu *g;
		bool		fault = WIFEXITED(status) && WEXITSTATUS(status) == GPUD_EXIT_DEVICE_FAULT;
		char		how[128];

		for (gpu = 0; gpu < nprocesses; gpu++)
			if (processes[gpu].pid == pid)
				break;
		if (gpu == nprocesses)
			continue;			/* (a --count child reaped late) */
		p = &processes[gpu];
		g = &gpu_service->gpus[gpu];

		if (p->killed_because != NULL)
			snprintf(how, sizeof(how), "%s and was killed", p->killed_because);
		else if (WIFSIGNALED(status))
			snprintf(how, sizeof(how), "was killed by signal %d", WTERMSIG(status));
		else
			snprintf(how, sizeof(how), "exited with code %d", WEXITSTATUS(status));

		if (TimestampDifferenceExceeds(p->started, now, HEALTHY_AFTER_MS))
			p->backoff_ms = BACKOFF_FIRST_MS;
		else
			p->backoff_ms = Min(Max(p->backoff_ms * 2, BACKOFF_FIRST_MS), BACKOFF_MAX_MS);
		p->pid = 0;
		p->next_start = TimestampTzPlusMilliseconds(now, p->backoff_ms);
		if (p->status != NULL)
			munmap(p->status, STATUS_PAGE_BYTES);
		p->status = NULL;
		p->published = false;
		p->killed_because = NULL;

		SpinLockAcquire(&gpu_service->mutex);
		g->pid = 0;
		g->socket_name[0] = '\0';
		g->restarts++;
		g->connections = g->jobs_waiting = g->slots_used = g->rows_jobs = g->files_open = 0;
		g->budget_used = 0;
		if (fault)
			g->device_faults++;
		SpinLockRelease(&gpu_service->mutex);

		if (fault && g->device_faults >= MAX_DEVICE_FAULTS)
		{
			set_gpu_state(gpu, GPU_SERVICE_FAILED,
						  "the GPU failed repeatedly; it stays unused until the server restarts");
			ereport(LOG,
					(errmsg("gpusort GPU service: the process of GPU %d (pid %d) %s after its "
							"%d%s GPU fault; GPU %d is marked unusable until the server restarts",
							gpu, (int) pid, how, g->device_faults,
							g->device_faults == 3 ? "rd" : "th", gpu)));
			continue;
		}
		set_gpu_state(gpu, GPU_SERVICE_RESTARTING, fault ? "after a GPU fault" : how);
		ereport(LOG,
				(errmsg("gpusort GPU service: the process of GPU %d (pid %d) %s%s; "
						"restarting it in %d ms",
						gpu, (int) pid, how, fault ? " after a GPU fault" : "",
						p->backoff_ms),
				 errdetail("Its jobs failed with it: array sorts and sorts within work_mem "
						   "finish on the CPU under gpusort.device = auto; sorts whose rows "
						   "it held beyond work_mem fail.")));
	}
}

static void
stop_children(void)
{
	for (int gpu = 0; gpu < nprocesses; gpu++)
		if (processes[gpu].pid > 0)
			kill(processes[gpu].pid, SIGTERM);
	for (int waited = 0; waited < 50; waited++)
	{
		bool		any = false;

		for (int gpu = 0; gpu < nprocesses; gpu++)
			if (processes[gpu].pid > 0)
			{
				if (waitpid(processes[gpu].pid, NULL, WNOHANG) == processes[gpu].pid)
					processes[gpu].pid = 0;
				else
					any = true;
			}
		if (!any)
			return;
		pg_usleep(100 * 1000);
	}
	for (int gpu = 0; gpu < nprocesses; gpu++)
		if (processes[gpu].pid > 0)
			kill(processes[gpu].pid, SIGKILL);
}

/* Sleeps until SIGTERM, for a service that has nothing to run. */
static void
idle_until_stopped(void)
{
	while (!got_sigterm)
	{
		WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	proc_exit(0);
}

void
gpusort_service_main(Datum arg)
{
	char		why[256];
	int			available;

	pqsignal(SIGTERM, on_sigterm);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGCHLD, on_sigchld);
	BackgroundWorkerUnblockSignals();

	if (gpu_service == NULL)
		proc_exit(1);
	SpinLockAcquire(&gpu_service->mutex);
	gpu_service->started_at = GetCurrentTimestamp();
	SpinLockRelease(&gpu_service->mutex);

	if (pg_strcasecmp(gpusort_devices, "none") == 0 || gpusort_devices[0] == '\0')
	{
		set_service_state(GPU_SERVICE_DISABLED, "gpusort.devices = 'none'");
		ereport(LOG, (errmsg("gpusort GPU service: disabled (gpusort.devices = 'none')")));
		idle_until_stopped();
	}

	/* gpusort-gpud sits beside the postgres binary */
	strlcpy(gpud_path, my_exec_path, sizeof(gpud_path));
	get_parent_directory(gpud_path);
	join_path_components(gpud_path, gpud_path, GPUD_PROGRAM);
	if (access(gpud_path, X_OK) != 0)
	{
		snprintf(why, sizeof(why), "%s is missing or not executable: reinstall gpusort",
				 gpud_path);
		set_service_state(GPU_SERVICE_FAILED, why);
		ereport(LOG, (errmsg("gpusort GPU service: %s; sorts run on the CPU", why)));
		idle_until_stopped();
	}

	available = count_gpus(why, sizeof(why));
	if (available <= 0 || !parse_devices(available, why, sizeof(why)) || nprocesses == 0)
	{
		if (available == 0 && why[0] == '\0')
			snprintf(why, sizeof(why), "no CUDA-capable GPU found");
		set_service_state(GPU_SERVICE_NO_GPU, why);
		ereport(LOG, (errmsg("gpusort GPU service: no GPU to use (%s); sorts run on the CPU",
							 why)));
		idle_until_stopped();
	}

	SpinLockAcquire(&gpu_service->mutex);
	gpu_service->ngpus = nprocesses;
	gpu_service->state = GPU_SERVICE_READY;
	SpinLockRelease(&gpu_service->mutex);

	while (!got_sigterm)
	{
		TimestampTz now;
		bool		starting = false;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		reap_children();
		now = GetCurrentTimestamp();
		for (int gpu = 0; gpu < nprocesses; gpu++)
		{
			GpudProcess *p = &processes[gpu];

			if (gpu_service->gpus[gpu].state == GPU_SERVICE_FAILED)
				continue;
			if (p->pid == 0 && now >= p->next_start)
				start_gpud(gpu);
			if (p->pid > 0)
			{
				watch_gpud(gpu, now);
				starting |= !p->published;
			}
		}
		WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
				  starting ? 20 : 250, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	stop_children();
	proc_exit(0);
}
