#!/bin/sh
# build.sh — builds the CUDA objects, the GPU check, the engine unit tests
# and the benchmark with plain nvcc/cc commands, for machines without
# pg_config (the Makefile includes PGXS, which needs it). Same flags as the
# Makefile; by default machine code for sm_90 only (the H100), which is what
# runs there and compiles in a third of the time:
#
#   test/gpu/build.sh                        # sm_90
#   CUDA_ARCH_FLAGS="..." test/gpu/build.sh  # another target list
set -e
cd "$(dirname "$0")/../.."

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$(command -v nvcc || echo "$CUDA_HOME/bin/nvcc")}
CC=${CC:-cc}
ARCH=${CUDA_ARCH_FLAGS:-"-gencode arch=compute_90,code=sm_90"}
NVCC_FLAGS="-O3 -std=c++17 -Xcompiler -fPIC -Xcompiler -fvisibility=hidden --expt-relaxed-constexpr $ARCH"
CUDA_LIBS="-L$CUDA_HOME/lib64 -lcudart_static -ldl -lpthread -lrt -lstdc++"
UNIT_CFLAGS="-std=gnu11 -O2 -g -Wall -Wextra -Iengine -Ikernels -DGPUSORT_WITH_CUDA=1"
# the engine, and the kernels as its GPU backend (engine/backend_kernels.c)
ENGINE_SRCS=$(ls engine/*.c)
OBJS=""

pids=""
for f in gpu_device gpu_sort gpu_sort_words gpu_networks gpu_radix gpu_approx gpu_minmax gpu_merge gpu_rows; do
	$NVCC $NVCC_FLAGS -Ikernels -c kernels/$f.cu -o kernels/$f.o &
	pids="$pids $!"
	OBJS="$OBJS kernels/$f.o"
done
for p in $pids; do wait $p; done

$NVCC $NVCC_FLAGS -Ikernels -o bench/bench_kernels bench/bench_kernels.cu $OBJS -ldl -lpthread -lrt &
bench_pid=$!
$CC $UNIT_CFLAGS -I"$CUDA_HOME/include" -o test/gpu/check_gpu test/gpu/check_gpu.c $ENGINE_SRCS $OBJS $CUDA_LIBS -lm
$CC $UNIT_CFLAGS -o test/unit/test_engine test/unit/test_engine.c $ENGINE_SRCS service/verify.c $OBJS $CUDA_LIBS -lm
wait $bench_pid
echo "built: $OBJS test/gpu/check_gpu test/unit/test_engine bench/bench_kernels"
