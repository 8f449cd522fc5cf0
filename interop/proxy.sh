#!/usr/bin/env bash
# `mcp-tasks proxy` between MCP peers written by others: upstream servers without task support
# (or with their own), downstream clients that speak tasks in either era.
#
#   interop/proxy.sh [--bin PATH] [--out DIR]
#
# Upstreams (pinned, interop/install.sh):
#   python   interop/proxy_upstream.py on the Python SDK mcp 1.30.0 (stdio): a slow tool with
#            progress (interop_sleep), a quick one (interop_echo), elicitation (interop_confirm,
#            interop_confirm_later); the names and answers of interop/fixtures/mcp-tasks.toml
#   everything-stdio, everything-http   @modelcontextprotocol/server-everything 2026.8.31 over
#            stdio (--upstream-cmd) and Streamable HTTP (--upstream-url)
# Each upstream gets its own `mcp-tasks proxy --listen 127.0.0.1:0` (HTTP, a bearer token,
# principal "interop", a store in OUT), and these drivers run against the proxy:
#   python:      ts_client.mjs (TypeScript SDK 1.32.2, 2025-11-25 tasks: callToolStream, getTask,
#                listTasks, cancel of a running task, errors), inspector_modern.sh (MCP
#                Inspector 2.12.0 `mcpdo --era modern`, 2026-07-28 tasks extension: a call made
#                a task, tasks/get, elicitation through input_required answered with
#                tasks/update, cancel), py_elicit.py (Python SDK client, elicitation in a task)
#   python-handoff: ts_handoff_client.mjs (the TS SDK client without tasks, a 5 s request timeout)
#                on the upstream's 20 s interop_sleep: handed off at sync_wait 3 s, collected with
#                the helper tools task_status / task_result;
#   everything-*: ts_client.mjs with get-sum (a plain upstream tool as a task) and
#                trigger-long-running-operation (cancelled while it runs)
# Binary: --bin, else target/release or target/debug (see lib.sh). Output in DIR (default
# interop/results/proxy-<UTC time>): one NAME.json line per driver on stdout, NAME.err, logs.
# The last stderr line says OK or FAILED; exit 0 only if every driver passed.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${MCP_TASKS_BIN:-}
OUT=$HERE/results/proxy-$(date -u +%Y%m%dT%H%M%SZ)
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) sed -n '2,27p' "$0" >&2; exit 2 ;;
  esac
done
NAME=proxy
. "$HERE/lib.sh"
BIN=$(pick_bin "$BIN") || exit 2
. "$HERE/env.sh"
[ -x "$INTEROP_PYTHON" ] && [ -f "$INTEROP_EVERYTHING" ] || { log "peers missing: run interop/install.sh"; exit 2; }

TOKEN=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
AUTH=(--header "Authorization: Bearer $TOKEN")
cat >"$OUT/proxy.toml" <<TOML
[server]
poll_interval = "500ms"

[[server.auth.tokens]]
principal = "interop"
token_env = "INTEROP_TOKEN"
TOML
quote() { python3 -c 'import shlex, sys; print(shlex.join(sys.argv[1:]))' "$@"; }

# start_proxy LABEL UPSTREAM-ARGS... : a proxy of that upstream; sets URL and LOG.
start_proxy() {
  local label=$1; shift
  LOG=$OUT/proxy-$label.log
  INTEROP_TOKEN=$TOKEN "$BIN" proxy --config "${PROXY_CONFIG:-$OUT/proxy.toml}" --listen 127.0.0.1:0 \
    --store "$OUT/proxy-$label.sqlite3" "$@" >"$LOG" 2>&1 &
  local pid=$! deadline=$(( $(date +%s) + 60 ))
  PIDS+=($pid)
  URL=
  # Its own address ("listening on …"), not the upstream URL it names before.
  while [ -z "$URL" ] && [ "$(date +%s)" -lt $deadline ] && kill -0 "$pid" 2>/dev/null; do
    URL=$(sed -n 's|^mcp-tasks: listening on \(http://[^ ]*/mcp\)$|\1|p' "$LOG" | head -1)
    [ -n "$URL" ] || sleep 0.1
  done
  [ -n "$URL" ] || { log "the proxy of $label did not start:"; cat "$LOG" >&2; exit 1; }
  log "proxy of $label: pid $pid at $URL (log $LOG)"
}

# ---------------------------------------------------------------- Python SDK upstream
start_proxy python --upstream-cmd "$(quote "$INTEROP_PYTHON" "$HERE/proxy_upstream.py")"
run python_ts_client timeout 120 "$INTEROP_NODE" "$HERE/ts_client.mjs" --url "$URL" "${AUTH[@]}" \
  --tool interop_echo --args '{"word":"hello"}' --expect-text 'interop-ok: hello' \
  --long-tool interop_sleep --long-args '{"seconds":60}'
run python_inspector_modern timeout 240 "$HERE/inspector_modern.sh" --url "$URL" --server-log "$LOG" "${AUTH[@]}" \
  --confirm-tool interop_confirm_later
run python_py_elicit timeout 120 "$INTEROP_PYTHON" "$HERE/py_elicit.py" --url "$URL" --tool interop_confirm "${AUTH[@]}"

# Long calls through the proxy for a host without tasks: the TS SDK client without tasks, its
# request timeout at 5 s, calls the Python upstream's 20 s tool; the proxy (sync_wait 3 s) hands
# the call off to a task and the client collects it with the helper tools.
cat >"$OUT/proxy-handoff.toml" <<TOML
[server]
poll_interval = "500ms"
sync_wait = "3s"
heartbeat = "1s"

[[server.auth.tokens]]
principal = "interop"
token_env = "INTEROP_TOKEN"
TOML
PROXY_CONFIG=$OUT/proxy-handoff.toml start_proxy python-handoff --upstream-cmd "$(quote "$INTEROP_PYTHON" "$HERE/proxy_upstream.py")"
run python_ts_handoff_client timeout 150 "$INTEROP_NODE" "$HERE/ts_handoff_client.mjs" --url "$URL" "${AUTH[@]}" \
  --tool interop_sleep --control-tool none --seconds 20 --expect slept

# ---------------------------------------------------------------- server-everything
EVERYTHING_T=(--tool get-sum --args '{"a":2,"b":3}' --expect-text 'The sum of 2 and 3 is 5.'
  --long-tool trigger-long-running-operation --long-args '{"duration":60,"steps":60}')
start_proxy everything-stdio --upstream-cmd "$(quote "$INTEROP_NODE" "$INTEROP_EVERYTHING" stdio)"
run everything_stdio_ts_client timeout 120 "$INTEROP_NODE" "$HERE/ts_client.mjs" --url "$URL" "${AUTH[@]}" "${EVERYTHING_T[@]}"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$OUT" && PORT=$PORT exec "$INTEROP_NODE" "$INTEROP_EVERYTHING" streamableHttp) >"$OUT/everything-http.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 150); do grep -q "listening on port" "$OUT/everything-http.log" 2>/dev/null && break; sleep 0.2; done
grep -q "listening on port" "$OUT/everything-http.log" || { log "server-everything (HTTP) did not start"; cat "$OUT/everything-http.log" >&2; exit 1; }
start_proxy everything-http --upstream-url "http://127.0.0.1:$PORT/mcp"
run everything_http_ts_client timeout 120 "$INTEROP_NODE" "$HERE/ts_client.mjs" --url "$URL" "${AUTH[@]}" "${EVERYTHING_T[@]}"

log "done: $([ $status = 0 ] && echo OK || echo FAILED); results in $OUT"
exit $status
