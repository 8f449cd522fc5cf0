//! `CommandTool` against real processes, in one test binary: argv building (`argv`),
//! results (`results`, `output`), the environment and directory (`environment`), stdin
//! (`stdin`), ending the whole process group on timeout, cancellation, exit and drop
//! (`process_group`), status messages (`status`) and the line protocol (`line_protocol`).
//! The helpers they share are here.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_tasks_command::{CommandTool, MARKER};
use mcp_tasks_config::{Config, RestartPolicy, TaskSupport, ToolConfig};
use mcp_tasks_engine::{
    Change, ClientLink, Context, Engine, ErrorObject, Handler, InputKind, NewTask, Outcome, Policy, Principal,
    Progress, SystemClock, TaskRecord, ToolRuntime,
};
use mcp_tasks_sqlite::SqliteStore;
use nix::errno::Errno;
use nix::sys::signal::killpg;
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

mod argv;
mod environment;
mod line_protocol;
mod output;
mod process_group;
mod results;
mod status;
mod stdin;

/// A tool running `command`, whose schema has a string property for each of `properties`.
fn tool(command: &[&str], properties: &[&str], timeout: Option<Duration>) -> CommandTool {
    let properties: serde_json::Map<String, Value> = properties
        .iter()
        .map(|name| (name.to_string(), json!({"type": "string"})))
        .collect();
    CommandTool::new(&ToolConfig {
        input_schema: json!({"type": "object", "properties": properties}),
        task_support: TaskSupport::Optional,
        timeout,
        on_restart: RestartPolicy::Fail,
        ..ToolConfig::new("test", command.iter().map(|s| s.to_string()).collect())
    })
}

/// The first tool of a config file's text.
fn configured(text: &str) -> CommandTool {
    let config = Config::parse(text).unwrap_or_else(|err| panic!("{err}\n{text}"));
    CommandTool::new(&config.tools[0])
}

/// Runs a plain call and returns its `CallToolResult`.
async fn call_result(tool: &CommandTool, arguments: Value) -> Value {
    let ctx = Context::plain(CancellationToken::new(), None);
    match tool.call(arguments, ctx).await {
        Outcome::Result(result) => result,
        Outcome::Error(err) => panic!("expected a result, got error {err:?}"),
        Outcome::Failure(failure) => panic!("expected a result, got failure {failure:?}"),
    }
}

/// The texts of a `CallToolResult`'s content items.
fn texts(result: &Value) -> Vec<&str> {
    result["content"]
        .as_array()
        .expect("content is an array")
        .iter()
        .map(|item| {
            assert_eq!(item["type"], "text", "{result}");
            item["text"].as_str().expect("text")
        })
        .collect()
}

/// Runs a plain call and returns `(isError, text)` of its `CallToolResult`.
async fn call(tool: &CommandTool, arguments: Value, cancel: CancellationToken) -> (bool, String) {
    call_linked(tool, arguments, cancel, None).await
}

/// Runs a plain call whose messages to the client go through `link`; returns `(isError,
/// text)` of its `CallToolResult`.
async fn call_linked(
    tool: &CommandTool,
    arguments: Value,
    cancel: CancellationToken,
    link: Option<Arc<dyn ClientLink>>,
) -> (bool, String) {
    match tool.call(arguments, Context::plain(cancel, link)).await {
        Outcome::Result(result) => {
            let is_error = result["isError"].as_bool().expect("isError is a boolean");
            let content = result["content"].as_array().expect("content is an array");
            assert_eq!(content.len(), 1, "{result}");
            assert_eq!(content[0]["type"], "text");
            (
                is_error,
                content[0]["text"].as_str().expect("text").to_owned(),
            )
        }
        Outcome::Error(err) => panic!("expected a result, got error {err:?}"),
        Outcome::Failure(failure) => panic!("expected a result, got failure {failure:?}"),
    }
}

/// Splits NUL-terminated output into its elements.
fn nul_separated(text: &str) -> Vec<&str> {
    let mut elements: Vec<&str> = text.split('\0').collect();
    assert_eq!(elements.pop(), Some(""), "output ends with a NUL: {text:?}");
    elements
}

/// Whether `pgid`'s process group is gone (`killpg` with signal 0 says ESRCH).
fn group_is_gone(pgid: i32) -> bool {
    killpg(Pid::from_raw(pgid), None) == Err(Errno::ESRCH)
}

/// Reads the pid a script wrote to `fifo`; blocks until the script has started.
async fn read_pid(fifo: &Path) -> i32 {
    let fifo = fifo.to_owned();
    let text = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo))
        .await
        .expect("reader task")
        .expect("read fifo");
    text.trim().parse().expect("a pid")
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success());
}

/// `script` as a command element: command elements are templates, so a config author
/// doubles the braces of JSON in an inline script.
fn element(script: &str) -> String {
    script.replace('{', "{{").replace('}', "}}")
}

const PRINT_ARGV: &str = "printf '%s\\0' \"$@\"";

// ---- a client that records what a call sends it ----

/// How a [`TestLink`] answers requests.
enum Answer {
    /// At once, with this.
    Now(Result<Value, ErrorObject>),
    /// Never: the request waits until the call drops it.
    Never,
}

/// A client that records what the work sends it and answers every request with `answer`.
struct TestLink {
    answer: Answer,
    progress: Mutex<Vec<Progress>>,
    notified: Mutex<Vec<(String, Value)>>,
    requests: Mutex<Vec<(String, Value)>>,
    /// Signalled on each request.
    asked: Notify,
}

impl TestLink {
    fn new(answer: Answer) -> Arc<TestLink> {
        Arc::new(TestLink {
            answer,
            progress: Mutex::default(),
            notified: Mutex::default(),
            requests: Mutex::default(),
            asked: Notify::new(),
        })
    }

    fn accepting(answer: Value) -> Arc<TestLink> {
        TestLink::new(Answer::Now(Ok(answer)))
    }

    fn progress(&self) -> Vec<Progress> {
        self.progress.lock().expect("not poisoned").clone()
    }

    fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().expect("not poisoned").clone()
    }
}

#[async_trait]
impl ClientLink for TestLink {
    fn progress(&self, progress: Progress) {
        self.progress.lock().expect("not poisoned").push(progress);
    }

    fn notify(&self, method: &str, params: Value) {
        self.notified
            .lock()
            .expect("not poisoned")
            .push((method.to_owned(), params));
    }

    async fn request(&self, kind: InputKind, params: Value) -> Result<Value, ErrorObject> {
        // Recorded under the 2025-11-25 method a client would have been sent.
        let method = match kind {
            InputKind::Elicitation => "elicitation/create",
            InputKind::Sampling => "sampling/createMessage",
            InputKind::Roots => "roots/list",
        };
        self.requests
            .lock()
            .expect("not poisoned")
            .push((method.to_owned(), params));
        self.asked.notify_one();
        match &self.answer {
            Answer::Now(answer) => answer.clone(),
            Answer::Never => std::future::pending().await,
        }
    }
}
