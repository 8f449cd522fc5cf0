# The Modern-era peer servers (sourced by modern-servers-selfcheck.sh and
# client-peers-modern.sh, after lib.sh and env.sh): `start_modern_peer rmcp|ts|py` starts one on
# a free 127.0.0.1 port (--listen 127.0.0.1:0; each prints `listening on http://ADDR/mcp`),
# logging to OUT/PEER-server.log, stopped at exit by lib.sh; sets PEER_URL. The rmcp server is
# RSBIN if set, else built here once (cargo build --locked, debug, target dir
# interop/rmcp-server/target).
# shellcheck shell=bash

RMCP_SERVER_DIR=$HERE/rmcp-server

build_rmcp_server() {
  [ -n "${RSBIN:-}" ] && return 0
  log "building interop/rmcp-server (debug, --locked, target dir interop/rmcp-server/target)"
  local t0=$SECONDS
  (cd "$RMCP_SERVER_DIR" && CARGO_TARGET_DIR="$RMCP_SERVER_DIR/target" timeout 1800 cargo build --locked) \
    >"$OUT/rmcp-server-build.log" 2>&1 || { log "rmcp-server build failed:"; tail -n 30 "$OUT/rmcp-server-build.log" >&2; return 1; }
  log "rmcp-server built in $((SECONDS - t0)) s"
  RSBIN=$RMCP_SERVER_DIR/target/debug/rmcp-tasks-server
}

start_modern_peer() { # rmcp|ts|py
  local peer=$1 cmd
  case "$peer" in
    rmcp)
      build_rmcp_server || return 1
      [ -x "$RSBIN" ] || { log "no rmcp-tasks-server at $RSBIN"; return 1; }
      cmd=("$RSBIN" --listen 127.0.0.1:0) ;;
    ts)
      [ -x "$INTEROP_NODE" ] && [ -f "$INTEROP_NPM_MODERN/node_modules/@modelcontextprotocol/server/package.json" ] ||
        { log "no @modelcontextprotocol/server in $INTEROP_NPM_MODERN: run interop/install.sh"; return 1; }
      cmd=("$INTEROP_NODE" "$HERE/ts-modern-server.mjs" --listen 127.0.0.1:0) ;;
    py)
      [ -x "$INTEROP_PYTHON_MODERN" ] || { log "no $INTEROP_PYTHON_MODERN: run interop/install.sh"; return 1; }
      cmd=("$INTEROP_PYTHON_MODERN" "$HERE/py_modern_server.py" --listen 127.0.0.1:0) ;;
    *) log "unknown peer $peer (rmcp, ts, py)"; return 1 ;;
  esac
  "${cmd[@]}" >"$OUT/$peer-server.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  PEER_URL=$(wait_url "$OUT/$peer-server.log" "$pid") ||
    { log "$peer server did not start:"; sed 's/^/  ! /' "$OUT/$peer-server.log" >&2; return 1; }
  log "$peer server pid $pid at $PEER_URL (log $OUT/$peer-server.log)"
}
