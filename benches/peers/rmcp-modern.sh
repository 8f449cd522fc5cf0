#!/usr/bin/env bash
# The Modern task lifecycle side by side, rmcp 3.11 against ours: one driver for both, our load
# harness in `--mode modern` (2026-07-28, stateless, the tasks extension declared on every
# request: `tools/call` must answer with a task, then `tasks/get` without pause until
# `completed`, the inline result checked).
#
# Builds (release) our bench server and load harness, and the rmcp peer (benches/peers/rmcp,
# its own Cargo project, `cargo build --locked`), copies the binaries to a temporary directory
# (a rebuild in the shared target dir during the run does not touch them), then for each round
# and each phase serves rmcp-bench-peer and our bench server (a fresh temporary SQLite store,
# `--sync full`, `--inline-wait-ms 0` so that every call of noop is a task at once), one after
# the other (which goes first alternates by round), a fresh process each time:
#   fresh     a fresh server for each concurrency, BENCH_TASKS lifecycles at C;
#   retained  a fresh server filled with BENCH_RETAINED finished tasks by BENCH_RETAINED
#             lifecycles of the same driver at BENCH_FILL_C, then BENCH_TASKS lifecycles at
#             each concurrency in turn on that server (so the later ones see the earlier
#             runs' tasks too); afterwards the fill's first task must still be there
#             (`tasks/get` → completed), else the run fails.
# Both servers keep finished tasks for BENCH_TTL_MS (3600000: ours by default; the peer gets
# `--ttl-ms`, as rmcp's default 300 s would evict them within the run).
# Prints a table of the medians over the rounds with the ratio ours / rmcp, the fill rates,
# and each server's RSS (just after it listens, after the fill, peak); logs the load average
# around every phase.
#
#   bash benches/peers/rmcp-modern.sh     # from anywhere; everything on 127.0.0.1
#
# Environment: BENCH_TASKS (2000), BENCH_CONCURRENCY ("1 8 32"), BENCH_ROUNDS (3),
# BENCH_PHASES ("fresh retained"), BENCH_RETAINED (40000), BENCH_FILL_C (32),
# BENCH_TTL_MS (3600000), BENCH_OUT (a file for the raw JSON lines; default: in the temporary
# directory), BENCH_REPORT (the raw JSON lines of an earlier run: only print its table; with
# the same BENCH_RETAINED). Exit status: non-zero if any lifecycle failed its check, a server did not start,
# or a retained task was gone.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
tasks=${BENCH_TASKS:-2000}
concurrency=${BENCH_CONCURRENCY:-1 8 32}
rounds=${BENCH_ROUNDS:-3}
phases=${BENCH_PHASES:-fresh retained}
retained=${BENCH_RETAINED:-40000}
fill_c=${BENCH_FILL_C:-32}
ttl_ms=${BENCH_TTL_MS:-3600000}

# shellcheck source=benches/lib.sh
source "$root/benches/lib.sh"
bench_init mcp-tasks-rmcp-modern
out=${BENCH_OUT:-$work/results.jsonl}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
rss_field() { awk -v f="$1" '$1 == f {print $2}' "/proc/$server_pid/status"; }

# serve NAME: a fresh server of that name (a fresh store for ours).
serve() {
  case $1 in
    rmcp) start rmcp "$work/bin/rmcp-bench-peer" --listen 127.0.0.1:0 --ttl-ms "$ttl_ms" ;;
    ours)
      rm -f "$work/bench.sqlite3"*
      start ours "$work/bin/bench_server" --listen 127.0.0.1:0 --store "$work/bench.sqlite3" \
        --sync full --inline-wait-ms 0
      ;;
  esac
}

# drive NAME ROUND PHASE KIND N C: one run of the driver; its report as a JSON line in $out
# (KIND is "fill" or "run"); sets report.
drive() {
  local name=$1 round=$2 phase=$3 kind=$4 n=$5 c=$6
  if ! load_run "\"server\":\"$name\",\"round\":$round,\"phase\":\"$phase\",\"kind\":\"$kind\"" \
    --mode modern --tool noop --tasks "$n" --concurrency "$c"; then
    report='{}'
    return
  fi
  echo "$report" | jq -r --arg s "$name" --arg k "$kind" \
    '"   \($s) \($k) c=\(.concurrency) n=\(.tasks): \(.per_second|floor) tasks/s, e2e p50 \(.end_to_end.p50_us/1000) ms p99 \(.end_to_end.p99_us/1000) ms, \(.gets_per_task) gets/task, \(.failures) failed\(if .first_failure then " (first: \(.first_failure))" else "" end)"' >&2
}

# task_status ID: the status `tasks/get` answers for task ID on the server started last.
task_status() {
  local id=$1 body
  body=$(jq -cn --arg id "$id" '{jsonrpc: "2.0", id: 1, method: "tasks/get", params: {taskId: $id,
    _meta: {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": {name: "rmcp-modern.sh", version: "1"},
      "io.modelcontextprotocol/clientCapabilities": {extensions: {"io.modelcontextprotocol/tasks": {}}}}}}')
  curl -s -X POST "$url" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \
    -H 'mcp-method: tasks/get' -H "mcp-name: $id" --data "$body" |
    sed -n -e 's/^data: *//' -e '/^{/p' | jq -r 'select(.id == 1) | .result.status // "error: \(.error.message)"'
}

# phase NAME ROUND PHASE: serves NAME fresh (per concurrency for "fresh"; once, filled, for
# "retained"), runs the driver at every concurrency, records RSS.
phase() {
  local name=$1 round=$2 phase=$3 c idle filled="null" first="" status
  echo "== round $round, $phase, $name; load average $(loadavg)" >&2
  if [[ $phase == fresh ]]; then
    for c in $concurrency; do
      serve "$name"
      idle=$(rss_field VmRSS:)
      drive "$name" "$round" "$phase" run "$tasks" "$c"
      echo "{\"server\":\"$name\",\"round\":$round,\"phase\":\"$phase\",\"concurrency\":$c,\"idle_rss_kib\":$idle,\"peak_rss_kib\":$(rss_field VmHWM:)}" >>"$out"
      stop_server
    done
    return
  fi
  serve "$name"
  idle=$(rss_field VmRSS:)
  drive "$name" "$round" "$phase" fill "$retained" "$fill_c"
  first=$(echo "$report" | jq -r '.first_task_id // empty')
  filled=$(rss_field VmRSS:)
  echo "   $name holds the fill's tasks (RSS $filled KiB); load average $(loadavg)" >&2
  for c in $concurrency; do
    drive "$name" "$round" "$phase" run "$tasks" "$c"
  done
  status=$([[ -n $first ]] && task_status "$first" || echo "no task id")
  echo "   $name: the fill's first task ($first) is $status" >&2
  [[ $status == completed ]] || failed=1
  echo "{\"server\":\"$name\",\"round\":$round,\"phase\":\"$phase\",\"idle_rss_kib\":$idle,\"filled_rss_kib\":$filled,\"peak_rss_kib\":$(rss_field VmHWM:),\"first_task\":\"$status\"}" >>"$out"
  stop_server
}

# measure_all: builds, runs every round and phase, and writes the raw results to $out.
measure_all() {
  : >"$out"
  bench_build
  (cd benches/peers/rmcp && CARGO_TARGET_DIR="$root/benches/peers/rmcp/target" cargo build --release --locked >&2)
  mkdir -p "$work/bin"
  cp "$target_dir/release/examples/bench_server" "$target_dir/release/load" \
    benches/peers/rmcp/target/release/rmcp-bench-peer "$work/bin/"
  load=$work/bin/load

  echo "== $(nproc) cores; uptime before: $(uptime)" >&2
  for round in $(seq 1 "$rounds"); do
    order="rmcp ours"
    ((round % 2 == 0)) && order="ours rmcp"
    for p in $phases; do
      for name in $order; do
        phase "$name" "$round" "$p"
      done
    done
  done
  echo "== uptime after: $(uptime)" >&2
}

if [[ -n ${BENCH_REPORT:-} ]]; then
  out=$BENCH_REPORT
else
  measure_all
fi

# The table: medians over the rounds (per phase, server and concurrency), ratio ours / rmcp.
jq -rs --argjson retained "$retained" '
  def median: sort | if length == 0 then null else .[(length - 1) / 2 | floor] end;
  def ms: if . == null then "-" else (. / 10 | round / 100 | tostring) end;
  def g: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
  def mib: if . == null then "-" else (. / 1024 * 10 | round / 10 | tostring) + " MiB" end;
  def ratio($a; $b): if $a == null or $b == null or $b == 0 then "-" else (($a / $b) * 100 | round / 100 | tostring) + "x" end;
  (map(select(.run.concurrency)) | map(.run + {server, phase, kind, round})) as $runs
  | def med($p; $k; $s; $c; f): $runs | map(select(.phase == $p and .kind == $k and .server == $s and .concurrency == $c) | f) | median;
  def one($p; $k; $s; $c; $r): $runs | map(select(.phase == $p and .kind == $k and .server == $s and .concurrency == $c and .round == $r) | .per_second) | .[0];
  def paired($p; $c): [$runs | map(.round) | unique | .[] as $r | ratio(one($p; "run"; "ours"; $c; $r); one($p; "run"; "rmcp"; $c; $r))] | join(" / ");
  def rss($p; $s; f): map(select(.phase == $p and .server == $s and (f != null)) | f) | median;
  "| phase | c | rmcp 3.11 tasks/s | ours tasks/s | ratio ours / rmcp | rmcp e2e p50 / p99 ms | ours e2e p50 / p99 ms | gets per task rmcp / ours | ratio in each round |",
  "|---|---|---|---|---|---|---|---|---|",
  ((["fresh", "retained"] - (["fresh", "retained"] - ($runs | map(.phase))))[] as $p
   | ($runs | map(select(.phase == $p and .kind == "run") | .concurrency) | unique)[] as $c
   | "| \(if $p == "retained" then "\($retained) retained" else $p end) | \($c) | \(med($p; "run"; "rmcp"; $c; .per_second) | round) | \(med($p; "run"; "ours"; $c; .per_second) | round) | \(ratio(med($p; "run"; "ours"; $c; .per_second); med($p; "run"; "rmcp"; $c; .per_second))) | \(med($p; "run"; "rmcp"; $c; .end_to_end.p50_us) | ms) / \(med($p; "run"; "rmcp"; $c; .end_to_end.p99_us) | ms) | \(med($p; "run"; "ours"; $c; .end_to_end.p50_us) | ms) / \(med($p; "run"; "ours"; $c; .end_to_end.p99_us) | ms) | \(med($p; "run"; "rmcp"; $c; .gets_per_task) | g) / \(med($p; "run"; "ours"; $c; .gets_per_task) | g) | \(paired($p; $c)) |"),
  "",
  (($runs | map(select(.kind == "fill")) | .[0].concurrency) as $fc
   | if $fc == null then empty else
     "| fill (\($retained) lifecycles, c=\($fc)) | rmcp 3.11 | ours | ratio ours / rmcp |",
     "|---|---|---|---|",
     "| tasks/s (median) | \(med("retained"; "fill"; "rmcp"; $fc; .per_second) | round) | \(med("retained"; "fill"; "ours"; $fc; .per_second) | round) | \(ratio(med("retained"; "fill"; "ours"; $fc; .per_second); med("retained"; "fill"; "rmcp"; $fc; .per_second))) |",
     "" end),
  "| server | RSS when listening (fresh) | peak RSS (fresh runs) | RSS after the fill | peak RSS (retained) | failed lifecycles | retained first task |",
  "|---|---|---|---|---|---|---|",
  (("rmcp", "ours") as $s
   | "| \($s) | \(rss("fresh"; $s; .idle_rss_kib) | mib) | \(rss("fresh"; $s; .peak_rss_kib) | mib) | \(rss("retained"; $s; .filled_rss_kib) | mib) | \(rss("retained"; $s; .peak_rss_kib) | mib) | \($runs | map(select(.server == $s) | .failures) | add) | \(map(select(.server == $s and .first_task) | .first_task) | unique | join(", ")) |")
' "$out"
if [[ -n ${BENCH_OUT:-} ]]; then
  echo "raw results: $out" >&2
fi
exit "$failed"
