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
 *
 * main.c's header says what the process is for.
 */
#ifndef GPUSORT_GPUD_INT_H
#define GPUSORT_GPUD_INT_H

#include "../protocol.h"
#include "../../engine/gpusort_engine.h"
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
	bool		emulated;
	unsigned	emulate_delay_ms;
	unsigned	emulate_fail_n;
	bool		emulate_fail_sticky;
	bool		emulate_wrong;
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
extern void set_wire_device(gs_wire_device *into, const gpu_device_info *info);
extern gpu_status gpu_status_of(gs_status status);
extern gpu_status run_job(gs_message *job, char *area, int *client_fd, gs_message *done);

/* ---- rows_jobs.c ---- */

extern uint64_t rows_slot_bytes(void);
extern void serve_rows(int fd, const gs_message *job, int file, uint64_t slot_offset,
					   uint64_t slot_bytes, uint64_t *gpu_bytes, double queue_ms);
extern void serve_attach(int fd, const gs_message *job);

/* ---- connections.c ---- */

extern bool send_message(int fd, gs_message *message, int pass_fd);
extern bool receive_message(int fd, gs_message *message);
extern void refuse(int fd, gs_refusal refusal, double queue_ms, const char *format,...);
extern bool send_admitted(int fd, const gs_message *job, uint64_t slot_offset,
						  uint64_t slot_bytes, bool chunked, uint64_t gpu_bytes,
						  double queue_ms, uint64_t token);
extern void *serve_connection(void *arg);

#endif							/* GPUSORT_GPUD_INT_H */
