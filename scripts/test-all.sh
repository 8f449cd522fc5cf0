#!/usr/bin/env bash
# The whole test suite, as CI runs it: the Rust tests (unit, integration, golden files,
# schema checks, real processes, real SQLite files), then the interop suites against peers
# written by others, installed by pinned version from npm and PyPI (interop/install.sh):
# the official conformance suite (0.1.16, and 0.2.0-alpha.12 --requirements 2025-11-25 and
# --requirements 2026-07-28 with the tasks-* scenarios) on the conformance fixture server, the TypeScript SDK 1.32.2 and Python mcp 1.30.0 task
# clients and the MCP Inspector 2.12.0 mcpdo CLI on `mcp-tasks serve`, and the TS SDK's
# own simpleTaskInteractiveClient on examples/interactive.rs; and our mcp-tasks CLI against
# server-everything (stdio and HTTP) and the TS SDK's simpleTaskInteractive example server;
# the TS SDK client without tasks on a long call handed off to a task (interop/handoff.sh);
# and the Modern-era (2026-07-28) peers (interop/run-modern.sh): ext-tasks 0.2.2 on the TS SDK
# client 2.4.0 (tasks extension: a task to its result, input through tasks/update, cancel, an
# inline answer), the TS client 2.4.0 pinned to 2026-07-28 (MRTR; prompts and resources on the
# conformance fixture server), the Inspector 2.12.0 `mcpdo --era modern`, and Claude Code
# 2.1.328's MCP health check over stdio and HTTP (`server/discover` first, no `initialize`),
# Python mcp 2.3.0 (plain calls, MRTR) on `mcp-tasks serve` and the conformance fixture
# server, and an rmcp 3.11.0 tasks client (its own Cargo project interop/rmcp-client, built
# here in debug) on `mcp-tasks serve`; and the Modern peer SERVERS our client is tested
# against (rmcp 3.11.0 TaskManager, TS server 2.4.0, Python mcp 2.3.0: first checked on their
# own with raw HTTP, interop/modern-servers-selfcheck.sh, then driven by our CLI with --era
# modern and auto, interop/client-peers-modern.sh); and the conformance suite's client scenarios
# against our client library (interop/conformance-client.sh); and `mcp-tasks proxy` in front of
# a Python mcp 1.30.0 server of ours and server-everything (stdio and HTTP), driven by the TS
# SDK 1.32.2 client, the Inspector `mcpdo --era modern` and the Python client (interop/proxy.sh).
#
# Prints a closing line "total: N passed, M failed" (Rust tests plus interop suites).
set -uo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# The pinned peers first: some Rust tests drive them too (the proxy's CLI tests run
# server-everything), and fail under CI=true without them.
peers_ok=0
bash interop/install.sh || peers_ok=$?

# --no-fail-fast: every crate's tests run and count, whichever fails first.
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$log"
rust_status=${PIPESTATUS[0]}
passed=$(grep -oE 'test result: [a-zA-Z]+\. [0-9]+ passed' "$log" | awk '{s+=$4} END {print s+0}')
failed=$(grep -oE '[0-9]+ failed;' "$log" | awk '{s+=$1} END {print s+0}')
[ "$rust_status" -eq 0 ] || failed=$((failed > 0 ? failed : 1))

suite() { # name command...
  local name=$1; shift
  echo "=== interop: $name" >&2
  if "$@"; then passed=$((passed + 1)); else echo "=== interop: $name FAILED" >&2; failed=$((failed + 1)); fi
}

if [ "$peers_ok" -eq 0 ]; then
  # the Modern peer servers our client is tested against, checked on their own (raw HTTP; builds
  # interop/rmcp-server in debug), so that a broken peer is not taken for a client bug
  suite "Modern peer servers self-check: rmcp 3.11.0 tasks server, TS server 2.4.0, Python mcp 2.3.0" \
    bash interop/modern-servers-selfcheck.sh
  if cargo build --locked -p mcp-tasks --bin mcp-tasks -p mcp-tasks-server --example conformance_server --example interactive \
    -p mcp-tasks-client --example conformance_client; then
    # our client library under the official conformance suite's client scenarios (0.2.0-alpha.12,
    # 2026-07-28 and 2025-11-25; auth/* and sep-2640-* skipped, see interop/README.md)
    suite "conformance client scenarios (our client library)" bash interop/conformance-client.sh
    suite "TS + Python clients, Inspector, conformance" bash interop/run-mcp-tasks.sh \
      --bin target/debug/mcp-tasks --conformance-bin target/debug/examples/conformance_server
    suite "TS SDK simpleTaskInteractiveClient" env INTERACTIVE_BIN=target/debug/examples/interactive \
      bash interop/interactive.sh --no-build
    suite "mcp-tasks CLI against server-everything and simpleTaskInteractive" \
      env CLI_PEERS_BIN=target/debug/mcp-tasks bash interop/cli-peers.sh --no-build
    # long calls from a host without tasks: the TS SDK client, its timeout shortened to 5 s, on a
    # 20 s job handed off after 3 s and collected with the helper tools (interop/handoff.sh)
    suite "TS SDK client without tasks: a 20 s call handed off and collected (sync_wait)" \
      bash interop/handoff.sh --bin target/debug/mcp-tasks
    suite "Modern peers: ext-tasks, TS client 2.4.0, Python mcp 2.3.0, rmcp 3.11.0, Inspector --era modern, Claude Code" \
      bash interop/run-modern.sh --bin target/debug/mcp-tasks --conformance-bin target/debug/examples/conformance_server
    suite "mcp-tasks CLI in 2026-07-28 against the rmcp 3.11.0 tasks server, the TS server 2.4.0 and Python mcp 2.3.0" \
      bash interop/client-peers-modern.sh --bin target/debug/mcp-tasks
    suite "mcp-tasks proxy: Python mcp 1.30.0 and server-everything (stdio, HTTP) upstream; TS SDK 1.32.2, Inspector --era modern, Python client downstream" \
      bash interop/proxy.sh --bin target/debug/mcp-tasks
  else
    echo "=== interop: building the binaries FAILED" >&2; failed=$((failed + 1))
  fi
else
  echo "=== interop: installing the peers FAILED" >&2; failed=$((failed + 1))
fi

echo "total: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
