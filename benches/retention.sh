#!/usr/bin/env bash
# The retention benchmark of issue 7 (item 4): a store holding 1,000,000 finished tasks
# against an empty one. For each store: the store-level latencies (the `probe` example:
# open, get, list pages, count, unfinished, expired, purge), then our bench server started
# on it: restart to serving (launch until the first `initialize` answers), idle RSS,
# `tasks/get` and `tasks/list` latency over keep-alive HTTP (curl), the load harness's
# lifecycle throughput at c=8 (poll and block), and peak RSS. Prints both with the ratio
# seeded / empty. Everything on 127.0.0.1.
#
#   bash benches/retention.sh
#
# Environment: RETENTION_COUNT (1000000 tasks to seed), RETENTION_STORE (a store seeded
# before, e.g. by an earlier run with RETENTION_KEEP=1, used as is instead of seeding; the
# runs add their tasks to it), RETENTION_KEEP (1 keeps the temporary directory and says
# where), RETENTION_ROUNDS (200 requests per latency), RETENTION_TASKS (2000 lifecycles per
# load run), RETENTION_CONCURRENCY (8), RETENTION_LOAD_ROUNDS (3 rounds of load runs that
# alternate between the two stores after the measurements above, a fresh server each time:
# the throughput rows give their medians, since one run of each is within the machine's
# noise), RETENTION_OUT (a file for the raw JSON lines).
# The seeded tasks belong to `anonymous`, the principal of unauthenticated HTTP requests,
# which the load harness's tasks also get: every creation is counted against a million.
# Exit status: non-zero if a server did not start or a load run had failures.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
count=${RETENTION_COUNT:-1000000}
rounds=${RETENTION_ROUNDS:-200}
tasks=${RETENTION_TASKS:-2000}
concurrency=${RETENTION_CONCURRENCY:-8}
load_rounds=${RETENTION_LOAD_ROUNDS:-3}

keep_work=${RETENTION_KEEP:-0}
# shellcheck source=benches/lib.sh
source "$root/benches/lib.sh"
bench_init mcp-tasks-retention
out=${RETENTION_OUT:-$work/results.jsonl}
: >"$out"

bench_build
cargo build --release -p mcp-tasks-sqlite --example seed --example probe >&2
bench_server=$target_dir/release/examples/bench_server
load=$target_dir/release/load
seed=$target_dir/release/examples/seed
probe=$target_dir/release/examples/probe


# now_ns: a monotonic-enough wall clock in nanoseconds.
now_ns() { date +%s%N; }

# post URL SESSION BODY: one JSON-RPC message; prints the response headers and body.
post() {
  local headers=(-H 'content-type: application/json' -H 'accept: application/json, text/event-stream')
  [[ -n $2 ]] && headers+=(-H "mcp-session-id: $2" -H 'mcp-protocol-version: 2025-11-25')
  curl -s -i "${headers[@]}" -d "$3" "$1"
}

initialize='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"retention.sh","version":"0"}}}'

# latency NAME URL SESSION BODY: ROUNDS requests with BODY on one keep-alive connection
# (one curl with a config of ROUNDS transfers); prints {"p50_us","p99_us","max_us"}.
latency() {
  local cfg=$work/$1.curl i
  : >"$cfg"
  for ((i = 0; i < rounds; i++)); do
    ((i > 0)) && echo next >>"$cfg"
    cat >>"$cfg" <<EOF
url = "$2"
header = "content-type: application/json"
header = "accept: application/json, text/event-stream"
header = "mcp-session-id: $3"
header = "mcp-protocol-version: 2025-11-25"
data = "$(printf '%s' "$4" | sed 's/"/\\"/g')"
output = "/dev/null"
write-out = "%{time_total} %{http_code}\n"
EOF
  done
  curl -s -K "$cfg" >"$work/$1.times"
  if grep -qv ' 200$' "$work/$1.times"; then
    echo "$1: a request did not answer 200" >&2
    failed=1
  fi
  awk '{print int($1 * 1000000)}' "$work/$1.times" | sort -n | awk '
    { v[NR] = $1 }
    END {
      p50 = v[int((NR - 1) * 0.50 + 0.5) + 1]; p99 = v[int((NR - 1) * 0.99 + 0.5) + 1]
      printf "{\"p50_us\":%d,\"p99_us\":%d,\"max_us\":%d}", p50, p99, v[NR]
    }'
}

# load_runs NAME [FIELDS]: the load harness's poll and block runs against the server started
# last; each report goes to $out as {"store": NAME FIELDS, "run": report} (FIELDS:
# `,"round":N` for the alternating rounds).
load_runs() {
  local name=$1 fields=${2:-} mode
  for mode in poll block; do
    load_run "\"store\":\"$name\"$fields" --tasks "$tasks" --concurrency "$concurrency" --mode "$mode" --tool noop || continue
    echo "$report" | jq -r --arg s "$name" \
      '"== \($s): \(.mode) c=\(.concurrency): \(.per_second | floor)/s, e2e p50 \(.end_to_end.p50_us / 1000) ms p99 \(.end_to_end.p99_us / 1000) ms, \(.failures) failed"' >&2
  done
}

# measure NAME STORE: everything for one store; appends JSON lines to $out.
measure() {
  local name=$1 store=$2
  echo "== $name: store-level probe" >&2
  local probe_json
  probe_json=$("$probe" --store "$store" --rounds "$rounds")
  echo "{\"store\":\"$name\",\"probe\":$probe_json}" >>"$out"

  echo "== $name: restart to serving" >&2
  local port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  local url=http://127.0.0.1:$port/mcp
  local start end
  start=$(now_ns)
  "$bench_server" --listen "127.0.0.1:$port" --store "$store" 2>"$work/$name.err" &
  server_pid=$!
  local answer=""
  for _ in $(seq 1 20000); do
    answer=$(post "$url" "" "$initialize" 2>/dev/null) && [[ $answer == *'"result"'* ]] && break
    answer=""
    kill -0 "$server_pid" 2>/dev/null || break
  done
  end=$(now_ns)
  if [[ -z $answer ]]; then
    echo "$name: the server did not start:" >&2
    cat "$work/$name.err" >&2
    exit 1
  fi
  local serving_ms
  serving_ms=$(awk -v ns=$((end - start)) 'BEGIN { printf "%.1f", ns / 1000000 }')
  sleep 1
  local idle
  idle=$(awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status")
  echo "== $name: serving after $serving_ms ms, idle RSS $idle KiB" >&2

  # A session of our own: one task created in it (tasks/list over unauthenticated HTTP shows
  # a session its own tasks), and a task to get: one of the seeded million where there are.
  local session
  session=$(post "$url" "" "$initialize" | awk -F': ' 'tolower($1) == "mcp-session-id" {print $2}' | tr -d '\r')
  post "$url" "$session" '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
  local created
  created=$(post "$url" "$session" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"noop","arguments":{},"task":{"ttl":600000}}}' |
    grep -o '"taskId":"[0-9a-f]*"' | head -n 1 | cut -d'"' -f4)
  local target
  target=$(echo "$probe_json" | jq -r .sample_id)
  [[ $target == null || -z $target ]] && target=$created
  sleep 0.2
  local get list
  get=$(latency "$name-get" "$url" "$session" "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"$target\"}}")
  list=$(latency "$name-list" "$url" "$session" '{"jsonrpc":"2.0","id":4,"method":"tasks/list","params":{}}')
  echo "{\"store\":\"$name\",\"serving_ms\":$serving_ms,\"idle_rss_kib\":$idle,\"tasks_get\":$get,\"tasks_list\":$list}" >>"$out"
  echo "== $name: tasks/get $get, tasks/list $list" >&2

  load_runs "$name"
  local peak
  peak=$(awk '/^VmHWM:/ {print $2}' "/proc/$server_pid/status")
  echo "{\"store\":\"$name\",\"peak_rss_kib\":$peak}" >>"$out"
  stop_server
}

seeded=${RETENTION_STORE:-}
if [[ -z $seeded ]]; then
  seeded=$work/seeded.sqlite3
  echo "== seeding $count finished tasks into $seeded" >&2
  seed_start=$(now_ns)
  "$seed" --store "$seeded" --count "$count" >&2
  seed_end=$(now_ns)
  echo "{\"seed_s\":$(awk -v ns=$((seed_end - seed_start)) 'BEGIN { printf "%.1f", ns / 1e9 }'),\"count\":$count}" >>"$out"
fi
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
measure empty "$work/empty.sqlite3"
measure seeded "$seeded"

# alternate: RETENTION_LOAD_ROUNDS rounds of poll and block runs, empty and seeded store in
# turn (which goes first alternates by round), a fresh server on each.
for ((round = 1; round <= load_rounds; round++)); do
  order="empty seeded"
  ((round % 2 == 0)) && order="seeded empty"
  for name in $order; do
    store=$work/empty.sqlite3
    [[ $name == seeded ]] && store=$seeded
    start "$name-alt" "$bench_server" --listen 127.0.0.1:0 --store "$store"
    echo "== round $round of the alternating load runs, $name" >&2
    load_runs "$name" ",\"round\":$round"
    stop_server
  done
done
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

jq -rs '
  def ms: if . == null then "-" else (. / 10 | round / 100 | tostring) end;
  def ratio($a; $b): if $a == null or $b == null or $b == 0 then "-" else (($a / $b) * 100 | round / 100 | tostring) + "x" end;
  def mib: if . == null then "-" else (. / 1024 * 10 | round / 10 | tostring) end;
  def one($s): map(select(.store == $s and (.round | not))) | add;
  def median: sort | if length == 0 then null else .[(length - 1) / 2 | floor] end;
  def alt($s; $m): map(select(.store == $s and .round and .run.mode == $m) | .run.per_second) | median;
  def rounds($m): [range(1; 1 + (map(.round // 0) | max))] as $rs
    | [$rs[] as $r | (map(select(.round == $r and .run.mode == $m)) | map({(.store): .run.per_second}) | add // {})
      | if .empty and .seeded then ((.seeded / .empty) * 100 | round / 100 | tostring) + "x" else "-" end] | join(" / ");
  (one("empty")) as $e | (one("seeded")) as $s
  | (map(select(.store == "empty" and .run and (.round | not))) | map({(.run.mode): .run}) | add // {}) as $er
  | (map(select(.store == "seeded" and .run and (.round | not))) | map({(.run.mode): .run}) | add // {}) as $sr
  | def row($what; $a; $b; f): "| \($what) | \($a | f) | \($b | f) | \(ratio($b; $a)) |";
    "| measure | empty store | \($s.probe.tasks_of_principal // "seeded") tasks retained | seeded / empty |",
    "|---|---|---|---|",
    row("restart to serving, ms"; $e.serving_ms; $s.serving_ms; tostring),
    row("store open (probe), ms"; $e.probe.open_us; $s.probe.open_us; ms),
    row("idle RSS, MiB"; $e.idle_rss_kib; $s.idle_rss_kib; mib),
    row("peak RSS after the load runs, MiB"; $e.peak_rss_kib; $s.peak_rss_kib; mib),
    row("tasks/get p50, ms (HTTP)"; $e.tasks_get.p50_us; $s.tasks_get.p50_us; ms),
    row("tasks/get p99, ms (HTTP)"; $e.tasks_get.p99_us; $s.tasks_get.p99_us; ms),
    row("tasks/list p50, ms (HTTP, the session'"'"'s own)"; $e.tasks_list.p50_us; $s.tasks_list.p50_us; ms),
    row("tasks/list p99, ms (HTTP)"; $e.tasks_list.p99_us; $s.tasks_list.p99_us; ms),
    row("store get p50, ms"; $e.probe.get.p50_us; $s.probe.get.p50_us; ms),
    row("store get p99, ms"; $e.probe.get.p99_us; $s.probe.get.p99_us; ms),
    row("store list, first page of 101, p50 ms"; $e.probe.list_first_page.p50_us; $s.probe.list_first_page.p50_us; ms),
    row("store list, page from the middle, p50 ms"; $e.probe.list_middle_page.p50_us; $s.probe.list_middle_page.p50_us; ms),
    row("store count (every creation), p50 ms"; $e.probe.count.p50_us; $s.probe.count.p50_us; ms),
    row("store unfinished (recovery), p50 ms"; $e.probe.unfinished.p50_us; $s.probe.unfinished.p50_us; ms),
    row("store expired + purge (sweeper), p50 ms"; ($e.probe.expired.p50_us + $e.probe.purge.p50_us); ($s.probe.expired.p50_us + $s.probe.purge.p50_us); ms),
    row("lifecycles/s, poll, c=\($er.poll.concurrency)"; $er.poll.per_second; $sr.poll.per_second; floor),
    row("lifecycles/s, block, c=\($er.block.concurrency)"; $er.block.per_second; $sr.block.per_second; floor),
    row("lifecycle e2e p99 ms, poll"; $er.poll.end_to_end.p99_us; $sr.poll.end_to_end.p99_us; ms),
    row("lifecycle e2e p99 ms, block"; $er.block.end_to_end.p99_us; $sr.block.end_to_end.p99_us; ms),
    (if any(.[]; .round) then
      row("lifecycles/s, poll, median of the alternating rounds (\(rounds("poll")))"; alt("empty"; "poll"); alt("seeded"; "poll"); floor),
      row("lifecycles/s, block, median of the alternating rounds (\(rounds("block")))"; alt("empty"; "block"); alt("seeded"; "block"); floor)
    else empty end)
' "$out"
if [[ -n ${RETENTION_OUT:-} ]]; then
  echo "raw results: $out" >&2
fi
exit "$failed"
