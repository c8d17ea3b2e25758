/*
 * key_layout.c — packs the sort columns of a row into as few unsigned words
 * as their observed ranges allow.
 *
 * Each column contributes up to two fields: a 1-bit null flag (only if the
 * column held both NULLs and values) and its value relative to the column's
 * minimum (inverted for DESC), in just as many bits as max - min needs.
 * Fields are laid out most significant first and never split, so comparing
 * the words in order as unsigned integers is comparing the rows in SQL
 * order. One int4 column usually fits a 32-bit key, two int4 columns one
 * 64-bit key; more is sorted word by word (least significant word first,
 * each pass stable).
 */
#include "gpusort_engine.h"

#include <string.h>

void
gs_key_column_init(gs_key_column *column, bool descending, bool nulls_first)
{
	memset(column, 0, sizeof(*column));
	column->descending = descending;
	column->nulls_first = nulls_first;
}

static unsigned
bit_width(uint64_t value)
{
	return value == 0 ? 0 : 64 - (unsigned) __builtin_clzll(value);
}

static void
add_field(gs_key_layout *layout, int column, bool is_null_flag, unsigned bits)
{
	gs_key_field *field = &layout->fields[layout->nfields++];

	field->column = column;
	field->is_null_flag = is_null_flag;
	field->bits = bits;
}

gs_status
gs_key_layout_build(gs_key_layout *layout, const gs_key_column *columns,
					int ncolumns)
{
	unsigned	used = 0;

	if (ncolumns < 0 || ncolumns > GS_MAX_KEY_COLUMNS)
		return GS_ERR_INVALID_ARGUMENT;
	memset(layout, 0, sizeof(*layout));
	layout->ncolumns = ncolumns;
	memcpy(layout->columns, columns, sizeof(gs_key_column) * ncolumns);

	for (int c = 0; c < ncolumns; c++)
	{
		const gs_key_column *column = &columns[c];
		unsigned	value_bits = column->has_value ?
			bit_width(column->max_key - column->min_key) : 0;

		if (column->has_null && column->has_value)
			add_field(layout, c, true, 1);
		if (value_bits > 0)
			add_field(layout, c, false, value_bits);
	}

	/* greedy: a field goes into the current word if it fits, else a new one */
	for (int f = 0; f < layout->nfields; f++)
	{
		gs_key_field *field = &layout->fields[f];

		if (layout->nwords == 0 || used + field->bits > 64)
		{
			layout->nwords++;
			used = 0;
		}
		field->word = layout->nwords - 1;
		used += field->bits;
		layout->word_bits[field->word] = used;
	}
	/* most significant first: shifts count down from the top of the word */
	for (int f = 0, w = -1; f < layout->nfields; f++)
	{
		gs_key_field *field = &layout->fields[f];

		if ((int) field->word != w)
		{
			w = field->word;
			used = layout->word_bits[w];
		}
		used -= field->bits;
		field->shift = used;
	}
	return GS_OK;
}
