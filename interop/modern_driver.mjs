// What the two Modern-era (2026-07-28) TypeScript drivers share (not a driver itself):
// ext_tasks_client.mjs and ts_modern_client.mjs.
//
// * peers: the packages come from interop/.peers/npm-modern (client 2.4.0, ext-tasks 0.2.2),
//   not from interop/node_modules (npm-main, whose hoisted client is the Inspector's 2.3.1).
//   `modernImport(name, subpath)` resolves a package's ESM entry in that project by its
//   package.json "exports" and imports it by file URL; the package's own bare imports then
//   resolve inside npm-modern (ext-tasks gets client 2.4.0, its peer dependency).
// * options: --url (or MCP_URL), repeatable --header 'Name: value', --timeout S (MCP_TIMEOUT,
//   whole run), --wire FILE (every raw exchange of `rawDispatch`, one JSON line each), plus
//   each driver's own.
// * checks: `[driver] PASS|FAIL name detail` on stderr; one JSON summary line on stdout;
//   exit 0 only if every check held.
// * rawDispatch: a POST below the SDK for what its codec refuses (resultType "task", tasks/*),
//   with the 2026-07-28 headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name), SSE or JSON.
import { readFileSync } from "node:fs";
import { appendFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const PV = "2026-07-28";
export const TASKS_EXT = "io.modelcontextprotocol/tasks";

const HERE = dirname(fileURLToPath(import.meta.url));
export const MODERN_DIR = process.env.INTEROP_NPM_MODERN ?? join(HERE, ".peers", "npm-modern");

function packageDir(name) {
  return join(MODERN_DIR, "node_modules", ...name.split("/"));
}

export function packageVersion(name) {
  return JSON.parse(readFileSync(join(packageDir(name), "package.json"), "utf8")).version;
}

/** `import()` of `name` + `subpath` ("." or "./client") as installed in npm-modern. */
export async function modernImport(name, subpath = ".") {
  const dir = packageDir(name);
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  let entry = pkg.exports?.[subpath] ?? (subpath === "." ? pkg.exports : undefined);
  while (entry && typeof entry === "object") entry = entry.import ?? entry.default;
  if (typeof entry !== "string") throw new Error(`${name}: no ESM entry for ${subpath} in ${dir}`);
  return import(pathToFileURL(join(dir, entry)).href);
}

/**
 * Parses the common options and `own` ({"--flag": ["key", default]}); exits 2 on a bad one.
 */
export function parseOptions(argv, own, usage) {
  const o = {
    url: process.env.MCP_URL,
    timeout: Number(process.env.MCP_TIMEOUT ?? 90),
    wire: process.env.MCP_WIRE,
    headers: {},
  };
  const keys = { "--url": "url", "--timeout": "timeout", "--wire": "wire" };
  for (const [flag, [key, dflt]] of Object.entries(own)) {
    keys[flag] = key;
    o[key] = dflt;
  }
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--header" && i + 1 < argv.length) {
      const h = argv[++i], c = h.indexOf(":");
      if (c < 1) { console.error(`--header wants "Name: value", got ${h}`); process.exit(2); }
      o.headers[h.slice(0, c).trim()] = h.slice(c + 1).trim();
      continue;
    }
    const k = keys[argv[i]];
    if (!k || i + 1 >= argv.length) {
      console.error(`unknown or incomplete option ${argv[i]}\nusage: ${usage}`);
      process.exit(2);
    }
    o[k] = argv[++i];
  }
  if (!o.url) { console.error(`--url is required\nusage: ${usage}`); process.exit(2); }
  o.timeout = Number(o.timeout);
  return o;
}

/** The check record of one driver run: PASS/FAIL lines, the summary, the watchdog. */
export class Run {
  constructor(driver, opts, peer) {
    this.driver = driver;
    this.opts = opts;
    this.peer = peer;
    this.started = Date.now();
    this.checks = [];
    this.info = {};
    this.finished = false;
    this.watchdog = setTimeout(() => {
      this.check("overall-timeout", false, `run exceeded ${opts.timeout}s`);
      this.finish();
      process.exit(1);
    }, opts.timeout * 1000);
  }

  log(...a) { console.error(`[${this.driver}]`, ...a); }

  check(name, ok, detail) {
    this.checks.push(detail === undefined ? { name, ok: !!ok } : { name, ok: !!ok, detail });
    this.log(ok ? "PASS" : "FAIL", name, detail === undefined ? "" : JSON.stringify(detail));
    return !!ok;
  }

  finish(extra = {}) {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.watchdog);
    const ok = this.checks.length > 0 && this.checks.every((c) => c.ok) && !extra.error;
    const summary = {
      driver: this.driver, peer: this.peer, url: this.opts.url, ok,
      passed: this.checks.filter((c) => c.ok).length, failed: this.checks.filter((c) => !c.ok).length,
      elapsedMs: Date.now() - this.started, ...this.info, ...extra, checks: this.checks,
    };
    process.stdout.write(JSON.stringify(summary) + "\n");
    process.exitCode = ok ? 0 : 1;
  }

  /** Runs `main` with an `unexpected-exception` check, then prints and exits. */
  async main(body) {
    try { await body(); } catch (e) { this.check("unexpected-exception", false, errInfo(e)); }
    this.finish();
    setTimeout(() => process.exit(process.exitCode ?? 1), 200).unref();
  }
}

export function errInfo(e) {
  const out = { name: e?.constructor?.name, message: String(e?.message ?? e) };
  if (e?.code !== undefined) out.code = e.code;
  if (e?.data !== undefined) out.data = e.data;
  return out;
}

export async function withDeadline(promise, ms, what) {
  let t;
  const guard = new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`${what}: no answer within ${ms} ms`)), ms); });
  try { return await Promise.race([promise, guard]); } finally { clearTimeout(t); }
}

/** Polls `probe()` until it returns a truthy value or `ms` pass; returns the last value. */
export async function pollUntil(probe, ms, everyMs = 200) {
  const deadline = Date.now() + ms;
  let v;
  for (;;) {
    v = await probe();
    if (v || Date.now() >= deadline) return v;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

const NAME_SOURCE = { "tools/call": "name", "prompts/get": "name", "resources/read": "uri",
  "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId" };

/**
 * A JSON-RPC POST for ext-tasks' `rawDispatch` (and for the drivers' own wire checks):
 * returns `{kind: "result", result}` or `{kind: "error", error}` (ext-tasks' JsonRpcResponse).
 * `extraHeaders` are the driver's (--header); ext-tasks passes its own (Mcp-Name) in
 * `options.context.headers`. Every exchange is kept in `wire` (and appended to `wireFile`).
 */
export function makeRawDispatch({ url, extraHeaders = {}, wire = [], wireFile }) {
  let nextId = 1000;
  return async function rawDispatch(request, options = {}) {
    const id = nextId++;
    const name = NAME_SOURCE[request.method] && request.params?.[NAME_SOURCE[request.method]];
    const headers = {
      "content-type": "application/json", accept: "application/json, text/event-stream",
      "mcp-protocol-version": PV, "mcp-method": request.method,
      ...(name !== undefined && name !== null ? { "mcp-name": String(name) } : {}),
      ...lower(extraHeaders),
      // ext-tasks supplies "Mcp-Name" here; lower-cased, or fetch would join two values
      ...lower(options.context?.headers ?? {}),
    };
    const body = { jsonrpc: "2.0", id, ...request };
    const t0 = Date.now();
    const res = await fetch(url, { method: "POST", headers, signal: options.signal, body: JSON.stringify(body) });
    const text = await res.text();
    let msg;
    const ctype = res.headers.get("content-type") || "";
    try {
      if (ctype.includes("text/event-stream")) {
        for (const block of text.split(/\r?\n\r?\n/)) {
          const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
          if (data) { const m = JSON.parse(data); if (m.id === id) msg = m; }
        }
      } else if (text) {
        msg = JSON.parse(text);
      }
    } catch { /* recorded below as a bad response */ }
    const exchange = { method: request.method, status: res.status, ms: Date.now() - t0,
      request: redact(body), response: msg ?? text.slice(0, 2000) };
    wire.push(exchange);
    if (wireFile) appendFileSync(wireFile, JSON.stringify(exchange) + "\n");
    if (!msg) throw new Error(`${request.method}: HTTP ${res.status}, no JSON-RPC response for id ${id}: ${text.slice(0, 300)}`);
    return msg.error ? { kind: "error", error: msg.error } : { kind: "result", result: msg.result };
  };
}

function lower(headers) {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

// the request as sent, minus the repetitive _meta envelope
function redact(body) {
  const meta = body.params?._meta;
  if (!meta) return body;
  const caps = meta["io.modelcontextprotocol/clientCapabilities"];
  return { ...body, params: { ...body.params, _meta: { capabilities: caps } } };
}

/** The text items of a CallToolResult, joined by newlines. */
export function textOf(result) {
  return (result?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}
