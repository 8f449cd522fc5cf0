//! A handler for the tests of work started before its task's creation commits
//! (`ToolRuntime::start_before_commit`) on each store: [`Chatty`] reports on every channel of
//! the event log and ends at once, and [`chatty_log`] is what its task's log then holds;
//! [`new_task`] makes the call.

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use mcp_tasks_engine::{Context, Engine, Events, Handler, NewTask, Outcome, Principal, Progress, TaskId};

/// A new task of alice's calling `tool` with no arguments, as a client makes one.
#[must_use]
pub fn new_task(tool: &str) -> NewTask {
    NewTask {
        trace: None,
        origin: None,
        owner: Principal::new("alice"),
        tool: tool.to_owned(),
        arguments: json!({}),
        requested_ttl_ms: None,
        error_result_fails: false,
        input_kinds: Vec::new(),
    }
}

/// Prints two lines and an unended one on stdout, one on stderr, adds a log event of its own
/// between them, reports its progress, says it ran (on its channel), and ends at once.
pub struct Chatty(pub mpsc::UnboundedSender<()>);

#[async_trait]
impl Handler for Chatty {
    async fn call(&self, _arguments: Value, ctx: Context) -> Outcome {
        ctx.output("one\ntwo\n");
        ctx.stderr("oops\n");
        ctx.event("dev.mcp-tasks.log", json!({"level": "info", "message": "halfway"}));
        ctx.output("three");
        ctx.progress(Progress { progress: 3.0, total: Some(3.0), message: None });
        let _ = self.0.send(());
        Outcome::Result(json!({"content": [{"type": "text", "text": "done"}]}))
    }
}

/// What the event log of a finished [`Chatty`] task holds, as its readers see it: (number,
/// type, payload). The lines before the event come before it, stdout before stderr.
#[must_use]
pub fn chatty_log() -> Vec<(u64, String, Value)> {
    [
        (0, "dev.mcp-tasks.status", json!({"status": "working"})),
        (1, "dev.mcp-tasks.output", json!({"stream": "stdout", "lines": ["one", "two"]})),
        (2, "dev.mcp-tasks.output", json!({"stream": "stderr", "lines": ["oops"]})),
        (3, "dev.mcp-tasks.log", json!({"level": "info", "message": "halfway"})),
        (4, "dev.mcp-tasks.output", json!({"stream": "stdout", "lines": ["three"]})),
        (5, "dev.mcp-tasks.progress", json!({"progress": 3.0, "total": 3.0})),
        (6, "dev.mcp-tasks.status", json!({"status": "completed"})),
    ]
    .into_iter()
    .map(|(seq, kind, payload)| (seq, kind.to_owned(), payload))
    .collect()
}

/// Task `id`'s whole event log as (number, type, payload), read through `engine` as any
/// reader reads it, and whether it is complete.
///
/// # Panics
/// If the log cannot be read, or reads as anything but a page.
pub async fn log_of(engine: &Engine, owner: &Principal, id: &TaskId) -> (Vec<(u64, String, Value)>, bool) {
    match engine.events(owner, id, None, 100).await {
        Ok(Events::Page { events, finished }) => {
            (events.into_iter().map(|event| (event.seq, event.kind, event.payload)).collect(), finished)
        }
        other => panic!("the log reads as a page: {other:?}"),
    }
}
