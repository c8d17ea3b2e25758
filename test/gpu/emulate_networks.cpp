/*
 * emulate_networks.cpp — runs the GPU sorting networks' passes on the CPU,
 * thread by thread, with the very code the kernels run
 * (kernels/gpu_network_core.cuh), so the planner, the index arithmetic and
 * the mirror views can be tested on a machine without a GPU. Barriers are
 * emulated by running every thread up to the barrier before any goes on.
 *
 * It also measures, for every shared-memory access pattern the passes use,
 * how many bank wavefronts a warp needs (against the ideal), and for every
 * direct global access how many 32-byte sectors a warp touches.
 *
 *   make emulate-networks      (or: g++ -std=c++17 -O2 -Ikernels
 *                               test/gpu/emulate_networks.cpp; ./a.out [--quick])
 */
#include "gpu_network_core.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <vector>

using namespace gs_net;

static int failures = 0;
static int checks = 0;

struct AccessStats
{
	double		worst_smem = 0;	/* wavefronts / ideal, plain windows */
	double		worst_smem_view = 0;	/* the same in mirror views */
	double		worst_sectors = 0;	/* sectors / ideal */
};

/* Wavefronts one warp needs to access these element slots of shared memory. */
template <class M>
static int
wavefronts(const std::vector<uint32_t> &slots)
{
	const int	words = (int) sizeof(M) / 4;
	std::set<uint32_t> per_bank[32];
	size_t		worst = 0;

	for (uint32_t slot : slots)
		for (int w = 0; w < words; w++)
		{
			uint32_t	word = slot * words + w;

			per_bank[word % 32].insert(word);
		}
	for (auto &bank : per_bank)
		worst = std::max(worst, bank.size());
	return (int) worst;
}

template <class M, int LOG_R, int LOG_NT>
static void
analyse_pass(const Pass &pass, uint64_t mem, AccessStats &stats)
{
	typedef PassThread<M, LOG_R, LOG_NT, true> T;
	const int	ideal_wavefronts = (int) sizeof(M) / 4 > 1 ? (int) sizeof(M) / 4 : 1;
	std::vector<T> th(T::NT);
	int			q = 0,
				view = 0;

	for (int t = 0; t < T::NT; t++)
		th[t].begin(nullptr, mem, 0, t, pass, nullptr);

	auto smem_pattern = [&](int qq, int vv) {
		for (int t = 0; t < T::NT; t++)
		{
			th[t].set_layout(qq, vv);

			/* the Gray-code walk the kernels use must give the formula's slots */
			uint32_t	slot = th[t].slot_base;

			for (int i = 0; i < T::R; i++)
			{
				if (i > 0)
					slot ^= th[t].slot_delta[lowest_bit(i)];
				if (slot != th[t].slot_of(i ^ (i >> 1)))
				{
					printf("FAIL slot walk: q=%d view=%d thread %d register %d\n", qq, vv, t, i ^ (i >> 1));
					failures++;
					return;
				}
			}
		}
		for (int w = 0; w < T::NT / 32; w++)
			for (int e = 0; e < T::R; e++)
			{
				std::vector<uint32_t> slots;

				for (int l = 0; l < 32; l++)
					slots.push_back(th[w * 32 + l].slot_of(e));
				double	   &worst = vv ? stats.worst_smem_view : stats.worst_smem;

				worst = std::max(worst, (double) wavefronts<M>(slots) / ideal_wavefronts);
			}
	};
	auto global_pattern = [&](int qq, int vv) {
		for (int t = 0; t < T::NT; t++)
			th[t].set_layout(qq, vv);
		for (int w = 0; w < T::NT / 32; w++)
			for (int e = 0; e < T::R; e++)
			{
				std::set<uint64_t> sectors;

				for (int l = 0; l < 32; l++)
					sectors.insert(th[w * 32 + l].global_of(e) * sizeof(M) / 32);
				double		ideal = 32.0 * sizeof(M) / 32.0;

				stats.worst_sectors = std::max(stats.worst_sectors, sectors.size() / ideal);
			}
	};

	for (int i = 0; i < pass.nops; i++)
	{
		const Op   &op = pass.ops[i];

		switch (op.kind)
		{
			case OP_LOAD:
				if (op.c)
					global_pattern(op.a, op.b);
				else
					smem_pattern(op.a, op.b);
				q = op.a;
				view = op.b;
				break;
			case OP_EXCHANGE:
				smem_pattern(q, view);
				smem_pattern(op.a, op.b);
				q = op.a;
				view = op.b;
				break;
			case OP_STORE:
				if (op.c)
					global_pattern(q, view);
				else
					smem_pattern(q, view);
				break;
		}
	}
}

/* Runs one pass on all groups, barrier by barrier; COMPILED: as a
 * compiled program's threads (the same ops, some layouts computed another
 * way). */
template <class M, int LOG_R, int LOG_NT, bool COMPILED>
static void
emulate_pass(M *data, uint64_t mem, const Pass &pass, uint64_t groups)
{
	typedef PassThread<M, LOG_R, LOG_NT, COMPILED> T;
	std::vector<M> smem((size_t) 1 << T::G);
	std::vector<T> th(T::NT);

	for (uint64_t g = 0; g < groups; g++)
	{
		/* poison shared memory: every read must follow a write */
		memset(smem.data(), 0xa5, smem.size() * sizeof(M));
		for (int t = 0; t < T::NT; t++)
			th[t].begin(data, mem, g, t, pass, smem.data());
		if (th[0].base >= mem)
			continue;
		for (int i = 0; i < pass.nops; i++)
		{
			const Op   &op = pass.ops[i];

			switch (op.kind)
			{
				case OP_LOAD:
					if (op.c)
						for (auto &x : th)
						{
							x.set_layout(op.a, op.b);
							x.load_direct();
						}
					else
					{
						for (auto &x : th)
							x.load_group_to_smem();
						for (auto &x : th)
						{
							x.set_layout(op.a, op.b);
							x.read_smem();
						}
					}
					break;
				case OP_EXCHANGE:
					for (auto &x : th)
						x.write_smem();
					for (auto &x : th)
					{
						x.set_layout(op.a, op.b);
						x.read_smem();
					}
					break;
				case OP_STEP:
					for (auto &x : th)
						x.step(op.a, op.b, step_bit(op, pass.global_direction_bit));
					break;
				case OP_FLIP:
					for (auto &x : th)
						x.flip_stage(op.a);
					break;
				case OP_STORE:
					if (op.c)
						for (auto &x : th)
							x.store_direct();
					else
					{
						for (auto &x : th)
							x.write_smem();
						for (auto &x : th)
							x.store_group_from_smem();
					}
					break;
				default:
					fprintf(stderr, "bad op %d\n", op.kind);
					exit(2);
			}
		}
	}
}

/* One pass with a kernel shape's threads (compiled or interpreting), and
 * its access patterns measured when stats are wanted. */
template <class M, int LOG_R, int LOG_NT>
static void
run_pass(bool compiled, M *data, uint64_t mem, const Pass &pass, uint64_t groups,
		 AccessStats *stats)
{
	if (compiled)
		emulate_pass<M, LOG_R, LOG_NT, true>(data, mem, pass, groups);
	else
		emulate_pass<M, LOG_R, LOG_NT, false>(data, mem, pass, groups);
	if (stats)
		analyse_pass<M, LOG_R, LOG_NT>(pass, mem, *stats);
}

/* ---- element generation and comparison ---- */

template <class M> struct Gen;
template <> struct Gen<uint32_t>
{
	static uint32_t make(uint64_t key, uint32_t) { return (uint32_t) key; }
	static uint64_t sort_key(uint32_t x) { return x; }
	static uint64_t tie(uint32_t) { return 0; }
	static int key_bits() { return 32; }
};
template <> struct Gen<uint64_t>
{
	/* 64-bit elements; made as key << 32 | index so that ties show */
	static uint64_t make(uint64_t key, uint32_t i) { return (key << 32) | i; }
	static uint64_t sort_key(uint64_t x) { return x; }
	static uint64_t tie(uint64_t) { return 0; }
	static int key_bits() { return 32; }
};
template <> struct Gen<Packed62>
{
	/* (key << 32 | index) with 30-bit keys: below 2^62, as the kernels pack */
	static Packed62 make(uint64_t key, uint32_t i)
	{
		Packed62	p;

		p.bits = (key << 32) | i;
		return p;
	}
	static uint64_t sort_key(const Packed62 &x) { return x.bits; }
	static uint64_t tie(const Packed62 &) { return 0; }
	static int key_bits() { return 30; }
};
template <> struct Gen<Pair16>
{
	static Pair16 make(uint64_t key, uint32_t i)
	{
		Pair16		p;

		p.key = key;
		p.index = i;
		p.unused = 0;
		return p;
	}
	static uint64_t sort_key(const Pair16 &x) { return x.key; }
	static uint64_t tie(const Pair16 &x) { return x.index; }
	static int key_bits() { return 64; }
};

static uint64_t
random_key(std::mt19937_64 &rng, int dist, int key_bits)
{
	uint64_t	mask = key_bits >= 64 ? ~(uint64_t) 0 : (((uint64_t) 1 << key_bits) - 1);

	switch (dist)
	{
		case 0:
			return rng() & mask;
		case 1:
			return rng() % 7;	/* few distinct */
		case 2:
			return mask;		/* all equal to the largest key */
		default:
			return (rng() % 3 == 0) ? mask : (rng() & mask);
	}
}

template <class M, int TR, int TNT, int WR, int WNT, int FR, int FNT>
static void
run_case(bool bitonic, size_t n, int dist, int min_run_bits, std::mt19937_64 &rng,
		 AccessStats *stats)
{
	PlanParams	p;
	std::vector<Pass> passes;
	int			log_length = 0;

	while (((size_t) 1 << log_length) < n)
		log_length++;
	p.bitonic = bitonic;
	p.log_length = log_length;
	p.element_bytes = (int) sizeof(M);
	p.first = Shape{FR, FNT};
	p.tile = Shape{TR, TNT};
	p.wide = Shape{WR, WNT};
	p.min_run_bits = min_run_bits;
	checks++;
	if (!plan_network(p, passes))
	{
		printf("FAIL plan: bitonic=%d n=%zu tile=(%d,%d) wide=(%d,%d)\n", bitonic, n, TR, TNT, WR, WNT);
		failures++;
		return;
	}

	size_t		length = bitonic ? ((size_t) 1 << log_length) : n;
	std::vector<M> data(length);
	std::vector<M> expect(n);

	for (size_t i = 0; i < n; i++)
		data[i] = expect[i] = Gen<M>::make(random_key(rng, dist, Gen<M>::key_bits()), (uint32_t) i);
	for (size_t i = n; i < length; i++)
	{
		typename ElementTraits<M>::Reg s = ElementTraits<M>::sentinel();

		ElementTraits<M>::store(&data[i], s);
	}
	std::sort(expect.begin(), expect.end(), [](const M &a, const M &b) {
		return Gen<M>::sort_key(a) < Gen<M>::sort_key(b) ||
			(Gen<M>::sort_key(a) == Gen<M>::sort_key(b) && Gen<M>::tie(a) < Gen<M>::tie(b));
	});

	for (const Pass &pass : passes)
	{
		uint64_t	groups = pass_groups(p, pass);

		/* half the cases as the interpreting kernel's threads */
		const bool	compiled = dist & 1;

		if (pass.shape == SHAPE_FIRST || pass.shape == SHAPE_WIDE_LARGE)
			run_pass<M, FR, FNT>(compiled, data.data(), length, pass, groups, stats);
		else if (pass.shape == SHAPE_TILE)
			run_pass<M, TR, TNT>(compiled, data.data(), length, pass, groups, stats);
		else
			run_pass<M, WR, WNT>(compiled, data.data(), length, pass, groups, stats);
	}
	for (size_t i = 0; i < n; i++)
	{
		if (Gen<M>::sort_key(data[i]) != Gen<M>::sort_key(expect[i]) ||
			Gen<M>::tie(data[i]) != Gen<M>::tie(expect[i]))
		{
			printf("FAIL %s n=%zu dist=%d elem=%zuB tile=(%d,%d) wide=(%d,%d) run>=%d: "
				   "position %zu differs (%zu passes)\n",
				   bitonic ? "bitonic" : "butterfly", n, dist, sizeof(M), TR, TNT, WR, WNT,
				   min_run_bits, i, passes.size());
			failures++;
			return;
		}
	}
}

/* FR, FNT: the first pass's shape (by default the tiles') */
template <class M, int TR, int TNT, int WR, int WNT, int FR = TR, int FNT = TNT>
static void
run_shape(const char *name, int min_run_bits, size_t max_n, bool quick)
{
	std::mt19937_64 rng(12345 + TR * 7 + TNT * 131 + WR * 17 + WNT + FR * 3 + FNT * 5);
	std::vector<size_t> sizes = {0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 100, 127, 128, 129,
	1000, 1023, 1024, 1025, 4095, 4096, 4097, 10007};
	AccessStats stats;

	for (int k = 13; ((size_t) 1 << k) <= max_n; k++)
	{
		sizes.push_back((size_t) 1 << k);
		sizes.push_back(((size_t) 1 << k) + 1 + (size_t) (rng() % ((size_t) 1 << (k - 1))));
	}
	for (size_t n : sizes)
	{
		if (n > max_n)
			continue;
		for (int bitonic = 0; bitonic < 2; bitonic++)
			for (int dist = 0; dist < (quick ? 2 : 4); dist++)
				run_case<M, TR, TNT, WR, WNT, FR, FNT>(bitonic, n, dist, min_run_bits, rng,
											   dist == 0 ? &stats : nullptr);
	}
	printf("%-34s smem wavefronts <= %.2fx ideal (mirror views %.2fx), global sectors <= %.2fx ideal\n",
		   name, stats.worst_smem, stats.worst_smem_view, stats.worst_sectors);
}

/*
 * Every pass of a long network with the default shapes (gpu_networks.cu)
 * must run one of the fixed programs, which the kernels run compiled.
 */
static void
check_fixed_programs(const char *name, int element_bytes, Shape first, Shape shape,
					 int min_run_bits)
{
	for (int log_length = first.group_bits(); log_length <= 30; log_length++)
		for (int bitonic = 0; bitonic < 2; bitonic++)
		{
			PlanParams	p = {bitonic != 0, log_length, element_bytes, first, shape, shape,
							 min_run_bits};
			std::vector<Pass> passes;
			int			interpreted = 0;

			checks++;
			if (!plan_network(p, passes))
			{
				printf("FAIL plan: %s log_length=%d\n", name, log_length);
				failures++;
				continue;
			}
			for (const Pass &pass : passes)
				if (pass.shape != SHAPE_WIDE_LARGE &&	/* interpreted, by design */
					program_for(pass, pass.shape == SHAPE_FIRST ? first : shape, element_bytes) ==
					PROGRAM_INTERPRETED)
					interpreted++;
			if (interpreted)
			{
				printf("FAIL %s %s log_length=%d: %d of %zu passes have no fixed program\n",
					   name, bitonic ? "bitonic" : "butterfly", log_length, interpreted,
					   passes.size());
				failures++;
			}
		}
}

int
main(int argc, char **argv)
{
	bool		quick = argc > 1 && std::string(argv[1]) == "--quick";

	/* small shapes: many stages and passes on small arrays */
	run_shape<uint32_t, 2, 5, 2, 5>("u32 tile(2,5) wide(2,5)", 5, 1 << 12, quick);
	run_shape<uint32_t, 3, 5, 2, 6>("u32 tile(3,5) wide(2,6)", 5, 1 << 13, quick);
	run_shape<uint64_t, 3, 5, 3, 5>("u64 tile(3,5) wide(3,5)", 4, 1 << 13, quick);
	run_shape<uint64_t, 4, 5, 2, 5>("u64 tile(4,5) wide(2,5)", 3, 1 << 13, quick);
	run_shape<Pair16, 2, 5, 3, 5>("pair16 tile(2,5) wide(3,5)", 3, 1 << 12, quick);
	run_shape<Pair16, 5, 5, 4, 5>("pair16 tile(5,5) wide(4,5)", 4, 1 << 14, quick);
	/* the shapes the kernels use */
	run_shape<uint32_t, 5, 9, 5, 9>("u32 tile(5,9) wide(5,9)", 5, quick ? 1 << 16 : 1 << 18, quick);
	run_shape<uint32_t, 5, 10, 5, 10>("u32 tile(5,10) wide(5,10)", 5, quick ? 1 << 16 : 1 << 17, quick);
	run_shape<uint64_t, 5, 9, 4, 9>("u64 tile(5,9) wide(4,9)", 4, quick ? 1 << 16 : 1 << 18, quick);
	run_shape<uint64_t, 4, 9, 5, 8>("u64 tile(4,9) wide(5,8)", 4, quick ? 1 << 16 : 1 << 17, quick);
	run_shape<uint64_t, 5, 9, 5, 9>("u64 tile(5,9) wide(5,9) run>=5", 5, quick ? 1 << 16 : 1 << 17, quick);
	run_shape<Packed62, 5, 8, 5, 8>("packed62 tile(5,8) wide(5,8)", 4, quick ? 1 << 16 : 1 << 17, quick);
	/* a first pass on larger tiles than the tails' */
	run_shape<uint64_t, 3, 5, 3, 5, 3, 6>("u64 first(3,6) tile(3,5) wide(3,5)", 4, 1 << 13, quick);
	run_shape<Packed62, 5, 8, 5, 8, 5, 9>("packed62 first(5,9) tile(5,8) wide(5,8)", 4,
										  quick ? 1 << 16 : 1 << 17, quick);
	run_shape<Pair16, 4, 9, 4, 8>("pair16 tile(4,9) wide(4,8)", 3, quick ? 1 << 15 : 1 << 17, quick);
	run_shape<Pair16, 5, 8, 4, 9>("pair16 tile(5,8) wide(4,9)", 3, quick ? 1 << 15 : 1 << 16, quick);

	check_fixed_programs("u32 (5,9)", 4, Shape{5, 9}, Shape{5, 9}, 5);
	check_fixed_programs("u64 (5,9) (5,8)", 8, Shape{5, 9}, Shape{5, 8}, 4);
	check_fixed_programs("packed62 (5,9) (5,8)", 8, Shape{5, 9}, Shape{5, 8}, 4);
	check_fixed_programs("pair16 (4,8)", 16, Shape{4, 8}, Shape{4, 8}, 3);

	printf("%d passed, %d failed\n", checks - failures, failures);
	return failures ? 1 : 0;
}
