#!/usr/bin/env bash
# Run the TypeScript SDK's own interactive task example client (simpleTaskInteractiveClient.js,
# shipped unmodified inside @modelcontextprotocol/sdk 1.32.2) against our interactive example
# server (crates/server/examples/interactive.rs), and check what the client printed.
#
#   interop/interactive.sh [--out DIR] [--timeout SECONDS] [--no-build] [--answer y|n]
#
# Steps: build the example (cargo build --release -p mcp-tasks-server --example interactive;
# --no-build uses the binary already built), start it on a free localhost port (--listen
# 127.0.0.1:0; it prints its URL first), run the client with Node 22 (interop/env.sh) as
#   node .../sdk/dist/esm/examples/client/simpleTaskInteractiveClient.js --url URL
# and type the answer (default y) each time it prompts `Your response (y/n): ` on its stdout
# (it reads stdin with readline; a line sent before the prompt would be lost, so the answer
# goes through a fifo only once the prompt is there). The client demonstrates
# `confirm_delete` (elicitation, filename important.txt) and then `write_haiku` (sampling,
# topic "autumn leaves"; it answers with a fixed haiku).
#
# Checks (each printed PASS/FAIL to stderr): the client exits 0 in time; it lists both tools;
# it sees each task input_required; it is asked the confirmation; it prints
# `Result: Deleted 'important.txt'` (with --answer n: `Result: Deletion cancelled`); it is
# asked for a haiku about autumn leaves; it prints the haiku result (`Result:`, `Haiku:`, its
# three lines); it prints no `Error:`; it finishes the demo.
# The last line on stdout is `N passed, M failed`; exit 0 only when none failed.
# Output (client, server) goes to DIR, default interop/results/interactive-<timestamp>.
# Everything started here is stopped on exit; the client runs under `timeout`.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OUT=
TIMEOUT=120
BUILD=1
ANSWER=y
usage() { sed -n '2,28p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --answer) ANSWER=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown option $1" >&2; usage ;;
  esac
done
case "$ANSWER" in y|n) ;; *) echo "--answer must be y or n" >&2; exit 2 ;; esac
log() { printf '[interactive] %s\n' "$*" >&2; }

# shellcheck source=env.sh
. "$HERE/env.sh"
SDK="$INTEROP_NPM_MAIN/node_modules/@modelcontextprotocol/sdk"
CLIENT="$SDK/dist/esm/examples/client/simpleTaskInteractiveClient.js"
if [ ! -f "$CLIENT" ] || [ ! -x "$INTEROP_NODE" ]; then
  log "peers missing; running interop/install.sh"
  "$HERE/install.sh" || { log "interop/install.sh failed"; exit 2; }
fi
SDK_VERSION=$("$INTEROP_NODE" -p "require('$SDK/package.json').version")
log "client: $CLIENT (sdk $SDK_VERSION, node $("$INTEROP_NODE" --version))"

OUT=${OUT:-$HERE/results/interactive-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
TARGET=$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])') || exit 2
SERVER_BIN="${INTERACTIVE_BIN:-$TARGET/release/examples/interactive}"
if [ "$BUILD" = 1 ]; then
  log "building: cargo build --release -p mcp-tasks-server --example interactive"
  (cd "$ROOT" && cargo build --release -p mcp-tasks-server --example interactive) >"$OUT/build.log" 2>&1 ||
    { log "build failed; see $OUT/build.log"; tail -20 "$OUT/build.log" >&2; exit 2; }
fi
[ -x "$SERVER_BIN" ] || { log "$SERVER_BIN missing (build it or drop --no-build)"; exit 2; }

SERVER_PID=
CLIENT_PID=
stop() {
  exec 3>&-
  [ -n "$CLIENT_PID" ] && kill "$CLIENT_PID" 2>/dev/null && wait "$CLIENT_PID" 2>/dev/null
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -f "$OUT/client.stdin"
}
trap stop EXIT

"$SERVER_BIN" --listen 127.0.0.1:0 --store "$OUT/tasks.sqlite3" >"$OUT/server.out" 2>"$OUT/server.err" &
SERVER_PID=$!
URL=
for _ in $(seq 1 100); do
  URL=$(sed -n '1s/^listening on //p' "$OUT/server.out" 2>/dev/null)
  [ -n "$URL" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { log "server died:"; cat "$OUT/server.err" >&2; exit 2; }
  sleep 0.1
done
[ -n "$URL" ] || { log "server did not print its URL in 10 s"; exit 2; }
log "server pid $SERVER_PID at $URL"

# The client's stdin is a fifo we hold open (read-write, so neither side blocks on open).
mkfifo "$OUT/client.stdin"
exec 3<>"$OUT/client.stdin"
log "running: node $CLIENT --url $URL"
timeout "$TIMEOUT" "$INTEROP_NODE" "$CLIENT" --url "$URL" <"$OUT/client.stdin" >"$OUT/client.out" 2>"$OUT/client.err" &
CLIENT_PID=$!
answered=0
while kill -0 "$CLIENT_PID" 2>/dev/null; do
  prompts=$(grep -o 'Your response (y/n): ' "$OUT/client.out" 2>/dev/null | wc -l)
  if [ "$prompts" -gt "$answered" ]; then
    log "client prompted; answering $ANSWER"
    echo "$ANSWER" >&3
    answered=$((answered + 1))
  fi
  sleep 0.1
done
wait "$CLIENT_PID"
CLIENT_RC=$?
CLIENT_PID=
exec 3>&-
[ "$CLIENT_RC" = 124 ] && log "client TIMED OUT after ${TIMEOUT}s"

log "client stdout ($OUT/client.out):"
sed 's/^/  | /' "$OUT/client.out" >&2
if [ -s "$OUT/client.err" ]; then
  log "client stderr ($OUT/client.err):"
  sed 's/^/  ! /' "$OUT/client.err" >&2
fi

passed=0
failed=0
check() { # name command...
  local name=$1; shift
  if "$@"; then
    passed=$((passed + 1)); log "PASS $name"
  else
    failed=$((failed + 1)); log "FAIL $name"
  fi
}
has() { grep -qxF -- "$1" "$OUT/client.out"; }
# the lines of $@ appear consecutively in the client's stdout
has_block() { python3 - "$OUT/client.out" "$@" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
want = sys.argv[2:]
sys.exit(0 if any(lines[i:i + len(want)] == want for i in range(len(lines))) else 1)
PY
}
input_required_twice() { [ "$(grep -cxF 'Task status: input_required' "$OUT/client.out")" -ge 2 ]; }
no_error() { ! grep -q 'Error' "$OUT/client.out" "$OUT/client.err"; }

if [ "$ANSWER" = y ]; then DELETED="Result: Deleted 'important.txt'"; else DELETED="Result: Deletion cancelled"; fi
check "client exits 0 (got $CLIENT_RC)" test "$CLIENT_RC" = 0
check "tools listed" has "Available tools: confirm_delete, write_haiku"
check "both tasks reach input_required" input_required_twice
check "confirmation asked through elicitation" \
  has "[Elicitation] Server asks: Are you sure you want to delete 'important.txt'?"
check "confirmation answered (prompted $answered time(s))" test "$answered" = 1
check "$DELETED" has "$DELETED"
check "haiku asked through sampling" \
  has "[Sampling] Server requests LLM completion for: Write a haiku about autumn leaves"
check "haiku result" has_block "Result:" "Haiku:" "Cherry blossoms fall" "Softly on the quiet pond" "Spring whispers goodbye"
check "no errors" no_error
check "demo complete" has "Demo complete. Closing connection..."
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
