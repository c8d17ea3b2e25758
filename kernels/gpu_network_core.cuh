/*
 * gpu_network_core.cuh — the machinery of the GPU sorting networks (bitonic
 * and butterfly), written once for the CUDA kernels (gpu_networks.cu) and for
 * a host emulation that tests it without a GPU (test/gpu/emulate_networks.cu).
 *
 * A network of 2^k elements is a sequence of compare-exchange steps, each
 * pairing every index i with i ^ 2^b for one bit b (bitonic: direction by bit
 * `stage` of i; butterfly: ascending, after the stage's "flip", see below).
 * Doing one step per kernel over global memory is hopelessly memory bound, so
 * the steps are grouped into *passes*: a pass hands each thread block one
 * *group* of 2^G elements whose indices differ only in G chosen bits, and the
 * block performs, on registers and shared memory, every step of the pass
 * (all of whose bits are among those G), then writes the group back.
 *
 * Which G bits? A group's local index (0..2^G-1) maps to a global index by
 *     local bits [0, run_bits)      -> global bits [0, run_bits)
 *     local bits [run_bits, G)      -> global bits [high_bit, high_bit + G - run_bits)
 *     the block number              -> all other global bits.
 * "Tile" passes take contiguous tiles (run_bits = G): the first pass sorts
 * whole tiles, later ones finish a stage's strides below 2^G. "Wide" passes
 * handle a stage's large strides 2^high_bit .. 2^(high_bit+L-1), L = G -
 * run_bits of them at once; the group's 2^run_bits consecutive elements per
 * row keep the global accesses coalesced (runs of >= 128 bytes).
 *
 * Inside a block, every thread holds R = 2^LOG_R elements in registers. A
 * *window* q says which local bits the register number spans: element e of
 * thread t has local index
 *     (t & (2^q - 1)) | (e << q) | ((t >> q) << (q + LOG_R)),
 * so a step on local bit b with q <= b < q + LOG_R is a compare-exchange
 * between two registers of one thread, with no communication at all. To
 * reach other bits the block changes window through shared memory (write
 * every register, barrier, read back in the new window): one exchange per
 * LOG_R steps rather than one per step. When the window starts at bit 5 or
 * above, the 32 lanes of a warp hold 32 consecutive elements of each
 * register, so a window can be loaded from and stored to global memory
 * directly, coalesced; otherwise the group goes through shared memory.
 *
 * The butterfly's flip (i <-> i ^ (2^s - 1) within blocks of 2^s) pairs
 * indices that differ in many bits. Mirroring the upper half of every block
 * of 2^s (index i with bit s-1 set is stored at i ^ (2^(s-1) - 1)) turns the
 * flip into an ordinary step on bit s-1; in that mirrored *view* the
 * half-cleaners that follow are ascending in the lower half and descending in
 * the upper one (which is exactly the bitonic network). A view is applied
 * when elements move between memory and registers, so no data is reordered
 * for it. Tile passes apply it to local indices (mirror masks stay inside the
 * tile), wide passes to global indices.
 *
 * Elements compare as plain unsigned keys (keys only) or as (key, row index)
 * pairs: a Packed62, key << b | index in 62 bits (b bits hold every index),
 * when key and index fit, or a 16-byte {uint64 key, uint32 index}
 * otherwise. Pairs are all distinct, so the sorted order is unique and
 * equals the stable CPU radix sort's.
 *
 * Why 62 bits: below 2^62 a 64-bit pattern read as a double is finite and
 * non-negative, and such doubles order exactly as the integers do. The
 * compare-exchanges saturate the integer (ALU) pipe, where a 64-bit integer
 * compare takes two instructions next to the four selects; compared as
 * doubles, the compare moves to the otherwise idle FP64 pipe (one DSETP),
 * and the networks run 9% faster (bench/README.md).
 * Positions at or past the memory length read as +infinity sentinels and are
 * never written: the butterfly needs no padding that way, and groups beyond
 * the padded length of a small bitonic sort cost nothing.
 */
#ifndef GPUSORT_GPU_NETWORK_CORE_CUH
#define GPUSORT_GPU_NETWORK_CORE_CUH

#include <stdint.h>

#if defined(__CUDACC__)
#define NET_HD __host__ __device__ __forceinline__
#define NET_UNROLL _Pragma("unroll")
#else
#define NET_HD inline
#define NET_UNROLL
#endif
/* for the planner's pieces that also build programs at compile time */
#define NET_CONSTEXPR NET_HD constexpr

namespace gs_net {

/* ------------------------------------------------------------------------
 * Element types
 * ------------------------------------------------------------------------ */

/* (key, row index) when the key needs more than 32 bits: 16 bytes in memory
 * so that one 16-byte access moves one element. */
struct alignas(16) Pair16
{
	uint64_t	key;
	uint32_t	index;
	uint32_t	unused;			/* always written as 0 */
};

/* The same pair in registers (the padding is not carried). */
struct PairReg
{
	uint64_t	key;
	uint32_t	index;
};

/* (key, row index) packed below 2^62, compared as doubles on the device. */
struct alignas(8) Packed62
{
	uint64_t	bits;
};

/* Above every packed pair, and still a finite double (2.0). */
#define NET_PACKED62_SENTINEL ((uint64_t) 1 << 62)

template <class M> struct ElementTraits;

template <> struct ElementTraits<uint32_t>
{
	typedef uint32_t Reg;
	static const int LOG_PER_LINE = 5;	/* elements per 128-byte line */
	NET_HD static Reg sentinel() { return 0xffffffffu; }
	NET_HD static bool less(const Reg &a, const Reg &b) { return a < b; }
	NET_HD static Reg load(const uint32_t *p) { return *p; }
	NET_HD static void store(uint32_t *p, const Reg &v) { *p = v; }
};

template <> struct ElementTraits<uint64_t>
{
	typedef uint64_t Reg;
	static const int LOG_PER_LINE = 4;
	NET_HD static Reg sentinel() { return ~(uint64_t) 0; }
	NET_HD static bool less(const Reg &a, const Reg &b) { return a < b; }
	NET_HD static Reg load(const uint64_t *p) { return *p; }
	NET_HD static void store(uint64_t *p, const Reg &v) { *p = v; }
};

template <> struct ElementTraits<Packed62>
{
	typedef uint64_t Reg;
	static const int LOG_PER_LINE = 4;
	NET_HD static Reg sentinel() { return NET_PACKED62_SENTINEL; }
	NET_HD static bool less(const Reg &a, const Reg &b)
	{
#ifdef __CUDA_ARCH__
		return __longlong_as_double((long long) a) < __longlong_as_double((long long) b);
#else
		return a < b;
#endif
	}
	NET_HD static Reg load(const Packed62 *p) { return p->bits; }
	NET_HD static void store(Packed62 *p, const Reg &v) { p->bits = v; }
};

template <> struct ElementTraits<Pair16>
{
	typedef PairReg Reg;
	static const int LOG_PER_LINE = 3;
	NET_HD static Reg sentinel()
	{
		Reg		r;

		r.key = ~(uint64_t) 0;
		r.index = 0xffffffffu;	/* above every real index: n < 2^32 - 1 */
		return r;
	}
	NET_HD static bool less(const Reg &a, const Reg &b)
	{
		return a.key < b.key || (a.key == b.key && a.index < b.index);
	}
	NET_HD static Reg load(const Pair16 *p)
	{
		Reg		r;
#ifdef __CUDA_ARCH__
		/* one 16-byte load */
		ulonglong2	raw = *reinterpret_cast<const ulonglong2 *>(p);

		r.key = raw.x;
		r.index = (uint32_t) raw.y;
#else
		r.key = p->key;
		r.index = p->index;
#endif
		return r;
	}
	NET_HD static void store(Pair16 *p, const Reg &v)
	{
#ifdef __CUDA_ARCH__
		*reinterpret_cast<ulonglong2 *>(p) = make_ulonglong2(v.key, (uint64_t) v.index);
#else
		p->key = v.key;
		p->index = v.index;
		p->unused = 0;
#endif
	}
};

/* ------------------------------------------------------------------------
 * Pass programs
 * ------------------------------------------------------------------------ */

enum OpKind
{
	OP_LOAD = 0,				/* a = window, b = local view, c = direct from global */
	OP_EXCHANGE,				/* a = window, b = local view: via shared memory */
	OP_STEP,					/* a = register bit, b = DirKind, c = direction bit
								 * (DIR_LOCAL_BIT; DIR_GLOBAL_BIT's is the
								 * pass's: step_bit()) */
	OP_FLIP,					/* a = stage s <= LOG_R: in-register flip (window 0) */
	OP_STORE					/* c = direct to global */
};

enum DirKind
{
	DIR_ASCENDING = 0,
	DIR_LOCAL_BIT,				/* descending where local (view) bit c is set */
	DIR_GLOBAL_BIT				/* descending where the pass's global
								 * direction bit is set (a bit outside the
								 * group: the same for the whole block) */
};

struct Op
{
	uint8_t		kind;
	uint8_t		a;
	uint8_t		b;
	uint8_t		c;
};

/* Enough for the first tile pass of a 2^15 tile: 120 steps and ~30 exchanges. */
#define NET_MAX_OPS 200

/* Which kernel shape runs a pass: the tail passes', the wide passes', or
 * the first pass's (whose tiles may be larger; its larger groups also take
 * the wide passes with more strides than the wide shape's: WIDE_LARGE) */
enum { SHAPE_TILE = 0, SHAPE_WIDE = 1, SHAPE_FIRST = 2, SHAPE_WIDE_LARGE = 3 };

/*
 * A pass and its program. Every DIR_GLOBAL_BIT step of one pass takes its
 * direction from the same bit (the stage's), kept out of the ops so that
 * the tail passes of all stages have one program, which the kernels can
 * then run compiled rather than interpreted (gpu_networks.cu).
 */
struct Pass
{
	uint8_t		shape;			/* which kernel shape runs it (tile or wide) */
	uint8_t		run_bits;
	uint8_t		high_bit;
	uint8_t		global_view;	/* stage s of a global mirror view, 0 = none */
	uint16_t	nops;
	uint8_t		global_direction_bit;	/* for DIR_GLOBAL_BIT steps */
	uint8_t		unused;
	Op			ops[NET_MAX_OPS];
};

/* The direction bit of a step op: DIR_GLOBAL_BIT's is the pass's. */
NET_HD int
step_bit(const Op &op, int global_direction_bit)
{
	return op.b == DIR_GLOBAL_BIT ? global_direction_bit : op.c;
}

/*
 * The same program: equal but for where the pass lies in the network (the
 * high bit of a wide pass, the stage of its mirror view, the global
 * direction bit), which a compiled program takes from the pass at run time.
 */
NET_HD bool
same_program(const Pass &a, const Pass &b)
{
	if (a.shape != b.shape || a.run_bits != b.run_bits || a.nops != b.nops ||
		(a.global_view != 0) != (b.global_view != 0))
		return false;
	if ((a.shape == SHAPE_TILE || a.shape == SHAPE_FIRST) &&
		(a.high_bit != b.high_bit || a.global_view != b.global_view))
		return false;			/* tile passes: all fields are the program's */
	for (int i = 0; i < a.nops; i++)
		if (a.ops[i].kind != b.ops[i].kind || a.ops[i].a != b.ops[i].a ||
			a.ops[i].b != b.ops[i].b || a.ops[i].c != b.ops[i].c)
			return false;
	return true;
}

/* ------------------------------------------------------------------------
 * Index arithmetic
 * ------------------------------------------------------------------------ */

/* The mirror view of stage s: i with bit s-1 set <-> i ^ (2^(s-1) - 1). */
NET_HD uint32_t
mirror32(uint32_t i, int s)
{
	if (s > 0 && ((i >> (s - 1)) & 1))
		i ^= (1u << (s - 1)) - 1;
	return i;
}

NET_HD uint64_t
mirror64(uint64_t i, int s)
{
	if (s > 0 && ((i >> (s - 1)) & 1))
		i ^= ((uint64_t) 1 << (s - 1)) - 1;
	return i;
}

/* Global index bits contributed by a local index. */
NET_HD uint64_t
spread_local(uint32_t local, int run_bits, int high_bit)
{
	return (uint64_t) (local & ((1u << run_bits) - 1)) |
		((uint64_t) (local >> run_bits) << high_bit);
}

/* Global index bits contributed by the group (block) number. */
NET_HD uint64_t
group_base(uint64_t group, int group_bits, int run_bits, int high_bit)
{
	int			low_bits = high_bit - run_bits;	/* between the run and the high bits */
	uint64_t	low = group & (((uint64_t) 1 << low_bits) - 1);

	return (low << run_bits) |
		((group >> low_bits) << (high_bit + group_bits - run_bits));
}

/*
 * Shared-memory placement. Element slot `local` goes to
 *     local ^ ((local >> SHIFT) & (PER_LINE - 1)),
 * an XOR of some higher bits into the position within a 128-byte line. With
 * SHIFT = LOG_R (>= LOG_PER_LINE), for every window the lanes of a warp span
 * enough independent bank bits that each register's access takes the
 * minimum number of wavefronts (checked for all shapes by
 * test/gpu/emulate_networks.cpp); a plain row-XOR (SHIFT = LOG_PER_LINE)
 * leaves 2-4 way conflicts in the windows near bit 0.
 */
template <int LOG_PER_LINE, int SHIFT>
NET_HD uint32_t
swizzle(uint32_t local)
{
	return local ^ ((local >> SHIFT) & ((1u << LOG_PER_LINE) - 1));
}

/* Per-register-bit masks: bit e of kRegBitMask[k] is bit k of e. */
NET_HD uint32_t
register_bit_mask(int k)
{
	return k == 0 ? 0xaaaaaaaau : k == 1 ? 0xccccccccu : k == 2 ? 0xf0f0f0f0u :
		k == 3 ? 0xff00ff00u : 0xffff0000u;
}

/* Lowest set bit of i (i in 1..31), for loops the compiler unrolls. */
NET_HD constexpr int
lowest_bit(int i)
{
	return (i & 1) ? 0 : (i & 2) ? 1 : (i & 4) ? 2 : (i & 8) ? 3 : 4;
}

/* ------------------------------------------------------------------------
 * One thread's part of a pass
 *
 * Every index map here (window layout, mirror views, swizzle, spreading
 * local bits to global ones) is linear over GF(2): the image of
 * thread_part ^ (e << q) is image(thread_part) ^ (XOR over the bits k of e
 * of image(1 << (q + k))). Visiting the registers in Gray-code order
 * (e = i ^ (i >> 1), consecutive e differ in one bit) therefore costs one XOR
 * per element to find its shared-memory slot, instead of recomputing the
 * whole map.
 * ------------------------------------------------------------------------ */
template <class M, int LOG_R, int LOG_NT, bool COMPILED>
struct PassThread
{
	typedef ElementTraits<M> Traits;
	typedef typename Traits::Reg Reg;
	static const int R = 1 << LOG_R;
	static const int NT = 1 << LOG_NT;
	static const int G = LOG_R + LOG_NT;
	static const int SWIZZLE_SHIFT = LOG_R > Traits::LOG_PER_LINE ? LOG_R : Traits::LOG_PER_LINE;

	Reg			v[R];

	/* where this thread is */
	uint32_t	tid;
	M		   *data;
	uint64_t	mem_length;		/* positions >= this are +infinity, never written */
	uint64_t	base;			/* global bits of the group */
	int			run_bits;
	int			high_bit;
	int			global_view;
	M		   *smem;
	bool		inside;			/* the whole group lies below mem_length */

	/* current layout */
	int			q;				/* register window starts at local bit q */
	int			local_view;
	uint32_t	thread_part;	/* local index bits that come from tid */
	uint32_t	slot_base;		/* shared-memory slot of register 0 */
	uint32_t	slot_delta[LOG_R];	/* slot(e ^ (1 << k)) = slot(e) ^ slot_delta[k] */
	/*
	 * Without a local view, the global index of register e is
	 *     mirror(first_global + ((e & low_mask) << shift) + ((e >> low_bits) << high_shift)):
	 * the window's bits below the run bits and those above (a window that
	 * straddles them: the wide passes of a few strides) each move
	 * contiguously. Compiled programs (COMPILED) fold most of this.
	 */
	bool		affine;
	uint64_t	first_global;
	int			shift;
	int			low_bits;
	int			high_shift;

	static NET_HD uint32_t swz(uint32_t local)
	{
		return swizzle<Traits::LOG_PER_LINE, SWIZZLE_SHIFT>(local);
	}

	NET_HD void begin(M *data_, uint64_t mem_length_, uint64_t group, uint32_t tid_,
					  const Pass &pass, M *smem_)
	{
		begin(data_, mem_length_, group, tid_, pass.run_bits, pass.high_bit, pass.global_view,
			  smem_);
	}

	/* The same from the pass's fields (constants in compiled programs). */
	NET_HD void begin(M *data_, uint64_t mem_length_, uint64_t group, uint32_t tid_,
					  int run_bits_, int high_bit_, int global_view_, M *smem_)
	{
		tid = tid_;
		data = data_;
		mem_length = mem_length_;
		run_bits = run_bits_;
		high_bit = high_bit_;
		global_view = global_view_;
		smem = smem_;
		base = group_base(group, G, run_bits, high_bit);

		/* highest global position the group can touch, views included */
		uint64_t	top = base | spread_local((1u << G) - 1, run_bits, high_bit);

		if (global_view > 0)
			top |= ((uint64_t) 1 << (global_view - 1)) - 1;
		inside = top < mem_length;
		set_layout(0, 0);
	}

	NET_HD void set_layout(int q_, int local_view_)
	{
		q = q_;
		local_view = local_view_;
		thread_part = (tid & ((1u << q) - 1)) | ((tid >> q) << (q + LOG_R));
		slot_base = swz(mirror32(thread_part, local_view));
NET_UNROLL
		for (int k = 0; k < LOG_R; k++)
			slot_delta[k] = swz(mirror32(1u << (q + k), local_view));

		/* the split form only in compiled programs: as run-time state, it
		 * makes the interpreting kernel spill */
		affine = local_view == 0 && (COMPILED || q >= run_bits || run_bits - q >= LOG_R);
		if (run_bits == G)
		{
			/* a contiguous tile */
			first_global = base | thread_part;
			shift = q;
			low_bits = LOG_R;
			return;
		}
		first_global = base | spread_local(thread_part, run_bits, high_bit);
		if (q >= run_bits)
		{
			/* all in the high bits */
			shift = q - run_bits + high_bit;
			low_bits = LOG_R;
		}
		else
		{
			/* from bit q in the run, then on at the high bit */
			shift = q;
			low_bits = run_bits - q < LOG_R ? run_bits - q : LOG_R;
			high_shift = high_bit;
		}
	}

	/* The global index of register e when affine (before the global view). */
	NET_HD uint64_t affine_global(int e) const
	{
		if (!COMPILED)
			return first_global + ((uint64_t) e << shift);	/* low_bits == LOG_R */

		const int	low_mask = (1 << low_bits) - 1;
		uint64_t	g = first_global + ((uint64_t) (e & low_mask) << shift);

		if (low_bits < LOG_R)
			g += (uint64_t) (e >> low_bits) << high_shift;
		return g;
	}

	NET_HD uint32_t view_local(int e) const
	{
		return thread_part | ((uint32_t) e << q);
	}

	/* The actual local index of register e. */
	NET_HD uint32_t actual_local(int e) const
	{
		return mirror32(view_local(e), local_view);
	}

	/* The shared-memory slot of register e (the general formula). */
	NET_HD uint32_t slot_of(int e) const
	{
		return swz(actual_local(e));
	}

	/* The global position of register e (the general formula). */
	NET_HD uint64_t global_of(int e) const
	{
		uint64_t	g;

		if (affine)
			g = affine_global(e);
		else
			g = base | spread_local(actual_local(e), run_bits, high_bit);
		return mirror64(g, global_view);
	}

	/* The global position of local (shared-memory) slot `local`. */
	NET_HD uint64_t global_of_local(uint32_t local) const
	{
		return mirror64(base | spread_local(local, run_bits, high_bit), global_view);
	}

	template <bool CHECKED>
	NET_HD Reg fetch(uint64_t g) const
	{
		if (!CHECKED || g < mem_length)
			return Traits::load(data + g);
		return Traits::sentinel();
	}

	template <bool CHECKED>
	NET_HD void put(uint64_t g, const Reg &x) const
	{
		if (!CHECKED || g < mem_length)
			Traits::store(data + g, x);
	}

	/* ---- moving data between global memory and registers ---- */

	template <bool CHECKED>
	NET_HD void load_direct_loop()
	{
		if (affine && global_view == 0)
		{
NET_UNROLL
			for (int e = 0; e < R; e++)
				v[e] = fetch<CHECKED>(affine_global(e));
			return;
		}
NET_UNROLL
		for (int e = 0; e < R; e++)
			v[e] = fetch<CHECKED>(global_of(e));
	}

	template <bool CHECKED>
	NET_HD void store_direct_loop() const
	{
		if (affine && global_view == 0)
		{
NET_UNROLL
			for (int e = 0; e < R; e++)
				put<CHECKED>(affine_global(e), v[e]);
			return;
		}
NET_UNROLL
		for (int e = 0; e < R; e++)
			put<CHECKED>(global_of(e), v[e]);
	}

	NET_HD void load_direct()
	{
		if (inside)
			load_direct_loop<false>();
		else
			load_direct_loop<true>();
	}

	NET_HD void store_direct() const
	{
		if (inside)
			store_direct_loop<false>();
		else
			store_direct_loop<true>();
	}

	/* A contiguous tile that the global view of stage G + 1 stores
	 * reversed (the bitonic network's first pass, odd tiles). */
	NET_HD bool tile_reversed() const
	{
		return global_view == G + 1 && ((base >> G) & 1);
	}

	/*
	 * Global <-> shared memory with consecutive threads on consecutive
	 * slots: local = tid + k * NT. In a contiguous tile without a global
	 * view that is base + tid + k * NT in global memory (constant offsets;
	 * the same backwards from the tile's end when it is stored reversed),
	 * and swz(tid) ^ swz(k * NT) in shared memory (a constant per k).
	 */
	template <bool CHECKED>
	NET_HD void load_group_loop() const
	{
		const uint32_t tid_slot = swz(tid);

		if (run_bits == G && (global_view == 0 || global_view == G + 1))
		{
			const int64_t stride = tile_reversed() ? -(int64_t) NT : NT;
			const uint64_t first = base + (tile_reversed() ? ((1u << G) - 1 - tid) : tid);

NET_UNROLL
			for (int k = 0; k < R; k++)
				Traits::store(smem + (tid_slot ^ swz((uint32_t) k * NT)),
							  fetch<CHECKED>(first + k * stride));
			return;
		}
NET_UNROLL
		for (int k = 0; k < R; k++)
		{
			uint32_t	local = tid + (uint32_t) k * NT;

			Traits::store(smem + swz(local), fetch<CHECKED>(global_of_local(local)));
		}
	}

	template <bool CHECKED>
	NET_HD void store_group_loop() const
	{
		const uint32_t tid_slot = swz(tid);

		if (run_bits == G && (global_view == 0 || global_view == G + 1))
		{
			const int64_t stride = tile_reversed() ? -(int64_t) NT : NT;
			const uint64_t first = base + (tile_reversed() ? ((1u << G) - 1 - tid) : tid);

NET_UNROLL
			for (int k = 0; k < R; k++)
				put<CHECKED>(first + k * stride,
							 Traits::load(smem + (tid_slot ^ swz((uint32_t) k * NT))));
			return;
		}
NET_UNROLL
		for (int k = 0; k < R; k++)
		{
			uint32_t	local = tid + (uint32_t) k * NT;

			put<CHECKED>(global_of_local(local), Traits::load(smem + swz(local)));
		}
	}

	NET_HD void load_group_to_smem() const
	{
		if (inside)
			load_group_loop<false>();
		else
			load_group_loop<true>();
	}

	NET_HD void store_group_from_smem() const
	{
		if (inside)
			store_group_loop<false>();
		else
			store_group_loop<true>();
	}

	/* ---- registers <-> shared memory, in Gray-code order ---- */

	NET_HD void write_smem() const
	{
		uint32_t	slot = slot_base;

NET_UNROLL
		for (int i = 0; i < R; i++)
		{
			if (i > 0)
				slot ^= slot_delta[lowest_bit(i)];
			Traits::store(smem + slot, v[i ^ (i >> 1)]);
		}
	}

	NET_HD void read_smem()
	{
		uint32_t	slot = slot_base;

NET_UNROLL
		for (int i = 0; i < R; i++)
		{
			if (i > 0)
				slot ^= slot_delta[lowest_bit(i)];
			v[i ^ (i >> 1)] = Traits::load(smem + slot);
		}
	}

	/* ---- comparing ---- */

	/* a = min, b = max (ascending), or the other way round (descending) */
	NET_HD static void order(Reg &a, Reg &b, bool descending)
	{
		bool		swap = Traits::less(b, a) != descending;
		Reg			low = swap ? b : a;
		Reg			high = swap ? a : b;

		a = low;
		b = high;
	}

	NET_HD static void order_ascending(Reg &a, Reg &b)
	{
		bool		swap = Traits::less(b, a);
		Reg			low = swap ? b : a;
		Reg			high = swap ? a : b;

		a = low;
		b = high;
	}

	/* the same direction for every pair: the block-uniform cases */
	template <int J>
	NET_HD void step_uniform(bool descending)
	{
		if (!descending)
		{
NET_UNROLL
			for (int e = 0; e < R; e++)
				if (!(e & (1 << J)))
					order_ascending(v[e], v[e | (1 << J)]);
		}
		else
		{
NET_UNROLL
			for (int e = 0; e < R; e++)
				if (!(e & (1 << J)))
					order_ascending(v[e | (1 << J)], v[e]);
		}
	}

	/* descending where bit e of `descending_mask` is set (e: lower register) */
	template <int J>
	NET_HD void step_directed(uint32_t descending_mask)
	{
NET_UNROLL
		for (int e = 0; e < R; e++)
			if (!(e & (1 << J)))
				order(v[e], v[e | (1 << J)], (descending_mask >> e) & 1);
	}

	/* one direction per thread (the direction bit is a thread bit), chosen
	 * by selects rather than a branch: lanes of a warp may differ */
	template <int J>
	NET_HD void step_thread_directed(bool descending)
	{
NET_UNROLL
		for (int e = 0; e < R; e++)
			if (!(e & (1 << J)))
				order(v[e], v[e | (1 << J)], descending);
	}

	/* The flip of stage S in window 0: e <-> e ^ (2^S - 1). */
	template <int S>
	NET_HD void flip()
	{
NET_UNROLL
		for (int e = 0; e < R; e++)
			if (!(e & (1 << (S - 1))))
				order_ascending(v[e], v[e ^ ((1 << S) - 1)]);
	}

	template <int J>
	NET_HD void step_j(int kind, int bit)
	{
		if (kind == DIR_ASCENDING)
			step_uniform<J>(false);
		else if (kind == DIR_GLOBAL_BIT)
			step_uniform<J>((base >> bit) & 1);
		else if (bit >= q && bit < q + LOG_R)
			step_directed<J>(register_bit_mask(bit - q));
		else
			step_thread_directed<J>((thread_part >> bit) & 1);
	}

	NET_HD void step(int j, int kind, int bit)
	{
		switch (j)
		{
			case 0: step_j<0>(kind, bit); break;
			case 1: step_j<(LOG_R > 1 ? 1 : 0)>(kind, bit); break;
			case 2: step_j<(LOG_R > 2 ? 2 : 0)>(kind, bit); break;
			case 3: step_j<(LOG_R > 3 ? 3 : 0)>(kind, bit); break;
			default: step_j<(LOG_R > 4 ? 4 : 0)>(kind, bit); break;
		}
	}

	NET_HD void flip_stage(int s)
	{
		switch (s)
		{
			case 1: flip<1>(); break;
			case 2: flip<(LOG_R >= 2 ? 2 : 1)>(); break;
			case 3: flip<(LOG_R >= 3 ? 3 : 1)>(); break;
			case 4: flip<(LOG_R >= 4 ? 4 : 1)>(); break;
			default: flip<(LOG_R >= 5 ? 5 : 1)>(); break;
		}
	}
};

}								/* namespace gs_net */

/* ------------------------------------------------------------------------
 * The planner (host only): which passes, with which programs
 * ------------------------------------------------------------------------ */
#include <vector>

namespace gs_net {

struct Shape
{
	int			log_r;
	int			log_nt;
	NET_CONSTEXPR int group_bits() const { return log_r + log_nt; }
};

struct PlanParams
{
	bool		bitonic;		/* else butterfly */
	int			log_length;		/* the network sorts 2^log_length positions */
	int			element_bytes;
	Shape		first;			/* the first pass (tiles at least the tail's) */
	Shape		tile;			/* the tail passes */
	Shape		wide;			/* the wide passes */
	int			min_run_bits;	/* shortest row of a wide group, log2 */
};

/* Writes one pass's program; usable at compile time (gpu_networks.cu). */
class PassBuilder
{
  public:
	NET_CONSTEXPR PassBuilder(int shape, int run_bits, int high_bit, int global_view,
							  int element_bytes, int log_r)
		: pass_(), element_bytes_(element_bytes), q_(-1), view_(0), log_r_(log_r),
		  has_direction_(false), ok_(true)
	{
		pass_.shape = (uint8_t) shape;
		pass_.run_bits = (uint8_t) run_bits;
		pass_.high_bit = (uint8_t) high_bit;
		pass_.global_view = (uint8_t) global_view;
	}

	/* Direct global access pays when each warp access covers whole lines:
	 * the lanes span local bits [0, min(q, 5)), contiguous below run_bits. */
	NET_CONSTEXPR bool direct(int q) const
	{
		int			bits = q < 5 ? q : 5;

		if (bits > pass_.run_bits)
			bits = pass_.run_bits;
		return ((1 << bits) * element_bytes_) >= 128;
	}

	NET_CONSTEXPR void op(int kind, int a, int b, int c)
	{
		if (pass_.nops >= NET_MAX_OPS)
		{
			ok_ = false;
			return;
		}
		Op		   &o = pass_.ops[pass_.nops++];

		o.kind = (uint8_t) kind;
		o.a = (uint8_t) a;
		o.b = (uint8_t) b;
		o.c = (uint8_t) c;
	}

	NET_CONSTEXPR void load(int q, int view)
	{
		op(OP_LOAD, q, view, direct(q) && view == 0);
		q_ = q;
		view_ = view;
	}

	/* Moves to window q (and view), unless already there. */
	NET_CONSTEXPR void window(int q, int view)
	{
		if (q == q_ && view == view_)
			return;
		op(OP_EXCHANGE, q, view, 0);
		q_ = q;
		view_ = view;
	}

	/* A step on local bit b, which must lie in the current window. */
	NET_CONSTEXPR void step(int b, int kind, int bit)
	{
		if (b < q_ || b >= q_ + log_r_)
			ok_ = false;
		if (kind == DIR_GLOBAL_BIT)
		{
			/* one global direction bit per pass */
			if (has_direction_ && pass_.global_direction_bit != bit)
				ok_ = false;
			pass_.global_direction_bit = (uint8_t) bit;
			has_direction_ = true;
			bit = 0;
		}
		op(OP_STEP, b - q_, kind, bit);
	}

	NET_CONSTEXPR void flip(int s) { op(OP_FLIP, s, 0, 0); }
	NET_CONSTEXPR void store() { op(OP_STORE, 0, 0, direct(q_) && view_ == 0); }

	NET_CONSTEXPR void fail() { ok_ = false; }
	NET_CONSTEXPR bool ok() const { return ok_; }
	NET_CONSTEXPR const Pass &pass() const { return pass_; }

  private:
	Pass		pass_;
	int			element_bytes_;
	int			q_;
	int			view_;
	int			log_r_;
	bool		has_direction_;
	bool		ok_;
};

/*
 * The first pass: sorts every tile of 2^G (or the whole array when
 * shorter), stages 1 .. stages, by the chosen network; global_view: see
 * bitonic_first_pass().
 */
NET_CONSTEXPR PassBuilder
first_tile_pass(const PlanParams &p, int stages, int global_view = 0)
{
	const int	r = p.first.log_r;
	const int	G = p.first.group_bits();
	PassBuilder b(SHAPE_FIRST, G, G, global_view, p.element_bytes, r);

	b.load(0, 0);
	for (int s = 1; s <= stages; s++)
	{
		int			dir_kind = s < G ? DIR_LOCAL_BIT : DIR_GLOBAL_BIT;

		if (s <= r)
		{
			/* the whole stage inside window 0 */
			b.window(0, 0);
			if (p.bitonic)
			{
				for (int bit = s - 1; bit >= 0; bit--)
					b.step(bit, dir_kind, s);
			}
			else
			{
				b.flip(s);
				for (int bit = s - 2; bit >= 0; bit--)
					b.step(bit, DIR_ASCENDING, 0);
			}
			continue;
		}
		/* bits s-1 .. 0, in windows of r bits from the top */
		int			view = p.bitonic ? 0 : s;
		int			next = s - 1;

		while (next >= 0)
		{
			int			q = next - r + 1 > 0 ? next - r + 1 : 0;

			b.window(q, view);
			for (int bit = next; bit >= q; bit--)
			{
				if (p.bitonic)
					b.step(bit, dir_kind, s);
				else if (bit == s - 1)
					b.step(bit, DIR_ASCENDING, 0);	/* the flip, in the view */
				else
					b.step(bit, DIR_LOCAL_BIT, s - 1);
			}
			next = q - 1;
		}
	}
	b.store();
	return b;
}

/* Strides 2^(G-1) .. 1 of stage s > G, on contiguous tiles. */
NET_CONSTEXPR PassBuilder
tail_pass(const PlanParams &p, int s)
{
	const int	r = p.tile.log_r;
	const int	G = p.tile.group_bits();
	PassBuilder b(SHAPE_TILE, G, G, 0, p.element_bytes, r);
	int			next = G - 1;
	bool		first = true;

	while (next >= 0)
	{
		int			q = next - r + 1 > 0 ? next - r + 1 : 0;

		if (first)
			b.load(q, 0);
		else
			b.window(q, 0);
		first = false;
		for (int bit = next; bit >= q; bit--)
		{
			if (p.bitonic)
				b.step(bit, DIR_GLOBAL_BIT, s);
			else
				b.step(bit, DIR_ASCENDING, 0);
		}
		next = q - 1;
	}
	b.store();
	return b;
}

/*
 * The bitonic network's first pass over whole tiles, in the butterfly's
 * form. After its first G stages the bitonic network has sorted every tile
 * of 2^G, ascending where bit G of the index is 0 and descending where it
 * is 1. The flip form (all comparators ascending) sorts the tiles with the
 * same comparators up to a relabelling of the wires, and the global mirror
 * view of stage G + 1 stores the odd tiles reversed, that is descending:
 * the same elements in the same places (pairs are distinct, and equal keys
 * are indistinguishable). It is the cheaper program: every comparator
 * ascending, where the bitonic form picks a direction per thread or per
 * register, and it runs compiled faster (bench/README.md).
 */
NET_CONSTEXPR PassBuilder
bitonic_first_pass(const PlanParams &p)
{
	PlanParams	flip = p;

	flip.bitonic = false;
	return first_tile_pass(flip, p.first.group_bits(), p.first.group_bits() + 1);
}

static inline bool
plan_first_tile_pass(const PlanParams &p, int stages, std::vector<Pass> &out)
{
	PassBuilder b = p.bitonic && p.log_length >= p.first.group_bits() ?
		bitonic_first_pass(p) : first_tile_pass(p, stages);

	if (!b.ok())
		return false;
	out.push_back(b.pass());
	return true;
}

static inline bool
plan_tail_pass(const PlanParams &p, int s, std::vector<Pass> &out)
{
	PassBuilder b = tail_pass(p, s);

	if (!b.ok())
		return false;
	out.push_back(b.pass());
	return true;
}

/* Global bits top .. top-L+1 of stage s (all >= the tile bits), in groups
 * of the wide shape (or the first pass's: SHAPE_WIDE_LARGE). */
NET_CONSTEXPR PassBuilder
wide_pass(const PlanParams &p, int s, int top, int L, int shape = SHAPE_WIDE)
{
	const Shape	sh = shape == SHAPE_WIDE ? p.wide : p.first;
	const int	r = sh.log_r;
	const int	G = sh.group_bits();
	const int	run_bits = G - L;
	const int	high_bit = top - L + 1;
	const bool	has_flip = !p.bitonic && top == s - 1;
	PassBuilder b(shape, run_bits, high_bit, has_flip ? s : 0, p.element_bytes, r);
	int			next = G - 1;	/* local bit of global bit `top` */
	bool		first = true;

	if (run_bits > high_bit || run_bits < 0)
	{
		b.fail();
		return b;
	}
	while (next >= run_bits)
	{
		/* keep windows at or above the run bits: direct global access */
		int			q = next - r + 1;

		if (q < run_bits)
			q = run_bits;
		if (q + r > G)
			q = G - r;
		if (first)
			b.load(q, 0);
		else
			b.window(q, 0);
		first = false;
		for (int bit = next; bit >= q && bit >= run_bits; bit--)
		{
			if (p.bitonic)
				b.step(bit, DIR_GLOBAL_BIT, s);
			else if (has_flip && bit == G - 1)
				b.step(bit, DIR_ASCENDING, 0);	/* the flip, in the view */
			else if (has_flip)
				b.step(bit, DIR_LOCAL_BIT, G - 1);
			else
				b.step(bit, DIR_ASCENDING, 0);
		}
		next = (q > run_bits ? q : run_bits) - 1;
	}
	b.store();
	return b;
}

static inline bool
plan_wide_pass(const PlanParams &p, int s, int top, int L, int shape, std::vector<Pass> &out)
{
	PassBuilder b = wide_pass(p, s, top, L, shape);

	if (!b.ok())
		return false;
	out.push_back(b.pass());
	return true;
}

/*
 * The whole network as passes. Returns false if the parameters cannot work
 * (the wide groups must fit under the tiles: wide G <= tile G + 1).
 */
static inline bool
plan_network(const PlanParams &p, std::vector<Pass> &out)
{
	const int	Gf = p.first.group_bits();
	const int	Gt = p.tile.group_bits();
	const int	Gw = p.wide.group_bits();
	const int	max_wide_bits = Gw - p.min_run_bits;
	/* the first pass's groups, when larger, take one stride more: one pass
	 * where the wide shape would need two */
	const int	max_large_bits = Gf > Gw && Gf <= Gt + 1 ? Gf - p.min_run_bits : 0;

	out.clear();
	if (p.log_length <= 0)
		return true;
	if (Gw > Gt + 1 || Gf < Gt || max_wide_bits < 1 || p.first.log_r > 5 ||
		p.tile.log_r > 5 || p.wide.log_r > 5 || p.wide.log_r > Gw || p.tile.log_r > Gt)
		return false;
	if (!plan_first_tile_pass(p, p.log_length < Gf ? p.log_length : Gf, out))
		return false;
	for (int s = Gf + 1; s <= p.log_length; s++)
	{
		int			top = s - 1;

		while (top >= Gt)
		{
			int			L = top - Gt + 1;
			int			shape = SHAPE_WIDE;

			if (L > max_wide_bits && L <= max_large_bits)
				shape = SHAPE_WIDE_LARGE;
			else if (L > max_wide_bits)
				L = max_wide_bits;
			if (!plan_wide_pass(p, s, top, L, shape, out))
				return false;
			top -= L;
		}
		if (!plan_tail_pass(p, s, out))
			return false;
	}
	return true;
}

/* Blocks a pass needs for a network of 2^log_length positions. */
static inline uint64_t
pass_groups(const PlanParams &p, const Pass &pass)
{
	int			G = pass.shape == SHAPE_FIRST || pass.shape == SHAPE_WIDE_LARGE ?
		p.first.group_bits() :
		pass.shape == SHAPE_TILE ? p.tile.group_bits() : p.wide.group_bits();

	if (p.log_length <= G)
		return 1;
	return (uint64_t) 1 << (p.log_length - G);
}

/* ------------------------------------------------------------------------
 * Compiled programs
 *
 * A network's passes run few programs: the first pass's (the same for
 * every long array), the tail passes' (one for all stages), and the wide
 * passes' (one per number of strides L, and for the butterfly with or
 * without the flip); where a pass lies in the network (its stage, high bit
 * and mirror view) is not part of the program. So the kernels can run them
 * compiled, every op, window, register mask and slot delta a constant,
 * rather than interpret them: interpreting costs instructions on the
 * integer pipe that the compare-exchanges saturate (gpu_networks.cu).
 * ------------------------------------------------------------------------ */

/* the wide passes that have a program: up to 9 strides (the most any
 * default shape takes) */
#define NET_MAX_WIDE_BITS 9

enum FixedProgram
{
	PROGRAM_INTERPRETED = 0,	/* none: the ops of the pass itself */
	PROGRAM_FIRST_BITONIC,
	PROGRAM_FIRST_BUTTERFLY,
	PROGRAM_TAIL_BITONIC,
	PROGRAM_TAIL_BUTTERFLY,
	PROGRAM_WIDE,				/* + 3 (L - 1) + variant: bitonic, butterfly
								 * with the flip, butterfly without */
	PROGRAM_COUNT = PROGRAM_WIDE + 3 * NET_MAX_WIDE_BITS
};

/* A fixed program as a pass (at compile time too), for the shape
 * (log_r, log_nt) that runs it. */
NET_CONSTEXPR PassBuilder
fixed_program(int program, int log_r, int log_nt, int element_bytes)
{
	const int	G = log_r + log_nt;
	const int	wide_variant = program >= PROGRAM_WIDE ? (program - PROGRAM_WIDE) % 3 : 0;
	const int	L = program >= PROGRAM_WIDE ? (program - PROGRAM_WIDE) / 3 + 1 : 0;
	const bool	bitonic = program == PROGRAM_FIRST_BITONIC || program == PROGRAM_TAIL_BITONIC ||
		(program >= PROGRAM_WIDE && wide_variant == 0);
	const PlanParams p = {bitonic, 3 * G + 2, element_bytes, {log_r, log_nt}, {log_r, log_nt},
						  {log_r, log_nt}, 0};

	if (program == PROGRAM_FIRST_BITONIC)
		return bitonic_first_pass(p);
	if (program == PROGRAM_FIRST_BUTTERFLY)
		return first_tile_pass(p, G);
	if (program == PROGRAM_TAIL_BITONIC || program == PROGRAM_TAIL_BUTTERFLY)
		return tail_pass(p, G + 1);
	/* a wide pass well above the tile; with the flip when its top is s - 1 */
	return wide_pass(p, 3 * G + 2, wide_variant == 1 ? 3 * G + 1 : 3 * G, L);
}

/* The fixed program a pass runs (its shape's), else PROGRAM_INTERPRETED. */
static inline int
program_for(const Pass &pass, Shape shape, int element_bytes)
{
	int			candidates[4] = {PROGRAM_FIRST_BITONIC, PROGRAM_FIRST_BUTTERFLY,
		PROGRAM_TAIL_BITONIC, PROGRAM_TAIL_BUTTERFLY};

	if (pass.shape == SHAPE_WIDE)
	{
		int			L = shape.group_bits() - pass.run_bits;

		if (L < 1 || L > NET_MAX_WIDE_BITS)
			return PROGRAM_INTERPRETED;
		/* bitonic, or the butterfly with or without the flip */
		candidates[0] = PROGRAM_WIDE + 3 * (L - 1);
		candidates[1] = candidates[0] + (pass.global_view ? 1 : 2);
		candidates[2] = candidates[3] = candidates[0];
	}
	for (int program : candidates)
		if (same_program(pass, fixed_program(program, shape.log_r, shape.log_nt,
											 element_bytes).pass()))
			return program;
	return PROGRAM_INTERPRETED;
}

}								/* namespace gs_net */

#endif							/* GPUSORT_GPU_NETWORK_CORE_CUH */
