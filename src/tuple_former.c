/*
 * tuple_former.c — minimal tuples formed from a virtual slot's values.
 *
 * See tuple_former.h. The bytes are those heap_form_minimal_tuple() would
 * give (heap_compute_data_size() and heap_fill_tuple() in PostgreSQL's
 * heaptuple.c decide the layout: alignment, 1-byte varlena headers, the
 * NULL bitmap), padding zeroed as in its palloc0'd tuple.
 */
#include "gpusort.h"

#include "access/tupmacs.h"
#include "utils/memutils.h"

#include "tuple_former.h"

void
tuple_former_init(TupleFormer *former, MemoryContext context)
{
	memset(former, 0, sizeof(*former));
	former->context = context;
}

static void
describe(TupleFormer *former, TupleDesc desc)
{
	if (former->attributes != NULL)
		pfree(former->attributes);
	former->described = desc;
	former->natts = desc->natts;
	former->attributes = MemoryContextAlloc(former->context,
											Max(desc->natts, 1) * sizeof(TupleFormerAttribute));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attribute = TupleDescAttr(desc, i);
		TupleFormerAttribute *a = &former->attributes[i];

		a->length = attribute->attlen;
		a->by_value = attribute->attbyval;
		a->packable = attribute->attlen == -1 && attribute->attstorage != TYPSTORAGE_PLAIN;
		switch (attribute->attalign)
		{
			case TYPALIGN_CHAR:
				a->alignment = 1;
				break;
			case TYPALIGN_SHORT:
				a->alignment = ALIGNOF_SHORT;
				break;
			case TYPALIGN_INT:
				a->alignment = ALIGNOF_INT;
				break;
			default:
				a->alignment = ALIGNOF_DOUBLE;
				break;
		}
	}
}

static inline Size
align_to(Size offset, uint8 alignment)
{
	return (offset + alignment - 1) & ~((Size) alignment - 1);
}

/* The data's size, as heap_compute_data_size() has it; false for an
 * expanded object. */
static bool
data_size(const TupleFormer *former, const Datum *values, const bool *isnull, Size *size)
{
	Size		offset = 0;

	for (int i = 0; i < former->natts; i++)
	{
		const TupleFormerAttribute *a = &former->attributes[i];
		Pointer		pointer;

		if (isnull[i])
			continue;
		if (a->length > 0)
		{
			offset = align_to(offset, a->alignment) + a->length;
			continue;
		}
		pointer = DatumGetPointer(values[i]);
		if (a->length == -2)
			offset = align_to(offset, a->alignment) + strlen(pointer) + 1;
		else if (VARATT_IS_EXTERNAL_EXPANDED(pointer))
			return false;
		else if (VARATT_IS_SHORT(pointer))	/* external pointers too */
			offset += VARSIZE_ANY(pointer);
		else if (a->packable && VARATT_CAN_MAKE_SHORT(pointer))
			offset += VARATT_CONVERTED_SHORT_SIZE(pointer);
		else
			offset = align_to(offset, a->alignment) + VARSIZE(pointer);
	}
	*size = offset;
	return true;
}

/* Moves `offset` on to `alignment` within the data, zeroing what it
 * passes over. */
static inline Size
pad_to(char *data, Size offset, uint8 alignment)
{
	Size		aligned = align_to(offset, alignment);

	while (offset < aligned)
		data[offset++] = 0;
	return aligned;
}

/*
 * Copies a value of up to 127 bytes (a 1-byte-header varlena) in 16- and
 * 8-byte moves. memcpy() with a length the compiler knows is small is
 * expanded inline as a string move, whose start-up cost is most of the
 * copy at these lengths.
 */
static inline void
copy_short(char *to, const char *from, Size length)
{
	if (length >= 16)
	{
		for (Size i = 0; i + 16 < length; i += 16)
			memcpy(to + i, from + i, 16);
		memcpy(to + length - 16, from + length - 16, 16);
	}
	else if (length >= 8)
	{
		memcpy(to, from, 8);
		memcpy(to + length - 8, from + length - 8, 8);
	}
	else
	{
		for (Size i = 0; i < length; i++)
			to[i] = from[i];
	}
}

/*
 * The data, as heap_fill_tuple() lays it out, if it takes at most `limit`
 * bytes: its length in *length and the infomask bits in *infomask. False
 * where it would not fit, or a value is an expanded object (which
 * PostgreSQL's forming flattens); what was written up to then means
 * nothing.
 */
static bool
fill_data(const TupleFormer *former, const Datum *values, const bool *isnull, char *data,
		  Size limit, Size *data_length, uint16 *infomask)
{
	uint16		mask = 0;
	Size		offset = 0;

	for (int i = 0; i < former->natts; i++)
	{
		const TupleFormerAttribute *a = &former->attributes[i];
		Pointer		pointer;
		Size		length;

		if (isnull[i])
			continue;
		if (a->by_value)
		{
			if (align_to(offset, a->alignment) + a->length > limit)
				return false;
			offset = pad_to(data, offset, a->alignment);
			store_att_byval(data + offset, values[i], a->length);
			offset += a->length;
			continue;
		}
		pointer = DatumGetPointer(values[i]);
		if (a->length > 0)
		{
			if (align_to(offset, a->alignment) + a->length > limit)
				return false;
			offset = pad_to(data, offset, a->alignment);
			memcpy(data + offset, pointer, a->length);
			offset += a->length;
			continue;
		}
		mask |= HEAP_HASVARWIDTH;
		if (a->length == -2)
		{
			length = strlen(pointer) + 1;
			if (align_to(offset, a->alignment) + length > limit)
				return false;
			offset = pad_to(data, offset, a->alignment);
			memcpy(data + offset, pointer, length);
		}
		else if (VARATT_IS_EXTERNAL(pointer))
		{
			if (VARATT_IS_EXTERNAL_EXPANDED(pointer))
				return false;
			/* a TOAST pointer */
			mask |= HEAP_HASEXTERNAL;
			length = VARSIZE_EXTERNAL(pointer);
			if (offset + length > limit)
				return false;
			memcpy(data + offset, pointer, length);
		}
		else if (VARATT_IS_SHORT(pointer))
		{
			length = VARSIZE_SHORT(pointer);
			if (offset + length > limit)
				return false;
			copy_short(data + offset, pointer, length);
		}
		else if (a->packable && VARATT_CAN_MAKE_SHORT(pointer))
		{
			length = VARATT_CONVERTED_SHORT_SIZE(pointer);
			if (offset + length > limit)
				return false;
			SET_VARSIZE_SHORT(data + offset, length);
			copy_short(data + offset + 1, VARDATA(pointer), length - 1);
		}
		else
		{
			length = VARSIZE(pointer);
			if (align_to(offset, a->alignment) + length > limit)
				return false;
			offset = pad_to(data, offset, a->alignment);
			memcpy(data + offset, pointer, length);
		}
		offset += length;
	}
	*data_length = offset;
	*infomask = mask;
	return true;
}

/* The header's size, the NULL bitmap (if any) included. */
static inline Size
header_size(const TupleFormer *former, bool hasnull)
{
	return MAXALIGN(SizeofMinimalTupleHeader + (hasnull ? BITMAPLEN(former->natts) : 0));
}

/* The slot's values, all of them, and whether any is NULL. */
static bool
read_values(TupleFormer *former, TupleTableSlot *slot)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;
	bool		hasnull = false;

	if (desc != former->described)
		describe(former, desc);
	slot_getallattrs(slot);
	for (int i = 0; i < former->natts; i++)
		hasnull |= slot->tts_isnull[i];
	return hasnull;
}

/* The tuple's header, for data of `length` bytes and `infomask`. */
static void
fill_header(const TupleFormer *former, TupleTableSlot *slot, bool hasnull, Size length,
			uint16 infomask, char *into)
{
	MinimalTuple tuple = (MinimalTuple) into;
	Size		header = header_size(former, hasnull);

	/* the header's fields are set, not or-ed into the zeroed header: a
	 * load just after memset()'s stores waits for them */
	memset(tuple, 0, header);
	tuple->t_len = length;
	tuple->t_infomask2 = former->natts;	/* HeapTupleHeaderSetNatts() */
	tuple->t_hoff = header + MINIMAL_TUPLE_OFFSET;
	if (hasnull)
	{
		for (int i = 0; i < former->natts; i++)
			if (!slot->tts_isnull[i])
				tuple->t_bits[i >> 3] |= 1 << (i & 7);
	}
	tuple->t_infomask = (hasnull ? HEAP_HASNULL : 0) | infomask;
}

Size
tuple_former_measure(TupleFormer *former, TupleTableSlot *slot)
{
	bool		hasnull = read_values(former, slot);
	Size		data_length;
	Size		length;

	if (!data_size(former, slot->tts_values, slot->tts_isnull, &data_length))
		return 0;
	length = header_size(former, hasnull) + data_length;
	if (!AllocSizeIsValid(length))
		return 0;				/* PostgreSQL's forming says what is wrong */
	former->hasnull = hasnull;
	former->length = length;
	return length;
}

MinimalTuple
tuple_former_fill(TupleFormer *former, TupleTableSlot *slot, char *into)
{
	Size		header = header_size(former, former->hasnull);
	Size		data_length;
	uint16		infomask;

	/* measured: it fits */
	if (!fill_data(former, slot->tts_values, slot->tts_isnull, into + header,
				   former->length - header, &data_length, &infomask))
		elog(ERROR, "gpusort: a row changed between measuring and forming it");
	fill_header(former, slot, former->hasnull, former->length, infomask, into);
	return (MinimalTuple) into;
}

Size
tuple_former_form(TupleFormer *former, TupleTableSlot *slot, char *into, Size room)
{
	bool		hasnull = read_values(former, slot);
	Size		header = header_size(former, hasnull);
	Size		data_length;
	uint16		infomask;

	if (room < header ||
		!fill_data(former, slot->tts_values, slot->tts_isnull, into + header, room - header,
				   &data_length, &infomask) ||
		!AllocSizeIsValid(header + data_length))
		return 0;
	fill_header(former, slot, hasnull, header + data_length, infomask, into);
	return header + data_length;
}
