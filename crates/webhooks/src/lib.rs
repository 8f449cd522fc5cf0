//! Completion webhooks (`[[server.webhooks]]`): when a task completes, fails, is cancelled
//! or starts waiting for input, each webhook that asked for that event gets an HTTP POST of
//! the task's state, signed, retried with backoff until it is answered 2xx. The deliveries are
//! kept in the task store itself ([`DeliveryStore`]), written in the same transaction as the
//! task's change; every process delivers. The task never waits for a delivery.
//!
//! # A delivery
//! `POST <url>` with `Content-Type: application/json` and the body
//! `{"event": "completed", "task": {"id", "tool", "status", "statusMessage", "principal",
//! "createdAt", "updatedAt", "result" | "error"}}`, and the headers:
//! - `X-Mcp-Tasks-Event`: the event;
//! - `X-Mcp-Tasks-Delivery`: the delivery's id, the same on every attempt and for every
//!   receiver of that event, never reused by the store: a receiver that has seen it may
//!   ignore a repeat;
//! - `X-Mcp-Tasks-Signature`: `t=<unix seconds of this attempt>,v1=<hex HMAC-SHA256 of
//!   "<t>.<body>" with the webhook's secret>` ([`signature`]); a receiver recomputes it,
//!   compares in constant time, and rejects a `t` too far from its clock.
//!
//! The task is described as it was at the event: as stored, if it has not changed since
//! (always so for a finished task); else (it waited for input and moved on, or it was purged
//! before its delivery) by what the delivery kept: its status, message and time, without a
//! result.
//!
//! # Delivery guarantees
//! A store that records deliveries ([`DeliveryStore::record_deliveries`], called by
//! [`Webhooks::start`]) writes one in the transaction of every write that takes a task into
//! an event status: an event that committed has its delivery, whenever the server is killed.
//! Every process on the store (each replica, each process on an SQLite file) runs a
//! deliverer: a delivery is claimed by one of them with a lease, POSTed to every webhook that
//! asked for its event and has not answered it yet, and finished once all have; a delivery
//! whose process died is taken over when its lease lapses (on SQLite, at once: the process is
//! known gone). So each receiver gets each event at least once, and once when it answers
//! and no process dies in the instant between its answer and the record of it. A failed
//! attempt (no connection, a timeout, a non-2xx status) is retried after 0.5 s, doubling up
//! to 5 minutes, at most [`MAX_ATTEMPTS`] times. Configure the same webhooks on every process
//! that writes tasks: a process without them records no deliveries.
//!
//! It depends on the engine alone (its change feed, to wake up, and its store seam): no
//! server, no MCP era.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures_util::future::join_all;
use hmac::{Hmac, KeyInit, Mac};
use http_body_util::Full;
use hyper::Request;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_tasks_engine::{Change, Delivery, DeliveryStore, Engine, NodeId, Outcome, Status, TaskRecord, TaskState, Timestamp};
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

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
/// Deliveries claimed at once.
const BATCH: u32 = 16;
/// The longest a deliverer sleeps without looking at the store: how soon it sees a delivery
/// whose wake-up it missed, or whose claim lapsed.
const BACKSTOP: Duration = Duration::from_secs(2);

/// The webhooks of a running server: its deliverer, a Tokio task that stops with the handle.
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
    /// Starts delivering `hooks`' events of the tasks in `store` (the store `engine` holds,
    /// as the webhooks see it): from now on its writes record deliveries, and this process
    /// claims and sends them, with those left by earlier runs or by other processes. Call it
    /// inside a Tokio runtime, before recovery, so that what recovery does is delivered too.
    ///
    /// # Errors
    /// A webhook's CA file cannot be read (the message names the webhook).
    pub fn start(engine: &Engine, hooks: Vec<Webhook>, store: Arc<dyn DeliveryStore>) -> Result<Webhooks, String> {
        let clients = clients(&hooks)?;
        store.record_deliveries();
        let stop = CancellationToken::new();
        let deliverer = Deliverer { hooks, clients, store, node: engine.node().clone() };
        tokio::spawn(deliverer.run(engine.subscribe(), stop.clone()));
        Ok(Webhooks { stop })
    }
}

/// This process's deliverer: claims what is due, sends it, and sleeps until the next is due,
/// a task's change may have brought one, or the backstop.
struct Deliverer {
    hooks: Vec<Webhook>,
    clients: HashMap<String, HttpClient>,
    store: Arc<dyn DeliveryStore>,
    node: NodeId,
}

impl Deliverer {
    async fn run(self, mut feed: tokio::sync::broadcast::Receiver<Change>, stop: CancellationToken) {
        // A claim outlives the sends of its batch: each delivery's receivers one after the
        // other, each bounded by the POST timeout.
        let lease = Duration::from_secs(30) + POST_TIMEOUT * u32::try_from(self.hooks.len()).unwrap_or(u32::MAX);
        loop {
            let wait = match self.store.next_delivery_at().await {
                Ok(Some(at)) if at.0 <= now_ms() => {
                    self.claim_and_send(lease).await;
                    continue;
                }
                Ok(Some(at)) => Duration::from_millis(u64::try_from(at.0.saturating_sub(now_ms())).unwrap_or(0)).min(BACKSTOP),
                Ok(None) => BACKSTOP,
                Err(err) => {
                    tracing::warn!(error = %err, "could not read the webhook deliveries; trying again");
                    BACKSTOP
                }
            };
            let sleep = tokio::time::sleep(wait);
            tokio::pin!(sleep);
            // Woken by a change that is an event (its delivery committed with it), by the
            // next delivery's time, or by the backstop.
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = &mut sleep => break,
                    change = feed.recv() => match change {
                        Ok(Change::Task(record)) if record.outcome() != Status::Working => break,
                        Ok(_) => {}
                        Err(RecvError::Lagged(_)) => break,
                        Err(RecvError::Closed) => return,
                    },
                }
            }
        }
    }

    /// One claim of what is due, sent concurrently.
    async fn claim_and_send(&self, lease: Duration) {
        match self.store.claim_deliveries(&self.node, Timestamp(now_ms()), lease, BATCH).await {
            Ok(claimed) => {
                join_all(claimed.iter().map(|delivery| self.deliver(delivery))).await;
            }
            Err(err) => {
                tracing::warn!(error = %err, "could not claim webhook deliveries; trying again");
                tokio::time::sleep(FIRST_BACKOFF).await;
            }
        }
    }

    /// One attempt of `delivery`: POSTed to each webhook that asked for its event and has
    /// not answered it yet; finished when all have (or it is given up), otherwise retried with
    /// backoff, with the ones that answered recorded.
    async fn deliver(&self, delivery: &Delivery) {
        let event = delivery.event.as_str();
        let body = json!({"event": event, "task": described(delivery)}).to_string();
        let mut done = delivery.done.clone();
        let mut failure: Option<String> = None;
        for hook in self.hooks.iter().filter(|hook| hook.events.iter().any(|wanted| wanted == event)) {
            if done.contains(&hook.url) {
                continue;
            }
            let Some(client) = self.clients.get(&hook.url) else { continue };
            match post(client, hook, delivery.id, event, &body).await {
                Ok(()) => {
                    tracing::debug!(url = %hook.url, event, delivery = delivery.id, "webhook delivered");
                    done.push(hook.url.clone());
                }
                Err(err) => failure = Some(format!("{}: {err}", hook.url)),
            }
        }
        let recorded = match failure {
            None => self.store.finish_delivery(delivery.id, &self.node).await,
            Some(err) if delivery.attempts + 1 >= MAX_ATTEMPTS => {
                tracing::error!(delivery = delivery.id, error = %err, "webhook delivery given up");
                self.store.finish_delivery(delivery.id, &self.node).await
            }
            Some(err) => {
                let backoff = FIRST_BACKOFF.saturating_mul(1 << delivery.attempts.min(16)).min(MAX_BACKOFF);
                tracing::warn!(delivery = delivery.id, error = %err, retry_in = ?backoff, "webhook delivery failed");
                let next = Timestamp(now_ms()).plus_ms(u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX));
                self.store.retry_delivery(delivery.id, &self.node, &done, next, &err).await
            }
        };
        if let Err(err) = recorded {
            tracing::error!(delivery = delivery.id, error = %err, "could not record a webhook delivery's attempt");
        }
    }
}

/// The task as a delivery describes it: as stored, if the event's write is its last;
/// else the stored task with the status, message and time of the event, and no result; or,
/// purged, what the delivery kept.
fn described(delivery: &Delivery) -> Value {
    let event = delivery.event.as_str();
    let Some(task) = &delivery.record else {
        return json!({
            "id": delivery.task.as_str(),
            "status": event,
            "statusMessage": delivery.message,
            "updatedAt": delivery.at.0,
        });
    };
    if task.version == delivery.version {
        return task_state(task);
    }
    let mut state = task_state(task);
    if let Value::Object(map) = &mut state {
        map.remove("result");
        map.remove("error");
        map.insert("status".to_owned(), json!(event));
        map.insert("statusMessage".to_owned(), json!(delivery.message));
        map.insert("updatedAt".to_owned(), json!(delivery.at.0));
    }
    state
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

/// One POST of `body` (event `event`, delivery `id`) to `hook`, signed now.
async fn post(client: &HttpClient, hook: &Webhook, id: i64, event: &str, body: &str) -> Result<(), String> {
    let timestamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs());
    let request = Request::post(hook.url.as_str())
        .header("content-type", "application/json")
        .header("user-agent", concat!("mcp-tasks/", env!("CARGO_PKG_VERSION")))
        .header("x-mcp-tasks-event", event)
        .header("x-mcp-tasks-delivery", id.to_string())
        .header(SIGNATURE_HEADER, signature(&hook.secret, timestamp, body))
        .body(Full::new(Bytes::from(body.to_owned())))
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
