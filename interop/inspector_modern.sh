#!/usr/bin/env bash
# Interop driver: MCP Inspector 2.12.0's headless `mcpdo` CLI in the 2026-07-28 era
# (`connect --era modern`: server/discover, the tasks extension driven by ext-tasks 0.2.2
# inside the Inspector) against `mcp-tasks serve` over Streamable HTTP.
#
#   interop/inspector_modern.sh --url http://127.0.0.1:PORT/mcp --server-log FILE \
#       [--header 'Authorization: Bearer T']... [--tool interop_sleep --args '{"seconds":2}' --expect-text slept] \
#       [--confirm-tool interop_confirm --item widget] [--long-tool interop_sleep --long-args '{"seconds":60}'] \
#       [--timeout 180]
#
# --server-log: the server's log (stderr of `mcp-tasks serve`, info level). On this era mcpdo
# shows no task id anywhere: `tools/call` polls a server-created task to its end and prints only
# the CallToolResult, an `elicitationPending` carries no taskId, and `tasks/list` lists only
# the handles of the command's own (fresh) state, i.e. nothing. The ids come from the log
# lines "task created task=ID owner=… tool=TOOL" that appear after each call. Needs the
# server to show a principal's tasks to its other sessions (bearer tokens), because the
# running task is cancelled from a second connection: the daemon runs one connection's
# commands one after another, and `tools/call` does not return before its task ends.
#
# Isolated: a temporary HOME, MCP_INSPECTOR_SECRET_STORE=memory, a private token-gated daemon
# (`eval "$(mcpdo private)"`) stopped (by its pid if need be) and removed on exit.
#
# Checks (PASS/FAIL on stderr; one JSON line on stdout; exit 0 only if all held):
#   connect (connections/show: era modern, 2026-07-28, capabilities.extensions has
#   io.modelcontextprotocol/tasks), tools-list,
#   tools-call-task (the call became a task on the server: one "task created" for it, and
#   mcpdo printed its result), result-text, tasks-get-completed (tasks/get: completed, the
#   result inlined), tasks-result (mcpdo polls tasks/get: the same result),
#   elicit-pending (tools/call of the confirm tool: elicitationPending, origin
#   task-input-required, "Confirm ITEM?"), elicit-task-input-required (tasks/get of that
#   task from the observer: input_required with inputRequests), elicit-respond (elicitation/respond
#   confirm:=true -> tasks/update -> "confirmed ITEM"), elicit-task-completed,
#   cancel-running-before (tasks/get from the observer: working), cancel-running
#   (tasks/cancel from the observer), get-after-cancel (cancelled within 15 s),
#   long-call-after-cancel (the blocked tools/call ends with an error, no result),
#   get-unknown-error.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
URL=${MCP_URL:-}
SERVER_LOG=${MCP_SERVER_LOG:-}
TOOL=interop_sleep
ARGS='{"seconds":2}'
EXPECT_TEXT=slept
CONFIRM_TOOL=interop_confirm
ITEM=widget
LONG_TOOL=interop_sleep
LONG_ARGS='{"seconds":60}'
TIMEOUT=${MCP_TIMEOUT:-180}
HEADERS=()
usage() { sed -n '2,10p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --url) URL=$2; shift 2 ;;
    --server-log) SERVER_LOG=$2; shift 2 ;;
    --tool) TOOL=$2; shift 2 ;;
    --args) ARGS=$2; shift 2 ;;
    --expect-text) EXPECT_TEXT=$2; shift 2 ;;
    --confirm-tool) CONFIRM_TOOL=$2; shift 2 ;;
    --item) ITEM=$2; shift 2 ;;
    --long-tool) LONG_TOOL=$2; shift 2 ;;
    --long-args) LONG_ARGS=$2; shift 2 ;;
    --header) HEADERS+=("$2"); shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown option $1" >&2; usage ;;
  esac
done
[ -n "$URL" ] && [ -n "$SERVER_LOG" ] && [ -f "$SERVER_LOG" ] || usage

# shellcheck source=env.sh
. "$HERE/env.sh"
MCPDO=$INTEROP_MCPDO
[ -x "$MCPDO" ] || { echo "mcpdo not installed; run interop/install.sh" >&2; exit 2; }

START=$(date +%s)
DEADLINE=$((START + TIMEOUT))
WORK=$(mktemp -d /tmp/interop-inspector-modern.XXXXXX)
CHECKS="$WORK/checks.jsonl"
: > "$CHECKS"
log() { printf '[inspector_modern +%ss] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }

# -------------------------------------------------------------- isolation + cleanup
export HOME="$WORK/home"
mkdir -p "$HOME"
export MCP_INSPECTOR_SECRET_STORE=memory
unset MCP_INSPECTOR_DAEMON_DIR MCP_INSPECTOR_DAEMON_TOKEN MCP_CATALOG_PATH
eval "$("$MCPDO" private 2>/dev/null)" || { echo "mcpdo private failed" >&2; exit 2; }
DAEMON_DIR=${MCP_INSPECTOR_DAEMON_DIR:-}
DAEMON_PID=
BG_PID=
cleanup() {
  [ -n "$BG_PID" ] && kill "$BG_PID" 2>/dev/null
  if [ -n "$DAEMON_DIR" ] && [ -S "$DAEMON_DIR/mcpdod.sock" ] || [ -n "$DAEMON_PID" ]; then
    timeout 15 "$MCPDO" daemon stop >/dev/null 2>&1
  fi
  if [ -n "$DAEMON_PID" ]; then
    local end=$(( $(date +%s) + 5 ))
    while kill -0 "$DAEMON_PID" 2>/dev/null && [ "$(date +%s)" -lt $end ]; do sleep 0.2; done
    kill -0 "$DAEMON_PID" 2>/dev/null && { log "daemon $DAEMON_PID still alive; killing it"; kill "$DAEMON_PID" 2>/dev/null; }
  fi
  case "$DAEMON_DIR" in /tmp/*) rm -rf "$DAEMON_DIR" ;; esac
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# -------------------------------------------------------------- helpers
left() { local l=$((DEADLINE - $(date +%s))); [ $l -lt 1 ] && l=1; [ $l -gt 60 ] && l=60; echo $l; }
# do_mcpdo CONN ARGS... : stdout -> $WORK/out.json, stderr -> $WORK/err.txt, returns exit code
do_mcpdo() {
  local conn=$1; shift
  timeout "$(left)" "$MCPDO" --connection "$conn" --format json "$@" </dev/null >"$WORK/out.json" 2>"$WORK/err.txt"
}
# py EXPR FILE: a Python expression over d = the JSON in FILE (its last JSON line if the whole
# is not JSON; None if none); strings print bare, everything else as JSON
py() {
  python3 - "$2" "$1" "$ITEM" "$EXPECT_TEXT" <<'EOF'
import json, sys
path, expr, item, expect = sys.argv[1:5]
def text_of(r):
    return "\n".join(c.get("text", "") for c in ((r or {}).get("content") or []) if c.get("type") == "text")
try:
    text = open(path, encoding="utf-8").read()
    try:
        d = json.loads(text)
    except ValueError:
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
    v = eval(expr, {"d": d, "json": json, "text_of": text_of, "item": item, "expect": expect})
except Exception:
    v = None
print(v if isinstance(v, str) else json.dumps(v))
EOF
}
check() { # NAME true|false DETAIL_JSON
  python3 -c 'import json,sys; print(json.dumps({"name":sys.argv[1],"ok":sys.argv[2]=="true","detail":json.loads(sys.argv[3] or "null")}))' \
    "$1" "$2" "${3:-null}" >> "$CHECKS"
  log "$([ "$2" = true ] && echo PASS || echo FAIL) $1 ${3:-}"
}
errdetail() { py '{"exit": '"$1"', "error": (d or {}).get("error")}' "$WORK/err.txt"; }
finish() {
  python3 - "$CHECKS" "$URL" "$START" "${TASK_ID:-}" "${CONFIRM_TASK_ID:-}" "${LONG_TASK_ID:-}" <<'EOF'
import json, sys, time
checks = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = bool(checks) and all(c["ok"] for c in checks)
s = {"driver": "inspector_modern", "peer": "@modelcontextprotocol/inspector@2.12.0 (mcpdo, era modern)",
     "url": sys.argv[2], "ok": ok, "passed": sum(c["ok"] for c in checks), "failed": sum(not c["ok"] for c in checks),
     "elapsedMs": int((time.time() - int(sys.argv[3])) * 1000)}
for k, v in zip(("taskId", "confirmTaskId", "cancelledTaskId"), sys.argv[4:7]):
    if v: s[k] = v
s["checks"] = checks
print(json.dumps(s))
sys.exit(0 if ok else 1)
EOF
}
connect() { # NAME
  local hargs=()
  for h in "${HEADERS[@]}"; do hargs+=(--header "$h"); done
  timeout "$(left)" "$MCPDO" connect "$URL" --era modern --connection "$1" --elicit form \
    "${hargs[@]}" --format json </dev/null >"$WORK/out.json" 2>"$WORK/err.txt"
}
log_mark() { wc -l < "$SERVER_LOG"; }
# new_task MARK TOOL [WAIT_S]: the ids of the tasks created for TOOL after line MARK of the
# server log (polled for up to WAIT_S seconds, default 0: look once)
new_tasks() {
  local mark=$1 tool=$2 wait=${3:-0} end ids
  end=$(( $(date +%s) + wait ))
  while :; do
    ids=$(tail -n +"$((mark + 1))" "$SERVER_LOG" | sed -n "s/.*task created task=\([0-9a-zA-Z_-]*\) .*tool=$tool\$/\1/p")
    [ -n "$ids" ] || [ "$(date +%s)" -ge $end ] && break
    sleep 0.1
  done
  echo $ids
}

# -------------------------------------------------------------- 1. connect
log "mcpdo $("$MCPDO" --version 2>/dev/null) --era modern -> $URL (HOME=$HOME, daemon dir $DAEMON_DIR)"
connect main; rc=$?
if [ $rc != 0 ]; then
  check connect false "$(errdetail $rc)"
  finish; exit $?
fi
DAEMON_PID=$(timeout 15 "$MCPDO" daemon status --format json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("pid",""))' 2>/dev/null)
if do_mcpdo main connections/show; then
  check connect "$(py 'd.get("protocolEra") == "modern" and d.get("protocolVersion") == "2026-07-28" and "io.modelcontextprotocol/tasks" in ((d.get("capabilities") or {}).get("extensions") or {})' "$WORK/out.json")" \
    "$(py '{"era": d.get("protocolEra"), "protocolVersion": d.get("protocolVersion"), "server": (d.get("serverInfo") or {}).get("name"), "extensions": (d.get("capabilities") or {}).get("extensions"), "supportedVersions": d.get("supportedVersions")}' "$WORK/out.json")"
else
  check connect false "$(errdetail $?)"
  finish; exit $?
fi

# -------------------------------------------------------------- 2. tools/list
if do_mcpdo main tools/list; then
  check tools-list "$(py 'all(any(t.get("name") == n for t in d.get("tools", [])) for n in {"'"$TOOL"'", "'"$CONFIRM_TOOL"'", "'"$LONG_TOOL"'"})' "$WORK/out.json")" \
    "$(py '{"tools": [t.get("name") for t in d.get("tools", [])]}' "$WORK/out.json")"
else
  check tools-list false "$(errdetail $?)"
fi

# a second connection (same headers, so the same principal) for what the first cannot do
connect observer; rc=$?
OBSERVER=0
if [ $rc = 0 ]; then OBSERVER=1; else check connect-observer false "$(errdetail $rc)"; fi

# -------------------------------------------------------------- 3. a call that becomes a task
TASK_ID=
mark=$(log_mark)
if do_mcpdo main tools/call "$TOOL" --tool-args-json "$ARGS"; then
  cp "$WORK/out.json" "$WORK/call.json"
  ids=$(new_tasks "$mark" "$TOOL")
  n=$(echo $ids | wc -w)
  [ "$n" = 1 ] && TASK_ID=$ids
  check tools-call-task "$([ "$n" = 1 ] && echo true || echo false)" "{\"tasksCreated\":$n,\"taskId\":\"$TASK_ID\",\"isError\":$(py 'bool(d.get("isError"))' "$WORK/call.json")}"
  check result-text "$(py 'expect in text_of(d) and not d.get("isError")' "$WORK/call.json")" "$(py '{"text": text_of(d)[:120]}' "$WORK/call.json")"
else
  check tools-call-task false "$(errdetail $?)"
fi
if [ -n "$TASK_ID" ]; then
  if do_mcpdo main tasks/get "$TASK_ID"; then
    check tasks-get-completed "$(py '(d.get("task") or {}).get("status") == "completed" and expect in text_of((d["task"].get("raw") or {}).get("result"))' "$WORK/out.json")" \
      "$(py '{k: (d.get("task") or {}).get("raw", {}).get(k) for k in ("status", "ttlMs", "pollIntervalMs", "result")}' "$WORK/out.json")"
  else
    check tasks-get-completed false "$(errdetail $?)"
  fi
  if do_mcpdo main tasks/result "$TASK_ID"; then
    check tasks-result "$(py 'expect in text_of(d)' "$WORK/out.json")" "$(py '{"text": text_of(d)[:120]}' "$WORK/out.json")"
  else
    check tasks-result false "$(errdetail $?)"
  fi
fi

# -------------------------------------------------------------- 4. a task that asks for input
CONFIRM_TASK_ID=
mark=$(log_mark)
if do_mcpdo main tools/call "$CONFIRM_TOOL" --tool-args-json "{\"item\":\"$ITEM\"}"; then
  cp "$WORK/out.json" "$WORK/pending.json"
  check elicit-pending "$(py '(d.get("elicitationPending") or {}).get("origin") == "task-input-required" and d["elicitationPending"].get("message") == "Confirm " + item + "?"' "$WORK/pending.json")" \
    "$(py '{k: (d.get("elicitationPending") or {}).get(k) for k in ("origin", "message", "mode", "toolName")} if d and "elicitationPending" in d else d' "$WORK/pending.json")"
  CONFIRM_TASK_ID=$(new_tasks "$mark" "$CONFIRM_TOOL" 5)
  # from the observer: while an elicitation is pending, mcpdo refuses other commands on its
  # connection ("elicitation_pending")
  if [ -n "$CONFIRM_TASK_ID" ] && [ "$OBSERVER" = 1 ] && do_mcpdo observer tasks/get "$CONFIRM_TASK_ID"; then
    check elicit-task-input-required "$(py '(d.get("task") or {}).get("status") == "input_required" and len((d["task"].get("raw") or {}).get("inputRequests") or {}) == 1' "$WORK/out.json")" \
      "$(py '{k: (d.get("task") or {}).get("raw", {}).get(k) for k in ("status", "inputRequests")}' "$WORK/out.json")"
  else
    check elicit-task-input-required false "{\"taskId\":\"$CONFIRM_TASK_ID\",\"error\":$(errdetail 1)}"
  fi
  eid=$(py '(d.get("elicitationPending") or {}).get("elicitationId", "")' "$WORK/pending.json")
  if [ -n "$eid" ] && do_mcpdo main elicitation/respond "$eid" confirm:=true; then
    check elicit-respond "$(py '("confirmed " + item) in text_of(d) and not d.get("isError")' "$WORK/out.json")" "$(py '{"text": text_of(d)[:160]}' "$WORK/out.json")"
  else
    check elicit-respond false "$(errdetail $?)"
  fi
  if [ -n "$CONFIRM_TASK_ID" ] && do_mcpdo main tasks/get "$CONFIRM_TASK_ID"; then
    check elicit-task-completed "$(py '(d.get("task") or {}).get("status") == "completed" and ("confirmed " + item) in text_of((d["task"].get("raw") or {}).get("result"))' "$WORK/out.json")" \
      "$(py '{k: (d.get("task") or {}).get("raw", {}).get(k) for k in ("status", "result")}' "$WORK/out.json")"
  else
    check elicit-task-completed false "{\"taskId\":\"$CONFIRM_TASK_ID\"}"
  fi
else
  check elicit-pending false "$(errdetail $?)"
fi

# -------------------------------------------------------------- 5. cancel a running task (from a second connection)
LONG_TASK_ID=
if [ "$OBSERVER" = 1 ]; then
  mark=$(log_mark)
  timeout "$(left)" "$MCPDO" --connection main --format json tools/call "$LONG_TOOL" --tool-args-json "$LONG_ARGS" \
    </dev/null >"$WORK/long.json" 2>"$WORK/long.err" &
  BG_PID=$!
  LONG_TASK_ID=$(new_tasks "$mark" "$LONG_TOOL" 15)
  if [ -z "$LONG_TASK_ID" ]; then
    check cancel-running false '{"error":"no task was created for the long call within 15 s (server log)"}'
  else
    if do_mcpdo observer tasks/get "$LONG_TASK_ID"; then
      check cancel-running-before "$(py '(d.get("task") or {}).get("status") == "working"' "$WORK/out.json")" "$(py '{"status": (d.get("task") or {}).get("status")}' "$WORK/out.json")"
    else
      check cancel-running-before false "$(errdetail $?)"
    fi
    if do_mcpdo observer tasks/cancel "$LONG_TASK_ID"; then
      check cancel-running "$(py 'd.get("cancelled") is True' "$WORK/out.json")" "$(py 'd' "$WORK/out.json")"
    else
      check cancel-running false "$(errdetail $?)"
    fi
    # the cancel is an acknowledgement: the task ends cancelled once the work stopped
    status=; end=$(( $(date +%s) + 15 ))
    while [ "$(date +%s)" -lt $end ]; do
      do_mcpdo observer tasks/get "$LONG_TASK_ID" && status=$(py '(d.get("task") or {}).get("status")' "$WORK/out.json")
      [ "$status" = cancelled ] && break
      sleep 0.2
    done
    check get-after-cancel "$([ "$status" = cancelled ] && echo true || echo false)" "{\"status\":\"$status\"}"
  fi
  # the call blocked on connection main must now end, with an error and no result
  end=$(( $(date +%s) + 20 ))
  while kill -0 "$BG_PID" 2>/dev/null && [ "$(date +%s)" -lt $end ]; do sleep 0.2; done
  kill -0 "$BG_PID" 2>/dev/null && kill "$BG_PID" 2>/dev/null
  wait "$BG_PID" 2>/dev/null; bgrc=$?; BG_PID=
  if [ -n "$LONG_TASK_ID" ]; then
    check long-call-after-cancel "$([ $bgrc != 0 ] && [ $bgrc != 124 ] && [ $bgrc != 143 ] && [ ! -s "$WORK/long.json" ] && echo true || echo false)" \
      "$(py '{"exit": '"$bgrc"', "error": (d or {}).get("error")}' "$WORK/long.err")"
  fi
  timeout 15 "$MCPDO" disconnect observer </dev/null >/dev/null 2>&1
fi

# -------------------------------------------------------------- 6. an unknown task
if do_mcpdo main tasks/get no-such-task-00000000; then
  check get-unknown-error false "{\"unexpectedResult\":$(py 'd' "$WORK/out.json")}"
else
  rc=$?
  check get-unknown-error "$(py 'isinstance((d or {}).get("error"), dict) and "not found" in str(d["error"].get("message", "")).lower()' "$WORK/err.txt")" "$(errdetail $rc)"
fi

timeout 15 "$MCPDO" disconnect main </dev/null >/dev/null 2>&1
finish
