#!/usr/bin/env bash
# The lifecycle benchmark in one invocation: builds (release), serves our bench server on a
# fresh temporary SQLite store (`--sync full`: every task and every completion fsynced before
# anyone is told), runs the load harness (2025-11-25 modes poll, block and plain, and the
# 2026-07-28 task lifecycle `modern`, at each concurrency, then a blocking sleep run for the
# delivery lag: as the client sees it, commit included, and as our server times it from the
# commit's return, scraped from its /metrics), records idle and peak RSS and the server's CPU
# per call, stops it; does the same against the TypeScript SDK 1.32.2 peer
# (benches/peers/ts_task_server.mjs on Node 22; 2025-11-25 modes) and the rmcp 3.11 peer
# (benches/peers/rmcp; 2026-07-28 `modern` and `plain`), one after the other; prints all and
# the ratios ours / peer.
#
#   bash benches/run.sh                      # from anywhere; everything on 127.0.0.1
#
# Environment: BENCH_TASKS (2000), BENCH_TASKS_MANY (10000: the lifecycles of each run at
# c >= 32, when more than BENCH_TASKS), BENCH_WARM (1000: lifecycles of each mode at c = 32 that
# warm each server up before its measured runs, not recorded; 0: none),
# BENCH_CONCURRENCY ("1 8 32 128"), BENCH_MODES
# ("poll block plain modern"), BENCH_SLEEP_MS (20), BENCH_SLEEP_TASKS (500) and BENCH_SLEEP_C (8)
# for the lag run, BENCH_SYNC (full; "normal" measures our server without an fsync per
# commit, for comparison only), BENCH_EARLY (on: `noop` is declared as work with no effect
# outside its result, so it starts while its task's creation commits and a lifecycle is one
# commit; "off" measures the path of a tool without that declaration, as every tool of
# `mcp-tasks serve` is), BENCH_PEER (1; 0 skips the TS peer), BENCH_RMCP (1; 0 skips the
# rmcp peer, which is built on first use: its own Cargo project), BENCH_NODE (the Node 22 binary),
# BENCH_OUT (a file for the raw JSON lines; default: in the temporary directory).
# Exit status: non-zero if any call failed its check or a server did not start.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
tasks=${BENCH_TASKS:-2000}
tasks_many=${BENCH_TASKS_MANY:-10000}
warm=${BENCH_WARM:-1000}
concurrency=${BENCH_CONCURRENCY:-1 8 32 128}
modes=${BENCH_MODES:-poll block plain modern}
sleep_ms=${BENCH_SLEEP_MS:-20}
sleep_tasks=${BENCH_SLEEP_TASKS:-500}
sleep_c=${BENCH_SLEEP_C:-8}
node=${BENCH_NODE:-$root/interop/.peers/npm-main/node_modules/node/bin/node}

# shellcheck source=benches/lib.sh
source "$root/benches/lib.sh"
bench_init mcp-tasks-bench
out=${BENCH_OUT:-$work/results.jsonl}
: >"$out"

bench_build
# Copied out of the shared target dir, so that a rebuild during the run does not touch them.
cp "$target_dir/release/examples/bench_server" "$target_dir/release/load" "$work/"
bench_server=$work/bench_server
load=$work/load
rmcp_peer=""
if [[ ${BENCH_RMCP:-1} != 0 ]]; then
  echo "== building the rmcp 3.11 peer (release)" >&2
  (cd benches/peers/rmcp && CARGO_TARGET_DIR="$root/benches/peers/rmcp/target" cargo build --release --locked >&2)
  cp "$root/benches/peers/rmcp/target/release/rmcp-bench-peer" "$work/"
  rmcp_peer=$work/rmcp-bench-peer
fi


# start_logged NAME ARGV...: start (benches/lib.sh), then says where it serves.
start_logged() {
  start "$@" || return 1
  echo "== $1 serving $url (pid $server_pid)" >&2
}

# measure NAME MODES: idle RSS, the runs of MODES, peak RSS, for the server started last.
measure() {
  local name=$1 served=$2
  sleep 1
  local idle
  idle=$(awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status")
  echo "{\"server\":\"$name\",\"idle_rss_kib\":$idle}" >>"$out"
  echo "== $name idle RSS $idle KiB; load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  local c mode json status n
  # A warm-up of every mode, not recorded (the TS peer's JIT, everyone's caches), after the
  # idle RSS: measured runs then meet each server as it serves in a steady state.
  if ((warm > 0)); then
    for mode in $modes; do
      [[ " $served " == *" $mode "* ]] || continue
      "$load" --url "$url" --tasks "$warm" --concurrency 32 --mode "$mode" --tool noop >/dev/null 2>&1 || true
    done
  fi
  for c in $concurrency; do
    # At c >= 32, at least BENCH_TASKS_MANY lifecycles: the server CPU per lifecycle is then
    # over >= 10,000 as issue 18 measures it, and the first burst of C simultaneous calls
    # (every client starting at once) is under 1 % of the samples, so p99 is the steady
    # state's, not that burst's.
    n=$tasks
    if ((c >= 32 && n < tasks_many)); then n=$tasks_many; fi
    for mode in $modes; do
      [[ " $served " == *" $mode "* ]] || continue
      run "$name" --tasks "$n" --concurrency "$c" --mode "$mode" --tool noop
    done
  done
  if [[ " $served " == *" block "* ]]; then
    # Ours also times each result from its commit (mcp_tasks_result_delivery_seconds).
    local metrics=()
    if [[ $name == ours ]]; then
      metrics=(--metrics-url "${url%/mcp}/metrics")
    fi
    run "$name" --tasks "$sleep_tasks" --concurrency "$sleep_c" --mode block --tool sleep --ms "$sleep_ms" "${metrics[@]}"
  fi
  local peak
  peak=$(awk '/^VmHWM:/ {print $2}' "/proc/$server_pid/status")
  echo "{\"server\":\"$name\",\"peak_rss_kib\":$peak}" >>"$out"
  echo "== $name peak RSS $peak KiB; load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
}

run() {
  local name=$1
  shift
  load_run "\"server\":\"$name\"" "$@" || return 0
  echo "$report" | jq -r --arg s "$name" \
    '"\($s) \(.mode) \(.tool) c=\(.concurrency): \(.per_second|floor)/s, e2e p50 \(.end_to_end.p50_us/1000) ms p99 \(.end_to_end.p99_us/1000) ms, \(.failures) failed\(if .lag_from_commit then ", lag from commit p50 ≤ \(.lag_from_commit.p50_le_ms // "∞") ms p99 ≤ \(.lag_from_commit.p99_le_ms // "∞") ms (server), \(.lag_from_commit.within_2ms * 1000 | round / 10) % within 2 ms" else "" end)"' >&2
}

# `--inline-wait-ms 0`: a 2026-07-28 call is a task at once (the `modern` lifecycle: a
# CreateTaskResult, then tasks/get), as the rmcp peer's are; 2025-11-25 calls are unaffected.
echo "== ours: --sync ${BENCH_SYNC:-full}, noop started before its commit: ${BENCH_EARLY:-on}" >&2
start_logged ours "$bench_server" --listen 127.0.0.1:0 --store "$work/bench.sqlite3" --sync "${BENCH_SYNC:-full}" \
  --inline-wait-ms 0 --early "${BENCH_EARLY:-on}"
measure ours "poll block plain modern"
stop_server

if [[ ${BENCH_PEER:-1} != 0 ]]; then
  if [[ ! -x $node ]]; then
    echo "no Node at $node: run bash interop/install.sh, or set BENCH_NODE (or BENCH_PEER=0)" >&2
    exit 1
  fi
  start_logged ts-sdk "$node" benches/peers/ts_task_server.mjs --port 0
  measure ts-sdk "poll block plain"
  stop_server
fi
if [[ -n $rmcp_peer ]]; then
  # Finished tasks kept an hour, as ours are (rmcp's default evicts them after 300 s).
  start_logged rmcp "$rmcp_peer" --listen 127.0.0.1:0 --ttl-ms 3600000
  measure rmcp "modern plain"
  stop_server
fi

# The table: one row per run, ours beside the peer, ratios ours / peer.
jq -rs '
  def ms: if . == null then "-" else (. / 10 | round / 100 | tostring) end;
  def rate: if . == null then "-" else (. | round | tostring) end;
  def ratio($a; $b): if $a == null or $b == null or $b == 0 then "-" else (($a / $b) * 100 | round / 100 | tostring) + "x" end;
  def mib: if . == null then "-" else (. / 1024 * 10 | round / 10 | tostring) + " MiB" end;
  (map(select(.run)) | map(.run + {server})) as $runs
  | ($runs | map(select(.server == "ours"))) as $ours
  | ($runs | map(select(.server != "ours"))) as $peers
  | (map(select(.idle_rss_kib)) | map({(.server): .idle_rss_kib}) | add // {}) as $idle
  | (map(select(.peak_rss_kib)) | map({(.server): .peak_rss_kib}) | add // {}) as $peak
  | def cpu: if . == null then "-" else (. | round | tostring) end;
  def bounds: if . == null then "-" else "≤\(.p50_le_ms // "∞") / ≤\(.p99_le_ms // "∞") (\(.within_2ms * 1000 | round / 10) % ≤ 2 ms)" end;
  "| mode | tool | c | peer | ours calls/s | peer calls/s | ratio | ours e2e p50 / p99 ms | peer e2e p50 / p99 ms | p99 ratio | ours / peer server CPU µs per call | ours gets per task | ours create p99 ms | ours lag p50 / p99 ms | ours lag from commit p50 / p99 ms (server) | peer lag p50 / p99 ms |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ($ours[] as $o
     | ($peers | map(select(.mode == $o.mode and .tool == $o.tool and .concurrency == $o.concurrency))) as $matching
     | (if ($matching | length) == 0 then [null] else $matching end)[] as $p
     | "| \($o.mode) | \($o.tool)\(if $o.sleep_ms then " \($o.sleep_ms) ms" else "" end) | \($o.concurrency) | \($p.server // "-") | \($o.per_second | rate) | \($p.per_second | rate) | \(ratio($o.per_second; $p.per_second)) | \($o.end_to_end.p50_us | ms) / \($o.end_to_end.p99_us | ms) | \($p.end_to_end.p50_us | ms) / \($p.end_to_end.p99_us | ms) | \(ratio($o.end_to_end.p99_us; $p.end_to_end.p99_us)) | \($o.server_cpu_us_per_call | cpu) / \($p.server_cpu_us_per_call | cpu) | \(if $o.gets_per_task == null then "-" else ($o.gets_per_task * 100 | round / 100 | tostring) end) | \($o.create.p99_us | ms) | \($o.lag.p50_us | ms) / \($o.lag.p99_us | ms) | \($o.lag_from_commit | bounds) | \($p.lag.p50_us | ms) / \($p.lag.p99_us | ms) |"),
    "",
    "| server | idle RSS | peak RSS | failed calls |",
    "|---|---|---|---|",
    (($idle | keys_unsorted[]) as $s
     | "| \($s) | \($idle[$s] | mib) | \($peak[$s] | mib) | \($runs | map(select(.server == $s) | .failures) | add) |")
' "$out"
if [[ -n ${BENCH_OUT:-} ]]; then
  echo "raw results: $out" >&2
fi
exit "$failed"
