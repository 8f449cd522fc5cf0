//! [`Engine`]: create, read, list, cancel and await tasks, and the one compare-and-set loop
//! every write goes through. Every status change goes through [`TaskState::on`] and is
//! written with compare-and-set, retried a bounded number of times on conflict.
//!
//! The engine's other jobs live beside this file: admission (`admission.rs`), running the
//! work (`run.rs`), input requests (`input.rs`), sweeping and recovery (`maintenance.rs`),
//! claims, the heartbeat, the rescuer and the store's change feed (`claims.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::admission::{Policy, Work};
use crate::clock::Clock;
use crate::early::Early;
use crate::error::{EngineError, LimitExceeded};
use crate::fast::{FastMap, FastSet};
use crate::input::InputWaiters;
use crate::published::Published;
use crate::run::Registered;
use crate::slots::Slots;
use crate::store::implement::EarlyEnding;
use crate::store::{Inserted, Lease, ListQuery, NodeId, Origin, StoreError, TaskStore, Update};
use crate::task::{Event, IdempotencyKey, InputKind, Principal, TaskId, TaskRecord, TaskState, Timestamp, Version};
use crate::trace::TraceContext;
use crate::work::{Progress, ToolRuntime};

/// How many times a write is re-read and re-applied after a version conflict.
pub(crate) const MAX_CAS_ATTEMPTS: usize = 16;
/// Capacity of the change feed; a slower subscriber re-reads the store when it lags.
const FEED_CAPACITY: usize = 4096;
/// How long a claim holds without a renewal unless the engine is told otherwise: a task whose
/// node died is taken over this long after its last heartbeat (plus one rescuer sweep).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// How long [`Engine::get`] waits for the outcome of a task whose work has just ended here
/// (its commit: usually a millisecond or two) before answering the state it read.
const FINISHING_WAIT: Duration = Duration::from_millis(100);

/// While alive, the task's outcome is being written ([`Engine::finishing`]).
pub(crate) struct Finishing<'a> {
    engine: &'a Engine,
    id: TaskId,
}

impl Drop for Finishing<'_> {
    fn drop(&mut self) {
        self.engine.inner.finishing.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.id);
    }
}
/// The status message of a task cancelled by its requestor.
pub(crate) const CANCELLED_MESSAGE: &str = "The task was cancelled by request.";

/// A request to create a task.
#[derive(Clone, Debug, PartialEq)]
pub struct NewTask {
    /// Who asks; only they will see the task.
    pub owner: Principal,
    /// The registered tool that runs it.
    pub tool: String,
    /// The call's arguments.
    pub arguments: Value,
    /// The TTL the requestor asked for, in ms.
    pub requested_ttl_ms: Option<u64>,
    /// Whether a result that the tool's handler reports as a failure
    /// ([`Handler::reported_failure`](crate::Handler::reported_failure)) ends the task
    /// `failed` (the dialect decides).
    pub error_result_fails: bool,
    /// The kinds of input the requestor can answer.
    pub input_kinds: Vec<InputKind>,
    /// The request's W3C trace context, kept with the task ([`TaskRecord::trace`]).
    pub trace: Option<TraceContext>,
    /// Where the call came from (the era and the client), written with the task's row
    /// ([`ViewStore::origin`](crate::ViewStore::origin) reads it; the web view shows it).
    pub origin: Option<Origin>,
}

/// What [`Engine::create_with_key`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum Creation {
    /// A new task, committed; the caller answers with it, then [`Engine::start`]s it.
    New(TaskRecord),
    /// The task the owner made earlier with the same key and the same call, as it stands
    /// now. Nothing was created; its work is not started again.
    Existing(TaskRecord),
}

impl Creation {
    /// The task, new or existing.
    pub fn record(&self) -> &TaskRecord {
        match self {
            Creation::New(record) | Creation::Existing(record) => record,
        }
    }

    /// Whether the task was created by this call.
    pub fn is_new(&self) -> bool {
        matches!(self, Creation::New(_))
    }

    /// The task, new or existing.
    pub fn into_record(self) -> TaskRecord {
        match self {
            Creation::New(record) | Creation::Existing(record) => record,
        }
    }
}

/// Something that changed, published to every subscriber of [`Engine::subscribe`].
#[derive(Clone, Debug)]
pub enum Change {
    /// A task was created or written; the record as it now stands.
    Task(Arc<TaskRecord>),
    /// The work behind a task reported progress.
    Progress {
        /// The task.
        id: TaskId,
        /// Its owner.
        owner: Principal,
        /// The report.
        progress: Progress,
    },
}

/// Output the work behind a task wrote (a command tool's stdout, without the line-protocol
/// lines), published to every subscriber of [`Engine::subscribe_output`]. Not stored: the
/// live tail of the web view; the result keeps the output as the handler returns it. A feed
/// of its own, so that a chatty command never makes the change feed lag.
#[derive(Clone, Debug)]
pub struct Output {
    /// The task.
    pub id: TaskId,
    /// Its owner.
    pub owner: Principal,
    /// The bytes written, as text (invalid UTF-8 replaced).
    pub text: Arc<str>,
}

/// The task engine: a cheap, cloneable handle.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) policy: Policy,
    /// This process incarnation, as its claims name it.
    pub(crate) node: NodeId,
    /// How long a claim holds without a renewal.
    pub(crate) lease: Duration,
    /// Whether this node runs tasks ([`Engine::set_runs_work`]); if not, it queues them in
    /// the store for the nodes that do.
    pub(crate) runs_work: AtomicBool,
    /// A rescuer pass is under way or asked for ([`Engine::nudge_rescue`]).
    pub(crate) rescue_pending: AtomicBool,
    /// Another pass was asked for while one ran.
    pub(crate) rescue_again: AtomicBool,
    /// Registered tools. A std lock: never held across an await, and read far more often
    /// than written.
    tools: RwLock<FastMap<String, Registered>>,
    /// The work running in this process: tasks (with their cancellation tokens) and plain
    /// calls. A std mutex: the critical sections are a map insert, remove or lookup, or a
    /// count of at most a few hundred entries.
    running: Mutex<Work>,
    /// Work in this process waiting for the answer to an input request, by task and key.
    /// A std mutex: inserts and removes only.
    inputs: Mutex<InputWaiters>,
    /// Held from counting a principal's stored tasks until the new task is counted among
    /// [`Work::inserting`], so that two creations of this process cannot both see room for
    /// one more under [`Policy::max_retained_per_principal`] (the store checks again,
    /// atomically, for creations on other nodes). A Tokio mutex: it is held across the
    /// store's `count` (and, at the limit, across the wait for the creations in flight to
    /// settle, [`Engine::admit_task`]). Not across the insert: concurrent creations reach the
    /// store together, where the SQLite store commits them in one transaction (group commit).
    pub(crate) admission: tokio::sync::Mutex<()>,
    /// Notified whenever a creation counted in [`Work::inserting`] stops being counted there
    /// (its insert returned): an admission that cannot tell whether the owner is at the
    /// retention limit waits for it ([`Engine::admit_task`]).
    pub(crate) settled: tokio::sync::Notify,
    pub(crate) changes: broadcast::Sender<Change>,
    /// The progress reports alone ([`Engine::subscribe_progress`]).
    pub(crate) progress: broadcast::Sender<Change>,
    /// What was last published of each task ([`Engine::publish_task`]). A std mutex: a
    /// lookup and an insert.
    pub(crate) published: Mutex<Published>,
    /// The output feed ([`Output`]); a subscriber that lags misses output, nothing else.
    pub(crate) outputs: broadcast::Sender<Output>,
    /// The changes routed by task id ([`Engine::watch_tasks`]).
    pub(crate) hub: Arc<crate::watch::Hub>,
    /// Tasks whose work has ended here and whose outcome is being written
    /// ([`Engine::get`] waits a moment for it). A std mutex: an insert, a remove, a lookup.
    pub(crate) finishing: Mutex<FastSet<TaskId>>,
    /// What running work reported and is not yet in its task's log ([`crate::events`]). A
    /// std mutex: map and string operations only.
    pub(crate) logs: Mutex<FastMap<TaskId, crate::events::Pending>>,
    /// The events this process appended, as (task, last number).
    pub(crate) appended: broadcast::Sender<(TaskId, u64)>,
}

impl Engine {
    /// An engine over `store`, reading time from `clock`, whose claims hold for
    /// [`DEFAULT_LEASE`] without a renewal. Call it inside a Tokio runtime: it subscribes to
    /// the store's change feed.
    pub fn new(store: Arc<dyn TaskStore>, clock: Arc<dyn Clock>, policy: Policy) -> Engine {
        Engine::with_lease(store, clock, policy, DEFAULT_LEASE)
    }

    /// As [`Engine::new`], with claims that hold for `lease` without a renewal (the
    /// heartbeat, [`Engine::spawn_claims`], renews them every third of it).
    pub fn with_lease(store: Arc<dyn TaskStore>, clock: Arc<dyn Clock>, policy: Policy, lease: Duration) -> Engine {
        let (changes, _) = broadcast::channel(FEED_CAPACITY);
        let (outputs, _) = broadcast::channel(FEED_CAPACITY);
        let (progress, _) = broadcast::channel(FEED_CAPACITY);
        let feed = store.changes();
        let engine = Engine {
            inner: Arc::new(Inner {
                store,
                clock,
                policy,
                node: NodeId::random(),
                lease: lease.max(Duration::from_millis(3)),
                runs_work: AtomicBool::new(true),
                rescue_pending: AtomicBool::new(false),
                rescue_again: AtomicBool::new(false),
                tools: RwLock::new(FastMap::default()),
                running: Mutex::new(Work::default()),
                inputs: Mutex::new(FastMap::default()),
                admission: tokio::sync::Mutex::new(()),
                settled: tokio::sync::Notify::new(),
                changes,
                progress,
                published: Mutex::new(Published::default()),
                outputs,
                hub: Arc::default(),
                finishing: Mutex::default(),
                logs: Mutex::default(),
                appended: broadcast::channel(FEED_CAPACITY).0,
            }),
        };
        engine.follow(feed);
        engine
    }

    /// The node this engine's claims name.
    pub fn node(&self) -> &NodeId {
        &self.inner.node
    }

    /// The time now, by the engine's clock.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    /// Whether other processes serve this store too ([`ClaimStore::shared`](crate::ClaimStore::shared)):
    /// then a 2025-11-25 HTTP session must be stored to be served by them.
    pub fn shares_store(&self) -> bool {
        self.inner.store.shared()
    }

    /// Whether this node runs the work of tasks (by default it does). A node that does not
    /// (an HTTP tier in front of workers, on a shared store) stores each new task queued
    /// (attempt 0, unclaimed): [`Engine::start`] leaves it alone, and the first node that
    /// runs work to see it (its rescuer, woken by the store's change feed) claims and runs it.
    /// Such a node takes nothing over at recovery either.
    pub fn set_runs_work(&self, runs: bool) {
        self.inner.runs_work.store(runs, Ordering::Relaxed);
    }

    /// Whether this node runs the work of tasks ([`Engine::set_runs_work`]).
    pub fn runs_work(&self) -> bool {
        self.inner.runs_work.load(Ordering::Relaxed)
    }

    /// A lease of this node from now.
    pub(crate) fn lease_from_now(&self) -> Lease {
        let lease_ms = u64::try_from(self.inner.lease.as_millis()).unwrap_or(u64::MAX);
        Lease { node: self.inner.node.clone(), until: self.inner.clock.now().plus_ms(lease_ms) }
    }

    /// The policy the engine applies.
    pub fn policy(&self) -> Policy {
        self.inner.policy
    }

    /// Registers (or replaces) the tool `name`. Its `max_concurrent` slots are shared by
    /// every task and plain call of the tool from now on.
    pub fn register(&self, name: impl Into<String>, runtime: ToolRuntime) {
        let slots = runtime.max_concurrent.map(Slots::new);
        let registered = Registered { runtime, slots };
        self.inner.tools.write().unwrap_or_else(PoisonError::into_inner).insert(name.into(), registered);
    }

    /// The registered tool `name`.
    pub fn tool(&self, name: &str) -> Option<ToolRuntime> {
        self.registered(name).map(|registered| registered.runtime)
    }

    /// Subscribes to every task change and progress report from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.inner.changes.subscribe()
    }

    /// Subscribes to the progress reports of every task's work from now on (each a
    /// [`Change::Progress`]), without its task changes: for a subscriber that only wants
    /// those, and would otherwise be woken for every change of every task to drop it.
    pub fn subscribe_progress(&self) -> broadcast::Receiver<Change> {
        self.inner.progress.subscribe()
    }

    /// Subscribes to the output of every task's work from now on ([`Output`]).
    pub fn subscribe_output(&self) -> broadcast::Receiver<Output> {
        self.inner.outputs.subscribe()
    }

    /// Creates a task in `working` and commits it to the store. The caller answers the
    /// requestor, then calls [`Engine::start`]. From now until its work ends the task
    /// counts as running in this process (see [`Policy::max_running`]).
    ///
    /// # Errors
    /// [`EngineError::UnknownTool`]; [`EngineError::Limit`] if the principal keeps too many
    /// tasks or too many tasks and calls run (nothing is written then); or a store failure.
    pub async fn create(&self, new: NewTask) -> Result<TaskRecord, EngineError> {
        // A keyless task never meets another: always a new one.
        Ok(self.insert_new(new, None, None).await?.into_record())
    }

    /// Creates a task like [`Engine::create`], at most once per idempotency key and owner
    /// (exactly-once submission): if `new.owner` already has a task made with `key` that is
    /// still retained (within its TTL), that task is returned as [`Creation::Existing`] and
    /// nothing is written, admitted or started. Concurrent calls with one key make one
    /// task: the store decides ([`RecordStore::insert`](crate::RecordStore::insert)), the others get it. The key is
    /// stored with the task, so this holds across restarts. Another owner's task with the
    /// same key is never found: keys are per principal.
    ///
    /// # Errors
    /// As [`Engine::create`], and [`EngineError::KeyReused`] if the owner's task with this
    /// key was made for another tool or other arguments (nothing is created then either).
    pub async fn create_with_key(&self, new: NewTask, key: IdempotencyKey) -> Result<Creation, EngineError> {
        if self.tool(&new.tool).is_none() {
            return Err(EngineError::UnknownTool(new.tool));
        }
        let now = self.inner.clock.now();
        // A retry finds its task here without counting against any limit: it adds nothing.
        if let Some(existing) = self.inner.store.find_by_key(&new.owner, &key, now).await? {
            return same_call(existing, &new, &key);
        }
        match self.insert_new(new.clone(), Some(key.clone()), None).await {
            Ok(Creation::New(record)) => Ok(Creation::New(record)),
            // Lost a race with a concurrent call with this key: the winner's task.
            Ok(Creation::Existing(existing)) => same_call(existing, &new, &key),
            // Refused by a limit while a concurrent call with this key committed its task:
            // that task is still the answer.
            Err(err @ EngineError::Limit(_)) => match self.inner.store.find_by_key(&new.owner, &key, now).await? {
                Some(existing) => same_call(existing, &new, &key),
                None => Err(err),
            },
            Err(err) => Err(err),
        }
    }

    /// Builds the record of `new` (with `key`), admits it under the policy's limits and
    /// inserts it. On [`Creation::Existing`] (the store held a retained task of the owner
    /// with `key`) the new record was not stored and is forgotten. `adopting`: see
    /// [`Engine::admit_task`].
    pub(crate) async fn insert_new(
        &self,
        mut new: NewTask,
        key: Option<IdempotencyKey>,
        adopting: Option<&CancellationToken>,
    ) -> Result<Creation, EngineError> {
        if self.tool(&new.tool).is_none() {
            return Err(EngineError::UnknownTool(new.tool));
        }
        let origin = new.origin.take();
        let mut record = self.new_record(new, key);
        // Adopted work runs here whatever this node's role: the task is this node's claim.
        let runs_work = self.runs_work() || adopting.is_some();
        let lease = if runs_work {
            self.lease_from_now()
        } else {
            // Queued for a node that runs work: attempt 0, a claim lapsed from the start.
            record.attempt = 0;
            Lease { node: self.inner.node.clone(), until: Timestamp(i64::MIN) }
        };
        let inserting = self.admit_task(&record, adopting).await?;
        // A tool that lets its work start before the creation commits: started now, and an
        // outcome that comes before the insert runs goes in with it.
        let early = if runs_work && adopting.is_none() { self.start_early(&record) } else { None };
        let placing = if adopting.is_none() { self.placing() } else { None };
        let (inserted, merged) = self.insert_record(&record, &lease, origin.as_ref(), early.as_ref(), placing).await;
        if let Some(early) = &early {
            if matches!(inserted, Ok(Inserted::New)) {
                early.committed(merged, Instant::now());
            } else {
                self.abandon_early(&record.id, early);
            }
        }
        drop(inserting);
        if !matches!(inserted, Ok(Inserted::New) | Err(StoreError::NoPlace(_))) && adopting.is_none() {
            self.release_place(&crate::store::PlaceHolder::Task(record.id.clone())).await;
        }
        self.inserted(record, inserted, runs_work)
    }

    /// The record of a new task made of `new` (with `key`), created now: `working`, version
    /// and attempt 1, its TTL as the policy grants it.
    fn new_record(&self, new: NewTask, key: Option<IdempotencyKey>) -> TaskRecord {
        let policy = self.inner.policy;
        let now = self.inner.clock.now();
        TaskRecord {
            id: TaskId::ordered(now),
            owner: new.owner,
            tool: new.tool,
            arguments: new.arguments,
            state: TaskState::Working,
            status_message: None,
            created_at: now,
            updated_at: now,
            ttl_ms: Some(policy.grant(new.requested_ttl_ms)),
            poll_interval_ms: Some(policy.poll_interval_ms),
            attempt: 1,
            version: Version(1),
            error_result_fails: new.error_result_fails,
            input_kinds: new.input_kinds,
            idempotency_key: key,
            trace: new.trace,
        }
    }

    /// Inserts `record` claimed by `lease` under the retention limit, with the outcome of its
    /// `early` work if that ended before the insert ran (then also the record written with
    /// it), and with its running place if `placing` (a shared store).
    async fn insert_record(
        &self,
        record: &TaskRecord,
        lease: &Lease,
        origin: Option<&Origin>,
        early: Option<&Arc<Early>>,
        placing: Option<crate::store::Placing>,
    ) -> (Result<Inserted, StoreError>, Option<Arc<TaskRecord>>) {
        let max_retained = self.inner.policy.max_retained_per_principal;
        if let Some(placing) = placing {
            let ending = early.map(|early| Arc::<Early>::clone(early) as Arc<dyn EarlyEnding>);
            let placed = self.inner.store.insert_placed(record, lease, max_retained, origin, &placing, ending).await;
            return placed.map_or_else(|err| (Err(err), None), |(inserted, merged)| (Ok(inserted), merged));
        }
        match early {
            None => (self.inner.store.insert_claimed(record, lease, max_retained, origin).await, None),
            Some(early) => {
                let ending: Arc<dyn EarlyEnding> = Arc::<Early>::clone(early);
                match self.inner.store.insert_claimed_early(record, lease, max_retained, origin, ending).await {
                    Ok((inserted, merged)) => (Ok(inserted), merged),
                    Err(err) => (Err(err), None),
                }
            }
        }
    }

    /// What the insert of the new task `record` answers: the task created (claimed by this
    /// node if it `runs_work`, and published), the owner's retained task with its key, or the
    /// refusal; what this node noted of a record not stored is forgotten.
    fn inserted(&self, record: TaskRecord, inserted: Result<Inserted, StoreError>, runs_work: bool) -> Result<Creation, EngineError> {
        match inserted {
            Err(StoreError::NoPlace(place)) => {
                self.forget(&record.id, record.attempt);
                Err(self.no_place(place, &record.owner))
            }
            Err(StoreError::Full { owner, retained }) => {
                self.forget(&record.id, record.attempt);
                let limit = self.inner.policy.max_retained_per_principal;
                Err(LimitExceeded::RetainedPerPrincipal { owner, retained, limit }.into())
            }
            Err(err) => {
                self.forget(&record.id, record.attempt);
                Err(err.into())
            }
            Ok(Inserted::Existing(existing)) => {
                self.forget(&record.id, record.attempt);
                tracing::info!(task = %existing.id, owner = %existing.owner, "task found by its idempotency key");
                Ok(Creation::Existing(existing))
            }
            Ok(Inserted::New) => {
                tracing::info!(task = %record.id, owner = %record.owner, tool = %record.tool, "task created");
                if runs_work {
                    self.mark_claimed(&record.id, record.attempt);
                } else {
                    self.forget(&record.id, record.attempt);
                }
                self.publish_task(&record, None);
                Ok(Creation::New(record))
            }
        }
    }

    /// Reads `owner`'s task `id`. When its work has just ended on this node and its outcome
    /// is being committed, waits for that commit (up to 100 ms) and answers the outcome.
    ///
    /// # Errors
    /// [`EngineError::NotFound`] if there is no such task, or it belongs to another
    /// principal (invariant 4: indistinguishable).
    pub async fn get(&self, owner: &Principal, id: &TaskId) -> Result<TaskRecord, EngineError> {
        self.get_shared(owner, id).await.map(Arc::unwrap_or_clone)
    }

    /// [`Engine::get`], shared: the record as the store keeps it or as its last change
    /// carried it, not a copy (for a caller that only looks at it).
    ///
    /// # Errors
    /// As [`Engine::get`].
    pub async fn get_shared(&self, owner: &Principal, id: &TaskId) -> Result<Arc<TaskRecord>, EngineError> {
        if !self.is_finishing(id) {
            return self.read(owner, id).await;
        }
        // The work has ended here and its outcome is being committed: the state read is
        // about to change, and a poller told `working` would only ask again. Wait a moment
        // for the outcome (watched before reading: no change is missed; one read).
        let watch = self.watch_task(id);
        let record = self.read(owner, id).await?;
        if record.status().is_terminal() || !self.is_finishing(id) {
            return Ok(record);
        }
        match tokio::time::timeout(FINISHING_WAIT, watch.next_task()).await {
            Ok(Some(next)) => Ok(next),
            _ => self.read(owner, id).await,
        }
    }

    /// `owner`'s task `id` as the store has it.
    async fn read(&self, owner: &Principal, id: &TaskId) -> Result<Arc<TaskRecord>, EngineError> {
        match self.inner.store.get_shared(id).await? {
            Some(record) if &record.owner == owner => Ok(record),
            _ => Err(EngineError::NotFound(id.clone())),
        }
    }

    /// Whether task `id`'s work ended here and its outcome is being written (public for
    /// tests that hold that write back).
    #[doc(hidden)]
    pub fn is_finishing(&self, id: &TaskId) -> bool {
        self.inner.finishing.lock().unwrap_or_else(PoisonError::into_inner).contains(id)
    }

    /// Marks task `id` as finishing until the guard drops.
    pub(crate) fn finishing(&self, id: &TaskId) -> Finishing<'_> {
        self.inner.finishing.lock().unwrap_or_else(PoisonError::into_inner).insert(id.clone());
        Finishing { engine: self, id: id.clone() }
    }

    /// A page of the owner's tasks, oldest first.
    ///
    /// # Errors
    /// A store failure.
    pub async fn list(&self, query: &ListQuery) -> Result<Vec<TaskRecord>, EngineError> {
        Ok(self.inner.store.list(query).await?)
    }

    /// Cancels `owner`'s task `id` now: the task is `cancelled` in the store before this
    /// returns, then its work is told to stop (2025-11-25 `tasks/cancel`).
    ///
    /// # Errors
    /// [`EngineError::NotFound`]; [`EngineError::Refused`] if the task is already terminal.
    pub async fn cancel(&self, owner: &Principal, id: &TaskId) -> Result<TaskRecord, EngineError> {
        let record = self
            .apply(id, Some(owner), None, |_| (Event::Cancel, Some(CANCELLED_MESSAGE.to_owned())))
            .await?;
        self.stop_work(id);
        tracing::info!(task = %id, owner = %owner, "task cancelled");
        Ok(Arc::unwrap_or_clone(record))
    }

    /// Asks `owner`'s task `id` to stop, cooperatively (2026-07-28 tasks extension: a cancel
    /// is an acknowledgement and never fails on a terminal task).
    ///
    /// - A terminal task is returned unchanged.
    /// - If the task's handler runs in this process, its cancellation token fires and the
    ///   task is returned as it stands; it ends `cancelled` once the work stops, whatever
    ///   the work returns then (a handler that ignores the token runs on until it ends).
    /// - Otherwise (still queued for a slot of its tool, not started, or run by no one in
    ///   this process) it is `cancelled` at once, as by [`Engine::cancel`].
    ///
    /// # Errors
    /// [`EngineError::NotFound`], or a store failure.
    pub async fn request_cancel(&self, owner: &Principal, id: &TaskId) -> Result<TaskRecord, EngineError> {
        let record = self.get(owner, id).await?;
        if record.status().is_terminal() {
            return Ok(record);
        }
        let stopping = match self.work().tasks.get_mut(id) {
            Some(running) if running.started => {
                running.cancel_requested = true;
                running.cancel.cancel();
                true
            }
            _ => false,
        };
        if stopping {
            tracing::info!(task = %id, owner = %owner, "task asked to stop");
            return Ok(record);
        }
        // Run by another node of a shared store (or queued there): the request is stored, and
        // the node running it stops it (or, if that node died, the rescuer cancels it).
        if self.inner.store.shared() && !self.work().tasks.contains_key(id) && self.inner.store.request_cancel(id).await? {
            tracing::info!(task = %id, owner = %owner, "task asked to stop, wherever it runs");
            return self.get(owner, id).await;
        }
        match self.cancel(owner, id).await {
            // It ended meanwhile: the acknowledgement returns it as it ended.
            Err(EngineError::Refused { .. }) => self.get(owner, id).await,
            other => other,
        }
    }

    /// Waits until `owner`'s task `id` is terminal and returns it. Event-driven: it wakes on
    /// the change feed, never on a timer.
    ///
    /// # Errors
    /// [`EngineError::NotFound`] if there is no such task or it was purged while waiting.
    pub async fn wait_terminal(&self, owner: &Principal, id: &TaskId) -> Result<TaskRecord, EngineError> {
        let watch = self.watch_task(id);
        let mut record = self.get(owner, id).await?;
        while !record.status().is_terminal() {
            record = match watch.next_task().await {
                Some(next) => TaskRecord::clone(&next),
                None => self.get(owner, id).await?,
            };
        }
        Ok(record)
    }

    /// Reads, applies `event_of`'s event with the transition function, and writes with
    /// compare-and-set; re-reads and re-applies on conflict. `owner` scopes the read;
    /// `attempt` fences a runner's write.
    pub(crate) async fn apply(
        &self,
        id: &TaskId,
        owner: Option<&Principal>,
        attempt: Option<u32>,
        event_of: impl Fn(&TaskRecord) -> (Event, Option<String>),
    ) -> Result<Arc<TaskRecord>, EngineError> {
        let written = self
            .write(id, owner, |task| {
                let (event, message) = event_of(task);
                if attempt.is_some_and(|attempt| attempt != task.attempt) {
                    return Err(EngineError::Refused { id: id.clone(), from: task.status(), event: event.kind() });
                }
                let state = transition(task, event)?;
                // A message of the running task ("Running again after a server restart", a
                // command's own status) says nothing of its ending: an ending without one
                // of its own has none.
                let status_message = match message {
                    Some(message) => Some(message),
                    None if state.status().is_terminal() => None,
                    None => task.status_message.clone(),
                };
                Ok(Some(Update {
                    state,
                    status_message,
                    updated_at: self.inner.clock.now(),
                    attempt: task.attempt,
                }))
            })
            .await?;
        written.ok_or_else(|| EngineError::Contended(id.clone()))
    }

    /// The one compare-and-set loop: reads the task (`owner`-scoped: another principal's
    /// task is not found), lets `decide` compute the write from what it read (`None`: no
    /// write), and writes only if the version is still the one read; on a conflict it
    /// re-reads and decides again, a bounded number of times. Each write is published on the
    /// store's change feed (which the engine forwards to its subscribers). Every write of a
    /// task but its insert and its claims goes through here.
    pub(crate) async fn write(
        &self,
        id: &TaskId,
        owner: Option<&Principal>,
        decide: impl Fn(&TaskRecord) -> Result<Option<Update>, EngineError>,
    ) -> Result<Option<Arc<TaskRecord>>, EngineError> {
        // `owner`'s task, or not found (another principal's task is not found either).
        let owned = |read: Option<Arc<TaskRecord>>| match read {
            Some(task) if owner.is_none_or(|owner| &task.owner == owner) => Ok(task),
            _ => Err(EngineError::NotFound(id.clone())),
        };
        for attempt in 0..MAX_CAS_ATTEMPTS {
            // The first try starts from the version the store last knew (its own write, most
            // often), the others from a fresh read: a stale version only fails the write.
            let read = if attempt == 0 { self.inner.store.get_known(id).await? } else { self.inner.store.get_shared(id).await? };
            let mut task = owned(read)?;
            let mut decided = decide(&task)?;
            if decided.is_none() && attempt == 0 {
                // "Nothing to write" is only an answer for the stored version.
                task = owned(self.inner.store.get_shared(id).await?)?;
                decided = decide(&task)?;
            }
            let Some(update) = decided else { return Ok(None) };
            match self.inner.store.replace_shared(id, task.version, &update).await {
                Ok(record) => {
                    self.log_change(&task, &record);
                    // Shared with the store and the subscribers it is published to: no copy.
                    self.publish_shared(&record, Some(Instant::now()));
                    return Ok(Some(record));
                }
                Err(StoreError::Conflict(_)) => continue,
                Err(err) => return Err(err.into()),
            }
        }
        Err(EngineError::Contended(id.clone()))
    }

    pub(crate) fn stop_work(&self, id: &TaskId) {
        if let Some(running) = self.work().tasks.remove(id) {
            running.cancel.cancel();
        }
    }

    /// Removes attempt `attempt` of task `id` from the running work (a newer attempt stays);
    /// `true` if [`Engine::request_cancel`] had asked it to stop.
    pub(crate) fn forget(&self, id: &TaskId, attempt: u32) -> bool {
        let mut work = self.work();
        if work.tasks.get(id).is_some_and(|run| run.attempt == attempt) {
            return work.tasks.remove(id).is_some_and(|run| run.cancel_requested);
        }
        false
    }

    pub(crate) fn registered(&self, name: &str) -> Option<Registered> {
        self.inner.tools.read().unwrap_or_else(PoisonError::into_inner).get(name).cloned()
    }

    pub(crate) fn inputs(&self) -> MutexGuard<'_, InputWaiters> {
        self.inner.inputs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn work(&self) -> MutexGuard<'_, Work> {
        self.inner.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `existing` if it was made for the call `new` (the same tool and arguments), else the
/// refusal that `key` was used for another call.
fn same_call(existing: TaskRecord, new: &NewTask, key: &IdempotencyKey) -> Result<Creation, EngineError> {
    if existing.tool == new.tool && existing.arguments == new.arguments {
        Ok(Creation::Existing(existing))
    } else {
        Err(EngineError::KeyReused(key.clone()))
    }
}

/// Applies `event` to `task`'s state with the transition function; a refusal names the task.
pub(crate) fn transition(task: &TaskRecord, event: Event) -> Result<TaskState, EngineError> {
    let from = task.status();
    task.state.clone().on(event).map_err(|refused| EngineError::Refused { id: task.id.clone(), from, event: refused.event })
}
