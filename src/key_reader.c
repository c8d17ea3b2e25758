/*
 * key_reader.c — where a GpuSort's keys lie in its child's heap tuples.
 *
 * See key_reader.h. A key's offset is fixed when every column before it
 * (dropped ones included: they keep their place in old and new tuples)
 * has a fixed length; its alignment comes from the descriptor, as
 * heap_deform_tuple() finds it.
 */
#include "gpusort.h"

#include "key_reader.h"

/* Keys at columns attno[0..nkeys) of the rows it is given. */
void
key_reader_init(KeyReader *reader, int nkeys, const AttrNumber *attno,
				const GpuSortType *const *types, const int *part)
{
	memset(reader, 0, sizeof(*reader));
	reader->nkeys = nkeys;
	for (int k = 0; k < nkeys; k++)
	{
		reader->attno[k] = attno[k];
		reader->types[k] = types[k];
		reader->part[k] = part[k];
		reader->last_attno = Max(reader->last_attno, attno[k]);
	}
}

/* Works out the keys' offsets in tuples of `desc`, if fixed. */
void
key_reader_describe(KeyReader *reader, TupleDesc desc)
{
	uint32		offset = 0;

	reader->described = desc;
	reader->fixed = false;
	if (desc == NULL || reader->last_attno > desc->natts)
		return;
	for (int i = 0; i < reader->last_attno; i++)
	{
		Form_pg_attribute attribute = TupleDescAttr(desc, i);

		if (attribute->attlen <= 0)
			return;				/* varlena or cstring: later offsets vary */
		offset = att_align_nominal(offset, attribute->attalign);
		for (int k = 0; k < reader->nkeys; k++)
		{
			if (reader->attno[k] != i + 1)
				continue;
			if (attribute->attbyval != reader->types[k]->byval ||
				attribute->attlen != reader->types[k]->typlen)
				return;
			reader->offset[k] = offset;
		}
		offset += attribute->attlen;
	}
	reader->fixed = true;
}
