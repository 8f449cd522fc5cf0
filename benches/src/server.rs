//! The bench server: tools `noop` (answers the text `ok` at once), `sleep` (argument
//! `ms`; answers `slept <ms> ms; done_at_us=<unix µs>`, the wall-clock time its work
//! finished, so that the harness can measure how long the result took to reach it) and
//! `chatter` (arguments `lines_per_second` and `seconds`: prints that many lines a second,
//! as a command's stdout would reach the engine, into its task's event log; `events.sh`
//! measures what it costs the other lifecycles), all `taskSupport: "optional"`, served over Streamable HTTP at `/mcp` on [`SqliteStore`] with
//! its production durability (WAL, `synchronous=FULL`: a task is on disk before its
//! `CreateTaskResult` leaves), or on any other [`TaskStore`] ([`serve_store`]: the PostgreSQL
//! store of `bench_server --store postgres://…`, one of many replicas on one database).
//!
//! In the 2026-07-28 era the server decides whether a call becomes a task: an optional tool
//! answers inline if its work ends within the inline wait (the server's default, 1 s, unless
//! [`Settings::inline_wait`] sets another). With an inline wait of zero every call of a
//! client that declared the tasks extension is a task at once, as the Modern lifecycle
//! benchmark needs (`bench_server --inline-wait-ms 0`).
//!
//! The engine's admission limits are raised ([`policy`]): the peers we compare with have
//! none, and at 32 concurrent clients the default 16 running tasks per principal would
//! refuse calls rather than measure them.

use std::error::Error;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_tasks_engine::{Context, Engine, Outcome, Policy, SessionStore, SystemClock, TaskStore};
use mcp_tasks_http as http;
use mcp_tasks_server::{BuildError, Server, TaskMode, ToolDef, handler_fn};
use mcp_tasks_sqlite::SqliteStore;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The text `noop` answers.
pub const NOOP_TEXT: &str = "ok";
/// The key in `sleep`'s answer that precedes its completion time (unix µs).
pub const DONE_AT: &str = "done_at_us=";
/// The longest `sleep` accepted, in ms.
pub const MAX_SLEEP_MS: u64 = 60_000;
/// How often expired tasks are swept: as `mcp-tasks serve` does.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// The engine policy of the bench server: the default TTLs and poll interval, admission
/// limits high enough never to refuse a benchmark call (1,024 running, 10,000,000 retained).
pub fn policy() -> Policy {
    Policy {
        max_running: 1024,
        max_running_per_principal: 1024,
        max_retained_per_principal: 10_000_000,
        ..Policy::default()
    }
}

/// How the bench server is set up beyond its store.
#[derive(Clone, Copy, Debug, Default)]
pub struct Settings {
    /// 2026-07-28: how long a call of an optional tool waits to answer inline before it is
    /// a task (`None`: the server's default; zero: a task at once).
    pub inline_wait: Option<Duration>,
    /// Whether `noop`'s work starts before its task's creation commits
    /// ([`ToolDef::start_before_commit`]): one commit per lifecycle instead of two.
    pub early: bool,
    /// Every task's TTL in ms, whatever the call asks (`None`: the policy's defaults, an
    /// hour at most): short, for runs that expire as many tasks as they create.
    pub ttl_ms: Option<u64>,
}

/// The server with tools `noop` and `sleep` over `engine`.
///
/// # Errors
/// Only if a tool's input schema did not compile, which they do.
pub fn server(engine: Engine, settings: Settings) -> Result<Server, BuildError> {
    let noop = ToolDef::new(
        "noop",
        "Answers the text \"ok\" at once",
        json!({"type": "object"}),
        handler_fn(|_, _| async { Outcome::Result(text(NOOP_TEXT.to_owned())) }),
    )
    .task_mode(TaskMode::Optional)
    .start_before_commit(settings.early);
    let sleep = ToolDef::new(
        "sleep",
        "Sleeps `ms` milliseconds, then answers with the time it finished (unix µs)",
        json!({
            "type": "object",
            "properties": {"ms": {"type": "integer", "minimum": 0, "maximum": MAX_SLEEP_MS}},
            "required": ["ms"]
        }),
        handler_fn(|arguments: Value, _| async move {
            let ms = arguments.get("ms").and_then(Value::as_u64).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Outcome::Result(text(sleep_text(ms, unix_micros())))
        }),
    )
    .task_mode(TaskMode::Optional);
    let chatter = ToolDef::new(
        "chatter",
        "Prints `lines_per_second` lines a second for `seconds` seconds, as a command's stdout (into the task's event log)",
        json!({
            "type": "object",
            "properties": {
                "lines_per_second": {"type": "integer", "minimum": 1, "maximum": 1_000_000},
                "seconds": {"type": "integer", "minimum": 1, "maximum": 3600}
            },
            "required": ["lines_per_second", "seconds"]
        }),
        handler_fn(|arguments: Value, ctx: Context| async move {
            let rate = arguments.get("lines_per_second").and_then(Value::as_u64).unwrap_or(1).max(1);
            let seconds = arguments.get("seconds").and_then(Value::as_u64).unwrap_or(1);
            // In ticks of 10 ms, as a pipe's reads would bring them: rate / 100 lines each.
            let per_tick = rate.div_ceil(100);
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            let mut printed = 0u64;
            for _ in 0..seconds * 100 {
                tick.tick().await;
                let mut text = String::with_capacity(64 * usize::try_from(per_tick).unwrap_or(1));
                for _ in 0..per_tick {
                    printed += 1;
                    text.push_str(&format!("line {printed}: the quick brown fox jumps over the lazy dog\n"));
                }
                ctx.output(&text);
            }
            Outcome::Result(text(format!("printed {printed} lines")))
        }),
    )
    .task_mode(TaskMode::Optional);
    let mut builder = Server::builder(engine).name("mcp-tasks-bench");
    if let Some(wait) = settings.inline_wait {
        builder = builder.inline_wait(wait);
    }
    builder.tool(noop).tool(sleep).tool(chatter).build()
}

/// What `sleep` answers after `ms` milliseconds, finished at `done_at_us` (unix µs).
pub fn sleep_text(ms: u64, done_at_us: u64) -> String {
    format!("slept {ms} ms; {DONE_AT}{done_at_us}")
}

/// The current wall-clock time in unix microseconds.
pub fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX)
        })
}

/// Opens (or creates) the store at `store` with the production durability
/// ([`SqliteStore::open`]: `synchronous=FULL`) and serves it as [`serve_store`] does.
///
/// # Errors
/// The store could not be opened or recovered, or the listener failed.
pub async fn serve(
    listener: TcpListener,
    store: &Path,
    settings: Settings,
    ready: impl FnOnce(),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn Error + Send + Sync>> {
    let store = Arc::new(SqliteStore::open(store)?);
    serve_store(
        listener,
        store as Arc<dyn TaskStore>,
        None,
        settings,
        ready,
        shutdown,
    )
    .await
}

/// Recovers `store`, calls `ready` (the server serves from then on), and serves the bench
/// server on `listener` at `/mcp` until `shutdown` resolves, sweeping expired tasks
/// meanwhile and, on a shared store (PostgreSQL), renewing this replica's claims and rescuing
/// lapsed ones and storing its HTTP sessions in `sessions` (the same store; PostgreSQL only,
/// `None` on SQLite) as `mcp-tasks serve` does.
///
/// # Errors
/// The store could not be recovered, or the listener failed.
pub async fn serve_store(
    listener: TcpListener,
    store: Arc<dyn TaskStore>,
    sessions: Option<Arc<dyn SessionStore>>,
    settings: Settings,
    ready: impl FnOnce(),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn Error + Send + Sync>> {
    let mut policy = policy();
    if let Some(ttl) = settings.ttl_ms {
        (policy.default_ttl_ms, policy.max_ttl_ms) = (ttl, Some(ttl));
    }
    let engine = Engine::new(store, Arc::new(SystemClock), policy);
    let server = server(engine.clone(), settings)?;
    engine.recover().await?;
    let stop = CancellationToken::new();
    let sweeper = engine.spawn_sweeper(SWEEP_EVERY, stop.clone());
    let claims = engine.spawn_claims(stop.clone());
    ready();
    // Like the admission limits: no session of the harness is refused (it runs up to 128
    // clients at once, one session each).
    let options = http::Options { max_sessions_per_principal: 4096, sessions, ..http::Options::default() };
    let served = http::serve(listener, server, options, shutdown).await;
    stop.cancel();
    let _ = sweeper.await;
    let _ = claims.await;
    Ok(served?)
}

fn text(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}
