/*
 * gpu_sort_words.cu — gpu_sort_words(), the exact sort of rows whose key
 * is several words (a uuid, a text prefix, several columns): every word
 * goes up once, the GPU sorts the rows word by word, least significant
 * word first, and only the final order comes back.
 *
 * Each pass is CUB's stable radix sort (gpu_radix.cu) of (word, row),
 * where the word is taken through the order the previous passes left:
 * stability makes the last pass's order the order of the whole key, ties
 * in input order. A word of at most 32 significant bits is sorted as 32-bit
 * keys, which halves the bytes each radix pass moves.
 */
#include "gpu_internal.cuh"

#include <string.h>

namespace gs_gpu {

static const unsigned TAKE_THREADS = 256;

/* out[i] = word[rows[i]], or word[i] on the first pass (rows NULL). */
template <class K>
__global__ void
take_word_kernel(const uint64_t *word, const uint32_t *rows, K *out, size_t n)
{
	const size_t stride = (size_t) gridDim.x * blockDim.x;

	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		out[i] = (K) word[rows != nullptr ? rows[i] : i];
}

static gpu_status
take_word(Job &job, const uint64_t *word, const uint32_t *rows, void *out, unsigned key_bytes,
		  size_t n)
{
	const unsigned grid = grid_for(n, TAKE_THREADS);

	if (key_bytes == 4)
		take_word_kernel<uint32_t><<<grid, TAKE_THREADS, 0, job.stream()>>>(
			word, rows, static_cast<uint32_t *>(out), n);
	else
		take_word_kernel<uint64_t><<<grid, TAKE_THREADS, 0, job.stream()>>>(
			word, rows, static_cast<uint64_t *>(out), n);
	GS_TRY(job.launched("take_word"));
	return job.progress(n);
}

static unsigned
word_key_bytes(unsigned bits)
{
	return bits <= 32 ? 4 : 8;
}

static gpu_status
sort_words_on_device(Job &job, gpu_sort_words_job *request)
{
	const size_t n = request->n;
	const unsigned nwords = request->nwords;
	size_t		temp_bytes = 0;
	size_t		total;
	uint64_t   *words;
	void	   *keys,
			   *keys_alt;
	uint32_t   *rows[2];
	int			current = 0;	/* which of rows[] holds the order so far */

	GS_TRY(job.begin());
	for (unsigned w = 0; w < nwords; w++)
	{
		size_t		bytes;

		GS_TRY(radix_temp_bytes(word_key_bytes(request->word_bits[w]), request->word_bits[w], n,
								true, &bytes));
		if (bytes > temp_bytes)
			temp_bytes = bytes;
	}
	total = (size_t) nwords * n * sizeof(uint64_t) + 2 * n * sizeof(uint64_t) +
		2 * n * sizeof(uint32_t) + temp_bytes;
	GS_TRY(job.check_budget(total, "the sort"));
	GS_TRY(job.allocate_array(&words, (size_t) nwords * n, "key words"));
	GS_TRY(job.allocate(&keys, n * sizeof(uint64_t), "keys"));
	GS_TRY(job.allocate(&keys_alt, n * sizeof(uint64_t), "radix sort keys"));
	GS_TRY(job.allocate_array(&rows[0], n, "row index"));
	GS_TRY(job.allocate_array(&rows[1], n, "radix sort row index"));

	GS_TRY(job.mark(MARK_START));
	GS_TRY(job.check(cudaMemcpyAsync(words, request->words, (size_t) nwords * n * sizeof(uint64_t),
									 cudaMemcpyHostToDevice, job.stream()),
					 "cudaMemcpyAsync (upload key words)"));
	GS_TRY(job.mark(MARK_UPLOADED));
	GS_TRY(iota_device(job, rows[0], n, 0));
	for (int w = (int) nwords - 1; w >= 0; w--)
	{
		const unsigned bits = request->word_bits[w];
		const unsigned key_bytes = word_key_bytes(bits);
		const bool	first = w == (int) nwords - 1;
		bool		in_alt = false;

		if (bits == 0)
			continue;			/* every row's word is 0: the order stands */
		GS_TRY(take_word(job, words + (size_t) w * n, first ? nullptr : rows[current], keys,
						 key_bytes, n));
		GS_TRY(radix_sort_device(job, key_bytes, bits, n, keys, keys_alt, rows[current],
								 rows[1 - current], &in_alt));
		if (in_alt)
			current = 1 - current;
	}
	GS_TRY(job.mark(MARK_SORTED));
	GS_TRY(job.check(cudaMemcpyAsync(request->row_index, rows[current], n * sizeof(uint32_t),
									 cudaMemcpyDeviceToHost, job.stream()),
					 "cudaMemcpyAsync (download row index)"));
	GS_TRY(job.mark(MARK_DOWNLOADED));
	return job.wait_all();
}

}								/* namespace gs_gpu */

using namespace gs_gpu;

static gpu_status
sort_words_entry(gpu_sort_words_job *request, gpu_timing *timing)
{
	if (timing != nullptr)
		memset(timing, 0, sizeof(*timing));
	if (request == nullptr)
	{
		set_message("gpu_sort_words: no job");
		return GPU_INVALID;
	}
	bool		valid = request->nwords >= 1 && request->nwords <= GPU_MAX_KEY_WORDS &&
		request->n < UINT32_MAX &&
		(request->n == 0 || (request->words != nullptr && request->row_index != nullptr));

	for (unsigned w = 0; valid && w < request->nwords; w++)
		valid = request->word_bits[w] <= 64;
	if (!valid)
	{
		set_message("gpu_sort_words: invalid arguments (n=%zu, nwords=%u)", request->n,
					request->nwords);
		return GPU_INVALID;
	}
	if (request->n == 0)
		return GPU_OK;

	Job			job(request->memory_limit, request->poll, request->poll_arg);

	sort_words_on_device(job, request);
	job.report_timing(timing);
	return job.finish();
}

extern "C" gpu_status
gpu_sort_words(gpu_sort_words_job *request, gpu_timing *timing)
{
	return guard_entry("gpu_sort_words", [&] { return sort_words_entry(request, timing); });
}
