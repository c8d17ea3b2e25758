/*
 * tie_resolver.h — rows whose encoded keys tie while their values may not:
 * put in order by PostgreSQL's own comparator.
 *
 * A string key is sorted on a prefix of its bytes (types.c); two rows
 * whose encoded keys are equal up to and including such a prefix, where
 * the prefix does not determine the value, are not yet in order, whatever
 * their later keys' words say (compare_keys_tied() in row_store_int.h).
 * Wherever the row store finds such a tie (a group of rows after a sort
 * in memory, two merge inputs, a row and a bounded sort's threshold) the
 * comparator decides: it asks the resolver, which compares the rows' values of
 * every sort key with the btree comparator of the key's sort operator and
 * collation (SortSupport), as PostgreSQL's sort does.
 */
#ifndef GPUSORT_TIE_RESOLVER_H
#define GPUSORT_TIE_RESOLVER_H

#include "gpusort.h"

#include "executor/tuptable.h"
#include "utils/sortsupport.h"
#include "utils/tuplesort.h"

typedef struct TieResolver
{
	int			nkeys;			/* SQL sort keys (not engine columns) */
	AttrNumber	attno[GS_MAX_KEY_COLUMNS];	/* in the stored tuples */
	SortSupportData sort[GS_MAX_KEY_COLUMNS];
	/* the same keys as tuplesort_begin_heap() takes them */
	Oid			sort_operator[GS_MAX_KEY_COLUMNS];
	Oid			collation[GS_MAX_KEY_COLUMNS];
	bool		nulls_first[GS_MAX_KEY_COLUMNS];
	TupleDesc	desc;
	AttrNumber	last_attno;
	/* engine columns that hold the last word of a prefix key: its low
	 * byte is 1 where the prefix may not determine the value */
	bool		is_flag[GS_MAX_KEY_COLUMNS];
	/*
	 * The first prefix key (engine columns before it are exact), where its
	 * type can encode its value wider than the plan's prefix: a group's
	 * rows, equal on the plan's words, are first ordered by the next words
	 * of that wider prefix (ext_type, from word ext_first on), and only
	 * those equal there as well go to the comparator.
	 */
	int			ext_key;		/* SQL key, or -1 */
	int			ext_column;		/* its first engine column */
	const GpuSortType *ext_type;
	int			ext_first;
	bool		group_ext;		/* the group being sorted has them */
	TupleTableSlot *slot_a;
	TupleTableSlot *slot_b;
	MemoryContext context;		/* for a group's values while it is sorted */
	/* the arrays a group is sorted in, kept for the next (in `parent`) */
	MemoryContext parent;
	void	   *tied_rows;
	Datum	   *tied_values;
	bool	   *tied_nulls;
	size_t		tied_capacity;
	/* for EXPLAIN ANALYZE */
	int64		groups;			/* groups of tied rows sorted */
	int64		rows;			/* rows in them */
	int64		comparisons;	/* rows compared by the merges */
} TieResolver;

extern TieResolver *tie_resolver_create(const GpuSortPlanInfo *plan, TupleDesc desc,
										MemoryContext context);
extern void tie_resolver_narrow(TieResolver *resolver, int column, int words);
extern int	tie_resolver_compare(TieResolver *resolver, MinimalTuple a, MinimalTuple b);
extern void tie_resolver_sort(TieResolver *resolver, MinimalTuple const *tuples,
							  uint32_t *rows, size_t n);
extern Tuplesortstate *tie_resolver_begin_tuplesort(TieResolver *resolver, int work_mem_kb);

#endif							/* GPUSORT_TIE_RESOLVER_H */
