"""Raw-HTTP self-check of one Modern (2026-07-28) peer server, before our client is blamed.

    python3 interop/modern_selfcheck.py --peer rmcp|ts|py --url http://127.0.0.1:PORT/mcp [--timeout S]

Standard library only. Every request is a stateless POST as the 2026-07-28 revision has them:
no initialize, the revision, client info and client capabilities in `params._meta`, and the
headers `MCP-Protocol-Version: 2026-07-28`, `Mcp-Method` and `Mcp-Name` (the tool name on
tools/call, the taskId on tasks/*); the answer is read as JSON or as SSE. Which tool does
what is in the docstring of each peer (interop/rmcp-server/src/main.rs,
interop/ts-modern-server.mjs, interop/py_modern_server.py); the checks are below, one
function per peer.

`PASS|FAIL <peer>:<check> <detail>` lines go to stderr; one JSON line to stdout: the peer,
passed/failed counts, the failed checks, and `wire`, the shapes observed (the facts
interop/README.md records). Every wait has a deadline; exit 0 only if every check held.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from typing import Any

PV = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
NAME_FROM = {"tools/call": "name", "prompts/get": "name", "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


class Peer:
    def __init__(self, url: str, timeout: float) -> None:
        self.url = url
        self.deadline = time.monotonic() + timeout
        self.next_id = 1
        self.passed: list[str] = []
        self.failed: list[str] = []
        self.wire: dict[str, Any] = {}
        self.prefix = ""

    # ------------------------------------------------------------------ wire
    def post(self, method: str, params: dict | None = None, caps: dict | None = None,
             headers: dict | None = None, meta: bool = True) -> dict:
        """One exchange; returns {"status", "content_type", "message"} (message: the JSON-RPC
        response with our id, or None)."""
        params = dict(params or {})
        if meta:
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": PV,
                "io.modelcontextprotocol/clientInfo": {"name": "modern-selfcheck", "version": "0.0.0"},
                "io.modelcontextprotocol/clientCapabilities": caps if caps is not None else {},
            }
        rid = self.next_id
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "MCP-Protocol-Version": PV, "Mcp-Method": method}
        key = NAME_FROM.get(method)
        if key and key in params:
            h["Mcp-Name"] = str(params[key])
        h.update(headers or {})
        req = urllib.request.Request(self.url, data=body, headers=h, method="POST")
        left = max(0.5, self.deadline - time.monotonic())
        try:
            with urllib.request.urlopen(req, timeout=min(15.0, left)) as resp:
                status, ctype, text = resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()
        except urllib.error.HTTPError as e:
            status, ctype, text = e.code, e.headers.get("Content-Type", ""), e.read().decode()
        return {"status": status, "content_type": ctype.split(";")[0], "message": parse(text, ctype, rid)}

    def result(self, method: str, params: dict | None = None, caps: dict | None = None) -> dict:
        """The result of a call that must succeed (else an error dict {"__error__": ...})."""
        m = self.post(method, params, caps)["message"] or {}
        return m["result"] if "result" in m else {"__error__": m.get("error", m)}

    def poll(self, task_id: str, caps: dict, until: set[str], limit: float = 15.0) -> dict:
        """tasks/get until the status is in `until` (or `limit` s, or the run's deadline)."""
        end = min(self.deadline, time.monotonic() + limit)
        last: dict = {}
        while True:
            last = self.result("tasks/get", {"taskId": task_id}, caps)
            if last.get("status") in until or "__error__" in last or time.monotonic() >= end:
                return last
            time.sleep(min(2.0, max(0.05, (last.get("pollIntervalMs") or 200) / 1000)))

    # ------------------------------------------------------------------ checks
    def check(self, name: str, ok: bool, detail: str) -> bool:
        name = f"{self.prefix}:{name}"
        (self.passed if ok else self.failed).append(name)
        print(f"{'PASS' if ok else 'FAIL'} {name} {detail}", file=sys.stderr, flush=True)
        return ok


def parse(text: str, ctype: str, rid: int) -> dict | None:
    if "text/event-stream" in ctype:
        for block in text.replace("\r\n", "\n").split("\n\n"):
            data = "\n".join(line[5:].lstrip() for line in block.split("\n") if line.startswith("data:"))
            if data:
                try:
                    m = json.loads(data)
                except ValueError:
                    continue
                if isinstance(m, dict) and m.get("id") == rid:
                    return m
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def short(v: Any, n: int = 220) -> str:
    s = json.dumps(v, sort_keys=True)
    return s if len(s) <= n else s[: n - 3] + "..."


def texts(result: dict) -> str:
    return "\n".join(b.get("text", "") for b in (result.get("content") or []) if isinstance(b, dict))


# ---------------------------------------------------------------------------------- rmcp
def check_rmcp(p: Peer) -> None:
    caps = {"elicitation": {"form": {}}, "extensions": {TASKS: {}}}
    d = p.result("server/discover", {}, caps)
    p.wire["discover"] = d
    p.check("discover", d.get("resultType") == "complete" and PV in (d.get("supportedVersions") or [])
            and TASKS in ((d.get("capabilities") or {}).get("extensions") or {}),
            f"resultType complete, {PV} supported, capabilities.extensions has {TASKS}: {short(d.get('capabilities'))}")
    p.wire["discover_advertises_subscriptions"] = "subscriptions" in (d.get("capabilities") or {})
    tools = p.result("tools/list", {}, caps)
    names = sorted(t["name"] for t in tools.get("tools", []))
    want = sorted(["rmcp_done", "rmcp_fails", "rmcp_is_error", "rmcp_slow", "rmcp_asks", "rmcp_plain"])
    p.check("tools-list", names == want, f"tools {names}")
    p.wire["tool_execution_field"] = {t["name"]: t.get("execution") for t in tools.get("tools", [])}

    r = p.result("tools/call", {"name": "rmcp_plain", "arguments": {"text": "hi"}}, caps)
    p.wire["plain_result"] = r
    p.check("plain", r.get("resultType") == "complete" and texts(r) == "rmcp_plain: hi" and not r.get("isError"),
            f"rmcp_plain inline: {short(r)}")

    m = p.post("tools/call", {"name": "rmcp_done", "arguments": {}}, {"elicitation": {"form": {}}})["message"] or {}
    err = m.get("error") or {}
    p.wire["task_tool_without_extension"] = m
    p.check("no-extension-32021", err.get("code") == -32021
            and TASKS in (((err.get("data") or {}).get("requiredCapabilities") or {}).get("extensions") or {}),
            f"rmcp_done without the extension declared: {short(err)}")

    def create(tool: str, args: dict) -> dict:
        c = p.result("tools/call", {"name": tool, "arguments": args}, caps)
        p.check(f"{tool}:create", c.get("resultType") == "task" and bool(c.get("taskId")) and c.get("status") == "working",
                f"CreateTaskResult (flat): {short(c)}")
        return c

    c = create("rmcp_done", {"delay_ms": 300})
    p.wire["create_task_result"] = c
    if c.get("taskId"):
        g = p.poll(c["taskId"], caps, {"completed", "failed", "cancelled"})
        p.wire["tasks_get_completed"] = g
        res = g.get("result") or {}
        p.check("rmcp_done:completed", g.get("status") == "completed" and texts(res) == "rmcp_done: finished",
                f"tasks/get: status {g.get('status')}, result text {texts(res)!r}")
        p.check("rmcp_done:get-resultType", g.get("resultType") == "complete",
                f"tasks/get result resultType {g.get('resultType')!r} (DetailedTask flattened into the result)")
        p.check("rmcp_done:inlined-resultType", res.get("resultType") == "complete",
                f"inlined CallToolResult carries resultType {res.get('resultType')!r}")

    c = create("rmcp_fails", {"delay_ms": 100})
    if c.get("taskId"):
        g = p.poll(c["taskId"], caps, {"completed", "failed", "cancelled"})
        p.wire["tasks_get_failed"] = g
        e = g.get("error") or {}
        p.check("rmcp_fails:failed", g.get("status") == "failed" and e.get("code") == -32603
                and e.get("message") == "rmcp_fails: deliberate failure" and "result" not in g,
                f"status {g.get('status')}, error {short(e)}")

    c = create("rmcp_is_error", {"delay_ms": 100})
    if c.get("taskId"):
        g = p.poll(c["taskId"], caps, {"completed", "failed", "cancelled"})
        res = g.get("result") or {}
        p.wire["tasks_get_completed_is_error"] = g
        p.check("rmcp_is_error:completed-isError", g.get("status") == "completed" and res.get("isError") is True
                and texts(res) == "rmcp_is_error: deliberate tool error",
                f"status {g.get('status')}, result {short(res)}")

    c = create("rmcp_asks", {"item": "widget"})
    if c.get("taskId"):
        tid = c["taskId"]
        g = p.poll(tid, caps, {"input_required", "completed", "failed", "cancelled"})
        p.wire["tasks_get_input_required"] = g
        reqs = g.get("inputRequests") or {}
        q = reqs.get("confirm") or {}
        p.check("rmcp_asks:input_required", g.get("status") == "input_required" and list(reqs) == ["confirm"]
                and q.get("method") == "elicitation/create" and (q.get("params") or {}).get("message") == "Confirm widget?"
                and (q.get("params") or {}).get("mode") == "form",
                f"status {g.get('status')}, inputRequests {short(reqs)}")
        u = p.post("tasks/update", {"taskId": tid, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": True}}}}, caps)
        um = u["message"] or {}
        p.wire["tasks_update_ack"] = um.get("result", um)
        p.check("rmcp_asks:update-ack", "result" in um, f"tasks/update answer {short(um)}")
        g = p.poll(tid, caps, {"completed", "failed", "cancelled"})
        t = texts(g.get("result") or {})
        p.check("rmcp_asks:completed", g.get("status") == "completed"
                and t == 'rmcp_asks widget: {"action":"accept","content":{"confirm":true}}',
                f"status {g.get('status')}, text {t!r}")
        g2 = p.result("tasks/get", {"taskId": tid}, caps)
        p.check("rmcp_asks:no-inputRequests-after", "inputRequests" not in g2, "a completed task carries no inputRequests")

    c = create("rmcp_slow", {"seconds": 60})
    if c.get("taskId"):
        tid = c["taskId"]
        g = p.result("tasks/get", {"taskId": tid}, caps)
        p.check("rmcp_slow:working", g.get("status") == "working", f"status {g.get('status')}")
        cm = p.post("tasks/cancel", {"taskId": tid}, caps)["message"] or {}
        p.wire["tasks_cancel_ack"] = cm.get("result", cm)
        p.check("rmcp_slow:cancel-ack", "result" in cm, f"tasks/cancel answer {short(cm)}")
        t0 = time.monotonic()
        g = p.poll(tid, caps, {"completed", "failed", "cancelled"}, limit=5)
        p.wire["tasks_get_cancelled"] = g
        p.check("rmcp_slow:cancelled", g.get("status") == "cancelled",
                f"status {g.get('status')} {time.monotonic() - t0:.2f} s after tasks/cancel")
        again = p.post("tasks/cancel", {"taskId": tid}, caps)["message"] or {}
        p.wire["tasks_cancel_again"] = again.get("result", again.get("error"))
        p.check("rmcp_slow:cancel-again", "result" in again or "error" in again,
                f"a second tasks/cancel of the cancelled task: {short(again)} (recorded)")

    m = p.post("tasks/get", {"taskId": "no-such-task"}, caps)["message"] or {}
    p.wire["tasks_get_unknown"] = m.get("error", m)
    p.check("get-unknown-error", "error" in m, f"tasks/get of an unknown id: {short(m.get('error', m))}")

    m = p.post("tasks/get", {"taskId": c.get("taskId", "x")}, caps, headers={"Mcp-Name": "wrong-task-id"})
    p.wire["tasks_get_header_mismatch"] = {"http_status": m["status"], "message": m["message"]}
    p.check("header-mismatch", (m["message"] or {}).get("error", {}).get("code") == -32020,
            f"tasks/get with Mcp-Name not its taskId: HTTP {m['status']}, {short(m['message'])}")

    m = p.post("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, caps)
    p.wire["subscriptions_listen"] = m["message"]
    p.check("subscriptions-listen-recorded", True, f"subscriptions/listen: {short(m['message'])}")
    p.wire["content_type_of_answers"] = p.post("tools/list", {}, caps)["content_type"]
    legacy_initialize(p)


def legacy_initialize(p: Peer) -> None:
    """A 2025-11-25 initialize: each peer is run Modern-only, so it must be refused (-32022)."""
    m = p.post("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "modern-selfcheck", "version": "0"}}, meta=False,
               headers={"MCP-Protocol-Version": "2025-11-25"})
    p.wire["legacy_initialize"] = {"http_status": m["status"], "message": m["message"]}
    p.check("legacy-initialize-refused", ((m["message"] or {}).get("error") or {}).get("code") == -32022,
            f"a 2025-11-25 initialize: HTTP {m['status']}, {short(m['message'])}")


# ---------------------------------------------------------------------------------- MRTR (ts, py)
def check_mrtr(p: Peer, echo: str, confirm: str, key: str | None) -> None:
    """`echo` answers `<echo>: TEXT`; `confirm` asks `Confirm ITEM?` under `key` (None: any one key)."""
    caps = {"elicitation": {"form": {}}}
    d = p.result("server/discover", {}, caps)
    p.wire["discover"] = d
    p.check("discover", d.get("resultType") == "complete" and PV in (d.get("supportedVersions") or []),
            f"supportedVersions {d.get('supportedVersions')}, capabilities {short(d.get('capabilities'))}")
    p.wire["discover_advertises_extensions"] = (d.get("capabilities") or {}).get("extensions")
    tools = p.result("tools/list", {}, caps)
    names = sorted(t["name"] for t in tools.get("tools", []))
    p.check("tools-list", names == sorted([echo, confirm]), f"tools {names}")

    r = p.result("tools/call", {"name": echo, "arguments": {"text": "hi"}}, caps)
    p.wire["plain_result"] = r
    p.check("echo", r.get("resultType") == "complete" and texts(r) == f"{echo}: hi", f"{short(r)}")

    def round1(item: str) -> tuple[str | None, dict]:
        r1 = p.result("tools/call", {"name": confirm, "arguments": {"item": item}}, caps)
        reqs = r1.get("inputRequests") or {}
        k = next(iter(reqs), None)
        q = reqs.get(k) or {}
        p.check(f"{item}:input_required", r1.get("resultType") == "input_required" and len(reqs) == 1
                and (key is None or k == key) and q.get("method") == "elicitation/create"
                and (q.get("params") or {}).get("message") == f"Confirm {item}?",
                f"round 1: resultType {r1.get('resultType')!r}, key {k!r}, {short(q)}, requestState {'present' if 'requestState' in r1 else 'absent'}")
        return k, r1

    for item, answer, want in (("widget", {"action": "accept", "content": {"confirm": True}}, "confirmed"),
                               ("gadget", {"action": "decline"}, "declined")):
        k, r1 = round1(item)
        if item == "widget":
            p.wire["input_required_result"] = r1
        if k is None:
            continue
        params = {"name": confirm, "arguments": {"item": item}, "inputResponses": {k: answer}}
        if "requestState" in r1:
            params["requestState"] = r1["requestState"]
        r2 = p.result("tools/call", params, caps)
        p.check(f"{item}:retry", r2.get("resultType") == "complete" and texts(r2) == f"{confirm} {item}: {want}",
                f"round 2 ({answer['action']}): resultType {r2.get('resultType')!r}, text {texts(r2)!r}")

    m = p.post("tools/call", {"name": confirm, "arguments": {}}, {})["message"] or {}
    p.wire["asking_tool_without_elicitation_capability"] = m.get("error", m.get("result"))
    p.check("no-elicitation-capability-recorded", True,
            f"{confirm} with no elicitation capability declared: {short(m.get('error', m.get('result')))}")
    legacy_initialize(p)
    p.wire["content_type_of_answers"] = p.post("tools/list", {}, caps)["content_type"]


def main() -> int:
    ap = argparse.ArgumentParser(description="Raw-HTTP self-check of one Modern peer server.")
    ap.add_argument("--peer", required=True, choices=["rmcp", "ts", "py"])
    ap.add_argument("--url", required=True)
    ap.add_argument("--timeout", type=float, default=90.0, help="the whole run, seconds")
    a = ap.parse_args()
    p = Peer(a.url, a.timeout)
    p.prefix = a.peer
    try:
        if a.peer == "rmcp":
            check_rmcp(p)
        elif a.peer == "ts":
            check_mrtr(p, "ts_echo", "ts_confirm", "confirm")
        else:
            check_mrtr(p, "py_echo", "py_confirm", None)
    except Exception as e:  # a dead or broken peer: one failed check, the rest not run
        p.check("run", False, f"{type(e).__name__}: {e}")
    print(json.dumps({"peer": a.peer, "passed": len(p.passed), "failed": len(p.failed),
                      "failedChecks": p.failed, "wire": p.wire}))
    return 0 if not p.failed else 1


if __name__ == "__main__":
    sys.exit(main())
