# What the benchmark scripts (run.sh, retention.sh, profile.sh, threads.sh, postgres.sh, ui.sh, events.sh, peers/rmcp.sh, peers/rmcp-modern.sh) share; sourced, not run.
#
#   bench_build [PROFILE]   builds the bench server and the load harness in this tree with
#                           cargo's PROFILE (default release; profile.sh asks for profiling,
#                           the release code with line tables and symbols); target_dir:
#                           cargo's target directory
#   bench_init PREFIX       work: a new temporary folder, removed at exit (kept when
#                           keep_work=1); server_pid and failed reset; EXIT/INT/TERM traps
#   stop_server             stops the server started last (SIGTERM, then waits for it)
#   start NAME ARGV...      starts a server that prints "listening on URL" to stderr (kept in
#                           $work/NAME.err); sets server_pid and url; 1 if it never listens
#   load_run FIELDS ARGS... one run of the load harness ($load) with ARGS against the server
#                           started last; its report in $report and appended to $out as
#                           {FIELDS,"run":REPORT}; failed=1 if a call failed; 1 if no report

bench_build() {
  local profile=${1:-release}
  echo "== building ($profile)" >&2
  cargo build --profile "$profile" -p mcp-tasks-bench --example bench_server --bin load >&2
  target_dir=$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)
}

bench_init() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  server_pid=""
  failed=0
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}

stop_server() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=""
}

bench_cleanup() {
  stop_server
  if [[ ${keep_work:-0} == 1 ]]; then
    echo "kept $work" >&2
  else
    rm -rf "$work"
  fi
}

start() {
  local name=$1
  shift
  # Emptied here, before the server starts: the child truncates it only once it runs, so a
  # file left by an earlier server of the same name could be read first, with its old URL.
  : >"$work/$name.err"
  "$@" 2>"$work/$name.err" &
  server_pid=$!
  url=""
  for _ in $(seq 1 300); do
    # Up to "/mcp", the line's end: stderr is unbuffered, so a line may be read while it is
    # still being written in pieces (under valgrind, "listening on http://" came alone).
    url=$(sed -n 's/.*listening on \(http:[^ ]*\/mcp\).*/\1/p' "$work/$name.err" | head -n 1)
    [[ -n $url ]] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z $url ]]; then
    echo "$name did not start:" >&2
    cat "$work/$name.err" >&2
    return 1
  fi
}

load_run() {
  local fields=$1 status=0
  shift
  report=$("$load" --url "$url" --server-pid "$server_pid" --json "$@") || status=$?
  if [[ -z $report ]]; then
    echo "load $* against $url: no report (exit $status)" >&2
    failed=1
    return 1
  fi
  [[ $status -eq 0 ]] || failed=1
  echo "{$fields,\"run\":$report}" >>"$out"
}
