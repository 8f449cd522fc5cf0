//! A real mcp-tasks server on a free local port, with a few Rust tools.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_engine::{Context, Engine, Outcome, Policy, SystemClock};
use mcp_tasks_client::protocol::TaskSupport;
use mcp_tasks_server::{Server, ToolDef, handler_fn, http};
use mcp_tasks_sqlite::SqliteStore;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// A served server; stops when dropped.
pub(crate) struct Running {
    pub(crate) url: String,
    _stop: oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

fn text(text: String) -> Outcome {
    Outcome::Result(json!({"content": [{"type": "text", "text": text}]}))
}

/// Tools: `echo` (task optional), `plain_echo` (tasks forbidden), `ask` (elicits, task
/// optional), `block` (runs until cancelled, task optional).
pub(crate) async fn start() -> Running {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("t.sqlite3")).unwrap();
    let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
    let echo = |name: &str| {
        ToolDef::new(
            name,
            "Echoes its text.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            handler_fn(|args: Value, _ctx: Context| async move { text(format!("echo: {}", args["text"].as_str().unwrap_or(""))) }),
        )
    };
    let ask = ToolDef::new(
        "ask",
        "Asks for confirmation, then reports the answer.",
        json!({"type": "object"}),
        handler_fn(|_args: Value, ctx: Context| async move {
            let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
            match ctx.elicit(json!({"message": "Go ahead?", "requestedSchema": schema})).await {
                Ok(answer) => text(format!("answer: {} {}", answer["action"], answer["content"])),
                Err(error) => Outcome::Error(error),
            }
        }),
    )
    .with_task_support(TaskSupport::Optional);
    let block = ToolDef::new(
        "block",
        "Runs until cancelled.",
        json!({"type": "object"}),
        handler_fn(|_args: Value, ctx: Context| async move {
            ctx.cancelled().await;
            text("stopped".into())
        }),
    )
    .with_task_support(TaskSupport::Optional);
    let server = Server::builder(engine)
        .tool(echo("echo").with_task_support(TaskSupport::Optional))
        .tool(echo("plain_echo"))
        .tool(ask)
        .tool(block)
        .build()
        .unwrap();
    serve(server, dir).await
}

async fn serve(server: Server, dir: tempfile::TempDir) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(http::serve(listener, server, http::Options::default(), async move {
        let _ = stopped.await;
    }));
    Running { url, _stop: stop, _dir: dir }
}

/// `future`, or a panic after 20 s.
pub(crate) async fn bounded<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future).await.expect("done in time")
}
