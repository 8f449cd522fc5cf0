#!/usr/bin/env bash
# Run the Modern-era (2026-07-28) peers against our own servers:
#   * ext_tasks_client.mjs (ext-tasks 0.2.2 on TS client 2.4.0) and inspector_modern.sh
#     (Inspector 2.12.0 mcpdo --era modern) against `mcp-tasks serve` with
#     interop/fixtures/mcp-tasks.toml over Streamable HTTP on a free 127.0.0.1 port, with a
#     bearer token, on a temporary SQLite store;
#   * ts_modern_client.mjs (TS client 2.4.0 pinned to 2026-07-28) against that server and
#     against the conformance fixture server (prompts, resources);
#   * claude_code.sh (Claude Code 2.1.328: `claude mcp add` over stdio and HTTP, `claude mcp list`),
#     which starts servers of its own.
#
#   interop/run-modern.sh [--bin PATH/TO/mcp-tasks] [--conformance-bin PATH/TO/conformance_server] [--out DIR]
#
# --bin defaults to $MCP_TASKS_BIN, else target/{release,debug}/mcp-tasks; --conformance-bin to
# $MCP_TASKS_CONFORMANCE_BIN (without it the fixture checks of ts_modern_client are left out).
# stdout: the drivers' JSON lines; stderr: progress. Exit 0 only if every driver passed.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${MCP_TASKS_BIN:-}
CBIN=${MCP_TASKS_CONFORMANCE_BIN:-}
OUT=$HERE/results/modern-$(date -u +%Y%m%dT%H%M%SZ)
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --conformance-bin) CBIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) sed -n '2,16p' "$0" >&2; exit 2 ;;
  esac
done
if [ -z "$BIN" ]; then
  for b in "$ROOT/target/release/mcp-tasks" "$ROOT/target/debug/mcp-tasks"; do [ -x "$b" ] && { BIN=$b; break; }; done
fi
[ -n "$BIN" ] && [ -x "$BIN" ] || { echo "no mcp-tasks binary (build it, or pass --bin)" >&2; exit 2; }
# shellcheck source=env.sh
. "$HERE/env.sh"
mkdir -p "$OUT"
log() { printf '[run-modern] %s\n' "$*" >&2; }

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done; }
trap cleanup EXIT

wait_url() { # logfile pid -> prints http://ADDR/mcp (polls for 30 s)
  local f=$1 pid=$2 deadline=$(( $(date +%s) + 30 )) u
  while [ "$(date +%s)" -lt $deadline ]; do
    u=$(grep -oE 'http://[^ /]+/mcp' "$f" 2>/dev/null | head -1)
    [ -n "$u" ] && { echo "$u"; return 0; }
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

TOKEN=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
INTEROP_TOKEN=$TOKEN "$BIN" serve --config "$HERE/fixtures/mcp-tasks.toml" --listen 127.0.0.1:0 \
  --store "$OUT/tasks.sqlite3" >"$OUT/mcp-tasks.log" 2>&1 &
PIDS+=($!)
URL=$(wait_url "$OUT/mcp-tasks.log" "${PIDS[0]}") || { log "mcp-tasks did not start:"; cat "$OUT/mcp-tasks.log" >&2; exit 1; }
log "mcp-tasks ($BIN) pid ${PIDS[0]} at $URL (log $OUT/mcp-tasks.log)"
AUTH=(--header "Authorization: Bearer $TOKEN")

FIXTURE=()
if [ -n "$CBIN" ]; then
  "$CBIN" --listen 127.0.0.1:0 >"$OUT/conformance-server.log" 2>&1 &
  PIDS+=($!)
  CURL=$(wait_url "$OUT/conformance-server.log" "${PIDS[1]}") || { log "conformance server did not start"; cat "$OUT/conformance-server.log" >&2; exit 1; }
  CURL=${CURL/127.0.0.1/localhost}
  log "conformance fixture server pid ${PIDS[1]} at $CURL"
  FIXTURE=(--fixture-url "$CURL")
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
# The task that asks is interop_confirm_later (a task before it asks); interop_confirm asks at
# once, which in this era is a round of the call before any task (MRTR composition).
run ext_tasks_client timeout 120 "$INTEROP_NODE" "$HERE/ext_tasks_client.mjs" --url "$URL" "${AUTH[@]}" \
  --confirm-tool interop_confirm_later --mrtr-tool interop_confirm --wire "$OUT/ext_tasks_client.wire.jsonl"
run ts_modern_client timeout 120 "$INTEROP_NODE" "$HERE/ts_modern_client.mjs" --url "$URL" "${AUTH[@]}" "${FIXTURE[@]}"
run inspector_modern timeout 240 "$HERE/inspector_modern.sh" --url "$URL" --server-log "$OUT/mcp-tasks.log" "${AUTH[@]}" \
  --confirm-tool interop_confirm_later
run claude_code timeout 180 "$HERE/claude_code.sh" --bin "$BIN" --out "$OUT/claude-code"

log "done: $([ $status = 0 ] && echo OK || echo FAILED); results in $OUT"
exit $status
