/*
 * executor.c — the GpuSort custom scan node at run time.
 *
 * First call: read every row of the child into the row store (row_store.c),
 * which copies it and encodes its sort keys, and have the store sort them
 * (on the GPU when usable; beyond work_mem in sorted runs on disk, merged).
 * Then hand the rows back in order, forward or backward, with mark/restore
 * and rescan. A node's role (GpuSortRoleMethods) says where the rows come
 * from and go: the plain role's are node_rows.c's; of a parallel sort's
 * two nodes (parallel_sort.c), a share's writes its rows to a file and
 * returns none, the merging node reads the shares' files. The bound
 * (LIMIT + OFFSET) and whether to approximate are decided here, when the
 * node runs, not when the plan was made.
 *
 * Errors longjmp out of here at any row; everything the node holds lives in
 * the store's memory context and temporary files (freed with the executor's
 * resources) and the engine frees its GPU and pinned memory before
 * returning, so nothing leaks.
 */
#include "gpusort.h"

#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "portability/instr_time.h"

#include "gpusort_executor.h"

static void begin_gpusort(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_gpusort(CustomScanState *node);
static void end_gpusort(CustomScanState *node);
static void shutdown_gpusort(CustomScanState *node);
static void rescan_gpusort(CustomScanState *node);
static void mark_gpusort(CustomScanState *node);
static void restore_gpusort(CustomScanState *node);

CustomScanMethods gpusort_scan_methods = {
	.CustomName = "GpuSort",
	.CreateCustomScanState = gpusort_create_scan_state,
};

static const CustomExecMethods gpusort_exec_methods = {
	.CustomName = "GpuSort",
	.BeginCustomScan = begin_gpusort,
	.ExecCustomScan = exec_gpusort,
	.EndCustomScan = end_gpusort,
	.ReScanCustomScan = rescan_gpusort,
	.MarkPosCustomScan = mark_gpusort,
	.RestrPosCustomScan = restore_gpusort,
	.ExplainCustomScan = gpusort_explain,
	.ShutdownCustomScan = shutdown_gpusort,
	/* parallel_aware plans only: a parallel sort's shares, and the partial
	 * sorts under a Gather Merge (for their workers' EXPLAIN reports) */
	.EstimateDSMCustomScan = gpusort_estimate_dsm,
	.InitializeDSMCustomScan = gpusort_initialize_dsm,
	.ReInitializeDSMCustomScan = gpusort_reinitialize_dsm,
	.InitializeWorkerCustomScan = gpusort_initialize_worker,
};

Node *
gpusort_create_scan_state(CustomScan *cscan)
{
	GpuSortState *state = (GpuSortState *) newNode(sizeof(GpuSortState),
												   T_CustomScanState);

	state->css.methods = &gpusort_exec_methods;
	gpusort_plan_info_from_list(cscan->custom_private, &state->plan);
	state->role = state->plan.role == GPUSORT_SORT_SHARE ? &gpusort_sort_share_role :
		state->plan.role == GPUSORT_MERGE_SHARES ? &gpusort_merge_shares_role :
		&gpusort_sort_all_role;
	return (Node *) state;
}

static PlanState *
child_of(GpuSortState *state)
{
	/* a Sort replaced in a finished plan keeps its input in lefttree
	 * (sort_sites.c) */
	if (state->css.custom_ps == NIL)
		return outerPlanState(state);
	return (PlanState *) linitial(state->css.custom_ps);
}

/*
 * setrefs.c rewrites custom_exprs against custom_scan_tlist: a LIMIT or
 * OFFSET subexpression equal to one of our input's columns (SELECT $1 AS
 * n ... LIMIT $1, or a LATERAL reference in both) became a reference to
 * that column of the scan tuple. The bound is evaluated before any row
 * exists, so each such reference gets its column's expression back. That
 * expression holds no Var: a LIMIT cannot refer to its own query's rows.
 */
static Node *
expand_input_columns(Node *node, void *input_tlist)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;
		TargetEntry *tle;

		if (var->varno != INDEX_VAR || var->varattno < 1 ||
			var->varattno > list_length((List *) input_tlist))
			elog(ERROR, "gpusort: unexpected column reference in the LIMIT expression");
		tle = list_nth_node(TargetEntry, (List *) input_tlist, var->varattno - 1);
		if (contain_var_clause((Node *) tle->expr))
			elog(ERROR, "gpusort: the LIMIT expression refers to a column of its rows");
		return (Node *) copyObject(tle->expr);
	}
	return expression_tree_mutator(node, expand_input_columns, input_tlist);
}

/*
 * Does the node return its input's rows as they are, as a Sort does? Each
 * column of its target list is the scan tuple's column of that place, as
 * a reference to it or as the same constant the input put there (a
 * subquery's unused outputs become NULLs of their type in both lists,
 * which PostgreSQL's own check of the target list takes for a
 * projection). Then no row is projected on its way out.
 */
static bool
returns_input_rows(CustomScan *cscan, TupleDesc scan_desc)
{
	List	   *tlist = cscan->scan.plan.targetlist;
	int			i = 0;
	ListCell   *lc;

	if (list_length(tlist) != scan_desc->natts ||
		list_length(cscan->custom_scan_tlist) != scan_desc->natts)
		return false;
	foreach(lc, tlist)
	{
		Expr	   *expr = ((TargetEntry *) lfirst(lc))->expr;
		Expr	   *input = list_nth_node(TargetEntry, cscan->custom_scan_tlist, i)->expr;
		Form_pg_attribute column = TupleDescAttr(scan_desc, i);

		i++;
		if (exprType((Node *) expr) != column->atttypid ||
			exprTypmod((Node *) expr) != column->atttypmod)
			return false;
		if (IsA(expr, Var))
		{
			Var		   *var = (Var *) expr;

			if (var->varno != INDEX_VAR || var->varattno != i)
				return false;
		}
		else if (!IsA(expr, Const) || !equal(expr, input))
			return false;
	}
	return true;
}

static void
begin_gpusort(CustomScanState *node, EState *estate, int eflags)
{
	GpuSortState *state = (GpuSortState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	state->random_access = (eflags & (EXEC_FLAG_REWIND | EXEC_FLAG_BACKWARD |
									  EXEC_FLAG_MARK)) != 0;
	/* we keep every row, so the child never needs to go backward */
	eflags &= ~(EXEC_FLAG_REWIND | EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK);
	if (cscan->custom_plans != NIL)
		node->custom_ps = list_make1(ExecInitNode(linitial(cscan->custom_plans),
												  estate, eflags));
	else
		outerPlanState(node) = ExecInitNode(outerPlan(cscan), estate, eflags);
	state->prefix_choice_key = -1;
	for (int k = 0; k < state->plan.nkeys; k++)
	{
		int			words;

		if (state->plan.key_part[k] > 0)
		{
			/* a later word of the key before: the same key type */
			state->key_types[k] = state->key_types[k - 1];
			continue;
		}
		words = gpusort_plan_key_words(&state->plan, k);
		state->key_types[k] = gpusort_find_key_type(state->plan.key_type[k],
													state->plan.collation[k], words);
		if (state->key_types[k] == NULL || state->key_types[k]->nwords != words)
			elog(ERROR, "gpusort: unsupported sort key type %u", state->plan.key_type[k]);
		if ((state->plan.prefix_from_rows >> k) & 1 && state->prefix_choice_key < 0 &&
			gpusort_prefix_may_widen(state->key_types[k]))
		{
			/* a copy of its own: the row store narrows its prefix */
			state->prefix_choice_type = palloc(sizeof(GpuSortType));
			*state->prefix_choice_type = *state->key_types[k];
			state->key_types[k] = state->prefix_choice_type;
			state->prefix_choice_key = k;
		}
	}
	/*
	 * The scan slot holds our stored minimal tuples as they are, without
	 * deforming them. ExecInitCustomScan made it virtual; parent nodes are
	 * initialised after us, so they see the new slot kind, and the
	 * projection (if any) is rebuilt for it.
	 */
	node->ss.ss_ScanTupleSlot =
		ExecAllocTableSlot(&estate->es_tupleTable,
						   node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
						   &TTSOpsMinimalTuple);
	node->ss.ps.scanops = &TTSOpsMinimalTuple;
	node->ss.ps.scanopsfixed = true;
	node->ss.ps.scanopsset = true;
	if (returns_input_rows(cscan, node->ss.ss_ScanTupleSlot->tts_tupleDescriptor))
	{
		/* as ExecConditionalAssignProjectionInfo() where no projection is
		 * needed: the scan slot is the node's result */
		node->ss.ps.ps_ProjInfo = NULL;
		node->ss.ps.resultopsset = node->ss.ps.scanopsset;
		node->ss.ps.resultopsfixed = node->ss.ps.scanopsfixed;
		node->ss.ps.resultops = node->ss.ps.scanops;
	}
	else
		ExecAssignScanProjectionInfoWithVarno(&node->ss, INDEX_VAR);
	state->work_mem_bytes = (Size) work_mem * 1024;
	/*
	 * Decided now, not when the plan was made: a cached plan must not
	 * approximate a query that did not opt in. Only the statement the
	 * client sent is approximated; a query run inside another (a function's,
	 * or a subplan Citus runs before the outer query) feeds rows to a query
	 * whose result the guarantee would have to be about (client_statement.c).
	 */
	state->approx_mode = (gs_approx_mode) gpusort_approximate_mode;
	state->approximate = state->plan.approx_eligible && gpusort_approximate_intervals > 0 &&
		gpusort_in_client_statement() &&
		/* equal widths of a float's encoding are not widths of its values */
		(state->key_types[0]->integral || state->approx_mode == GS_APPROX_QUANTILE);
	state->intervals = gpusort_approximate_intervals;
	if (state->approx_mode == GS_APPROX_QUANTILE)
		state->intervals = Min(state->intervals, (int) GS_QUANTILE_MAX_INTERVALS);
	if (state->plan.bounded)
	{
		state->bound_exprs = (List *) expand_input_columns((Node *) cscan->custom_exprs,
														   cscan->custom_scan_tlist);
		state->limit_count = ExecInitExpr(linitial(state->bound_exprs), &node->ss.ps);
		state->limit_offset = ExecInitExpr(lsecond(state->bound_exprs), &node->ss.ps);
	}
	state->timed = (estate->es_instrument & INSTRUMENT_TIMER) != 0;
}

/* Fills the row store as the node's role says, and sorts it. */
static void
gather_and_sort(GpuSortState *state)
{
	RowStoreSpec spec;
	instr_time	start,
				duration;

	INSTR_TIME_SET_CURRENT(start);
	state->bound = gpusort_evaluate_bound(state);
	gpusort_make_spec(state, &spec);
	state->role->gather(state, child_of(state), &spec);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	state->gather_ms = INSTR_TIME_GET_MILLISEC(duration);
	state->role->sort(state);
}

static TupleTableSlot *
exec_gpusort(CustomScanState *node)
{
	GpuSortState *state = (GpuSortState *) node;

	if (!state->sort_done)
	{
		gather_and_sort(state);
		state->sort_done = true;
	}
	return state->role->next(state);
}

static void
drop_rows(GpuSortState *state)
{
	if (state->rows != NULL)
		row_store_end(state->rows);
	state->rows = NULL;
	for (int r = 0; r < state->local_nruns; r++)
		BufFileClose(state->local_runs[r].file);
	state->local_nruns = 0;
	state->sort_done = false;
	state->marker_sent = false;
}

static void
end_gpusort(CustomScanState *node)
{
	GpuSortState *state = (GpuSortState *) node;

	gpusort_stop_range_merges(state);
	worker_reports_end(state);
	drop_rows(state);
	gpusort_close_gpu_rows(state);
	ExecEndNode(child_of(state));
}

/*
 * No more rows will be read (ExecShutdownNode, which may come more than
 * once): parallel helpers stop, and a worker leaves its report for EXPLAIN.
 * The Gather above a share frees its shared memory right after, so the
 * leader's share node lets go of it.
 */
static void
shutdown_gpusort(CustomScanState *node)
{
	GpuSortState *state = (GpuSortState *) node;

	gpusort_stop_range_merges(state);
	worker_report_write(state);
	if (state->role->shutdown != NULL)
		state->role->shutdown(state);
}

static void
rescan_gpusort(CustomScanState *node)
{
	GpuSortState *state = (GpuSortState *) node;
	PlanState  *child = child_of(state);

	/* custom children do not inherit changed parameters by themselves */
	if (node->ss.ps.chgParam != NULL)
		UpdateChangedParamSet(child, node->ss.ps.chgParam);
	ExecClearTuple(node->ss.ss_ScanTupleSlot);
	if (!state->sort_done)
		return;					/* the child is read from the start anyway */

	/*
	 * New parameters below, or in the LIMIT that bounded what was kept; or
	 * a parallel sort's part, whose shared files the Gather's rescan
	 * deletes.
	 */
	if (child->chgParam != NULL || (state->plan.bounded && node->ss.ps.chgParam != NULL) ||
		!state->role->rereadable || !row_store_rewindable(state->rows))
	{
		/* new input, or rows already given back: sort again from scratch
		 * (a merge of shares first stops its helpers, whom the Gather's
		 * rescan waits for). The child is rescanned now, not when it next
		 * runs: reading the table's pages, the node never runs it, and
		 * its changed parameters and loop count would stay as they are. */
		if (state->role->before_resort != NULL)
			state->role->before_resort(state);
		drop_rows(state);
		ExecReScan(child);
		return;
	}
	/* same input: read it again from the start */
	row_store_rewind(state->rows);
}

static void
mark_gpusort(CustomScanState *node)
{
	row_store_mark(((GpuSortState *) node)->rows);
}

static void
restore_gpusort(CustomScanState *node)
{
	row_store_restore(((GpuSortState *) node)->rows);
}

void
gpusort_executor_init(void)
{
	RegisterCustomScanMethods(&gpusort_scan_methods);
}
