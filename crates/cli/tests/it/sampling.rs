//! `--sampling-cmd`: the real `mcp-tasks` binary against a server built with the server
//! library in this test process (a command tool cannot sample), whose task tool
//! `write_haiku` asks the client's model through `sampling/createMessage`, as the
//! interactive example does. The model is a shell command.

use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_engine::{Engine, Outcome, Policy, SystemClock};
use mcp_tasks_http as http;
use mcp_tasks_server::{Server, TaskMode, ToolDef, handler_fn};
use mcp_tasks_sqlite::SqliteStore;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A server with `write_haiku` on 127.0.0.1, in a runtime of its own; stopped on drop.
pub(crate) struct SamplingServer {
    pub(crate) url: String,
    stop: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl SamplingServer {
    pub(crate) fn start() -> SamplingServer {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("tasks.sqlite3")).unwrap();
        let stop = CancellationToken::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            runtime.block_on(async move {
                let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
                let server = Server::builder(engine)
                    .name("sampling-test")
                    .tool(write_haiku())
                    .tool(write_haiku_now())
                    .build()
                    .unwrap();
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                http::serve(listener, server, http::Options::default(), stopped.cancelled_owned()).await.unwrap();
            });
        });
        let addr = rx.recv_timeout(Duration::from_secs(20)).expect("the sampling server listens");
        SamplingServer { url: format!("http://{addr}/mcp"), stop, thread: Some(thread), _dir: dir }
    }
}

impl Drop for SamplingServer {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `write_haiku {topic}`: samples "Write a haiku about <topic>", answers `Haiku:\n<text>`
/// (the model's answer text), or `Error: <message>` with `isError` when sampling fails.
fn write_haiku() -> ToolDef {
    haiku_tool("write_haiku").task_mode(TaskMode::Required)
}

/// `write_haiku_now`: the same, never as a task (in 2026-07-28 its question is a round of
/// the call).
fn write_haiku_now() -> ToolDef {
    haiku_tool("write_haiku_now").task_mode(TaskMode::Forbidden)
}

fn haiku_tool(name: &str) -> ToolDef {
    ToolDef::new(
        name,
        "Asks the client's model for a haiku",
        json!({"type": "object", "properties": {"topic": {"type": "string"}}}),
        handler_fn(|arguments, ctx| async move {
            let topic = arguments["topic"].as_str().unwrap_or("nature").to_owned();
            let params = json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": format!("Write a haiku about {topic}")}}],
                "maxTokens": 50
            });
            match ctx.sample(params).await {
                Ok(answer) => Outcome::Result(json!({"content": [{"type": "text", "text": format!(
                    "Haiku:\n{}\n(model {})",
                    answer["content"]["text"].as_str().unwrap_or("No response"),
                    answer["model"].as_str().unwrap_or("?")
                )}]})),
                Err(error) => Outcome::Result(json!({
                    "content": [{"type": "text", "text": format!("Error: {error}")}],
                    "isError": true
                })),
            }
        }),
    )
}

/// `mcp-tasks call write_haiku --arg topic=autumn --url URL ARGS…`, stdin closed.
fn call(server: &SamplingServer, extra: &[&str]) -> Output {
    run(server, &["call", "write_haiku", "--arg", "topic=autumn"], extra)
}

/// `mcp-tasks ARGS --url URL EXTRA…`, stdin closed.
fn run(server: &SamplingServer, args: &[&str], extra: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    command
        .args(args)
        .args(["--url", &server.url])
        .args(extra)
        .env("MCP_TASKS_LEDGER", concat!(env!("CARGO_TARGET_TMPDIR"), "/sampling-ledger.sqlite3"))
        .stdin(Stdio::null());
    let output = command.output().expect("run mcp-tasks");
    eprintln!("[cli stderr] {}", String::from_utf8_lossy(&output.stderr));
    output
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn sampling_cmd_answers_with_its_plain_text_output_and_gets_the_request_on_stdin() {
    let server = SamplingServer::start();
    let dir = tempfile::tempdir().unwrap();
    let request = dir.path().join("request.json");
    let model = format!("sh -c 'cat > \"$1\"; printf \"red leaves drift down\\n\"' model {}", request.display());
    let output = call(&server, &["--sampling-cmd", &model]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Haiku:\nred leaves drift down\n(model sh)\n");
    let asked: Value = serde_json::from_str(&std::fs::read_to_string(&request).unwrap()).unwrap();
    assert_eq!(asked["messages"][0]["content"]["text"], "Write a haiku about autumn");
    assert_eq!(asked["maxTokens"], 50);
}

#[test]
fn sampling_cmd_json_output_is_the_create_message_result() {
    let server = SamplingServer::start();
    let model = r#"sh -c 'cat > /dev/null; echo "{\"role\": \"assistant\", \"content\": {\"type\": \"text\", \"text\": \"frost\"}, \"model\": \"m-7\"}"'"#;
    let output = call(&server, &["--sampling-cmd", model]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Haiku:\nfrost\n(model m-7)\n");
}

#[test]
fn a_failing_sampling_cmd_is_an_error_the_server_sees_and_a_line_on_stderr() {
    // 2025-11-25: the sampling request is the server's, its error answer goes back to it.
    let server = SamplingServer::start();
    let output = call(&server, &["--era", "legacy", "--sampling-cmd", "sh -c 'exit 7'"]);
    assert_eq!(output.status.code(), Some(1), "the task's result is an error");
    let stdout = text(&output.stdout);
    assert!(stdout.starts_with("Error: ") && stdout.contains("--sampling-cmd sh") && stdout.contains("7"), "{stdout}");
    assert!(text(&output.stderr).contains("--sampling-cmd sh: failed"), "{}", text(&output.stderr));

    let output = call(&server, &["--era", "legacy", "--sampling-cmd", r#"sh -c 'echo "{\"text\": 1}"'"#]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stdout).contains("without a \"content\" block"), "{}", text(&output.stdout));
}

#[test]
fn without_sampling_cmd_the_request_is_declined_saying_how_to_answer() {
    let server = SamplingServer::start();
    // 2025-11-25: the decline is an error answer the server's tool sees.
    let output = call(&server, &["--era", "legacy"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    assert!(stdout.starts_with("Error: ") && stdout.contains("--sampling-cmd CMD"), "{stdout}");
    assert!(text(&output.stderr).contains("rerun with --sampling-cmd CMD"), "{}", text(&output.stderr));

    let output = call(&server, &["--sampling-cmd", "'unclosed"]);
    assert_eq!(output.status.code(), Some(2), "a usage error");
    assert!(text(&output.stderr).contains("unclosed quote"), "{}", text(&output.stderr));
}

// ---- 2026-07-28 (what --era auto speaks to this server): a task's question comes as its
// `inputRequests`, a plain call's as a round; there is no error answer to a question ----

/// The task id from "mcp-tasks: task ID is running" on stderr.
fn running_task(output: &Output) -> String {
    let stderr = text(&output.stderr);
    let line = stderr.lines().find(|line| line.starts_with("mcp-tasks: task ") && line.contains(" is running"));
    let line = line.unwrap_or_else(|| panic!("no task line: {stderr}"));
    line["mcp-tasks: task ".len()..].split_whitespace().next().unwrap().to_owned()
}

const MODEL: &str = "sh -c 'cat > /dev/null; echo red leaves'";

#[test]
fn modern_sampling_cmd_answers_a_tasks_input_request_and_a_plain_calls_round() {
    let server = SamplingServer::start();
    let output = call(&server, &["--sampling-cmd", MODEL, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((result["content"][0]["text"].as_str(), result["era"].as_str()), (Some("Haiku:\nred leaves\n(model sh)"), Some("2026-07-28")));
    running_task(&output);

    let output = run(&server, &["call", "write_haiku_now", "--arg", "topic=autumn"], &["--sampling-cmd", MODEL]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Haiku:\nred leaves\n(model sh)\n");
    assert!(!text(&output.stderr).contains(" is running"), "a round of the call, no task");
}

#[test]
fn modern_a_failing_sampling_cmd_exits_1_and_leaves_the_tasks_question_open_for_tasks_wait() {
    let server = SamplingServer::start();
    let output = call(&server, &["--sampling-cmd", "sh -c 'exit 7'"]);
    assert_eq!(output.status.code(), Some(1), "the question could not be answered: {}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("--sampling-cmd sh: failed"), "{stderr}");
    let id = running_task(&output);
    assert!(stderr.contains(&format!("stays open: answer it with: mcp-tasks tasks wait {id}")), "{stderr}");
    assert!(stderr.contains("--sampling-cmd CMD") && stderr.contains(&format!("mcp-tasks tasks cancel {id}")), "{stderr}");
    let got = run(&server, &["tasks", "get", &id, "--json"], &[]);
    let task: Value = serde_json::from_slice(&got.stdout).unwrap();
    assert_eq!(task["status"], "input_required", "the question is still open");

    let output = run(&server, &["tasks", "wait", &id], &["--sampling-cmd", MODEL]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Haiku:\nred leaves\n(model sh)\n");
}

#[test]
fn modern_without_sampling_cmd_the_question_is_declined_saying_how_to_answer() {
    let server = SamplingServer::start();
    let output = call(&server, &["--json"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("rerun with --sampling-cmd CMD"), "{stderr}");
    let id = running_task(&output);
    let said: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((said["taskId"].as_str(), said["status"].as_str(), said["era"].as_str()), (Some(id.as_str()), Some("input_required"), Some("2026-07-28")));
    assert_eq!(said["unanswered"]["method"], "sampling/createMessage");
    assert_eq!(run(&server, &["tasks", "cancel", &id], &[]).status.code(), Some(0));

    // A plain call's round: the call is abandoned, with the same hint.
    let output = run(&server, &["call", "write_haiku_now"], &[]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("rerun with --sampling-cmd CMD") && stderr.contains("rerun it with --sampling-cmd CMD"), "{stderr}");

    let output = run(&server, &["call", "write_haiku_now"], &["--sampling-cmd", "'unclosed"]);
    assert_eq!(output.status.code(), Some(2), "a usage error");
}
