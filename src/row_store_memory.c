/*
 * row_store_memory.c — the row store's rows in memory: kept, counted, sorted.
 *
 * In memory: tuples are copied into large arena chunks and their sort keys,
 * encoded (types.c), into per-column arrays. At the end the engine sorts
 * the (key, row) pairs, on the GPU when one is usable, and the rows are
 * read back in that order, forward or backward.
 *
 * Bounded (LIMIT): only the best `bound` rows are kept. The buffer is
 * pruned by sorting whenever it holds twice the bound (at least
 * MIN_PRUNE_ROWS), the rows kept closing up in place, and rows that cannot
 * beat the bound-th row kept are not copied at all.
 */
#include "gpusort.h"

#include <sys/mman.h>

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"

#include "row_store_int.h"

/* Transparent huge pages: the size of one (x86-64, arm64 with 4 kB pages). */
#define HUGE_PAGE_SIZE ((Size) 2 * 1024 * 1024)
/* Arena chunks: small against work_mem, so little of it goes unused. */
#define ARENA_CHUNK_MIN ((Size) 8 * 1024)
#define ARENA_CHUNK_MAX ((Size) 8 * 1024 * 1024)

/* ---- memory ---- */

void
count_memory(RowStore *store)
{
	store->memory_used = MemoryContextMemAllocated(store->rows_context, true);
	store->stats.peak_memory = Max(store->stats.peak_memory, store->memory_used +
								   files_memory(store) +
								   (store->best_keys != NULL ? store->best_bytes : 0));
}

/*
 * Memory for the rows, which the sort's order then visits at random: with
 * 4 kB pages nearly every visit misses the TLB once the rows outgrow a few
 * MB. Where the kernel lends transparent huge pages on request (the usual
 * "madvise" setting), the parts of a large allocation not yet touched get
 * 2 MB pages. The advice is only that; an allocation too small, or a
 * kernel that declines, keeps 4 kB pages.
 */
static void
advise_huge_pages(void *memory, Size size)
{
#ifdef MADV_HUGEPAGE
	uintptr_t	start = TYPEALIGN(HUGE_PAGE_SIZE, (uintptr_t) memory);
	uintptr_t	end = TYPEALIGN_DOWN(HUGE_PAGE_SIZE, (uintptr_t) memory + size);

	if (end > start)
		(void) madvise((void *) start, end - start, MADV_HUGEPAGE);
#endif
}

static void *
allocate_row_memory(RowStore *store, Size size)
{
	void	   *memory = MemoryContextAllocHuge(store->rows_context, size);

	advise_huge_pages(memory, size);
	return memory;
}

static void *
grow_row_memory(void *memory, Size size)
{
	memory = repalloc_huge(memory, size);
	advise_huge_pages(memory, size);
	return memory;
}

/* Arrays for `capacity` rows in a new rows_context (the old one, if any, is
 * left to the caller). */
void
allocate_rows(RowStore *store, size_t capacity)
{
	store->rows_context = AllocSetContextCreate(store->context, "GpuSort rows",
												ALLOCSET_DEFAULT_SIZES);
	store->tuples = allocate_row_memory(store, capacity * sizeof(MinimalTuple));
	for (int k = 0; k < store->nkeys; k++)
	{
		store->column_keys[k] = allocate_row_memory(store, capacity * sizeof(uint64_t));
		store->column_nulls[k] = allocate_row_memory(store, capacity);
	}
	store->capacity = capacity;
	store->ntuples = 0;
	store->arena_next = NULL;
	store->arena_left = 0;
	store->arena_chunks = NULL;
	store->arena_sizes = NULL;
	store->arena_nchunks = 0;
	store->arena_max_chunks = 0;
	store->arena_current = -1;
	store->order = NULL;
	store->sorted = NULL;
	for (int k = 0; k < store->nkeys; k++)
		gs_key_column_init(&store->columns[k], store->plan->descending[k],
						   store->plan->nulls_first[k]);
	count_memory(store);
}

/*
 * Room for more rows in memory: twice as many, or where that would pass
 * work_mem, as many more as the rows so far say still fit (each row costs
 * its array slots now and its tuple when it comes). False, with nothing
 * changed, when no more fit and the run may close (see run_is_full()).
 */
bool
grow_rows(RowStore *store)
{
	size_t		capacity = store->capacity * 2;

	if (store->ntuples >= MIN_RUN_ROWS || store->memory_used >= MIN_RUN_BYTES)
	{
		Size		limit = store->spec.work_mem_bytes;
		Size		used = memory_to_sort(store);
		Size		room = limit > used ? limit - used : 0;
		Size		row_bytes = Max((used - files_memory(store)) / Max(store->ntuples, 1), 1);

		capacity = Min(capacity, store->capacity + room / row_bytes);
		if (capacity <= store->capacity)
			return false;
	}

	store->tuples = grow_row_memory(store->tuples, capacity * sizeof(MinimalTuple));
	for (int k = 0; k < store->nkeys; k++)
	{
		store->column_keys[k] = grow_row_memory(store->column_keys[k],
												capacity * sizeof(uint64_t));
		store->column_nulls[k] = grow_row_memory(store->column_nulls[k], capacity);
	}
	store->capacity = capacity;
	count_memory(store);
	return true;
}

/* Moves the arena on to its next chunk of at least `size` bytes: one left
 * from before a prune (tuples stay in input order: a chunk too small is
 * passed over), or a new one. */
static void
next_arena_chunk(RowStore *store, Size size)
{
	Size		limit = store->spec.work_mem_bytes;
	Size		used;
	Size		chunk;

	while (store->arena_current + 1 < store->arena_nchunks)
	{
		int			next = ++store->arena_current;

		if (store->arena_sizes[next] >= size)
		{
			store->arena_next = store->arena_chunks[next];
			store->arena_left = store->arena_sizes[next];
			return;
		}
	}

	/* near work_mem, no more than is left of it */
	used = memory_to_sort(store);
	chunk = Min(limit / 16, ARENA_CHUNK_MAX);
	chunk = Min(chunk, limit > used ? limit - used : 0);
	chunk = Max(Max(chunk, ARENA_CHUNK_MIN), size);
	if (store->arena_nchunks == store->arena_max_chunks)
	{
		int			more = Max(store->arena_max_chunks * 2, 16);

		if (store->arena_chunks == NULL)
		{
			store->arena_chunks = MemoryContextAlloc(store->rows_context, more * sizeof(char *));
			store->arena_sizes = MemoryContextAlloc(store->rows_context, more * sizeof(Size));
		}
		else
		{
			store->arena_chunks = repalloc(store->arena_chunks, more * sizeof(char *));
			store->arena_sizes = repalloc(store->arena_sizes, more * sizeof(Size));
		}
		store->arena_max_chunks = more;
	}
	store->arena_current = store->arena_nchunks++;
	store->arena_chunks[store->arena_current] = allocate_row_memory(store, chunk);
	store->arena_sizes[store->arena_current] = chunk;
	store->arena_next = store->arena_chunks[store->arena_current];
	store->arena_left = chunk;
	count_memory(store);
}

/* Room in the arena for a `length`-byte minimal tuple. */
static char *
arena_alloc(RowStore *store, uint32 length)
{
	Size		aligned = MAXALIGN(length);
	char	   *place;

	if (aligned > store->arena_left)
		next_arena_chunk(store, aligned);
	place = store->arena_next;
	store->arena_next += aligned;
	store->arena_left -= aligned;
	return place;
}

/*
 * The slot's row as the bytes of a minimal tuple, without a copy where it
 * is a heap tuple (the usual case: a scan), formed by PostgreSQL where
 * formed_length() said 0. Those bytes do not carry the minimal tuple's
 * length: whoever copies them sets t_len. *should_free: the caller pfrees
 * them after.
 */
char *
slot_tuple_bytes(TupleTableSlot *slot, uint32 *length, bool *should_free)
{
	MinimalTuple tuple;

	if (TTS_IS_BUFFERTUPLE(slot) || TTS_IS_HEAPTUPLE(slot))
	{
		HeapTuple	heap = ExecFetchSlotHeapTuple(slot, false, NULL);

		*should_free = false;
		*length = heap->t_len - MINIMAL_TUPLE_OFFSET;
		return (char *) heap->t_data + MINIMAL_TUPLE_OFFSET;
	}
	tuple = ExecFetchSlotMinimalTuple(slot, should_free);
	*length = tuple->t_len;
	return (char *) tuple;
}

/* The slot's row as a minimal tuple in the arena. */
MinimalTuple
copy_row(RowStore *store, TupleTableSlot *slot)
{
	Size		formed = formed_length(store, slot);
	bool		should_free;
	uint32		length;
	char	   *bytes;
	MinimalTuple result;

	if (formed > 0)
		return tuple_former_fill(&store->former, slot, arena_alloc(store, formed));
	bytes = slot_tuple_bytes(slot, &length, &should_free);
	result = (MinimalTuple) arena_alloc(store, length);
	memcpy(result, bytes, length);
	result->t_len = length;
	if (should_free)
		pfree(bytes);
	return result;
}

/* ---- order of encoded keys ---- */

/* A bounded sort's rows at or beyond these keys are not kept. */
void
lower_threshold(RowStore *store, const uint64_t *keys, const bool *nulls)
{
	if (store->have_threshold &&
		compare_keys(store, keys, nulls, store->threshold_keys, store->threshold_nulls) >= 0)
		return;
	memcpy(store->threshold_keys, keys, store->nkeys * sizeof(uint64_t));
	memcpy(store->threshold_nulls, nulls, store->nkeys);
	store->have_threshold = true;
}

/* ---- sorting the rows in memory ---- */

/*
 * After a sort of rows with prefix keys: each group of rows that tie on
 * their encoded keys up to a prefix that may not determine its value
 * (compare_keys_tied()) lies together, ordered by the words after it;
 * PostgreSQL's comparator puts it in order (tie_resolver.c).
 */
static void
resolve_ties(RowStore *store)
{
	size_t		start = 0;
	uint64_t	first_keys[GS_MAX_KEY_COLUMNS],
				keys[GS_MAX_KEY_COLUMNS];
	bool		first_nulls[GS_MAX_KEY_COLUMNS],
				nulls[GS_MAX_KEY_COLUMNS];

	while (start < store->ntuples)
	{
		size_t		end = start + 1;
		bool		undecided = false;

		sorted_keys_of(store, start, first_keys, first_nulls);
		for (; end < store->ntuples; end++)
		{
			sorted_keys_of(store, end, keys, nulls);
			compare_keys_tied(store, first_keys, first_nulls, keys, nulls, &undecided);
			if (!undecided)
				break;
		}
		if (end - start > 1)
		{
			tie_resolver_sort(store->ties, store->tuples, store->order + start, end - start);
			CHECK_FOR_INTERRUPTS();
		}
		start = end;
	}
}

/*
 * A string key's words encoded at their full width, narrowed to the
 * value's first `held` bytes: the bytes after them zero, the flag (the
 * last byte) set where one of them was not. Words already narrowed stay
 * as they are.
 */
void
narrow_prefix_words(uint64_t *words, int nwords, size_t held)
{
	uint8		bytes[GPUSORT_PREFIX_MAX_WORDS * 8] = {0};
	bool		goes_on;

	for (int w = 0; w < nwords; w++)
		for (int b = 0; b < 8; b++)
			bytes[w * 8 + b] = (uint8) (words[w] >> (56 - 8 * b));
	goes_on = bytes[nwords * 8 - 1] != 0;
	for (size_t b = held; b < (size_t) nwords * 8 - 1; b++)
	{
		goes_on |= bytes[b] != 0;
		bytes[b] = 0;
	}
	bytes[nwords * 8 - 1] = goes_on ? 1 : 0;
	for (int w = 0; w < nwords; w++)
	{
		uint64_t	word = 0;

		for (int b = 0; b < 8; b++)
			word = (word << 8) | bytes[w * 8 + b];
		words[w] = word;
	}
}

/*
 * A prefix chosen from the rows (spec.prefix_choice): a string key without
 * statistics has the widest prefix the plan had room for, and every row
 * so far was encoded at that width. Before the first of them is sorted
 * or leaves memory, the store looks at them (types.c,
 * gpusort_prefix_words_for_rows()) and keeps only the bytes they need:
 * the rows in memory lose the rest of theirs (their flag set where
 * a byte is dropped), later rows are encoded so (the type's
 * prefix_bytes), and the resolver takes the next bytes from there. Every
 * run, the GPU run and the merges then see one width. The words past the
 * chosen bytes stay zero, which costs the engine's sort no bits.
 */
void
choose_prefix(RowStore *store)
{
	GpuSortType *type = store->spec.prefix_choice;
	int			first = store->spec.prefix_choice_key;
	int			nwords;
	size_t		step = Max(store->ntuples / PREFIX_SAMPLE_ROWS, 1);
	uint64_t   *sample;
	size_t		nsample = 0;
	int			chosen;
	size_t		held;

	if (!store->prefix_unchosen)
		return;
	store->prefix_unchosen = false;
	nwords = type->nwords;
	sample = palloc(sizeof(uint64_t) * nwords * Min(store->ntuples, PREFIX_SAMPLE_ROWS + 1));
	for (size_t i = 0; i < store->ntuples && nsample <= PREFIX_SAMPLE_ROWS; i += step)
	{
		if (store->column_nulls[first][i])
			continue;
		for (int w = 0; w < nwords; w++)
			sample[nsample * nwords + w] = store->column_keys[first + w][i];
		nsample++;
	}
	/* no value seen yet: nothing says a narrower one will do */
	chosen = nsample > 0 ? gpusort_prefix_words_for_rows(sample, nsample, nwords) : nwords;
	pfree(sample);
	held = (size_t) chosen * 8 - 1;
	if (store->spec.agree_prefix != NULL)
	{
		/* a parallel share: the width every share encodes at */
		int64		looked_at = (int64) nsample;

		held = (size_t) store->spec.agree_prefix(store->spec.agree_prefix_arg, (int) held,
												 &looked_at);
		if (held < 7 || held > (size_t) nwords * 8 - 1 || (held + 1) % 8 != 0)
			elog(ERROR, "gpusort: parallel shares agreed on a %zu-byte prefix", held);
		chosen = (int) (held + 1) / 8;
		nsample = (size_t) looked_at;
	}
	if (nsample > 0)
	{
		store->stats.prefix_sample_rows = (int64) nsample;
		store->stats.prefix_bytes_chosen = (int) held;
	}
	if (chosen == nwords)
		return;

	for (size_t i = 0; i < store->ntuples; i++)
	{
		uint64_t	words[GPUSORT_PREFIX_MAX_WORDS];

		if (store->column_nulls[first][i])
			continue;
		for (int w = 0; w < nwords; w++)
			words[w] = store->column_keys[first + w][i];
		narrow_prefix_words(words, nwords, held);
		for (int w = 0; w < nwords; w++)
			store->column_keys[first + w][i] = words[w];
	}
	/* the ranges the engine packs the words by, as they are now */
	for (int w = 0; w < nwords; w++)
	{
		int			k = first + w;

		gs_key_column_init(&store->columns[k], store->plan->descending[k],
						   store->plan->nulls_first[k]);
		for (size_t i = 0; i < store->ntuples; i++)
			gs_key_column_observe(&store->columns[k], store->column_nulls[k][i],
								  store->column_keys[k][i]);
	}
	type->prefix_bytes = (int) held;
	if (store->ties != NULL)
		tie_resolver_narrow(store->ties, first, chosen);
}

/*
 * The leader's merge of parallel shares, which chose the prefix
 * (spec.prefix_choice's prefix_bytes, 0: the widest, and
 * spec.prefix_rows_looked_at): nothing to choose, and the ties of the
 * shares' rows resolved from that width on.
 */
void
adopt_chosen_prefix(RowStore *store)
{
	int			widest = store->spec.prefix_choice->nwords * 8 - 1;
	int			held = store->spec.prefix_choice->prefix_bytes;

	store->prefix_unchosen = false;
	if (store->spec.prefix_rows_looked_at > 0)
	{
		store->stats.prefix_bytes_chosen = held > 0 ? held : widest;
		store->stats.prefix_sample_rows = store->spec.prefix_rows_looked_at;
	}
	if (held > 0 && store->ties != NULL)
		tie_resolver_narrow(store->ties, store->spec.prefix_choice_key, (held + 1) / 8);
}

/* Sorts the rows in memory; store->order gets their order. */
void
sort_rows(RowStore *store, size_t limit, gs_algorithm algorithm)
{
	gs_key_layout layout;
	gs_sort_request settings;
	gs_sort_report report;
	gs_status	status;
	instr_time	start,
				duration;
	MemoryContext old_context;

	choose_prefix(store);
	old_context = MemoryContextSwitchTo(store->rows_context);
	if (gs_key_layout_build(&layout, store->columns, store->nkeys) != GS_OK)
		elog(ERROR, "gpusort: could not lay out %d sort keys", store->nkeys);
	store->order = MemoryContextAllocHuge(store->rows_context,
										  Max(store->ntuples, 1) * sizeof(uint32_t));
	gpusort_request_init(&settings);
	settings.algorithm = algorithm;
	settings.intervals = (uint32_t) Max(store->spec.intervals, 1);
	settings.approx_mode = store->spec.approx_mode;
	/* prefix keys: all rows in order, for their ties to be found whole */
	settings.limit = store->ties != NULL ? 0 : limit;
	/*
	 * Equal widths over the whole input's range, also when a bounded sort
	 * kept only some of its rows. The quantiles are those of the rows kept:
	 * they include every row among the exact first `bound`, whose ranks
	 * among the rows kept are their ranks in the whole input.
	 */
	if (algorithm == GS_ALGO_APPROX && store->approx_range.has_value &&
		store->spec.approx_mode == GS_APPROX_WIDTH)
	{
		settings.approx_range_given = true;
		settings.approx_min_key = store->approx_range.min_key;
		settings.approx_max_key = store->approx_range.max_key;
	}

	INSTR_TIME_SET_CURRENT(start);
	status = gs_sort_rows(&layout, store->ntuples,
						  (const uint64_t *const *) store->column_keys,
						  (const bool *const *) store->column_nulls,
						  &settings, store->order, &report);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	MemoryContextSwitchTo(old_context);
	gpusort_check_status(status, &report);

	store->stats.sort_ms += INSTR_TIME_GET_MILLISEC(duration);
	store->stats.sorts++;
	if (report.ran_on == GS_DEVICE_GPU)
	{
		store->stats.gpu_sorts++;
		store->stats.gpu_index = report.gpu_index;
	}
	gs_sort_report_add(&store->stats.report, &report, !store->have_report);
	store->have_report = true;
	store->stats.layout_words = layout.nwords;
	if (store->ties != NULL)
		resolve_ties(store);
	count_memory(store);
}

/*
 * Moves the tuples of rows[0..n) to the front of the arena, in order: the
 * rows are in input order, and so is the arena, so no tuple moves to a
 * place after its own and none is overwritten before it has moved. The
 * chunks after the last tuple are left for next_arena_chunk() to fill
 * again or, while the rows take more than half of work_mem, freed.
 */
static void
close_up_arena(RowStore *store, size_t n)
{
	int			chunk = 0;
	Size		used = 0;

	for (size_t i = 0; i < n; i++)
	{
		MinimalTuple tuple = store->tuples[i];
		Size		aligned = MAXALIGN(tuple->t_len);
		char	   *place;

		while (store->arena_sizes[chunk] - used < aligned)
		{
			chunk++;
			used = 0;
		}
		place = store->arena_chunks[chunk] + used;
		if (place != (char *) tuple)
			memmove(place, tuple, tuple->t_len);
		store->tuples[i] = (MinimalTuple) place;
		used += aligned;
	}
	if (store->arena_nchunks == 0)
		return;
	store->arena_current = chunk;
	store->arena_next = store->arena_chunks[chunk] + used;
	store->arena_left = store->arena_sizes[chunk] - used;
	if (memory_to_sort(store) > store->spec.work_mem_bytes / 2)
	{
		for (int c = chunk + 1; c < store->arena_nchunks; c++)
			pfree(store->arena_chunks[c]);
		store->arena_nchunks = chunk + 1;
	}
}

/*
 * Keeps the rows marked in kept[] (`keep` of them), dropping the rest: the
 * survivors keep the order they came in (the next sort, stable as every
 * sort here, orders them again), in the same arrays and arena: moving them
 * there costs less than copying them to new memory, which the kernel
 * would have to clear first.
 */
static void
keep_marked_rows(RowStore *store, const bool *kept, size_t keep)
{
	size_t		old_count = store->ntuples;
	size_t		n = 0;

	/* without a branch per row (about half are kept, at random); row n <=
	 * row, so the arrays close up from the front */
	for (size_t row = 0; row < old_count; row++)
	{
		store->tuples[n] = store->tuples[row];
		for (int k = 0; k < store->nkeys; k++)
		{
			store->column_keys[k][n] = store->column_keys[k][row];
			store->column_nulls[k][n] = store->column_nulls[k][row];
		}
		n += kept[row];
	}
	Assert(n == keep);
	store->ntuples = keep;
	for (int k = 0; k < store->nkeys; k++)
	{
		gs_key_column_init(&store->columns[k], store->plan->descending[k],
						   store->plan->nulls_first[k]);
		for (size_t i = 0; i < keep; i++)
			gs_key_column_observe(&store->columns[k], store->column_nulls[k][i],
								  store->column_keys[k][i]);
	}
	close_up_arena(store, keep);
}

/*
 * Bounded sort: keep the best `bound` rows, drop the rest, and remember the
 * last kept row's keys so that no later row at or beyond it is copied.
 */
void
prune_rows(RowStore *store)
{
	size_t		keep = Min(store->ntuples, (size_t) store->spec.bound);
	size_t		old_count = store->ntuples;
	uint64_t	last_keys[GS_MAX_KEY_COLUMNS];
	bool		last_nulls[GS_MAX_KEY_COLUMNS];
	bool	   *kept;

	Assert(keep < old_count);
	/* the candidates are chosen exactly, whatever the final order */
	sort_rows(store, keep, GS_ALGO_AUTO);
	kept = MemoryContextAllocZero(store->rows_context, old_count);
	for (size_t i = 0; i < keep; i++)
		kept[store->order[i]] = true;
	if (keep > 0)
		sorted_keys_of(store, keep - 1, last_keys, last_nulls);
	pfree(store->order);
	store->order = NULL;
	keep_marked_rows(store, kept, keep);
	pfree(kept);
	if (keep == (size_t) store->spec.bound)
		lower_threshold(store, last_keys, last_nulls);
	count_memory(store);
	store->stats.pruned++;
}

/*
 * Top-N per group, when the rows fill memory: they are sorted and only
 * the first rows of each group stay (GroupCounter says why that is
 * enough), so that few groups never leave memory at all. Once a prune
 * keeps more than half the rows, the groups are too many for it to pay:
 * later batches go to runs as they are (each run cut as it is written).
 */
void
prune_groups(RowStore *store)
{
	size_t		old_count = store->ntuples;
	size_t		keep = 0;
	GroupCounter counter;
	bool	   *kept;

	sort_rows(store, 0, (gs_algorithm) store->plan->algorithm);
	kept = MemoryContextAllocZero(store->rows_context, Max(old_count, 1));
	memset(&counter, 0, sizeof(counter));
	for (size_t i = 0; i < old_count; i++)
	{
		uint64_t	keys[GS_MAX_KEY_COLUMNS];
		bool		nulls[GS_MAX_KEY_COLUMNS];

		sorted_keys_of(store, i, keys, nulls);
		if (group_keeps(store, &counter, keys, nulls))
		{
			kept[store->order[i]] = true;
			keep++;
		}
	}
	pfree(store->order);
	store->order = NULL;
	keep_marked_rows(store, kept, keep);
	pfree(kept);
	count_memory(store);
	store->stats.group_prunes++;
	store->stats.rows_skipped += (int64) (old_count - keep);
	if (keep > old_count / 2)
		store->group_prunes_pay = false;
}

/*
 * A bounded sort whose `bound` rows do not fit in work_mem writes runs of
 * fewer rows than that, none of which alone gives a threshold. The keys of
 * the best `bound` rows written so far do, once there are that many: the
 * first `nout` rows in memory, just written in order, merge into them.
 * False where they would take more than a quarter of work_mem
 * (row_store_begin() set none aside): every row then goes to the runs.
 */
bool
note_best_keys(RowStore *store, size_t nout)
{
	size_t		bound = (size_t) store->spec.bound;
	size_t		from_best,
				from_run,
				total;
	uint64_t	run_keys[GS_MAX_KEY_COLUMNS],
				best_keys[GS_MAX_KEY_COLUMNS];
	bool		run_nulls[GS_MAX_KEY_COLUMNS],
				best_nulls[GS_MAX_KEY_COLUMNS];

	if (store->best_keys == NULL)
	{
		if (nout >= bound || store->best_bytes == 0)
			return false;
		store->best_keys = MemoryContextAllocHuge(store->context,
												  bound * store->nkeys * sizeof(uint64_t));
		store->best_nulls = MemoryContextAllocHuge(store->context, bound * store->nkeys);
	}

	/*
	 * Merge from the back, in place: first drop the largest of both lists
	 * until `bound` are left, then place the rest from the last slot down
	 * (a slot is written only after the entry in it was read).
	 */
	from_best = store->nbest;
	from_run = Min(nout, bound);
	total = from_best + from_run;
	while (total > bound)
	{
		if (from_best == 0)
			from_run--;
		else if (from_run == 0)
			from_best--;
		else
		{
			keys_of(store, from_best - 1, store->best_keys, store->best_nulls, best_keys, best_nulls);
			sorted_keys_of(store, from_run - 1, run_keys, run_nulls);
			if (compare_keys(store, best_keys, best_nulls, run_keys, run_nulls) > 0)
				from_best--;
			else
				from_run--;
		}
		total--;
	}
	store->nbest = total;
	while (from_run > 0)
	{
		size_t		into = from_best + from_run - 1;

		sorted_keys_of(store, from_run - 1, run_keys, run_nulls);
		if (from_best > 0)
		{
			keys_of(store, from_best - 1, store->best_keys, store->best_nulls, best_keys, best_nulls);
			if (compare_keys(store, best_keys, best_nulls, run_keys, run_nulls) > 0)
			{
				set_best_keys(store, into, best_keys, best_nulls);
				from_best--;
				continue;
			}
		}
		set_best_keys(store, into, run_keys, run_nulls);
		from_run--;
	}
	count_memory(store);
	return true;
}
