//! [`Metrics`]: the numbers an operator alerts on, rendered in the Prometheus text format
//! (version 0.0.4) at `/metrics` by the HTTP transport.
//!
//! Where each number comes from:
//! - tasks created: counted by the `ops` that create them ([`Metrics::task_created`]),
//!   the only place that knows both the task and the era of the request that made it;
//! - tasks finished, running, waiting for input, and their durations: observed on the
//!   engine's change feed ([`mcp_tasks_engine::Engine::subscribe`]) by a task started with
//!   the server. A small map (id → tool, era, status) holds the tasks not yet finished, at
//!   most [`MAX_LIVE`]; a task ends in `finished_total` once, when its first terminal record
//!   is seen for a task of that map. A task this process did not see created (one of an
//!   earlier run, started again at recovery) carries `era="unknown"`;
//! - HTTP requests: counted by a layer of the HTTP router; open sessions read at each
//!   scrape; open SSE streams by a guard each stream holds ([`OpenStream`]);
//! - tasks resolved at recovery: [`Metrics::record_recovery`], called by whoever recovered;
//! - the store's commits (latency, group size, failures): [`Metrics::record_store_commit`],
//!   called by the store's writer (`mcp-tasks serve` wires the SQLite store's to it);
//! - the delivery of a result to a `tasks/result` that waited for it: timed by the `ops`
//!   that answer it ([`Metrics::result_delivered`]), from the instant this node's write of
//!   the task's terminal state returned from the store
//!   ([`mcp_tasks_engine::Engine::committed_at`]).
//!
//! The engine stays protocol-free: the era is a label added here, never stored with a task.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use mcp_tasks_engine::{Change, Engine, FastMap, FastSet, Recovery, Status, TaskId, TaskRecord};
use mcp_tasks_protocol::era::Era;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::sync::broadcast::error::RecvError;

/// The `Content-Type` of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// The most unfinished tasks tracked for the running and input-required gauges; past it a
/// new task is still counted as created, but not as running, nor when it finishes. The
/// engine's `max_running` (64 by default) keeps the real number far below.
pub const MAX_LIVE: usize = 65_536;

/// The bounds of `mcp_tasks_result_delivery_seconds`, in seconds: fine around the 2 ms
/// target (issue 18), up to a second.
const DELIVERY_BUCKETS: [f64; 12] = [0.000_1, 0.000_25, 0.000_5, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0];

/// The `era` label of a task this process did not see created.
const UNKNOWN_ERA: &str = "unknown";

/// Labels `{tool, era}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolEra {
    tool: String,
    era: String,
}

/// Labels `{tool, era, status}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Finished {
    tool: String,
    era: String,
    status: String,
}

/// Labels `{tool}`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Tool {
    tool: String,
}

/// Labels `{method, status}` of an HTTP request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Http {
    method: String,
    status: String,
}

/// Labels `{era}` of an open stream.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StreamEra {
    era: String,
}

/// Labels `{outcome}` of a task resolved at recovery.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: String,
}

/// A task created and not yet seen finished.
struct Live {
    tool: String,
    era: &'static str,
    status: Status,
}

/// An open SSE stream, counted in `mcp_tasks_http_streams_open` until dropped.
pub struct OpenStream(Gauge);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The server's metrics: a cheap, cloneable handle.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Shared>,
}

struct Shared {
    registry: Registry,
    created: Family<ToolEra, Counter>,
    finished: Family<Finished, Counter>,
    running: Family<Tool, Gauge>,
    input_required: Family<Tool, Gauge>,
    duration: Family<Tool, Histogram>,
    http_requests: Family<Http, Counter>,
    sessions: Gauge,
    streams: Family<StreamEra, Gauge>,
    recovered: Family<Outcome, Counter>,
    lagged: Counter,
    commit_seconds: Histogram,
    commit_writes: Histogram,
    commit_failures: Counter,
    result_delivery: Histogram,
    /// Unfinished tasks, and every tool seen (so that its gauges read 0 rather than
    /// vanish). Held through a render, so that two scrapes do not interleave their gauges.
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    live: FastMap<TaskId, Live>,
    tools: FastSet<String>,
    handles: Handles,
}

/// The counters and histograms of the label sets counted so far, found again by borrowed
/// labels (foldhash, no allocation) instead of through their family's `get_or_create`, which
/// builds owned label strings and hashes them with SipHash: five times per task lifecycle,
/// 2 % of its instructions (docs/benchmarks/13-thirteenth-round.md). A handle counts into the
/// family's own series (prometheus-client's metrics are shared by `clone`); the families
/// of these never drop a series (only the gauges are cleared, at each scrape). Tools and eras
/// are few: the server's tools, two revisions.
#[derive(Default)]
struct Handles {
    http: FastMap<(&'static str, u16), Counter>,
    created: FastMap<String, Vec<(&'static str, Counter)>>,
    finished: FastMap<String, Vec<(EraStatus, Counter)>>,
    duration: FastMap<String, Histogram>,
}

/// The `{era, status}` of a finished task's counter.
type EraStatus = (&'static str, &'static str);

/// `then` of the entry of `tool` in `map`, made by `make` the first time; the tool's name is
/// copied only then.
fn of_tool<V, R>(map: &mut FastMap<String, V>, tool: &str, make: impl FnOnce() -> V, then: impl FnOnce(&mut V) -> R) -> R {
    if let Some(value) = map.get_mut(tool) {
        return then(value);
    }
    then(map.entry(tool.to_owned()).or_insert_with(make))
}

/// The handle under `key` in the small list `list`, made by `make` the first time.
fn handle<K: PartialEq + Copy, M: Clone>(list: &mut Vec<(K, M)>, key: K, make: impl FnOnce() -> M) -> M {
    if let Some((_, metric)) = list.iter().find(|(k, _)| *k == key) {
        return metric.clone();
    }
    let metric = make();
    list.push((key, metric.clone()));
    metric
}

/// Task durations, in seconds: 10 ms × 4ⁿ up to about 2.9 hours.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 4.0, 11))
}

impl Shared {
    /// Registers every metric in the registry, with its name and help text.
    fn register(&mut self) {
        let registry = &mut self.registry;
        registry.register(
            "store_commit_seconds",
            "Time the task store's writer took per transaction, the fsync included (each holds one group of writes)",
            self.commit_seconds.clone(),
        );
        registry.register(
            "store_commit_writes",
            "Writes committed together in one transaction of the task store (group commit size)",
            self.commit_writes.clone(),
        );
        registry.register(
            "store_commit_failures",
            "Transactions of the task store that did not commit (full disk, I/O error): none of their writes stands",
            self.commit_failures.clone(),
        );
        registry.register(
            "result_delivery_seconds",
            "Time from the commit of a task's terminal state to the answer of a tasks/result that was waiting for it",
            self.result_delivery.clone(),
        );
        registry.register("tasks_created", "Tasks created, by tool and era (protocol revision)", self.created.clone());
        registry.register(
            "tasks_finished",
            "Tasks that reached a terminal status (completed, failed, cancelled), by tool and era",
            self.finished.clone(),
        );
        registry.register("tasks_running", "Tasks working now, by tool", self.running.clone());
        registry.register("tasks_input_required", "Tasks waiting for an answer from their requestor, by tool", self.input_required.clone());
        registry.register(
            "task_duration_seconds",
            "Time from a task's creation to its terminal status, by tool",
            self.duration.clone(),
        );
        registry.register("http_requests", "HTTP requests answered, by method and status code", self.http_requests.clone());
        registry.register("http_sessions_open", "Open 2025-11-25 HTTP sessions (Mcp-Session-Id)", self.sessions.clone());
        registry.register("http_streams_open", "Open SSE response streams, by era", self.streams.clone());
        registry.register(
            "tasks_recovered",
            "Unfinished tasks of an earlier run resolved at start-up, by outcome (failed, retried, skipped)",
            self.recovered.clone(),
        );
        registry.register(
            "metrics_feed_lagged",
            "Task changes the metrics missed because they fell behind the engine's feed",
            self.lagged.clone(),
        );
    }
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// Fresh metrics, all zero, registered under the `mcp_tasks_` prefix.
    pub fn new() -> Metrics {
        let mut shared = Shared {
            registry: Registry::with_prefix("mcp_tasks"),
            created: Family::default(),
            finished: Family::default(),
            running: Family::default(),
            input_required: Family::default(),
            duration: Family::new_with_constructor(duration_histogram as fn() -> Histogram),
            http_requests: Family::default(),
            sessions: Gauge::default(),
            streams: Family::default(),
            recovered: Family::default(),
            lagged: Counter::default(),
            // 50 µs × 2ⁿ up to about 1.6 s: an fsync'd commit on a local disk is well under 1 ms.
            commit_seconds: Histogram::new(exponential_buckets(0.000_05, 2.0, 16)),
            // 1, 2, 4 … 512 writes: the writer takes at most 512 at once.
            commit_writes: Histogram::new(exponential_buckets(1.0, 2.0, 10)),
            commit_failures: Counter::default(),
            result_delivery: Histogram::new(DELIVERY_BUCKETS),
            state: Mutex::new(State::default()),
        };
        shared.register();
        Metrics { inner: Arc::new(shared) }
    }

    /// Records one transaction of the task store: how long it took (`BEGIN` to the end of
    /// `COMMIT`, the fsync included), how many writes it held, and whether it committed
    /// (`mcp_tasks_store_commit_seconds`, `mcp_tasks_store_commit_writes`,
    /// `mcp_tasks_store_commit_failures_total`).
    pub fn record_store_commit(&self, elapsed: std::time::Duration, writes: usize, committed: bool) {
        self.inner.commit_seconds.observe(elapsed.as_secs_f64());
        #[allow(clippy::cast_precision_loss)] // at most 512
        self.inner.commit_writes.observe(writes as f64);
        if !committed {
            self.inner.commit_failures.inc();
        }
    }

    /// Records that a `tasks/result` which waited for its task answers now, `since_commit`
    /// after this node's write of the task's terminal state returned from the store
    /// (`mcp_tasks_result_delivery_seconds`).
    pub(crate) fn result_delivered(&self, since_commit: Duration) {
        self.inner.result_delivery.observe(since_commit.as_secs_f64());
    }

    /// Counts what [`Engine::recover`] did (`mcp_tasks_tasks_recovered_total{outcome}`).
    pub fn record_recovery(&self, recovery: &Recovery) {
        let counts = [("failed", recovery.failed), ("retried", recovery.retried), ("skipped", recovery.skipped)];
        for (outcome, count) in counts {
            let counter = self.inner.recovered.get_or_create(&Outcome { outcome: outcome.to_owned() });
            counter.inc_by(u64::try_from(count).unwrap_or(u64::MAX));
        }
    }

    /// Counts a task created by a request of `era` and tracks it until it finishes.
    pub(crate) fn task_created(&self, record: &TaskRecord, era: Era) {
        let era = era.revision();
        let mut state = self.state();
        let make = || self.inner.created.get_or_create(&ToolEra { tool: record.tool.clone(), era: era.to_owned() }).clone();
        of_tool(&mut state.handles.created, &record.tool, Vec::new, |eras| handle(eras, era, make)).inc();
        state.tools.insert(record.tool.clone());
        // Overwrites what the feed may have put there first (it saw the insert before this
        // call, without the era); the task's work has not started, so nothing else has.
        if state.live.len() < MAX_LIVE || state.live.contains_key(&record.id) {
            state.live.insert(record.id.clone(), Live { tool: record.tool.clone(), era, status: record.status() });
        }
    }

    /// Counts one HTTP request answered with `status`.
    pub fn http_request(&self, method: &str, status: u16) {
        let method = match method {
            "GET" => "GET",
            "POST" => "POST",
            "DELETE" => "DELETE",
            "HEAD" => "HEAD",
            "OPTIONS" => "OPTIONS",
            "PUT" => "PUT",
            "PATCH" => "PATCH",
            _ => "other",
        };
        let counter = {
            let mut state = self.state();
            let family = &self.inner.http_requests;
            state
                .handles
                .http
                .entry((method, status))
                .or_insert_with(|| family.get_or_create(&Http { method: method.to_owned(), status: status.to_string() }).clone())
                .clone()
        };
        counter.inc();
    }

    /// Counts an SSE stream of `era` as open until the returned guard is dropped.
    pub fn stream_opened(&self, era: Era) -> OpenStream {
        let gauge = self.inner.streams.get_or_create(&StreamEra { era: era.revision().to_owned() }).clone();
        gauge.inc();
        OpenStream(gauge)
    }

    /// The metrics in the Prometheus text format, with `tools` (the server's) shown at 0
    /// in the gauges when none of their tasks is running, and `sessions` open HTTP sessions.
    pub fn render(&self, tools: &[String], sessions: usize) -> String {
        let state = self.state();
        self.inner.running.clear();
        self.inner.input_required.clear();
        for tool in tools.iter().chain(state.tools.iter()) {
            let labels = Tool { tool: tool.clone() };
            self.inner.running.get_or_create(&labels).set(0);
            self.inner.input_required.get_or_create(&labels).set(0);
        }
        for live in state.live.values() {
            let labels = Tool { tool: live.tool.clone() };
            let gauge = match live.status {
                Status::Working => &self.inner.running,
                Status::InputRequired => &self.inner.input_required,
                Status::Completed | Status::Failed | Status::Cancelled => continue,
            };
            gauge.get_or_create(&labels).inc();
        }
        self.inner.sessions.set(i64::try_from(sessions).unwrap_or(i64::MAX));
        let mut text = String::new();
        if prometheus_text::encode(&mut text, &self.inner.registry).is_err() {
            tracing::error!("could not encode the metrics");
        }
        text
    }

    /// Starts observing `engine`'s change feed, if called inside a Tokio runtime (a server
    /// built outside one counts creations only). The observer ends when these metrics are
    /// dropped or the engine is.
    pub(crate) fn observe(&self, engine: &Engine) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("server built outside a Tokio runtime: /metrics will not see tasks finish");
            return;
        };
        let mut changes = engine.subscribe();
        let metrics = Arc::downgrade(&self.inner);
        runtime.spawn(async move {
            loop {
                let change = changes.recv().await;
                let Some(inner) = Weak::upgrade(&metrics) else { return };
                let metrics = Metrics { inner };
                match change {
                    Ok(Change::Task(record)) => metrics.task_changed(&record),
                    Ok(Change::Progress { .. }) => {}
                    Err(RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "the metrics fell behind the engine's change feed");
                        metrics.inner.lagged.inc_by(missed);
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }

    /// One record from the feed: a tracked task changes status, or finishes (counted once).
    fn task_changed(&self, record: &TaskRecord) {
        // A tool's error counts as failed in every era (a 2026-07-28 one is `completed` on the wire).
        let status = match record.outcome() {
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
            status @ (Status::Working | Status::InputRequired) => {
                let mut state = self.state();
                if let Some(live) = state.live.get_mut(&record.id) {
                    live.status = status;
                } else if state.live.len() < MAX_LIVE {
                    state.tools.insert(record.tool.clone());
                    state.live.insert(record.id.clone(), Live { tool: record.tool.clone(), era: UNKNOWN_ERA, status });
                }
                return;
            }
        };
        // A terminal record of a task not tracked: resolved at recovery, or seen already.
        let mut state = self.state();
        let Some(live) = state.live.remove(&record.id) else { return };
        let handles = &mut state.handles;
        let counter = of_tool(&mut handles.finished, &live.tool, Vec::new, |finished| {
            handle(finished, (live.era, status), || {
                let labels = Finished { tool: live.tool.clone(), era: live.era.to_owned(), status: status.to_owned() };
                self.inner.finished.get_or_create(&labels).clone()
            })
        });
        let make = || self.inner.duration.get_or_create(&Tool { tool: live.tool.clone() }).clone();
        let duration = of_tool(&mut handles.duration, &live.tool, make, |duration| duration.clone());
        drop(state);
        counter.inc();
        let millis = record.updated_at.0.saturating_sub(record.created_at.0).max(0);
        #[allow(clippy::cast_precision_loss)] // milliseconds: exact below 2⁵³
        let seconds = millis as f64 / 1000.0;
        duration.observe(seconds);
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_is_counted_by_outcome_and_adds_up_across_calls() {
        let metrics = Metrics::new();
        metrics.record_recovery(&Recovery { failed: 2, retried: 1, skipped: 0, cancelled: 0, started: 0 });
        metrics.record_recovery(&Recovery { failed: 1, retried: 0, skipped: 3, cancelled: 0, started: 0 });
        let text = metrics.render(&[], 0);
        for line in [
            "mcp_tasks_tasks_recovered_total{outcome=\"failed\"} 3",
            "mcp_tasks_tasks_recovered_total{outcome=\"retried\"} 1",
            "mcp_tasks_tasks_recovered_total{outcome=\"skipped\"} 3",
            "# TYPE mcp_tasks_tasks_recovered_total counter",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
        }
    }

    #[test]
    fn http_methods_outside_the_known_set_share_one_label() {
        let metrics = Metrics::new();
        metrics.http_request("BREW", 405);
        metrics.http_request("COFFEE", 405);
        let text = metrics.render(&[], 0);
        assert!(text.contains("mcp_tasks_http_requests_total{method=\"other\",status=\"405\"} 2"), "{text}");
        assert!(!text.contains("BREW"), "{text}");
    }

    /// Counting again through a kept handle adds to the family's own series: the rendered
    /// counts are those of every call, per label set, across scrapes.
    #[test]
    fn counts_through_kept_handles_add_up_per_label_set_across_scrapes() {
        use mcp_tasks_engine::{TaskState, Timestamp};
        let metrics = Metrics::new();
        let task = |tool: &str| {
            let mut task = mcp_tasks_testkit::store_suite::sample_task("alice");
            task.tool = tool.to_owned();
            task
        };
        let finish = |mut task: TaskRecord, state: TaskState| {
            task.updated_at = Timestamp(task.created_at.0 + 20);
            task.state = state;
            metrics.task_changed(&task);
        };
        for round in 0..2 {
            let (a1, a2, b) = (task("a"), task("a"), task("b"));
            metrics.task_created(&a1, Era::Legacy);
            metrics.task_created(&a2, Era::Legacy);
            metrics.task_created(&b, Era::Modern);
            finish(a1, TaskState::Cancelled);
            finish(a2, TaskState::Completed { result: serde_json::json!({}) });
            finish(b, TaskState::Cancelled);
            metrics.http_request("POST", 200);
            metrics.http_request("POST", 200);
            metrics.http_request("GET", 200);
            let n = round + 1;
            let text = metrics.render(&[], 0);
            for line in [
                format!("mcp_tasks_tasks_created_total{{tool=\"a\",era=\"2025-11-25\"}} {}", 2 * n),
                format!("mcp_tasks_tasks_created_total{{tool=\"b\",era=\"2026-07-28\"}} {n}"),
                format!("mcp_tasks_tasks_finished_total{{tool=\"a\",era=\"2025-11-25\",status=\"cancelled\"}} {n}"),
                format!("mcp_tasks_tasks_finished_total{{tool=\"a\",era=\"2025-11-25\",status=\"completed\"}} {n}"),
                format!("mcp_tasks_tasks_finished_total{{tool=\"b\",era=\"2026-07-28\",status=\"cancelled\"}} {n}"),
                format!("mcp_tasks_task_duration_seconds_count{{tool=\"a\"}} {}", 2 * n),
                format!("mcp_tasks_http_requests_total{{method=\"POST\",status=\"200\"}} {}", 2 * n),
                format!("mcp_tasks_http_requests_total{{method=\"GET\",status=\"200\"}} {n}"),
            ] {
                assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
            }
        }
    }
}
