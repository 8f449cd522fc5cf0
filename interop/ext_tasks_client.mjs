#!/usr/bin/env node
// Interop driver: the official Tasks-extension requester @modelcontextprotocol/ext-tasks 0.2.2 on
// the TypeScript SDK client 2.4.0, in the 2026-07-28 era (`io.modelcontextprotocol/tasks`) over
// Streamable HTTP, against an MCP server that decides itself when a call becomes a task.
//
// Usage (node 22; `. interop/env.sh` first, or call it with $INTEROP_NODE):
//   node interop/ext_tasks_client.mjs --url http://127.0.0.1:PORT/mcp [--header 'Authorization: Bearer T']
//        [--tool interop_sleep --args '{"seconds":2}' --expect-text slept]          (a) runs past the inline wait
//        [--confirm-tool interop_confirm --item widget]                             (b) asks for input
//        [--mrtr-tool interop_confirm]                        (b2) asks at once: an MRTR round, no task
//        [--long-tool interop_sleep --long-args '{"seconds":60}']                   (c) cancelled while running
//        [--quick-tool interop_sleep --quick-args '{"seconds":0}' --quick-text slept] (d) answers inline
//        [--timeout 90] [--wire FILE]
// The defaults fit interop/fixtures/mcp-tasks.toml (server inline wait 1 s).
//
// ext-tasks needs a raw request path on this era (the SDK codec refuses resultType "task"):
// `rawDispatch` in modern_driver.mjs, which ext-tasks gives Mcp-Name for tasks/*.
//
// Checks: connect (server/discover: 2026-07-28, era modern), discover-tasks-extension
// (capabilities.extensions has io.modelcontextprotocol/tasks), tools-list;
//   task:  callTool -> kind "task", settle -> completed, result-text, get-completed (tasks/get:
//          completed, the inlined result a CallToolResult with resultType "complete");
//   input: callTool -> kind "task", onInputRequest (elicitation, delivery task-update, the
//          task's id, message "Confirm ITEM?"), wire-input-requests (a tasks/get showed
//          inputRequests, one tasks/update answered it), settle -> completed,
//          result-text ("confirmed ITEM"), get-completed;
//   mrtr (with --mrtr-tool): onInputRequest (delivery request-retry, "Confirm gadget?"), no-task
//          (kind "immediate": the question was a round of the call), result-text;
//   cancel: callTool -> kind "task", running-before (tasks/get: working), tasks-cancel (acknowledged),
//          get-cancelled (tasks/get reads cancelled within 15 s), settle-cancelled;
//   plain: callTool -> kind "immediate", result-text;
//   get-unknown-error (tasks/get of an unknown id: -32602).
// One JSON summary line on stdout; PASS/FAIL lines on stderr; exit 0 only if all held.
import {
  PV, TASKS_EXT, Run, errInfo, makeRawDispatch, modernImport, packageVersion, parseOptions, pollUntil,
  textOf, withDeadline,
} from "./modern_driver.mjs";

const USAGE = "ext_tasks_client.mjs --url URL [--header 'Name: value']... [--tool NAME --args JSON --expect-text S] " +
  "[--confirm-tool NAME --item ITEM] [--long-tool NAME --long-args JSON] [--quick-tool NAME --quick-args JSON " +
  "--quick-text S] [--timeout S] [--wire FILE]";
const opts = parseOptions(process.argv.slice(2), {
  "--tool": ["tool", "interop_sleep"], "--args": ["args", '{"seconds":2}'], "--expect-text": ["expectText", "slept"],
  "--confirm-tool": ["confirmTool", "interop_confirm"], "--item": ["item", "widget"],
  "--mrtr-tool": ["mrtrTool", ""],
  "--long-tool": ["longTool", "interop_sleep"], "--long-args": ["longArgs", '{"seconds":60}'],
  "--quick-tool": ["quickTool", "interop_sleep"], "--quick-args": ["quickArgs", '{"seconds":0}'],
  "--quick-text": ["quickText", "slept"],
}, USAGE);
for (const k of ["args", "longArgs", "quickArgs"]) opts[k] = JSON.parse(opts[k]);

const versions = {
  client: packageVersion("@modelcontextprotocol/client"),
  extTasks: packageVersion("@modelcontextprotocol/ext-tasks"),
};
const run = new Run("ext_tasks_client",
  opts, `@modelcontextprotocol/ext-tasks@${versions.extTasks} + @modelcontextprotocol/client@${versions.client}`);
const { Client, StreamableHTTPClientTransport } = await modernImport("@modelcontextprotocol/client");
const { createTaskSessionFromClient, createApplicationInputHandler, resultFromTaskOutcome } =
  await modernImport("@modelcontextprotocol/ext-tasks", "./client");

const clientInfo = { name: "mcp-tasks-interop-ext-tasks", version: "1.0.0" };
const clientCapabilities = { elicitation: { form: {} }, extensions: { [TASKS_EXT]: {} } };
const REQ_MS = Math.min(opts.timeout * 1000, 60000);
const wire = [];
const elicitations = [];

await run.main(async () => {
  const client = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: { pin: PV } } });
  const transport = new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers: opts.headers } });
  try {
    await withDeadline(client.connect(transport, { timeout: 30000 }), 30000, "connect");
  } catch (e) {
    run.check("connect", false, errInfo(e));
    return;
  }
  const caps = client.getServerCapabilities() ?? {};
  run.check("connect", client.getProtocolEra() === "modern" && client.getNegotiatedProtocolVersion() === PV,
    { era: client.getProtocolEra(), protocolVersion: client.getNegotiatedProtocolVersion(), server: client.getServerVersion()?.name });
  run.check("discover-tasks-extension", !!caps.extensions?.[TASKS_EXT], { extensions: caps.extensions ?? null });

  const tools = (await client.listTools(undefined, { timeout: REQ_MS })).tools;
  const names = new Set(tools.map((t) => t.name));
  const wanted = [opts.tool, opts.confirmTool, opts.longTool, opts.quickTool];
  run.check("tools-list", wanted.every((n) => names.has(n)),
    { count: tools.length, missing: wanted.filter((n) => !names.has(n)) });

  const session = createTaskSessionFromClient(client, {
    endpointId: opts.url,
    rawDispatch: makeRawDispatch({ url: opts.url, extraHeaders: opts.headers, wire, wireFile: opts.wire }),
    v2RequestFraming: { protocolVersion: PV, clientInfo, clientCapabilities },
    maxInputRounds: 5,
    onInputRequest: createApplicationInputHandler({
      elicitation: async (req, ctx) => {
        elicitations.push({ message: req.params?.message, delivery: ctx.delivery, taskId: ctx.taskId, inputId: ctx.inputId,
          schema: req.params?.requestedSchema });
        return { action: "accept", content: { confirm: true } };
      },
      sampling: async () => { throw new Error("no sampling expected"); },
      roots: async () => ({ roots: [] }),
    }),
  });
  const callOpts = { requestTimeoutMs: REQ_MS, headers: opts.headers };
  const events = (list) => ({ onEvent: (e) => list.push(e.type === "task" ? `task:${e.task.status}` : `outcome:${e.outcome.status}`) });

  try {
    // ---------------------------------------------------------------- (a) a task that completes
    {
      const seen = [];
      const ex = await session.callTool(opts.tool, opts.args, callOpts);
      const taskId = ex.handle?.taskId;
      run.check("task:callTool", ex.kind === "task" && !!taskId, { kind: ex.kind, taskId });
      const { outcome } = await withDeadline(ex.settle(events(seen)), REQ_MS, "settle");
      run.check("task:settle-completed", outcome.status === "completed", { status: outcome.status, events: compress(seen),
        ...(outcome.error ? { error: errInfo(outcome.error) } : {}) });
      if (outcome.status === "completed") {
        const text = textOf(outcome.result);
        run.check("task:result-text", text.includes(opts.expectText) && !outcome.result.isError,
          { expected: opts.expectText, text: text.slice(0, 120), isError: outcome.result.isError ?? false });
      }
      if (taskId) await checkCompleted("task", session, taskId);
    }

    // ---------------------------------------------------------------- (b) a task that asks for input
    {
      const seen = [];
      const before = wire.length;
      const ex = await session.callTool(opts.confirmTool, { item: opts.item }, callOpts);
      const taskId = ex.handle?.taskId;
      run.check("input:callTool", ex.kind === "task" && !!taskId, { kind: ex.kind, taskId });
      const { outcome } = await withDeadline(ex.settle(events(seen)), REQ_MS, "settle");
      const asked = elicitations.filter((e) => e.taskId === taskId);
      run.check("input:onInputRequest", asked.length === 1 && asked[0].delivery === "task-update" &&
        asked[0].message === `Confirm ${opts.item}?` && asked[0].schema?.properties?.confirm?.type === "boolean",
        { asked, events: compress(seen) });
      const mine = wire.slice(before).filter((x) => x.request.params?.taskId === taskId);
      const shown = mine.find((x) => x.method === "tasks/get" && x.response?.result?.status === "input_required");
      const updates = mine.filter((x) => x.method === "tasks/update");
      run.check("input:wire-input-requests",
        !!shown && Object.keys(shown.response.result.inputRequests ?? {}).length === 1 && updates.length === 1 &&
        !updates[0].response?.error,
        { inputRequests: shown?.response?.result?.inputRequests ?? null,
          update: updates.map((u) => ({ params: u.request.params, response: u.response })) });
      run.check("input:settle-completed", outcome.status === "completed", { status: outcome.status,
        ...(outcome.error ? { error: errInfo(outcome.error) } : {}) });
      if (outcome.status === "completed") {
        const text = textOf(outcome.result);
        run.check("input:result-text", text.includes(`confirmed ${opts.item}`) && !outcome.result.isError,
          { expected: `confirmed ${opts.item}`, text: text.slice(0, 160) });
      }
      if (taskId) await checkCompleted("input", session, taskId);
    }

    // ------------------------------------------- (b2) a question before any task: an MRTR round of the call
    if (opts.mrtrTool) {
      const before = elicitations.length;
      const ex = await session.callTool(opts.mrtrTool, { item: "gadget" }, callOpts);
      const { outcome } = await withDeadline(ex.settle(), REQ_MS, "settle");
      const asked = elicitations.slice(before);
      run.check("mrtr:onInputRequest", asked.length === 1 && asked[0].delivery === "request-retry" &&
        asked[0].message === "Confirm gadget?", { asked });
      run.check("mrtr:no-task", ex.kind === "immediate", { kind: ex.kind });
      const text = outcome.status === "completed" ? textOf(outcome.result) : "";
      run.check("mrtr:result-text", text.includes("confirmed gadget"), { status: outcome.status, text: text.slice(0, 160) });
    }

    // ---------------------------------------------------------------- (c) cancel of a running task
    {
      const ex = await session.callTool(opts.longTool, opts.longArgs, callOpts);
      const taskId = ex.handle?.taskId;
      run.info.cancelledTaskId = taskId;
      if (!run.check("cancel:callTool", ex.kind === "task" && !!taskId, { kind: ex.kind, taskId })) {
        await ex.cancel().catch(() => {});
      } else {
        const first = await session.task(taskId, callOpts).snapshot();
        run.check("cancel:running-before", first.status === "working", { status: first.status });
        const settled = ex.settle({ close: true });
        try {
          await withDeadline(ex.cancel(), REQ_MS, "cancel");
          const sent = wire.filter((x) => x.method === "tasks/cancel" && x.request.params?.taskId === taskId);
          run.check("cancel:tasks-cancel", sent.length >= 1 && !sent.at(-1).response?.error,
            { response: sent.at(-1)?.response ?? null });
        } catch (e) {
          run.check("cancel:tasks-cancel", false, errInfo(e));
        }
        const ctl = session.task(taskId, callOpts);
        let last;
        const got = await pollUntil(async () => { last = await ctl.snapshot(); return last.status === "cancelled"; }, 15000, 250);
        run.check("cancel:get-cancelled", got, { status: last?.status, statusMessage: last?.statusMessage });
        const { outcome } = await withDeadline(settled, REQ_MS, "settle after cancel");
        run.check("cancel:settle-cancelled", outcome.status === "cancelled", { status: outcome.status });
      }
    }

    // ---------------------------------------------------------------- (d) a plain call
    {
      const ex = await session.callTool(opts.quickTool, opts.quickArgs, callOpts);
      run.check("plain:callTool-immediate", ex.kind === "immediate", { kind: ex.kind, taskId: ex.handle?.taskId });
      const { outcome } = await withDeadline(ex.settle(), REQ_MS, "settle");
      const result = outcome.status === "completed" ? outcome.result : undefined;
      run.check("plain:result-text", textOf(result).includes(opts.quickText) && !result?.isError,
        { status: outcome.status, text: textOf(result).slice(0, 120) });
    }

    // ---------------------------------------------------------------- an unknown task
    try {
      const v = await session.task("no-such-task-00000000", callOpts).snapshot();
      run.check("get-unknown-error", false, { unexpected: v.raw });
    } catch (e) {
      run.check("get-unknown-error", e?.code === -32602, errInfo(e));
    }
  } finally {
    await withDeadline(session.close(), 5000, "session close").catch(() => {});
    await withDeadline(client.close(), 5000, "client close").catch(() => {});
  }
});

/** tasks/get of a task that settled completed: status, and the inlined result as sent. */
async function checkCompleted(prefix, session, taskId) {
  const view = await session.task(taskId, { requestTimeoutMs: REQ_MS, headers: opts.headers }).snapshot();
  const raw = view.raw ?? {};
  run.check(`${prefix}:get-completed`, view.status === "completed" && raw.result?.resultType === "complete" &&
    Array.isArray(raw.result?.content),
    { status: view.status, resultType: raw.result?.resultType, ttlMs: raw.ttlMs, pollIntervalMs: raw.pollIntervalMs });
}

// "task:working" x4 -> "task:working*4"
function compress(list) {
  const out = [];
  for (const s of list) {
    const last = out[out.length - 1];
    if (last && last.s === s) last.n++; else out.push({ s, n: 1 });
  }
  return out.map(({ s, n }) => (n > 1 ? `${s}*${n}` : s));
}
