#!/usr/bin/env python3
"""Normalise an npm package-lock.json so that it can be committed and used with `npm ci`.

* drops every `resolved` field (npm then fetches from the configured registry; the
  project's .npmrc sets omit-lockfile-registry-resolved=true, so npm writes none anyway),
* drops `funding` fields (they hold web addresses that are not the registry's),
* drops optional dependencies that the registry cannot resolve (for example vite's
  `napi-windows-process-start-time`, a 404 on the registry reachable here): npm records
  them in the parent's `optionalDependencies` without a `node_modules/...` entry, and
  `npm ci` then refuses the lock file as "out of sync".

Usage: sanitize_lock.py package-lock.json   (rewrites the file in place, prints what it did)
"""
import json
import sys


def resolves(packages, parent_key, name):
    base = parent_key
    while True:
        cand = (base + "/node_modules/" if base else "node_modules/") + name
        if cand in packages:
            return True
        if not base:
            return False
        i = base.rfind("/node_modules/")
        base = base[:i] if i >= 0 else ""


def main(path):
    with open(path, encoding="utf-8") as f:
        lock = json.load(f)
    packages = lock.get("packages", {})
    dropped = []
    for key, entry in packages.items():
        for field in ("resolved", "funding"):
            entry.pop(field, None)
        opt = entry.get("optionalDependencies")
        if opt:
            for name in list(opt):
                if not resolves(packages, key, name):
                    del opt[name]
                    dropped.append(f"{key or '<root>'} -> {name}")
            if not opt:
                del entry["optionalDependencies"]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(lock, f, indent=2, ensure_ascii=False)
        f.write("\n")
    for d in dropped:
        print(f"sanitize_lock: dropped unresolvable optional dependency {d}", file=sys.stderr)
    text = open(path, encoding="utf-8").read()
    if "://" in text:
        print("sanitize_lock: WARNING: the lock file still contains a URL", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
