#!/usr/bin/env bash
# Self-check of the Modern-era (2026-07-28) peer SERVERS that our client is tested against
# (interop/client-peers-modern.sh): each is started on a free 127.0.0.1 port and driven with
# raw stateless POSTs (interop/modern_selfcheck.py, standard library only: `_meta` on every
# request, MCP-Protocol-Version / Mcp-Method / Mcp-Name headers), so that a broken peer
# install is caught before our client is blamed.
#   * rmcp-tasks-server (interop/rmcp-server, rmcp 3.11.0 TaskManager, tasks extension):
#     task created → tasks/get → completed / failed / completed with isError / cancelled
#     (tasks/cancel) / input_required → tasks/update → completed; a plain tool; -32021
#     without the extension; unknown task; Mcp-Name mismatch;
#   * ts-modern-server.mjs (@modelcontextprotocol/server 2.4.0) and py_modern_server.py
#     (mcp 2.3.0 MCPServer): a plain tool; an MRTR tool, round 1 input_required, the retry
#     answered accept → confirmed and decline → declined.
#
#   interop/modern-servers-selfcheck.sh [--rmcp-server-bin PATH] [--out DIR] [--only rmcp|ts|py]...
#
# --rmcp-server-bin (or $RMCP_SERVER_BIN): a built rmcp-tasks-server; without it the script
# builds interop/rmcp-server (cargo build --locked, debug, its own target dir
# interop/rmcp-server/target, whatever CARGO_TARGET_DIR says). Needs interop/install.sh
# (node 22, .peers/npm-modern, .peers/venv-modern). stdout: one JSON line per peer (counts and
# the wire shapes seen), then `N passed, M failed`; stderr: PASS/FAIL lines and progress.
# Exit 0 only if every check passed; 2 if a peer is missing, fails to build or to start.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
RSBIN=${RMCP_SERVER_BIN:-}
OUT=$HERE/results/modern-servers-selfcheck-$(date -u +%Y%m%dT%H%M%SZ)
ONLY=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rmcp-server-bin) RSBIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --only) ONLY+=("$2"); shift 2 ;;
    *) sed -n '2,24p' "$0" >&2; exit 2 ;;
  esac
done
[ ${#ONLY[@]} -gt 0 ] || ONLY=(rmcp ts py)
NAME=modern-servers-selfcheck
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=env.sh
. "$HERE/env.sh"
# shellcheck source=modern-peers.sh
. "$HERE/modern-peers.sh"

total_pass=0
total_fail=0
for peer in "${ONLY[@]}"; do
  start_modern_peer "$peer" || exit 2
  t0=$SECONDS
  timeout 120 python3 "$HERE/modern_selfcheck.py" --peer "$peer" --url "$PEER_URL" --timeout 100 \
    >"$OUT/selfcheck-$peer.json" 2> >(tee "$OUT/selfcheck-$peer.err" | sed "s/^/[$NAME] /" >&2)
  rc=$?
  cat "$OUT/selfcheck-$peer.json"
  read -r p f < <(python3 -c 'import json,sys
try: d=json.load(open(sys.argv[1])); print(d["passed"], d["failed"])
except Exception: print(0, 1)' "$OUT/selfcheck-$peer.json")
  [ "$rc" = 0 ] || [ "$f" -gt 0 ] || f=1   # a timeout or a crash without a summary counts as a failure
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
  log "$peer: $p passed, $f failed ($((SECONDS - t0)) s; server log $OUT/$peer-server.log)"
done
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
