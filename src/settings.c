/*
 * settings.c — gpusort's settings: the GUC variables under the reserved
 * prefix "gpusort." that the glue files read, and their definitions
 * (README's settings table lists them; test/check_readme.py holds the two
 * together). The GPU service's own settings are defined by the service
 * (service/worker.c, service/client.c).
 */
#include "gpusort.h"
#include "service.h"

#include "utils/guc.h"

bool		gpusort_enabled = true;
int			gpusort_device = GS_DEVICE_AUTO;
int			gpusort_algorithm = GS_ALGO_AUTO;
int			gpusort_min_rows = 50000;
int			gpusort_gpu_min_elements = 16384;
int			gpusort_gpu_memory_limit_mb = 0;
bool		gpusort_spill_to_gpu = true;
int			gpusort_approximate_intervals = 0;
int			gpusort_approximate_mode = GS_APPROX_WIDTH;
bool		gpusort_explain_details = true;
bool		gpusort_parallel_merge = true;
bool		gpusort_read_table_pages = true;

static const struct config_enum_entry device_options[] = {
	{"auto", GS_DEVICE_AUTO, false},
	{"gpu", GS_DEVICE_GPU, false},
	{"cpu", GS_DEVICE_CPU, false},
	{NULL, 0, false}
};

static const struct config_enum_entry algorithm_options[] = {
	{"auto", GS_ALGO_AUTO, false},
	{"bitonic", GS_ALGO_BITONIC, false},
	{"butterfly", GS_ALGO_BUTTERFLY, false},
	{"radix", GS_ALGO_RADIX, false},
	{NULL, 0, false}
};

static const struct config_enum_entry approximate_mode_options[] = {
	{"width", GS_APPROX_WIDTH, false},
	{"quantile", GS_APPROX_QUANTILE, false},
	{NULL, 0, false}
};

/* The GPU service's client counts a sort the GPU could not take as an
 * error under gpu, as a fallback otherwise. */
static void
assign_device(int newval, void *extra)
{
	gpu_service_set_gpu_required(newval == GS_DEVICE_GPU);
}

void
gpusort_define_settings(void)
{
	DefineCustomBoolVariable("gpusort.enabled",
							 "Lets the planner use GpuSort for ORDER BY.",
							 NULL,
							 &gpusort_enabled, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomEnumVariable("gpusort.device",
							 "Where gpusort sorts: auto, gpu or cpu.",
							 "auto uses the GPU when one is usable (and the sort is large "
							 "enough to gain from it) and the CPU otherwise, falling back "
							 "to the CPU with a WARNING if the GPU fails; gpu raises an "
							 "error instead; cpu never touches the GPU.",
							 &gpusort_device, GS_DEVICE_AUTO, device_options,
							 PGC_USERSET, 0, NULL, assign_device, NULL);

	DefineCustomEnumVariable("gpusort.algorithm",
							 "Sorting algorithm of GpuSort: auto, bitonic, butterfly or radix.",
							 NULL,
							 &gpusort_algorithm, GS_ALGO_AUTO, algorithm_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.min_rows",
							"Fewest estimated input rows for which the planner considers GpuSort.",
							"0 makes every eligible ORDER BY a GpuSort (for tests).",
							&gpusort_min_rows, 50000, 0, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.gpu_min_elements",
							"Under gpusort.device = auto, sorts of fewer elements run on the CPU.",
							"Below this size the GPU's fixed costs (launches, transfers) "
							"outweigh its speed. gpusort.device = gpu ignores it.",
							&gpusort_gpu_min_elements, 16384, 0, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.gpu_memory_limit",
							"Most GPU memory one sort may use; 0 means no cap below the GPU service's budget.",
							"A sort that needs more runs on the CPU (with a WARNING) "
							"under gpusort.device = auto, and fails under gpu.",
							&gpusort_gpu_memory_limit_mb, 0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MB, NULL, NULL, NULL);

	DefineCustomBoolVariable("gpusort.spill_to_gpu",
							 "Lets a GpuSort beyond work_mem, and the processes of a parallel GpuSort, hold their rows in the GPU service's memory instead of temporary files.",
							 "The service sorts them there and they are read back in order; "
							 "rows that do not fit its room go to temporary files. Needs "
							 "the GPU service (shared_preload_libraries); off, or under "
							 "gpusort.device = cpu, every such sort uses temporary files.",
							 &gpusort_spill_to_gpu, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.queue_timeout",
							"Longest wait for GPU memory before sorting on the CPU (auto) or failing (gpu).",
							"A sort the GPU service cannot admit at once (its memory "
							"budget, or its session's share, is taken) waits in its "
							"queue this long; then it sorts on the CPU under "
							"gpusort.device = auto, and fails with SQLSTATE 53400 under gpu.",
							&gpusort_queue_timeout_ms, 1000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS, NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.session_gpu_memory_limit",
							"Most GPU memory one session's sorts may hold at once; 0 means no cap below the GPU service's budget.",
							"Counts every sort of the session and of its parallel workers "
							"on one GPU. A sort that would pass it waits for the "
							"session's other sorts (gpusort.queue_timeout); one that "
							"could never fit runs on the CPU (auto) or fails (gpu).",
							&gpusort_session_gpu_memory_limit_mb, 0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MB, NULL, NULL, NULL);

	DefineCustomIntVariable("gpusort.approximate_intervals",
							"Opt-in approximate ORDER BY: number of intervals, 0 = off.",
							"When set, a top-level ORDER BY on one integer key (or, in quantile "
							"mode, a float key too) returns rows in interval order (exact between "
							"intervals, any order within one).",
							&gpusort_approximate_intervals, 0, 0, (int) (1 << 26),
							PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomEnumVariable("gpusort.approximate_mode",
							 "How the approximate ORDER BY cuts the key into intervals: width or quantile.",
							 "width: equal-width intervals of the key's range (out-of-order rows "
							 "differ by less than one width). quantile: intervals at the quantiles "
							 "of a sample, about n / intervals rows each however skewed the key "
							 "(every row within a stated distance of its exact rank); at most "
							 "2^25 intervals, more are taken as 2^25.",
							 &gpusort_approximate_mode, GS_APPROX_WIDTH, approximate_mode_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomBoolVariable("gpusort.parallel_merge",
							 "Lets parallel workers help merge a parallel GpuSort's shares, a key range each.",
							 "Off: the leader merges every share's runs alone.",
							 &gpusort_parallel_merge, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomBoolVariable("gpusort.read_table_pages",
							 "Lets a GpuSort read the table pages of a Seq Scan below it itself.",
							 "Where the scan (parallel or not) computes no column, GpuSort "
							 "finds the visible rows on the pages and applies the scan's "
							 "filter as the scan would, without an executor call per row. "
							 "Off: the scan runs as usual.",
							 &gpusort_read_table_pages, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);

	DefineCustomBoolVariable("gpusort.explain_details",
							 "Shows machine-dependent details (device, memory, timings) in EXPLAIN.",
							 "Turn off for output that is the same on every machine.",
							 &gpusort_explain_details, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}
