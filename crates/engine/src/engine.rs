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
use crate::error::EngineError;
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

/// Retention and polling policy, applied at creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// TTL granted when the requestor asks for none, in ms.
    pub default_ttl_ms: u64,
    /// The largest TTL granted, in ms; `None` grants any request.
    pub max_ttl_ms: Option<u64>,
    /// Suggested interval between polls, in ms.
    pub poll_interval_ms: u64,
}

impl Default for Policy {
    /// One hour by default, a day at most, polls every second.
    fn default() -> Policy {
        Policy { default_ttl_ms: 3_600_000, max_ttl_ms: Some(86_400_000), poll_interval_ms: 1_000 }
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
    tools: RwLock<HashMap<String, ToolRuntime>>,
    /// Cancellation tokens of the work running in this process, by task. A std mutex: the
    /// critical sections are a map insert, remove or lookup.
    running: Mutex<HashMap<TaskId, Running>>,
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
                running: Mutex::new(HashMap::new()),
                inputs: Mutex::new(HashMap::new()),
                changes,
            }),
        }
    }

    /// The policy the engine applies.
    pub fn policy(&self) -> Policy {
        self.inner.policy
    }

    /// Registers (or replaces) the tool `name`.
    pub fn register(&self, name: impl Into<String>, runtime: ToolRuntime) {
        self.inner.tools.write().unwrap_or_else(PoisonError::into_inner).insert(name.into(), runtime);
    }

    /// The registered tool `name`, for running plain calls.
    pub fn tool(&self, name: &str) -> Option<ToolRuntime> {
        self.inner.tools.read().unwrap_or_else(PoisonError::into_inner).get(name).cloned()
    }

    /// Subscribes to every task change and progress report from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.inner.changes.subscribe()
    }

    /// Creates a task in `working` and commits it to the store. The caller answers the
    /// requestor, then calls [`Engine::start`].
    ///
    /// # Errors
    /// [`EngineError::UnknownTool`], or a store failure.
    pub async fn create(&self, new: NewTask) -> Result<TaskRecord, EngineError> {
        if self.tool(&new.tool).is_none() {
            return Err(EngineError::UnknownTool(new.tool));
        }
        let now = self.inner.clock.now();
        let policy = self.inner.policy;
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
        self.inner.store.insert(&record).await?;
        tracing::info!(task = %record.id, owner = %record.owner, tool = %record.tool, "task created");
        self.publish_task(&record);
        Ok(record)
    }

    /// Starts the work of `task` (its current attempt) in the background.
    ///
    /// # Errors
    /// [`EngineError::UnknownTool`] if the task's tool is not registered.
    pub fn start(&self, task: &TaskRecord) -> Result<(), EngineError> {
        let runtime = self.tool(&task.tool).ok_or_else(|| EngineError::UnknownTool(task.tool.clone()))?;
        let cancel = CancellationToken::new();
        let running = Running { attempt: task.attempt, owner: task.owner.clone(), cancel: cancel.clone() };
        self.running().insert(task.id.clone(), running);
        let ctx = Context::for_task(self.clone(), task.id.clone(), task.attempt, cancel);
        let engine = self.clone();
        let (id, attempt, arguments) = (task.id.clone(), task.attempt, task.arguments.clone());
        let error_result_fails = task.error_result_fails;
        tokio::spawn(async move {
            let work = tokio::spawn(async move { runtime.handler.call(arguments, ctx).await });
            let outcome = match work.await {
                Ok(outcome) => outcome,
                Err(err) => {
                    tracing::error!(task = %id, error = %err, "tool handler panicked");
                    Outcome::Error(ErrorObject::internal("the tool's handler crashed"))
                }
            };
            engine.finish(&id, attempt, outcome, error_result_fails).await;
            let mut running = engine.running();
            if running.get(&id).is_some_and(|run| run.attempt == attempt) {
                running.remove(&id);
            }
        });
        Ok(())
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
            let policy = self.tool(&task.tool).map_or(RestartPolicy::Fail, |tool| tool.on_restart);
            match policy {
                RestartPolicy::Retry => {
                    let restarted = self.restart(&task).await?;
                    self.start(&restarted)?;
                    report.retried += 1;
                }
                RestartPolicy::Fail => {
                    let failed = self
                        .apply(&task.id, None, None, |_| {
                            let error = ErrorObject::interrupted_by_restart();
                            let message = error.message.clone();
                            (Event::Fail(Outcome::Error(error)), Some(message))
                        })
                        .await;
                    match failed {
                        Ok(_) | Err(EngineError::Refused { .. } | EngineError::NotFound(_)) => {}
                        Err(err) => return Err(err),
                    }
                    report.failed += 1;
                }
            }
        }
        if report != Recovery::default() {
            tracing::info!(failed = report.failed, retried = report.retried, "recovered tasks from a previous run");
        }
        Ok(report)
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
        for _ in 0..MAX_CAS_ATTEMPTS {
            let task = self.get(owner, id).await?;
            let TaskState::InputRequired { requests } = &task.state else { return Ok(false) };
            if !requests.contains_key(key) {
                return Ok(false);
            }
            let mut rest = requests.clone();
            rest.remove(key);
            let (event, message) = if rest.is_empty() {
                (Event::InputAnswered, Some("Input received; working".to_owned()))
            } else {
                (Event::NeedInput(rest), task.status_message.clone())
            };
            let from = task.status();
            let state = task.state.clone().on(event).map_err(|refused| EngineError::Refused {
                id: id.clone(),
                from,
                event: refused.event,
            })?;
            let update = Update { state, status_message: message, updated_at: self.inner.clock.now(), attempt: task.attempt };
            match self.inner.store.replace(id, task.version, &update).await {
                Ok(record) => {
                    self.publish_task(&record);
                    if let Some(waiter) = self.inputs().remove(&(id.clone(), key.to_owned())) {
                        let _ = waiter.send(answer);
                    }
                    return Ok(true);
                }
                Err(StoreError::Conflict(_)) => continue,
                Err(err) => return Err(err.into()),
            }
        }
        Err(EngineError::Contended(id.clone()))
    }

    /// Sets the status message of a running task (attempt-fenced). A terminal task keeps
    /// its final message.
    pub(crate) async fn set_status_message(&self, id: &TaskId, attempt: u32, message: String) -> Result<(), EngineError> {
        for _ in 0..MAX_CAS_ATTEMPTS {
            let Some(task) = self.inner.store.get(id).await? else {
                return Err(EngineError::NotFound(id.clone()));
            };
            if task.attempt != attempt || task.status().is_terminal() {
                return Ok(());
            }
            let update = Update {
                state: task.state.clone(),
                status_message: Some(message.clone()),
                updated_at: self.inner.clock.now(),
                attempt: task.attempt,
            };
            match self.inner.store.replace(id, task.version, &update).await {
                Ok(record) => {
                    self.publish_task(&record);
                    return Ok(());
                }
                Err(StoreError::Conflict(_)) => continue,
                Err(err) => return Err(err.into()),
            }
        }
        Err(EngineError::Contended(id.clone()))
    }

    pub(crate) fn report_progress(&self, id: &TaskId, attempt: u32, progress: Progress) {
        let owner = match self.running().get(id) {
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
        for _ in 0..MAX_CAS_ATTEMPTS {
            let task = match self.inner.store.get(id).await? {
                Some(task) if owner.is_none_or(|owner| &task.owner == owner) => task,
                _ => return Err(EngineError::NotFound(id.clone())),
            };
            let (event, message) = event_of(&task);
            if attempt.is_some_and(|attempt| attempt != task.attempt) {
                return Err(EngineError::Refused { id: id.clone(), from: task.status(), event: event.kind() });
            }
            let from = task.status();
            let state = task.state.clone().on(event).map_err(|refused| EngineError::Refused {
                id: id.clone(),
                from,
                event: refused.event,
            })?;
            let update = Update {
                state,
                status_message: message.or_else(|| task.status_message.clone()),
                updated_at: self.inner.clock.now(),
                attempt: task.attempt,
            };
            match self.inner.store.replace(id, task.version, &update).await {
                Ok(record) => {
                    self.publish_task(&record);
                    return Ok(record);
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
        if let Some(running) = self.running().remove(id) {
            running.cancel.cancel();
        }
    }

    fn inputs(&self) -> std::sync::MutexGuard<'_, InputWaiters> {
        self.inner.inputs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, Running>> {
        self.inner.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
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
