//! A tool that records the order in which its calls start and finishes each call only when
//! told, and an engine over a fresh memory store (`mcp_tasks_testkit::MemoryStore`) that runs it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_engine::{
    Context, Engine, FakeClock, Handler, NewTask, Outcome, Policy, Principal, TaskId, TaskRecord,
    Timestamp, ToolRuntime,
};
use mcp_tasks_testkit::MemoryStore;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio::time::timeout;

/// The tool's name.
pub(crate) const TOOL: &str = "recorded";

const WAIT: Duration = Duration::from_secs(10);

/// One `Notify` per call number, created by whichever side comes first.
#[derive(Clone, Default)]
pub(crate) struct Releases(Arc<Mutex<HashMap<u64, Arc<Notify>>>>);

impl Releases {
    fn of(&self, n: u64) -> Arc<Notify> {
        Arc::clone(self.0.lock().unwrap().entry(n).or_default())
    }

    /// Lets call `n` finish (now, or as soon as it starts).
    pub(crate) fn release(&self, n: u64) {
        self.of(n).notify_one();
    }
}

/// Sends its argument `n` when a call starts, then waits for [`Releases::release`]`(n)` or
/// cancellation.
struct Recorder {
    started: mpsc::UnboundedSender<u64>,
    releases: Releases,
}

#[async_trait]
impl Handler for Recorder {
    async fn call(&self, arguments: Value, ctx: Context) -> Outcome {
        let n = arguments["n"].as_u64().unwrap();
        let release = self.releases.of(n);
        let _ = self.started.send(n);
        tokio::select! {
            _ = release.notified() => {}
            _ = ctx.cancelled() => return Outcome::Error(crate::stopped()),
        }
        Outcome::Result(json!({"content": [{"type": "text", "text": format!("call {n} done")}]}))
    }
}

pub(crate) struct Recording {
    pub(crate) engine: Engine,
    /// The `n` of each call, in the order the calls started.
    pub(crate) started: mpsc::UnboundedReceiver<u64>,
    pub(crate) releases: Releases,
}

/// An engine with `policy` and the recorded tool, set up by `runtime`.
pub(crate) fn recording(policy: Policy, runtime: impl FnOnce(ToolRuntime) -> ToolRuntime) -> Recording {
    let store = MemoryStore::new();
    let clock = FakeClock::new(Timestamp(1_764_000_000_000));
    let engine = Engine::new(Arc::new(store), Arc::new(clock), policy);
    let (tx, started) = mpsc::unbounded_channel();
    let releases = Releases::default();
    engine.register(TOOL, runtime(ToolRuntime::new(Recorder { started: tx, releases: releases.clone() })));
    Recording { engine, started, releases }
}

impl Recording {
    /// Creates and starts call `n` of `owner` as a task.
    pub(crate) async fn start(&self, owner: &str, n: u64) -> TaskRecord {
        let task = self.engine.create(new_task(owner, n)).await.unwrap();
        self.engine.start(&task).unwrap();
        task
    }

    /// The next call to start.
    pub(crate) async fn next_started(&mut self) -> u64 {
        timeout(WAIT, self.started.recv()).await.expect("a call starts in time").unwrap()
    }

    /// Waits until the task's status message satisfies `pred`, and returns it.
    pub(crate) async fn message_until(&self, owner: &str, id: &TaskId, pred: impl Fn(&str) -> bool) -> String {
        let owner = Principal::new(owner);
        let mut feed = self.engine.subscribe();
        loop {
            let task = self.engine.get(&owner, id).await.unwrap();
            if let Some(message) = task.status_message.filter(|message| pred(message)) {
                return message;
            }
            timeout(WAIT, feed.recv()).await.expect("the task changes in time").unwrap();
        }
    }

    /// Waits until the task is terminal.
    pub(crate) async fn finished(&self, owner: &str, id: &TaskId) -> TaskRecord {
        timeout(WAIT, self.engine.wait_terminal(&Principal::new(owner), id)).await.unwrap().unwrap()
    }
}

/// A task of `owner` for call `n` of the recorded tool.
pub(crate) fn new_task(owner: &str, n: u64) -> NewTask {
    NewTask {
        trace: None,
        origin: None,
        owner: Principal::new(owner),
        tool: TOOL.into(),
        arguments: json!({"n": n}),
        requested_ttl_ms: None,
        error_result_fails: true,
        input_kinds: vec![],
    }
}
