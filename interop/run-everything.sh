#!/usr/bin/env bash
# Sanity baseline: start the reference server (@modelcontextprotocol/server-everything
# 2026.8.31, TS SDK 1.32.2 inside) over Streamable HTTP on a free localhost port, run every
# driver against it, stop the server.
#
#   interop/run-everything.sh [--out DIR]
#
# Expected: ts_client, py_client and inspector pass (inspector with --cancel-running off:
# server-everything binds tasks to the session, see inspector.sh); conformance FAILS (the
# server has none of the conformance fixture tools/resources/prompts and no DNS-rebinding
# protection) and must name the failing scenarios. Exit 0 when exactly that happened.
# stdout: the drivers' JSON lines; stderr: progress.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$HERE/results/everything-$(date -u +%Y%m%dT%H%M%SZ)
[ "${1:-}" = --out ] && OUT=$2
# shellcheck source=env.sh
. "$HERE/env.sh"
mkdir -p "$OUT"
log() { printf '[run-everything] %s\n' "$*" >&2; }

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$OUT" && PORT=$PORT exec "$INTEROP_NODE" "$INTEROP_EVERYTHING" streamableHttp) >"$OUT/server-everything.log" 2>&1 &
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null; wait $SERVER_PID 2>/dev/null' EXIT
for _ in $(seq 1 100); do
  grep -q "listening on port" "$OUT/server-everything.log" 2>/dev/null && break
  kill -0 $SERVER_PID 2>/dev/null || { log "server-everything died:"; cat "$OUT/server-everything.log" >&2; exit 1; }
  sleep 0.2
done
grep -q "listening on port" "$OUT/server-everything.log" || { log "server-everything did not start in 20 s"; exit 1; }
URL=http://localhost:$PORT/mcp
log "server-everything pid $SERVER_PID at $URL (log $OUT/server-everything.log)"

T=(--tool simulate-research-query --args '{"topic":"rust"}' --expect-text 'Research Report')
status=0
expect() { # name expected_rc(0|nonzero) command...
  local name=$1 want=$2; shift 2
  local t0=$SECONDS
  "$@" >"$OUT/$name.json" 2>"$OUT/$name.err"
  local rc=$?
  cat "$OUT/$name.json"
  if { [ "$want" = 0 ] && [ $rc = 0 ]; } || { [ "$want" = nonzero ] && [ $rc != 0 ]; }; then
    log "$name: exit $rc as expected ($((SECONDS - t0)) s)"
  else
    log "$name: exit $rc, expected $want ($((SECONDS - t0)) s); see $OUT/$name.err"; status=1
  fi
}
expect ts_client 0 timeout 120 "$INTEROP_NODE" "$HERE/ts_client.mjs" --url "$URL" "${T[@]}"
expect py_client 0 timeout 120 "$INTEROP_PYTHON" "$HERE/py_client.py" --url "$URL" "${T[@]}"
expect inspector 0 timeout 180 "$HERE/inspector.sh" --url "$URL" "${T[@]}" --cancel-running off
expect conformance nonzero timeout 600 "$HERE/conformance.sh" --url "$URL" --out "$OUT/conformance"
# the evaluator must have parsed real results and named the failing scenarios
if python3 - "$OUT/conformance.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
runs = s["runs"]
assert len(runs) == 2 and all(r["scoredTotal"] == 30 and not r["missing"] for r in runs), "runs incomplete"
assert all(r["failingScored"] and "tools-call-image" in r["failingScored"] for r in runs), "failures not named"
assert all("server-initialize" not in r["failingScored"] for r in runs), "server-initialize should pass"
EOF
then log "conformance evaluator parsed both runs and named the failing scenarios"
else log "conformance evaluator output is not what was expected"; status=1
fi
log "done: $([ $status = 0 ] && echo OK || echo FAILED); results in $OUT"
exit $status
