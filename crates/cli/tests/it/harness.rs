//! Drives the real binary over stdio: spawn `mcp-tasks serve --stdio` on a config and a
//! store in a temp dir, write JSON lines, read JSON lines (with a deadline, never a sleep).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio as Pipe};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// How long any single expected message may take.
const DEADLINE: Duration = Duration::from_secs(20);

/// Tools used across the tests. Arguments always arrive as their own argv elements.
pub(crate) const CONFIG: &str = r#"
[server]
name = "test-server"
default_ttl = "1h"
max_ttl = "2h"
poll_interval = "250ms"

[[tools]]
name = "echo"
description = "Prints its text."
command = ["sh", "-c", "printf '%s' \"$1\"", "_", "{text}"]
[tools.input_schema]
type = "object"
properties = { text = { type = "string" } }

[[tools]]
name = "slow"
description = "Sleeps, then prints done."
command = ["sh", "-c", "sleep \"$1\"; echo done", "_", "{seconds}"]
[tools.input_schema]
type = "object"
properties = { seconds = { type = "number" } }

[[tools]]
name = "fails"
description = "Exits 3 with a message on stderr."
command = ["sh", "-c", "echo partial; echo 'disk on fire' >&2; exit 3"]

[[tools]]
name = "plain_only"
task_support = "forbidden"
command = ["echo", "plain"]

[[tools]]
name = "task_only"
task_support = "required"
command = ["echo", "tasked"]

[[tools]]
name = "confirm"
description = "Asks for confirmation through the line protocol, then reports the answer."
command = ["sh", "-c", """
echo '@mcp-tasks {{"elicit": {{"message": "Really?", "requestedSchema": {{"type": "object", "properties": {{"ok": {{"type": "boolean"}}}}}}}}}}'
read -r answer
echo "answer: $answer"
"""]

[[tools]]
name = "retry_job"
on_restart = "retry"
description = "First run: leaves a marker and hangs. Later runs: finish."
command = ["sh", "-c", "if [ -e \"$1\" ]; then echo second-run; else touch \"$1\"; sleep 60; fi", "_", "{marker}"]
[tools.input_schema]
type = "object"
properties = { marker = { type = "string" } }
"#;

/// A temp dir with the config and the store, reusable across server restarts.
pub(crate) struct Workdir {
    pub(crate) dir: tempfile::TempDir,
}

impl Workdir {
    pub(crate) fn new() -> Workdir {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("config.toml"), CONFIG).expect("write config");
        Workdir { dir }
    }

    pub(crate) fn config(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    pub(crate) fn store(&self) -> PathBuf {
        self.dir.path().join("tasks.sqlite3")
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub(crate) fn start(&self) -> Server {
        Server::start(&self.config(), &self.store())
    }

    /// As [`Workdir::start`], without the supervisor (`MCP_TASKS_SUPERVISE=0`): what its
    /// commands leave at a SIGKILL is left to the recovery of the next server.
    pub(crate) fn start_unsupervised(&self) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
        command.args(["serve", "--stdio", "--config"]).arg(self.config()).arg("--store").arg(self.store());
        command.env("MCP_TASKS_SUPERVISE", "0");
        Server::spawn(command)
    }
}

/// A running `mcp-tasks serve --stdio`.
pub(crate) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    next_id: i64,
    /// Every message received, with the method of the request it answers (if any).
    pub(crate) received: Vec<(Option<String>, Value)>,
    /// Notifications received while waiting for responses, in order.
    pub(crate) notifications: Vec<Value>,
    methods: HashMap<i64, String>,
    /// Responses that arrived while [`Server::response_in_any_order`] waited for another.
    early: HashMap<i64, Value>,
}

impl Server {
    pub(crate) fn start(config: &Path, store: &Path) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
        command.args(["serve", "--stdio", "--config"]).arg(config).arg("--store").arg(store);
        Server::spawn(command)
    }

    /// As [`Server::start`], at the default log level (no `RUST_LOG`), its logs written to
    /// `log`.
    pub(crate) fn start_logging(config: &Path, store: &Path, log: &Path) -> Server {
        let log = std::fs::File::create(log).expect("log file");
        let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
        command.args(["serve", "--stdio", "--config"]).arg(config).arg("--store").arg(store);
        command.env_remove("RUST_LOG").stderr(log);
        Server::spawn_as_is(command)
    }

    /// Spawns `command` (an `mcp-tasks serve --stdio …`) at the log level `filter`
    /// (`RUST_LOG`), its logs written to `log`.
    pub(crate) fn spawn_logging(mut command: Command, filter: &str, log: &Path) -> Server {
        let log = std::fs::File::create(log).expect("log file");
        command.env("RUST_LOG", filter).stderr(log);
        Server::spawn_as_is(command)
    }

    /// The binary with `args` (a subcommand that serves on stdio, e.g. `proxy --stdio …`).
    pub(crate) fn spawn_args<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
        command.args(args);
        Server::spawn(command)
    }

    /// Spawns `command` (an `mcp-tasks serve --stdio …`) and speaks to it over its stdio.
    pub(crate) fn spawn(mut command: Command) -> Server {
        command.env("RUST_LOG", "warn").stderr(Pipe::inherit());
        Server::spawn_as_is(command)
    }

    /// As [`Server::spawn`], with the command's log level and stderr as it set them.
    fn spawn_as_is(mut command: Command) -> Server {
        let mut child = command.stdin(Pipe::piped()).stdout(Pipe::piped()).spawn().expect("spawn mcp-tasks");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Server { child, stdin, lines, next_id: 1, received: Vec::new(), notifications: Vec::new(), methods: HashMap::new(), early: HashMap::new() }
    }

    /// Writes one raw line.
    pub(crate) fn send_raw(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(text.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write newline");
        stdin.flush().expect("flush");
    }

    /// Writes one raw line of bytes, which need not be UTF-8.
    pub(crate) fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write");
        stdin.write_all(b"\n").expect("write newline");
        stdin.flush().expect("flush");
    }

    pub(crate) fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    /// The next message from the server; every line must be one JSON object.
    pub(crate) fn recv(&mut self) -> Value {
        let line = self.lines.recv_timeout(DEADLINE).expect("a message from the server in time");
        let value: Value = serde_json::from_str(&line).unwrap_or_else(|err| panic!("stdout line is not JSON ({err}): {line}"));
        assert!(value.is_object(), "stdout line is not a JSON object: {line}");
        let method = value.get("id").and_then(Value::as_i64).and_then(|id| self.methods.get(&id).cloned());
        self.received.push((method, value.clone()));
        value
    }

    /// Sends a request with a fresh id; returns the id.
    pub(crate) fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.methods.insert(id, method.to_owned());
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Waits for the response with `id`, keeping notifications and server requests that
    /// arrive meanwhile.
    pub(crate) fn response(&mut self, id: i64) -> Value {
        loop {
            let message = self.recv();
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
            if message.get("method").is_some() {
                self.notifications.push(message);
            } else {
                panic!("unexpected message while waiting for response {id}: {message}");
            }
        }
    }

    /// Waits for the response with `id` where several requests are outstanding at once: a
    /// server answers concurrent requests in the order they end, not the order they came, so
    /// the responses to other requests it was sent are kept for their own turn.
    pub(crate) fn response_in_any_order(&mut self, id: i64) -> Value {
        if let Some(early) = self.early.remove(&id) {
            return early;
        }
        loop {
            let message = self.recv();
            if message.get("method").is_some() {
                self.notifications.push(message);
                continue;
            }
            match message.get("id").and_then(Value::as_i64) {
                Some(answered) if answered == id => return message,
                Some(answered) if answered < self.next_id && !self.early.contains_key(&answered) => {
                    self.early.insert(answered, message);
                }
                _ => panic!("unexpected message while waiting for response {id}: {message}"),
            }
        }
    }

    /// The next response, whatever its id (the answer to a message with no usable id, such
    /// as `-32700` for a line that is not JSON), keeping notifications and server requests
    /// that arrive first: a task's status notification may come at any time.
    pub(crate) fn next_response(&mut self) -> Value {
        loop {
            let message = self.recv();
            if message.get("method").is_none() {
                return message;
            }
            self.notifications.push(message);
        }
    }

    /// `initialize` declaring `capabilities`.
    pub(crate) fn initialize_with(&mut self, capabilities: Value) -> Value {
        let result = self.call(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "it", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        result
    }

    /// Sends a request and returns its whole response message.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id)
    }

    /// Sends a request that must succeed; returns `result`.
    pub(crate) fn call(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    /// Sends a request that must fail; returns `error`.
    pub(crate) fn call_err(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(response.get("result").is_none(), "{method} should fail: {response}");
        response["error"].clone()
    }

    pub(crate) fn initialize(&mut self) -> Value {
        let result = self.call(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        result
    }

    /// Waits until a notification matching `pred` has arrived (already or from now on).
    pub(crate) fn notification(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(found) = self.notifications.iter().find(|n| pred(n)) {
            return found.clone();
        }
        loop {
            let message = self.recv();
            assert!(message.get("method").is_some(), "unexpected response: {message}");
            self.notifications.push(message.clone());
            if pred(&message) {
                return message;
            }
        }
    }

    /// Closes the server's stdin, as a client that leaves does.
    pub(crate) fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `limit` for the server to exit; its status, or `None` if it still runs.
    pub(crate) fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server with SIGKILL, as a crash would.
    pub(crate) fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap");
    }

    /// Checks every received message against the official 2025-11-25 schema.
    pub(crate) fn validate_received(&self) {
        if !mcp_tasks_testkit::schema::schemas_available_or_skip() {
            return;
        }
        for (method, message) in &self.received {
            check(message, "JSONRPCMessage");
            let Some(result) = message.get("result") else {
                if let (Some(m), Some(params)) = (message.get("method").and_then(Value::as_str), message.get("params")) {
                    match m {
                        "notifications/tasks/status" => check(message, "TaskStatusNotification"),
                        "notifications/progress" => check(message, "ProgressNotification"),
                        _ => {
                            let _ = params;
                        }
                    }
                }
                continue;
            };
            let def = match method.as_deref() {
                Some("initialize") => "InitializeResult",
                Some("tools/list") => "ListToolsResult",
                Some("tools/call") if result.get("task").is_some() => "CreateTaskResult",
                Some("tools/call") => "CallToolResult",
                Some("tasks/get") => "GetTaskResult",
                Some("tasks/result") => "CallToolResult",
                Some("tasks/list") => "ListTasksResult",
                Some("tasks/cancel") => "CancelTaskResult",
                Some("ping") => "EmptyResult",
                _ => continue,
            };
            check(result, def);
        }
    }
}

fn check(value: &Value, def: &str) {
    if let Err(errors) = mcp_tasks_testkit::schema::validate_legacy(def, value) {
        panic!("the server sent a message that the official schema's {def} rejects:\n{value}\n{errors}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Creates a task of `tool` and returns its id.
pub(crate) fn create_task(server: &mut Server, tool: &str, arguments: Value) -> String {
    let result = server.call("tools/call", json!({"name": tool, "arguments": arguments, "task": {"ttl": 60000}}));
    result["task"]["taskId"].as_str().expect("taskId").to_owned()
}

/// Waits for the `notifications/tasks/status` whose message says the command of task `id`
/// started (`started (pid N)`), and returns its process group N.
pub(crate) fn started_pid(server: &mut Server, id: &str) -> nix::unistd::Pid {
    let note = server.notification(|n| {
        n["params"]["taskId"] == id && n["params"]["statusMessage"].as_str().is_some_and(|m| m.starts_with("started (pid "))
    });
    let message = note["params"]["statusMessage"].as_str().unwrap();
    nix::unistd::Pid::from_raw(message.trim_start_matches("started (pid ").trim_end_matches(')').parse().unwrap())
}

/// Polls `tasks/get` until the task leaves `working`-ish states (a bounded number of polls
/// at the server's own pollInterval, as a real client would).
pub(crate) fn poll_until_terminal(server: &mut Server, id: &str) -> Value {
    for _ in 0..400 {
        let task = server.call("tasks/get", json!({"taskId": id}));
        if matches!(task["status"].as_str(), Some("completed" | "failed" | "cancelled")) {
            return task;
        }
        std::thread::sleep(Duration::from_millis(task["pollInterval"].as_u64().unwrap_or(250)));
    }
    panic!("task {id} did not finish");
}
