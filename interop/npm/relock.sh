#!/usr/bin/env bash
# Regenerate interop/npm/{main,alpha,modern}/package-lock.json after a change of package.json
# (all three, or only the projects named: relock.sh modern).
# Maintainer tool only (install.sh never runs it). Needs the npm registry.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
projects=("$@"); [ ${#projects[@]} -gt 0 ] || projects=(main alpha modern)
for proj in "${projects[@]}"; do
  tmp=$(mktemp -d)
  cp "$here/$proj/package.json" "$here/$proj/.npmrc" "$tmp/"
  echo "relock: $proj" >&2
  (cd "$tmp" && npm install --package-lock-only --ignore-scripts --no-audit --no-fund >&2)
  python3 "$here/sanitize_lock.py" "$tmp/package-lock.json"
  cp "$tmp/package-lock.json" "$here/$proj/package-lock.json"
  rm -rf "$tmp"
done
