#!/usr/bin/env python3
"""A stand-in model for `mcp-tasks ... --sampling-cmd`, used by interop/cli-peers.sh.

The CLI runs this command once per `sampling/createMessage` request, writes the request as
JSON on its stdin and takes its stdout as the answer. It accepts the request's `params`
(`{"messages": [...], "maxTokens": ...}`) or a whole JSON-RPC request (`{"method": ...,
"params": {...}}`), and prints one `CreateMessageResult`:

    {"role": "assistant", "content": {"type": "text", "text": HAIKU},
     "model": "cli-peers-responder", "stopReason": "endTurn"}

HAIKU is fixed (the three lines the TS SDK's example client answers with), so the checks
know what to look for. With `--log FILE` it appends the request it got as one JSON line,
so the checks can see what the server asked. Stdlib only.
"""
import argparse
import json
import sys

HAIKU = "Cherry blossoms fall\nSoftly on the quiet pond\nSpring whispers goodbye"
MODEL = "cli-peers-responder"


def prompt_of(request):
    """The text of the last user message, or '' when there is none."""
    params = request.get("params", request) if isinstance(request, dict) else {}
    messages = params.get("messages") if isinstance(params, dict) else None
    for message in reversed(messages or []):
        content = message.get("content") if isinstance(message, dict) else None
        blocks = content if isinstance(content, list) else [content]
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "text":
                return block.get("text", "")
    return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", help="append each request (one JSON line) to this file")
    args = parser.parse_args()
    raw = sys.stdin.read()
    try:
        request = json.loads(raw)
    except ValueError as err:
        print(f"sampling_responder: stdin is not JSON: {err}: {raw[:200]!r}", file=sys.stderr)
        return 1
    if args.log:
        with open(args.log, "a", encoding="utf-8") as log:
            log.write(json.dumps({"request": request, "prompt": prompt_of(request)}) + "\n")
    answer = {
        "role": "assistant",
        "content": {"type": "text", "text": HAIKU},
        "model": MODEL,
        "stopReason": "endTurn",
    }
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
