#!/usr/bin/env bash
# Two (or more) builds of the bench server side by side: for each round, each binary in turn
# serves a fresh store (a new temporary directory on the disk of TMPDIR), the load harness
# runs WARM lifecycles to warm it up (0: none, a fresh server as benches/peers/rmcp-modern.sh
# measures it), then TASKS lifecycles of MODE at c = 32, and prints one line per run:
# binary, lifecycles/s, server CPU µs per lifecycle (/proc/PID/stat), e2e p99 µs, gets per
# task. Alternating the builds round by round is what makes a small difference visible on a
# noisy machine; compare the medians.
#
#   bash benches/ab.sh MODE TASKS ROUNDS WARM BINARY...
#   e.g. cp target/release/examples/bench_server /tmp/before; (change, rebuild);
#        bash benches/ab.sh modern 2000 10 0 /tmp/before target/release/examples/bench_server
#
# The load harness is the one built in this tree (cargo build --release -p mcp-tasks-bench
# --bin load). Needs jq.
set -euo pipefail

[[ $# -ge 5 ]] || { sed -n '2,13p' "$0" >&2; exit 2; }
mode=$1 tasks=$2 rounds=$3 warm=$4
shift 4
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target_dir=$(cd "$root" && cargo metadata --format-version 1 --no-deps | jq -r .target_directory)
load=$target_dir/release/load
[[ -x $load ]] || { echo "build the load harness first: cargo build --release -p mcp-tasks-bench --bin load" >&2; exit 1; }

pid=""
dir=""
cleanup() {
  [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [[ -n $dir ]] && rm -rf "$dir"
  pid="" dir=""
}
trap cleanup EXIT INT TERM

for round in $(seq 1 "$rounds"); do
  for bin in "$@"; do
    dir=$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-ab.XXXXXX")
    "$bin" --listen 127.0.0.1:0 --store "$dir/store.sqlite3" --inline-wait-ms 0 2>"$dir/err" &
    pid=$!
    url=""
    for _ in $(seq 100); do
      url=$(grep -o 'http://[^ ]*' "$dir/err" | head -n 1 || true)
      [[ -n $url ]] && break
      sleep 0.05
    done
    [[ -n $url ]] || { echo "$bin did not start: $(cat "$dir/err")" >&2; exit 1; }
    if [[ $warm -gt 0 ]]; then
      "$load" --url "$url" --tasks "$warm" --concurrency 32 --mode "$mode" --tool noop >/dev/null
    fi
    report=$("$load" --url "$url" --tasks "$tasks" --concurrency 32 --mode "$mode" --tool noop --server-pid "$pid" --json)
    printf 'round %s %s\t%s\n' "$round" "$bin" \
      "$(echo "$report" | jq -r '[(.per_second | floor), .server_cpu_us_per_call, .end_to_end.p99_us, .gets_per_task] | @tsv')"
    cleanup
  done
done
