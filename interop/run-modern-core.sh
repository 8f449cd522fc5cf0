#!/usr/bin/env bash
# Run the Modern-era (2026-07-28) peers against our own servers:
#   * py_modern_client.py (Python SDK mcp 2.3.0: plain calls and MRTR) against `mcp-tasks serve`
#     with interop/fixtures/mcp-tasks.toml and a bearer token, and against the conformance
#     fixture server (prompts, resources, a prompt that asks through MRTR);
#   * rmcp-tasks-client (interop/rmcp-client, rmcp 3.11.0 with the tasks extension: a task with
#     input answered by tasks/update, a task without input, cancel of a running task) against
#     the same `mcp-tasks serve`.
# Both servers listen on free 127.0.0.1 ports; the store is a temporary SQLite file. Stops them.
#
#   interop/run-modern-core.sh [--bin PATH/TO/mcp-tasks] [--conformance-bin PATH/TO/conformance_server]
#                              [--rmcp-client-bin PATH] [--out DIR]
#
# --bin defaults to $MCP_TASKS_BIN, else target/release/mcp-tasks, else target/debug/mcp-tasks.
# --conformance-bin (or $MCP_TASKS_CONFORMANCE_BIN): without it, py_modern_client runs against
# mcp-tasks only (its fixture checks are then absent, not passed).
# --rmcp-client-bin (or $RMCP_CLIENT_BIN): a built rmcp-tasks-client; without it the script
# builds interop/rmcp-client (cargo build --locked, debug, its own target dir
# interop/rmcp-client/target, whatever CARGO_TARGET_DIR says).
# Needs interop/install.sh (the venv-modern). stdout: the drivers' JSON lines; stderr: progress.
# Exit 0 only if every driver passed; 2 if a binary, the peers or a server start are missing.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${MCP_TASKS_BIN:-}
CBIN=${MCP_TASKS_CONFORMANCE_BIN:-}
RBIN=${RMCP_CLIENT_BIN:-}
OUT=$HERE/results/modern-core-$(date -u +%Y%m%dT%H%M%SZ)
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --conformance-bin) CBIN=$2; shift 2 ;;
    --rmcp-client-bin) RBIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) sed -n '2,21p' "$0" >&2; exit 2 ;;
  esac
done
log() { printf '[run-modern-core] %s\n' "$*" >&2; }
if [ -z "$BIN" ]; then
  for b in "$ROOT/target/release/mcp-tasks" "$ROOT/target/debug/mcp-tasks"; do [ -x "$b" ] && { BIN=$b; break; }; done
fi
[ -n "$BIN" ] && [ -x "$BIN" ] || { log "no mcp-tasks binary (build it, or pass --bin)"; exit 2; }
# shellcheck source=env.sh
. "$HERE/env.sh"
[ -x "$INTEROP_PYTHON_MODERN" ] || { log "no $INTEROP_PYTHON_MODERN: run interop/install.sh"; exit 2; }
mkdir -p "$OUT"

if [ -z "$RBIN" ]; then
  log "building interop/rmcp-client (debug, --locked, target dir interop/rmcp-client/target)"
  t0=$SECONDS
  (cd "$HERE/rmcp-client" && CARGO_TARGET_DIR="$HERE/rmcp-client/target" timeout 1800 cargo build --locked) \
    >"$OUT/rmcp-client-build.log" 2>&1 || { log "rmcp-client build failed:"; tail -n 30 "$OUT/rmcp-client-build.log" >&2; exit 2; }
  log "rmcp-client built in $((SECONDS - t0)) s"
  RBIN=$HERE/rmcp-client/target/debug/rmcp-tasks-client
fi
[ -x "$RBIN" ] || { log "no rmcp-tasks-client at $RBIN"; exit 2; }

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done; }
trap cleanup EXIT

wait_url() { # logfile pid -> prints http://ADDR/mcp; polls the log for at most 30 s
  local f=$1 pid=$2
  for _ in $(seq 1 150); do
    local u
    u=$(grep -oE 'http://[^ /]+/mcp' "$f" 2>/dev/null | head -1)
    [ -n "$u" ] && { echo "$u"; return 0; }
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}

TOKEN=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
INTEROP_TOKEN=$TOKEN "$BIN" serve --config "$HERE/fixtures/mcp-tasks.toml" --listen 127.0.0.1:0 \
  --store "$OUT/tasks.sqlite3" >"$OUT/mcp-tasks.log" 2>&1 &
PIDS+=($!)
URL=$(wait_url "$OUT/mcp-tasks.log" "${PIDS[0]}") || { log "mcp-tasks did not start:"; cat "$OUT/mcp-tasks.log" >&2; exit 2; }
log "mcp-tasks ($BIN) pid ${PIDS[0]} at $URL (log $OUT/mcp-tasks.log)"

FIXTURE=()
if [ -n "$CBIN" ]; then
  "$CBIN" --listen 127.0.0.1:0 >"$OUT/conformance-server.log" 2>&1 &
  PIDS+=($!)
  CURL=$(wait_url "$OUT/conformance-server.log" "${PIDS[1]}") || { log "conformance server did not start:"; cat "$OUT/conformance-server.log" >&2; exit 2; }
  log "conformance fixture server ($CBIN) pid ${PIDS[1]} at $CURL"
  FIXTURE=(--conformance-url "$CURL")
fi

status=0
run() { # name command...
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$OUT/$name.json" 2>"$OUT/$name.err"
  local rc=$?
  cat "$OUT/$name.json"
  log "$name: exit $rc ($((SECONDS - t0)) s)$([ $rc != 0 ] && echo "; see $OUT/$name.err")"
  [ $rc = 0 ] || status=1
}
run py_modern_client timeout 150 "$INTEROP_PYTHON_MODERN" "$HERE/py_modern_client.py" --url "$URL" \
  --header "Authorization: Bearer $TOKEN" "${FIXTURE[@]}" --timeout 120
run rmcp_client timeout 150 "$RBIN" --url "$URL" --token "$TOKEN" --timeout 120
log "done: $([ $status = 0 ] && echo OK || echo FAILED); results in $OUT"
exit $status
