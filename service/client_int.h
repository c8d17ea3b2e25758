/*
 * client_int.h — what the two halves of the backends' side of the GPU
 * service share: the connection to a gpusort-gpud and its session
 * (client.c, which also is the engine's GPU backend for array sorts)
 * and the rows jobs that use them (client_rows.c). Only client*.c include
 * it; the rest of the server goes through service.h.
 */
#ifndef GPUSORT_CLIENT_INT_H
#define GPUSORT_CLIENT_INT_H

#include "service.h"

/* The service answers a SUBMIT within the wait it was allowed, and this. */
#define ADMISSION_ANSWER_MS(wait_ms) ((long) Min((wait_ms), (int64) INT_MAX) + 10000)

/* This backend's mapping of each GPU's staging area (the memfd it was
 * handed), kept while that gpusort-gpud lives. */
typedef struct StagingMapping
{
	uint64		generation;
	char	   *base;
	uint64		bytes;
	int			rows_jobs;		/* open rows jobs whose slot lies in it */
} StagingMapping;

/* Mappings of a staging area whose process has gone, kept while a rows
 * job of this backend still points into them (its reads then fail with
 * the connection, not on unmapped memory). */
#define MAX_RETIRED_MAPPINGS 16

typedef enum
{
	WAIT_OK,
	WAIT_CLOSED,				/* the service went away */
	WAIT_CANCELLED,				/* the poll function asked to stop */
	WAIT_TIMED_OUT
} wait_result;

/* A connection to one GPU's process: the pid it must be. */
typedef struct Peer
{
	int			fd;
	int			gpu;
	pid_t		pid;
} Peer;

/*
 * What client_rows.c uses of client.c: no part of the service's interface,
 * so hidden, as they were when they were static, from other libraries
 * (PostgreSQL 15 builds modules without -fvisibility=hidden), and none of
 * the same name elsewhere can stand in for them.
 */
#pragma GCC visibility push(hidden)

/* the message of the last failure, which gpu_service_last_error() returns */
extern char last_error[512];
extern void set_error(const char *format,...) pg_attribute_printf(1, 2);

extern StagingMapping client_mappings[GS_SERVICE_MAX_GPUS];
extern StagingMapping client_retired[MAX_RETIRED_MAPPINGS];

/* statistics, and which GPU */
extern void count_job(int gpu, const gs_message *done, uint64 n, uint64 bytes);
extern void describe_unavailable(char *why, size_t size);
extern int	choose_gpu(bool take_turn);
extern void set_timing(gs_backend_timing *into, const gs_wire_timing *timing);

/* talking to gpusort-gpud */
extern void client_disconnect(Peer *peer);
extern bool client_send_message(const Peer *peer, gs_message *message, gs_message_type type,
								int pass_fd);
extern wait_result client_receive_message(const Peer *peer, gs_message *message,
										  gs_poll_fn poll, void *poll_arg, long timeout_ms,
										  int *passed_fd);
extern int	client_open_session(int gpu, Peer *peer, char *why, size_t why_size,
								gs_poll_fn poll, void *poll_arg);
extern bool slot_acceptable(int gpu, const gs_message *admitted, uint64 needed);

/* a poll function that stops a wait for a cancel or a terminate */
extern bool cancel_requested(void *arg);
/* the session a job counts against */
extern int32 client_session_id(void);

#pragma GCC visibility pop

#endif							/* GPUSORT_CLIENT_INT_H */
