#!/usr/bin/env bash
# Run the official MCP conformance suite (server side) against a server at URL, with both
# pinned versions, then evaluate every checks.json with interop/checks.py.
#
#   interop/conformance.sh --url http://localhost:PORT/mcp [--out DIR] [--only stable|alpha|modern]
#                          [--strict] [--timeout SECONDS] [--expected-failures FILE.yaml]
#
#   stable: conformance 0.1.16          `server --url URL -o DIR/stable-0.1.16`            (active suite, 30 scenarios)
#   alpha:  conformance 0.2.0-alpha.12  `server --url URL --requirements 2025-11-25 -o DIR/alpha-0.2.0-alpha.12`
#           (the frozen 2025-11-25 set: 30 scored + 3 unscored scenarios)
#   modern: conformance 0.2.0-alpha.12  `server --url URL --requirements 2026-07-28 -o DIR/alpha-2026-07-28`
#           (the frozen 2026-07-28 set, stateless wire: 37 scored + 13 unscored, among them the ten
#           tasks-* and http-header-validation; interop/conformance-2026.md). The default runs all
#           three, as CI does; every scenario that runs, scored or not, must pass (checks.py
#           --unscored: the unscored 2025-11-25 ones as well).
#
# The URL host must be `localhost` (the dns-rebinding-protection scenario sends foreign
# Host/Origin headers and expects a 4xx, and a localhost Host to be accepted).
# The conformance tools' own output goes to DIR/<run>.log; the per-scenario table of
# checks.py goes to stderr; stdout gets one JSON summary line (from checks.py, plus the exit
# codes of the runs). Exit 0 only if every scored scenario passes in every run (see checks.py).
# DIR defaults to interop/results/conformance-<timestamp>. There are no task scenarios for
# 2025-11-25 in either version (see /work/shared/reference/peers-and-conformance.md §2).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
URL=${MCP_URL:-}
OUT=
ONLY=
STRICT=()
TIMEOUT=${MCP_TIMEOUT:-300}
EXPECTED=()
usage() { sed -n '2,24p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --url) URL=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --strict) STRICT=(--strict); shift ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --expected-failures) EXPECTED=(--expected-failures "$2"); shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown option $1" >&2; usage ;;
  esac
done
[ -n "$URL" ] || usage
case "$ONLY" in ""|stable|alpha|modern) ;; *) echo "--only must be stable, alpha or modern" >&2; exit 2 ;; esac
case "$URL" in http://localhost:*|https://localhost:*) ;; *) echo "[conformance] warning: URL host is not localhost; dns-rebinding-protection will not be meaningful" >&2 ;; esac

# shellcheck source=env.sh
. "$HERE/env.sh"
for b in "$INTEROP_CONFORMANCE_STABLE" "$INTEROP_CONFORMANCE_ALPHA" "$INTEROP_NODE"; do
  [ -x "$b" ] || { echo "$b missing; run interop/install.sh" >&2; exit 2; }
done
OUT=${OUT:-$HERE/results/conformance-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
log() { printf '[conformance] %s\n' "$*" >&2; }

dirs=()
codes=()
run() { # label binary args...
  local label=$1 bin=$2; shift 2
  local dir="$OUT/$label"
  rm -rf "$dir"; mkdir -p "$dir"
  log "$label: conformance@$("$bin" --version 2>/dev/null) server --url $URL${*:+ $*} -o $dir"
  local t0=$SECONDS
  timeout "$TIMEOUT" "$bin" server --url "$URL" "$@" "${EXPECTED[@]}" -o "$dir" >"$OUT/$label.log" 2>&1
  local rc=$?
  [ $rc = 124 ] && log "$label: TIMED OUT after ${TIMEOUT}s"
  log "$label: exit $rc in $((SECONDS - t0)) s; $(grep -E '^Total:' "$OUT/$label.log" | tail -1)"
  dirs+=("$dir"); codes+=("\"$label\":$rc")
}
case "$ONLY" in ""|stable) run stable-0.1.16 "$INTEROP_CONFORMANCE_STABLE" ;; esac
case "$ONLY" in ""|alpha) run alpha-0.2.0-alpha.12 "$INTEROP_CONFORMANCE_ALPHA" --requirements 2025-11-25 ;; esac
# checks.py scores a folder named *2026-07-28* against the 2026-07-28 set
case "$ONLY" in ""|modern) run alpha-2026-07-28 "$INTEROP_CONFORMANCE_ALPHA" --requirements 2026-07-28 ;; esac

summary=$(python3 "$HERE/checks.py" --unscored "${STRICT[@]}" "${dirs[@]}")
rc=$?
# add the runs' own exit codes and the output folder to checks.py's JSON line
python3 -c 'import json,sys; s=json.loads(sys.argv[1]); s["driver"]="conformance"; s["url"]=sys.argv[2]; s["out"]=sys.argv[3]; s["exitCodes"]=json.loads("{"+sys.argv[4]+"}"); print(json.dumps(s))' \
  "$summary" "$URL" "$OUT" "$(IFS=,; echo "${codes[*]}")"
exit $rc
