/*
 * tie_resolver.c — PostgreSQL's comparator for rows whose encoded keys tie.
 *
 * See tie_resolver.h. The comparator is the one PostgreSQL's sort uses
 * (PrepareSortSupportFromOrderingOp() for the key's sort operator, with
 * its collation and NULLS FIRST/LAST), so rows resolved here come in the
 * order PostgreSQL's sort gives them. Rows that are equal under it keep
 * the order they came in: GpuSort stays stable.
 */
#include "gpusort.h"

#include "executor/executor.h"
#include "utils/memutils.h"

#include "tie_resolver.h"

/* A resolver for the plan's keys, in tuples of `desc`, in `context`. */
TieResolver *
tie_resolver_create(const GpuSortPlanInfo *plan, TupleDesc desc, MemoryContext context)
{
	MemoryContext old_context = MemoryContextSwitchTo(context);
	TieResolver *resolver = palloc0(sizeof(TieResolver));

	for (int k = 0; k < plan->nkeys; k++)
	{
		const GpuSortType *type = gpusort_find_type(plan->key_type[k]);
		SortSupport sort;

		/* a prefix's flag: the last word of its key */
		resolver->is_flag[k] = type->prefix_only &&
			(k + 1 == plan->nkeys || plan->key_part[k + 1] == 0);
		if (plan->key_part[k] > 0)
			continue;			/* a later word of the same SQL key */
		sort = &resolver->sort[resolver->nkeys];
		sort->ssup_cxt = context;
		sort->ssup_collation = plan->collation[k];
		sort->ssup_nulls_first = plan->nulls_first[k];
		sort->abbreviate = false;
		/* the ascending operator and ssup_reverse, as tuplesort has it */
		PrepareSortSupportFromOrderingOp(plan->sort_operator[k], sort);
		resolver->attno[resolver->nkeys] = plan->key_attno[k];
		resolver->sort_operator[resolver->nkeys] = plan->sort_operator[k];
		resolver->collation[resolver->nkeys] = plan->collation[k];
		resolver->nulls_first[resolver->nkeys] = plan->nulls_first[k];
		resolver->last_attno = Max(resolver->last_attno, plan->key_attno[k]);
		resolver->nkeys++;
	}
	resolver->desc = desc;
	resolver->slot_a = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	resolver->slot_b = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	resolver->context = AllocSetContextCreate(context, "GpuSort tie groups",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(old_context);
	return resolver;
}

static int
compare_values(TieResolver *resolver, const Datum *values_a, const bool *nulls_a,
			   const Datum *values_b, const bool *nulls_b)
{
	for (int k = 0; k < resolver->nkeys; k++)
	{
		int			order = ApplySortComparator(values_a[k], nulls_a[k],
												values_b[k], nulls_b[k],
												&resolver->sort[k]);

		if (order != 0)
			return order;
	}
	return 0;
}

/* The sort keys' values of a stored tuple, through `slot`. */
static void
key_values(TieResolver *resolver, TupleTableSlot *slot, MinimalTuple tuple,
		   Datum *values, bool *nulls)
{
	ExecStoreMinimalTuple(tuple, slot, false);
	slot_getsomeattrs(slot, resolver->last_attno);
	for (int k = 0; k < resolver->nkeys; k++)
	{
		values[k] = slot->tts_values[resolver->attno[k] - 1];
		nulls[k] = slot->tts_isnull[resolver->attno[k] - 1];
	}
}

/* SQL order of two stored rows by all sort keys: <0, 0, >0. */
int
tie_resolver_compare(TieResolver *resolver, MinimalTuple a, MinimalTuple b)
{
	Datum		values_a[GS_MAX_KEY_COLUMNS],
				values_b[GS_MAX_KEY_COLUMNS];
	bool		nulls_a[GS_MAX_KEY_COLUMNS],
				nulls_b[GS_MAX_KEY_COLUMNS];

	resolver->comparisons++;
	key_values(resolver, resolver->slot_a, a, values_a, nulls_a);
	key_values(resolver, resolver->slot_b, b, values_b, nulls_b);
	return compare_values(resolver, values_a, nulls_a, values_b, nulls_b);
}

/* A group's row as qsort_arg sorts it: its values and where it was. */
typedef struct TiedRow
{
	uint32_t	row;
	size_t		position;		/* in the group as it came: stability */
	Datum	   *values;
	bool	   *nulls;
} TiedRow;

static int
compare_tied_rows(const void *a, const void *b, void *arg)
{
	const TiedRow *x = (const TiedRow *) a;
	const TiedRow *y = (const TiedRow *) b;
	int			order = compare_values((TieResolver *) arg, x->values, x->nulls,
									   y->values, y->nulls);

	if (order != 0)
		return order;
	return x->position < y->position ? -1 : x->position > y->position ? 1 : 0;
}

/*
 * Puts rows[0..n) (numbers of tuples in `tuples`, tied on their encoded
 * keys) in SQL order. Each row's values are read once; byref values point
 * into the tuples, which stay where they are.
 */
void
tie_resolver_sort(TieResolver *resolver, MinimalTuple const *tuples, uint32_t *rows, size_t n)
{
	MemoryContext old_context = MemoryContextSwitchTo(resolver->context);
	TiedRow    *tied = MemoryContextAllocHuge(resolver->context, n * sizeof(TiedRow));
	Datum	   *values = MemoryContextAllocHuge(resolver->context,
												n * resolver->nkeys * sizeof(Datum));
	bool	   *nulls = MemoryContextAllocHuge(resolver->context, n * resolver->nkeys);

	for (size_t i = 0; i < n; i++)
	{
		tied[i].row = rows[i];
		tied[i].position = i;
		tied[i].values = values + i * resolver->nkeys;
		tied[i].nulls = nulls + i * resolver->nkeys;
		key_values(resolver, resolver->slot_a, tuples[rows[i]], tied[i].values, tied[i].nulls);
	}
	qsort_arg(tied, n, sizeof(TiedRow), compare_tied_rows, resolver);
	for (size_t i = 0; i < n; i++)
		rows[i] = tied[i].row;
	ExecClearTuple(resolver->slot_a);
	MemoryContextSwitchTo(old_context);
	MemoryContextReset(resolver->context);
	resolver->groups++;
	resolver->rows += n;
}

/*
 * PostgreSQL's own sort of rows by the same keys, within `work_mem_kb`
 * (spilling to its files beyond), in the current memory context: for a
 * group of tied rows too large to sort in memory here (row_store_gpu.c).
 * Its order is the comparator's; rows equal under it come in no set
 * order, as they do from PostgreSQL's sort.
 */
Tuplesortstate *
tie_resolver_begin_tuplesort(TieResolver *resolver, int work_mem_kb)
{
	resolver->groups++;
	return tuplesort_begin_heap(resolver->desc, resolver->nkeys, resolver->attno,
								resolver->sort_operator, resolver->collation,
								resolver->nulls_first, work_mem_kb, NULL, TUPLESORT_NONE);
}
