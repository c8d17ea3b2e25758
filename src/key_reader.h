/*
 * key_reader.h — a GpuSort's sort keys, read from its child's rows.
 *
 * Most rows come from a scan as heap tuples. Where every column up to a
 * key has a fixed length, the key lies at the same offset in every tuple
 * with no NULLs, and is read there (as PostgreSQL's attcacheoff does)
 * without deforming the tuple into the slot. Other rows go through
 * slot_getattr(). Reading every row's keys is most of what a bounded sort
 * adds to its scan: bench/README.md, "Top-N: reading the keys".
 */
#ifndef GPUSORT_KEY_READER_H
#define GPUSORT_KEY_READER_H

#include "gpusort.h"

#include "access/htup_details.h"
#include "access/tupmacs.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"

typedef struct KeyReader
{
	int			nkeys;
	AttrNumber	attno[GS_MAX_KEY_COLUMNS];
	const GpuSortType *types[GS_MAX_KEY_COLUMNS];
	int			part[GS_MAX_KEY_COLUMNS];	/* the word of its key it holds */
	/* the descriptor the offsets below were worked out for */
	TupleDesc	described;
	bool		fixed;			/* every key at a fixed offset in tuples with
								 * no NULLs and at least last_attno columns */
	AttrNumber	last_attno;
	uint32		offset[GS_MAX_KEY_COLUMNS]; /* from the tuple's data */
} KeyReader;

extern void key_reader_init(KeyReader *reader, int nkeys, const AttrNumber *attno,
							const GpuSortType *const *types, const int *part);
extern void key_reader_describe(KeyReader *reader, TupleDesc desc);

/* One key's value, encoded into its type's nwords words at `keys`. */
static inline void
key_reader_encode_value(const GpuSortType *type, Datum value, uint64_t *keys)
{
	if (type->encode_prefix != NULL)
		type->encode_prefix(type, value, keys);
	else if (type->encode_words != NULL)
		type->encode_words(value, keys);
	else if (type->enum_places != NULL)
		keys[0] = gpusort_enum_key(type->enum_places, value);
	else
		keys[0] = type->encode(value);
}

/* One key's value at `data` (aligned, the type's length), encoded into
 * its type's nwords words at `keys`. */
static inline void
key_reader_encode(const GpuSortType *type, const char *data, uint64_t *keys)
{
	if (type->integral)
	{
		switch (type->typlen)
		{
			case 2:
				keys[0] = gs_encode_int64(*(const int16 *) data);
				return;
			case 4:
				keys[0] = gs_encode_int64(*(const int32 *) data);
				return;
			default:
				keys[0] = gs_encode_int64(*(const int64 *) data);
				return;
		}
	}
	key_reader_encode_value(type, fetch_att(data, type->byval, type->typlen), keys);
}

/*
 * A scan's next rows lie on the page it is on, in the order of their line
 * pointers. The tuple a few rows ahead (KEY_PREFETCH_ROWS line pointers,
 * or visible tuples) is fetched into the cache now, so that reading its
 * keys does not wait on memory: the only thing a bounded sort does with
 * most rows. The page is pinned, so it stays where it is; a line pointer
 * read while another backend adds rows is at worst a useless prefetch.
 */
#define KEY_PREFETCH_ROWS 6

static inline void
key_reader_prefetch(Page page, OffsetNumber offset)
{
	if (offset <= PageGetMaxOffsetNumber(page))
	{
		ItemId		item = PageGetItemId(page, offset);

		if (ItemIdIsNormal(item))
			__builtin_prefetch((char *) page + ItemIdGetOffset(item));
	}
}

/*
 * A heap tuple's keys, encoded, where they lie at their fixed offsets (no
 * NULLs, and every column up to the last key present); false where they
 * do not, and slot_getattr() has to find them.
 */
static inline bool
key_reader_read_heap(KeyReader *reader, TupleDesc desc, HeapTuple tuple,
					 uint64_t *keys, bool *nulls)
{
	const char *data;

	if (unlikely(desc != reader->described))
		key_reader_describe(reader, desc);
	if (!reader->fixed || HeapTupleHasNulls(tuple) ||
		HeapTupleHeaderGetNatts(tuple->t_data) < reader->last_attno)
		return false;
	data = (const char *) tuple->t_data + tuple->t_data->t_hoff;
	for (int k = 0; k < reader->nkeys; k++)
	{
		/* a key of several words fills them all at its first */
		if (reader->part[k] == 0)
			key_reader_encode(reader->types[k], data + reader->offset[k], &keys[k]);
		nulls[k] = false;
	}
	return true;
}

/* The slot's keys, encoded (0 for NULL) and their NULL flags. */
static inline void
key_reader_read(KeyReader *reader, TupleTableSlot *slot, uint64_t *keys, bool *nulls)
{
	if (TTS_IS_BUFFERTUPLE(slot) || TTS_IS_HEAPTUPLE(slot))
	{
		HeapTuple	tuple = ((HeapTupleTableSlot *) slot)->tuple;

		if (tuple != NULL)
		{
			Buffer		buffer = TTS_IS_BUFFERTUPLE(slot) ?
				((BufferHeapTupleTableSlot *) slot)->buffer : InvalidBuffer;

			/* a buffer slot's tuple lies on its buffer's page, at t_self */
			if (BufferIsValid(buffer))
				key_reader_prefetch(BufferGetPage(buffer),
									ItemPointerGetOffsetNumberNoCheck(&tuple->t_self) +
									KEY_PREFETCH_ROWS);
			if (likely(key_reader_read_heap(reader, slot->tts_tupleDescriptor, tuple,
											keys, nulls)))
				return;
		}
	}
	for (int k = 0; k < reader->nkeys; k++)
	{
		Datum		value;

		if (reader->part[k] > 0)
		{
			/* a later word of the key before: filled there */
			nulls[k] = nulls[k - 1];
			continue;
		}
		value = slot_getattr(slot, reader->attno[k], &nulls[k]);
		if (nulls[k])
			memset(&keys[k], 0, reader->types[k]->nwords * sizeof(uint64_t));
		else
			key_reader_encode_value(reader->types[k], value, &keys[k]);
	}
}

#endif							/* GPUSORT_KEY_READER_H */
