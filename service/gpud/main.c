/*
 * gpud/main.c — gpusort-gpud, the GPU service's CUDA process: one per
 * GPU, started and restarted by the service's background worker
 * (worker.c).
 *
 * It owns the GPU: the CUDA context, the staging area (a sealed memfd,
 * page-locked here, handed to every backend that connects), the GPU memory
 * budget and the queue of jobs waiting for it. Backends speak protocol.h to
 * it over the socket the worker made for it; each connection gets a thread
 * that admits, runs and answers one job. It runs no PostgreSQL code and
 * does not map PostgreSQL's shared memory, so if it dies (kill -9, a
 * segfault, a GPU fault) only its own jobs are lost: the worker starts it
 * again, and backends sort those jobs on the CPU under
 * gpusort.device = auto. Its main thread beats a heartbeat on the worker's
 * status page; a process that stops (SIGSTOP, a hang) is restarted.
 *
 * This file starts it: the command line (--count, or the GPU and the
 * sizes the worker gives), the device probe, the staging area, the
 * status page and its heartbeat, and the accept loop that checks each
 * connection's user and gives it a thread (connections.c). The rest:
 * admission.c (the budget, the slots, the queue), jobs.c (array sorts),
 * rows_jobs.c (a spilled sort's rows), connections.c (the messages),
 * device_cuda.c or device_emulated.c (the GPU: the kernels, or the test
 * mode's CPU engine, chosen here at the start, which also sets the
 * engine's GPU backend; device_none.c in a build without CUDA);
 * gpud_int.h has what they share.
 *
 * Test mode: with GPUSORT_SERVICE_EMULATE=<MB> in its environment the
 * process plays a GPU of that much memory with the CPU engine (so CI, which
 * has no GPU, tests the whole service); GPUSORT_SERVICE_EMULATE_GPUS sets
 * how many such GPUs there are, GPUSORT_SERVICE_EMULATE_DELAY_MS makes every
 * job take at least that long (queueing and cancellation tests), and
 * GPUSORT_SERVICE_EMULATE_FAIL_N=<n> makes every sort of exactly n keys fail
 * as a GPU error would (GPUSORT_SERVICE_EMULATE_FAIL_STICKY=1: one that
 * breaks the context); GPUSORT_SERVICE_EMULATE_WRONG=1 makes the results
 * wrong, as a faulty GPU or an impostor might (a sort's first key takes
 * its second's value; a rows job's first record in order gets another
 * key), so the tests see the clients' checks catch it. All of it lives in
 * device_emulated.c, behind the same interface as the kernels.
 */
#define _GNU_SOURCE
#include "gpud_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GPUD_EXIT_USAGE 2

/* The process's state: gpud_int.h. */
GpudService service;

/* Counters for the status page, kept by the threads that change them. */
uint32_t connections_open = 0;	/* atomic */
uint32_t rows_jobs_open = 0;	/* atomic */
uint32_t files_held = 0;	/* atomic */
uint64_t jobs_failed = 0;	/* atomic */

void
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

double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------------
 * Start-up
 * ------------------------------------------------------------------------ */

static void
quit_now(int signal_number)
{
	(void) signal_number;
	_exit(0);
}

static void
usage(void)
{
	fprintf(stderr,
			"usage: gpusort-gpud --gpu-index N --staging-mb MB --budget-mb MB --build VERSION\n"
			"       (its listening socket on descriptor 3, its status page on 4)\n"
			"       gpusort-gpud --count    (prints how many GPUs it sees)\n"
			"Started by gpusort's background worker, not by hand.\n");
	exit(GPUD_EXIT_USAGE);
}

const GpudDevice *gpud_device = &gpud_cuda_device;

/* The GPU this process sorts on: the kernels', or the test mode's. */
static void
probe_device(void)
{
	gpud_device->probe(&service.device);
}

static void
make_staging_area(void)
{
	/* sealed at its size: a backend that mapped it can trust its size and
	 * never meets a SIGBUS from a shrunk file */
	service.staging_fd = memfd_create("gpusort-staging", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (service.staging_fd < 0 ||
		ftruncate(service.staging_fd, (off_t) service.staging_bytes) != 0 ||
		fcntl(service.staging_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
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
	if (service.device.usable &&
		gpud_device->register_host(service.staging, service.staging_bytes) != GPU_OK)
		log_line("the staging area stays pageable (slower copies): %s", gpud_device->last_error());
}

/* The socket the worker bound for this process (GS_GPUD_LISTEN_FD), now
 * listening: backends then see this process as its peer. */
static int
listen_socket(void)
{
	int			fd = GS_GPUD_LISTEN_FD;
	int			type = 0;
	socklen_t	length = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_SEQPACKET ||
		fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 || listen(fd, 256) != 0)
	{
		log_line("no listening socket from the worker on descriptor %d: %s", fd,
				 strerror(errno));
		exit(1);
	}
	return fd;
}

/* The worker's status page (GS_GPUD_STATUS_FD), mapped; exits without it. */
static void
map_status_page(void)
{
	struct stat file;
	void	   *mapped;

	if (fstat(GS_GPUD_STATUS_FD, &file) != 0 || file.st_size < (off_t) sizeof(gs_status_page))
	{
		log_line("no status page from the worker on descriptor %d", GS_GPUD_STATUS_FD);
		exit(1);
	}
	mapped = mmap(NULL, sizeof(gs_status_page), PROT_READ | PROT_WRITE, MAP_SHARED,
				  GS_GPUD_STATUS_FD, 0);
	if (mapped == MAP_FAILED)
	{
		log_line("cannot map the status page: %s", strerror(errno));
		exit(1);
	}
	close(GS_GPUD_STATUS_FD);
	service.status = mapped;
}

/* Rewrites the status page: its state, what was found, and the load now,
 * between two increments of its sequence (protocol.h). Main thread only. */
static void
publish_status(gs_gpud_state state)
{
	gs_status_page *page = service.status;

	__atomic_store_n(&page->sequence, page->sequence + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	page->magic = GS_STATUS_MAGIC;
	page->protocol = GS_SERVICE_PROTOCOL;
	page->state = state;
	page->device = service.device;
	page->staging_bytes = service.staging_bytes;
	page->budget_bytes = service.budget_bytes;
	page->generation = service.generation;
	page->emulated = gpud_device->emulated;
	page->connections = __atomic_load_n(&connections_open, __ATOMIC_RELAXED);
	page->rows_jobs = __atomic_load_n(&rows_jobs_open, __ATOMIC_RELAXED);
	page->files_open = __atomic_load_n(&files_held, __ATOMIC_RELAXED);
	page->jobs_failed = __atomic_load_n(&jobs_failed, __ATOMIC_RELAXED);
	pthread_mutex_lock(&admission_lock);
	page->jobs_waiting = 0;
	for (Waiter *w = queue_head; w != NULL; w = w->next)
		page->jobs_waiting++;
	page->slots_used = (uint32_t) nslots;
	page->budget_used = budget_used;
	pthread_mutex_unlock(&admission_lock);
	__atomic_store_n(&page->sequence, page->sequence + 1, __ATOMIC_RELEASE);
}

static void
beat(void)
{
	__atomic_add_fetch(&service.status->heartbeat, 1, __ATOMIC_RELAXED);
}

int
main(int argc, char **argv)
{
	uint64_t	budget_mb = 0;
	int			listen_fd;

	service.gpu_index = -1;
	if (emulation_wanted())
		gpud_device = &gpud_emulated_device;
	gs_engine_set_backend(gpud_device->engine_backend);
	for (int i = 1; i < argc; i++)
	{
		const char *value = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], GS_GPUD_COUNT) == 0)
		{
			char		reason[256] = "";
			int			count = gpud_device->count(reason, sizeof(reason));

			/* protocol.h's form: gs_gpud_parse_count() reads it */
			if (count == 0)
				printf("0 %s\n", reason);
			else
				printf("%d\n", count);
			return 0;
		}
		if (value == NULL)
			usage();
		if (strcmp(argv[i], GS_GPUD_GPU_INDEX) == 0)
			service.gpu_index = atoi(value);
		else if (strcmp(argv[i], GS_GPUD_STAGING_MB) == 0)
			service.staging_bytes = strtoull(value, NULL, 10) << 20;
		else if (strcmp(argv[i], GS_GPUD_BUDGET_MB) == 0)
			budget_mb = strtoull(value, NULL, 10);
		else if (strcmp(argv[i], GS_GPUD_BUILD) == 0)
			snprintf(service.build, sizeof(service.build), "%s", value);
		else
			usage();
		i++;
	}
	if (service.gpu_index < 0 || service.staging_bytes == 0 || service.build[0] == '\0')
		usage();
	/* the server's module and this program come from one build, or the
	 * service does not start (a package upgraded under a running server:
	 * restart it) */
	if (strcmp(service.build, GPUSORT_BUILD) != 0)
	{
		log_line("this gpusort-gpud is build %s, the server's gpusort module build %s: "
				 "restart the server after installing gpusort", GPUSORT_BUILD, service.build);
		exit(GPUD_EXIT_USAGE);
	}

	signal(SIGPIPE, SIG_IGN);
	/* the postmaster's immediate stop reaches this process too (the
	 * worker's process group): leave at once, without a core file in the
	 * data directory */
	signal(SIGQUIT, quit_now);
	map_status_page();
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

	/*
	 * The accept loop: it beats the heartbeat and refreshes the status page
	 * every GS_HEARTBEAT_MS, so the worker sees it alive (a process stopped
	 * or stuck here stops the heartbeat, and the worker restarts it).
	 */
	for (;;)
	{
		gs_gpud_state state = service.device.usable ? GS_GPUD_READY : GS_GPUD_NO_GPU;
		struct pollfd listening = {listen_fd, POLLIN, 0};
		struct ucred peer;
		socklen_t	peer_length = sizeof(peer);
		pthread_t	thread;
		pthread_attr_t attributes;
		int			fd;

		publish_status(state);
		beat();
		if (poll(&listening, 1, GS_HEARTBEAT_MS) <= 0)
			continue;
		fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
		{
			if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
				log_line("accept: %s", strerror(errno));
			continue;
		}
		/* only the server's own processes: the same user */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_length) != 0 ||
			peer.uid != geteuid())
		{
			log_line("refused a connection from pid %d, uid %d: not the server's user",
					 (int) peer.pid, (int) peer.uid);
			close(fd);
			continue;
		}
		__atomic_add_fetch(&connections_open, 1, __ATOMIC_RELAXED);
		pthread_attr_init(&attributes);
		pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&thread, &attributes, serve_connection, (void *) (intptr_t) fd) != 0)
		{
			log_line("cannot start a thread: %s", strerror(errno));
			__atomic_sub_fetch(&connections_open, 1, __ATOMIC_RELAXED);
			close(fd);
		}
		pthread_attr_destroy(&attributes);
	}
}
