/*
 * cpu_sort_template.h — the CPU sorting networks and radix sort, written once
 * and instantiated per key width by cpu_sort.c (which defines KEY_T and
 * KEY_SUFFIX before including this file). Not a public header.
 *
 * Every network compares (key, row index) pairs when an index rides along,
 * so the order is total and the result identical to the stable radix sort
 * and to the GPU kernels.
 */
#define TEMPLATE_CAT2(a, b) a##_##b
#define TEMPLATE_CAT(a, b) TEMPLATE_CAT2(a, b)
#define T(name) TEMPLATE_CAT(name, KEY_SUFFIX)

static inline void
T(compare_exchange) (KEY_T *keys, uint32_t *index, size_t low, size_t high)
{
	KEY_T		a = keys[low];
	KEY_T		b = keys[high];

	if (a > b || (index != NULL && a == b && index[low] > index[high]))
	{
		keys[low] = b;
		keys[high] = a;
		if (index != NULL)
		{
			uint32_t	t = index[low];

			index[low] = index[high];
			index[high] = t;
		}
	}
}

/*
 * Batcher's bitonic network on a power-of-two array: stage `block` merges
 * bitonic runs of that size, ascending where (i & block) == 0 and descending
 * elsewhere; each step compares i with i ^ stride.
 */
static gs_status
T(bitonic_network) (KEY_T *keys, uint32_t *index, size_t n,
					gs_poll_fn poll, void *poll_arg)
{
	uint64_t	work = 0;

	for (size_t block = 2; block <= n; block <<= 1)
	{
		for (size_t stride = block >> 1; stride > 0; stride >>= 1)
		{
			for (size_t i = 0; i < n; i++)
			{
				size_t		partner = i ^ stride;

				if (partner <= i)
					continue;
				if ((i & block) == 0)
					T(compare_exchange) (keys, index, i, partner);
				else
					T(compare_exchange) (keys, index, partner, i);
			}
			work += n;
			if (poll != NULL && work >= CPU_POLL_EVERY)
			{
				work = 0;
				if (poll(poll_arg))
					return GS_ERR_INTERRUPTED;
			}
		}
	}
	return GS_OK;
}

/*
 * The butterfly network sort: for each block size, one "flip" step compares
 * i with its mirror in the block (i ^ (block - 1)), then half-cleaners with
 * strides block/4 .. 1. Every comparator puts the smaller element first, so
 * comparators reaching past n can be skipped as if the array were padded with
 * +infinity: any length works without padding.
 */
static void
T(butterfly_step) (KEY_T *keys, uint32_t *index, size_t n, size_t mask)
{
	for (size_t i = 0; i < n; i++)
	{
		size_t		partner = i ^ mask;

		if (partner > i && partner < n)
			T(compare_exchange) (keys, index, i, partner);
	}
}

static gs_status
T(butterfly_network) (KEY_T *keys, uint32_t *index, size_t n,
					  gs_poll_fn poll, void *poll_arg)
{
	size_t		padded = next_power_of_two(n);
	uint64_t	work = 0;

	for (size_t block = 2; block <= padded; block <<= 1)
	{
		T(butterfly_step) (keys, index, n, block - 1);	/* the flip */
		for (size_t stride = block >> 2; stride > 0; stride >>= 1)
			T(butterfly_step) (keys, index, n, stride);
		work += n * (size_t) __builtin_ctzll(block);
		if (poll != NULL && work >= CPU_POLL_EVERY)
		{
			work = 0;
			if (poll(poll_arg))
				return GS_ERR_INTERRUPTED;
		}
	}
	return GS_OK;
}

/*
 * LSD radix sort, 8-bit digits over the significant bits, stable, with one
 * counting pass for all digits and digits that are equal in every key
 * skipped.
 */
#define RADIX_BITS 8
#define RADIX_BUCKETS (1 << RADIX_BITS)

static gs_status
T(radix_sort) (const cpu_sort_job *job)
{
	size_t		n = job->n;
	KEY_T	   *keys = job->keys;
	uint32_t   *index = job->row_index;
	unsigned	digits = (job->key_bits + RADIX_BITS - 1) / RADIX_BITS;
	size_t	   (*counts)[RADIX_BUCKETS];
	KEY_T	   *other_keys;
	uint32_t   *other_index = NULL;
	KEY_T	   *from_keys = keys;
	uint32_t   *from_index = index;
	uint64_t	work = 0;
	gs_status	status = GS_OK;

	if (digits == 0 || n < 2)
		return GS_OK;
	counts = engine_alloc(job->allocator, sizeof(*counts) * digits);
	other_keys = engine_alloc(job->allocator, n * sizeof(KEY_T));
	if (index != NULL)
		other_index = engine_alloc(job->allocator, n * sizeof(uint32_t));
	if (counts == NULL || other_keys == NULL || (index != NULL && other_index == NULL))
	{
		status = GS_ERR_OUT_OF_MEMORY;
		goto done;
	}
	memset(counts, 0, sizeof(*counts) * digits);
	for (size_t i = 0; i < n; i++)
		for (unsigned d = 0; d < digits; d++)
			counts[d][(keys[i] >> (d * RADIX_BITS)) & (RADIX_BUCKETS - 1)]++;

	for (unsigned d = 0; d < digits; d++)
	{
		size_t		offsets[RADIX_BUCKETS];
		size_t		sum = 0;
		bool		trivial = false;
		KEY_T	   *to_keys = (from_keys == keys) ? other_keys : keys;
		uint32_t   *to_index = (from_index == index) ? other_index : index;
		unsigned	shift = d * RADIX_BITS;

		for (int b = 0; b < RADIX_BUCKETS; b++)
		{
			if (counts[d][b] == n)
				trivial = true;
			offsets[b] = sum;
			sum += counts[d][b];
		}
		if (trivial)
			continue;
		for (size_t i = 0; i < n; i++)
		{
			size_t		to = offsets[(from_keys[i] >> shift) & (RADIX_BUCKETS - 1)]++;

			to_keys[to] = from_keys[i];
			if (index != NULL)
				to_index[to] = from_index[i];
		}
		from_keys = to_keys;
		from_index = to_index;
		work += n;
		if (job->poll != NULL && work >= CPU_POLL_EVERY)
		{
			work = 0;
			if (job->poll(job->poll_arg))
			{
				status = GS_ERR_INTERRUPTED;
				goto done;
			}
		}
	}
	if (from_keys != keys)
	{
		memcpy(keys, from_keys, n * sizeof(KEY_T));
		if (index != NULL)
			memcpy(index, from_index, n * sizeof(uint32_t));
	}
done:
	engine_free(job->allocator, counts);
	engine_free(job->allocator, other_keys);
	engine_free(job->allocator, other_index);
	return status;
}

/*
 * Approximate interval sort: count the keys of each interval, scan the
 * counts, scatter. Stable within an interval on the CPU (the GPU's order
 * within an interval is unspecified). With a limit, only the intervals up to
 * the one holding output number `limit` are materialised.
 */
static gs_status
T(approx_sort) (const cpu_sort_job *job, const gs_interval_map *map,
				size_t limit, size_t *valid_outputs, size_t *largest_interval)
{
	size_t		n = job->n;
	KEY_T	   *keys = job->keys;
	uint32_t   *index = job->row_index;
	size_t	   *offsets;
	KEY_T	   *out_keys = NULL;
	uint32_t   *out_index = NULL;
	uint32_t   *buckets = NULL;	/* quantile mode: each key's, searched once */
	uint32_t	cut;
	size_t		materialised;
	gs_status	status = GS_OK;

	offsets = engine_alloc(job->allocator, ((size_t) map->intervals + 1) * sizeof(size_t));
	if (offsets == NULL)
		return GS_ERR_OUT_OF_MEMORY;
	memset(offsets, 0, ((size_t) map->intervals + 1) * sizeof(size_t));
	if (map->quantile)
		buckets = engine_alloc(job->allocator, n * sizeof(uint32_t));
	if (buckets != NULL)
		for (size_t i = 0; i < n; i++)
			offsets[(buckets[i] = gs_approx_interval(map, keys[i])) + 1]++;
	else
		for (size_t i = 0; i < n; i++)
			offsets[gs_approx_interval(map, keys[i]) + 1]++;
	*largest_interval = 0;
	for (uint32_t b = 0; b < map->intervals; b++)
	{
		if (offsets[b + 1] > *largest_interval)
			*largest_interval = offsets[b + 1];
		offsets[b + 1] += offsets[b];
	}

	/* the cut: the first interval whose end reaches the limit */
	cut = map->intervals - 1;
	if (limit > 0 && limit < n)
	{
		uint32_t	lo = 0,
					hi = map->intervals - 1;

		while (lo < hi)
		{
			uint32_t	mid = lo + (hi - lo) / 2;

			if (offsets[mid + 1] >= limit)
				hi = mid;
			else
				lo = mid + 1;
		}
		cut = lo;
	}
	materialised = offsets[cut + 1];

	out_keys = engine_alloc(job->allocator, materialised * sizeof(KEY_T));
	if (index != NULL)
		out_index = engine_alloc(job->allocator, materialised * sizeof(uint32_t));
	if (out_keys == NULL || (index != NULL && out_index == NULL))
	{
		status = GS_ERR_OUT_OF_MEMORY;
		goto done;
	}
	if (job->poll != NULL && n >= CPU_POLL_EVERY && job->poll(job->poll_arg))
	{
		status = GS_ERR_INTERRUPTED;
		goto done;
	}
	for (size_t i = 0; i < n; i++)
	{
		uint32_t	interval = buckets != NULL ? buckets[i] : gs_approx_interval(map, keys[i]);
		size_t		to;

		if (interval > cut)
			continue;
		to = offsets[interval]++;
		out_keys[to] = keys[i];
		if (index != NULL)
			out_index[to] = index[i];
	}
	memcpy(keys, out_keys, materialised * sizeof(KEY_T));
	if (index != NULL)
		memcpy(index, out_index, materialised * sizeof(uint32_t));
	*valid_outputs = materialised;
done:
	engine_free(job->allocator, offsets);
	engine_free(job->allocator, out_keys);
	engine_free(job->allocator, out_index);
	engine_free(job->allocator, buckets);
	return status;
}

#undef T
#undef TEMPLATE_CAT
#undef TEMPLATE_CAT2
#undef RADIX_BITS
#undef RADIX_BUCKETS
