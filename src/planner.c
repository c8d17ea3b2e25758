/*
 * planner.c — offers the GpuSort custom path for a query's ORDER BY.
 *
 * A chained create_upper_paths_hook looks at the UPPERREL_ORDERED stage: if
 * every ORDER BY key is a non-volatile expression of a type gpusort encodes
 * (types.c), sorted by its type's default btree order, it adds a CustomPath
 * over the cheapest input path, costed so that add_path() keeps it only
 * where it should beat PostgreSQL's Sort. Everything else (text keys,
 * ORDER BY ... USING, volatile keys) is left alone.
 *
 * Under a LIMIT the node keeps only the best LIMIT + OFFSET rows while
 * gathering. The bound is never baked into the plan: the LIMIT and OFFSET
 * expressions ride along in custom_exprs and are evaluated when the node
 * first runs (a generic plan's $1, current_setting()), as PostgreSQL's own
 * Limit does for its Sort. There is no bound where rows between the Limit
 * and the sort may be dropped or multiplied (FOR UPDATE ... SKIP LOCKED,
 * set-returning functions in the target list) or where the Limit needs
 * more than its count (FETCH FIRST ... WITH TIES).
 *
 * The opt-in approximate sort (gpusort.approximate_intervals) applies only
 * to the top-level query's ORDER BY on one integer key (or float key, in
 * gpusort.approximate_mode = quantile), whose order goes straight to the
 * client. The plan only says whether the query could be
 * approximated; the executor decides from the setting as it is then, so a
 * cached plan never approximates a query that did not opt in.
 *
 * Where the input has partial paths, two parallel shapes are offered too
 * (never approximate), and add_path() weighs them against the rest:
 *   - a Gather Merge over partial GpuSorts, each process sorting its share
 *     (the shape for LIMIT queries: under a bound each process keeps its
 *     share's best LIMIT + OFFSET rows, and Gather Merge reads the top
 *     rows of those);
 *   - the parallel sort (parallel_sort.c): a GpuSort that merges the
 *     sorted runs its Gather's processes left in temporary files, so the
 *     rows travel through a Gather tuple queue not at all (the shape for a
 *     full sort, where Gather Merge's per-row queue traffic is the cost).
 *
 * With gpusort.min_rows = 0 or the approximate opt-in, GpuSort replaces
 * every path that sorts, Gather Merge over a partial Sort included.
 */
#include "gpusort.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/transam.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_collation_d.h"
#include "catalog/pg_opfamily_d.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type_d.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "row_store.h"
#include "service.h"

#include <math.h>

static create_upper_paths_hook_type previous_upper_paths_hook = NULL;

/*
 * Cost per input row, in multiples of cpu_operator_cost, of gathering the
 * row (copying the tuple, encoding its keys), sorting its key, and emitting
 * it. PostgreSQL's Sort charges 2 * cpu_operator_cost per comparison, about
 * 2 * log2(N) per row, which the GPU's linear cost undercuts for large N;
 * the CPU's radix sort costs more per row than the GPU's. Set from
 * measurements on the H100 machine (bench/README.md).
 */
#define GPU_COST_PER_ROW 12.0
#define CPU_COST_PER_ROW 30.0
/* Fixed cost of a GPU sort (launches, transfers' latency, synchronisation). */
#define GPU_STARTUP_COST 2000.0
/*
 * Under a bound, most rows go no further than their keys: read, encoded
 * and compared with the threshold, in multiples of cpu_operator_cost.
 */
#define BOUNDED_COST_PER_ROW 2.0
/*
 * Where GpuSort reads its Seq Scan's table pages itself (table_pages.c),
 * the share of the scan's per-row CPU cost (cpu_tuple_cost) it still pays:
 * finding the visible tuples, not an executor call per row. On the GPU
 * machine such a bounded sort took 26 ns a row where the scan alone, rows
 * passed up, took 47-52 (bench/README.md).
 */
#define TABLE_PAGES_ROW_SHARE 0.25

static Plan *plan_gpusort_path(PlannerInfo *root, RelOptInfo *rel,
							   CustomPath *best_path, List *tlist,
							   List *clauses, List *custom_plans);

static const CustomPathMethods gpusort_path_methods = {
	.CustomName = "GpuSort",
	.PlanCustomPath = plan_gpusort_path,
};

/*
 * The expression a pathkey sorts by, as it appears in the input's target,
 * or NULL if it does not appear there. child_relids: the input is one
 * partition's (an append rel's child), whose expressions are the
 * equivalence classes' child members for those relids; NULL otherwise.
 */
static Expr *
find_key_expression(PathKey *pathkey, PathTarget *target, Relids child_relids)
{
	ListCell   *lc;

	if (pathkey->pk_eclass->ec_has_volatile)
		return NULL;
	foreach(lc, target->exprs)
	{
		Expr	   *expr = (Expr *) lfirst(lc);

		if (find_ec_member_matching_expr(pathkey->pk_eclass, expr, child_relids) != NULL)
			return expr;
	}
	return NULL;
}

/*
 * The btree operator family for strings whose order is their bytes'
 * whatever the collation (text_pattern_ops and varchar_pattern_ops;
 * bpchar_pattern_ops, trailing spaces aside): its ~<~ and ~>~ order a
 * string key as the prefix of its bytes does (types.c). InvalidOid for
 * other types.
 */
static Oid
pattern_opfamily(Oid type)
{
	if (type == TEXTOID || type == VARCHAROID)
		return TEXT_PATTERN_BTREE_FAM_OID;
	if (type == BPCHAROID)
		return BPCHAR_PATTERN_BTREE_FAM_OID;
	return InvalidOid;
}

/*
 * Can an expression of `expr_type` be a GpuSort key, sorted by the
 * `strategy` operator (< or >) of btree family `opfamily` under
 * `collation`? If so, fills *key. Both ways a sort is planned ask here:
 * an ORDER BY's pathkeys (analyze_sort_keys()) and a finished plan's Sort
 * nodes (sort_sites.c, through gpusort_sort_operator_key()).
 *
 * A domain's values are its base type's, sorted by its operators. The
 * family must be the type's default one (its encoding's order), or a
 * string's pattern family, which orders by bytes whatever the collation
 * (the key is then taken as under "C", which its comparator ignores as
 * well); other families (ORDER BY ... USING another opclass's operator)
 * stay PostgreSQL's sort, and so does a family of the user's, even where
 * it is the type's default: CREATE OPERATOR CLASS ... DEFAULT may give one
 * to a type that had none of its own (an enum, varchar, cidr, which use
 * enum_ops, text's and inet's), in an order the key's encoding does not
 * follow. A string's prefix is its bytes under a
 * collation that orders by bytes (C, POSIX, ucs_basic, C.UTF-8), its ICU
 * sort key's under an ICU one (nondeterministic ones too); libc
 * collations stay PostgreSQL's (types.c says why).
 */
bool
gpusort_supported_key(Oid expr_type, Oid opfamily, int strategy, Oid collation,
					  GpuSortKeyChoice *key)
{
	Oid			type = getBaseType(expr_type);
	const GpuSortType *key_type = gpusort_find_type(type);
	Oid			opclass;
	Oid			input_type;
	bool		bytewise = false;

	if (key_type == NULL || !OidIsValid(opfamily) || opfamily >= FirstNormalObjectId ||
		(strategy != BTLessStrategyNumber && strategy != BTGreaterStrategyNumber))
		return false;
	opclass = GetDefaultOpClass(type, BTREE_AM_OID);
	if (OidIsValid(opclass) && get_opclass_family(opclass) == opfamily)
		input_type = get_opclass_input_type(opclass);
	else if (opfamily == pattern_opfamily(type))
	{
		input_type = type == BPCHAROID ? BPCHAROID : TEXTOID;
		bytewise = true;
	}
	else
		return false;
	/* the opclass's own type: varchar sorts with text's operators, an
	 * enum with anyenum's */
	key->sort_operator = get_opfamily_member(opfamily, input_type, input_type, strategy);
	if (!OidIsValid(key->sort_operator))
		return false;
	key->collation = bytewise ? C_COLLATION_OID : collation;
	if (!gpusort_key_collation_supported(type, key->collation))
		return false;
	key->type = type;
	key->key_type = key_type;
	key->descending = strategy == BTGreaterStrategyNumber;
	return true;
}

/*
 * gpusort_supported_key() for a Sort node's key: sorted by
 * `sort_operator`, the < or > of the type's default family or of a
 * string's pattern family.
 */
bool
gpusort_sort_operator_key(Oid expr_type, Oid sort_operator, Oid collation,
						  GpuSortKeyChoice *key)
{
	Oid			type = getBaseType(expr_type);
	Oid			opclass = GetDefaultOpClass(type, BTREE_AM_OID);
	Oid			opfamily;
	int			strategy;

	if (!OidIsValid(opclass))
		return false;
	opfamily = get_opclass_family(opclass);
	strategy = get_op_opfamily_strategy(sort_operator, opfamily);
	if (strategy == 0 && OidIsValid(pattern_opfamily(type)))
	{
		opfamily = pattern_opfamily(type);
		strategy = get_op_opfamily_strategy(sort_operator, opfamily);
	}
	return gpusort_supported_key(type, opfamily, strategy, collation, key) &&
		key->sort_operator == sort_operator;
}

/*
 * How many words a string key's prefix gets (types.c,
 * gpusort_prefix_words_for_sample()), from the statistics of the column
 * it is (or of an expression index's expression). Where there are none,
 * or the user may not read them (nothing of them shows but the width, yet
 * PostgreSQL's estimators keep to the same rule), the widest the plan has
 * room for, with *from_rows set: a serial sort narrows it to what its
 * first rows need (gpusort_prefix_words_for_rows()).
 *
 * A parallel sort's shares cannot choose (each streams its rows to the
 * GPU from its first, and all must encode alike): they keep the widest.
 * That costs them where every byte differs (10M rows, 8 workers, the
 * H200: md5 text 0.82-0.98x PostgreSQL's time at 31 bytes, 0.60-0.65x at
 * 15), but 15 bytes left a name-like key's every row to the merging
 * process's comparator (2.3-2.7x PostgreSQL's time; 0.37-0.45x at 31):
 * bench/README.md, "Text keys without statistics".
 */
static int
string_key_words(PlannerInfo *root, Expr *expr, Oid type, Oid collation, int max_words,
				 double *tied_share, bool *from_rows)
{
	VariableStatData vardata;
	int			words = Min(max_words, GPUSORT_PREFIX_MAX_WORDS);
	Oid			stats_type;

	*tied_share = 0.0;
	*from_rows = words > GPUSORT_PREFIX_WORDS;
	examine_variable(root, (Node *) expr, 0, &vardata);
	/* the statistics' values are of the key's type (varchar's are text's,
	 * a domain's its base type's) */
	stats_type = OidIsValid(vardata.atttype) ? getBaseType(vardata.atttype) : InvalidOid;
	if (HeapTupleIsValid(vardata.statsTuple) && vardata.acl_ok &&
		(stats_type == type ||
		 ((stats_type == TEXTOID || stats_type == VARCHAROID) &&
		  (type == TEXTOID || type == VARCHAROID))))
	{
		AttStatsSlot common;
		AttStatsSlot bounds;
		bool		has_common = get_attstatsslot(&common, vardata.statsTuple,
												  STATISTIC_KIND_MCV, InvalidOid,
												  ATTSTATSSLOT_VALUES | ATTSTATSSLOT_NUMBERS);
		bool		has_bounds = get_attstatsslot(&bounds, vardata.statsTuple,
												  STATISTIC_KIND_HISTOGRAM, InvalidOid,
												  ATTSTATSSLOT_VALUES);

		*from_rows = false;
		words = gpusort_prefix_words_for_sample(type, collation,
												has_common ? common.values : NULL,
												has_common ? common.numbers : NULL,
												has_common ? Min(common.nvalues, common.nnumbers) : 0,
												has_bounds ? bounds.values : NULL,
												has_bounds ? bounds.nvalues : 0, max_words,
												tied_share);
		if (has_common)
			free_attstatsslot(&common);
		if (has_bounds)
			free_attstatsslot(&bounds);
	}
	ReleaseVariableStats(vardata);
	return words;
}

/* The share of rows that may tie on an ICU key's prefix, as the statistics
 * tell, beyond which no one process resolves all ties (analyze_sort_keys()). */
#define MAX_SORT_KEY_TIED_SHARE 0.5

/* One ORDER BY key, as analyze_sort_keys() found it. */
typedef struct SortKeyFound
{
	Expr	   *expr;
	GpuSortKeyChoice key;
	bool		nulls_first;
	int			words;			/* engine key columns it takes */
	bool		words_from_rows;	/* ... or fewer, as the rows need */
} SortKeyFound;

/*
 * Fills info (except attnos) and the key expressions (one per engine key
 * column: a key of several words repeats its expression) if every ORDER BY
 * key can be a GpuSort key; returns false otherwise. A string key's prefix
 * is widened where its statistics say many rows would tie at the default
 * width, as far as GS_MAX_KEY_COLUMNS leaves room. With one_resolver (one
 * process will resolve every row's ties), false also for an ICU key on
 * which most rows would tie.
 */
static bool
analyze_sort_keys(PlannerInfo *root, PathTarget *target, Relids child_relids,
				  bool one_resolver, GpuSortPlanInfo *info, List **key_exprs)
{
	ListCell   *lc;
	SortKeyFound found[GS_MAX_KEY_COLUMNS];
	int			nfound = 0;
	int			columns = 0;

	memset(info, 0, sizeof(*info));
	*key_exprs = NIL;
	foreach(lc, root->sort_pathkeys)
	{
		PathKey    *pathkey = lfirst_node(PathKey, lc);
		Expr	   *expr;
		GpuSortKeyChoice key;

		expr = find_key_expression(pathkey, target, child_relids);
		if (expr == NULL || contain_volatile_functions((Node *) expr))
			return false;
		if (!gpusort_supported_key(exprType((Node *) expr), pathkey->pk_opfamily,
								   gpusort_pathkey_strategy(pathkey),
								   pathkey->pk_eclass->ec_collation, &key))
			return false;
		if (columns + key.key_type->nwords > GS_MAX_KEY_COLUMNS)
			return false;
		found[nfound].expr = expr;
		found[nfound].key = key;
		found[nfound].nulls_first = pathkey->pk_nulls_first;
		found[nfound].words = key.key_type->nwords;
		found[nfound].words_from_rows = false;
		columns += key.key_type->nwords;
		nfound++;
	}
	/* wider string prefixes, the first keys first, in the columns left */
	for (int i = 0; i < nfound; i++)
	{
		int			room = Max(GS_MAX_KEY_COLUMNS - columns, 0);
		double		tied_share;

		if (!gpusort_prefix_may_widen(found[i].key.key_type))
			continue;
		found[i].words = string_key_words(root, found[i].expr, found[i].key.type,
										  found[i].key.collation, found[i].words + room,
										  &tied_share, &found[i].words_from_rows);
		columns += found[i].words - found[i].key.key_type->nwords;

		/*
		 * Under ICU every row whose prefix another shares goes to the
		 * resolver (equal sort keys are not equal strings), which makes its
		 * sort keys further on and compares. Where one process resolves
		 * the ties of all the rows (one_resolver: the parallel sort's
		 * merge) and the statistics say most rows would tie even at this
		 * width, that costs more than PostgreSQL's parallel sort
		 * (bench/README.md, "Text keys on the H200"): that shape is not
		 * offered. A serial GpuSort still wins there, and a Gather Merge
		 * over partial ones resolves each process's ties in that process.
		 */
		if (one_resolver && tied_share > MAX_SORT_KEY_TIED_SHARE &&
			type_is_collatable(found[i].key.type) &&
			!gpusort_collation_is_bytewise(found[i].key.collation))
			return false;
	}
	/* one engine key column per word of the key, most significant first */
	for (int i = 0; i < nfound; i++)
		for (int part = 0; part < found[i].words; part++)
		{
			int			k = info->nkeys++;

			if (part == 0 && found[i].words_from_rows)
				info->prefix_from_rows |= (uint32) 1 << k;
			info->key_type[k] = found[i].key.type;
			info->key_part[k] = part;
			info->descending[k] = found[i].key.descending;
			info->nulls_first[k] = found[i].nulls_first;
			info->collation[k] = found[i].key.collation;
			info->sort_operator[k] = found[i].key.sort_operator;
			*key_exprs = lappend(*key_exprs, found[i].expr);
		}
	return info->nkeys > 0;
}

/*
 * Is this a query a Citus coordinator sent to this node, one shard's part
 * of a distributed query? Citus names its internal connections so.
 */
static bool
from_citus_coordinator(void)
{
	static const char prefix[] = "citus_internal gpid=";

	return application_name != NULL &&
		strncmp(application_name, prefix, sizeof(prefix) - 1) == 0;
}

/*
 * Could this sort be approximate? Only the top-level SELECT's ORDER BY goes
 * straight to the client; whether it is approximated is decided when the
 * node runs (gpusort.approximate_intervals at that time). A shard query
 * from a Citus coordinator is top-level here but its rows feed the
 * coordinator's merge, and the approximate guarantee is about the whole
 * result: it stays exact.
 */
static bool
approximation_eligible(PlannerInfo *root, const GpuSortPlanInfo *info)
{
	return root->parent_root == NULL &&
		!from_citus_coordinator() &&
		root->query_level == 1 &&
		root->parse->commandType == CMD_SELECT &&
		root->parse->rowMarks == NIL &&
		info->nkeys == 1;
}

/* Would the opt-in, as it is set now, approximate this sort? A float key
 * only in quantile mode: equal widths of its encoding are not widths of
 * its values (the executor decides the same from the settings then). */
static bool
approximation_wanted(const GpuSortPlanInfo *info)
{
	return info->approx_eligible && gpusort_approximate_intervals > 0 &&
		(gpusort_find_type(info->key_type[0])->integral ||
		 gpusort_approximate_mode == GS_APPROX_QUANTILE);
}

static bool
gpu_expected(void)
{
	gs_gpu_info gpu;

	if (gpusort_device == GS_DEVICE_CPU)
		return false;
	/* asks the GPU service's shared state (service/client.c) whether a GPU
	 * is ready; backends never start CUDA themselves */
	gs_gpu_info_get(&gpu);
	return gpu.usable;
}

/*
 * Every input row is read and encoded, also under a bound (it only saves
 * copying rows that cannot make it), so the cost is linear in input rows.
 *
 * Rows that will not fit in work_mem (the rows kept, under a bound) are
 * sorted in work_mem-sized runs (one GPU job each), written to temporary
 * files and merged on their encoded keys (row_store.c): that adds the
 * pages written and read, charged as cost_sort() charges PostgreSQL's own
 * external sort, one comparison per row and level of the merge, and a GPU
 * job's fixed cost per run.
 */
/* Bytes one input row takes in memory: the tuple and GpuSort's overhead. */
static double
row_bytes(Path *input, int nkeys)
{
	return MAXALIGN(input->pathtarget->width + SizeofMinimalTupleHeader) +
		gpusort_row_overhead(nkeys);
}

/* Rows a sort keeps: all of them, or under a bound the LIMIT's. */
static double
kept_rows(PlannerInfo *root, Path *input, bool bounded)
{
	return bounded && root->limit_tuples > 0 ?
		Min(input->rows, root->limit_tuples) : input->rows;
}

/* Will the rows kept outgrow work_mem (an external sort)? */
static bool
spills(PlannerInfo *root, Path *input, int nkeys, bool bounded)
{
	return kept_rows(root, input, bounded) * row_bytes(input, nkeys) >
		(double) work_mem * 1024.0;
}

/* Pages that `rows` of the input take in a file of sorted rows, each a
 * record as the row store writes it. */
static double
disk_pages(Path *input, int nkeys, double rows)
{
	double		record_bytes =
		row_store_file_record_bytes(nkeys, MAXALIGN(input->pathtarget->width + SizeofMinimalTupleHeader));

	return ceil(rows * record_bytes / BLCKSZ);
}

/* The runs an external sort of `kept` rows writes (one work_mem of rows
 * each), and how many of them one merge takes (row_store_merge.c's order). */
static void
external_sort_shape(Path *input, int nkeys, double kept, double *runs, double *merge_order)
{
	double		memory_bytes = (double) work_mem * 1024.0;
	double		run_rows = Max(memory_bytes / row_bytes(input, nkeys), 1024.0);

	*runs = ceil(kept / run_rows);
	*merge_order = row_store_merge_order((Size) work_mem * 1024);
}

/*
 * Would the sort's runs in temporary files pass temp_file_limit (which
 * PostgreSQL counts per process)? Each record carries the encoded keys
 * beside its tuple (disk_pages()), about twice tuplesort's bytes for
 * narrow rows, and merges of runs while others are still being written
 * add to the peak: a sort that PostgreSQL runs within the limit could fail
 * here, so the planner leaves it to PostgreSQL. Not where the rows are
 * expected to go to the GPU service's memory instead.
 */
static bool
files_pass_temp_file_limit(PlannerInfo *root, Path *input, int nkeys, bool bounded)
{
	double		kept = kept_rows(root, input, bounded);
	double		runs,
				merge_order;

	if (temp_file_limit < 0 || !spills(root, input, nkeys, bounded))
		return false;
	if (gpusort_spill_to_gpu && !bounded && gpu_expected())
		return false;
	external_sort_shape(input, nkeys, kept, &runs, &merge_order);
	/* beyond one level of runs, a level's merged run and its inputs
	 * coexist on disk */
	return disk_pages(input, nkeys, kept) *
		(runs > row_store_cascade_order((Size) work_mem * 1024) ? 2.0 : 1.0) * BLCKSZ >
		(double) temp_file_limit * 1024.0;
}

/*
 * Will GpuSort read the input's table pages itself (table_pages.c)? A Seq
 * Scan (or Parallel Seq Scan) of a table, returning some of its columns
 * and constants (table_pages_column(); its filter, if any, is evaluated
 * as the scan would). The executor checks the rest (the table's access
 * method, a parallel scan's shared memory, keys that are columns) when it
 * runs.
 */
static bool
reads_table_pages(PlannerInfo *root, Path *input)
{
	RelOptInfo *rel = input->parent;
	ListCell   *lc;

	if (!gpusort_read_table_pages || input->pathtype != T_SeqScan ||
		input->param_info != NULL || rel->reloptkind != RELOPT_BASEREL ||
		planner_rt_fetch(rel->relid, root)->rtekind != RTE_RELATION)
		return false;
	foreach(lc, input->pathtarget->exprs)
		if (table_pages_column((Expr *) lfirst(lc), rel->relid) == TABLE_PAGES_NOT_A_COLUMN)
			return false;
	return true;
}

/*
 * Every row is read and its keys encoded. Unbounded, every row is also
 * copied, sorted and emitted (per_row). Under a known bound only the rows
 * that beat the threshold so far are: about bound * (1 + ln(rows / bound))
 * of rows in random order; and the rest cost so little that reading the
 * table pages directly matters. (An unbounded sort gains less from it,
 * 9-24% on the GPU machine, and its serial plan must still lose to the
 * parallel sort where workers do the gathering.)
 */
static void
cost_gpusort(PlannerInfo *root, CustomPath *path, Path *input, int nkeys, bool bounded,
			 bool on_gpu)
{
	double		rows = input->rows;
	double		kept = kept_rows(root, input, bounded);
	double		per_row;
	double		input_cost = input->total_cost;
	double		startup;

	/* fewer rows than gpusort.gpu_min_elements are sorted on the CPU (a
	 * small bound's, say, in each process under a Gather Merge) */
	if (kept < gpusort_gpu_min_elements)
		on_gpu = false;
	per_row = (on_gpu ? GPU_COST_PER_ROW : CPU_COST_PER_ROW) * cpu_operator_cost;
	if (kept < rows)
	{
		double		copied = Min(rows, kept * (1.0 + log(rows / Max(kept, 1.0))));

		if (reads_table_pages(root, input))
			input_cost -= (1.0 - TABLE_PAGES_ROW_SHARE) * cpu_tuple_cost * rows;
		startup = input_cost + rows * BOUNDED_COST_PER_ROW * cpu_operator_cost +
			copied * per_row;
	}
	else
		startup = input_cost + rows * per_row;
	if (on_gpu)
		startup += GPU_STARTUP_COST;

	path->path.rows = rows;
	if (spills(root, input, nkeys, bounded))
	{
		double		pages = disk_pages(input, nkeys, kept);
		double		runs,
					merge_order,
					passes;

		external_sort_shape(input, nkeys, kept, &runs, &merge_order);
		passes = runs <= merge_order ? 1.0 : ceil(log(runs) / log(merge_order));

		startup += 2.0 * pages * passes * (seq_page_cost * 0.75 + random_page_cost * 0.25);
		startup += kept * passes * log2(Min(runs, merge_order) + 1.0) * cpu_operator_cost;
		if (on_gpu)
			startup += (runs - 1.0) * GPU_STARTUP_COST;
	}
	path->path.startup_cost = startup;
	path->path.total_cost = startup + rows * cpu_operator_cost;
	gpusort_path_inherit_disabled(&path->path, input);
}

/* Does the expression hold a Var with varno 0 (a set operation's output)?
 * EXPLAIN cannot name those from our node, so such sorts stay PostgreSQL's. */
static bool
has_setop_output_var(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varno == 0;
	return expression_tree_walker(node, has_setop_output_var, context);
}

/*
 * Is this ordered path one that sorts (as opposed to presorted input)? A
 * Gather Merge over partial paths that sort counts too: PostgreSQL builds it
 * for the ordered rel before this hook runs.
 */
static bool
path_sorts(Path *path)
{
	if (IsA(path, ProjectionPath))
		return path_sorts(((ProjectionPath *) path)->subpath);
	if (IsA(path, GatherMergePath))
		return path_sorts(((GatherMergePath *) path)->subpath);
	if (IsA(path, MergeAppendPath))
	{
		/* PostgreSQL adds a Sort below for each input not in order */
		ListCell   *lc;

		foreach(lc, ((MergeAppendPath *) path)->subpaths)
		{
			Path	   *subpath = (Path *) lfirst(lc);

			if (!pathkeys_contained_in(path->pathkeys, subpath->pathkeys) || path_sorts(subpath))
				return true;
		}
		return false;
	}
	return IsA(path, SortPath) || IsA(path, IncrementalSortPath);
}

/* Removes the paths that sort, keeping any that get the order for free. */
static void
remove_sorting_paths(RelOptInfo *rel)
{
	List	   *kept = NIL;
	ListCell   *lc;

	foreach(lc, rel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);

		if (!path_sorts(path))
			kept = lappend(kept, path);
	}
	rel->pathlist = kept;
	rel->cheapest_total_path = NULL;
	rel->cheapest_startup_path = NULL;
}

/*
 * The LIMIT count and OFFSET (NULL when absent) that may bound this sort,
 * or NIL where a bound would lose rows: FETCH FIRST ... WITH TIES (the
 * Limit reads past its count), row locks (LockRows between the Limit and
 * the sort may skip locked rows), set-returning functions in the target
 * list (a ProjectSet between them turns a row into any number of rows),
 * and volatile limit expressions (the node's value could differ from the
 * Limit's). LIMIT ALL and LIMIT NULL bound nothing.
 */
static List *
limit_expressions(PlannerInfo *root)
{
	Query	   *parse = root->parse;
	Node	   *count = parse->limitCount;

	if (count == NULL || parse->limitOption != LIMIT_OPTION_COUNT)
		return NIL;
	if (parse->rowMarks != NIL || root->rowMarks != NIL || parse->hasTargetSRFs)
		return NIL;
	if (IsA(count, Const) && ((Const *) count)->constisnull)
		return NIL;
	if (contain_volatile_functions(count) ||
		contain_volatile_functions(parse->limitOffset))
		return NIL;
	return list_make2(copyObject(count), copyObject(parse->limitOffset));
}

/* Is there a Param other than the query's own ($1, which parallel workers
 * get too), such as an initplan's output? */
static bool
has_non_extern_param(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return ((Param *) node)->paramkind != PARAM_EXTERN;
	return expression_tree_walker(node, has_non_extern_param, context);
}

/*
 * The bound of a partial GpuSort, evaluated in each parallel process: the
 * LIMIT's expressions where every process can evaluate them (constants,
 * the query's parameters, parallel-safe functions), else NIL (no bound).
 */
static List *
partial_limit_expressions(PlannerInfo *root)
{
	List	   *exprs = limit_expressions(root);

	if (exprs == NIL || has_non_extern_param((Node *) exprs, NULL) ||
		!is_parallel_safe(root, (Node *) exprs))
		return NIL;
	return exprs;
}

/*
 * The path GpuSort reads. Not input_rel->cheapest_total_path: PostgreSQL's
 * create_ordered_paths() has already run, it hands the input rel's
 * presorted paths to the ordered rel as they are, and add_path() frees a
 * path it rejects or later drops, so such a path (the cheapest one among
 * them) may be gone while the input rel still points at it. Only paths
 * reached from the ordered rel's live paths are safe: the input of each
 * Sort or Incremental Sort there (PostgreSQL sorts the cheapest input path
 * whenever that one is not presorted), and partial paths, which never go
 * to the ordered rel as they are; a Gather over the cheapest of those is
 * the input when no full sort is left (Gather Merge beat it).
 */
static Path *
input_to_sort(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *ordered_rel)
{
	Path	   *best = NULL;
	ListCell   *lc;

	foreach(lc, ordered_rel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);
		Path	   *candidate = NULL;

		if (IsA(path, ProjectionPath))
			path = ((ProjectionPath *) path)->subpath;
		if (IsA(path, SortPath))
			candidate = ((SortPath *) path)->subpath;
		else if (IsA(path, IncrementalSortPath))
			candidate = ((IncrementalSortPath *) path)->spath.subpath;
		if (candidate != NULL && candidate->parent == input_rel &&
			(best == NULL || gpusort_path_cheaper(candidate, best)))
			best = candidate;
	}
	if (best == NULL && input_rel->partial_pathlist != NIL)
	{
		Path	   *partial = (Path *) linitial(input_rel->partial_pathlist);

		best = (Path *) create_gather_path(root, input_rel, partial, partial->pathtarget,
										   NULL, NULL);
	}
	return best;
}

/*
 * A GpuSort path over `input` for the ordered rel, or NULL when its keys
 * are not GpuSort's. A partial one (over a partial path, for a Gather Merge
 * above it) runs in each parallel worker and the leader over their share of
 * the rows: it is never approximate (the approximate guarantee is about the
 * whole result, and Gather Merge needs each input in exact order), and
 * under a LIMIT each process keeps the best LIMIT + OFFSET rows of its
 * share, as PostgreSQL's partial Sorts do. A partition's (child: its rel,
 * for a Merge Append above) is exact too, and bounded like the whole.
 * one_resolver: a parallel sort's share, whose ties the merge resolves
 * (analyze_sort_keys()).
 */
static CustomPath *
make_gpusort_path(PlannerInfo *root, RelOptInfo *output_rel, Path *input, bool partial,
				  bool one_resolver, RelOptInfo *child, bool *approximate)
{
	GpuSortPlanInfo info;
	List	   *key_exprs;
	List	   *limit_exprs;
	CustomPath *path;

	*approximate = false;
	if (input == NULL || input->param_info != NULL)
		return NULL;
	if (has_setop_output_var((Node *) input->pathtarget->exprs, NULL))
		return NULL;
	if (!analyze_sort_keys(root, input->pathtarget, child ? child->relids : NULL,
						   one_resolver, &info, &key_exprs))
		return NULL;
	info.approx_eligible = !partial && child == NULL && approximation_eligible(root, &info);
	/* the approximate opt-in applies at any size; a partition's sort
	 * counts as part of the whole, whose size the caller checked */
	*approximate = approximation_wanted(&info);
	if (!*approximate && child == NULL &&
		input->rows * (partial ? Max(input->parallel_workers, 1) : 1) < gpusort_min_rows)
		return NULL;
	info.algorithm = gpusort_algorithm;
	limit_exprs = partial ? partial_limit_expressions(root) : limit_expressions(root);
	info.bounded = limit_exprs != NIL;
	if (files_pass_temp_file_limit(root, input, info.nkeys, info.bounded))
		return NULL;

	path = makeNode(CustomPath);
	path->path.pathtype = T_CustomScan;
	path->path.parent = child ? child : output_rel;
	path->path.pathtarget = input->pathtarget;
	path->path.param_info = NULL;
	/* partial: parallel-aware, only for the dynamic shared memory its
	 * workers' EXPLAIN reports go to (worker_reports.c) */
	path->path.parallel_aware = partial;
	path->path.parallel_safe = partial;
	path->path.parallel_workers = partial ? input->parallel_workers : 0;
	/* claims SQL order, also when approximate: the user opted in, and only
	 * the client and a Limit sit above it */
	path->path.pathkeys = root->sort_pathkeys;
	path->flags = CUSTOMPATH_SUPPORT_BACKWARD_SCAN | CUSTOMPATH_SUPPORT_MARK_RESTORE;
	path->custom_paths = list_make1(input);
	path->custom_private = list_make3(gpusort_plan_info_to_list(&info), key_exprs,
									  limit_exprs);
	path->methods = &gpusort_path_methods;
	cost_gpusort(root, path, input, info.nkeys, info.bounded, gpu_expected());
	return path;
}

/* The query's final target may hold columns computed after the sort
 * (volatile or set-returning ones): then a projection goes on top. */
static Path *
project_to_final_target(PlannerInfo *root, RelOptInfo *output_rel, Path *path)
{
	PathTarget *final_target = root->upper_targets[UPPERREL_ORDERED];

	if (final_target != NULL && final_target != path->pathtarget &&
		!equal(final_target->exprs, path->pathtarget->exprs))
		return (Path *) create_projection_path(root, output_rel, path, final_target);
	return path;
}

/*
 * Where parallel workers could read the input, a serial GpuSort that
 * spills (gathering, writing runs and merging on one CPU core) or that is
 * bounded (reading every row on one core to keep a few) lost to
 * PostgreSQL's parallel plans on the GPU machine (bench/README.md), whose
 * costs for Gather Merge are high enough that the planner would pick it.
 * There only the partial GpuSorts compete. The approximate opt-in is not
 * a matter of speed, and gpusort.min_rows = 0 (tests) wants GpuSort
 * wherever it can run.
 */
static bool
serial_loses_to_parallel(PlannerInfo *root, CustomPath *path, bool parallel_possible)
{
	Path	   *input = (Path *) linitial(path->custom_paths);
	int			nkeys = list_length(lsecond(path->custom_private));
	bool		bounded = lthird(path->custom_private) != NIL;

	return parallel_possible && gpusort_min_rows > 0 &&
		(bounded || spills(root, input, nkeys, bounded));
}

/*
 * Over a partitioned table (an Append of its partitions, or of a UNION
 * ALL's members), a Merge Append of one GpuSort per partition, as
 * PostgreSQL puts one Sort under a Merge Append per partition: each sort
 * is smaller (it may fit work_mem where the whole would not) and under a
 * LIMIT each is bounded by LIMIT + OFFSET. Never approximate. NULL where
 * the input is no such Append or a partition's sort is not GpuSort's.
 */
static Path *
make_partitionwise_path(PlannerInfo *root, RelOptInfo *input_rel, Path *input,
						bool parallel_possible)
{
	List	   *children = NIL;
	ListCell   *lc;

	if (input == NULL || !IsA(input, AppendPath) || input->parallel_aware ||
		input->param_info != NULL || list_length(((AppendPath *) input)->subpaths) < 2)
		return NULL;
	foreach(lc, ((AppendPath *) input)->subpaths)
	{
		Path	   *subpath = (Path *) lfirst(lc);
		CustomPath *child;
		bool		unused;

		if (subpath->parallel_aware)
			return NULL;
		child = make_gpusort_path(root, input_rel, subpath, false, false, subpath->parent, &unused);
		if (child == NULL || serial_loses_to_parallel(root, child, parallel_possible))
			return NULL;
		children = lappend(children, child);
	}
	return (Path *) create_merge_append_path(root, input_rel, children, root->sort_pathkeys,
											 NULL);
}

/*
 * A parallel sort (parallel_sort.c): a GpuSort merging the shares, over a
 * Gather of GpuSorts that each sort one process's share of the partial
 * input into a temporary file. The Gather passes no rows (hence its one
 * row): the leader merges the files on their encoded keys, one
 * comparison per row and level of its heap, reading every page once.
 * Exact, and unbounded: it is offered only where no bound is known when
 * planning, and under a LIMIT $1 (a generic plan) the Limit above stops
 * reading the merged rows.
 */
static Path *
make_parallel_sort_path(PlannerInfo *root, RelOptInfo *output_rel, Path *partial_input)
{
	CustomPath *share;
	CustomPath *merge;
	Path	   *gather;
	GpuSortPlanInfo info;
	bool		unused;
	double		one_row = 1.0;
	double		rows;
	double		shares;
	int			nkeys;

	share = make_gpusort_path(root, output_rel, partial_input, true, true, NULL, &unused);
	if (share == NULL)
		return NULL;
	nkeys = list_length(lsecond(share->custom_private));
	gpusort_plan_info_from_list(linitial(share->custom_private), &info);
	info.role = GPUSORT_SORT_SHARE;
	info.bounded = false;		/* (a LIMIT $1 would have bounded it) */
	share->custom_private = list_make3(gpusort_plan_info_to_list(&info),
									   lsecond(share->custom_private), NIL);
	share->path.parallel_aware = true;
	/*
	 * As many processes as the settings allow: PostgreSQL sizes a scan's
	 * workers by the table's size, for a scan's work per row; a share's
	 * (copying, encoding, sorting, writing each row) is several times
	 * that, and a parallel scan hands out blocks to as many as come.
	 */
	share->path.parallel_workers = Max(partial_input->parallel_workers,
									   max_parallel_workers_per_gather);
	share->path.pathkeys = NIL;
	share->path.startup_cost += disk_pages(partial_input, nkeys, partial_input->rows) *
		seq_page_cost;
	share->path.total_cost = share->path.startup_cost;
	share->path.rows = 1.0;
	gather = (Path *) create_gather_path(root, output_rel, &share->path, share->path.pathtarget,
										 NULL, &one_row);

	info.role = GPUSORT_MERGE_SHARES;
	rows = partial_input->rows * partial_input->parallel_workers;
	shares = share->path.parallel_workers + (parallel_leader_participation ? 1 : 0);
	merge = makeNode(CustomPath);
	merge->path.pathtype = T_CustomScan;
	merge->path.parent = output_rel;
	merge->path.pathtarget = share->path.pathtarget;
	merge->path.parallel_aware = false;
	merge->path.parallel_safe = false;
	merge->path.parallel_workers = 0;
	merge->path.pathkeys = root->sort_pathkeys;
	merge->path.rows = rows;
	merge->path.startup_cost = gather->total_cost +
		rows * log2(shares + 1.0) * cpu_operator_cost +
		disk_pages(partial_input, nkeys, rows) * seq_page_cost;
	merge->path.total_cost = merge->path.startup_cost + rows * cpu_operator_cost;
	gpusort_path_inherit_disabled(&merge->path, gather);
	merge->flags = CUSTOMPATH_SUPPORT_BACKWARD_SCAN | CUSTOMPATH_SUPPORT_MARK_RESTORE;
	merge->custom_paths = list_make1(gather);
	merge->custom_private = list_make3(gpusort_plan_info_to_list(&info),
									   lsecond(share->custom_private), NIL);
	merge->methods = &gpusort_path_methods;
	return &merge->path;
}

/*
 * Is the input a Citus coordinator's scan of its workers' results? Citus's
 * custom scan claims 100000 rows whatever the truth, so its row count is
 * no ground for costs.
 */
static bool
reads_citus_results(Path *path)
{
	if (path != NULL && IsA(path, ProjectionPath))
		path = ((ProjectionPath *) path)->subpath;
	return path != NULL && IsA(path, CustomPath) &&
		strncmp(((CustomPath *) path)->methods->CustomName, "Citus", 5) == 0;
}

/*
 * A subquery's ORDER BY with no LIMIT of its own, whose rows the level above
 * reads only up to its LIMIT: set_subquery_pathlist() then passes that
 * count down as tuple_fraction (>= 1: a number of rows), and at run time
 * the Limit hands it through the subquery's scan to a Sort, or to the Sorts
 * under a Gather Merge (ExecSetTupleBound), which keep only that many rows
 * (a top-N heapsort). PostgreSQL 15 hands it to no custom scan, so GpuSort
 * would sort every row. Does the heapsort with that bound cost less than
 * GpuSort's full sort? Then GpuSort stays out. (Where a filter on the
 * subquery's scan keeps the bound from the Sort, both sort every row, and
 * the Sort is only what PostgreSQL would have run without gpusort.)
 */
static bool
outer_limit_favours_postgres(PlannerInfo *root, Path *input, CustomPath *full)
{
	Path		top_n;

	if (root->parent_root == NULL || root->limit_tuples >= 0 || root->tuple_fraction < 1.0 ||
		full == NULL || gpusort_min_rows == 0)
		return false;
	gpusort_cost_sort(&top_n, root, root->sort_pathkeys, input, work_mem,
					  root->tuple_fraction);
	return gpusort_path_cheaper(&top_n, &full->path);
}

static void
add_gpusort_path(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *output_rel)
{
	CustomPath *full;
	CustomPath *partial = NULL;
	Path	   *parallel_sort = NULL;
	Path	   *partitionwise = NULL;
	Path	   *input = input_to_sort(root, input_rel, output_rel);
	bool		parallel_possible = output_rel->consider_parallel &&
		input_rel->partial_pathlist != NIL;
	bool		approximate;
	bool		unused;

	/*
	 * On a Citus coordinator the workers' results arrive in any number. Under
	 * a LIMIT each worker sends at most LIMIT + OFFSET rows per shard, few
	 * enough for PostgreSQL's top-N heapsort; a full ORDER BY gets every
	 * row, so GpuSort takes it whatever the claimed count, and chooses
	 * between the GPU and the CPU by the real count when it runs
	 * (gpusort.gpu_min_elements). gpusort.min_rows = 0 (tests) keeps both.
	 */
	bool		citus_merge = reads_citus_results(input) && gpusort_min_rows > 0;

	if (citus_merge && root->parse->limitCount != NULL)
		return;
	full = make_gpusort_path(root, output_rel, input, false, false, NULL, &approximate);
	if (outer_limit_favours_postgres(root, input, full))
		return;
	if (full != NULL && !approximate)
		partitionwise = make_partitionwise_path(root, input_rel, input, parallel_possible);

	/*
	 * Gather Merge over partial GpuSorts, as PostgreSQL builds Gather Merge
	 * over partial Sorts: each parallel process reads, encodes and sorts
	 * its share of the rows (through the GPU service), the leader merges.
	 * Under a LIMIT each process keeps its share's best rows. Not for the
	 * approximate opt-in, nor where the partial input comes in order
	 * already. The parallel sort not under a known bound: it merges
	 * every share's rows.
	 */
	if (!approximate && parallel_possible)
	{
		Path	   *cheapest_partial = (Path *) linitial(input_rel->partial_pathlist);

		if (!pathkeys_contained_in(root->sort_pathkeys, cheapest_partial->pathkeys))
		{
			partial = make_gpusort_path(root, output_rel, cheapest_partial, true, false, NULL,
										&unused);
			if (partial != NULL && root->limit_tuples < 0)
				parallel_sort = make_parallel_sort_path(root, output_rel, cheapest_partial);
		}
	}
	if (full != NULL && !approximate && serial_loses_to_parallel(root, full, parallel_possible))
		full = NULL;

	if (full == NULL && partial == NULL && partitionwise == NULL)
		return;

	/*
	 * An explicit opt-in (approximate order) or gpusort.min_rows = 0 (tests)
	 * means GpuSort instead of a Sort whatever the costs say; input that
	 * comes in order already (an index) may still win, with no sort at all.
	 */
	if (approximate || gpusort_min_rows == 0 || (citus_merge && full != NULL))
		remove_sorting_paths(output_rel);
	if (full != NULL)
		add_path(output_rel, project_to_final_target(root, output_rel, &full->path));
	if (partitionwise != NULL)
		add_path(output_rel, project_to_final_target(root, output_rel, partitionwise));
	if (parallel_sort != NULL)
		add_path(output_rel, project_to_final_target(root, output_rel, parallel_sort));
	if (partial != NULL)
	{
		Path	   *partial_input = (Path *) linitial(partial->custom_paths);
		double		total_rows = partial_input->rows * partial_input->parallel_workers;
		Path	   *gather = (Path *) create_gather_merge_path(root, output_rel, &partial->path,
															  partial->path.pathtarget,
															  root->sort_pathkeys, NULL,
															  &total_rows);

		add_path(output_rel, project_to_final_target(root, output_rel, gather));
	}
}

/*
 * Should GpuSort replace a Sort of a finished plan (sort_sites.c)? Its
 * input: rows, width and total cost as planned; sort_cost is what
 * PostgreSQL expects to pay: a Sort's startup cost (until its first row,
 * which GpuSort's startup cost is set against), or with `total` an
 * Incremental Sort's total cost (its rows come a group at a time, set
 * against all of GpuSort's). Unbounded, by the same cost model as the
 * ORDER BY's paths; never where the runs would pass temp_file_limit. With
 * gpusort.min_rows = 0 (tests) wherever it can.
 */
/* A finished plan's input as the cost functions take it: a Path with its
 * rows, width and total cost, in *input and *target. */
static void
plan_input_path(Path *input, PathTarget *target, double input_rows, int input_width,
				double input_total_cost)
{
	memset(input, 0, sizeof(*input));
	memset(target, 0, sizeof(*target));
	input->type = T_Path;
	input->pathtype = T_Sort;	/* anything but a Seq Scan: see reads_table_pages() */
	input->pathtarget = target;
	target->width = input_width;
	input->rows = Max(input_rows, 1.0);
	input->total_cost = input_total_cost;
}

/* PostgreSQL's startup cost of a Sort of all of a finished plan's input
 * (its rows, width and total cost) in work_mem. */
double
gpusort_postgresql_sort_cost(double input_rows, int input_width, double input_total_cost)
{
	Path		input;
	PathTarget	target;
	Path		sort;

	plan_input_path(&input, &target, input_rows, input_width, input_total_cost);
	memset(&sort, 0, sizeof(sort));
	gpusort_cost_sort(&sort, NULL, NIL, &input, work_mem, -1.0);
	return sort.startup_cost;
}

bool
gpusort_replaces_sort(double input_rows, int input_width, double input_total_cost,
					  int nkeys, double sort_cost, bool total)
{
	Path		input;
	PathTarget	target;
	CustomPath	path;

	plan_input_path(&input, &target, input_rows, input_width, input_total_cost);
	memset(&path, 0, sizeof(path));
	/* root is only consulted for a bound, and these sorts have none */
	if (files_pass_temp_file_limit(NULL, &input, nkeys, false))
		return false;
	if (gpusort_min_rows == 0)
		return true;
	if (input_rows < gpusort_min_rows)
		return false;
	cost_gpusort(NULL, &path, &input, nkeys, false, gpu_expected());
	return (total ? path.path.total_cost : path.path.startup_cost) < sort_cost;
}

static void
gpusort_upper_paths(PlannerInfo *root, UpperRelationKind stage,
					RelOptInfo *input_rel, RelOptInfo *output_rel, void *extra)
{
	if (previous_upper_paths_hook)
		previous_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (stage == UPPERREL_ORDERED && gpusort_enabled && root->sort_pathkeys != NIL)
		add_gpusort_path(root, input_rel, output_rel);
}

/*
 * The CustomScan reads the child's tuples as its scan tuples
 * (custom_scan_tlist = the child's target list) and returns them, so its own
 * target list, which setrefs.c rewrites against custom_scan_tlist, is the
 * path's. The keys become attribute numbers in the child's output.
 */
static Plan *
plan_gpusort_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *child = linitial(custom_plans);
	List	   *key_exprs = lsecond(best_path->custom_private);
	GpuSortPlanInfo info;
	ListCell   *lc;
	int			k = 0;

	gpusort_plan_info_from_list(linitial(best_path->custom_private), &info);
	foreach(lc, key_exprs)
	{
		TargetEntry *tle = tlist_member((Expr *) lfirst(lc), child->targetlist);

		if (tle == NULL)
			elog(ERROR, "gpusort: sort key not found in the input's target list");
		info.key_attno[k++] = tle->resno;
	}

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	/* the LIMIT count and OFFSET, or NIL: setrefs fixes their Params */
	cscan->custom_exprs = lthird(best_path->custom_private);
	cscan->custom_private = gpusort_plan_info_to_list(&info);
	cscan->custom_scan_tlist = copyObject(child->targetlist);
	cscan->custom_relids = NULL;
	cscan->methods = &gpusort_scan_methods;
	return &cscan->scan.plan;
}

void
gpusort_planner_init(void)
{
	previous_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = gpusort_upper_paths;
}
