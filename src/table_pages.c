/*
 * table_pages.c — a GpuSort reading its Seq Scan child's table itself.
 *
 * A Seq Scan does nothing for the sort above it but find the visible
 * tuples (filter them, and pick their columns), and it does that one
 * executor call per row. Here GpuSort reads the pages as that scan would
 * in page-at-a-time mode, with its snapshot, buffer strategy and
 * synchronized start: gpusort_heap_next_page() (compat.h) reads the next
 * page, prunes it, checks visibility (and serializable conflicts) and pins
 * it. A Parallel Seq Scan's pages
 * come from its parallel scan, block by block as the processes ask for
 * them, through the scan the executor set up for this process. A filter
 * is evaluated for every visible tuple, as the scan would, so that the
 * scan's counts in EXPLAIN ANALYZE stay exact. Each passing tuple's keys
 * are read where it lies on the page; only a row the row store keeps is
 * put together and, where the scan picks columns (column references and
 * constants only), projected by the scan's own projection. So a bounded
 * sort's rows past its threshold cost a few loads each (and the filter).
 *
 * The Seq Scan node is not run, but its instrumentation counts what was
 * read here, so EXPLAIN ANALYZE shows its rows and buffers as before.
 * bench/README.md ("Top-N: GpuSort reads the table pages") has figures.
 */
#include "gpusort.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "nodes/execnodes.h"
#include "pgstat.h"
#include "utils/snapmgr.h"

#include "gpusort_executor.h"
#include "key_reader.h"

/*
 * The table column an entry of a scan's target list reads: its attribute
 * number where it is a column of the scanned table (perhaps relabelled,
 * by a COLLATE clause or a binary-compatible cast: its value as it lies
 * in the table), InvalidAttrNumber (0) where it is a constant (a
 * subquery's unused outputs are NULLs of their type), else
 * TABLE_PAGES_NOT_A_COLUMN.
 */
AttrNumber
table_pages_column(Expr *expr, Index scanrelid)
{
	Var		   *var;

	while (IsA(expr, RelabelType))
		expr = ((RelabelType *) expr)->arg;
	if (IsA(expr, Const))
		return InvalidAttrNumber;
	var = (Var *) expr;
	if (!IsA(var, Var) || var->varno != scanrelid || var->varlevelsup != 0 ||
		var->varattno <= 0)
		return TABLE_PAGES_NOT_A_COLUMN;
	return var->varattno;
}

/*
 * The table column of each entry of the scan's target list (0 for a
 * constant) where every entry is a column or a constant; false otherwise.
 */
static bool
table_columns(PlanState *child, AttrNumber *columns)
{
	Index		scanrelid = ((Scan *) child->plan)->scanrelid;
	ListCell   *lc;
	int			i = 0;

	foreach(lc, child->plan->targetlist)
	{
		AttrNumber	column = table_pages_column(((TargetEntry *) lfirst(lc))->expr, scanrelid);

		if (column == TABLE_PAGES_NOT_A_COLUMN)
			return false;
		if (columns != NULL)
			columns[i] = column;
		i++;
	}
	return true;
}

/* The child's parallel scan, or NULL where it has none: not parallel
 * aware, or given no shared memory (a cursor), so it scans alone. */
static TableScanDesc
parallel_scan(PlanState *child)
{
	TableScanDesc scan = ((ScanState *) child)->ss_currentScanDesc;

	if (!child->plan->parallel_aware || scan == NULL || scan->rs_parallel == NULL)
		return NULL;
	return scan;
}

/*
 * Whether the child is a Seq Scan whose rows GpuSort can read from the
 * table pages with the same result. Not while EvalPlanQual rechecks rows
 * (the scan must return the row being rechecked, not the table's).
 */
bool
table_pages_usable(PlanState *child, const GpuSortPlanInfo *plan)
{
	ScanState  *scan = (ScanState *) child;
	EState	   *estate = child->state;
	AttrNumber	columns[MaxHeapAttributeNumber];

	if (!gpusort_read_table_pages || !IsA(child, SeqScanState))
		return false;
	if (child->plan->parallel_aware && parallel_scan(child) == NULL)
		return false;
	if (child->ps_ProjInfo != NULL)
	{
		/* the keys are read from the table's columns */
		if (list_length(child->plan->targetlist) > MaxHeapAttributeNumber ||
			!table_columns(child, columns))
			return false;
		for (int k = 0; k < plan->nkeys; k++)
			if (columns[plan->key_attno[k] - 1] == InvalidAttrNumber)
				return false;
	}
	if (estate->es_epq_active != NULL || !IsMVCCSnapshot(estate->es_snapshot))
		return false;
	return scan->ss_currentRelation->rd_tableam == GetHeapamTableAmRoutine() &&
		TTS_IS_BUFFERTUPLE(scan->ss_ScanTupleSlot);
}

/* Does the tuple pass the scan's filter? Those that do not are counted as
 * the scan counts them (Rows Removed by Filter). The tuple stays in the
 * scan's slot. */
static bool
passes_filter(PlanState *child, HeapTuple tuple, Buffer buffer)
{
	ScanState  *scan = (ScanState *) child;
	ExprContext *econtext = child->ps_ExprContext;

	ResetExprContext(econtext);
	ExecStoreBufferHeapTuple(tuple, scan->ss_ScanTupleSlot, buffer);
	econtext->ecxt_scantuple = scan->ss_ScanTupleSlot;
	if (ExecQual(child->qual, econtext))
		return true;
	InstrCountFiltered1(child, 1);
	return false;
}

/* The row as the scan returns it: the tuple (in the scan's slot already
 * where the filter looked at it), or its projection. */
static TupleTableSlot *
scan_row(PlanState *child, HeapTuple tuple, Buffer buffer, bool in_slot)
{
	ScanState  *scan = (ScanState *) child;
	ExprContext *econtext = child->ps_ExprContext;

	if (!in_slot)
		ExecStoreBufferHeapTuple(tuple, scan->ss_ScanTupleSlot, buffer);
	if (child->ps_ProjInfo == NULL)
		return scan->ss_ScanTupleSlot;
	ResetExprContext(econtext);
	econtext->ecxt_scantuple = scan->ss_ScanTupleSlot;
	return ExecProject(child->ps_ProjInfo);
}

/*
 * Puts every row the child would return into the store, sorted as `spec`
 * says (its keys are columns of the child's rows); returns the pages read.
 */
int64
table_pages_gather(PlanState *child, RowStore *store, const RowStoreSpec *spec)
{
	int			nkeys = spec->plan->nkeys;
	ScanState  *node = (ScanState *) child;
	Relation	relation = node->ss_currentRelation;
	TupleDesc	descriptor = RelationGetDescr(relation);
	AttrNumber	columns[MaxHeapAttributeNumber];
	AttrNumber	table_key_attno[GS_MAX_KEY_COLUMNS];
	KeyReader	keys_on_page;
	TableScanDesc scan = parallel_scan(child);
	bool		own_scan = scan == NULL;
	bool		filtered = child->qual != NULL;
	HeapScanDesc heap;
	HeapTupleData tuple;
	double		rows = 0;
	int64		pages = 0;

	/* the keys' columns in the table's tuples */
	for (int k = 0; k < nkeys; k++)
		table_key_attno[k] = spec->plan->key_attno[k];
	if (child->ps_ProjInfo != NULL)
	{
		if (!table_columns(child, columns))
			elog(ERROR, "gpusort: the scan's target list is not plain columns");
		for (int k = 0; k < nkeys; k++)
			table_key_attno[k] = columns[table_key_attno[k] - 1];
	}
	key_reader_init(&keys_on_page, nkeys, table_key_attno, spec->key_types,
					spec->plan->key_part);

	if (child->instrument)
		InstrStartNode(child->instrument);
	if (own_scan)
		scan = table_beginscan_strat(relation, child->state->es_snapshot, 0, NULL, true, true);
	heap = (HeapScanDesc) scan;
	/* the visible tuples are listed only in page-at-a-time mode */
	if (!(scan->rs_flags & SO_ALLOW_PAGEMODE))
		elog(ERROR, "gpusort: the table scan is not in page-at-a-time mode");
	tuple.t_tableOid = RelationGetRelid(relation);
	while (gpusort_heap_next_page(scan))
	{
		BlockNumber block = heap->rs_cblock;
		Page		page = BufferGetPage(heap->rs_cbuf);

		for (int i = 0; i < heap->rs_ntuples; i++)
		{
			OffsetNumber offset = heap->rs_vistuples[i];
			ItemId		item = PageGetItemId(page, offset);
			uint64_t	keys[GS_MAX_KEY_COLUMNS];
			bool		nulls[GS_MAX_KEY_COLUMNS];

			if (i + KEY_PREFETCH_ROWS < heap->rs_ntuples)
				key_reader_prefetch(page, heap->rs_vistuples[i + KEY_PREFETCH_ROWS]);
			tuple.t_data = (HeapTupleHeader) PageGetItem(page, item);
			tuple.t_len = ItemIdGetLength(item);
			ItemPointerSet(&tuple.t_self, block, offset);
			pgstat_count_heap_getnext(relation);
			if (filtered && !passes_filter(child, &tuple, heap->rs_cbuf))
				continue;
			rows++;
			if (!key_reader_read_heap(&keys_on_page, descriptor, &tuple, keys, nulls))
				row_store_put(store, scan_row(child, &tuple, heap->rs_cbuf, filtered));
			else if (row_store_wants(store, keys, nulls))
				row_store_keep(store, keys, nulls,
							   scan_row(child, &tuple, heap->rs_cbuf, filtered));
		}
		/* the first page's rows are the scan's first: its startup time */
		if (pages++ == 0 && child->instrument)
		{
			InstrStopNode(child->instrument, rows);
			InstrStartNode(child->instrument);
			rows = 0;
		}
	}
	/* the slots point at `tuple`, which is gone after this */
	ExecClearTuple(node->ss_ScanTupleSlot);
	if (child->ps_ProjInfo != NULL)
		ExecClearTuple(child->ps_ResultTupleSlot);
	/* a parallel scan is the child's: it ends (or starts again) there */
	if (own_scan)
		table_endscan(scan);
	if (child->instrument)
		InstrStopNode(child->instrument, rows);
	return pages;
}
