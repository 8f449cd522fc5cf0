#!/usr/bin/env python3
"""Evaluate the output of `conformance server ... -o DIR` runs (stdlib only).

  python3 interop/checks.py DIR [DIR ...] [--strict] [--unscored] [--revision 2025-11-25|2026-07-28] [--scenarios a,b,...]

Each DIR is one run's output directory: it holds one folder per scenario,
`server-<scenario>-<timestamp>/checks.json` (a JSON list of checks, each with `id`, `name`,
`description`, `status` in SUCCESS|FAILURE|WARNING|INFO|SKIPPED, optional `errorMessage`,
`details`, `specReferences`, `timestamp`). When a scenario ran more than once into the same
DIR, the newest folder counts.

Prints to stderr, per DIR, one line per scenario with its check counts, the failing checks with
their messages, and every WARNING / INFO / SKIPPED check. Prints one JSON summary line on
stdout. Exit status 0 only if, in every DIR, each scored server scenario (the 30 of the 2025-11-25
requirement set; or, for a DIR whose name contains 2026-07-28 or with --revision 2026-07-28, the 37
of the 2026-07-28 set) is present and none of its checks has status FAILURE (or an unknown
status). WARNING, INFO and SKIPPED are reported but do not fail the run unless --strict is given
(then every check of a scored scenario must be SUCCESS; INFO checks are still allowed, they are
traffic logs, not verdicts). Scenarios outside that set (for example the unscored
server-session-lifecycle, json-schema-2020-12 and server-sse-polling of the 0.2.0-alpha
`--requirements 2025-11-25` run) are shown but never decide the exit status.
"""
import argparse
import json
import os
import re
import sys

# The frozen 2025-11-25 requirement set, server side: 30 scored scenarios
# (`conformance list --requirements 2025-11-25` of 0.2.0-alpha.12; the same 30 form the
# "active" suite of 0.1.16).
SCORED_2025_11_25 = [
    "server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list",
    "tools-call-simple-text", "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
    "tools-call-mixed-content", "tools-call-with-logging", "tools-call-error", "tools-call-with-progress",
    "tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults",
    "server-sse-multiple-streams", "elicitation-sep1330-enums", "resources-list", "resources-read-text",
    "resources-read-binary", "resources-templates-read", "resources-subscribe", "resources-unsubscribe",
    "prompts-list", "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource",
    "prompts-get-with-image", "dns-rebinding-protection",
]
# The frozen 2026-07-28 requirement set, server side: 37 scored scenarios
# (`conformance list --requirements 2026-07-28` of 0.2.0-alpha.12). The run also reports, unscored,
# the ten tasks-* scenarios (extension), json-schema-2020-12, http-header-validation and
# http-custom-header-server-validation (pending). interop/conformance-2026.md has what each needs.
SCORED_2026_07_28 = [
    "server-stateless", "completion-complete", "tools-list", "tools-call-simple-text", "tools-call-image",
    "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error",
    "tools-call-with-progress", "server-sse-multiple-streams", "resources-list", "resources-read-text",
    "resources-read-binary", "resources-templates-read", "sep-2164-resource-not-found", "prompts-list",
    "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
    "dns-rebinding-protection", "caching",
    "input-required-result-basic-elicitation", "input-required-result-basic-sampling",
    "input-required-result-basic-list-roots", "input-required-result-request-state",
    "input-required-result-multiple-input-requests", "input-required-result-multi-round",
    "input-required-result-missing-input-response", "input-required-result-non-tool-request",
    "input-required-result-result-type", "input-required-result-unsupported-methods",
    "input-required-result-tampered-state", "input-required-result-capability-check",
    "input-required-result-ignore-extra-params", "input-required-result-validate-input",
]
SCORED = {"2025-11-25": SCORED_2025_11_25, "2026-07-28": SCORED_2026_07_28}
KNOWN = {"SUCCESS", "FAILURE", "WARNING", "INFO", "SKIPPED"}
DIR_RE = re.compile(r"^(?:server-)?(?P<scenario>.+)-(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)$")


def err(*a):
    print(*a, file=sys.stderr)


def load_run(path):
    """-> {scenario: (folder, checks list | None, load error | None)} (newest folder per scenario)."""
    found = {}
    for entry in sorted(os.listdir(path)):
        full = os.path.join(path, entry)
        m = DIR_RE.match(entry)
        if not m or not os.path.isdir(full):
            continue
        scenario, ts = m.group("scenario"), m.group("ts")
        if scenario in found and found[scenario][0] > ts:
            continue
        cj = os.path.join(full, "checks.json")
        try:
            with open(cj, encoding="utf-8") as f:
                checks = json.load(f)
            if not isinstance(checks, list):
                raise ValueError("checks.json is not a list")
            found[scenario] = (ts, entry, checks, None)
        except (OSError, ValueError) as e:
            found[scenario] = (ts, entry, None, str(e))
    return {k: v[1:] for k, v in found.items()}


def short(text, n=160):
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def evaluate(path, scored, strict, unscored_too=False):
    run = load_run(path)
    label = os.path.basename(os.path.normpath(path))
    err(f"== {label} ({path}): {len(run)} scenario folders")
    scenarios = {}
    notes = []
    for name in sorted(run, key=lambda s: (s not in scored, scored.index(s) if s in scored else 0, s)):
        folder, checks, load_error = run[name]
        is_scored = name in scored
        counts = {s: 0 for s in sorted(KNOWN)}
        failing, noted = [], []
        if checks is None:
            failing.append({"id": "(checks.json)", "status": "ERROR", "message": load_error})
        elif not checks:
            failing.append({"id": "(checks.json)", "status": "ERROR", "message": "no checks recorded"})
        else:
            for c in checks:
                st = c.get("status")
                counts[st] = counts.get(st, 0) + 1
                rec = {"id": c.get("id"), "status": st}
                if c.get("errorMessage"):
                    rec["message"] = short(c["errorMessage"])
                if st == "FAILURE" or st not in KNOWN or (strict and st in ("WARNING", "SKIPPED")):
                    failing.append(rec)
                elif st in ("WARNING", "INFO", "SKIPPED"):
                    noted.append(rec)
        ok = not failing
        scenarios[name] = {"scored": is_scored, "ok": ok, "counts": {k: v for k, v in counts.items() if v},
                           "folder": folder, "failing": failing, "noted": noted}
        mark = "PASS" if ok else "FAIL"
        cnt = ", ".join(f"{v} {k.lower()}" for k, v in counts.items() if v) or "no checks"
        err(f"  {mark} {name}{'' if is_scored else ' (not scored)'}: {cnt}")
        for f in failing:
            err(f"       {f['status']} {f['id']}: {f.get('message', '')}")
        for n in noted:
            notes.append({"scenario": name, **n})
    missing = [s for s in scored if s not in run]
    for s in missing:
        err(f"  FAIL {s}: MISSING (no result folder)")
    failed_scored = [s for s in scored if s in scenarios and not scenarios[s]["ok"]] + missing
    failed_unscored = [s for s, v in scenarios.items() if not v["scored"] and not v["ok"]] if unscored_too else []
    if notes:
        err("  WARNING/INFO/SKIPPED checks:")
        for n in notes:
            err(f"    {n['status']:<8} {n['scenario']} / {n['id']}{': ' + n['message'] if n.get('message') else ''}")
    passed_scored = len(scored) - len(failed_scored)
    err(f"  => {label}: {passed_scored}/{len(scored)} scored scenarios pass"
        + (f"; failing: {', '.join(failed_scored)}" if failed_scored else "")
        + (f"; failing unscored (they count here): {', '.join(failed_unscored)}" if failed_unscored else ""))
    return {
        "dir": path, "label": label, "ok": not failed_scored and not failed_unscored,
        "scoredPassed": passed_scored, "scoredTotal": len(scored),
        "failingScored": failed_scored, "missing": missing,
        "unscored": {s: v["ok"] for s, v in scenarios.items() if not v["scored"]},
        "checks": {k: sum(v["counts"].get(k, 0) for v in scenarios.values()) for k in sorted(KNOWN)},
        "notes": notes,
    }


def main():
    p = argparse.ArgumentParser(description="Evaluate conformance checks.json output")
    p.add_argument("dirs", nargs="+", help="output directories of `conformance server -o DIR`")
    p.add_argument("--strict", action="store_true", help="WARNING and SKIPPED checks fail a scored scenario too")
    p.add_argument("--unscored", action="store_true",
                   help="the scenarios run but not scored (tasks-*, http-header-validation…) must pass too")
    p.add_argument("--scenarios", help="comma-separated scored scenario list (default: by --revision)")
    p.add_argument("--revision", choices=sorted(SCORED),
                   help="whose scored set applies (default: 2026-07-28 for a DIR whose name contains "
                        "'2026-07-28', else 2025-11-25)")
    a = p.parse_args()
    runs = []
    for d in a.dirs:
        if not os.path.isdir(d):
            err(f"== {d}: not a directory")
            runs.append({"dir": d, "ok": False, "error": "not a directory"})
            continue
        if a.scenarios:
            scored = a.scenarios.split(",")
        else:
            revision = a.revision or ("2026-07-28" if "2026-07-28" in os.path.basename(os.path.normpath(d)) else "2025-11-25")
            scored = SCORED[revision]
        runs.append(evaluate(d, scored, a.strict, a.unscored))
    ok = all(r["ok"] for r in runs)
    print(json.dumps({"driver": "conformance-checks", "ok": ok, "strict": a.strict, "runs": runs}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
