//! The client's public API is era-neutral (issue 11 item 2): what it hands out is its own
//! [`ServerInfo`], [`ToolInfo`], [`TaskInfo`], [`TaskStatus`] and [`TaskMode`], never a
//! `mcp_tasks_protocol::legacy` type. Checked by using the API by value with its types
//! written out (this compiles only while they are the ones handed out), and on the source:
//! `mcp_tasks_protocol::legacy` is named only by the client's private 2025-11-25 modules.

use std::fs;
use std::path::{Path, PathBuf};

use mcp_tasks_client::ledger::{Endpoint, Ledger, LedgerEntry};
use mcp_tasks_client::protocol::{CallToolResult, Implementation};
use mcp_tasks_client::{
    Client, ClientError, Era, ServerInfo, ServerNotification, TaskHandle, TaskInfo, TaskMode, TaskStatus, ToolInfo,
};
use serde_json::json;

use crate::harness::{bounded, start};

/// The files of `src/` that may name `mcp_tasks_protocol::legacy`: the 2025-11-25 codec
/// (`legacy.rs`), the routing of the server's requests (`connection.rs`) and the tasks the
/// client hosts for the server (`hosted.rs`). All three are private modules.
const ALLOWED: [&str; 3] = ["legacy.rs", "connection.rs", "hosted.rs"];

#[tokio::test]
async fn the_api_hands_out_the_clients_own_types() {
    let server = start().await;
    let client: Client = bounded(crate::harness::legacy_http(&server.url, None)).await.unwrap();
    let info: &ServerInfo = client.server();
    let _: &Implementation = &info.implementation;
    let _: Option<&String> = info.instructions.as_ref();
    assert_eq!(info.era, Era::Legacy);
    assert_eq!(client.server_runs_tool_tasks(), info.runs_tool_tasks);

    let tools: Vec<ToolInfo> = bounded(client.list_tools()).await.unwrap();
    let echo = tools.iter().find(|tool| tool.name == "echo").unwrap();
    let mode: TaskMode = echo.task_mode;
    assert_eq!(mode.as_str(), "optional");

    let handle: TaskHandle = bounded(client.call_tool_as_task("echo", json!({"text": "x"}), None)).await.unwrap();
    let spoken: Era = handle.era();
    assert_eq!(spoken, Era::Legacy);
    let created: Option<TaskInfo> = handle.last_seen();
    assert_eq!(created.map(|task| task.id), Some(handle.id().to_owned()));
    let result: Result<CallToolResult, ClientError> = bounded(handle.wait()).await;
    assert!(result.is_ok(), "{result:?}");
    let now: TaskInfo = bounded(handle.status()).await.unwrap();
    let status: TaskStatus = now.status;
    assert!(status.is_terminal());
    assert_eq!(status.to_string(), "completed");
    let listed: Vec<TaskInfo> = bounded(client.list_tasks()).await.unwrap();
    assert!(listed.iter().any(|task| task.id == handle.id()));
    let refused: Result<TaskInfo, ClientError> = bounded(handle.cancel()).await;
    assert!(refused.is_err(), "a completed task cannot be cancelled");

    let notification = ServerNotification {
        method: "notifications/tasks/status".into(),
        params: serde_json::to_value(&now).unwrap(),
    };
    let announced: Option<TaskInfo> = notification.task_status();
    assert_eq!(announced, Some(now));

    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(&dir.path().join("ledger.sqlite3")).unwrap();
    let endpoint = Endpoint::Url(server.url.clone());
    ledger.record(&endpoint, handle.id(), "echo", &json!({}), Some(status)).await.unwrap();
    let entry: LedgerEntry = ledger.get(&endpoint, handle.id()).await.unwrap().unwrap();
    let recorded: TaskStatus = entry.status;
    assert_eq!(recorded, TaskStatus::Completed);
}

/// Every `.rs` file below `dir`, relative to it.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    files.sort();
    files
}

#[test]
fn only_the_private_2025_11_25_modules_name_legacy_types() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = sources(&src);
    assert!(files.len() > 5, "the client's sources are where this test expects them");
    let found: Vec<String> = files
        .iter()
        .map(|file| file.to_string_lossy().replace('\\', "/"))
        .filter(|file| !ALLOWED.contains(&file.as_str()))
        .filter(|file| fs::read_to_string(src.join(file)).unwrap().contains("protocol::legacy"))
        .collect();
    assert!(found.is_empty(), "2025-11-25 types named outside the client's private Legacy modules: {found:?}");

    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    for module in ALLOWED.map(|file| file.trim_end_matches(".rs")) {
        assert!(lib.contains(&format!("\nmod {module};")), "{module} is a private module");
        assert!(!lib.contains(&format!("pub mod {module}")), "{module} is not public");
    }
    // The one re-export from an allowed module: hosted's limits, plain numbers.
    assert!(lib.contains("pub use hosted::{MAX_KEPT as HOSTED_MAX_KEPT, MAX_RUNNING as HOSTED_MAX_RUNNING};"));
    assert!(!lib.contains("pub use legacy::") && !lib.contains("pub use connection::"));
    assert!(!lib.contains("legacy::"), "lib.rs re-exports nothing of a legacy module");
}
