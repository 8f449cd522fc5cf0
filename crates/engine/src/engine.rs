//! [`Engine`]: create, read, list, cancel and await tasks; run their work; recover after a
//! crash; sweep expired tasks. Every status change goes through [`TaskState::on`] and is
//! written with compare-and-set, retried a bounded number of times on conflict.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::error::{EngineError, LimitExceeded};
use crate::slots::{Entry, Permit, Slots};
use crate::store::{ListQuery, StoreError, TaskStore, Update};
use crate::task::{
    ErrorObject, Event, InputRequest, Outcome, Principal, RestartPolicy, TaskId, TaskRecord,
    TaskState, Version,
};
use crate::work::{Context, Progress, ToolRuntime};

/// How many times a write is re-read and re-applied after a version conflict.
const MAX_CAS_ATTEMPTS: usize = 16;
/// How many tasks one sweep pass expires or purges at most.
const SWEEP_BATCH: u32 = 1000;
/// Capacity of the change feed; a slower subscriber re-reads the store when it lags.
const FEED_CAPACITY: usize = 4096;

/// Retention, polling and admission policy, applied at creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// TTL granted when the requestor asks for none, in ms.
    pub default_ttl_ms: u64,
    /// The largest TTL granted, in ms; `None` grants any request.
    pub max_ttl_ms: Option<u64>,
    /// Suggested interval between polls, in ms.
    pub poll_interval_ms: u64,
    /// At most this many tasks and plain calls run at once in this process, for all
    /// principals together; a new one over it is refused ([`LimitExceeded::Running`]). A
    /// task counts from its creation until its work ends, including while it waits for
    /// input or queues for a slot of its tool; tasks retried by [`Engine::recover`] count
    /// but are never refused.
    pub max_running: u32,
    /// The same, for each principal alone ([`LimitExceeded::RunningPerPrincipal`]).
    pub max_running_per_principal: u32,
    /// At most this many tasks of one principal are kept in the store, finished or not
    /// (finished ones leave when their TTL runs out); a new task over it is refused
    /// ([`LimitExceeded::RetainedPerPrincipal`]). Plain calls are not stored and do not count.
    pub max_retained_per_principal: u64,
}

impl Default for Policy {
    /// One hour by default, a day at most, polls every second; 64 running at once, 16 per
    /// principal; 10,000 tasks kept per principal.
    fn default() -> Policy {
        Policy {
            default_ttl_ms: 3_600_000,
            max_ttl_ms: Some(86_400_000),
            poll_interval_ms: 1_000,
            max_running: 64,
            max_running_per_principal: 16,
            max_retained_per_principal: 10_000,
        }
    }
}

impl Policy {
    /// The TTL granted for `requested`: honoured up to the cap, the default when absent.
    pub fn grant(&self, requested: Option<u64>) -> u64 {
        let ttl = requested.unwrap_or(self.default_ttl_ms);
        self.max_ttl_ms.map_or(ttl, |max| ttl.min(max))
    }
}

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
    /// Whether a result with `isError: true` ends the task `failed` (the dialect decides).
    pub error_result_fails: bool,
    /// The input request methods the requestor can answer.
    pub input_methods: Vec<String>,
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

/// What [`Engine::recover`] did with tasks left unfinished by a previous process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Failed with the interrupted-by-restart error.
    pub failed: usize,
    /// Started again.
    pub retried: usize,
}

/// What one sweep pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Unfinished tasks failed because their TTL ran out.
    pub expired: usize,
    /// Finished tasks deleted.
    pub purged: u64,
}

/// Work waiting for the answer to an input request, by task and request key.
type InputWaiters = HashMap<(TaskId, String), oneshot::Sender<Result<Value, ErrorObject>>>;

/// Removes an input waiter from the engine's map when the wait ends, however it ends.
struct WaiterGuard<'a> {
    engine: &'a Engine,
    key: (TaskId, String),
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        self.engine.inputs().remove(&self.key);
    }
}

/// Work running in this process for one task.
struct Running {
    attempt: u32,
    owner: Principal,
    cancel: CancellationToken,
}

/// Everything running in this process, which [`Policy::max_running`] and
/// [`Policy::max_running_per_principal`] bound.
#[derive(Default)]
struct Work {
    /// Tasks, from creation (or a retry's start) until their work ends or is stopped.
    tasks: HashMap<TaskId, Running>,
    /// Plain calls in progress, by principal (never zero: an entry leaves at zero).
    plain: HashMap<Principal, usize>,
    /// Creations admitted under [`Policy::max_retained_per_principal`] whose insert has not
    /// returned yet, by principal (never zero): the store does not count them yet.
    inserting: HashMap<Principal, u64>,
}

impl Work {
    /// Whether one more task or call of `owner` fits under the policy's limits.
    fn admit(&self, owner: &Principal, policy: &Policy) -> Result<(), LimitExceeded> {
        let running = self.tasks.len() + self.plain.values().sum::<usize>();
        if running >= policy.max_running as usize {
            return Err(LimitExceeded::Running { running, limit: policy.max_running });
        }
        let mine = self.tasks.values().filter(|task| &task.owner == owner).count()
            + self.plain.get(owner).copied().unwrap_or(0);
        if mine >= policy.max_running_per_principal as usize {
            return Err(LimitExceeded::RunningPerPrincipal {
                owner: owner.clone(),
                running: mine,
                limit: policy.max_running_per_principal,
            });
        }
        Ok(())
    }
}

/// A plain call counted in [`Work::plain`] until dropped.
struct PlainCall<'a> {
    engine: &'a Engine,
    owner: Principal,
}

impl Drop for PlainCall<'_> {
    fn drop(&mut self) {
        let mut work = self.engine.work();
        if let Some(count) = work.plain.get_mut(&self.owner) {
            *count -= 1;
            if *count == 0 {
                work.plain.remove(&self.owner);
            }
        }
    }
}

/// A creation counted in [`Work::inserting`] until dropped (its insert returned, or its
/// future was dropped).
struct Inserting<'a> {
    engine: &'a Engine,
    owner: Principal,
}

impl<'a> Inserting<'a> {
    fn new(engine: &'a Engine, owner: &Principal) -> Inserting<'a> {
        *engine.work().inserting.entry(owner.clone()).or_insert(0) += 1;
        Inserting { engine, owner: owner.clone() }
    }
}

impl Drop for Inserting<'_> {
    fn drop(&mut self) {
        let mut work = self.engine.work();
        if let Some(count) = work.inserting.get_mut(&self.owner) {
            *count -= 1;
            if *count == 0 {
                work.inserting.remove(&self.owner);
            }
        }
    }
}

/// A registered tool: its runtime, and its slots if it limits concurrent calls.
#[derive(Clone)]
struct Registered {
    runtime: ToolRuntime,
    slots: Option<Arc<Slots>>,
}

/// Whether queued work got its turn.
enum Turn {
    /// Run now, holding the slot (if the tool has slots) until the work ends.
    Run(Option<Permit>),
    /// The work was cancelled (or its task expired) while it waited.
    Cancelled,
}

/// The task engine: a cheap, cloneable handle.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn TaskStore>,
    clock: Arc<dyn Clock>,
    policy: Policy,
    /// Registered tools. A std lock: never held across an await, and read far more often
    /// than written.
    tools: RwLock<HashMap<String, Registered>>,
    /// The work running in this process: tasks (with their cancellation tokens) and plain
    /// calls. A std mutex: the critical sections are a map insert, remove or lookup, or a
    /// count of at most a few hundred entries.
    running: Mutex<Work>,
    /// Held from counting a principal's stored tasks until the new task is counted among
    /// [`Work::inserting`], so that two creations cannot both see room for one more under
    /// [`Policy::max_retained_per_principal`]. A Tokio mutex: it is held across the store's
    /// `count`. Not across the insert: concurrent creations reach the store together, where
    /// the SQLite store commits them in one transaction (group commit).
    admission: tokio::sync::Mutex<()>,
    /// Work in this process waiting for the answer to an input request, by task and key.
    /// A std mutex: inserts and removes only.
    inputs: Mutex<InputWaiters>,
    changes: broadcast::Sender<Change>,
}

impl Engine {
    /// An engine over `store`, reading time from `clock`.
    pub fn new(store: Arc<dyn TaskStore>, clock: Arc<dyn Clock>, policy: Policy) -> Engine {
        let (changes, _) = broadcast::channel(FEED_CAPACITY);
        Engine {
            inner: Arc::new(Inner {
                store,
                clock,
                policy,
                tools: RwLock::new(HashMap::new()),
                running: Mutex::new(Work::default()),
                admission: tokio::sync::Mutex::new(()),
                inputs: Mutex::new(HashMap::new()),
                changes,
            }),
        }
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

    /// Creates a task in `working` and commits it to the store. The caller answers the
    /// requestor, then calls [`Engine::start`]. From now until its work ends the task
    /// counts as running in this process (see [`Policy::max_running`]).
    ///
    /// # Errors
    /// [`EngineError::UnknownTool`]; [`EngineError::Limit`] if the principal keeps too many
    /// tasks or too many tasks and calls run (nothing is written then); or a store failure.
    pub async fn create(&self, new: NewTask) -> Result<TaskRecord, EngineError> {
        if self.tool(&new.tool).is_none() {
            return Err(EngineError::UnknownTool(new.tool));
        }
        let policy = self.inner.policy;
        let admission = self.inner.admission.lock().await;
        // The store's count, plus the creations admitted but not yet inserted. A creation
        // whose insert just returned may be counted twice for a moment, which can refuse
        // one at the very limit, never admit one over it.
        let stored = self.inner.store.count(&new.owner).await?;
        let inserting = self.work().inserting.get(&new.owner).copied().unwrap_or(0);
        let retained = stored.saturating_add(inserting);
        if retained >= policy.max_retained_per_principal {
            let limit = policy.max_retained_per_principal;
            return Err(LimitExceeded::RetainedPerPrincipal { owner: new.owner, retained, limit }.into());
        }
        let now = self.inner.clock.now();
        let record = TaskRecord {
            id: TaskId::random(),
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
            input_methods: new.input_methods,
        };
        // Reserved before the insert, checking and counting in one critical section, so
        // that concurrent creations and plain calls cannot overshoot the running limits.
        {
            let mut work = self.work();
            work.admit(&record.owner, &policy)?;
            let reserved = Running { attempt: record.attempt, owner: record.owner.clone(), cancel: CancellationToken::new() };
            work.tasks.insert(record.id.clone(), reserved);
        }
        let inserting = Inserting::new(self, &record.owner);
        drop(admission);
        let inserted = self.inner.store.insert(&record).await;
        drop(inserting);
        if let Err(err) = inserted {
            self.forget(&record.id, record.attempt);
            return Err(err.into());
        }
        tracing::info!(task = %record.id, owner = %record.owner, tool = %record.tool, "task created");
        self.publish_task(&record);
        Ok(record)
    }

    /// Starts the work of `task` (its current attempt) in the background. If the tool's
    /// `max_concurrent` slots are all busy, the task joins the tool's queue now (so tasks
    /// start in the order of the calls to this method) and waits in `working` with a status
    /// message saying it is queued.
    ///
    /// # Errors
    /// [`EngineError::UnknownTool`] if the task's tool is not registered.
    pub fn start(&self, task: &TaskRecord) -> Result<(), EngineError> {
        let Registered { runtime, slots } =
            self.registered(&task.tool).ok_or_else(|| EngineError::UnknownTool(task.tool.clone()))?;
        let cancel = CancellationToken::new();
        let running = Running { attempt: task.attempt, owner: task.owner.clone(), cancel: cancel.clone() };
        self.work().tasks.insert(task.id.clone(), running);
        let entry = slots.map(|slots| (slots.enter(), slots.size()));
        let ctx = Context::for_task(self.clone(), task.id.clone(), task.attempt, cancel);
        let engine = self.clone();
        let (id, attempt, arguments) = (task.id.clone(), task.attempt, task.arguments.clone());
        let (tool, error_result_fails) = (task.tool.clone(), task.error_result_fails);
        tokio::spawn(async move {
            let permit = match entry {
                None => None,
                Some((entry, size)) => match wait_turn(entry, size, &tool, &ctx).await {
                    Turn::Run(permit) => permit,
                    Turn::Cancelled => {
                        engine.forget(&id, attempt);
                        return;
                    }
                },
            };
            let work = tokio::spawn(async move { runtime.handler.call(arguments, ctx).await });
            let outcome = match work.await {
                Ok(outcome) => outcome,
                Err(err) => {
                    tracing::error!(task = %id, error = %err, "tool handler panicked");
                    Outcome::Error(ErrorObject::internal("the tool's handler crashed"))
                }
            };
            // The slot and the place among the running work are free before the outcome
            // is written: whoever sees the task end may start another at once.
            drop(permit);
            engine.forget(&id, attempt);
            engine.finish(&id, attempt, outcome, error_result_fails).await;
        });
        Ok(())
    }

    /// Runs a plain (non-task) call of `tool` for `owner` and returns its outcome. The call
    /// counts as running while it runs (see [`Policy::max_running`]), and takes one of the
    /// tool's `max_concurrent` slots, waiting its turn if they are busy.
    ///
    /// # Errors
    /// [`EngineError::UnknownTool`]; [`EngineError::Limit`] if too many tasks and calls run
    /// (the handler is not called then).
    pub async fn call_plain(
        &self,
        owner: &Principal,
        tool: &str,
        arguments: Value,
        ctx: Context,
    ) -> Result<Outcome, EngineError> {
        let Registered { runtime, slots } =
            self.registered(tool).ok_or_else(|| EngineError::UnknownTool(tool.to_owned()))?;
        let _running = {
            let mut work = self.work();
            work.admit(owner, &self.inner.policy)?;
            *work.plain.entry(owner.clone()).or_default() += 1;
            PlainCall { engine: self, owner: owner.clone() }
        };
        let permit = match slots.map(|slots| slots.enter()) {
            None => None,
            Some(Entry::Admitted(permit)) => Some(permit),
            Some(Entry::Queued(turn)) => tokio::select! {
                biased;
                _ = ctx.cancelled() => {
                    let message = format!("the call was cancelled while it waited for a slot of tool {tool}");
                    return Ok(Outcome::Error(ErrorObject::internal(message)));
                }
                permit = turn => permit.ok(),
            },
        };
        let outcome = runtime.handler.call(arguments, ctx).await;
        drop(permit);
        Ok(outcome)
    }

    /// Reads `owner`'s task `id`.
    ///
    /// # Errors
    /// [`EngineError::NotFound`] if there is no such task, or it belongs to another
    /// principal (invariant 4: indistinguishable).
    pub async fn get(&self, owner: &Principal, id: &TaskId) -> Result<TaskRecord, EngineError> {
        match self.inner.store.get(id).await? {
            Some(record) if &record.owner == owner => Ok(record),
            _ => Err(EngineError::NotFound(id.clone())),
        }
    }

    /// A page of the owner's tasks, oldest first.
    ///
    /// # Errors
    /// A store failure.
    pub async fn list(&self, query: &ListQuery) -> Result<Vec<TaskRecord>, EngineError> {
        Ok(self.inner.store.list(query).await?)
    }

    /// Cancels `owner`'s task `id` now: the task is `cancelled` in the store before this
    /// returns, then its work is told to stop.
    ///
    /// # Errors
    /// [`EngineError::NotFound`]; [`EngineError::Refused`] if the task is already terminal.
    pub async fn cancel(&self, owner: &Principal, id: &TaskId) -> Result<TaskRecord, EngineError> {
        let record = self
            .apply(id, Some(owner), None, |_| {
                (Event::Cancel, Some("The task was cancelled by request.".to_owned()))
            })
            .await?;
        self.stop_work(id);
        tracing::info!(task = %id, owner = %owner, "task cancelled");
        Ok(record)
    }

    /// Waits until `owner`'s task `id` is terminal and returns it. Event-driven: it wakes on
    /// the change feed, never on a timer.
    ///
    /// # Errors
    /// [`EngineError::NotFound`] if there is no such task or it was purged while waiting.
    pub async fn wait_terminal(&self, owner: &Principal, id: &TaskId) -> Result<TaskRecord, EngineError> {
        let mut feed = self.subscribe();
        let record = self.get(owner, id).await?;
        if record.status().is_terminal() {
            return Ok(record);
        }
        loop {
            match feed.recv().await {
                Ok(Change::Task(record)) if &record.id == id && record.status().is_terminal() => {
                    return Ok(TaskRecord::clone(&record));
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let record = self.get(owner, id).await?;
                    if record.status().is_terminal() {
                        return Ok(record);
                    }
                }
                Err(broadcast::error::RecvError::Closed) => {
                    return Err(EngineError::NotFound(id.clone()));
                }
            }
        }
    }

    /// Resolves tasks a previous process left unfinished, by their tool's restart policy:
    /// `fail` (also for tools no longer registered) or `retry`.
    ///
    /// Call once at start, before serving, while this process is the only one running
    /// tasks on the store (the embedded SQLite store).
    ///
    /// # Errors
    /// A store failure.
    pub async fn recover(&self) -> Result<Recovery, EngineError> {
        let mut report = Recovery::default();
        for task in self.inner.store.unfinished(u32::MAX).await? {
            let runtime = self.tool(&task.tool);
            match runtime.map(|tool| (tool.on_restart, tool.max_attempts.max(1))) {
                Some((RestartPolicy::Retry, max_attempts)) if task.attempt < max_attempts => {
                    let restarted = self.restart(&task).await?;
                    self.start(&restarted)?;
                    report.retried += 1;
                }
                Some((RestartPolicy::Retry, max_attempts)) => {
                    tracing::warn!(task = %task.id, tool = %task.tool, attempts = task.attempt, "a retried task was interrupted on its last attempt; failing it");
                    self.fail_interrupted(&task, ErrorObject::interrupted_repeatedly(task.attempt, max_attempts)).await?;
                    report.failed += 1;
                }
                Some((RestartPolicy::Fail, _)) | None => {
                    self.fail_interrupted(&task, ErrorObject::interrupted_by_restart()).await?;
                    report.failed += 1;
                }
            }
        }
        if report != Recovery::default() {
            tracing::info!(failed = report.failed, retried = report.retried, "recovered tasks from a previous run");
        }
        Ok(report)
    }

    /// Fails a task a previous process left unfinished with `error`; a task that finished
    /// or vanished meanwhile is left alone. Any place the task still holds among this
    /// process's running work is given up.
    async fn fail_interrupted(&self, task: &TaskRecord, error: ErrorObject) -> Result<(), EngineError> {
        let failed = self
            .apply(&task.id, None, None, |_| {
                let message = error.message.clone();
                (Event::Fail(Outcome::Error(error.clone())), Some(message))
            })
            .await;
        self.stop_work(&task.id);
        match failed {
            Ok(_) | Err(EngineError::Refused { .. } | EngineError::NotFound(_)) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// One pass of the TTL sweeper at the clock's `now`: fails unfinished tasks whose TTL
    /// ran out (stopping their work), then deletes finished ones.
    ///
    /// # Errors
    /// A store failure.
    pub async fn sweep_once(&self) -> Result<Sweep, EngineError> {
        let now = self.inner.clock.now();
        let mut sweep = Sweep::default();
        for task in self.inner.store.expired(now, SWEEP_BATCH).await? {
            match self.apply(&task.id, None, None, |_| (Event::Expire, Some(ErrorObject::expired().message))).await {
                Ok(_) => sweep.expired += 1,
                Err(EngineError::Refused { .. } | EngineError::NotFound(_)) => {}
                Err(err) => return Err(err),
            }
            self.stop_work(&task.id);
        }
        sweep.purged = self.inner.store.purge(now, SWEEP_BATCH).await?;
        if sweep != Sweep::default() {
            tracing::debug!(expired = sweep.expired, purged = sweep.purged, "swept expired tasks");
        }
        Ok(sweep)
    }

    /// Runs [`Engine::sweep_once`] every `every` until `shutdown` fires.
    pub fn spawn_sweeper(&self, every: Duration, shutdown: CancellationToken) -> JoinHandle<()> {
        let engine = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = ticks.tick() => {}
                }
                if let Err(err) = engine.sweep_once().await {
                    tracing::warn!(error = %err, "TTL sweep failed; will try again");
                }
            }
        })
    }

    /// Records the end of attempt `attempt` of task `id`. A stale attempt, or a task that
    /// is already terminal (cancelled meanwhile), keeps what it has.
    async fn finish(&self, id: &TaskId, attempt: u32, outcome: Outcome, error_result_fails: bool) {
        let event_of = |outcome: Outcome| -> (Event, Option<String>) {
            match outcome {
                Outcome::Result(result) if error_result_fails && reports_error(&result) => {
                    let message = format!("The tool reported an error: {}", first_text(&result));
                    (Event::Fail(Outcome::Result(result)), Some(message))
                }
                Outcome::Result(result) => (Event::Complete(result), None),
                Outcome::Error(error) => {
                    let message = format!("The request failed: {}", error.message);
                    (Event::Fail(Outcome::Error(error)), Some(message))
                }
            }
        };
        match self.apply(id, None, Some(attempt), |_| event_of(outcome.clone())).await {
            Ok(record) => tracing::info!(task = %id, status = %record.status(), "task finished"),
            Err(EngineError::Refused { from, .. }) => {
                tracing::debug!(task = %id, %from, "work ended after the task was already terminal");
            }
            Err(err) => tracing::warn!(task = %id, error = %err, "could not record the task's outcome"),
        }
    }

    /// Asks the requestor of task `id` for input on behalf of attempt `attempt`: records the
    /// request in the store under a fresh key (the task becomes `input_required`) and waits
    /// for [`Engine::answer`]. The requestor must have declared it can answer `method`.
    pub(crate) async fn ask(
        &self,
        id: &TaskId,
        attempt: u32,
        request: InputRequest,
        cancel: &CancellationToken,
    ) -> Result<Value, ErrorObject> {
        let method = request.method.clone();
        let task = self.inner.store.get(id).await.map_err(|err| ErrorObject::internal(err.to_string()))?;
        if !task.is_some_and(|task| task.input_methods.contains(&method)) {
            return Err(ErrorObject::internal(format!(
                "cannot ask the client for input with {method}: the client did not declare that capability \
                 when it created this task"
            )));
        }
        let key = TaskId::random().to_string();
        let (tx, rx) = oneshot::channel();
        self.inputs().insert((id.clone(), key.clone()), tx);
        // However this wait ends (answer, cancellation, or the work being dropped), the
        // waiter leaves the map.
        let _waiter = WaiterGuard { engine: self, key: (id.clone(), key.clone()) };
        let asked = self
            .apply(id, None, Some(attempt), |task| {
                let mut requests = match &task.state {
                    TaskState::InputRequired { requests } => requests.clone(),
                    _ => Default::default(),
                };
                requests.insert(key.clone(), request.clone());
                (Event::NeedInput(requests), Some(format!("Waiting for the client to answer {method}")))
            })
            .await;
        if let Err(err) = asked {
            return Err(ErrorObject::internal(format!("could not record the input request: {err}")));
        }
        tokio::select! {
            answer = rx => answer.unwrap_or_else(|_| Err(ErrorObject::internal("the input request was dropped"))),
            _ = cancel.cancelled() => Err(ErrorObject::internal("the task was cancelled while waiting for input")),
        }
    }

    /// Answers input request `key` of `owner`'s task `id` with the client's response (or
    /// its error). The request leaves the task; with none left the task is `working` again;
    /// then the waiting work gets the answer. `Ok(false)`: the request was not outstanding
    /// (already answered, so a repeated answer is applied once; or the task moved on).
    ///
    /// # Errors
    /// [`EngineError::NotFound`], or a store failure.
    pub async fn answer(
        &self,
        owner: &Principal,
        id: &TaskId,
        key: &str,
        answer: Result<Value, ErrorObject>,
    ) -> Result<bool, EngineError> {
        let written = self
            .write(id, Some(owner), |task| {
                let TaskState::InputRequired { requests } = &task.state else { return Ok(None) };
                if !requests.contains_key(key) {
                    return Ok(None);
                }
                let mut rest = requests.clone();
                rest.remove(key);
                let (event, message) = if rest.is_empty() {
                    (Event::InputAnswered, Some("Input received; working".to_owned()))
                } else {
                    (Event::NeedInput(rest), task.status_message.clone())
                };
                let state = transition(task, event)?;
                Ok(Some(Update { state, status_message: message, updated_at: self.inner.clock.now(), attempt: task.attempt }))
            })
            .await?;
        if written.is_none() {
            return Ok(false);
        }
        if let Some(waiter) = self.inputs().remove(&(id.clone(), key.to_owned())) {
            let _ = waiter.send(answer);
        }
        Ok(true)
    }

    /// Sets the status message of a running task (attempt-fenced). A terminal task keeps
    /// its final message.
    pub(crate) async fn set_status_message(&self, id: &TaskId, attempt: u32, message: String) -> Result<(), EngineError> {
        self.write(id, None, |task| {
            if task.attempt != attempt || task.status().is_terminal() {
                return Ok(None);
            }
            Ok(Some(Update {
                state: task.state.clone(),
                status_message: Some(message.clone()),
                updated_at: self.inner.clock.now(),
                attempt: task.attempt,
            }))
        })
        .await
        .map(|_| ())
    }

    pub(crate) fn report_progress(&self, id: &TaskId, attempt: u32, progress: Progress) {
        let owner = match self.work().tasks.get(id) {
            Some(running) if running.attempt == attempt => running.owner.clone(),
            _ => return,
        };
        let _ = self.inner.changes.send(Change::Progress { id: id.clone(), owner, progress });
    }

    /// Gives `task` a new attempt in `working`, for a retry after a restart.
    async fn restart(&self, task: &TaskRecord) -> Result<TaskRecord, EngineError> {
        let attempt = task.attempt + 1;
        let state = match task.state.clone() {
            TaskState::InputRequired { .. } => TaskState::Working,
            other => other,
        };
        let update = Update {
            state,
            status_message: Some(format!("Running again after a server restart (attempt {attempt})")),
            updated_at: self.inner.clock.now(),
            attempt,
        };
        let record = self.inner.store.replace(&task.id, task.version, &update).await?;
        self.publish_task(&record);
        Ok(record)
    }

    /// Reads, applies `event_of`'s event with the transition function, and writes with
    /// compare-and-set; re-reads and re-applies on conflict. `owner` scopes the read;
    /// `attempt` fences a runner's write.
    async fn apply(
        &self,
        id: &TaskId,
        owner: Option<&Principal>,
        attempt: Option<u32>,
        event_of: impl Fn(&TaskRecord) -> (Event, Option<String>),
    ) -> Result<TaskRecord, EngineError> {
        let written = self
            .write(id, owner, |task| {
                let (event, message) = event_of(task);
                if attempt.is_some_and(|attempt| attempt != task.attempt) {
                    return Err(EngineError::Refused { id: id.clone(), from: task.status(), event: event.kind() });
                }
                let state = transition(task, event)?;
                Ok(Some(Update {
                    state,
                    status_message: message.or_else(|| task.status_message.clone()),
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
    /// change feed. (Only the restart of a task at recovery, when nothing else runs yet,
    /// writes without it.)
    async fn write(
        &self,
        id: &TaskId,
        owner: Option<&Principal>,
        decide: impl Fn(&TaskRecord) -> Result<Option<Update>, EngineError>,
    ) -> Result<Option<TaskRecord>, EngineError> {
        for _ in 0..MAX_CAS_ATTEMPTS {
            let task = match self.inner.store.get(id).await? {
                Some(task) if owner.is_none_or(|owner| &task.owner == owner) => task,
                _ => return Err(EngineError::NotFound(id.clone())),
            };
            let Some(update) = decide(&task)? else { return Ok(None) };
            match self.inner.store.replace(id, task.version, &update).await {
                Ok(record) => {
                    self.publish_task(&record);
                    return Ok(Some(record));
                }
                Err(StoreError::Conflict(_)) => continue,
                Err(err) => return Err(err.into()),
            }
        }
        Err(EngineError::Contended(id.clone()))
    }


    fn publish_task(&self, record: &TaskRecord) {
        // No subscribers is fine: nobody is waiting.
        let _ = self.inner.changes.send(Change::Task(Arc::new(record.clone())));
    }

    fn stop_work(&self, id: &TaskId) {
        if let Some(running) = self.work().tasks.remove(id) {
            running.cancel.cancel();
        }
    }

    /// Removes attempt `attempt` of task `id` from the running work (a newer attempt stays).
    fn forget(&self, id: &TaskId, attempt: u32) {
        let mut work = self.work();
        if work.tasks.get(id).is_some_and(|run| run.attempt == attempt) {
            work.tasks.remove(id);
        }
    }

    fn registered(&self, name: &str) -> Option<Registered> {
        self.inner.tools.read().unwrap_or_else(PoisonError::into_inner).get(name).cloned()
    }

    fn inputs(&self) -> std::sync::MutexGuard<'_, InputWaiters> {
        self.inner.inputs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn work(&self) -> std::sync::MutexGuard<'_, Work> {
        self.inner.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Waits in the tool's queue if `entry` says so, telling the requestor through the task's
/// status message that it is queued, then that it started.
async fn wait_turn(entry: Entry, size: u32, tool: &str, ctx: &Context) -> Turn {
    let turn = match entry {
        Entry::Admitted(permit) => return Turn::Run(Some(permit)),
        Entry::Queued(turn) => turn,
    };
    ctx.status(queued_message(size, tool)).await;
    tokio::select! {
        biased;
        _ = ctx.cancelled() => Turn::Cancelled,
        permit = turn => {
            ctx.status(format!("started: a slot of tool {tool} came free")).await;
            Turn::Run(permit.ok())
        }
    }
}

/// The status message of a task queued for one of the `size` slots of `tool`, e.g.
/// `queued: waiting for one of 2 slots of tool build`.
fn queued_message(size: u32, tool: &str) -> String {
    if size == 1 {
        format!("queued: waiting for the only slot of tool {tool}")
    } else {
        format!("queued: waiting for one of {size} slots of tool {tool}")
    }
}

/// Applies `event` to `task`'s state with the transition function; a refusal names the task.
fn transition(task: &TaskRecord, event: Event) -> Result<TaskState, EngineError> {
    let from = task.status();
    task.state.clone().on(event).map_err(|refused| EngineError::Refused { id: task.id.clone(), from, event: refused.event })
}

/// Whether a result object says `isError: true` (a `CallToolResult` that failed).
fn reports_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

/// The first text content of a result, shortened, for a status message.
fn first_text(result: &Value) -> String {
    let text = result
        .get("content")
        .and_then(Value::as_array)
        .and_then(|items| items.iter().find_map(|item| item.get("text").and_then(Value::as_str)))
        .unwrap_or("no details");
    let mut short: String = text.chars().take(200).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}
