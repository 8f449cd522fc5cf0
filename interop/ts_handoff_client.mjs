#!/usr/bin/env node
// Interop driver: the TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2) WITHOUT tasks,
// as hosts that speak no tasks use it, with its 60 s default request timeout shortened to 5 s,
// against `mcp-tasks serve --config interop/fixtures/handoff.toml` (sync_wait 3 s).
//
//   node interop/ts_handoff_client.mjs --url URL [--header 'Authorization: Bearer T'] [--seconds 20]
//        [--tool slow_report] [--control-tool slow_report_inline | none] [--expect TEXT]
// (--tool takes {"seconds": N}; --expect defaults to "report ready after N s"; through
// `mcp-tasks proxy` the tool is the upstream's, and the control, which needs a tool whose
// handoff is off, is skipped with `none`.)
//
// Checks (each a line in "checks" of the JSON summary on stdout):
//   helpers-listed (task_status, task_result, task_cancel in tools/list);
//   control-times-out (slow_report_inline, never handed off, dies at the client's 5 s timeout);
//   handoff (slow_report answers within the timeout with a result naming its task and task_result);
//   heartbeat (progress arrived before the handoff, for the call's progress token);
//   status-working (task_status says working); result-collected (task_result, called until the
//   job ends, returns the command's own output); status-completed; unknown-task (task_result of
//   a made-up id says there is no such task, isError).
// Exit 0 only if every check held. Logs go to stderr.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const opts = { url: undefined, headers: {}, seconds: 20, tool: "slow_report", control: "slow_report_inline", expect: undefined };
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--url") opts.url = args[++i];
  else if (args[i] === "--seconds") opts.seconds = Number(args[++i]);
  else if (args[i] === "--tool") opts.tool = args[++i];
  else if (args[i] === "--control-tool") opts.control = args[++i];
  else if (args[i] === "--expect") opts.expect = args[++i];
  else if (args[i] === "--header") {
    const h = args[++i], c = h.indexOf(":");
    opts.headers[h.slice(0, c).trim()] = h.slice(c + 1).trim();
  } else { console.error(`unknown option ${args[i]}`); process.exit(2); }
}
if (!opts.url) { console.error("--url is required"); process.exit(2); }
opts.expect ??= `report ready after ${opts.seconds} s`;

const sdkVersion = JSON.parse(readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8")).version;
const TIMEOUT_MS = 5000;
const started = Date.now();
const checks = [];
const log = (...a) => console.error("[ts_handoff]", ...a);
function check(name, ok, detail) {
  checks.push(detail === undefined ? { name, ok: !!ok } : { name, ok: !!ok, detail });
  log(ok ? "PASS" : "FAIL", name, detail === undefined ? "" : JSON.stringify(detail));
  return !!ok;
}
const text = (result) => (result?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const watchdog = setTimeout(() => { check("overall-timeout", false, "run exceeded 120 s"); done(); process.exit(1); }, 120000);

function done(extra = {}) {
  clearTimeout(watchdog);
  const ok = checks.length > 0 && checks.every((c) => c.ok) && !extra.error;
  process.stdout.write(JSON.stringify({
    driver: "ts_handoff_client", peer: `@modelcontextprotocol/sdk@${sdkVersion}`, url: opts.url, ok,
    passed: checks.filter((c) => c.ok).length, failed: checks.filter((c) => !c.ok).length,
    elapsedMs: Date.now() - started, ...extra, checks,
  }) + "\n");
  process.exitCode = ok ? 0 : 1;
}

async function main() {
  // No tasks capability: this is a host that knows nothing of tasks.
  const client = new Client({ name: "mcp-tasks-handoff-ts", version: "1.0.0" }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers: opts.headers } });
  await client.connect(transport);
  const call = (name, a, extra = {}) => client.callTool({ name, arguments: a }, CallToolResultSchema, { timeout: TIMEOUT_MS, ...extra });

  const tools = (await client.listTools()).tools.map((t) => t.name);
  check("helpers-listed", ["task_status", "task_result", "task_cancel"].every((n) => tools.includes(n)), tools);

  if (opts.control !== "none") {
    try {
      const r = await call(opts.control, { seconds: 8 });
      check("control-times-out", false, { unexpected: text(r) });
    } catch (e) {
      check("control-times-out", e instanceof McpError && e.code === -32001, { code: e?.code, message: String(e?.message) });
    }
  }

  let progress = 0;
  const t0 = Date.now();
  let handedOff;
  try {
    handedOff = await call(opts.tool, { seconds: opts.seconds }, { onprogress: () => { progress += 1; } });
  } catch (e) {
    check("handoff", false, { code: e?.code, message: String(e?.message) });
    return done();
  }
  const id = handedOff.structuredContent?.taskId;
  check("handoff", !!id && !handedOff.isError && text(handedOff).includes(id) && text(handedOff).includes("task_result"),
    { afterMs: Date.now() - t0, text: text(handedOff) });
  check("heartbeat", progress >= 1, { progressNotifications: progress });

  const status = await call("task_status", { task_id: id });
  check("status-working", status.structuredContent?.status === "working", text(status));

  // Collect the result the way a model would: call task_result until the job is done.
  let result, rounds = 0;
  while (Date.now() - t0 < 90000) {
    rounds += 1;
    result = await call("task_result", { task_id: id });
    if (result.structuredContent?.status !== "working") break;
  }
  check("result-collected", text(result).includes(opts.expect) && !result.isError,
    { rounds, afterMs: Date.now() - t0, text: text(result) });
  const finalStatus = await call("task_status", { task_id: id });
  check("status-completed", finalStatus.structuredContent?.status === "completed", text(finalStatus));

  const unknown = await call("task_result", { task_id: "no-such-task" });
  check("unknown-task", unknown.isError === true && text(unknown).includes("There is no task"), text(unknown));
  await client.close();
  done();
}

main().catch((e) => { check("run", false, String(e?.stack ?? e)); done({ error: String(e?.message ?? e) }); });
