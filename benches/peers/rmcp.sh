#!/usr/bin/env bash
# Plain tools/call side by side, rmcp 3.11 against ours (issue 7): builds (release) our bench
# server and load harness, and the rmcp peer (benches/peers/rmcp, its own Cargo project,
# `cargo build --locked`); then, per round, serves rmcp-bench-peer and our bench server (on a
# fresh temporary SQLite store, --sync full) one after the other on a free port, runs
# `load --mode plain --tool noop` against each at every concurrency, and prints a table with
# the median of the rounds, the ratio ours / rmcp, and each server's idle and peak RSS.
# Then the task lifecycle, each dialect on its own: rmcp 3.11 speaks only the Modern one
# (SEP-2663; it ignores the 2025-11-25 params.task), driven by benches/peers/rmcp's
# `modern_load` (tools/call -> task, tasks/get until completed), and ours in Legacy poll mode
# (tools/call with params.task, tasks/get until terminal, tasks/result) by our harness; a
# fresh server for each run, as the issue's figures are. (The like-for-like Modern lifecycle,
# one driver for both servers, is benches/peers/rmcp-modern.sh.)
# The binaries are copied to a temporary directory first, so a rebuild in the shared target
# dir during the run does not touch them.
#
#   bash benches/peers/rmcp.sh            # from anywhere; everything on 127.0.0.1
#
# Environment: BENCH_TASKS (2000), BENCH_CONCURRENCY ("1 8 32"), BENCH_ROUNDS (3),
# BENCH_LIFECYCLE (1; 0 skips the task lifecycle runs),
# BENCH_OUT (a file for the raw JSON lines; default: in the temporary directory).
# Exit status: non-zero if any call failed its check or a server did not start.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
tasks=${BENCH_TASKS:-2000}
concurrency=${BENCH_CONCURRENCY:-1 8 32}
rounds=${BENCH_ROUNDS:-3}

# shellcheck source=benches/lib.sh
source "$root/benches/lib.sh"
bench_init mcp-tasks-rmcp-bench
out=${BENCH_OUT:-$work/results.jsonl}
: >"$out"

bench_build
(cd benches/peers/rmcp && CARGO_TARGET_DIR="$root/benches/peers/rmcp/target" cargo build --release --locked >&2)
mkdir -p "$work/bin"
cp "$target_dir/release/examples/bench_server" "$target_dir/release/load" \
  benches/peers/rmcp/target/release/rmcp-bench-peer benches/peers/rmcp/target/release/modern_load "$work/bin/"
load=$work/bin/load



# measure NAME ROUND: idle RSS, the plain runs, peak RSS, for the server started last.
measure() {
  local name=$1 round=$2 c json status
  sleep 1
  local idle peak
  idle=$(awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status")
  echo "== $name round $round serving $url (pid $server_pid), idle RSS $idle KiB, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  for c in $concurrency; do
    load_run "\"server\":\"$name\",\"round\":$round" --tasks "$tasks" --concurrency "$c" --mode plain --tool noop || continue
    echo "$report" | jq -r --arg s "$name" \
      '"   \($s) plain noop c=\(.concurrency): \(.per_second|floor)/s, p50 \(.end_to_end.p50_us/1000) ms p99 \(.end_to_end.p99_us/1000) ms, \(.failures) failed"' >&2
  done
  peak=$(awk '/^VmHWM:/ {print $2}' "/proc/$server_pid/status")
  echo "{\"server\":\"$name\",\"round\":$round,\"idle_rss_kib\":$idle,\"peak_rss_kib\":$peak}" >>"$out"
}

echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores" >&2
for round in $(seq 1 "$rounds"); do
  start rmcp "$work/bin/rmcp-bench-peer" --listen 127.0.0.1:0
  measure rmcp "$round"
  stop_server
  rm -f "$work/bench.sqlite3"*
  start ours "$work/bin/bench_server" --listen 127.0.0.1:0 --store "$work/bench.sqlite3" --sync full
  measure ours "$round"
  stop_server
done

# lifecycle NAME ROUND C ARGV...: one task-lifecycle run (ARGV is the driver) on a fresh server.
lifecycle() {
  local name=$1 round=$2 c=$3 json status=0 peak
  shift 3
  json=$("$@" --url "$url" --tasks "$tasks" --concurrency "$c") || status=$?
  peak=$(awk '/^VmHWM:/ {print $2}' "/proc/$server_pid/status")
  if [[ -z $json ]]; then
    echo "lifecycle c=$c against $name: no report (exit $status)" >&2
    failed=1
    return
  fi
  [[ $status -eq 0 ]] || failed=1
  echo "{\"server\":\"$name\",\"round\":$round,\"peak_rss_kib\":$peak,\"lifecycle\":$json}" >>"$out"
  echo "$json" | jq -r --arg s "$name" \
    '"   \($s) \(.mode) c=\(.concurrency): \(.per_second|floor) tasks/s, e2e p50 \(.end_to_end.p50_us/1000) ms p99 \(.end_to_end.p99_us/1000) ms, \(.failures) failed"' >&2
}

if [[ ${BENCH_LIFECYCLE:-1} != 0 ]]; then
  for round in $(seq 1 "$rounds"); do
    echo "== lifecycle round $round, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    for c in $concurrency; do
      start rmcp "$work/bin/rmcp-bench-peer" --listen 127.0.0.1:0
      lifecycle rmcp-modern "$round" "$c" "$work/bin/modern_load"
      stop_server
      rm -f "$work/bench.sqlite3"*
      start ours "$work/bin/bench_server" --listen 127.0.0.1:0 --store "$work/bench.sqlite3" --sync full
      lifecycle ours-legacy "$round" "$c" "$load" --json --server-pid "$server_pid" --mode poll --tool noop
      stop_server
    done
  done
fi
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# The table: medians over the rounds (per server and concurrency), ratio ours / rmcp.
jq -rs '
  def median: sort | if length == 0 then null else .[(length - 1) / 2 | floor] end;
  def ms: if . == null then "-" else (. / 10 | round / 100 | tostring) end;
  def g: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
  def mib: if . == null then "-" else (. / 1024 * 10 | round / 10 | tostring) + " MiB" end;
  def ratio($a; $b): if $a == null or $b == null or $b == 0 then "-" else (($a / $b) * 100 | round / 100 | tostring) + "x" end;
  (map(select(.run)) | map(.run + {server})) as $runs
  | def med($s; $c; f): $runs | map(select(.server == $s and .concurrency == $c) | f) | median;
  def rss($s; f): map(select(.server == $s and .idle_rss_kib) | f) | median;
  ($runs | map(.concurrency) | unique) as $cs
  | "| c | rmcp 3.11 calls/s | ours calls/s | ratio ours / rmcp | rmcp p50 / p99 ms | ours p50 / p99 ms | rounds |",
    "|---|---|---|---|---|---|---|",
    ($cs[] as $c
     | "| \($c) | \(med("rmcp"; $c; .per_second) | round) | \(med("ours"; $c; .per_second) | round) | \(ratio(med("ours"; $c; .per_second); med("rmcp"; $c; .per_second))) | \(med("rmcp"; $c; .end_to_end.p50_us) | ms) / \(med("rmcp"; $c; .end_to_end.p99_us) | ms) | \(med("ours"; $c; .end_to_end.p50_us) | ms) / \(med("ours"; $c; .end_to_end.p99_us) | ms) | \($runs | map(select(.server == "ours" and .concurrency == $c)) | length) |"),
    "",
    "| server | idle RSS (median) | peak RSS (median) | failed calls |",
    "|---|---|---|---|",
    (("rmcp", "ours") as $s
     | "| \($s) | \(rss($s; .idle_rss_kib) | mib) | \(rss($s; .peak_rss_kib) | mib) | \($runs | map(select(.server == $s) | .failures) | add) |"),
  (map(select(.lifecycle)) | map(.lifecycle + {server, peak_rss_kib})) as $lc
  | def lmed($s; $c; f): $lc | map(select(.server == $s and .concurrency == $c) | f) | median;
  if ($lc | length) == 0 then empty else
    "",
    "| c | rmcp 3.11 Modern tasks/s | ours Legacy poll tasks/s | ratio | rmcp e2e p50 / p99 ms | ours e2e p50 / p99 ms | rmcp / ours peak RSS | gets per task rmcp / ours |",
    "|---|---|---|---|---|---|---|---|",
    (($lc | map(.concurrency) | unique)[] as $c
     | "| \($c) | \(lmed("rmcp-modern"; $c; .per_second) | round) | \(lmed("ours-legacy"; $c; .per_second) | round) | \(ratio(lmed("ours-legacy"; $c; .per_second); lmed("rmcp-modern"; $c; .per_second))) | \(lmed("rmcp-modern"; $c; .end_to_end.p50_us) | ms) / \(lmed("rmcp-modern"; $c; .end_to_end.p99_us) | ms) | \(lmed("ours-legacy"; $c; .end_to_end.p50_us) | ms) / \(lmed("ours-legacy"; $c; .end_to_end.p99_us) | ms) | \(lmed("rmcp-modern"; $c; .peak_rss_kib) | mib) / \(lmed("ours-legacy"; $c; .peak_rss_kib) | mib) | \(lmed("rmcp-modern"; $c; .gets_per_task) | g) / \(lmed("ours-legacy"; $c; .gets_per_task) | g) |")
  end
' "$out"
if [[ -n ${BENCH_OUT:-} ]]; then
  echo "raw results: $out" >&2
fi
exit "$failed"
