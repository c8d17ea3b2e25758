# test/lib/server.sh — throwaway PostgreSQL servers for the test scripts
# (test/run_tests.sh, test/service/run.sh, test/service/chaos.sh,
# test/citus/run.sh): one way to make their folder, run as the right user,
# initialise, configure, start and stop them. Source it with $bindir set
# (the server's bin/), then call server_workdir first. It sets
#   workdir  the script's new folder under /tmp, removed by server_cleanup
#   dbuser   the servers' OS user and superuser: the caller, or under root
#            GPUSORT_TEST_USER (default postgres), as PostgreSQL refuses
#            to run as root
#   run_as   what runs a command as dbuser ("" unless root)
# Each server's settings are PostgreSQL's defaults but what server_init's
# caller adds: the socket in $workdir, its port, the preloaded libraries.

# server_workdir NAME: $workdir = /tmp/gpusort-NAME.XXXXXX, $dbuser, $run_as
server_workdir() {
  workdir=$(mktemp -d "/tmp/gpusort-$1.XXXXXX")
  run_as=""
  dbuser=$(id -un)
  if [ "$(id -u)" -eq 0 ]; then
    dbuser=${GPUSORT_TEST_USER:-postgres}
    run_as="runuser -u $dbuser --"
    chown "$dbuser" "$workdir"
  fi
}

# server_init DATA [PORT PRELOAD [MORE]]: initdb (trust, superuser $dbuser)
# into DATA; with PORT, listening on $workdir's socket and PORT only, with
# PRELOAD in shared_preload_libraries and the lines MORE (a caller that
# sets them at each start, in postgresql.auto.conf, gives no PORT); prints
# initdb's log and returns 1 if it fails
server_init() {
  local data=$1 port=${2:-} preload=${3:-} more=${4:-}
  $run_as "$bindir/initdb" -D "$data" -A trust -U "$dbuser" > "$data.initdb.log" 2>&1 ||
    { cat "$data.initdb.log"; return 1; }
  [ -n "$port" ] || return 0
  cat >> "$data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$workdir'
port = $port
shared_preload_libraries = '$preload'
$more
CONF
}

# server_pg_ctl DATA LOG ARGS...: pg_ctl -D DATA -l LOG ARGS as $dbuser,
# with the environment variables in $server_env (the service's test mode)
server_pg_ctl() {
  local data=$1 log=$2
  shift 2
  # shellcheck disable=SC2086
  $run_as env $server_env "$bindir/pg_ctl" -D "$data" -l "$log" "$@"
}
server_env=""

# server_stop DATA [MODE]: stops it (immediate unless MODE), quietly
server_stop() {
  $run_as "$bindir/pg_ctl" -D "$1" -m "${2:-immediate}" stop > /dev/null 2>&1
}

# server_cleanup DATA...: stops those servers, removes $workdir
server_cleanup() {
  local data
  for data in "$@"; do
    [ -d "$data" ] && server_stop "$data"
  done
  rm -rf "$workdir"
}
