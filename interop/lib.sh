# What the interop runners share (sourced by run-mcp-tasks.sh and run-modern.sh): the
# mcp-tasks binary to use, servers started on free 127.0.0.1 ports and stopped at exit, and
# drivers run with their JSON line kept, their stderr logged and their exit status counted.
# Before sourcing, set HERE (interop/), ROOT (the repository), OUT (the results folder, made
# here) and NAME (the runner's name, for log lines).
# shellcheck shell=bash

log() { printf '[%s] %s\n' "$NAME" "$*" >&2; }

# The mcp-tasks binary: $1 if given, else target/release, else target/debug.
pick_bin() {
  local bin=$1
  if [ -z "$bin" ]; then
    for b in "$ROOT/target/release/mcp-tasks" "$ROOT/target/debug/mcp-tasks"; do [ -x "$b" ] && { bin=$b; break; }; done
  fi
  [ -n "$bin" ] && [ -x "$bin" ] || { log "no mcp-tasks binary (build it, or pass --bin)"; exit 2; }
  echo "$bin"
}

PIDS=()
stop_servers() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done; }
trap stop_servers EXIT

# Prints the http://ADDR/mcp that the server writing log file $1 (pid $2) announced; polls
# the log for at most 30 s, and gives up at once if the server dies.
wait_url() {
  local f=$1 pid=$2 deadline=$(( $(date +%s) + 30 )) u
  while [ "$(date +%s)" -lt $deadline ]; do
    u=$(grep -oE 'http://[^ /]+/mcp' "$f" 2>/dev/null | head -1)
    [ -n "$u" ] && { echo "$u"; return 0; }
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# `mcp-tasks serve` ($1) with interop/fixtures/mcp-tasks.toml over HTTP, with a fresh bearer
# token, on a store in OUT; sets URL and TOKEN.
start_mcp_tasks() {
  local bin=$1
  TOKEN=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  INTEROP_TOKEN=$TOKEN "$bin" serve --config "${CONFIG:-$HERE/fixtures/mcp-tasks.toml}" --listen 127.0.0.1:0 \
    --store "$OUT/tasks.sqlite3" >"$OUT/mcp-tasks.log" 2>&1 &
  PIDS+=($!)
  URL=$(wait_url "$OUT/mcp-tasks.log" $!) || { log "mcp-tasks did not start:"; cat "$OUT/mcp-tasks.log" >&2; exit 1; }
  log "mcp-tasks ($bin) pid $! at $URL (log $OUT/mcp-tasks.log)"
}

# The conformance fixture server ($1); sets CURL, with host localhost (the conformance
# suite's DNS-rebinding scenario needs it).
start_fixture() {
  local bin=$1
  "$bin" --listen 127.0.0.1:0 >"$OUT/conformance-server.log" 2>&1 &
  PIDS+=($!)
  CURL=$(wait_url "$OUT/conformance-server.log" $!) || { log "conformance server did not start:"; cat "$OUT/conformance-server.log" >&2; exit 1; }
  CURL=${CURL/127.0.0.1/localhost}
  log "conformance fixture server ($bin) pid $! at $CURL"
}

# Runs driver NAME (command...): its stdout (one JSON line) to OUT/NAME.json and on, its
# stderr to OUT/NAME.err; a non-zero exit sets status=1.
status=0
run() {
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$OUT/$name.json" 2>"$OUT/$name.err"
  local rc=$?
  cat "$OUT/$name.json"
  log "$name: exit $rc ($((SECONDS - t0)) s)$([ $rc != 0 ] && echo "; see $OUT/$name.err")"
  [ $rc = 0 ] || status=1
}

mkdir -p "$OUT"
