#!/usr/bin/env bash
# Interop check: Claude Code 2.1.328 (npm @anthropic-ai/claude-code, .peers/npm-modern) as an
# MCP host of `mcp-tasks serve`, over stdio and over Streamable HTTP. No model is reachable, so
# only its MCP health check runs: `claude mcp add` of both servers, then `claude mcp list`.
#
#   interop/claude_code.sh [--bin PATH/TO/mcp-tasks] [--config TOML] [--out DIR] [--timeout S]
#
# --bin defaults to $MCP_TASKS_BIN; --config to interop/fixtures/mcp-tasks.toml; DIR (default
# interop/results/claude-code-<UTC time>) keeps claude's output, the stdio transcript
# (stdio.in / stdio.out, through interop/stdio_tee.sh) and the HTTP server's log.
# Isolation: HOME is a fresh directory under DIR (Claude Code keeps ~/.claude.json and
# ~/.claude/ there), auto-update and non-essential traffic are off; every claude run is bounded
# by `timeout`. The HTTP server (bearer token, free 127.0.0.1 port) is stopped on exit.
#
# Checks (PASS/FAIL on stderr; one JSON line on stdout; exit 0 only if all held):
#   version (claude --version = 2.1.328), mcp-add-stdio, mcp-add-http, list-stdio-connected,
#   list-http-connected ("<name>: ... - ✓ Connected" in `claude mcp list`),
#   stdio-first-discover (the first message claude wrote is server/discover, with
#   _meta protocolVersion 2026-07-28), stdio-discover-answered (our answer to that id is a
#   result listing 2026-07-28, not an error), stdio-no-initialize (no initialize was ever sent:
#   no fallback to 2025-11-25), http-no-session (the HTTP server's log shows no "session
#   started", i.e. no initialize over HTTP either).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${MCP_TASKS_BIN:-}
CONFIG=$HERE/fixtures/mcp-tasks.toml
OUT=$HERE/results/claude-code-$(date -u +%Y%m%dT%H%M%SZ)
TIMEOUT=120
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --config) CONFIG=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    *) sed -n '2,13p' "$0" >&2; exit 2 ;;
  esac
done
[ -n "$BIN" ] && [ -x "$BIN" ] || { echo "claude_code.sh: no mcp-tasks binary (--bin or MCP_TASKS_BIN)" >&2; exit 2; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
CONFIG=$(cd "$(dirname "$CONFIG")" && pwd)/$(basename "$CONFIG")
# shellcheck source=env.sh
. "$HERE/env.sh"
CLAUDE=$INTEROP_CLAUDE
[ -x "$CLAUDE" ] || { echo "claude_code.sh: $CLAUDE missing; run interop/install.sh" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
START=$(date +%s)
CHECKS=$OUT/checks.jsonl
: > "$CHECKS"
log() { printf '[claude_code +%ss] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }
check() { # NAME true|false DETAIL_JSON
  python3 -c 'import json,sys; print(json.dumps({"name":sys.argv[1],"ok":sys.argv[2]=="true","detail":json.loads(sys.argv[3] or "null")}))' \
    "$1" "$2" "${3:-null}" >> "$CHECKS"
  log "$([ "$2" = true ] && echo PASS || echo FAIL) $1 ${3:-}"
}
finish() {
  python3 - "$CHECKS" "$START" "$OUT" <<'EOF'
import json, sys, time
checks = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = bool(checks) and all(c["ok"] for c in checks)
print(json.dumps({"driver": "claude_code", "peer": "@anthropic-ai/claude-code@2.1.328", "ok": ok,
                  "passed": sum(c["ok"] for c in checks), "failed": sum(not c["ok"] for c in checks),
                  "elapsedMs": int((time.time() - int(sys.argv[2])) * 1000), "out": sys.argv[3], "checks": checks}))
sys.exit(0 if ok else 1)
EOF
}

# ---------------------------------------------------------------- isolation
export HOME=$OUT/home
rm -rf "$HOME"; mkdir -p "$HOME" "$OUT/project"
export DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1
unset ANTHROPIC_API_KEY CLAUDE_CONFIG_DIR
cd "$OUT/project" || exit 2   # `claude mcp add` (scope local) keys servers by the working directory
left() { local l=$((START + TIMEOUT - $(date +%s))); [ $l -lt 5 ] && l=5; [ $l -gt 90 ] && l=90; echo $l; }
claude() { timeout "$(left)" "$CLAUDE" "$@" </dev/null; }

SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && { kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; }
  # (the stdio servers claude started end at EOF of their stdin, when claude exits)
}
trap cleanup EXIT

# ---------------------------------------------------------------- the HTTP server
TOKEN=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
INTEROP_TOKEN=$TOKEN "$BIN" serve --config "$CONFIG" --listen 127.0.0.1:0 --store "$OUT/http.sqlite3" \
  >"$OUT/http-server.log" 2>&1 &
SERVER_PID=$!
URL=
deadline=$(( $(date +%s) + 30 ))
while [ "$(date +%s)" -lt $deadline ]; do
  URL=$(grep -oE 'http://[^ /]+/mcp' "$OUT/http-server.log" 2>/dev/null | head -1)
  [ -n "$URL" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || break
  sleep 0.1
done
[ -n "$URL" ] || { log "mcp-tasks serve did not start:"; cat "$OUT/http-server.log" >&2; exit 2; }
log "mcp-tasks serve at $URL (HOME=$HOME)"

# ---------------------------------------------------------------- claude mcp add, mcp list
v=$(claude --version 2>"$OUT/version.err")
check version "$([ "$v" = "2.1.328 (Claude Code)" ] && echo true || echo false)" "$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$v")"

# stdio: the real command line behind the tee wrapper (INTEROP_TOKEN set: the config's token
# table needs it; a stdio connection itself is not authenticated)
claude mcp add mt-stdio -e "INTEROP_TOKEN=$TOKEN" -- "$HERE/stdio_tee.sh" "$OUT/stdio" \
  "$BIN" serve --stdio --config "$CONFIG" --store "$OUT/stdio.sqlite3" >"$OUT/add-stdio.out" 2>&1
rc=$?
check mcp-add-stdio "$([ $rc = 0 ] && echo true || echo false)" "{\"exit\":$rc}"
claude mcp add --transport http mt-http "$URL" --header "Authorization: Bearer $TOKEN" >"$OUT/add-http.out" 2>&1
rc=$?
check mcp-add-http "$([ $rc = 0 ] && echo true || echo false)" "{\"exit\":$rc}"

claude mcp list >"$OUT/list.out" 2>"$OUT/list.err"
rc=$?
log "claude mcp list (exit $rc):"; sed 's/^/  | /' "$OUT/list.out" >&2
for name in stdio http; do
  line=$(grep -E "^mt-$name:" "$OUT/list.out" | head -1)
  ok=false; case $line in *"Connected"*) ok=true ;; esac
  case $line in *"Failed"*|*"✗"*) ok=false ;; esac
  check "list-$name-connected" $ok "$(python3 -c 'import json,sys; print(json.dumps({"exit": int(sys.argv[1]), "line": sys.argv[2]}))' "$rc" "$line")"
done

# ---------------------------------------------------------------- what was on the wire (stdio)
python3 - "$OUT/stdio.in" "$OUT/stdio.out" >"$OUT/stdio-verdict.json" <<'EOF'
import json, sys
def lines(path):
    out = []
    try:
        for l in open(path, encoding="utf-8"):
            l = l.strip()
            if l:
                try: out.append(json.loads(l))
                except ValueError: out.append({"unparsable": l[:200]})
    except OSError:
        pass
    return out
sent, got = lines(sys.argv[1]), lines(sys.argv[2])
first = sent[0] if sent else {}
meta = (first.get("params") or {}).get("_meta") or {}
answer = next((m for m in got if "id" in m and m.get("id") == first.get("id") and ("result" in m or "error" in m)), None)
res = (answer or {}).get("result") or {}
print(json.dumps({
    "firstMethod": first.get("method"), "firstId": first.get("id"),
    "firstProtocolVersion": meta.get("io.modelcontextprotocol/protocolVersion"),
    "clientInfo": meta.get("io.modelcontextprotocol/clientInfo"),
    "clientCapabilities": meta.get("io.modelcontextprotocol/clientCapabilities"),
    "answerError": (answer or {}).get("error"),
    "supportedVersions": res.get("supportedVersions"),
    "serverExtensions": sorted(((res.get("capabilities") or {}).get("extensions") or {}).keys()),
    "methods": [m.get("method") for m in sent if m.get("method")],
    "answered": answer is not None,
}))
EOF
V=$OUT/stdio-verdict.json
pyv() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=eval(sys.argv[2]); print(json.dumps(v) if not isinstance(v,bool) else str(v).lower())' "$V" "$1"; }
check stdio-first-discover "$(pyv 'd["firstMethod"] == "server/discover" and d["firstProtocolVersion"] == "2026-07-28"')" \
  "$(pyv '{k: d[k] for k in ("firstMethod", "firstId", "firstProtocolVersion", "clientInfo", "clientCapabilities")}')"
check stdio-discover-answered "$(pyv 'd["answered"] and not d["answerError"] and "2026-07-28" in (d["supportedVersions"] or [])')" \
  "$(pyv '{k: d[k] for k in ("answered", "answerError", "supportedVersions", "serverExtensions")}')"
check stdio-no-initialize "$(pyv 'len(d["methods"]) > 0 and "initialize" not in d["methods"]')" "$(pyv '{"methods": d["methods"]}')"
# over HTTP, an initialize starts a session, which the server logs at info level
n=$(grep -c "session started" "$OUT/http-server.log")
check http-no-session "$([ "$n" = 0 ] && echo true || echo false)" "{\"sessionsStarted\":$n}"

finish
