#!/usr/bin/env bash
# Acts per second on a Citus cluster against one PostgreSQL, in one run on one machine
# (docs/BENCHMARKS.md, "Citus against one PostgreSQL"). Each round: a fresh database on each,
# migrated by `missive migrate` (on Citus, then distributed by deploy/citus/distribute.sql),
# the release server against it, and `missive-load acts`; on Citus, Citus's own execution
# counters (`citus_stat_counters`) give the distributed executions per act, and each worker's
# share of the events. Rounds alternate, PostgreSQL first.
#
#   scripts/citus-vs-postgres.sh PG_ADMIN_URL CITUS_ADMIN_URL [rounds] [missive-load acts options]
#
# Both URLs name an administrative database (`postgres`); on Citus the coordinator's, with its
# workers registered there and the `citus` extension available on every node (a database is
# made on each). Needs the release binaries (`cargo build --release -p missive-server -p
# missive-loadgen`, in `$CARGO_TARGET_DIR` if set) and psql.
set -euo pipefail
cd "$(dirname "$0")/.."

pg_admin="$1"
citus_admin="$2"
rounds="${3:-2}"
shift $(($# < 3 ? $# : 3))
load_options=("$@")
[ "${#load_options[@]}" -gt 0 ] || load_options=(--clients 8,32 --secs 10)
target="${CARGO_TARGET_DIR:-target}/release"
port=50161

# `url` with its database replaced by `name`, its query kept.
with_db() {
    local base="${1%%\?*}" query=""
    [[ "$1" == *\?* ]] && query="?${1#*\?}"
    echo "${base%/*}/$2$query"
}

server=""
made=()
data_dir="$(mktemp -d)"
cleanup() {
    rm -rf "$data_dir"
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    for entry in "${made[@]}"; do
        psql -qX "${entry% *}" -c "DROP DATABASE IF EXISTS ${entry##* } WITH (FORCE)" >/dev/null 2>&1 || true
    done
}
trap cleanup EXIT

# A fresh database on one server, or on every node of the Citus cluster, its URL in `url` (not
# printed: a command substitution's subshell would lose the list of databases to drop).
fresh() {
    local admin="$1" name="missive_bench_$RANDOM$RANDOM"
    psql -qX "$admin" -c "CREATE DATABASE $name" >/dev/null 2>&1
    made+=("$admin $name")
    if [ "$2" = citus ]; then
        local nodes
        nodes="$(psql -qAtX "$admin" -c "SELECT nodename || ':' || nodeport FROM pg_dist_node
            WHERE groupid <> 0 AND noderole = 'primary' AND isactive")"
        for node in $nodes; do
            local worker
            worker="$(echo "$admin" | sed -E "s#@[^/]+/#@$node/#")"
            psql -qX "$worker" -c "CREATE DATABASE $name" >/dev/null 2>&1
            made+=("$worker $name")
            psql -qX "$(with_db "$worker" "$name")" -c "CREATE EXTENSION citus" >/dev/null 2>&1
        done
        local host port_
        url="$(with_db "$admin" "$name")"
        host="$(echo "$admin" | sed -E 's#.*@([^:/]+).*#\1#')"
        port_="$(echo "$admin" | sed -E 's#.*@[^:/]+:?([0-9]*)/.*#\1#')"
        psql -qX "$url" -c "CREATE EXTENSION citus" \
            -c "SELECT citus_set_coordinator_host('$host', ${port_:-5432})" >/dev/null
        for node in $nodes; do
            psql -qX "$url" -c "SELECT citus_add_node('${node%:*}', ${node#*:})" >/dev/null
        done
        psql -qX "$url" -c "ALTER DATABASE $name SET citus.enable_stat_counters = on" >/dev/null
        DATABASE_URL="$url" "$target/missive" migrate >/dev/null
        psql -qX "$url" -v ON_ERROR_STOP=1 -f deploy/citus/distribute.sql >/dev/null 2>&1
    else
        url="$(with_db "$admin" "$name")"
        DATABASE_URL="$url" "$target/missive" migrate >/dev/null
    fi
}

run() {
    local url="$1"
    MISSIVE_DB_MAX_CONNECTIONS=32 MISSIVE_GRPC_ADDR="127.0.0.1:$port" \
        MISSIVE_HTTP_ADDR=127.0.0.1:0 MISSIVE_DATA_DIR="$data_dir" DATABASE_URL="$url" \
        MISSIVE_RATE_LIMIT_PER_SEC=1000000000 MISSIVE_RATE_LIMIT_BURST=1000000000 \
        MISSIVE_CREATE_LIMIT_PER_MIN=1000000000 MISSIVE_CREATE_LIMIT_BURST=1000000000 \
        MISSIVE_MAX_OPEN_MATCHES=1000000000 RUST_LOG=warn "$target/missive" serve >/dev/null &
    server=$!
    for _ in $(seq 1 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.2
    done
    "$target/missive-load" acts --target "http://127.0.0.1:$port" --server-pid "$server" \
        "${load_options[@]}"
    kill "$server"
    wait "$server" 2>/dev/null || true
    server=""
}

for round in $(seq 1 "$rounds"); do
    echo "== round $round: PostgreSQL"
    fresh "$pg_admin" postgres
    run "$url"
    echo "== round $round: Citus"
    fresh "$citus_admin" citus
    psql -qX "$url" -c "SELECT citus_stat_counters_reset(0)" >/dev/null
    run "$url"
    psql -qX "$url" -c "SELECT query_execution_single_shard AS single_shard,
            query_execution_multi_shard AS multi_shard,
            (SELECT count(*) FROM events WHERE kind = 'action') AS acts,
            round((query_execution_single_shard + query_execution_multi_shard)::numeric
                / greatest((SELECT count(*) FROM events WHERE kind = 'action'), 1), 2)
                AS executions_per_act
        FROM citus_stat_counters WHERE name = current_database()" \
        -c "SELECT n.nodeport AS worker, sum(s.n) AS events
        FROM (SELECT nodename, nodeport, result::bigint AS n
              FROM run_command_on_shards('events', 'SELECT count(*) FROM %s')
              JOIN pg_dist_shard_placement USING (shardid)) s
        JOIN pg_dist_node n USING (nodeport) GROUP BY n.nodeport ORDER BY 1"
done
