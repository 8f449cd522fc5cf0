"""An MCP server on the official Python SDK (mcp 1.30.0, 2025-11-25, no task support) for
`mcp-tasks proxy` to put tasks in front of (interop/proxy.sh). Its tools have the names and
answers of interop/fixtures/mcp-tasks.toml's, so the same downstream drivers check them:

  interop_echo WORD       waits a second, then 'interop-ok: WORD'
  interop_sleep SECONDS   the slow tool: reports progress each second, then 'slept'
  interop_confirm ITEM    asks the client (elicitation, boolean 'confirm'): 'confirmed ITEM: …'
  interop_confirm_later   the same after two seconds of work
  interop_add_listing NAME  adds the resource proxy://NAME and the prompt NAME, then sends
                            notifications/resources/list_changed and prompts/list_changed
  interop_touch URI       sends notifications/resources/updated for URI if a client
                          subscribed to it (resources/subscribe), and says whether it did

Each call is logged to stderr. Run: $INTEROP_PYTHON interop/proxy_upstream.py (stdio), or
with `http PORT` for Streamable HTTP on http://127.0.0.1:PORT/mcp.
"""

import asyncio
import json
import sys

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.prompts import Prompt
from mcp.server.fastmcp.resources import FunctionResource
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


@mcp.tool(description="Adds the resource proxy://NAME and the prompt NAME; says the lists changed.")
async def interop_add_listing(name: str, ctx: Context) -> str:
    log("interop_add_listing", name)
    mcp.add_resource(FunctionResource.from_function(lambda: f"listing {name}", uri=f"proxy://{name}", name=name))
    mcp.add_prompt(Prompt.from_function(lambda: f"Say {name}.", name=name, description=f"Says {name}."))
    await ctx.session.send_resource_list_changed()
    await ctx.session.send_prompt_list_changed()
    return f"listed {name}"


# resources/subscribe: the URIs a client subscribed to (one client: stdio).
subscribed = set()


@mcp._mcp_server.subscribe_resource()
async def subscribe(uri) -> None:
    log("resources/subscribe", uri)
    subscribed.add(str(uri))


@mcp._mcp_server.unsubscribe_resource()
async def unsubscribe(uri) -> None:
    log("resources/unsubscribe", uri)
    subscribed.discard(str(uri))


@mcp.tool(description="Sends notifications/resources/updated for URI if a client subscribed to it.")
async def interop_touch(uri: str, ctx: Context) -> str:
    log("interop_touch", uri)
    if uri not in subscribed:
        return f"not subscribed: {uri}"
    await ctx.session.send_resource_updated(uri)
    return f"updated {uri}"


@mcp.resource("proxy://readme", mime_type="text/plain")
def readme() -> str:
    return "served by the Python SDK, mirrored by mcp-tasks proxy"


@mcp.prompt(description="Asks for a haiku about TOPIC.")
def haiku(topic: str) -> str:
    return f"Write a haiku about {topic}."


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "http":
        # Streamable HTTP on 127.0.0.1:PORT/mcp: a tool's questions come on its call's
        # POST response stream.
        mcp.settings.host = "127.0.0.1"
        mcp.settings.port = int(sys.argv[2])
        mcp.run("streamable-http")
    else:
        mcp.run("stdio")
