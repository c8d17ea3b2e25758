/*
 * executor.c — the GpuSort custom scan node at run time.
 *
 * First call: gather every tuple of the child, copying it and encoding its
 * sort keys (types.c); sort the (key, row) pairs with the engine, on the GPU
 * when usable; then hand tuples back in that order, forward or backward,
 * with mark/restore and rescan (all rows stay in memory, so rewinding is
 * free).
 *
 * Memory stays within work_mem like PostgreSQL's own Sort: when the input
 * outgrows it, the node hands everything over to PostgreSQL's tuplesort,
 * which spills to disk, for the rest of this execution (EXPLAIN ANALYZE
 * says so). With a bound (LIMIT), only the best `bound` rows are kept: the
 * buffer is pruned by sorting whenever it fills, and later rows that cannot
 * beat the current bound-th row are not copied at all.
 *
 * Errors longjmp out of here at any row; everything the node holds lives in
 * its own memory context (freed with the executor's) and the engine frees
 * its GPU and pinned memory before returning, so nothing leaks.
 */
#include "gpusort.h"

#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/tuplesort.h"

#include "gpusort_executor.h"

/* Smallest buffer of rows a bounded sort prunes. */
#define MIN_PRUNE_ROWS 65536
/* How many rows ahead emitting prefetches tuples. */
#define PREFETCH_DISTANCE 16

/*
 * How deep in executor runs we are: 0 while the statement the client sent
 * starts, 1 or more for a query run from inside another one (a function's,
 * a Citus subplan or local task). Only the former may be approximated.
 */
static int	executor_depth = 0;
static ExecutorRun_hook_type previous_executor_run = NULL;
static ExecutorFinish_hook_type previous_executor_finish = NULL;

static void begin_gpusort(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_gpusort(CustomScanState *node);
static void end_gpusort(CustomScanState *node);
static void rescan_gpusort(CustomScanState *node);
static void mark_gpusort(CustomScanState *node);
static void restore_gpusort(CustomScanState *node);

CustomScanMethods gpusort_scan_methods = {
	.CustomName = "GpuSort",
	.CreateCustomScanState = gpusort_create_scan_state,
};

static const CustomExecMethods gpusort_exec_methods = {
	.CustomName = "GpuSort",
	.BeginCustomScan = begin_gpusort,
	.ExecCustomScan = exec_gpusort,
	.EndCustomScan = end_gpusort,
	.ReScanCustomScan = rescan_gpusort,
	.MarkPosCustomScan = mark_gpusort,
	.RestrPosCustomScan = restore_gpusort,
	.ExplainCustomScan = gpusort_explain,
};

Node *
gpusort_create_scan_state(CustomScan *cscan)
{
	GpuSortState *state = (GpuSortState *) newNode(sizeof(GpuSortState),
												   T_CustomScanState);

	state->css.methods = &gpusort_exec_methods;
	gpusort_plan_info_from_list(cscan->custom_private, &state->plan);
	return (Node *) state;
}

static PlanState *
child_of(GpuSortState *state)
{
	return (PlanState *) linitial(state->css.custom_ps);
}

static void
begin_gpusort(CustomScanState *node, EState *estate, int eflags)
{
	GpuSortState *state = (GpuSortState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	state->random_access = (eflags & (EXEC_FLAG_REWIND | EXEC_FLAG_BACKWARD |
									  EXEC_FLAG_MARK)) != 0;
	/* we keep every row, so the child never needs to go backward */
	eflags &= ~(EXEC_FLAG_REWIND | EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK);
	node->custom_ps = list_make1(ExecInitNode(linitial(cscan->custom_plans),
											  estate, eflags));
	for (int k = 0; k < state->plan.nkeys; k++)
	{
		state->key_types[k] = gpusort_find_type(state->plan.key_type[k]);
		if (state->key_types[k] == NULL)
			elog(ERROR, "gpusort: unsupported sort key type %u", state->plan.key_type[k]);
	}
	/*
	 * The scan slot holds our stored minimal tuples as they are, without
	 * deforming them. ExecInitCustomScan made it virtual; parent nodes are
	 * initialised after us, so they see the new slot kind, and the
	 * projection (if any) is rebuilt for it.
	 */
	node->ss.ss_ScanTupleSlot =
		ExecAllocTableSlot(&estate->es_tupleTable,
						   node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
						   &TTSOpsMinimalTuple);
	node->ss.ps.scanops = &TTSOpsMinimalTuple;
	node->ss.ps.scanopsfixed = true;
	node->ss.ps.scanopsset = true;
	ExecAssignScanProjectionInfoWithVarno(&node->ss, INDEX_VAR);
	state->work_mem_bytes = (Size) work_mem * 1024;
	state->position = -1;
	/*
	 * Decided now, not when the plan was made: a cached plan must not
	 * approximate a query that did not opt in. Only the statement the
	 * client sent is approximated; a query run inside another (a function's,
	 * or a subplan Citus runs before the outer query) feeds rows to a query
	 * whose result the guarantee would have to be about.
	 */
	state->approximate = state->plan.approx_eligible && gpusort_approximate_intervals > 0 &&
		executor_depth == 0;
	state->intervals = gpusort_approximate_intervals;
	if (state->plan.bounded)
	{
		state->limit_count = ExecInitExpr(linitial(cscan->custom_exprs), &node->ss.ps);
		state->limit_offset = ExecInitExpr(lsecond(cscan->custom_exprs), &node->ss.ps);
	}
	state->timed = (estate->es_instrument & INSTRUMENT_TIMER) != 0;
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

/* ---- the gathered rows ---- */

/*
 * Tuples are copied into large arena chunks (no per-tuple palloc), their
 * keys into per-column arrays. Everything lives in rows_context, so a prune
 * moves the survivors into a fresh context and drops the old one whole.
 */
#define ARENA_CHUNK_MIN ((Size) 64 * 1024)
#define ARENA_CHUNK_MAX ((Size) 8 * 1024 * 1024)

static void
reset_rows(GpuSortState *state)
{
	if (state->rows_context != NULL)
		MemoryContextDelete(state->rows_context);
	state->rows_context = NULL;
	state->tuples = NULL;
	state->sorted = NULL;
	state->ntuples = state->capacity = state->noutputs = 0;
	state->arena_next = NULL;
	state->arena_left = 0;
	state->memory_used = 0;
	state->have_threshold = false;
	for (int k = 0; k < state->plan.nkeys; k++)
	{
		state->column_keys[k] = NULL;
		state->column_nulls[k] = NULL;
	}
}

static Size
row_overhead(GpuSortState *state)
{
	return gpusort_row_overhead(state->plan.nkeys);
}

/* Arrays for `capacity` rows in a new rows_context (the old one, if any, is
 * left to the caller). */
static void
allocate_rows(GpuSortState *state, size_t capacity)
{
	state->rows_context = AllocSetContextCreate(CurrentMemoryContext,
												"GpuSort rows",
												ALLOCSET_DEFAULT_SIZES);
	state->tuples = MemoryContextAllocHuge(state->rows_context,
										   capacity * sizeof(MinimalTuple));
	for (int k = 0; k < state->plan.nkeys; k++)
	{
		state->column_keys[k] = MemoryContextAllocHuge(state->rows_context,
													   capacity * sizeof(uint64_t));
		state->column_nulls[k] = MemoryContextAllocHuge(state->rows_context, capacity);
	}
	state->capacity = capacity;
	state->arena_next = NULL;
	state->arena_left = 0;
	state->memory_used = capacity * row_overhead(state);
}

static void
start_rows(GpuSortState *state)
{
	double		expected = state->css.ss.ps.plan->plan_rows;
	size_t		capacity = 1024;

	reset_rows(state);
	/* start near the planner's estimate, within work_mem */
	while (capacity < expected && capacity * row_overhead(state) * 4 < state->work_mem_bytes)
		capacity *= 2;
	allocate_rows(state, capacity);
	for (int k = 0; k < state->plan.nkeys; k++)
		gs_key_column_init(&state->columns[k], state->plan.descending[k],
						   state->plan.nulls_first[k]);
	gs_key_column_init(&state->approx_range, state->plan.descending[0],
					   state->plan.nulls_first[0]);
}

static void
grow_rows(GpuSortState *state)
{
	size_t		capacity = state->capacity * 2;

	state->tuples = repalloc_huge(state->tuples, capacity * sizeof(MinimalTuple));
	for (int k = 0; k < state->plan.nkeys; k++)
	{
		state->column_keys[k] = repalloc_huge(state->column_keys[k],
											  capacity * sizeof(uint64_t));
		state->column_nulls[k] = repalloc_huge(state->column_nulls[k], capacity);
	}
	state->memory_used += (capacity - state->capacity) * row_overhead(state);
	state->capacity = capacity;
}

/* A copy of a minimal tuple in the arena. */
static MinimalTuple
arena_copy(GpuSortState *state, const char *data, uint32 length)
{
	Size		aligned = MAXALIGN(length);
	MinimalTuple copy;

	if (aligned > state->arena_left)
	{
		/* chunks small against work_mem, so little of it goes unused */
		Size		chunk = Max(Min(state->work_mem_bytes / 16, ARENA_CHUNK_MAX),
								ARENA_CHUNK_MIN);

		chunk = Max(chunk, aligned);

		state->arena_next = MemoryContextAllocHuge(state->rows_context, chunk);
		state->arena_left = chunk;
		state->memory_used += chunk;
	}
	copy = (MinimalTuple) state->arena_next;
	memcpy(copy, data, length);
	state->arena_next += aligned;
	state->arena_left -= aligned;
	return copy;
}

/* Copies the slot's row into the arena as a minimal tuple. Heap tuples
 * (the usual case: a scan) are converted in place, with one memcpy. */
static MinimalTuple
copy_row(GpuSortState *state, TupleTableSlot *slot)
{
	MinimalTuple result;

	if (TTS_IS_BUFFERTUPLE(slot) || TTS_IS_HEAPTUPLE(slot))
	{
		HeapTuple	heap = ExecFetchSlotHeapTuple(slot, false, NULL);
		uint32		length = heap->t_len - MINIMAL_TUPLE_OFFSET;

		result = arena_copy(state, (char *) heap->t_data + MINIMAL_TUPLE_OFFSET, length);
		result->t_len = length;
	}
	else
	{
		bool		should_free;
		MinimalTuple tuple = ExecFetchSlotMinimalTuple(slot, &should_free);

		result = arena_copy(state, (char *) tuple, tuple->t_len);
		if (should_free)
			pfree(tuple);
	}
	return result;
}

/* SQL order of a row's keys against the current bound-th row's: <0, 0, >0 */
static int
compare_with_threshold(GpuSortState *state, const uint64_t *keys, const bool *nulls)
{
	for (int k = 0; k < state->plan.nkeys; k++)
	{
		bool		nulls_first = state->plan.nulls_first[k];

		if (nulls[k] != state->threshold_nulls[k])
			return nulls[k] == nulls_first ? -1 : 1;
		if (!nulls[k] && keys[k] != state->threshold_keys[k])
		{
			int			order = keys[k] < state->threshold_keys[k] ? -1 : 1;

			return state->plan.descending[k] ? -order : order;
		}
	}
	return 0;
}

/* Sorts the rows gathered so far; state->order gets their order. */
static void
sort_rows(GpuSortState *state, size_t limit, gs_algorithm algorithm)
{
	gs_key_layout layout;
	gs_sort_request settings;
	gs_sort_report report;
	gs_status	status;
	instr_time	start,
				duration;
	MemoryContext old_context = MemoryContextSwitchTo(state->rows_context);

	if (gs_key_layout_build(&layout, state->columns, state->plan.nkeys) != GS_OK)
		elog(ERROR, "gpusort: could not lay out %d sort keys", state->plan.nkeys);
	state->order = MemoryContextAllocHuge(state->rows_context,
										  Max(state->ntuples, 1) * sizeof(uint32_t));
	gpusort_request_init(&settings);
	settings.algorithm = algorithm;
	settings.intervals = (uint32_t) Max(state->intervals, 1);
	settings.limit = limit;
	/* intervals over the whole input's range, also when a bounded sort kept
	 * only some of its rows */
	if (algorithm == GS_ALGO_APPROX && state->approx_range.has_value)
	{
		settings.approx_range_given = true;
		settings.approx_min_key = state->approx_range.min_key;
		settings.approx_max_key = state->approx_range.max_key;
	}

	INSTR_TIME_SET_CURRENT(start);
	status = gs_sort_rows(&layout, state->ntuples,
						  (const uint64_t *const *) state->column_keys,
						  (const bool *const *) state->column_nulls,
						  &settings, state->order, &report);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	MemoryContextSwitchTo(old_context);
	gpusort_check_status(status, &report);

	state->sort_ms += INSTR_TIME_GET_MILLISEC(duration);
	state->report = report;
	state->layout_words = layout.nwords;
	if (algorithm == GS_ALGO_APPROX)
		state->interval_map = report.interval_map;
}

/*
 * Bounded sort: keep the best `bound` rows, drop the rest, and remember the
 * last kept row's keys so that no later row at or beyond it is copied. The
 * survivors move to a fresh context; the old one goes whole.
 */
static void
prune_rows(GpuSortState *state)
{
	size_t		keep = Min(state->ntuples, (size_t) state->bound);
	MemoryContext old_context;
	MinimalTuple *old_tuples;
	uint64_t   *old_keys[GS_MAX_KEY_COLUMNS];
	bool	   *old_nulls[GS_MAX_KEY_COLUMNS];
	uint32_t   *order;

	state->peak_memory = Max(state->peak_memory, state->memory_used);
	/* the candidates are chosen exactly, whatever the final order */
	sort_rows(state, keep, GS_ALGO_AUTO);
	order = state->order;
	old_context = state->rows_context;
	old_tuples = state->tuples;
	for (int k = 0; k < state->plan.nkeys; k++)
	{
		old_keys[k] = state->column_keys[k];
		old_nulls[k] = state->column_nulls[k];
	}

	allocate_rows(state, state->capacity);
	for (size_t i = 0; i < keep; i++)
	{
		MinimalTuple tuple = old_tuples[order[i]];

		state->tuples[i] = arena_copy(state, (char *) tuple, tuple->t_len);
		for (int k = 0; k < state->plan.nkeys; k++)
		{
			state->column_keys[k][i] = old_keys[k][order[i]];
			state->column_nulls[k][i] = old_nulls[k][order[i]];
		}
	}
	for (int k = 0; k < state->plan.nkeys && keep > 0; k++)
	{
		state->threshold_keys[k] = state->column_keys[k][keep - 1];
		state->threshold_nulls[k] = state->column_nulls[k][keep - 1];
	}
	MemoryContextDelete(old_context);
	state->order = NULL;
	state->ntuples = keep;
	state->have_threshold = keep == (size_t) state->bound;
	state->pruned++;
}

/* Moves everything gathered so far into PostgreSQL's tuplesort. */
static void
hand_over_to_tuplesort(GpuSortState *state)
{
	TupleDesc	tupdesc = state->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	TupleTableSlot *slot = MakeSingleTupleTableSlot(tupdesc, &TTSOpsMinimalTuple);
	bool		nulls_first[GS_MAX_KEY_COLUMNS];

	for (int k = 0; k < state->plan.nkeys; k++)
		nulls_first[k] = state->plan.nulls_first[k];
	state->tuplesort = tuplesort_begin_heap(tupdesc, state->plan.nkeys,
											state->plan.key_attno,
											state->plan.sort_operator,
											state->plan.collation,
											nulls_first, work_mem, NULL,
											state->random_access ?
											TUPLESORT_RANDOMACCESS : TUPLESORT_NONE);
	if (state->bound > 0)
		tuplesort_set_bound(state->tuplesort, state->bound);
	for (size_t i = 0; i < state->ntuples; i++)
	{
		ExecStoreMinimalTuple(state->tuples[i], slot, false);
		tuplesort_puttupleslot(state->tuplesort, slot);
	}
	ExecDropSingleTupleTableSlot(slot);
	state->handed_over = true;
	state->rows_handed_over = state->ntuples;
	state->peak_memory = Max(state->peak_memory, state->memory_used);
	reset_rows(state);
}

static void
gather_and_sort(GpuSortState *state)
{
	PlanState  *child = child_of(state);
	bool		bounded;
	bool		approximate = state->approximate;
	size_t		prune_at;
	instr_time	start,
				duration;
	uint64_t	keys[GS_MAX_KEY_COLUMNS];
	bool		nulls[GS_MAX_KEY_COLUMNS];

	INSTR_TIME_SET_CURRENT(start);
	state->bound = gpusort_evaluate_bound(state);
	bounded = state->bound > 0;
	prune_at = bounded ? Max((size_t) state->bound * 2, MIN_PRUNE_ROWS) : 0;
	start_rows(state);
	state->rows_read = 0;
	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(child);
		size_t		i;

		if (TupIsNull(slot))
			break;
		CHECK_FOR_INTERRUPTS();
		state->rows_read++;
		if (state->handed_over)
		{
			tuplesort_puttupleslot(state->tuplesort, slot);
			continue;
		}
		for (int k = 0; k < state->plan.nkeys; k++)
		{
			Datum		value = slot_getattr(slot, state->plan.key_attno[k], &nulls[k]);

			keys[k] = nulls[k] ? 0 : state->key_types[k]->encode(value);
		}
		/* the approximate sort's intervals span every row, kept or not */
		if (approximate)
			gs_key_column_observe(&state->approx_range, nulls[0], keys[0]);
		if (state->have_threshold && compare_with_threshold(state, keys, nulls) >= 0)
			continue;

		if (state->ntuples == state->capacity)
			grow_rows(state);
		i = state->ntuples++;
		for (int k = 0; k < state->plan.nkeys; k++)
		{
			state->column_keys[k][i] = keys[k];
			state->column_nulls[k][i] = nulls[k];
			gs_key_column_observe(&state->columns[k], nulls[k], keys[k]);
		}
		state->tuples[i] = copy_row(state, slot);

		if (bounded && state->ntuples >= prune_at)
			prune_rows(state);
		if (state->memory_used > state->work_mem_bytes)
		{
			if (bounded && state->ntuples > (size_t) state->bound)
				prune_rows(state);
			if (state->memory_used > state->work_mem_bytes)
				hand_over_to_tuplesort(state);
		}
	}
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	state->gather_ms = INSTR_TIME_GET_MILLISEC(duration);

	if (state->handed_over)
	{
		tuplesort_performsort(state->tuplesort);
		return;
	}
	state->peak_memory = Max(state->peak_memory, state->memory_used);
	state->rows_sorted = state->ntuples;
	sort_rows(state, bounded ? (size_t) state->bound : 0,
			  approximate ? GS_ALGO_APPROX : (gs_algorithm) state->plan.algorithm);
	if (approximate)
		state->noutputs = state->report.valid_outputs;
	else if (bounded)
		state->noutputs = Min(state->ntuples, (size_t) state->bound);
	else
		state->noutputs = state->ntuples;

	/* tuple pointers in output order: emitting then reads them in sequence */
	state->sorted = MemoryContextAllocHuge(state->rows_context,
										   Max(state->noutputs, 1) * sizeof(MinimalTuple));
	for (size_t i = 0; i < state->noutputs; i++)
		state->sorted[i] = state->tuples[state->order[i]];
	pfree(state->order);
	state->order = NULL;
}

static TupleTableSlot *
exec_gpusort(CustomScanState *node)
{
	GpuSortState *state = (GpuSortState *) node;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	bool		forward = ScanDirectionIsForward(node->ss.ps.state->es_direction);
	ProjectionInfo *projection = node->ss.ps.ps_ProjInfo;
	instr_time	start;

	if (!state->sort_done)
	{
		gather_and_sort(state);
		state->sort_done = true;
	}
	if (state->timed)
		INSTR_TIME_SET_CURRENT(start);

	if (state->handed_over)
	{
		if (!tuplesort_gettupleslot(state->tuplesort, forward, false, slot, NULL))
			ExecClearTuple(slot);
	}
	else if (forward && state->position + 1 < (int64) state->noutputs)
	{
		state->position++;
		/* the tuples lie scattered in memory: start fetching a few ahead */
		if (state->position + PREFETCH_DISTANCE < (int64) state->noutputs)
			__builtin_prefetch(state->sorted[state->position + PREFETCH_DISTANCE]);
		ExecStoreMinimalTuple(state->sorted[state->position], slot, false);
	}
	else if (!forward && state->position > 0)
	{
		state->position--;
		ExecStoreMinimalTuple(state->sorted[state->position], slot, false);
	}
	else
	{
		/* past either end: stand just beyond it, as tuplesort does */
		state->position = forward ? (int64) state->noutputs : -1;
		ExecClearTuple(slot);
	}

	if (state->timed)
	{
		instr_time	duration;

		INSTR_TIME_SET_CURRENT(duration);
		INSTR_TIME_SUBTRACT(duration, start);
		state->emit_ms += INSTR_TIME_GET_MILLISEC(duration);
	}
	if (TupIsNull(slot))
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

static void
end_gpusort(CustomScanState *node)
{
	GpuSortState *state = (GpuSortState *) node;

	if (state->tuplesort != NULL)
		tuplesort_end(state->tuplesort);
	state->tuplesort = NULL;
	reset_rows(state);
	ExecEndNode(child_of(state));
}

static void
rescan_gpusort(CustomScanState *node)
{
	GpuSortState *state = (GpuSortState *) node;
	PlanState  *child = child_of(state);

	/* custom children do not inherit changed parameters by themselves */
	if (node->ss.ps.chgParam != NULL)
		UpdateChangedParamSet(child, node->ss.ps.chgParam);
	ExecClearTuple(node->ss.ss_ScanTupleSlot);
	if (!state->sort_done)
		return;					/* the child is read from the start anyway */

	/* new parameters below, or in the LIMIT that bounded what was kept */
	if (child->chgParam != NULL || (state->plan.bounded && node->ss.ps.chgParam != NULL) ||
		(state->handed_over && !state->random_access))
	{
		/* new input: sort again from scratch */
		if (state->tuplesort != NULL)
			tuplesort_end(state->tuplesort);
		state->tuplesort = NULL;
		state->handed_over = false;
		reset_rows(state);
		state->sort_done = false;
		state->position = -1;
		if (child->chgParam == NULL)
			ExecReScan(child);
		return;
	}
	/* same input: rewind */
	state->position = -1;
	if (state->handed_over)
		tuplesort_rescan(state->tuplesort);
}

static void
mark_gpusort(CustomScanState *node)
{
	GpuSortState *state = (GpuSortState *) node;

	if (state->handed_over)
		tuplesort_markpos(state->tuplesort);
	else
		state->marked_position = state->position;
}

static void
restore_gpusort(CustomScanState *node)
{
	GpuSortState *state = (GpuSortState *) node;

	if (state->handed_over)
		tuplesort_restorepos(state->tuplesort);
	else
		state->position = state->marked_position;
}

static void
gpusort_executor_run(QueryDesc *query, ScanDirection direction, uint64 count,
					 bool execute_once)
{
	executor_depth++;
	PG_TRY();
	{
		if (previous_executor_run)
			previous_executor_run(query, direction, count, execute_once);
		else
			standard_ExecutorRun(query, direction, count, execute_once);
	}
	PG_FINALLY();
	{
		executor_depth--;
	}
	PG_END_TRY();
}

static void
gpusort_executor_finish(QueryDesc *query)
{
	executor_depth++;
	PG_TRY();
	{
		if (previous_executor_finish)
			previous_executor_finish(query);
		else
			standard_ExecutorFinish(query);
	}
	PG_FINALLY();
	{
		executor_depth--;
	}
	PG_END_TRY();
}

void
gpusort_executor_init(void)
{
	RegisterCustomScanMethods(&gpusort_scan_methods);
	previous_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = gpusort_executor_run;
	previous_executor_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = gpusort_executor_finish;
}
