/*
 * verify.h — checks that what the GPU service returned answers what was
 * asked: a multiset fingerprint of keys (and row numbers), so that a sort's
 * output is proved a permutation of its input, or of the part of it an
 * approximate sort with a limit returns. Plain C, no PostgreSQL: client.c
 * and client_rows.c use it, and test/unit/test_engine.c tests it.
 *
 * The fingerprint of a multiset {e1, ..., en} at a random point r is
 *     F = (r - x(e1)) (r - x(e2)) ... (r - x(en))   mod p,  p = 2^61 - 1,
 * where an element e = (key, row) becomes x(e) = lo + s hi + t row mod p
 * (lo and hi the key's 32-bit halves, s and t random). Two different
 * multisets of n elements give different polynomials in (r, s, t), so by
 * the Schwartz-Zippel lemma their fingerprints agree with probability at
 * most 2n / p (below 10^-11 for n = 2^32) over the random point, which
 * the service never sees. Computing one costs three multiplications an
 * element, in four independent chains.
 */
#ifndef GPUSORT_SERVICE_VERIFY_H
#define GPUSORT_SERVICE_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gs_fingerprint_point
{
	uint64_t	r;
	uint64_t	s;
	uint64_t	t;
} gs_fingerprint_point;

/* A point from 24 random bytes (any values: they are reduced mod p). */
extern void gs_fingerprint_point_make(gs_fingerprint_point *point, const uint8_t random[24]);

/*
 * The fingerprint of elements first..first+count-1 of an array of keys
 * (key_bytes 4 or 8). Rows: with_rows false leaves them out (keys only);
 * otherwise element i's row is rows[i], or first + i where rows is NULL
 * (an input in its own order). `product` carries the running value over
 * calls (start from 1), so that a long array is fingerprinted a piece at a
 * time between interrupt checks.
 */
extern uint64_t gs_fingerprint_add(const gs_fingerprint_point *point, uint64_t product,
								   const void *keys, unsigned key_bytes, bool with_rows,
								   const uint32_t *rows, size_t first, size_t count);

/* As gs_fingerprint_add, of only the keys not above `max_key`; *taken
 * grows by how many were. */
extern uint64_t gs_fingerprint_add_upto(const gs_fingerprint_point *point, uint64_t product,
										const void *keys, unsigned key_bytes, bool with_rows,
										size_t first, size_t count, uint64_t max_key,
										uint64_t *taken);

/*
 * Records (a rows job's: its tuple's length, its keys' NULL flags and its
 * keys): a record becomes coefficients, each below 2^60 and so below p
 * (gs_record_coefficients()), of a polynomial in the point's s, and its
 * factor is r minus that polynomial's value. Different records give
 * different coefficients, so different polynomials, and the bound above
 * holds with 2 n ncoeffs / p. A record point holds the powers of s that
 * records of `ncoeffs` coefficients (gs_record_coefficient_count()) need,
 * so that a record's factor takes independent multiplications only: one
 * per coefficient, one coefficient per key and one more for the length
 * and flags.
 */
#define GS_RECORD_MAX_KEYS 8
#define GS_RECORD_MAX_COEFFS (2 + GS_RECORD_MAX_KEYS)

typedef struct gs_record_point
{
	gs_fingerprint_point point;
	uint64_t	powers[GS_RECORD_MAX_COEFFS];
} gs_record_point;

extern void gs_record_point_make(gs_record_point *record_point,
								 const gs_fingerprint_point *point, int ncoeffs);

/* Inlined where a record's factor is taken for each row sent and read,
 * with a constant count of keys where the caller has one. */
#if defined(__GNUC__)
#define GS_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define GS_ALWAYS_INLINE inline
#endif

#define GS_FIELD_PRIME ((UINT64_C(1) << 61) - 1)

/* x mod p, for any 64-bit x (2^61 = 1 mod p) */
static inline uint64_t
gs_field_reduce(uint64_t x)
{
	x = (x & GS_FIELD_PRIME) + (x >> 61);
	return x >= GS_FIELD_PRIME ? x - GS_FIELD_PRIME : x;
}

/* a * b mod p, for a, b < p */
static inline uint64_t
gs_field_multiply(uint64_t a, uint64_t b)
{
	unsigned __int128 product = (unsigned __int128) a * b;

	return gs_field_reduce(((uint64_t) product & GS_FIELD_PRIME) + (uint64_t) (product >> 61));
}

/* Two fingerprints' product: that of the two multisets together. */
static inline uint64_t
gs_fingerprint_combine(uint64_t a, uint64_t b)
{
	return gs_field_multiply(gs_field_reduce(a), gs_field_reduce(b));
}

/* The product of four chains of products (kept apart so that their
 * multiplications do not wait for each other). */
static inline uint64_t
gs_fingerprint_chains(const uint64_t chain[4])
{
	return gs_fingerprint_combine(gs_fingerprint_combine(chain[0], chain[1]),
								  gs_fingerprint_combine(chain[2], chain[3]));
}

/* How many coefficients a record of `nkeys` keys (at most
 * GS_RECORD_MAX_KEYS) becomes. */
static inline int
gs_record_coefficient_count(int nkeys)
{
	return 1 + nkeys + (nkeys > 5 ? 1 : 0);
}

/*
 * A record's coefficients into c[gs_record_coefficient_count(nkeys)]: c[0]
 * is the length (below 2^30: a longer one is the caller's to refuse), the
 * NULL flags (bit k: key k is NULL) from bit 30 and the top four bits of
 * keys 0 to 4 from bit 38, 4 bits each; c[1 + k] the low 60 bits of key
 * k; with more than 5 keys, c[1 + nkeys] the top four bits of the others.
 * A NULL key's value is the caller's to set to 0. Every part has a place
 * of its own, so the coefficients tell records apart.
 */
static GS_ALWAYS_INLINE void
gs_record_coefficients(uint32_t length, uint32_t null_flags, const uint64_t *keys, int nkeys,
					   uint64_t *c)
{
	const uint64_t low60 = (UINT64_C(1) << 60) - 1;

	c[0] = (uint64_t) (length & ((UINT32_C(1) << 30) - 1)) | (uint64_t) (null_flags & 0xff) << 30;
	if (nkeys > 5)
		c[1 + nkeys] = 0;
	for (int k = 0; k < nkeys; k++)
	{
		c[1 + k] = keys[k] & low60;
		if (k < 5)
			c[0] |= (keys[k] >> 60) << (38 + 4 * k);
		else
			c[1 + nkeys] |= (keys[k] >> 60) << (4 * (k - 5));
	}
}

/* r minus the value at s of the polynomial whose coefficients (each below
 * 2^60) are c[0..ncoeffs) */
static GS_ALWAYS_INLINE uint64_t
gs_record_factor(const gs_record_point *record_point, const uint64_t *c, int ncoeffs)
{
	const uint64_t *powers = record_point->powers;
	unsigned __int128 sum = 0;
	uint64_t	x;

	/* each term is below 2^121, their sum (at most GS_RECORD_MAX_COEFFS of
	 * them) below 2^125: reduced once, 61 bits at a time */
	for (int i = 0; i < ncoeffs; i++)
		sum += (unsigned __int128) c[i] * powers[i];
	x = gs_field_reduce(gs_field_reduce((uint64_t) sum & GS_FIELD_PRIME) +
						(uint64_t) ((sum >> 61) & GS_FIELD_PRIME) + (uint64_t) (sum >> 122));
	return record_point->point.r >= x ? record_point->point.r - x
		: record_point->point.r + GS_FIELD_PRIME - x;
}

/* The fingerprint `product` with one more record, of coefficients
 * c[0..ncoeffs). */
static GS_ALWAYS_INLINE uint64_t
gs_fingerprint_add_record(const gs_record_point *record_point, uint64_t product,
						  const uint64_t *c, int ncoeffs)
{
	return gs_field_multiply(gs_field_reduce(product), gs_record_factor(record_point, c, ncoeffs));
}

#endif							/* GPUSORT_SERVICE_VERIFY_H */
