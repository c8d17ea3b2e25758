/*
 * service.h — the GPU service as PostgreSQL's processes see it: its state
 * and statistics in PostgreSQL's shared memory, written by the service's
 * background worker (worker.c) and by backends' client (client.c), read by
 * gpusort_info() and the gpusort_stats view (src/stats.c).
 *
 * What the service owns, and who does what:
 *   - worker.c: the background worker "gpusort GPU service". It starts one
 *     gpusort-gpud per GPU, restarts one that dies or stops answering, and
 *     publishes each one's state, socket and load here. Killing it is a
 *     crash of a server process (PostgreSQL restarts the server); killing a
 *     gpusort-gpud is not.
 *   - gpud/: gpusort-gpud, the only process that runs CUDA (protocol.h);
 *     gpud/main.c says what it does, gpud/gpud_int.h which file does what.
 *   - client.c: the backends' side. It is the engine's GPU backend in the
 *     server (gpu_service_backend, engine/sort_backend.h; _PG_init sets
 *     it), so the engine sorts "on the GPU" the same way whether the
 *     kernels are in its process (gpusort-gpud, the unit tests) or
 *     reached through the service (the server). client_rows.c: the rows jobs
 *     below, over client.c's connections (client_int.h).
 */
#ifndef GPUSORT_SERVICE_H
#define GPUSORT_SERVICE_H

#include "postgres.h"

#include "port/atomics.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "protocol.h"
#include "sort_backend.h"			/* the interface the client offers the engine */

typedef enum GpuServiceState
{
	GPU_SERVICE_NOT_STARTED = 0,	/* the worker has not started it yet */
	GPU_SERVICE_DISABLED,		/* gpusort.devices = 'none' */
	GPU_SERVICE_STARTING,		/* gpusort-gpud is starting CUDA */
	GPU_SERVICE_READY,
	GPU_SERVICE_NO_GPU,			/* it runs, but found its GPU unusable */
	GPU_SERVICE_RESTARTING,		/* it died; the worker starts it again */
	GPU_SERVICE_FAILED			/* given up on: see reason */
} GpuServiceState;

/* Why a sort that could have run on the GPU ran on the CPU. */
typedef enum GpuFallbackReason
{
	FALLBACK_NO_SERVICE = 0,	/* no service, or no usable GPU in it */
	FALLBACK_QUEUE_TIMEOUT,		/* waited gpusort.queue_timeout for memory */
	FALLBACK_TOO_LARGE,			/* over the budget or the per-sort cap */
	FALLBACK_GPU_ERROR,			/* the GPU failed the job */
	FALLBACK_SERVICE_LOST,		/* gpusort-gpud died during the job */
	FALLBACK_REASONS
} GpuFallbackReason;

typedef struct GpuServiceCounters
{
	pg_atomic_uint64 jobs;		/* jobs the GPU finished */
	pg_atomic_uint64 rows;		/* keys those jobs sorted */
	pg_atomic_uint64 bytes_moved;	/* to and from the GPU */
	pg_atomic_uint64 gpu_time_us;	/* upload + sort + download */
	pg_atomic_uint64 queued_jobs;	/* jobs that waited for admission */
	pg_atomic_uint64 queue_wait_us;
	pg_atomic_uint64 errors;	/* jobs that failed (any outcome) */
	pg_atomic_uint64 fallbacks[FALLBACK_REASONS];
	pg_atomic_uint64 given_back_jobs;	/* rows jobs whose GPU memory went back
										 * to a waiting job before their end */
} GpuServiceCounters;

typedef struct GpuServiceGpu
{
	/* under the service's mutex */
	GpuServiceState state;
	pid_t		pid;
	char		socket_name[GS_SOCKET_NAME_BYTES];	/* where it listens (protocol.h) */
	TimestampTz started_at;
	int			restarts;
	int			device_faults;
	int			hangs;			/* times it stopped answering and was killed */
	gs_wire_device device;		/* as its status page says */
	uint64		staging_bytes;
	uint64		budget_bytes;
	bool		emulated;
	char		reason[256];
	/* its load, as its status page said last (the worker copies it) */
	uint32		connections;
	uint32		jobs_waiting;
	uint32		slots_used;
	uint64		budget_used;
	uint32		rows_jobs;
	uint32		files_open;
	uint64		jobs_failed;

	/* lock-free */
	pg_atomic_uint32 in_flight;	/* jobs of backends on this GPU now */
	GpuServiceCounters counters;
} GpuServiceGpu;

typedef struct GpuServiceShared
{
	slock_t		mutex;
	GpuServiceState state;		/* of the service as a whole */
	TimestampTz started_at;
	int			ngpus;
	char		reason[256];	/* when DISABLED or FAILED */
	GpuServiceGpu gpus[GS_SERVICE_MAX_GPUS];
	GpuServiceCounters counters;	/* everything, and what no GPU took */
	TimestampTz stats_reset;
	pg_atomic_uint32 next_gpu;	/* round robin among equally loaded GPUs */
} GpuServiceShared;

/* NULL unless gpusort is in shared_preload_libraries */
extern GpuServiceShared *gpu_service;

/* ---- worker.c ---- */
extern char *gpusort_devices;
extern int	gpusort_service_staging_mb;
extern int	gpusort_service_memory_budget_mb;
extern void gpusort_service_init(void);	/* from _PG_init */
extern const char *gpu_service_state_name(GpuServiceState state);
extern PGDLLEXPORT void gpusort_service_main(Datum arg);

/* ---- client.c ---- */
extern int	gpusort_queue_timeout_ms;
extern int	gpusort_session_gpu_memory_limit_mb;
/* the engine's GPU in the server: the service, whether or not it runs (the
 * probe says why no GPU is usable) */
extern const gs_sort_backend gpu_service_backend;
/* why the client's last job, sort or rows job, failed */
extern const char *gpu_service_last_error(void);
extern void gpu_service_count_fallback(int gpu, GpuFallbackReason reason);
/* Whether a sort the GPU could not take is an error (gpusort.device =
 * gpu, as its assign hook says) rather than a fallback to count. */
extern void gpu_service_set_gpu_required(bool required);

/* ---- client_rows.c ---- */

/*
 * A spilled sort's rows in a GPU's memory (a rows job, protocol.h): the
 * row store (src/row_store_gpu.c) lays batches of records out in the slot
 * (noting each as sent) and appends them, has the service sort them all,
 * then reads the ordered records back (checking each). Open returns NULL
 * (and *why) when the service cannot take them now; the others return
 * false with gpu_service_last_error() saying why. The rows are gone if the
 * job fails after a batch went in.
 */
typedef struct ServiceRows ServiceRows;
extern ServiceRows *service_rows_open(uint64 capacity_bytes, uint64 min_record_bytes, int nkeys,
									  const bool *descending, const bool *nulls_first,
									  uint64 memory_limit, bool shared, char *why,
									  size_t why_size);
extern char *service_rows_slot(ServiceRows *rows, uint64 *bytes);
extern bool service_rows_room(ServiceRows *rows, uint64 records, uint64 bytes);
extern void service_rows_note_sent(ServiceRows *rows, uint32 length, const uint64 *keys,
								   const bool *nulls);

/*
 * A shared rows job (a parallel sort's): the process that opened it puts
 * this in the query's shared memory; every process that sorts a share
 * attaches with its own connection and slot and appends its rows, taking
 * room from the counters here a part at a time. The opener then sorts
 * them all (after service_rows_expect() with the shares' totals) and reads
 * them.
 */
typedef struct ServiceRowsShared
{
	int			gpu;
	uint64		token;
	uint64		generation;		/* of the gpusort-gpud that holds the job */
	uint64		capacity_bytes;
	uint64		max_records;
	pg_atomic_uint64 bytes_taken;
	pg_atomic_uint64 records_taken;
	/* the check of the rows returned (client_rows.c): the opener's point,
	 * the key count, and the fingerprint of what the attached ones sent */
	uint64		check_point[3];
	int			nkeys;
	pg_atomic_uint64 sent_fingerprint;
} ServiceRowsShared;

extern void service_rows_share(ServiceRows *rows, ServiceRowsShared *into);
extern ServiceRows *service_rows_attach(ServiceRowsShared *shared, char *why, size_t why_size);
extern void service_rows_detach(ServiceRows *rows);
extern void service_rows_expect(ServiceRows *rows, uint64 records, uint64 bytes);
extern bool service_rows_append(ServiceRows *rows, uint64 slot_position, uint64 records,
								uint64 bytes);
extern bool service_rows_wait(ServiceRows *rows);
extern bool service_rows_given_back(const ServiceRows *rows);
extern bool service_rows_sort(ServiceRows *rows, gs_backend_timing *timing);
extern bool service_rows_read(ServiceRows *rows, uint64 offset, uint64 length, char *into);
extern bool service_rows_request(ServiceRows *rows, uint64 offset, uint64 length,
								 uint64 slot_position);
extern bool service_rows_check_record(ServiceRows *rows, const char *record);
extern bool service_rows_check_end(ServiceRows *rows);
extern void service_rows_close(ServiceRows *rows);
extern void service_rows_abandon(ServiceRows *rows);

#endif							/* GPUSORT_SERVICE_H */
