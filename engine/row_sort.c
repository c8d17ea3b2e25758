/*
 * row_sort.c — sorts rows by several SQL columns, given each row's encoded
 * column values: what ORDER BY and gpu_sort_pairs() need.
 *
 * The key layout (key_layout.c) packs the columns into as few words as the
 * observed ranges allow; usually one, and then this is a single gs_sort() of
 * (word, row index). With more words, the rows are sorted least significant
 * word first, each pass stable, carrying the permutation along: on a GPU
 * whose backend can (the CUDA kernels in gpusort-gpud), all words go to it
 * at once and it makes the passes; elsewhere one gs_sort() per word, each
 * word gathered on the host through the order so far.
 *
 * The approximate sort orders by one column's intervals; its NULLs do not
 * belong to any interval, so they are set aside and placed first or last.
 */
#include "engine_internal.h"

#include <string.h>

/*
 * Packs word `word` of rows[0..n) (or of rows 0..n-1 when rows is NULL),
 * field by field over all rows so the inner loops stay branch-free. A NULL
 * flag field is 1 where the row sorts after the non-NULLs; a value field is
 * the value relative to the column's minimum (maximum minus the value for
 * DESC), 0 for a NULL.
 */
static void
pack_word(const gs_key_layout *layout, unsigned word,
		  const uint64_t *const *column_keys, const bool *const *column_nulls,
		  const uint32_t *rows, size_t n, void *out, unsigned key_bytes)
{
	uint32_t   *narrow = key_bytes == 4 ? out : NULL;
	uint64_t   *wide = key_bytes == 8 ? out : NULL;
	bool		first = true;

	for (int f = 0; f < layout->nfields; f++)
	{
		const gs_key_field *field = &layout->fields[f];
		const gs_key_column *column = &layout->columns[field->column];
		const uint64_t *keys = column_keys[field->column];
		const bool *nulls = column_nulls[field->column];
		unsigned	shift = field->shift;
		/* DESC: max - key, which is (key - max) * -1 in unsigned arithmetic */
		uint64_t	base = column->descending ? column->max_key : column->min_key;
		uint64_t	sign = column->descending ? UINT64_MAX : 1;

		if (field->word != word)
			continue;
		for (size_t i = 0; i < n; i++)
		{
			size_t		row = rows ? rows[i] : i;
			bool		is_null = nulls != NULL && nulls[row];
			uint64_t	value;

			if (field->is_null_flag)
				value = (uint64_t) (is_null != column->nulls_first);
			else
				value = is_null ? 0 : (keys[row] - base) * sign;
			value <<= shift;
			if (narrow)
				narrow[i] = first ? (uint32_t) value : narrow[i] | (uint32_t) value;
			else
				wide[i] = first ? value : wide[i] | value;
		}
		first = false;
	}
}

/* Adds one pass's report to a running total: times add up, the latest
 * pass says where and how it ran, the largest GPU footprint counts. */
void
gs_sort_report_add(gs_sort_report *total, const gs_sort_report *pass, bool first)
{
	if (first)
	{
		*total = *pass;
		return;
	}
	total->upload_ms += pass->upload_ms;
	total->sort_ms += pass->sort_ms;
	total->download_ms += pass->download_ms;
	total->queue_ms += pass->queue_ms;
	total->gpu_index = pass->gpu_index;
	total->algorithm = pass->algorithm;
	total->valid_outputs = pass->valid_outputs;
	total->interval_map = pass->interval_map;
	total->approx_mode = pass->approx_mode;
	total->sample_size = pass->sample_size;
	total->largest_interval = pass->largest_interval;
	total->rank_bound = pass->rank_bound;
	if (pass->gpu_bytes > total->gpu_bytes)
		total->gpu_bytes = pass->gpu_bytes;
	if (pass->fell_back)
	{
		total->fell_back = true;
		total->gpu_status = pass->gpu_status;
		memcpy(total->gpu_message, pass->gpu_message, sizeof(total->gpu_message));
	}
	total->ran_on = pass->ran_on;
}

/*
 * Several words on a GPU whose backend sorts them whole: every word packed
 * once, in row order, and the GPU makes the passes without coming back to
 * the host in between. *done says whether that sorted the rows (or failed
 * for good); when not, the caller sorts word by word, and *report (zeroed
 * by the caller) says why the GPU did not, where it tried.
 */
static gs_status
sort_words_whole(const gs_key_layout *layout, size_t n,
				 const uint64_t *const *column_keys, const bool *const *column_nulls,
				 const gs_sort_request *settings, uint32_t *order,
				 gs_sort_report *report, bool *done)
{
	bool		pinned = false;
	uint64_t   *words;
	gs_status	status;

	*done = false;
	if (!gs_gpu_sorts_words(settings, n))
		return GS_OK;
	words = gs_host_buffer_alloc((size_t) layout->nwords * n * sizeof(uint64_t), true, &pinned);
	if (words == NULL)
		return GS_OK;			/* word by word needs less */
	for (unsigned w = 0; w < layout->nwords; w++)
		pack_word(layout, w, column_keys, column_nulls, NULL, n, words + (size_t) w * n, 8);
	status = gs_sort_words_on_gpu(settings, n, words, layout->nwords, layout->word_bits, order,
								  report, done);
	gs_host_buffer_free(words, pinned);
	return status;
}

static gs_status
sort_rows_exact(const gs_key_layout *layout, size_t n,
				const uint64_t *const *column_keys,
				const bool *const *column_nulls,
				const gs_sort_request *settings, uint32_t *order,
				gs_sort_report *report)
{
	const gs_allocator *allocator = &settings->allocator;
	unsigned	widest = 0;
	void	   *keys;
	uint32_t   *pass_index;
	uint32_t   *scratch = NULL;
	/* the GPU's transfers run several times faster from page-locked memory */
	bool		want_pinned = settings->device != GS_DEVICE_CPU &&
		n >= settings->gpu_min_elements;
	bool		keys_pinned = false,
				index_pinned = false;
	gs_status	status = GS_OK;
	gs_sort_report whole;
	bool		done = false;

	memset(&whole, 0, sizeof(whole));
	if (layout->nwords > 1)
	{
		status = sort_words_whole(layout, n, column_keys, column_nulls, settings, order,
								  &whole, &done);
		if (done)
		{
			*report = whole;
			return status;
		}
	}

	for (unsigned w = 0; w < layout->nwords; w++)
		if (layout->word_bits[w] > widest)
			widest = layout->word_bits[w];
	keys = gs_host_buffer_alloc(n * (widest <= 32 ? 4 : 8), want_pinned, &keys_pinned);
	pass_index = gs_host_buffer_alloc(n * sizeof(uint32_t), want_pinned, &index_pinned);
	if (layout->nwords > 1)
		scratch = engine_alloc(allocator, n * sizeof(uint32_t));
	if (keys == NULL || pass_index == NULL || (layout->nwords > 1 && scratch == NULL))
	{
		status = GS_ERR_OUT_OF_MEMORY;
		goto done;
	}

	for (int w = (int) layout->nwords - 1; w >= 0; w--)
	{
		bool		first_pass = (w == (int) layout->nwords - 1);
		gs_sort_request request = *settings;
		gs_sort_report pass_report;

		gs_sort_request_set_keys(&request, keys, n, layout->word_bits[w] <= 32 ? 4 : 8,
								 layout->word_bits[w], pass_index);
		pack_word(layout, (unsigned) w, column_keys, column_nulls,
				  first_pass ? NULL : order, n, keys, request.key_bytes);
		status = gs_sort(&request, &pass_report);
		gs_sort_report_add(report, &pass_report, first_pass);
		if (status != GS_OK)
			goto done;
		if (first_pass)
			memcpy(order, pass_index, n * sizeof(uint32_t));
		else
		{
			for (size_t i = 0; i < n; i++)
				scratch[i] = order[pass_index[i]];
			memcpy(order, scratch, n * sizeof(uint32_t));
		}
	}
	report->valid_outputs = n;
	if (whole.fell_back && !report->fell_back)
	{
		/* the GPU failed the whole sort, and these passes ran instead */
		report->fell_back = true;
		report->gpu_status = whole.gpu_status;
		memcpy(report->gpu_message, whole.gpu_message, sizeof(report->gpu_message));
	}
done:
	gs_host_buffer_free(keys, keys_pinned);
	gs_host_buffer_free(pass_index, index_pinned);
	engine_free(allocator, scratch);
	return status;
}

/*
 * The approximate sort of one column. NULLs are set aside. When the caller
 * gives the range to cut into intervals (the whole input's, while these rows
 * are only the candidates a bounded sort kept), two sentinel keys at its
 * ends make the engine see exactly that range; they are dropped afterwards.
 */
static gs_status
sort_rows_approx(const gs_key_layout *layout, size_t n,
				 const uint64_t *column_keys, const bool *column_nulls,
				 const gs_sort_request *settings, uint32_t *order,
				 gs_sort_report *report)
{
	const gs_key_column *column = &layout->columns[0];
	const gs_allocator *allocator = &settings->allocator;
	bool		sentinels = settings->approx_range_given;
	uint64_t	min_key = sentinels ? settings->approx_min_key : column->min_key;
	uint64_t	max_key = sentinels ? settings->approx_max_key : column->max_key;
	size_t		nnulls = 0;
	size_t		nvalues,
				nkeys;
	uint64_t   *keys;
	uint32_t   *value_rows;
	uint32_t   *value_order;
	gs_sort_request request = *settings;
	gs_status	status;
	size_t		limit = settings->limit;
	size_t		at = 0;
	size_t		values_out = 0;

	if (column_nulls != NULL)
		for (size_t i = 0; i < n; i++)
			nnulls += column_nulls[i];
	nvalues = n - nnulls;
	nkeys = nvalues + (sentinels && nvalues > 0 ? 2 : 0);
	keys = engine_alloc(allocator, nkeys * sizeof(uint64_t));
	value_rows = engine_alloc(allocator, nkeys * sizeof(uint32_t));
	value_order = engine_alloc(allocator, nkeys * sizeof(uint32_t));
	if (keys == NULL || value_rows == NULL || value_order == NULL)
	{
		status = GS_ERR_OUT_OF_MEMORY;
		goto done;
	}
	for (size_t i = 0, v = 0; i < n; i++)
	{
		if (column_nulls != NULL && column_nulls[i])
			continue;
		/* DESC inverts the key, so interval 0 holds the largest values */
		keys[v] = column->descending ? max_key - column_keys[i] : column_keys[i] - min_key;
		value_rows[v++] = (uint32_t) i;
	}
	if (nkeys > nvalues)
	{
		keys[nvalues] = 0;
		keys[nvalues + 1] = max_key - min_key;
		value_rows[nvalues] = value_rows[nvalues + 1] = UINT32_MAX;
	}

	/* NULLs first use up part of the limit; the low sentinel takes a place */
	if (limit > 0 && column->nulls_first)
		limit = limit > nnulls ? limit - nnulls : 1;
	if (limit > 0 && nkeys > nvalues)
		limit++;
	gs_sort_request_set_keys(&request, keys, nkeys, 8, 64, value_order);
	request.limit = limit;
	status = gs_sort(&request, report);
	if (status != GS_OK)
		goto done;

	if (column->nulls_first && nnulls > 0)
		for (size_t i = 0; i < n; i++)
			if (column_nulls[i])
				order[at++] = (uint32_t) i;
	for (size_t v = 0; v < report->valid_outputs; v++)
	{
		uint32_t	row = value_rows[value_order[v]];

		if (row != UINT32_MAX)
		{
			order[at++] = row;
			values_out++;
		}
	}
	if (!column->nulls_first && values_out == nvalues && nnulls > 0)
		for (size_t i = 0; i < n; i++)
			if (column_nulls[i])
				order[at++] = (uint32_t) i;
	report->valid_outputs = at;
done:
	engine_free(allocator, keys);
	engine_free(allocator, value_rows);
	engine_free(allocator, value_order);
	return status;
}

gs_status
gs_sort_rows(const gs_key_layout *layout, size_t n,
			 const uint64_t *const *column_keys, const bool *const *column_nulls,
			 const gs_sort_request *settings, uint32_t *order,
			 gs_sort_report *report)
{
	memset(report, 0, sizeof(*report));
	report->algorithm = settings->algorithm;
	report->ran_on = settings->device == GS_DEVICE_GPU ? GS_DEVICE_GPU : GS_DEVICE_CPU;
	if (n >= UINT32_MAX || layout->ncolumns < 1)
		return GS_ERR_INVALID_ARGUMENT;

	if (settings->algorithm == GS_ALGO_APPROX)
	{
		if (layout->ncolumns != 1)
			return GS_ERR_INVALID_ARGUMENT;
		return sort_rows_approx(layout, n, column_keys[0], column_nulls[0],
								settings, order, report);
	}
	if (layout->nwords == 0)
	{
		/* every row compares equal: input order is the stable answer */
		for (size_t i = 0; i < n; i++)
			order[i] = (uint32_t) i;
		report->valid_outputs = n;
		return GS_OK;
	}
	return sort_rows_exact(layout, n, column_keys, column_nulls, settings,
						   order, report);
}
