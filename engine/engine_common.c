/*
 * engine_common.c — small shared pieces of the engine: names of statuses,
 * algorithms and devices, the approximate sort's interval map, float8 key
 * encoding, and the order/permutation checks used by tests.
 */
#include "gpusort_engine.h"
#include "engine_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *
gs_status_name(gs_status status)
{
	switch (status)
	{
		case GS_OK:
			return "ok";
		case GS_ERR_INVALID_ARGUMENT:
			return "invalid argument";
		case GS_ERR_OUT_OF_MEMORY:
			return "out of host memory";
		case GS_ERR_GPU_UNAVAILABLE:
			return "no usable GPU";
		case GS_ERR_GPU_OUT_OF_MEMORY:
			return "out of GPU memory";
		case GS_ERR_GPU_FAILURE:
			return "GPU failure";
		case GS_ERR_INTERRUPTED:
			return "interrupted";
		case GS_ERR_GPU_BUSY:
			return "GPU busy";
	}
	return "unknown status";
}

static const char *const algorithm_names[GS_ALGORITHM_COUNT] = {
	[GS_ALGO_AUTO] = "auto",
	[GS_ALGO_BITONIC] = "bitonic",
	[GS_ALGO_BUTTERFLY] = "butterfly",
	[GS_ALGO_RADIX] = "radix",
	[GS_ALGO_APPROX] = "approx",
};

const char *
gs_algorithm_name(gs_algorithm algorithm)
{
	if ((unsigned) algorithm < GS_ALGORITHM_COUNT)
		return algorithm_names[algorithm];
	return "unknown";
}

bool
gs_algorithm_parse(const char *name, bool allow_approx, gs_algorithm *result)
{
	for (int i = 0; i < GS_ALGORITHM_COUNT; i++)
	{
		if (name != NULL && strcmp(name, algorithm_names[i]) == 0)
		{
			if (i == GS_ALGO_APPROX && !allow_approx)
				return false;
			*result = (gs_algorithm) i;
			return true;
		}
	}
	return false;
}

const char *
gs_approx_mode_name(gs_approx_mode mode)
{
	return mode == GS_APPROX_QUANTILE ? "quantile" : "width";
}

bool
gs_approx_mode_parse(const char *name, gs_approx_mode *result)
{
	if (name != NULL && strcmp(name, "width") == 0)
		*result = GS_APPROX_WIDTH;
	else if (name != NULL && strcmp(name, "quantile") == 0)
		*result = GS_APPROX_QUANTILE;
	else
		return false;
	return true;
}

const char *
gs_device_name(gs_device device)
{
	switch (device)
	{
		case GS_DEVICE_AUTO:
			return "auto";
		case GS_DEVICE_GPU:
			return "GPU";
		case GS_DEVICE_CPU:
			return "CPU";
	}
	return "unknown";
}

/* IEEE bits made to compare as unsigned integers in PostgreSQL's float8
 * order: negatives reversed, NaN (all NaNs alike) above +Inf, -0 = +0. */
uint64_t
gs_encode_float8(double value)
{
	uint64_t	bits;

	if (isnan(value))
		value = NAN;
	else if (value == 0.0)
		value = 0.0;
	memcpy(&bits, &value, sizeof(bits));
	if (isnan(value))
		bits = UINT64_C(0x7ff8000000000000);
	if (bits >> 63)
		return ~bits;
	return bits | (UINT64_C(1) << 63);
}

double
gs_decode_float8(uint64_t key)
{
	uint64_t	bits;
	double		value;

	if (key >> 63)
		bits = key & ~(UINT64_C(1) << 63);
	else
		bits = ~key;
	memcpy(&value, &bits, sizeof(value));
	return value;
}

static inline uint64_t
key_at(const void *keys, unsigned key_bytes, size_t i)
{
	if (key_bytes == 4)
		return ((const uint32_t *) keys)[i];
	return ((const uint64_t *) keys)[i];
}

bool
gs_check_sorted(const void *keys, unsigned key_bytes,
				const uint32_t *row_index, size_t n)
{
	for (size_t i = 1; i < n; i++)
	{
		uint64_t	previous = key_at(keys, key_bytes, i - 1);
		uint64_t	current = key_at(keys, key_bytes, i);

		if (previous > current)
			return false;
		if (row_index != NULL && previous == current &&
			row_index[i - 1] >= row_index[i])
			return false;
	}
	return true;
}

static int
compare_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* Sorts copies of both sides with qsort and compares them: slow, simple and
 * independent of every algorithm under test. */
bool
gs_check_permutation(const void *before_keys, const void *after_keys,
					 unsigned key_bytes, size_t n)
{
	uint64_t   *a;
	uint64_t   *b;
	bool		same = true;

	if (n == 0)
		return true;
	a = malloc(n * sizeof(uint64_t));
	b = malloc(n * sizeof(uint64_t));
	if (a == NULL || b == NULL)
	{
		free(a);
		free(b);
		return false;
	}
	for (size_t i = 0; i < n; i++)
	{
		a[i] = key_at(before_keys, key_bytes, i);
		b[i] = key_at(after_keys, key_bytes, i);
	}
	qsort(a, n, sizeof(uint64_t), compare_u64);
	qsort(b, n, sizeof(uint64_t), compare_u64);
	same = memcmp(a, b, n * sizeof(uint64_t)) == 0;
	free(a);
	free(b);
	return same;
}

bool
gs_check_row_permutation(const void *before_keys, const void *after_keys,
						 const uint32_t *row_index, unsigned key_bytes, size_t n)
{
	unsigned char *seen;
	bool		ok = true;

	if (n == 0)
		return true;
	seen = calloc(n, 1);
	if (seen == NULL)
		return false;
	for (size_t i = 0; i < n && ok; i++)
	{
		uint32_t	from = row_index[i];

		ok = from < n && !seen[from] &&
			key_at(after_keys, key_bytes, i) == key_at(before_keys, key_bytes, from);
		if (ok)
			seen[from] = 1;
	}
	free(seen);
	return ok;
}

/* ---- host memory through the caller's allocator ---- */

void *
engine_alloc(const gs_allocator *allocator, size_t bytes)
{
	if (bytes == 0)
		bytes = 1;
	if (allocator != NULL && allocator->alloc != NULL)
		return allocator->alloc(bytes, allocator->context);
	return malloc(bytes);
}

void
engine_free(const gs_allocator *allocator, void *pointer)
{
	if (pointer == NULL)
		return;
	if (allocator != NULL && allocator->release != NULL)
		allocator->release(pointer, allocator->context);
	else if (allocator == NULL || allocator->alloc == NULL)
		free(pointer);
}
