/*
 * info.c — gpusort_info(): where sorts will run, as (name, value) rows: the
 * GPU service (state, uptime, restarts), each of its GPUs, and, when no GPU
 * is usable, why (not preloaded, no driver, no device, CPU-only build). It
 * reads what the service published in shared memory; it never starts CUDA.
 */
#include "gpusort.h"
#include "service.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(gpusort_info);

static void
add_row(ReturnSetInfo *rsinfo, const char *name, const char *value)
{
	Datum		values[2];
	bool		nulls[2] = {false, false};

	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(value);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

static const char *
since(TimestampTz start)
{
	long		secs;
	int			usecs;

	TimestampDifference(start, GetCurrentTimestamp(), &secs, &usecs);
	return psprintf("%ld s", secs);
}

/* The service's own rows: its state, and each GPU's. */
static void
add_service_rows(ReturnSetInfo *rsinfo)
{
	GpuServiceShared copy;

	if (gpu_service == NULL)
	{
		add_row(rsinfo, "service_state", "not running (gpusort is not in shared_preload_libraries)");
		return;
	}
	SpinLockAcquire(&gpu_service->mutex);
	memcpy(&copy, gpu_service, offsetof(GpuServiceShared, gpus));
	for (int gpu = 0; gpu < GS_SERVICE_MAX_GPUS; gpu++)
		memcpy(&copy.gpus[gpu], &gpu_service->gpus[gpu], offsetof(GpuServiceGpu, in_flight));
	SpinLockRelease(&gpu_service->mutex);

	add_row(rsinfo, "service_state", gpu_service_state_name(copy.state));
	if (copy.reason[0] != '\0')
		add_row(rsinfo, "service_reason", copy.reason);
	if (copy.started_at != 0)
		add_row(rsinfo, "service_uptime", since(copy.started_at));
	add_row(rsinfo, "service_gpus", psprintf("%d", copy.ngpus));
	for (int gpu = 0; gpu < copy.ngpus; gpu++)
	{
		GpuServiceGpu *g = &copy.gpus[gpu];
		const char *prefix = psprintf("gpu%d_", gpu);

		add_row(rsinfo, psprintf("%sstate", prefix), gpu_service_state_name(g->state));
		if (g->reason[0] != '\0')
			add_row(rsinfo, psprintf("%sreason", prefix), g->reason);
		if (g->device.name[0] != '\0')
			add_row(rsinfo, psprintf("%sname", prefix), g->device.name);
		if (g->pid != 0)
			add_row(rsinfo, psprintf("%spid", prefix), psprintf("%d", (int) g->pid));
		if (g->started_at != 0 && g->pid != 0)
			add_row(rsinfo, psprintf("%suptime", prefix), since(g->started_at));
		add_row(rsinfo, psprintf("%srestarts", prefix), psprintf("%d", g->restarts));
		if (g->hangs > 0)
			add_row(rsinfo, psprintf("%shangs", prefix), psprintf("%d", g->hangs));
		if (g->device.usable)
		{
			add_row(rsinfo, psprintf("%smemory_total_mb", prefix),
					psprintf("%zu", g->device.total_memory >> 20));
			add_row(rsinfo, psprintf("%sbudget_mb", prefix),
					psprintf("%llu", (unsigned long long) (g->budget_bytes >> 20)));
			add_row(rsinfo, psprintf("%sstaging_mb", prefix),
					psprintf("%llu", (unsigned long long) (g->staging_bytes >> 20)));
			add_row(rsinfo, psprintf("%sjobs_running", prefix),
					psprintf("%u", pg_atomic_read_u32(&gpu_service->gpus[gpu].in_flight)));
			/* what its process says it holds (its status page) */
			add_row(rsinfo, psprintf("%sconnections", prefix), psprintf("%u", g->connections));
			add_row(rsinfo, psprintf("%sjobs_waiting", prefix), psprintf("%u", g->jobs_waiting));
			add_row(rsinfo, psprintf("%smemory_used_mb", prefix),
					psprintf("%llu", (unsigned long long) ((g->budget_used + (1 << 20) - 1) >> 20)));
			add_row(rsinfo, psprintf("%sslots_used", prefix), psprintf("%u", g->slots_used));
			add_row(rsinfo, psprintf("%srows_jobs", prefix), psprintf("%u", g->rows_jobs));
			add_row(rsinfo, psprintf("%sgiven_back_files", prefix), psprintf("%u", g->files_open));
			add_row(rsinfo, psprintf("%sjobs_failed", prefix),
					psprintf("%llu", (unsigned long long) g->jobs_failed));
		}
		if (g->emulated)
			add_row(rsinfo, psprintf("%semulated", prefix),
					"yes (GPUSORT_SERVICE_EMULATE: a test service, the CPU plays the GPU)");
	}
}

static const char *
cuda_version(int version)
{
	return psprintf("%d.%d", version / 1000, (version % 1000) / 10);
}

Datum
gpusort_info(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	gs_gpu_info info;

	InitMaterializedSRF(fcinfo, 0);
	gs_gpu_info_get(&info);

	add_row(rsinfo, "built_with_cuda", info.built_with_cuda ? "yes" : "no");
	add_row(rsinfo, "gpu_usable", info.usable ? "yes" : "no");
	if (!info.usable)
		add_row(rsinfo, "reason", info.reason);
	else
	{
		add_row(rsinfo, "gpu_name", info.name);
		add_row(rsinfo, "compute_capability",
				psprintf("%d.%d", info.compute_major, info.compute_minor));
		add_row(rsinfo, "multiprocessors", psprintf("%d", info.multiprocessors));
		add_row(rsinfo, "memory_total_mb", psprintf("%zu", info.total_memory >> 20));
	}
	if (info.driver_version > 0)
		add_row(rsinfo, "cuda_driver_version", cuda_version(info.driver_version));
	if (info.runtime_version > 0)
		add_row(rsinfo, "cuda_runtime_version", cuda_version(info.runtime_version));
	add_service_rows(rsinfo);
	add_row(rsinfo, "sorts_run_on",
			gpusort_device == GS_DEVICE_CPU ? "CPU (gpusort.device = cpu)"
			: info.usable ? (gpusort_device == GS_DEVICE_GPU ? "GPU"
							 : "GPU, or the CPU for small sorts (gpusort.gpu_min_elements)")
			: gpusort_device == GS_DEVICE_GPU ? "nowhere: gpusort.device = gpu and no usable GPU"
			: "CPU (no usable GPU)");
	return (Datum) 0;
}
