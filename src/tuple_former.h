/*
 * tuple_former.h — minimal tuples formed from a virtual slot's values.
 *
 * A scan gives GpuSort heap tuples, which are copied as they are; a join
 * or a projection gives values in a virtual slot, which must be formed
 * into a tuple. PostgreSQL's heap_form_minimal_tuple() forms them into
 * fresh zeroed memory with a fill loop that looks up every attribute
 * anew; for a join below GpuSort that was the largest cost of storing a
 * row. A TupleFormer forms the same bytes into a buffer it reuses, with
 * the descriptor's attributes looked at once (bench/README.md, "Forming a
 * join's rows").
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
	char	   *buffer;			/* the last tuple formed, MAXALIGNed */
	Size		buffer_size;
	MemoryContext context;		/* where attributes[] and buffer live */
} TupleFormer;

extern void tuple_former_init(TupleFormer *former, MemoryContext context);

/*
 * The slot's row as a minimal tuple in the former's buffer (valid until
 * the next call), or NULL where a value needs PostgreSQL's own forming (an
 * expanded object, to be flattened).
 */
extern MinimalTuple tuple_former_form(TupleFormer *former, TupleTableSlot *slot);

#endif							/* GPUSORT_TUPLE_FORMER_H */
