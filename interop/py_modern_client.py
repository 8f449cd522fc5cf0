#!/usr/bin/env python3
"""Interop driver: the official Python SDK, PyPI `mcp` 2.3.0, as a 2026-07-28 (Modern) client: plain
calls and MRTR (multi round-trip requests: `InputRequiredResult`, answered by the SDK's own
elicitation callback and retried) over Streamable HTTP. The SDK has no tasks extension, so it
never declares `io.modelcontextprotocol/tasks` and every call here is a plain one.

Usage (with the venv made by interop/install.sh):
  interop/.peers/venv-modern/bin/python interop/py_modern_client.py --url http://127.0.0.1:PORT/mcp \
      [--header 'Authorization: Bearer TOKEN']... [--conformance-url http://127.0.0.1:PORT2/mcp] \
      [--timeout 90]
Options may also come from the environment: MCP_URL, MCP_CONFORMANCE_URL, MCP_TIMEOUT.

--url: a server with the interop fixture's tools (interop/fixtures/mcp-tasks.toml):
`interop_echo` ({word} -> 'interop-ok: WORD' after ~1 s) and `interop_confirm` ({item}: a command
that prints an `@mcp-tasks {"elicit": ...}` line asking 'Confirm ITEM?', reads the answer on stdin
and prints '<verdict> ITEM: <answer line>').
--conformance-url: the conformance fixture server (crates/server/examples/conformance_server);
its prompts and resources are read, and its prompt `test_input_required_result_prompt` asks
through MRTR ('What context should the prompt use?', key `user_context`, `{context}`).

Checks (the "checks" list of the one JSON line printed on stdout):
  auto:negotiate (Client(mode="auto"): the SDK's own server/discover probe picks 2026-07-28
  and sees the tasks extension), discover (Client(mode="2026-07-28") sends no handshake; an
  explicit server/discover lists 2026-07-28 in supportedVersions and declares the tasks
  extension), tools-list, echo:call (result text),
  accept:call / decline:call (interop_confirm: the callback is asked once, with the message and
  schema; the result text names the answer), accept:wire / decline:wire (round 1 answered
  `resultType:"input_required"` with one `elicitation/create` in `inputRequests` and a
  `requestState`; the retry carried the same key and state and got `resultType:"complete"`);
  with --conformance-url: prompts-list, prompts-get, resources-list, resources-read,
  resource-template-read, prompt-mrtr:get + prompt-mrtr:wire, tool-mrtr-multi-round:call +
  tool-mrtr-multi-round:wire (two MRTR rounds in turn, a new requestState for the second).
Exit 0 only if every check held. Progress and PASS/FAIL lines go to stderr.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
import time
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.client import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp.shared.exceptions import MCPError

MODERN = "2026-07-28"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
BODY_CAP = 1 << 20
DRIVER = "py_modern_client"


# ------------------------------------------------------------------------------ options, checks
def parse_args() -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=env("MCP_URL"))
    p.add_argument("--conformance-url", default=env("MCP_CONFORMANCE_URL"))
    p.add_argument("--timeout", type=float, default=float(env("MCP_TIMEOUT", "90")))
    p.add_argument("--header", action="append", default=[], help="'Name: value', repeatable (--url only)")
    a = p.parse_args()
    if not a.url:
        p.error("--url is required")
    a.headers = {}
    for h in a.header:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            p.error(f"--header wants 'Name: value', got {h!r}")
        a.headers[name.strip()] = value.strip()
    return a


class Run:
    """The checks of one run and its summary (the JSON line)."""

    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.checks: list[dict] = []
        self.info: dict = {}
        self.started = time.monotonic()

    def log(self, line: str) -> None:
        print(f"[{DRIVER}] {line}", file=sys.stderr, flush=True)

    def check(self, name: str, ok: Any, detail: Any = None) -> bool:
        entry = {"name": name, "ok": bool(ok)}
        if detail is not None:
            entry["detail"] = detail
        self.checks.append(entry)
        self.log(f"{'PASS' if ok else 'FAIL'} {name} {json.dumps(detail, default=str) if detail is not None else ''}")
        return bool(ok)

    def summary(self) -> dict:
        ok = bool(self.checks) and all(c["ok"] for c in self.checks)
        return {
            "driver": DRIVER,
            "peer": f"mcp=={importlib.metadata.version('mcp')}",
            "url": self.opts.url,
            "conformanceUrl": self.opts.conformance_url,
            "ok": ok,
            "passed": sum(c["ok"] for c in self.checks),
            "failed": sum(not c["ok"] for c in self.checks),
            "elapsedMs": int((time.monotonic() - self.started) * 1000),
            **self.info,
            "checks": self.checks,
        }


def err(e: BaseException) -> dict:
    """An exception as check detail: the JSON-RPC code and message of an MCPError."""
    if isinstance(e, MCPError):
        return {"code": e.code, "message": e.message}
    if isinstance(e, BaseExceptionGroup):  # anyio task groups wrap the real cause(s)
        leaves = [err(x) for x in e.exceptions]
        return leaves[0] if len(leaves) == 1 else {"message": f"{len(leaves)} errors", "errors": leaves}
    return {"message": f"{type(e).__name__}: {e}"}


def texts(blocks: list[Any]) -> str:
    return "\n".join(b.text for b in blocks if isinstance(b, types.TextContent))


# ------------------------------------------------------------------------------ wire tap
class _TapStream(httpx2.AsyncByteStream):
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


class Tap(httpx2.AsyncBaseTransport):
    """Records every exchange (the JSON-RPC message POSTed, the status, the raw response body),
    so the driver can check what went over the wire beneath the SDK's MRTR loop."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.exchanges: list[dict] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            sent = json.loads(request.content) if request.content else None
        except (httpx2.RequestNotRead, ValueError):
            sent = None
        resp = await self.inner.handle_async_request(request)
        ex = {"sent": sent, "status": resp.status_code, "contentType": resp.headers.get("content-type", ""),
              "body": bytearray()}
        self.exchanges.append(ex)
        resp.stream = _TapStream(resp.stream, ex["body"])
        return resp

    async def aclose(self) -> None:
        await self.inner.aclose()

    def calls(self, method: str, key: str, value: str) -> list[tuple[dict, dict | None]]:
        """(params sent, result or error received) of every POST of `method` whose params[key] == value."""
        out = []
        for ex in self.exchanges:
            s = ex["sent"]
            if not isinstance(s, dict) or s.get("method") != method or (s.get("params") or {}).get(key) != value:
                continue
            answer = next((m for m in body_messages(ex) if isinstance(m, dict) and m.get("id") == s.get("id")
                           and ("result" in m or "error" in m)), None)
            out.append((s["params"], answer))
        return out


def body_messages(ex: dict) -> list[Any]:
    body = bytes(ex["body"])
    if "text/event-stream" in ex["contentType"]:
        out, data = [], []
        for line in body.decode("utf-8", "replace").replace("\r\n", "\n").split("\n") + [""]:
            if line == "":
                if data and data != [""]:
                    try:
                        out.append(json.loads("\n".join(data)))
                    except ValueError:
                        pass
                data = []
            elif line.startswith("data:"):
                data.append(line[6:] if line[5:6] == " " else line[5:])
        return out
    try:
        m = json.loads(body)
        return m if isinstance(m, list) else [m]
    except ValueError:
        return []


def check_wire(run: Run, name: str, rounds: list[tuple[dict, dict | None]], message: str, prop: str) -> None:
    """Round 1: no inputResponses, answered input_required with one elicitation/create (the
    message, a schema with `prop`) and a requestState; round 2: that key and state, answered complete."""
    detail: dict = {"posts": len(rounds)}
    ok = len(rounds) == 2
    if not ok:
        detail["answers"] = [a for _, a in rounds]
    if ok:
        (p1, a1), (p2, a2) = rounds
        r1 = (a1 or {}).get("result") or {}
        r2 = (a2 or {}).get("result") or {}
        reqs = r1.get("inputRequests") or {}
        key, req = next(iter(reqs.items())) if len(reqs) == 1 else (None, {})
        params = (req or {}).get("params") or {}
        detail.update({
            "round1": {"resultType": r1.get("resultType"), "inputRequests": reqs,
                       "requestState": bool(r1.get("requestState")), "error": (a1 or {}).get("error")},
            "retry": {"inputResponses": p2.get("inputResponses"), "sameState": p2.get("requestState") == r1.get("requestState")},
            "round2": {"resultType": r2.get("resultType"), "error": (a2 or {}).get("error")},
        })
        ok = ("inputResponses" not in p1 and r1.get("resultType") == "input_required" and key is not None
              and req.get("method") == "elicitation/create" and params.get("message") == message
              and prop in ((params.get("requestedSchema") or {}).get("properties") or {})
              and isinstance(r1.get("requestState"), str) and r1["requestState"]
              and set((p2.get("inputResponses") or {}).keys()) == {key}
              and p2.get("requestState") == r1.get("requestState")
              and r2.get("resultType") == "complete")
    run.check(name, ok, detail)


# ------------------------------------------------------------------------------ elicitation
class Answers:
    """The elicitation callback: answers by message, records what it was asked."""

    def __init__(self) -> None:
        self.by_message: dict[str, types.ElicitResult] = {}
        self.seen: list[dict] = []

    async def __call__(self, ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        schema = getattr(params, "requested_schema", None)
        self.seen.append({"message": params.message, "mode": getattr(params, "mode", None),
                          "schema": schema.model_dump(mode="json", exclude_none=True, by_alias=True)
                          if hasattr(schema, "model_dump") else schema})
        return self.by_message.get(params.message, types.ElicitResult(action="cancel"))

    def asked(self, message: str) -> list[dict]:
        return [s for s in self.seen if s["message"] == message]


def connect(opts: argparse.Namespace, url: str, headers: dict, tap: Tap, answers: Answers) -> tuple[Client, httpx2.AsyncClient]:
    http = httpx2.AsyncClient(headers=headers or None, transport=tap,
                              timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT))
    client = Client(streamable_http_client(url, http_client=http), mode=MODERN,
                    client_info=types.Implementation(name="mcp-tasks-interop-py-modern", version="1.0.0"),
                    elicitation_callback=answers, read_timeout_seconds=min(opts.timeout, 60))
    return client, http


# ------------------------------------------------------------------------------ mcp-tasks serve
async def confirm(run: Run, client: Client, tap: Tap, answers: Answers, scenario: str, item: str,
                  answer: types.ElicitResult, verdict: str) -> None:
    message = f"Confirm {item}?"
    answers.by_message[message] = answer
    try:
        with anyio.fail_after(30):
            result = await client.call_tool("interop_confirm", {"item": item})
    except Exception as e:  # noqa: BLE001
        run.check(f"{scenario}:call", False, err(e))
        return
    text = texts(result.content)
    asked = answers.asked(message)
    schema = asked[0]["schema"] if asked else {}
    want = f"{verdict} {item}: "
    run.check(f"{scenario}:call",
              len(asked) == 1 and "confirm" in ((schema or {}).get("properties") or {})
              and text.startswith(want) and ('"action":"' + answer.action + '"') in text
              and (answer.action != "accept" or '"confirm":true' in text) and not result.is_error,
              {"asked": asked, "text": text, "isError": result.is_error, "expect": want})
    check_wire(run, f"{scenario}:wire", tap.calls("tools/call", "name", "interop_confirm")[-2:], message, "confirm")


async def negotiate_auto(run: Run) -> None:
    """`Client(mode="auto")`: the SDK's own probe (server/discover, its DiscoverResult validated
    and adopted; a legacy fallback to `initialize` would show as 2025-11-25)."""
    o = run.opts
    http = httpx2.AsyncClient(headers=o.headers or None,
                              timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT))
    client = Client(streamable_http_client(o.url, http_client=http), mode="auto",
                    client_info=types.Implementation(name="mcp-tasks-interop-py-modern", version="1.0.0"))
    try:
        with anyio.fail_after(30):
            async with http, client:
                caps = client.server_capabilities
                info = client.server_info
                run.check("auto:negotiate", client.protocol_version == MODERN and TASKS_EXTENSION in (caps.extensions or {}),
                          {"protocolVersion": client.protocol_version, "extensions": list(caps.extensions or {}),
                           "server": info.name if info else None})
    except Exception as e:  # noqa: BLE001
        run.check("auto:negotiate", False, err(e))


async def drive_tasks_server(run: Run) -> None:
    o = run.opts
    await negotiate_auto(run)
    tap, answers = Tap(), Answers()
    client, http = connect(o, o.url, o.headers, tap, answers)
    async with http, client:
        run.info["protocolVersion"] = client.protocol_version  # pinned: no handshake, nothing sent yet
        try:
            raw = await client.session.send_discover(MODERN)
        except Exception as e:  # noqa: BLE001
            run.check("discover", False, err(e))
            raw = {}
        if raw:
            exts = ((raw.get("capabilities") or {}).get("extensions") or {})
            run.info["discover"] = {"supportedVersions": raw.get("supportedVersions"), "extensions": list(exts),
                                    "serverInfo": ((raw.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo"))}
            run.check("discover", MODERN in (raw.get("supportedVersions") or []) and TASKS_EXTENSION in exts,
                      run.info["discover"])

        tools = (await client.list_tools()).tools
        names = {t.name for t in tools}
        run.check("tools-list", {"interop_echo", "interop_confirm"} <= names, {"count": len(tools), "names": sorted(names)})

        try:
            with anyio.fail_after(30):
                echo = await client.call_tool("interop_echo", {"word": "modern"})
            text = texts(echo.content)
            run.check("echo:call", "interop-ok: modern" in text and not echo.is_error,
                      {"text": text, "isError": echo.is_error, "resultType": echo.result_type})
        except Exception as e:  # noqa: BLE001
            run.check("echo:call", False, err(e))

        await confirm(run, client, tap, answers, "accept", "widget",
                      types.ElicitResult(action="accept", content={"confirm": True}), "confirmed")
        await confirm(run, client, tap, answers, "decline", "gadget", types.ElicitResult(action="decline"), "declined")


# ------------------------------------------------------------------------------ conformance fixture
PROMPT_MRTR = "test_input_required_result_prompt"
PROMPT_MRTR_MESSAGE = "What context should the prompt use?"
MULTI_ROUND = "test_input_required_result_multi_round"
STEP1, STEP2 = "Step 1: What is your name?", "Step 2: What is your favorite color?"


def check_multi_round_wire(run: Run, rounds: list[tuple[dict, dict | None]]) -> None:
    """Three POSTs: input_required (step1, state A), input_required (step2, a new state B) after
    the step1 answer with A, complete after the step2 answer with B."""
    res = [((a or {}).get("result") or {}) for _, a in rounds]
    sent = [p for p, _ in rounds]
    detail = {"posts": len(rounds),
              "resultTypes": [r.get("resultType") for r in res],
              "keys": [sorted((r.get("inputRequests") or {}).keys()) for r in res],
              "sentResponses": [sorted((p.get("inputResponses") or {}).keys()) for p in sent],
              "newStateEachRound": len(res) == 3 and res[0].get("requestState") != res[1].get("requestState"),
              "errors": [(a or {}).get("error") for _, a in rounds if (a or {}).get("error")]}
    ok = (len(rounds) == 3
          and [r.get("resultType") for r in res] == ["input_required", "input_required", "complete"]
          and list((res[0].get("inputRequests") or {}).keys()) == ["step1"]
          and list((res[1].get("inputRequests") or {}).keys()) == ["step2"]
          and "step1" in (sent[1].get("inputResponses") or {})
          and sent[1].get("requestState") == res[0].get("requestState")
          and "step2" in (sent[2].get("inputResponses") or {})
          and sent[2].get("requestState") == res[1].get("requestState")
          and bool(res[0].get("requestState")) and res[0].get("requestState") != res[1].get("requestState"))
    run.check("tool-mrtr-multi-round:wire", ok, detail)


async def drive_fixture(run: Run) -> None:
    o = run.opts
    tap, answers = Tap(), Answers()
    answers.by_message[PROMPT_MRTR_MESSAGE] = types.ElicitResult(action="accept", content={"context": "interop-context"})
    answers.by_message[STEP1] = types.ElicitResult(action="accept", content={"name": "Ada"})
    answers.by_message[STEP2] = types.ElicitResult(action="accept", content={"color": "teal"})
    client, http = connect(o, o.conformance_url, {}, tap, answers)
    async with http, client:
        async def step(name: str, fn) -> None:
            try:
                with anyio.fail_after(30):
                    await fn()
            except Exception as e:  # noqa: BLE001
                run.check(name, False, err(e))

        async def prompts_list() -> None:
            names = {p.name for p in (await client.list_prompts()).prompts}
            want = {"test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource",
                    "test_prompt_with_image"}
            run.check("prompts-list", want <= names, {"names": sorted(names), PROMPT_MRTR: PROMPT_MRTR in names})

        async def prompts_get() -> None:
            r = await client.get_prompt("test_prompt_with_arguments", {"arg1": "alpha", "arg2": "beta"})
            text = "\n".join(m.content.text for m in r.messages if isinstance(m.content, types.TextContent))
            run.check("prompts-get", text == "Prompt with arguments: arg1='alpha', arg2='beta'"
                      and [m.role for m in r.messages] == ["user"], {"text": text, "messages": len(r.messages)})

        async def resources_list() -> None:
            rs = (await client.list_resources()).resources
            uris = {str(r.uri) for r in rs}
            run.check("resources-list", {"test://static-text", "test://static-binary"} <= uris, {"uris": sorted(uris)})

        async def resources_read() -> None:
            r = await client.read_resource("test://static-text")
            c = r.contents
            ok = (len(c) == 1 and isinstance(c[0], types.TextResourceContents)
                  and c[0].text == "This is the content of the static text resource." and c[0].mime_type == "text/plain")
            run.check("resources-read", ok, {"contents": [x.model_dump(mode="json", exclude_none=True) for x in c]})

        async def template_read() -> None:
            r = await client.read_resource("test://template/123/data")
            c = r.contents
            body = json.loads(c[0].text) if len(c) == 1 and isinstance(c[0], types.TextResourceContents) else None
            run.check("resource-template-read", body == {"id": "123", "templateTest": True, "data": "Data for ID: 123"},
                      {"body": body})

        async def prompt_mrtr() -> None:
            r = await client.get_prompt(PROMPT_MRTR)
            text = "\n".join(m.content.text for m in r.messages if isinstance(m.content, types.TextContent))
            asked = answers.asked(PROMPT_MRTR_MESSAGE)
            run.info["promptMrtrText"] = text
            run.check("prompt-mrtr:get", len(asked) == 1 and len(r.messages) >= 1,
                      {"asked": asked, "messages": len(r.messages), "text": text,
                       "answerEchoed": "interop-context" in text})

        async def multi_round() -> None:
            r = await client.call_tool(MULTI_ROUND, {})
            text = texts(r.content)
            asked = [s["message"] for s in answers.seen if s["message"] in (STEP1, STEP2)]
            run.check("tool-mrtr-multi-round:call",
                      asked == [STEP1, STEP2] and text == "Hello, Ada! Your favorite color is teal." and not r.is_error,
                      {"asked": asked, "text": text, "isError": r.is_error})

        for name, fn in (("prompts-list", prompts_list), ("prompts-get", prompts_get),
                         ("resources-list", resources_list), ("resources-read", resources_read),
                         ("resource-template-read", template_read), ("prompt-mrtr:get", prompt_mrtr),
                         ("tool-mrtr-multi-round:call", multi_round)):
            await step(name, fn)
        check_wire(run, "prompt-mrtr:wire", tap.calls("prompts/get", "name", PROMPT_MRTR), PROMPT_MRTR_MESSAGE, "context")
        check_multi_round_wire(run, tap.calls("tools/call", "name", MULTI_ROUND))


async def drive(run: Run) -> None:
    await drive_tasks_server(run)
    if run.opts.conformance_url:
        await drive_fixture(run)


async def main() -> int:
    run = Run(parse_args())
    try:
        with anyio.fail_after(run.opts.timeout):
            await drive(run)
    except TimeoutError:
        run.check("overall-timeout", False, f"run exceeded {run.opts.timeout}s")
    except BaseException as e:  # noqa: BLE001  (ExceptionGroup from anyio task groups too)
        run.check("unexpected-exception", False, err(e))
    s = run.summary()
    print(json.dumps(s, default=str), flush=True)
    return 0 if s["ok"] else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
