/*
 * gpud/jobs.c — gpusort-gpud's array jobs: a sort, an approximate sort or
 * a min-max of the keys in a job's slot (or its chunked buffer), with the
 * kernels or, in the test mode (main.c), with the CPU engine; the wire's
 * types to and from the kernels' and the engine's; and what a failed job
 * does to the process.
 *
 * Failures stay with their job: a job that fails answers its client with
 * the error, and the process goes on, unless the CUDA context itself is
 * broken (a sticky error, gpu_device_check()); then it exits with
 * GPUD_EXIT_DEVICE_FAULT and the worker restarts it, and marks the GPU
 * unusable if that keeps happening.
 */
#define _GNU_SOURCE
#include "gpud_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* ------------------------------------------------------------------------
 * Jobs
 * ------------------------------------------------------------------------ */

uint64_t
estimate_gpu_bytes(const gs_message *job)
{
	return gs_job_gpu_bytes(job);
}

/*
 * A job failed: its client hears why (the caller tells it), and the GPU's
 * other jobs go on, unless the CUDA context is broken (a sticky error):
 * then the process exits and the worker starts a new one.
 */
void
job_failed(gpu_status status, const char *message)
{
	bool		broken;

	__atomic_add_fetch(&jobs_failed, 1, __ATOMIC_RELAXED);
	if (status != GPU_FAILED)
		return;
	broken = gpud_device->broken_after_failure();
	if (broken)
	{
		log_line("a GPU failure left the GPU unusable: %s; restarting the GPU's process",
				 message);
		exit(GPUD_EXIT_DEVICE_FAULT);
	}
	log_line("a job failed on the GPU: %s; the GPU's other jobs go on", message);
}

/* The job's poll function: any message from the client, or its leaving,
 * cancels the job. */
bool
client_cancelled(void *arg)
{
	int			fd = *(int *) arg;
	char		byte;
	ssize_t		got = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);

	return got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* ---- the wire's types from and to the kernels' and the engine's ---- */

gs_algorithm
engine_algorithm(uint32_t algorithm)
{
	return algorithm == GS_WIRE_BITONIC ? GS_ALGO_BITONIC :
		algorithm == GS_WIRE_BUTTERFLY ? GS_ALGO_BUTTERFLY : GS_ALGO_RADIX;
}

int32_t
wire_status(gpu_status status)
{
	switch (status)
	{
		case GPU_OK:
			return GS_STATUS_OK;
		case GPU_UNAVAILABLE:
			return GS_STATUS_UNAVAILABLE;
		case GPU_OUT_OF_MEMORY:
			return GS_STATUS_OUT_OF_MEMORY;
		case GPU_INTERRUPTED:
			return GS_STATUS_INTERRUPTED;
		case GPU_INVALID:
			return GS_STATUS_INVALID;
		default:
			return GS_STATUS_FAILED;
	}
}

gpu_status
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

/* Runs the job on the data in `area` on the process's GPU, filling
 * `done`. */
gpu_status
run_job(gs_message *job, char *area, int *client_fd, gs_message *done)
{
	return gpud_device->run_job(job, area, client_fd, done);
}
