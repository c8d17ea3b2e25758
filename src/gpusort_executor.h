/*
 * gpusort_executor.h — the GpuSort node's run-time state, shared by
 * executor.c (which fills it) and explain.c (which reports it). The rows
 * themselves are the row store's (row_store.c).
 */
#ifndef GPUSORT_EXECUTOR_H
#define GPUSORT_EXECUTOR_H

#include "gpusort.h"

#include "access/parallel.h"
#include "commands/explain.h"
#include "nodes/execnodes.h"
#include "row_store.h"

typedef struct ParallelShares ParallelShares;
typedef struct WorkerReports WorkerReports;
typedef struct WorkerReport WorkerReport;
typedef struct GpuSortState GpuSortState;

/*
 * What a GpuSort node does differently in each of its roles (GpuSortRole):
 * where its rows come from and where they go. executor.c runs every node
 * the same way through these; GPUSORT_SORT_ALL's are node_rows.c's, the
 * parallel roles' parallel_sort.c's.
 */
typedef struct GpuSortRoleMethods
{
	/* fills state->rows (the child's rows, or the shares' runs) */
	void		(*gather) (GpuSortState *state, PlanState *child, RowStoreSpec *spec);
	/* sorts what was gathered */
	void		(*sort) (GpuSortState *state);
	/* the node's next result, NULL at the end */
	TupleTableSlot *(*next) (GpuSortState *state);
	/* ExecShutdownNode: what the role lets go of (or NULL) */
	void		(*shutdown) (GpuSortState *state);
	/* a rescan that sorts anew: what the role stops first (or NULL) */
	void		(*before_resort) (GpuSortState *state);
	/* a rescan of the same input may read the sorted rows again */
	bool		rereadable;
} GpuSortRoleMethods;

extern const GpuSortRoleMethods gpusort_sort_all_role;	/* node_rows.c */
extern const GpuSortRoleMethods gpusort_sort_share_role;	/* parallel_sort.c */
extern const GpuSortRoleMethods gpusort_merge_shares_role;	/* parallel_sort.c */

struct GpuSortState
{
	CustomScanState css;
	GpuSortPlanInfo plan;
	const GpuSortRoleMethods *role; /* plan.role's methods */
	const GpuSortType *key_types[GS_MAX_KEY_COLUMNS];
	/* the first key of plan.prefix_from_rows (-1: none): its type, this
	 * node's own, whose prefix_bytes a serial store narrows */
	int			prefix_choice_key;
	GpuSortType *prefix_choice_type;
	bool		random_access;	/* rewind, backward or mark/restore needed */
	bool		approximate;	/* the approximate opt-in was on at the start */
	int			intervals;		/* ... with this many intervals */
	gs_approx_mode approx_mode; /* ... cut so */
	List	   *bound_exprs;	/* the LIMIT above and its OFFSET (or NULL),
								 * when they bound this sort */
	ExprState  *limit_count;	/* ... ready to evaluate */
	ExprState  *limit_offset;
	int64		bound;			/* LIMIT + OFFSET as evaluated when the rows
								 * were gathered, 0 for none */
	bool		timed;			/* EXPLAIN ANALYZE with timing */
	Size		work_mem_bytes;

	/* the rows, and whether they are sorted */
	RowStore   *rows;
	bool		sort_done;

	/* GPUSORT_SORT_SHARE: the shared files (NULL without dynamic shared
	 * memory), or the leader's private runs until the merge takes them */
	ParallelShares *shares;
	RowStoreRun *local_runs;
	int			local_nruns;
	/* a partitioned merge (parallel_sort.c): set by the merge above before
	 * the Gather starts; whether this process's share said it is written */
	bool		ranges_allowed;
	/* the leader's rows job for the shares (set allowed by the merge above,
	 * opened as the Gather starts, the merge's once the shares are done) */
	bool		gpu_rows_allowed;
	double		gpu_rows_expected;	/* the merge's rows, as planned */
	struct ServiceRows *gpu_rows;
	bool		gpu_rows_callback;	/* the query's end closes it */
	bool		marker_sent;
	int			markers_left;

	/* for EXPLAIN ANALYZE (the store has the rest) */
	double		gather_ms;
	double		emit_ms;
	bool		read_table;		/* the child's table was read here ... */
	int64		table_pages_read;	/* ... these pages of it */
	/* a parallel-aware node's workers' reports (worker_reports.c): where
	 * they are written, the leader's segment until it detaches, and the
	 * leader's copy */
	WorkerReports *shared_reports;
	dsm_segment *reports_segment;
	WorkerReport *worker_reports;
	int			nworker_reports;
};

/* table_pages.c: the child's table read by GpuSort itself */
extern bool table_pages_usable(PlanState *child, const GpuSortPlanInfo *plan);
extern int64 table_pages_gather(PlanState *child, RowStore *store,
								const RowStoreSpec *spec);

/* node_rows.c: the parts of running the node that roles share */
extern void gpusort_make_spec(GpuSortState *state, RowStoreSpec *spec);
extern void gpusort_gather_rows(GpuSortState *state, PlanState *child, RowStoreSpec *spec);
extern void gpusort_sort_rows(GpuSortState *state);
extern TupleTableSlot *gpusort_next_sorted_row(GpuSortState *state);

/* plan_info.c: LIMIT + OFFSET evaluated now, 0 for no bound */
extern int64 gpusort_evaluate_bound(GpuSortState *state);

/* worker_reports.c: each parallel worker's sort, for EXPLAIN ANALYZE, and
 * where a store's sorts ran, in words */
extern char *gpusort_device_description(const RowStoreStats *stats);
extern Size worker_reports_size(int nworkers);
extern void worker_reports_init(GpuSortState *state, WorkerReports *shared,
								ParallelContext *pcxt);
extern void worker_reports_reinit(GpuSortState *state);
extern Size worker_reports_attach(GpuSortState *state, WorkerReports *shared);
extern void worker_report_write(GpuSortState *state);
extern void worker_reports_end(GpuSortState *state);
extern void worker_reports_explain(GpuSortState *state, ExplainState *es);

/* parallel_sort.c: a sort spread over parallel query's processes */
extern Size gpusort_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
extern void gpusort_initialize_dsm(CustomScanState *node, ParallelContext *pcxt,
								   void *coordinate);
extern void gpusort_reinitialize_dsm(CustomScanState *node, ParallelContext *pcxt,
									 void *coordinate);
extern void gpusort_initialize_worker(CustomScanState *node, shm_toc *toc, void *coordinate);
extern void gpusort_stop_range_merges(GpuSortState *state);
extern void gpusort_close_gpu_rows(GpuSortState *state);

#endif							/* GPUSORT_EXECUTOR_H */
