/*
 * verify.h — checks that what the GPU service returned answers what was
 * asked: a multiset fingerprint of keys (and row numbers), so that a sort's
 * output is proved a permutation of its input, or of the part of it an
 * approximate sort with a limit returns. Plain C, no PostgreSQL: client.c
 * uses it, and test/unit/test_verify.c tests it.
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

#endif							/* GPUSORT_SERVICE_VERIFY_H */
