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
 * Records (a rows job's: its length, keys and NULL flags, as words): a
 * record's words' 32-bit halves are the coefficients of a polynomial in
 * the point's s, and its factor is r minus that polynomial's value.
 * Records that differ in any word differ as polynomials, so the bound
 * above holds with 2 n nwords / p. A record point holds the powers of s
 * that records of `nwords` words (at most GS_FINGERPRINT_MAX_WORDS) need,
 * so that a record's factor takes independent multiplications only.
 */
#define GS_FINGERPRINT_MAX_WORDS 16

typedef struct gs_record_point
{
	gs_fingerprint_point point;
	int			nwords;
	uint64_t	powers[2 * GS_FINGERPRINT_MAX_WORDS];
} gs_record_point;

extern void gs_record_point_make(gs_record_point *record_point,
								 const gs_fingerprint_point *point, int nwords);

/*
 * Inline: a rows job's check takes a record's factor and one product for
 * every row it sends and reads, as it lays the row out or reads it.
 */
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

/* r minus the value at s of the polynomial whose coefficients are the
 * 32-bit halves of `nwords` words */
static inline uint64_t
gs_record_factor_of(const gs_record_point *record_point, const uint64_t *words, int nwords)
{
	const uint64_t *powers = record_point->powers;
	unsigned __int128 sum = 0;
	uint64_t	x;

	/* each term is below 2^93, their sum (at most 2 GS_FINGERPRINT_MAX_WORDS
	 * of them) below 2^98: reduced once, 61 bits at a time */
	for (int i = 0; i < nwords; i++)
		sum += (unsigned __int128) (words[i] & 0xffffffffu) * powers[2 * i] +
			(unsigned __int128) (words[i] >> 32) * powers[2 * i + 1];
	x = gs_field_reduce(gs_field_reduce((uint64_t) sum & GS_FIELD_PRIME) +
						(uint64_t) ((sum >> 61) & GS_FIELD_PRIME) + (uint64_t) (sum >> 122));
	return record_point->point.r >= x ? record_point->point.r - x
		: record_point->point.r + GS_FIELD_PRIME - x;
}

/* The factor of one record of record_point->nwords words (the common
 * counts with the loop unrolled). */
static inline uint64_t
gs_fingerprint_record_factor(const gs_record_point *record_point, const uint64_t *words)
{
	switch (record_point->nwords)
	{
		case 2:
			return gs_record_factor_of(record_point, words, 2);
		case 3:
			return gs_record_factor_of(record_point, words, 3);
		case 4:
			return gs_record_factor_of(record_point, words, 4);
		default:
			return gs_record_factor_of(record_point, words, record_point->nwords);
	}
}

/* The fingerprint `product` with one more record of record_point->nwords
 * words. */
static inline uint64_t
gs_fingerprint_add_record(const gs_record_point *record_point, uint64_t product,
						  const uint64_t *words)
{
	return gs_field_multiply(gs_field_reduce(product),
							 gs_fingerprint_record_factor(record_point, words));
}

#endif							/* GPUSORT_SERVICE_VERIFY_H */
