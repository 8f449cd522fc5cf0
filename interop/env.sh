# Source me (bash):  . interop/env.sh
# Puts node 22 (from interop/.peers) first on PATH and names the installed peers.
# Run interop/install.sh first.
INTEROP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)
INTEROP_PEERS="$INTEROP_DIR/.peers"
INTEROP_NODE_BIN="$INTEROP_PEERS/npm-main/node_modules/node/bin"
export INTEROP_DIR INTEROP_PEERS
export INTEROP_NODE="$INTEROP_NODE_BIN/node"
export INTEROP_NPM_MAIN="$INTEROP_PEERS/npm-main"
export INTEROP_NPM_ALPHA="$INTEROP_PEERS/npm-alpha"
export INTEROP_NPM_MODERN="$INTEROP_PEERS/npm-modern"   # client 2.4.0, ext-tasks 0.2.2, claude-code 2.1.328
export INTEROP_CLAUDE="$INTEROP_NPM_MODERN/node_modules/.bin/claude"
export INTEROP_PYTHON="$INTEROP_PEERS/venv/bin/python"                                # mcp 1.30.0 (Legacy)
export INTEROP_PYTHON_MODERN="$INTEROP_PEERS/venv-modern/bin/python"                  # mcp 2.3.0 (2026-07-28)
export INTEROP_CONFORMANCE_STABLE="$INTEROP_NPM_MAIN/node_modules/.bin/conformance"   # 0.1.16
export INTEROP_CONFORMANCE_ALPHA="$INTEROP_NPM_ALPHA/node_modules/.bin/conformance"   # 0.2.0-alpha.12
export INTEROP_MCPDO="$INTEROP_NPM_MAIN/node_modules/.bin/mcpdo"                      # inspector 2.12.0
export INTEROP_EVERYTHING="$INTEROP_NPM_MAIN/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
# node 22 first; the main project's bins (conformance = 0.1.16, mcpdo, mcp-inspector) after it
case ":$PATH:" in
  *":$INTEROP_NODE_BIN:"*) ;;
  *) export PATH="$INTEROP_NODE_BIN:$INTEROP_NPM_MAIN/node_modules/.bin:$PATH" ;;
esac
if [ ! -x "$INTEROP_NODE" ]; then
  echo "interop/env.sh: $INTEROP_NODE missing; run interop/install.sh" >&2
fi
