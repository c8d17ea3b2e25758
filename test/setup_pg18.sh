#!/usr/bin/env bash
# PostgreSQL 18 on Debian 12, which has no postgresql-18 package: builds the
# server once from its release tarball and installs it as a local Debian
# package, like a packaged server:
#   sudo test/setup_pg18.sh          (test/setup.sh runs it)
# - the tarball: ../shared/postgresql/postgresql-18_18.6.orig.tar.bz2 beside
#   the repository, or GPUSORT_PG18_ARCHIVE;
# - the prefix: /usr/lib/postgresql/18, everything under it (binaries,
#   libraries, headers, share/), where Debian's postgresql-18 keeps its
#   binaries: pg_buildext finds /usr/lib/postgresql/18/bin/pg_config, and
#   nothing of Debian's own (libpq5, libpq-dev) is overwritten;
# - the package: postgresql-18, version <release>-0+gpusort1, which owns
#   those files (dpkg -S, apt-get remove), depends on the shared libraries
#   they link (dpkg-shlibdeps) and provides postgresql-server-dev-18 and
#   postgresql-client-18, as it holds the headers, PGXS, pg_regress,
#   pg_isolation_regress and the clients. postgresql-18-gpusort depends on
#   it as on Debian's. A real postgresql-18 (a later version) replaces it.
# Skipped when a PostgreSQL 18 with its server headers is installed from a
# package already; the built .deb is kept in GPUSORT_PG18_DIR (default
# /var/tmp/gpusort-pg18) and installed again from there when the package
# is gone. About 10 minutes on 2 cores. Configure: ICU, OpenSSL, LZ4, Zstd,
# readline, zlib and the system's time zones, as Debian builds it; no LLVM
# (no JIT: the bitcode would double every extension's build) and no contrib
# (gpusort's tests use none of it).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
prefix=/usr/lib/postgresql/18
archive=${GPUSORT_PG18_ARCHIVE:-$root/../shared/postgresql/postgresql-18_18.6.orig.tar.bz2}
workdir=${GPUSORT_PG18_DIR:-/var/tmp/gpusort-pg18}

if [ "$(id -u)" -ne 0 ]; then
  echo "run as root (sudo test/setup_pg18.sh): it installs a package" >&2
  exit 1
fi

installed() {
  [ -x "$prefix/bin/postgres" ] && [ -x "$prefix/bin/pg_config" ] &&
    [ -f "$("$prefix/bin/pg_config" --includedir-server)/postgres.h" ] &&
    dpkg -S "$prefix/bin/postgres" >/dev/null 2>&1
}
if installed; then
  echo "setup: $("$prefix/bin/pg_config" --version) is installed in $prefix (build skipped)"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
# (bison and flex: the release tarball no longer carries the generated
# parser and scanner since 17)
deps="build-essential bison flex pkg-config libicu-dev libssl-dev liblz4-dev libzstd-dev
  libreadline-dev zlib1g-dev dpkg-dev tzdata"
missing=""
for p in $deps; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  apt-get install -y -qq --no-install-recommends $missing >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null; }
fi

mkdir -p "$workdir"
deb=$(ls "$workdir"/postgresql-18_*.deb 2>/dev/null | tail -n 1 || true)
if [ -z "$deb" ]; then
  [ -f "$archive" ] || { echo "setup: PostgreSQL 18 source not found: $archive (set GPUSORT_PG18_ARCHIVE)" >&2; exit 1; }
  start=$(date +%s)
  src="$workdir/src"
  stage="$workdir/stage"
  rm -rf "$src" "$stage"
  mkdir -p "$src"
  tar xjf "$archive" -C "$src"
  src=$(echo "$src"/postgresql-18*)
  release=$(sed -n "s/^PACKAGE_VERSION='\(.*\)'/\1/p" "$src/configure")
  echo "setup: building PostgreSQL $release into $prefix (about 10 minutes, log in $workdir/build.log)"
  if ! (cd "$src" &&
        ./configure --prefix="$prefix" --with-icu --with-openssl --with-lz4 --with-zstd \
          --with-system-tzdata=/usr/share/zoneinfo &&
        make -j"$(nproc)" &&
        make install DESTDIR="$stage") > "$workdir/build.log" 2>&1; then
    tail -n 40 "$workdir/build.log"
    echo "setup: the PostgreSQL 18 build failed (log: $workdir/build.log)" >&2
    exit 1
  fi

  # the package: its files, what they link, what it stands for
  mkdir -p "$stage/DEBIAN" "$workdir/shlibs/debian"
  printf 'Source: postgresql-18\n\nPackage: postgresql-18\nArchitecture: any\n' \
    > "$workdir/shlibs/debian/control"
  mapfile -t elves < <(find "$stage$prefix" -type f \( -perm -u+x -o -name '*.so*' \) \
                         -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
  shlibs=$(cd "$workdir/shlibs" && dpkg-shlibdeps -O -S"$stage" --ignore-missing-info "${elves[@]}" 2>/dev/null |
             sed -n 's/^shlibs:Depends=//p')
  cat > "$stage/DEBIAN/control" <<CONTROL
Package: postgresql-18
Version: $release-0+gpusort1
Architecture: $(dpkg --print-architecture)
Maintainer: gpusort maintainers <maintainers@users.noreply.a-seed-aacc0d76.example>
Section: database
Priority: optional
Depends: ${shlibs:+$shlibs, }tzdata
Provides: postgresql-server-dev-18, postgresql-client-18
Description: PostgreSQL $release built from source into $prefix
 Built by gpusort's test/setup_pg18.sh from the release tarball, for
 building and testing gpusort on PostgreSQL 18 where the distribution has no
 postgresql-18 package. The server, its clients, headers, PGXS, pg_regress
 and pg_isolation_regress, all under $prefix; no contrib, no JIT.
CONTROL
  deb="$workdir/postgresql-18_$release-0+gpusort1_$(dpkg --print-architecture).deb"
  # (fast compression: the package never leaves this machine)
  dpkg-deb -Zgzip -z1 --root-owner-group --build "$stage" "$deb" >/dev/null
  rm -rf "$workdir/src" "$stage" "$workdir/shlibs"
  echo "setup: built $deb in $(( $(date +%s) - start )) s"
fi
apt-get install -y -qq --reinstall "$deb" >/dev/null
installed || { echo "setup: $deb installed, but $prefix still has no server" >&2; exit 1; }
dpkg-query -W -f 'setup: installed ${Package} ${Version}\n' postgresql-18
