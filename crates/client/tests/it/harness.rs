//! A real mcp-tasks server on a free local port, with a few Rust tools.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use mcp_tasks_engine::{Context, Engine, Outcome, Policy, Progress, SystemClock};
use mcp_tasks_client::{ElicitationHandler, RpcError, ServerRequest};
use mcp_tasks_server::{Server, TaskMode, ToolDef, handler_fn};
use mcp_tasks_testkit_server::TestServer;
use mcp_tasks_sqlite::SqliteStore;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc};

/// A served server; stops when dropped.
pub(crate) struct Running {
    pub(crate) url: String,
    /// Lets one run of `gated` finish.
    pub(crate) gate: Arc<Notify>,
    /// How many times `gated` started.
    pub(crate) gated_runs: Arc<AtomicUsize>,
    _server: TestServer,
    _dir: tempfile::TempDir,
}

fn text(text: String) -> Outcome {
    Outcome::Result(json!({"content": [{"type": "text", "text": text}]}))
}

/// Tools: `echo` (task optional), `plain_echo` (tasks forbidden), `ask` (elicits, task
/// optional), `block` (runs until cancelled, task optional), `gated` (counts its runs,
/// finishes when [`Running::gate`] is notified, task optional).
pub(crate) async fn start() -> Running {
    let (server, dir, gate, gated_runs) = build();
    serve(server, dir, gate, gated_runs).await
}

/// The server of [`start`], not yet served: its store's directory, the gate of `gated` and
/// its run count.
pub(crate) fn build() -> (Server, tempfile::TempDir, Arc<Notify>, Arc<AtomicUsize>) {
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
                Err(error) => error.into(),
            }
        }),
    )
    .task_mode(TaskMode::Optional);
    let block = ToolDef::new(
        "block",
        "Runs until cancelled.",
        json!({"type": "object"}),
        handler_fn(|_args: Value, ctx: Context| async move {
            ctx.cancelled().await;
            text("stopped".into())
        }),
    )
    .task_mode(TaskMode::Optional);
    let steps = ToolDef::new(
        "steps",
        "Reports progress 1/3, 2/3, 3/3, then finishes.",
        json!({"type": "object"}),
        handler_fn(|_args: Value, ctx: Context| async move {
            for step in 1..=3 {
                ctx.progress(Progress { progress: f64::from(step), total: Some(3.0), message: Some(format!("step {step}")) });
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            text("three steps".into())
        }),
    )
    .task_mode(TaskMode::Optional);
    let gate = Arc::new(Notify::new());
    let gated_runs = Arc::new(AtomicUsize::new(0));
    let (opened, runs) = (Arc::clone(&gate), Arc::clone(&gated_runs));
    let gated = ToolDef::new(
        "gated",
        "Finishes when the test opens the gate.",
        json!({"type": "object"}),
        handler_fn(move |_args: Value, _ctx: Context| {
            let (opened, runs) = (Arc::clone(&opened), Arc::clone(&runs));
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                opened.notified().await;
                text("through".into())
            }
        }),
    )
    .task_mode(TaskMode::Optional);
    let server = Server::builder(engine)
        .tool(gated)
        .tool(echo("echo").task_mode(TaskMode::Optional))
        .tool(echo("plain_echo"))
        .tool(ask)
        .tool(block)
        .tool(steps)
        .build()
        .unwrap();
    (server, dir, gate, gated_runs)
}

async fn serve(server: Server, dir: tempfile::TempDir, gate: Arc<Notify>, gated_runs: Arc<AtomicUsize>) -> Running {
    let served = TestServer::http(server).await.unwrap();
    let url = served.url().unwrap();
    Running { url, gate, gated_runs, _server: served, _dir: dir }
}

/// A TCP proxy in front of a server that breaks the connection of the first `tasks/result`
/// right after its SSE priming event (`retry:` then an empty `data`), and can refuse resumptions (`Last-Event-ID`) with 404.
pub(crate) struct Proxy {
    pub(crate) url: String,
    /// Gets one message when the `tasks/result` connection was cut.
    pub(crate) cut: mpsc::UnboundedReceiver<()>,
    state: Arc<ProxyState>,
}

struct ProxyState {
    target: String,
    refuse_resume: bool,
    cut_pending: AtomicBool,
    resumptions: AtomicUsize,
    cut: mpsc::UnboundedSender<()>,
}

impl Proxy {
    /// How many GETs with `Last-Event-ID` went through (or were refused).
    pub(crate) fn resumptions(&self) -> usize {
        self.state.resumptions.load(Ordering::SeqCst)
    }
}

pub(crate) async fn proxy(server: &Running, refuse_resume: bool) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let target = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let (cut, cuts) = mpsc::unbounded_channel();
    let state = Arc::new(ProxyState {
        target,
        refuse_resume,
        cut_pending: AtomicBool::new(true),
        resumptions: AtomicUsize::new(0),
        cut,
    });
    let shared = Arc::clone(&state);
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            tokio::spawn(relay(inbound, Arc::clone(&shared)));
        }
    });
    Proxy { url, cut: cuts, state }
}

async fn relay(inbound: TcpStream, state: Arc<ProxyState>) {
    let Ok(outbound) = TcpStream::connect(&state.target).await else { return };
    let (mut client_in, mut client_out) = inbound.into_split();
    let (mut server_in, mut server_out) = outbound.into_split();
    let (mut up, mut down) = ([0u8; 16384], [0u8; 16384]);
    let mut armed = false;
    let mut answer = Vec::new();
    loop {
        tokio::select! {
            read = client_in.read(&mut up) => {
                let Ok(n @ 1..) = read else { return };
                let text = String::from_utf8_lossy(&up[..n]).to_ascii_lowercase();
                if text.contains("last-event-id") {
                    state.resumptions.fetch_add(1, Ordering::SeqCst);
                    if state.refuse_resume {
                        let _ = client_out.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
                        return;
                    }
                }
                if text.contains("tasks/result") && state.cut_pending.swap(false, Ordering::SeqCst) {
                    armed = true;
                }
                if server_out.write_all(&up[..n]).await.is_err() { return }
            }
            read = server_in.read(&mut down) => {
                let Ok(n @ 1..) = read else { return };
                if client_out.write_all(&down[..n]).await.is_err() { return }
                if armed {
                    answer.extend_from_slice(&down[..n]);
                    let text = String::from_utf8_lossy(&answer);
                    if text.contains("retry:") && text.contains("data: \n\n") {
                        let _ = state.cut.send(());
                        return; // drops both connections
                    }
                }
            }
        }
    }
}

/// `future`, or a panic after 20 s.
pub(crate) async fn bounded<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future).await.expect("done in time")
}

/// Accepts every elicitation with `{"ok": true}` and keeps the requests it saw.
pub(crate) struct Accept {
    pub(crate) seen: Arc<std::sync::Mutex<Vec<ServerRequest>>>,
}

#[async_trait::async_trait]
impl ElicitationHandler for Accept {
    async fn elicit(&self, request: ServerRequest) -> Result<Value, RpcError> {
        self.seen.lock().unwrap().push(request);
        Ok(json!({"action": "accept", "content": {"ok": true}}))
    }
}

/// A client builder pinned to 2025-11-25: for the tests of that era's behaviour (our
/// server serves both eras, and a client negotiates the newest by default).
pub(crate) fn legacy() -> mcp_tasks_client::ClientBuilder {
    mcp_tasks_client::Client::builder().era(mcp_tasks_client::Era::Legacy)
}

/// [`mcp_tasks_client::Client::connect_http`] pinned to 2025-11-25.
pub(crate) async fn legacy_http(
    url: &str,
    token: Option<String>,
) -> Result<mcp_tasks_client::Client, mcp_tasks_client::ClientError> {
    match token {
        Some(token) => legacy().token(token),
        None => legacy(),
    }
    .connect_http(url)
    .await
}
