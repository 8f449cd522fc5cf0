#!/usr/bin/env bash
# What each part of the PostgreSQL store's lifecycle costs the database, without the servers:
# pgbench (24 clients, 2 threads, prepared statements) runs the store's creation and
# completion statements (`crates/postgres/src/sql.rs`, written out again here with literal
# values) with some of their parts left in, on the store's own schema (made by a bench
# server's migrations in a fresh database of the server at BENCH_DATABASE_URL), and prints
# each variant's lifecycles per second.
#
#   bash benches/pg-parts.sh                        # every variant below, 10 s each
#   BENCH_SECONDS=90 BENCH_PROGRESS=10 bash benches/pg-parts.sh scan all
#
# A variant is `none` or parts joined by `+`:
# - `history`: the history rows of the creation and of the ending (`recorded`);
# - `counts`: the owner's retention count (`counted`, and its sum read by the creation);
# - `slots`: the owner's running slot (`slot`, `taken`, `freed`: `max_running_per_principal`);
# - `running`: the running count of migration 0016 (`ran`, `unran`, the sum of `running_counts`);
# - `scan`: instead, the count of unfinished tasks through `tasks_unfinished` every creation
#   read before migration 0016 (its cost grows with the tasks finished since the last vacuum:
#   run it for 90 s with BENCH_PROGRESS=10 to see);
# - `all`: history+counts+slots+running, the statements the store sends today;
# - `batch`: with the parts beside it, BENCH_BATCH (8) creations in one statement, then their
#   completions in one (group commit: what one round trip for many writes would save);
# - `tx`: instead, BENCH_BATCH creations, each its own statement, in one transaction sent as
#   one pipeline, then their completions likewise (group commit by transaction).
# `none` is the row and its indexes alone (an INSERT and an UPDATE through the same CTEs).
# Environment: BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres), BENCH_SECONDS
# (10), BENCH_PROGRESS (seconds between pgbench's progress lines; none by default).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
server=${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
seconds=${BENCH_SECONDS:-10}
variants=("$@")
[[ ${#variants[@]} -gt 0 ]] || variants=(none history counts slots running scan all)

cargo build --release --locked -q -p mcp-tasks-bench --example bench_server
target_dir=$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)
work=$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-pg-parts.XXXXXX")
trap 'psql -qAtX "$server" -c "DROP DATABASE IF EXISTS bench_parts" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
db_url=${server%/*}/bench_parts

# script VARIANT: the pgbench script of VARIANT on stdout.
script() {
  python3 - "$1" "${BENCH_BATCH:-8}" <<'PY'
import sys
parts = set(sys.argv[1].split("+"))
if "all" in parts:
    parts |= {"history", "counts", "slots", "running"}
# `batch`: B creations in one statement, then their B completions in one (group commit).
B = int(sys.argv[2]) if "batch" in parts else 1
# `tx`: B creations, each its own statement, in one transaction sent as one pipeline, then
# their B completions likewise (group commit by transaction).
T = int(sys.argv[2]) if "tx" in parts else 1
NOW = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
COLS = ("id, owner, tool, arguments, state, status_message, created_at, updated_at, ttl_ms, poll_interval_ms, "
        "attempt, version, error_result_fails, input_kinds, idempotency_key, traceparent, tracestate")
NEW = ("id, owner, tool, arguments, status, state, status_message, created_at, updated_at, ttl_ms, expires_at, "
       "poll_interval_ms, attempt, version, error_result_fails, input_kinds, idempotency_key, traceparent, tracestate, "
       "claim_node, lease_until, era, client_name, client_version, changed_at")
ID = "'t' || :client_id || '-' || :n || '-' || k"
BATCH = f"batch AS (SELECT k, {ID} AS id FROM generate_series(1, {B}) AS k)"
VALUES = (f"batch.id, 'alice'::text, 'noop', '{{}}'::json, 'working', '\"working\"'::json, NULL, {NOW}, {NOW}, 3600000, "
          f"{NOW} + 3600000, 250, 1, 1, false, '[]'::json, NULL, NULL, NULL, 'node', {NOW} + 30000, '2026-07-28', NULL, NULL, {NOW}")
UNFINISHED = "status IN ('working', 'input_required')"
TERMINAL = "status IN ('completed', 'failed', 'cancelled')"
create = [BATCH, f"calls AS (SELECT count(*) AS n, count(*) FILTER (WHERE owner = 'alice') AS mine FROM running_places "
          f"WHERE lease_until > {NOW} AND NOT is_task)"]
if "slots" in parts:
    create.append("locked AS (SELECT owner, slot FROM owner_slots WHERE owner = 'alice' AND task_id IS NULL "
                  f"AND slot < 1024 - (SELECT mine FROM calls) ORDER BY slot LIMIT {B} FOR UPDATE SKIP LOCKED)")
    create.append("slot AS (SELECT owner, slot, row_number() OVER (ORDER BY slot) AS k FROM locked)")
retained = "(SELECT coalesce(sum(tasks), 0)::bigint FROM task_counts WHERE owner = 'alice')" if "counts" in parts else "0::bigint"
running = "(SELECT n FROM calls)"
if "running" in parts:
    running = "(SELECT sum(running) FROM running_counts)::bigint + (SELECT n FROM calls)"
elif "scan" in parts:
    running = f"(SELECT count(*) FROM tasks WHERE {UNFINISHED}) + (SELECT n FROM calls)"
create.append(f"decided AS (SELECT {retained} AS retained, {running} AS running)")
source = "batch JOIN slot USING (k)" if "slots" in parts else "batch"
create.append(f"inserted AS (INSERT INTO tasks ({NEW}) SELECT {VALUES} FROM {source}, decided WHERE retained < 10000000 "
              "AND running < 1024 ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL "
              "DO NOTHING RETURNING id, owner, version, updated_at, status, status_message)")
if "slots" in parts:
    create.append("taken AS (UPDATE owner_slots SET task_id = inserted.id FROM inserted JOIN batch USING (id) JOIN slot USING (k) "
                  "WHERE owner_slots.owner = slot.owner AND owner_slots.slot = slot.slot)")
if "counts" in parts:
    create.append("counted AS (INSERT INTO task_counts AS counts (owner, shard, tasks) SELECT owner, "
                  "(pg_backend_pid() % 32), count(*) FROM inserted GROUP BY owner "
                  "ON CONFLICT (owner, shard) DO UPDATE SET tasks = counts.tasks + EXCLUDED.tasks)")
if "running" in parts:
    create.append("ran AS (UPDATE running_counts SET running = running + (SELECT count(*) FROM inserted WHERE "
                  f"{UNFINISHED}) WHERE shard = (pg_backend_pid() % 64) AND EXISTS (SELECT 1 FROM inserted WHERE {UNFINISHED}))")
if "history" in parts:
    create.append("recorded AS (INSERT INTO task_history (task_id, version, at, status, message) SELECT id, version, "
                  "updated_at, status, status_message FROM inserted WHERE true ON CONFLICT (task_id, version) DO NOTHING)")
complete = [BATCH, "before AS (SELECT id, status AS was, status_message AS was_message FROM tasks WHERE id IN (SELECT id FROM batch))",
            "written AS (UPDATE tasks SET state = '{\"completed\":{\"result\":{\"content\":[]}}}', status = 'completed', "
            f"status_message = NULL, updated_at = {NOW}, attempt = 1, version = version + 1, changed_at = {NOW} "
            f"FROM batch WHERE tasks.id = batch.id AND version = 1 RETURNING tasks.id, owner, tool, arguments, state, "
            "status_message, created_at, updated_at, ttl_ms, poll_interval_ms, attempt, version, error_result_fails, "
            "input_kinds, idempotency_key, traceparent, tracestate, status)"]
if "history" in parts:
    complete.append("recorded AS (INSERT INTO task_history (task_id, version, at, status, message) SELECT id, version, "
                    "updated_at, status, status_message FROM written JOIN before USING (id) WHERE status IS DISTINCT FROM was "
                    "OR status_message IS DISTINCT FROM was_message ON CONFLICT (task_id, version) DO NOTHING)")
if "slots" in parts:
    complete.append(f"freed AS (UPDATE owner_slots SET task_id = NULL FROM written WHERE written.{TERMINAL} "
                    "AND owner_slots.owner = written.owner AND owner_slots.task_id = written.id)")
if "running" in parts:
    complete.append("unran AS (UPDATE running_counts SET running = running - (SELECT count(*) FROM written JOIN before "
                    f"USING (id) WHERE was IN ('working', 'input_required') AND written.{TERMINAL}) "
                    f"WHERE shard = (pg_backend_pid() % 64))")
print("\\set n random(1, 1000000000000)")
creating = "WITH " + ", ".join(create) + " SELECT (SELECT count(*) FROM inserted), retained, running FROM decided;"
completing = "WITH " + ", ".join(complete) + f" SELECT {COLS} FROM written;"
if T == 1:
    print(creating)
    print(completing)
else:
    for statement in (creating, completing):
        print("\\startpipeline")
        print("BEGIN;")
        for t in range(T):
            print(statement.replace("|| k AS id", f"|| (k + {t}) AS id"))
        print("COMMIT;")
        print("\\endpipeline")
PY
}

for variant in "${variants[@]}"; do
  script "$variant" >"$work/$variant.sql"
  psql -qAtX "$server" -c "DROP DATABASE IF EXISTS bench_parts" -c "CREATE DATABASE bench_parts" >/dev/null
  # The schema, as a bench server's migrations make it; then the owner's first 48 slots, as
  # the store makes them when needed (16 at a time), enough for every client's batch.
  "$target_dir/release/examples/bench_server" --listen 127.0.0.1:0 --store "$db_url" >"$work/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do grep -q "http://" "$work/server.log" && break; sleep 0.1; done
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  psql -qAtX "$db_url" -c "INSERT INTO owner_slots (owner, slot) SELECT 'alice', slot FROM generate_series(0, 48 * ${BENCH_BATCH:-8} - 1) AS slot" >/dev/null
  progress=()
  [[ -n ${BENCH_PROGRESS:-} ]] && progress=(-P "$BENCH_PROGRESS")
  report=$(pgbench -n "${progress[@]}" -M prepared -c 24 -j 2 -T "$seconds" -f "$work/$variant.sql" "$db_url" 2>&1) || true
  grep '^progress' <<<"$report" | sed "s/^/$variant: /" >&2 || true
  tps=$(awk '/^tps = / {printf "%d", $3; exit}' <<<"$report")
  if [[ -z $tps ]]; then
    echo "$variant: pgbench gave no rate: $(tail -n 3 <<<"$report")" >&2
    exit 1
  fi
  [[ $variant == *batch* || $variant == *tx* ]] && tps=$((tps * ${BENCH_BATCH:-8}))
  echo "$variant: $tps lifecycles/s ($seconds s, c = 24, load average $(cut -d' ' -f1 /proc/loadavg))"
done
