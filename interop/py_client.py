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
import json
import sys

import py_common  # first: it silences the SDK's DeprecationWarnings
from py_common import RELATED_TASK, Run, compress, err, text_of

import anyio
import mcp.types as types
from mcp.shared.exceptions import McpError


def add_options(p: argparse.ArgumentParser, env) -> None:
    p.add_argument("--tool", default=env("MCP_TOOL"))
    p.add_argument("--args", default=env("MCP_ARGS", "{}"))
    p.add_argument("--long-tool", default=env("MCP_LONG_TOOL"))
    p.add_argument("--long-args", default=env("MCP_LONG_ARGS"))
    p.add_argument("--expect-text", default=env("MCP_EXPECT_TEXT"))


def complete(a: argparse.Namespace) -> None:
    a.args = json.loads(a.args)
    a.long_tool = a.long_tool or a.tool
    a.long_args = a.args if a.long_args is None else json.loads(a.long_args)


async def drive(run: Run) -> None:
    o = run.opts
    async with py_common.connect(run, "mcp-tasks-interop-py") as conn:
        if conn is None:
            return
        run.info["serverInfo"] = conn.init.serverInfo.model_dump(exclude_none=True)
        py_common.check_connected(run, conn)
        session = conn.session
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
            text = text_of(result)
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
    opts = py_common.parse_args(__doc__, add_options, required=("url", "tool"), finish=complete)
    run = Run("py_client", opts, longTool=opts.long_tool)
    return await py_common.main(run, lambda: drive(run))


if __name__ == "__main__":
    sys.exit(anyio.run(main))
