#!/usr/bin/env bash
# What a chatty task costs the others (issue 44): the lifecycle benchmark's throughput on
# the bench server (SQLite, synchronous=FULL, as run.sh runs it), alone and beside one task
# of the `chatter` tool printing EVENTS_RATE lines a second (10,000) into its event log,
# in alternating rounds on the same server; prints each round and the median ratio
# (beside / alone; the goal is ≥ 0.9, i.e. under 10 % lost), and the chatter's events.
#
#   bash benches/events.sh
#
# Environment: EVENTS_RATE (10000 lines a second), EVENTS_TASKS (10000 lifecycles per load
# run), EVENTS_CONCURRENCY (32), EVENTS_MODES ("poll modern"), EVENTS_ROUNDS (5),
# EVENTS_OUT (a file for the raw JSON lines).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
rate=${EVENTS_RATE:-10000}
tasks=${EVENTS_TASKS:-10000}
concurrency=${EVENTS_CONCURRENCY:-32}
modes=${EVENTS_MODES:-poll modern}
rounds=${EVENTS_ROUNDS:-5}

# shellcheck source=benches/lib.sh
source "$root/benches/lib.sh"
bench_init mcp-tasks-events
out=${EVENTS_OUT:-$work/results.jsonl}
: >"$out"
bench_build
bench_server=$target_dir/release/examples/bench_server
load=$target_dir/release/load

start ours "$bench_server" --listen 127.0.0.1:0 --store "$work/bench.sqlite3" --inline-wait-ms 0

# modern METHOD NAME PARAMS: one 2026-07-28 request with the tasks extension; its answer.
modern() {
  local body
  body=$(jq -cn --arg m "$1" --argjson p "$3" '{jsonrpc: "2.0", id: 1, method: $m, params: ($p + {_meta: {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {extensions: {"io.modelcontextprotocol/tasks": {}}},
    "io.modelcontextprotocol/clientInfo": {name: "events.sh", version: "0"}}})}')
  curl -s -H 'content-type: application/json' -H 'accept: application/json' -H 'mcp-protocol-version: 2026-07-28' \
    -H "mcp-method: $1" -H "mcp-name: $2" -d "$body" "$url"
}

# A chatter task for long enough to outlast a load run; its id.
start_chatter() {
  modern tools/call chatter "{\"name\":\"chatter\",\"arguments\":{\"lines_per_second\":$rate,\"seconds\":600}}" | jq -r .result.taskId
}

stop_chatter() {
  modern tasks/cancel "$1" "{\"taskId\":\"$1\"}" >/dev/null
}

declare -A ratios
for mode in $modes; do
  # A warm-up, not recorded.
  "$load" --url "$url" --tasks 2000 --concurrency "$concurrency" --mode "$mode" --json >/dev/null
  for round in $(seq 1 "$rounds"); do
    load_run "\"mode\":\"$mode\",\"round\":$round,\"beside\":\"nothing\"" --tasks "$tasks" --concurrency "$concurrency" --mode "$mode"
    alone=$(jq .per_second <<<"$report")
    id=$(start_chatter)
    sleep 1 # the chatter under way before the load starts
    load_run "\"mode\":\"$mode\",\"round\":$round,\"beside\":\"chatter\"" --tasks "$tasks" --concurrency "$concurrency" --mode "$mode"
    beside=$(jq .per_second <<<"$report")
    events=$(modern tasks/get "$id" "{\"taskId\":\"$id\"}" | jq -r '.result.statusMessage // ""')
    stop_chatter "$id"
    ratio=$(jq -n "$beside / $alone")
    ratios[$mode]+="$ratio "
    printf '%s round %s: alone %.0f/s, beside a chatter at %s lines/s %.0f/s: %.3f\n' "$mode" "$round" "$alone" "$rate" "$beside" "$ratio" >&2
  done
done
logged=$(sqlite3 "$work/bench.sqlite3" "SELECT count(*), coalesce(sum(json_array_length(payload, '\$.lines')), 0) FROM task_events WHERE type = 'dev.mcp-tasks.output'")
echo "== the chatters' output events kept in the store: $logged (events|lines; each task keeps at most its task_events)" >&2
for mode in $modes; do
  # shellcheck disable=SC2086
  median=$(printf '%s\n' ${ratios[$mode]} | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "$mode: median throughput beside a chatter / alone = $median (rounds: ${ratios[$mode]})"
done
[[ $failed == 0 ]]
