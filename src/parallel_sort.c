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
 * the rows are read (row_store_parallel.c). The rows thus reach the leader
 * through temporary files, already encoded, instead of one tuple at a time
 * through a queue and a merge that decodes the keys again, as Gather Merge
 * does.
 *
 * With the GPU service (gpusort.spill_to_gpu, an unbounded sort), the rows
 * skip the files: as the Gather starts its workers the leader opens one
 * rows job in the service (service.h) with room for twice the rows the
 * planner expects, and puts what finds it in the dynamic shared memory.
 * Each process that runs a share attaches to the job with a connection
 * and slot of its own and streams its rows into it as they come,
 * unsorted (row_store_gpu.c; a share that chooses a string key's prefix
 * first holds its first rows, see agree_on_prefix()); only rows beyond the job's room become sorted
 * runs. The node above, once every share is written, has the service sort
 * the job's rows once and reads them in order straight from its slot, or
 * merges them with the files. No key ranges are merged then: the workers
 * cannot read the leader's job.
 *
 * Where the Gather runs the share in the leader alone, with no dynamic
 * shared memory (a query run a few rows at a time, or none could be made),
 * the runs are private temporary files that the node above takes over.
 *
 * A partitioned merge takes the merge off the leader's one core where the
 * node above reads forward only and keeps every row (gpusort.parallel_merge).
 * Every process, once its runs are written, counts itself in the shared
 * memory and returns a few rows of NULLs through the Gather (EXPLAIN
 * ANALYZE counts them as the Gather's rows): each one wakes the node
 * above, which stops reading the Gather when every process that runs a
 * share has counted itself, while the workers are still there. It then
 * cuts the key space into ranges of about equal bytes, from the samples
 * the runs noted in files beside them (row_store_runs.c), and publishes the
 * splitters, with a file of where each range starts in each run. Workers
 * claim ranges in order and merge each, from every run, into a file of its own;
 * the leader reads the ranges in turn: one a worker finished from its
 * file, one nobody has claimed yet by merging it itself as it reads (so it
 * never waits on a range nobody works on). The workers end when no range is
 * left. Where only the leader runs a share, or the rows are few, the leader
 * merges all runs at once as before.
 *
 * The shared files live as long as the Gather's shared memory: until the
 * query ends, or a rescan starts the Gather again, which deletes them first.
 * The node above reads them only until then; a rescan sorts again.
 */
#include "gpusort.h"

#include "access/htup_details.h"
#include "access/parallel.h"
#include "commands/tablespace.h"
#include "executor/execParallel.h"
#include "executor/executor.h"
#include "nodes/execnodes.h"
#include "storage/dsm.h"
#include "storage/sharedfileset.h"
#include "storage/condition_variable.h"
#include "storage/spin.h"
#include "utils/wait_event.h"

#include "gpusort_executor.h"
#include "service.h"

/* Most runs one share hands over. */
#define MAX_SHARE_RUNS 128
/* A partitioned merge: key ranges per process that merges, and the fewest
 * bytes a range holds (fewer ranges where the rows are few). */
#define RANGES_PER_PROCESS 4
#define MIN_RANGE_BYTES ((int64) 256 * 1024)
/* A Gather's tuple queue per worker (PARALLEL_TUPLE_QUEUE_SIZE, which
 * execParallel.c keeps to itself) */
#define TUPLE_QUEUE_BYTES ((Size) 65536)

/* What the merge above decided, once every share was written. */
typedef enum MergeDecision
{
	MERGE_PENDING = 0,
	MERGE_BY_RANGES,			/* workers help: see the header */
	MERGE_IN_LEADER				/* the leader merges alone */
} MergeDecision;

/* One process's sorted share: its runs, in input order. */
typedef struct ShareFile
{
	bool		written;
	int			nruns;
	RowStoreRun runs[MAX_SHARE_RUNS];	/* file_number, rows, bytes, key ranges */
	RowStoreRun gpu_part;		/* its rows in the shared rows job, if any */
} ShareFile;

/* In the Gather's dynamic shared memory, one per GpuSort below it. */
struct ParallelShares
{
	SharedFileSet fileset;
	bool		have_fileset;	/* false: no segment to keep files with */
	dsm_handle	segment;
	slock_t		mutex;
	int			nshares;		/* the workers planned, and the leader */
	/* the leader's rows job in the GPU service, which every share appends
	 * its rows to first (see the header) */
	bool		have_gpu_rows;
	ServiceRowsShared gpu_rows;
	/* a partitioned merge (under the mutex, but the splitters, which are
	 * written before the decision is) */
	bool		ranges_allowed; /* the merge above reads forward, every row */
	ConditionVariable changed;	/* the decision came, or a range is done */
	MergeDecision decision;
	int			nranges;
	int			next_range;		/* the first nobody has claimed */
	int			shares_written; /* processes whose share is written */
	bool		stop;			/* the leader reads no more: workers stop */
	bool		range_done[ROW_STORE_MAX_PARTITIONS];
	RowStoreKey splitters[ROW_STORE_MAX_PARTITIONS - 1];
	/* a string key's prefix chosen from the rows (under the mutex): the
	 * width the first share to choose found, which every share takes (0:
	 * none chose yet), and the rows it looked at */
	int			prefix_bytes;
	int64		prefix_rows;
	ShareFile	shares[FLEXIBLE_ARRAY_MEMBER];
};

static void
range_file_name(char *name, size_t size, int range)
{
	snprintf(name, size, "gpusort-range-%d", range);
}

/* Where the leader puts every run's key range starts for the workers. */
#define RANGE_STARTS_FILE "gpusort-range-starts"

/*
 * The node's chunk of the Gather's dynamic shared memory: its workers'
 * reports for EXPLAIN ANALYZE (worker_reports.c; every parallel-aware
 * GpuSort, a partial sort under a Gather Merge too), then a share's
 * ParallelShares.
 */
static Size
shares_size(ParallelContext *pcxt)
{
	return add_size(offsetof(ParallelShares, shares),
					mul_size(pcxt->nworkers + 1, sizeof(ShareFile)));
}

static ParallelShares *
shares_after_reports(void *coordinate, Size reports_size)
{
	return (ParallelShares *) ((char *) coordinate + reports_size);
}

/*
 * The enum keys' tables of their labels' keys (types.c), after the
 * shares: the leader's, which every process that sorts a share takes, so
 * that all encode alike. Returns their size; where `area` is given, the
 * leader writes them there, or a worker (`adopt`) takes them from there.
 */
static Size
enum_tables(GpuSortState *state, char *area, bool adopt)
{
	Size		size = 0;

	for (int k = 0; k < state->plan.nkeys; k++)
	{
		GpuSortEnumPlaces *places = state->key_types[k]->enum_places;

		if (places == NULL)
			continue;
		if (area != NULL && adopt)
			gpusort_enum_places_adopt(places, area + size);
		else if (area != NULL)
			gpusort_enum_places_write(places, area + size);
		size = add_size(size, gpusort_enum_places_size(places));
	}
	return size;
}

static char *
enum_tables_area(ParallelShares *shared)
{
	return (char *) shared + MAXALIGN(offsetof(ParallelShares, shares) +
									  shared->nshares * sizeof(ShareFile));
}

Size
gpusort_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	GpuSortState *state = (GpuSortState *) node;
	Size		size = worker_reports_size(pcxt->nworkers);

	if (state->plan.role == GPUSORT_SORT_SHARE)
		size = add_size(size, add_size(MAXALIGN(shares_size(pcxt)), enum_tables(state, NULL, false)));
	return size;
}

/* The node ends: the leader's rows job, if the merge did not take it. */
void
gpusort_close_gpu_rows(GpuSortState *state)
{
	if (state->gpu_rows != NULL)
		service_rows_close(state->gpu_rows);
	state->gpu_rows = NULL;
}

/* The query's memory goes (after the node ended, or in an abort, when the
 * resource owner closes the job's file): its connection, if still open. */
static void
abandon_gpu_rows(void *arg)
{
	GpuSortState *state = (GpuSortState *) arg;

	if (state->gpu_rows != NULL)
		service_rows_abandon(state->gpu_rows);
	state->gpu_rows = NULL;
}

/*
 * The leader, as the Gather starts its workers (again): a shared rows job
 * for the shares' rows, where the merge above allows one, with room for
 * twice the rows the planner expects the merge to have. It is the merge's
 * once the shares are written; it closes with the query at the latest.
 * Declined, the shares write files.
 */
static void
open_gpu_rows(GpuSortState *state, ParallelShares *shared)
{
	Plan	   *plan = state->css.ss.ps.plan;
	uint64		memory_limit = (uint64) gpusort_gpu_memory_limit_mb << 20;
	uint64		record = gs_row_record_bytes(state->plan.nkeys,
											 (uint32) MAXALIGN(SizeofMinimalTupleHeader +
															   Max(plan->plan_width, 0)));
	uint64		capacity = row_store_gpu_room(state->gpu_rows_expected, record);
	MemoryContext query_context = state->css.ss.ps.state->es_query_cxt;
	MemoryContext old_context;
	MemoryContextCallback *callback;
	ServiceRows *rows;
	char		why[256];

	shared->have_gpu_rows = false;
	if (state->gpu_rows != NULL)
		service_rows_close(state->gpu_rows);	/* the last scan's */
	state->gpu_rows = NULL;
	if (!state->gpu_rows_allowed || !shared->have_fileset || gpusort_device == GS_DEVICE_CPU ||
		gpu_service == NULL)
		return;
	old_context = MemoryContextSwitchTo(query_context);
	rows = service_rows_open(capacity, Max(record / 2, gs_row_record_bytes(state->plan.nkeys,
																		  GS_MIN_TUPLE_BYTES)),
							 state->plan.nkeys, state->plan.descending, state->plan.nulls_first,
							 memory_limit, true, why, sizeof(why));
	MemoryContextSwitchTo(old_context);
	if (rows == NULL)
		return;
	if (!state->gpu_rows_callback)
	{
		/* (the node lives in the query's context too) */
		callback = MemoryContextAllocZero(query_context, sizeof(MemoryContextCallback));
		callback->func = abandon_gpu_rows;
		callback->arg = state;
		MemoryContextRegisterResetCallback(query_context, callback);
		state->gpu_rows_callback = true;
	}
	service_rows_share(rows, &shared->gpu_rows);
	shared->have_gpu_rows = true;
	/* the merge above reads the job: no workers merge key ranges */
	shared->ranges_allowed = false;
	state->gpu_rows = rows;
}

void
gpusort_initialize_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GpuSortState *state = (GpuSortState *) node;
	ParallelShares *shared;

	worker_reports_init(state, (WorkerReports *) coordinate, pcxt);
	if (state->plan.role != GPUSORT_SORT_SHARE)
		return;
	shared = shares_after_reports(coordinate, worker_reports_size(pcxt->nworkers));
	memset(shared, 0, shares_size(pcxt));
	SpinLockInit(&shared->mutex);
	ConditionVariableInit(&shared->changed);
	shared->nshares = pcxt->nworkers + 1;
	shared->ranges_allowed = state->ranges_allowed;
	if (pcxt->seg != NULL)
	{
		SharedFileSetInit(&shared->fileset, pcxt->seg);
		shared->segment = dsm_segment_handle(pcxt->seg);
		shared->have_fileset = true;
	}
	enum_tables(state, enum_tables_area(shared), false);
	state->shares = shared;
	open_gpu_rows(state, shared);
}

/* A rescan of the Gather: the last scan's files go, the slots start over. */
void
gpusort_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GpuSortState *state = (GpuSortState *) node;
	ParallelShares *shared;

	worker_reports_reinit(state);
	if (state->plan.role != GPUSORT_SORT_SHARE)
		return;
	shared = shares_after_reports(coordinate, worker_reports_size(pcxt->nworkers));

	for (int p = 0; shared->have_fileset && p < shared->nranges; p++)
	{
		char		name[MAXPGPATH];

		range_file_name(name, sizeof(name), p);
		BufFileDeleteFileSet(&shared->fileset.fs, name, true);
	}
	if (shared->have_fileset)
		BufFileDeleteFileSet(&shared->fileset.fs, RANGE_STARTS_FILE, true);
	shared->decision = MERGE_PENDING;
	shared->shares_written = 0;
	shared->stop = false;
	shared->nranges = 0;
	shared->next_range = 0;
	memset(shared->range_done, 0, sizeof(shared->range_done));
	shared->ranges_allowed = state->ranges_allowed;
	shared->prefix_bytes = 0;
	shared->prefix_rows = 0;
	for (int i = 0; i < shared->nshares; i++)
	{
		ShareFile  *share = &shared->shares[i];

		for (int r = 0; shared->have_fileset && r < share->nruns; r++)
		{
			char		name[MAXPGPATH];

			row_store_share_file_name(name, sizeof(name), i, share->runs[r].file_number);
			BufFileDeleteFileSet(&shared->fileset.fs, name, true);
			row_store_share_samples_name(name, sizeof(name), i, share->runs[r].file_number);
			BufFileDeleteFileSet(&shared->fileset.fs, name, true);
		}
		memset(share, 0, sizeof(ShareFile));
	}
	open_gpu_rows(state, shared);
}

void
gpusort_initialize_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	GpuSortState *state = (GpuSortState *) node;
	Size		reports_size = worker_reports_attach(state, (WorkerReports *) coordinate);
	ParallelShares *shared;

	if (state->plan.role != GPUSORT_SORT_SHARE)
		return;
	shared = shares_after_reports(coordinate, reports_size);
	if (shared->have_fileset)
	{
		dsm_segment *segment = dsm_find_mapping(shared->segment);

		if (segment == NULL)
			elog(ERROR, "gpusort: a parallel worker cannot find its query's shared memory");
		SharedFileSetAttach(&shared->fileset, segment);
	}
	enum_tables(state, enum_tables_area(shared), true);
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

/*
 * A share's prefix width (RowStoreSpec.agree_prefix): the first share to
 * choose publishes its width, every later one takes it. No share waits
 * for another; none sends a row before it chose (row_store.c).
 */
static int
agree_on_prefix(void *arg, int bytes, int64 *rows_looked_at)
{
	ParallelShares *shared = (ParallelShares *) arg;

	SpinLockAcquire(&shared->mutex);
	if (shared->prefix_bytes == 0)
	{
		shared->prefix_bytes = bytes;
		shared->prefix_rows = *rows_looked_at;
	}
	bytes = shared->prefix_bytes;
	*rows_looked_at = shared->prefix_rows;
	SpinLockRelease(&shared->mutex);
	return bytes;
}

/*
 * GPUSORT_SORT_SHARE, before the rows come: where the share's runs go,
 * and, for a string key without statistics, the width it chooses with the
 * other shares. (Without shared memory the leader runs the one share and
 * keeps the widest, as the merge above then assumes.)
 */
static void
share_spec(GpuSortState *state, RowStoreSpec *spec)
{
	ParallelShares *shared = state->shares;

	if (shared != NULL && shared->have_fileset)
	{
		spec->share_files = &shared->fileset.fs;
		spec->share = share_number(shared);
		spec->sample_runs = shared->ranges_allowed;
		if (shared->have_gpu_rows)
			spec->gpu_share = &shared->gpu_rows;
		if (state->prefix_choice_type != NULL && spec->bound == 0 &&
			state->plan.topn_kind == GPUSORT_TOPN_NONE)
		{
			spec->prefix_choice = state->prefix_choice_type;
			spec->prefix_choice_key = state->prefix_choice_key;
			spec->agree_prefix = agree_on_prefix;
			spec->agree_prefix_arg = shared;
		}
	}
}

/*
 * The merge above the shares: its spec with the width the shares agreed
 * on (see agree_on_prefix()), so that it resolves their ties from there.
 */
static void
merge_spec_with_prefix(GpuSortState *merge_node, GpuSortState *share_node,
					   RowStoreSpec *spec)
{
	ParallelShares *shared = share_node->shares;
	int			widest;
	int			agreed;

	if (merge_node->prefix_choice_type == NULL || spec->bound != 0 ||
		merge_node->plan.topn_kind != GPUSORT_TOPN_NONE)
		return;
	widest = merge_node->prefix_choice_type->nwords * 8 - 1;
	merge_node->prefix_choice_type->prefix_bytes = 0;
	spec->prefix_choice = merge_node->prefix_choice_type;
	spec->prefix_choice_key = merge_node->prefix_choice_key;
	spec->prefix_rows_looked_at = 0;
	if (shared == NULL || !shared->have_fileset)
		return;
	SpinLockAcquire(&shared->mutex);
	agreed = shared->prefix_bytes;
	spec->prefix_rows_looked_at = shared->prefix_rows;
	SpinLockRelease(&shared->mutex);
	/* (the shares checked it as they took it; 0: none chose) */
	if (agreed != 0 && (agreed < 7 || agreed > widest || (agreed + 1) % 8 != 0))
		elog(ERROR, "gpusort: parallel shares agreed on a %d-byte prefix", agreed);
	if (agreed > 0 && agreed < widest)
		merge_node->prefix_choice_type->prefix_bytes = agreed;
}

/*
 * GPUSORT_SORT_SHARE, once the process's share of the rows is in
 * state->rows: its sorted runs are published for the node above.
 */
static void
sort_share(GpuSortState *state)
{
	ParallelShares *shared = state->shares;
	int			nshares = shared != NULL ? shared->nshares : 1;
	/* the leader reads every share's runs at once within its work_mem */
	int			max_runs = Min(MAX_SHARE_RUNS,
							   row_store_merge_order(state->work_mem_bytes) / nshares);
	RowStoreRun *runs;
	RowStoreRun gpu_part;
	int			nruns = row_store_finish_share(state->rows, max_runs, &runs, &gpu_part);

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
		share->gpu_part = gpu_part;
		SpinLockAcquire(&shared->mutex);
		share->written = true;
		SpinLockRelease(&shared->mutex);
	}
}

/*
 * A store merging the runs of every share that was written (and the
 * leader's private runs, which it takes over), in share order: the same
 * runs in the same order in every process that opens them.
 */
static RowStore *
open_shares(GpuSortState *share_node, const RowStoreSpec *spec, bool take_gpu_rows)
{
	ParallelShares *shared = share_node->shares;
	RowStoreRun *runs;
	bool		gpu_used = false;
	int			nruns = 0;
	int			capacity;
	RowStore   *store;

	capacity = (shared != NULL ? shared->nshares * (MAX_SHARE_RUNS + 1) : 0) +
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
			if (written && share->gpu_part.rows > 0 && take_gpu_rows)
			{
				if (share_node->gpu_rows == NULL)
					elog(ERROR, "gpusort: a parallel share's rows are in a GPU rows job "
						 "nobody holds");
				runs[nruns] = share->gpu_part;
				runs[nruns].gpu = share_node->gpu_rows;
				nruns++;
				gpu_used = true;
			}
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
	store = row_store_begin_merge(spec, nruns, runs);
	pfree(runs);
	if (take_gpu_rows)
	{
		/* the merge's store holds the job now; if no share put a row in
		 * it, its memory goes back at once */
		if (!gpu_used && share_node->gpu_rows != NULL)
			service_rows_close(share_node->gpu_rows);
		share_node->gpu_rows = NULL;
	}

	return store;
}

/* Publishes the merge's decision (and wakes the workers waiting for it). */
static void
decide(ParallelShares *shared, MergeDecision decision, int nranges)
{
	SpinLockAcquire(&shared->mutex);
	shared->nranges = nranges;
	shared->next_range = 0;
	shared->decision = decision;
	SpinLockRelease(&shared->mutex);
	ConditionVariableBroadcast(&shared->changed);
}

/*
 * The leader's source of range p (see RowStorePartitionSource): claimed,
 * when no worker has, to merge it here; else, once its worker is done,
 * the file it merged the range into.
 */
static bool
take_range(void *arg, int range, BufFile **file)
{
	ParallelShares *shared = (ParallelShares *) arg;
	char		name[MAXPGPATH];
	bool		mine;

	SpinLockAcquire(&shared->mutex);
	/* the ranges before this one are all claimed: it is the next or taken */
	mine = shared->next_range <= range;
	if (mine)
		shared->next_range = range + 1;
	SpinLockRelease(&shared->mutex);
	if (mine)
		return true;

	ConditionVariablePrepareToSleep(&shared->changed);
	for (;;)
	{
		bool		done;

		SpinLockAcquire(&shared->mutex);
		done = shared->range_done[range];
		SpinLockRelease(&shared->mutex);
		if (done)
			break;
		ConditionVariableSleep(&shared->changed, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	range_file_name(name, sizeof(name), range);
	*file = BufFileOpenFileSet(&shared->fileset.fs, name, O_RDONLY, false);
	return false;
}

/*
 * How many processes run a share: the workers that started (each runs it,
 * or fails the query) and the leader if it takes part.
 */
static int
sharing_processes(GatherState *gather, GpuSortState *share_node)
{
	int			processes = share_node->marker_sent || gather->need_to_scan_locally ? 1 : 0;

	if (gather->pei != NULL && gather->nworkers_launched > 0)
	{
		WaitForParallelWorkersToAttach(gather->pei->pcxt);
		processes += gather->pei->pcxt->nknown_attached_workers;
	}
	return processes;
}

/* The share node under a merge node's Gather, or NULL where the plan is
 * not that shape. */
static GpuSortState *
share_node_below(GpuSortState *merge_node, PlanState *gather)
{
	PlanState  *share = gather != NULL && IsA(gather, GatherState) ? outerPlanState(gather) : NULL;

	if (share == NULL || !IsA(share, CustomScanState) ||
		((CustomScanState *) share)->methods != merge_node->css.methods)
		return NULL;
	return (GpuSortState *) share;
}

/*
 * GPUSORT_MERGE_SHARES: runs the Gather below until every share is sorted
 * and returns a row store merging the runs of every share, ready for
 * row_store_sort(): by key ranges with the workers' help where they wait
 * for it (see the header), else in the leader alone.
 */
static RowStore *
merge_shares(GpuSortState *state, PlanState *gather_state, const RowStoreSpec *spec)
{
	GatherState *gather;
	GpuSortState *share_node;
	ParallelShares *shared;
	RowStore   *store;
	int			written = 0;
	int			processes = -1;
	bool		workers_wait = false;
	RowStoreSpec merge_spec;

	share_node = share_node_below(state, gather_state);
	if (share_node == NULL)
		elog(ERROR, "gpusort: a parallel merge is not above a Gather of sorted shares");
	gather = (GatherState *) gather_state;
	/* (read as the Gather makes its shared memory, on its first call) */
	/* (key ranges are cut on encoded keys, which do not order the ties
	 * of prefix keys: their merge stays the leader's) */
	share_node->ranges_allowed = spec->bound == 0 && !spec->random_access && gpusort_parallel_merge &&
		!gpusort_plan_has_prefix_keys(&state->plan);
	/* (with prefix keys too: the leader puts the ties of the shared rows
	 * job's rows in order as it reads them, row_store_gpu.c) */
	share_node->gpu_rows_allowed = spec->bound == 0 && gpusort_spill_to_gpu;
	share_node->gpu_rows_expected = spec->expected_rows;

	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(gather_state);

		if (TupIsNull(slot))
			break;
		shared = share_node->shares;
		if (shared == NULL || !shared->ranges_allowed)
			elog(ERROR, "gpusort: a parallel share returned a row");
		/* a share is written; when all are, the workers wait for us */
		SpinLockAcquire(&shared->mutex);
		written = shared->shares_written;
		SpinLockRelease(&shared->mutex);
		if (processes < 0)
			processes = sharing_processes(gather, share_node);
		if (written >= processes)
		{
			workers_wait = written > (share_node->marker_sent ? 1 : 0);
			break;
		}
	}

	shared = share_node->shares;
	merge_spec = *spec;
	merge_spec_with_prefix(state, share_node, &merge_spec);
	store = open_shares(share_node, &merge_spec, true);
	if (workers_wait)
	{
		int			helpers = written - (share_node->marker_sent ? 1 : 0);
		int64		bytes = row_store_total_bytes(store);
		int			nranges = (int) Min((int64) RANGES_PER_PROCESS * (helpers + 1),
										bytes / MIN_RANGE_BYTES);

		/* every range merges all runs at once, within work_mem */
		if (row_store_stats(store)->runs > row_store_merge_order(spec->work_mem_bytes))
			nranges = 1;
		if (nranges > 1)
			nranges = row_store_choose_splitters(store, &shared->fileset.fs, nranges,
												 shared->splitters);
		if (nranges > 1)
		{
			BufFile    *starts = BufFileCreateFileSet(&shared->fileset.fs, RANGE_STARTS_FILE);

			row_store_find_partitions(store, &shared->fileset.fs, nranges, shared->splitters,
									  starts);
			BufFileClose(starts);
			decide(shared, MERGE_BY_RANGES, nranges);
			row_store_read_partitions(store, take_range, shared);
		}
		else
			decide(shared, MERGE_IN_LEADER, 0);
	}
	return store;
}

/*
 * The node above reads no more rows of this scan (the query's end, a
 * rescan): workers still merging ranges for it stop, so the Gather's
 * shutdown, which waits for them, comes at once. `state` is either node:
 * the leader's share node as ExecShutdownNode reaches it (it visits
 * children before their parents, so before the Gather), or the merge node
 * as it ends or rescans (before it rescans the Gather). Never the share
 * node's rescan: that comes when the Gather has started the next scan.
 */
void
gpusort_stop_range_merges(GpuSortState *state)
{
	GpuSortState *share_node = state;
	ParallelShares *shared;

	if (state->plan.role == GPUSORT_MERGE_SHARES)
		share_node = share_node_below(state, state->css.custom_ps != NIL ?
									  linitial(state->css.custom_ps) : NULL);
	if (share_node == NULL || share_node->plan.role != GPUSORT_SORT_SHARE ||
		share_node->shares == NULL || IsParallelWorker())
		return;
	shared = share_node->shares;
	SpinLockAcquire(&shared->mutex);
	shared->stop = true;
	SpinLockRelease(&shared->mutex);
	ConditionVariableBroadcast(&shared->changed);
}

/*
 * A worker, its share written: waits for the merge's decision and, when
 * asked, merges ranges into files until none is left unclaimed.
 */
static void
merge_ranges(GpuSortState *state, const RowStoreSpec *share_spec)
{
	ParallelShares *shared = state->shares;
	RowStoreSpec spec = *share_spec;
	MergeDecision decision;
	bool		stop;
	RowStore   *store;
	BufFile    *starts;

	ConditionVariablePrepareToSleep(&shared->changed);
	for (;;)
	{
		SpinLockAcquire(&shared->mutex);
		decision = shared->decision;
		stop = shared->stop;
		SpinLockRelease(&shared->mutex);
		if (decision != MERGE_PENDING || stop)
			break;
		ConditionVariableSleep(&shared->changed, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	if (decision != MERGE_BY_RANGES || stop)
		return;

	spec.share_files = NULL;	/* it reads the shares' runs, writes none */
	spec.share = 0;
	spec.sample_runs = false;
	spec.bound = 0;
	spec.approximate = false;
	store = open_shares(state, &spec, false);
	starts = BufFileOpenFileSet(&shared->fileset.fs, RANGE_STARTS_FILE, O_RDONLY, false);
	row_store_set_partitions(store, shared->nranges, shared->splitters, starts);
	BufFileClose(starts);
	for (;;)
	{
		char		name[MAXPGPATH];
		BufFile    *file;
		int			range = -1;
		bool		complete;

		SpinLockAcquire(&shared->mutex);
		if (shared->next_range < shared->nranges && !shared->stop)
			range = shared->next_range++;
		SpinLockRelease(&shared->mutex);
		if (range < 0)
			break;
		range_file_name(name, sizeof(name), range);
		file = BufFileCreateFileSet(&shared->fileset.fs, name);
		complete = row_store_write_partition(store, range, file, &shared->stop);
		BufFileClose(file);
		if (!complete)
			break;				/* nobody reads it: the set's cleanup deletes it */
		SpinLockAcquire(&shared->mutex);
		shared->range_done[range] = true;
		SpinLockRelease(&shared->mutex);
		ConditionVariableBroadcast(&shared->changed);
	}
	row_store_end(store);
}

/*
 * Rows of NULLs a worker returns to say its share is written: enough that
 * its tuple queue hands them to the leader at once (a queue holds back
 * what is sent until a quarter of it is full, or the sender detaches),
 * and few enough that they fit the queue if the leader reads none.
 */
static int
marker_rows(TupleTableSlot *marker)
{
	bool		should_free;
	MinimalTuple tuple = ExecFetchSlotMinimalTuple(marker, &should_free);
	Size		message = MAXALIGN(sizeof(Size)) + MAXALIGN(tuple->t_len);

	if (should_free)
		pfree(tuple);
	return (int) (TUPLE_QUEUE_BYTES / 4 / message) + 1;
}

/*
 * GPUSORT_SORT_SHARE, its rows written: rows of NULLs that let the merge
 * above see (by the count of written shares) that all are written (see the
 * header); then, in a worker, helping it merge; then the end.
 */
static TupleTableSlot *
share_next(GpuSortState *state, const RowStoreSpec *spec)
{
	ParallelShares *shared = state->shares;
	TupleTableSlot *marker = state->css.ss.ps.ps_ResultTupleSlot;

	if (shared == NULL || !shared->have_fileset || !shared->ranges_allowed)
		return NULL;
	if (!state->marker_sent)
	{
		state->marker_sent = true;
		SpinLockAcquire(&shared->mutex);
		shared->shares_written++;
		SpinLockRelease(&shared->mutex);
		ExecStoreAllNullTuple(marker);
		state->markers_left = IsParallelWorker() ? marker_rows(marker) : 1;
	}
	if (state->markers_left > 0)
	{
		state->markers_left--;
		return ExecStoreAllNullTuple(marker);
	}
	if (IsParallelWorker())
		merge_ranges(state, spec);
	return NULL;
}

/* ---- the two roles' methods (GpuSortRoleMethods) ---- */

static void
gather_share(GpuSortState *state, PlanState *child, RowStoreSpec *spec)
{
	share_spec(state, spec);
	gpusort_gather_rows(state, child, spec);
}

static TupleTableSlot *
next_of_share(GpuSortState *state)
{
	RowStoreSpec spec;

	/* the rows went to the share's files */
	gpusort_make_spec(state, &spec);
	return share_next(state, &spec);
}

/* The leader's share node lets go of the shared memory, which the Gather
 * above frees right after. */
static void
shutdown_share(GpuSortState *state)
{
	if (!IsParallelWorker())
		state->shares = NULL;
}

const GpuSortRoleMethods gpusort_sort_share_role = {
	.gather = gather_share,
	.sort = sort_share,
	.next = next_of_share,
	.shutdown = shutdown_share,
	.before_resort = NULL,
	.rereadable = false,
};

static void
gather_shares(GpuSortState *state, PlanState *child, RowStoreSpec *spec)
{
	state->rows = merge_shares(state, child, spec);
}

const GpuSortRoleMethods gpusort_merge_shares_role = {
	.gather = gather_shares,
	.sort = gpusort_sort_rows,
	.next = gpusort_next_sorted_row,
	.shutdown = NULL,
	.before_resort = gpusort_stop_range_merges,
	.rereadable = false,
};
