#!/usr/bin/env bash
# Builds PostgreSQL 18.6 with ICU for the GPU machine, whose portable
# PostgreSQL (../shared/device) has none, for issue #44's ICU figures:
#
#   bench/build_pg_icu.sh            # here: about 10 minutes on 2 cores
#
# It configures the shared tarball for /tmp/gpusort-pg18icu (as the
# portable builds: no readline, zlib, OpenSSL or LLVM), installs there,
# copies ICU's libraries beside it and packs .device-carry/pg18icu-portable.tar.xz.
# Then build gpusort against it and pack as for any major:
#
#   make -j2 WITH_CUDA=yes PG_CONFIG=/tmp/gpusort-pg18icu/bin/pg_config \
#     CUDA_ARCH_FLAGS="-gencode arch=compute_90,code=sm_90" all test/unit/test_engine
#   PG_MAJOR=18icu bench/device_run.sh pack
#
# There, before bench/device_run.sh (PG_MAJOR=18icu): the libraries go to
# the system's path, since libicuuc finds libicudata only there (the
# binaries' RUNPATH serves their own needs, not their libraries'). Only
# on a fresh machine: copied again over the files a running server has
# mapped (a warm machine, the last call's server still up), they were
# rewritten in place, and that server's launchers died of SIGSEGV at its
# next restart (bench/README.md, "Text keys on the H200"):
#
#   [ -x /tmp/gpusort-pg18icu/bin/postgres ] ||
#     { tar xJf .device-carry/pg18icu-portable.tar.xz -C /tmp &&
#       cp -a /tmp/gpusort-pg18icu/lib/libicu*.so.* /usr/local/lib/ && ldconfig; }
set -euo pipefail
prefix=/tmp/gpusort-pg18icu
source_tarball=${SOURCE:-../shared/postgresql/postgresql-18_18.6.orig.tar.bz2}
work=$(mktemp -d)
tar xjf "$source_tarball" -C "$work"
cd "$work"/postgresql-18.6
./configure --prefix="$prefix" --without-readline --without-zlib --with-icu \
  --without-openssl --without-llvm > "$work/configure.log"
make -j"$(nproc)" > "$work/make.log"
make install > "$work/install.log"
icu=$(dirname "$(ldconfig -p | awk '/libicuuc.so/ {print $NF; exit}')")
cp -a "$icu"/libicuuc.so.* "$icu"/libicui18n.so.* "$icu"/libicudata.so.* "$prefix/lib/"
cd - > /dev/null
tar cJf .device-carry/pg18icu-portable.tar.xz -C /tmp "$(basename "$prefix")"
ls -l .device-carry/pg18icu-portable.tar.xz
