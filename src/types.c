/*
 * types.c — the SQL types gpusort sorts, and how each becomes an
 * order-preserving unsigned key.
 *
 * Integers (int2, int4, int8) and the types stored as integers (date,
 * timestamp, timestamptz) map to uint64 by flipping the sign bit; their
 * order, the default btree order, is the integer order, and they decode
 * exactly. float4 and float8 map through the IEEE bits in PostgreSQL's
 * order (NaN above +Infinity, -0 equal to +0); sorts of floats therefore move
 * the original values by permutation instead of decoding keys.
 */
#include "gpusort.h"

#include "catalog/pg_type_d.h"
#include "utils/date.h"
#include "utils/timestamp.h"

static uint64_t
encode_int2(Datum value)
{
	return gs_encode_int64(DatumGetInt16(value));
}

static Datum
decode_int2(uint64_t key)
{
	return Int16GetDatum((int16) gs_decode_int64(key));
}

static uint64_t
encode_int4(Datum value)
{
	return gs_encode_int64(DatumGetInt32(value));
}

static Datum
decode_int4(uint64_t key)
{
	return Int32GetDatum((int32) gs_decode_int64(key));
}

static uint64_t
encode_int8(Datum value)
{
	return gs_encode_int64(DatumGetInt64(value));
}

static Datum
decode_int8(uint64_t key)
{
	return Int64GetDatum(gs_decode_int64(key));
}

static uint64_t
encode_float4(Datum value)
{
	return gs_encode_float8((double) DatumGetFloat4(value));
}

static Datum
decode_float4(uint64_t key)
{
	return Float4GetDatum((float4) gs_decode_float8(key));
}

static uint64_t
encode_float8(Datum value)
{
	return gs_encode_float8(DatumGetFloat8(value));
}

static Datum
decode_float8(uint64_t key)
{
	return Float8GetDatum(gs_decode_float8(key));
}

static const GpuSortType supported_types[] = {
	{INT2OID, 2, true, encode_int2, decode_int2},
	{INT4OID, 4, true, encode_int4, decode_int4},
	{INT8OID, 8, true, encode_int8, decode_int8},
	{DATEOID, 4, true, encode_int4, decode_int4},
	{TIMESTAMPOID, 8, true, encode_int8, decode_int8},
	{TIMESTAMPTZOID, 8, true, encode_int8, decode_int8},
	{FLOAT4OID, 4, false, encode_float4, decode_float4},
	{FLOAT8OID, 8, false, encode_float8, decode_float8},
};

const GpuSortType *
gpusort_find_type(Oid type)
{
	for (int i = 0; i < lengthof(supported_types); i++)
		if (supported_types[i].type == type)
			return &supported_types[i];
	return NULL;
}

/* For error hints. */
const char *
gpusort_type_names(bool integral_only)
{
	if (integral_only)
		return "smallint, integer, bigint, date, timestamp, timestamptz";
	return "smallint, integer, bigint, date, timestamp, timestamptz, real, double precision";
}

/* Reads one array element (typlen bytes, aligned) as a key. */
uint64_t
gpusort_read_key(const GpuSortType *type, const char *element)
{
	switch (type->typlen)
	{
		case 2:
			return type->encode(Int16GetDatum(*(const int16 *) element));
		case 4:
			return type->encode(Int32GetDatum(*(const int32 *) element));
		default:
			return type->encode(Int64GetDatum(*(const int64 *) element));
	}
}

/* Writes a key back as one array element (integral types only). */
void
gpusort_write_element(const GpuSortType *type, uint64_t key, char *element)
{
	Datum		value = type->decode(key);

	switch (type->typlen)
	{
		case 2:
			*(int16 *) element = DatumGetInt16(value);
			break;
		case 4:
			*(int32 *) element = DatumGetInt32(value);
			break;
		default:
			*(int64 *) element = DatumGetInt64(value);
			break;
	}
}
