/*
 * gpu_networks.cu — the bitonic and butterfly sorting networks on the GPU.
 *
 * The networks are exactly the CPU's (engine/cpu_sort_template.h): Batcher's
 * bitonic network with alternating directions over the next power of two
 * (padding on the device with sentinels above every real element), and the
 * butterfly network's flip form (a flip, then half-cleaners, every
 * comparator ascending, so that comparators reaching past n are skipped and
 * no padding is needed). With the row index riding along, elements compare
 * as (key, index) and the result is the stable sort the CPU produces.
 * (The bitonic network's first pass sorts its tiles in the flip form too,
 * every other tile stored reversed: the same result, by a cheaper program;
 * bitonic_first_pass() in gpu_network_core.cuh.)
 *
 * How the steps are grouped into passes over global memory, and what one
 * pass does in registers and shared memory, is described in
 * gpu_network_core.cuh; this file holds the kernel that runs a pass's
 * program (interpreted, or compiled for the default shapes), the kernel
 * shapes, and the small pack/unpack/fill kernels.
 *
 * Cost at n = 2^24 with 8-byte elements (measured on the H100,
 * bench/README.md): one pass sorts tiles of 2^14 (105 steps in registers
 * and shared memory: compute bound, 0.74 ms under Nsight Compute), then
 * each of the 10 further stages takes one or two "wide" passes over its
 * strides >= 2^13 (88 us, 82% of DRAM bandwidth) and one "tail" pass over
 * its strides below 2^13 (96 us, 75%): 22 passes, 2.75 ms, against 300
 * passes for one kernel per step. The compare-exchanges keep the integer
 * pipe busy, which is why pairs are compared as doubles (Packed62, in
 * gpu_network_core.cuh), and why the passes' programs run compiled rather
 * than interpreted (gpu_network_core.cuh, "Compiled programs").
 */
#include "gpu_internal.cuh"
#include "gpu_network_core.cuh"

#include <utility>
#include <vector>

namespace gs_gpu {

using gs_net::Packed62;
using gs_net::PROGRAM_COUNT;
using gs_net::PROGRAM_INTERPRETED;
using gs_net::fixed_program;
using gs_net::Pair16;
using gs_net::Pass;
using gs_net::PassThread;

/* ------------------------------------------------------------------------
 * The pass kernel
 * ------------------------------------------------------------------------ */

/* A load, window exchange or store of a pass's program (one thread's part). */
template <class T>
__device__ __forceinline__ void
run_memory_op(T &t, const gs_net::Op op)
{
	switch (op.kind)
	{
		case gs_net::OP_LOAD:
			if (op.c)
			{
				t.set_layout(op.a, op.b);
				t.load_direct();
			}
			else
			{
				t.load_group_to_smem();
				__syncthreads();
				t.set_layout(op.a, op.b);
				t.read_smem();
			}
			break;
		case gs_net::OP_EXCHANGE:
			__syncthreads();	/* everyone has read the previous layout */
			t.write_smem();
			__syncthreads();
			t.set_layout(op.a, op.b);
			t.read_smem();
			break;
		case gs_net::OP_STORE:
			if (op.c)
				t.store_direct();
			else
			{
				__syncthreads();
				t.write_smem();
				__syncthreads();
				t.store_group_from_smem();
			}
			break;
	}
}

/* Any op of a pass's program. (A switch: as an if-chain, the compiler
 * allocates registers worse and the 8-byte elements' kernel spills.) */
template <class T>
__device__ __forceinline__ void
run_op(T &t, const gs_net::Op op, int global_direction_bit)
{
	switch (op.kind)
	{
		case gs_net::OP_STEP:
			t.step(op.a, op.b, gs_net::step_bit(op, global_direction_bit));
			break;
		case gs_net::OP_FLIP:
			t.flip_stage(op.a);
			break;
		default:
			run_memory_op(t, op);
			break;
	}
}

/* A fixed program, built once per instantiation at compile time. */
template <int PROGRAM, int LOG_R, int LOG_NT, int ELEMENT_BYTES>
struct FixedPass
{
	static constexpr gs_net::Pass pass =
		fixed_program(PROGRAM, LOG_R, LOG_NT, ELEMENT_BYTES).pass();
};

/*
 * Op I of a fixed program. The op is a constant expression (a loop
 * unrolled over a constant array leaves the array in local memory), so
 * every switch on it folds away.
 */
template <class F, int I, class T>
__device__ __forceinline__ void
run_fixed_op(T &t, int global_direction_bit)
{
	constexpr gs_net::Op op = F::pass.ops[I];

	/* only the code of this op is instantiated, not every op's */
	if constexpr (op.kind == gs_net::OP_STEP)
		t.template step_j<op.a>(op.b, gs_net::step_bit(op, global_direction_bit));
	else if constexpr (op.kind == gs_net::OP_FLIP)
		t.template flip<op.a>();
	else
		run_memory_op(t, op);
}

/* All of them, in order (a fold rather than a recursion, which the
 * compiler would inline level by level, copying the rest each time). */
template <class F, class T, int... I>
__device__ __forceinline__ void
run_fixed_ops(T &t, int global_direction_bit, std::integer_sequence<int, I...>)
{
	(run_fixed_op<F, I>(t, global_direction_bit), ...);
}

/*
 * One block per group. The program is the same for every block, so every
 * branch below is uniform across the block, and every __syncthreads() is
 * reached by all threads. Blocks whose group lies wholly past the data
 * (butterfly) leave at once.
 */
template <class M, int LOG_R, int LOG_NT, int MIN_BLOCKS, int PROGRAM>
__global__ void __launch_bounds__(1 << LOG_NT, MIN_BLOCKS)
network_pass_kernel(M *data, uint64_t mem_length, const __grid_constant__ Pass pass)
{
	extern __shared__ __align__(16) unsigned char smem_bytes[];
	PassThread<M, LOG_R, LOG_NT, PROGRAM != PROGRAM_INTERPRETED> t;
	M		   *smem = reinterpret_cast<M *>(smem_bytes);

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	/*
	 * Launched early (programmatic dependent launch, launch_pass): wait
	 * here until the previous pass has finished and its writes are
	 * visible, and let the next pass's blocks be scheduled already.
	 */
	asm volatile("griddepcontrol.wait;" ::: "memory");
	asm volatile("griddepcontrol.launch_dependents;");
#endif

	if constexpr (PROGRAM == PROGRAM_INTERPRETED)
	{
		t.begin(data, mem_length, blockIdx.x, threadIdx.x, pass, smem);
		if (t.base >= mem_length)
			return;
		for (int i = 0; i < pass.nops; i++)
			run_op(t, pass.ops[i], pass.global_direction_bit);
	}
	else
	{
		/* the pass's layout from the program too where it is fixed, so
		 * that it folds: all of it for tiles; for wide passes the run bits,
		 * and whether there is a mirror view */
		typedef FixedPass<PROGRAM, LOG_R, LOG_NT, (int) sizeof(M)> F;
		constexpr bool tile = F::pass.shape != gs_net::SHAPE_WIDE;
		constexpr int run_bits = F::pass.run_bits;
		const int	high_bit = tile ? F::pass.high_bit : pass.high_bit;
		const int	global_view = tile || !F::pass.global_view ? F::pass.global_view :
			pass.global_view;

		t.begin(data, mem_length, blockIdx.x, threadIdx.x, run_bits, high_bit, global_view,
				smem);
		if (t.base >= mem_length)
			return;
		run_fixed_ops<F>(t, pass.global_direction_bit,
						 std::make_integer_sequence<int, F::pass.nops>());
	}
}

/* ------------------------------------------------------------------------
 * Kernel shapes
 * ------------------------------------------------------------------------ */

typedef gpu_status (*PassLauncher) (Job &job, void *data, uint64_t mem_length,
									const Pass &pass, uint64_t groups);

struct ShapeEntry
{
	int			log_r;
	int			log_nt;
	size_t		smem_bytes;		/* a whole group in shared memory */
	PassLauncher launch[PROGRAM_COUNT];	/* [PROGRAM_INTERPRETED] always */
};

static bool
pass_uses_smem(const Pass &pass)
{
	for (int i = 0; i < pass.nops; i++)
	{
		const gs_net::Op &op = pass.ops[i];

		if (op.kind == gs_net::OP_EXCHANGE ||
			((op.kind == gs_net::OP_LOAD || op.kind == gs_net::OP_STORE) && !op.c))
			return true;
	}
	return false;
}

template <class M, int LOG_R, int LOG_NT, int MIN_BLOCKS, int PROGRAM>
static gpu_status
launch_pass(Job &job, void *data, uint64_t mem_length, const Pass &pass, uint64_t groups)
{
	const size_t group_bytes = sizeof(M) << (LOG_R + LOG_NT);
	static bool configured = false;
	auto		kernel = network_pass_kernel<M, LOG_R, LOG_NT, MIN_BLOCKS, PROGRAM>;

	if (!configured)
	{
		GS_TRY(job.check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
											  (int) group_bytes),
						 "cudaFuncSetAttribute(network pass)"));
		configured = true;
	}
	if (groups > 0x7fffffffu)
	{
		set_message("network pass: %llu blocks is too many", (unsigned long long) groups);
		return GPU_INVALID;
	}
	/*
	 * On Hopper and later, each pass may launch while the previous one
	 * drains (its blocks wait at the kernel's start until the previous
	 * pass is complete): the launch latency and the last wave's idle SMs
	 * between 20-odd dependent passes cost ~2%.
	 */
	cudaLaunchConfig_t config = {};
	cudaLaunchAttribute early_launch;

	config.gridDim = dim3((unsigned) groups);
	config.blockDim = dim3(1u << LOG_NT);
	config.dynamicSmemBytes = pass_uses_smem(pass) ? group_bytes : 0;
	config.stream = job.stream();
	early_launch.id = cudaLaunchAttributeProgrammaticStreamSerialization;
	early_launch.val.programmaticStreamSerializationAllowed = 1;
	if (device_properties().major >= 9)
	{
		config.attrs = &early_launch;
		config.numAttrs = 1;
	}
	GS_TRY(job.check(cudaLaunchKernelEx(&config, kernel, static_cast<M *>(data), mem_length, pass),
					 "cudaLaunchKernelEx(network pass)"));
	return job.launched("network pass");
}

/*
 * Which programs a shape has compiled: the tails' and the wide passes' for
 * the default tail/wide shapes, the first pass's for the default first
 * shapes. Each is a kernel of its own, so the other shapes (there for the
 * benchmark's sweep) interpret everything.
 */
enum
{
	COMPILE_NONE = 0,
	COMPILE_FIRST = 1,			/* PROGRAM_FIRST_* */
	COMPILE_LATER = 2			/* PROGRAM_TAIL_* and PROGRAM_WIDE + k */
};

static constexpr bool
compiled_program(int program, int set)
{
	if (program == PROGRAM_INTERPRETED)
		return true;
	if (program == gs_net::PROGRAM_FIRST_BITONIC || program == gs_net::PROGRAM_FIRST_BUTTERFLY)
		return (set & COMPILE_FIRST) != 0;
	return (set & COMPILE_LATER) != 0;
}

template <class M, int R, int NT, int B, int SET, int PROGRAM>
static constexpr PassLauncher
launcher()
{
	if constexpr (compiled_program(PROGRAM, SET))
		return launch_pass<M, R, NT, B, PROGRAM>;
	else
		return nullptr;
}

template <class M, int R, int NT, int B, int SET, int... PROGRAM>
static constexpr ShapeEntry
shape_entry(std::integer_sequence<int, PROGRAM...>)
{
	return ShapeEntry{R, NT, sizeof(M) << (R + NT), {launcher<M, R, NT, B, SET, PROGRAM>()...}};
}

#define SHAPE(M, R, NT, B, SET) \
	shape_entry<M, R, NT, B, SET>(std::make_integer_sequence<int, PROGRAM_COUNT>())

/* (LOG_R, LOG_NT, blocks per SM the registers must allow, compiled programs) */
static const ShapeEntry u32_shapes[] = {
	SHAPE(uint32_t, 5, 8, 4, COMPILE_NONE),		/* 2^13, 32 KiB */
	SHAPE(uint32_t, 5, 9, 2, COMPILE_LATER),	/* 2^14, 64 KiB */
	SHAPE(uint32_t, 5, 10, 1, COMPILE_NONE),	/* 2^15, 128 KiB */
};
static const ShapeEntry u64_shapes[] = {
	SHAPE(uint64_t, 4, 9, 2, COMPILE_NONE),		/* 2^13, 64 KiB */
	SHAPE(uint64_t, 5, 8, 2, COMPILE_LATER),	/* 2^13, 64 KiB */
	SHAPE(uint64_t, 5, 9, 1, COMPILE_FIRST),	/* 2^14, 128 KiB */
	SHAPE(uint64_t, 4, 10, 1, COMPILE_NONE),	/* 2^14, 128 KiB */
};
static const ShapeEntry packed62_shapes[] = {
	SHAPE(Packed62, 4, 9, 2, COMPILE_NONE),		/* 2^13, 64 KiB */
	SHAPE(Packed62, 5, 8, 2, COMPILE_LATER),	/* 2^13, 64 KiB */
	SHAPE(Packed62, 5, 9, 1, COMPILE_FIRST),	/* 2^14, 128 KiB */
	SHAPE(Packed62, 4, 10, 1, COMPILE_NONE),	/* 2^14, 128 KiB */
};
static const ShapeEntry pair_shapes[] = {
	SHAPE(Pair16, 4, 8, 2, COMPILE_LATER),		/* 2^12, 64 KiB */
	SHAPE(Pair16, 4, 9, 1, COMPILE_NONE),		/* 2^13, 128 KiB */
	SHAPE(Pair16, 5, 8, 1, COMPILE_NONE),		/* 2^13, 128 KiB */
};

#undef SHAPE

/* The launcher for a pass: a compiled program's when the pass runs one. */
static PassLauncher
launcher_for(const ShapeEntry &shape, const Pass &pass, int element_bytes)
{
	int			program = gs_net::program_for(pass, gs_net::Shape{shape.log_r, shape.log_nt},
											  element_bytes);

	return shape.launch[program] ? shape.launch[program] : shape.launch[PROGRAM_INTERPRETED];
}

/*
 * Default (tile, wide) shapes per element kind, the fastest at n = 2^24 in
 * the benchmark's sweep on the H100 (bench/README.md): groups of 2^13
 * (u64, pair) or 2^14 (u32) elements, small enough for two blocks per SM,
 * so that one block computes while the other moves data. The first pass,
 * compute bound, sorts 8-byte elements in tiles of 2^14 (one block an
 * SM): one stage more in it saves a wide and a tail pass.
 */
static const int default_tile_shape[4] = {1, 1, 1, 0};
static const int default_wide_shape[4] = {1, 1, 1, 0};
static const int default_first_shape[4] = {1, 2, 2, 0};

static const ShapeEntry *
shapes_of(ElementKind kind, int *count)
{
	switch (kind)
	{
		case ELEMENT_U32:
			*count = (int) (sizeof(u32_shapes) / sizeof(u32_shapes[0]));
			return u32_shapes;
		case ELEMENT_U64:
			*count = (int) (sizeof(u64_shapes) / sizeof(u64_shapes[0]));
			return u64_shapes;
		case ELEMENT_PACKED62:
			*count = (int) (sizeof(packed62_shapes) / sizeof(packed62_shapes[0]));
			return packed62_shapes;
		case ELEMENT_PAIR16:
			break;
	}
	*count = (int) (sizeof(pair_shapes) / sizeof(pair_shapes[0]));
	return pair_shapes;
}

size_t
element_bytes(ElementKind kind)
{
	return kind == ELEMENT_U32 ? 4 : kind == ELEMENT_PAIR16 ? 16 : 8;
}

int
packed_index_bits(size_t n)
{
	int			bits = 1;

	while (bits < 64 && ((size_t) 1 << bits) < n)
		bits++;
	return bits;
}

ElementKind
network_element_kind(unsigned key_bytes, unsigned key_bits, size_t n, bool with_index)
{
	if (!with_index)
		return key_bytes == 4 ? ELEMENT_U32 : ELEMENT_U64;
	return key_bits + packed_index_bits(n) <= 62 ? ELEMENT_PACKED62 : ELEMENT_PAIR16;
}

int
network_shape_count(ElementKind kind)
{
	int			count;

	shapes_of(kind, &count);
	return count;
}

void
network_shape(ElementKind kind, int index, int *log_r, int *log_nt)
{
	int			count;
	const ShapeEntry *shapes = shapes_of(kind, &count);

	*log_r = shapes[index].log_r;
	*log_nt = shapes[index].log_nt;
}

size_t
network_buffer_length(gpu_algorithm algorithm, size_t n)
{
	size_t		length = 1;

	if (algorithm != GPU_ALGO_BITONIC)
		return n;
	while (length < n)
		length <<= 1;
	return length;
}

static int
ceil_log2(size_t n)
{
	int			log = 0;

	while (((size_t) 1 << log) < n)
		log++;
	return log;
}

/*
 * The shapes to use: the tuning's, else the default, shrunk to fit the
 * device's shared memory per block (GPUs of compute capability 8.6/8.9 have
 * 99 KiB, the A100 163 KiB, Hopper 227 KiB).
 */
static gpu_status
choose_shapes(ElementKind kind, const NetworkTuning *tuning, int *first, int *tile, int *wide)
{
	int			count;
	const ShapeEntry *shapes = shapes_of(kind, &count);
	size_t		smem_limit = device_properties().sharedMemPerBlockOptin;

	*first = tuning && tuning->first_shape >= 0 ? tuning->first_shape : default_first_shape[kind];
	*tile = tuning && tuning->tile_shape >= 0 ? tuning->tile_shape : default_tile_shape[kind];
	*wide = tuning && tuning->wide_shape >= 0 ? tuning->wide_shape : default_wide_shape[kind];
	if (*first >= count || *tile >= count || *wide >= count)
	{
		set_message("network tuning: no shape %d",
					*first >= count ? *first : *tile >= count ? *tile : *wide);
		return GPU_INVALID;
	}
	while (shapes[*first].smem_bytes > smem_limit && *first > 0)
		(*first)--;
	while (shapes[*tile].smem_bytes > smem_limit && *tile > 0)
		(*tile)--;
	while (shapes[*wide].smem_bytes > smem_limit && *wide > 0)
		(*wide)--;
	if (shapes[*first].smem_bytes > smem_limit || shapes[*tile].smem_bytes > smem_limit ||
		shapes[*wide].smem_bytes > smem_limit)
	{
		set_message("the GPU has too little shared memory per block (%zu bytes)", smem_limit);
		return GPU_UNAVAILABLE;
	}
	/* the first pass's tiles hold the tail passes' */
	if (shapes[*first].log_r + shapes[*first].log_nt < shapes[*tile].log_r + shapes[*tile].log_nt)
		*first = *tile;
	return GPU_OK;
}

static gpu_status
make_plan(gpu_algorithm algorithm, ElementKind kind, size_t n, const NetworkTuning *tuning,
		  gs_net::PlanParams *params, std::vector<Pass> *passes, int shape_of[4])
{
	int			count;
	const ShapeEntry *shapes = shapes_of(kind, &count);
	int			first,
				tile,
				wide;

	GS_TRY(choose_shapes(kind, tuning, &first, &tile, &wide));
	shape_of[gs_net::SHAPE_FIRST] = first;
	shape_of[gs_net::SHAPE_TILE] = tile;
	shape_of[gs_net::SHAPE_WIDE] = wide;
	shape_of[gs_net::SHAPE_WIDE_LARGE] = first;
	params->bitonic = algorithm == GPU_ALGO_BITONIC;
	params->log_length = ceil_log2(n);
	params->element_bytes = (int) element_bytes(kind);
	params->first = gs_net::Shape{shapes[first].log_r, shapes[first].log_nt};
	params->tile = gs_net::Shape{shapes[tile].log_r, shapes[tile].log_nt};
	params->wide = gs_net::Shape{shapes[wide].log_r, shapes[wide].log_nt};
	params->min_run_bits = tuning && tuning->min_run_bits >= 0 ? tuning->min_run_bits :
		ceil_log2(128 / element_bytes(kind));
	if (!gs_net::plan_network(*params, *passes))
	{
		set_message("network tuning: shapes %d (first), %d (tile) and %d (wide) do not work together",
					first, tile, wide);
		return GPU_INVALID;
	}
	return GPU_OK;
}

int
network_pass_count(gpu_algorithm algorithm, ElementKind kind, size_t n,
				   const NetworkTuning *tuning)
{
	gs_net::PlanParams params;
	std::vector<Pass> passes;
	int			shape_of[4];

	if (make_plan(algorithm, kind, n, tuning, &params, &passes, shape_of) != GPU_OK)
		return -1;
	return (int) passes.size();
}

/* ------------------------------------------------------------------------
 * Small kernels: padding, packing, the row index
 * ------------------------------------------------------------------------ */

template <class M>
__global__ void
fill_sentinels_kernel(M *elements, size_t from, size_t to)
{
	typedef gs_net::ElementTraits<M> Traits;

	for (size_t i = from + blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < to;
		 i += (size_t) gridDim.x * blockDim.x)
		Traits::store(elements + i, Traits::sentinel());
}

/* key << index_bits | i: network_element_kind checked that it fits 62 bits */
template <class K>
__global__ void
pack_packed62_kernel(const K *keys, size_t n, int index_bits, Packed62 *elements)
{
	for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
		elements[i].bits = ((uint64_t) keys[i] << index_bits) | i;
}

__global__ void
pack_pair16_kernel(const uint64_t *keys, size_t n, Pair16 *elements)
{
	for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
	{
		gs_net::PairReg p;

		p.key = keys[i];
		p.index = (uint32_t) i;
		gs_net::ElementTraits<Pair16>::store(elements + i, p);
	}
}

template <class K>
__global__ void
unpack_packed62_kernel(const Packed62 *elements, size_t n, int index_bits, K *keys,
					   uint32_t *row_index)
{
	const uint64_t index_mask = ((uint64_t) 1 << index_bits) - 1;

	for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
	{
		uint64_t	e = elements[i].bits;

		keys[i] = (K) (e >> index_bits);
		row_index[i] = (uint32_t) (e & index_mask);
	}
}

__global__ void
unpack_pair16_kernel(const Pair16 *elements, size_t n, uint64_t *keys, uint32_t *row_index)
{
	for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
	{
		gs_net::PairReg p = gs_net::ElementTraits<Pair16>::load(elements + i);

		keys[i] = p.key;
		row_index[i] = p.index;
	}
}

__global__ void
iota_kernel(uint32_t *row_index, size_t n, uint32_t first)
{
	for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
		row_index[i] = first + (uint32_t) i;
}

static const unsigned SIMPLE_THREADS = 256;

gpu_status
iota_device(Job &job, uint32_t *row_index, size_t n, uint32_t first)
{
	if (n == 0)
		return GPU_OK;
	iota_kernel<<<grid_for(n, SIMPLE_THREADS), SIMPLE_THREADS, 0, job.stream()>>>(row_index, n,
																				   first);
	return job.launched("iota");
}

gpu_status
pack_elements(Job &job, ElementKind kind, const void *keys, unsigned key_bytes, size_t n,
			  void *elements)
{
	unsigned	grid = grid_for(n, SIMPLE_THREADS);

	if (n == 0)
		return GPU_OK;
	if (kind == ELEMENT_PACKED62 && key_bytes == 4)
		pack_packed62_kernel<uint32_t><<<grid, SIMPLE_THREADS, 0, job.stream()>>>(
			static_cast<const uint32_t *>(keys), n, packed_index_bits(n),
			static_cast<Packed62 *>(elements));
	else if (kind == ELEMENT_PACKED62)
		pack_packed62_kernel<uint64_t><<<grid, SIMPLE_THREADS, 0, job.stream()>>>(
			static_cast<const uint64_t *>(keys), n, packed_index_bits(n),
			static_cast<Packed62 *>(elements));
	else if (kind == ELEMENT_PAIR16 && key_bytes == 8)
		pack_pair16_kernel<<<grid, SIMPLE_THREADS, 0, job.stream()>>>(
			static_cast<const uint64_t *>(keys), n, static_cast<Pair16 *>(elements));
	else
	{
		set_message("pack_elements: no packing of %u-byte keys into element kind %d",
					key_bytes, (int) kind);
		return GPU_INVALID;
	}
	return job.launched("pack");
}

gpu_status
unpack_elements(Job &job, ElementKind kind, const void *elements, size_t n, void *keys,
				unsigned key_bytes, uint32_t *row_index)
{
	unsigned	grid = grid_for(n, SIMPLE_THREADS);

	if (n == 0)
		return GPU_OK;
	if (kind == ELEMENT_PACKED62 && key_bytes == 4)
		unpack_packed62_kernel<uint32_t><<<grid, SIMPLE_THREADS, 0, job.stream()>>>(
			static_cast<const Packed62 *>(elements), n, packed_index_bits(n),
			static_cast<uint32_t *>(keys), row_index);
	else if (kind == ELEMENT_PACKED62)
		unpack_packed62_kernel<uint64_t><<<grid, SIMPLE_THREADS, 0, job.stream()>>>(
			static_cast<const Packed62 *>(elements), n, packed_index_bits(n),
			static_cast<uint64_t *>(keys), row_index);
	else if (kind == ELEMENT_PAIR16 && key_bytes == 8)
		unpack_pair16_kernel<<<grid, SIMPLE_THREADS, 0, job.stream()>>>(
			static_cast<const Pair16 *>(elements), n, static_cast<uint64_t *>(keys), row_index);
	else
	{
		set_message("unpack_elements: no unpacking of element kind %d into %u-byte keys",
					(int) kind, key_bytes);
		return GPU_INVALID;
	}
	return job.launched("unpack");
}

template <class M>
static gpu_status
fill_sentinels(Job &job, void *elements, size_t from, size_t to)
{
	if (from >= to)
		return GPU_OK;
	fill_sentinels_kernel<M><<<grid_for(to - from, SIMPLE_THREADS), SIMPLE_THREADS, 0,
		job.stream()>>>(static_cast<M *>(elements), from, to);
	return job.launched("fill sentinels");
}

/* ------------------------------------------------------------------------
 * The network
 * ------------------------------------------------------------------------ */

gpu_status
network_sort_device(Job &job, gpu_algorithm algorithm, ElementKind kind, void *elements,
					size_t n, const NetworkTuning *tuning)
{
	gs_net::PlanParams params;
	std::vector<Pass> passes;
	int			count,
				shape_of[4];
	const ShapeEntry *shapes = shapes_of(kind, &count);
	size_t		mem_length = network_buffer_length(algorithm, n);

	if (algorithm != GPU_ALGO_BITONIC && algorithm != GPU_ALGO_BUTTERFLY)
	{
		set_message("network_sort_device: not a network algorithm");
		return GPU_INVALID;
	}
	if (n < 2)
		return GPU_OK;
	GS_TRY(make_plan(algorithm, kind, n, tuning, &params, &passes, shape_of));

	/* the bitonic network's padding: sentinels above every real element */
	if (mem_length > n)
	{
		if (kind == ELEMENT_U32)
			GS_TRY(fill_sentinels<uint32_t>(job, elements, n, mem_length));
		else if (kind == ELEMENT_U64)
			GS_TRY(fill_sentinels<uint64_t>(job, elements, n, mem_length));
		else if (kind == ELEMENT_PACKED62)
			GS_TRY(fill_sentinels<Packed62>(job, elements, n, mem_length));
		else
			GS_TRY(fill_sentinels<Pair16>(job, elements, n, mem_length));
	}
	for (const Pass &pass : passes)
	{
		const ShapeEntry &shape = shapes[shape_of[pass.shape]];
		PassLauncher launch = launcher_for(shape, pass, params.element_bytes);

		GS_TRY(launch(job, elements, mem_length, pass, gs_net::pass_groups(params, pass)));
		GS_TRY(job.progress(mem_length));
	}
	return GPU_OK;
}

}								/* namespace gs_gpu */
