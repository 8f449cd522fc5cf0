#!/usr/bin/env node
// Interop driver: the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, v1 line with
// experimental 2025-11-25 tasks) as a Streamable HTTP client against an MCP server with tasks.
//
// Usage (node 22 or 20; run `. interop/env.sh` first, or call it with $INTEROP_NODE):
//   node interop/ts_client.mjs --url http://127.0.0.1:3901/mcp \
//        --tool simulate-research-query --args '{"topic":"rust"}' \
//        [--long-tool NAME --long-args JSON] [--expect-text SUBSTR] [--ttl 60000] [--timeout 90]
//        [--header 'Authorization: Bearer TOKEN']...
// Every option can also come from the environment: MCP_URL, MCP_TOOL, MCP_ARGS, MCP_LONG_TOOL,
// MCP_LONG_ARGS, MCP_EXPECT_TEXT, MCP_TTL, MCP_TIMEOUT (seconds, whole run).
// --long-tool/--long-args default to --tool/--args: the second task must still be running
// when it is cancelled (right after creation), so pick a call that lasts a few seconds.
//
// Checks (each one a line in "checks" of the JSON summary printed on stdout):
//   connect, server-tasks-capability, tools-list, callToolStream (taskCreated -> taskStatus* ->
//   result), result-related-task-meta, [result-text], getTask-completed, listTasks-contains,
//   cancel-running (status cancelled), getTask-after-cancel (cancelled), stream-after-cancel
//   (stream ends with an error, not a result), cancel-completed-error (-32602),
//   getTask-unknown-error (-32602).
// Exit 0 only if every check held. Logs go to stderr.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { readFileSync } from "node:fs";

// ---------------------------------------------------------------- options
function parseArgs(argv) {
  const o = {
    url: process.env.MCP_URL,
    tool: process.env.MCP_TOOL,
    args: process.env.MCP_ARGS ?? "{}",
    longTool: process.env.MCP_LONG_TOOL,
    longArgs: process.env.MCP_LONG_ARGS,
    expectText: process.env.MCP_EXPECT_TEXT,
    ttl: Number(process.env.MCP_TTL ?? 60000),
    timeout: Number(process.env.MCP_TIMEOUT ?? 90),
    headers: {},
  };
  const keys = {
    "--url": "url", "--tool": "tool", "--args": "args", "--long-tool": "longTool",
    "--long-args": "longArgs", "--expect-text": "expectText", "--ttl": "ttl", "--timeout": "timeout",
  };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--header" && i + 1 < argv.length) {
      const h = argv[++i], c = h.indexOf(":");
      if (c < 1) { console.error(`--header wants "Name: value", got ${h}`); process.exit(2); }
      o.headers[h.slice(0, c).trim()] = h.slice(c + 1).trim();
      continue;
    }
    const k = keys[argv[i]];
    if (!k || i + 1 >= argv.length) {
      console.error(`unknown or incomplete option ${argv[i]}\n` +
        "usage: ts_client.mjs --url URL --tool NAME [--args JSON] [--long-tool NAME] [--long-args JSON] " +
        "[--expect-text S] [--ttl MS] [--timeout S] [--header 'Name: value']...");
      process.exit(2);
    }
    o[k] = argv[++i];
  }
  if (!o.url || !o.tool) {
    console.error("--url and --tool are required");
    process.exit(2);
  }
  o.ttl = Number(o.ttl);
  o.timeout = Number(o.timeout);
  o.args = JSON.parse(o.args);
  o.longTool ??= o.tool;
  o.longArgs = o.longArgs === undefined ? o.args : JSON.parse(o.longArgs);
  return o;
}

const opts = parseArgs(process.argv.slice(2));
// interop/node_modules is a symlink to interop/.peers/npm-main/node_modules (made by install.sh)
const sdkVersion = JSON.parse(readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8")).version;
const started = Date.now();
const checks = [];
const info = {};
const log = (...a) => console.error("[ts_client]", ...a);

function check(name, ok, detail) {
  checks.push(detail === undefined ? { name, ok: !!ok } : { name, ok: !!ok, detail });
  log(ok ? "PASS" : "FAIL", name, detail === undefined ? "" : JSON.stringify(detail));
  return !!ok;
}

let finished = false;
function finish(extra = {}) {
  if (finished) return;
  finished = true;
  const ok = checks.length > 0 && checks.every((c) => c.ok) && !extra.error;
  const summary = {
    driver: "ts_client", peer: `@modelcontextprotocol/sdk@${sdkVersion}`, url: opts.url,
    tool: opts.tool, longTool: opts.longTool, ok,
    passed: checks.filter((c) => c.ok).length, failed: checks.filter((c) => !c.ok).length,
    elapsedMs: Date.now() - started, ...info, ...extra, checks,
  };
  process.stdout.write(JSON.stringify(summary) + "\n");
  process.exitCode = ok ? 0 : 1;
}

const watchdog = setTimeout(() => {
  check("overall-timeout", false, `run exceeded ${opts.timeout}s`);
  finish();
  process.exit(1);
}, opts.timeout * 1000);

const errInfo = (e) => (e instanceof McpError ? { code: e.code, message: e.message } : { message: String(e?.message ?? e) });
const reqOpts = { timeout: Math.min(opts.timeout * 1000, 60000) };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function withDeadline(promise, ms, what) {
  let t;
  const guard = new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`${what}: no answer within ${ms} ms`)), ms); });
  try { return await Promise.race([promise, guard]); } finally { clearTimeout(t); }
}

async function main() {
  const client = new Client({ name: "mcp-tasks-interop-ts", version: "1.0.0" }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers: opts.headers } });
  try {
    await withDeadline(client.connect(transport, reqOpts), 30000, "connect");
    const sv = client.getServerVersion();
    info.protocolVersion = transport.protocolVersion;
    info.serverInfo = sv;
    check("connect", true, { protocolVersion: transport.protocolVersion, server: sv?.name });
  } catch (e) {
    check("connect", false, errInfo(e));
    return;
  }
  try {
    const caps = client.getServerCapabilities() ?? {};
    check("server-tasks-capability", !!caps.tasks?.requests?.tools?.call, caps.tasks ?? null);

    // ------------------------------------------------------------ tools/list
    const tools = (await client.listTools(undefined, reqOpts)).tools;
    const tool = tools.find((t) => t.name === opts.tool);
    const longTool = tools.find((t) => t.name === opts.longTool);
    check("tools-list", !!tool && !!longTool, {
      count: tools.length,
      [opts.tool]: tool?.execution?.taskSupport ?? (tool ? "(absent = forbidden)" : "MISSING"),
      ...(opts.longTool !== opts.tool ? { [opts.longTool]: longTool?.execution?.taskSupport ?? (longTool ? "(absent)" : "MISSING") } : {}),
    });

    // ------------------------------------------------------------ task 1: stream to result
    const seen = [];
    let taskId, result, streamError;
    const stream = client.experimental.tasks.callToolStream(
      { name: opts.tool, arguments: opts.args }, CallToolResultSchema, { ...reqOpts, task: { ttl: opts.ttl } });
    for await (const m of stream) {
      if (m.type === "taskCreated") { taskId = m.task.taskId; seen.push(`taskCreated:${m.task.status}`); info.createdTask = m.task; }
      else if (m.type === "taskStatus") seen.push(`taskStatus:${m.task.status}`);
      else if (m.type === "result") { result = m.result; seen.push("result"); }
      else if (m.type === "error") { streamError = errInfo(m.error); seen.push("error"); }
    }
    info.taskId = taskId;
    check("callToolStream", taskId && result && !streamError && seen[0]?.startsWith("taskCreated") &&
      seen.some((s) => s.startsWith("taskStatus")),
      { taskId, messages: compress(seen), ...(streamError ? { error: streamError } : {}) });
    if (result) {
      const related = result._meta?.["io.modelcontextprotocol/related-task"];
      check("result-related-task-meta", related?.taskId === taskId, related ?? null);
      const text = (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
      info.resultTextHead = text.slice(0, 120);
      if (opts.expectText !== undefined) check("result-text", text.includes(opts.expectText), { expected: opts.expectText, head: text.slice(0, 120) });
      check("result-not-error", !result.isError, { isError: result.isError ?? false });
    }

    if (taskId) {
      // ---------------------------------------------------------- tasks/get, tasks/list
      const got = await client.experimental.tasks.getTask(taskId, reqOpts);
      check("getTask-completed", got.taskId === taskId && got.status === "completed" && "ttl" in got && got.createdAt && got.lastUpdatedAt,
        { status: got.status, ttl: got.ttl, pollInterval: got.pollInterval });
      let found = false, pages = 0, total = 0, cursor;
      do {
        const page = await client.experimental.tasks.listTasks(cursor, reqOpts);
        pages++; total += page.tasks.length;
        found ||= page.tasks.some((t) => t.taskId === taskId);
        cursor = page.nextCursor;
      } while (cursor && !found && pages < 50);
      check("listTasks-contains", found, { pages, tasksSeen: total });
    }

    // ------------------------------------------------------------ task 2: cancel while running
    const stream2 = client.experimental.tasks.callToolStream(
      { name: opts.longTool, arguments: opts.longArgs }, CallToolResultSchema, { ...reqOpts, task: { ttl: opts.ttl } });
    const it = stream2[Symbol.asyncIterator]();
    const first = await withDeadline(it.next(), 30000, "second task creation");
    if (first.done || first.value.type !== "taskCreated") {
      const m = first.value;
      check("cancel-running", false, { firstMessage: m?.type === "error" ? { type: "error", ...errInfo(m.error) } : m ?? null });
    } else {
      const id2 = first.value.task.taskId;
      info.cancelledTaskId = id2;
      try {
        const c = await client.experimental.tasks.cancelTask(id2, reqOpts);
        check("cancel-running", c.status === "cancelled" && c.taskId === id2, { taskId: id2, status: c.status, statusMessage: c.statusMessage });
      } catch (e) {
        check("cancel-running", false, { taskId: id2, error: errInfo(e) });
      }
      await sleep(300);
      try {
        const g = await client.experimental.tasks.getTask(id2, reqOpts);
        check("getTask-after-cancel", g.status === "cancelled", { status: g.status });
      } catch (e) {
        // a receiver MAY delete a cancelled task at once; -32602 is then compliant
        check("getTask-after-cancel", e instanceof McpError && e.code === -32602, { error: errInfo(e), note: "task deleted after cancel" });
      }
      // the stream polls tasks/get and must now end with an error ("... was cancelled")
      const rest = [];
      for (;;) {
        const n = await withDeadline(it.next(), 30000, "stream after cancel");
        if (n.done) break;
        rest.push(n.value.type === "error" ? { type: "error", ...errInfo(n.value.error) } : { type: n.value.type, status: n.value.task?.status });
      }
      const last = rest[rest.length - 1];
      check("stream-after-cancel", last?.type === "error" && !rest.some((r) => r.type === "result"), { messages: rest.slice(-3) });
    }

    // ------------------------------------------------------------ error cases
    if (taskId) {
      try {
        const r = await client.experimental.tasks.cancelTask(taskId, reqOpts);
        check("cancel-completed-error", false, { unexpectedResult: r });
      } catch (e) {
        check("cancel-completed-error", e instanceof McpError && e.code === -32602, errInfo(e));
      }
    }
    try {
      const r = await client.experimental.tasks.getTask("no-such-task-00000000", reqOpts);
      check("getTask-unknown-error", false, { unexpectedResult: r });
    } catch (e) {
      check("getTask-unknown-error", e instanceof McpError && e.code === -32602, errInfo(e));
    }
  } catch (e) {
    check("unexpected-exception", false, errInfo(e));
  } finally {
    try { await withDeadline(transport.terminateSession(), 5000, "DELETE session"); } catch { /* optional */ }
    try { await withDeadline(client.close(), 5000, "close"); } catch { /* ignore */ }
  }
}

// "taskStatus:working" x4 -> "taskStatus:working*4"
function compress(list) {
  const out = [];
  for (const s of list) {
    const last = out[out.length - 1];
    if (last && last.s === s) last.n++; else out.push({ s, n: 1 });
  }
  return out.map(({ s, n }) => (n > 1 ? `${s}*${n}` : s));
}

main()
  .catch((e) => check("unexpected-exception", false, errInfo(e)))
  .finally(() => { clearTimeout(watchdog); finish(); setTimeout(() => process.exit(process.exitCode ?? 1), 200).unref(); });
