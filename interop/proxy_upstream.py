"""An MCP server on the official Python SDK (mcp 1.30.0, 2025-11-25, no task support) for
`mcp-tasks proxy` to put tasks in front of (interop/proxy.sh). Its tools have the names and
answers of interop/fixtures/mcp-tasks.toml's, so the same downstream drivers check them:

  interop_echo WORD       waits a second, then 'interop-ok: WORD'
  interop_sleep SECONDS   the slow tool: reports progress each second, then 'slept'
  interop_confirm ITEM    asks the client (elicitation, boolean 'confirm'): 'confirmed ITEM: …'
  interop_confirm_later   the same after two seconds of work

Each call is logged to stderr. Run: $INTEROP_PYTHON interop/proxy_upstream.py (stdio).
"""

import asyncio
import json
import sys

from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel, Field

mcp = FastMCP("proxy-upstream-python")


def log(*parts):
    print("[proxy_upstream]", *parts, file=sys.stderr, flush=True)


class Confirm(BaseModel):
    confirm: bool = Field(description="yes to confirm")


@mcp.tool(description="Waits about a second, then prints 'interop-ok: WORD'.")
async def interop_echo(word: str) -> str:
    log("interop_echo", word)
    await asyncio.sleep(1)
    return f"interop-ok: {word}"


@mcp.tool(description="Sleeps SECONDS seconds (progress each second), then prints 'slept'.")
async def interop_sleep(seconds: int, ctx: Context) -> str:
    log("interop_sleep", seconds)
    for done in range(seconds):
        await ctx.report_progress(done, seconds, f"slept {done} of {seconds} s")
        await asyncio.sleep(1)
    return "slept"


async def confirm(item: str, ctx: Context) -> str:
    answer = await ctx.elicit(f"Confirm {item}?", Confirm)
    said = {"action": answer.action}
    if answer.action == "accept":
        said["content"] = answer.data.model_dump()
    line = json.dumps(said, separators=(",", ":"))
    if answer.action == "accept" and answer.data.confirm:
        verdict = "confirmed"
    elif answer.action in ("decline", "cancel"):
        verdict = {"decline": "declined", "cancel": "cancelled"}[answer.action]
    else:
        verdict = "not confirmed"
    return f"{verdict} {item}: {line}"


@mcp.tool(description="Asks the client to confirm ITEM (elicitation, boolean 'confirm').")
async def interop_confirm(item: str, ctx: Context) -> str:
    log("interop_confirm", item)
    return await confirm(item, ctx)


@mcp.tool(description="Works about two seconds, then asks the client to confirm ITEM.")
async def interop_confirm_later(item: str, ctx: Context) -> str:
    log("interop_confirm_later", item)
    await asyncio.sleep(2)
    return await confirm(item, ctx)


@mcp.resource("proxy://readme", mime_type="text/plain")
def readme() -> str:
    return "served by the Python SDK, mirrored by mcp-tasks proxy"


@mcp.prompt(description="Asks for a haiku about TOPIC.")
def haiku(topic: str) -> str:
    return f"Write a haiku about {topic}."


if __name__ == "__main__":
    mcp.run("stdio")
