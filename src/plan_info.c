/*
 * plan_info.c — what the planner hands a GpuSort node: its plan info as
 * the List of Integers that CustomScan.custom_private holds (it must be
 * copyable), and the bound the Limit above gives, evaluated as the node
 * runs. The planner (planner.c) writes them, the executor (executor.c)
 * and EXPLAIN (explain.c) read them.
 */
#include "gpusort.h"

#include "executor/executor.h"
#include "nodes/value.h"

#include "gpusort_executor.h"

List *
gpusort_plan_info_to_list(const GpuSortPlanInfo *info)
{
	List	   *list = NIL;

	list = lappend(list, makeInteger((int) info->role));
	list = lappend(list, makeInteger(info->nkeys));
	for (int k = 0; k < info->nkeys; k++)
	{
		list = lappend(list, makeInteger(info->key_attno[k]));
		list = lappend(list, makeInteger((int) info->key_type[k]));
		list = lappend(list, makeInteger(info->key_part[k]));
		list = lappend(list, makeInteger((int) info->sort_operator[k]));
		list = lappend(list, makeInteger((int) info->collation[k]));
		list = lappend(list, makeInteger(info->descending[k]));
		list = lappend(list, makeInteger(info->nulls_first[k]));
	}
	list = lappend(list, makeInteger(info->algorithm));
	list = lappend(list, makeInteger(info->approx_eligible));
	list = lappend(list, makeInteger(info->bounded));
	list = lappend(list, makeInteger((int) info->prefix_from_rows));
	list = lappend(list, makeInteger(info->topn_kind));
	list = lappend(list, makeInteger(info->topn_kept));
	list = lappend(list, makeInteger(info->topn_group_columns));
	list = lappend(list, makeInteger(info->topn_peer_columns));
	return list;
}

void
gpusort_plan_info_from_list(List *list, GpuSortPlanInfo *info)
{
	int			i = 0;

#define NEXT_INT() intVal(list_nth(list, i++))
	memset(info, 0, sizeof(*info));
	info->role = (GpuSortRole) NEXT_INT();
	info->nkeys = NEXT_INT();
	for (int k = 0; k < info->nkeys; k++)
	{
		info->key_attno[k] = (AttrNumber) NEXT_INT();
		info->key_type[k] = (Oid) NEXT_INT();
		info->key_part[k] = NEXT_INT();
		info->sort_operator[k] = (Oid) NEXT_INT();
		info->collation[k] = (Oid) NEXT_INT();
		info->descending[k] = NEXT_INT() != 0;
		info->nulls_first[k] = NEXT_INT() != 0;
	}
	info->algorithm = NEXT_INT();
	info->approx_eligible = NEXT_INT() != 0;
	info->bounded = NEXT_INT() != 0;
	info->prefix_from_rows = (uint32) NEXT_INT();
	info->topn_kind = NEXT_INT();
	info->topn_kept = NEXT_INT();
	info->topn_group_columns = NEXT_INT();
	info->topn_peer_columns = NEXT_INT();
	if (info->topn_kind < GPUSORT_TOPN_NONE || info->topn_kind > GPUSORT_TOPN_DENSE_RANK ||
		info->topn_kept < 0 || info->topn_group_columns < 0 || info->topn_peer_columns < 0 ||
		info->topn_group_columns + info->topn_peer_columns > info->nkeys)
		elog(ERROR, "gpusort: a plan's top-N per group is corrupt");
	for (int k = 0; k < GS_MAX_KEY_COLUMNS; k++)
		if ((info->prefix_from_rows >> k) & 1 &&
			(k >= info->nkeys || info->key_part[k] != 0))
			elog(ERROR, "gpusort: a plan's prefix keys are corrupt");
#undef NEXT_INT
}

/*
 * LIMIT count + OFFSET, evaluated as the Limit node above evaluates them
 * when it starts (the same Params, in the same execution); 0, no bound,
 * when the count is NULL, anything is negative (the Limit raises that
 * error itself) or the sum is beyond what one sort can hold.
 */
int64
gpusort_evaluate_bound(GpuSortState *state)
{
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;
	Datum		value;
	bool		isnull;
	int64		count;
	int64		offset = 0;

	if (state->limit_count == NULL)
		return 0;
	value = ExecEvalExprSwitchContext(state->limit_count, econtext, &isnull);
	if (isnull)
		return 0;
	count = DatumGetInt64(value);
	if (state->limit_offset != NULL)
	{
		value = ExecEvalExprSwitchContext(state->limit_offset, econtext, &isnull);
		if (!isnull)
			offset = DatumGetInt64(value);
	}
	if (count <= 0 || offset < 0 || count > PG_INT32_MAX || offset > PG_INT32_MAX - count)
		return 0;
	return count + offset;
}

/* Does some key of the plan sort on a prefix that may tie (types.c)? */
bool
gpusort_plan_has_prefix_keys(const GpuSortPlanInfo *plan)
{
	for (int k = 0; k < plan->nkeys; k++)
	{
		const GpuSortType *type = gpusort_find_type(plan->key_type[k]);

		if (type != NULL && type->prefix_only)
			return true;
	}
	return false;
}

/* The engine key columns of the SQL key whose first word is column k. */
int
gpusort_plan_key_words(const GpuSortPlanInfo *plan, int k)
{
	int			words = 1;

	Assert(plan->key_part[k] == 0);
	while (k + words < plan->nkeys && plan->key_part[k + words] > 0)
		words++;
	return words;
}
