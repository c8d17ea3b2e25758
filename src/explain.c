/*
 * explain.c — what EXPLAIN shows for a GpuSort node.
 *
 * Always: the sort keys (as PostgreSQL's Sort shows them), the algorithm,
 * the bound under LIMIT (a number once known, else the LIMIT's
 * expressions), and for the approximate sort its intervals (as the opt-in
 * stands when the node starts, which is what it will run). Under
 * ANALYZE: rows sorted, the interval width (quantile mode: the sample
 * size, the fullest interval's rows and the rank bound), whether the input outgrew
 * work_mem and was sorted in runs on disk and merged (runs, disk used); and,
 * unless gpusort.explain_details is off (or, on PostgreSQL 18, the EXPLAIN
 * option GPUSORT_DETAILS says otherwise: compat.h), the machine-dependent
 * parts: where it ran (GPU name or CPU, and why), memory, and the time split
 * into gather, transfers, sort and emit. These are the leader's own; a node that runs in
 * parallel workers adds a line per worker (worker_reports.c).
 */
#include "gpusort.h"

#include "commands/explain.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/typcache.h"

#include "gpusort_executor.h"

static void
explain_sort_keys(GpuSortState *state, List *context, ExplainState *es)
{
	CustomScan *cscan = (CustomScan *) state->css.ss.ps.plan;
	bool		use_prefix = gpusort_explain_rtable_size(es) > 1 || es->verbose;
	List	   *keys = NIL;
	List	   *wide_prefixes = NIL;

	for (int k = 0; k < state->plan.nkeys; k++)
	{
		TargetEntry *tle;
		StringInfoData key;
		TypeCacheEntry *type;
		Oid			sort_operator = state->plan.sort_operator[k];
		bool		pattern;
		int			words;

		if (state->plan.key_part[k] > 0)
			continue;			/* a later word of the key before */
		tle = list_nth_node(TargetEntry, cscan->custom_scan_tlist,
							state->plan.key_attno[k] - 1);
		initStringInfo(&key);
		appendStringInfoString(&key, deparse_expression((Node *) tle->expr, context,
														use_prefix, false));
		/* a string's prefix the planner widened (planner.c) */
		words = gpusort_plan_key_words(&state->plan, k);
		if (gpusort_prefix_may_widen(state->key_types[k]) && words != GPUSORT_PREFIX_WORDS &&
			!((state->plan.prefix_from_rows >> k) & 1))
			wide_prefixes = lappend(wide_prefixes,
									psprintf("%s (%d bytes)", key.data, words * 8 - 1));
		/* an operator neither the type's default < nor > (a pattern
		 * operator, ~<~): named, as PostgreSQL's Sort names it */
		type = lookup_type_cache(exprType((Node *) tle->expr),
								 TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);
		pattern = sort_operator != type->lt_opr && sort_operator != type->gt_opr;
		/* like PostgreSQL's Sort: a collation other than the type's (but
		 * a pattern operator's, "C", which its order ignores) */
		if (!pattern && OidIsValid(state->plan.collation[k]) &&
			state->plan.collation[k] != get_typcollation(exprType((Node *) tle->expr)))
		{
			char	   *collation = get_collation_name(state->plan.collation[k]);

			if (collation != NULL)
				appendStringInfo(&key, " COLLATE %s", quote_identifier(collation));
		}
		/* like PostgreSQL's Sort: only what differs from the default */
		if (pattern)
			appendStringInfo(&key, " USING %s", get_opname(sort_operator));
		else if (state->plan.descending[k])
			appendStringInfoString(&key, " DESC");
		if (state->plan.nulls_first[k] && !state->plan.descending[k])
			appendStringInfoString(&key, " NULLS FIRST");
		else if (!state->plan.nulls_first[k] && state->plan.descending[k])
			appendStringInfoString(&key, " NULLS LAST");
		keys = lappend(keys, key.data);
	}
	ExplainPropertyList("Sort Key", keys, es);
	if (wide_prefixes != NIL)
		ExplainPropertyList("Wide Key Prefix", wide_prefixes, es);
}

/* Rows held in a GPU's memory (a rows job), if any, and their size. */
static void
explain_gpu_rows(const RowStoreStats *stats, ExplainState *es)
{
	if (stats->gpu_run_rows > 0)
		ExplainPropertyText("Rows in GPU Memory",
							psprintf(INT64_FORMAT " (" INT64_FORMAT " kB)%s", stats->gpu_run_rows,
									 (stats->gpu_run_bytes + 1023) / 1024,
									 stats->gpu_run_given_back ?
									 ", given back to a temporary file" : ""), es);
}

static void
explain_analyze(GpuSortState *state, ExplainState *es)
{
	bool		details = gpusort_explain_details_wanted(es, gpusort_explain_details);
	const RowStoreStats *stats = row_store_stats(state->rows);
	/* no sorted run in a file: the rows were (or went to be) sorted in a
	 * GPU's memory */
	bool		all_on_gpu = stats->gpu_run_rows > 0 && stats->runs == 0;

	if (state->plan.role == GPUSORT_MERGE_SHARES && all_on_gpu)
	{
		/* every share's rows went to the GPU rows job: sorted there, read */
		ExplainPropertyText("Sort Method", "the parallel processes' rows in GPU memory", es);
		explain_gpu_rows(stats, es);
	}
	else if (state->plan.role == GPUSORT_MERGE_SHARES)
	{
		ExplainPropertyText("Sort Method", "merge of the parallel processes' sorted runs", es);
		ExplainPropertyInteger("Sorted Runs", NULL, stats->runs, es);
		explain_gpu_rows(stats, es);
		if (stats->merge_passes > 0)
			ExplainPropertyInteger("Merge Passes", NULL, stats->merge_passes, es);
		if (stats->partitions > 1)
		{
			/* a partitioned merge: key ranges, most merged by the workers */
			ExplainPropertyInteger("Merged Key Ranges", NULL, stats->partitions, es);
			ExplainPropertyInteger("Key Ranges Merged by Workers", NULL,
								   stats->partitions_by_workers, es);
		}
		ExplainPropertyInteger("Disk", "kB", (stats->disk_bytes + 1023) / 1024, es);
	}
	else if (all_on_gpu)
	{
		/* a share's rows: the merge above sorts them with the others' */
		ExplainPropertyText("Sort Method", state->plan.role == GPUSORT_SORT_SHARE ?
							"rows to GPU memory, sorted above" :
							"rows in GPU memory", es);
		explain_gpu_rows(stats, es);
	}
	else if (stats->external)
	{
		ExplainPropertyText("Sort Method", "external merge (input exceeded work_mem)", es);
		ExplainPropertyInteger("Sorted Runs", NULL, stats->runs, es);
		if (stats->merge_passes > 0)
			ExplainPropertyInteger("Merge Passes", NULL, stats->merge_passes, es);
		explain_gpu_rows(stats, es);
		ExplainPropertyInteger("Disk", "kB", (stats->disk_bytes + 1023) / 1024, es);
	}
	ExplainPropertyInteger("Rows Sorted", NULL, (int64) stats->rows_sorted, es);
	if (gpusort_plan_has_prefix_keys(&state->plan))
	{
		/* string keys sorted on prefixes: what PostgreSQL's comparator did
		 * (this process's: a worker's groups are its own) */
		if (es->format == EXPLAIN_FORMAT_TEXT)
			ExplainPropertyText("Ties Resolved on CPU",
								psprintf(INT64_FORMAT " rows in " INT64_FORMAT " groups, "
										 INT64_FORMAT " merge comparisons",
										 stats->tie_rows, stats->tie_groups,
										 stats->tie_comparisons), es);
		else
		{
			ExplainPropertyInteger("Tied Rows Resolved", NULL, stats->tie_rows, es);
			ExplainPropertyInteger("Tied Groups Resolved", NULL, stats->tie_groups, es);
			ExplainPropertyInteger("Tied Merge Comparisons", NULL, stats->tie_comparisons, es);
		}
	}
	if (stats->prefix_bytes_chosen > 0)
	{
		/* a string key without statistics: its prefix, from its first rows */
		int			widest = state->prefix_choice_type->nwords * 8 - 1;

		if (es->format == EXPLAIN_FORMAT_TEXT)
			ExplainPropertyText("Key Prefix Chosen from Rows",
								psprintf("%d of %d bytes (" INT64_FORMAT " rows looked at)",
										 stats->prefix_bytes_chosen, widest,
										 stats->prefix_sample_rows), es);
		else
		{
			ExplainPropertyInteger("Key Prefix Bytes Chosen", NULL,
								   stats->prefix_bytes_chosen, es);
			ExplainPropertyInteger("Key Prefix Rows Looked At", NULL,
								   stats->prefix_sample_rows, es);
		}
	}
	if (state->bound > 0)
		ExplainPropertyInteger("Rows Read", NULL, stats->rows_read, es);
	if (state->read_table)
		ExplainPropertyInteger("Table Pages Read by GpuSort", NULL, state->table_pages_read, es);
	if (stats->approximate && state->approx_mode == GS_APPROX_QUANTILE)
	{
		/* the sample drawn, the fullest bucket, and the rank distance the
		 * rows stay within (interval_map.h), for the rows sorted */
		ExplainPropertyInteger("Sample Size", NULL, (int64) stats->report.sample_size, es);
		ExplainPropertyInteger("Largest Interval Rows", NULL,
							   (int64) stats->report.largest_interval, es);
		ExplainPropertyInteger("Rank Error Bound", NULL, (int64) stats->report.rank_bound, es);
		ExplainPropertyInteger("Rows Materialized", NULL, (int64) stats->rows_out, es);
	}
	else if (stats->approximate)
	{
		ExplainPropertyFloat("Interval Width", NULL,
							 gs_interval_width(&stats->report.interval_map), 1, es);
		ExplainPropertyInteger("Rows Materialized", NULL, (int64) stats->rows_out, es);
	}
	if (!details)
		return;

	if (state->plan.role == GPUSORT_MERGE_SHARES)
	{
		/* it sorts nothing itself (but the GPU rows job's rows): the
		 * processes' time, then the merge's */
		if (stats->gpu_sorts > 0)
			ExplainPropertyText("Device", gpusort_device_description(stats), es);
		ExplainPropertyInteger("Memory", "kB", (int64) ((stats->peak_memory + 1023) / 1024), es);
		if (es->timing)
		{
			ExplainPropertyFloat("Shares Time", "ms", state->gather_ms, 3, es);
			if (stats->gpu_sorts > 0)
				ExplainPropertyFloat("Sort Time", "ms", stats->sort_ms, 3, es);
			if (stats->merge_passes > 0)
				ExplainPropertyFloat("Merge Time", "ms", stats->merge_ms, 3, es);
			ExplainPropertyFloat("Emit Time", "ms", state->emit_ms, 3, es);
		}
		return;
	}
	if (stats->sorts > 0)
	{
		/* (a share whose rows all went to the GPU rows job sorted none) */
		ExplainPropertyText("Device", gpusort_device_description(stats), es);
		ExplainPropertyText("Algorithm Used", gs_algorithm_name(stats->report.algorithm), es);
		ExplainPropertyInteger("Key Words", NULL, stats->layout_words, es);
	}
	if (stats->pruned > 0)
		ExplainPropertyInteger("Prunes", NULL, stats->pruned, es);
	ExplainPropertyInteger("Memory", "kB", (int64) ((stats->peak_memory + 1023) / 1024), es);
	if (stats->gpu_sorts > 0)
		ExplainPropertyInteger("GPU Memory", "kB",
							   (int64) ((stats->report.gpu_bytes + 1023) / 1024), es);
	if (es->timing && (stats->gpu_sorts > 0 || stats->report.queue_ms > 0))
		ExplainPropertyFloat("GPU Queue Wait", "ms", stats->report.queue_ms, 3, es);
	if (es->timing)
	{
		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str,
							 "Time: gather=%.3f sort=%.3f (upload=%.3f gpu=%.3f download=%.3f)",
							 state->gather_ms, stats->sort_ms, stats->report.upload_ms,
							 stats->report.sort_ms, stats->report.download_ms);
			if (stats->external)
				appendStringInfo(es->str, " write=%.3f merge=%.3f",
								 stats->write_ms, stats->merge_ms);
			appendStringInfo(es->str, " emit=%.3f ms\n", state->emit_ms);
		}
		else
		{
			ExplainPropertyFloat("Gather Time", "ms", state->gather_ms, 3, es);
			ExplainPropertyFloat("Sort Time", "ms", stats->sort_ms, 3, es);
			ExplainPropertyFloat("Upload Time", "ms", stats->report.upload_ms, 3, es);
			ExplainPropertyFloat("GPU Sort Time", "ms", stats->report.sort_ms, 3, es);
			ExplainPropertyFloat("Download Time", "ms", stats->report.download_ms, 3, es);
			if (stats->external)
			{
				ExplainPropertyFloat("Run Write Time", "ms", stats->write_ms, 3, es);
				ExplainPropertyFloat("Merge Time", "ms", stats->merge_ms, 3, es);
			}
			ExplainPropertyFloat("Emit Time", "ms", state->emit_ms, 3, es);
		}
	}
}

/*
 * The bound: LIMIT + OFFSET as the node used it once it has run, or as the
 * plan's constants evaluate; otherwise (a parameter, a stable function) the
 * LIMIT's expressions, evaluated only when the node runs.
 */
static void
explain_bound(GpuSortState *state, List *context, ExplainState *es)
{
	Node	   *count = linitial(state->bound_exprs);
	Node	   *offset = lsecond(state->bound_exprs);

	if (state->sort_done || (IsA(count, Const) && (offset == NULL || IsA(offset, Const))))
	{
		int64		bound = state->sort_done ? state->bound : gpusort_evaluate_bound(state);

		if (bound > 0)
			ExplainPropertyInteger("Bound", NULL, bound, es);
		return;
	}
	if (offset == NULL)
		ExplainPropertyText("Bound", deparse_expression(count, context, false, false), es);
	else
		ExplainPropertyText("Bound",
							psprintf("%s + %s", deparse_expression(count, context, false, false),
									 deparse_expression(offset, context, false, false)),
							es);
}

/*
 * Top-N per group (sort_sites.c): how many rows of each group the parent
 * keeps, hence the sort passes on; under ANALYZE, the rows it dropped.
 */
static void
explain_top_n(GpuSortState *state, ExplainState *es)
{
	const GpuSortPlanInfo *plan = &state->plan;

	if (plan->topn_kind == GPUSORT_TOPN_NONE)
		return;
	if (plan->topn_kind == GPUSORT_TOPN_ROWS)
		ExplainPropertyInteger("Rows Kept per Group", NULL, plan->topn_kept, es);
	else
		ExplainPropertyText("Rows Kept per Group",
							psprintf("%s <= %d", plan->topn_kind == GPUSORT_TOPN_RANK ?
									 "rank" : "dense rank", plan->topn_kept), es);
	if (es->analyze && state->sort_done && state->rows != NULL)
	{
		const RowStoreStats *stats = row_store_stats(state->rows);

		ExplainPropertyInteger("Rows Dropped by Group", NULL, stats->rows_skipped, es);
		if (stats->group_prunes > 0)
			ExplainPropertyInteger("Group Prunes", NULL, stats->group_prunes, es);
	}
}

void
gpusort_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GpuSortState *state = (GpuSortState *) node;
	List	   *context = set_deparse_context_plan(es->deparse_cxt,
												   node->ss.ps.plan, ancestors);

	explain_sort_keys(state, context, es);
	if (state->approximate)
	{
		ExplainPropertyText("Algorithm", "approximate (interval sort)", es);
		ExplainPropertyInteger("Intervals", NULL, state->intervals, es);
		ExplainPropertyText("Approximate Mode", gs_approx_mode_name(state->approx_mode), es);
	}
	else
		ExplainPropertyText("Algorithm", gs_algorithm_name(state->plan.algorithm), es);
	if (state->plan.role == GPUSORT_SORT_SHARE)
		ExplainPropertyText("Parallel Sort",
							"each process's share, to GPU memory or sorted runs in temporary files",
							es);
	else if (node->ss.ps.plan->parallel_aware)
		ExplainPropertyText("Parallel Sort",
							"each process sorts the rows it reads, merged above",
							es);
	else if (state->plan.role == GPUSORT_MERGE_SHARES)
		ExplainPropertyText("Parallel Sort", "merges the shares sorted below", es);
	if (state->plan.bounded)
		explain_bound(state, context, es);
	explain_top_n(state, es);
	if (es->analyze && state->sort_done)
		explain_analyze(state, es);
	if (es->analyze)
		worker_reports_explain(state, es);
}
