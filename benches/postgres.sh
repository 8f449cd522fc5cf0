#!/usr/bin/env bash
# The task lifecycle on PostgreSQL with 1 and with 3 replicas, and on SQLite for comparison,
# in one run on one machine, with the same bench server and load harness as run.sh: builds
# (release), starts a private PostgreSQL cluster (initdb into a temporary directory, fsync=on,
# synchronous_commit=on, pg_stat_statements loaded; as the postgres OS user when run as root),
# and for each setup starts the bench servers (`bench_server --store postgres://…` N times on
# one fresh database, or once on a fresh SQLite file with --sync full), drives the load harness
# against them (with 3 replicas the clients are spread evenly over the replicas: one
# `--url A,B,C`), and prints one table: calls/s, end-to-end p50/p99, the CPU of the replicas
# and of PostgreSQL per task, and the SQL statements per task that pg_stat_statements counted
# during the run: the top-level ones, which the replicas sent (the lifecycle's, the heartbeats',
# the change feed's polls and reads; each one round trip in tokio-postgres's extended
# protocol, a first Parse per pooled connection aside), and all of them, with those the
# triggers ran inside them.
#
#   bash benches/postgres.sh                 # from anywhere; everything on 127.0.0.1
#
# Two more setups measure the limits the others are held against:
# - `pgbench`: the database's own lifecycle, on the same cluster: pgbench with 24 clients, each
#   lifecycle an INSERT of a task-like row then an UPDATE of it to its end, each its own
#   committed transaction (two WAL flushes, as a lifecycle has); its rate is the ceiling pg1
#   is held against.
# - `pgbench-schema`: the same two statements on the store's own tables (made by a bench
#   server's migrations, every index of `tasks`), nothing else: what the row and its indexes
#   cost the database, without the store's bookkeeping (history, counts, slots).
# - `pg1m`: one replica on a database that already retains 1,000,000 finished tasks (made by
#   SQL), against `pg1` on an empty one.
# - `pgexpiry`: one replica whose tasks live BENCH_EXPIRY_TTL_MS (10000) ms, driven for
#   BENCH_EXPIRY_TASKS (150000) lifecycles, so that the sweeper expires about as many tasks as
#   the load creates: the tasks kept and the size of the tables (with their indexes and
#   TOAST) every 10 s, which must level off once the first tasks expire.
# - `sqliteN` (`sqlite3`, say): N bench servers on one SQLite file, the clients spread over
#   them (processes taking turns at SQLite's one write lock).
#
# Environment: BENCH_TASKS (2000), BENCH_CONCURRENCY ("3 24"), BENCH_MODES ("block poll modern"),
# BENCH_SETUPS ("pgbench pgbench-schema sqlite sqlite3 pg1 pg3"), BENCH_PGBENCH_SECONDS (10), PG_BIN (default: the newest /usr/lib/postgresql/*/bin),
# BENCH_OUT (a file for the raw JSON lines; default: in the temporary directory).
# Exit status: non-zero if any call failed its check or a server did not start.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
tasks=${BENCH_TASKS:-2000}
concurrency=${BENCH_CONCURRENCY:-3 24}
modes=${BENCH_MODES:-block poll modern}
setups=${BENCH_SETUPS:-pgbench pgbench-schema sqlite sqlite3 pg1 pg3}
pgbench_seconds=${BENCH_PGBENCH_SECONDS:-10}
pg_bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [[ -z $pg_bin || ! -x $pg_bin/initdb ]]; then
  echo "no PostgreSQL server binaries (initdb, pg_ctl): install them or set PG_BIN" >&2
  exit 1
fi
hz=$(getconf CLK_TCK)

# shellcheck source=benches/lib.sh
source "$root/benches/lib.sh"
bench_init mcp-tasks-pg-bench
out=${BENCH_OUT:-$work/results.jsonl}
: >"$out"
pids=()
pgdir=$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-pg-bench-db.XXXXXX")
if [[ $(id -u) == 0 ]]; then
  chown postgres: "$pgdir"
  as_pg() { runuser -u postgres -- "$@"; }
else
  as_pg() { "$@"; }
fi

stop_all() {
  local pid
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  pids=()
}
cleanup() {
  stop_all
  (cd / && as_pg "$pg_bin/pg_ctl" -D "$pgdir/data" stop -m fast -w >/dev/null 2>&1) || true
  rm -rf "$pgdir"
  bench_cleanup
}
trap cleanup EXIT

bench_build
cp "$target_dir/release/examples/bench_server" "$target_dir/release/load" "$work/"

echo "== a private PostgreSQL cluster ($pg_bin)" >&2
(cd / && as_pg "$pg_bin/initdb" --auth=trust --username=postgres --encoding=UTF8 -D "$pgdir/data" >/dev/null)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >>"$pgdir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$pgdir'
fsync = on
synchronous_commit = on
max_connections = 200
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
EOF
(cd / && as_pg "$pg_bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w start >/dev/null)
postmaster=$(head -n 1 "$pgdir/data/postmaster.pid")
sql() { psql -qAtX "postgres://postgres@127.0.0.1:$port/$1" -c "$2"; }

# ticks PID...: the CPU (user + system, in clock ticks) the processes used so far.
ticks() {
  local pid sum=0
  for pid in "$@"; do
    [[ -r /proc/$pid/stat ]] || continue
    sum=$((sum + $(awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$pid/stat")))
  done
  echo "$sum"
}
# The postmaster and its children (backends, checkpointer, WAL writer…).
pg_pids() { echo "$postmaster" $(ps -o pid= --ppid "$postmaster"); }
# pg_ticks: the CPU of the cluster so far: its live processes', and the backends that ended
# (pgbench's), which the postmaster reaped into its own children's time.
pg_ticks() {
  echo $(($(ticks $(pg_pids)) + $(awk '{sub(/.*\) /, ""); print $14 + $15}' "/proc/$postmaster/stat")))
}

# start_replicas N STORE [ARG...]: N bench servers on STORE (with ARGs); sets pids and urls
# (comma-separated).
start_replicas() {
  local n=$1 store=$2 i
  shift 2
  urls=""
  for ((i = 0; i < n; i++)); do
    start "replica$i" "$work/bench_server" --listen 127.0.0.1:0 --store "$store" --sync full --inline-wait-ms 0 "$@" || return 1
    pids+=("$server_pid")
    server_pid=""
    urls=${urls:+$urls,}$url
  done
  echo "== $n replica(s) on $store: $urls" >&2
}

# measure SETUP REPLICAS DB: every concurrency and mode against the replicas started last; DB
# is the database whose statements are counted ("" for SQLite).
measure() {
  local setup=$1 n=$2 db=$3 c mode json status app0 app1 pg0 pg1 statements load_average
  for c in $concurrency; do
    for mode in $modes; do
      [[ -n $db ]] && sql "$db" "SELECT pg_stat_statements_reset()" >/dev/null
      load_average=$(cut -d' ' -f1 /proc/loadavg)
      app0=$(ticks "${pids[@]}")
      pg0=$(pg_ticks)
      status=0
      # The load harness's own CPU (user + system), beside the servers' and PostgreSQL's on
      # the same cores.
      json=$(/usr/bin/time -f "%U %S" -o "$work/load.time" \
        "$work/load" --url "$urls" --json --tasks "$tasks" --concurrency "$c" --mode "$mode" --tool noop) || status=$?
      app1=$(ticks "${pids[@]}")
      pg1=$(pg_ticks)
      statements=null
      if [[ -n $db ]]; then
        # Top-level statements (sent by the replicas: one round trip each) and all of them
        # (with those the triggers run: counts, history, notifications, foreign-key checks).
        statements=$(sql "$db" "SELECT json_build_object('toplevel', coalesce(sum(calls) FILTER (WHERE toplevel), 0),
          'all', coalesce(sum(calls), 0)) FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$db') AND query NOT LIKE '%pg_stat_statements%'")
      fi
      if [[ -z $json ]]; then
        echo "load $mode c=$c against $setup: no report (exit $status)" >&2
        failed=1
        continue
      fi
      [[ $status -eq 0 ]] || failed=1
      jq -c --arg setup "$setup" --argjson replicas "$n" --argjson statements "$statements" \
        --argjson app $(((app1 - app0) * 1000000 / hz)) --argjson pg $(((pg1 - pg0) * 1000000 / hz)) \
        --arg load "$load_average" --argjson tasks "$tasks" \
        '{setup: $setup, replicas: $replicas, load_average: $load, run: .,
          app_cpu_us_per_task: ($app / $tasks), pg_cpu_us_per_task: (if $statements == null then null else $pg / $tasks end),
          round_trips_per_task: (if $statements == null then null else $statements.toplevel / $tasks end),
          statements_per_task: (if $statements == null then null else $statements.all / $tasks end)}' <<<"$json" >>"$out"
      echo "$json" | jq -r --arg s "$setup" --arg cpu "$(awk -v n="$tasks" '{printf "%d", ($1 + $2) * 1000000 / n}' "$work/load.time" 2>/dev/null)" \
        '"\($s) \(.mode) c=\(.concurrency): \(.per_second|floor)/s, e2e p50 \(.end_to_end.p50_us/1000) ms p99 \(.end_to_end.p99_us/1000) ms, \(.failures) failed; the load harness \($cpu) µs of CPU per task"' >&2
    done
  done
  if [[ -n $db ]]; then
    # Where the statements of the last run went (a sample for BENCHMARKS.md).
    # Each with its calls per task and its execution time per task (µs; parse, plan and the
    # commit's flush not included).
    echo "== $setup: statements of the last run ($mode c=$c), per task: calls, execution µs" >&2
    sql "$db" "SELECT round(calls::numeric / $tasks, 2) || ' ' || lpad(round(total_exec_time::numeric * 1000 / $tasks)::text, 5)
      || CASE WHEN toplevel THEN '  ' ELSE ' (trigger) ' END
      || left(regexp_replace(query, '\s+', ' ', 'g'), 100)
      FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$db')
      AND query NOT LIKE '%pg_stat_statements%' ORDER BY toplevel DESC, total_exec_time DESC LIMIT 20" >&2
  fi
}

# pgbench_lifecycles SETUP: the database's own lifecycle rate (see the header), as a JSON line.
# `pgbench`: a task-like table with a primary key and one index; `pgbench-schema`: the store's
# own tables, made by a bench server's migrations (every index of `tasks`), the same two
# statements and no more (no history, count or slot): what the row and its indexes cost.
pgbench_lifecycles() {
  local setup=$1 db script="$work/lifecycle.sql" pg0 pg1 report tps load_average
  db=bench_${setup//-/_}
  sql postgres "CREATE DATABASE $db" >/dev/null
  if [[ $setup == pgbench-schema ]]; then
    start_replicas 1 "postgres://postgres@127.0.0.1:$port/$db" && stop_all
    cat >"$script" <<'SQL'
\set n random(1, 1000000000000)
INSERT INTO tasks (id, owner, tool, arguments, status, state, created_at, updated_at, ttl_ms, expires_at, attempt,
  version, error_result_fails, input_kinds, claim_node, lease_until, changed_at)
  VALUES ('t' || :client_id || '-' || :n, 'alice', 'noop', '{}', 'working', '"working"',
  (extract(epoch FROM clock_timestamp()) * 1000)::bigint, (extract(epoch FROM clock_timestamp()) * 1000)::bigint, 60000,
  (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 60000, 1, 1, false, '[]', 'node',
  (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 30000, (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
UPDATE tasks SET state = '{"completed":{"result":{"content":[]}}}', status = 'completed', version = 2,
  updated_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
  changed_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint WHERE id = 't' || :client_id || '-' || :n;
SQL
  else
    sql "$db" "CREATE TABLE tasks (id TEXT PRIMARY KEY, owner TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL,
      state TEXT NOT NULL, status TEXT NOT NULL, version INTEGER NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL);
      CREATE INDEX tasks_by_owner ON tasks (owner, created_at, id)" >/dev/null
    cat >"$script" <<'SQL'
\set n random(1, 1000000000000)
INSERT INTO tasks VALUES ('t' || :client_id || '-' || :n, 'alice', 'noop', '{}', '"working"', 'working', 1,
  (extract(epoch FROM clock_timestamp()) * 1000)::bigint, (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
UPDATE tasks SET state = '{"completed":{"result":{"content":[]}}}', status = 'completed', version = 2,
  updated_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint WHERE id = 't' || :client_id || '-' || :n;
SQL
  fi
  load_average=$(cut -d' ' -f1 /proc/loadavg)
  pg0=$(pg_ticks)
  report=$("$pg_bin/pgbench" -n -c 24 -j 2 -T "$pgbench_seconds" -f "$script" "postgres://postgres@127.0.0.1:$port/$db" 2>&1) || true
  pg1=$(pg_ticks)
  tps=$(awk '/^tps = / {print $3; exit}' <<<"$report")
  if [[ -z $tps ]]; then
    echo "pgbench gave no rate: $report" >&2
    failed=1
    return
  fi
  local count
  count=$(sql "$db" "SELECT count(*) FROM tasks")
  echo "$setup c=24: $tps lifecycles/s (INSERT then UPDATE, each committed), $count in ${pgbench_seconds}s" >&2
  jq -nc --argjson tps "$tps" --argjson count "$count" --arg load "$load_average" --arg setup "$setup" \
    --argjson pg $(((pg1 - pg0) * 1000000 / hz)) \
    '{setup: $setup, replicas: 0, load_average: $load, run: {mode: "insert+update", concurrency: 24, per_second: $tps,
      end_to_end: {p50_us: null, p99_us: null}, failures: 0}, app_cpu_us_per_task: null,
      pg_cpu_us_per_task: ($pg / $count), round_trips_per_task: 2, statements_per_task: 2}' >>"$out"
}

# expiry_run: the `pgexpiry` setup (see the header): prints the samples, and one JSON line
# per sample to the results.
expiry_run() {
  local db=bench_pgexpiry ttl=${BENCH_EXPIRY_TTL_MS:-10000} count=${BENCH_EXPIRY_TASKS:-150000} sampler t=0 status=0 json
  sql postgres "CREATE DATABASE $db" >/dev/null
  start_replicas 1 "postgres://postgres@127.0.0.1:$port/$db" --ttl-ms "$ttl" || return 1
  echo "== pgexpiry: TTL $ttl ms, $count lifecycles; every 10 s: seconds, tasks kept, MB of tasks (with indexes and TOAST), MB of the history" >&2
  (
    while sleep 10; do
      t=$((t + 10))
      sql "$db" "SELECT $t || ' ' || (SELECT count(*) FROM tasks) || ' ' ||
        round(pg_total_relation_size('tasks') / 1048576.0, 1) || ' ' || round(pg_total_relation_size('task_history') / 1048576.0, 1)"
    done
  ) >"$work/expiry.txt" 2>/dev/null &
  sampler=$!
  json=$("$work/load" --url "$urls" --json --tasks "$count" --concurrency 24 --mode modern --tool noop) || status=$?
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  [[ $status -eq 0 ]] || failed=1
  echo "$json" | jq -r '"pgexpiry modern c=24: \(.per_second|floor)/s, \(.failures) failed"' >&2
  sed 's/^/pgexpiry sample: /' "$work/expiry.txt" >&2
  awk -v setup=pgexpiry '{printf "{\"setup\":\"%s\",\"expiry_sample\":{\"seconds\":%s,\"tasks\":%s,\"tasks_mb\":%s,\"history_mb\":%s}}\n", setup, $1, $2, $3, $4}' \
    "$work/expiry.txt" >>"$out"
  stop_all
}

for setup in $setups; do
  case $setup in
    pgbench | pgbench-schema)
      pgbench_lifecycles "$setup"
      ;;
    pgexpiry)
      expiry_run
      ;;
    sqlite*)
      n=${setup#sqlite}
      start_replicas "${n:-1}" "$work/bench-$setup.sqlite3"
      measure "$setup" "${n:-1}" ""
      ;;
    pg1m)
      # One replica on a database that already retains 1,000,000 finished tasks (of other
      # principals, expiring in a day), written by SQL after a first start made the schema.
      db=bench_pg1m
      sql postgres "CREATE DATABASE $db" >/dev/null
      sql "$db" "CREATE EXTENSION pg_stat_statements" >/dev/null
      start_replicas 1 "postgres://postgres@127.0.0.1:$port/$db" && stop_all
      echo "== $db: writing 1,000,000 finished tasks" >&2
      sql "$db" "INSERT INTO tasks (id, owner, tool, arguments, status, state, created_at, updated_at, ttl_ms, expires_at,
          attempt, version, error_result_fails, input_kinds, changed_at)
        SELECT md5(n::text) || md5((n + 1)::text), 'retained' || (n % 100), 'noop', '{}', 'completed',
          '{\"completed\":{\"result\":{\"content\":[]}}}', now_ms - 1000000 + n / 1000, now_ms - 1000000 + n / 1000,
          86400000, now_ms + 86400000, 1, 2, false, '[]', now_ms - 1000000 + n / 1000
        FROM generate_series(1, 1000000) AS n, (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms) AS clock;
        INSERT INTO task_history (task_id, version, at, status, message)
          SELECT id, version, updated_at, status, NULL FROM tasks;
        INSERT INTO task_counts (owner, shard, tasks) SELECT owner, 0, count(*) FROM tasks GROUP BY owner" >/dev/null
      sql "$db" "VACUUM ANALYZE" >/dev/null
      sql "$db" "CHECKPOINT" >/dev/null # the load's dirty pages written before the run, not during it
      echo "== $db: $(sql "$db" "SELECT pg_size_pretty(pg_total_relation_size('tasks'))") in tasks with its indexes" >&2
      start_replicas 1 "postgres://postgres@127.0.0.1:$port/$db"
      measure "$setup" 1 "$db"
      ;;
    pg*)
      n=${setup#pg}
      db=bench_$setup
      sql postgres "CREATE DATABASE $db" >/dev/null
      sql "$db" "CREATE EXTENSION pg_stat_statements" >/dev/null
      start_replicas "$n" "postgres://postgres@127.0.0.1:$port/$db"
      measure "$setup" "$n" "$db"
      ;;
    *)
      echo "unknown setup $setup (pgbench, pgbench-schema, sqlite, sqliteN, pg1, pg3, pgN, pg1m, pgexpiry)" >&2
      exit 2
      ;;
  esac
  stop_all
done

jq -rs '
  def ms: if . == null then "-" else (. / 10 | round / 100 | tostring) end;
  def n: if . == null then "-" else (. * 10 | round / 10 | tostring) end;
  "| store | replicas | mode | c | calls/s | e2e p50 / p99 ms | replicas CPU µs/task | PostgreSQL CPU µs/task | round trips/task | statements/task (with triggers) | failed | load avg |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|",
  def store: if .setup == "pgbench" then "pgbench (INSERT, UPDATE)" elif .setup == "pgbench-schema" then "pgbench on the store'"'"'s schema" elif (.setup | startswith("sqlite")) then "SQLite (sync full)" else "PostgreSQL" end;
  def rounded: if . == null then "-" else round end;
  (.[] | select(.expiry_sample == null) | "| \(store) | \(.replicas) | \(.run.mode) | \(.run.concurrency) | \(.run.per_second | round) | \(.run.end_to_end.p50_us | ms) / \(.run.end_to_end.p99_us | ms) | \(.app_cpu_us_per_task | rounded) | \(.pg_cpu_us_per_task | n) | \(.round_trips_per_task | n) | \(.statements_per_task | n) | \(.run.failures) | \(.load_average) |")
' "$out"
# The ratios the issue holds the stores to: pg1's 2026-07-28 lifecycle against the database's
# own (pgbench), pg3 against pg1 (same mode and concurrency), N SQLite processes against one.
jq -rs '
  map(select(.expiry_sample == null))
  | (map(select(.setup == "pgbench")) | first | .run.per_second) as $db
  | (map(select(.setup == "pgbench-schema")) | first | .run.per_second) as $schema
  | (map(select(.setup | startswith("pgbench") | not)) | group_by([.run.mode, .run.concurrency])[]) as $runs
  | ($runs | map({key: .setup, value: .run.per_second}) | from_entries) as $rate
  | "ratios \($runs[0].run.mode) c=\($runs[0].run.concurrency):"
    + (if $db != null and $rate.pg1 != null then " pg1/pgbench \($rate.pg1 / $db * 100 | round / 100)" else "" end)
    + (if $schema != null and $rate.pg1 != null then " pg1/pgbench-schema \($rate.pg1 / $schema * 100 | round / 100)" else "" end)
    + (if $rate.pg1 != null and $rate.pg3 != null then " pg3/pg1 \($rate.pg3 / $rate.pg1 * 100 | round / 100)" else "" end)
    + (if $rate.pg1 != null and $rate.pg1m != null then " pg1m/pg1 \($rate.pg1m / $rate.pg1 * 100 | round / 100)" else "" end)
    + (if $rate.sqlite != null and $rate.sqlite3 != null then " sqlite3/sqlite \($rate.sqlite3 / $rate.sqlite * 100 | round / 100)" else "" end)
' "$out"
if [[ -n ${BENCH_OUT:-} ]]; then
  echo "raw results: $out" >&2
fi
exit "$failed"
