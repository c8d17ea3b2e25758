/*
 * gpud_int.h — what the pieces of gpusort-gpud (service/gpud/) share: the
 * process's state, the counters of its status page, and the functions its
 * files call one another by. Plain C, no PostgreSQL headers.
 *
 *   main.c         start-up, the command line, the device probe, the
 *                  staging area, the status page and the accept loop
 *   admission.c    the GPU budget, the staging area's slots, the queue
 *   jobs.c         array jobs (sort, approximate sort, min-max); the wire's
 *                  types to and from the kernels' and the engine's
 *   rows_jobs.c    rows jobs: a spilled sort's rows
 *   connections.c  the protocol's messages; serving one connection
 *   device_cuda.c, device_emulated.c
 *                  the GPU: the CUDA kernels, or the CPU engine playing
 *                  one in the service's test mode (device_none.c: a
 *                  build without CUDA, which has no GPU)
 *
 * main.c's header says what the process is for.
 */
#ifndef GPUSORT_GPUD_INT_H
#define GPUSORT_GPUD_INT_H

#include "../protocol.h"
#include "../../engine/gpusort_engine.h"
#include "../../engine/sort_backend.h"
#include "../../kernels/gpu_api.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* Slots are carved out of the staging area at this alignment. */
#define SLOT_ALIGN 4096

/* The process's state: set up by main() before the first connection. */
typedef struct GpudService
{
	int			gpu_index;
	char		build[64];
	uint64_t	staging_bytes;
	uint64_t	budget_bytes;
	uint64_t	generation;
	gs_wire_device device;
	char	   *staging;
	int			staging_fd;
	gs_status_page *status;		/* the worker's page (protocol.h) */
} GpudService;

extern GpudService service;

/* Counters for the status page, kept by the threads that change them. */
extern uint32_t connections_open;	/* atomic */
extern uint32_t rows_jobs_open;	/* atomic */
extern uint32_t files_held;	/* atomic */
extern uint64_t jobs_failed;	/* atomic */

/*
 * The process's GPU, as the other files use it: the kernels
 * (device_cuda.c) or the test mode's CPU engine (device_emulated.c),
 * chosen as the process starts. A rows job's records are a handle of the
 * device's own.
 */
typedef struct GpudDevice
{
	bool		emulated;
	/* the engine's GPU in this process (main.c sets it at the start), and
	 * where the engine sorts a rows job's keys held in memory */
	const gs_sort_backend *engine_backend;
	gs_device	engine_device;
	/* buffers uploaded to the device are worth page-locking */
	bool		pins_host_memory;
	/* how many GPUs the machine has (0: *reason says why none) */
	int			(*count) (char *reason, size_t reason_size);
	void		(*probe) (gs_wire_device *device);
	/* page-locks host memory (the staging area) for faster copies */
	gpu_status	(*register_host) (void *memory, size_t bytes);
	/* after a failed job: whether the GPU is unusable until the process
	 * starts again */
	bool		(*broken_after_failure) (void);
	/* an array job (sort, approximate sort, min-max) on the data in `area`,
	 * filling `done` */
	gpu_status	(*run_job) (gs_message *job, char *area, int *client_fd, gs_message *done);
	gpu_status	(*rows_create) (size_t capacity_bytes, void **rows);
	gpu_status	(*rows_append) (void *rows, const void *host, size_t bytes);
	/* lays the records out in `order`; adds its times to *timing */
	gpu_status	(*rows_permute) (void *rows, const uint32_t *order, const uint32_t *lengths,
								 size_t n, gs_wire_timing *timing);
	gpu_status	(*rows_read) (void *rows, size_t offset, void *host, size_t bytes);
	void		(*rows_destroy) (void *rows);
	/* what the last failure was */
	const char *(*last_error) (void);
} GpudDevice;

extern const GpudDevice *gpud_device;	/* main.c */
extern const GpudDevice gpud_cuda_device;	/* device_cuda.c, or device_none.c */
extern const GpudDevice gpud_emulated_device;
extern bool emulation_wanted(void);	/* device_emulated.c */

/* ---- main.c ---- */

extern void log_line(const char *format,...);
extern double now_ms(void);

/* ---- admission.c ---- */

typedef struct Waiter
{
	uint64_t	slot_bytes;
	uint64_t	gpu_bytes;
	int32_t		session;
	uint64_t	session_limit;	/* 0: none */
	double		enqueued_ms;
	int			event_fd;		/* written once the job is granted */
	bool		granted;
	uint64_t	slot_offset;
	struct Waiter *next;
} Waiter;

typedef enum
{
	ADMIT_GRANTED,
	ADMIT_TIMEOUT,
	ADMIT_CLIENT_GONE,
	ADMIT_FAILED
} admit_result;

/* the queue and the load, under admission_lock (the status page reads them) */
extern pthread_mutex_t admission_lock;
extern int	nslots;
extern uint64_t budget_used;
extern Waiter *queue_head;

extern void release(uint64_t slot_offset, uint64_t gpu_bytes, int32_t session);
extern void release_budget(uint64_t gpu_bytes, int32_t session);
extern void mark_idle(int32_t id, uint64_t gpu_bytes, bool idle);
extern bool give_back_wanted(int32_t id);
extern admit_result admit(int client_fd, uint64_t slot_bytes, uint64_t gpu_bytes,
						  int32_t session, uint64_t session_limit, int64_t wait_ms,
						  uint64_t *slot_offset, double *waited_ms);

/* ---- jobs.c ---- */

extern uint64_t estimate_gpu_bytes(const gs_message *job);
extern void job_failed(gpu_status status, const char *message);
extern bool client_cancelled(void *arg);
extern int32_t wire_status(gpu_status status);
extern gpu_status gpu_status_of(gs_status status);
extern gs_algorithm engine_algorithm(uint32_t algorithm);
extern gpu_status run_job(gs_message *job, char *area, int *client_fd, gs_message *done);

/* ---- rows_jobs.c ---- */

extern uint64_t rows_slot_bytes(void);
extern void serve_rows(int fd, const gs_message *job, int file, uint64_t slot_offset,
					   uint64_t slot_bytes, uint64_t *gpu_bytes, double queue_ms);
extern void serve_attach(int fd, const gs_message *job);

/* ---- connections.c ---- */

extern bool receive_message(int fd, gs_message *message);
extern void refuse(int fd, gs_refusal refusal, double queue_ms, const char *format,...);
extern bool send_admitted(int fd, const gs_message *job, uint64_t slot_offset,
						  uint64_t slot_bytes, bool chunked, uint64_t gpu_bytes,
						  double queue_ms, uint64_t token);
extern void *serve_connection(void *arg);

#endif							/* GPUSORT_GPUD_INT_H */
