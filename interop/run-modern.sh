#!/usr/bin/env bash
# Run the Modern-era (2026-07-28) peers against our own servers: `mcp-tasks serve` with
# interop/fixtures/mcp-tasks.toml over Streamable HTTP (a bearer token, a temporary SQLite
# store) and the conformance fixture server, both on free 127.0.0.1 ports, stopped at exit.
#   * ext_tasks_client.mjs (ext-tasks 0.2.2 on TS client 2.4.0) and inspector_modern.sh
#     (Inspector 2.12.0 mcpdo --era modern): tasks, input through tasks/update, cancel, MRTR;
#   * ts_modern_client.mjs (TS client 2.4.0 pinned to 2026-07-28) and py_modern_client.py
#     (Python SDK mcp 2.3.0): plain calls and MRTR on mcp-tasks, prompts and resources (one
#     that asks) on the fixture;
#   * rmcp-tasks-client (interop/rmcp-client, rmcp 3.11.0): tasks with input answered by
#     tasks/update, without input, cancelled; an MRTR round;
#   * claude_code.sh (Claude Code 2.1.328: `claude mcp add` over stdio and HTTP, `claude mcp
#     list`), which starts servers of its own.
#
#   interop/run-modern.sh [--bin PATH/TO/mcp-tasks] [--conformance-bin PATH/TO/conformance_server]
#                         [--rmcp-client-bin PATH] [--out DIR]
#
# --bin defaults to $MCP_TASKS_BIN, else target/{release,debug}/mcp-tasks; --conformance-bin to
# $MCP_TASKS_CONFORMANCE_BIN (without it the drivers' fixture checks are left out, not passed).
# --rmcp-client-bin (or $RMCP_CLIENT_BIN): a built rmcp-tasks-client; without it the script
# builds interop/rmcp-client (cargo build --locked, debug, in its own target dir
# interop/rmcp-client/target, whatever CARGO_TARGET_DIR says).
# Needs interop/install.sh. stdout: the drivers' JSON lines; stderr: progress. Exit 0 only if
# every driver passed; 2 if a binary or the peers are missing.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${MCP_TASKS_BIN:-}
CBIN=${MCP_TASKS_CONFORMANCE_BIN:-}
RBIN=${RMCP_CLIENT_BIN:-}
OUT=$HERE/results/modern-$(date -u +%Y%m%dT%H%M%SZ)
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --conformance-bin) CBIN=$2; shift 2 ;;
    --rmcp-client-bin) RBIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) sed -n '2,24p' "$0" >&2; exit 2 ;;
  esac
done
NAME=run-modern
# shellcheck source=lib.sh
. "$HERE/lib.sh"
BIN=$(pick_bin "$BIN") || exit 2
# shellcheck source=env.sh
. "$HERE/env.sh"
[ -x "$INTEROP_PYTHON_MODERN" ] || { log "no $INTEROP_PYTHON_MODERN: run interop/install.sh"; exit 2; }

if [ -z "$RBIN" ]; then
  log "building interop/rmcp-client (debug, --locked, target dir interop/rmcp-client/target)"
  t0=$SECONDS
  (cd "$HERE/rmcp-client" && CARGO_TARGET_DIR="$HERE/rmcp-client/target" timeout 1800 cargo build --locked) \
    >"$OUT/rmcp-client-build.log" 2>&1 || { log "rmcp-client build failed:"; tail -n 30 "$OUT/rmcp-client-build.log" >&2; exit 2; }
  log "rmcp-client built in $((SECONDS - t0)) s"
  RBIN=$HERE/rmcp-client/target/debug/rmcp-tasks-client
fi
[ -x "$RBIN" ] || { log "no rmcp-tasks-client at $RBIN"; exit 2; }

start_mcp_tasks "$BIN"
AUTH=(--header "Authorization: Bearer $TOKEN")
TS_FIXTURE=()
PY_FIXTURE=()
if [ -n "$CBIN" ]; then
  start_fixture "$CBIN"
  TS_FIXTURE=(--fixture-url "$CURL")
  PY_FIXTURE=(--conformance-url "$CURL")
fi

# The task that asks is interop_confirm_later (a task before it asks); interop_confirm asks at
# once, which in this era is a round of the call before any task (MRTR composition).
run ext_tasks_client timeout 120 "$INTEROP_NODE" "$HERE/ext_tasks_client.mjs" --url "$URL" "${AUTH[@]}" \
  --confirm-tool interop_confirm_later --mrtr-tool interop_confirm --wire "$OUT/ext_tasks_client.wire.jsonl"
run ts_modern_client timeout 120 "$INTEROP_NODE" "$HERE/ts_modern_client.mjs" --url "$URL" "${AUTH[@]}" "${TS_FIXTURE[@]}"
run py_modern_client timeout 150 "$INTEROP_PYTHON_MODERN" "$HERE/py_modern_client.py" --url "$URL" \
  "${AUTH[@]}" "${PY_FIXTURE[@]}" --timeout 120
run rmcp_client timeout 150 "$RBIN" --url "$URL" --token "$TOKEN" --timeout 120
run inspector_modern timeout 240 "$HERE/inspector_modern.sh" --url "$URL" --server-log "$OUT/mcp-tasks.log" "${AUTH[@]}" \
  --confirm-tool interop_confirm_later
run claude_code timeout 180 "$HERE/claude_code.sh" --bin "$BIN" --out "$OUT/claude-code"

log "done: $([ $status = 0 ] && echo OK || echo FAILED); results in $OUT"
exit $status
