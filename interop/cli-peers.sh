#!/usr/bin/env bash
# Our `mcp-tasks` CLI (the host side) against MCP servers written by others: the reference
# server @modelcontextprotocol/server-everything 2026.8.31 over stdio and Streamable HTTP,
# and the TypeScript SDK 1.32.2's example server simpleTaskInteractive (HTTP).
#
#   interop/cli-peers.sh [--out DIR] [--timeout SECONDS] [--no-build]
#
# Binary: CLI_PEERS_BIN, else <target>/release/mcp-tasks, built first with
# `cargo build --release -p mcp-tasks` unless --no-build. Each CLI run is bounded by
# --timeout (default 90 s) and gets a private ledger (DIR/ledger.sqlite3).
#
# Checks (PASS/FAIL on stderr, each with what was expected and what was seen):
#   server-everything, stdio (--cmd "node .../index.js stdio") and HTTP (--url):
#     tools lists simulate-research-query (taskSupport required); get-sum called plainly,
#     --arg typed as numbers; --arg ambiguous=maybe refused before the call; the research
#     --json to its report; ambiguous=true answered with --answer (input_required, the
#     answer reaches the report); ambiguous=true without --answer and without a terminal
#     (declined, the hint names --answer); Ctrl-C while it runs cancels it (exit 3,
#     cancelled): SIGINT to the CLI's process group, as a terminal sends it (over stdio the
#     spawned server must not get it: server-everything exits on SIGINT), and over stdio
#     also SIGINT to the CLI's PID alone.
#     HTTP only: --detach prints the id at once and `tasks pending` lists it; tasks list;
#     tasks get/wait/cancel from another process are refused with "Task not found" (exit 2):
#     server-everything keeps one task store per session, so a task lives only as long as
#     the connection that made it.
#   simpleTaskInteractive (its store is shared by all sessions; it sends its elicitation and
#     sampling requests on the standalone GET stream): tools; confirm_delete answered accept
#     true ("Deleted 'important.txt'"), accept false and declined ("Deletion cancelled");
#     --detach, tasks get (input_required), tasks wait --answer from a second process,
#     tasks get (completed), tasks result; write_haiku without --sampling-cmd (the tool fails,
#     exit 1, naming sampling).
#   simpleTaskInteractive: write_haiku answered through --sampling-cmd
#     (interop/sampling_responder.py: a fixed haiku, each request logged).
#   server-everything, client-hosted tasks (stdio and HTTP): tools lists
#     trigger-elicitation-request-async; calling it with --answer completes with the answer
#     (the server polled the task the CLI hosts); without --answer it is declined. tools
#     lists trigger-sampling-request-async; answered through --sampling-cmd; with
#     --sampling-cmd false the hosted task fails.
#
# The last line on stdout is `N passed, M failed`; exit 0 only when none failed (2 when the
# build, the peers or a server start fail). Output of every run in DIR (default
# interop/results/cli-peers-<UTC time>): NAME.out, NAME.err, server logs, build.log.
# Servers are started on free localhost ports and stopped by PID on exit.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OUT=
TIMEOUT=90
BUILD=1
usage() { sed -n '2,43p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) usage ;;
    *) echo "unknown option $1" >&2; usage ;;
  esac
done
log() { printf '[cli-peers] %s\n' "$*" >&2; }

# shellcheck source=env.sh
. "$HERE/env.sh"
SDK="$INTEROP_NPM_MAIN/node_modules/@modelcontextprotocol/sdk"
INTERACTIVE_SERVER="$SDK/dist/esm/examples/server/simpleTaskInteractive.js"
if [ ! -f "$INTEROP_EVERYTHING" ] || [ ! -f "$INTERACTIVE_SERVER" ] || [ ! -x "$INTEROP_NODE" ]; then
  log "peers missing; running interop/install.sh"
  "$HERE/install.sh" || { log "interop/install.sh failed"; exit 2; }
fi

OUT=${OUT:-$HERE/results/cli-peers-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [ -n "${CLI_PEERS_BIN:-}" ]; then
  BIN=$CLI_PEERS_BIN
else
  TARGET=$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])') || exit 2
  BIN=$TARGET/release/mcp-tasks
fi
case "$BIN" in /*) ;; *) BIN=$ROOT/$BIN ;; esac
if [ "$BUILD" = 1 ]; then
  log "building: cargo build --release -p mcp-tasks"
  (cd "$ROOT" && cargo build --release -p mcp-tasks) >"$OUT/build.log" 2>&1 ||
    { log "build failed; see $OUT/build.log"; tail -20 "$OUT/build.log" >&2; exit 2; }
fi
[ -x "$BIN" ] || { log "$BIN missing (build it or drop --no-build)"; exit 2; }
log "cli: $BIN; node $("$INTEROP_NODE" --version); server-everything $("$INTEROP_NODE" -p \
  "require('$INTEROP_NPM_MAIN/node_modules/@modelcontextprotocol/server-everything/package.json').version"); sdk $("$INTEROP_NODE" -p "require('$SDK/package.json').version")"
log "output in $OUT"

# The CLI's environment: a private ledger, no URL or token from the caller's shell.
export MCP_TASKS_LEDGER="$OUT/ledger.sqlite3"
unset MCP_TASKS_URL MCP_TASKS_TOKEN
RESPONDER=(python3 "$HERE/sampling_responder.py" --log "$OUT/sampling-requests.jsonl")
# --cmd and --sampling-cmd are split like a shell would: quote the words for that
shell_join() { python3 -c 'import shlex, sys; print(shlex.join(sys.argv[1:]))' "$@"; }
SAMPLING_CMD=$(shell_join "${RESPONDER[@]}")
EVERYTHING_STDIO=$(shell_join "$INTEROP_NODE" "$INTEROP_EVERYTHING" stdio)

# ------------------------------------------------------------------ servers
PIDS=()
BG_PID=
stop_all() {
  local pid
  [ -n "$BG_PID" ] && kill -KILL -- "-$BG_PID" 2>/dev/null
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
}
trap stop_all EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# start_server NAME READY_PATTERN COMMAND... : on a free port (PORT env); sets URL; retries
# with another port if the server dies before it is ready (port taken in between).
start_server() {
  local name=$1 ready=$2; shift 2
  local attempt port pid
  for attempt in 1 2 3; do
    port=$(free_port)
    (cd "$OUT" && PORT=$port exec "$@") >"$OUT/$name.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 150); do
      if grep -q "$ready" "$OUT/$name.log" 2>/dev/null; then
        PIDS+=("$pid")
        URL=http://localhost:$port/mcp
        log "$name: pid $pid at $URL (log $OUT/$name.log)"
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    log "$name did not start on port $port (attempt $attempt):"; sed 's/^/  ! /' "$OUT/$name.log" >&2
  done
  return 1
}

# ------------------------------------------------------------------ running the CLI
RC=
ELAPSED_MS=
# cli NAME ARGS... : runs the CLI (stdin /dev/null, so no terminal), NAME.out/.err; sets RC
# and ELAPSED_MS.
cli() {
  local name=$1; shift
  printf '%q ' mcp-tasks "$@" >"$OUT/$name.cmd"; echo >>"$OUT/$name.cmd"
  local t0
  t0=$(date +%s%N)
  timeout -k 5 "$TIMEOUT" "$BIN" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" </dev/null
  RC=$?
  ELAPSED_MS=$((($(date +%s%N) - t0) / 1000000))
  [ "$RC" = 124 ] && echo "cli-peers: TIMED OUT after ${TIMEOUT}s" >>"$OUT/$name.err"
  # --json results: their text content, for the text checks
  python3 - "$OUT/$name.out" "$OUT/$name.text" <<'PY'
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

# ------------------------------------------------------------------ checks
passed=0
failed=0
CHECK=
RUN=
EXPECTED=()
PROBLEMS=()
# check NAME RUN : a check about the CLI run RUN (its files); then want_* lines; then done_check.
check() { CHECK=$1; RUN=$2; EXPECTED=(); PROBLEMS=(); }
expect() { EXPECTED+=("$1"); }
problem() { PROBLEMS+=("$1"); }
want_rc() {
  expect "exit $1"
  [ "$RC" = "$1" ] || problem "exit $RC, not $1"
}
# want_in FILE-SUFFIX TEXT : the run's FILE (out, err, text) contains TEXT (fixed string)
want_in() {
  expect "$1 has '$2'"
  grep -qF -- "$2" "$OUT/$RUN.$1" || problem "$1 lacks '$2'"
}
want_not_in() {
  expect "$1 lacks '$2'"
  ! grep -qF -- "$2" "$OUT/$RUN.$1" || problem "$1 has '$2'"
}
# want_py DESCRIPTION PYTHON-EXPR : EXPR is true of `j` (stdout parsed as JSON) and `text`
want_py() {
  expect "$1"
  python3 - "$OUT/$RUN.out" "$OUT/$RUN.text" "$2" <<'PY' || problem "not so: $1"
import json, sys
raw = open(sys.argv[1], encoding="utf-8").read()
text = open(sys.argv[2], encoding="utf-8").read()
try:
    j = json.loads(raw)
except ValueError:
    j = None
sys.exit(0 if eval(sys.argv[3]) else 1)
PY
}
want_no_task() {
  expect "no task started (stderr names none)"
  ! grep -qE 'task [0-9a-f-]{8,}' "$OUT/$RUN.err" || problem "stderr names a task"
}
seen() { # a one-line excerpt of what the run printed
  local out err
  out=$(head -c 400 "$OUT/$RUN.text" 2>/dev/null | tr '\n' ' ' | head -c 160)
  err=$(tail -n 3 "$OUT/$RUN.err" 2>/dev/null | tr '\n' ' ' | head -c 240)
  printf 'exit %s; stdout: %s; stderr: %s' "$RC" "${out:-<empty>}" "${err:-<empty>}"
}
done_check() {
  local expected e
  expected=
  for e in "${EXPECTED[@]}"; do expected+="${expected:+ | }$e"; done
  if [ ${#PROBLEMS[@]} = 0 ]; then
    passed=$((passed + 1))
    log "PASS $CHECK"
    log "     expected: $expected"
    log "     seen: $(seen)"
  else
    failed=$((failed + 1))
    log "FAIL $CHECK"
    log "     expected: $expected"
    local p
    for p in "${PROBLEMS[@]}"; do log "     problem: $p"; done
    log "     seen: $(seen) (files $OUT/$RUN.*)"
  fi
}

# Ctrl-C while the research runs: SIGINT once the CLI names its task on stderr (plus 1 s). The CLI
# runs in a process group of its own (set -m), with any stdio server it spawns; TARGET `group`
# signals the whole group, as a terminal's Ctrl-C does, `cli` only the CLI's PID. Bounded by
# TIMEOUT (then the group is killed).
interrupt_run() { # NAME TARGET(cli|group) ARGS...
  local name=$1 target=$2; shift 2
  printf '%q ' mcp-tasks "$@" >"$OUT/$name.cmd"; echo "(SIGINT to the $target, 1 s in)" >>"$OUT/$name.cmd"
  set -m
  "$BIN" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" </dev/null &
  local pid=$!
  set +m
  BG_PID=$pid
  for _ in $(seq 1 300); do
    grep -qE 'task [0-9a-f-]{8,}' "$OUT/$name.err" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  sleep 1
  if [ "$target" = group ]; then kill -INT -- "-$pid" 2>/dev/null; else kill -INT "$pid" 2>/dev/null; fi
  local waited=0
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt $((TIMEOUT * 10)) ]; do sleep 0.1; waited=$((waited + 1)); done
  if kill -0 "$pid" 2>/dev/null; then
    echo "cli-peers: TIMED OUT after ${TIMEOUT}s" >>"$OUT/$name.err"
    kill -KILL -- "-$pid" 2>/dev/null
  fi
  wait "$pid"
  RC=$?
  kill -KILL -- "-$pid" 2>/dev/null # whatever the CLI left in its group
  BG_PID=
  cp "$OUT/$name.out" "$OUT/$name.text"
}

ctrl_c_check() { # LABEL TARGET CONNECT-ARGS...
  local t=$1 target=$2; shift 2
  local what="Ctrl-C (SIGINT to the CLI's process group, as a terminal sends it)"
  [ "$target" = cli ] && what="SIGINT to the CLI alone"
  interrupt_run "$t-ctrl-c-$target" "$target" call "$RESEARCH" --arg topic=cancel-me --json "$@"
  check "$t: $what while the research runs cancels the task" "$t-ctrl-c-$target"
  want_rc 3
  want_py "stdout is the task, status cancelled" "j['status'] == 'cancelled' and j['taskId']"
  done_check
}

# ------------------------------------------------------------------ server-everything
RESEARCH=simulate-research-query
everything_checks() { # LABEL CONNECT-ARGS...
  local t=$1; shift
  local c=("$@")

  cli "$t-tools" tools --json "${c[@]}"
  check "$t: tools lists $RESEARCH with taskSupport required" "$t-tools"
  want_rc 0
  want_py "tools[$RESEARCH].execution.taskSupport == required" \
    "any(t['name'] == '$RESEARCH' and t.get('execution', {}).get('taskSupport') == 'required' for t in j['tools'])"
  done_check

  cli "$t-plain" call get-sum --arg a=2 --arg b=3.5 --json "${c[@]}"
  check "$t: a tool without tasks (get-sum) is called plainly, --arg typed as numbers" "$t-plain"
  want_rc 0
  want_in text "The sum of 2 and 3.5 is 5.5."
  want_py "a plain result: no related-task _meta" \
    "'io.modelcontextprotocol/related-task' not in (j.get('_meta') or {})"
  done_check

  cli "$t-bad-arg" call "$RESEARCH" --arg topic=rust --arg ambiguous=maybe "${c[@]}"
  check "$t: --arg that does not fit the peer's schema is refused before the call" "$t-bad-arg"
  want_rc 2
  want_in err "ambiguous=maybe"
  want_no_task
  done_check

  cli "$t-research" call "$RESEARCH" --arg topic=rust --json "${c[@]}"
  check "$t: call $RESEARCH topic=rust --json completes with the report" "$t-research"
  want_rc 0
  want_in text "# Research Report: rust"
  want_in text "Stage 4: Generating report"
  want_py "not isError; related-task _meta names the task" \
    "not j.get('isError') and j['_meta']['io.modelcontextprotocol/related-task']['taskId']"
  done_check

  cli "$t-ambiguous" call "$RESEARCH" --arg topic=python --arg ambiguous=true \
    --answer '{"interpretation":"snake"}' --json "${c[@]}"
  check "$t: ambiguous=true, input_required answered with --answer" "$t-ambiguous"
  want_rc 0
  want_in err 'The research query "python" could have multiple interpretations'
  want_in text "# Research Report: python (snake)"
  want_in text "**Clarification**: snake"
  want_in text '`working` → `input_required` → `working` → `completed`'
  want_in text 'After receiving clarification ("snake")'
  done_check

  cli "$t-declined" call "$RESEARCH" --arg topic=python --arg ambiguous=true --json "${c[@]}"
  check "$t: ambiguous=true without --answer or terminal: declined with a hint" "$t-declined"
  want_rc 0
  want_in err 'The research query "python" could have multiple interpretations'
  want_in err "--answer"
  want_in err '"interpretation"'
  want_in text "User declined - using default interpretation"
  done_check

  # over stdio the server must be out of the terminal's process group (server-everything
  # exits on SIGINT): the group check passes only when it still answers our tasks/cancel
  ctrl_c_check "$t" group "${c[@]}"
  if [ "$t" = stdio ]; then ctrl_c_check "$t" cli "${c[@]}"; fi
}

# client-hosted tasks: the server sends elicitation/create with params.task, the CLI answers
# with a task of its own, and the server polls our tasks/get and reads our tasks/result
hosted_elicitation_checks() { # LABEL CONNECT-ARGS...
  local t=$1; shift
  local c=("$@")
  cli "$t-async-tools" tools --json "${c[@]}"
  check "$t: tools lists trigger-elicitation-request-async (the CLI declares tasks.requests.elicitation.create)" \
    "$t-async-tools"
  want_rc 0
  want_py "trigger-elicitation-request-async listed" \
    "'trigger-elicitation-request-async' in {t['name'] for t in j['tools']}"
  done_check

  cli "$t-elicit-async" call trigger-elicitation-request-async \
    --answer '{"name":"Ada Lovelace","favoriteColor":"Blue","agreeToTerms":true}' "${c[@]}"
  check "$t: trigger-elicitation-request-async, the CLI hosts the task, answered with --answer" "$t-elicit-async"
  want_rc 0
  want_in text "[COMPLETED] User provided the requested information!"
  want_in text "- Name: Ada Lovelace"
  want_in text "- Favorite Color: Blue"
  want_in text "Task created: "
  want_not_in text "[SYNC]"
  done_check

  cli "$t-elicit-async-declined" call trigger-elicitation-request-async "${c[@]}"
  check "$t: trigger-elicitation-request-async without --answer or terminal: the hosted task declines" \
    "$t-elicit-async-declined"
  want_rc 0
  want_in text "[DECLINED] User declined to provide the requested information."
  want_in text "Task created: "
  want_in err "--answer"
  done_check
}

# the same for sampling/createMessage, answered through --sampling-cmd
hosted_sampling_checks() { # LABEL CONNECT-ARGS...
  local t=$1; shift
  local c=("$@")
  cli "$t-async-sampling-tools" tools --json "${c[@]}"
  check "$t: tools lists trigger-sampling-request-async (the CLI declares sampling and tasks.requests.sampling.createMessage)" \
    "$t-async-sampling-tools"
  want_rc 0
  want_py "trigger-sampling-request-async listed" \
    "'trigger-sampling-request-async' in {t['name'] for t in j['tools']}"
  done_check

  cli "$t-sampling-async" call trigger-sampling-request-async --arg prompt="a haiku about $t" \
    --sampling-cmd "$SAMPLING_CMD" "${c[@]}"
  check "$t: trigger-sampling-request-async, the CLI hosts the task, answered by --sampling-cmd" "$t-sampling-async"
  want_rc 0
  want_in text "[COMPLETED] Async sampling completed!"
  want_in text "Task created: "
  want_in text "Cherry blossoms fall"
  want_in text "cli-peers-responder"
  want_not_in text "[SYNC]"
  expect "the responder was asked for 'a haiku about $t'"
  grep -qF "Resource trigger-sampling-request-async context: a haiku about $t" "$OUT/sampling-requests.jsonl" 2>/dev/null ||
    problem "sampling-requests.jsonl has no request with the prompt"
  done_check

  cli "$t-sampling-async-fails" call trigger-sampling-request-async --arg prompt=nothing \
    --sampling-cmd false "${c[@]}"
  check "$t: trigger-sampling-request-async with a --sampling-cmd that fails: the hosted task fails" \
    "$t-sampling-async-fails"
  want_rc 0
  want_in text "[FAILED]"
  want_in text "Task created: "
  want_not_in text "[COMPLETED]"
  done_check
}

log "=== server-everything over stdio: --cmd \"node .../server-everything/dist/index.js stdio\""
everything_checks stdio --cmd "$EVERYTHING_STDIO"
hosted_elicitation_checks stdio --cmd "$EVERYTHING_STDIO"
hosted_sampling_checks stdio --cmd "$EVERYTHING_STDIO"

log "=== server-everything over Streamable HTTP"
start_server server-everything "listening on port" "$INTEROP_NODE" "$INTEROP_EVERYTHING" streamableHttp ||
  { log "server-everything would not start"; exit 2; }
EURL=$URL
everything_checks http --url "$EURL"

cli http-detach call "$RESEARCH" --arg topic=detached --detach --url "$EURL"
check "http: call --detach prints the task id and exits at once" http-detach
want_rc 0
DETACHED=$(head -n 1 "$OUT/http-detach.out")
expect "stdout is one task id"
[[ "$DETACHED" =~ ^[0-9a-f-]{8,}$ ]] && [ "$(wc -l <"$OUT/http-detach.out")" = 1 ] || problem "stdout is not one id"
expect "back in under 3.5 s (the research takes 4 s; took $ELAPSED_MS ms)"
[ "$ELAPSED_MS" -lt 3500 ] || problem "took $ELAPSED_MS ms"
done_check

cli http-pending tasks pending
check "http: tasks pending lists the detached task with its URL" http-pending
want_rc 0
want_in out "$DETACHED"
want_in out "$EURL"
done_check

cli http-list tasks list --json --url "$EURL"
check "http: tasks list --json (a new session: server-everything lists only its own tasks)" http-list
want_rc 0
want_py "a JSON object with an empty tasks array" "j['tasks'] == []"
done_check

for op in get wait cancel; do
  cli "http-$op-other-session" tasks "$op" "$DETACHED" --url "$EURL"
  check "http: tasks $op of the detached task from another process is refused (server-everything keeps tasks per session)" \
    "http-$op-other-session"
  want_rc 2
  want_in err "Task not found"
  done_check
done
hosted_elicitation_checks http --url "$EURL"
hosted_sampling_checks http --url "$EURL"

# ------------------------------------------------------------------ simpleTaskInteractive
log "=== TS SDK example server simpleTaskInteractive over Streamable HTTP"
start_server simpleTaskInteractive "Starting server on" "$INTEROP_NODE" "$INTERACTIVE_SERVER" ||
  { log "simpleTaskInteractive would not start"; exit 2; }
IURL=$URL
I=(--url "$IURL")

cli sti-tools tools --json "${I[@]}"
check "interactive: tools lists confirm_delete and write_haiku, both taskSupport required" sti-tools
want_rc 0
want_py "both tools required" \
  "sorted(t['name'] for t in j['tools'] if t.get('execution', {}).get('taskSupport') == 'required') == ['confirm_delete', 'write_haiku']"
done_check

cli sti-confirm call confirm_delete --arg filename=important.txt --answer '{"confirm":true}' "${I[@]}"
check "interactive: confirm_delete answered {confirm: true} through --answer" sti-confirm
want_rc 0
want_in err "Are you sure you want to delete 'important.txt'?"
want_in out "Deleted 'important.txt'"
done_check

cli sti-confirm-false call confirm_delete --arg filename=important.txt --answer '{"confirm":false}' "${I[@]}"
check "interactive: confirm_delete answered {confirm: false}" sti-confirm-false
want_rc 0
want_in out "Deletion cancelled"
want_not_in out "Deleted"
done_check

cli sti-declined call confirm_delete --arg filename=important.txt "${I[@]}"
check "interactive: confirm_delete without --answer or terminal: declined with a hint" sti-declined
want_rc 0
want_in err "Are you sure you want to delete 'important.txt'?"
want_in err "--answer"
want_in err '"confirm"'
want_in out "Deletion cancelled"
done_check

cli sti-detach call confirm_delete --arg filename=later.txt --detach --json "${I[@]}"
check "interactive: confirm_delete --detach --json prints the task" sti-detach
want_rc 0
want_py "a task, working or input_required" "j['taskId'] and j['status'] in ('working', 'input_required')"
done_check
LATER=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["taskId"])' "$OUT/sti-detach.out" 2>/dev/null)

# the elicitation waits in the server's queue for a tasks/result: the task is input_required
for _ in $(seq 1 20); do
  cli sti-get-waiting tasks get "$LATER" --json "${I[@]}"
  grep -q '"input_required"' "$OUT/sti-get-waiting.out" && break
  sleep 0.5
done
check "interactive: tasks get of the detached task (another process) shows input_required" sti-get-waiting
want_rc 0
want_py "status input_required" "j['taskId'] == '$LATER' and j['status'] == 'input_required'"
done_check

cli sti-wait tasks wait "$LATER" --answer '{"confirm":true}' "${I[@]}"
check "interactive: tasks wait from another process answers the question and collects the result" sti-wait
want_rc 0
want_in err "Are you sure you want to delete 'later.txt'?"
want_in out "Deleted 'later.txt'"
done_check

cli sti-get-done tasks get "$LATER" --json "${I[@]}"
check "interactive: tasks get after the wait shows completed" sti-get-done
want_rc 0
want_py "status completed" "j['status'] == 'completed'"
done_check

cli sti-result tasks result "$LATER" "${I[@]}"
check "interactive: tasks result gives the result again" sti-result
want_rc 0
want_in out "Deleted 'later.txt'"
done_check

cli sti-haiku call write_haiku --arg "topic=autumn leaves" --sampling-cmd "$SAMPLING_CMD" "${I[@]}"
check "interactive: write_haiku answered through --sampling-cmd" sti-haiku
want_rc 0
want_in out "Haiku:"
want_in out "Cherry blossoms fall"
want_in out "Spring whispers goodbye"
expect "the responder was asked 'Write a haiku about autumn leaves'"
grep -qF '"prompt": "Write a haiku about autumn leaves"' "$OUT/sampling-requests.jsonl" 2>/dev/null ||
  problem "sampling-requests.jsonl has no request with the prompt"
done_check

cli sti-haiku-no-sampling call write_haiku --arg "topic=autumn leaves" "${I[@]}"
check "interactive: write_haiku without --sampling-cmd: declined, the tool fails naming sampling" sti-haiku-no-sampling
want_rc 1
expect "stdout or stderr mentions sampling"
grep -qi sampling "$OUT/sti-haiku-no-sampling.out" "$OUT/sti-haiku-no-sampling.err" ||
  problem "no mention of sampling"
done_check

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
