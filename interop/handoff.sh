#!/usr/bin/env bash
# Long calls from a host that speaks no tasks (interop/ts_handoff_client.mjs: the TypeScript
# SDK 1.32.2 client without tasks, its request timeout shortened to 5 s) against
# `mcp-tasks serve --config interop/fixtures/handoff.toml` (sync_wait 3 s) over Streamable
# HTTP with a bearer token, on a temporary SQLite store: a 20 s call is handed off to a task
# and collected with the helper tools. Stops the server.
#
#   interop/handoff.sh [--bin PATH/TO/mcp-tasks] [--out DIR]
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${MCP_TASKS_BIN:-}
OUT=$HERE/results/handoff-$(date -u +%Y%m%dT%H%M%SZ)
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) sed -n '2,9p' "$0" >&2; exit 2 ;;
  esac
done
NAME=handoff
# shellcheck source=lib.sh
. "$HERE/lib.sh"
BIN=$(pick_bin "$BIN") || exit 2
# shellcheck source=env.sh
. "$HERE/env.sh"
CONFIG=$HERE/fixtures/handoff.toml start_mcp_tasks "$BIN"
run ts_handoff_client timeout 150 "$INTEROP_NODE" "$HERE/ts_handoff_client.mjs" --url "$URL" \
  --header "Authorization: Bearer $TOKEN" --seconds 20
log "done: $([ $status = 0 ] && echo OK || echo FAILED); results in $OUT"
exit $status
