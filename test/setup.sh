#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and builds gpusort:
#   sudo test/setup.sh
# Installs the PostgreSQL 15 server headers (PGXS) and the compilers, builds
# the extension (with the CUDA kernels when nvcc is found at
# /usr/local/cuda or on PATH; CPU-only otherwise) and installs it into the
# server that pg_config names.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "run as root (sudo test/setup.sh): it installs packages and the extension" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
packages="build-essential postgresql-15 postgresql-server-dev-15"
missing=""
for p in $packages; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  apt-get update -qq
  apt-get install -y -qq $missing >/dev/null
fi

export PATH="/usr/local/cuda/bin:$PATH"
pg_config=/usr/lib/postgresql/15/bin/pg_config
make -j"$(nproc)" PG_CONFIG="$pg_config"
make install PG_CONFIG="$pg_config" > /dev/null
echo "gpusort built and installed into $($pg_config --pkglibdir)"
