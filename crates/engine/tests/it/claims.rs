//! The heartbeat of a node on a shared store: a node whose claims go unrenewed for a whole
//! lease (the database stops answering, as in a partition) stops its work, and the work writes
//! nothing when it ends; a renewal that never answers does not hold the heartbeat.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_engine::{
    Answer, Clock, Engine, IdempotencyKey, Inserted, KeptGroup, Lease, ListQuery, NewTask, Outcome, Policy, Principal, ProcessGroup,
    Status, StoreError, SystemClock, TaskId, TaskRecord, TaskStore, Timestamp, ToolRuntime, Update, Version,
    ClaimStore, RecordStore, SessionStore, ViewStore, WorkStore,
};
use mcp_tasks_testkit::MemoryStore;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The memory store, shared (as PostgreSQL is), whose renewals can be made to hang forever,
/// and which counts the writes of the tasks it watches.
#[derive(Default)]
struct Partitioned {
    inner: MemoryStore,
    cut: AtomicBool,
    watched: Mutex<HashSet<TaskId>>,
    writes: AtomicUsize,
    /// `lapsed` answers from the store (by default it finds nothing: nobody to take over from).
    rescuable: AtomicBool,
    /// `process_group` fails (a store error in the middle of a take-over).
    broken_reads: AtomicBool,
}

#[async_trait]
impl RecordStore for Partitioned {
    async fn insert(&self, task: &TaskRecord) -> Result<Inserted, StoreError> {
        self.inner.insert(task).await
    }

    async fn find_by_key(&self, owner: &Principal, key: &IdempotencyKey, now: Timestamp) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.find_by_key(owner, key, now).await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.get(id).await
    }

    async fn replace(&self, id: &TaskId, expected: Version, update: &Update) -> Result<TaskRecord, StoreError> {
        if self.watched.lock().unwrap().contains(id) {
            self.writes.fetch_add(1, Ordering::SeqCst);
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

    async fn answer(&self, id: &TaskId, expected: Version, update: &Update, key: &str, answer: &Answer) -> Result<TaskRecord, StoreError> {
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
impl ClaimStore for Partitioned {
    fn shared(&self) -> bool {
        true
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

    async fn claim(&self, id: &TaskId, attempt: u32, lease: &Lease, now: Timestamp) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.claim(id, attempt, lease, now).await
    }

    async fn renew(&self, lease: &Lease, now: Timestamp) -> Result<Vec<TaskId>, StoreError> {
        if self.cut.load(Ordering::SeqCst) {
            // A database that never answers.
            std::future::pending::<()>().await;
        }
        self.inner.renew(lease, now).await
    }

    async fn lapsed(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        if self.rescuable.load(Ordering::SeqCst) {
            return self.inner.lapsed(now, limit).await;
        }
        Ok(Vec::new())
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
impl ViewStore for Partitioned {
    async fn browse(&self, query: &mcp_tasks_engine::BrowseQuery) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.browse(query).await
    }

    async fn status_counts(&self, owner: &Principal) -> Result<Vec<(mcp_tasks_engine::Status, u64)>, StoreError> {
        self.inner.status_counts(owner).await
    }

    async fn history(&self, id: &TaskId) -> Result<Vec<mcp_tasks_engine::HistoryEntry>, StoreError> {
        self.inner.history(id).await
    }

    async fn set_origin(&self, id: &TaskId, origin: &mcp_tasks_engine::Origin) -> Result<(), StoreError> {
        self.inner.set_origin(id, origin).await
    }

    async fn origin(&self, id: &TaskId) -> Result<Option<mcp_tasks_engine::Origin>, StoreError> {
        self.inner.origin(id).await
    }
}

#[async_trait]
impl WorkStore for Partitioned {
    async fn set_process_group(&self, id: &TaskId, group: &ProcessGroup) -> Result<(), StoreError> {
        self.inner.set_process_group(id, group).await
    }

    async fn process_group(&self, id: &TaskId) -> Result<Option<ProcessGroup>, StoreError> {
        if self.broken_reads.load(Ordering::SeqCst) {
            return Err(StoreError::Backend("the database went away".into()));
        }
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
impl SessionStore for Partitioned {
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

/// Work that runs until cancelled, says so, then finishes with a result.
struct UntilCancelled(mpsc::UnboundedSender<&'static str>);

#[async_trait]
impl mcp_tasks_engine::Handler for UntilCancelled {
    async fn call(&self, _arguments: serde_json::Value, ctx: mcp_tasks_engine::Context) -> Outcome {
        let _ = self.0.send("started");
        ctx.cancelled().await;
        let _ = self.0.send("stopped");
        Outcome::Result(json!({"content": [{"type": "text", "text": "late"}]}))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_claims_go_unrenewed_for_a_lease_stops_its_work_and_the_work_writes_nothing() {
    const LEASE: Duration = Duration::from_millis(300);
    let store = Arc::new(Partitioned::default());
    let engine = Engine::with_lease(Arc::clone(&store) as Arc<dyn TaskStore>, Arc::new(SystemClock), Policy::default(), LEASE);
    let (events, mut seen) = mpsc::unbounded_channel();
    engine.register("hold", ToolRuntime::new(UntilCancelled(events)));
    let shutdown = CancellationToken::new();
    let claims = engine.spawn_claims(shutdown.clone());
    let owner = Principal::new("alice");
    let new = NewTask {
        trace: None,
        origin: None,
        owner: owner.clone(),
        tool: "hold".into(),
        arguments: json!({}),
        requested_ttl_ms: None,
        error_result_fails: false,
        input_kinds: vec![],
    };
    let task = engine.create(new.clone()).await.unwrap();
    store.watched.lock().unwrap().insert(task.id.clone());
    engine.start(&task).unwrap();
    assert_eq!(seen.recv().await, Some("started"));

    // Renewed while the database answers: the work runs on past several leases.
    let kept = tokio::time::timeout(LEASE * 3, seen.recv()).await;
    assert!(kept.is_err(), "the work keeps running while its claims are renewed: {kept:?}");

    // The database stops answering: within a lease and a beat or two the work is stopped.
    store.cut.store(true, Ordering::SeqCst);
    let stopped = tokio::time::timeout(LEASE * 10, seen.recv()).await;
    assert_eq!(stopped, Ok(Some("stopped")), "the node stops its work once its claims went unrenewed for a lease");

    // The work ended with a result: written by nobody. A later write through the engine
    // is seen on the feed after whatever the ended work did.
    store.cut.store(false, Ordering::SeqCst);
    let mut feed = engine.subscribe();
    let marker = engine.create(new).await.unwrap();
    loop {
        match tokio::time::timeout(Duration::from_secs(10), feed.recv()).await {
            Ok(Ok(mcp_tasks_engine::Change::Task(record))) if record.id == marker.id => break,
            Ok(Ok(_)) => {}
            other => panic!("the marker's creation is published: {other:?}"),
        }
    }
    assert_eq!(store.writes.load(Ordering::SeqCst), 0, "the lost work wrote nothing");
    let stored = engine.get(&owner, &task.id).await.unwrap();
    assert_eq!((stored.status(), stored.version), (Status::Working, task.version), "left for a rescuer");
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(10), claims).await.expect("the heartbeat stops at shutdown").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_take_over_that_fails_half_way_gives_the_task_back_for_the_next_pass() {
    let store = Arc::new(Partitioned::default());
    store.rescuable.store(true, Ordering::SeqCst);
    let clock = Arc::new(mcp_tasks_engine::FakeClock::new(Timestamp(1_764_028_800_000)));
    let lease = Duration::from_secs(30);
    let dead = Engine::with_lease(Arc::clone(&store) as Arc<dyn TaskStore>, clock.clone(), Policy::default(), lease);
    dead.register("hold", ToolRuntime::new(UntilCancelled(mpsc::unbounded_channel().0)));
    let owner = Principal::new("alice");
    let new = NewTask {
        trace: None,
        origin: None,
        owner: owner.clone(),
        tool: "hold".into(),
        arguments: json!({}),
        requested_ttl_ms: None,
        error_result_fails: false,
        input_kinds: vec![],
    };
    let task = dead.create(new).await.unwrap(); // never started: its node "died"
    let rescuer = Engine::with_lease(Arc::clone(&store) as Arc<dyn TaskStore>, clock.clone(), Policy::default(), lease);
    rescuer.register("hold", ToolRuntime::new(UntilCancelled(mpsc::unbounded_channel().0)));
    assert_eq!(rescuer.rescue_once().await.unwrap(), Default::default(), "held by a live claim");

    clock.advance(lease);
    store.broken_reads.store(true, Ordering::SeqCst);
    let failed = rescuer.rescue_once().await;
    assert!(matches!(failed, Err(mcp_tasks_engine::EngineError::Store(_))), "{failed:?}");
    let lapsed = store.inner.lapsed(clock.now(), 10).await.unwrap();
    assert_eq!(lapsed.iter().map(|task| &task.id).collect::<Vec<_>>(), vec![&task.id], "given back, lapsed again");

    store.broken_reads.store(false, Ordering::SeqCst);
    let recovered = rescuer.rescue_once().await.unwrap();
    assert_eq!(recovered.failed, 1, "{recovered:?}");
    let stored = rescuer.get(&owner, &task.id).await.unwrap();
    assert_eq!(stored.status(), Status::Failed, "{stored:?}");
}

/// Two nodes on one shared store, `max_running_per_principal = 2` and `max_running = 3`: the
/// limits count the tasks of both nodes (running places in the store, not this process's
/// counters), the refusal names the count across them, and a task that ends frees its place
/// for either node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_running_limits_hold_across_two_nodes_on_a_shared_store() {
    let store: Arc<dyn TaskStore> = Arc::new(Partitioned::default());
    let policy = Policy { max_running: 3, max_running_per_principal: 2, ..Policy::default() };
    let (a, b) = (Engine::new(Arc::clone(&store), Arc::new(SystemClock), policy), Engine::new(store, Arc::new(SystemClock), policy));
    let (events, _seen) = mpsc::unbounded_channel();
    for engine in [&a, &b] {
        engine.register("hold", ToolRuntime::new(UntilCancelled(events.clone())));
    }
    let new = |owner: &str| NewTask {
        trace: None,
        origin: None,
        owner: Principal::new(owner),
        tool: "hold".into(),
        arguments: json!({}),
        requested_ttl_ms: None,
        error_result_fails: false,
        input_kinds: vec![],
    };
    let first = a.create(new("alice")).await.expect("alice's first, on A");
    b.create(new("alice")).await.expect("alice's second, on B");
    match a.create(new("alice")).await {
        Err(mcp_tasks_engine::EngineError::Limit(mcp_tasks_engine::LimitExceeded::RunningPerPrincipal { running, limit, .. })) => {
            assert_eq!((running, limit), (2, 2), "counted across both nodes");
        }
        other => panic!("alice's third is refused: {other:?}"),
    }
    b.create(new("bob")).await.expect("bob's, on B");
    match a.create(new("carol")).await {
        Err(mcp_tasks_engine::EngineError::Limit(mcp_tasks_engine::LimitExceeded::Running { running, limit })) => {
            assert_eq!((running, limit), (3, 3), "counted across both nodes");
        }
        other => panic!("carol's is refused: the three places are held: {other:?}"),
    }
    a.cancel(&Principal::new("alice"), &first.id).await.expect("cancel");
    b.create(new("alice")).await.expect("the ended task's place is free, on the other node too");
}
