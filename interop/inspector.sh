#!/usr/bin/env bash
# Interop driver: MCP Inspector 2.12.0's headless `mcpdo` CLI (legacy era = 2025-11-25 tasks)
# against an MCP server over Streamable HTTP.
#
#   interop/inspector.sh --url http://127.0.0.1:3901/mcp --tool simulate-research-query \
#       --args '{"topic":"rust"}' [--long-tool NAME] [--long-args JSON] [--expect-text SUBSTR] \
#       [--header 'Authorization: Bearer T']... [--cancel-running observer|off] [--timeout 120]
#
# Environment equivalents: MCP_URL MCP_TOOL MCP_ARGS MCP_LONG_TOOL MCP_LONG_ARGS MCP_EXPECT_TEXT
# MCP_CANCEL_RUNNING MCP_TIMEOUT. Needs interop/install.sh to have run.
#
# It uses an isolated HOME (temporary) and a private, token-gated mcpdo daemon
# (`eval "$(mcpdo private)"`), and stops that daemon (and only that one) on exit.
#
# Checks (JSON summary line on stdout; exit 0 only if all held):
#   connect (era legacy, protocol 2025-11-25, capabilities.tasks), tools-list,
#   tools-call-task (`tools/call --task` -> CallToolResult with related-task _meta),
#   [result-text], tasks-list-contains, tasks-get-completed, tasks-result,
#   cancel-running + get-after-cancel + long-call-after-cancel (see below),
#   cancel-completed-error, get-unknown-error (mcpdo fails with a server error; its output does
#   not carry the JSON-RPC code, so -32602 is only recorded when the message text shows it).
#
# cancel-running: mcpdo serialises every command of one connection in its daemon (a
# per-connection rpc queue) and `tools/call --task` waits for the task to end, so the
# connection that started a task can never send `tasks/cancel` while the task runs.
# --cancel-running observer (default) therefore starts the long call on connection A in the
# background and, on a second connection B to the same server with the same --header
# values, waits for the task to show up in `tasks/list`, then `tasks/cancel`s it and checks
# `tasks/get` -> cancelled. That only works when the server shows a requestor's tasks to
# its other sessions (tasks scoped by an authenticated principal); servers whose tasks are
# bound to one session (server-everything) cannot pass it: use --cancel-running off there,
# which lists the check under "skipped" instead of "checks".
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
URL=${MCP_URL:-}
TOOL=${MCP_TOOL:-}
ARGS=${MCP_ARGS:-'{}'}
LONG_TOOL=${MCP_LONG_TOOL:-}
LONG_ARGS=${MCP_LONG_ARGS:-}
EXPECT_TEXT=${MCP_EXPECT_TEXT:-}
CANCEL_RUNNING=${MCP_CANCEL_RUNNING:-observer}
TIMEOUT=${MCP_TIMEOUT:-120}
HEADERS=()
usage() { sed -n '2,12p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --url) URL=$2; shift 2 ;;
    --tool) TOOL=$2; shift 2 ;;
    --args) ARGS=$2; shift 2 ;;
    --long-tool) LONG_TOOL=$2; shift 2 ;;
    --long-args) LONG_ARGS=$2; shift 2 ;;
    --expect-text) EXPECT_TEXT=$2; shift 2 ;;
    --header) HEADERS+=("$2"); shift 2 ;;
    --cancel-running) CANCEL_RUNNING=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown option $1" >&2; usage ;;
  esac
done
[ -n "$URL" ] && [ -n "$TOOL" ] || usage
LONG_TOOL=${LONG_TOOL:-$TOOL}
LONG_ARGS=${LONG_ARGS:-$ARGS}
case "$CANCEL_RUNNING" in observer|off) ;; *) echo "--cancel-running must be observer or off" >&2; exit 2 ;; esac

# shellcheck source=env.sh
. "$HERE/env.sh"
MCPDO=$INTEROP_MCPDO
[ -x "$MCPDO" ] || { echo "mcpdo not installed; run interop/install.sh" >&2; exit 2; }

START=$(date +%s)
DEADLINE=$((START + TIMEOUT))
WORK=$(mktemp -d /tmp/interop-inspector.XXXXXX)
CHECKS="$WORK/checks.jsonl"
SKIPPED="$WORK/skipped.jsonl"
: > "$CHECKS"; : > "$SKIPPED"
log() { printf '[inspector +%ss] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }

# -------------------------------------------------------------- isolation + cleanup
export HOME="$WORK/home"
mkdir -p "$HOME"
export MCP_INSPECTOR_SECRET_STORE=memory   # no keychain here; keep nothing on disk
unset MCP_INSPECTOR_DAEMON_DIR MCP_INSPECTOR_DAEMON_TOKEN MCP_CATALOG_PATH
eval "$("$MCPDO" private)" || { echo "mcpdo private failed" >&2; exit 2; }
DAEMON_DIR=${MCP_INSPECTOR_DAEMON_DIR:-}
DAEMON_PID=
BG_PID=

cleanup() {
  [ -n "$BG_PID" ] && kill "$BG_PID" 2>/dev/null
  if [ -n "$DAEMON_DIR" ] && [ -S "$DAEMON_DIR/mcpdod.sock" ] || [ -n "$DAEMON_PID" ]; then
    timeout 15 "$MCPDO" daemon stop >/dev/null 2>&1
  fi
  if [ -n "$DAEMON_PID" ]; then
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.3; done
    kill -0 "$DAEMON_PID" 2>/dev/null && { log "daemon $DAEMON_PID still alive; killing it"; kill "$DAEMON_PID" 2>/dev/null; }
  fi
  case "$DAEMON_DIR" in /tmp/*) rm -rf "$DAEMON_DIR" ;; esac
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# -------------------------------------------------------------- helpers
left() { local l=$((DEADLINE - $(date +%s))); [ $l -lt 1 ] && l=1; [ $l -gt 60 ] && l=60; echo $l; }
# mcpdo CONN ARGS... : stdout -> $WORK/out.json, stderr -> $WORK/err.txt, returns exit code
do_mcpdo() {
  local conn=$1; shift
  timeout "$(left)" "$MCPDO" --connection "$conn" --format json "$@" </dev/null >"$WORK/out.json" 2>"$WORK/err.txt"
}
# py EXPR FILE: evaluate a Python expression over d = parsed JSON of FILE (None if unparsable)
py() {
  python3 - "$2" "$1" <<'EOF'
import json, sys
path, expr = sys.argv[1], sys.argv[2]
try:
    text = open(path, encoding="utf-8").read()
    try:
        d = json.loads(text)
    except ValueError:
        # stderr may hold log lines before the JSON error object
        d = None
        for line in reversed(text.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    d = json.loads(line); break
                except ValueError:
                    pass
except OSError:
    d = None
try:
    v = eval(expr, {"d": d, "json": json})
except Exception:
    v = None
if isinstance(v, (dict, list)) or v is None or isinstance(v, bool):
    print(json.dumps(v))
else:
    print(v)
EOF
}
# check NAME OK(true|false) DETAIL_JSON
check() {
  python3 -c 'import json,sys; print(json.dumps({"name":sys.argv[1],"ok":sys.argv[2]=="true","detail":json.loads(sys.argv[3] or "null")}))' \
    "$1" "$2" "${3:-null}" >> "$CHECKS"
  log "$([ "$2" = true ] && echo PASS || echo FAIL) $1 ${3:-}"
}
skip() {
  python3 -c 'import json,sys; print(json.dumps({"name":sys.argv[1],"reason":sys.argv[2]}))' "$1" "$2" >> "$SKIPPED"
  log "SKIP $1 $2"
}
errdetail() { py '{"exit": '"$1"', "error": (d or {}).get("error"), "jsonRpcCodeInMessage": "-32602" in str(((d or {}).get("error") or {}).get("message", ""))}' "$WORK/err.txt"; }
# After a failed command: did mcpdo report an error from the server (not a CLI/usage, auth or
# connection problem)? mcpdo's JSON error envelope is {"error":{"code":"error","message":...}}:
# it does NOT carry the JSON-RPC error code (server-everything happens to repeat
# "MCP error -32602:" inside its messages, mcp-tasks does not), so -32602 itself is checked
# by ts_client/py_client only; here the detail records whether the text shows it.
protocol_error() {
  py 'isinstance(d, dict) and isinstance(d.get("error"), dict) and d["error"].get("code") == "error" and bool(d["error"].get("message")) and not any(s in d["error"]["message"] for s in ("is required", "Use --task-id", "Unknown", "not connected"))' "$WORK/err.txt"
}

finish() {
  python3 - "$CHECKS" "$SKIPPED" "$URL" "$TOOL" "$LONG_TOOL" "$START" "$CANCEL_RUNNING" "${TASK_ID:-}" "${LONG_TASK_ID:-}" <<'EOF'
import json, sys, time
checks = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
skipped = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
ok = bool(checks) and all(c["ok"] for c in checks)
s = {"driver": "inspector", "peer": "@modelcontextprotocol/inspector@2.12.0 (mcpdo, era legacy)",
     "url": sys.argv[3], "tool": sys.argv[4], "longTool": sys.argv[5], "ok": ok,
     "passed": sum(c["ok"] for c in checks), "failed": sum(not c["ok"] for c in checks),
     "elapsedMs": int((time.time() - int(sys.argv[6])) * 1000), "cancelRunning": sys.argv[7]}
if sys.argv[8]: s["taskId"] = sys.argv[8]
if sys.argv[9]: s["cancelledTaskId"] = sys.argv[9]
s["checks"] = checks
if skipped: s["skipped"] = skipped
print(json.dumps(s))
sys.exit(0 if ok else 1)
EOF
}

connect() { # NAME
  local hargs=()
  for h in "${HEADERS[@]}"; do hargs+=(--header "$h"); done
  timeout "$(left)" "$MCPDO" connect "$URL" --era legacy --connection "$1" --elicit off \
    "${hargs[@]}" --format json </dev/null >"$WORK/out.json" 2>"$WORK/err.txt"
}

# -------------------------------------------------------------- 1. connect
log "mcpdo $("$MCPDO" --version 2>/dev/null) -> $URL (HOME=$HOME, daemon dir $DAEMON_DIR)"
connect main; rc=$?
if [ $rc != 0 ]; then
  check connect false "$(errdetail $rc)"
  finish; exit $?
fi
DAEMON_PID=$(timeout 15 "$MCPDO" daemon status --format json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("pid",""))' 2>/dev/null)
if do_mcpdo main connections/show; then
  check connect "$(py 'd.get("protocolEra") == "legacy" and d.get("protocolVersion") == "2025-11-25" and ((d.get("capabilities") or {}).get("tasks") or {}).get("requests", {}).get("tools", {}).get("call") is not None' "$WORK/out.json")" \
    "$(py '{"era": d.get("protocolEra"), "protocolVersion": d.get("protocolVersion"), "server": (d.get("serverInfo") or {}).get("name"), "tasks": (d.get("capabilities") or {}).get("tasks")}' "$WORK/out.json")"
else
  check connect false "$(errdetail $?)"
  finish; exit $?
fi

# -------------------------------------------------------------- 2. tools/list
if do_mcpdo main tools/list; then
  detail=$(py '{"count": len(d.get("tools", [])), **{n: next(((t.get("execution") or {}).get("taskSupport", "(absent = forbidden)") for t in d.get("tools", []) if t.get("name") == n), "MISSING") for n in {"'"$TOOL"'", "'"$LONG_TOOL"'"}}}' "$WORK/out.json")
  ok=$(py 'all(any(t.get("name") == n for t in d.get("tools", [])) for n in {"'"$TOOL"'", "'"$LONG_TOOL"'"})' "$WORK/out.json")
  check tools-list "$ok" "$detail"
else
  check tools-list false "$(errdetail $?)"
fi

# -------------------------------------------------------------- 3. tools/call --task
TASK_ID=
if do_mcpdo main tools/call "$TOOL" --tool-args-json "$ARGS" --task; then
  cp "$WORK/out.json" "$WORK/call.json"
  TASK_ID=$(py '((d.get("_meta") or {}).get("io.modelcontextprotocol/related-task") or {}).get("taskId", "")' "$WORK/call.json")
  iserr=$(py 'bool(d.get("isError"))' "$WORK/call.json")
  ok=false; [ -n "$TASK_ID" ] && [ "$iserr" = false ] && ok=true
  check tools-call-task $ok "{\"taskId\":\"$TASK_ID\",\"isError\":$iserr}"
  if [ -n "$EXPECT_TEXT" ]; then
    has=$(py '"'"${EXPECT_TEXT//\"/\\\"}"'" in "\n".join(c.get("text","") for c in d.get("content",[]) if c.get("type")=="text")' "$WORK/call.json")
    check result-text "$has" "$(py '{"head": "\n".join(c.get("text","") for c in d.get("content",[]) if c.get("type")=="text")[:120]}' "$WORK/call.json")"
  fi
else
  rc=$?
  check tools-call-task false "$(errdetail $rc)"
fi

if [ -n "$TASK_ID" ]; then
  # ------------------------------------------------------------ 4. tasks/list, tasks/get, tasks/result
  if do_mcpdo main tasks/list; then
    check tasks-list-contains "$(py 'any(t.get("taskId") == "'"$TASK_ID"'" for t in d.get("tasks", []))' "$WORK/out.json")" \
      "$(py '{"count": len(d.get("tasks", [])), "statuses": [t.get("status") for t in d.get("tasks", [])]}' "$WORK/out.json")"
  else
    check tasks-list-contains false "$(errdetail $?)"
  fi
  if do_mcpdo main tasks/get "$TASK_ID"; then
    # mcpdo wraps the task: {"task": {normalised fields..., "raw": <wire object>}}
    check tasks-get-completed "$(py '(d.get("task") or {}).get("status") == "completed" and "ttl" in ((d.get("task") or {}).get("raw") or {})' "$WORK/out.json")" \
      "$(py '{k: (d.get("task") or {}).get("raw", {}).get(k) for k in ("status", "ttl", "pollInterval", "createdAt", "lastUpdatedAt")}' "$WORK/out.json")"
  else
    check tasks-get-completed false "$(errdetail $?)"
  fi
  if do_mcpdo main tasks/result "$TASK_ID"; then
    check tasks-result "$(py '((d.get("_meta") or {}).get("io.modelcontextprotocol/related-task") or {}).get("taskId") == "'"$TASK_ID"'" and isinstance(d.get("content"), list)' "$WORK/out.json")" \
      "$(py '{"relatedTask": (d.get("_meta") or {}).get("io.modelcontextprotocol/related-task"), "isError": bool(d.get("isError")), "contentItems": len(d.get("content") or [])}' "$WORK/out.json")"
  else
    check tasks-result false "$(errdetail $?)"
  fi
fi

# -------------------------------------------------------------- 5. cancel a running task
LONG_TASK_ID=
if [ "$CANCEL_RUNNING" = off ]; then
  skip cancel-running "disabled (--cancel-running off): mcpdo serialises commands per connection and tools/call --task blocks until the task ends, so only a second session that can see the task could cancel it"
else
  connect observer; rc=$?
  if [ $rc != 0 ]; then
    check cancel-running false "{\"step\":\"connect observer\",\"error\":$(errdetail $rc)}"
  else
    # tasks the observer can already see (so that the new one can be told apart)
    do_mcpdo observer tasks/list && py '[t.get("taskId") for t in d.get("tasks", [])]' "$WORK/out.json" > "$WORK/before.json" || echo '[]' > "$WORK/before.json"
    [ -n "$TASK_ID" ] && python3 -c 'import json,sys; l=json.load(open(sys.argv[1])); l.append(sys.argv[2]); json.dump(l, open(sys.argv[1],"w"))' "$WORK/before.json" "$TASK_ID"
    timeout "$(left)" "$MCPDO" --connection main --format json tools/call "$LONG_TOOL" --tool-args-json "$LONG_ARGS" --task \
      </dev/null >"$WORK/long.json" 2>"$WORK/long.err" &
    BG_PID=$!
    obs_deadline=$(( $(date +%s) + 15 ))   # the task must show up within 15 s
    while [ "$(date +%s)" -lt $obs_deadline ] && [ "$(date +%s)" -lt $DEADLINE ]; do
      if do_mcpdo observer tasks/list; then
        LONG_TASK_ID=$(python3 - "$WORK/out.json" "$WORK/before.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); before = set(json.load(open(sys.argv[2])))
new = [t["taskId"] for t in d.get("tasks", []) if t.get("taskId") not in before and t.get("status") in ("working", "input_required")]
print(new[0] if new else "")
EOF
)
        [ -n "$LONG_TASK_ID" ] && break
      fi
      kill -0 "$BG_PID" 2>/dev/null || break
      sleep 0.2
    done
    if [ -z "$LONG_TASK_ID" ]; then
      check cancel-running false '{"error":"the observer connection never saw the long task in tasks/list (tasks bound to one session? use --cancel-running off)"}'
    elif do_mcpdo observer tasks/cancel "$LONG_TASK_ID"; then
      # mcpdo prints {"cancelled": true, "taskId": ...}, not the wire Task
      check cancel-running "$(py 'd.get("cancelled") is True' "$WORK/out.json")" "$(py 'd' "$WORK/out.json")"
      sleep 0.3
      if do_mcpdo observer tasks/get "$LONG_TASK_ID"; then
        check get-after-cancel "$(py '(d.get("task") or {}).get("status") == "cancelled"' "$WORK/out.json")" \
          "$(py '{k: (d.get("task") or {}).get("raw", {}).get(k) for k in ("status", "statusMessage")}' "$WORK/out.json")"
      else
        rc=$?
        # a receiver MAY delete a cancelled task at once: -32602 is then compliant
        check get-after-cancel "$(py '"-32602" in str((d or {}).get("error", {}).get("message", ""))' "$WORK/err.txt")" "$(errdetail $rc)"
      fi
    else
      check cancel-running false "$(errdetail $?)"
    fi
    # the blocked call on connection main must now end (with an error, not a result); if the
    # task was never found, don't wait for it (later commands on main queue behind it anyway)
    if [ -n "$LONG_TASK_ID" ]; then
      for _ in $(seq 1 100); do kill -0 "$BG_PID" 2>/dev/null || break; sleep 0.2; done
    fi
    if kill -0 "$BG_PID" 2>/dev/null; then kill "$BG_PID" 2>/dev/null; fi
    wait "$BG_PID" 2>/dev/null; bgrc=$?; BG_PID=
    if [ -n "$LONG_TASK_ID" ]; then
      # the call blocked on connection main must end without a result once its task is cancelled
      check long-call-after-cancel "$([ $bgrc != 0 ] && [ $bgrc != 124 ] && [ ! -s "$WORK/long.json" ] && echo true || echo false)" \
        "$(py '{"exit": '"$bgrc"', "error": (d or {}).get("error")}' "$WORK/long.err")"
    fi
    timeout 15 "$MCPDO" disconnect observer </dev/null >/dev/null 2>&1
  fi
fi

# -------------------------------------------------------------- 6. error cases
if [ -n "$TASK_ID" ]; then
  if do_mcpdo main tasks/cancel "$TASK_ID"; then
    check cancel-completed-error false "{\"unexpectedResult\":$(py 'd' "$WORK/out.json")}"
  else
    rc=$?
    check cancel-completed-error "$(protocol_error)" "$(errdetail $rc)"
  fi
fi
if do_mcpdo main tasks/get no-such-task-00000000; then
  check get-unknown-error false "{\"unexpectedResult\":$(py 'd' "$WORK/out.json")}"
else
  rc=$?
  check get-unknown-error "$(protocol_error)" "$(errdetail $rc)"
fi

timeout 15 "$MCPDO" disconnect main </dev/null >/dev/null 2>&1
finish
