//! Restart recovery writes through the transition function (`Event::Restart`) and the
//! compare-and-set loop: a task whose write keeps conflicting is skipped, the rest are
//! still recovered.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mcp_tasks_engine::{
    Answer, Lease, Engine, FakeClock, IdempotencyKey, Inserted, KeptGroup, ListQuery, Outcome, Policy, Principal, ProcessGroup, RestartPolicy, Status, StoreError, TaskId, TaskRecord,
    TaskState, TaskStore, Timestamp, ToolRuntime, Update, Version, WorkError,
    ClaimStore, RecordStore, SessionStore, ViewStore, WorkStore,
};
use mcp_tasks_testkit::MemoryStore;
use serde_json::json;


/// The memory store, except that every write of one chosen task conflicts, as if another
/// process wrote it each time just before.
struct Conflicting {
    inner: MemoryStore,
    doomed: Mutex<HashSet<TaskId>>,
}

#[async_trait]
impl RecordStore for Conflicting {
    async fn insert(&self, task: &TaskRecord) -> Result<Inserted, StoreError> {
        self.inner.insert(task).await
    }

    async fn find_by_key(
        &self,
        owner: &Principal,
        key: &IdempotencyKey,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.find_by_key(owner, key, now).await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.get(id).await
    }

    async fn replace(&self, id: &TaskId, expected: Version, update: &Update) -> Result<TaskRecord, StoreError> {
        if self.doomed.lock().unwrap().contains(id) {
            return Err(StoreError::Conflict(id.clone()));
        }
        self.inner.replace(id, expected, update).await
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.list(query).await
    }

    async fn count(&self, owner: &Principal) -> Result<u64, StoreError> {
        self.inner.count(owner).await
    }

    async fn unfinished(&self, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.unfinished(limit).await
    }

    async fn expired(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.expired(now, limit).await
    }

    async fn purge(&self, now: Timestamp, limit: u32) -> Result<u64, StoreError> {
        self.inner.purge(now, limit).await
    }

    async fn request_cancel(&self, id: &TaskId) -> Result<bool, StoreError> {
        self.inner.request_cancel(id).await
    }

    async fn cancel_requested(&self, id: &TaskId) -> Result<bool, StoreError> {
        self.inner.cancel_requested(id).await
    }

    async fn answer(
        &self,
        id: &TaskId,
        expected: Version,
        update: &Update,
        key: &str,
        answer: &Answer,
    ) -> Result<TaskRecord, StoreError> {
        if self.doomed.lock().unwrap().contains(id) {
            return Err(StoreError::Conflict(id.clone()));
        }
        self.inner.answer(id, expected, update, key, answer).await
    }

    async fn take_answer(&self, id: &TaskId, key: &str) -> Result<Option<Answer>, StoreError> {
        self.inner.take_answer(id, key).await
    }

    fn changes(&self) -> tokio::sync::broadcast::Receiver<Arc<TaskRecord>> {
        self.inner.changes()
    }
}

#[async_trait]
impl ClaimStore for Conflicting {
    fn shared(&self) -> bool {
        self.inner.shared()
    }

    async fn insert_claimed(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&mcp_tasks_engine::Origin>,
    ) -> Result<Inserted, StoreError> {
        self.inner.insert_claimed(task, lease, max_retained, origin).await
    }

    async fn claim(
        &self,
        id: &TaskId,
        attempt: u32,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError> {
        // A take-over is a write too: another process got there first.
        if self.doomed.lock().unwrap().contains(id) {
            return Ok(None);
        }
        self.inner.claim(id, attempt, lease, now).await
    }

    async fn renew(&self, lease: &Lease, now: Timestamp) -> Result<Vec<TaskId>, StoreError> {
        self.inner.renew(lease, now).await
    }

    async fn lapsed(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.lapsed(now, limit).await
    }

    async fn take_slot(&self, tool: &str, size: u32, id: &TaskId, lease: &Lease, now: Timestamp) -> Result<bool, StoreError> {
        self.inner.take_slot(tool, size, id, lease, now).await
    }

    async fn release_slot(&self, tool: &str, id: &TaskId) -> Result<(), StoreError> {
        self.inner.release_slot(tool, id).await
    }

    async fn take_place(
        &self,
        holder: &mcp_tasks_engine::PlaceHolder,
        owner: &Principal,
        limits: &mcp_tasks_engine::RunningLimits,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<mcp_tasks_engine::Place, StoreError> {
        self.inner.take_place(holder, owner, limits, lease, now).await
    }

    async fn release_place(&self, holder: &mcp_tasks_engine::PlaceHolder) -> Result<(), StoreError> {
        self.inner.release_place(holder).await
    }
}

#[async_trait]
impl ViewStore for Conflicting {
    async fn browse(
        &self,
        query: &mcp_tasks_engine::BrowseQuery,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.browse(query).await
    }

    async fn status_counts(&self, owner: &Principal) -> Result<Vec<(Status, u64)>, StoreError> {
        self.inner.status_counts(owner).await
    }

    async fn history(
        &self,
        id: &TaskId,
    ) -> Result<Vec<mcp_tasks_engine::HistoryEntry>, StoreError> {
        self.inner.history(id).await
    }

    async fn set_origin(
        &self,
        id: &TaskId,
        origin: &mcp_tasks_engine::Origin,
    ) -> Result<(), StoreError> {
        self.inner.set_origin(id, origin).await
    }

    async fn origin(&self, id: &TaskId) -> Result<Option<mcp_tasks_engine::Origin>, StoreError> {
        self.inner.origin(id).await
    }
}

#[async_trait]
impl WorkStore for Conflicting {
    async fn set_process_group(&self, id: &TaskId, group: &ProcessGroup) -> Result<(), StoreError> {
        self.inner.set_process_group(id, group).await
    }

    async fn process_group(&self, id: &TaskId) -> Result<Option<ProcessGroup>, StoreError> {
        self.inner.process_group(id).await
    }

    async fn set_kept_group(&self, key: &str, kept: Option<&KeptGroup>) -> Result<(), StoreError> {
        self.inner.set_kept_group(key, kept).await
    }

    async fn kept_group(&self, key: &str) -> Result<Option<KeptGroup>, StoreError> {
        self.inner.kept_group(key).await
    }

    async fn set_checkpoint(&self, id: &TaskId, attempt: u32, checkpoint: &serde_json::Value) -> Result<bool, StoreError> {
        self.inner.set_checkpoint(id, attempt, checkpoint).await
    }

    async fn checkpoint(&self, id: &TaskId) -> Result<Option<serde_json::Value>, StoreError> {
        self.inner.checkpoint(id).await
    }

    async fn append_events(
        &self,
        id: &TaskId,
        attempt: u32,
        events: &[mcp_tasks_engine::NewEvent],
        limits: mcp_tasks_engine::EventLimits,
    ) -> Result<Option<u64>, StoreError> {
        self.inner.append_events(id, attempt, events, limits).await
    }

    async fn logged_events(&self, id: &TaskId, after: u64, limit: u32) -> Result<mcp_tasks_engine::EventPage, StoreError> {
        self.inner.logged_events(id, after, limit).await
    }
}

#[async_trait]
impl SessionStore for Conflicting {
    async fn put_session(&self, session: &mcp_tasks_engine::SessionRecord) -> Result<(), StoreError> {
        self.inner.put_session(session).await
    }

    async fn session(&self, id: &str, owner: &Principal) -> Result<Option<mcp_tasks_engine::SessionRecord>, StoreError> {
        self.inner.session(id, owner).await
    }

    async fn add_session_task(&self, id: &str, task: &TaskId) -> Result<(), StoreError> {
        self.inner.add_session_task(id, task).await
    }

    async fn touch_sessions(&self, ids: &[String], now: Timestamp) -> Result<Vec<String>, StoreError> {
        self.inner.touch_sessions(ids, now).await
    }

    async fn end_session(&self, id: &str) -> Result<bool, StoreError> {
        self.inner.end_session(id).await
    }

    async fn prune_sessions(&self, idle_before: Timestamp, limit: u32) -> Result<u64, StoreError> {
        self.inner.prune_sessions(idle_before, limit).await
    }
}

/// A handler that never finishes (the work of a process that is about to "die").
struct Forever;

#[async_trait]
impl mcp_tasks_engine::Handler for Forever {
    async fn call(&self, _arguments: serde_json::Value, ctx: mcp_tasks_engine::Context) -> Outcome {
        ctx.cancelled().await;
        Outcome::Result(json!({"content": []}))
    }
}

fn engine() -> (Engine, Arc<Conflicting>) {
    let inner = MemoryStore::new();
    let store = Arc::new(Conflicting { inner, doomed: Mutex::default() });
    let clock = FakeClock::new(Timestamp(1_764_000_000_000));
    let engine = Engine::new(Arc::clone(&store) as Arc<dyn TaskStore>, Arc::new(clock), Policy::default());
    engine.register("retried", ToolRuntime::new(Forever).on_restart(RestartPolicy::Retry));
    engine.register("failed", ToolRuntime::new(Forever).on_restart(RestartPolicy::Fail));
    (engine, store)
}

fn new_task(tool: &str) -> mcp_tasks_engine::NewTask {
    mcp_tasks_engine::NewTask {
        trace: None,
        origin: None,
        owner: Principal::new("a"),
        tool: tool.into(),
        arguments: json!({}),
        requested_ttl_ms: None,
        error_result_fails: true,
        input_kinds: vec![],
    }
}

#[tokio::test]
async fn a_task_whose_recovery_keeps_conflicting_is_skipped_and_the_others_are_recovered() {
    let (engine, store) = engine();
    let owner = Principal::new("a");
    let doomed_retry = engine.create(new_task("retried")).await.unwrap();
    let retried = engine.create(new_task("retried")).await.unwrap();
    let doomed_fail = engine.create(new_task("failed")).await.unwrap();
    let failed = engine.create(new_task("failed")).await.unwrap();

    store.doomed.lock().unwrap().extend([doomed_retry.id.clone(), doomed_fail.id.clone()]);
    let first = engine.recover().await.unwrap();
    assert_eq!((first.retried, first.failed, first.skipped), (1, 1, 2), "two skipped, the others recovered");
    for skipped in [&doomed_retry, &doomed_fail] {
        let stored = engine.get(&owner, &skipped.id).await.unwrap();
        assert_eq!((stored.status(), stored.attempt, stored.version), (Status::Working, 1, skipped.version), "left as it was");
    }
    let restarted = engine.get(&owner, &retried.id).await.unwrap();
    assert_eq!((restarted.status(), restarted.attempt), (Status::Working, 2));
    assert_eq!(restarted.status_message.as_deref(), Some("Running again after a server restart (attempt 2)"));
    let ended = engine.get(&owner, &failed.id).await.unwrap();
    let interrupted = WorkError::InterruptedByRestart;
    assert_eq!(ended.state, TaskState::Failed { outcome: Outcome::Failure(interrupted.clone()) });
    assert_eq!(ended.status_message, Some(interrupted.to_string()));

    // Once the writes go through again, the skipped tasks are recovered too.
    store.doomed.lock().unwrap().clear();
    let second = engine.recover().await.unwrap();
    assert_eq!((second.retried, second.failed, second.skipped), (2, 1, 0));
    assert_eq!(engine.get(&owner, &doomed_retry.id).await.unwrap().attempt, 2);
    assert_eq!(engine.get(&owner, &doomed_fail.id).await.unwrap().status(), Status::Failed);
}

/// The engine's own failures say what they said when they were JSON-RPC error objects.
#[test]
fn work_errors_display_the_messages_of_before() {
    let cases = [
        (
            WorkError::InterruptedByRestart,
            "Task execution was interrupted by a server restart; the work did not finish. Call the tool again to re-run it.",
        ),
        (
            WorkError::InterruptedRepeatedly { times: 2, max_attempts: 2 },
            "Task execution was interrupted by a server restart 2 times, and the tool allows 2 attempts; it is not \
             retried again. Call the tool again to re-run it.",
        ),
        (WorkError::Expired, "Task expired: its TTL elapsed before the work finished"),
        (WorkError::HandlerCrashed, "the tool's handler crashed"),
        (WorkError::CancelledInQueue { tool: "build".into() }, "the call was cancelled while it waited for a slot of tool build"),
        (WorkError::CallCancelled, "the call was cancelled"),
        (WorkError::CancelledWhileWaiting, "the task was cancelled while waiting for input"),
        (WorkError::InputDropped, "the input request was dropped"),
        (WorkError::InputNotRecorded { reason: "x".into() }, "could not record the input request: x"),
    ];
    for (failure, message) in cases {
        assert_eq!(failure.to_string(), message);
    }
}

#[tokio::test]
async fn recovery_restarts_a_task_waiting_for_input_in_working_through_the_transition_function() {
    let (engine, store) = engine();
    let owner = Principal::new("a");
    let task = engine.create(new_task("retried")).await.unwrap();
    // As a previous process left it: waiting for an answer.
    let mut requests = mcp_tasks_engine::InputRequests::new();
    let request = mcp_tasks_engine::InputRequest { kind: mcp_tasks_engine::InputKind::Elicitation, params: json!({}) };
    requests.insert("k".into(), request);
    let waiting = Update { state: TaskState::InputRequired { requests }, status_message: None, updated_at: task.updated_at, attempt: 1 };
    store.replace(&task.id, task.version, &waiting).await.unwrap();

    let recovery = engine.recover().await.unwrap();
    assert_eq!((recovery.retried, recovery.skipped), (1, 0));
    let restarted = engine.get(&owner, &task.id).await.unwrap();
    assert_eq!((restarted.state, restarted.attempt), (TaskState::Working, 2));
}

/// Writes a checkpoint on its first attempt and then never ends (its process "dies"); run
/// again, it answers with the checkpoint it finds.
struct Resumable {
    written: tokio::sync::Notify,
}

#[async_trait]
impl mcp_tasks_engine::Handler for Resumable {
    async fn call(&self, _arguments: serde_json::Value, ctx: mcp_tasks_engine::Context) -> Outcome {
        if let Some(found) = ctx.checkpointed().await {
            return Outcome::Result(json!({"content": [], "structuredContent": {"resumed_from": found, "attempt": ctx.attempt()}}));
        }
        assert!(ctx.checkpoint(json!({"upstream_task": "up-1"})).await, "the current attempt's checkpoint is written");
        self.written.notify_one();
        ctx.cancelled().await;
        Outcome::Result(json!({"content": []}))
    }
}

#[tokio::test]
async fn a_checkpointed_task_of_a_fail_tool_is_resumed_with_its_checkpoint_and_one_without_is_failed() {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(Timestamp(1_764_000_000_000)));
    let owner = Principal::new("a");
    let before = Engine::new(Arc::clone(&store) as Arc<dyn TaskStore>, clock.clone(), Policy::default());
    let first = Arc::new(Resumable { written: tokio::sync::Notify::new() });
    before.register("noted", ToolRuntime::from_arc(first.clone()).on_restart(RestartPolicy::Fail));
    before.register("failed", ToolRuntime::new(Forever).on_restart(RestartPolicy::Fail));
    let noted = before.create(new_task("noted")).await.unwrap();
    let plain = before.create(new_task("failed")).await.unwrap();
    let written = first.written.notified();
    before.start(&noted).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), written).await.expect("the checkpoint is written");

    // A new process on the same store: the old one's work is abandoned, not finished.
    let after = Engine::new(Arc::clone(&store) as Arc<dyn TaskStore>, clock, Policy::default());
    after.register("noted", ToolRuntime::new(Resumable { written: tokio::sync::Notify::new() }).on_restart(RestartPolicy::Fail));
    after.register("failed", ToolRuntime::new(Forever).on_restart(RestartPolicy::Fail));
    let recovery = after.recover().await.unwrap();
    assert_eq!((recovery.retried, recovery.failed, recovery.skipped), (1, 1, 0));
    let done = tokio::time::timeout(std::time::Duration::from_secs(10), after.wait_terminal(&owner, &noted.id))
        .await
        .expect("the resumed task ends")
        .unwrap();
    let TaskState::Completed { result } = &done.state else { panic!("completed, not {:?}", done.state) };
    assert_eq!(result["structuredContent"], json!({"resumed_from": {"upstream_task": "up-1"}, "attempt": 2}));
    let failed = after.get(&owner, &plain.id).await.unwrap();
    assert_eq!(failed.state, TaskState::Failed { outcome: Outcome::Failure(WorkError::InterruptedByRestart) });
    drop(before);
}
