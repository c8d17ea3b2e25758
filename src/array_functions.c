/*
 * array_functions.c — the SQL functions that sort arrays:
 *   gpu_sort(anyarray, algorithm, descending)            -> sorted array
 *   gpu_argsort(anyarray, algorithm, descending)         -> int4[] positions
 *   gpu_sort_pairs(anyarray, anycompatiblearray, ...)    -> both, sorted by pair
 *   gpu_approx_sort(anyarray, intervals, descending, mode) -> interval order
 *   gpu_minmax(anyarray)                                 -> (min, max)
 *
 * Each reads the array's elements straight from its data area into
 * order-preserving keys (types.c), has the engine sort them, and builds the
 * result with the input's lower bound. NULL elements go last ascending and
 * first descending, as in ORDER BY. Arrays must be one-dimensional (or
 * empty): a multidimensional array is an error, since "sorted" has no single
 * meaning for it.
 */
#include "gpusort.h"

#include "access/htup_details.h"
#include "catalog/pg_type_d.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

/*
 * These C symbols (and gpusort_info in info.c) are named by the SQL of every
 * released version (gpusort--1.0.sql, ...), and a database may still be at
 * an old version when a newer library is installed: keep each symbol and its
 * old SQL signature working, or, if a feature needs a newer SQL version,
 * raise an error saying to run ALTER EXTENSION gpusort UPDATE. The upgrade
 * regress test installs every version against this library.
 */
PG_FUNCTION_INFO_V1(gpusort_sql_sort);
PG_FUNCTION_INFO_V1(gpusort_sql_argsort);
PG_FUNCTION_INFO_V1(gpusort_sql_sort_pairs);
PG_FUNCTION_INFO_V1(gpusort_sql_approx_sort);
PG_FUNCTION_INFO_V1(gpusort_sql_minmax);

/* An input array, read. */
typedef struct ArrayInput
{
	ArrayType  *array;
	const GpuSortType *type;
	int			nitems;
	int			nnulls;
	int			lower_bound;
	const char *data;			/* the non-null elements, contiguous */
	uint64_t   *keys;			/* [nitems] encoded keys; 0 where NULL */
	bool	   *isnull;			/* [nitems], or NULL when none is */
	uint32_t   *ordinal;		/* [nitems] position among non-nulls, or NULL */
} ArrayInput;

/*
 * The loops below over every element of an array take seconds for the
 * largest ones (MaxArraySize elements, 134M), and the engine looks for a
 * cancel only while it sorts: each loop looks every 2^20 elements (about a
 * millisecond), so that statement_timeout and pg_cancel_backend stop it
 * promptly. All they hold is memory, which the error frees.
 */
static inline void
maybe_check_for_interrupts(int i)
{
	if ((i & ((1 << 20) - 1)) == 0)
		CHECK_FOR_INTERRUPTS();
}

/* How many of an array's nitems elements its null bitmap marks NULL. */
static int
count_nulls(const bits8 *bitmap, int nitems)
{
	int			nulls = nitems;

	if (bitmap == NULL)
		return 0;
	for (int byte = 0; byte < nitems / 8; byte++)
		nulls -= __builtin_popcount(bitmap[byte]);
	for (int i = nitems & ~7; i < nitems; i++)
		if (bitmap[i / 8] & (1 << (i % 8)))
			nulls--;
	return nulls;
}

/* Checks an input array and takes its shape, without reading its elements:
 * what the result will be is known here, before any work. */
static void
open_array(ArrayType *array, const char *function, bool integral_only,
		   ArrayInput *input)
{
	Oid			element_type = ARR_ELEMTYPE(array);

	memset(input, 0, sizeof(*input));
	input->array = array;
	input->type = gpusort_find_type(element_type);
	if (input->type == NULL || !input->type->array_element ||
		(integral_only && !input->type->integral))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s cannot sort arrays of type %s", function,
						format_type_be(element_type)),
				 errhint("Supported element types: %s.",
						 gpusort_type_names(integral_only))));
	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s sorts one-dimensional arrays only", function),
				 errdetail("The array has %d dimensions.", ARR_NDIM(array)),
				 errhint("Flatten it first, for example with ARRAY(SELECT unnest(a)).")));
	input->nitems = ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
	input->nnulls = count_nulls(ARR_NULLBITMAP(array), input->nitems);
	input->lower_bound = ARR_NDIM(array) == 1 ? ARR_LBOUND(array)[0] : 1;
	input->data = ARR_DATA_PTR(array);
}

/* Reads an opened array's elements into keys. */
static void
read_keys(ArrayInput *input)
{
	bits8	   *bitmap = ARR_NULLBITMAP(input->array);
	int			value_count = 0;

	if (input->nitems == 0)
		return;
	input->keys = MemoryContextAllocHuge(CurrentMemoryContext,
										 sizeof(uint64_t) * input->nitems);
	if (bitmap != NULL)
	{
		input->isnull = MemoryContextAllocHuge(CurrentMemoryContext, input->nitems);
		input->ordinal = MemoryContextAllocHuge(CurrentMemoryContext,
												sizeof(uint32_t) * input->nitems);
	}
	for (int i = 0; i < input->nitems; i++)
	{
		bool		null = bitmap != NULL && (bitmap[i / 8] & (1 << (i % 8))) == 0;

		maybe_check_for_interrupts(i);
		if (bitmap != NULL)
		{
			input->isnull[i] = null;
			input->ordinal[i] = value_count;
		}
		if (null)
		{
			input->keys[i] = 0;
			continue;
		}
		input->keys[i] = gpusort_read_key(input->type,
										  input->data + (size_t) value_count * input->type->typlen);
		value_count++;
	}
}

static void
read_array(ArrayType *array, const char *function, bool integral_only,
		   ArrayInput *input)
{
	open_array(array, function, integral_only, input);
	read_keys(input);
}

static bool
element_is_null(const ArrayInput *input, int i)
{
	return input->isnull != NULL && input->isnull[i];
}

static gs_algorithm
parse_algorithm(text *name)
{
	char	   *cname = text_to_cstring(name);
	gs_algorithm algorithm;

	if (!gs_algorithm_parse(cname, false, &algorithm))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown sort algorithm \"%s\"", cname),
				 errhint("Valid algorithms are: auto, bitonic, butterfly, radix.")));
	return algorithm;
}

/* The size of the array new_array() makes. */
static Size
array_bytes(int nitems, int nnulls, int16 typlen)
{
	Size		overhead = nnulls > 0 ? ARR_OVERHEAD_WITHNULLS(1, nitems)
		: ARR_OVERHEAD_NONULLS(1);

	return overhead + (Size) (nitems - nnulls) * typlen;
}

/* An empty one-dimensional array of the input's type and shape, ready for
 * nitems elements of which nnulls are NULL (bitmap all "not null"). */
static ArrayType *
new_array(const ArrayInput *input, Oid element_type, int16 typlen,
		  int nitems, int nnulls)
{
	int			dims[1] = {nitems};
	int			lbs[1] = {input->lower_bound};
	Size		overhead = nnulls > 0 ? ARR_OVERHEAD_WITHNULLS(1, nitems)
		: ARR_OVERHEAD_NONULLS(1);
	Size		bytes = array_bytes(nitems, nnulls, typlen);
	ArrayType  *result = MemoryContextAllocHuge(CurrentMemoryContext, bytes);

	memset(result, 0, overhead);
	SET_VARSIZE(result, bytes);
	result->ndim = 1;
	result->dataoffset = nnulls > 0 ? overhead : 0;
	result->elemtype = element_type;
	memcpy(ARR_DIMS(result), dims, sizeof(dims));
	memcpy(ARR_LBOUND(result), lbs, sizeof(lbs));
	if (nnulls > 0)
		memset((char *) result + sizeof(ArrayType) + 2 * sizeof(int), 0xff,
			   (nitems + 7) / 8);
	return result;
}

static void
mark_null(ArrayType *array, int i)
{
	ARR_NULLBITMAP(array)[i / 8] &= ~(1 << (i % 8));
}

/* The input reordered: element j of the result is input element order[j]. */
static ArrayType *
array_by_order(const ArrayInput *input, const uint32_t *order)
{
	int16		typlen = input->type->typlen;
	ArrayType  *result = new_array(input, ARR_ELEMTYPE(input->array), typlen,
								   input->nitems, input->nnulls);
	char	   *out = ARR_DATA_PTR(result);

	for (int j = 0; j < input->nitems; j++)
	{
		uint32_t	from = order[j];

		maybe_check_for_interrupts(j);
		if (element_is_null(input, from))
		{
			mark_null(result, j);
			continue;
		}
		if (input->ordinal != NULL)
			from = input->ordinal[from];
		memcpy(out, input->data + (size_t) from * typlen, typlen);
		out += typlen;
	}
	return result;
}

/*
 * Sorts the non-NULL keys of one array. Keys are stored relative to their
 * minimum (inverted from the maximum for DESC), which lets narrow ranges use
 * 32-bit keys. Returns the keys (uint32_t or uint64_t by *key_bytes) and,
 * when permutation is wanted, the array positions of the sorted values.
 */
typedef struct SortedValues
{
	int			count;
	unsigned	key_bytes;
	void	   *keys;
	uint32_t   *positions;		/* array positions, when asked for */
	uint64_t	base;			/* min key (ASC) or max key (DESC) */
	bool		descending;
	gs_sort_report report;
} SortedValues;

static void
sort_values_mode(const ArrayInput *input, gs_algorithm algorithm, uint32_t intervals,
				 gs_approx_mode approx_mode, bool descending, bool want_positions,
				 SortedValues *sorted)
{
	int			count = input->nitems - input->nnulls;
	uint64_t	min_key = UINT64_MAX,
				max_key = 0;
	uint32_t   *value_positions = NULL;
	gs_sort_request request;
	gs_status	status;
	unsigned	key_bits;

	memset(sorted, 0, sizeof(*sorted));
	sorted->count = count;
	sorted->descending = descending;
	for (int i = 0; i < input->nitems; i++)
	{
		maybe_check_for_interrupts(i);
		if (element_is_null(input, i))
			continue;
		if (input->keys[i] < min_key)
			min_key = input->keys[i];
		if (input->keys[i] > max_key)
			max_key = input->keys[i];
	}
	if (count == 0)
		return;
	sorted->base = descending ? max_key : min_key;
	key_bits = max_key == min_key ? 0 : 64 - __builtin_clzll(max_key - min_key);
	sorted->key_bytes = key_bits <= 32 ? 4 : 8;
	sorted->keys = MemoryContextAllocHuge(CurrentMemoryContext,
										  (Size) count * sorted->key_bytes);
	if (want_positions)
	{
		sorted->positions = MemoryContextAllocHuge(CurrentMemoryContext,
												   sizeof(uint32_t) * count);
		if (input->nnulls > 0)
			value_positions = MemoryContextAllocHuge(CurrentMemoryContext,
													 sizeof(uint32_t) * count);
	}
	for (int i = 0, v = 0; i < input->nitems; i++)
	{
		uint64_t	relative;

		maybe_check_for_interrupts(i);
		if (element_is_null(input, i))
			continue;
		relative = descending ? max_key - input->keys[i] : input->keys[i] - min_key;
		if (sorted->key_bytes == 4)
			((uint32_t *) sorted->keys)[v] = (uint32_t) relative;
		else
			((uint64_t *) sorted->keys)[v] = relative;
		if (value_positions != NULL)
			value_positions[v] = i;
		v++;
	}

	gpusort_request_init(&request);
	gs_sort_request_set_keys(&request, sorted->keys, count, sorted->key_bytes, key_bits,
							 sorted->positions);
	request.algorithm = algorithm;
	request.intervals = intervals;
	request.approx_mode = approx_mode;
	status = gs_sort(&request, &sorted->report);
	gpusort_check_status(status, &sorted->report);

	/* the engine's permutation counts non-NULL values; map to positions */
	if (value_positions != NULL)
		for (int v = 0; v < count; v++)
		{
			maybe_check_for_interrupts(v);
			sorted->positions[v] = value_positions[sorted->positions[v]];
		}
}

static void
sort_values(const ArrayInput *input, gs_algorithm algorithm, uint32_t intervals,
			bool descending, bool want_positions, SortedValues *sorted)
{
	sort_values_mode(input, algorithm, intervals, GS_APPROX_WIDTH, descending,
					 want_positions, sorted);
}

static uint64_t
sorted_key(const SortedValues *sorted, int v)
{
	uint64_t	relative = sorted->key_bytes == 4 ?
		((uint32_t *) sorted->keys)[v] : ((uint64_t *) sorted->keys)[v];

	return sorted->descending ? sorted->base - relative : sorted->base + relative;
}

/* Positions of the NULL elements, in input order. */
static int
null_positions(const ArrayInput *input, uint32_t *out)
{
	int			count = 0;

	for (int i = 0; i < input->nitems && input->nnulls > 0; i++)
	{
		maybe_check_for_interrupts(i);
		if (element_is_null(input, i))
			out[count++] = i;
	}
	return count;
}

/* Values (decoded from the sorted keys) with NULLs first or last. */
static ArrayType *
array_from_sorted_keys(const ArrayInput *input, const SortedValues *sorted,
					   bool nulls_first)
{
	int16		typlen = input->type->typlen;
	ArrayType  *result = new_array(input, ARR_ELEMTYPE(input->array), typlen,
								   input->nitems, input->nnulls);
	char	   *out = ARR_DATA_PTR(result);
	int			first_value = nulls_first ? input->nnulls : 0;

	for (int i = 0; i < input->nnulls; i++)
	{
		maybe_check_for_interrupts(i);
		mark_null(result, nulls_first ? i : first_value + sorted->count + i);
	}
	for (int v = 0; v < sorted->count; v++)
	{
		maybe_check_for_interrupts(v);
		gpusort_write_element(input->type, sorted_key(sorted, v),
							  out + (size_t) v * typlen);
	}
	return result;
}

/* The full order of the array: sorted values, NULLs first or last. */
static uint32_t *
full_order(const ArrayInput *input, const SortedValues *sorted, bool nulls_first)
{
	uint32_t   *order = MemoryContextAllocHuge(CurrentMemoryContext,
											   sizeof(uint32_t) * Max(input->nitems, 1));
	int			at = nulls_first ? null_positions(input, order) : 0;

	if (sorted->count > 0)
		memcpy(order + at, sorted->positions, sizeof(uint32_t) * sorted->count);
	if (!nulls_first)
		null_positions(input, order + sorted->count);
	return order;
}

Datum
gpusort_sql_sort(PG_FUNCTION_ARGS)
{
	ArrayType  *array = PG_GETARG_ARRAYTYPE_P(0);
	gs_algorithm algorithm = parse_algorithm(PG_GETARG_TEXT_PP(1));
	bool		descending = PG_GETARG_BOOL(2);
	ArrayInput	input;
	SortedValues sorted;

	read_array(array, "gpu_sort", false, &input);
	if (input.nitems == 0)
		PG_RETURN_ARRAYTYPE_P(array);
	/* integers decode exactly from their keys; floats are moved instead,
	 * so that -0 and NaN payloads come back as they went in */
	sort_values(&input, algorithm, 0, descending, !input.type->integral, &sorted);
	if (input.type->integral)
		PG_RETURN_ARRAYTYPE_P(array_from_sorted_keys(&input, &sorted, descending));
	PG_RETURN_ARRAYTYPE_P(array_by_order(&input, full_order(&input, &sorted, descending)));
}

Datum
gpusort_sql_argsort(PG_FUNCTION_ARGS)
{
	ArrayType  *array = PG_GETARG_ARRAYTYPE_P(0);
	gs_algorithm algorithm = parse_algorithm(PG_GETARG_TEXT_PP(1));
	bool		descending = PG_GETARG_BOOL(2);
	ArrayInput	input;
	SortedValues sorted;
	uint32_t   *order;
	ArrayType  *result;
	int32	   *out;

	read_array(array, "gpu_argsort", false, &input);
	if (input.nitems == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT4OID));
	sort_values(&input, algorithm, 0, descending, true, &sorted);
	order = full_order(&input, &sorted, descending);

	/* ordinal positions (1 = first element), whatever the lower bound */
	result = new_array(&input, INT4OID, sizeof(int32), input.nitems, 0);
	ARR_LBOUND(result)[0] = 1;
	out = (int32 *) ARR_DATA_PTR(result);
	for (int j = 0; j < input.nitems; j++)
	{
		maybe_check_for_interrupts(j);
		out[j] = (int32) order[j] + 1;
	}
	PG_RETURN_ARRAYTYPE_P(result);
}

/*
 * gpu_sort_pairs returns both arrays in one row value, which, like any
 * palloc'd value, holds at most MaxAllocSize bytes (1 GB): two arrays of
 * 600 MB each are fine alone but not together. Computed here as
 * heap_form_tuple() will (a header with no NULL bitmap, then each array
 * aligned), from the sizes alone, so that such a call fails at once and
 * not at the very end of the sort with "invalid memory alloc request size".
 * The other functions return one array no larger than their input, or an
 * int4 array of at most MaxArraySize elements: they always fit.
 */
static void
check_pairs_fit(TupleDesc result_type, const ArrayInput inputs[2])
{
	Size		data = 0;
	Size		bytes;

	for (int c = 0; c < 2; c++)
	{
		/* (an empty input is returned as it came) */
		Size		array = inputs[c].nitems == 0 ? VARSIZE(inputs[c].array)
			: array_bytes(inputs[c].nitems, inputs[c].nnulls, inputs[c].type->typlen);

		data = att_align_nominal(data, TupleDescAttr(result_type, c)->attalign) + array;
	}
	bytes = HEAPTUPLESIZE + MAXALIGN(SizeofHeapTupleHeader) + data;
	if (bytes > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the result of gpu_sort_pairs would be too large"),
				 errdetail("Both sorted arrays (%d elements each) go in one row value, "
						   "of %zu bytes; a value holds at most %zu.",
						   inputs[0].nitems, bytes, (Size) MaxAllocSize),
				 errhint("Sort shorter arrays, or sort the pairs as rows: "
						 "SELECT * FROM unnest(a, b) AS p(x, y) ORDER BY x, y.")));
}

Datum
gpusort_sql_sort_pairs(PG_FUNCTION_ARGS)
{
	ArrayType  *first_array = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *second_array = PG_GETARG_ARRAYTYPE_P(1);
	gs_algorithm algorithm = parse_algorithm(PG_GETARG_TEXT_PP(2));
	bool		descending = PG_GETARG_BOOL(3);
	ArrayInput	inputs[2];
	gs_key_column columns[2];
	gs_key_layout layout;
	const uint64_t *column_keys[2];
	const bool *column_nulls[2];
	uint32_t   *order;
	gs_sort_request settings;
	gs_sort_report report;
	gs_status	status;
	TupleDesc	result_type;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	open_array(first_array, "gpu_sort_pairs", false, &inputs[0]);
	open_array(second_array, "gpu_sort_pairs", false, &inputs[1]);
	if (inputs[0].nitems != inputs[1].nitems)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("gpu_sort_pairs needs arrays of the same length"),
				 errdetail("The first array has %d elements, the second %d.",
						   inputs[0].nitems, inputs[1].nitems)));
	if (get_call_result_type(fcinfo, NULL, &result_type) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "gpu_sort_pairs must return a record");
	result_type = BlessTupleDesc(result_type);
	check_pairs_fit(result_type, inputs);
	read_keys(&inputs[0]);
	read_keys(&inputs[1]);

	order = MemoryContextAllocHuge(CurrentMemoryContext,
								   sizeof(uint32_t) * Max(inputs[0].nitems, 1));
	for (int c = 0; c < 2; c++)
	{
		gs_key_column_init(&columns[c], descending, descending);
		for (int i = 0; i < inputs[c].nitems; i++)
		{
			maybe_check_for_interrupts(i);
			gs_key_column_observe(&columns[c], element_is_null(&inputs[c], i),
								  inputs[c].keys[i]);
		}
		column_keys[c] = inputs[c].keys;
		column_nulls[c] = inputs[c].isnull;
	}
	if (gs_key_layout_build(&layout, columns, 2) != GS_OK)
		elog(ERROR, "gpusort: could not lay out the pair keys");
	gpusort_request_init(&settings);
	settings.algorithm = algorithm;
	status = gs_sort_rows(&layout, inputs[0].nitems, column_keys, column_nulls,
						  &settings, order, &report);
	gpusort_check_status(status, &report);

	for (int c = 0; c < 2; c++)
		values[c] = inputs[c].nitems == 0 ? PointerGetDatum(inputs[c].array)
			: PointerGetDatum(array_by_order(&inputs[c], order));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(result_type, values, nulls)));
}

Datum
gpusort_sql_approx_sort(PG_FUNCTION_ARGS)
{
	ArrayType  *array = PG_GETARG_ARRAYTYPE_P(0);
	int32		intervals = PG_GETARG_INT32(1);
	bool		descending = PG_GETARG_BOOL(2);
	gs_approx_mode mode = GS_APPROX_WIDTH;
	int32		most = (int32) (1 << 26);
	ArrayInput	input;
	SortedValues sorted;

	/* SQL 1.3 and older have no mode argument: the equal widths */
	if (PG_NARGS() > 3)
	{
		char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(3));

		if (!gs_approx_mode_parse(name, &mode))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown approximate sort mode \"%s\"", name),
					 errhint("Use 'width' (equal-width intervals) or 'quantile' "
							 "(intervals at a sample's quantiles).")));
	}
	if (mode == GS_APPROX_QUANTILE)
		most = (int32) GS_QUANTILE_MAX_INTERVALS;
	if (intervals < 1 || intervals > most)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("intervals must be between 1 and %d, not %d", most, intervals),
				 mode == GS_APPROX_QUANTILE ?
				 errhint("The quantile mode makes 2 * intervals - 1 buckets.") : 0));
	/* equal widths of float keys would be widths of their bit patterns */
	read_array(array, "gpu_approx_sort", mode == GS_APPROX_WIDTH, &input);
	if (input.nitems == 0)
		PG_RETURN_ARRAYTYPE_P(array);
	sort_values_mode(&input, GS_ALGO_APPROX, (uint32_t) intervals, mode, descending, false,
					 &sorted);
	PG_RETURN_ARRAYTYPE_P(array_from_sorted_keys(&input, &sorted, descending));
}

Datum
gpusort_sql_minmax(PG_FUNCTION_ARGS)
{
	ArrayType  *array = PG_GETARG_ARRAYTYPE_P(0);
	ArrayInput	input;
	TupleDesc	result_type;
	Datum		values[2] = {0, 0};
	bool		nulls[2] = {true, true};
	int			count;

	read_array(array, "gpu_minmax", false, &input);
	if (get_call_result_type(fcinfo, NULL, &result_type) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "gpu_minmax must return a record");
	result_type = BlessTupleDesc(result_type);
	count = input.nitems - input.nnulls;
	if (count > 0)
	{
		uint64_t   *keys = MemoryContextAllocHuge(CurrentMemoryContext,
												  sizeof(uint64_t) * count);
		uint64_t	min_key,
					max_key;
		gs_sort_request request;
		gs_sort_report report;

		for (int i = 0, v = 0; i < input.nitems; i++)
		{
			maybe_check_for_interrupts(i);
			if (!element_is_null(&input, i))
				keys[v++] = input.keys[i];
		}
		gpusort_request_init(&request);
		gs_sort_request_set_keys(&request, keys, count, 8, 64, NULL);
		gpusort_check_status(gs_minmax(&request, &min_key, &max_key, &report), &report);
		values[0] = input.type->decode(min_key);
		values[1] = input.type->decode(max_key);
		nulls[0] = nulls[1] = false;
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(result_type, values, nulls)));
}
