#!/usr/bin/env bash
# The web view's load time with 100,000 tasks in the store (issue 17, item 1): `mcp-tasks
# serve` (release) on a SQLite store seeded with UI_COUNT finished tasks of the anonymous
# principal, then, UI_ROUNDS times, what a browser does to show the list: a fresh
# connection fetching /ui, /ui/ui.css, /ui/ui.js and the first API call
# (/ui/api/tasks), one after the other (curl, timed by curl itself). Prints p50, p99 and
# max of that whole load, and the latency of each API read alone on a keep-alive
# connection: the first page, a page filtered by status, a text search that matches
# nothing (every task read), a deep page (`before` a cursor), and one task. Everything on
# 127.0.0.1. Not a test: it prints figures (BENCHMARKS.md, "The web view").
#
#   bash benches/ui.sh
#
# Environment: UI_COUNT (100000), UI_ROUNDS (50), UI_KEEP=1 (keep the temporary folder and
# say where), UI_PROFILE (release; debug for a quick look).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
count=${UI_COUNT:-100000}
rounds=${UI_ROUNDS:-50}
profile=${UI_PROFILE:-release}
keep_work=${UI_KEEP:-0}
# shellcheck source=benches/lib.sh
source "$root/benches/lib.sh"
bench_init mcp-tasks-ui

echo "== building ($profile)" >&2
flag=()
[[ $profile == release ]] && flag=(--release)
cargo build "${flag[@]}" -p mcp-tasks --bin mcp-tasks >&2
cargo build "${flag[@]}" -p mcp-tasks-sqlite --example seed >&2
target_dir=$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)
bin=$target_dir/$profile/mcp-tasks
seed=$target_dir/$profile/examples/seed

store=$work/tasks.sqlite3
echo "== seeding $count finished tasks" >&2
"$seed" --store "$store" --count "$count" >&2
cat >"$work/config.toml" <<'EOF'
[server]
name = "ui-bench"
max_retained_per_principal = 1000000

[[tools]]
name = "noop"
command = ["true"]
EOF
start server "$bin" serve --listen 127.0.0.1:0 --config "$work/config.toml" --store "$store"
base=${url%/mcp}

# stats FILE: p50, p99 and max (ms) of the first column (seconds).
stats() {
  sort -n "$1" | awk '{ v[NR] = $1 * 1000 } END {
    p50 = v[int((NR + 1) * 0.50)]; p99 = v[int((NR * 0.99) + 0.999)]; if (p99 == "") p99 = v[NR];
    printf "{\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f,\"n\":%d}", p50, p99, v[NR], NR }'
}

# The whole load, each round on a new connection (one curl per round, four transfers).
: >"$work/load.times"
for ((i = 0; i < rounds; i++)); do
  curl -s -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
    -w '%{time_total} %{http_code}\n' \
    "$base/ui" "$base/ui/ui.css" "$base/ui/ui.js" "$base/ui/api/tasks" >"$work/round.times"
  if grep -qv ' 200$' "$work/round.times"; then
    echo "a request of the page did not answer 200:" >&2
    cat "$work/round.times" >&2
    exit 1
  fi
  awk '{ s += $1 } END { print s }' "$work/round.times" >>"$work/load.times"
done

# read NAME PATH: ROUNDS GETs of PATH on one keep-alive connection.
read_latency() {
  local cfg=$work/$1.curl i
  : >"$cfg"
  for ((i = 0; i < rounds; i++)); do
    ((i > 0)) && echo next >>"$cfg"
    printf 'url = "%s"\noutput = "/dev/null"\nwrite-out = "%%{time_total} %%{http_code}\\n"\n' "$base$2" >>"$cfg"
  done
  curl -s -K "$cfg" >"$work/$1.times"
  if grep -qv ' 200$' "$work/$1.times"; then
    echo "$1: a request did not answer 200" >&2
    exit 1
  fi
  printf '"%s":%s' "$1" "$(stats "$work/$1.times")"
}

first=$(curl -s "$base/ui/api/tasks")
next=$(jq -r .next <<<"$first")
id=$(jq -r '.tasks[0].id' <<<"$first")
total=$(jq '.counts | add' <<<"$first")
# A cursor in the middle of the store: the `next` of a page 50,000 tasks deep is the
# creation time and id of a task there; the seeded tasks are one millisecond apart.
deep_at=$(( $(cut -d. -f1 <<<"$next") - count / 2 ))
deep=$(curl -s "$base/ui/api/tasks?limit=1&before=${deep_at}.ffffffffffffffffffffffffffffffff" | jq -r .next)

reads=$(
  read_latency first_page "/ui/api/tasks"; printf ','
  read_latency by_status "/ui/api/tasks?status=failed"; printf ','
  read_latency text_no_match "/ui/api/tasks?q=nothing-matches-this"; printf ','
  read_latency deep_page "/ui/api/tasks?before=$deep"; printf ','
  read_latency one_task "/ui/api/tasks/$id"
)
echo "{\"tasks\":$total,\"profile\":\"$profile\",\"page_load\":$(stats "$work/load.times"),$reads}" | tee "$work/results.json" | jq .
