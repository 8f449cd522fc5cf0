#!/usr/bin/env python3
"""Interop driver: the official Python SDK (PyPI `mcp` 1.30.0, the last 1.x, with the experimental
2025-11-25 tasks client) over Streamable HTTP against an MCP server with tasks.

Usage (with the venv made by interop/install.sh):
  interop/.peers/venv/bin/python interop/py_client.py --url http://127.0.0.1:3901/mcp \
      --tool simulate-research-query --args '{"topic":"rust"}' \
      [--long-tool NAME --long-args JSON] [--expect-text SUBSTR] [--ttl 60000] [--timeout 90]
      [--header 'Authorization: Bearer TOKEN']...
Options may also come from the environment: MCP_URL, MCP_TOOL, MCP_ARGS, MCP_LONG_TOOL,
MCP_LONG_ARGS, MCP_EXPECT_TEXT, MCP_TTL, MCP_TIMEOUT. --long-tool/--long-args default to
--tool/--args; that call must still be running when it is cancelled right after creation.

Checks (the "checks" list of the one JSON line printed on stdout):
  connect, server-tasks-capability, tools-list, call_tool_as_task (CreateTaskResult),
  poll_task (ends completed), get_task_result (CallToolResult), result-related-task-meta,
  [result-text], result-not-error, getTask-completed, listTasks-contains, cancel-running,
  getTask-after-cancel, cancel-completed-error (-32602), getTask-unknown-error (-32602).
Exit 0 only if every check held. Logs go to stderr.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
import time
import warnings
from datetime import timedelta

# mcp 1.30.0 marks the whole experimental tasks API deprecated (tasks "were removed from the MCP
# specification" -- i.e. moved to the SEP-2663 extension); it still works. Keep stderr readable.
warnings.filterwarnings("ignore", category=DeprecationWarning)

import anyio  # noqa: E402
import mcp.types as types  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402
from mcp.shared.exceptions import McpError  # noqa: E402

RELATED_TASK = "io.modelcontextprotocol/related-task"


def parse_args() -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=env("MCP_URL"))
    p.add_argument("--tool", default=env("MCP_TOOL"))
    p.add_argument("--args", default=env("MCP_ARGS", "{}"))
    p.add_argument("--long-tool", default=env("MCP_LONG_TOOL"))
    p.add_argument("--long-args", default=env("MCP_LONG_ARGS"))
    p.add_argument("--expect-text", default=env("MCP_EXPECT_TEXT"))
    p.add_argument("--ttl", type=int, default=int(env("MCP_TTL", "60000")))
    p.add_argument("--timeout", type=float, default=float(env("MCP_TIMEOUT", "90")))
    p.add_argument("--header", action="append", default=[], help="'Name: value', repeatable")
    a = p.parse_args()
    if not a.url or not a.tool:
        p.error("--url and --tool are required")
    a.args = json.loads(a.args)
    a.long_tool = a.long_tool or a.tool
    a.long_args = a.args if a.long_args is None else json.loads(a.long_args)
    a.headers = {}
    for h in a.header:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            p.error(f"--header wants 'Name: value', got {h!r}")
        a.headers[name.strip()] = value.strip()
    return a


class Run:
    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.checks: list[dict] = []
        self.info: dict = {}
        self.started = time.monotonic()

    def check(self, name: str, ok, detail=None) -> bool:
        entry = {"name": name, "ok": bool(ok)}
        if detail is not None:
            entry["detail"] = detail
        self.checks.append(entry)
        print(f"[py_client] {'PASS' if ok else 'FAIL'} {name} {json.dumps(detail, default=str) if detail is not None else ''}",
              file=sys.stderr)
        return bool(ok)

    def summary(self) -> dict:
        ok = bool(self.checks) and all(c["ok"] for c in self.checks)
        return {
            "driver": "py_client",
            "peer": f"mcp=={importlib.metadata.version('mcp')}",
            "url": self.opts.url,
            "tool": self.opts.tool,
            "longTool": self.opts.long_tool,
            "ok": ok,
            "passed": sum(c["ok"] for c in self.checks),
            "failed": sum(not c["ok"] for c in self.checks),
            "elapsedMs": int((time.monotonic() - self.started) * 1000),
            **self.info,
            "checks": self.checks,
        }


def err(e: BaseException) -> dict:
    if isinstance(e, McpError):
        return {"code": e.error.code, "message": e.error.message}
    if isinstance(e, BaseExceptionGroup):  # anyio task groups wrap the real cause(s)
        leaves = [err(x) for x in e.exceptions]
        return leaves[0] if len(leaves) == 1 else {"message": f"{len(leaves)} errors", "errors": leaves}
    return {"message": f"{type(e).__name__}: {e}"}


def compress(items: list[str]) -> list[str]:
    out: list[list] = []
    for s in items:
        if out and out[-1][0] == s:
            out[-1][1] += 1
        else:
            out.append([s, 1])
    return [f"{s}*{n}" if n > 1 else s for s, n in out]


async def drive(run: Run) -> None:
    o = run.opts
    async with create_mcp_http_client(headers=o.headers or None) as http, \
            streamable_http_client(o.url, http_client=http) as (read, write, get_session_id):
        async with ClientSession(read, write, read_timeout_seconds=timedelta(seconds=min(o.timeout, 60)),
                                 client_info=types.Implementation(name="mcp-tasks-interop-py", version="1.0.0")) as session:
            try:
                with anyio.fail_after(30):
                    init = await session.initialize()
            except Exception as e:  # noqa: BLE001
                run.check("connect", False, err(e))
                return
            run.info["protocolVersion"] = init.protocolVersion
            run.info["serverInfo"] = init.serverInfo.model_dump(exclude_none=True)
            run.check("connect", True, {"protocolVersion": init.protocolVersion, "server": init.serverInfo.name,
                                        "sessionId": bool(get_session_id())})
            caps = init.capabilities.tasks
            run.check("server-tasks-capability",
                      caps is not None and caps.requests is not None and caps.requests.tools is not None
                      and caps.requests.tools.call is not None,
                      caps.model_dump(exclude_none=True) if caps else None)

            tools = (await session.list_tools()).tools
            by_name = {t.name: t for t in tools}

            def support(name: str) -> str:
                t = by_name.get(name)
                if t is None:
                    return "MISSING"
                return (t.execution.taskSupport if t.execution and t.execution.taskSupport else "(absent = forbidden)")

            detail = {"count": len(tools), o.tool: support(o.tool)}
            if o.long_tool != o.tool:
                detail[o.long_tool] = support(o.long_tool)
            run.check("tools-list", o.tool in by_name and o.long_tool in by_name, detail)

            exp = session.experimental
            # ---------------------------------------------------------- task 1: create, poll, result
            created = await exp.call_tool_as_task(o.tool, o.args, ttl=o.ttl)
            task_id = created.task.taskId
            run.info["taskId"] = task_id
            run.info["createdTask"] = created.task.model_dump(mode="json", exclude_none=True)
            run.check("call_tool_as_task", created.task.status in ("working", "input_required", "completed"),
                      {"taskId": task_id, "status": created.task.status, "ttl": created.task.ttl,
                       "pollInterval": created.task.pollInterval})
            statuses: list[str] = []
            with anyio.fail_after(max(5.0, o.timeout - 5)):
                async for st in exp.poll_task(task_id):
                    statuses.append(st.status)
                    if st.status == "input_required":
                        break  # tasks/result below delivers the server's request and blocks to the end
            run.check("poll_task", statuses and statuses[-1] in ("completed", "input_required"),
                      {"statuses": compress(statuses)})
            result = None
            try:
                result = await exp.get_task_result(task_id, types.CallToolResult)
                run.check("get_task_result", True, {"isError": result.isError})
            except Exception as e:  # noqa: BLE001
                run.check("get_task_result", False, err(e))
            if result is not None:
                related = (result.meta or {}).get(RELATED_TASK)
                run.check("result-related-task-meta", isinstance(related, dict) and related.get("taskId") == task_id, related)
                text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
                run.info["resultTextHead"] = text[:120]
                if o.expect_text is not None:
                    run.check("result-text", o.expect_text in text, {"expected": o.expect_text, "head": text[:120]})
                run.check("result-not-error", not result.isError, {"isError": result.isError})

            got = await exp.get_task(task_id)
            run.check("getTask-completed", got.taskId == task_id and got.status == "completed",
                      {"status": got.status, "ttl": got.ttl, "pollInterval": got.pollInterval})
            found, pages, seen, cursor = False, 0, 0, None
            while True:
                page = await exp.list_tasks(cursor)
                pages += 1
                seen += len(page.tasks)
                found = found or any(t.taskId == task_id for t in page.tasks)
                cursor = page.nextCursor
                if found or not cursor or pages >= 50:
                    break
            run.check("listTasks-contains", found, {"pages": pages, "tasksSeen": seen})

            # ---------------------------------------------------------- task 2: cancel while running
            created2 = await exp.call_tool_as_task(o.long_tool, o.long_args, ttl=o.ttl)
            id2 = created2.task.taskId
            run.info["cancelledTaskId"] = id2
            try:
                c = await exp.cancel_task(id2)
                run.check("cancel-running", c.status == "cancelled" and c.taskId == id2,
                          {"taskId": id2, "status": c.status, "statusMessage": c.statusMessage})
            except Exception as e:  # noqa: BLE001
                run.check("cancel-running", False, {"taskId": id2, **err(e)})
            await anyio.sleep(0.3)
            try:
                g = await exp.get_task(id2)
                run.check("getTask-after-cancel", g.status == "cancelled", {"status": g.status})
            except McpError as e:
                # a receiver MAY delete a cancelled task at once; -32602 is then compliant
                run.check("getTask-after-cancel", e.error.code == -32602, {**err(e), "note": "task deleted after cancel"})

            # ---------------------------------------------------------- error cases
            try:
                r = await exp.cancel_task(task_id)
                run.check("cancel-completed-error", False, {"unexpectedResult": r.model_dump(mode="json")})
            except McpError as e:
                run.check("cancel-completed-error", e.error.code == -32602, err(e))
            try:
                r = await exp.get_task("no-such-task-00000000")
                run.check("getTask-unknown-error", False, {"unexpectedResult": r.model_dump(mode="json")})
            except McpError as e:
                run.check("getTask-unknown-error", e.error.code == -32602, err(e))


async def main() -> int:
    opts = parse_args()
    run = Run(opts)
    try:
        with anyio.fail_after(opts.timeout):
            await drive(run)
    except TimeoutError:
        run.check("overall-timeout", False, f"run exceeded {opts.timeout}s")
    except BaseException as e:  # noqa: BLE001  (ExceptionGroup from anyio task groups too)
        run.check("unexpected-exception", False, err(e))
    s = run.summary()
    print(json.dumps(s, default=str), flush=True)
    return 0 if s["ok"] else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
