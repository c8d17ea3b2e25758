/*
 * dispatch.c — the engine's entry points: picks the device and the
 * algorithm, runs the sort on the GPU through the process's backend
 * (sort_backend.h) or on the CPU through cpu_sort.c, and falls back from a
 * failing GPU to the CPU when the caller allowed it (GS_DEVICE_AUTO).
 */
#include "engine_internal.h"
#include "sort_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
gs_sort_request_init(gs_sort_request *request)
{
	memset(request, 0, sizeof(*request));
	request->algorithm = GS_ALGO_AUTO;
	request->device = GS_DEVICE_AUTO;
	request->intervals = 10000;
}

void
gs_sort_request_set_keys(gs_sort_request *request, void *keys, size_t n, unsigned key_bytes,
						 unsigned key_bits, uint32_t *row_index)
{
	request->keys = keys;
	request->n = n;
	request->key_bytes = key_bytes;
	request->key_bits = key_bits;
	request->row_index = row_index;
}

/*
 * What AUTO means. On the CPU, LSD radix is linear in n and beats the
 * O(n log^2 n) networks except on tiny inputs. On the GPU, CUB's radix sort
 * measured fastest at every size on the H100 (see bench/README.md).
 */
gs_algorithm
gs_auto_algorithm(size_t n, unsigned key_bits, bool with_index, gs_device device)
{
	(void) key_bits;
	(void) with_index;
	if (device == GS_DEVICE_CPU && n <= 32)
		return GS_ALGO_BUTTERFLY;
	return GS_ALGO_RADIX;
}

/* The process's GPU (sort_backend.h): set at its start, read after. */
static const gs_sort_backend *backend = NULL;

void
gs_engine_set_backend(const gs_sort_backend *new_backend)
{
	backend = new_backend;
}

const gs_sort_backend *
gs_engine_backend(void)
{
	return backend;
}

/* The backend's GPU, or why there is none to use. */
static void
probe_backend(gs_gpu_info *info)
{
	memset(info, 0, sizeof(*info));
	if (backend == NULL)
	{
		snprintf(info->reason, sizeof(info->reason), "no GPU backend in this process");
		return;
	}
	backend->probe(info);
}

static void
note_gpu_problem(gs_sort_report *report, gs_status status, const char *message)
{
	report->gpu_status = status;
	snprintf(report->gpu_message, sizeof(report->gpu_message), "%s",
			 message ? message : gs_status_name(status));
}

/* What the backend measured, into the report. */
static void
note_gpu_timing(gs_sort_report *report, const gs_backend_timing *timing)
{
	report->upload_ms = timing->upload_ms;
	report->sort_ms = timing->sort_ms;
	report->download_ms = timing->download_ms;
	report->gpu_bytes = timing->device_bytes;
	report->queue_ms = timing->queue_ms;
	report->gpu_index = timing->device_index;
}

/*
 * Decides whether this request runs on the GPU. Returns GS_OK with
 * *use_gpu set, or the error to return (device = GPU and none usable).
 */
static gs_status
choose_device(const gs_sort_request *request, gs_sort_report *report,
			  bool *use_gpu)
{
	gs_gpu_info info;

	*use_gpu = false;
	if (request->device == GS_DEVICE_CPU)
		return GS_OK;
	if (request->device == GS_DEVICE_AUTO && request->n < request->gpu_min_elements)
	{
		snprintf(report->gpu_message, sizeof(report->gpu_message),
				 "fewer than %zu elements: the CPU is faster",
				 request->gpu_min_elements);
		return GS_OK;
	}
	probe_backend(&info);
	if (info.usable && request->algorithm == GS_ALGO_APPROX &&
		request->approx_mode == GS_APPROX_QUANTILE && !backend->approx_quantile)
	{
		info.usable = false;
		snprintf(info.reason, sizeof(info.reason),
				 "the %s does not do the quantile mode: the CPU does", backend->name);
	}
	if (!info.usable)
	{
		note_gpu_problem(report, GS_ERR_GPU_UNAVAILABLE, info.reason);
		return request->device == GS_DEVICE_GPU ? GS_ERR_GPU_UNAVAILABLE : GS_OK;
	}
	*use_gpu = true;
	return GS_OK;
}

static gs_status
validate(const gs_sort_request *request)
{
	if (request->key_bytes != 4 && request->key_bytes != 8)
		return GS_ERR_INVALID_ARGUMENT;
	if (request->key_bits > request->key_bytes * 8)
		return GS_ERR_INVALID_ARGUMENT;
	if (request->n >= UINT32_MAX)
		return GS_ERR_INVALID_ARGUMENT;
	if (request->n > 0 && request->keys == NULL)
		return GS_ERR_INVALID_ARGUMENT;
	if ((unsigned) request->algorithm >= GS_ALGORITHM_COUNT)
		return GS_ERR_INVALID_ARGUMENT;
	if (request->algorithm == GS_ALGO_APPROX &&
		(request->intervals < 1 || request->intervals > GS_MAX_INTERVALS))
		return GS_ERR_INVALID_ARGUMENT;
	if (request->algorithm == GS_ALGO_APPROX &&
		((unsigned) request->approx_mode > GS_APPROX_QUANTILE ||
		 (request->approx_mode == GS_APPROX_QUANTILE &&
		  request->intervals > GS_QUANTILE_MAX_INTERVALS)))
		return GS_ERR_INVALID_ARGUMENT;
	return GS_OK;
}

static uint64_t
approx_seed(const gs_sort_request *request)
{
	return request->approx_seed != 0 ? request->approx_seed : GS_QUANTILE_DEFAULT_SEED;
}

/* The quantile mode on the CPU: the splitters from the sample, then the
 * same count, scan and scatter as the equal widths. */
static gs_status
cpu_quantile_sort(const gs_sort_request *request, const cpu_sort_job *job,
				  gs_sort_report *report)
{
	uint32_t	count = request->intervals - 1;
	uint64_t   *splitters = NULL;
	gs_interval_map map;
	gs_status	status;

	if (count > 0)
	{
		splitters = engine_alloc(&request->allocator, (size_t) count * sizeof(uint64_t));
		if (splitters == NULL)
			return GS_ERR_OUT_OF_MEMORY;
	}
	status = cpu_quantile_splitters(job, request->intervals, approx_seed(request),
									splitters, &report->sample_size);
	if (status == GS_OK)
	{
		map = gs_interval_map_quantile(splitters, count);
		status = cpu_approx_sort(job, &map, request->limit, &report->valid_outputs,
								 &report->largest_interval);
		report->rank_bound = gs_quantile_rank_bound(request->n, request->intervals,
													(uint32_t) report->sample_size);
	}
	/* the splitters die here: the report keeps the bucket count only */
	report->interval_map = gs_interval_map_quantile(NULL, count);
	engine_free(&request->allocator, splitters);
	return status;
}

static gs_status
run_on_gpu(const gs_sort_request *request, gs_algorithm algorithm,
		   gs_sort_report *report, bool *host_data_touched)
{
	gs_backend_timing timing;
	gs_status	status;

	memset(&timing, 0, sizeof(timing));
	*host_data_touched = false;
	if (algorithm == GS_ALGO_APPROX)
	{
		gs_backend_approx_job job;

		memset(&job, 0, sizeof(job));
		job.n = request->n;
		job.key_bytes = request->key_bytes;
		job.keys = request->keys;
		job.row_index = request->row_index;
		job.intervals = request->intervals;
		job.mode = request->approx_mode;
		job.seed = approx_seed(request);
		job.limit = request->limit;
		job.memory_limit = request->gpu_memory_limit;
		job.poll = request->poll;
		job.poll_arg = request->poll_arg;
		status = backend->approx_sort(&job, &timing);
		*host_data_touched = job.host_data_touched;
		if (status == GS_OK)
		{
			report->valid_outputs = job.valid_outputs;
			if (request->approx_mode == GS_APPROX_QUANTILE)
				report->interval_map = gs_interval_map_quantile(NULL, request->intervals - 1);
			else
				report->interval_map = gs_interval_map_make(job.min_key, job.max_key,
															request->intervals);
			report->sample_size = job.sample_size;
			report->largest_interval = job.largest_interval;
			if (request->approx_mode == GS_APPROX_QUANTILE)
				report->rank_bound = gs_quantile_rank_bound(request->n, request->intervals,
															(uint32_t) job.sample_size);
		}
	}
	else
	{
		gs_backend_sort_job job;

		memset(&job, 0, sizeof(job));
		job.n = request->n;
		job.key_bytes = request->key_bytes;
		job.key_bits = request->key_bits;
		job.keys = request->keys;
		job.row_index = request->row_index;
		job.algorithm = algorithm;
		job.memory_limit = request->gpu_memory_limit;
		job.poll = request->poll;
		job.poll_arg = request->poll_arg;
		status = backend->sort(&job, &timing);
		*host_data_touched = job.host_data_touched;
		report->valid_outputs = request->n;
	}
	note_gpu_timing(report, &timing);
	if (status != GS_OK)
		note_gpu_problem(report, status, backend->last_error());
	return status;
}

static gs_status
run_on_cpu(const gs_sort_request *request, gs_algorithm algorithm,
		   gs_sort_report *report)
{
	cpu_sort_job job;
	gs_status	status = GS_OK;

	job.n = request->n;
	job.key_bytes = request->key_bytes;
	job.key_bits = request->key_bits;
	job.keys = request->keys;
	job.row_index = request->row_index;
	job.allocator = &request->allocator;
	job.poll = request->poll;
	job.poll_arg = request->poll_arg;
	if (job.row_index != NULL)
		for (size_t i = 0; i < job.n; i++)
			job.row_index[i] = (uint32_t) i;

	report->valid_outputs = request->n;
	switch (algorithm)
	{
		case GS_ALGO_BITONIC:
			status = cpu_bitonic_sort(&job);
			break;
		case GS_ALGO_BUTTERFLY:
			status = cpu_butterfly_sort(&job);
			break;
		case GS_ALGO_AUTO:
		case GS_ALGO_RADIX:
			status = cpu_radix_sort(&job);
			break;
		case GS_ALGO_APPROX:
			{
				uint64_t	min_key = 0,
							max_key = 0;
				size_t		largest;

				if (request->approx_mode == GS_APPROX_QUANTILE)
				{
					status = cpu_quantile_sort(request, &job, report);
					break;
				}
				for (size_t i = 0; i < job.n; i++)
				{
					uint64_t	key = request->key_bytes == 4 ?
						((uint32_t *) job.keys)[i] : ((uint64_t *) job.keys)[i];

					if (i == 0 || key < min_key)
						min_key = key;
					if (i == 0 || key > max_key)
						max_key = key;
				}
				report->interval_map = gs_interval_map_make(min_key, max_key,
															 request->intervals);
				status = cpu_approx_sort(&job, &report->interval_map,
										 request->limit, &report->valid_outputs, &largest);
				report->largest_interval = largest;
				break;
			}
	}
	return status;
}

gs_status
gs_sort(const gs_sort_request *request, gs_sort_report *report)
{
	gs_algorithm algorithm;
	bool		use_gpu;
	bool		host_data_touched;
	gs_status	status;

	memset(report, 0, sizeof(*report));
	status = validate(request);
	if (status != GS_OK)
		return status;
	status = choose_device(request, report, &use_gpu);
	if (status != GS_OK)
		return status;

	algorithm = request->algorithm;
	if (algorithm == GS_ALGO_AUTO)
		algorithm = gs_auto_algorithm(request->n, request->key_bits,
									  request->row_index != NULL,
									  use_gpu ? GS_DEVICE_GPU : GS_DEVICE_CPU);
	report->algorithm = algorithm;
	report->approx_mode = request->approx_mode;

	if (use_gpu)
	{
		report->ran_on = GS_DEVICE_GPU;
		status = run_on_gpu(request, algorithm, report, &host_data_touched);
		if (status == GS_OK || status == GS_ERR_INTERRUPTED ||
			status == GS_ERR_INVALID_ARGUMENT)
			return status;
		/* the CPU can only take over while the input is still intact */
		if (request->device == GS_DEVICE_GPU || host_data_touched)
			return status;
		report->fell_back = true;
	}
	report->ran_on = GS_DEVICE_CPU;
	if (algorithm == GS_ALGO_AUTO)
		algorithm = report->algorithm = gs_auto_algorithm(request->n, request->key_bits,
														  request->row_index != NULL,
														  GS_DEVICE_CPU);
	return run_on_cpu(request, algorithm, report);
}

bool
gs_gpu_sorts_words(const gs_sort_request *settings, size_t n)
{
	gs_sort_request request = *settings;
	gs_sort_report report;
	bool		use_gpu = false;

	request.n = n;
	memset(&report, 0, sizeof(report));
	if (backend == NULL || backend->sort_words == NULL ||
		settings->algorithm == GS_ALGO_APPROX)
		return false;
	return choose_device(&request, &report, &use_gpu) == GS_OK && use_gpu;
}

gs_status
gs_sort_words_on_gpu(const gs_sort_request *settings, size_t n, const uint64_t *words,
					 unsigned nwords, const unsigned *word_bits, uint32_t *row_index,
					 gs_sort_report *report, bool *ran)
{
	gs_backend_words_job job;
	gs_backend_timing timing;
	gs_status	status;

	memset(report, 0, sizeof(*report));
	*ran = false;
	memset(&job, 0, sizeof(job));
	memset(&timing, 0, sizeof(timing));
	job.n = n;
	job.nwords = nwords;
	job.word_bits = word_bits;
	job.words = words;
	job.row_index = row_index;
	job.memory_limit = settings->gpu_memory_limit;
	job.poll = settings->poll;
	job.poll_arg = settings->poll_arg;
	report->algorithm = GS_ALGO_RADIX;
	report->ran_on = GS_DEVICE_GPU;
	status = backend->sort_words(&job, &timing);
	note_gpu_timing(report, &timing);
	report->valid_outputs = n;
	if (status == GS_OK)
	{
		*ran = true;
		return GS_OK;
	}
	note_gpu_problem(report, status, backend->last_error());
	if (status == GS_ERR_INTERRUPTED || status == GS_ERR_INVALID_ARGUMENT ||
		settings->device == GS_DEVICE_GPU)
	{
		*ran = true;
		return status;
	}
	report->fell_back = true;
	return GS_OK;
}

gs_status
gs_minmax(const gs_sort_request *request, uint64_t *min_key, uint64_t *max_key,
		  gs_sort_report *report)
{
	bool		use_gpu;
	gs_status	status;

	memset(report, 0, sizeof(*report));
	*min_key = *max_key = 0;
	if (request->key_bytes != 8 || (request->n > 0 && request->keys == NULL))
		return GS_ERR_INVALID_ARGUMENT;
	status = choose_device(request, report, &use_gpu);
	if (status != GS_OK)
		return status;
	if (use_gpu)
	{
		gs_backend_timing timing;
		gs_status	gstatus;

		memset(&timing, 0, sizeof(timing));
		report->ran_on = GS_DEVICE_GPU;
		gstatus = backend->minmax(request->keys, request->n, min_key, max_key, &timing);
		report->upload_ms = timing.upload_ms;
		report->sort_ms = timing.sort_ms;
		report->queue_ms = timing.queue_ms;
		report->gpu_index = timing.device_index;
		if (gstatus == GS_OK)
			return GS_OK;
		note_gpu_problem(report, gstatus, backend->last_error());
		if (request->device == GS_DEVICE_GPU || gstatus == GS_ERR_INTERRUPTED)
			return gstatus;
		report->fell_back = true;
	}
	report->ran_on = GS_DEVICE_CPU;
	cpu_minmax(request->keys, request->n, min_key, max_key);
	return GS_OK;
}

void
gs_gpu_info_get(gs_gpu_info *info)
{
	probe_backend(info);
}

void *
gs_host_buffer_alloc(size_t bytes, bool want_pinned, bool *pinned)
{
	gs_gpu_info info;
	void	   *pointer = NULL;

	*pinned = false;
	if (want_pinned && backend != NULL && backend->host_alloc != NULL)
		probe_backend(&info);
	else
		info.usable = false;
	if (info.usable && backend->host_alloc(bytes, &pointer) == GS_OK)
	{
		*pinned = true;
		return pointer;
	}
	return malloc(bytes > 0 ? bytes : 1);
}

void
gs_host_buffer_free(void *pointer, bool pinned)
{
	if (pointer == NULL)
		return;
	if (pinned)
		backend->host_free(pointer);
	else
		free(pointer);
}
