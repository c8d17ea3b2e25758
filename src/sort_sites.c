/*
 * sort_sites.c — GpuSort for the Sorts a finished plan holds below window
 * functions, grouping, DISTINCT, set operations and merge joins.
 *
 * planner.c offers GpuSort for the query's ORDER BY as a path. Every other
 * Sort PostgreSQL plans (below a WindowAgg, a GroupAggregate or Group, a
 * Unique, a SetOp, either input of a Merge Join, under a Gather Merge
 * below any of these, in subqueries, CTEs, SubPlans and InitPlans) is
 * replaced here, after standard_planner(), by a GpuSort plan node over the
 * Sort's input: a planner_hook walks the finished plan.
 *
 * Why the finished plan and not path hooks. Those Sorts are made in many
 * places of PostgreSQL's planner (create_window_paths' one per window
 * clause, the grouping paths' sorted and partial variants, the distinct
 * and set-operation paths, and for joins sort_inner_and_outer and
 * match_unsorted_outer, which add their SortPaths inside the merge join
 * paths they build, where no join hook can reach them: set_join_pathlist_hook
 * runs after, and could only add whole new merge join paths of its own).
 * Offering a GpuSort path at each of them would mean rebuilding each
 * stage's paths as PostgreSQL builds them, for two majors (15 and 18),
 * whose code differs at exactly these places. In the finished plan every
 * such Sort is one node type with its keys spelled out (columns of its
 * input, sort operators, collations, NULLS FIRST), whatever made it, and
 * replacing it keeps the plan's shape and its parents' expectations: the
 * same output columns in the same order, the same order of rows, the
 * ability to go backward, mark/restore and rescan (GpuSort supports all
 * three), the same plan_node_id, cost fields and parameters.
 *
 * What that gives up: the choice between a sort-based plan and the
 * planner's other alternatives (hash aggregation, hash join) is made with
 * PostgreSQL's Sort costs, not GpuSort's. Where GpuSort is cheaper than the
 * Sort, the sort-based plan that PostgreSQL chose only gets cheaper; a hash
 * plan that PostgreSQL preferred over the Sort stays (it may have lost to
 * a GpuSort plan). The cost fields stay the Sort's, so the parents' costs
 * that EXPLAIN shows still add up.
 *
 * Which Sorts: every key a type gpusort encodes (types.c's lookup, the
 * same the ORDER BY path uses), sorted by the type's default btree order,
 * at most GS_MAX_KEY_COLUMNS keys. Not a Sort that may get a bound at run
 * time (below a Limit through the nodes that pass it down,
 * ExecSetTupleBound): that is a query's ORDER BY ... LIMIT, which
 * planner.c already weighed, and a top-N heapsort beats an unbounded
 * GpuSort. Not the Sorts an Agg with grouping sets keeps in its chain
 * (the Agg runs those itself). With gpusort.min_rows = 0 (tests) every
 * such Sort is replaced; otherwise one whose input has at least min_rows
 * rows and where planner.c's cost model says GpuSort costs less than the
 * Sort.
 *
 * Top-N per group (mark_top_n()). Where the GpuSort's parent keeps only
 * the first rows of each group of its input, the GpuSort passes on only
 * those: a top WindowAgg whose run condition (row_number(), rank() or
 * dense_rank() < or <= a constant, WindowAgg.runCondition since 15) stops
 * returning a partition's rows once it fails, and a Unique (DISTINCT,
 * DISTINCT ON, UNION), which returns the first row of each group. The
 * row store drops the others wherever sorted rows are produced (row_store.c,
 * "top-N per group"). Why that is safe is said where the plan is read.
 *
 * An Incremental Sort (a Sort of the groups its input gives presorted on
 * the leading keys) becomes a GpuSort of all its keys only where its costs
 * say a full GpuSort pays: replace_sorts() says why.
 *
 * The input hangs where the Sort had it, in the plan's lefttree, not in
 * custom_plans (where the ORDER BY's GpuSorts keep it, as setrefs.c wants
 * for a path's CustomScan; this plan is past setrefs.c). EXPLAIN names a
 * GpuSort's columns from custom_scan_tlist, in the GpuSort's own context,
 * and the input's target list refers to the input's own inputs
 * (OUTER_VAR, INNER_VAR), to window functions that only their WindowAgg
 * can name, and so on. ruleutils.c resolves a node's OUTER_VAR references
 * through its lefttree, descending into the input's context as it does
 * below a Sort; so custom_scan_tlist is the Sort's own target list
 * (references into the input) and EXPLAIN shows what it showed for the
 * Sort. The executor (executor.c) runs a lefttree input as its child.
 */
#include "gpusort.h"

#include "access/stratnum.h"
#include "catalog/pg_opfamily_d.h"
#include "catalog/pg_type_d.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_collation_d.h"
#include "commands/defrem.h"
#include "executor/nodeAgg.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

static planner_hook_type previous_planner_hook = NULL;


/*
 * Fills info's keys from the Sort's, as planner.c does for an ORDER BY (one
 * engine key column per word of a key); false if a key is not GpuSort's.
 */
static bool
sort_keys_supported(Sort *sort, Plan *input, GpuSortPlanInfo *info)
{
	memset(info, 0, sizeof(*info));
	if (sort->numCols < 1)
		return false;
	for (int k = 0; k < sort->numCols; k++)
	{
		TargetEntry *tle = get_tle_by_resno(input->targetlist, sort->sortColIdx[k]);
		GpuSortKeyChoice key;

		/* the Sort's operator: the < or > of the type's default order, or
		 * a string's pattern order (~<~, ~>~) */
		if (tle == NULL ||
			!gpusort_sort_operator_key(exprType((Node *) tle->expr), sort->sortOperators[k],
									   sort->collations[k], &key) ||
			info->nkeys + key.key_type->nwords > GS_MAX_KEY_COLUMNS)
			return false;
		for (int part = 0; part < key.key_type->nwords; part++)
		{
			int			column = info->nkeys++;

			info->key_attno[column] = sort->sortColIdx[k];
			info->key_type[column] = key.type;
			info->key_part[column] = part;
			info->sort_operator[column] = key.sort_operator;
			info->collation[column] = key.collation;
			info->descending[column] = key.descending;
			info->nulls_first[column] = sort->nullsFirst[k];
		}
	}
	return true;
}

/*
 * The GpuSort node that replaces `sort` (a Sort, or an Incremental Sort's
 * Sort part: incremental), or NULL where it should not. Its plan fields
 * (costs, rows, width, plan_node_id, parameters, initplans) are the
 * Sort's; it returns the input's columns as the Sort did.
 */
static Plan *
gpusort_for_sort(Sort *sort, bool incremental)
{
	Plan	   *input = outerPlan(&sort->plan);
	GpuSortPlanInfo info;
	CustomScan *cscan;
	List	   *tlist = NIL;
	ListCell   *lc;

	if (input == NULL || sort->plan.qual != NIL ||
		list_length(sort->plan.targetlist) != list_length(input->targetlist))
		return NULL;
	if (!sort_keys_supported(sort, input, &info))
		return NULL;
	if (!gpusort_replaces_sort(input->plan_rows, input->plan_width, input->total_cost,
							   info.nkeys, incremental ? sort->plan.total_cost :
							   sort->plan.startup_cost, incremental))
		return NULL;
	/* the Sort's output columns, now read from the scan tuple */
	foreach(lc, sort->plan.targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		TargetEntry *input_tle = get_tle_by_resno(input->targetlist, tle->resno);
		TargetEntry *copy;

		if (input_tle == NULL)
			return NULL;
		copy = flatCopyTargetEntry(tle);
		copy->expr = (Expr *) makeVarFromTargetEntry(INDEX_VAR, input_tle);
		tlist = lappend(tlist, copy);
	}
	info.role = GPUSORT_SORT_ALL;
	info.algorithm = gpusort_algorithm;
	info.approx_eligible = false;
	info.bounded = false;

	cscan = makeNode(CustomScan);
	/* every Plan field as the Sort's, whatever the major version has */
	cscan->scan.plan = sort->plan;
	cscan->scan.plan.type = T_CustomScan;
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	/* the input as the Sort had it (see the header), not in custom_plans */
	cscan->scan.plan.lefttree = input;
	cscan->scan.plan.righttree = NULL;
	/* no shared memory: worker reports are the ORDER BY path's */
	cscan->scan.plan.parallel_aware = false;
	cscan->scan.scanrelid = 0;
	cscan->flags = CUSTOMPATH_SUPPORT_BACKWARD_SCAN | CUSTOMPATH_SUPPORT_MARK_RESTORE;
	cscan->custom_plans = NIL;
	cscan->custom_exprs = NIL;
	cscan->custom_private = gpusort_plan_info_to_list(&info);
	/* the scan tuple is the input's row: the Sort's references into it */
	cscan->custom_scan_tlist = copyObject(sort->plan.targetlist);
	cscan->custom_relids = NULL;
	cscan->methods = &gpusort_scan_methods;
	return &cscan->scan.plan;
}

/*
 * The LIMIT expressions of a GpuSort made from a path, with each reference
 * to a scan tuple column replaced by that column's expression, as
 * executor.c does when the node starts; NULL where one would need a
 * column's value.
 */
static Node *
expand_scan_columns(Node *node, List *scan_tlist)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;
		TargetEntry *tle;

		if (var->varno != INDEX_VAR)
			return NULL;
		tle = get_tle_by_resno(scan_tlist, var->varattno);
		if (tle == NULL || contain_var_clause((Node *) tle->expr))
			return NULL;
		return (Node *) copyObject(tle->expr);
	}
	return expression_tree_mutator(node, expand_scan_columns, (void *) scan_tlist);
}

/*
 * An ORDER BY's GpuSort (planner.c) over a WindowAgg: its
 * custom_scan_tlist holds the window functions themselves, which
 * PostgreSQL 18's EXPLAIN can name only in their WindowAgg's context
 * ("could not find window clause"). Such a node gets the form this file
 * gives its GpuSorts: the input in lefttree, custom_scan_tlist its
 * references into the input. Its LIMIT expressions, which referred to the
 * old custom_scan_tlist, get their columns' expressions now; where they
 * cannot, the node stays as it is. True if it changed.
 */
static bool
refer_to_window_input(CustomScan *cscan)
{
	GpuSortPlanInfo info;
	Plan	   *input;
	List	   *scan_tlist = NIL;
	List	   *limit_exprs = cscan->custom_exprs;
	ListCell   *lc;

	if (cscan->methods != &gpusort_scan_methods || list_length(cscan->custom_plans) != 1 ||
		!contain_window_function((Node *) cscan->custom_scan_tlist))
		return false;
	gpusort_plan_info_from_list(cscan->custom_private, &info);
	if (info.role != GPUSORT_SORT_ALL)
		return false;
	input = linitial(cscan->custom_plans);
	if (list_length(input->targetlist) != list_length(cscan->custom_scan_tlist))
		return false;
	if (limit_exprs != NIL)
	{
		/* (count, offset): the offset may be NULL, the count never is */
		Node	   *count = expand_scan_columns(linitial(limit_exprs), cscan->custom_scan_tlist);
		Node	   *offset = lsecond(limit_exprs);

		if (count == NULL)
			return false;
		if (offset != NULL)
		{
			offset = expand_scan_columns(offset, cscan->custom_scan_tlist);
			if (offset == NULL)
				return false;
		}
		limit_exprs = list_make2(count, offset);
	}
	foreach(lc, input->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) makeVarFromTargetEntry(OUTER_VAR, tle),
											 tle->resno, tle->resname, tle->resjunk));
	}
	cscan->custom_exprs = limit_exprs;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->scan.plan.lefttree = input;
	cscan->custom_plans = NIL;
	return true;
}

/* ---- top-N per group ---- */

/*
 * The engine key columns, from `first` on, of the sort keys that are
 * exactly the columns `attnos` (a set: the order among them and repeats
 * do not matter), each of a type whose encoded words are equal exactly
 * where its values are (not a prefix key); -1 where they are not. Equal
 * encoded keys then mean what the parent's equality operators mean: the
 * keys' btree family is the type's default (sort_keys_supported()), and the
 * parent's groups come from the same clauses as the Sort's keys.
 */
static int
key_columns_of(const GpuSortPlanInfo *info, int first, const AttrNumber *attnos, int count,
			   Bitmapset *leave_out)
{
	Bitmapset  *wanted = NULL;
	int			column = first;

	for (int i = 0; i < count; i++)
		if (!bms_is_member(attnos[i], leave_out))
			wanted = bms_add_member(wanted, attnos[i]);
	while (!bms_is_empty(wanted))
	{
		const GpuSortType *type;

		if (column >= info->nkeys || info->key_part[column] != 0 ||
			!bms_is_member(info->key_attno[column], wanted))
			return -1;
		type = gpusort_find_type(info->key_type[column]);
		if (type == NULL || type->prefix_only)
			return -1;
		wanted = bms_del_member(wanted, info->key_attno[column]);
		column += type->nwords;
	}
	return column - first;
}

/* Window functions of window `winref` other than row_number(), rank() and
 * dense_rank(): any found makes the walk return true. */
static bool
has_other_window_function(Node *node, void *context)
{
	Index		winref = *(Index *) context;

	if (node == NULL)
		return false;
	if (IsA(node, WindowFunc))
	{
		WindowFunc *func = (WindowFunc *) node;

		if (func->winref == winref && func->winfnoid != F_ROW_NUMBER &&
			func->winfnoid != F_RANK_ && func->winfnoid != F_DENSE_RANK_)
			return true;
	}
	return expression_tree_walker(node, has_other_window_function, context);
}

/*
 * What a run condition keeps of each partition: the kind and N of
 * `func op constant` or `constant op func` with op <, <=, > or >= (the
 * forms PostgreSQL makes run conditions of for these increasing
 * functions); false for any other condition.
 */
static bool
run_condition_top_n(Node *condition, Index winref, int *kind, int *kept)
{
	OpExpr	   *op = (OpExpr *) condition;
	Node	   *left,
			   *right;
	WindowFunc *func;
	Const	   *constant;
	bool		func_left;
	int			strategy;
	int64		value;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2)
		return false;
	left = linitial(op->args);
	right = lsecond(op->args);
	func_left = IsA(left, WindowFunc);
	func = (WindowFunc *) (func_left ? left : right);
	constant = (Const *) (func_left ? right : left);
	if (!IsA(func, WindowFunc) || !IsA(constant, Const) || constant->constisnull ||
		func->winref != winref)
		return false;
	if (func->winfnoid == F_ROW_NUMBER)
		*kind = GPUSORT_TOPN_ROWS;
	else if (func->winfnoid == F_RANK_)
		*kind = GPUSORT_TOPN_RANK;
	else if (func->winfnoid == F_DENSE_RANK_)
		*kind = GPUSORT_TOPN_DENSE_RANK;
	else
		return false;
	switch (constant->consttype)
	{
		case INT2OID:
			value = DatumGetInt16(constant->constvalue);
			break;
		case INT4OID:
			value = DatumGetInt32(constant->constvalue);
			break;
		case INT8OID:
			value = DatumGetInt64(constant->constvalue);
			break;
		default:
			return false;
	}
	strategy = get_op_opfamily_strategy(op->opno, INTEGER_BTREE_FAM_OID);
	if (!func_left)				/* constant op func: as func op' constant */
		strategy = strategy == BTGreaterStrategyNumber ? BTLessStrategyNumber :
			strategy == BTGreaterEqualStrategyNumber ? BTLessEqualStrategyNumber : 0;
	if (strategy == BTLessStrategyNumber)
		value--;
	else if (strategy != BTLessEqualStrategyNumber)
		return false;
	/* these functions count from 1: below that nothing is kept */
	if (value > PG_INT32_MAX)
		return false;
	*kept = (int) Max(value, 0);
	return true;
}

/*
 * The GpuSort this file made that feeds `plan` its rows in the same
 * columns, directly or through a Gather Merge that only merges its
 * workers' GpuSorts (each worker's own rows are then cut per group, which
 * keeps every row the merged order would keep: a row among the first N
 * of its group, or of rank N or less, is so among its worker's rows too,
 * as are the rows before it); NULL otherwise.
 */
static CustomScan *
sort_site_below(Plan *plan)
{
	Plan	   *input = plan->lefttree;

	if (input != NULL && IsA(input, GatherMerge))
	{
		ListCell   *lc;

		if (input->lefttree == NULL || input->qual != NIL ||
			list_length(input->targetlist) != list_length(input->lefttree->targetlist))
			return NULL;
		foreach(lc, input->targetlist)
		{
			TargetEntry *tle = lfirst_node(TargetEntry, lc);
			Var		   *var = (Var *) tle->expr;

			if (!IsA(var, Var) || var->varno != OUTER_VAR || var->varattno != tle->resno)
				return NULL;
		}
		input = input->lefttree;
	}
	if (input == NULL || !IsA(input, CustomScan) ||
		((CustomScan *) input)->methods != &gpusort_scan_methods ||
		((CustomScan *) input)->custom_plans != NIL || input->lefttree == NULL ||
		input->qual != NIL)
		return NULL;
	return (CustomScan *) input;
}

/*
 * Top-N per group: the GpuSort below a top WindowAgg with a run condition,
 * or below a Unique, learns how many rows of each group its parent keeps.
 *
 * Why the rows it drops change nothing. A Unique returns the first row of
 * each group of rows equal on its columns and nothing else; the GpuSort
 * passes on exactly those first rows, in the same order.
 *
 * A WindowAgg's run condition (nodeWindowAgg.c) is checked on each row
 * after the window functions were evaluated; once it fails, a top
 * WindowAgg (WindowAgg.topWindow) with PARTITION BY returns no more rows
 * of that partition (WINDOWAGG_PASSTHROUGH_STRICT), and one without stops
 * altogether. row_number(), rank() and dense_rank() only grow along a
 * partition, so the rows it returns are those of the partition's first
 * rows where the condition holds: the first N rows, or the rows of rank or
 * dense rank N or less. Dropping the rest is safe only where the rows kept
 * get the same values from every window function the WindowAgg computes
 * and from its quals:
 *   - it is the top WindowAgg: a lower one passes every row up to the
 *     windows above it, which need them all;
 *   - its window functions (those of its window clause: the lower
 *     windows' values come as columns computed below the sort) are only
 *     row_number(), rank() and dense_rank(), whose value for a row depends
 *     on the rows before it in its partition and its peers before it, all
 *     kept; not an aggregate (whose default frame reaches the current
 *     row's later peers), lead(), ntile(), percent_rank(), cume_dist() or
 *     a frame function, which look at later rows or the partition's size;
 *   - the condition's other side is a constant, so N is known now (a
 *     parameter would leave the sort as it is);
 *   - the GpuSort's leading keys are exactly the partition's columns, and
 *     for rank() and dense_rank() the next ones exactly its ORDER BY's
 *     (less those that are partition columns), each of a type encoded
 *     exactly (key_columns_of()), so that groups and peers are told apart
 *     on the encoded keys the store holds.
 * Its other quals and the outer query's are evaluated on the rows it
 * returns, which are the same rows with the same values. One more thing
 * differs: a partitioned WindowAgg still projects the rows it passes over
 * (nodeWindowAgg.c computes its target list before it looks at its
 * status), and the rows dropped here it never sees. So not where its
 * target list or quals call a volatile function (nextval(), a function
 * with side effects), whose calls would then be fewer. An expression of
 * a row no one reads that would raise an error (a division by zero, say)
 * no longer does, as where PostgreSQL itself stops at the run condition
 * without PARTITION BY. Where the run
 * condition has several parts, any one of them keeps a superset of what
 * all of them keep.
 */
static void
mark_top_n(Plan *plan)
{
	CustomScan *cscan = sort_site_below(plan);
	GpuSortPlanInfo info;
	int			kind = GPUSORT_TOPN_NONE;
	int			kept = 0;
	int			group_columns;
	int			peer_columns = 0;

	if (cscan == NULL)
		return;
	gpusort_plan_info_from_list(cscan->custom_private, &info);
	if (info.role != GPUSORT_SORT_ALL || info.bounded || info.approx_eligible)
		return;
	if (IsA(plan, Unique))
	{
		Unique	   *unique = (Unique *) plan;

		if (unique->numCols < 1)
			return;
		group_columns = key_columns_of(&info, 0, unique->uniqColIdx, unique->numCols, NULL);
		kind = GPUSORT_TOPN_ROWS;
		kept = 1;
	}
	else
	{
		WindowAgg  *window = (WindowAgg *) plan;
		Index		winref = window->winref;
		Bitmapset  *partition = NULL;
		ListCell   *lc;

		if (!window->topWindow || window->runConditionOrig == NIL ||
			has_other_window_function((Node *) plan->targetlist, &winref) ||
			has_other_window_function((Node *) plan->qual, &winref) ||
			contain_volatile_functions((Node *) plan->targetlist) ||
			contain_volatile_functions((Node *) plan->qual))
			return;
		foreach(lc, window->runConditionOrig)
			if (run_condition_top_n(lfirst(lc), winref, &kind, &kept))
				break;
		if (kind == GPUSORT_TOPN_NONE)
			return;
		group_columns = key_columns_of(&info, 0, window->partColIdx, window->partNumCols, NULL);
		if (group_columns >= 0 && kind != GPUSORT_TOPN_ROWS)
		{
			for (int i = 0; i < window->partNumCols; i++)
				partition = bms_add_member(partition, window->partColIdx[i]);
			peer_columns = key_columns_of(&info, group_columns, window->ordColIdx,
										  window->ordNumCols, partition);
			if (peer_columns < 0)
				return;
		}
	}
	if (group_columns < 0)
		return;
	info.topn_kind = kind;
	info.topn_kept = kept;
	info.topn_group_columns = group_columns;
	info.topn_peer_columns = peer_columns;
	cscan->custom_private = gpusort_plan_info_to_list(&info);
}

/*
 * Does a bound that reaches this node (ExecSetTupleBound) reach its
 * input? The nodes that pass it on, as execProcnode.c lists them.
 */
static bool
passes_bound(Plan *plan)
{
	switch (nodeTag(plan))
	{
		case T_Limit:
		case T_Append:
		case T_MergeAppend:
		case T_Result:
		case T_Gather:
		case T_GatherMerge:
			return true;
		case T_SubqueryScan:
			return plan->qual == NIL;
		default:
			return false;
	}
}

/*
 * A hashed aggregation that PostgreSQL expects to spill: its groups'
 * entries (hash_agg_entry_size(), as cost_agg() estimates them) more than
 * the hash tables' memory (the aggregates counted at the top of its
 * target list only). There a sort-based aggregation over a GpuSort
 * may beat it (see sorted_agg_over_gpusort()); one that fits in memory is
 * left alone whatever the costs, as is one with grouping sets or split
 * into partial and final steps (the partial steps run in workers, on
 * partial input).
 */
static bool
hashed_agg_spills(Agg *agg)
{
	Plan	   *input = outerPlan(&agg->plan);
	int			transitions = 0;
	ListCell   *lc;

	if (agg->aggstrategy != AGG_HASHED || agg->aggsplit != AGGSPLIT_SIMPLE ||
		agg->groupingSets != NIL || agg->chain != NIL || agg->numCols < 1 || input == NULL)
		return false;
	foreach(lc, agg->plan.targetlist)
		if (IsA(lfirst_node(TargetEntry, lc)->expr, Aggref))
			transitions++;
	return agg->numGroups *
		(double) hash_agg_entry_size(transitions, input->plan_width, agg->transitionSpace) >
		(double) get_hash_memory_limit();
}

/* The largest plan_node_id of the tree below and at `plan`. */
static int
largest_plan_node_id(Plan *plan)
{
	int			largest;
	ListCell   *lc;
	List	   *children = NIL;

	if (plan == NULL)
		return -1;
	largest = Max(plan->plan_node_id, largest_plan_node_id(plan->lefttree));
	largest = Max(largest, largest_plan_node_id(plan->righttree));
	switch (nodeTag(plan))
	{
		case T_Append:
			children = ((Append *) plan)->appendplans;
			break;
		case T_MergeAppend:
			children = ((MergeAppend *) plan)->mergeplans;
			break;
		case T_SubqueryScan:
			largest = Max(largest, largest_plan_node_id(((SubqueryScan *) plan)->subplan));
			break;
		case T_CustomScan:
			children = ((CustomScan *) plan)->custom_plans;
			break;
		default:
			break;
	}
	foreach(lc, children)
		largest = Max(largest, largest_plan_node_id((Plan *) lfirst(lc)));
	return largest;
}

/* plan_node_id for the nodes this file adds (a GpuSort below an Agg that
 * had none): past every id standard_planner() gave */
static int	next_plan_node_id;

/*
 * A hashed aggregation that would spill (hashed_agg_spills()) becomes a
 * sort-based one over a GpuSort of its input by its grouping columns,
 * where their types' default btree orders can be found and a Sort of that
 * input would become a GpuSort (gpusort_replaces_sort()). The planner's
 * costs cannot decide it: PostgreSQL costs a spilling hashed aggregation
 * well below a Sort of its input, and GpuSort below that Sort, yet on the
 * GPU machine a 10M-row DISTINCT of 10M groups took 0.91x PostgreSQL's
 * HashAggregate's time at work_mem 4MB and 0.44x at 64MB as a
 * GroupAggregate over GpuSort (bench/README.md, "Sort sites, measured").
 * The Agg keeps its columns,
 * target list, quals and costs; only its strategy changes (its rows now
 * come out in group order, which nothing above relied on not being so).
 * This is the one place where GpuSort competes with a plan PostgreSQL
 * chose over a Sort (see the header). True if it changed.
 */
static bool
sorted_agg_over_gpusort(Agg *agg)
{
	Plan	   *input = outerPlan(&agg->plan);
	Sort	   *sort;
	Plan	   *replacement;
	ListCell   *lc;

	if (!hashed_agg_spills(agg))
		return false;
	sort = makeNode(Sort);
	sort->plan = *input;
	sort->plan.type = T_Sort;
	sort->plan.lefttree = input;
	sort->plan.righttree = NULL;
	sort->plan.qual = NIL;
	sort->plan.initPlan = NIL;
	sort->plan.parallel_aware = false;
	sort->plan.startup_cost = gpusort_postgresql_sort_cost(input->plan_rows, input->plan_width,
														 input->total_cost);
	sort->plan.total_cost = sort->plan.startup_cost;
	sort->plan.plan_node_id = ++next_plan_node_id;
	sort->plan.targetlist = NIL;
	foreach(lc, input->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		sort->plan.targetlist = lappend(sort->plan.targetlist,
										makeTargetEntry((Expr *) makeVarFromTargetEntry(OUTER_VAR, tle),
														tle->resno, tle->resname, tle->resjunk));
	}
	sort->numCols = agg->numCols;
	sort->sortColIdx = palloc(sizeof(AttrNumber) * agg->numCols);
	sort->sortOperators = palloc(sizeof(Oid) * agg->numCols);
	sort->collations = palloc(sizeof(Oid) * agg->numCols);
	sort->nullsFirst = palloc(sizeof(bool) * agg->numCols);
	for (int k = 0; k < agg->numCols; k++)
	{
		sort->sortColIdx[k] = agg->grpColIdx[k];
		sort->sortOperators[k] = get_ordering_op_for_equality_op(agg->grpOperators[k], false);
		sort->collations[k] = agg->grpCollations[k];
		sort->nullsFirst[k] = false;
		if (!OidIsValid(sort->sortOperators[k]))
			return false;
	}
	replacement = gpusort_for_sort(sort, false);
	if (replacement == NULL)
		return false;
	/* EXPLAIN's costs add up below the Agg, which keeps its own */
	replacement->startup_cost = Min(replacement->startup_cost, agg->plan.startup_cost);
	replacement->total_cost = replacement->startup_cost;
	agg->aggstrategy = AGG_SORTED;
	agg->plan.lefttree = replacement;
	return true;
}

static Plan *replace_sorts(Plan *plan, bool may_be_bounded, int *uncounted);

static void
replace_sorts_in_list(List *plans, bool may_be_bounded, int *uncounted)
{
	ListCell   *lc;

	foreach(lc, plans)
		lfirst(lc) = replace_sorts((Plan *) lfirst(lc), may_be_bounded, uncounted);
}

/*
 * Replaces the Sorts in the tree below and at `plan`, returning the node
 * that takes plan's place. may_be_bounded: a Limit above may hand this
 * node a bound at run time. *uncounted grows by the disabled nodes below
 * that GpuSorts with a lefttree input took off their counts (compat.h),
 * which every node above takes off its own.
 */
static Plan *
replace_sorts(Plan *plan, bool may_be_bounded, int *uncounted)
{
	bool		child_bounded;
	int			below = 0;

	if (plan == NULL)
		return NULL;
	/* a Limit bounds its input; the others pass on a bound they got */
	child_bounded = IsA(plan, Limit) || (may_be_bounded && passes_bound(plan));

	plan->lefttree = replace_sorts(plan->lefttree, child_bounded, &below);
	plan->righttree = replace_sorts(plan->righttree, false, &below);
	switch (nodeTag(plan))
	{
		case T_Append:
			replace_sorts_in_list(((Append *) plan)->appendplans, child_bounded, &below);
			break;
		case T_MergeAppend:
			replace_sorts_in_list(((MergeAppend *) plan)->mergeplans, child_bounded, &below);
			break;
		case T_SubqueryScan:
			((SubqueryScan *) plan)->subplan =
				replace_sorts(((SubqueryScan *) plan)->subplan, child_bounded, &below);
			break;
		case T_CustomScan:
			replace_sorts_in_list(((CustomScan *) plan)->custom_plans, false, &below);
			break;
		default:
			/* an Agg's chain of grouping-set Aggs keeps its Sorts: the
			 * Agg reads their keys and sorts itself */
			break;
	}
	gpusort_plan_uncount_disabled_nodes(plan, below);
	*uncounted += below;

	if (IsA(plan, WindowAgg) || IsA(plan, Unique))
		mark_top_n(plan);
	if (IsA(plan, CustomScan) && refer_to_window_input((CustomScan *) plan))
	{
		int			input_count = gpusort_plan_disabled_nodes(plan->lefttree);

		gpusort_plan_uncount_disabled_nodes(plan, input_count);
		*uncounted += input_count;
	}
	if (IsA(plan, Agg) && sorted_agg_over_gpusort((Agg *) plan))
	{
		/* as for a Sort's GpuSort below: its input's count off its own
		 * and every ancestor's, the Agg's included */
		int			input_count = gpusort_plan_disabled_nodes(plan->lefttree->lefttree);

		gpusort_plan_uncount_disabled_nodes(plan->lefttree, input_count);
		gpusort_plan_uncount_disabled_nodes(plan, input_count);
		*uncounted += input_count;
	}
	if ((IsA(plan, Sort) || IsA(plan, IncrementalSort)) && !may_be_bounded)
	{
		/*
		 * An Incremental Sort sorts the rows of each group that its input
		 * gives presorted on the leading keys, a group at a time. GpuSort
		 * takes its place only as a full sort of every key: the presorted
		 * groups are what make each of PostgreSQL's sorts small, and
		 * GpuSort's cost per row does not fall with them. So it pays where
		 * the groups are large (few of them: each of PostgreSQL's sorts
		 * is nearly a full one) and not where they are small, which the
		 * costs say: the Incremental Sort's total cost, its per-group
		 * sorts at the groups' estimated size, against a GpuSort of all
		 * the rows (gpusort_replaces_sort()). Its total cost, not its
		 * startup cost: the Incremental Sort gives its first rows once
		 * the first group is sorted, GpuSort once all are, and what it
		 * saves over a Sort is in the later groups. The bounded case (a
		 * LIMIT above, where the Incremental Sort stops after a few
		 * groups) is left to it, as for a Sort.
		 */
		Plan	   *replacement = gpusort_for_sort((Sort *) plan, IsA(plan, IncrementalSort));

		if (replacement != NULL)
		{
			int			input_count = gpusort_plan_disabled_nodes(replacement->lefttree);

			gpusort_plan_uncount_disabled_nodes(replacement, input_count);
			*uncounted += input_count;
			return replacement;
		}
	}
	return plan;
}

static PlannedStmt *
gpusort_sort_sites_planner(Query *parse, const char *query_string, int cursor_options,
						   ParamListInfo bound_params)
{
	PlannedStmt *stmt;

	if (previous_planner_hook != NULL)
		stmt = previous_planner_hook(parse, query_string, cursor_options, bound_params);
	else
		stmt = standard_planner(parse, query_string, cursor_options, bound_params);
	if (gpusort_enabled && stmt->commandType != CMD_UTILITY)
	{
		ListCell   *lc;

		int			uncounted = 0;

		next_plan_node_id = largest_plan_node_id(stmt->planTree);
		foreach(lc, stmt->subplans)
			next_plan_node_id = Max(next_plan_node_id, largest_plan_node_id((Plan *) lfirst(lc)));
		stmt->planTree = replace_sorts(stmt->planTree, false, &uncounted);
		/* SubPlans, InitPlans and CTEs: each its own tree */
		foreach(lc, stmt->subplans)
			lfirst(lc) = replace_sorts((Plan *) lfirst(lc), false, &uncounted);
	}
	return stmt;
}

void
gpusort_sort_sites_init(void)
{
	previous_planner_hook = planner_hook;
	planner_hook = gpusort_sort_sites_planner;
}
