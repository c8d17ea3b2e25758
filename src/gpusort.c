/*
 * gpusort.c — the module's entry point.
 *
 * gpusort moves sorting off the CPU: SQL functions that sort integer arrays
 * (gpu_sort() and friends, array_functions.c) and a custom scan node,
 * GpuSort, that the planner picks for ORDER BY on integer keys (planner.c,
 * executor.c, explain.c). Both turn their values into order-preserving
 * unsigned keys and hand them to the engine (engine/), which sorts on the GPU
 * when one is usable and on the CPU otherwise, with the same result.
 *
 * The GPU belongs to the GPU service (service/): with gpusort in
 * shared_preload_libraries, a background worker starts one gpusort-gpud
 * process per GPU, and backends and parallel workers send it their sorts.
 * No PostgreSQL process ever starts CUDA; without the service (a plain LOAD)
 * sorts run on the CPU, and gpusort_info() says why.
 *
 * _PG_init only defines the settings (settings.c), makes the service's
 * client the engine's GPU backend (engine/sort_backend.h), registers hooks
 * and, when preloaded, the service's shared memory and worker.
 */
#include "gpusort.h"
#include "service.h"

#include "fmgr.h"
#include "utils/guc.h"

GPUSORT_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	gpusort_define_settings();

	/* the engine's GPU is the service's (client.c): without the service
	 * (no shared_preload_libraries) it says why no GPU is usable */
	gs_engine_set_backend(&gpu_service_backend);
	gpusort_service_init();

	MarkGUCPrefixReserved("gpusort");

	gpusort_executor_init();
	gpusort_client_statement_init();
	gpusort_planner_init();
	gpusort_sort_sites_init();
	gpusort_explain_options_init();
}
