/*
 * crossover.c — from which size the GPU beats the CPU, host to host.
 *
 *   bench/crossover [OUT.csv]
 *
 * Sorts the same 32-bit (key, row) pairs through the engine on the CPU (LSD
 * radix, what gpusort.device = cpu runs) and on the GPU (CUB radix, with the
 * transfers, pinned buffers as GpuSort uses), n = 2^8 .. 2^24, median of 7
 * runs each. The smallest n where the GPU wins is what
 * gpusort.gpu_min_elements should be near.
 */
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Median of 7 radix sorts of input on one device. */
static double
radix_sort_ms(const uint32_t *input, uint32_t *keys, uint32_t *index, size_t n,
			  gs_device device)
{
	gs_sort_request request;
	gs_sort_report report;

	gs_sort_request_init(&request);
	gs_sort_request_set_keys(&request, keys, n, 4, 32, index);
	request.algorithm = GS_ALGO_RADIX;
	request.device = device;
	return median_sort_ms(&request, input, 7, &report);
}

int
main(int argc, char **argv)
{
	FILE	   *csv = fopen(argc > 1 ? argv[1] : "crossover.csv", "w");
	gs_gpu_info gpu;
	uint64_t	state = 88172645463325252ULL;
	size_t		max_n = (size_t) 1 << 24;
	uint32_t   *input = malloc(max_n * 4);
	bool		pinned_keys,
				pinned_index;
	uint32_t   *keys;
	uint32_t   *index;

	use_kernels();
	keys = gs_host_buffer_alloc(max_n * 4, true, &pinned_keys);
	index = gs_host_buffer_alloc(max_n * 4, true, &pinned_index);
	gs_gpu_info_get(&gpu);
	if (!gpu.usable || csv == NULL || input == NULL || keys == NULL || index == NULL)
	{
		fprintf(stderr, "needs a usable GPU (%s) and memory\n", gpu.reason);
		return 1;
	}
	for (size_t i = 0; i < max_n; i++)
	{
		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		input[i] = (uint32_t) state;
	}
	fprintf(csv, "n,cpu_ms,gpu_ms\n");
	printf("%10s %10s %10s  faster\n", "n", "cpu_ms", "gpu_ms");
	for (size_t n = 256; n <= max_n; n *= 2)
	{
		double		cpu = radix_sort_ms(input, keys, index, n, GS_DEVICE_CPU);
		double		gpu_ms = radix_sort_ms(input, keys, index, n, GS_DEVICE_GPU);

		fprintf(csv, "%zu,%.4f,%.4f\n", n, cpu, gpu_ms);
		printf("%10zu %10.4f %10.4f  %s\n", n, cpu, gpu_ms, gpu_ms < cpu ? "GPU" : "CPU");
	}
	fclose(csv);
	return 0;
}
