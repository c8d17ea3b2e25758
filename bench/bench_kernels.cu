/*
 * bench_kernels.cu — throughput of the CUDA layer's sorts on device-resident
 * data (no transfers), against CUB called directly in the same run, plus
 * host <-> device transfer rates. See bench/README.md.
 *
 *   bench/bench_kernels --csv results.csv [--max-log 28] [--min-log 16]
 *                       [--runs 5] [--no-tuning] [--no-transfers]
 *   bench/bench_kernels --profile      (one network and two approximate sorts,
 *                                       10000 and 100 intervals, at 2^24, to
 *                                       run under ncu or nsys)
 *   bench/bench_kernels --csv F --approx [--min-log 24 --max-log 26]
 *                                      (the approximate sort and its variants
 *                                       against CUB's radix sort only)
 *   bench/bench_kernels --csv F --quantile [--min-log 24 --max-log 26]
 *                                      (the quantile mode, uniform, zipf and
 *                                       sorted keys, against CUB's radix sort
 *                                       and the equal widths)
 *
 * For each size 2^min-log .. 2^max-log (stopping where device memory runs
 * out), key type (32/64-bit keys, keys only or key + row index) and
 * distribution, it times with CUDA events, after a warm-up run, the median
 * of --runs runs, each on one of three different input sets in turn (never
 * on zeros, never the same input twice in a row):
 *
 *   bitonic/butterfly "network": the network alone on packed elements
 *       (key and index packed in 62 bits, or keys only, or 16-byte pairs),
 *       the figure the performance goal is about;
 *   bitonic/butterfly "sort": keys -> sorted keys + row index, packing and
 *       unpacking included (what gpu_sort runs between the transfers);
 *   radix "ours": gpu_sort's radix path (row index generation + CUB through
 *       our allocator); radix "ours-core": the CUB call alone through it;
 *   approx "default": the approximate sort, 10000 intervals (and, at
 *       2^24, its scatter variants as "tune:" rows);
 *   cub-radix / cub-merge: cub::DeviceRadixSort / cub::DeviceMergeSort
 *       called directly, temporary storage allocated outside the timing.
 *
 * Every measurement is a CSV row; a summary at n = 2^24 comes last.
 */
#include "../kernels/gpu_internal.cuh"

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace gs_gpu;

/* ------------------------------------------------------------------------
 * Plumbing
 * ------------------------------------------------------------------------ */

#define CUDA_OK(call) \
	do { \
		cudaError_t e_ = (call); \
		if (e_ != cudaSuccess) \
		{ \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
			exit(2); \
		} \
	} while (0)

#define GPU_OK(call) \
	do { \
		gpu_status s_ = (call); \
		if (s_ != GPU_OK) \
		{ \
			fprintf(stderr, "%s:%d: %s: status %d: %s\n", __FILE__, __LINE__, #call, (int) s_, \
					last_message()); \
			exit(2); \
		} \
	} while (0)

static FILE *csv;
static int runs = 5;
static cudaStream_t stream;

struct Row
{
	std::string kind, algorithm, impl, distribution;
	size_t		n;
	unsigned	key_bytes, key_bits;
	bool		index;
	double		ms;
	double		gkeys;
	int			passes;
	double		gbytes;			/* bytes moved per second, where counted */
	int			timed_runs = runs;	/* the median's runs */
};

static std::vector<Row> rows;

static void
emit(const Row &r)
{
	rows.push_back(r);
	fprintf(csv, "%s,%s,%s,%zu,%u,%u,%d,%s,%.5f,%.4f,%d,%d,%.1f\n", r.kind.c_str(),
			r.algorithm.c_str(), r.impl.c_str(), r.n, r.key_bytes, r.key_bits, (int) r.index,
			r.distribution.c_str(), r.ms, r.gkeys, r.timed_runs, r.passes, r.gbytes);
	fflush(csv);
}

/*
 * Times `work` (queued on `stream`) `count` times after one warm-up; before
 * each run, untimed, `prepare(run)` restores the input (from input set
 * run % 3). Returns the median in milliseconds.
 */
template <class Prepare, class Work>
static double
time_median(Prepare prepare, Work work, int count = runs)
{
	cudaEvent_t start,
				stop;
	std::vector<float> times;

	CUDA_OK(cudaEventCreate(&start));
	CUDA_OK(cudaEventCreate(&stop));
	for (int r = -1; r < count; r++)
	{
		prepare(r + 1);
		CUDA_OK(cudaStreamSynchronize(stream));
		CUDA_OK(cudaEventRecord(start, stream));
		work();
		CUDA_OK(cudaEventRecord(stop, stream));
		CUDA_OK(cudaEventSynchronize(stop));
		CUDA_OK(cudaGetLastError());
		float		ms = 0;

		CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
		if (r >= 0)
			times.push_back(ms);
	}
	cudaEventDestroy(start);
	cudaEventDestroy(stop);
	std::sort(times.begin(), times.end());
	return times[times.size() / 2];
}

/* ------------------------------------------------------------------------
 * Inputs, generated on the device
 * ------------------------------------------------------------------------ */

enum Dist { UNIFORM, GAUSSIAN, ZIPF, SORTED, REVERSE, FEW_DISTINCT, DIST_COUNT };
static const char *const dist_names[DIST_COUNT] = {
	"uniform", "gaussian", "zipf", "sorted", "reverse", "few-distinct"
};

__host__ __device__ static uint64_t
mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

template <class K>
__global__ void
generate_kernel(K *out, size_t n, int dist, uint64_t seed, unsigned key_bits)
{
	const uint64_t mask = key_bits >= 64 ? ~0ull : ((1ull << key_bits) - 1);

	for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
	{
		uint64_t	h = mix64(seed ^ (i * 0x632be59bd9b4e019ull));
		uint64_t	k;

		switch (dist)
		{
			case UNIFORM:
				k = h;
				break;
			case GAUSSIAN:
				k = ((h & mask) >> 2) + ((mix64(h) & mask) >> 2) +
					((mix64(h + 1) & mask) >> 2) + ((mix64(h + 2) & mask) >> 2);
				break;
			case ZIPF:
				{
					double		u = (h >> 11) * (1.0 / 9007199254740992.0);
					uint64_t	rank = (uint64_t) exp(u * log(1e6));

					k = rank * 0x9e3779b97f4a7c15ull;
					break;
				}
			case SORTED:
				k = (uint64_t) ((double) i / (double) n * (double) mask) ^ (seed & 1);
				break;
			case REVERSE:
				k = (uint64_t) ((double) (n - 1 - i) / (double) n * (double) mask) ^ (seed & 1);
				break;
			default:
				k = mix64(seed + h % 5);
				break;
		}
		out[i] = (K) (k & mask);
	}
}

struct KeyType
{
	const char *name;
	unsigned	key_bytes;
	unsigned	key_bits;
	bool		index;
};

static const KeyType key_types[] = {
	{"u32+index", 4, 32, true},
	{"u32", 4, 32, false},
	{"u64+index", 8, 64, true},
	{"u64", 8, 64, false},
};

/* Three input sets of keys, kept on the device. */
struct Inputs
{
	void	   *sets[3];
	size_t		n;
	unsigned	key_bytes;
};

static bool
make_inputs(Inputs &in, size_t n, const KeyType &t, int dist)
{
	in.n = n;
	in.key_bytes = t.key_bytes;
	for (int s = 0; s < 3; s++)
	{
		if (cudaMalloc(&in.sets[s], n * t.key_bytes) != cudaSuccess)
		{
			cudaGetLastError();
			for (int j = 0; j < s; j++)
				cudaFree(in.sets[j]);
			return false;
		}
		if (t.key_bytes == 4)
			generate_kernel<uint32_t><<<1024, 256, 0, stream>>>(
				(uint32_t *) in.sets[s], n, dist, mix64(s * 7919 + dist + n), t.key_bits);
		else
			generate_kernel<uint64_t><<<1024, 256, 0, stream>>>(
				(uint64_t *) in.sets[s], n, dist, mix64(s * 7919 + dist + n), t.key_bits);
		CUDA_OK(cudaGetLastError());
	}
	CUDA_OK(cudaStreamSynchronize(stream));
	return true;
}

static void
free_inputs(Inputs &in)
{
	for (int s = 0; s < 3; s++)
		cudaFree(in.sets[s]);
}

/* ------------------------------------------------------------------------
 * One (size, type, distribution): every algorithm
 * ------------------------------------------------------------------------ */

struct Less
{
	template <class K>
	__device__ bool operator()(const K &a, const K &b) const { return a < b; }
};

template <class K>
static void
cub_direct(Job &job, const Inputs &in, const KeyType &t, const std::string &dist, Row base)
{
	const size_t n = in.n;
	K		   *keys,
			   *keys_alt;
	uint32_t   *values = nullptr,
			   *values_alt = nullptr,
			   *iota = nullptr;
	void	   *temp = nullptr;
	size_t		temp_bytes = 0,
				merge_bytes = 0;

	CUDA_OK(cudaMalloc(&keys, n * sizeof(K)));
	CUDA_OK(cudaMalloc(&keys_alt, n * sizeof(K)));
	if (t.index)
	{
		CUDA_OK(cudaMalloc(&values, n * 4));
		CUDA_OK(cudaMalloc(&values_alt, n * 4));
		CUDA_OK(cudaMalloc(&iota, n * 4));
		GPU_OK(iota_device(job, iota, n, 0));
	}

	/* temporary storage, sized and taken outside the timing */
	{
		cub::DoubleBuffer<K> kb(keys, keys_alt);
		cub::DoubleBuffer<uint32_t> vb(values, values_alt);

		if (t.index)
		{
			CUDA_OK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, kb, vb, (uint32_t) n, 0,
													(int) t.key_bits, stream));
			CUDA_OK(cub::DeviceMergeSort::SortPairs(nullptr, merge_bytes, keys, values,
													(uint32_t) n, Less(), stream));
		}
		else
		{
			CUDA_OK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, kb, (uint32_t) n, 0,
												   (int) t.key_bits, stream));
			CUDA_OK(cub::DeviceMergeSort::SortKeys(nullptr, merge_bytes, keys, (uint32_t) n,
												   Less(), stream));
		}
		CUDA_OK(cudaMalloc(&temp, std::max(temp_bytes, merge_bytes)));
	}
	auto		prepare = [&](int r) {
		CUDA_OK(cudaMemcpyAsync(keys, in.sets[r % 3], n * sizeof(K), cudaMemcpyDeviceToDevice, stream));
		if (t.index)
			CUDA_OK(cudaMemcpyAsync(values, iota, n * 4, cudaMemcpyDeviceToDevice, stream));
	};

	Row			r = base;

	r.algorithm = "cub-radix";
	r.impl = "direct";
	r.ms = time_median(prepare, [&]() {
		cub::DoubleBuffer<K> kb(keys, keys_alt);
		cub::DoubleBuffer<uint32_t> vb(values, values_alt);
		size_t		bytes = temp_bytes;

		if (t.index)
			CUDA_OK(cub::DeviceRadixSort::SortPairs(temp, bytes, kb, vb, (uint32_t) n, 0,
													(int) t.key_bits, stream));
		else
			CUDA_OK(cub::DeviceRadixSort::SortKeys(temp, bytes, kb, (uint32_t) n, 0,
												   (int) t.key_bits, stream));
	});
	r.gkeys = n / r.ms / 1e6;
	emit(r);

	r = base;
	r.algorithm = "cub-merge";
	r.impl = "direct";
	r.ms = time_median(prepare, [&]() {
		size_t		bytes = merge_bytes;

		if (t.index)
			CUDA_OK(cub::DeviceMergeSort::SortPairs(temp, bytes, keys, values, (uint32_t) n,
													Less(), stream));
		else
			CUDA_OK(cub::DeviceMergeSort::SortKeys(temp, bytes, keys, (uint32_t) n, Less(),
												   stream));
	});
	r.gkeys = n / r.ms / 1e6;
	emit(r);

	cudaFree(keys);
	cudaFree(keys_alt);
	cudaFree(values);
	cudaFree(values_alt);
	cudaFree(iota);
	cudaFree(temp);
}

/* The network alone on packed elements; returns false when out of memory. */
static bool
bench_network(Job &job, gpu_algorithm algorithm, const Inputs &in, const KeyType &t,
			  const NetworkTuning *tuning, const std::string &impl, Row base)
{
	const size_t n = in.n;
	ElementKind kind = network_element_kind(t.key_bytes, t.key_bits, n, t.index);
	size_t		length = network_buffer_length(algorithm, n);
	size_t		ebytes = element_bytes(kind);
	void	   *packed[3] = {nullptr, nullptr, nullptr};
	void	   *work = nullptr;
	bool		ok = true;

	/* the three inputs, packed once (untimed) */
	for (int s = 0; s < 3 && ok; s++)
	{
		ok = cudaMalloc(&packed[s], n * ebytes) == cudaSuccess;
		if (ok && t.index)
			GPU_OK(pack_elements(job, kind, in.sets[s], t.key_bytes, n, packed[s]));
		else if (ok)
			CUDA_OK(cudaMemcpyAsync(packed[s], in.sets[s], n * ebytes, cudaMemcpyDeviceToDevice,
									stream));
	}
	ok = ok && cudaMalloc(&work, length * ebytes) == cudaSuccess;
	if (ok)
	{
		Row			r = base;

		r.algorithm = algorithm == GPU_ALGO_BITONIC ? "bitonic" : "butterfly";
		r.impl = impl;
		r.passes = network_pass_count(algorithm, kind, n, tuning);
		r.ms = time_median([&](int run) {
			CUDA_OK(cudaMemcpyAsync(work, packed[run % 3], n * ebytes, cudaMemcpyDeviceToDevice,
									stream));
		}, [&]() {
			GPU_OK(network_sort_device(job, algorithm, kind, work, n, tuning));
		});
		r.gkeys = n / r.ms / 1e6;
		/* each pass reads and writes the (padded) array once */
		r.gbytes = r.passes > 0 ? 2.0 * r.passes * length * ebytes / (r.ms * 1e6) : 0;
		emit(r);
	}
	cudaGetLastError();
	for (int s = 0; s < 3; s++)
		cudaFree(packed[s]);
	cudaFree(work);
	return ok;
}

/* What gpu_sort runs between its transfers, for one exact algorithm. */
static bool
bench_exact(Job &job, gpu_algorithm algorithm, const Inputs &in, const KeyType &t, Row base)
{
	const size_t n = in.n;
	ExactLayout layout;
	ExactBuffers b;
	bool		ok;

	memset(&b, 0, sizeof(b));
	GPU_OK(exact_sort_layout(algorithm, t.key_bytes, t.key_bits, n, t.index, &layout));
	ok = cudaMalloc(&b.keys, layout.key_capacity * t.key_bytes) == cudaSuccess;
	if (ok && t.index)
		ok = cudaMalloc(&b.row_index, n * 4) == cudaSuccess;
	if (ok && layout.needs_alt)
		ok = cudaMalloc(&b.keys_alt, n * t.key_bytes) == cudaSuccess &&
			(!t.index || cudaMalloc(&b.row_index_alt, n * 4) == cudaSuccess);
	if (ok && layout.element_count > 0)
		ok = cudaMalloc(&b.elements, layout.element_count * element_bytes(layout.element_kind)) ==
			cudaSuccess;
	if (ok)
	{
		Row			r = base;
		auto		prepare = [&](int run) {
			CUDA_OK(cudaMemcpyAsync(b.keys, in.sets[run % 3], n * t.key_bytes,
									cudaMemcpyDeviceToDevice, stream));
		};

		r.algorithm = algorithm == GPU_ALGO_BITONIC ? "bitonic" :
			algorithm == GPU_ALGO_BUTTERFLY ? "butterfly" : "radix";
		r.impl = algorithm == GPU_ALGO_RADIX ? "ours" : "sort";
		r.ms = time_median(prepare, [&]() {
			bool		in_alt;

			GPU_OK(exact_sort_device(job, algorithm, t.key_bytes, t.key_bits, n, layout, b,
									 nullptr, &in_alt));
		});
		r.gkeys = n / r.ms / 1e6;
		emit(r);

		uint32_t   *iota = nullptr;

		if (algorithm == GPU_ALGO_RADIX && (!t.index || cudaMalloc(&iota, n * 4) == cudaSuccess))
		{
			/* the CUB call alone, the index restored (untimed) before each run */
			if (t.index)
				GPU_OK(iota_device(job, iota, n, 0));
			r = base;
			r.algorithm = "radix";
			r.impl = "ours-core";
			r.ms = time_median([&](int run) {
				prepare(run);
				if (t.index)
					CUDA_OK(cudaMemcpyAsync(b.row_index, iota, n * 4, cudaMemcpyDeviceToDevice,
											stream));
			}, [&]() {
				bool		in_alt;

				GPU_OK(radix_sort_device(job, t.key_bytes, t.key_bits, n, b.keys, b.keys_alt,
										 b.row_index, b.row_index_alt, &in_alt));
			});
			r.gkeys = n / r.ms / 1e6;
			emit(r);
		}
		cudaFree(iota);
	}
	cudaGetLastError();
	cudaFree(b.keys);
	cudaFree(b.row_index);
	cudaFree(b.keys_alt);
	cudaFree(b.row_index_alt);
	cudaFree(b.elements);
	return ok;
}

/* A CSV row's fields that every measurement of (key type, distribution, n) shares. */
static Row
row_for(const KeyType &t, const char *distribution, size_t n)
{
	Row			base;

	base.kind = t.name;
	base.distribution = distribution;
	base.n = n;
	base.key_bytes = t.key_bytes;
	base.key_bits = t.key_bits;
	base.index = t.index;
	base.ms = base.gkeys = base.gbytes = 0;
	base.passes = 0;
	return base;
}

/*
 * The last timed run's output, checked on the host: every key of the input
 * once (through the row index, when there is one) and intervals that never
 * decrease. A tuning variant that is fast but wrong must not win.
 */
static bool
approx_output_correct(const void *input, const void *out, const uint32_t *index,
					  const ApproxResult *result, size_t n, unsigned key_bytes,
					  const ApproxQuantile *quantile, uint32_t intervals)
{
	ApproxResult host_result;
	std::vector<uint64_t> in_keys(n), out_keys(n);
	std::vector<uint32_t> order(index ? n : 0);
	std::vector<bool> seen(index ? n : 0, false);
	auto		widen = [&](const void *device, std::vector<uint64_t> &host) {
		if (key_bytes == 8)
			return cudaMemcpy(host.data(), device, n * 8, cudaMemcpyDeviceToHost) == cudaSuccess;
		std::vector<uint32_t> narrow(n);

		if (cudaMemcpy(narrow.data(), device, n * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
			return false;
		std::copy(narrow.begin(), narrow.end(), host.begin());
		return true;
	};

	if (!widen(input, in_keys) || !widen(out, out_keys) ||
		cudaMemcpy(&host_result, result, sizeof(host_result), cudaMemcpyDeviceToHost) != cudaSuccess ||
		(index && cudaMemcpy(order.data(), index, n * 4, cudaMemcpyDeviceToHost) != cudaSuccess))
		return false;
	if (host_result.valid_outputs != n)
		return false;

	/* the quantile mode's map points at splitters that are gone: the host
	 * makes its own, as the CPU engine does, which must give the same
	 * buckets (and the same fullest one) */
	std::vector<uint64_t> splitters;

	if (quantile != nullptr)
	{
		uint32_t	sample_size = gs_quantile_sample_size(n, intervals);
		std::vector<uint64_t> sample(sample_size);
		std::vector<uint32_t> counts(gs_quantile_buckets(intervals), 0);

		for (uint32_t d = 0; d < sample_size; d++)
			sample[d] = in_keys[gs_quantile_sample_position(quantile->seed, d, n)];
		std::sort(sample.begin(), sample.end());
		for (uint32_t j = 1; j < intervals; j++)
			splitters.push_back(sample[gs_quantile_splitter_position(j, sample_size, intervals)]);
		host_result.map = gs_interval_map_quantile(splitters.data(), intervals - 1);
		for (size_t i = 0; i < n; i++)
			counts[gs_approx_interval(&host_result.map, in_keys[i])]++;
		if (*std::max_element(counts.begin(), counts.end()) != host_result.largest)
			return false;
	}
	if (!index)
	{
		/* the same multiset of keys: sums of a mixing hash (sorting 2^26
		 * keys twice per row would take longer than the benchmark) */
		uint64_t	in_sum = 0,
					out_sum = 0;

		for (size_t i = 0; i < n; i++)
		{
			in_sum += mix64(in_keys[i]);
			out_sum += mix64(out_keys[i]);
		}
		if (in_sum != out_sum)
			return false;
	}
	uint32_t	previous = 0;

	for (size_t i = 0; i < n; i++)
	{
		uint32_t	interval = gs_approx_interval(&host_result.map, out_keys[i]);

		if (interval < previous)
			return false;
		previous = interval;
		if (index)
		{
			if (order[i] >= n || seen[order[i]] || in_keys[order[i]] != out_keys[i])
				return false;
			seen[order[i]] = true;
		}
	}
	return true;
}

static bool
bench_approx(Job &job, const Inputs &in, const KeyType &t, const ApproxTuning *tuning,
			 const char *impl, Row base, uint32_t intervals = 10000,
			 const ApproxQuantile *quantile = nullptr)
{
	const size_t n = in.n;
	void	   *keys = nullptr,
			   *out = nullptr;
	uint32_t   *index = nullptr;
	ApproxResult *result = nullptr;
	bool		ok;

	ok = cudaMalloc(&keys, n * t.key_bytes) == cudaSuccess &&
		cudaMalloc(&out, n * t.key_bytes) == cudaSuccess &&
		(!t.index || cudaMalloc(&index, n * 4) == cudaSuccess) &&
		cudaMalloc(&result, sizeof(ApproxResult)) == cudaSuccess;
	if (ok)
	{
		Row			r = base;

		r.algorithm = quantile ? "approx-quantile" : "approx";
		r.impl = impl;
		r.ms = time_median([&](int run) {
			CUDA_OK(cudaMemcpyAsync(keys, in.sets[run % 3], n * t.key_bytes,
									cudaMemcpyDeviceToDevice, stream));
		}, [&]() {
			GPU_OK(approx_sort_device(job, keys, t.key_bytes, n, intervals, 0, out, index, result,
									  tuning, quantile));
		});
		r.gkeys = n / r.ms / 1e6;
		/* the last run sorted sets[runs % 3] (see time_median) */
		if (!approx_output_correct(in.sets[runs % 3], out, index, result, n, t.key_bytes,
								   quantile, intervals))
		{
			fprintf(stderr, "approx %s %s n=%zu: WRONG OUTPUT\n", t.name, impl, n);
			r.impl = std::string(impl) + "/WRONG";
			ok = false;
		}
		emit(r);
	}
	cudaGetLastError();
	cudaFree(keys);
	cudaFree(out);
	cudaFree(index);
	cudaFree(result);
	return ok;
}

static bool
bench_all(Job &job, size_t n, const KeyType &t, int dist)
{
	Inputs		in;
	Row			base;
	bool		ok = true;

	if (!make_inputs(in, n, t, dist))
		return false;
	base = row_for(t, dist_names[dist], n);

	ok = ok && bench_network(job, GPU_ALGO_BITONIC, in, t, nullptr, "network", base);
	ok = ok && bench_network(job, GPU_ALGO_BUTTERFLY, in, t, nullptr, "network", base);
	ok = ok && bench_exact(job, GPU_ALGO_BITONIC, in, t, base);
	ok = ok && bench_exact(job, GPU_ALGO_BUTTERFLY, in, t, base);
	ok = ok && bench_exact(job, GPU_ALGO_RADIX, in, t, base);
	ok = ok && bench_approx(job, in, t, nullptr, "default", base);
	if (ok)
	{
		if (t.key_bytes == 4)
			cub_direct<uint32_t>(job, in, t, dist_names[dist], base);
		else
			cub_direct<uint64_t>(job, in, t, dist_names[dist], base);
	}
	free_inputs(in);
	return ok;
}

/*
 * The approximate sort's scatter methods and partition block shapes ("tune:"
 * rows), and the default at other interval counts ("intervals=K" rows).
 */
static void
bench_approx_variants(Job &job, const Inputs &in, const KeyType &t, const Row &base)
{
	const ApproxShape D = APPROX_SHAPE_DEFAULT,
				S512 = APPROX_SHAPE_512x8,
				S384 = APPROX_SHAPE_384x8,
				S320 = APPROX_SHAPE_320x8;
	/* block shapes against the default's choice (see pass_shape) */
	const ApproxTuning approx_variants[] = {
		{APPROX_SCATTER_CURSORS, 0, D, D},
		{APPROX_SCATTER_PARTITION, 0, S512, S512},
		{APPROX_SCATTER_PARTITION, 0, S384, S384},
		{APPROX_SCATTER_PARTITION, 0, S320, S320},
	};
	static const char *const shape_names[] = {"default", "512x8", "384x8", "320x8"};
	static const uint32_t interval_counts[] = {100, 256, 1000, 2048, 100000, 1000000};

	for (const ApproxTuning &a : approx_variants)
	{
		char		name[64];

		if (a.scatter == APPROX_SCATTER_CURSORS)
			snprintf(name, sizeof(name), "tune:cursors");
		else
			snprintf(name, sizeof(name), "tune:partition/blocks-%s-%s", shape_names[a.first_shape],
					 shape_names[a.second_shape]);
		bench_approx(job, in, t, &a, name, base);
	}
	for (uint32_t k : {1000u, 2048u})
	{
		const ApproxTuning one_pass = {APPROX_SCATTER_PARTITION, 2048, D, D};
		char		name[64];

		snprintf(name, sizeof(name), "tune:partition/one-pass/intervals=%u", k);
		bench_approx(job, in, t, &one_pass, name, base, k);
	}
	for (uint32_t k : interval_counts)
	{
		char		name[64];

		snprintf(name, sizeof(name), "intervals=%u", k);
		bench_approx(job, in, t, nullptr, name, base, k);
	}
}

/*
 * --approx: the approximate sort (default and variants) against CUB's
 * radix sort of the same keys and pairs, n = 2^min-log .. 2^max-log, uniform
 * keys; prints approx/CUB per size and key type.
 */
static const Row *find(const char *kind, const char *algorithm, const char *impl, size_t n,
					  const char *dist);

static void
bench_approx_only(Job &job, int min_log, int max_log)
{
	for (int log = min_log; log <= max_log; log++)
		for (const KeyType &t : key_types)
		{
			Inputs		in;
			Row			base;
			const size_t n = (size_t) 1 << log;

			if (!make_inputs(in, n, t, UNIFORM))
				return;
			base = row_for(t, "uniform", n);
			bench_approx(job, in, t, nullptr, "default", base);
			bench_approx_variants(job, in, t, base);
			if (t.key_bytes == 4)
				cub_direct<uint32_t>(job, in, t, "uniform", base);
			else
				cub_direct<uint64_t>(job, in, t, "uniform", base);
			free_inputs(in);

			const Row  *a = find(t.name, "approx", "default", n, "uniform");
			const Row  *c = find(t.name, "cub-radix", "direct", n, "uniform");

			if (a && c)
				printf("2^%d %-12s approx %.2f ms (%.2f Gkeys/s), cub radix %.2f ms: "
					   "approx is %.2fx CUB\n", log, t.name, a->ms, a->gkeys, c->ms,
					   c->ms / a->ms);
			fflush(stdout);
		}

	/* the other distributions at the smallest size: the default only */
	for (const KeyType &t : key_types)
		for (int d = 1; d < DIST_COUNT; d++)
		{
			Inputs		in;
			Row			base;
			const size_t n = (size_t) 1 << min_log;

			if (!make_inputs(in, n, t, d))
				return;
			base = row_for(t, dist_names[d], n);
			bench_approx(job, in, t, nullptr, "default", base);
			free_inputs(in);

			const Row  *a = find(t.name, "approx", "default", n, dist_names[d]);

			if (a)
				printf("2^%d %-12s %-12s approx %.2f ms (%.2f Gkeys/s)\n", min_log, t.name,
					   dist_names[d], a->ms, a->gkeys);
		}
}

/*
 * --quantile: the quantile mode (1024 and 10000 intervals) against CUB's
 * radix sort of the same keys and pairs, n = 2^min-log .. 2^max-log, on
 * uniform, zipf and sorted keys; prints CUB's time over the quantile
 * mode's per size, key type and distribution (the issue's goal: at least
 * 2 for pairs at 2^24 and 2^26).
 */
static void
bench_quantile_only(Job &job, int min_log, int max_log)
{
	static const ApproxQuantile quantile = {GS_QUANTILE_DEFAULT_SEED};
	static const int dists[] = {UNIFORM, ZIPF, SORTED};

	for (int log = min_log; log <= max_log; log++)
		for (const KeyType &t : key_types)
			for (int d : dists)
			{
				Inputs		in;
				Row			base;
				const size_t n = (size_t) 1 << log;

				if (!make_inputs(in, n, t, d))
					return;
				base = row_for(t, dist_names[d], n);
				for (uint32_t k : {1024u, 10000u})
				{
					char		name[64];

					snprintf(name, sizeof(name), "intervals=%u", k);
					bench_approx(job, in, t, nullptr, name, base, k, &quantile);
				}
				bench_approx(job, in, t, nullptr, "default", base);
				if (t.key_bytes == 4)
					cub_direct<uint32_t>(job, in, t, dist_names[d], base);
				else
					cub_direct<uint64_t>(job, in, t, dist_names[d], base);
				free_inputs(in);

				const Row  *c = find(t.name, "cub-radix", "direct", n, dist_names[d]);
				const Row  *w = find(t.name, "approx", "default", n, dist_names[d]);

				for (const char *k : {"intervals=1024", "intervals=10000"})
				{
					const Row  *q = find(t.name, "approx-quantile", k, n, dist_names[d]);

					if (q && c && w)
						printf("2^%d %-10s %-8s quantile %-16s %7.3f ms, width %7.3f ms, cub radix "
							   "%7.3f ms: CUB / quantile = %.2fx\n", log, t.name, dist_names[d], k,
							   q->ms, w->ms, c->ms, c->ms / q->ms);
				}
				fflush(stdout);
			}
}

/* Every workable (tile, wide) shape pair at one size: picks the defaults. */
static void
bench_tuning(Job &job, size_t n, bool networks_only)
{
	for (const KeyType &t : key_types)
	{
		if (networks_only && &t != &key_types[0])
			break;

		ElementKind kind = network_element_kind(t.key_bytes, t.key_bits, n, t.index);
		int			shapes = network_shape_count(kind);
		Inputs		in;
		Row			base;

		if (!make_inputs(in, n, t, UNIFORM))
			return;
		base = row_for(t, "uniform", n);
		for (int tile = 0; tile < shapes; tile++)
			for (int wide = 0; wide < shapes; wide++)
				for (int extra_run = 0; extra_run < 2; extra_run++)
				{
					NetworkTuning tuning;
					int			tr, tn, wr, wn;
					int			default_run = (int) std::lround(std::log2(128.0 / element_bytes(kind)));
					char		name[96];

					network_shape(kind, tile, &tr, &tn);
					network_shape(kind, wide, &wr, &wn);
					tuning.first_shape = tile;	/* the first pass on the same tiles */
					tuning.tile_shape = tile;
					tuning.wide_shape = wide;
					tuning.min_run_bits = default_run + extra_run;
					if (network_pass_count(GPU_ALGO_BITONIC, kind, n, &tuning) < 0)
						continue;
					/* (no commas: the name is a CSV field) */
					snprintf(name, sizeof(name), "tune:tile%d.%d/wide%d.%d/run%d", tr, tn, wr,
							 wn, tuning.min_run_bits);
					bench_network(job, GPU_ALGO_BITONIC, in, t, &tuning, name, base);
				}
		/* the first pass's shape alone, the others the defaults */
		for (int first = 0; first < shapes; first++)
		{
			NetworkTuning tuning = {first, -1, -1, -1};
			int			fr, fn;
			char		name[96];

			network_shape(kind, first, &fr, &fn);
			if (network_pass_count(GPU_ALGO_BITONIC, kind, n, &tuning) < 0)
				continue;
			snprintf(name, sizeof(name), "tune:first%d.%d", fr, fn);
			bench_network(job, GPU_ALGO_BITONIC, in, t, &tuning, name, base);
		}

		if (!networks_only)
			bench_approx_variants(job, in, t, base);
		free_inputs(in);
	}
}

/* ------------------------------------------------------------------------
 * Transfers
 * ------------------------------------------------------------------------ */
static void
bench_transfers(size_t max_bytes)
{
	void	   *device = nullptr;
	void	   *pinned = nullptr;
	void	   *pageable = nullptr;

	if (cudaMalloc(&device, max_bytes) != cudaSuccess ||
		cudaHostAlloc(&pinned, max_bytes, cudaHostAllocDefault) != cudaSuccess)
	{
		cudaGetLastError();
		fprintf(stderr, "transfers: cannot allocate %zu bytes\n", max_bytes);
		cudaFree(device);
		return;
	}
	pageable = malloc(max_bytes);
	memset(pageable, 1, max_bytes);
	memset(pinned, 1, max_bytes);
	for (size_t bytes = (size_t) 1 << 20; bytes <= max_bytes; bytes <<= 2)
		for (int p = 0; p < 2; p++)
			for (int dir = 0; dir < 2; dir++)
			{
				void	   *host = p ? pageable : pinned;
				Row			r;

				r.kind = "transfer";
				r.algorithm = dir ? "device-to-host" : "host-to-device";
				r.impl = p ? "pageable" : "pinned";
				r.distribution = "-";
				r.n = bytes;
				r.key_bytes = r.key_bits = 0;
				r.index = false;
				r.passes = 0;
				r.timed_runs = std::max(runs, 9);	/* transfers are noisier than kernels */
				r.ms = time_median([](int) {}, [&]() {
					if (dir)
						CUDA_OK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
					else
						CUDA_OK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
				}, r.timed_runs);
				r.gbytes = bytes / (r.ms * 1e6);
				r.gkeys = 0;
				emit(r);
			}
	cudaFree(device);
	cudaFreeHost(pinned);
	free(pageable);
}

/* ------------------------------------------------------------------------
 * Host to host: gpu_sort() on pinned memory, transfers included, with and
 * without overlapping them with the sort
 * ------------------------------------------------------------------------ */

/* Sorted by key, ties in input order, and the index a permutation of the
 * input giving those keys. */
template <class K>
static bool
host_sort_ok(const K *input, const K *keys, const uint32_t *index, size_t n)
{
	std::vector<bool> seen(n, false);

	for (size_t i = 0; i < n; i++)
	{
		if (index[i] >= n || seen[index[i]] || input[index[i]] != keys[i])
			return false;
		seen[index[i]] = true;
		if (i > 0 && (keys[i - 1] > keys[i] || (keys[i - 1] == keys[i] && index[i - 1] > index[i])))
			return false;
	}
	return true;
}

static void
bench_host_sorts(int min_log, int max_log)
{
	for (const KeyType &t : key_types)
	{
		if (!t.index)
			continue;
		for (int log = std::max(min_log, 20); log <= max_log; log++)
		{
			const size_t n = (size_t) 1 << log;
			const size_t bytes = n * t.key_bytes;
			Inputs		in;
			void	   *input = nullptr,
					   *keys = nullptr;
			uint32_t   *index = nullptr;

			if (!make_inputs(in, n, t, UNIFORM))
				return;
			if (cudaHostAlloc(&input, bytes, cudaHostAllocDefault) != cudaSuccess ||
				cudaHostAlloc(&keys, bytes, cudaHostAllocDefault) != cudaSuccess ||
				cudaHostAlloc((void **) &index, n * 4, cudaHostAllocDefault) != cudaSuccess)
			{
				cudaGetLastError();
				free_inputs(in);
				cudaFreeHost(input);
				cudaFreeHost(keys);
				return;
			}
			CUDA_OK(cudaMemcpy(input, in.sets[0], bytes, cudaMemcpyDeviceToHost));
			free_inputs(in);
			for (unsigned chunks : {1u, 2u, 4u, 8u, 0u})
			{
				gpu_sort_job job;
				gpu_timing	timing;
				std::vector<double> times;
				Row			r;
				char		impl[32];

				memset(&job, 0, sizeof(job));
				job.n = n;
				job.key_bytes = t.key_bytes;
				job.key_bits = t.key_bits;
				job.keys = keys;
				job.row_index = index;
				job.algorithm = GPU_ALGO_RADIX;
				job.chunks = chunks;
				for (int run = -1; run < runs; run++)
				{
					memcpy(keys, input, bytes);
					auto		started = std::chrono::steady_clock::now();

					GPU_OK(gpu_sort(&job, &timing));
					if (run >= 0)
						times.push_back(std::chrono::duration<double, std::milli>(
							std::chrono::steady_clock::now() - started).count());
				}
				std::sort(times.begin(), times.end());
				bool		ok = t.key_bytes == 4 ?
					host_sort_ok((const uint32_t *) input, (const uint32_t *) keys, index, n) :
					host_sort_ok((const uint64_t *) input, (const uint64_t *) keys, index, n);

				if (chunks == 0)
					snprintf(impl, sizeof(impl), "host/auto%s", ok ? "" : "/WRONG");
				else
					snprintf(impl, sizeof(impl), "host/chunks=%u%s", chunks, ok ? "" : "/WRONG");
				r.kind = t.name;
				r.algorithm = "radix";
				r.impl = impl;
				r.distribution = "uniform";
				r.n = n;
				r.key_bytes = t.key_bytes;
				r.key_bits = t.key_bits;
				r.index = true;
				r.passes = 0;
				r.ms = times[times.size() / 2];
				r.gkeys = n / (r.ms * 1e6);
				r.gbytes = (bytes + n * (t.key_bytes + 4.0)) / (r.ms * 1e6);
				emit(r);
				printf("2^%d %-10s %-22s %8.3f ms (last run: upload %.3f, sort %.3f, download %.3f)\n",
					   log, t.name, impl, r.ms, timing.upload_ms, timing.sort_ms,
					   timing.download_ms);
				fflush(stdout);
			}
			cudaFreeHost(input);
			cudaFreeHost(keys);
			cudaFreeHost(index);
		}
	}
}

/* ------------------------------------------------------------------------
 * Summary
 * ------------------------------------------------------------------------ */
static const Row *
find(const char *kind, const char *algorithm, const char *impl, size_t n, const char *dist)
{
	for (const Row &r : rows)
		if (r.kind == kind && r.algorithm == algorithm && r.impl == impl && r.n == n &&
			r.distribution == dist)
			return &r;
	return nullptr;
}

/* One summary line: Gkeys/s of (algorithm, impl) over CUB radix's, per key type. */
static void
print_ratio_row(const char *label, const char *algorithm, const char *impl, size_t n,
				const char *format)
{
	printf("\n%-22s", label);
	for (const KeyType &t : key_types)
	{
		const Row  *a = find(t.name, algorithm, impl, n, "uniform");
		const Row  *c = find(t.name, "cub-radix", "direct", n, "uniform");

		printf(" ");
		if (a && c)
			printf(format, a->gkeys / c->gkeys);
		else
			printf("%12s", "-");
	}
}

static void
summary(size_t n)
{
	static const char *const columns[][2] = {
		{"bitonic", "network"}, {"bitonic", "sort"}, {"butterfly", "network"},
		{"butterfly", "sort"}, {"radix", "ours"}, {"radix", "ours-core"},
		{"cub-radix", "direct"}, {"cub-merge", "direct"}, {"approx", "default"}
	};

	printf("\nSummary at n = %zu, uniform keys, Gkeys/s (device-resident, median of %d)\n", n, runs);
	printf("%-22s", "algorithm");
	for (const KeyType &t : key_types)
		printf(" %12s", t.name);
	printf("\n");
	for (auto &c : columns)
	{
		char		label[64];

		snprintf(label, sizeof(label), "%s/%s", c[0], c[1]);
		printf("%-22s", label);
		for (const KeyType &t : key_types)
		{
			const Row  *r = find(t.name, c[0], c[1], n, "uniform");

			if (r)
				printf(" %12.2f", r->gkeys);
			else
				printf(" %12s", "-");
		}
		printf("\n");
	}
	printf("%-22s", "network passes");
	for (const KeyType &t : key_types)
	{
		const Row  *r = find(t.name, "bitonic", "network", n, "uniform");

		printf(" %12d", r ? r->passes : 0);
	}
	printf("\n%-22s", "network GB/s moved");
	for (const KeyType &t : key_types)
	{
		const Row  *r = find(t.name, "bitonic", "network", n, "uniform");

		printf(" %12.0f", r ? r->gbytes : 0.0);
	}
	print_ratio_row("approx/cub-radix", "approx", "default", n, "%12.2f");
	print_ratio_row("radix ours/cub", "radix", "ours-core", n, "%12.3f");
	printf("\n\nDistributions at n = %zu (Gkeys/s): bitonic/butterfly network, radix ours, approx, cub-radix\n", n);
	for (const KeyType &t : key_types)
		for (int d = 0; d < DIST_COUNT; d++)
		{
			const Row  *a = find(t.name, "bitonic", "network", n, dist_names[d]);
			const Row  *b = find(t.name, "butterfly", "network", n, dist_names[d]);
			const Row  *c = find(t.name, "radix", "ours", n, dist_names[d]);
			const Row  *e = find(t.name, "approx", "default", n, dist_names[d]);
			const Row  *f = find(t.name, "cub-radix", "direct", n, dist_names[d]);

			printf("  %-10s %-13s %8.2f %8.2f %8.2f %8.2f %8.2f\n", t.name, dist_names[d],
				   a ? a->gkeys : 0, b ? b->gkeys : 0, c ? c->gkeys : 0, e ? e->gkeys : 0,
				   f ? f->gkeys : 0);
		}
	printf("\nTransfers (GB/s), 256 MiB:\n");
	for (const Row &r : rows)
		if (r.kind == "transfer" && r.n == ((size_t) 1 << 28))
			printf("  %-15s %-9s %6.1f\n", r.algorithm.c_str(), r.impl.c_str(), r.gbytes);
	printf("\nBest tunings at n = %zu (uniform):\n", n);
	for (const char *algorithm : {"bitonic", "approx"})
		for (const KeyType &t : key_types)
		{
			const Row  *best = nullptr;

			for (const Row &r : rows)
				if (r.kind == t.name && r.n == n && r.algorithm == algorithm &&
					r.impl.compare(0, 5, "tune:") == 0 && (!best || r.gkeys > best->gkeys))
					best = &r;
			if (best)
				printf("  %-10s %-9s %-36s %6.2f Gkeys/s, %d passes, %.0f GB/s\n", t.name,
					   algorithm, best->impl.c_str(), best->gkeys, best->passes, best->gbytes);
		}
}

/*
 * --profile: one bitonic network sort (u32 key + index, packed) and one
 * approximate sort at n = 2^24, nothing else: a short run to put under
 * Nsight Compute.
 */
static void
profile_once(Job &job)
{
	const size_t n = (size_t) 1 << 24;
	const KeyType &t = key_types[0];
	Inputs		in;
	void	   *elements,
			   *out;
	uint32_t   *index;
	ApproxResult *result;

	if (!make_inputs(in, n, t, UNIFORM))
		exit(2);
	CUDA_OK(cudaMalloc(&elements, n * 8));
	CUDA_OK(cudaMalloc(&out, n * 4));
	CUDA_OK(cudaMalloc(&index, n * 4));
	CUDA_OK(cudaMalloc(&result, sizeof(ApproxResult)));
	GPU_OK(pack_elements(job, ELEMENT_PACKED62, in.sets[0], 4, n, elements));
	GPU_OK(network_sort_device(job, GPU_ALGO_BITONIC, ELEMENT_PACKED62, elements, n, nullptr));
	for (uint32_t intervals : {10000u, 100u})
		GPU_OK(approx_sort_device(job, in.sets[1], 4, n, intervals, 0, out, index, result,
								  nullptr));
	CUDA_OK(cudaStreamSynchronize(stream));
	printf("profiled: %d network passes\n", network_pass_count(GPU_ALGO_BITONIC, ELEMENT_PACKED62, n, nullptr));
}

int
main(int argc, char **argv)
{
	const char *csv_path = nullptr;
	int			min_log = 16,
				max_log = 28;
	bool		tuning = true,
				transfers = true,
				profile = false,
				approx_only = false,
				quantile_only = false,
				networks_only = false,
				host_only = false;

	for (int i = 1; i < argc; i++)
	{
		if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv_path = argv[++i];
		else if (!strcmp(argv[i], "--max-log") && i + 1 < argc)
			max_log = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--min-log") && i + 1 < argc)
			min_log = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-tuning"))
			tuning = false;
		else if (!strcmp(argv[i], "--no-transfers"))
			transfers = false;
		else if (!strcmp(argv[i], "--profile"))
			profile = true;
		else if (!strcmp(argv[i], "--approx"))
			approx_only = true;
		else if (!strcmp(argv[i], "--quantile"))
			quantile_only = true;
		else if (!strcmp(argv[i], "--networks"))
			networks_only = true;
		else if (!strcmp(argv[i], "--host"))
			host_only = true;
		else
		{
			fprintf(stderr, "usage: %s --csv FILE [--min-log 16] [--max-log 28] [--runs 5] "
					"[--no-tuning] [--no-transfers]\n", argv[0]);
			return 2;
		}
	}
	if (profile)
	{
		Job			job(0, nullptr, nullptr);

		GPU_OK(job.begin());
		stream = job.stream();
		profile_once(job);
		return job.finish() == GPU_OK ? 0 : 1;
	}
	if (csv_path == nullptr || (csv = fopen(csv_path, "w")) == nullptr)
	{
		fprintf(stderr, "need --csv FILE (writable)\n");
		return 2;
	}
	fprintf(csv, "kind,algorithm,impl,n,key_bytes,key_bits,index,distribution,median_ms,"
			"gkeys_per_s,runs,passes,gbytes_per_s\n");

	Job			job(0, nullptr, nullptr);

	GPU_OK(job.begin());
	stream = job.stream();
	{
		/* keep freed memory in the pool: allocations inside timed regions
		 * (CUB's temporary storage) then cost what they cost warm */
		cudaMemPool_t pool;
		uint64_t	threshold = ~0ull;

		CUDA_OK(cudaDeviceGetDefaultMemPool(&pool, 0));
		CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
	}
	const cudaDeviceProp &p = device_properties();

	printf("device: %s, %d SMs, %.1f GiB, %zu KiB shared/block; sizes 2^%d..2^%d, %d runs\n",
		   p.name, p.multiProcessorCount, p.totalGlobalMem / 1073741824.0,
		   p.sharedMemPerBlockOptin / 1024, min_log, max_log, runs);
	fflush(stdout);

	if (quantile_only)
	{
		bench_quantile_only(job, min_log, max_log);
		GPU_OK(job.finish());
		fclose(csv);
		return 0;
	}
	if (approx_only)
	{
		bench_approx_only(job, min_log, max_log);
		GPU_OK(job.finish());
		fclose(csv);
		return 0;
	}

	const size_t summary_n = (size_t) 1 << std::min(24, max_log);

	if (host_only)
	{
		bench_host_sorts(min_log, max_log);
		GPU_OK(job.finish());
		fclose(csv);
		return 0;
	}
	if (networks_only)
	{
		/* the network shapes' sweep and the default rows, u32+index at 2^24 */
		bench_tuning(job, summary_n, true);
		bench_all(job, summary_n, key_types[0], UNIFORM);
		GPU_OK(job.finish());
		fclose(csv);
		return 0;
	}
	if (tuning)
	{
		bench_tuning(job, summary_n, false);
		printf("tuning done\n");
		fflush(stdout);
	}
	for (int log = min_log; log <= max_log; log++)
	{
		bool		fits = true;

		for (const KeyType &t : key_types)
			fits = bench_all(job, (size_t) 1 << log, t, UNIFORM) && fits;
		printf("2^%d done%s\n", log, fits ? "" : " (some out of memory)");
		fflush(stdout);
		if (!fits)
			break;
	}
	for (const KeyType &t : key_types)
		for (int d = 1; d < DIST_COUNT; d++)
			bench_all(job, summary_n, t, d);
	if (transfers)
	{
		bench_transfers((size_t) 1 << 30);
		bench_host_sorts(min_log, std::min(max_log, 26));
	}
	GPU_OK(job.finish());
	fclose(csv);
	summary(summary_n);
	return 0;
}
