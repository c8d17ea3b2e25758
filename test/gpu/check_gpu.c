/*
 * check_gpu.c — checks the GPU against the CPU engine, on a machine with a
 * GPU: every case is sorted through the engine API (gs_sort / gs_minmax)
 * once with device = GPU and once with device = CPU, and the results must
 * agree.
 *
 *   - exact algorithms (bitonic, butterfly, radix): keys and permutation
 *     byte-identical to the CPU's. The CPU runs the same algorithm where
 *     that is quick (networks up to 2^16 keys); above that it runs its radix
 *     sort, whose result every exact algorithm must equal (one stable order);
 *   - the approximate sort: the same valid_outputs and interval map, the same
 *     interval at every output position, and a permutation of the input (by
 *     the row index, or as a multiset of keys);
 *   - min/max against the CPU;
 *   - a tiny gpu_memory_limit gives GS_ERR_GPU_OUT_OF_MEMORY and leaves the
 *     input alone (and device = auto falls back to the CPU);
 *   - a poll function that says stop gives GS_ERR_INTERRUPTED and leaks no
 *     device memory (cudaMemGetInfo before and after);
 *   - the radix sort with its transfers overlapped (gpu_sort on pinned
 *     memory, 2, 4 or 8 chunks, and the automatic choice): the same keys
 *     and permutation as the CPU's, and interruption and the memory cap
 *     there too.
 *
 * Cases are random (seed on the command line, else fixed): sizes 0, 1, 2, 3,
 * 2^k - 1, 2^k, 2^k + 1, primes, mostly small and medium, a few of 2^24 ..
 * 2^26; key_bytes 4 and 8 with varied key_bits; with and without the row
 * index; distributions uniform, gaussian (mean of 4 uniforms), zipf-like,
 * sorted, reverse, all-equal, few-distinct and INT_MIN/INT_MAX extremes.
 *
 * Prints one line per failure and ends with "N passed, M failed"; exits 1
 * on any failure.
 *
 *   test/gpu/check_gpu [--seed S] [--cases N] [--no-large] [--quick]
 *
 * --quick (for runs under compute-sanitizer): no large cases, sizes up to
 * 2^16, no interruption test.
 */
#include "../../engine/gpusort_engine.h"
#include "../../engine/sort_backend.h"
#include "../../kernels/gpu_api.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int passed = 0;
static int failed = 0;

#define MAX_CPU_NETWORK ((size_t) 1 << 16)

/* ------------------------------------------------------------------------
 * Random numbers and inputs
 * ------------------------------------------------------------------------ */
static uint64_t rng_state;

static uint64_t
next_random(void)
{
	uint64_t	z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static double
uniform01(void)
{
	return (next_random() >> 11) * (1.0 / 9007199254740992.0);
}

enum distribution
{
	DIST_UNIFORM,
	DIST_GAUSSIAN,
	DIST_ZIPF,
	DIST_SORTED,
	DIST_REVERSE,
	DIST_ALL_EQUAL,
	DIST_FEW_DISTINCT,
	DIST_EXTREMES,
	DIST_COUNT
};

static const char *const dist_names[DIST_COUNT] = {
	"uniform", "gaussian", "zipf", "sorted", "reverse", "all-equal", "few-distinct", "extremes"
};

static uint64_t
key_mask(unsigned key_bits)
{
	return key_bits >= 64 ? ~UINT64_C(0) : ((UINT64_C(1) << key_bits) - 1);
}

static void
fill_keys(void *keys, unsigned key_bytes, unsigned key_bits, size_t n, int dist)
{
	uint64_t	mask = key_mask(key_bits);
	uint64_t	few[5];
	uint64_t	equal = next_random() & mask;

	for (int i = 0; i < 5; i++)
		few[i] = next_random() & mask;
	for (size_t i = 0; i < n; i++)
	{
		uint64_t	k = 0;

		switch (dist)
		{
			case DIST_UNIFORM:
				k = next_random();
				break;
			case DIST_GAUSSIAN:
				k = ((next_random() & mask) >> 2) + ((next_random() & mask) >> 2) +
					((next_random() & mask) >> 2) + ((next_random() & mask) >> 2);
				break;
			case DIST_ZIPF:
				{
					/* log-uniform ranks: rank r has probability ~ 1/r */
					uint64_t	rank = (uint64_t) exp(uniform01() * log(1e6));

					k = rank * UINT64_C(0x9e3779b97f4a7c15);
					break;
				}
			case DIST_SORTED:
				k = (uint64_t) ((double) i / (double) n * (double) mask);
				break;
			case DIST_REVERSE:
				k = (uint64_t) ((double) (n - 1 - i) / (double) n * (double) mask);
				break;
			case DIST_ALL_EQUAL:
				k = equal;
				break;
			case DIST_FEW_DISTINCT:
				k = few[next_random() % 5];
				break;
			case DIST_EXTREMES:
				{
					/* encoded INT_MIN, INT_MAX, zero and their neighbours */
					uint64_t	choices[6] = {0, mask, (mask >> 1) + 1, 1, mask - 1, mask >> 1};

					k = choices[next_random() % 6];
					break;
				}
		}
		k &= mask;
		if (key_bytes == 4)
			((uint32_t *) keys)[i] = (uint32_t) k;
		else
			((uint64_t *) keys)[i] = k;
	}
}

static uint64_t
key_at(const void *keys, unsigned key_bytes, size_t i)
{
	return key_bytes == 4 ? ((const uint32_t *) keys)[i] : ((const uint64_t *) keys)[i];
}

/* ------------------------------------------------------------------------
 * Reporting
 * ------------------------------------------------------------------------ */
static char case_name[256];

static void
fail(const char *format, ...) __attribute__((format(printf, 1, 2)));

static void
fail(const char *format, ...)
{
	va_list		args;

	printf("FAIL %s: ", case_name);
	va_start(args, format);
	vprintf(format, args);
	va_end(args);
	printf("\n");
	fflush(stdout);
	failed++;
}

static void
pass(void)
{
	passed++;
}

static size_t
device_free_bytes(void)
{
	size_t		free_bytes = 0,
				total = 0;

	cudaDeviceSynchronize();
	if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess)
		return 0;
	return free_bytes;
}

/* ------------------------------------------------------------------------
 * One case
 * ------------------------------------------------------------------------ */
typedef struct sort_case
{
	gs_algorithm algorithm;
	size_t		n;
	unsigned	key_bytes;
	unsigned	key_bits;
	bool		with_index;
	int			dist;
	uint32_t	intervals;		/* approx */
	size_t		limit;			/* approx */
} sort_case;

static void
name_case(const sort_case *c)
{
	snprintf(case_name, sizeof(case_name), "%s n=%zu key_bytes=%u key_bits=%u %s %s",
			 gs_algorithm_name(c->algorithm), c->n, c->key_bytes, c->key_bits,
			 c->with_index ? "index" : "keys-only", dist_names[c->dist]);
	if (c->algorithm == GS_ALGO_APPROX)
	{
		size_t		len = strlen(case_name);

		snprintf(case_name + len, sizeof(case_name) - len, " intervals=%u limit=%zu",
				 c->intervals, c->limit);
	}
}

static gs_status
run_sort(const sort_case *c, gs_algorithm algorithm, gs_device device, void *keys,
		 uint32_t *index, gs_sort_report *report)
{
	gs_sort_request request;

	gs_sort_request_init(&request);
	gs_sort_request_set_keys(&request, keys, c->n, c->key_bytes, c->key_bits, index);
	request.algorithm = algorithm;
	request.device = device;
	request.intervals = c->intervals ? c->intervals : 1;
	request.limit = c->limit;
	request.gpu_min_elements = 0;
	return gs_sort(&request, report);
}

/* A multiset fingerprint: order-independent, collision-unlikely. */
static void
fingerprint(const void *keys, unsigned key_bytes, size_t n, uint64_t *sum, uint64_t *mix)
{
	*sum = 0;
	*mix = 0;
	for (size_t i = 0; i < n; i++)
	{
		uint64_t	z = key_at(keys, key_bytes, i) + UINT64_C(0x9e3779b97f4a7c15);

		z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
		z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
		z ^= z >> 31;
		*sum += z;
		*mix += z * z + (z >> 17);
	}
}

static void
check_exact(const sort_case *c, const void *input, void *gpu_keys, uint32_t *gpu_index,
			void *cpu_keys, uint32_t *cpu_index)
{
	gs_sort_report gpu_report,
				cpu_report;
	gs_status	status;
	gs_algorithm reference = c->algorithm;
	size_t		bytes = c->n * c->key_bytes;

	if (c->n > MAX_CPU_NETWORK)
		reference = GS_ALGO_RADIX;	/* the same stable order, computed faster */
	memcpy(gpu_keys, input, bytes);
	memcpy(cpu_keys, input, bytes);
	status = run_sort(c, c->algorithm, GS_DEVICE_GPU, gpu_keys, gpu_index, &gpu_report);
	if (status != GS_OK)
	{
		fail("GPU sort returned %s (%s)", gs_status_name(status), gpu_report.gpu_message);
		return;
	}
	if (gpu_report.ran_on != GS_DEVICE_GPU)
	{
		fail("ran on the CPU, not the GPU");
		return;
	}
	status = run_sort(c, reference, GS_DEVICE_CPU, cpu_keys, cpu_index, &cpu_report);
	if (status != GS_OK)
	{
		fail("CPU sort returned %s", gs_status_name(status));
		return;
	}
	if (memcmp(gpu_keys, cpu_keys, bytes) != 0)
	{
		size_t		i = 0;

		while (key_at(gpu_keys, c->key_bytes, i) == key_at(cpu_keys, c->key_bytes, i))
			i++;
		fail("keys differ first at %zu: GPU %llu, CPU %llu", i,
			 (unsigned long long) key_at(gpu_keys, c->key_bytes, i),
			 (unsigned long long) key_at(cpu_keys, c->key_bytes, i));
		return;
	}
	if (c->with_index && memcmp(gpu_index, cpu_index, c->n * sizeof(uint32_t)) != 0)
	{
		size_t		i = 0;

		while (gpu_index[i] == cpu_index[i])
			i++;
		fail("permutation differs first at %zu: GPU %u, CPU %u", i, gpu_index[i], cpu_index[i]);
		return;
	}
	pass();
}

static void
check_approx(const sort_case *c, const void *input, void *gpu_keys, uint32_t *gpu_index,
			 void *cpu_keys, uint32_t *cpu_index)
{
	gs_sort_report gpu_report,
				cpu_report;
	gs_status	status;
	size_t		bytes = c->n * c->key_bytes;
	size_t		valid;

	memcpy(gpu_keys, input, bytes);
	memcpy(cpu_keys, input, bytes);
	status = run_sort(c, GS_ALGO_APPROX, GS_DEVICE_GPU, gpu_keys, gpu_index, &gpu_report);
	if (status != GS_OK)
	{
		fail("GPU sort returned %s (%s)", gs_status_name(status), gpu_report.gpu_message);
		return;
	}
	status = run_sort(c, GS_ALGO_APPROX, GS_DEVICE_CPU, cpu_keys, cpu_index, &cpu_report);
	if (status != GS_OK)
	{
		fail("CPU sort returned %s", gs_status_name(status));
		return;
	}
	if (gpu_report.valid_outputs != cpu_report.valid_outputs)
	{
		fail("valid_outputs: GPU %zu, CPU %zu", gpu_report.valid_outputs,
			 cpu_report.valid_outputs);
		return;
	}
	valid = cpu_report.valid_outputs;
	if (c->n > 0 &&
		(gpu_report.interval_map.min_key != cpu_report.interval_map.min_key ||
		 gpu_report.interval_map.range != cpu_report.interval_map.range ||
		 gpu_report.interval_map.scale != cpu_report.interval_map.scale))
	{
		fail("interval map differs: GPU min %llu range %llu, CPU min %llu range %llu",
			 (unsigned long long) gpu_report.interval_map.min_key,
			 (unsigned long long) gpu_report.interval_map.range,
			 (unsigned long long) cpu_report.interval_map.min_key,
			 (unsigned long long) cpu_report.interval_map.range);
		return;
	}
	for (size_t i = 0; i < valid; i++)
	{
		uint32_t	g = gs_approx_interval(&cpu_report.interval_map,
										   key_at(gpu_keys, c->key_bytes, i));
		uint32_t	k = gs_approx_interval(&cpu_report.interval_map,
										   key_at(cpu_keys, c->key_bytes, i));

		if (g != k)
		{
			fail("output %zu is in interval %u on the GPU, %u on the CPU", i, g, k);
			return;
		}
	}
	if (c->with_index)
	{
		unsigned char *seen = calloc(c->n, 1);

		for (size_t i = 0; i < valid; i++)
		{
			uint32_t	from = gpu_index[i];

			if (from >= c->n || seen[from] ||
				key_at(gpu_keys, c->key_bytes, i) != key_at(input, c->key_bytes, from))
			{
				fail("row index at %zu (%u) is not a permutation of the input", i, from);
				free(seen);
				return;
			}
			seen[from] = 1;
		}
		free(seen);
	}
	else
	{
		uint64_t	gs,
					gm,
					cs,
					cm;

		fingerprint(gpu_keys, c->key_bytes, valid, &gs, &gm);
		fingerprint(cpu_keys, c->key_bytes, valid, &cs, &cm);
		if (gs != cs || gm != cm)
		{
			fail("the GPU's outputs are not the CPU's keys in another order");
			return;
		}
	}
	pass();
}

static void
run_case(const sort_case *c)
{
	size_t		cap = c->n > 0 ? c->n : 1;
	void	   *input = malloc(cap * c->key_bytes);
	void	   *gpu_keys = malloc(cap * c->key_bytes);
	void	   *cpu_keys = malloc(cap * c->key_bytes);
	uint32_t   *gpu_index = c->with_index ? malloc(cap * sizeof(uint32_t)) : NULL;
	uint32_t   *cpu_index = c->with_index ? malloc(cap * sizeof(uint32_t)) : NULL;

	name_case(c);
	if (!input || !gpu_keys || !cpu_keys || (c->with_index && (!gpu_index || !cpu_index)))
	{
		fail("out of host memory");
		goto done;
	}
	fill_keys(input, c->key_bytes, c->key_bits, c->n, c->dist);
	if (c->algorithm == GS_ALGO_APPROX)
		check_approx(c, input, gpu_keys, gpu_index, cpu_keys, cpu_index);
	else
		check_exact(c, input, gpu_keys, gpu_index, cpu_keys, cpu_index);
done:
	free(input);
	free(gpu_keys);
	free(cpu_keys);
	free(gpu_index);
	free(cpu_index);
}

/* ------------------------------------------------------------------------
 * Case generation
 * ------------------------------------------------------------------------ */
static const size_t special_sizes[] = {
	0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129,
	255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097,
	8191, 8192, 8193, 16383, 16384, 16385, 32767, 32768, 32769, 65535, 65536, 65537,
	131071, 131072, 131073, 262143, 262144, 262145, 524287, 524288, 524289, 1048575,
	1048576, 1048577,
	/* primes */
	97, 997, 7919, 65521, 65537, 104729, 999983, 1000003
};

static bool quick = false;

static size_t
random_size(void)
{
	uint64_t	r = next_random() % 100;

	if (quick)
		return r < 50 ? next_random() % 4097 : next_random() % 65537;

	if (r < 30)
		return special_sizes[next_random() % (sizeof(special_sizes) / sizeof(special_sizes[0]))];
	if (r < 70)
		return next_random() % 4097;
	if (r < 92)
		return next_random() % 70000;
	return next_random() % (1 << 20);
}

static unsigned
random_key_bits(unsigned key_bytes)
{
	uint64_t	r = next_random() % 10;

	if (key_bytes == 4)
		return r < 4 ? 32 : r < 5 ? 0 : 1 + (unsigned) (next_random() % 32);
	return r < 3 ? 64 : r < 5 ? 32 : r < 6 ? 33 : 1 + (unsigned) (next_random() % 64);
}

/* around the GPU partition's shapes: one pass up to 256 intervals, two
 * passes beyond, the per-key cursors beyond 2^21 */
static const uint32_t interval_choices[] = {1, 10, 256, 257, 2048, 10000, 65537, 1 << 20,
	(1 << 21) + 1};

static void
random_case(sort_case *c, gs_algorithm algorithm, size_t n)
{
	memset(c, 0, sizeof(*c));
	c->algorithm = algorithm;
	c->n = n;
	c->key_bytes = next_random() % 2 ? 8 : 4;
	c->key_bits = random_key_bits(c->key_bytes);
	c->with_index = next_random() % 2;
	c->dist = (int) (next_random() % DIST_COUNT);
	if (algorithm == GS_ALGO_APPROX)
	{
		c->intervals = interval_choices[next_random() %
										(sizeof(interval_choices) / sizeof(interval_choices[0]))];
		c->limit = next_random() % 2 ? 0 : (size_t) (next_random() % (n + 2));
		if (c->key_bits == 0)
			c->key_bits = c->key_bytes * 8;
	}
}

/* ------------------------------------------------------------------------
 * Min/max, memory cap, interruption
 * ------------------------------------------------------------------------ */
static void
check_minmax(size_t n, int dist)
{
	uint64_t   *keys = malloc((n ? n : 1) * sizeof(uint64_t));
	gs_sort_request request;
	gs_sort_report report;
	uint64_t	gmin,
				gmax,
				cmin,
				cmax;
	gs_status	status;

	snprintf(case_name, sizeof(case_name), "minmax n=%zu %s", n, dist_names[dist]);
	fill_keys(keys, 8, 64, n, dist);
	gs_sort_request_init(&request);
	gs_sort_request_set_keys(&request, keys, n, 8, 64, NULL);
	request.gpu_min_elements = 0;
	request.device = GS_DEVICE_GPU;
	status = gs_minmax(&request, &gmin, &gmax, &report);
	request.device = GS_DEVICE_CPU;
	if (status != GS_OK)
		fail("GPU returned %s (%s)", gs_status_name(status), report.gpu_message);
	else if (gs_minmax(&request, &cmin, &cmax, &report) != GS_OK)
		fail("CPU failed");
	else if (gmin != cmin || gmax != cmax)
		fail("GPU (%llu, %llu), CPU (%llu, %llu)", (unsigned long long) gmin,
			 (unsigned long long) gmax, (unsigned long long) cmin, (unsigned long long) cmax);
	else
		pass();
	free(keys);
}

static void
check_memory_cap(gs_algorithm algorithm)
{
	sort_case	c;
	size_t		n = 1 << 20;
	uint64_t   *input = malloc(n * 8),
			   *keys = malloc(n * 8),
			   *cpu = malloc(n * 8);
	uint32_t   *index = malloc(n * 4),
			   *cpu_index = malloc(n * 4);
	gs_sort_request request;
	gs_sort_report report;
	gs_status	status;
	size_t		before,
				after;

	memset(&c, 0, sizeof(c));
	snprintf(case_name, sizeof(case_name), "memory cap %s", gs_algorithm_name(algorithm));
	fill_keys(input, 8, 64, n, DIST_UNIFORM);
	memcpy(keys, input, n * 8);
	gs_sort_request_init(&request);
	gs_sort_request_set_keys(&request, keys, n, 8, 64, index);
	request.algorithm = algorithm;
	request.device = GS_DEVICE_GPU;
	request.gpu_min_elements = 0;
	request.gpu_memory_limit = 4096;
	before = device_free_bytes();
	status = gs_sort(&request, &report);
	after = device_free_bytes();
	if (status != GS_ERR_GPU_OUT_OF_MEMORY)
		fail("expected %s, got %s", gs_status_name(GS_ERR_GPU_OUT_OF_MEMORY),
			 gs_status_name(status));
	else if (strstr(report.gpu_message, "gpusort.gpu_memory_limit") == NULL)
		fail("the message does not name the setting: \"%s\"", report.gpu_message);
	else if (memcmp(keys, input, n * 8) != 0)
		fail("the input was changed");
	else if (after + (4u << 20) < before)
		fail("device memory leaked: %zu bytes free before, %zu after", before, after);
	else
		pass();
	if (algorithm == GS_ALGO_RADIX)
		printf("  memory cap message: %s\n", report.gpu_message);

	/* device = auto: the CPU takes over */
	snprintf(case_name, sizeof(case_name), "memory cap %s, device auto", gs_algorithm_name(algorithm));
	request.device = GS_DEVICE_AUTO;
	status = gs_sort(&request, &report);
	memcpy(cpu, input, n * 8);
	request.keys = cpu;
	request.row_index = cpu_index;
	request.device = GS_DEVICE_CPU;
	request.algorithm = algorithm == GS_ALGO_APPROX ? GS_ALGO_APPROX : GS_ALGO_RADIX;
	if (status != GS_OK || !report.fell_back || report.ran_on != GS_DEVICE_CPU)
		fail("expected a CPU fallback, got %s (fell_back %d)", gs_status_name(status),
			 report.fell_back);
	else if (gs_sort(&request, &report) != GS_OK)
		fail("CPU failed");
	else if (algorithm != GS_ALGO_APPROX &&
			 (memcmp(keys, cpu, n * 8) != 0 || memcmp(index, cpu_index, n * 4) != 0))
		fail("the fallback's result differs from the CPU's");
	else
		pass();
	free(input);
	free(keys);
	free(cpu);
	free(index);
	free(cpu_index);
}

typedef struct poll_state
{
	int			calls;
	int			stop_at;
} poll_state;

static bool
stop_after(void *arg)
{
	poll_state *state = arg;

	return ++state->calls >= state->stop_at;
}

static void
check_interrupt(gs_algorithm algorithm, int stop_at)
{
	size_t		n = (size_t) 1 << 24;
	uint64_t   *keys = malloc(n * 8);
	uint32_t   *index = malloc(n * 4);
	gs_sort_request request;
	gs_sort_report report;
	poll_state	state = {0, stop_at};
	gs_status	status;
	size_t		before,
				after;

	snprintf(case_name, sizeof(case_name), "interrupt %s at poll %d", gs_algorithm_name(algorithm),
			 stop_at);
	fill_keys(keys, 8, 64, n, DIST_UNIFORM);
	gs_sort_request_init(&request);
	gs_sort_request_set_keys(&request, keys, n, 8, 64, index);
	request.algorithm = algorithm;
	request.device = GS_DEVICE_GPU;
	request.gpu_min_elements = 0;

	/* once without interruption: loads the kernels, so that the memory
	 * comparison below sees only what the interrupted sort leaves behind */
	status = gs_sort(&request, &report);
	if (status != GS_OK)
	{
		fail("warm-up sort returned %s (%s)", gs_status_name(status), report.gpu_message);
		goto done;
	}
	fill_keys(keys, 8, 64, n, DIST_UNIFORM);
	request.poll = stop_after;
	request.poll_arg = &state;
	before = device_free_bytes();
	status = gs_sort(&request, &report);
	after = device_free_bytes();
	if (status != GS_ERR_INTERRUPTED)
		fail("expected %s, got %s (%d polls)", gs_status_name(GS_ERR_INTERRUPTED),
			 gs_status_name(status), state.calls);
	else if (after + (4u << 20) < before)
		fail("device memory leaked: %zu bytes free before, %zu after", before, after);
	else
		pass();
done:
	free(keys);
	free(index);
}

/* ------------------------------------------------------------------------
 * Transfers overlapped with the radix sort (gpu_sort on pinned memory)
 * ------------------------------------------------------------------------ */
static gpu_status
overlapped_sort(size_t n, unsigned key_bytes, unsigned key_bits, void *keys, uint32_t *index,
				unsigned chunks, size_t memory_limit, poll_state *poll)
{
	gpu_sort_job job;
	gpu_timing	timing;

	memset(&job, 0, sizeof(job));
	job.n = n;
	job.key_bytes = key_bytes;
	job.key_bits = key_bits;
	job.keys = keys;
	job.row_index = index;
	job.algorithm = GPU_ALGO_RADIX;
	job.chunks = chunks;
	job.memory_limit = memory_limit;
	if (poll != NULL)
	{
		job.poll = stop_after;
		job.poll_arg = poll;
	}
	return gpu_sort(&job, &timing);
}

static void
check_overlapped(size_t n, unsigned key_bytes, unsigned key_bits, bool with_index, int dist,
				 unsigned chunks)
{
	size_t		cap = n > 0 ? n : 1;
	bool		keys_pinned = false,
				index_pinned = false;
	void	   *keys = gs_host_buffer_alloc(cap * key_bytes, true, &keys_pinned);
	uint32_t   *index = with_index ? gs_host_buffer_alloc(cap * 4, true, &index_pinned) : NULL;
	void	   *input = malloc(cap * key_bytes);
	void	   *cpu = malloc(cap * key_bytes);
	uint32_t   *cpu_index = malloc(cap * 4);
	sort_case	c;
	gs_sort_report report;
	gpu_status	status;

	memset(&c, 0, sizeof(c));
	c.algorithm = GS_ALGO_RADIX;
	c.n = n;
	c.key_bytes = key_bytes;
	c.key_bits = key_bits;
	c.with_index = with_index;
	c.dist = dist;
	name_case(&c);
	snprintf(case_name + strlen(case_name), sizeof(case_name) - strlen(case_name),
			 " overlapped chunks=%u", chunks);
	if (!keys || !input || !cpu || !cpu_index || !keys_pinned || (with_index && !index_pinned))
	{
		fail("no pinned host memory");
		goto done;
	}
	fill_keys(input, key_bytes, key_bits, n, dist);
	memcpy(keys, input, n * key_bytes);
	memcpy(cpu, input, n * key_bytes);
	status = overlapped_sort(n, key_bytes, key_bits, keys, index, chunks, 0, NULL);
	if (status != GPU_OK)
	{
		fail("gpu_sort returned %d (%s)", (int) status, gpu_last_error());
		goto done;
	}
	if (run_sort(&c, GS_ALGO_RADIX, GS_DEVICE_CPU, cpu, with_index ? cpu_index : NULL,
				 &report) != GS_OK)
		fail("CPU sort failed");
	else if (memcmp(keys, cpu, n * key_bytes) != 0)
		fail("keys differ from the CPU's");
	else if (with_index && memcmp(index, cpu_index, n * 4) != 0)
		fail("permutation differs from the CPU's");
	else
		pass();
done:
	gs_host_buffer_free(keys, keys_pinned);
	gs_host_buffer_free(index, index_pinned);
	free(input);
	free(cpu);
	free(cpu_index);
}

/* Interrupted at poll `stop_at`, and over a tiny cap: a clean failure, no
 * device memory left behind, and (for the cap) the input untouched. */
static void
check_overlapped_failures(int stop_at)
{
	size_t		n = (size_t) 1 << 24;
	bool		keys_pinned = false,
				index_pinned = false;
	uint32_t   *keys = gs_host_buffer_alloc(n * 4, true, &keys_pinned);
	uint32_t   *index = gs_host_buffer_alloc(n * 4, true, &index_pinned);
	uint32_t   *input = malloc(n * 4);
	poll_state	state = {0, stop_at};
	gpu_status	status;
	size_t		before,
				after;

	snprintf(case_name, sizeof(case_name), "overlapped radix interrupted at poll %d", stop_at);
	if (!keys_pinned || !index_pinned || !input)
	{
		fail("no pinned host memory");
		goto done;
	}
	fill_keys(input, 4, 32, n, DIST_UNIFORM);
	memcpy(keys, input, n * 4);
	before = device_free_bytes();
	status = overlapped_sort(n, 4, 32, keys, index, 4, 0, &state);
	after = device_free_bytes();
	if (status != GPU_INTERRUPTED)
		fail("expected GPU_INTERRUPTED, got %d after %d polls", (int) status, state.calls);
	else if (after + (4u << 20) < before)
		fail("device memory leaked: %zu bytes free before, %zu after", before, after);
	else
		pass();

	snprintf(case_name, sizeof(case_name), "overlapped radix over the memory cap");
	memcpy(keys, input, n * 4);
	status = overlapped_sort(n, 4, 32, keys, index, 4, 4096, NULL);
	if (status != GPU_OUT_OF_MEMORY)
		fail("expected GPU_OUT_OF_MEMORY, got %d", (int) status);
	else if (memcmp(keys, input, n * 4) != 0)
		fail("the input was changed");
	else
		pass();
done:
	gs_host_buffer_free(keys, keys_pinned);
	gs_host_buffer_free(index, index_pinned);
	free(input);
}

static void
check_overlapped_all(void)
{
	static const size_t sizes[] = {2, 3, 5, 17, 2048, 2049, 4097, 65537, 1000003,
	(1 << 22) + 13};
	static const unsigned chunk_choices[] = {2, 4, 8};

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int k = 0; k < 3; k++)
		{
			unsigned	key_bytes = next_random() % 2 ? 8 : 4;
			unsigned	key_bits = (next_random() % 3 == 0) ? 3 : 1 + (unsigned) (next_random() % (key_bytes * 8));

			if (quick && sizes[s] > 70000)
				continue;
			check_overlapped(sizes[s], key_bytes, key_bits, next_random() % 4 != 0,
							 (int) (next_random() % DIST_COUNT), chunk_choices[k]);
		}
	if (quick)
		return;
	/* the automatic choice, at sizes that overlap (and one that does not) */
	check_overlapped((size_t) 1 << 22, 4, 32, true, DIST_UNIFORM, 0);
	check_overlapped(((size_t) 1 << 23) + 7, 8, 64, true, DIST_FEW_DISTINCT, 0);
	check_overlapped((size_t) 1 << 25, 4, 20, false, DIST_ZIPF, 0);
	check_overlapped(((size_t) 1 << 26) - 3, 4, 32, true, DIST_GAUSSIAN, 0);
	check_overlapped(((size_t) 1 << 24) + 1, 8, 40, true, DIST_SORTED, 0);
	check_overlapped_failures(1);
	check_overlapped_failures(3);
}

/* ------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------ */
int
main(int argc, char **argv)
{
	uint64_t	seed = 20240601;
	int			cases = 1200;
	bool		large = true;
	gs_gpu_info info;
	const gs_algorithm algorithms[4] = {GS_ALGO_BITONIC, GS_ALGO_BUTTERFLY, GS_ALGO_RADIX,
	GS_ALGO_APPROX};
	time_t		started = time(NULL);

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc)
			cases = atoi(argv[++i]);
		else if (strcmp(argv[i], "--no-large") == 0)
			large = false;
		else if (strcmp(argv[i], "--quick") == 0)
			quick = true, large = false;
	}
	rng_state = seed;
	gs_engine_set_backend(&gs_kernels_backend);
	gs_gpu_info_get(&info);
	if (!info.usable)
	{
		snprintf(case_name, sizeof(case_name), "GPU");
		fail("no usable GPU: %s", info.reason);
		printf("%d passed, %d failed\n", passed, failed);
		return 1;
	}
	printf("GPU: %s, compute capability %d.%d, %d SMs, %.1f GiB; seed %llu\n", info.name,
		   info.compute_major, info.compute_minor, info.multiprocessors,
		   info.total_memory / 1073741824.0, (unsigned long long) seed);
	fflush(stdout);

	/* random cases, every algorithm in turn */
	for (int i = 0; i < cases; i++)
	{
		sort_case	c;

		random_case(&c, algorithms[i % 4], random_size());
		run_case(&c);
	}
	printf("random cases done (%d), %ld s\n", cases, (long) (time(NULL) - started));
	fflush(stdout);

	/* every special size once per algorithm, with the index */
	for (size_t s = 0; s < sizeof(special_sizes) / sizeof(special_sizes[0]); s++)
		for (int a = 0; a < 4; a++)
		{
			if (quick && special_sizes[s] > 70000)
				continue;
			sort_case	c;

			random_case(&c, algorithms[a], special_sizes[s]);
			c.with_index = true;
			run_case(&c);
		}
	printf("special sizes done, %ld s\n", (long) (time(NULL) - started));
	fflush(stdout);

	if (large)
	{
		static const size_t big[] = {
			(size_t) 1 << 24, ((size_t) 1 << 24) + 1, 16777259 /* prime */ ,
			((size_t) 1 << 25) - 1, (size_t) 1 << 26, ((size_t) 1 << 26) - 3
		};

		for (size_t b = 0; b < sizeof(big) / sizeof(big[0]); b++)
			for (int a = 0; a < 4; a++)
			{
				sort_case	c;

				random_case(&c, algorithms[a], big[b]);
				c.with_index = (a + b) % 3 != 2;
				c.dist = (int) ((a + 3 * b) % DIST_COUNT);
				run_case(&c);
			}
		printf("large cases done, %ld s\n", (long) (time(NULL) - started));
		fflush(stdout);
	}

	for (int d = 0; d < DIST_COUNT; d++)
	{
		check_minmax(random_size(), d);
		if (!quick)
			check_minmax((size_t) 1 << 22, d);
	}
	check_minmax(0, DIST_UNIFORM);
	check_minmax(1, DIST_UNIFORM);
	check_minmax(4097, DIST_REVERSE);

	check_overlapped_all();
	printf("overlapped transfers done, %ld s\n", (long) (time(NULL) - started));
	fflush(stdout);

	for (int a = 0; a < 4 && !quick; a++)
		check_memory_cap(algorithms[a]);
	for (int a = 0; a < 4 && !quick; a++)
	{
		check_interrupt(algorithms[a], 1);
		check_interrupt(algorithms[a], 3);
	}

	/* the GPU still works after all that */
	{
		sort_case	c;

		random_case(&c, GS_ALGO_BITONIC, 100000);
		c.with_index = true;
		run_case(&c);
	}

	printf("%d passed, %d failed (%ld s)\n", passed, failed, (long) (time(NULL) - started));
	return failed ? 1 : 0;
}
