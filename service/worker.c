/*
 * worker.c — the GPU service's background worker, "gpusort GPU service":
 * starts one gpusort-gpud per GPU (gpud.c), watches them, restarts one
 * that dies, and publishes their state in shared memory (service.h).
 *
 * Registered from _PG_init when gpusort is in shared_preload_libraries.
 * The worker never touches CUDA itself. Each gpusort-gpud is its child, not
 * the postmaster's, and runs no PostgreSQL code: the postmaster does not
 * see it die, so a crash there is not a crash of the server. It dies with
 * the worker (PR_SET_PDEATHSIG), and the worker with the server.
 *
 * After a crash the process comes back after a pause that doubles from
 * half a second up to 30 seconds while it keeps dying young. One that exits
 * with GPUD_EXIT_DEVICE_FAULT counts as a device fault; after three, the GPU
 * is marked unusable until the server restarts.
 */
#include "postgres.h"

#include <signal.h>
#include <sys/prctl.h>
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
	bool		greeted;		/* its state is published */
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

/*
 * Forks and execs gpusort-gpud. In the child, nothing of PostgreSQL's may
 * run: only async-signal-safe calls until exec, and _exit on failure.
 */
static pid_t
start_program(char *const argv[], int device, int stdout_fd)
{
	pid_t		parent = getpid();
	pid_t		pid = fork();

	if (pid != 0)
		return pid;

	/* the child */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(1);
	if (stdout_fd >= 0)
		dup2(stdout_fd, STDOUT_FILENO);
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	{
		sigset_t	none;

		for (int s = 1; s < NSIG; s++)
			if (s != SIGKILL && s != SIGSTOP)
				signal(s, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}
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
 * starts in the worker). -1 if it could not be run; *why says more. */
static int
count_gpus(char *why, size_t why_size)
{
	char	   *argv[] = {gpud_path, "--count", NULL};
	int			pipe_fds[2];
	char		output[512];
	size_t		got = 0;
	pid_t		pid;
	int			status;

	why[0] = '\0';
	if (pipe(pipe_fds) != 0)
	{
		snprintf(why, why_size, "pipe: %m");
		return -1;
	}
	pid = start_program(argv, -1, pipe_fds[1]);
	close(pipe_fds[1]);
	if (pid < 0)
	{
		close(pipe_fds[0]);
		snprintf(why, why_size, "fork: %m");
		return -1;
	}
	for (;;)
	{
		ssize_t		n = read(pipe_fds[0], output + got, sizeof(output) - 1 - got);

		if (n > 0)
			got += n;
		else if (n == 0 || errno != EINTR || got == sizeof(output) - 1)
			break;
	}
	close(pipe_fds[0]);
	output[got] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got == 0)
	{
		snprintf(why, why_size, "%s --count failed (%s)", gpud_path,
				 WIFEXITED(status) && WEXITSTATUS(status) == 127 ? "cannot execute it" :
				 "see the server log");
		return -1;
	}
	{
		char	   *rest;
		long		count = strtol(output, &rest, 10);

		while (*rest == ' ')
			rest++;
		snprintf(why, why_size, "%s", rest);
		why[strcspn(why, "\n")] = '\0';
		return (int) count;
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

static void
start_gpud(int gpu)
{
	GpudProcess *p = &processes[gpu];
	char		socket_name[64];
	char		index[16],
				staging[16],
				budget[16];
	char	   *argv[] = {gpud_path, "--socket", socket_name, "--gpu-index", index,
		"--staging-mb", staging, "--budget-mb", budget, "--build", GPUSORT_BUILD, NULL};

	gs_service_socket_name(socket_name, sizeof(socket_name), (int) PostmasterPid,
						   PostPortNumber, gpu);
	snprintf(index, sizeof(index), "%d", gpu);
	snprintf(staging, sizeof(staging), "%d", gpusort_service_staging_mb);
	snprintf(budget, sizeof(budget), "%d", gpusort_service_memory_budget_mb);

	p->pid = start_program(argv, p->device, -1);
	if (p->pid < 0)
	{
		ereport(LOG, (errmsg("gpusort GPU service: cannot start %s: %m", gpud_path)));
		p->pid = 0;
		p->next_start = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), BACKOFF_MAX_MS);
		return;
	}
	p->started = GetCurrentTimestamp();
	p->greeted = false;
	SpinLockAcquire(&gpu_service->mutex);
	gpu_service->gpus[gpu].state = GPU_SERVICE_STARTING;
	gpu_service->gpus[gpu].pid = p->pid;
	gpu_service->gpus[gpu].started_at = p->started;
	SpinLockRelease(&gpu_service->mutex);
}

/* Publishes a started process's state once it answers. */
static void
greet(int gpu)
{
	GpudProcess *p = &processes[gpu];
	GpuServiceGpu *g = &gpu_service->gpus[gpu];
	gs_message	welcome;
	char		why[256];

	if (!gpu_service_hello(gpu, &welcome, why, sizeof(why)))
		return;					/* still starting CUDA */
	p->greeted = true;
	SpinLockAcquire(&gpu_service->mutex);
	g->device = welcome.device;
	g->staging_bytes = welcome.staging_bytes;
	g->budget_bytes = welcome.budget_bytes;
	g->emulated = welcome.emulated;
	g->state = welcome.device.usable ? GPU_SERVICE_READY : GPU_SERVICE_NO_GPU;
	strlcpy(g->reason, welcome.device.usable ? "" : welcome.device.reason, sizeof(g->reason));
	SpinLockRelease(&gpu_service->mutex);
	if (welcome.device.usable)
		ereport(LOG, (errmsg("gpusort GPU service: GPU %d ready (%s, pid %d)",
							 gpu, welcome.device.name, (int) p->pid)));
	else
		ereport(LOG, (errmsg("gpusort GPU service: GPU %d not usable: %s",
							 gpu, welcome.device.reason)));
}

/* Collects processes that ended and plans their restart. */
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
		char		how[64];

		for (gpu = 0; gpu < nprocesses; gpu++)
			if (processes[gpu].pid == pid)
				break;
		if (gpu == nprocesses)
			continue;
		p = &processes[gpu];
		g = &gpu_service->gpus[gpu];

		if (WIFSIGNALED(status))
			snprintf(how, sizeof(how), "was killed by signal %d", WTERMSIG(status));
		else
			snprintf(how, sizeof(how), "exited with code %d", WEXITSTATUS(status));

		if (TimestampDifferenceExceeds(p->started, now, HEALTHY_AFTER_MS))
			p->backoff_ms = BACKOFF_FIRST_MS;
		else
			p->backoff_ms = Min(Max(p->backoff_ms * 2, BACKOFF_FIRST_MS), BACKOFF_MAX_MS);
		p->pid = 0;
		p->next_start = TimestampTzPlusMilliseconds(now, p->backoff_ms);

		SpinLockAcquire(&gpu_service->mutex);
		g->pid = 0;
		g->restarts++;
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
				 errdetail("Sorts it was running finish on the CPU under "
						   "gpusort.device = auto, and fail under gpu.")));
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
		while (!got_sigterm)
		{
			WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
		proc_exit(0);
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
		while (!got_sigterm)
		{
			WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
		proc_exit(0);
	}

	available = count_gpus(why, sizeof(why));
	if (available <= 0 || !parse_devices(available, why, sizeof(why)) || nprocesses == 0)
	{
		if (available == 0 && why[0] == '\0')
			snprintf(why, sizeof(why), "no CUDA-capable GPU found");
		set_service_state(GPU_SERVICE_NO_GPU, why);
		ereport(LOG, (errmsg("gpusort GPU service: no GPU to use (%s); sorts run on the CPU",
							 why)));
		while (!got_sigterm)
		{
			WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
		proc_exit(0);
	}

	SpinLockAcquire(&gpu_service->mutex);
	gpu_service->ngpus = nprocesses;
	gpu_service->state = GPU_SERVICE_READY;
	SpinLockRelease(&gpu_service->mutex);

	while (!got_sigterm)
	{
		TimestampTz now = GetCurrentTimestamp();
		bool		starting = false;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		reap_children();
		for (int gpu = 0; gpu < nprocesses; gpu++)
		{
			GpudProcess *p = &processes[gpu];

			if (gpu_service->gpus[gpu].state == GPU_SERVICE_FAILED)
				continue;
			if (p->pid == 0 && now >= p->next_start)
				start_gpud(gpu);
			if (p->pid > 0 && !p->greeted)
			{
				greet(gpu);
				starting |= !p->greeted;
			}
		}
		WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
				  starting ? 50 : 500, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	stop_children();
	proc_exit(0);
}
