//! The stdio transport: the same calls as over HTTP, against the server's own stdio loop
//! on an in-memory duplex; spawning from a command line; the child killed on drop.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use mcp_tasks_client::protocol::Content;
use mcp_tasks_client::{Client, ClientBuilder, ClientError, Era, TaskMode, TaskStatus};
use mcp_tasks_server::stdio;
use serde_json::json;
use tokio::io::BufReader;
use tokio::task::JoinHandle;

use crate::harness::{Accept, bounded, build};

fn first_text(content: &[Content]) -> String {
    match content.first() {
        Some(Content::Text { text, .. }) => text.clone(),
        other => panic!("not a text content: {other:?}"),
    }
}

/// The harness server on one end of a duplex, the client built by `builder` on the other.
/// The server task ends when the client side closes.
async fn connect(builder: ClientBuilder) -> (Client, JoinHandle<std::io::Result<()>>, tempfile::TempDir) {
    let (server, dir, _gate, _runs) = build();
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let served = tokio::spawn(stdio::serve(BufReader::new(server_read), server_write, server));
    let (client_read, client_write) = tokio::io::split(client_end);
    let client = bounded(builder.connect_stdio(client_read, client_write)).await.unwrap();
    (client, served, dir)
}

#[tokio::test]
async fn stdio_lists_tools_and_calls_plainly_and_as_a_task() {
    let (client, _served, _dir) = connect(crate::harness::legacy()).await;
    let server = client.server();
    assert!(server.runs_tool_tasks && server.lists_tasks && server.cancels_tasks, "{server:?}");
    assert_eq!(server.era, Era::Legacy);
    assert_eq!(client.server_process_id(), None);
    let tools = bounded(client.list_tools()).await.unwrap();
    let support = |name: &str| tools.iter().find(|tool| tool.name == name).unwrap().task_mode;
    assert_eq!(support("echo"), TaskMode::Optional);
    assert_eq!(support("plain_echo"), TaskMode::Forbidden);

    let plain = bounded(client.call_tool("plain_echo", json!({"text": "hi"}))).await.unwrap();
    assert_eq!(first_text(&plain.content), "echo: hi");

    let task = bounded(client.call_tool_as_task("echo", json!({"text": "later"}), None)).await.unwrap();
    let result = bounded(task.wait()).await.unwrap();
    assert_eq!(first_text(&result.content), "echo: later");
    assert_eq!(bounded(task.status()).await.unwrap().status, TaskStatus::Completed);
    let listed = bounded(client.list_tasks()).await.unwrap();
    assert!(listed.iter().any(|listed| listed.id == task.id()));
}

#[tokio::test]
async fn stdio_routes_an_elicitation_inside_a_task_to_the_handler() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (client, _served, _dir) = connect(crate::harness::legacy().elicitation(Accept { seen: Arc::clone(&seen) })).await;
    let task = bounded(client.call_tool_as_task("ask", json!({}), None)).await.unwrap();
    let result = bounded(task.wait()).await.unwrap();
    assert_eq!(first_text(&result.content), r#"answer: "accept" {"ok":true}"#);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "elicitation/create");
    assert_eq!(seen[0].related_task.as_deref(), Some(task.id()));
}

#[tokio::test]
async fn stdio_cancel_reaches_a_running_task() {
    let (client, _served, _dir) = connect(crate::harness::legacy()).await;
    let task = bounded(client.call_tool_as_task("block", json!({}), None)).await.unwrap();
    let waiting = tokio::spawn({
        let task = task.clone();
        async move { task.wait().await }
    });
    assert_eq!(bounded(task.cancel()).await.unwrap().status, TaskStatus::Cancelled);
    let outcome = bounded(waiting).await.unwrap().unwrap_err();
    assert!(matches!(outcome, ClientError::TaskCancelled { .. }), "{outcome}");
}

#[tokio::test]
async fn stdio_requests_fail_once_the_server_output_ends() {
    // A "server" that reads nothing and closes its output at once.
    let (client_end, server_end) = tokio::io::duplex(1024);
    drop(server_end);
    let (read, write) = tokio::io::split(client_end);
    let refused = bounded(crate::harness::legacy().connect_stdio(read, write)).await.unwrap_err();
    assert!(
        matches!(refused, ClientError::ServerExited { .. } | ClientError::Transport(_)),
        "{refused}"
    );
}

#[tokio::test]
async fn a_command_line_is_refused_when_empty_unbalanced_or_not_found() {
    let empty = bounded(crate::harness::legacy().connect_command("  ")).await.unwrap_err();
    assert!(matches!(empty, ClientError::InvalidArguments(_)), "{empty}");
    let unbalanced = bounded(crate::harness::legacy().connect_command("server 'serve")).await.unwrap_err();
    assert!(matches!(unbalanced, ClientError::InvalidArguments(_)), "{unbalanced}");
    let missing = bounded(crate::harness::legacy().connect_command("/nonexistent/mcp-server --stdio")).await.unwrap_err();
    assert!(matches!(missing, ClientError::Spawn { .. }), "{missing}");
}

#[tokio::test]
async fn a_process_that_exits_before_initialize_is_reported() {
    // `true` reads nothing and exits 0: its stdout ends before any answer.
    let refused = bounded(crate::harness::legacy().connect_process("true", &[] as &[&str])).await.unwrap_err();
    assert!(
        matches!(refused, ClientError::ServerExited { .. } | ClientError::Transport(_)),
        "{refused}"
    );
}

/// The workspace's `mcp-tasks` binary, if a build left one (this package cannot depend on
/// the CLI's binary).
fn server_binary() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/mcp-tasks");
    path.is_file().then_some(path)
}

/// Whether `pid` still has a process entry: running, or a zombie nobody reaped.
fn exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn a_spawned_server_is_used_then_killed_and_reaped_when_the_client_is_dropped() {
    let Some(binary) = server_binary() else {
        eprintln!("skipped: no target/debug/mcp-tasks (build the workspace first)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[server]\nname = \"stdio-test\"\n\n[[tools]]\nname = \"hello\"\ncommand = [\"echo\", \"hello\"]\n",
    )
    .unwrap();
    let store = dir.path().join("tasks.sqlite3");
    let args = ["serve".into(), "--stdio".into(), "--config".into(), config.display().to_string(), "--store".into(), store.display().to_string()];
    let client = bounded(crate::harness::legacy().connect_process(&binary.display().to_string(), &args)).await.unwrap();
    let pid = client.server_process_id().expect("a child process");
    let result = bounded(client.call_tool("hello", json!({}))).await.unwrap();
    assert_eq!(first_text(&result.content).trim(), "hello");
    assert!(exists(pid));
    drop(client);
    bounded(async {
        while exists(pid) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
}
