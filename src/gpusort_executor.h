/*
 * gpusort_executor.h — the GpuSort node's run-time state, shared by
 * executor.c (which fills it) and explain.c (which reports it).
 */
#ifndef GPUSORT_EXECUTOR_H
#define GPUSORT_EXECUTOR_H

#include "gpusort.h"

#include "nodes/execnodes.h"
#include "utils/tuplesort.h"

typedef struct GpuSortState
{
	CustomScanState css;
	GpuSortPlanInfo plan;
	const GpuSortType *key_types[GS_MAX_KEY_COLUMNS];
	bool		random_access;	/* rewind, backward or mark/restore needed */
	bool		approximate;	/* the approximate opt-in was on at the start */
	int			intervals;		/* ... with this many intervals */
	ExprState  *limit_count;	/* the LIMIT above, when it bounds this sort */
	ExprState  *limit_offset;	/* its OFFSET, or NULL */
	int64		bound;			/* LIMIT + OFFSET as evaluated when the rows
								 * were gathered, 0 for none */
	bool		timed;			/* EXPLAIN ANALYZE with timing */
	Size		work_mem_bytes;

	/* rows gathered from the child, in rows_context */
	MemoryContext rows_context;
	char	   *arena_next;		/* where the next tuple copy goes */
	Size		arena_left;
	MinimalTuple *tuples;
	size_t		ntuples;
	size_t		capacity;
	uint64_t   *column_keys[GS_MAX_KEY_COLUMNS];
	bool	   *column_nulls[GS_MAX_KEY_COLUMNS];
	gs_key_column columns[GS_MAX_KEY_COLUMNS];
	gs_key_column approx_range;	/* approximate sort: the key over all rows */
	Size		memory_used;

	/* bounded sort: rows at or beyond this one are not kept */
	bool		have_threshold;
	uint64_t	threshold_keys[GS_MAX_KEY_COLUMNS];
	bool		threshold_nulls[GS_MAX_KEY_COLUMNS];

	/* the sorted order, and where the scan stands in it */
	bool		sort_done;
	uint32_t   *order;			/* while sorting: row numbers in order */
	MinimalTuple *sorted;		/* after: the tuples in output order */
	size_t		noutputs;
	int64		position;		/* last returned output; -1 before the first */
	int64		marked_position;

	/* handed over to PostgreSQL's tuplesort (input outgrew work_mem) */
	bool		handed_over;
	Tuplesortstate *tuplesort;
	size_t		rows_handed_over;

	/* for EXPLAIN ANALYZE */
	gs_sort_report report;
	gs_interval_map interval_map;
	unsigned	layout_words;
	int64		rows_read;
	size_t		rows_sorted;
	int			pruned;
	Size		peak_memory;
	double		gather_ms;
	double		sort_ms;
	double		emit_ms;
} GpuSortState;

/* executor.c: LIMIT + OFFSET evaluated now, 0 for no bound */
extern int64 gpusort_evaluate_bound(GpuSortState *state);

#endif							/* GPUSORT_EXECUTOR_H */
