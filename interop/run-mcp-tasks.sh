#!/usr/bin/env bash
# Run the task drivers (ts_client, py_client, py_elicit, inspector) against our own server:
# `mcp-tasks serve` with interop/fixtures/mcp-tasks.toml over Streamable HTTP on a free
# 127.0.0.1 port, with a bearer token (so tasks belong to one principal and the Inspector's
# observer session can cancel a running task), on a temporary SQLite store. Stops the server.
#
#   interop/run-mcp-tasks.sh [--bin PATH/TO/mcp-tasks] [--conformance-bin PATH/TO/conformance_server] [--out DIR]
#
# --bin defaults to $MCP_TASKS_BIN, else target/release/mcp-tasks, else target/debug/mcp-tasks
# (build it first: cargo build --release -p mcp-tasks).
# --conformance-bin (optional; or $MCP_TASKS_CONFORMANCE_BIN): the conformance fixture server
# (cargo build --release -p mcp-tasks-server --example conformance_server); when given,
# conformance.sh runs against it too (it takes --listen ADDR and prints
# "listening on http://ADDR/mcp" first on stdout).
# stdout: the drivers' JSON lines; stderr: progress. Exit 0 only if every driver passed.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${MCP_TASKS_BIN:-}
CBIN=${MCP_TASKS_CONFORMANCE_BIN:-}
OUT=$HERE/results/mcp-tasks-$(date -u +%Y%m%dT%H%M%SZ)
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --conformance-bin) CBIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) sed -n '2,15p' "$0" >&2; exit 2 ;;
  esac
done
NAME=run-mcp-tasks
# shellcheck source=lib.sh
. "$HERE/lib.sh"
BIN=$(pick_bin "$BIN") || exit 2
# shellcheck source=env.sh
. "$HERE/env.sh"
start_mcp_tasks "$BIN"

AUTH=(--header "Authorization: Bearer $TOKEN")
T=(--tool interop_echo --args '{"word":"hello"}' --expect-text 'interop-ok: hello'
   --long-tool interop_sleep --long-args '{"seconds":60}')
run ts_client timeout 120 "$INTEROP_NODE" "$HERE/ts_client.mjs" --url "$URL" "${T[@]}" "${AUTH[@]}"
run py_client timeout 120 "$INTEROP_PYTHON" "$HERE/py_client.py" --url "$URL" "${T[@]}" "${AUTH[@]}"
# elicitation from a command tool (line protocol) inside a task, answered by the Python SDK
run py_elicit timeout 120 "$INTEROP_PYTHON" "$HERE/py_elicit.py" --url "$URL" --tool interop_confirm "${AUTH[@]}"
run inspector timeout 180 "$HERE/inspector.sh" --url "$URL" "${T[@]}" "${AUTH[@]}" --cancel-running observer

if [ -n "$CBIN" ]; then
  start_fixture "$CBIN"
  run conformance timeout 600 "$HERE/conformance.sh" --url "$CURL" --out "$OUT/conformance"
fi
log "done: $([ $status = 0 ] && echo OK || echo FAILED); results in $OUT"
exit $status
