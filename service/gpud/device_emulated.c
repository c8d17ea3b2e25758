/*
 * device_emulated.c — the service's test mode: the CPU engine plays a GPU
 * behind the device interface of gpud_int.h, so that everything of
 * gpusort-gpud but CUDA runs as in production on a machine without one.
 * GPUSORT_SERVICE_EMULATE=<MB> in gpusort-gpud's environment (the
 * server's) chooses it and says the "GPU's" memory; the other variables
 * (main.c's header) make jobs last, fail, break the "context" or come back
 * wrong, for the tests.
 */
#include "gpud_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct
{
	unsigned	memory_mb;
	unsigned	delay_ms;
	unsigned	fail_n;
	bool		fail_sticky;
	bool		wrong;
} emulation;

static unsigned
env_number(const char *name)
{
	const char *value = getenv(name);

	return value != NULL ? (unsigned) strtoul(value, NULL, 10) : 0;
}

/* Whether the environment asks for the test mode (and reads it). */
bool
emulation_wanted(void)
{
	emulation.memory_mb = env_number("GPUSORT_SERVICE_EMULATE");
	emulation.delay_ms = env_number("GPUSORT_SERVICE_EMULATE_DELAY_MS");
	emulation.fail_n = env_number("GPUSORT_SERVICE_EMULATE_FAIL_N");
	emulation.fail_sticky = env_number("GPUSORT_SERVICE_EMULATE_FAIL_STICKY") > 0;
	emulation.wrong = env_number("GPUSORT_SERVICE_EMULATE_WRONG") > 0;
	return emulation.memory_mb > 0;
}

/* GPUSORT_SERVICE_EMULATE_GPUS of them (one by default) */
static int
emulated_count(char *reason, size_t reason_size)
{
	unsigned	gpus = env_number("GPUSORT_SERVICE_EMULATE_GPUS");

	(void) reason;
	(void) reason_size;
	return gpus > 0 ? (int) gpus : 1;
}

static gpu_status
emulated_register_host(void *memory, size_t bytes)
{
	(void) memory;
	(void) bytes;
	return GPU_OK;
}

static void
emulated_probe(gs_wire_device *device)
{
	memset(device, 0, sizeof(*device));
	device->usable = true;
	snprintf(device->name, sizeof(device->name), "emulated GPU %d (the CPU engine)",
			 service.gpu_index);
	device->total_memory = device->free_memory = (uint64_t) emulation.memory_mb << 20;
	device->compute_major = 9;
}

static bool
emulated_broken_after_failure(void)
{
	return emulation.fail_sticky;
}

/* The test mode's "GPU": the CPU engine, after the configured delay. */
static gpu_status
emulated_run_job(gs_message *job, char *area, int *client_fd, gs_message *done)
{
	gs_sort_request request;
	gs_sort_report report;
	double		until = now_ms() + emulation.delay_ms;
	gs_status	status;

	while (now_ms() < until)
	{
		struct timespec pause = {0, 2 * 1000 * 1000};

		if (client_cancelled(client_fd))
			return GPU_INTERRUPTED;
		nanosleep(&pause, NULL);
	}
	if (emulation.fail_n > 0 && job->n == emulation.fail_n)
	{
		snprintf(done->message, sizeof(done->message), "an emulated GPU failure (%u keys)",
				 emulation.fail_n);
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
		request.approx_mode = job->approx_mode == 1 ? GS_APPROX_QUANTILE : GS_APPROX_WIDTH;
		request.approx_seed = job->seed;
		request.limit = job->limit;
	}
	else
		request.algorithm = engine_algorithm(job->algorithm);
	status = gs_sort(&request, &report);
	if (status == GS_OK && emulation.wrong && job->n >= 2)
		memcpy(area, area + job->key_bytes, job->key_bytes);
	if (status == GS_OK && job->kind == GS_JOB_APPROX)
	{
		done->valid_outputs = report.valid_outputs;
		done->min_key = report.interval_map.min_key;
		done->max_key = report.interval_map.min_key + report.interval_map.range;
		done->sample_size = report.sample_size;
		done->largest_interval = report.largest_interval;
	}
	done->timing.sort_ms = (float) emulation.delay_ms;
	return gpu_status_of(status);
}

/* A rows job's records in this process's memory. */
typedef struct EmulatedRows
{
	char	   *records;
	size_t		capacity;
	size_t		used;
} EmulatedRows;

static gpu_status
emulated_rows_create(size_t capacity_bytes, void **result)
{
	EmulatedRows *rows = calloc(1, sizeof(EmulatedRows));

	*result = NULL;
	if (rows == NULL || (rows->records = malloc(capacity_bytes > 0 ? capacity_bytes : 1)) == NULL)
	{
		free(rows);
		return GPU_OUT_OF_MEMORY;
	}
	rows->capacity = capacity_bytes;
	*result = rows;
	return GPU_OK;
}

static gpu_status
emulated_rows_append(void *handle, const void *host, size_t bytes)
{
	EmulatedRows *rows = handle;

	if (bytes > rows->capacity - rows->used)
		return GPU_INVALID;
	memcpy(rows->records + rows->used, host, bytes);
	rows->used += bytes;
	return GPU_OK;
}

/* The records laid out again in `order`, as gpu_rows_permute() does: their
 * offsets are the sums of the lengths before them. */
static gpu_status
emulated_rows_permute(void *handle, const uint32_t *order, const uint32_t *lengths, size_t n,
					  gs_wire_timing *timing)
{
	EmulatedRows *rows = handle;
	char	   *ordered = malloc(rows->used > 0 ? rows->used : 1);
	uint64_t   *offsets = malloc((n > 0 ? n : 1) * sizeof(uint64_t));
	uint64_t	position = 0;

	(void) timing;
	if (ordered == NULL || offsets == NULL)
	{
		free(ordered);
		free(offsets);
		return GPU_OUT_OF_MEMORY;
	}
	for (size_t i = 0; i < n; i++)
	{
		offsets[i] = position;
		position += lengths[i];
	}
	position = 0;
	for (size_t i = 0; i < n; i++)
	{
		memcpy(ordered + position, rows->records + offsets[order[i]], lengths[order[i]]);
		position += lengths[order[i]];
	}
	free(offsets);
	free(rows->records);
	rows->records = ordered;
	rows->capacity = rows->used;
	if (emulation.wrong && rows->used >= sizeof(uint32_t) + sizeof(uint64_t))
		rows->records[sizeof(uint32_t)] ^= 1;	/* the first record's first key */
	return GPU_OK;
}

static gpu_status
emulated_rows_read(void *handle, size_t offset, void *host, size_t bytes)
{
	EmulatedRows *rows = handle;

	if (offset > rows->used || bytes > rows->used - offset)
		return GPU_INVALID;
	memcpy(host, rows->records + offset, bytes);
	return GPU_OK;
}

static void
emulated_rows_destroy(void *handle)
{
	EmulatedRows *rows = handle;

	if (rows == NULL)
		return;
	free(rows->records);
	free(rows);
}

static const char *
emulated_last_error(void)
{
	return "the emulated GPU failed";
}

const GpudDevice gpud_emulated_device = {
	.emulated = true,
	.engine_backend = NULL,		/* the engine sorts on the CPU */
	.engine_device = GS_DEVICE_CPU,
	.pins_host_memory = false,
	.count = emulated_count,
	.probe = emulated_probe,
	.register_host = emulated_register_host,
	.broken_after_failure = emulated_broken_after_failure,
	.run_job = emulated_run_job,
	.rows_create = emulated_rows_create,
	.rows_append = emulated_rows_append,
	.rows_permute = emulated_rows_permute,
	.rows_read = emulated_rows_read,
	.rows_destroy = emulated_rows_destroy,
	.last_error = emulated_last_error,
};
