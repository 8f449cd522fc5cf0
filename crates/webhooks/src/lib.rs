//! Completion webhooks (`[[server.webhooks]]`): when a task completes, fails, is cancelled
//! or starts waiting for input, each webhook that asked for that event gets an HTTP POST of
//! the task's state, signed, retried with backoff until it is answered 2xx, and recorded in
//! a durable outbox (`outbox`) before any attempt, so that a delivery survives a restart.
//! The task never waits for a delivery: events are read from the engine's change feed.
//!
//! # A delivery
//! `POST <url>` with `Content-Type: application/json` and the body
//! `{"event": "completed", "task": {"id", "tool", "status", "statusMessage", "principal",
//! "createdAt", "updatedAt", "result" | "error"}}`, and the headers:
//! - `X-Mcp-Tasks-Event`: the event;
//! - `X-Mcp-Tasks-Delivery`: the delivery's id (the same on every attempt: a receiver that
//!   has seen it may ignore a repeat);
//! - `X-Mcp-Tasks-Signature`: `t=<unix seconds of this attempt>,v1=<hex HMAC-SHA256 of
//!   "<t>.<body>" with the webhook's secret>` ([`signature`]); a receiver recomputes it,
//!   compares in constant time, and rejects a `t` too far from its clock.
//!
//! # Delivery guarantees
//! Each event is queued once per webhook (the outbox's key is the webhook, task, event and
//! the task's version) and POSTed until a 2xx answer: at least once, and once when the
//! receiver answers. A failed attempt (no connection, a timeout, a non-2xx status) is
//! retried after 0.5 s, doubling up to 5 minutes, at most [`MAX_ATTEMPTS`] times. An event
//! that happens while the server is down, or in the instant between a task's write and its
//! queueing when the server is killed, is not delivered (the outbox is written from the
//! change feed, not in the task's own transaction).
//!
//! # Layout
//! - this file: [`Webhooks`] (the dispatcher from the change feed to the outbox, and the
//!   sender from the outbox to each receiver), [`Webhook`] (one receiver, as the embedder
//!   configures it: `mcp-tasks serve` maps `[[server.webhooks]]` onto it), [`signature`];
//! - `outbox`: the deliveries not yet made, in an SQLite file of their own.
//!
//! It depends on the engine alone (its change feed): no server, no MCP era.

mod outbox;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hmac::{Hmac, KeyInit, Mac};
use http_body_util::Full;
use hyper::Request;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_tasks_engine::{Change, Engine, Outcome, Status, TaskId, TaskRecord, TaskState};
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::sync::Notify;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use self::outbox::{Delivery, Outbox};

/// One webhook: where deliveries are POSTed, for which events, signed with which secret
/// (`mcp-tasks serve` maps each `[[server.webhooks]]` entry onto one).
#[derive(Clone, PartialEq, Eq)]
pub struct Webhook {
    /// Where deliveries are POSTed: an `https://` URL (the receiver's certificate verified
    /// against the system's roots, or `ca_file`'s, and the name in the URL) or `http://`.
    pub url: String,
    /// Which events are delivered: `completed`, `failed`, `cancelled`, `input_required`.
    pub events: Vec<String>,
    /// The HMAC-SHA256 key every delivery is signed with.
    pub secret: String,
    /// A PEM file of CA certificates to check an `https://` receiver against instead of the
    /// system's roots.
    pub ca_file: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Webhook {
    /// The secret is never shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook").field("url", &self.url).field("events", &self.events).finish_non_exhaustive()
    }
}

/// The header carrying a delivery's signature.
pub const SIGNATURE_HEADER: &str = "x-mcp-tasks-signature";
/// How many attempts a delivery gets before it is given up (about a day of retries).
pub const MAX_ATTEMPTS: u32 = 300;
/// The first retry's delay; each next one doubles, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// How long one POST may take.
const POST_TIMEOUT: Duration = Duration::from_secs(10);
/// Deliveries taken from the outbox at once.
const BATCH: u32 = 32;

/// The webhooks of a running server: a dispatcher (change feed → outbox) and a sender
/// (outbox → POST), both Tokio tasks that stop with the handle.
pub struct Webhooks {
    stop: CancellationToken,
}

impl Drop for Webhooks {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The signature of `body` signed at `timestamp` (unix seconds) with `secret`: the value of
/// [`SIGNATURE_HEADER`], `t=<timestamp>,v1=<hex HMAC-SHA256 of "<timestamp>.<body>">`.
pub fn signature(secret: &str, timestamp: u64, body: &str) -> String {
    #[allow(clippy::expect_used)] // HMAC takes a key of any length
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC accepts any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("t={timestamp},v1={hex}")
}

impl Webhooks {
    /// Starts delivering `hooks`' events of `engine`'s tasks, with the outbox at `outbox`
    /// (created if missing; deliveries left by an earlier run are sent first). Call it
    /// inside a Tokio runtime, before recovery, so that what recovery does is delivered too.
    ///
    /// # Errors
    /// The outbox cannot be opened (the message names the file).
    pub fn start(engine: &Engine, hooks: Vec<Webhook>, outbox: &Path) -> Result<Webhooks, String> {
        let clients = clients(&hooks)?;
        let outbox = Outbox::open(outbox)?;
        let stop = CancellationToken::new();
        let wake = Arc::new(Notify::new());
        let hooks = Arc::new(hooks);
        let feed = engine.subscribe();
        tokio::spawn(dispatch(feed, Arc::clone(&hooks), outbox.clone(), Arc::clone(&wake), stop.clone()));
        tokio::spawn(send(hooks, clients, outbox, wake, stop.clone()));
        Ok(Webhooks { stop })
    }
}

/// The event a task's new state is, if any webhook can ask for it.
fn event_of(status: Status) -> Option<&'static str> {
    match status {
        Status::Completed => Some("completed"),
        Status::Failed => Some("failed"),
        Status::Cancelled => Some("cancelled"),
        Status::InputRequired => Some("input_required"),
        Status::Working => None,
    }
}

/// Change feed → outbox: an event when a task's status changes to one a webhook asked for.
async fn dispatch(
    mut feed: tokio::sync::broadcast::Receiver<Change>,
    hooks: Arc<Vec<Webhook>>,
    outbox: Outbox,
    wake: Arc<Notify>,
    stop: CancellationToken,
) {
    // The last status seen of each unfinished task: a write that changes only its message
    // is no event. Finished tasks leave it.
    let mut last: HashMap<TaskId, Status> = HashMap::new();
    loop {
        let change = tokio::select! {
            () = stop.cancelled() => return,
            change = feed.recv() => change,
        };
        let record = match change {
            Ok(Change::Task(record)) => record,
            Ok(_) => continue,
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "the webhooks fell behind the engine's change feed; some events are not delivered");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        // What the operator is told: a tool's error is `failed` in every era.
        let status = record.outcome();
        let before = if status.is_terminal() { last.remove(&record.id) } else { last.insert(record.id.clone(), status) };
        let Some(event) = event_of(status).filter(|_| before != Some(status)) else { continue };
        let body = json!({"event": event, "task": task_state(&record)}).to_string();
        let rows: Vec<_> = hooks
            .iter()
            .filter(|hook| hook.events.iter().any(|wanted| wanted == event))
            .map(|hook| {
                let dedupe = format!("{} {} {event} {}", hook.url, record.id, record.version.0);
                (dedupe, hook.url.clone(), event.to_owned(), body.clone())
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        match outbox.enqueue(rows, now_ms()).await {
            Ok(()) => wake.notify_one(),
            Err(err) => tracing::error!(task = %record.id, error = %err, "could not queue a webhook delivery"),
        }
    }
}

/// What a delivery says of the task.
fn task_state(task: &TaskRecord) -> Value {
    let mut state = json!({
        "id": task.id.as_str(),
        "tool": task.tool,
        "status": task.outcome().as_str(),
        "statusMessage": task.status_message,
        "principal": task.owner.as_str(),
        "createdAt": task.created_at.0,
        "updatedAt": task.updated_at.0,
    });
    let outcome = match &task.state {
        TaskState::Completed { result } => Some(("result", result.clone())),
        TaskState::Failed { outcome: Outcome::Result(result) } => Some(("result", result.clone())),
        TaskState::Failed { outcome: Outcome::Error(error) } => {
            Some(("error", json!({"code": error.code, "message": error.message, "data": error.data})))
        }
        TaskState::Failed { outcome: Outcome::Failure(work) } => Some(("error", json!({"message": work.to_string()}))),
        _ => None,
    };
    if let (Some((name, value)), Value::Object(map)) = (outcome, &mut state) {
        map.insert(name.to_owned(), value);
    }
    state
}

/// The HTTP client deliveries go through: plain HTTP, or TLS verified against the system's
/// roots or a webhook's own CA file.
type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A client per webhook URL (one per CA file; those on the system's roots share one).
///
/// # Errors
/// A webhook's CA file that cannot be read, named with its URL.
fn clients(hooks: &[Webhook]) -> Result<HashMap<String, HttpClient>, String> {
    let mut by_ca: HashMap<Option<&Path>, HttpClient> = HashMap::new();
    let mut clients = HashMap::new();
    for hook in hooks {
        let ca = hook.ca_file.as_deref();
        let client = match by_ca.entry(ca) {
            std::collections::hash_map::Entry::Occupied(known) => known.get().clone(),
            std::collections::hash_map::Entry::Vacant(new) => {
                let what = ca.map_or_else(String::new, |file| format!("ca_file = \"{}\"", file.display()));
                let tls = mcp_tasks_tls::client_config(ca, &what).map_err(|err| format!("webhook {}: {err}", hook.url))?;
                let connector = HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http().enable_http1().build();
                new.insert(Client::builder(TokioExecutor::new()).build(connector)).clone()
            }
        };
        clients.insert(hook.url.clone(), client);
    }
    Ok(clients)
}

/// Outbox → POST: sends what is due, then sleeps until the next is due or a new one comes.
async fn send(
    hooks: Arc<Vec<Webhook>>,
    clients: HashMap<String, HttpClient>,
    outbox: Outbox,
    wake: Arc<Notify>,
    stop: CancellationToken,
) {
    let secrets: HashMap<&str, (&str, &HttpClient)> =
        hooks.iter().filter_map(|hook| Some((hook.url.as_str(), (hook.secret.as_str(), clients.get(&hook.url)?)))).collect();
    loop {
        let due = match outbox.due(now_ms(), BATCH).await {
            Ok(due) => due,
            Err(err) => {
                tracing::error!(error = %err, "could not read the webhook outbox");
                Vec::new()
            }
        };
        for delivery in &due {
            if stop.is_cancelled() {
                return;
            }
            deliver(&secrets, &outbox, delivery).await;
        }
        if !due.is_empty() {
            continue;
        }
        let wait = match outbox.next_due().await {
            Ok(Some(at)) => Duration::from_millis(u64::try_from(at.saturating_sub(now_ms())).unwrap_or(0)),
            Ok(None) | Err(_) => MAX_BACKOFF,
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = wake.notified() => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// One attempt of `delivery`: removed from the outbox when answered 2xx (or given up),
/// otherwise scheduled again with backoff.
async fn deliver(secrets: &HashMap<&str, (&str, &HttpClient)>, outbox: &Outbox, delivery: &Delivery) {
    let Some((secret, client)) = secrets.get(delivery.url.as_str()) else {
        tracing::warn!(url = %delivery.url, "a queued delivery's webhook is no longer configured; dropped");
        let _ = outbox.remove(delivery.id).await;
        return;
    };
    let attempt = post(client, secret, delivery).await;
    let recorded = match attempt {
        Ok(()) => {
            tracing::debug!(url = %delivery.url, event = %delivery.event, delivery = delivery.id, "webhook delivered");
            outbox.remove(delivery.id).await
        }
        Err(err) if delivery.attempts + 1 >= MAX_ATTEMPTS => {
            tracing::error!(url = %delivery.url, delivery = delivery.id, error = %err, "webhook delivery given up");
            outbox.remove(delivery.id).await
        }
        Err(err) => {
            let backoff = FIRST_BACKOFF.saturating_mul(1 << delivery.attempts.min(16)).min(MAX_BACKOFF);
            tracing::warn!(url = %delivery.url, delivery = delivery.id, error = %err, retry_in = ?backoff, "webhook delivery failed");
            let next = now_ms().saturating_add(i64::try_from(backoff.as_millis()).unwrap_or(i64::MAX));
            outbox.retry_at(delivery.id, next, err).await
        }
    };
    if let Err(err) = recorded {
        tracing::error!(delivery = delivery.id, error = %err, "could not record a webhook delivery's attempt");
    }
}

async fn post(client: &HttpClient, secret: &str, delivery: &Delivery) -> Result<(), String> {
    let timestamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs());
    let request = Request::post(delivery.url.as_str())
        .header("content-type", "application/json")
        .header("user-agent", concat!("mcp-tasks/", env!("CARGO_PKG_VERSION")))
        .header("x-mcp-tasks-event", delivery.event.as_str())
        .header("x-mcp-tasks-delivery", delivery.id.to_string())
        .header(SIGNATURE_HEADER, signature(secret, timestamp, &delivery.body))
        .body(Full::new(Bytes::from(delivery.body.clone())))
        .map_err(|err| format!("the request cannot be built: {err}"))?;
    let response = tokio::time::timeout(POST_TIMEOUT, client.request(request))
        .await
        .map_err(|_| format!("no answer within {POST_TIMEOUT:?}"))?
        .map_err(|err| format!("POST failed: {}", mcp_tasks_tls::with_causes(&err)))?;
    let status = response.status();
    if status.is_success() { Ok(()) } else { Err(format!("answered {status}")) }
}


fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_the_timestamp_a_dot_and_the_body() {
        // The digest computed independently: python3 -c "import hmac, hashlib; print(hmac.new(b'key', b'1700000000.{}', hashlib.sha256).hexdigest())"
        let signed = signature("key", 1_700_000_000, "{}");
        assert_eq!(signed, "t=1700000000,v1=9d713ed406bb7076d4123f0dc2c39d2df5c654ed4b0cd56b52c8b4c940bd63ae");
    }
}
