/*
 * verify.c — multiset fingerprints of keys and row numbers (verify.h).
 */
#include "verify.h"

void
gs_fingerprint_point_make(gs_fingerprint_point *point, const uint8_t random[24])
{
	uint64_t	words[3];

	for (int w = 0; w < 3; w++)
	{
		words[w] = 0;
		for (int b = 0; b < 8; b++)
			words[w] = words[w] << 8 | random[w * 8 + b];
	}
	point->r = gs_field_reduce(gs_field_reduce(words[0]));
	point->s = gs_field_reduce(gs_field_reduce(words[1]));
	point->t = gs_field_reduce(gs_field_reduce(words[2]));
}

static inline uint64_t
key_at(const void *keys, unsigned key_bytes, size_t i)
{
	return key_bytes == 4 ? ((const uint32_t *) keys)[i] : ((const uint64_t *) keys)[i];
}

/* r - x(key, row), the factor of one element */
static inline uint64_t
factor(const gs_fingerprint_point *point, uint64_t key, uint64_t row)
{
	uint64_t	x = gs_field_reduce((key & 0xffffffffu) +
									gs_field_multiply(point->s, key >> 32) +
									gs_field_multiply(point->t, row));

	return point->r >= x ? point->r - x : point->r + GS_FIELD_PRIME - x;
}

uint64_t
gs_fingerprint_add(const gs_fingerprint_point *point, uint64_t product, const void *keys,
				   unsigned key_bytes, bool with_rows, const uint32_t *rows, size_t first,
				   size_t count)
{
	uint64_t	chain[4] = {gs_field_reduce(product), 1, 1, 1};
	size_t		i = 0;

	for (; i + 4 <= count; i += 4)
		for (int c = 0; c < 4; c++)
		{
			size_t		at = first + i + c;
			uint64_t	row = !with_rows ? 0 : rows != NULL ? rows[at] : at;

			chain[c] = gs_field_multiply(chain[c], factor(point, key_at(keys, key_bytes, at), row));
		}
	for (; i < count; i++)
	{
		size_t		at = first + i;
		uint64_t	row = !with_rows ? 0 : rows != NULL ? rows[at] : at;

		chain[0] = gs_field_multiply(chain[0], factor(point, key_at(keys, key_bytes, at), row));
	}
	return gs_fingerprint_chains(chain);
}

uint64_t
gs_fingerprint_add_upto(const gs_fingerprint_point *point, uint64_t product, const void *keys,
						unsigned key_bytes, bool with_rows, size_t first, size_t count,
						uint64_t max_key, uint64_t *taken)
{
	uint64_t	chain = gs_field_reduce(product);

	for (size_t i = 0; i < count; i++)
	{
		size_t		at = first + i;
		uint64_t	key = key_at(keys, key_bytes, at);

		if (key > max_key)
			continue;
		chain = gs_field_multiply(chain, factor(point, key, with_rows ? at : 0));
		(*taken)++;
	}
	return chain;
}

void
gs_record_point_make(gs_record_point *record_point, const gs_fingerprint_point *point,
					 int ncoeffs)
{
	uint64_t	power = 1;

	record_point->point = *point;
	for (int i = 0; i < ncoeffs; i++)
	{
		record_point->powers[i] = power;
		power = gs_field_multiply(power, point->s);
	}
}
