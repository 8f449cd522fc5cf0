#!/usr/bin/env bash
# Run the official MCP conformance suite's CLIENT scenarios (conformance 0.2.0-alpha.12, pinned in
# interop/npm/alpha) against our client library, through its example driver
# crates/client/examples/conformance_client.rs, then evaluate every checks.json with checks.py.
#
#   interop/conformance-client.sh [--out DIR] [--timeout SECONDS] [--only modern|legacy]
#
#   modern (--spec-version 2026-07-28; the driver pins Era::Modern):
#     request-metadata sep-2322-client-request-state http-standard-headers http-custom-headers
#     http-invalid-tool-headers json-schema-ref-no-deref tools_call json-schema-2020-12-preservation
#   legacy (--spec-version 2025-11-25; Era::Legacy):
#     initialize tools_call elicitation-sep1034-client-defaults sse-retry json-schema-2020-12-preservation
#   skipped: every auth/* scenario (the client has bearer tokens only, no OAuth) and the
#     sep-2640-* ones (the skills extension, which the client does not implement).
#
# Builds the driver first (cargo build --locked -p mcp-tasks-client --example conformance_client;
# honours CARGO_TARGET_DIR). Each scenario runs as `conformance client --command DRIVER --scenario S
# --spec-version V -o DIR/V`, bounded by `timeout`; its output goes to DIR/V-S.log. A scenario
# passes when conformance exits 0 (no FAILURE and no WARNING, the client exited 0 in time) and
# checks.py finds its checks.json with no FAILURE. The per-scenario table goes to stderr; stdout
# gets one JSON summary line. Exit 0 only if every scenario run passes.
# DIR defaults to interop/results/conformance-client-<timestamp>.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OUT=
ONLY=
TIMEOUT=${MCP_TIMEOUT:-120}
usage() { sed -n '2,22p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown option $1" >&2; usage ;;
  esac
done
case "$ONLY" in ""|modern|legacy) ;; *) echo "--only must be modern or legacy" >&2; exit 2 ;; esac

MODERN=(request-metadata sep-2322-client-request-state http-standard-headers http-custom-headers
  http-invalid-tool-headers json-schema-ref-no-deref tools_call json-schema-2020-12-preservation)
LEGACY=(initialize tools_call elicitation-sep1034-client-defaults sse-retry json-schema-2020-12-preservation)

log() { printf '[conformance-client] %s\n' "$*" >&2; }

# shellcheck source=env.sh
. "$HERE/env.sh"
for b in "$INTEROP_CONFORMANCE_ALPHA" "$INTEROP_NODE"; do
  [ -x "$b" ] || { echo "$b missing; run interop/install.sh" >&2; exit 2; }
done
VERSION=$("$INTEROP_CONFORMANCE_ALPHA" --version 2>/dev/null)
[ "$VERSION" = 0.2.0-alpha.12 ] || { echo "conformance is $VERSION, not the pinned 0.2.0-alpha.12" >&2; exit 2; }

log "building the driver"
(cd "$ROOT" && timeout 1800 cargo build --locked -p mcp-tasks-client --example conformance_client >&2) ||
  { log "cargo build failed"; exit 2; }
TARGET=$(cd "$ROOT" && timeout 120 cargo metadata --locked --format-version 1 --no-deps |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])') ||
  { log "cargo metadata failed"; exit 2; }
DRIVER="$TARGET/debug/examples/conformance_client"
[ -x "$DRIVER" ] || { log "$DRIVER missing after the build"; exit 2; }

OUT=${OUT:-$HERE/results/conformance-client-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
codes=()
run() { # spec-version scenario
  local version=$1 scenario=$2 dir="$OUT/$1"
  mkdir -p "$dir"
  # the harness's own timeout (ms) ends a client that hangs; `timeout` bounds the harness itself
  timeout "$TIMEOUT" "$INTEROP_CONFORMANCE_ALPHA" client --command "$DRIVER" --scenario "$scenario" \
    --spec-version "$version" --timeout 30000 -o "$dir" >"$OUT/$version-$scenario.log" 2>&1
  local rc=$?
  [ $rc = 124 ] && log "$version $scenario: TIMED OUT after ${TIMEOUT}s"
  log "$version $scenario: conformance exit $rc; $(grep -E '^Passed:' "$OUT/$version-$scenario.log" | tail -1)"
  codes+=("\"$version $scenario\":$rc")
}
dirs=()
if [ "$ONLY" != legacy ]; then
  for s in "${MODERN[@]}"; do run 2026-07-28 "$s"; done
  dirs+=("2026-07-28:$(IFS=,; echo "${MODERN[*]}")")
fi
if [ "$ONLY" != modern ]; then
  for s in "${LEGACY[@]}"; do run 2025-11-25 "$s"; done
  dirs+=("2025-11-25:$(IFS=,; echo "${LEGACY[*]}")")
fi

# checks.py once per spec version, with that version's scenarios as the required set
summaries=()
status=0
for entry in "${dirs[@]}"; do
  version=${entry%%:*} list=${entry#*:}
  s=$(python3 "$HERE/checks.py" --scenarios "$list" "$OUT/$version") || status=1
  summaries+=("$s")
done

python3 - "$OUT" "$VERSION" "$(IFS=,; echo "${codes[*]}")" "${summaries[@]}" <<'EOF'
import json, sys
out, version, codes = sys.argv[1], sys.argv[2], json.loads("{" + sys.argv[3] + "}")
runs = [r for s in sys.argv[4:] for r in json.loads(s)["runs"]]
failing = [k for k, rc in codes.items() if rc != 0] + [f"{r['label']} {s}" for r in runs for s in r.get("failingScored", [])]
print(json.dumps({
    "driver": "conformance-client", "conformance": version, "out": out,
    "ok": not failing and all(r["ok"] for r in runs), "failing": sorted(set(failing)),
    "exitCodes": codes,
    "checks": {r["label"]: r["checks"] for r in runs},
    "skipped": {"auth/*": "OAuth flows: the client has bearer tokens only",
                "sep-2640-*": "skills extension: not implemented by the client"},
}))
sys.exit(0 if not failing and all(r["ok"] for r in runs) else 1)
EOF
rc=$?
[ $status = 0 ] || rc=1
exit $rc
