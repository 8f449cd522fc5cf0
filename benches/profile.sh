#!/usr/bin/env bash
# Instructions per task lifecycle, counted by callgrind (the same figure on a busy machine as
# on a quiet one), and where they go: runs our bench server (profiling profile) under
# `valgrind --tool=callgrind` with instrumentation off, warms it up with 200 lifecycles,
# counts N lifecycles of MODE at concurrency C, and prints the server's instructions per
# lifecycle (user space: the kernel's share, syscalls and scheduling, is not counted) and its
# costliest functions, inclusive and exclusive.
#
#   bash benches/profile.sh [MODE [N [C]]]      # defaults: block 2000 32
#
# MODE: poll, block, plain or modern (the server runs with --inline-wait-ms 0, so a
# 2026-07-28 call is a task at once). Needs valgrind (apt install valgrind). Environment:
# PROFILE_KEEP=1 keeps the callgrind file (for callgrind_annotate or kcachegrind); PROFILE_TOP
# (25) lines per list; PROFILE_SERVER=PATH profiles that bench_server binary instead of the
# one built from this tree (an earlier build kept aside, to count both sides of a change);
# PROFILE_THREADS=1 counts each thread apart (the Tokio worker, the SQLite writer) and lists
# each busy thread's costliest functions; PROFILE_ARGS="--early on" passes more arguments
# to the server.
set -euo pipefail

mode=${1:-block}
tasks=${2:-2000}
concurrency=${3:-32}
top=${PROFILE_TOP:-25}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
command -v valgrind >/dev/null || { echo "valgrind is needed: apt-get install valgrind" >&2; exit 1; }

# shellcheck source=benches/lib.sh
source "$root/benches/lib.sh"
bench_init mcp-tasks-profile
[[ ${PROFILE_KEEP:-0} == 1 ]] && keep_work=1

# The profiling profile: the release code, with the line tables and symbols callgrind_annotate
# names functions and files by (the release profile ships stripped).
bench_build profiling
cp "${PROFILE_SERVER:-$target_dir/profiling/examples/bench_server}" "$work/bench_server"
cp "$target_dir/profiling/load" "$work/"
separate=()
[[ ${PROFILE_THREADS:-0} == 1 ]] && separate=(--separate-threads=yes)
read -ra extra <<<"${PROFILE_ARGS:-}"

start ours valgrind --tool=callgrind "${separate[@]}" --instr-atstart=no --callgrind-out-file="$work/callgrind.out" \
  "$work/bench_server" --listen 127.0.0.1:0 --store "$work/profile.sqlite3" --inline-wait-ms 0 "${extra[@]}"
echo "== serving $url under callgrind (pid $server_pid)" >&2
"$work/load" --url "$url" --tasks 200 --concurrency "$concurrency" --mode "$mode" --tool noop >/dev/null
callgrind_control --instr=on "$server_pid" >/dev/null
report=$("$work/load" --url "$url" --tasks "$tasks" --concurrency "$concurrency" --mode "$mode" --tool noop --json)
callgrind_control --instr=off "$server_pid" >/dev/null
callgrind_control --dump "$server_pid" >/dev/null
stop_server
echo "$report" | jq -c '{mode, tasks, concurrency, ok, failures, gets_per_task}' >&2
[[ $(echo "$report" | jq .failures) == 0 ]] || { echo "some lifecycles failed" >&2; exit 1; }

# The report reads a few lines of long listings (a closed pipe is not a failure).
set +o pipefail
shorten() { sed -E 's|/root/.cargo/registry/src/index.crates.io-[^/]*/||; s|/rustc/[0-9a-f]*/library/||; s|\[[^]]*\]$||' | cut -c1-170; }
total_of() { callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}'; }
if [[ ${PROFILE_THREADS:-0} == 1 ]]; then
  # One dump per thread (callgrind.out.1-NN): each thread's share, and the exclusive listing of
  # each thread with at least a tenth of the instructions, named by what it runs.
  total=0
  declare -A counts
  for dump in $(ls "$work"/callgrind.out.1-* 2>/dev/null); do
    count=$(total_of "$dump")
    # A thread that ran nothing while counted has "." for its total.
    [[ $count =~ ^[0-9]+$ ]] || count=0
    counts[$dump]=$count
    total=$((total + count))
  done
  echo "mode $mode, c=$concurrency: $total instructions for $tasks lifecycles: $((total / tasks)) per lifecycle"
  for dump in "${!counts[@]}"; do
    count=${counts[$dump]}
    ((count * 10 >= total)) || continue
    inclusive=$(callgrind_annotate --inclusive=yes "$dump" 2>/dev/null)
    if grep -q 'store::write_loop' <<<"$inclusive"; then name="SQLite writer"
    elif grep -q 'hyper::proto' <<<"$inclusive"; then name="Tokio worker"
    else name="thread ${dump##*-}"; fi
    echo
    echo "-- $name: $((count / tasks)) per lifecycle; exclusive"
    callgrind_annotate "$dump" 2>/dev/null | grep -E '^ *[0-9,]+ \(' | grep -v 'PROGRAM TOTALS' | head -n "$top" | shorten
  done
  exit 0
fi
# The dump holds the counted part (the file written at exit holds what came after it).
dump=$(ls "$work"/callgrind.out.* 2>/dev/null | grep -v '\.out$' | head -n 1 || true)
dump=${dump:-$work/callgrind.out}
total=$(total_of "$dump")
echo "mode $mode, c=$concurrency: $total instructions for $tasks lifecycles: $((total / tasks)) per lifecycle"
echo
echo "-- inclusive, our crates and the layers under them"
callgrind_annotate --inclusive=yes "$dump" 2>/dev/null | grep -E "mcp_tasks|sqlite3_step|hyper::proto|serde_json::(ser|de)::" \
  | head -n "$top" | shorten
echo
echo "-- exclusive"
callgrind_annotate "$dump" 2>/dev/null | sed -n '/^Ir/,$p' | tail -n +3 | head -n "$top" | shorten
