// The TypeScript SDK peer of the benchmarks (issue 7): @modelcontextprotocol/sdk 1.32.2,
// McpServer with an InMemoryTaskStore and InMemoryTaskMessageQueue, serving the same two task
// tools as our bench server over Streamable HTTP with stateful sessions at /mcp:
//   noop  -> text "ok" at once
//   sleep -> {ms}: text "slept <ms> ms; done_at_us=<unix µs when the work finished>"
// both taskSupport "optional" (a plain tools/call makes the SDK create the task and poll it).
// Tasks are created with pollInterval 100 ms, which is also the interval at which the SDK's
// blocking tasks/result and its task-backed plain calls look at the store again.
//
// Run with Node 22:  node benches/peers/ts_task_server.mjs --port PORT [--node-modules DIR]
// (port 0 picks a free one)
// DIR (or $MCP_BENCH_NODE_MODULES) is where the SDK is installed; the default is
// interop/.peers/npm-main/node_modules of this checkout. Listens on 127.0.0.1 only and prints
// "listening on http://127.0.0.1:PORT/mcp" to stderr.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 && at + 1 < args.length ? args[at + 1] : fallback;
};
const here = dirname(fileURLToPath(import.meta.url));
const nodeModules = resolve(
  option('--node-modules', process.env.MCP_BENCH_NODE_MODULES ?? join(here, '../../interop/.peers/npm-main/node_modules')),
);
const port = Number.parseInt(option('--port', '3950'), 10);
// One module system (CommonJS) for the SDK and zod, resolved from the SDK's install.
const require = createRequire(join(nodeModules, 'noop.js'));
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { createMcpExpressApp } = require('@modelcontextprotocol/sdk/server/express.js');
const { isInitializeRequest } = require('@modelcontextprotocol/sdk/types.js');
const { InMemoryTaskStore, InMemoryTaskMessageQueue } = require('@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js');
const z = require('zod/v4');

const POLL_INTERVAL_MS = 100;
const taskStore = new InMemoryTaskStore();
const unixMicros = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

function taskTool(work) {
  return {
    async createTask(input, { taskStore, taskRequestedTtl }) {
      const task = await taskStore.createTask({ ttl: taskRequestedTtl, pollInterval: POLL_INTERVAL_MS });
      (async () => {
        const text = await work(input);
        await taskStore.storeTaskResult(task.taskId, 'completed', { content: [{ type: 'text', text }] });
      })();
      return { task };
    },
    async getTask(_input, { taskId, taskStore }) {
      return await taskStore.getTask(taskId);
    },
    async getTaskResult(_input, { taskId, taskStore }) {
      return await taskStore.getTaskResult(taskId);
    },
  };
}

function server() {
  const mcp = new McpServer(
    { name: 'ts-task-peer', version: '1.0.0' },
    {
      capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore,
      taskMessageQueue: new InMemoryTaskMessageQueue(),
    },
  );
  mcp.experimental.tasks.registerToolTask(
    'noop',
    { description: 'Answers "ok" at once', inputSchema: {}, execution: { taskSupport: 'optional' } },
    taskTool(async () => 'ok'),
  );
  mcp.experimental.tasks.registerToolTask(
    'sleep',
    {
      description: 'Sleeps ms milliseconds',
      inputSchema: { ms: z.number().int().min(0).max(60000) },
      execution: { taskSupport: 'optional' },
    },
    taskTool(async ({ ms }) => {
      await new Promise((done) => setTimeout(done, ms));
      return `slept ${ms} ms; done_at_us=${unixMicros()}`;
    }),
  );
  return mcp;
}

const sessions = new Map();
const app = createMcpExpressApp();
app.post('/mcp', async (req, res) => {
  const id = req.headers['mcp-session-id'];
  try {
    if (id && sessions.has(id)) {
      await sessions.get(id).handleRequest(req, res, req.body);
    } else if (!id && isInitializeRequest(req.body)) {
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
      await server().connect(transport);
      await transport.handleRequest(req, res, req.body);
    } else {
      res.status(id ? 404 : 400).json({ jsonrpc: '2.0', error: { code: -32000, message: 'no such session' }, id: null });
    }
  } catch (error) {
    if (!res.headersSent) {
      res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: String(error) }, id: null });
    }
  }
});
const stream = async (req, res) => {
  const transport = sessions.get(req.headers['mcp-session-id']);
  if (!transport) {
    res.status(404).end();
    return;
  }
  await transport.handleRequest(req, res);
};
app.get('/mcp', stream);
app.delete('/mcp', stream);
const listener = app.listen(port, '127.0.0.1', (error) => {
  if (error) {
    console.error(`ts_task_server: ${error}`);
    process.exit(1);
  }
  console.error(`listening on http://127.0.0.1:${listener.address().port}/mcp`);
});
process.on('SIGTERM', () => process.exit(0));
