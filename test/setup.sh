#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds gpusort's Debian packages for
# PostgreSQL 15 and 18 and installs them:
#   sudo test/setup.sh
# 1. installs what the build needs from Debian: the PostgreSQL 15 server and
#    headers, debhelper and postgresql-server-dev-all (pg_buildext, dh
#    --with pgxs), dpkg-dev, python3 and python3-psycopg2 (for the checks
#    and the fuzzer), and the en_US.UTF-8 locale (locales, localedef) for
#    the tests of libc collations (servers initialised after it have the
#    collation; the tests skip what a server lacks);
# 2. PostgreSQL 18, which Debian 12 does not package: test/setup_pg18.sh
#    builds it once from ../shared/postgresql/ into /usr/lib/postgresql/18
#    and installs it as a local postgresql-18 package (about 10 minutes;
#    skipped when installed);
# 3. compiles the CUDA kernels once, in kernels/ of this tree (nvcc from
#    /usr/local/cuda or PATH is required: the packages always carry them);
#    both majors' builds and make unittest link the same objects;
# 4. builds postgresql-15-gpusort and postgresql-18-gpusort (the majors of
#    debian/pgversions) from a copy of this tree (tracked and new files,
#    plus those objects) with dpkg-buildpackage, in $GPUSORT_DEB_DIR
#    (default /var/tmp/gpusort-deb), so that the tree stays clean, and
#    installs them: each server loads gpusort from its package, and
#    test/check_package.sh says so;
# 5. builds and installs Citus from ../shared/citus/ for the Citus test:
#    13.2.2 for 15, 14.0.1 for 18 (test/citus/run.sh --install-only; once
#    each, about 8 minutes each).
# The packages' own regress run is skipped here (DEB_BUILD_OPTIONS=nocheck):
# test/run_tests.sh runs the suite against the installed packages.
# By hand, without packaging: make && sudo make install (or make
# WITH_CUDA=no for a CPU-only build; make PG_CONFIG=... for another server).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if [ "$(id -u)" -ne 0 ]; then
  echo "run as root (sudo test/setup.sh): it installs packages and the extension" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
packages="build-essential postgresql-15 postgresql-server-dev-15 postgresql-server-dev-all
  debhelper dpkg-dev fakeroot python3 python3-psycopg2 locales"
missing=""
for p in $packages; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if ! locale -a 2>/dev/null | grep -qix 'en_US.utf8'; then
  localedef -i en_US -f UTF-8 en_US.UTF-8
fi

export PATH="/usr/local/cuda/bin:$PATH"
if ! command -v nvcc >/dev/null; then
  echo "setup: no nvcc (looked in /usr/local/cuda/bin and PATH). The Debian package is built" >&2
  echo "with the CUDA kernels only. Install the CUDA toolkit, or build by hand without them:" >&2
  echo "  make WITH_CUDA=no && sudo make install" >&2
  exit 1
fi
# the majors to build for, and each one's server
majors=$(sed -n 's/^\([0-9][0-9]*\)$/\1/p' debian/pgversions)
pg_config_of() { echo "/usr/lib/postgresql/$1/bin/pg_config"; }
phase() { echo "setup: $1 done in $(( $(date +%s) - phase_start )) s"; phase_start=$(date +%s); }
phase_start=$(date +%s)

# ---- 2. PostgreSQL 18, built once ----
if echo "$majors" | grep -qx 18; then
  test/setup_pg18.sh
  phase "PostgreSQL 18"
fi
for major in $majors; do
  [ -x "$(pg_config_of "$major")" ] ||
    { echo "setup: no PostgreSQL $major server ($(pg_config_of "$major"))" >&2; exit 1; }
done

# ---- 3. the kernels, once, in this tree ----
echo "setup: compiling the CUDA kernels (kernels/*.o; minutes)"
make -s -j"$(nproc)" cuda-objs WITH_CUDA=yes PG_CONFIG="$(pg_config_of 15)"
phase "the CUDA kernels"

# ---- 4. the packages, from a copy of the tree ----
debdir=${GPUSORT_DEB_DIR:-/var/tmp/gpusort-deb}
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
rm -rf "$debdir"
mkdir -p "$debdir/gpusort-${version%-*}"
src="$debdir/gpusort-${version%-*}"
git_() { git -c safe.directory="$root" -C "$root" "$@"; }   # the clone may be another user's
if git_ rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git_ ls-files -co --exclude-standard -z > "$debdir/files"
else
  find . -path ./.git -prune -o -type f ! -name '*.o' ! -name '*.so' ! -name '*.bc' -print0 > "$debdir/files"
fi
find kernels -maxdepth 1 -name '*.o' -print0 >> "$debdir/files"
tar -c --ignore-failed-read --null -T "$debdir/files" -f - | tar -x -f - -C "$src"   # keeps mtimes: the objects stay up to date

echo "setup: building $( (cd "$src" && dpkg-parsechangelog -S Source) ) $version (dpkg-buildpackage, log in $debdir/build.log)"
# -nc: no clean first (the copy is clean; debian/rules clean runs make clean,
# which would delete the kernel objects just copied)
if ! (cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
        dpkg-buildpackage -b -nc -us -uc) > "$debdir/build.log" 2>&1; then
  tail -n 80 "$debdir/build.log"
  echo "setup: the package build failed (full log: $debdir/build.log)" >&2
  exit 1
fi
debs=()
for major in $majors; do
  debs+=("$(ls "$debdir"/postgresql-"$major"-gpusort_"$version"_*.deb)")
done
echo "setup: built ${debs[*]}"
phase "the packages"

# ---- install them ----
# leftovers of a by-hand make install would sit beside the packages' files
# where the servers look: remove the gpusort files no package owns
for major in $majors; do
  pg_config=$(pg_config_of "$major")
  for f in $(find "$($pg_config --pkglibdir)" "$($pg_config --sharedir)/extension" -maxdepth 1 -name 'gpusort*' -type f;
             find "$($pg_config --pkglibdir)/bitcode" -path '*gpusort*' -type f 2>/dev/null); do
    dpkg -S "$f" >/dev/null 2>&1 || { echo "setup: removing $f (not from a package)"; rm -f "$f"; }
  done
done
apt-get install -y -qq --reinstall "${debs[@]}" >/dev/null
for major in $majors; do
  dpkg-query -W -f 'setup: installed ${Package} ${Version}\n' "postgresql-$major-gpusort"
done

# ---- Citus, for the test on a Citus cluster (test/citus/) ----
# built once per major from Citus's source in ../shared/citus/ (about 8
# minutes each); test/citus/run.sh picks the Citus release for the major
for major in $majors; do
  PG_CONFIG=$(pg_config_of "$major") test/citus/run.sh --install-only ||
    echo "setup: Citus for PostgreSQL $major is not installed: its Citus test will fail"
done
phase "Citus"
