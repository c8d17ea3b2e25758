/*
 * gpu_sort.cu — gpu_sort(), the exact sort of host keys on the GPU: checks
 * the request, sizes and takes device memory (under the caller's cap),
 * uploads the keys, makes the row index on the device (never uploaded),
 * sorts with the chosen algorithm, downloads, and reports timings. Every
 * allocation is given back before it returns, whatever happened.
 *
 * Large radix sorts of pinned host memory overlap the transfers with the
 * sort (sort_overlapped): the keys go up in chunks on a second stream, each
 * chunk is sorted as soon as it is there, the sorted chunks are merged
 * (gpu_merge.cu), and each piece of the merged output goes back while the
 * next one is being merged.
 *
 * Also the device-resident core shared with the benchmark: which element
 * type a network sorts (keys alone; key and index packed in 62 bits when
 * they fit; a 16-byte pair otherwise), and the radix path.
 */
#include "gpu_internal.cuh"

#include <string.h>

namespace gs_gpu {

gpu_status
exact_sort_layout(gpu_algorithm algorithm, unsigned key_bytes, unsigned key_bits, size_t n,
				  bool with_index, ExactLayout *layout)
{
	memset(layout, 0, sizeof(*layout));
	layout->key_capacity = n;
	if (algorithm == GPU_ALGO_RADIX)
	{
		layout->needs_alt = true;
		GS_TRY(radix_temp_bytes(key_bytes, key_bits, n, with_index, &layout->temp_bytes));
		layout->total_bytes = 2 * n * key_bytes + (with_index ? 2 * n * sizeof(uint32_t) : 0) +
			layout->temp_bytes;
		return GPU_OK;
	}
	if (algorithm != GPU_ALGO_BITONIC && algorithm != GPU_ALGO_BUTTERFLY)
	{
		set_message("unknown GPU algorithm %d", (int) algorithm);
		return GPU_INVALID;
	}
	layout->element_kind = network_element_kind(key_bytes, key_bits, n, with_index);
	if (!with_index)
	{
		/* keys sorted in place, in a buffer long enough for the padding */
		layout->key_capacity = network_buffer_length(algorithm, n);
		layout->total_bytes = layout->key_capacity * key_bytes;
		return GPU_OK;
	}
	layout->element_count = network_buffer_length(algorithm, n);
	layout->total_bytes = n * key_bytes + n * sizeof(uint32_t) +
		layout->element_count * element_bytes(layout->element_kind);
	return GPU_OK;
}

gpu_status
exact_sort_device(Job &job, gpu_algorithm algorithm, unsigned key_bytes, unsigned key_bits,
				  size_t n, const ExactLayout &layout, const ExactBuffers &buffers,
				  const NetworkTuning *tuning, bool *in_alt)
{
	*in_alt = false;
	if (algorithm == GPU_ALGO_RADIX)
	{
		if (buffers.row_index != nullptr)
			GS_TRY(iota_device(job, buffers.row_index, n, 0));
		return radix_sort_device(job, key_bytes, key_bits, n, buffers.keys, buffers.keys_alt,
								 buffers.row_index, buffers.row_index_alt, in_alt);
	}
	if (buffers.row_index == nullptr)
		return network_sort_device(job, algorithm, layout.element_kind, buffers.keys, n, tuning);
	GS_TRY(pack_elements(job, layout.element_kind, buffers.keys, key_bytes, n, buffers.elements));
	GS_TRY(network_sort_device(job, algorithm, layout.element_kind, buffers.elements, n, tuning));
	return unpack_elements(job, layout.element_kind, buffers.elements, n, buffers.keys, key_bytes,
						   buffers.row_index);
}

/* ------------------------------------------------------------------------
 * Transfers overlapped with the sort
 * ------------------------------------------------------------------------ */

/*
 * From these sizes a radix sort overlaps its transfers, in this many chunks
 * (measured on the H100, bench/README.md "Transfers overlapped with the
 * sort"): below them the merge costs what the overlap hides. 64-bit keys
 * take twice the radix passes, so there is more sorting to hide, sooner,
 * and the extra merge level of four chunks pays.
 */
static const size_t OVERLAP_MIN_KEYS_32 = (size_t) 1 << 25;
static const size_t OVERLAP_MIN_KEYS_64 = (size_t) 1 << 23;
static const unsigned OVERLAP_CHUNKS_32 = 2;
static const unsigned OVERLAP_CHUNKS_64 = 4;

/* The merged output goes back in this many pieces. */
static const size_t DOWNLOAD_PIECES = 8;

static bool
is_pinned(const void *pointer)
{
	cudaPointerAttributes attributes;

	if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess)
	{
		cudaGetLastError();
		return false;
	}
	return attributes.type == cudaMemoryTypeHost;
}

/* How many chunks this sort uploads in: 1 = no overlap. */
static unsigned
overlap_chunks(const gpu_sort_job *request)
{
	const size_t n = request->n;
	unsigned	chunks = request->chunks;

	if (request->algorithm != GPU_ALGO_RADIX || request->key_bits == 0 || chunks == 1)
		return 1;
	if (chunks == 0 && request->key_bytes == 4)
		chunks = n >= OVERLAP_MIN_KEYS_32 ? OVERLAP_CHUNKS_32 : 1;
	else if (chunks == 0)
		chunks = n >= OVERLAP_MIN_KEYS_64 ? OVERLAP_CHUNKS_64 : 1;
	/* a pageable copy blocks the host: nothing would overlap */
	if (chunks < 2 || !is_pinned(request->keys) ||
		(request->row_index != nullptr && !is_pinned(request->row_index)))
		return 1;
	/* every chunk must hold keys, so that the runs pair up evenly */
	while (chunks > 1 && (size_t) (chunks - 1) * ((n + chunks - 1) / chunks) >= n)
		chunks /= 2;
	return chunks;
}

/*
 * The events that order the copy stream against the job's stream. On every
 * way out (the destructor), the job's stream waits for all the copies
 * queued, so the job's memory is never given back under a transfer.
 */
class CopyLane
{
  public:
	explicit CopyLane(Job &job) : job_(job), events_(0), used_(false) {}

	~CopyLane()
	{
		cudaEvent_t done;

		if (used_ && cudaEventCreateWithFlags(&done, cudaEventDisableTiming) == cudaSuccess)
		{
			if (cudaEventRecord(done, copy_stream()) == cudaSuccess)
				cudaStreamWaitEvent(job_.stream(), done, 0);
			cudaEventDestroy(done);
		}
		for (int i = 0; i < events_; i++)
			cudaEventDestroy(event_[i]);
		cudaGetLastError();
	}

	/* Copies queued from now on start after the work queued so far. */
	gpu_status	copies_after_work() { return order(job_.stream(), copy_stream()); }

	/* Work queued from now on starts after the copies queued so far. */
	gpu_status	work_after_copies() { return order(copy_stream(), job_.stream()); }

  private:
	gpu_status	order(cudaStream_t first, cudaStream_t then)
	{
		if (events_ == MAX_EVENTS)
		{
			set_message("overlapped sort: out of stream events");
			return GPU_FAILED;
		}
		GS_TRY(job_.check(cudaEventCreateWithFlags(&event_[events_], cudaEventDisableTiming),
						  "cudaEventCreateWithFlags"));
		cudaEvent_t event = event_[events_++];

		used_ = true;
		GS_TRY(job_.check(cudaEventRecord(event, first), "cudaEventRecord"));
		return job_.check(cudaStreamWaitEvent(then, event, 0), "cudaStreamWaitEvent");
	}

	static const int MAX_EVENTS = 64;

	Job		   &job_;
	cudaEvent_t event_[MAX_EVENTS];
	int			events_;
	bool		used_;
};

/* The device buffers of an overlapped sort: two of each, for the radix
 * sort's ping-pong and the merge's source and destination. */
struct OverlapBuffers
{
	char	   *keys[2];
	uint32_t   *index[2];		/* NULL without the row index */
	size_t	   *splits;
	unsigned	key_bytes;
};

static MergeRuns
runs_between(const OverlapBuffers &b, int from, size_t lo, size_t mid, size_t hi)
{
	MergeRuns	runs;
	const unsigned kb = b.key_bytes;

	runs.key_bytes = kb;
	runs.a_keys = b.keys[from] + lo * kb;
	runs.a_index = b.index[from] ? b.index[from] + lo : nullptr;
	runs.na = mid - lo;
	runs.b_keys = b.keys[from] + mid * kb;
	runs.b_index = b.index[from] ? b.index[from] + mid : nullptr;
	runs.nb = hi - mid;
	runs.out_keys = b.keys[1 - from] + lo * kb;
	runs.out_index = b.index[1 - from] ? b.index[1 - from] + lo : nullptr;
	return runs;
}

/* Device-to-device copy of [lo, hi) from buffer `from` to the other one. */
static gpu_status
copy_across(Job &job, const OverlapBuffers &b, int from, size_t lo, size_t hi)
{
	const unsigned kb = b.key_bytes;

	GS_TRY(job.check(cudaMemcpyAsync(b.keys[1 - from] + lo * kb, b.keys[from] + lo * kb,
									 (hi - lo) * kb, cudaMemcpyDeviceToDevice, job.stream()),
					 "cudaMemcpyAsync (keys between buffers)"));
	if (b.index[from] == nullptr)
		return GPU_OK;
	return job.check(cudaMemcpyAsync(b.index[1 - from] + lo, b.index[from] + lo,
									 (hi - lo) * sizeof(uint32_t), cudaMemcpyDeviceToDevice,
									 job.stream()),
					 "cudaMemcpyAsync (row index between buffers)");
}

static gpu_status
sort_overlapped(Job &job, gpu_sort_job *request, unsigned chunks)
{
	const size_t n = request->n;
	const unsigned kb = request->key_bytes;
	const bool	with_index = request->row_index != nullptr;
	char	   *host_keys = static_cast<char *>(request->keys);
	const size_t chunk_keys = (n + chunks - 1) / chunks;
	const size_t tiles = merge_tile_count(n);
	cudaStream_t copies = copy_stream();
	ExactLayout layout;
	OverlapBuffers b;
	CopyLane	lane(job);
	int			sorted_in = 0;	/* the buffer every sorted chunk is in */

	memset(&b, 0, sizeof(b));
	b.key_bytes = kb;
	GS_TRY(exact_sort_layout(GPU_ALGO_RADIX, kb, request->key_bits, n, with_index, &layout));
	GS_TRY(job.check_budget(layout.total_bytes + (tiles + 1) * sizeof(size_t), "the sort"));
	for (int i = 0; i < 2; i++)
	{
		GS_TRY(job.allocate_array(&b.keys[i], n * kb, "keys"));
		if (with_index)
			GS_TRY(job.allocate_array(&b.index[i], n, "row index"));
	}
	GS_TRY(job.allocate_array(&b.splits, tiles + 1, "merge splits"));

	/* upload chunk by chunk; sort each one as soon as it is there */
	GS_TRY(job.mark(MARK_START));
	GS_TRY(lane.copies_after_work());	/* the allocations come first */
	for (unsigned c = 0; c < chunks; c++)
	{
		const size_t lo = c * chunk_keys;
		const size_t len = lo + chunk_keys <= n ? chunk_keys : n - lo;
		bool		in_alt = false;

		GS_TRY(job.check(cudaMemcpyAsync(b.keys[0] + lo * kb, host_keys + lo * kb, len * kb,
										 cudaMemcpyHostToDevice, copies),
						 "cudaMemcpyAsync (upload keys)"));
		GS_TRY(lane.work_after_copies());
		if (c == chunks - 1)
			GS_TRY(job.mark(MARK_UPLOADED));
		if (with_index)
			GS_TRY(iota_device(job, b.index[0] + lo, len, (uint32_t) lo));
		GS_TRY(radix_sort_device(job, kb, request->key_bits, len, b.keys[0] + lo * kb,
								 b.keys[1] + lo * kb, b.index[0] ? b.index[0] + lo : nullptr,
								 b.index[1] ? b.index[1] + lo : nullptr, &in_alt));
		/* equal chunks take the same passes; should one not, move it */
		if (c == 0)
			sorted_in = in_alt ? 1 : 0;
		else if ((in_alt ? 1 : 0) != sorted_in)
			GS_TRY(copy_across(job, b, 1 - sorted_in, lo, lo + len));
	}

	/* merge runs pairwise, level by level, between the two buffers */
	for (size_t run = chunk_keys; run * 2 < n; run *= 2)
	{
		for (size_t lo = 0; lo < n; lo += 2 * run)
		{
			const size_t mid = lo + run < n ? lo + run : n;
			const size_t hi = lo + 2 * run < n ? lo + 2 * run : n;
			const MergeRuns runs = runs_between(b, sorted_in, lo, mid, hi);

			GS_TRY(merge_splits_device(job, runs, b.splits));
			GS_TRY(merge_tiles_device(job, runs, b.splits, 0, merge_tile_count(hi - lo)));
		}
		sorted_in = 1 - sorted_in;
	}

	/* the last merge, piece by piece, each piece downloaded behind it */
	const size_t half = chunk_keys * (chunks / 2);
	const MergeRuns runs = runs_between(b, sorted_in, 0, half, n);
	const size_t tiles_per_piece = (tiles + DOWNLOAD_PIECES - 1) / DOWNLOAD_PIECES;
	const size_t per_tile = merge_output_per_tile();

	GS_TRY(merge_splits_device(job, runs, b.splits));
	request->host_data_touched = true;
	for (size_t first = 0; first < tiles; first += tiles_per_piece)
	{
		const size_t count = first + tiles_per_piece <= tiles ? tiles_per_piece : tiles - first;
		const size_t lo = first * per_tile;
		const size_t hi = (first + count) * per_tile < n ? (first + count) * per_tile : n;

		GS_TRY(merge_tiles_device(job, runs, b.splits, first, count));
		if (first + count == tiles)
			GS_TRY(job.mark(MARK_SORTED));
		GS_TRY(lane.copies_after_work());
		GS_TRY(job.check(cudaMemcpyAsync(host_keys + lo * kb, b.keys[1 - sorted_in] + lo * kb,
										 (hi - lo) * kb, cudaMemcpyDeviceToHost, copies),
						 "cudaMemcpyAsync (download keys)"));
		if (with_index)
			GS_TRY(job.check(cudaMemcpyAsync(request->row_index + lo, b.index[1 - sorted_in] + lo,
											 (hi - lo) * sizeof(uint32_t),
											 cudaMemcpyDeviceToHost, copies),
							 "cudaMemcpyAsync (download row index)"));
	}
	GS_TRY(lane.work_after_copies());
	GS_TRY(job.mark(MARK_DOWNLOADED));
	return job.wait_all();
}

/* ------------------------------------------------------------------------
 * gpu_sort
 * ------------------------------------------------------------------------ */

/* The whole gpu_sort() once the request is known to be valid. */
static gpu_status
sort_on_device(Job &job, gpu_sort_job *request)
{
	const size_t n = request->n;
	const unsigned kb = request->key_bytes;
	const bool	with_index = request->row_index != nullptr;
	ExactLayout layout;
	ExactBuffers buffers;
	bool		in_alt = false;
	unsigned	chunks;

	memset(&buffers, 0, sizeof(buffers));
	GS_TRY(job.begin());
	chunks = overlap_chunks(request);
	if (chunks > 1)
		return sort_overlapped(job, request, chunks);
	GS_TRY(exact_sort_layout(request->algorithm, kb, request->key_bits, n, with_index, &layout));
	GS_TRY(job.check_budget(layout.total_bytes, "the sort"));

	GS_TRY(job.allocate(&buffers.keys, layout.key_capacity * kb, "keys"));
	if (with_index)
		GS_TRY(job.allocate_array(&buffers.row_index, n, "row index"));
	if (layout.needs_alt)
	{
		GS_TRY(job.allocate(&buffers.keys_alt, n * kb, "radix sort keys"));
		if (with_index)
			GS_TRY(job.allocate_array(&buffers.row_index_alt, n, "radix sort row index"));
	}
	if (layout.element_count > 0)
		GS_TRY(job.allocate(&buffers.elements,
							layout.element_count * element_bytes(layout.element_kind),
							"network elements"));

	GS_TRY(job.mark(MARK_START));
	GS_TRY(job.check(cudaMemcpyAsync(buffers.keys, request->keys, n * kb, cudaMemcpyHostToDevice,
									 job.stream()), "cudaMemcpyAsync (upload keys)"));
	GS_TRY(job.mark(MARK_UPLOADED));
	GS_TRY(exact_sort_device(job, request->algorithm, kb, request->key_bits, n, layout, buffers,
							 nullptr, &in_alt));
	GS_TRY(job.mark(MARK_SORTED));
	/* wait, polling, before copies that block the host (pageable memory) */
	GS_TRY(job.wait_all());

	request->host_data_touched = true;
	GS_TRY(job.check(cudaMemcpyAsync(request->keys, in_alt ? buffers.keys_alt : buffers.keys,
									 n * kb, cudaMemcpyDeviceToHost, job.stream()),
					 "cudaMemcpyAsync (download keys)"));
	if (with_index)
		GS_TRY(job.check(cudaMemcpyAsync(request->row_index,
										 in_alt ? buffers.row_index_alt : buffers.row_index,
										 n * sizeof(uint32_t), cudaMemcpyDeviceToHost,
										 job.stream()),
						 "cudaMemcpyAsync (download row index)"));
	GS_TRY(job.mark(MARK_DOWNLOADED));
	return job.wait_all();
}

}								/* namespace gs_gpu */

using namespace gs_gpu;

static gpu_status
sort_entry(gpu_sort_job *request, gpu_timing *timing)
{
	if (timing != nullptr)
		memset(timing, 0, sizeof(*timing));
	if (request == nullptr)
	{
		set_message("gpu_sort: no job");
		return GPU_INVALID;
	}
	request->host_data_touched = false;
	if ((request->key_bytes != 4 && request->key_bytes != 8) ||
		request->key_bits > request->key_bytes * 8 || request->n >= UINT32_MAX ||
		(request->n > 0 && request->keys == nullptr) ||
		(request->algorithm != GPU_ALGO_BITONIC && request->algorithm != GPU_ALGO_BUTTERFLY &&
		 request->algorithm != GPU_ALGO_RADIX) ||
		(request->chunks > 2 && request->chunks != 4 && request->chunks != 8))
	{
		set_message("gpu_sort: invalid arguments (n=%zu, key_bytes=%u, key_bits=%u, algorithm=%d, "
					"chunks=%u)", request->n, request->key_bytes, request->key_bits,
					(int) request->algorithm, request->chunks);
		return GPU_INVALID;
	}
	if (request->n == 0)
		return GPU_OK;

	Job			job(request->memory_limit, request->poll, request->poll_arg);

	sort_on_device(job, request);
	job.report_timing(timing);
	return job.finish();
}

extern "C" gpu_status
gpu_sort(gpu_sort_job *request, gpu_timing *timing)
{
	return guard_entry("gpu_sort", [&] { return sort_entry(request, timing); });
}
