// Interop peer: the TypeScript SDK v2 server, @modelcontextprotocol/server 2.4.0, serving the
// 2026-07-28 revision (createMcpHandler: no initialize, per-request _meta; MRTR through
// inputRequired; no tasks extension), for testing a Modern client (ours: `mcp-tasks call --era
// modern`, interop/client-peers-modern.sh); checked on its own by modern-servers-selfcheck.sh.
//
//   node interop/ts-modern-server.mjs [--listen 127.0.0.1:0]
//
// Prints `listening on http://ADDR/mcp` on stdout once bound; stops on SIGTERM / SIGINT. The SDK
// comes from .peers/npm-modern (or $INTEROP_NPM_MODERN); it refuses to start unless it is 2.4.0.
// createMcpHandler is modern-only here (legacy: 'reject': a 2025-era request gets the
// unsupported-protocol-version error), mounted on node:http with a small Request/Response
// bridge (the SDK's own bridge is the separate package @modelcontextprotocol/node) behind the
// SDK's Host/Origin validation for loopback.
//
// Tools:
//   * ts_echo {text}: answers `ts_echo: TEXT`;
//   * ts_confirm {item?="widget"}: an MRTR tool. Without an answer it returns an
//     InputRequiredResult (resultType "input_required") asking under the key `confirm` an
//     elicitation/create form `Confirm ITEM?` with a boolean `confirm`, and a requestState
//     `ts_confirm:ITEM`; the retry carrying inputResponses.confirm ends it:
//     accept {confirm: true} → `ts_confirm ITEM: confirmed`, accept {confirm: false} →
//     `ts_confirm ITEM: not confirmed`, decline / cancel → `ts_confirm ITEM: declined` /
//     `... cancelled`.
import { createServer } from 'node:http';
import { modernImport, packageVersion } from './modern_driver.mjs';

// The SDK as installed in .peers/npm-modern (INTEROP_NPM_MODERN), by file URL: a bare import from
// interop/ would resolve to interop/node_modules, i.e. npm-main, which holds the Inspector's 2.3.1.
const SDK = '@modelcontextprotocol/server';
const WANT = '2.4.0';
if (packageVersion(SDK) !== WANT) {
  console.error(`ts-modern-server: ${SDK} is ${packageVersion(SDK)}, not ${WANT} (run interop/install.sh)`);
  process.exit(2);
}
const {
  McpServer, createMcpHandler, fromJsonSchema, inputRequired, inputResponse,
  hostHeaderValidationResponse, localhostAllowedHostnames, originValidationResponse, localhostAllowedOrigins,
} = await modernImport(SDK);

let listen = '127.0.0.1:0';
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--listen' && argv[i + 1]) listen = argv[++i];
  else { console.error('usage: ts-modern-server.mjs [--listen HOST:PORT]'); process.exit(2); }
}
const colon = listen.lastIndexOf(':');
const [host, port] = [listen.slice(0, colon), Number(listen.slice(colon + 1))];

function factory() {
  const server = new McpServer({ name: 'ts-modern-server', version: '0.0.0' });
  server.registerTool('ts_echo', {
    description: 'Answers `ts_echo: TEXT`.',
    inputSchema: fromJsonSchema({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }),
  }, async ({ text }) => ({ content: [{ type: 'text', text: `ts_echo: ${text}` }] }));
  server.registerTool('ts_confirm', {
    description: 'Asks `Confirm ITEM?` (MRTR, input key `confirm`, boolean), then answers with the decision.',
    inputSchema: fromJsonSchema({ type: 'object', properties: { item: { type: 'string' } } }),
  }, async ({ item = 'widget' }, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
    if (answer.kind === 'missing') {
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: `Confirm ${item}?`,
            requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean', description: 'Confirm the item' } }, required: ['confirm'] },
          }),
        },
        requestState: `ts_confirm:${item}`,
      });
    }
    const outcome = answer.kind !== 'elicit' ? `unexpected ${answer.kind} response`
      : answer.action === 'accept' ? (answer.content?.confirm === true ? 'confirmed' : 'not confirmed')
      : answer.action === 'decline' ? 'declined' : 'cancelled';
    return { content: [{ type: 'text', text: `ts_confirm ${item}: ${outcome}` }] };
  });
  return server;
}

const handler = createMcpHandler(factory, { legacy: 'reject', onerror: (e) => console.error('ts-modern-server:', e.message) });

// node:http <-> web Request/Response, buffering the (small) request body.
async function toWebRequest(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (Array.isArray(v)) v.forEach((x) => headers.append(k, x)); else if (v !== undefined) headers.set(k, v);
  }
  const body = chunks.length && req.method !== 'GET' && req.method !== 'HEAD' ? Buffer.concat(chunks) : undefined;
  return new Request(`http://${req.headers.host ?? listen}${req.url}`, { method: req.method, headers, body });
}

const http = createServer(async (req, res) => {
  try {
    if (!req.url.startsWith('/mcp')) { res.writeHead(404).end(); return; }
    const request = await toWebRequest(req);
    const response = hostHeaderValidationResponse(request, localhostAllowedHostnames())
      ?? originValidationResponse(request, localhostAllowedOrigins())
      ?? await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      for await (const chunk of response.body) res.write(chunk);
    }
    res.end();
  } catch (e) {
    console.error('ts-modern-server: request failed:', e);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});
http.listen(port, host, () => {
  const a = http.address();
  process.stdout.write(`listening on http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}/mcp\n`);
});
const stop = () => { handler.close().finally(() => http.close(() => process.exit(0))); setTimeout(() => process.exit(0), 2000).unref(); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
