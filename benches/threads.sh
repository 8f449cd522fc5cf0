#!/usr/bin/env bash
# Where the time of one run goes, thread by thread: serves a fresh store with our bench server,
# warms it up, runs N lifecycles of MODE at concurrency C, and prints for each busy thread of
# the server and of the load driver its time on a core and its time waiting for one (the
# kernel's run-queue delay, /proc/PID/task/TID/schedstat), the share of the machine that was
# idle or waiting for the disk (/proc/stat), and how the slowest 1 % of lifecycles were spread
# over the run (load --samples): in bursts (many clients slow at once: a stalled commit, a
# checkpoint, a thread off its core) or one by one, and at which task of the store each
# burst began (a stall that recurs every so many tasks shows as a regular step).
#
#   bash benches/threads.sh [MODE [N [C]]]          # defaults: block 20000 32
#
# Environment: BENCH_SERVER=PATH (a bench_server built earlier; default: the one built from
# this tree), BENCH_SYNC=normal (no fsync per commit, for comparison), KEEP=1 (keep the
# samples and the server's log). The driver's figures are read every 20 ms while it runs, so
# its last 20 ms may be missing. Needs jq and awk.
set -euo pipefail
mode=${1:-block}
tasks=${2:-20000}
concurrency=${3:-32}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=benches/lib.sh
source "$root/benches/lib.sh"
bench_init mcp-tasks-threads
[[ ${KEEP:-0} == 1 ]] && keep_work=1
bench_build
server=${BENCH_SERVER:-$target_dir/release/examples/bench_server}
load=$target_dir/release/load
start ours "$server" --listen 127.0.0.1:0 --store "$work/threads.sqlite3" --inline-wait-ms 0 --sync "${BENCH_SYNC:-full}"
"$load" --url "$url" --tasks 1000 --concurrency "$concurrency" --mode "$mode" >/dev/null

# One line per thread: TID NAME ON_CPU_NS WAITING_NS TIMESLICES, into $snapshot. Bash
# builtins only (no process started: the driver's threads are read every 20 ms while it runs).
threads() {
  local pid=$1 task stat name
  snapshot=""
  for task in /proc/"$pid"/task/*; do
    read -r stat <"$task/schedstat" 2>/dev/null || continue
    read -r name <"$task/comm" 2>/dev/null || continue
    snapshot+="${task##*/} ${name// /_} $stat"$'\n'
  done
}
# The change of each thread between two snapshots, for threads with at least 1 ms on a core.
changes() {
  join <(sort "$2") <(sort "$3") | awk -v who="$1" '{
    cpu = ($7 - $3) / 1e6; wait = ($8 - $4) / 1e6; slices = $9 - $5
    if (cpu >= 1) printf "%-7s %-18s on a core %8.1f ms   waiting for one %7.1f ms   %6d slices, %5.1f µs waited each\n",
      who, $2, cpu, wait, slices, slices ? wait * 1000 / slices : 0 }'
}

threads "$server_pid"
printf '%s' "$snapshot" >"$work/server.before"
cpu_before=$(head -n 1 /proc/stat)
"$load" --url "$url" --tasks "$tasks" --concurrency "$concurrency" --mode "$mode" \
  --samples "$work/samples.csv" >"$work/load.out" &
driver=$!
sleep 0.01
threads "$driver"
printf '%s' "$snapshot" >"$work/driver.before"
# A pipe nothing is written to: `read -t` on it waits without starting a process (sleep would).
mkfifo "$work/never"
exec 3<>"$work/never"
last=""
while kill -0 "$driver" 2>/dev/null; do
  threads "$driver"
  # Read as the driver exits, its main thread may be gone already: such a snapshot is not kept.
  [[ $snapshot == *" load "* ]] && last=$snapshot
  read -r -t 0.02 -u 3 _ || true
done
exec 3>&-
printf '%s' "$last" >"$work/driver.after"
wait "$driver"
cpu_after=$(head -n 1 /proc/stat)
threads "$server_pid"
printf '%s' "$snapshot" >"$work/server.after"
stop_server

grep -E 'calls/s|create|end-to-end' "$work/load.out"
changes server "$work/server.before" "$work/server.after"
[[ -s $work/driver.after ]] && changes driver "$work/driver.before" "$work/driver.after"
echo "$cpu_before" "$cpu_after" | awk '{
  n = (NF - 2) / 2
  for (i = 2; i <= n; i++) { d[i] = $(n + 1 + i) - $i; total += d[i] }
  printf "machine: user %.0f %%, system %.0f %%, softirq %.0f %%, idle %.0f %%, waiting for the disk %.0f %%\n",
    100 * d[2] / total, 100 * d[4] / total, 100 * d[8] / total, 100 * d[5] / total, 100 * d[6] / total }'
# The slowest 1 % of lifecycles, by the 5 ms window in which each ended; then where each
# burst began, as the number of the store's task its first slow lifecycle created (the
# warm-up's 1,000 included): a stall that comes back every so many tasks (a cache filling
# up, say) shows as bursts at a regular step.
awk -F, -v warm=1000 'NR > 2 { n++; start[n] = $1; end[n] = $1 + $3; e2e[n] = $3 } END {
  for (i = 1; i <= n; i++) { sorted[i] = e2e[i]; starts[i] = start[i] }
  asort(sorted); p99 = sorted[int(n * 0.99)]
  asort(starts)
  for (i = 1; i <= n; i++) if (!(starts[i] in rank)) rank[starts[i]] = i
  for (i = 1; i <= n; i++) if (e2e[i] > p99) {
    slow++; w = int(end[i] / 5000); window[w]++
    if (!(w in first) || rank[start[i]] < first[w]) first[w] = rank[start[i]]
  }
  for (w in window) { windows++; if (window[w] >= 8) { bursts++; in_bursts += window[w]; at[bursts] = first[w] + warm } }
  printf "slowest 1 %% (e2e > %.2f ms): %d lifecycles in %d windows of 5 ms; %d of them (%.0f %%) in %d bursts of 8 or more\n",
    p99 / 1000, slow, windows, in_bursts, slow ? 100 * in_bursts / slow : 0, bursts
  if (bursts) { asort(at); line = "bursts began at the store task numbered"; for (b = 1; b <= bursts; b++) line = line " " at[b]; print line }
}' "$work/samples.csv"
