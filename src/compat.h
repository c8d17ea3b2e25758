/*
 * compat.h — the one place where gpusort's PostgreSQL glue meets the
 * differences between the server majors it supports, 15 and 18.
 *
 * Every PG_VERSION_NUM test of the tree is here: the .c files call the
 * wrappers and macros below and read the same on every major. Add a
 * difference here, named by what it does, not by the version that
 * introduced it; when 15 goes, the 15 branches go and the wrappers can be
 * inlined.
 */
#ifndef GPUSORT_COMPAT_H
#define GPUSORT_COMPAT_H

#include "postgres.h"

#include "access/heapam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "access/syncscan.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/pathnodes.h"
#include "optimizer/cost.h"
#include "storage/bufmgr.h"
#include "utils/pg_locale.h"
#if PG_VERSION_NUM >= 180000
/* EXPLAIN's output functions and ExplainState left commands/explain.h */
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#endif

#if PG_VERSION_NUM < 150000 || (PG_VERSION_NUM >= 160000 && PG_VERSION_NUM < 180000) || \
	PG_VERSION_NUM >= 190000
#error "gpusort supports PostgreSQL 15 and 18"
#endif

/* ---- the module ---- */

/*
 * The module's magic block. 18's can name the module and its version
 * (GPUSORT_VERSION, META.json's, from the Makefile), which
 * pg_get_loaded_modules() shows: which gpusort a backend has loaded.
 */
#if PG_VERSION_NUM >= 180000
#define GPUSORT_MODULE_MAGIC PG_MODULE_MAGIC_EXT(.name = "gpusort", .version = GPUSORT_VERSION)
#else
#define GPUSORT_MODULE_MAGIC PG_MODULE_MAGIC
#endif

/* ---- executor hooks ---- */

/*
 * ExecutorRun lost its execute_once argument in 18 (a portal's plan now
 * runs once or is run again from the start). GPUSORT_EXECUTOR_RUN_ARGS
 * declares a hook's parameters, GPUSORT_EXECUTOR_RUN_PASS passes them on.
 */
#if PG_VERSION_NUM >= 180000
#define GPUSORT_EXECUTOR_RUN_ARGS \
	QueryDesc *query, ScanDirection direction, uint64 count
#define GPUSORT_EXECUTOR_RUN_PASS query, direction, count
#else
#define GPUSORT_EXECUTOR_RUN_ARGS \
	QueryDesc *query, ScanDirection direction, uint64 count, bool execute_once
#define GPUSORT_EXECUTOR_RUN_PASS query, direction, count, execute_once
#endif

/* ---- planner ---- */

/*
 * The btree strategy of a pathkey's order: BTLessStrategyNumber
 * (ascending), BTGreaterStrategyNumber (descending), or 0 for any other.
 * 18 keeps a CompareType (pk_cmptype) where 15 kept the btree strategy
 * number (pk_strategy); for a btree operator family the two say the same.
 */
static inline int
gpusort_pathkey_strategy(const PathKey *pathkey)
{
#if PG_VERSION_NUM >= 180000
	if (pathkey->pk_cmptype == COMPARE_LT)
		return BTLessStrategyNumber;
	if (pathkey->pk_cmptype == COMPARE_GT)
		return BTGreaterStrategyNumber;
	return 0;
#else
	if (pathkey->pk_strategy == BTLessStrategyNumber ||
		pathkey->pk_strategy == BTGreaterStrategyNumber)
		return pathkey->pk_strategy;
	return 0;
#endif
}

/*
 * Since 17 a path disabled by a setting (enable_seqscan = off, ...) is not
 * made dearer by disable_cost: it counts its disabled nodes, and a path
 * with fewer always wins. A path over `input` inherits its count, and
 * comparing two paths' total costs compares the counts first; on 15 the
 * disable_cost rides in the input's cost and the total costs say it all.
 */
static inline void
gpusort_path_inherit_disabled(Path *path, const Path *input)
{
#if PG_VERSION_NUM >= 170000
	path->disabled_nodes = input->disabled_nodes;
#endif
}

/*
 * Since 17 a plan node counts the disabled nodes at and below it, and
 * EXPLAIN says "Disabled: true" where a node counts more than its inputs
 * do; for a CustomScan it counts only custom_plans as inputs. A GpuSort
 * that keeps its input in lefttree (sort_sites.c) takes its input's count
 * off its own and its ancestors' (the count is EXPLAIN's alone once the
 * plan is made). On 15 there is no count: 0, and nothing to take off.
 */
static inline int
gpusort_plan_disabled_nodes(const Plan *plan)
{
#if PG_VERSION_NUM >= 170000
	return plan->disabled_nodes;
#else
	return 0;
#endif
}

static inline void
gpusort_plan_uncount_disabled_nodes(Plan *plan, int count)
{
#if PG_VERSION_NUM >= 170000
	plan->disabled_nodes -= count;
#endif
}

/*
 * The range table entries EXPLAIN counts when it decides whether to name
 * a column with its relation (a sort key "t.k" or "k"): 18 leaves out the
 * RTE_GROUP entry of a grouped query, as its Sort nodes do.
 */
static inline int
gpusort_explain_rtable_size(const ExplainState *es)
{
#if PG_VERSION_NUM >= 180000
	return es->rtable_size;
#else
	return list_length(es->rtable);
#endif
}

static inline bool
gpusort_path_cheaper(const Path *a, const Path *b)
{
#if PG_VERSION_NUM >= 170000
	if (a->disabled_nodes != b->disabled_nodes)
		return a->disabled_nodes < b->disabled_nodes;
#endif
	return a->total_cost < b->total_cost;
}

/* PostgreSQL's cost of sorting `input` (a Sort path's), into `sort`. */
static inline void
gpusort_cost_sort(Path *sort, PlannerInfo *root, List *pathkeys, const Path *input,
				  int sort_mem, double limit_tuples)
{
#if PG_VERSION_NUM >= 170000
	cost_sort(sort, root, pathkeys, input->disabled_nodes, input->total_cost, input->rows,
			  input->pathtarget->width, 0.0, sort_mem, limit_tuples);
#else
	cost_sort(sort, root, pathkeys, input->total_cost, input->rows,
			  input->pathtarget->width, 0.0, sort_mem, limit_tuples);
#endif
}

/* ---- EXPLAIN options of gpusort's own ---- */

/*
 * 18 lets an extension add EXPLAIN options. gpusort adds one, the boolean
 * GPUSORT_DETAILS: gpusort.explain_details for one EXPLAIN, as in
 * EXPLAIN (ANALYZE, GPUSORT_DETAILS off). _PG_init registers it, so it
 * exists where the module is loaded; 15 has no such options. Its value
 * lives in the EXPLAIN's state under the extension name "gpusort" (the id
 * is looked up each time: GetExplainExtensionId() returns the same one).
 */
#if PG_VERSION_NUM >= 180000
static inline void
gpusort_explain_details_option(ExplainState *es, DefElem *option, ParseState *pstate)
{
	bool	   *details = palloc(sizeof(bool));

	*details = defGetBoolean(option);
	SetExplainExtensionState(es, GetExplainExtensionId("gpusort"), details);
}
#endif

static inline void
gpusort_explain_options_init(void)
{
#if PG_VERSION_NUM >= 180000
	RegisterExtensionExplainOption("gpusort_details", gpusort_explain_details_option);
#endif
}

/* Whether this EXPLAIN shows the details: the option where given, else `setting`. */
static inline bool
gpusort_explain_details_wanted(ExplainState *es, bool setting)
{
#if PG_VERSION_NUM >= 180000
	bool	   *details = GetExplainExtensionState(es, GetExplainExtensionId("gpusort"));

	if (details != NULL)
		return *details;
#endif
	return setting;
}

/* ---- reading a heap table's pages (table_pages.c) ---- */

/*
 * Reads the next page of a heap scan in page-at-a-time mode, as the scan
 * itself would, and lists its visible tuples in rs_vistuples/rs_ntuples;
 * the page is pinned in rs_cbuf, its number in rs_cblock. False at the end
 * of the scan. A scan alone starts where a synchronized scan of the table
 * stands and reports where it is; a parallel scan's pages are those it
 * hands this process.
 *
 * 15: heapgetpage() reads a given block; the block order is the scan's
 * (heapgettup_pagemode's, which is static) and is followed here.
 * 18: the scan reads through its read stream (prefetching, asynchronous
 * I/O), whose callbacks order the blocks; heap_prepare_pagescan() prunes
 * the page and lists its visible tuples.
 */
#if PG_VERSION_NUM >= 170000
static inline bool
gpusort_heap_next_page(TableScanDesc scan)
{
	HeapScanDesc heap = (HeapScanDesc) scan;

	if (BufferIsValid(heap->rs_cbuf))
	{
		ReleaseBuffer(heap->rs_cbuf);
		heap->rs_cbuf = InvalidBuffer;
	}
	/* (a page of dead tuples only does not stop the scan's interrupts) */
	CHECK_FOR_INTERRUPTS();
	heap->rs_dir = ForwardScanDirection;
	heap->rs_cbuf = read_stream_next_buffer(heap->rs_read_stream, NULL);
	if (!BufferIsValid(heap->rs_cbuf))
	{
		heap->rs_cblock = InvalidBlockNumber;
		return false;
	}
	heap->rs_cblock = BufferGetBlockNumber(heap->rs_cbuf);
	heap_prepare_pagescan(scan);
	return true;
}
#else
static inline bool
gpusort_heap_next_page(TableScanDesc scan)
{
	HeapScanDesc heap = (HeapScanDesc) scan;
	BlockNumber next;

	if (scan->rs_parallel != NULL)
	{
		ParallelBlockTableScanDesc shared = (ParallelBlockTableScanDesc) scan->rs_parallel;

		if (!heap->rs_inited)
			table_block_parallelscan_startblock_init(scan->rs_rd, heap->rs_parallelworkerdata,
													 shared);
		next = table_block_parallelscan_nextpage(scan->rs_rd, heap->rs_parallelworkerdata,
												 shared);
	}
	else if (!heap->rs_inited)
		next = heap->rs_nblocks > 0 ? heap->rs_startblock : InvalidBlockNumber;
	else
	{
		next = heap->rs_cblock + 1 < heap->rs_nblocks ? heap->rs_cblock + 1 : 0;
		/* (reported before the end, so the next scan starts where this one did) */
		if (scan->rs_flags & SO_ALLOW_SYNC)
			ss_report_location(scan->rs_rd, next);
		if (next == heap->rs_startblock)
			next = InvalidBlockNumber;
	}
	heap->rs_inited = true;
	if (next == InvalidBlockNumber)
	{
		if (BufferIsValid(heap->rs_cbuf))
			ReleaseBuffer(heap->rs_cbuf);
		heap->rs_cbuf = InvalidBuffer;
		heap->rs_cblock = InvalidBlockNumber;
		return false;
	}
	heapgetpage(scan, next);
	return true;
}
#endif

/* ---- collations ---- */

/*
 * Does the collation order strings by their bytes (C, POSIX, ucs_basic,
 * and on 18 the builtin provider's C and C.UTF-8, whose code point order
 * is UTF-8's byte order)? 18 asks the collation's locale; 15 has a
 * function for it.
 */
static inline bool
gpusort_collation_is_bytewise(Oid collation)
{
	if (!OidIsValid(collation))
		return false;
#if PG_VERSION_NUM >= 180000
	return pg_newlocale_from_collation(collation)->collate_is_c;
#else
	return lc_collate_is_c(collation);
#endif
}

/*
 * ICU collations: the leading bytes of a string's ICU sort key, compared
 * as bytes, order strings as the collation compares them (the sort key's
 * byte order is ucol_strcoll's order, ICU's guarantee), though a prefix
 * may tie where the strings do not. PostgreSQL's own sort trusts them
 * the same way for its abbreviated keys. libc collations get none:
 * glibc's strxfrm() has disagreed with strcoll(), PostgreSQL distrusts it
 * (TRUST_STRXFRM) and so does gpusort (README, limitations).
 *
 * gpusort_sort_key_locale() is the collation's locale where it has such
 * keys, NULL where it has not (C and libc collations, a server built
 * without ICU, a collation that is not valid for strings).
 * gpusort_sort_key_prefix() writes the first `size` bytes of `string`'s
 * sort key to `prefix` and says how many it wrote (fewer where the key
 * is shorter). ICU fails there only where it runs out of memory, for
 * valid input; that is an error, as in PostgreSQL's abbreviated sort.
 */
#include "access/htup_details.h"
#include "catalog/pg_collation.h"
#include "mb/pg_wchar.h"
#include "utils/syscache.h"

/*
 * Is `collation` (not the default one) an ICU collation, by its catalog
 * row? Asked before its locale is made: making a libc collation's locale
 * may fail (a locale the system no longer has) where PostgreSQL's sort of
 * fewer than two rows would never have made it.
 */
static inline bool
gpusort_catalog_collation_is_icu(Oid collation)
{
	HeapTuple	tuple = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));
	bool		icu;

	if (!HeapTupleIsValid(tuple))
		return false;
	icu = ((Form_pg_collation) GETSTRUCT(tuple))->collprovider == COLLPROVIDER_ICU;
	ReleaseSysCache(tuple);
	return icu;
}

#if PG_VERSION_NUM >= 160000
static inline pg_locale_t
gpusort_sort_key_locale(Oid collation)
{
	pg_locale_t locale;

	if (!OidIsValid(collation) ||
		(collation != DEFAULT_COLLATION_OID && !gpusort_catalog_collation_is_icu(collation)))
		return NULL;
	/* the database's default locale is made when the session starts */
	locale = pg_newlocale_from_collation(collation);
	if (locale == NULL || locale->collate_is_c || locale->provider != COLLPROVIDER_ICU ||
		!pg_strxfrm_prefix_enabled(locale))
		return NULL;
	return locale;
}

static inline size_t
gpusort_sort_key_prefix(pg_locale_t locale, const char *string, size_t length,
						uint8 *prefix, size_t size)
{
	return pg_strnxfrm_prefix((char *) prefix, size, string, length, locale);
}
#else
/* 15: no prefix function; ICU's own, as 15's abbreviated keys use it */
#ifdef USE_ICU
#include <unicode/uiter.h>
#endif

static inline pg_locale_t
gpusort_sort_key_locale(Oid collation)
{
#ifdef USE_ICU
	pg_locale_t locale;

	if (!OidIsValid(collation))
		return NULL;
	if (collation == DEFAULT_COLLATION_OID)
		return default_locale.provider == COLLPROVIDER_ICU ? &default_locale : NULL;
	if (!gpusort_catalog_collation_is_icu(collation))
		return NULL;
	locale = pg_newlocale_from_collation(collation);
	if (locale == NULL || locale->provider != COLLPROVIDER_ICU)
		return NULL;
	return locale;
#else
	return NULL;
#endif
}

static inline size_t
gpusort_sort_key_prefix(pg_locale_t locale, const char *string, size_t length,
						uint8 *prefix, size_t size)
{
#ifdef USE_ICU
	UCharIterator iterator;
	uint32_t	state[2] = {0, 0};
	UErrorCode	status = U_ZERO_ERROR;
	UChar	   *converted = NULL;
	int32_t		written;

	if (GetDatabaseEncoding() == PG_UTF8)
		uiter_setUTF8(&iterator, string, (int32_t) length);
	else
	{
		int32_t		units = icu_to_uchar(&converted, string, length);

		uiter_setString(&iterator, converted, units);
	}
	written = ucol_nextSortKeyPart(locale->info.icu.ucol, &iterator, state,
								   prefix, (int32_t) size, &status);
	if (converted != NULL)
		pfree(converted);
	if (U_FAILURE(status))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("gpusort: ICU could not make a sort key: %s", u_errorName(status)),
				 errhint("ICU fails so on valid text only when it runs out of memory.")));
	return (size_t) written;
#else
	elog(ERROR, "gpusort: no ICU in this server");
	return 0;
#endif
}
#endif

#endif							/* GPUSORT_COMPAT_H */
