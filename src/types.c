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
 *
 * ORDER BY also takes other types whose default btree order fits exactly
 * in at most 128 bits: bool, "char", oid, money, time, pg_lsn, macaddr,
 * macaddr8, tid, xid8 and every enum in one word; timetz, interval and
 * uuid in two. A key of two
 * words is two engine key columns (the planner expands it, GpuSortPlanInfo's
 * key_part says which word a column holds), compared high word first: the
 * engine, the merges and the bounds compare key columns in order anyway,
 * so no part of the row store knows; encode_words() fills all of a key's
 * words in one call, read once per row. No key of these types ties unless
 * the comparator says its values are equal, so none needs resolving.
 *
 * Strings (text, varchar, bpchar, name, bytea) under a collation that
 * orders by bytes become a prefix of a few words (prefix_words()), under
 * an ICU collation a prefix of their ICU sort key (sort_key_prefix_words();
 * libc collations are left to PostgreSQL, said there); rows
 * whose prefixes tie where a prefix does not determine its value are put
 * in order by PostgreSQL's own comparator afterwards (tie_resolver.c).
 * numeric is sorted so on PostgreSQL's abbreviated key (encode_numeric()),
 * and inet/cidr on three words that hold all but long IPv6 host parts
 * (encode_inet()).
 */
#include "gpusort.h"

#include <sys/socket.h>			/* AF_INET, under inet.h's PGSQL_AF_INET */

#include "catalog/pg_enum.h"
#include "catalog/pg_type_d.h"
#include "port/pg_bswap.h"
#include "utils/builtins.h"
#include "utils/cash.h"
#include "utils/catcache.h"
#include "utils/date.h"
#include "utils/fmgrprotos.h"
#include "utils/inet.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/sortsupport.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
#include "utils/xid8.h"

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

/* bool and "char": btcharcmp compares "char" as unsigned */
static uint64_t
encode_bool(Datum value)
{
	return DatumGetBool(value) ? 1 : 0;
}

static uint64_t
encode_char(Datum value)
{
	return (uint8) DatumGetChar(value);
}

/* oid and pg_lsn: unsigned already */
static uint64_t
encode_oid(Datum value)
{
	return DatumGetObjectId(value);
}

static uint64_t
encode_uint64(Datum value)
{
	return (uint64_t) DatumGetInt64(value);
}

/* tid (ItemPointerCompare): by block, then by line pointer */
static uint64_t
encode_tid(Datum value)
{
	ItemPointer tid = (ItemPointer) DatumGetPointer(value);

	return ((uint64_t) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
		ItemPointerGetOffsetNumberNoCheck(tid);
}

/*
 * Enums (enum_cmp()): by each label's sort position, pg_enum.enumsortorder,
 * not by its OID (ALTER TYPE ... ADD VALUE BEFORE puts a new OID anywhere
 * in the order). The key is the position's float4 bits made unsigned in
 * its order (no position is NaN or -0). Each process reads its type's
 * labels when its sort begins (gpusort_find_key_type()) into a table
 * sorted by OID, where a row's label is found by binary search; the
 * processes of one parallel sort then take the leader's
 * (gpusort_enum_places_adopt()).
 *
 * A label missing from the table was added since (another session's,
 * read by a function the query calls, or the query's own): the table is
 * read again. Positions of labels do not move when others are added, so
 * the keys made already stay right, unless PostgreSQL renumbered the
 * type's labels meanwhile (an ADD VALUE ... BEFORE that found no room
 * between two positions, pg_enum.c's RenumberEnumType()): then the sort
 * stops with an error that asks to run it again. A label still missing is
 * no label of the type (PostgreSQL's comparator raises an error for it
 * too).
 */
struct GpuSortEnumPlaces
{
	Oid			type;
	MemoryContext context;		/* where the table lives */
	int			nvalues;
	Oid		   *oids;			/* ascending */
	uint32	   *keys;			/* oids[i]'s sort position, as a key */
};

typedef struct EnumLabel
{
	Oid			oid;
	uint32		key;
} EnumLabel;

static int
compare_enum_oids(const void *a, const void *b)
{
	Oid			x = ((const EnumLabel *) a)->oid;
	Oid			y = ((const EnumLabel *) b)->oid;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* a float4 sort position as an unsigned key in its order */
static uint32
sort_position_key(float4 position)
{
	uint32		bits;

	memcpy(&bits, &position, sizeof(bits));
	return (bits & 0x80000000) ? ~bits : bits | 0x80000000;
}

/* The type's labels, now, into new arrays of the table (one catalog scan,
 * one snapshot: enumsortorder may only be read so, pg_enum.c says) */
static void
read_enum_places(GpuSortEnumPlaces *places)
{
	CatCList   *list = SearchSysCacheList1(ENUMTYPOIDNAME, ObjectIdGetDatum(places->type));
	EnumLabel  *labels = palloc(sizeof(EnumLabel) * Max(list->n_members, 1));
	int			n = list->n_members;

	for (int i = 0; i < n; i++)
	{
		Form_pg_enum member = (Form_pg_enum) GETSTRUCT(&list->members[i]->tuple);

		labels[i].oid = member->oid;
		labels[i].key = sort_position_key(member->enumsortorder);
	}
	ReleaseSysCacheList(list);
	qsort(labels, n, sizeof(EnumLabel), compare_enum_oids);
	places->oids = MemoryContextAlloc(places->context, sizeof(Oid) * Max(n, 1));
	places->keys = MemoryContextAlloc(places->context, sizeof(uint32) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		places->oids[i] = labels[i].oid;
		places->keys[i] = labels[i].key;
	}
	places->nvalues = n;
	pfree(labels);
}

static GpuSortEnumPlaces *
enum_places_create(Oid type)
{
	GpuSortEnumPlaces *places = palloc0(sizeof(GpuSortEnumPlaces));

	places->type = type;
	places->context = CurrentMemoryContext;
	/* every label committed before the query's snapshot, taken already */
	AcceptInvalidationMessages();
	read_enum_places(places);
	return places;
}

/* The label's key, or -1 where the table has no such label. */
static int64
find_enum_key(const GpuSortEnumPlaces *places, Oid value)
{
	int			low = 0;
	int			high = places->nvalues - 1;

	while (low <= high)
	{
		int			middle = low + (high - low) / 2;

		if (places->oids[middle] == value)
			return places->keys[middle];
		if (places->oids[middle] < value)
			low = middle + 1;
		else
			high = middle - 1;
	}
	return -1;
}

/* Did every label of the old table keep its key in `places`? */
static bool
enum_keys_kept(const GpuSortEnumPlaces *places, const Oid *old_oids, const uint32 *old_keys,
			   int old_nvalues)
{
	for (int i = 0; i < old_nvalues; i++)
		if (find_enum_key(places, old_oids[i]) != (int64) old_keys[i])
			return false;
	return true;
}

uint64_t
gpusort_enum_key(GpuSortEnumPlaces *places, Datum value)
{
	Oid			oid = DatumGetObjectId(value);
	int64		key = find_enum_key(places, oid);

	if (unlikely(key < 0))
	{
		Oid		   *old_oids = places->oids;
		uint32	   *old_keys = places->keys;
		int			old_nvalues = places->nvalues;

		AcceptInvalidationMessages();
		read_enum_places(places);
		key = find_enum_key(places, oid);
		if (key < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("invalid internal value for enum: %u", oid)));
		if (!enum_keys_kept(places, old_oids, old_keys, old_nvalues))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("gpusort: the labels of enum %s were renumbered while its rows were sorted",
							format_type_be(places->type)),
					 errhint("Run the query again.")));
		pfree(old_oids);
		pfree(old_keys);
	}
	return (uint64_t) key;
}

/*
 * An enum's table in parallel query's shared memory (parallel_sort.c):
 * the leader writes its own, and every process that sorts a share of the
 * rows encodes with it, so that keys agree among the runs and the rows
 * job the processes all fill. (A worker's own table, read later, could
 * come after a renumbering.)
 */
Size
gpusort_enum_places_size(const GpuSortEnumPlaces *places)
{
	return MAXALIGN(sizeof(int32) + (Size) places->nvalues * (sizeof(Oid) + sizeof(uint32)));
}

void
gpusort_enum_places_write(const GpuSortEnumPlaces *places, char *area)
{
	int32		nvalues = places->nvalues;

	memcpy(area, &nvalues, sizeof(int32));
	memcpy(area + sizeof(int32), places->oids, sizeof(Oid) * nvalues);
	memcpy(area + sizeof(int32) + sizeof(Oid) * nvalues, places->keys,
		   sizeof(uint32) * nvalues);
}

void
gpusort_enum_places_adopt(GpuSortEnumPlaces *places, const char *area)
{
	int32		nvalues;

	memcpy(&nvalues, area, sizeof(int32));
	pfree(places->oids);
	pfree(places->keys);
	places->oids = MemoryContextAlloc(places->context, sizeof(Oid) * Max(nvalues, 1));
	places->keys = MemoryContextAlloc(places->context, sizeof(uint32) * Max(nvalues, 1));
	memcpy(places->oids, area + sizeof(int32), sizeof(Oid) * nvalues);
	memcpy(places->keys, area + sizeof(int32) + sizeof(Oid) * nvalues,
		   sizeof(uint32) * nvalues);
	places->nvalues = nvalues;
}

/* The entry every enum type finds: its places come with
 * gpusort_find_key_type(), and no key is encoded without them. */
static uint64_t
encode_enum_without_places(Datum value)
{
	elog(ERROR, "gpusort: an enum key without its type's order");
	return 0;
}

/* `bytes` big-endian bytes from `data` as an unsigned number: memcmp order */
static inline uint64_t
big_endian(const uint8 *data, int bytes)
{
	uint64_t	word = 0;

	if (bytes == 8)
	{
		memcpy(&word, data, 8);
		return pg_ntoh64(word);
	}
	for (int i = 0; i < bytes; i++)
		word = (word << 8) | data[i];
	return word;
}

/* uuid_cmp is memcmp of the 16 bytes: the high 8 bytes, then the low 8 */
static void
encode_uuid(Datum value, uint64_t *words)
{
	const pg_uuid_t *uuid = DatumGetUUIDP(value);

	words[0] = big_endian(uuid->data, 8);
	words[1] = big_endian(uuid->data + 8, 8);
}

/* macaddr_cmp_internal: the 6 bytes in order (hibits, then lobits) */
static uint64_t
encode_macaddr(Datum value)
{
	return big_endian((const uint8 *) DatumGetMacaddrP(value), 6);
}

static uint64_t
encode_macaddr8(Datum value)
{
	return big_endian((const uint8 *) DatumGetMacaddr8P(value), 8);
}

/*
 * inet and cidr (network_cmp_internal()): by family (IPv4 first); then
 * by the bits of the two addresses under the shorter netmask; then the
 * shorter netmask first; then the whole address. That is the order of
 * (family, the network: the address's bits under its own netmask, the
 * rest zero; the netmask's length; the host: the address's bits after
 * its netmask), compared in turn: where two networks differ under the
 * shorter netmask so do they (zeros after it), and a network that is a
 * prefix of the other ties on the bits there and then sorts first by its
 * shorter netmask; where network and netmask are equal, the addresses
 * differ only in their host bits. Three words hold, most significant
 * first: the family (1 bit), the network (128 bits, an IPv4 one in its
 * first 32), the netmask's length (8 bits), the first 47 host bits, and
 * the low byte: 1 where host bits beyond those are set. An IPv4 address
 * (at most 32 host bits) and an IPv6 one of a netmask of 81 bits or more
 * (a /128, as an inet address is by default) are all there; other IPv6
 * addresses that tie are put in order by the comparator (tie_resolver.c),
 * as a string's longer than its prefix are. A value whose further host
 * bits are zero sorts before one whose are set, as it should.
 */
#define INET_HOST_BITS 47

static void
encode_inet(Datum value, uint64_t *words)
{
	inet	   *address = DatumGetInetPP(value);
	bool		ipv6 = ip_family(address) == PGSQL_AF_INET6;
	int			bits = ip_bits(address);
	unsigned __int128 whole = 0;
	unsigned __int128 network;
	unsigned __int128 host;
	unsigned __int128 high;
	uint64_t	flag;

	/* the address left-aligned in 128 bits */
	for (int i = 0; i < (ipv6 ? 16 : 4); i++)
		whole |= (unsigned __int128) ip_addr(address)[i] << (120 - 8 * i);
	bits = Min(bits, ipv6 ? 128 : 32);
	network = bits == 0 ? 0 : whole & (~(unsigned __int128) 0 << (128 - bits));
	host = bits == 128 ? 0 : whole << bits;
	flag = (host << INET_HOST_BITS) != 0 ? 1 : 0;
	high = ((unsigned __int128) (ipv6 ? 1 : 0) << 127) | (network >> 1);
	words[0] = (uint64_t) (high >> 64);
	words[1] = (uint64_t) high;
	words[2] = ((uint64_t) (network & 1) << 63) | ((uint64_t) bits << 55) |
		((uint64_t) (host >> (128 - INET_HOST_BITS)) << 8) | flag;
	if ((Pointer) address != DatumGetPointer(value))
		pfree(address);
}

/*
 * timetz_cmp_internal: by the UTC time (time + zone seconds), then by the
 * zone; both are small enough for int64 (the time is within a day, the
 * zone within +-16 hours).
 */
static void
encode_timetz(Datum value, uint64_t *words)
{
	const TimeTzADT *time = DatumGetTimeTzADTP(value);

	words[0] = gs_encode_int64(time->time + (int64) time->zone * USECS_PER_SEC);
	words[1] = gs_encode_int64(time->zone);
}

/*
 * interval_cmp_value: months as 30 days, days as 24 hours, all in
 * microseconds, a 128-bit span (PostgreSQL 17's infinite intervals, every
 * field at its extreme, land beyond every finite span as they compare).
 * Its high 64 bits are signed, the low ones unsigned.
 */
static void
encode_interval(Datum value, uint64_t *words)
{
	const Interval *interval = DatumGetIntervalP(value);
	__int128	span = (__int128) interval->time +
		(__int128) ((int64) interval->month * 30 + interval->day) * USECS_PER_DAY;

	words[0] = gs_encode_int64((int64) (span >> 64));
	words[1] = (uint64_t) span;
}

/*
 * Strings: a prefix of type->nwords words (GPUSORT_PREFIX_WORDS unless
 * the planner chose a wider one, gpusort_prefix_words_for_sample()),
 * compared as unsigned words in order, whose bytes are the value's first
 * nwords * 8 - 1 bytes (zero after its end; only its first
 * type->prefix_bytes where the row store narrowed it) and whose last byte says
 * whether the value may go on beyond them (1) or is all there (0). Under a
 * collation that orders by bytes (the planner allows no other), a value
 * that is all there and holds no zero byte (text never does; bytea may) is
 * determined by its prefix: equal prefixes of two such values are equal
 * values. A value that is all there sorts before one that goes on with the
 * same bytes, as it should: it is a prefix of that one, and shorter. Equal
 * prefixes that go on are ties for the comparator (tie_resolver.c).
 */
/* The bytes of a string's value its prefix holds (before the flag's). */
static inline size_t
value_bytes(const GpuSortType *type)
{
	return type->prefix_bytes > 0 ? (size_t) type->prefix_bytes : (size_t) type->nwords * 8 - 1;
}

static void
prefix_words(const GpuSortType *type, const uint8 *bytes, size_t length, bool may_hold_zero,
			 uint64_t *words)
{
	uint8		prefix[GPUSORT_ENCODE_MAX_WORDS * 8];
	int			nwords = type->nwords;
	size_t		held = value_bytes(type);

	Assert(nwords >= 1 && nwords <= GPUSORT_ENCODE_MAX_WORDS);
	Assert(held <= (size_t) nwords * 8 - 1);
	memset(prefix, 0, sizeof(prefix));
	memcpy(prefix, bytes, Min(length, held));
	prefix[nwords * 8 - 1] = length > held ||
		(may_hold_zero && memchr(bytes, 0, length) != NULL) ? 1 : 0;
	for (int w = 0; w < nwords; w++)
		words[w] = big_endian(prefix + 8 * w, 8);
}

/* text and varchar: the bytes of the string */
static void
encode_text(const GpuSortType *type, Datum value, uint64_t *words)
{
	struct varlena *text = PG_DETOAST_DATUM_PACKED(value);

	prefix_words(type, (const uint8 *) VARDATA_ANY(text), VARSIZE_ANY_EXHDR(text), false,
				 words);
	if ((Pointer) text != DatumGetPointer(value))
		pfree(text);
}

/* bpchar: bpcharcmp ignores trailing spaces */
static void
encode_bpchar(const GpuSortType *type, Datum value, uint64_t *words)
{
	struct varlena *text = PG_DETOAST_DATUM_PACKED(value);

	prefix_words(type, (const uint8 *) VARDATA_ANY(text),
				 bpchartruelen(VARDATA_ANY(text), VARSIZE_ANY_EXHDR(text)), false,
				 words);
	if ((Pointer) text != DatumGetPointer(value))
		pfree(text);
}

/* name: NAMEDATALEN bytes, the name up to its first zero */
static void
encode_name(const GpuSortType *type, Datum value, uint64_t *words)
{
	const char *name = NameStr(*DatumGetName(value));

	prefix_words(type, (const uint8 *) name, strnlen(name, NAMEDATALEN), false, words);
}

/* bytea: byteacmp is memcmp, then the shorter first; zero bytes allowed */
static void
encode_bytea(const GpuSortType *type, Datum value, uint64_t *words)
{
	struct varlena *bytes = PG_DETOAST_DATUM_PACKED(value);

	prefix_words(type, (const uint8 *) VARDATA_ANY(bytes), VARSIZE_ANY_EXHDR(bytes), true,
				 words);
	if ((Pointer) bytes != DatumGetPointer(value))
		pfree(bytes);
}

/*
 * Strings under an ICU collation (compat.h): the prefix's bytes are the
 * first nwords * 8 - 1 bytes of the value's ICU sort key (zero after a
 * shorter key: a sort key holds no zero byte, so a key that ends sorts
 * before every longer one it begins, as memcmp of whole keys has it), and
 * the flag is always 1: equal sort keys are not equal strings, neither
 * under a deterministic collation (PostgreSQL breaks those ties by the
 * bytes) nor under a nondeterministic one (where the comparator may well
 * call them equal: ties). Every group of equal prefixes goes to the
 * comparator, which orders it as PostgreSQL's sort does; a prefix that
 * differs orders its rows as the collation does, the guarantee of sort
 * keys.
 *
 * libc collations get no prefixes: strxfrm() is what PostgreSQL stopped
 * trusting (TRUST_STRXFRM), glibc's having disagreed with its strcoll().
 * A prefix that misorders two rows in memory could be caught by checking
 * neighbours with the comparator afterwards, but not in a merge of runs
 * or against a bounded sort's threshold, where a row is placed or dropped
 * on its prefix alone. A wrong row is worse than a slow one: libc
 * collations stay PostgreSQL's sort.
 */
static void
sort_key_prefix_words(const GpuSortType *type, const char *string, size_t length,
					  uint64_t *words)
{
	uint8		prefix[GPUSORT_ENCODE_MAX_WORDS * 8];
	size_t		held = value_bytes(type);
	size_t		written;

	Assert(type->nwords >= 1 && type->nwords <= GPUSORT_ENCODE_MAX_WORDS);
	memset(prefix, 0, sizeof(prefix));
	written = gpusort_sort_key_prefix(type->locale, string, length, prefix, held);
	Assert(written <= held);
	(void) written;				/* the bytes after a shorter key stay zero */
	prefix[type->nwords * 8 - 1] = 1;
	for (int w = 0; w < type->nwords; w++)
		words[w] = big_endian(prefix + 8 * w, 8);
}

static void
encode_text_collated(const GpuSortType *type, Datum value, uint64_t *words)
{
	struct varlena *text = PG_DETOAST_DATUM_PACKED(value);

	sort_key_prefix_words(type, VARDATA_ANY(text), VARSIZE_ANY_EXHDR(text), words);
	if ((Pointer) text != DatumGetPointer(value))
		pfree(text);
}

/* bpcharcmp compares the values without their trailing spaces */
static void
encode_bpchar_collated(const GpuSortType *type, Datum value, uint64_t *words)
{
	struct varlena *text = PG_DETOAST_DATUM_PACKED(value);

	sort_key_prefix_words(type, VARDATA_ANY(text),
						  bpchartruelen(VARDATA_ANY(text), VARSIZE_ANY_EXHDR(text)), words);
	if ((Pointer) text != DatumGetPointer(value))
		pfree(text);
}

/* namecmp compares the names up to their first zero */
static void
encode_name_collated(const GpuSortType *type, Datum value, uint64_t *words)
{
	const char *name = NameStr(*DatumGetName(value));

	sort_key_prefix_words(type, name, strnlen(name, NAMEDATALEN), words);
}

/*
 * numeric: PostgreSQL's own abbreviated key (numeric_sortsupport()'s
 * converter, the same on 15 and 18), a signed 64-bit number that orders
 * numerics backwards (NaN lowest, then +Infinity, ..., -Infinity highest:
 * numeric_cmp_abbrev() compares it so): inverted, it is a key in numeric
 * order, NaN above +Infinity. Equal abbreviations may hide different
 * values (more digits than it holds, weights beyond its range), so the
 * second word, the flag, always says the prefix may not determine the
 * value, and the comparator decides every tie. The converter needs its
 * SortSupport, one per process: it keeps no state that matters (only an
 * estimate of distinct values, which nothing here reads).
 */
static SortSupportData numeric_abbreviation;
static bool numeric_abbreviation_ready = false;

static void
encode_numeric(Datum value, uint64_t *words)
{
	if (!numeric_abbreviation_ready)
	{
		memset(&numeric_abbreviation, 0, sizeof(numeric_abbreviation));
		numeric_abbreviation.ssup_cxt = TopMemoryContext;
		numeric_abbreviation.abbreviate = true;
		DirectFunctionCall1(numeric_sortsupport, PointerGetDatum(&numeric_abbreviation));
		if (numeric_abbreviation.abbrev_converter == NULL)
			elog(ERROR, "gpusort: numeric has no abbreviated keys");
		numeric_abbreviation_ready = true;
	}
	words[0] = ~gs_encode_int64(DatumGetInt64(numeric_abbreviation.abbrev_converter(value,
																					&numeric_abbreviation)));
	words[1] = 1;
}

/*
 * type, typlen, byval, integral, array element, words, prefix only,
 * encode (one word), encode_words (more), decode, encode_prefix (a
 * string's prefix, as wide as the key type's nwords).
 * Only the first eight are array elements (array_functions.c reads them as
 * 2-, 4- or 8-byte values and writes integral ones back from their keys);
 * the others are ORDER BY keys only, and none of them is integral: the
 * approximate opt-in stays one integer-like key.
 */
static const GpuSortType supported_types[] = {
	{INT2OID, 2, true, true, true, 1, false, encode_int2, NULL, decode_int2},
	{INT4OID, 4, true, true, true, 1, false, encode_int4, NULL, decode_int4},
	{INT8OID, 8, true, true, true, 1, false, encode_int8, NULL, decode_int8},
	{DATEOID, 4, true, true, true, 1, false, encode_int4, NULL, decode_int4},
	{TIMESTAMPOID, 8, true, true, true, 1, false, encode_int8, NULL, decode_int8},
	{TIMESTAMPTZOID, 8, true, true, true, 1, false, encode_int8, NULL, decode_int8},
	{FLOAT4OID, 4, true, false, true, 1, false, encode_float4, NULL, decode_float4},
	{FLOAT8OID, 8, true, false, true, 1, false, encode_float8, NULL, decode_float8},
	{BOOLOID, 1, true, false, false, 1, false, encode_bool, NULL, NULL},
	{CHAROID, 1, true, false, false, 1, false, encode_char, NULL, NULL},
	{OIDOID, 4, true, false, false, 1, false, encode_oid, NULL, NULL},
	{CASHOID, 8, true, false, false, 1, false, encode_int8, NULL, NULL},
	{TIMEOID, 8, true, false, false, 1, false, encode_int8, NULL, NULL},
	{PG_LSNOID, 8, true, false, false, 1, false, encode_uint64, NULL, NULL},
	{XID8OID, 8, true, false, false, 1, false, encode_uint64, NULL, NULL},
	{TIDOID, 6, false, false, false, 1, false, encode_tid, NULL, NULL},
	{MACADDROID, 6, false, false, false, 1, false, encode_macaddr, NULL, NULL},
	{MACADDR8OID, 8, false, false, false, 1, false, encode_macaddr8, NULL, NULL},
	{TIMETZOID, 12, false, false, false, 2, false, NULL, encode_timetz, NULL},
	{INTERVALOID, 16, false, false, false, 2, false, NULL, encode_interval, NULL},
	{UUIDOID, 16, false, false, false, 2, false, NULL, encode_uuid, NULL},
	{INETOID, -1, false, false, false, 3, true, NULL, encode_inet, NULL},
	{CIDROID, -1, false, false, false, 3, true, NULL, encode_inet, NULL},
	/* variable-length: read through slot_getattr(), typlen -1 */
	{TEXTOID, -1, false, false, false, GPUSORT_PREFIX_WORDS, true, NULL, NULL, NULL, encode_text},
	{VARCHAROID, -1, false, false, false, GPUSORT_PREFIX_WORDS, true, NULL, NULL, NULL, encode_text},
	{BPCHAROID, -1, false, false, false, GPUSORT_PREFIX_WORDS, true, NULL, NULL, NULL, encode_bpchar},
	{NAMEOID, NAMEDATALEN, false, false, false, GPUSORT_PREFIX_WORDS, true, NULL, NULL, NULL, encode_name},
	{BYTEAOID, -1, false, false, false, GPUSORT_PREFIX_WORDS, true, NULL, NULL, NULL, encode_bytea},
	{NUMERICOID, -1, false, false, false, 2, true, NULL, encode_numeric, NULL},
};

/* every enum type (its own OID is the plan's key type) */
static const GpuSortType enum_type =
{ANYENUMOID, 4, true, false, false, 1, false, encode_enum_without_places, NULL, NULL};

const GpuSortType *
gpusort_find_type(Oid type)
{
	for (int i = 0; i < lengthof(supported_types); i++)
		if (supported_types[i].type == type)
			return &supported_types[i];
	if (OidIsValid(type) && type_is_enum(type))
		return &enum_type;
	return NULL;
}

/*
 * May a key of `type` under `collation` be a GpuSort key? Every supported
 * type but the collatable strings; those under a collation that orders by
 * bytes, or has ICU sort keys (gpusort_sort_key_locale()).
 */
bool
gpusort_key_collation_supported(Oid type, Oid collation)
{
	const GpuSortType *key_type = gpusort_find_type(type);

	if (key_type == NULL)
		return false;
	if (!key_type->prefix_only || !type_is_collatable(type) ||
		gpusort_collation_is_bytewise(collation))
		return true;
	return gpusort_sort_key_locale(collation) != NULL;
}

/*
 * The type as a key under `collation`, `nwords` words wide (a string's
 * prefix; any other type has its own width and ignores it):
 * gpusort_find_type()'s, or a copy in the current memory context for a
 * string whose prefix is wider than the default or that encodes from sort
 * keys (the locale lives as long as the backend), and for an enum, with
 * its values' places read now.
 */
const GpuSortType *
gpusort_find_key_type(Oid type, Oid collation, int nwords)
{
	const GpuSortType *key_type = gpusort_find_type(type);
	GpuSortType *copy;
	bool		collated;

	if (key_type == &enum_type)
	{
		copy = palloc(sizeof(GpuSortType));
		*copy = enum_type;
		copy->enum_places = enum_places_create(type);
		return copy;
	}
	if (key_type == NULL || !gpusort_prefix_may_widen(key_type))
		return key_type;
	collated = type_is_collatable(type) && !gpusort_collation_is_bytewise(collation);
	if (!collated && nwords == key_type->nwords)
		return key_type;
	if (nwords < 1 || nwords > GPUSORT_ENCODE_MAX_WORDS)
		elog(ERROR, "gpusort: a string key of %d words", nwords);
	copy = palloc(sizeof(GpuSortType));
	*copy = *key_type;
	copy->nwords = nwords;
	if (!collated)
		return copy;
	copy->locale = gpusort_sort_key_locale(collation);
	if (copy->locale == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpusort: collation %u has no sort keys GpuSort can use", collation),
				 errhint("The plan was made for another collation setup; plan the query again.")));
	switch (type)
	{
		case BPCHAROID:
			copy->encode_prefix = encode_bpchar_collated;
			break;
		case NAMEOID:
			copy->encode_prefix = encode_name_collated;
			break;
		default:				/* text, varchar */
			copy->encode_prefix = encode_text_collated;
			break;
	}
	return copy;
}

/* A string, whose prefix may be wider than GPUSORT_PREFIX_WORDS. */
bool
gpusort_prefix_may_widen(const GpuSortType *type)
{
	return type->encode_prefix != NULL;
}

/*
 * How many words a string key's prefix should have (GPUSORT_PREFIX_WORDS
 * to max_words), from a sample of the column: its most common values,
 * each with the share of rows it has, and its histogram's bounds, spread
 * evenly over the other rows (pg_statistic's MCV and histogram slots).
 *
 * Rows tie at a width when their prefixes are equal and the values go on
 * beyond it: the comparator then orders them (tie_resolver.c), which can
 * cost more than the whole sort of the prefixes (every row of a name-like
 * column whose first 15 bytes are shared). At each width, the share of
 * rows that would tie is estimated as
 *   - every row of a common value that goes on beyond the width, and
 *   - of the other rows, the share between two neighbouring bounds whose
 *     prefixes are equal and go on (the bounds' prefixes sorted).
 * The narrowest width whose share is within one per cent of the widest
 * one's is taken: each word more costs 8 bytes a row in memory, in runs
 * and in the GPU's records (the GPU's sort packs the words' bits by their
 * observed ranges, so a word that stays zero costs it nothing).
 *
 * The bounds are a sparse sample, though: neighbouring rows of the table
 * share longer beginnings than neighbouring bounds do (a name-like column
 * of 10M rows under ICU: no two bounds shared 23 bytes of sort key, while
 * nearly every row shared them with another). So a width
 * must also reach, by SPAN_MARGIN_BYTES, past the longest beginning two
 * neighbouring bounds share, unless it holds nearly every sampled value
 * whole (then the rows it cannot tell apart are equal values), or the
 * widest width does not reach there either. Without
 * this, an ICU key (whose sort key is longer than its string, and whose
 * equal prefixes are always ties) got a width that left every row tied.
 * The margin covers about eight more levels of branching below the
 * sample's: for bytes of digits, a table 10^8 times the sample.
 */
#define SPAN_MARGIN_BYTES 8
typedef struct SamplePrefix
{
	uint8		bytes[GPUSORT_PREFIX_MAX_WORDS * 8];	/* the last: the flag */
} SamplePrefix;

static int
compare_sample_prefixes(const void *a, const void *b)
{
	return memcmp(((const SamplePrefix *) a)->bytes, ((const SamplePrefix *) b)->bytes,
				  GPUSORT_PREFIX_MAX_WORDS * 8);
}

/* Does the value of this widest prefix go on beyond `prefix_bytes`? */
static bool
goes_on_beyond(const SamplePrefix *prefix, size_t prefix_bytes)
{
	const size_t widest = GPUSORT_PREFIX_MAX_WORDS * 8 - 1;

	/* sort keys and text hold no zero byte: a value that goes on has a
	 * byte there (a bytea's zero byte only makes this estimate low) */
	return prefix->bytes[widest] != 0 ||
		(prefix_bytes < widest && prefix->bytes[prefix_bytes] != 0);
}

static void
sample_prefix(const GpuSortType *widest, Datum value, SamplePrefix *prefix)
{
	uint64_t	words[GPUSORT_PREFIX_MAX_WORDS];

	widest->encode_prefix(widest, value, words);
	for (int w = 0; w < GPUSORT_PREFIX_MAX_WORDS; w++)
		for (int b = 0; b < 8; b++)
			prefix->bytes[w * 8 + b] = (uint8) (words[w] >> (56 - 8 * b));
}

int
gpusort_prefix_words_for_sample(Oid type, Oid collation, const Datum *common,
								const float4 *common_share, int ncommon,
								const Datum *bounds, int nbounds, int max_words,
								double *tied_share)
{
	const GpuSortType *widest;
	SamplePrefix *prefixes;
	double		tied[GPUSORT_PREFIX_MAX_WORDS + 1];
	bool		reaches[GPUSORT_PREFIX_MAX_WORDS + 1];
	double		other_rows = 1.0;
	int			chosen;

	*tied_share = 0.0;
	max_words = Min(max_words, GPUSORT_PREFIX_MAX_WORDS);
	if (max_words < GPUSORT_PREFIX_WORDS || (ncommon == 0 && nbounds < 2))
		return GPUSORT_PREFIX_WORDS;
	widest = gpusort_find_key_type(type, collation, GPUSORT_PREFIX_MAX_WORDS);
	if (widest == NULL || !gpusort_prefix_may_widen(widest))
		return GPUSORT_PREFIX_WORDS;
	prefixes = palloc(sizeof(SamplePrefix) * Max(ncommon, nbounds));
	for (int w = GPUSORT_PREFIX_WORDS; w <= max_words; w++)
		tied[w] = 0.0;
	for (int i = 0; i < ncommon; i++)
	{
		sample_prefix(widest, common[i], &prefixes[i]);
		other_rows -= common_share[i];
		for (int w = GPUSORT_PREFIX_WORDS; w <= max_words; w++)
			if (goes_on_beyond(&prefixes[i], (size_t) w * 8 - 1))
				tied[w] += common_share[i];
	}
	for (int w = GPUSORT_PREFIX_WORDS; w <= max_words; w++)
		reaches[w] = true;
	if (nbounds >= 2)
	{
		size_t		longest_shared = 0;

		for (int i = 0; i < nbounds; i++)
			sample_prefix(widest, bounds[i], &prefixes[i]);
		qsort(prefixes, nbounds, sizeof(SamplePrefix), compare_sample_prefixes);
		for (int i = 1; i < nbounds; i++)
		{
			size_t		shared = 0;

			while (shared < GPUSORT_PREFIX_MAX_WORDS * 8 - 1 &&
				   prefixes[i - 1].bytes[shared] == prefixes[i].bytes[shared])
				shared++;
			longest_shared = Max(longest_shared, shared);
		}
		for (int w = GPUSORT_PREFIX_WORDS; w <= max_words; w++)
		{
			size_t		prefix_bytes = (size_t) w * 8 - 1;
			int			tied_spans = 0;
			int			going_on = 0;

			for (int i = 1; i < nbounds; i++)
				if (goes_on_beyond(&prefixes[i - 1], prefix_bytes) &&
					goes_on_beyond(&prefixes[i], prefix_bytes) &&
					memcmp(prefixes[i - 1].bytes, prefixes[i].bytes, prefix_bytes) == 0)
					tied_spans++;
			tied[w] += Max(other_rows, 0.0) * tied_spans / (nbounds - 1);
			for (int i = 0; i < nbounds; i++)
				going_on += goes_on_beyond(&prefixes[i], prefix_bytes);
			reaches[w] = prefix_bytes >= longest_shared + SPAN_MARGIN_BYTES ||
				going_on <= nbounds / 100;
		}
	}
	pfree(prefixes);
	chosen = GPUSORT_PREFIX_WORDS;
	/* (where even the widest does not reach, reaching buys nothing) */
	while (chosen < max_words &&
		   (tied[chosen] > tied[max_words] + 0.01 || (!reaches[chosen] && reaches[max_words])))
		chosen++;
	*tied_share = tied[chosen];
	return chosen;
}

/*
 * How many words of a string key's prefix the rows need, from the rows
 * themselves: for a key without statistics (planner.c gave it nwords, the
 * widest the plan has room for), the row store's first rows, encoded at
 * that width (`keys`: nrows rows of nwords words, none NULL). The rule is
 * gpusort_prefix_words_for_sample()'s, on rows rather than bounds: the
 * narrowest width at which at most one per cent of the rows more tie than
 * at the widest (rows whose prefixes another row shares and that go on
 * beyond it), and that reaches SPAN_MARGIN_BYTES past the longest
 * beginning two neighbouring rows share, unless it holds nearly every row
 * whole or the widest does not reach there either. The first rows of a
 * table are a denser sample than its histogram, but still a sample: the
 * margin covers the rows that come later.
 */
int
gpusort_prefix_words_for_rows(const uint64_t *keys, size_t nrows, int nwords)
{
	SamplePrefix *prefixes;
	size_t		tied[GPUSORT_PREFIX_MAX_WORDS + 1];
	size_t		going_on[GPUSORT_PREFIX_MAX_WORDS + 1];
	size_t		longest_shared = 0;
	int			chosen;

	Assert(nwords <= GPUSORT_PREFIX_MAX_WORDS);
	if (nwords <= GPUSORT_PREFIX_WORDS || nrows < 2)
		return nwords;
	prefixes = palloc0(sizeof(SamplePrefix) * nrows);
	for (size_t i = 0; i < nrows; i++)
	{
		const uint64_t *words = keys + i * nwords;

		/* the value's bytes, then the flag where the widest has it */
		for (int w = 0; w < nwords; w++)
			for (int b = 0; b < 8; b++)
				prefixes[i].bytes[w * 8 + b] = (uint8) (words[w] >> (56 - 8 * b));
		prefixes[i].bytes[nwords * 8 - 1] = 0;
		prefixes[i].bytes[GPUSORT_PREFIX_MAX_WORDS * 8 - 1] = (uint8) (words[nwords - 1] & 0xFF);
	}
	qsort(prefixes, nrows, sizeof(SamplePrefix), compare_sample_prefixes);
	for (size_t i = 1; i < nrows; i++)
	{
		size_t		shared = 0;

		while (shared < (size_t) nwords * 8 - 1 &&
			   prefixes[i - 1].bytes[shared] == prefixes[i].bytes[shared])
			shared++;
		longest_shared = Max(longest_shared, shared);
	}
	for (int w = GPUSORT_PREFIX_WORDS; w <= nwords; w++)
	{
		size_t		prefix_bytes = (size_t) w * 8 - 1;
		bool		previous_tied = false;

		tied[w] = 0;
		going_on[w] = goes_on_beyond(&prefixes[0], prefix_bytes) ? 1 : 0;
		for (size_t i = 1; i < nrows; i++)
		{
			bool		tie = goes_on_beyond(&prefixes[i - 1], prefix_bytes) &&
				goes_on_beyond(&prefixes[i], prefix_bytes) &&
				memcmp(prefixes[i - 1].bytes, prefixes[i].bytes, prefix_bytes) == 0;

			/* a group of g tied rows counts g */
			if (tie)
				tied[w] += previous_tied ? 1 : 2;
			previous_tied = tie;
			going_on[w] += goes_on_beyond(&prefixes[i], prefix_bytes) ? 1 : 0;
		}
	}
	pfree(prefixes);
	chosen = GPUSORT_PREFIX_WORDS;
	for (; chosen < nwords; chosen++)
	{
		size_t		prefix_bytes = (size_t) chosen * 8 - 1;
		bool		reaches = prefix_bytes >= longest_shared + SPAN_MARGIN_BYTES ||
			going_on[chosen] <= nrows / 100;
		bool		widest_reaches = (size_t) nwords * 8 - 1 >= longest_shared + SPAN_MARGIN_BYTES ||
			going_on[nwords] <= nrows / 100;

		if (tied[chosen] <= tied[nwords] + nrows / 100 && (reaches || !widest_reaches))
			break;
	}
	return chosen;
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
