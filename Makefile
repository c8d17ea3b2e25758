# gpusort — build with PGXS.
#
#   make                     build (with the CUDA kernels when nvcc is found)
#   make WITH_CUDA=no        CPU-only build
#   make install             install into the server found by pg_config
#   make installcheck        pg_regress suite against a running server
#   make unittest            engine unit tests with plain cc (no PostgreSQL)
#   make dist                gpusort-<version>.zip for PGXN (git archive of HEAD)
#
# Layers: src/ (PostgreSQL glue) -> engine/ (plain C) -> service/ (the GPU
# service) -> kernels/ (CUDA).
# gpusort.so holds no CUDA: its engine's GPU backend (engine/sort_backend.h)
# is the service's client (service/client.c). The kernels are linked, with
# cudart statically, into gpusort-gpud, the service's CUDA process
# (service/gpud/), installed beside the postgres binary, whose engine's
# backend they are (engine/backend_kernels.c); it runs on machines with no
# GPU and no driver and says so.

EXTENSION = gpusort
MODULE_big = gpusort
# Every install script (gpusort--X.sql) and update script (gpusort--X--Y.sql):
# a new SQL version is a new gpusort--Y.sql plus gpusort--X--Y.sql and
# default_version in gpusort.control, nothing here. srcdir: VPATH builds
# (pg_buildext builds in build-NN/) find them in the source tree.
DATA = $(notdir $(wildcard $(srcdir)/gpusort--*.sql))
PGFILEDESC = "gpusort - ORDER BY and array sorting on the GPU"

GLUE_OBJS = src/gpusort.o src/settings.o src/plan_info.o src/errors.o \
	src/types.o src/array_functions.o src/info.o src/stats.o \
	src/planner.o src/executor.o src/node_rows.o src/client_statement.o \
	src/row_store.o src/row_store_memory.o src/row_store_runs.o \
	src/row_store_merge.o src/row_store_gpu.o src/row_store_parallel.o \
	src/explain.o src/parallel_sort.o src/key_reader.o \
	src/tuple_former.o src/table_pages.o src/worker_reports.o src/tie_resolver.o \
	src/sort_sites.o
ENGINE_OBJS = engine/engine_common.o engine/key_layout.o engine/cpu_sort.o \
	engine/dispatch.o engine/row_sort.o
SERVICE_OBJS = service/worker.o service/client.o service/client_rows.o service/verify.o
OBJS = $(GLUE_OBJS) $(ENGINE_OBJS) $(SERVICE_OBJS)
GPUD = service/gpusort-gpud

REGRESS = setup array_sort array_functions order_by order_by_types order_by_enum_growth \
	order_by_text order_by_icu \
	order_by_operators order_by_limits sort_sites \
	order_by_cursor order_by_explain order_by_parallel approximate approximate_floats errors upgrade
ISOLATION = skip_locked epq_table_pages
# UTF-8 whatever the server's locale: order_by_icu needs it (ICU keys)
REGRESS_OPTS = --encoding=UTF8

CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(shell command -v nvcc 2>/dev/null || (test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc))
ifeq ($(NVCC),)
WITH_CUDA ?= no
else
WITH_CUDA ?= yes
endif

ifeq ($(WITH_CUDA),yes)
# WITH_CUDA=yes asked for explicitly (as debian/rules does) never falls back
# to a CPU-only build.
ifeq ($(NVCC),)
$(error WITH_CUDA=yes but no nvcc found (PATH, $(CUDA_HOME)/bin): install the CUDA toolkit, set NVCC or CUDA_HOME, or build with WITH_CUDA=no)
endif
# A fat binary: machine code for Ampere (sm_80) and Hopper (sm_90), plus PTX
# that newer GPUs compile at load time.
CUDA_ARCH_FLAGS ?= -gencode arch=compute_80,code=sm_80 \
	-gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90
NVCC_FLAGS ?= -O3 -std=c++17 -Xcompiler -fPIC -Xcompiler -fvisibility=hidden \
	--expt-relaxed-constexpr $(CUDA_ARCH_FLAGS)
# The kernels include no PostgreSQL header, so their objects live in the
# source tree even in a VPATH build: the builds for several PostgreSQL majors
# (build-NN/, pg_buildext) and make unittest share one compilation.
CUDA_OBJS = $(addprefix $(kernels_dir)/, gpu_device.o gpu_sort.o gpu_sort_words.o \
	gpu_networks.o gpu_radix.o gpu_approx.o gpu_minmax.o gpu_merge.o gpu_rows.o)
CUDA_LIBS = -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lpthread -lrt -lstdc++
# The kernels as the engine's GPU backend: linked only beside them.
KERNELS_BACKEND = engine/backend_kernels.c
GPUD_GPU = $(srcdir)/$(KERNELS_BACKEND) $(CUDA_OBJS) $(CUDA_LIBS)
# gpusort-gpud's GPU: device_cuda.c (device_none.c without CUDA)
GPUD_NOT_BUILT = device_none.c
WITH_CUDA_FLAG = 1
else
CUDA_OBJS =
CUDA_LIBS =
KERNELS_BACKEND =
GPUD_GPU =
GPUD_NOT_BUILT = device_cuda.c
WITH_CUDA_FLAG = 0
endif

EXTRA_CLEAN = $(CUDA_OBJS) $(GPUD) results regression.diffs regression.out .pg_build_stamp \
	test/unit/test_engine test/gpu/check_gpu bench/bench_kernels bench/approx_quality bench/quantile_quality bench/crossover

# The build a backend and gpusort-gpud check they share (service/protocol.h):
# the SQL version and a digest of the service's sources, so that a package
# upgraded under a running server is refused, not misread. (PGXS takes
# PG_CPPFLAGS as it is included, before it sets srcdir: the sources are
# found beside this Makefile.)
gpusort_top := $(patsubst %/,%,$(dir $(firstword $(MAKEFILE_LIST))))
GPUSORT_SQL_VERSION := $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" $(gpusort_top)/gpusort.control)
# (gpusort-gpud's sources, every .c and .h in service/gpud/, and the
# client's, service/client*.[ch], sorted, so that the digest is the same in
# every build directory.)
GPUSORT_BUILD := $(GPUSORT_SQL_VERSION)-$(shell cat $(gpusort_top)/service/protocol.h \
	$(sort $(wildcard $(gpusort_top)/service/gpud/*.[ch])) \
	$(sort $(wildcard $(gpusort_top)/service/client*.[ch])) | md5sum | cut -c1-12)
BUILD_FLAG = -DGPUSORT_BUILD='"$(GPUSORT_BUILD)"'
# the release: META.json's version (make dist's archive; on PostgreSQL 18
# also the module's, in its magic block: src/compat.h)
DIST_VERSION := $(shell sed -n 's/^   "version" *: *"\([^"]*\)".*/\1/p' $(gpusort_top)/META.json)

PG_CPPFLAGS = -DGPUSORT_WITH_CUDA=$(WITH_CUDA_FLAG) $(BUILD_FLAG) -DGPUSORT_VERSION='"$(DIST_VERSION)"'

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)

# Debian's server is built with LLVM; without clang here, skip the bitcode
# (it only serves JIT inlining, which gpusort does not need).
ifeq ($(shell command -v $(shell $(PG_CONFIG) --configure | grep -o "CLANG=[^' ]*" | cut -d= -f2) clang-14 clang 2>/dev/null | head -1),)
with_llvm = no
endif

include $(PGXS)

# Each part of gpusort.so has on its include path only the folders it may
# include (DESIGN.md, "The rules"): src/ the engine and the service's
# server side (service.h); the service's server side the engine
# (sort_backend.h); the engine itself only. kernels/ and service/gpud/
# are on no part's path: an include of them from gpusort.so does not
# compile. (test/check_layers.py checks the same rules in the sources.)
src/%.o src/%.bc: override CPPFLAGS := -I$(srcdir)/src -I$(srcdir)/engine -I$(srcdir)/service $(CPPFLAGS)
service/%.o service/%.bc: override CPPFLAGS := -I$(srcdir)/service -I$(srcdir)/engine $(CPPFLAGS)
engine/%.o engine/%.bc: override CPPFLAGS := -I$(srcdir)/engine $(CPPFLAGS)

# gpusort-gpud's sources: service/gpud/ (its files, sorted, as in GPUSORT_BUILD)
GPUD_SOURCES = $(sort $(wildcard $(srcdir)/service/gpud/*.[ch]))
# the client's sources: service/client*.[ch] (as in GPUSORT_BUILD)
CLIENT_SOURCES = $(sort $(wildcard $(srcdir)/service/client*.[ch]))
SERVICE_SOURCES = $(srcdir)/service/protocol.h $(GPUD_SOURCES) $(CLIENT_SOURCES)
service/client.o service/client_rows.o service/worker.o: $(SERVICE_SOURCES) $(srcdir)/gpusort.control

# kernels/ in the source tree: "kernels" in an in-tree build (PGXS sets
# srcdir to "./" there; make's names have no "./", and the pattern rule
# below must match them), the absolute or relative path otherwise.
top_dir := $(patsubst %/,%,$(srcdir))
kernels_dir := $(patsubst ./%,%,$(top_dir)/kernels)

# A VPATH build (pg_buildext: make -C build-NN -f ../Makefile VPATH=..)
# writes its objects under src/, engine/, kernels/ of the build directory;
# PGXS does not create them.
ifneq ($(top_dir),.)
$(shell mkdir -p src engine kernels service)
endif

# ---- gpusort-gpud: the GPU service's CUDA process ----
# Plain C, no PostgreSQL: the kernels, the engine (its CPU sort plays the
# GPU in the service's test mode) and cudart, linked statically. Its .c
# files (GPUD_SOURCES) are compiled and linked in one command, as the engine's
# are: no objects of its own to clean, with or without CUDA.
ENGINE_SRCS_ABS = $(addprefix $(srcdir)/, $(ENGINE_OBJS:.o=.c))
all: $(GPUD)
$(GPUD): $(SERVICE_SOURCES) $(srcdir)/gpusort.control $(ENGINE_SRCS_ABS) \
		$(wildcard $(srcdir)/engine/*.[ch] $(srcdir)/kernels/*.h) $(CUDA_OBJS)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -pthread -I$(srcdir)/engine -I$(srcdir)/kernels \
		$(BUILD_FLAG) -o $@ $(filter-out %/$(GPUD_NOT_BUILT),$(filter %.c,$(GPUD_SOURCES))) \
		$(ENGINE_SRCS_ABS) $(GPUD_GPU) -lm
install: install-gpud
.PHONY: install-gpud
install-gpud: $(GPUD)
	$(MKDIR_P) '$(DESTDIR)$(bindir)'
	$(INSTALL_PROGRAM) $(GPUD) '$(DESTDIR)$(bindir)/gpusort-gpud'
uninstall: uninstall-gpud
.PHONY: uninstall-gpud
uninstall-gpud:
	rm -f '$(DESTDIR)$(bindir)/gpusort-gpud'

# The server the objects were last compiled for: after a build for one
# major, `make PG_CONFIG=<the other's pg_config>` compiles them again (PGXS
# would link the other major's objects; that server then refuses the
# module at LOAD). The stamp changes only when the server does.
PG_BUILD_STAMP = .pg_build_stamp
PG_BUILD_ID := $(shell $(PG_CONFIG) --version) $(shell $(PG_CONFIG) --includedir-server)
$(shell [ "$$(cat $(PG_BUILD_STAMP) 2>/dev/null)" = "$(PG_BUILD_ID)" ] || \
	echo "$(PG_BUILD_ID)" 2>/dev/null > $(PG_BUILD_STAMP) || true)
$(OBJS) $(OBJS:.o=.bc): $(PG_BUILD_STAMP)
$(PG_BUILD_STAMP): ;

# PGXS knows no header dependencies
$(GLUE_OBJS) $(SERVICE_OBJS): $(wildcard src/*.h service/*.h) engine/gpusort_engine.h \
	kernels/interval_map.h engine/sort_backend.h
$(ENGINE_OBJS): $(wildcard engine/*.h) $(wildcard kernels/*.h)

$(kernels_dir)/%.o: $(kernels_dir)/%.cu $(wildcard $(kernels_dir)/*.h $(kernels_dir)/*.cuh)
	$(NVCC) $(NVCC_FLAGS) -I$(kernels_dir) -c $< -o $@

# ---- tests that need no server ----
# (GPUSORT_WITH_CUDA: whether the kernels are linked, and set as the
# engine's GPU backend)
UNIT_CFLAGS = -std=gnu11 -O2 -g -Wall -Wextra -Iengine -Ikernels -DGPUSORT_WITH_CUDA=$(WITH_CUDA_FLAG)
ENGINE_SRCS = $(ENGINE_OBJS:.o=.c)
# the engine and, built with CUDA, the kernels as its backend
ENGINE_LINK = $(ENGINE_SRCS) $(KERNELS_BACKEND) $(CUDA_OBJS) $(CUDA_LIBS)
ENGINE_DEPS = $(ENGINE_SRCS) $(KERNELS_BACKEND) engine/*.h kernels/*.h $(CUDA_OBJS)

test/unit/test_engine: test/unit/test_engine.c $(ENGINE_DEPS) service/verify.[ch]
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_engine.c service/verify.c $(ENGINE_LINK) -lm

.PHONY: unittest
unittest: test/unit/test_engine
	test/unit/test_engine

# approximate sort: quality (inversions, displacement) and speed against radix
bench/approx_quality: bench/approx_quality.c bench/timing.h $(ENGINE_DEPS)
	$(CC) $(UNIT_CFLAGS) -o $@ bench/approx_quality.c $(ENGINE_LINK) -lm

# the quantile mode against the equal widths on skewed keys: rank errors,
# the rank bound's violations, speed against radix
bench/quantile_quality: bench/quantile_quality.c bench/timing.h $(ENGINE_DEPS)
	$(CC) $(UNIT_CFLAGS) -fopenmp -o $@ bench/quantile_quality.c $(ENGINE_LINK) -lm

# from which size the GPU beats the CPU (needs a GPU)
bench/crossover: bench/crossover.c bench/timing.h $(ENGINE_DEPS)
	$(CC) $(UNIT_CFLAGS) -o $@ bench/crossover.c $(ENGINE_LINK) -lm

# ---- GPU-only programs (need nvcc; run them on a machine with a GPU) ----
#   make check-gpu           GPU vs CPU engine, ~1500 cases (test/gpu/check_gpu.c)
#   make bench               kernel throughput -> bench/out/results.csv
#   make emulate-networks    the network passes emulated on the CPU (no GPU)
# On a machine without pg_config (the GPU machine), test/gpu/build.sh builds
# the same programs with plain nvcc/cc commands.
.PHONY: cuda-objs check-gpu bench emulate-networks clean-gpu
cuda-objs: $(CUDA_OBJS)

test/gpu/check_gpu: test/gpu/check_gpu.c $(ENGINE_DEPS)
	$(CC) $(UNIT_CFLAGS) -I$(CUDA_HOME)/include -o $@ test/gpu/check_gpu.c $(ENGINE_LINK) -lm

check-gpu: test/gpu/check_gpu
	test/gpu/check_gpu

bench/bench_kernels: bench/bench_kernels.cu $(wildcard kernels/*.h kernels/*.cuh) $(CUDA_OBJS)
	$(NVCC) $(NVCC_FLAGS) -Ikernels -o $@ bench/bench_kernels.cu $(CUDA_OBJS) -ldl -lpthread -lrt

BENCH_ARGS ?= --max-log 26
bench: bench/bench_kernels
	mkdir -p bench/out
	bench/bench_kernels --csv bench/out/results.csv $(BENCH_ARGS)

# built outside the tree: nothing to ignore or clean
EMULATOR = $(or $(TMPDIR),/tmp)/gpusort_emulate_networks
emulate-networks: test/gpu/emulate_networks.cpp kernels/gpu_network_core.cuh
	$(CXX) -std=c++17 -O2 -Wall -Wextra -Ikernels -o $(EMULATOR) test/gpu/emulate_networks.cpp
	$(EMULATOR)

clean: clean-gpu
clean-gpu:
	rm -rf bench/out

# ---- release archive for PGXN ----
# gpusort-<version>.zip, version from META.json: git archive of the committed
# tree (HEAD) under gpusort-<version>/, so no build product can slip in;
# .gitattributes marks what stays out (CI plumbing).
.PHONY: dist
dist:
	@test -n "$(DIST_VERSION)" || { echo "no top-level version in META.json" >&2; exit 1; }
	@git diff --quiet HEAD -- || echo "warning: uncommitted changes are not in the archive (it is made from HEAD)" >&2
	git archive --format=zip --prefix=gpusort-$(DIST_VERSION)/ -o gpusort-$(DIST_VERSION).zip HEAD
	@echo "gpusort-$(DIST_VERSION).zip"
