/*
 * parallel_sort.c — one GpuSort spread over parallel query's processes.
 *
 * The plan (planner.c builds it):
 *
 *   GpuSort                  merges the shares' files (GPUSORT_MERGE_SHARES)
 *     -> Gather              starts the parallel workers
 *          -> GpuSort        sorts one process's share (GPUSORT_SORT_SHARE)
 *               -> Parallel Seq Scan, or any partial path
 *
 * Each process that runs the part under the Gather (every worker, and the
 * leader when it participates) reads its share of the rows into a row store
 * within work_mem, sorts it (on the GPU, through the GPU service) and
 * writes it as sorted runs, one per work_mem of rows, to files of a
 * SharedFileSet in the Gather's dynamic shared memory; it returns no rows,
 * so no tuple passes through the Gather's queues. A share merges its own
 * runs only down to MAX_SHARE_RUNS (fewer when the leader's work_mem could
 * not read them all at once). The GpuSort above runs the Gather to its
 * end, opens every share's runs and merges them on their encoded keys as
 * the rows are read (row_store.c). The rows thus reach the leader through
 * temporary files, already encoded, instead of one tuple at a time through
 * a queue and a merge that decodes the keys again, as Gather Merge does.
 *
 * Where the Gather runs the share in the leader alone, with no dynamic
 * shared memory (a query run a few rows at a time, or none could be made),
 * the runs are private temporary files that the node above takes over.
 *
 * The shared files live as long as the Gather's shared memory: until the
 * query ends, or a rescan starts the Gather again, which deletes them first.
 * The node above reads them only until then; a rescan sorts again.
 */
#include "gpusort.h"

#include "access/parallel.h"
#include "commands/tablespace.h"
#include "executor/executor.h"
#include "nodes/execnodes.h"
#include "storage/dsm.h"
#include "storage/sharedfileset.h"
#include "storage/spin.h"

#include "gpusort_executor.h"

/* Most runs one share hands over. */
#define MAX_SHARE_RUNS 128

/* One process's sorted share: its runs, in input order. */
typedef struct ShareFile
{
	bool		written;
	int			nruns;
	RowStoreRun runs[MAX_SHARE_RUNS];	/* file_number, rows, bytes, key ranges */
} ShareFile;

/* In the Gather's dynamic shared memory, one per GpuSort below it. */
struct ParallelShares
{
	SharedFileSet fileset;
	bool		have_fileset;	/* false: no segment to keep files with */
	dsm_handle	segment;
	slock_t		mutex;
	int			nshares;		/* the workers planned, and the leader */
	ShareFile	shares[FLEXIBLE_ARRAY_MEMBER];
};

Size
gpusort_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	return add_size(offsetof(ParallelShares, shares),
					mul_size(pcxt->nworkers + 1, sizeof(ShareFile)));
}

void
gpusort_initialize_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GpuSortState *state = (GpuSortState *) node;
	ParallelShares *shared = (ParallelShares *) coordinate;

	memset(shared, 0, gpusort_estimate_dsm(node, pcxt));
	SpinLockInit(&shared->mutex);
	shared->nshares = pcxt->nworkers + 1;
	if (pcxt->seg != NULL)
	{
		SharedFileSetInit(&shared->fileset, pcxt->seg);
		shared->segment = dsm_segment_handle(pcxt->seg);
		shared->have_fileset = true;
	}
	state->shares = shared;
}

/* A rescan of the Gather: the last scan's files go, the slots start over. */
void
gpusort_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	ParallelShares *shared = (ParallelShares *) coordinate;

	for (int i = 0; i < shared->nshares; i++)
	{
		ShareFile  *share = &shared->shares[i];

		for (int r = 0; shared->have_fileset && r < share->nruns; r++)
		{
			char		name[MAXPGPATH];

			row_store_share_file_name(name, sizeof(name), i, share->runs[r].file_number);
			BufFileDeleteFileSet(&shared->fileset.fs, name, true);
		}
		memset(share, 0, sizeof(ShareFile));
	}
}

void
gpusort_initialize_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	GpuSortState *state = (GpuSortState *) node;
	ParallelShares *shared = (ParallelShares *) coordinate;

	if (shared->have_fileset)
	{
		dsm_segment *segment = dsm_find_mapping(shared->segment);

		if (segment == NULL)
			elog(ERROR, "gpusort: a parallel worker cannot find its query's shared memory");
		SharedFileSetAttach(&shared->fileset, segment);
	}
	state->shares = shared;
}

/* This process's share number: the workers', then the leader's. */
static int
share_number(ParallelShares *shared)
{
	int			share = IsParallelWorker() ? ParallelWorkerNumber : shared->nshares - 1;

	if (share < 0 || share >= shared->nshares)
		elog(ERROR, "gpusort: parallel worker %d is beyond the %d planned",
			 share, shared->nshares - 1);
	return share;
}

/* GPUSORT_SORT_SHARE, before the rows come: where the share's runs go. */
void
gpusort_share_spec(GpuSortState *state, RowStoreSpec *spec)
{
	ParallelShares *shared = state->shares;

	if (shared != NULL && shared->have_fileset)
	{
		spec->share_files = &shared->fileset.fs;
		spec->share = share_number(shared);
	}
}

/*
 * GPUSORT_SORT_SHARE, once the process's share of the rows is in
 * state->rows: its sorted runs are published for the node above.
 */
void
gpusort_sort_share(GpuSortState *state)
{
	ParallelShares *shared = state->shares;
	int			nshares = shared != NULL ? shared->nshares : 1;
	/* the leader reads every share's runs at once within its work_mem */
	int			max_runs = Min(MAX_SHARE_RUNS,
							   row_store_merge_order(state->work_mem_bytes) / nshares);
	RowStoreRun *runs;
	int			nruns = row_store_finish_share(state->rows, max_runs, &runs);

	if (shared == NULL || !shared->have_fileset)
	{
		/* the leader alone: private files for the node above */
		state->local_runs = runs;
		state->local_nruns = nruns;
	}
	else
	{
		ShareFile  *share = &shared->shares[share_number(shared)];

		if (nruns > MAX_SHARE_RUNS)
			elog(ERROR, "gpusort: a parallel share has %d sorted runs, more than %d",
				 nruns, MAX_SHARE_RUNS);
		/* the runs first; `written`, under the lock, publishes them */
		memcpy(share->runs, runs, nruns * sizeof(RowStoreRun));
		share->nruns = nruns;
		SpinLockAcquire(&shared->mutex);
		share->written = true;
		SpinLockRelease(&shared->mutex);
	}
}

/*
 * GPUSORT_MERGE_SHARES: runs the Gather below to its end (every share is
 * then sorted and its process finished) and returns a row store merging
 * the runs of every share, ready for row_store_sort().
 */
RowStore *
gpusort_merge_shares(GpuSortState *state, PlanState *gather, const RowStoreSpec *spec)
{
	GpuSortState *share_node;
	ParallelShares *shared;
	RowStoreRun *runs;
	int			nruns = 0;
	int			capacity;

	if (!IsA(gather, GatherState) || outerPlanState(gather) == NULL ||
		!IsA(outerPlanState(gather), CustomScanState) ||
		((CustomScanState *) outerPlanState(gather))->methods !=
		((CustomScanState *) state)->methods)
		elog(ERROR, "gpusort: a parallel merge is not above a Gather of sorted shares");
	share_node = (GpuSortState *) outerPlanState(gather);

	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(gather);

		if (TupIsNull(slot))
			break;
		elog(ERROR, "gpusort: a parallel share returned a row");
	}

	shared = share_node->shares;
	capacity = (shared != NULL ? shared->nshares * MAX_SHARE_RUNS : 0) +
		share_node->local_nruns + 1;
	runs = palloc(capacity * sizeof(RowStoreRun));
	if (shared != NULL && shared->have_fileset)
	{
		for (int i = 0; i < shared->nshares; i++)
		{
			ShareFile  *share = &shared->shares[i];
			bool		written;

			SpinLockAcquire(&shared->mutex);
			written = share->written;
			SpinLockRelease(&shared->mutex);
			for (int r = 0; written && r < share->nruns; r++)
			{
				char		name[MAXPGPATH];

				row_store_share_file_name(name, sizeof(name), i, share->runs[r].file_number);
				runs[nruns] = share->runs[r];
				runs[nruns].file = BufFileOpenFileSet(&shared->fileset.fs, name, O_RDONLY, false);
				nruns++;
			}
		}
	}
	for (int r = 0; r < share_node->local_nruns; r++)
		runs[nruns++] = share_node->local_runs[r];
	share_node->local_nruns = 0;	/* the merge's now */
	return row_store_begin_merge(spec, nruns, runs);
}
