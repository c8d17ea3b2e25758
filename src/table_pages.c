/*
 * table_pages.c — a GpuSort reading its Seq Scan child's table itself.
 *
 * A Seq Scan that hands its table's rows up as they are (no filter, no
 * projection, not parallel) does nothing for the sort above it but find
 * the visible tuples, and it does that one executor call per row. Here
 * GpuSort reads the pages as that scan would in page-at-a-time mode, with
 * its snapshot and buffer strategy: heapgetpage() prunes the page, checks
 * visibility (and serializable conflicts) and pins it. Each visible tuple
 * goes to the row store where it lies on the page; the store reads its
 * keys there and puts it in the scan's slot only to keep it, so a bounded
 * sort's rows past its threshold cost a few loads each.
 *
 * The Seq Scan node is not run, but its instrumentation counts what was
 * read here, so EXPLAIN ANALYZE shows its rows and buffers as before.
 * bench/README.md ("Top-N: GpuSort reads the table pages") has figures.
 */
#include "gpusort.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "executor/instrument.h"
#include "nodes/execnodes.h"
#include "pgstat.h"
#include "utils/snapmgr.h"

#include "gpusort_executor.h"
#include "key_reader.h"

/*
 * Whether the child is a Seq Scan whose rows GpuSort can read from the
 * table pages with the same result. Not while EvalPlanQual rechecks rows
 * (the scan must return the row being rechecked, not the table's).
 */
bool
table_pages_usable(PlanState *child)
{
	ScanState  *scan = (ScanState *) child;
	EState	   *estate = child->state;

	if (!gpusort_read_table_pages || !IsA(child, SeqScanState))
		return false;
	if (child->plan->parallel_aware || child->qual != NULL || child->ps_ProjInfo != NULL)
		return false;
	if (estate->es_epq_active != NULL || !IsMVCCSnapshot(estate->es_snapshot))
		return false;
	return scan->ss_currentRelation->rd_tableam == GetHeapamTableAmRoutine() &&
		TTS_IS_BUFFERTUPLE(scan->ss_ScanTupleSlot);
}

/*
 * Puts every row the child would return into the store; returns the pages
 * read. From block 0 on, as a scan that may not join a synchronized one
 * does: the rows' order does not matter to the sort.
 */
int64
table_pages_gather(PlanState *child, RowStore *store)
{
	ScanState  *node = (ScanState *) child;
	Relation	relation = node->ss_currentRelation;
	TupleTableSlot *slot = node->ss_ScanTupleSlot;
	TableScanDesc scan;
	HeapScanDesc heap;
	HeapTupleData tuple;
	double		rows = 0;
	BlockNumber block = 0;

	if (child->instrument)
		InstrStartNode(child->instrument);
	scan = table_beginscan_strat(relation, child->state->es_snapshot, 0, NULL, true, false);
	heap = (HeapScanDesc) scan;
	/* heapgetpage() lists the visible tuples only in page-at-a-time mode */
	if (!(scan->rs_flags & SO_ALLOW_PAGEMODE))
		elog(ERROR, "gpusort: the table scan is not in page-at-a-time mode");
	tuple.t_tableOid = RelationGetRelid(relation);
	for (; block < heap->rs_nblocks; block++)
	{
		Page		page;

		heapgetpage(scan, block);
		page = BufferGetPage(heap->rs_cbuf);
		for (int i = 0; i < heap->rs_ntuples; i++)
		{
			OffsetNumber offset = heap->rs_vistuples[i];
			ItemId		item = PageGetItemId(page, offset);

			if (i + KEY_PREFETCH_ROWS < heap->rs_ntuples)
				__builtin_prefetch(PageGetItem(page, PageGetItemId(page,
																   heap->rs_vistuples[i + KEY_PREFETCH_ROWS])));
			tuple.t_data = (HeapTupleHeader) PageGetItem(page, item);
			tuple.t_len = ItemIdGetLength(item);
			ItemPointerSet(&tuple.t_self, block, offset);
			pgstat_count_heap_getnext(relation);
			row_store_put_heap_tuple(store, &tuple, heap->rs_cbuf, slot);
		}
		rows += heap->rs_ntuples;
		/* the first page's rows are the scan's first: its startup time */
		if (block == 0 && child->instrument)
		{
			InstrStopNode(child->instrument, rows);
			InstrStartNode(child->instrument);
			rows = 0;
		}
	}
	/* the slot points at `tuple`, which is gone after this */
	ExecClearTuple(slot);
	table_endscan(scan);
	if (child->instrument)
		InstrStopNode(child->instrument, rows);
	return block;
}
