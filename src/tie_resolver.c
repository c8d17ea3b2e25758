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
	bool		found_prefix = false;

	resolver->ext_key = -1;
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
		/* the first prefix key: its next words, if its type has them */
		if (type->prefix_only && !found_prefix && gpusort_prefix_may_widen(type))
		{
			int			words = gpusort_plan_key_words(plan, k);

			resolver->ext_key = resolver->nkeys;
			resolver->ext_column = k;
			resolver->ext_type = gpusort_find_key_type(plan->key_type[k], plan->collation[k],
													   words + GPUSORT_TIE_WORDS);
			resolver->ext_first = words - 1;
		}
		found_prefix |= type->prefix_only;
		resolver->nkeys++;
	}
	resolver->desc = desc;
	resolver->slot_a = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	resolver->slot_b = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	resolver->context = AllocSetContextCreate(context, "GpuSort tie groups",
											  ALLOCSET_DEFAULT_SIZES);
	resolver->parent = context;
	MemoryContextSwitchTo(old_context);
	return resolver;
}

/*
 * The prefix key whose first engine column is `column` now holds only the
 * value's first words * 8 - 1 bytes (the row store narrowed it, types.c's
 * prefix_bytes): its next words start there.
 */
void
tie_resolver_narrow(TieResolver *resolver, int column, int words)
{
	MemoryContext old_context;
	const GpuSortType *ext_type;

	if (resolver->ext_key < 0 || resolver->ext_column != column)
		return;
	old_context = MemoryContextSwitchTo(resolver->parent);
	ext_type = gpusort_find_key_type(resolver->ext_type->type,
									 resolver->collation[resolver->ext_key],
									 words + GPUSORT_TIE_WORDS);
	MemoryContextSwitchTo(old_context);
	resolver->ext_type = ext_type;
	resolver->ext_first = words - 1;
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

/*
 * A group's row as sort_tied_rows() sorts it: where it was (its values
 * are at that place of the group's arrays), and the next words of its
 * first prefix key (the first of them repeats the plan's last word but
 * for its flag's byte, which is data here), inverted for a descending
 * key.
 */
#define EXT_WORDS (GPUSORT_TIE_WORDS + 1)
typedef struct TiedRow
{
	uint64_t	ext[EXT_WORDS];
	uint32_t	row;
	uint32_t	position;		/* in the group as it came: stability */
} TiedRow;

/* Groups smaller than this go to the comparator alone. */
#define EXT_MIN_ROWS 8

static inline int
compare_tied_rows(const TiedRow *x, const TiedRow *y, TieResolver *resolver)
{
	int			order;

	/*
	 * Different next words order two rows as their values do: the rows
	 * agree on every key before this one, and on its prefix, so this key
	 * decides between them, and a wider prefix orders its values (types.c).
	 */
	if (resolver->group_ext)
		for (int w = 0; w < EXT_WORDS; w++)
			if (x->ext[w] != y->ext[w])
				return x->ext[w] < y->ext[w] ? -1 : 1;
	order = compare_values(resolver,
						   resolver->tied_values + (size_t) x->position * resolver->nkeys,
						   resolver->tied_nulls + (size_t) x->position * resolver->nkeys,
						   resolver->tied_values + (size_t) y->position * resolver->nkeys,
						   resolver->tied_nulls + (size_t) y->position * resolver->nkeys);
	if (order != 0)
		return order;
	return x->position < y->position ? -1 : x->position > y->position ? 1 : 0;
}

/* sort_tied_rows(rows, n, resolver): the comparison inlined */
#define ST_SORT sort_tied_rows
#define ST_ELEMENT_TYPE TiedRow
#define ST_COMPARE_ARG_TYPE TieResolver
#define ST_COMPARE(a, b, arg) compare_tied_rows(a, b, arg)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* The next words of each row's first prefix key, where all have a value. */
static bool
fill_ext_words(TieResolver *resolver, TiedRow *tied, size_t n)
{
	int			k = resolver->ext_key;
	uint64_t	invert;
	uint64_t	words[GPUSORT_ENCODE_MAX_WORDS];

	if (k < 0 || n < EXT_MIN_ROWS)
		return false;
	invert = resolver->sort[k].ssup_reverse ? ~UINT64CONST(0) : 0;
	for (size_t i = 0; i < n; i++)
		if (resolver->tied_nulls[i * resolver->nkeys + k])
			return false;
	for (size_t i = 0; i < n; i++)
	{
		resolver->ext_type->encode_prefix(resolver->ext_type,
										  resolver->tied_values[i * resolver->nkeys + k], words);
		for (int w = 0; w < EXT_WORDS; w++)
			tied[i].ext[w] = words[resolver->ext_first + w] ^ invert;
	}
	return true;
}

/*
 * Puts rows[0..n) (numbers of tuples in `tuples`, tied on their encoded
 * keys) in SQL order. Each row's values are read once; byref values point
 * into the tuples, which stay where they are.
 */
void
tie_resolver_sort(TieResolver *resolver, MinimalTuple const *tuples, uint32_t *rows, size_t n)
{
	MemoryContext old_context;
	TiedRow    *tied;
	Datum	   *values;
	bool	   *nulls;

	if (n > resolver->tied_capacity)
	{
		size_t		capacity = Max(n, 2 * resolver->tied_capacity);

		if (resolver->tied_rows != NULL)
		{
			pfree(resolver->tied_rows);
			pfree(resolver->tied_values);
			pfree(resolver->tied_nulls);
		}
		resolver->tied_rows = MemoryContextAllocHuge(resolver->parent, capacity * sizeof(TiedRow));
		resolver->tied_values = MemoryContextAllocHuge(resolver->parent,
													   capacity * resolver->nkeys * sizeof(Datum));
		resolver->tied_nulls = MemoryContextAllocHuge(resolver->parent, capacity * resolver->nkeys);
		resolver->tied_capacity = capacity;
	}
	tied = resolver->tied_rows;
	values = resolver->tied_values;
	nulls = resolver->tied_nulls;
	old_context = MemoryContextSwitchTo(resolver->context);
	Assert(n <= PG_UINT32_MAX);
	for (size_t i = 0; i < n; i++)
	{
		tied[i].row = rows[i];
		tied[i].position = (uint32_t) i;
		key_values(resolver, resolver->slot_a, tuples[rows[i]], values + i * resolver->nkeys,
				   nulls + i * resolver->nkeys);
	}
	resolver->group_ext = fill_ext_words(resolver, tied, n);
	sort_tied_rows(tied, n, resolver);
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
