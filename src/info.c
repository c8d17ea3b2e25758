/*
 * info.c — gpusort_info(): where sorts will run, as (name, value) rows.
 * Calling it initialises CUDA in this backend if it was not yet, which is
 * how a user finds out, before the first sort, whether the GPU is usable and
 * if not, why (no driver, no device, CPU-only build).
 */
#include "gpusort.h"

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
		add_row(rsinfo, "memory_free_mb", psprintf("%zu", info.free_memory >> 20));
	}
	if (info.driver_version > 0)
		add_row(rsinfo, "cuda_driver_version", cuda_version(info.driver_version));
	if (info.runtime_version > 0)
		add_row(rsinfo, "cuda_runtime_version", cuda_version(info.runtime_version));
	add_row(rsinfo, "sorts_run_on",
			gpusort_device == GS_DEVICE_CPU ? "CPU (gpusort.device = cpu)"
			: info.usable ? (gpusort_device == GS_DEVICE_GPU ? "GPU"
							 : "GPU, or the CPU for small sorts (gpusort.gpu_min_elements)")
			: gpusort_device == GS_DEVICE_GPU ? "nowhere: gpusort.device = gpu and no usable GPU"
			: "CPU (no usable GPU)");
	return (Datum) 0;
}
