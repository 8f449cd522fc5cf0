#!/usr/bin/env node
// Interop driver: the plain TypeScript SDK client 2.4.0 (@modelcontextprotocol/client) pinned to
// the 2026-07-28 era (`versionNegotiation: { mode: { pin: '2026-07-28' } }`, no tasks extension)
// over Streamable HTTP: core requests and Multi Round-Trip Requests (MRTR), which the SDK
// fulfils itself through its `elicitation/create` handler.
//
// Usage (node 22; `. interop/env.sh` first, or call it with $INTEROP_NODE):
//   node interop/ts_modern_client.mjs --url http://127.0.0.1:PORT/mcp [--header 'Authorization: Bearer T']
//        [--fixture-url http://localhost:PORT2/mcp] [--tool interop_echo --args '{"word":"hi"}'
//        --expect-text 'interop-ok: hi'] [--confirm-tool interop_confirm --item gizmo] [--timeout 90]
// --url: `mcp-tasks serve` with interop/fixtures/mcp-tasks.toml (the defaults fit it);
// --fixture-url (optional): the conformance fixture server (crates/server/examples/conformance),
// for prompts and resources, which `mcp-tasks serve` does not have.
//
// Checks, on --url: connect (server/discover answered, era modern, 2026-07-28),
// discover-first (the first request on the wire was server/discover, no initialize ever),
// tools-list, call (a plain call, result text), mrtr:* (the confirm tool as a plain call: the
// first answer is resultType input_required with inputRequests and a requestState; the
// elicitation handler asked once "Confirm ITEM?"; the SDK's retry carried inputResponses and
// the requestState byte-exact; the result text "confirmed ITEM" — the command kept running and
// read the answer on its stdin);
// on --fixture-url: fixture:connect, prompts-list, prompts-get (test_prompt_with_arguments),
// resources-list, resources-read (test://static-text), resources-read-template
// (test://template/123/data), prompt-mrtr:* (prompts/get test_input_required_result_prompt
// answers input_required, the handler is asked, the retry answers a GetPromptResult).
// One JSON summary line on stdout; PASS/FAIL lines on stderr; exit 0 only if all held.
import { PV, Run, errInfo, modernImport, packageVersion, parseOptions, textOf, withDeadline } from "./modern_driver.mjs";

const USAGE = "ts_modern_client.mjs --url URL [--header 'Name: value']... [--fixture-url URL] " +
  "[--tool NAME --args JSON --expect-text S] [--confirm-tool NAME --item ITEM] [--timeout S]";
const opts = parseOptions(process.argv.slice(2), {
  "--fixture-url": ["fixtureUrl", process.env.MCP_FIXTURE_URL],
  "--tool": ["tool", "interop_echo"], "--args": ["args", '{"word":"modern"}'],
  "--expect-text": ["expectText", "interop-ok: modern"],
  "--confirm-tool": ["confirmTool", "interop_confirm"], "--item": ["item", "gizmo"],
}, USAGE);
opts.args = JSON.parse(opts.args);

const version = packageVersion("@modelcontextprotocol/client");
const run = new Run("ts_modern_client", opts, `@modelcontextprotocol/client@${version}`);
const { Client, StreamableHTTPClientTransport } = await modernImport("@modelcontextprotocol/client");
const REQ = { timeout: Math.min(opts.timeout * 1000, 60000) };

/** A Client pinned to 2026-07-28 whose transport keeps every exchange in `wire`. */
function modernClient(url, headers, asked) {
  const wire = [];
  const recordingFetch = async (input, init = {}) => {
    const res = await fetch(input, init);
    let request;
    try { request = JSON.parse(init.body); } catch { request = init.body; }
    const entry = { httpMethod: init.method ?? "GET", status: res.status, request, response: undefined };
    wire.push(entry);
    entry.done = res.clone().text().then((text) => { entry.response = parseBody(text); }).catch(() => {});
    return res;
  };
  const client = new Client({ name: "mcp-tasks-interop-ts-modern", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: PV } } });
  client.setRequestHandler("elicitation/create", async (request) => {
    const params = request.params ?? {};
    asked.push({ message: params.message, schema: params.requestedSchema });
    return { action: "accept", content: answerFor(params.requestedSchema) };
  });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, fetch: recordingFetch });
  return { client, transport, wire };
}

// An answer that fits the requested form: true for booleans, "test context" for strings.
function answerFor(schema) {
  const out = {};
  for (const [k, p] of Object.entries(schema?.properties ?? {})) {
    out[k] = p.type === "boolean" ? true : p.type === "number" || p.type === "integer" ? 1 : "test context";
  }
  return out;
}

function parseBody(text) {
  if (!text) return undefined;
  try { return JSON.parse(text); } catch { /* SSE */ }
  const msgs = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
    if (data) { try { msgs.push(JSON.parse(data)); } catch { /* ignore */ } }
  }
  return msgs.find((m) => m.id !== undefined && (m.result || m.error)) ?? msgs.at(-1);
}

async function settled(wire) { await Promise.all(wire.map((e) => e.done)); }

/** The exchanges of `method` (tools/call, prompts/get) for `name`, in order. */
function rounds(wire, method, name) {
  return wire.filter((e) => e.request?.method === method && e.request?.params?.name === name);
}

async function connect(prefix, url, headers, asked) {
  const peer = modernClient(url, headers, asked);
  try {
    await withDeadline(peer.client.connect(peer.transport, { timeout: 30000 }), 30000, `${prefix}connect`);
  } catch (e) {
    run.check(`${prefix}connect`, false, errInfo(e));
    return undefined;
  }
  run.check(`${prefix}connect`, peer.client.getProtocolEra() === "modern" && peer.client.getNegotiatedProtocolVersion() === PV,
    { era: peer.client.getProtocolEra(), protocolVersion: peer.client.getNegotiatedProtocolVersion(),
      server: peer.client.getServerVersion()?.name });
  return peer;
}

/**
 * The MRTR exchange of one plain request that asked one question. `needState`: the first
 * answer must carry a requestState (mcp-tasks parks a command's work behind one; the spec
 * makes it optional, so the prompt check does not insist).
 */
function checkMrtr(prefix, exchanges, asked, expectMessage, needState = true) {
  const [first, retry] = exchanges;
  const ir = first?.response?.result;
  run.check(`${prefix}input-required`, ir?.resultType === "input_required" && Object.keys(ir.inputRequests ?? {}).length === 1 &&
    (typeof ir.requestState === "string" || (!needState && ir.requestState === undefined)),
    { first: first?.response ?? null });
  run.check(`${prefix}handler-asked`, asked.length === 1 && (!expectMessage || asked[0].message === expectMessage), { asked });
  const key = Object.keys(ir?.inputRequests ?? {})[0];
  const rp = retry?.request?.params;
  run.check(`${prefix}retry`, exchanges.length === 2 && !!key && rp?.inputResponses?.[key]?.action === "accept" &&
    rp?.requestState === ir?.requestState && retry?.request?.id !== first?.request?.id &&
    retry?.response?.result?.resultType === "complete",
    { rounds: exchanges.length, inputResponses: rp?.inputResponses ?? null,
      requestStateEchoed: rp?.requestState === ir?.requestState, retryResponse: retry?.response ?? null });
}

await run.main(async () => {
  // ------------------------------------------------------------------ mcp-tasks serve
  const asked = [];
  const peer = await connect("", opts.url, opts.headers, asked);
  if (peer) {
    const { client, wire } = peer;
    try {
      const tools = (await client.listTools(undefined, REQ)).tools;
      const names = new Set(tools.map((t) => t.name));
      run.check("tools-list", names.has(opts.tool) && names.has(opts.confirmTool), { count: tools.length,
        missing: [opts.tool, opts.confirmTool].filter((n) => !names.has(n)) });

      const r = await client.callTool({ name: opts.tool, arguments: opts.args }, REQ);
      run.check("call", textOf(r).includes(opts.expectText) && !r.isError, { text: textOf(r).slice(0, 120), isError: r.isError ?? false });

      try {
        const c = await client.callTool({ name: opts.confirmTool, arguments: { item: opts.item } }, REQ);
        await settled(wire);
        checkMrtr("mrtr:", rounds(wire, "tools/call", opts.confirmTool), asked, `Confirm ${opts.item}?`);
        run.check("mrtr:result-text", textOf(c).includes(`confirmed ${opts.item}`) && !c.isError, { text: textOf(c).slice(0, 160) });
      } catch (e) {
        await settled(wire);
        run.check("mrtr:call", false, { error: errInfo(e), rounds: rounds(wire, "tools/call", opts.confirmTool).map((x) => x.response) });
      }
      await settled(wire);
      const methods = wire.filter((e) => e.request?.method).map((e) => e.request.method);
      run.check("discover-first", methods[0] === "server/discover" && !methods.includes("initialize"),
        { methods: [...new Set(methods)] });
    } finally {
      await withDeadline(client.close(), 5000, "close").catch(() => {});
    }
  }

  // ------------------------------------------------------------------ the conformance fixture server
  if (!opts.fixtureUrl) return;
  const fAsked = [];
  const fixture = await connect("fixture:", opts.fixtureUrl, {}, fAsked);
  if (!fixture) return;
  const { client, wire } = fixture;
  try {
    const prompts = (await client.listPrompts(undefined, REQ)).prompts.map((p) => p.name);
    run.check("fixture:prompts-list", ["test_simple_prompt", "test_prompt_with_arguments"].every((n) => prompts.includes(n)), { prompts });
    const p = await client.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "one", arg2: "two" } }, REQ);
    const ptext = p.messages?.[0]?.content?.text;
    run.check("fixture:prompts-get", ptext === "Prompt with arguments: arg1='one', arg2='two'", { text: ptext });

    const resources = (await client.listResources(undefined, REQ)).resources.map((r) => r.uri);
    run.check("fixture:resources-list", resources.includes("test://static-text") && resources.includes("test://static-binary"), { resources });
    const rr = await client.readResource({ uri: "test://static-text" }, REQ);
    run.check("fixture:resources-read", rr.contents?.[0]?.text === "This is the content of the static text resource." &&
      rr.contents[0].mimeType === "text/plain", { contents: rr.contents });
    const rt = await client.readResource({ uri: "test://template/123/data" }, REQ);
    let body;
    try { body = JSON.parse(rt.contents?.[0]?.text ?? ""); } catch { body = rt.contents?.[0]?.text; }
    run.check("fixture:resources-read-template", body?.id === "123" && body?.data === "Data for ID: 123", { body });

    // MRTR from a prompt (expected to pass once the server asks questions from prompts)
    try {
      const mp = await client.getPrompt({ name: "test_input_required_result_prompt" }, REQ);
      await settled(wire);
      checkMrtr("fixture:prompt-mrtr:", rounds(wire, "prompts/get", "test_input_required_result_prompt"), fAsked, undefined, false);
      run.check("fixture:prompt-mrtr:messages", Array.isArray(mp.messages) && mp.messages.length > 0,
        { messages: mp.messages?.slice(0, 2) });
    } catch (e) {
      await settled(wire);
      run.check("fixture:prompt-mrtr", false, { error: errInfo(e),
        wire: rounds(wire, "prompts/get", "test_input_required_result_prompt").map((x) => x.response) });
    }
  } finally {
    await withDeadline(client.close(), 5000, "close").catch(() => {});
  }
});
