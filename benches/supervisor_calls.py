#!/usr/bin/env python3
"""The supervisor's cost per command start through the server (issue 45): N sequential plain
`tools/call`s of a tool whose command is /bin/true, over stdio, after 20 warm-up calls; the
wall time per call with MCP_TASKS_SUPERVISE=0 (no supervisor) or 1.

    python3 benches/supervisor_calls.py target/debug/mcp-tasks 300 0
    python3 benches/supervisor_calls.py target/debug/mcp-tasks 300 1
"""
import json, os, subprocess, sys, tempfile, time
CONFIG = '[server]\nname = "bench"\n\n[[tools]]\nname = "t"\ntask_support = "forbidden"\ncommand = ["/bin/true"]\n'
binary, n, supervise = sys.argv[1], int(sys.argv[2]), sys.argv[3]
env = dict(os.environ, RUST_LOG="error", MCP_TASKS_SUPERVISE=supervise)
work = tempfile.mkdtemp()
config, store = os.path.join(work, "tools.toml"), os.path.join(work, "tasks.sqlite3")
with open(config, "w") as f:
    f.write(CONFIG)
p = subprocess.Popen([binary, "serve", "--stdio", "--config", config, "--store", store], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
def rpc(i, method, params):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode()); p.stdin.flush()
    while True:
        msg = json.loads(p.stdout.readline())
        if msg.get("id") == i:
            return msg
rpc(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b", "version": "0"}})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'); p.stdin.flush()
for i in range(20): rpc(1000 + i, "tools/call", {"name": "t", "arguments": {}})
t = time.perf_counter()
for i in range(n):
    r = rpc(1 + i, "tools/call", {"name": "t", "arguments": {}})
    assert r["result"]["isError"] is False, r
dt = time.perf_counter() - t
p.stdin.close(); p.wait()
print(f"supervise={supervise} n={n} {dt/n*1e6:.0f} us per call")
