#!/usr/bin/env bash
# What an act costs the server besides time: PostgreSQL statements and socket system calls per
# act, from `missive-load acts --costs`, against a private PostgreSQL cluster started here with
# pg_stat_statements loaded (a stock cluster does not load it) on a loopback port, and removed
# at the end. Needs the release binaries (`cargo build --release -p missive-server -p
# missive-loadgen`, in `$CARGO_TARGET_DIR` if set), `perf` (Debian: linux-perf) and PostgreSQL's server binaries.
#
#   scripts/act-costs.sh --clients 1,8,32 --secs 8      # any `missive-load acts` options
set -euo pipefail
cd "$(dirname "$0")/.."

bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
port="${COSTS_PG_PORT:-54329}"
dir="$(mktemp -d /tmp/missive-costs-XXXXXX)"

# PostgreSQL refuses to run as root: as root, the cluster belongs to the postgres user.
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        chown -R postgres "$dir"
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}
cleanup() {
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT

as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust >/dev/null
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o "-p $port -k $dir \
    -c listen_addresses=127.0.0.1 -c max_connections=200 \
    -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=top" \
    start >/dev/null

"${CARGO_TARGET_DIR:-target}/release/missive-load" --database-url "postgres://postgres@127.0.0.1:$port/postgres" \
    acts --costs "$@"
