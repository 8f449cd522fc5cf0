"""What the Python interop drivers (py_client.py, py_elicit.py) share; the official `mcp` 1.30.0 SDK.

Import it before anything from `mcp`: it silences the SDK's DeprecationWarnings first.

* `parse_args`: the common options (--url, --ttl, --timeout, repeatable --header 'Name: value'),
  each driver's own between --url and --ttl; `opts.headers` is the parsed {name: value};
* `Run`: the checks (PASS/FAIL lines on stderr as `[driver] ...`) and the summary JSON line;
* `connect`: httpx client with the headers + `streamable_http_client` + `ClientSession` +
  `initialize` (bounded at 30 s), recording a failed `connect` check;
  `check_connected` then records `connect` and `server-tasks-capability`;
* `main`: runs a drive coroutine bounded by --timeout, prints the summary line, exit status;
* `err`, `compress`, `text_of`, `RELATED_TASK`.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
import time
import warnings
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, AsyncIterator, Awaitable, Callable

# mcp 1.30.0 marks the whole experimental tasks API deprecated (tasks "were removed from the MCP
# specification" -- i.e. moved to the SEP-2663 extension); it still works. Keep stderr readable.
warnings.filterwarnings("ignore", category=DeprecationWarning)

import anyio  # noqa: E402
import httpx  # noqa: E402
import mcp.types as types  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT  # noqa: E402
from mcp.shared.exceptions import McpError  # noqa: E402

RELATED_TASK = "io.modelcontextprotocol/related-task"


def parse_args(doc: str, add_own: Callable[[argparse.ArgumentParser, Callable], None],
               required: tuple[str, ...], finish: Callable[[argparse.Namespace], None] | None = None
               ) -> argparse.Namespace:
    """--url (MCP_URL), the driver's options (`add_own(parser, os.environ.get)`), --ttl (MCP_TTL,
    default 60000), --timeout (MCP_TIMEOUT, default 90), --header; the options named in `required`
    must be given; `finish` then completes the namespace before the headers are parsed."""
    env = os.environ.get
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--url", default=env("MCP_URL"))
    add_own(p, env)
    p.add_argument("--ttl", type=int, default=int(env("MCP_TTL", "60000")))
    p.add_argument("--timeout", type=float, default=float(env("MCP_TIMEOUT", "90")))
    p.add_argument("--header", action="append", default=[], help="'Name: value', repeatable")
    a = p.parse_args()
    if not all(getattr(a, name) for name in required):
        p.error(f"{' and '.join('--' + name for name in required)} {'are' if len(required) > 1 else 'is'} required")
    if finish is not None:
        finish(a)
    a.headers = {}
    for h in a.header:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            p.error(f"--header wants 'Name: value', got {h!r}")
        a.headers[name.strip()] = value.strip()
    return a


class Run:
    """The checks of one driver run and its summary (the JSON line)."""

    def __init__(self, driver: str, opts: argparse.Namespace, **ident: Any) -> None:
        """`ident`: summary fields that follow "url" and "tool" (e.g. longTool)."""
        self.driver, self.opts, self.ident = driver, opts, ident
        self.checks: list[dict] = []
        self.info: dict = {}
        self.started = time.monotonic()

    def log(self, line: str) -> None:
        """One progress line on stderr, prefixed with the driver's name."""
        print(f"[{self.driver}] {line}", file=sys.stderr)

    def check(self, name: str, ok, detail=None) -> bool:
        """Records a check (and logs it); returns whether it held."""
        entry = {"name": name, "ok": bool(ok)}
        if detail is not None:
            entry["detail"] = detail
        self.checks.append(entry)
        self.log(f"{'PASS' if ok else 'FAIL'} {name} {json.dumps(detail, default=str) if detail is not None else ''}")
        return bool(ok)

    def summary(self) -> dict:
        """The JSON line's object; "ok" only if there are checks and all held."""
        ok = bool(self.checks) and all(c["ok"] for c in self.checks)
        return {
            "driver": self.driver,
            "peer": f"mcp=={importlib.metadata.version('mcp')}",
            "url": self.opts.url,
            "tool": self.opts.tool,
            **self.ident,
            "ok": ok,
            "passed": sum(c["ok"] for c in self.checks),
            "failed": sum(not c["ok"] for c in self.checks),
            "elapsedMs": int((time.monotonic() - self.started) * 1000),
            **self.info,
            "checks": self.checks,
        }


def err(e: BaseException) -> dict:
    """An exception as check detail: the JSON-RPC code and message of an McpError."""
    if isinstance(e, McpError):
        return {"code": e.error.code, "message": e.error.message}
    if isinstance(e, BaseExceptionGroup):  # anyio task groups wrap the real cause(s)
        leaves = [err(x) for x in e.exceptions]
        return leaves[0] if len(leaves) == 1 else {"message": f"{len(leaves)} errors", "errors": leaves}
    return {"message": f"{type(e).__name__}: {e}"}


def compress(items: list[str]) -> list[str]:
    """Runs of equal items as 'item*n'."""
    out: list[list] = []
    for s in items:
        if out and out[-1][0] == s:
            out[-1][1] += 1
        else:
            out.append([s, 1])
    return [f"{s}*{n}" if n > 1 else s for s, n in out]


def text_of(result: types.CallToolResult) -> str:
    """The text items of a tool result, one a line."""
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


@dataclass
class Connected:
    """An initialized session."""

    session: ClientSession
    init: types.InitializeResult
    get_session_id: Callable[[], str | None]


@asynccontextmanager
async def connect(run: Run, client_name: str, transport: httpx.AsyncBaseTransport | None = None,
                  **session_kwargs: Any) -> AsyncIterator[Connected | None]:
    """Connects to --url with the --header headers (through `transport` when given) as client
    `client_name` and initializes; yields None when that failed (the `connect` check then
    failed). Sets info.protocolVersion; `session_kwargs` go to ClientSession."""
    o = run.opts
    # what the SDK's create_mcp_http_client builds, with an optional transport
    http = httpx.AsyncClient(headers=o.headers or None, transport=transport,
                             timeout=httpx.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT))
    async with http, streamable_http_client(o.url, http_client=http) as (read, write, get_session_id):
        async with ClientSession(read, write, read_timeout_seconds=timedelta(seconds=min(o.timeout, 60)),
                                 client_info=types.Implementation(name=client_name, version="1.0.0"),
                                 **session_kwargs) as session:
            try:
                with anyio.fail_after(30):
                    init = await session.initialize()
            except Exception as e:  # noqa: BLE001
                run.check("connect", False, err(e))
                yield None
                return
            run.info["protocolVersion"] = init.protocolVersion
            yield Connected(session, init, get_session_id)


def check_connected(run: Run, c: Connected, **detail: Any) -> None:
    """The `connect` check (with `detail` added) and `server-tasks-capability` (tasks.requests.tools.call)."""
    init = c.init
    run.check("connect", True, {"protocolVersion": init.protocolVersion, "server": init.serverInfo.name,
                                "sessionId": bool(c.get_session_id()), **detail})
    caps = init.capabilities.tasks
    run.check("server-tasks-capability",
              caps is not None and caps.requests is not None and caps.requests.tools is not None
              and caps.requests.tools.call is not None,
              caps.model_dump(exclude_none=True) if caps else None)


async def main(run: Run, drive: Callable[[], Awaitable[None]]) -> int:
    """Runs `drive()` within --timeout (a timeout or an escaping exception is a failed check),
    prints the summary line on stdout; 0 only if every check held."""
    try:
        with anyio.fail_after(run.opts.timeout):
            await drive()
    except TimeoutError:
        run.check("overall-timeout", False, f"run exceeded {run.opts.timeout}s")
    except BaseException as e:  # noqa: BLE001  (ExceptionGroup from anyio task groups too)
        run.check("unexpected-exception", False, err(e))
    s = run.summary()
    print(json.dumps(s, default=str), flush=True)
    return 0 if s["ok"] else 1
