/*
 * worker_reports.c — what each parallel worker's GpuSort did, for EXPLAIN
 * ANALYZE.
 *
 * A GpuSort below a Gather or Gather Merge (a partial sort, or a parallel
 * sort's share) runs in every parallel process, but EXPLAIN runs in the
 * leader, which knows only its own sort. As PostgreSQL's Sort does, each
 * worker leaves a report in the Gather's dynamic shared memory when its
 * node shuts down, and EXPLAIN shows a line per worker after the leader's
 * figures.
 *
 * PostgreSQL offers custom scans dynamic shared memory only when their plan
 * is parallel_aware (so those GpuSorts are), and no callback to copy
 * reports out before the Gather frees that memory, which it does before
 * EXPLAIN prints. So the leader copies them as it detaches from the
 * segment (on_dsm_detach), after the workers have finished, and as a
 * rescan of the Gather starts new workers. EXPLAIN shows the last run's
 * reports, as it shows the leader's own last sort (and PostgreSQL's Sort
 * its workers' last).
 */
#include "gpusort.h"
#include "service.h"

#include "access/parallel.h"
#include "commands/explain.h"
#include "storage/dsm.h"

#include "gpusort_executor.h"

/* Where a store's sorts ran, in words: a worker's report, and EXPLAIN's
 * line for the leader. */
char *
gpusort_device_description(const RowStoreStats *stats)
{
	const gs_sort_report *report = &stats->report;

	if (stats->gpu_sorts > 0)
	{
		char		name[256] = "";

		if (gpu_service != NULL && stats->gpu_index >= 0 &&
			stats->gpu_index < GS_SERVICE_MAX_GPUS)
		{
			SpinLockAcquire(&gpu_service->mutex);
			strlcpy(name, gpu_service->gpus[stats->gpu_index].device.name, sizeof(name));
			SpinLockRelease(&gpu_service->mutex);
		}
		/* a sort of many runs: those too small for the GPU ran on the CPU */
		if (stats->gpu_sorts < stats->sorts)
			return psprintf("GPU %d (%s) for %d of %d sorts, the rest on the CPU",
							stats->gpu_index, name, stats->gpu_sorts, stats->sorts);
		return psprintf("GPU %d (%s)", stats->gpu_index, name);
	}
	if (report->fell_back)
		return psprintf("CPU (the GPU failed: %s)", report->gpu_message);
	if (report->gpu_message[0] != '\0')
		return psprintf("CPU (%s)", report->gpu_message);
	return pstrdup("CPU");
}

/* One worker's sort. */
typedef struct WorkerReport
{
	bool		sorted;			/* false: the worker never sorted */
	bool		bounded;		/* it kept LIMIT + OFFSET rows */
	bool		read_table;		/* it read the table's pages */
	int64		rows_read;
	int64		rows_sorted;
	int64		table_pages_read;
	int64		gpu_run_rows;
	int64		runs;
	int64		disk_bytes;
	int64		peak_memory;
	int			prefix_bytes_chosen;	/* a string key's prefix it chose
										 * from its rows (0: none) */
	double		gather_ms;
	double		sort_ms;
	double		emit_ms;
	char		device[160];	/* "" where it sorted nothing itself (a
								 * share's rows all went to the GPU rows
								 * job) */
} WorkerReport;

struct WorkerReports
{
	int			nworkers;		/* planned */
	WorkerReport reports[FLEXIBLE_ARRAY_MEMBER];
};

Size
worker_reports_size(int nworkers)
{
	return MAXALIGN(add_size(offsetof(WorkerReports, reports),
							 mul_size(Max(nworkers, 0), sizeof(WorkerReport))));
}

/* The leader: the last run's reports into its copy, the slots cleared. */
static void
collect_reports(GpuSortState *state)
{
	WorkerReports *shared = state->shared_reports;
	int			n = shared != NULL ? Min(shared->nworkers, state->nworker_reports) : 0;

	if (n == 0)
		return;
	memcpy(state->worker_reports, shared->reports, n * sizeof(WorkerReport));
	memset(shared->reports, 0, n * sizeof(WorkerReport));
}

/* The leader detaches from the Gather's segment: its workers are done. */
static void
reports_detached(dsm_segment *segment, Datum arg)
{
	GpuSortState *state = (GpuSortState *) DatumGetPointer(arg);

	collect_reports(state);
	state->shared_reports = NULL;
	state->reports_segment = NULL;
}

/*
 * The leader, as the Gather sets up its shared memory (again, after a
 * shutdown freed it): empty slots, and the copy to collect them into, in
 * the query's memory, which outlives the segment.
 */
void
worker_reports_init(GpuSortState *state, WorkerReports *shared, ParallelContext *pcxt)
{
	MemoryContext query_context = state->css.ss.ps.state->es_query_cxt;

	memset(shared, 0, worker_reports_size(pcxt->nworkers));
	shared->nworkers = pcxt->nworkers;
	if (state->worker_reports == NULL && pcxt->nworkers > 0)
	{
		state->worker_reports = MemoryContextAllocZero(query_context,
													   pcxt->nworkers * sizeof(WorkerReport));
		state->nworker_reports = pcxt->nworkers;
	}
	state->shared_reports = shared;
	if (pcxt->seg != NULL && state->reports_segment != pcxt->seg)
	{
		on_dsm_detach(pcxt->seg, reports_detached, PointerGetDatum(state));
		state->reports_segment = pcxt->seg;
	}
}

/* The leader, as a rescan of the Gather starts new workers. */
void
worker_reports_reinit(GpuSortState *state)
{
	collect_reports(state);
}

/* A worker, as it starts; returns the bytes the reports take (what the
 * node keeps in the segment besides them follows). */
Size
worker_reports_attach(GpuSortState *state, WorkerReports *shared)
{
	state->shared_reports = shared;
	return worker_reports_size(shared->nworkers);
}

/*
 * A worker's node shuts down (perhaps more than once): its report, which
 * the leader reads once the worker has finished.
 */
void
worker_report_write(GpuSortState *state)
{
	WorkerReports *shared = state->shared_reports;
	WorkerReport *report;
	const RowStoreStats *stats;

	if (!IsParallelWorker() || shared == NULL || state->rows == NULL ||
		ParallelWorkerNumber < 0 || ParallelWorkerNumber >= shared->nworkers)
		return;
	stats = row_store_stats(state->rows);
	report = &shared->reports[ParallelWorkerNumber];
	memset(report, 0, sizeof(WorkerReport));
	report->sorted = true;
	report->bounded = state->bound > 0;
	report->read_table = state->read_table;
	report->rows_read = stats->rows_read;
	report->rows_sorted = (int64) stats->rows_sorted;
	report->table_pages_read = state->table_pages_read;
	report->gpu_run_rows = stats->gpu_run_rows;
	report->runs = stats->runs;
	report->disk_bytes = stats->disk_bytes;
	report->peak_memory = (int64) stats->peak_memory;
	report->prefix_bytes_chosen = stats->prefix_bytes_chosen;
	report->gather_ms = state->gather_ms;
	report->sort_ms = stats->sort_ms;
	report->emit_ms = state->emit_ms;
	if (stats->sorts > 0)
		strlcpy(report->device, gpusort_device_description(stats), sizeof(report->device));
}

/* The leader's node ends while the segment is still there (its Gather
 * ends after it): nothing is to be copied into the node any more. */
void
worker_reports_end(GpuSortState *state)
{
	if (state->reports_segment != NULL)
		cancel_on_dsm_detach(state->reports_segment, reports_detached,
							 PointerGetDatum(state));
	state->reports_segment = NULL;
	state->shared_reports = NULL;
}

/*
 * EXPLAIN ANALYZE: a line per worker that sorted (a group per worker in
 * the other formats, under "GpuSort Workers": PostgreSQL's own "Workers"
 * holds their timing). None where EXPLAIN hides the workers (below the
 * invisible Gather of force_parallel_mode = regress), as PostgreSQL does.
 */
void
worker_reports_explain(GpuSortState *state, ExplainState *es)
{
	bool		details = gpusort_explain_details_wanted(es, gpusort_explain_details);
	bool		text = es->format == EXPLAIN_FORMAT_TEXT;
	bool		any = false;

	if (es->hide_workers)
		return;

	for (int w = 0; w < state->nworker_reports; w++)
	{
		const WorkerReport *report = &state->worker_reports[w];

		if (!report->sorted)
			continue;
		if (!any && !text)
			ExplainOpenGroup("GpuSort Workers", "GpuSort Workers", false, es);
		any = true;
		if (text)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "Worker %d:  Rows Sorted: " INT64_FORMAT, w,
							 report->rows_sorted);
			if (report->bounded)
				appendStringInfo(es->str, "  Rows Read: " INT64_FORMAT, report->rows_read);
			if (report->read_table)
				appendStringInfo(es->str, "  Table Pages Read by GpuSort: " INT64_FORMAT,
								 report->table_pages_read);
			if (report->gpu_run_rows > 0)
				appendStringInfo(es->str, "  Rows in GPU Memory: " INT64_FORMAT,
								 report->gpu_run_rows);
			if (report->runs > 0)
				appendStringInfo(es->str, "  Sorted Runs: " INT64_FORMAT "  Disk: " INT64_FORMAT "kB",
								 report->runs, (report->disk_bytes + 1023) / 1024);
			if (report->prefix_bytes_chosen > 0)
				appendStringInfo(es->str, "  Key Prefix: %d bytes",
								 report->prefix_bytes_chosen);
			if (details && report->device[0] != '\0')
				appendStringInfo(es->str, "  Device: %s", report->device);
			if (details)
				appendStringInfo(es->str, "  Memory: " INT64_FORMAT "kB",
								 (report->peak_memory + 1023) / 1024);
			if (details && es->timing)
				appendStringInfo(es->str, "  Time: gather=%.3f sort=%.3f emit=%.3f ms",
								 report->gather_ms, report->sort_ms, report->emit_ms);
			appendStringInfoChar(es->str, '\n');
			continue;
		}
		ExplainOpenGroup("Worker", NULL, true, es);
		ExplainPropertyInteger("Worker Number", NULL, w, es);
		ExplainPropertyInteger("Rows Sorted", NULL, report->rows_sorted, es);
		if (report->bounded)
			ExplainPropertyInteger("Rows Read", NULL, report->rows_read, es);
		if (report->read_table)
			ExplainPropertyInteger("Table Pages Read by GpuSort", NULL,
								   report->table_pages_read, es);
		if (report->gpu_run_rows > 0)
			ExplainPropertyInteger("Rows in GPU Memory", NULL, report->gpu_run_rows, es);
		if (report->runs > 0)
		{
			ExplainPropertyInteger("Sorted Runs", NULL, report->runs, es);
			ExplainPropertyInteger("Disk", "kB", (report->disk_bytes + 1023) / 1024, es);
		}
		if (report->prefix_bytes_chosen > 0)
			ExplainPropertyInteger("Key Prefix Bytes Chosen", NULL, report->prefix_bytes_chosen, es);
		if (details && report->device[0] != '\0')
			ExplainPropertyText("Device", report->device, es);
		if (details)
			ExplainPropertyInteger("Memory", "kB", (report->peak_memory + 1023) / 1024, es);
		if (details && es->timing)
		{
			ExplainPropertyFloat("Gather Time", "ms", report->gather_ms, 3, es);
			ExplainPropertyFloat("Sort Time", "ms", report->sort_ms, 3, es);
			ExplainPropertyFloat("Emit Time", "ms", report->emit_ms, 3, es);
		}
		ExplainCloseGroup("Worker", NULL, true, es);
	}
	if (any && !text)
		ExplainCloseGroup("GpuSort Workers", "GpuSort Workers", false, es);
}
