#!/usr/bin/env python3
"""Interop driver: the official Python SDK (PyPI `mcp` 1.30.0) answers elicitations that a
server raises inside tasks, over Streamable HTTP (protocol 2025-11-25, core Tasks).

Usage (with the venv made by interop/install.sh):
  interop/.peers/venv/bin/python interop/py_elicit.py --url http://127.0.0.1:PORT/mcp \
      [--tool interop_confirm] [--item widget] [--decline-item gadget] [--sync-item gizmo|'']
      [--ttl 60000] [--timeout 90] [--header 'Authorization: Bearer TOKEN']...
Options may also come from the environment: MCP_URL, MCP_ELICIT_TOOL, MCP_TTL, MCP_TIMEOUT.

The tool (interop/fixtures/mcp-tasks.toml: `interop_confirm`, a command tool using the line
protocol) takes {"item": ITEM}, asks "Confirm ITEM?" by elicitation (form, required boolean
`confirm`) and prints '<verdict> ITEM: <the ElicitResult line it read>', verdict `confirmed`
(accept with confirm true), `declined`, `cancelled` or `not confirmed`.

The client declares elicitation (an `elicitation_callback` on `ClientSession`). Scenarios:
  accept  -- call_tool_as_task(tool, {item}), poll_task until input_required (no elicitation
             may arrive before tasks/result), get_task_result: the server sends
             elicitation/create on that request's SSE stream, the callback answers
             accept {"confirm": true}, tasks/result returns the CallToolResult.
  decline -- the same with --decline-item, answered decline.
  sync    -- (unless --sync-item '') a plain tools/call (no task) of the same tool; the
             elicitation comes on the tools/call stream without related-task _meta; answered
             cancel.
Checks per task scenario (prefixed with its name): call_tool_as_task, input_required,
no-elicitation-before-result, elicitation (one request, "Confirm ITEM?", the schema, related-task
_meta naming the task, as the callback sees it), elicitation-on-result-stream (the wire: the SSE
body of the tasks/result POST holds the elicitation/create with that _meta; the POST of our
answer got 202), get_task_result (CallToolResult, not isError, related-task _meta), result-text
(contains '<verdict> ITEM: <compact ElicitResult>'), getTask-completed. The sync scenario:
elicitation (no related-task _meta), call_tool, result-text.
One JSON line on stdout; exit 0 only if every check held. Logs go to stderr.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import py_common  # first: it silences the SDK's DeprecationWarnings
from py_common import RELATED_TASK, Run, compress, err, text_of

import anyio
import httpx
import mcp.types as types
from mcp import ClientSession
from mcp.shared.context import RequestContext

BODY_CAP = 1 << 20


def add_options(p: argparse.ArgumentParser, env) -> None:
    p.add_argument("--tool", default=env("MCP_ELICIT_TOOL", "interop_confirm"))
    p.add_argument("--item", default="widget")
    p.add_argument("--decline-item", default="gadget")
    p.add_argument("--sync-item", default="gizmo", help="'' skips the plain tools/call scenario")


# ------------------------------------------------------------------------------ wire tap
class _TapStream(httpx.AsyncByteStream):
    """Passes a response body through, keeping a copy (up to BODY_CAP bytes)."""

    def __init__(self, inner: Any, sink: bytearray) -> None:
        self._inner, self._sink = inner, sink

    async def __aiter__(self):
        async for chunk in self._inner:
            if len(self._sink) < BODY_CAP:
                self._sink.extend(chunk[: BODY_CAP - len(self._sink)])
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class Tap(httpx.AsyncBaseTransport):
    """An httpx transport that records every exchange: the JSON-RPC message POSTed, the status
    and the raw response body (SSE or JSON), so the driver can tell on which HTTP response a
    server request arrived."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.exchanges: list[dict] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            sent = json.loads(request.content) if request.content else None
        except (httpx.RequestNotRead, ValueError):
            sent = None
        resp = await self.inner.handle_async_request(request)
        ex = {"http": request.method, "sent": sent, "status": resp.status_code,
              "contentType": resp.headers.get("content-type", ""),
              "contentEncoding": resp.headers.get("content-encoding", ""), "body": bytearray()}
        self.exchanges.append(ex)
        resp.stream = _TapStream(resp.stream, ex["body"])
        return resp

    async def aclose(self) -> None:
        await self.inner.aclose()


def sse_messages(body: bytes) -> list[Any]:
    """The JSON-RPC messages in an SSE body (the data lines of each event, joined)."""
    out, data = [], []
    for line in body.decode("utf-8", "replace").replace("\r\n", "\n").split("\n") + [""]:
        if line == "":
            if data == [""]:
                out.append({"priming": True})  # an event with an id and empty data (resumability)
            elif data:
                try:
                    out.append(json.loads("\n".join(data)))
                except ValueError:
                    out.append({"unparsed": "\n".join(data)[:200]})
                data = []
        elif line.startswith("data:"):
            data.append(line[6:] if line[5:6] == " " else line[5:])
    return out


def body_messages(ex: dict) -> list[Any]:
    if "text/event-stream" in ex["contentType"]:
        return sse_messages(bytes(ex["body"]))
    try:
        m = json.loads(bytes(ex["body"]))
        return m if isinstance(m, list) else [m]
    except ValueError:
        return []


# ------------------------------------------------------------------------------ scenarios
class Scenario:
    """What the elicitation callback answers now, and what it saw."""

    def __init__(self, name: str, item: str, answer: types.ElicitResult) -> None:
        self.name, self.item, self.answer = name, item, answer
        self.seen: list[dict] = []
        self.in_result = False  # set while tasks/result (or the plain tools/call) is pending

    @property
    def answer_line(self) -> str:
        # what the tool reads on stdin: the client's ElicitResult, compact
        return json.dumps(self.answer.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))

    @property
    def verdict(self) -> str:
        a = self.answer
        if a.action == "accept":
            return "confirmed" if (a.content or {}).get("confirm") is True else "not confirmed"
        return {"decline": "declined", "cancel": "cancelled"}[a.action]


def kind(m: Any) -> str:
    if not isinstance(m, dict):
        return type(m).__name__
    for k in ("priming", "unparsed", "method", "result", "error"):
        if k in m:
            return m["method"] if k == "method" else k
    return "?"


def schema_ok(schema: Any) -> bool:
    try:
        return schema["properties"]["confirm"]["type"] == "boolean" and "confirm" in schema.get("required", [])
    except (KeyError, TypeError):
        return False


async def drive(run: Run, tap: Tap) -> None:
    o = run.opts
    current: dict[str, Scenario | None] = {"s": None}

    async def on_elicit(ctx: RequestContext[ClientSession, Any], params: types.ElicitRequestParams):
        s = current["s"]
        meta = ctx.meta.model_extra if ctx.meta is not None else None
        seen = {"requestId": ctx.request_id, "mode": getattr(params, "mode", None), "message": params.message,
                "requestedSchema": getattr(params, "requestedSchema", None),
                "relatedTask": (meta or {}).get(RELATED_TASK), "duringResult": bool(s and s.in_result)}
        run.log(f"elicitation/create {json.dumps(seen, default=str)}")
        if s is None:
            run.check("unexpected-elicitation", False, seen)
            return types.ErrorData(code=types.INVALID_REQUEST, message="no scenario running")
        s.seen.append(seen)
        return s.answer

    async with py_common.connect(run, "mcp-tasks-interop-py-elicit", transport=tap,
                                 elicitation_callback=on_elicit) as conn:
        if conn is None:
            return
        sent_init = next((x["sent"] for x in tap.exchanges
                          if isinstance(x["sent"], dict) and x["sent"].get("method") == "initialize"), None)
        client_caps = ((sent_init or {}).get("params") or {}).get("capabilities")
        py_common.check_connected(run, conn, clientElicitationCapability=(client_caps or {}).get("elicitation"))
        session = conn.session
        tools = {t.name: t for t in (await session.list_tools()).tools}
        t = tools.get(o.tool)
        run.check("tools-list", t is not None,
                  {"tool": o.tool, "taskSupport": t.execution.taskSupport if t and t.execution else None})
        if t is None:
            return
        exp = session.experimental

        # ------------------------------------------------------------------ task scenarios
        for s in (Scenario("accept", o.item, types.ElicitResult(action="accept", content={"confirm": True})),
                  Scenario("decline", o.decline_item, types.ElicitResult(action="decline"))):
            current["s"] = s
            n = s.name
            try:
                created = await exp.call_tool_as_task(o.tool, {"item": s.item}, ttl=o.ttl)
            except Exception as e:  # noqa: BLE001
                run.check(f"{n}:call_tool_as_task", False, err(e))
                continue
            task_id = created.task.taskId
            run.info[f"{n}TaskId"] = task_id
            run.check(f"{n}:call_tool_as_task", created.task.status in ("working", "input_required"),
                      {"taskId": task_id, "status": created.task.status})
            statuses: list[str] = []
            try:
                with anyio.fail_after(max(5.0, min(30.0, o.timeout / 3))):
                    async for st in exp.poll_task(task_id):
                        statuses.append(st.status)
                        if st.status == "input_required":
                            break
            except TimeoutError:
                statuses.append("(timeout)")
            run.check(f"{n}:input_required", statuses[-1:] == ["input_required"],
                      {"statuses": compress(statuses)})
            run.check(f"{n}:no-elicitation-before-result", not s.seen, {"seen": s.seen} if s.seen else None)

            first_ex = len(tap.exchanges)
            s.in_result = True
            result = None
            try:
                with anyio.fail_after(max(5.0, min(60.0, o.timeout / 2))):
                    result = await exp.get_task_result(task_id, types.CallToolResult)
            except Exception as e:  # noqa: BLE001
                run.check(f"{n}:get_task_result", False, err(e))
            s.in_result = False

            e0 = s.seen[0] if s.seen else {}
            related = e0.get("relatedTask")
            run.check(f"{n}:elicitation",
                      len(s.seen) == 1 and e0.get("duringResult") and e0.get("message") == f"Confirm {s.item}?"
                      and schema_ok(e0.get("requestedSchema"))
                      and isinstance(related, dict) and related.get("taskId") == task_id,
                      {"count": len(s.seen), **({k: e0[k] for k in ("message", "relatedTask", "duringResult")}
                                                if e0 else {})})

            # the wire: which HTTP response carried the elicitation/create, and our answer's POST
            exs = tap.exchanges[first_ex:]
            res_ex = next((x for x in exs if isinstance(x["sent"], dict) and x["sent"].get("method") == "tasks/result"
                           and (x["sent"].get("params") or {}).get("taskId") == task_id), None)
            wire = [m for m in (body_messages(res_ex) if res_ex else [])
                    if isinstance(m, dict) and m.get("method") == "elicitation/create"]
            wire_id = wire[0].get("id") if wire else None
            answer_ex = next((x for x in exs if isinstance(x["sent"], dict) and "method" not in x["sent"]
                              and x["sent"].get("id") == wire_id and wire), None)
            wire_related = ((wire[0].get("params") or {}).get("_meta") or {}).get(RELATED_TASK) if wire else None
            if wire:
                run.info[f"{n}WireElicitation"] = wire[0]
            if answer_ex:
                run.info[f"{n}WireAnswer"] = answer_ex["sent"]
            run.check(f"{n}:elicitation-on-result-stream",
                      res_ex is not None and len(wire) == 1 and isinstance(wire_related, dict)
                      and wire_related.get("taskId") == task_id and answer_ex is not None
                      and answer_ex["status"] == 202,
                      {"resultPost": {"status": res_ex["status"], "contentType": res_ex["contentType"],
                                      "contentEncoding": res_ex["contentEncoding"],
                                      "messages": [kind(m) for m in body_messages(res_ex)]}
                                     if res_ex else None,
                       "relatedTask": wire_related,
                       "answerPostStatus": answer_ex["status"] if answer_ex else None})

            if result is not None:
                meta_rel = (result.meta or {}).get(RELATED_TASK)
                text = text_of(result)
                run.info[f"{n}ResultText"] = text
                run.check(f"{n}:get_task_result",
                          not result.isError and isinstance(meta_rel, dict) and meta_rel.get("taskId") == task_id,
                          {"isError": result.isError, "relatedTask": meta_rel})
                expect = f"{s.verdict} {s.item}: {s.answer_line}"
                run.check(f"{n}:result-text", expect in text, {"expected": expect, "text": text[:300]})
            try:
                got = await exp.get_task(task_id)
                run.check(f"{n}:getTask-completed", got.status == "completed",
                          {"status": got.status, "statusMessage": got.statusMessage})
            except Exception as e:  # noqa: BLE001
                run.check(f"{n}:getTask-completed", False, err(e))

        # ------------------------------------------------------------------ plain tools/call
        if o.sync_item:
            s = Scenario("sync", o.sync_item, types.ElicitResult(action="cancel"))
            current["s"] = s
            s.in_result = True
            result = None
            try:
                with anyio.fail_after(max(5.0, min(60.0, o.timeout / 2))):
                    result = await session.call_tool(o.tool, {"item": s.item})
                run.check("sync:call_tool", not result.isError, {"isError": result.isError})
            except Exception as e:  # noqa: BLE001
                run.check("sync:call_tool", False, err(e))
            s.in_result = False
            e0 = s.seen[0] if s.seen else {}
            run.check("sync:elicitation",
                      len(s.seen) == 1 and e0.get("message") == f"Confirm {s.item}?" and e0.get("relatedTask") is None,
                      {"count": len(s.seen), **({k: e0[k] for k in ("message", "relatedTask")} if e0 else {})})
            if result is not None:
                text = text_of(result)
                run.info["syncResultText"] = text
                expect = f"{s.verdict} {s.item}: {s.answer_line}"
                run.check("sync:result-text", expect in text, {"expected": expect, "text": text[:300]})
        current["s"] = None


async def main() -> int:
    opts = py_common.parse_args(__doc__, add_options, required=("url",))
    run = Run("py_elicit", opts)
    tap = Tap()
    return await py_common.main(run, lambda: drive(run, tap))


if __name__ == "__main__":
    sys.exit(anyio.run(main))
