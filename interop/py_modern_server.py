"""Interop peer: the Python SDK, mcp 2.3.0, `MCPServer` on Streamable HTTP, which serves the
2026-07-28 revision statelessly (no initialize, per-request `_meta`; MRTR for `Elicit[T]`; no
tasks extension), for testing a Modern client (ours: `mcp-tasks call --era modern`,
interop/client-peers-modern.sh); checked on its own by interop/modern-servers-selfcheck.sh.

    .peers/venv-modern/bin/python interop/py_modern_server.py [--listen 127.0.0.1:0] [--serve-legacy]

Prints `listening on http://ADDR/mcp` on stdout once bound (uvicorn on a socket bound here, so
port 0 works); stops on SIGTERM / SIGINT. DNS-rebinding protection for loopback is the SDK's
default for host 127.0.0.1. The SDK serves 2025-11-25 (initialize, sessions) on the same
endpoint; so that a client that falls back to it cannot pass for a Modern one, a small ASGI
guard in front answers `initialize` with HTTP 400 and -32022 "Unsupported protocol version"
(as the TS server's `legacy: 'reject'` does), unless --serve-legacy.

Tools:
  * py_echo {text}: answers `py_echo: TEXT`;
  * py_confirm {item="widget"}: its parameter `answer` is `Annotated[ElicitationResult[Confirm],
    Resolve(ask)]`, the resolver returning `Elicit("Confirm ITEM?", Confirm)` (a form with a
    boolean `confirm`). In 2026-07-28 the SDK answers round 1 with an InputRequiredResult
    (its own input key and requestState) and runs the tool body on the retry that carries the
    answer: accept {confirm: true} -> `py_confirm ITEM: confirmed`, accept {confirm: false} ->
    `py_confirm ITEM: not confirmed`, decline / cancel -> `py_confirm ITEM: declined` /
    `... cancelled`.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from typing import Annotated

import anyio
import uvicorn
from pydantic import BaseModel, Field

from mcp.server.elicitation import AcceptedElicitation, DeclinedElicitation, ElicitationResult
from mcp.server.mcpserver import Elicit, MCPServer
from mcp.server.mcpserver.resolve import Resolve


class Confirm(BaseModel):
    confirm: bool = Field(description="Confirm the item")


def ask(item: str = "widget") -> Elicit[Confirm]:
    return Elicit(f"Confirm {item}?", Confirm)


def build() -> MCPServer:
    server = MCPServer("py-modern-server")

    @server.tool(description="Answers `py_echo: TEXT`.")
    def py_echo(text: str) -> str:
        return f"py_echo: {text}"

    @server.tool(description="Asks `Confirm ITEM?` (elicitation, MRTR in 2026-07-28), then answers with the decision.")
    def py_confirm(answer: Annotated[ElicitationResult[Confirm], Resolve(ask)], item: str = "widget") -> str:
        if isinstance(answer, AcceptedElicitation):
            return f"py_confirm {item}: {'confirmed' if answer.data.confirm else 'not confirmed'}"
        if isinstance(answer, DeclinedElicitation):
            return f"py_confirm {item}: declined"
        return f"py_confirm {item}: cancelled"

    return server


def reject_legacy(app):
    """ASGI guard: an `initialize` POST gets -32022 (no 2025-11-25 serving); the rest pass on."""

    async def guarded(scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await app(scope, receive, send)
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if isinstance(request, dict) and request.get("method") == "initialize":
            error = {"jsonrpc": "2.0", "id": request.get("id"), "error": {
                "code": -32022, "message": "Unsupported protocol version: "
                + str((request.get("params") or {}).get("protocolVersion")),
                "data": {"supported": ["2026-07-28"], "requested": (request.get("params") or {}).get("protocolVersion")}}}
            payload = json.dumps(error).encode()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
            await send({"type": "http.response.body", "body": payload})
            return None
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await app(scope, replay, send)

    return guarded


async def serve(host: str, port: int, serve_legacy: bool) -> None:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    app = build().streamable_http_app(host=host)
    if not serve_legacy:
        app = reject_legacy(app)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    shown = f"[{host}]" if ":" in host else host

    async def announce() -> None:
        with anyio.fail_after(30):
            while not server.started:
                await anyio.sleep(0.02)
        sys.stdout.write(f"listening on http://{shown}:{bound}/mcp\n")
        sys.stdout.flush()

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (port 0: a free one)")
    parser.add_argument("--serve-legacy", action="store_true", help="serve 2025-11-25 initialize too")
    args = parser.parse_args()
    host, _, port = args.listen.rpartition(":")
    anyio.run(serve, host.strip("[]"), int(port), args.serve_legacy)


if __name__ == "__main__":
    main()
