#!/usr/bin/env bash
# Checks that gpusort is installed from its Debian package and that what the
# server loads comes from it:
#   test/check_package.sh
# - postgresql-NN-gpusort (NN: pg_config's major) is installed;
# - gpusort.so, gpusort.control and every gpusort--*.sql of this tree are the
#   package's files (dpkg -S), unchanged since it was installed (dpkg
#   --verify), the same as this tree's (so the regress suite tests this
#   tree's SQL), and no other gpusort file lies beside them (a by-hand
#   make install left over);
# - gpusort-gpud (the GPU service's CUDA process, beside postgres) is the
#   package's and carries the CUDA kernels (.nv_fatbin) and the CUDA runtime
#   statically (no libcudart.so needed); gpusort.so has no CUDA at all; the
#   copyright file is this tree's: gpusort under the PostgreSQL Licence, the
#   CUDA runtime under NVIDIA's;
# - if a server answers psql (PGHOST, PGPORT, PGUSER, PGDATABASE as usual,
#   as a superuser): the library a backend maps after LOAD 'gpusort' is the
#   package's file, and gpusort_info() says built_with_cuda = yes; on 18,
#   pg_get_loaded_modules() names it with META.json's version.
# Ends with "N passed, M failed". PG_CONFIG picks the server and so the
# package, postgresql-NN-gpusort (default /usr/lib/postgresql/15/bin/pg_config).
set -uo pipefail
cd "$(dirname "$0")/.."
pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
major=$("$pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
pkg=postgresql-$major-gpusort
pkglibdir=$("$pg_config" --pkglibdir)
extdir=$("$pg_config" --sharedir)/extension
psql="$("$pg_config" --bindir)/psql"

passed=0
failed=0
ok() { echo "ok     $1"; passed=$((passed + 1)); }
bad() { echo "FAILED $1"; [ -n "${2:-}" ] && echo "$2" | sed 's/^/         /'; failed=$((failed + 1)); }
check() { # check "what" command...
  local what=$1; shift
  local out
  if out=$("$@" 2>&1); then ok "$what"; else bad "$what" "$out"; fi
}

status=$(dpkg-query -W -f '${db:Status-Status} ${Version}' "$pkg" 2>/dev/null)
if [ "${status%% *}" = installed ]; then
  ok "$pkg is installed (${status#* })"
else
  bad "$pkg is installed" "dpkg-query: ${status:-not known to dpkg}"
fi

owned_by_pkg() { # the file exists and dpkg says the package owns it
  [ -f "$1" ] || { echo "$1 does not exist"; return 1; }
  local owner
  owner=$(dpkg -S "$1" 2>&1) || { echo "$owner"; return 1; }
  [ "${owner%%: *}" = "$pkg" ] || { echo "$owner"; return 1; }
}
gpud="$("$pg_config" --bindir)/gpusort-gpud"
files=("$pkglibdir/gpusort.so" "$extdir/gpusort.control" "$gpud")
for f in gpusort--*.sql; do files+=("$extdir/$f"); done
for f in "${files[@]}"; do
  check "$f belongs to $pkg" owned_by_pkg "$f"
done

# every gpusort file where the server looks is the package's
strays=""
while IFS= read -r f; do
  owner=$(dpkg -S "$f" 2>/dev/null) && [ "${owner%%: *}" = "$pkg" ] || strays="$strays$f"$'\n'
done < <(find "$pkglibdir" "$extdir" -maxdepth 1 -name 'gpusort*' -type f 2>/dev/null;
         find "$pkglibdir/bitcode" -path '*gpusort*' -type f 2>/dev/null)
if [ -z "$strays" ]; then
  ok "no gpusort file in $pkglibdir or $extdir outside the package"
else
  bad "no gpusort file in $pkglibdir or $extdir outside the package" "${strays%$'\n'}"
fi

verify=$(dpkg --verify "$pkg" 2>&1)
if [ -z "$verify" ]; then
  ok "dpkg --verify $pkg: files as installed"
else
  bad "dpkg --verify $pkg: files as installed" "$verify"
fi

same_as_tree() { cmp "$1" "$2"; }
check "installed gpusort.control is this tree's" same_as_tree gpusort.control "$extdir/gpusort.control"
for f in gpusort--*.sql; do
  check "installed $f is this tree's" same_as_tree "$f" "$extdir/$f"
done

# (objdump's whole output, not a pipe into grep -q: under pipefail, grep
# leaving early kills objdump with SIGPIPE and fails the pipe)
has_fatbin() { [[ $(objdump -h "$1") == *.nv_fatbin* ]] || { echo "no .nv_fatbin section"; return 1; }; }
check "gpusort-gpud carries the CUDA kernels (.nv_fatbin)" has_fatbin "$gpud"
no_cuda() { [[ $(objdump -h "$1") != *.nv_fatbin* ]] || { echo "has .nv_fatbin"; return 1; }; }
check "gpusort.so has no CUDA code (backends never start CUDA)" no_cuda "$pkglibdir/gpusort.so"
no_dynamic_cudart() {
  local needed
  needed=$(objdump -p "$1" | awk '/NEEDED/ {print $2}')
  ! echo "$needed" | grep -q cudart || { echo "NEEDED: $needed"; return 1; }
}
check "gpusort-gpud links the CUDA runtime statically (no libcudart.so NEEDED)" no_dynamic_cudart "$gpud"
copyright=/usr/share/doc/$pkg/copyright
states_cuda_licence() { grep -q "libcudart_static.a" "$1" && grep -q "CUDA Toolkit End User License Agreement" "$1"; }
check "$copyright states the CUDA runtime's licence" states_cuda_licence "$copyright"
states_licence() { grep -q "^License: PostgreSQL$" "$1" && cmp -s "$1" debian/copyright; }
check "$copyright states gpusort's licence (PostgreSQL), as debian/copyright does" states_licence "$copyright"

# ---- what a running server loads ----
if "$psql" -X -Atc "SELECT 1" >/dev/null 2>&1; then
  maps=$("$psql" -X -q -At -v ON_ERROR_STOP=1 2>&1 <<'SQL'
LOAD 'gpusort';
SELECT line FROM regexp_split_to_table(pg_read_file('/proc/' || pg_backend_pid() || '/maps'), E'\n') line
WHERE line LIKE '%gpusort%' LIMIT 1;
SQL
)
  if echo "$maps" | grep -q " $pkglibdir/gpusort.so$"; then
    ok "the server's backend maps $pkglibdir/gpusort.so"
  else
    bad "the server's backend maps $pkglibdir/gpusort.so" "$maps"
  fi
  cuda=$("$psql" -X -q -At -v ON_ERROR_STOP=1 2>&1 <<'SQL'
SET client_min_messages = warning;
BEGIN;
CREATE EXTENSION IF NOT EXISTS gpusort;
SELECT value FROM gpusort_info() WHERE name = 'built_with_cuda';
ROLLBACK;
SQL
)
  if [ "$cuda" = yes ]; then
    ok "gpusort_info(): built_with_cuda = yes"
  else
    bad "gpusort_info(): built_with_cuda = yes" "$cuda"
  fi
  # 18's magic block names the module and its version (src/compat.h)
  if [ "$major" -ge 18 ]; then
    want=$(sed -n 's/^   "version" *: *"\([^"]*\)".*/\1/p' META.json)
    got=$("$psql" -X -q -At -v ON_ERROR_STOP=1 -c "LOAD 'gpusort'" \
            -c "SELECT module_name || ' ' || version FROM pg_get_loaded_modules() WHERE file_name = 'gpusort.so'" 2>&1)
    if [ "$got" = "gpusort $want" ]; then
      ok "pg_get_loaded_modules(): gpusort $want (META.json's version)"
    else
      bad "pg_get_loaded_modules(): gpusort $want (META.json's version)" "$got"
    fi
  fi
else
  echo "skip   server checks: no server answers psql (PGHOST=${PGHOST:-} PGPORT=${PGPORT:-})"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
