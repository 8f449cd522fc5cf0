#!/usr/bin/env bash
# OUR client (the `mcp-tasks` CLI) in the Modern era (2026-07-28: no initialize, per-request
# `_meta`, `resultType`, MRTR rounds, the tasks extension io.modelcontextprotocol/tasks) against
# peer SERVERS written by others, each on a free 127.0.0.1 port (interop/modern-peers.sh):
#   * rmcp-tasks-server (interop/rmcp-server: rmcp 3.11.0 TaskManager): tasks that complete,
#     fail, complete with isError, ask (tasks/update), run until cancelled; a plain tool;
#   * ts-modern-server.mjs (@modelcontextprotocol/server 2.4.0) and py_modern_server.py (mcp
#     2.3.0 MCPServer): a plain tool and an MRTR tool (input_required round, answered by retry).
# This is the acceptance test of the Modern client: until `--era` lands, every check that uses
# it FAILS, and the failure says so ("the CLI has no --era option yet"). Check the peers first
# with interop/modern-servers-selfcheck.sh: a failure here with a passing self-check is ours.
#
#   interop/client-peers-modern.sh [--bin PATH/TO/mcp-tasks] [--rmcp-server-bin PATH]
#                                  [--out DIR] [--timeout SECONDS] [--only rmcp|ts|py]...
#
# --bin defaults to $MCP_TASKS_BIN, else target/{release,debug}/mcp-tasks (not built here);
# --rmcp-server-bin to $RMCP_SERVER_BIN, else interop/rmcp-server is built (cargo --locked,
# debug, its own target dir). Each CLI run: stdin /dev/null (no terminal), bounded by --timeout
# (default 60 s), a private ledger OUT/ledger.sqlite3. Checks (PASS/FAIL on stderr, each with
# the command, what was expected, what was seen and, on failure, the likely reason):
#   rmcp: tools lists the six tools; rmcp_plain inline; rmcp_done → completed text;
#     rmcp_fails → exit 1 naming the error; rmcp_is_error → exit 1, isError; rmcp_asks with
#     --answer → the answer reaches the result, without --answer → declined and the hint names
#     --answer; rmcp_slow --detach → the task id, then tasks get (working), tasks cancel, tasks
#     get (cancelled), all from other processes; rmcp_asks --detach, then tasks wait --answer and
#     tasks result; SIGINT while rmcp_slow runs → exit 3, cancelled; --era auto picks Modern.
#   ts / py: tools; the echo tool; the confirm tool with --answer '{"confirm":true}' →
#     confirmed, without → declined (hint names --answer); --era auto works; ts: --era legacy
#     fails cleanly (exit 2: the server is Modern-only).
# The last stdout line is `N passed, M failed`; exit 0 only if none failed, 2 if a peer or the
# binary is missing. Files of every run in DIR (default interop/results/client-peers-modern-<UTC>):
# NAME.cmd, NAME.out, NAME.err, NAME.text, the servers' logs.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${MCP_TASKS_BIN:-}
RSBIN=${RMCP_SERVER_BIN:-}
OUT=$HERE/results/client-peers-modern-$(date -u +%Y%m%dT%H%M%SZ)
TIMEOUT=60
ONLY=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --rmcp-server-bin) RSBIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --only) ONLY+=("$2"); shift 2 ;;
    *) sed -n '2,33p' "$0" >&2; exit 2 ;;
  esac
done
[ ${#ONLY[@]} -gt 0 ] || ONLY=(rmcp ts py)
NAME=client-peers-modern
# shellcheck source=lib.sh
. "$HERE/lib.sh"
OUT=$(cd "$OUT" && pwd)
BIN=$(pick_bin "$BIN") || exit 2
case "$BIN" in /*) ;; *) BIN=$ROOT/$BIN ;; esac
# shellcheck source=env.sh
. "$HERE/env.sh"
# shellcheck source=modern-peers.sh
. "$HERE/modern-peers.sh"
log "cli: $BIN; output in $OUT"
export MCP_TASKS_LEDGER="$OUT/ledger.sqlite3"
unset MCP_TASKS_URL MCP_TASKS_TOKEN

# ------------------------------------------------------------------ running the CLI
RC=
# cli NAME ARGS... : the CLI with stdin /dev/null, bounded; NAME.cmd/.out/.err/.text; sets RC.
cli() {
  local name=$1; shift
  printf '%q ' mcp-tasks "$@" >"$OUT/$name.cmd"; echo >>"$OUT/$name.cmd"
  timeout -k 5 "$TIMEOUT" "$BIN" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" </dev/null
  RC=$?
  [ "$RC" = 124 ] && echo "client-peers-modern: TIMED OUT after ${TIMEOUT}s" >>"$OUT/$name.err"
  texts_of "$name"
}
texts_of() { # NAME: NAME.text, the text content of --json results (else the lines as they are)
  python3 - "$OUT/$1.out" "$OUT/$1.text" <<'PY'
import json, sys
texts = []
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        value = json.loads(line)
    except ValueError:
        texts.append(line.rstrip("\n"))
        continue
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        texts += [b.get("text", "") for b in value["content"] if isinstance(b, dict)]
    else:
        texts.append(line.rstrip("\n"))
open(sys.argv[2], "w", encoding="utf-8").write("\n".join(texts) + "\n")
PY
}

# interrupt NAME ARGS... : the CLI in a process group of its own; once its stderr names a task
# (at most 30 s), SIGINT to the group (as a terminal's Ctrl-C); then at most TIMEOUT s for it to
# end (then the group is killed). Sets RC.
BG_PID=
interrupt() {
  local name=$1; shift
  printf '%q ' mcp-tasks "$@" >"$OUT/$name.cmd"; echo "(SIGINT to its process group once it names the task)" >>"$OUT/$name.cmd"
  set -m
  "$BIN" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" </dev/null &
  local pid=$! deadline
  set +m
  BG_PID=$pid
  deadline=$(( $(date +%s) + 30 ))
  while [ "$(date +%s)" -lt "$deadline" ] && kill -0 "$pid" 2>/dev/null; do
    grep -qE 'task [0-9a-zA-Z-]{8,}' "$OUT/$name.err" 2>/dev/null && break
    sleep 0.1
  done
  kill -INT -- "-$pid" 2>/dev/null
  deadline=$(( $(date +%s) + TIMEOUT ))
  while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "client-peers-modern: TIMED OUT after ${TIMEOUT}s" >>"$OUT/$name.err"
    kill -KILL -- "-$pid" 2>/dev/null
  fi
  wait "$pid"
  RC=$?
  kill -KILL -- "-$pid" 2>/dev/null
  BG_PID=
  texts_of "$name"
}
trap '[ -n "$BG_PID" ] && kill -KILL -- "-$BG_PID" 2>/dev/null; stop_servers' EXIT

# ------------------------------------------------------------------ checks
passed=0
failed=0
CHECK=
RUN=
EXPECTED=()
PROBLEMS=()
check() { CHECK=$1; RUN=$2; EXPECTED=(); PROBLEMS=(); }
expect() { EXPECTED+=("$1"); }
problem() { PROBLEMS+=("$1"); }
want_rc() { expect "exit $1"; [ "$RC" = "$1" ] || problem "exit $RC, not $1"; }
want_in() { # FILE-SUFFIX (out, err, text) TEXT
  expect "$1 has '$2'"
  grep -qF -- "$2" "$OUT/$RUN.$1" || problem "$1 lacks '$2'"
}
want_match() { # FILE-SUFFIX REGEX DESCRIPTION
  expect "$3"
  grep -qE -- "$2" "$OUT/$RUN.$1" || problem "not so: $3"
}
want_py() { # DESCRIPTION EXPR, true of `j` (stdout as JSON, None if not) and `text`
  expect "$1"
  python3 - "$OUT/$RUN.out" "$OUT/$RUN.text" "$2" <<'PY' || problem "not so: $1"
import json, sys
raw = open(sys.argv[1], encoding="utf-8").read()
text = open(sys.argv[2], encoding="utf-8").read()
try:
    j = json.loads(raw)
except ValueError:
    j = None
try:
    sys.exit(0 if eval(sys.argv[3]) else 1)
except Exception:
    sys.exit(1)
PY
}
# Why a run failed, when it is plain from its stderr.
diagnose() {
  local err=$OUT/$RUN.err
  if grep -qE "unexpected argument '--era'|unrecognized.*--era|Found argument '--era'" "$err" 2>/dev/null; then
    echo "the CLI has no --era option yet: the Modern client has not landed (expected until it does)"
  elif grep -q 'TIMED OUT' "$err" 2>/dev/null; then
    echo "the CLI did not end within ${TIMEOUT}s (a wait without an end: polling, an unanswered round?)"
  elif grep -qE -- '-32022|Unsupported protocol version: 2025' "$err" 2>/dev/null; then
    echo "the CLI spoke 2025-11-25 (initialize) to a server that serves 2026-07-28 only"
  elif grep -qF 'does not run as a task on this server' "$err" 2>/dev/null; then
    echo "the CLI did not see the tool as a task tool: in 2026-07-28 the server decides per call (declare the tasks extension in _meta; expect resultType task)"
  elif grep -qiE 'initialize' "$err" 2>/dev/null; then
    echo "the CLI seems to have used the 2025-11-25 handshake (initialize) on a 2026-07-28 server"
  elif grep -qE -- '-32021|Missing required client capability' "$err" 2>/dev/null; then
    echo "the server wanted a client capability the request's _meta did not declare (tasks extension? elicitation?)"
  elif grep -qE -- '-32020|does not match' "$err" 2>/dev/null; then
    echo "a 2026-07-28 header (Mcp-Method / Mcp-Name) did not match the body"
  elif grep -qiE "resultType|unknown result|unexpected response" "$err" 2>/dev/null; then
    echo "the CLI did not understand a 2026-07-28 result shape (resultType task / input_required / complete)"
  fi
}
seen() {
  local out err
  out=$(head -c 400 "$OUT/$RUN.text" 2>/dev/null | tr '\n' ' ' | head -c 200)
  err=$(tail -n 3 "$OUT/$RUN.err" 2>/dev/null | tr '\n' ' ' | head -c 300)
  printf 'exit %s; stdout: %s; stderr: %s' "$RC" "${out:-<empty>}" "${err:-<empty>}"
}
done_check() {
  local expected e p why
  expected=
  for e in "${EXPECTED[@]}"; do expected+="${expected:+ | }$e"; done
  if [ ${#PROBLEMS[@]} = 0 ]; then
    passed=$((passed + 1))
    log "PASS $CHECK"
    log "     expected: $expected"
  else
    failed=$((failed + 1))
    log "FAIL $CHECK"
    log "     command: $(cat "$OUT/$RUN.cmd")"
    log "     expected: $expected"
    for p in "${PROBLEMS[@]}"; do log "     problem: $p"; done
    why=$(diagnose)
    [ -n "$why" ] && log "     likely reason: $why"
    log "     seen: $(seen) (files $OUT/$RUN.*)"
  fi
}
task_id_of() { # NAME: the taskId in NAME.out (JSON), else its first line if it looks like an id
  python3 - "$OUT/$1.out" <<'PY' 2>/dev/null
import json, re, sys
raw = open(sys.argv[1], encoding="utf-8").read().strip()
try:
    print(json.loads(raw)["taskId"])
except Exception:
    first = raw.splitlines()[0] if raw else ""
    if re.fullmatch(r"[0-9A-Za-z-]{8,}", first):
        print(first)
PY
}

M=(--era modern)
TASK_ON_STDERR='task [0-9a-zA-Z-]{8,}'

# ------------------------------------------------------------------ preflight
check "cli: call --help offers --era (auto|legacy|modern)" help-era
cli help-era call --help
want_rc 0
want_in out "--era"
done_check

# ------------------------------------------------------------------ rmcp
rmcp_checks() {
  local U=$1 c=(--url "$1")
  cli rmcp-tools tools --json "${c[@]}" "${M[@]}"
  check "rmcp: tools --era modern lists the six tools" rmcp-tools
  want_rc 0
  want_py "tools are rmcp_asks, rmcp_done, rmcp_fails, rmcp_is_error, rmcp_plain, rmcp_slow" \
    "sorted(t['name'] for t in j['tools']) == ['rmcp_asks','rmcp_done','rmcp_fails','rmcp_is_error','rmcp_plain','rmcp_slow']"
  done_check

  cli rmcp-plain call rmcp_plain --arg text=hi --json "${c[@]}" "${M[@]}"
  check "rmcp: call rmcp_plain (a plain tool) answers inline" rmcp-plain
  want_rc 0
  want_in text "rmcp_plain: hi"
  want_py "not isError" "j is not None and not j.get('isError')"
  done_check

  cli rmcp-done call rmcp_done --json "${c[@]}" "${M[@]}"
  check "rmcp: call rmcp_done --json: a task (CreateTaskResult, resultType task), polled with tasks/get to completed" rmcp-done
  want_rc 0
  want_in text "rmcp_done: finished"
  want_py "not isError" "j is not None and not j.get('isError')"
  want_match err "$TASK_ON_STDERR" "stderr names the task (task ID)"
  done_check

  cli rmcp-fails call rmcp_fails --json "${c[@]}" "${M[@]}"
  check "rmcp: call rmcp_fails: the task ends failed (inlined JSON-RPC error -32603) → exit 1" rmcp-fails
  want_rc 1
  expect "stdout or stderr has 'rmcp_fails: deliberate failure'"
  # grep reads the files itself: `cat … | grep -q` under pipefail fails at random when grep
  # stops at its first match and cat dies of SIGPIPE.
  grep -qF "rmcp_fails: deliberate failure" "$OUT/rmcp-fails.out" "$OUT/rmcp-fails.err" ||
    problem "the task's error message is not shown"
  done_check

  cli rmcp-is-error call rmcp_is_error --json "${c[@]}" "${M[@]}"
  check "rmcp: call rmcp_is_error: the task completes with isError: true → exit 1" rmcp-is-error
  want_rc 1
  want_in text "rmcp_is_error: deliberate tool error"
  want_py "isError is true" "j['isError'] is True"
  done_check

  cli rmcp-asks call rmcp_asks --arg item=widget --answer '{"confirm":true}' --json "${c[@]}" "${M[@]}"
  check "rmcp: call rmcp_asks --answer: input_required (key confirm) answered with tasks/update, then completed" rmcp-asks
  want_rc 0
  want_in text 'rmcp_asks widget: {"action":"accept","content":{"confirm":true}}'
  want_in err "Confirm widget?"
  done_check

  cli rmcp-asks-no-answer call rmcp_asks --arg item=gadget --json "${c[@]}" "${M[@]}"
  check "rmcp: call rmcp_asks without --answer and without a terminal: declined, the hint names --answer" rmcp-asks-no-answer
  want_rc 0
  want_in text 'rmcp_asks gadget: {"action":"decline"}'
  want_in err "--answer"
  done_check

  cli rmcp-detach call rmcp_slow --arg seconds=120 --detach --json "${c[@]}" "${M[@]}"
  check "rmcp: call rmcp_slow --detach --json prints the task at once" rmcp-detach
  want_rc 0
  want_py "a task: taskId, status working" "j['taskId'] and j['status'] == 'working'"
  done_check
  local slow
  slow=$(task_id_of rmcp-detach)
  [ -n "$slow" ] || slow=NO-TASK-ID-FROM-DETACH

  cli rmcp-get-working tasks get "$slow" --json "${c[@]}" "${M[@]}"
  check "rmcp: tasks get of the detached task (another process) shows working" rmcp-get-working
  want_rc 0
  want_py "taskId $slow, status working" "j['taskId'] == '$slow' and j['status'] == 'working'"
  done_check

  cli rmcp-cancel tasks cancel "$slow" --json "${c[@]}" "${M[@]}"
  check "rmcp: tasks cancel of the running task is acknowledged (tasks/cancel)" rmcp-cancel
  want_rc 0
  want_py "taskId $slow, status working or cancelled" "j['taskId'] == '$slow' and j['status'] in ('working', 'cancelled')"
  done_check

  local deadline=$(( $(date +%s) + 10 ))
  while :; do
    cli rmcp-get-cancelled tasks get "$slow" --json "${c[@]}" "${M[@]}"
    grep -q '"cancelled"' "$OUT/rmcp-get-cancelled.out" && break
    [ "$RC" = 0 ] && [ "$(date +%s)" -lt "$deadline" ] || break
    sleep 0.2
  done
  check "rmcp: tasks get after the cancel shows cancelled (within 10 s)" rmcp-get-cancelled
  want_rc 0
  want_py "status cancelled" "j['status'] == 'cancelled'"
  done_check

  cli rmcp-asks-detach call rmcp_asks --arg item=later --detach --json "${c[@]}" "${M[@]}"
  check "rmcp: call rmcp_asks --detach --json prints the task" rmcp-asks-detach
  want_rc 0
  want_py "a task, working or input_required" "j['taskId'] and j['status'] in ('working', 'input_required')"
  done_check
  local later
  later=$(task_id_of rmcp-asks-detach)
  [ -n "$later" ] || later=NO-TASK-ID-FROM-DETACH

  cli rmcp-wait tasks wait "$later" --answer '{"confirm":true}' --json "${c[@]}" "${M[@]}"
  check "rmcp: tasks wait --answer from another process answers the input request and collects the result" rmcp-wait
  want_rc 0
  want_in text 'rmcp_asks later: {"action":"accept","content":{"confirm":true}}'
  done_check

  cli rmcp-result tasks result "$later" --json "${c[@]}" "${M[@]}"
  check "rmcp: tasks result gives the result again" rmcp-result
  want_rc 0
  want_in text 'rmcp_asks later: {"action":"accept","content":{"confirm":true}}'
  done_check

  interrupt rmcp-ctrl-c call rmcp_slow --arg seconds=120 --json "${c[@]}" "${M[@]}"
  check "rmcp: Ctrl-C (SIGINT to the group) while rmcp_slow runs cancels the task (tasks/cancel) → exit 3" rmcp-ctrl-c
  want_rc 3
  want_py "stdout is the task, status cancelled" "j['status'] == 'cancelled' and j['taskId']"
  done_check

  cli rmcp-auto call rmcp_done --json --url "$U" --era auto
  check "rmcp: --era auto picks Modern (server/discover offers 2026-07-28 and the tasks extension)" rmcp-auto
  want_rc 0
  want_in text "rmcp_done: finished"
  done_check
}

# ------------------------------------------------------------------ ts / py (MRTR, no tasks)
mrtr_checks() { # PEER ECHO-TOOL CONFIRM-TOOL URL
  local t=$1 echo=$2 confirm=$3 U=$4 c=(--url "$4")
  cli "$t-tools" tools --json "${c[@]}" "${M[@]}"
  check "$t: tools --era modern lists $echo and $confirm" "$t-tools"
  want_rc 0
  want_py "tools are $confirm, $echo" "sorted(t['name'] for t in j['tools']) == sorted(['$echo', '$confirm'])"
  done_check

  cli "$t-echo" call "$echo" --arg text=hi --json "${c[@]}" "${M[@]}"
  check "$t: call $echo (plain, resultType complete)" "$t-echo"
  want_rc 0
  want_in text "$echo: hi"
  want_no_task
  done_check

  cli "$t-confirm" call "$confirm" --arg item=widget --answer '{"confirm":true}' --json "${c[@]}" "${M[@]}"
  check "$t: call $confirm --answer '{\"confirm\":true}': the input_required round answered by a retry" "$t-confirm"
  want_rc 0
  want_in text "$confirm widget: confirmed"
  want_in err "Confirm widget?"
  want_no_task
  done_check

  cli "$t-confirm-no-answer" call "$confirm" --arg item=gadget --json "${c[@]}" "${M[@]}"
  check "$t: call $confirm without --answer and without a terminal: declined, the hint names --answer" "$t-confirm-no-answer"
  want_rc 0
  want_in text "$confirm gadget: declined"
  want_in err "--answer"
  done_check

  cli "$t-auto" call "$echo" --arg text=auto --json --url "$U" --era auto
  check "$t: --era auto picks Modern" "$t-auto"
  want_rc 0
  want_in text "$echo: auto"
  done_check
}
want_no_task() {
  expect "no task (stderr names none)"
  ! grep -qE "$TASK_ON_STDERR" "$OUT/$RUN.err" || problem "stderr names a task"
}

for peer in "${ONLY[@]}"; do
  start_modern_peer "$peer" || exit 2
  case "$peer" in
    rmcp) rmcp_checks "$PEER_URL" ;;
    ts)
      mrtr_checks ts ts_echo ts_confirm "$PEER_URL"
      cli ts-legacy call ts_echo --arg text=old --json --url "$PEER_URL" --era legacy
      check "ts: --era legacy against a Modern-only server fails cleanly (exit 2, names the protocol version)" ts-legacy
      want_rc 2
      want_match err "2026-07-28|[Uu]nsupported protocol version|-32022" "stderr names the version problem"
      done_check ;;
    py) mrtr_checks py py_echo py_confirm "$PEER_URL" ;;
  esac
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
