/*
 * node_rows.c — the rows of a GpuSort node: the row store's spec from the
 * node as it starts, the child's rows gathered into the store, sorted,
 * and returned in order as the node's results. That is the whole of the
 * plain role (GPUSORT_SORT_ALL), whose methods are here; the parallel
 * roles (parallel_sort.c) use the same parts.
 */
#include "gpusort.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "portability/instr_time.h"

#include "gpusort_executor.h"

/* What the row store is to do, from the plan and the node's start. */
void
gpusort_make_spec(GpuSortState *state, RowStoreSpec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->plan = &state->plan;
	for (int k = 0; k < state->plan.nkeys; k++)
		spec->key_types[k] = state->key_types[k];
	spec->tuple_desc = state->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	spec->work_mem_bytes = state->work_mem_bytes;
	spec->bound = state->bound;
	spec->random_access = state->random_access;
	spec->approximate = state->approximate;
	spec->intervals = state->intervals;
	spec->approx_mode = state->approx_mode;
	spec->expected_rows = state->css.ss.ps.plan->plan_rows;

	/*
	 * A string key without statistics: the widest prefix the plan has, but
	 * a serial, unbounded, exact sort narrows it to what its first rows
	 * need (row_store.c); so do a parallel sort's shares, agreeing on one
	 * width (parallel_sort.c, share_spec()). A bounded or top-N sort
	 * compares its rows as they come: those keep the widest.
	 */
	if (state->prefix_choice_type != NULL)
	{
		state->prefix_choice_type->prefix_bytes = 0;
		if (state->plan.role == GPUSORT_SORT_ALL && spec->bound == 0 && !spec->approximate &&
			state->plan.topn_kind == GPUSORT_TOPN_NONE)
		{
			spec->prefix_choice = state->prefix_choice_type;
			spec->prefix_choice_key = state->prefix_choice_key;
		}
	}
}

/*
 * Every row of the child into a new row store: from the table's pages
 * where GpuSort may read them itself, else through the child.
 */
void
gpusort_gather_rows(GpuSortState *state, PlanState *child, RowStoreSpec *spec)
{
	state->rows = row_store_begin(spec);
	state->read_table = table_pages_usable(child, &state->plan);
	if (state->read_table)
		state->table_pages_read = table_pages_gather(child, state->rows, spec);
	else
		for (;;)
		{
			TupleTableSlot *slot = ExecProcNode(child);

			if (TupIsNull(slot))
				break;
			CHECK_FOR_INTERRUPTS();
			row_store_put(state->rows, slot);
		}
}

void
gpusort_sort_rows(GpuSortState *state)
{
	row_store_sort(state->rows);
}

/* The next row of the sorted store, projected as the node's result. */
TupleTableSlot *
gpusort_next_sorted_row(GpuSortState *state)
{
	CustomScanState *node = &state->css;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	bool		forward = ScanDirectionIsForward(node->ss.ps.state->es_direction);
	ProjectionInfo *projection = node->ss.ps.ps_ProjInfo;
	instr_time	start;
	bool		found;

	if (state->timed)
		INSTR_TIME_SET_CURRENT(start);
	found = row_store_get(state->rows, forward, slot);
	if (state->timed)
	{
		instr_time	duration;

		INSTR_TIME_SET_CURRENT(duration);
		INSTR_TIME_SUBTRACT(duration, start);
		state->emit_ms += INSTR_TIME_GET_MILLISEC(duration);
	}
	if (!found)
		return NULL;
	if (projection != NULL)
	{
		ExprContext *econtext = node->ss.ps.ps_ExprContext;

		ResetExprContext(econtext);
		econtext->ecxt_scantuple = slot;
		return ExecProject(projection);
	}
	return slot;
}

/* GPUSORT_SORT_ALL: the child's rows, sorted, returned. */
static void
gather_all(GpuSortState *state, PlanState *child, RowStoreSpec *spec)
{
	spec->spill_to_gpu = gpusort_spill_to_gpu;
	gpusort_gather_rows(state, child, spec);
}

const GpuSortRoleMethods gpusort_sort_all_role = {
	.gather = gather_all,
	.sort = gpusort_sort_rows,
	.next = gpusort_next_sorted_row,
	.shutdown = NULL,
	.before_resort = NULL,
	.rereadable = true,
};
