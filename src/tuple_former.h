/*
 * tuple_former.h — minimal tuples formed from a virtual slot's values.
 *
 * A scan gives GpuSort heap tuples, which are copied as they are; a join
 * or a projection gives values in a virtual slot, which must be formed
 * into a tuple. PostgreSQL's heap_form_minimal_tuple() forms them into
 * fresh zeroed memory with a fill loop that looks up every attribute
 * anew; for a join below GpuSort that was the largest cost of storing a
 * row. A TupleFormer forms the same bytes straight into the memory that
 * keeps the row (the row store's arena, or the slot it shares with the GPU
 * service), with the descriptor's attributes looked at once
 * (bench/README.md, "Forming a join's rows").
 */
#ifndef GPUSORT_TUPLE_FORMER_H
#define GPUSORT_TUPLE_FORMER_H

#include "postgres.h"

#include "access/htup_details.h"
#include "executor/tuptable.h"

typedef struct TupleFormerAttribute
{
	int16		length;			/* attlen */
	uint8		alignment;		/* in bytes */
	bool		by_value;
	bool		packable;		/* a varlena that may take a 1-byte header */
} TupleFormerAttribute;

typedef struct TupleFormer
{
	TupleDesc	described;		/* the descriptor attributes[] is for */
	int			natts;
	TupleFormerAttribute *attributes;
	MemoryContext context;		/* where attributes[] lives */
	/* what tuple_former_measure() found, for tuple_former_fill() */
	bool		hasnull;
	Size		length;
} TupleFormer;

extern void tuple_former_init(TupleFormer *former, MemoryContext context);

/*
 * The length of the minimal tuple the slot's row forms, or 0 where a value
 * needs PostgreSQL's own forming (an expanded object, to be flattened).
 */
extern Size tuple_former_measure(TupleFormer *former, TupleTableSlot *slot);

/*
 * The row of the slot tuple_former_measure() was last given, formed at
 * `into` (MAXALIGNed, room for the measured length): the caller's memory,
 * so that a row is written once, where it is kept.
 */
extern MinimalTuple tuple_former_fill(TupleFormer *former, TupleTableSlot *slot, char *into);

/*
 * The slot's row formed at `into` (MAXALIGNed) in one pass, where its
 * tuple takes at most `room` bytes: returns its length, or 0 where it does
 * not fit or needs PostgreSQL's own forming (tuple_former_measure() then
 * says which). Until it returns more than 0, what it wrote at `into` means
 * nothing. For the slot the rows stream into, whose room is known before
 * the row's length.
 */
extern Size tuple_former_form(TupleFormer *former, TupleTableSlot *slot, char *into, Size room);

#endif							/* GPUSORT_TUPLE_FORMER_H */
