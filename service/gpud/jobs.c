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
	broken = service.emulated ? service.emulate_fail_sticky : gpu_device_check() != GPU_OK;
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

static gs_algorithm
engine_algorithm(uint32_t algorithm)
{
	return algorithm == GS_WIRE_BITONIC ? GS_ALGO_BITONIC :
		algorithm == GS_WIRE_BUTTERFLY ? GS_ALGO_BUTTERFLY : GS_ALGO_RADIX;
}

static gpu_algorithm
kernel_algorithm(uint32_t algorithm)
{
	return algorithm == GS_WIRE_BITONIC ? GPU_ALGO_BITONIC :
		algorithm == GS_WIRE_BUTTERFLY ? GPU_ALGO_BUTTERFLY : GPU_ALGO_RADIX;
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

static void
set_wire_timing(gs_wire_timing *into, const gpu_timing *timing)
{
	into->upload_ms = timing->upload_ms;
	into->sort_ms = timing->sort_ms;
	into->download_ms = timing->download_ms;
	into->device_bytes = timing->device_bytes;
}

void
set_wire_device(gs_wire_device *into, const gpu_device_info *info)
{
	memset(into, 0, sizeof(*into));
	into->built_with_cuda = info->built_with_cuda;
	into->usable = info->usable;
	snprintf(into->reason, sizeof(into->reason), "%s", info->reason);
	snprintf(into->name, sizeof(into->name), "%s", info->name);
	into->compute_major = info->compute_major;
	into->compute_minor = info->compute_minor;
	into->multiprocessors = info->multiprocessors;
	into->total_memory = info->total_memory;
	into->free_memory = info->free_memory;
	into->driver_version = info->driver_version;
	into->runtime_version = info->runtime_version;
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

/* The test mode's "GPU": the CPU engine, after the configured delay. */
static gpu_status
run_emulated(gs_message *job, char *area, int *client_fd, gs_message *done)
{
	gs_sort_request request;
	gs_sort_report report;
	double		until = now_ms() + service.emulate_delay_ms;
	gs_status	status;

	while (now_ms() < until)
	{
		struct timespec pause = {0, 2 * 1000 * 1000};

		if (client_cancelled(client_fd))
			return GPU_INTERRUPTED;
		nanosleep(&pause, NULL);
	}
	if (service.emulate_fail_n > 0 && job->n == service.emulate_fail_n)
	{
		snprintf(done->message, sizeof(done->message), "an emulated GPU failure (%u keys)",
				 service.emulate_fail_n);
		return GPU_FAILED;
	}
	if (job->memory_limit > 0 && estimate_gpu_bytes(job) > job->memory_limit)
	{
		snprintf(done->message, sizeof(done->message),
				 "the sort needs %llu MB of GPU memory, over the limit of %llu MB "
				 "(gpusort.gpu_memory_limit)",
				 (unsigned long long) (estimate_gpu_bytes(job) >> 20),
				 (unsigned long long) (job->memory_limit >> 20));
		return GPU_OUT_OF_MEMORY;
	}
	gs_sort_request_init(&request);
	request.device = GS_DEVICE_CPU;
	request.poll = client_cancelled;
	request.poll_arg = client_fd;
	if (job->kind == GS_JOB_MINMAX)
	{
		gs_sort_request_set_keys(&request, area, job->n, 8, 64, NULL);
		status = gs_minmax(&request, &done->min_key, &done->max_key, &report);
		return gpu_status_of(status);
	}
	gs_sort_request_set_keys(&request, area, job->n, job->key_bytes, job->key_bits,
							 job->with_index ?
							 (uint32_t *) (area + gs_job_index_offset(job->n, job->key_bytes)) :
							 NULL);
	if (job->kind == GS_JOB_APPROX)
	{
		request.algorithm = GS_ALGO_APPROX;
		request.intervals = job->intervals;
		request.limit = job->limit;
	}
	else
		request.algorithm = engine_algorithm(job->algorithm);
	status = gs_sort(&request, &report);
	if (status == GS_OK && service.emulate_wrong && job->n >= 2)
		memcpy(area, area + job->key_bytes, job->key_bytes);
	if (status == GS_OK && job->kind == GS_JOB_APPROX)
	{
		done->valid_outputs = report.valid_outputs;
		done->min_key = report.interval_map.min_key;
		done->max_key = report.interval_map.min_key + report.interval_map.range;
	}
	done->timing.sort_ms = (float) service.emulate_delay_ms;
	return gpu_status_of(status);
}

/* Runs the job on the data in `area` with the kernels, filling `done`
 * but its timing. */
static gpu_status
run_on_gpu(gs_message *job, char *area, int *client_fd, gs_message *done, gpu_timing *timing)
{
	uint32_t   *row_index = job->with_index ?
		(uint32_t *) (area + gs_job_index_offset(job->n, job->key_bytes)) : NULL;
	gpu_status	status;

	if (job->kind == GS_JOB_MINMAX)
		return gpu_minmax((const uint64_t *) area, job->n, &done->min_key, &done->max_key,
						  timing);
	if (job->kind == GS_JOB_APPROX)
	{
		gpu_approx_job approx;

		memset(&approx, 0, sizeof(approx));
		approx.n = job->n;
		approx.key_bytes = job->key_bytes;
		approx.keys = area;
		approx.row_index = row_index;
		approx.intervals = job->intervals;
		approx.limit = job->limit;
		approx.memory_limit = job->memory_limit;
		approx.poll = client_cancelled;
		approx.poll_arg = client_fd;
		status = gpu_approx_sort(&approx, timing);
		done->valid_outputs = approx.valid_outputs;
		done->min_key = approx.min_key;
		done->max_key = approx.max_key;
		return status;
	}

	gpu_sort_job sort;

	memset(&sort, 0, sizeof(sort));
	sort.n = job->n;
	sort.key_bytes = job->key_bytes;
	sort.key_bits = job->key_bits;
	sort.keys = area;
	sort.row_index = row_index;
	sort.algorithm = kernel_algorithm(job->algorithm);
	sort.memory_limit = job->memory_limit;
	sort.poll = client_cancelled;
	sort.poll_arg = client_fd;
	return gpu_sort(&sort, timing);
}

/* Runs the job on the data in `area`, filling `done`. */
gpu_status
run_job(gs_message *job, char *area, int *client_fd, gs_message *done)
{
	gpu_timing	timing;
	gpu_status	status;

	if (service.emulated)
		return run_emulated(job, area, client_fd, done);
	memset(&timing, 0, sizeof(timing));
	status = run_on_gpu(job, area, client_fd, done, &timing);
	set_wire_timing(&done->timing, &timing);
	return status;
}
