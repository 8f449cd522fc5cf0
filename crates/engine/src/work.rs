//! The work behind a task: the [`Handler`] trait tools implement, and the [`Context`] a
//! handler receives (progress, status message, cancellation).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::early::{Deferred, Early};
use crate::engine::Engine;
use crate::error::{InputError, WorkError};
use crate::process::ProcessGroup;
use crate::task::{ErrorObject, InputKind, InputRequest, Outcome, RestartPolicy, TaskId, TaskRecord};
use crate::trace::TraceContext;

/// The code that runs a tool call, as a task or plainly.
///
/// A handler returns the request's result (for `tools/call`, a `CallToolResult` object)
/// or its JSON-RPC error. It should watch [`Context::cancelled`] and stop promptly.
///
/// The provided methods are the era's say on results and messages; an era's wrapper around
/// a handler (the server's MCP tool) overrides them, plain handlers keep the defaults.
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Runs the call with `arguments`.
    async fn call(&self, arguments: Value, ctx: Context) -> Outcome;

    /// Whether `result` reports that the work failed (e.g. an MCP tool result with
    /// `isError`), with a short detail for the status message. Asked only for tasks created
    /// with `error_result_fails`; such a task then ends `failed` with the result as its
    /// outcome. By default no result reports a failure.
    fn reported_failure(&self, result: &Value) -> Option<String> {
        let _ = result;
        None
    }

    /// How messages about an input request of `kind` name it (the status message while a
    /// task waits, the errors when it cannot be asked). By default the kind's era-neutral
    /// name (`elicitation`, `sampling`); an era names its request (e.g. its method).
    fn describe_input(&self, kind: InputKind) -> String {
        kind.to_string()
    }
}

/// A handler registered with the engine, with how its calls may run: what to do after a
/// crash, and how many may run at once.
///
/// Build it with [`ToolRuntime::new`] and the builder methods; the fields can be read and
/// set, and more may come (hence `#[non_exhaustive]`).
#[derive(Clone)]
#[non_exhaustive]
pub struct ToolRuntime {
    /// Runs the work.
    pub handler: Arc<dyn Handler>,
    /// What to do with a task this tool was running when the server died.
    pub on_restart: RestartPolicy,
    /// At most this many calls of the tool (tasks and plain calls) run at once in this
    /// process; more wait, a task in `working` with a status message saying it is queued,
    /// and start in the order they came when a slot frees. `None`: no limit.
    pub max_concurrent: Option<u32>,
    /// With [`RestartPolicy::Retry`]: how many attempts a task gets in all. A task that
    /// restarts interrupted on its last attempt fails instead of running again (0 counts
    /// as 1). Ignored with [`RestartPolicy::Fail`].
    pub max_attempts: u32,
    /// Whether the handler may start before its task's creation commits (see
    /// [`ToolRuntime::start_before_commit`]).
    pub start_before_commit: bool,
}

impl ToolRuntime {
    /// The attempts a retried task gets unless [`ToolRuntime::max_attempts`] says otherwise.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

    /// A runtime for `handler`: failed after a restart, no concurrency limit, and
    /// [`ToolRuntime::DEFAULT_MAX_ATTEMPTS`] should a retry policy be set.
    pub fn new(handler: impl Handler) -> ToolRuntime {
        ToolRuntime::from_arc(Arc::new(handler))
    }

    /// As [`ToolRuntime::new`], for a handler already shared.
    pub fn from_arc(handler: Arc<dyn Handler>) -> ToolRuntime {
        ToolRuntime {
            handler,
            on_restart: RestartPolicy::default(),
            max_concurrent: None,
            max_attempts: Self::DEFAULT_MAX_ATTEMPTS,
            start_before_commit: false,
        }
    }

    /// Sets what happens to a task of this tool that a server restart interrupted.
    #[must_use]
    pub fn on_restart(mut self, policy: RestartPolicy) -> ToolRuntime {
        self.on_restart = policy;
        self
    }

    /// Sets how many calls of this tool may run at once (`None`: no limit).
    #[must_use]
    pub fn max_concurrent(mut self, limit: impl Into<Option<u32>>) -> ToolRuntime {
        self.max_concurrent = limit.into();
        self
    }

    /// Lets the handler start while its task's creation is still being committed, rather
    /// than after (the default: `false`). For work with no effect outside its result (a
    /// computation, a lookup), which a creation that fails (a full disk) may waste but never
    /// regret: then the work runs, is stopped, and its outcome is forgotten. Work that ends
    /// before the creation's insert runs has its outcome written with it, in one row and
    /// one commit instead of two, so a quick tool's task is done when its id is answered.
    /// Whatever the work shows of its task (its outcome, progress, output, status, input
    /// requests, checkpoints) is held back until the creation is committed and answered.
    /// Ignored for a tool with [`ToolRuntime::max_concurrent`], for a call with an
    /// idempotency key (which must never run twice) and on a shared store.
    #[must_use]
    pub fn start_before_commit(mut self, early: bool) -> ToolRuntime {
        self.start_before_commit = early;
        self
    }

    /// Sets how many attempts a task of this tool gets in all under
    /// [`RestartPolicy::Retry`].
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> ToolRuntime {
        self.max_attempts = attempts;
        self
    }
}

/// A progress report from the work.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// How far along; increases with each report.
    pub progress: f64,
    /// The total, if known.
    pub total: Option<f64>,
    /// A human-readable message.
    pub message: Option<String>,
}

/// The requestor's side of a plain (non-task) call: where the messages the work sends
/// while it runs go (progress, notifications such as log messages, and requests for input
/// whose answers it awaits). The transport implements it; calls
/// are made in order, before the call's own response.
#[async_trait]
pub trait ClientLink: Send + Sync + 'static {
    /// Sends a progress report (only called if the request carried a progress token).
    fn progress(&self, progress: Progress);
    /// Sends a notification related to the call (e.g. `notifications/message`).
    fn notify(&self, method: &str, params: Value);
    /// Sends a request for input of `kind` to the client and waits for its answer.
    ///
    /// # Errors
    /// The client's error, or the link's own (e.g. the client cannot answer `kind`).
    async fn request(&self, kind: InputKind, params: Value) -> Result<Value, ErrorObject>;

    /// As [`ClientLink::request`], with the name the work gave the question
    /// ([`Context::request_named`]). Eras whose requests carry no names (2025-11-25) ignore
    /// it; a 2026-07-28 round uses it as the key in `inputRequests`.
    ///
    /// # Errors
    /// As [`ClientLink::request`].
    async fn request_named(&self, key: &str, kind: InputKind, params: Value) -> Result<Value, ErrorObject> {
        let _ = key;
        self.request(kind, params).await
    }
}

/// What a handler can do besides its work: report progress and status, see cancellation.
#[derive(Clone)]
pub struct Context {
    cancel: CancellationToken,
    reporter: Reporter,
    /// The task's trace context (a plain call has none).
    trace: Option<TraceContext>,
}

#[derive(Clone)]
enum Reporter {
    /// Reports become task changes in the engine, fenced by the attempt; held back until
    /// the creation is answered when the work started before it committed (`early`).
    Task { engine: Engine, id: TaskId, attempt: u32, early: Option<Arc<Early>> },
    /// A plain call: progress goes straight to the caller, status messages nowhere.
    Direct(Option<Arc<dyn ClientLink>>),
}

impl Context {
    /// A context for a plain (non-task) call: messages to the client go through `link`
    /// (none: they are dropped), synchronously, so they are ordered before the response.
    pub fn plain(cancel: CancellationToken, link: Option<Arc<dyn ClientLink>>) -> Context {
        Context { cancel, reporter: Reporter::Direct(link), trace: None }
    }

    pub(crate) fn for_task(engine: Engine, task: &TaskRecord, cancel: CancellationToken, early: Option<Arc<Early>>) -> Context {
        let reporter = Reporter::Task { engine, id: task.id.clone(), attempt: task.attempt, early };
        Context { cancel, reporter, trace: task.trace.clone() }
    }

    /// For work started before its creation committed: waits until the creation is
    /// answered; `false` if it failed (the task does not exist, the work is stopped).
    async fn answered(&self) -> bool {
        match &self.reporter {
            Reporter::Task { early: Some(early), .. } => early.opened().await,
            _ => true,
        }
    }

    /// The W3C trace context the task was created with ([`TaskRecord::trace`]); `None` for a
    /// plain call or a request that carried none. Work that starts processes or calls other
    /// services passes on a [`TraceContext::child`] of it.
    pub fn trace(&self) -> Option<&TraceContext> {
        self.trace.as_ref()
    }

    /// The task this work runs for; `None` for a plain call.
    pub fn task_id(&self) -> Option<&TaskId> {
        match &self.reporter {
            Reporter::Task { id, .. } => Some(id),
            Reporter::Direct(_) => None,
        }
    }

    /// Which attempt this is (1 for the first run; bumped by each retry after a restart).
    pub fn attempt(&self) -> u32 {
        match &self.reporter {
            Reporter::Task { attempt, .. } => *attempt,
            Reporter::Direct(_) => 1,
        }
    }

    /// Resolves when the call or task is cancelled (or expires, or the server stops it).
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// Whether the call or task has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The token behind [`Context::cancelled`], for handlers that hand it on.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Reports progress. Dropped once the work is cancelled or finished: progress stops at
    /// a terminal status (2025-11-25 progress rule).
    pub fn progress(&self, progress: Progress) {
        if self.cancel.is_cancelled() {
            return;
        }
        match &self.reporter {
            Reporter::Task { engine, id, attempt, early } => {
                match early {
                    Some(early) => early.report(engine, Deferred::Progress(progress)),
                    None => engine.report_progress(id, *attempt, progress),
                }
            }
            Reporter::Direct(Some(link)) => link.progress(progress),
            Reporter::Direct(None) => {}
        }
    }

    /// Sends a notification about this call to the client, e.g. a `notifications/message`
    /// log line. Dropped once cancelled. For tasks, not delivered yet: task-scoped messages
    /// to the client go through the engine's input requests.
    pub fn notify(&self, method: &str, params: Value) {
        if self.cancel.is_cancelled() {
            return;
        }
        if let Reporter::Direct(Some(link)) = &self.reporter {
            link.notify(method, params);
        }
    }

    /// Asks the client for input of `kind` and waits for the answer. In a plain call the
    /// request goes straight to the client; in a task it becomes an input request of the
    /// task (`input_required` until answered), delivered to the client by the dialect
    /// (2025-11-25: while it waits in `tasks/result`).
    ///
    /// # Errors
    /// [`InputError::Client`]: the client's error. [`InputError::Work`]: no client to ask,
    /// it did not declare that it can answer `kind`, or the work was cancelled meanwhile
    /// (the server renders these as internal errors). `Outcome::from` turns either into the
    /// work's outcome.
    pub async fn request(&self, kind: InputKind, params: Value) -> Result<Value, InputError> {
        self.ask(None, kind, params).await
    }

    /// As [`Context::request`], with a name for the question: the key of the input request
    /// where the era shows one (2026-07-28 `inputRequests`, a task's input requests), so a
    /// client may know the question by it (e.g. `user_name`). A key must not name another
    /// question of the task still waiting for its answer.
    ///
    /// # Errors
    /// As [`Context::request`]; [`WorkError::InputKeyInUse`] for a key in use.
    pub async fn request_named(&self, key: &str, kind: InputKind, params: Value) -> Result<Value, InputError> {
        self.ask(Some(key), kind, params).await
    }

    async fn ask(&self, key: Option<&str>, kind: InputKind, params: Value) -> Result<Value, InputError> {
        match &self.reporter {
            Reporter::Direct(Some(link)) => {
                let asked = async {
                    match key {
                        Some(key) => link.request_named(key, kind, params).await,
                        None => link.request(kind, params).await,
                    }
                };
                tokio::select! {
                    answer = asked => answer.map_err(InputError::Client),
                    _ = self.cancel.cancelled() => Err(WorkError::CallCancelled.into()),
                }
            }
            Reporter::Direct(None) => Err(WorkError::NoClient { kind, name: kind.to_string() }.into()),
            Reporter::Task { engine, id, attempt, .. } => {
                if !self.answered().await {
                    return Err(WorkError::CallCancelled.into());
                }
                let request = InputRequest { kind, params };
                engine.ask(id, *attempt, key, request, &self.cancel).await
            }
        }
    }

    /// Asks the user through the client ([`InputKind::Elicitation`]) with `params`
    /// (`message`, `requestedSchema`). The answer is the client's `ElicitResult` (`action`,
    /// `content`).
    ///
    /// # Errors
    /// As [`Context::request`].
    pub async fn elicit(&self, params: Value) -> Result<Value, InputError> {
        self.request(InputKind::Elicitation, params).await
    }

    /// Asks the client's model ([`InputKind::Sampling`]) with `params`.
    ///
    /// # Errors
    /// As [`Context::request`].
    pub async fn sample(&self, params: Value) -> Result<Value, InputError> {
        self.request(InputKind::Sampling, params).await
    }

    /// Asks the client for its roots ([`InputKind::Roots`]); the answer is its
    /// `ListRootsResult`.
    ///
    /// # Errors
    /// As [`Context::request`].
    pub async fn list_roots(&self) -> Result<Value, InputError> {
        self.request(InputKind::Roots, serde_json::json!({})).await
    }

    /// Publishes output the work wrote (a command's stdout): on the engine's output feed,
    /// for live views ([`Engine::subscribe_output`](crate::Engine::subscribe_output)), and
    /// into the task's event log (`dev.mcp-tasks.output`, coalesced into lines). No-op for
    /// plain calls and once cancelled.
    pub fn output(&self, text: &str) {
        self.print(text, false);
    }

    /// Output the work wrote on its stderr: into the task's event log only
    /// (`dev.mcp-tasks.output` with `"stream": "stderr"`). No-op for plain calls and once
    /// cancelled.
    pub fn stderr(&self, text: &str) {
        self.print(text, true);
    }

    fn print(&self, text: &str, stderr: bool) {
        if self.cancel.is_cancelled() || text.is_empty() {
            return;
        }
        match &self.reporter {
            Reporter::Task { engine, early: Some(early), .. } => early.report(engine, Deferred::Output(text.to_owned(), stderr)),
            Reporter::Task { engine, id, attempt, early: None } => engine.report_output(id, *attempt, text, stderr),
            Reporter::Direct(_) => {}
        }
    }

    /// Adds an event of its own to the task's event log, after what the work printed before
    /// it: `kind` a vendor-prefixed type (e.g. `dev.mcp-tasks.log`), `payload` a JSON
    /// object. No-op for plain calls and once cancelled.
    pub fn event(&self, kind: &str, payload: Value) {
        if self.cancel.is_cancelled() {
            return;
        }
        match &self.reporter {
            Reporter::Task { engine, early: Some(early), .. } => early.report(engine, Deferred::Event(kind.to_owned(), payload)),
            Reporter::Task { engine, id, attempt, early: None } => engine.log_event(id, *attempt, kind, payload),
            Reporter::Direct(_) => {}
        }
    }

    /// Sets the task's status message (shown by `tasks/get`). No-op for plain calls and
    /// once cancelled (the task's final message stays).
    pub async fn status(&self, message: impl Into<String>) {
        if self.cancel.is_cancelled() {
            return;
        }
        if let Reporter::Task { engine, id, attempt, .. } = &self.reporter
            && self.answered().await
            && let Err(err) = engine.set_status_message(id, *attempt, message.into()).await
        {
            tracing::warn!(task = %id, error = %err, "could not store status message");
        }
    }

    /// Records `checkpoint` with the task: a note of where the work stands (e.g. the id of an
    /// upstream task it drives), replacing the one recorded before. The write is fenced by
    /// the attempt: it returns `true` once the note is durable, `false` if this attempt is
    /// no longer the task's (or the task is finished), and for plain calls (they are not
    /// recovered). A task with a checkpoint is run again after a server restart, whatever
    /// its tool's restart policy ([`Engine::recover`]); the handler reads the note with
    /// [`Context::checkpointed`] and resumes from it. Keep it small: it is one column of
    /// the task's row.
    pub async fn checkpoint(&self, checkpoint: Value) -> bool {
        let Reporter::Task { engine, id, attempt, .. } = &self.reporter else {
            return false;
        };
        if !self.answered().await {
            return false;
        }
        match engine.inner.store.set_checkpoint(id, *attempt, &checkpoint).await {
            Ok(written) => written,
            Err(err) => {
                tracing::warn!(task = %id, error = %err, "could not store the task's checkpoint");
                false
            }
        }
    }

    /// The checkpoint last recorded for this task ([`Context::checkpoint`]), by this attempt
    /// or an earlier one (e.g. the attempt a server restart interrupted). `None` for a plain
    /// call, a task that recorded none, or a store that cannot be read (logged).
    pub async fn checkpointed(&self) -> Option<Value> {
        let Reporter::Task { engine, id, .. } = &self.reporter else {
            return None;
        };
        if !self.answered().await {
            return None;
        }
        engine.inner.store.checkpoint(id).await.unwrap_or_else(|err| {
            tracing::warn!(task = %id, error = %err, "could not read the task's checkpoint");
            None
        })
    }

    /// Records, with the task, the process group the work started, so that a server
    /// started after a crash ends the group before it resolves the task. Call it as soon
    /// as the group exists; it returns once the record is durable. No-op for plain calls
    /// (they are not recovered).
    pub async fn process_started(&self, group: ProcessGroup) {
        if let Reporter::Task { engine, id, .. } = &self.reporter
            && self.answered().await
            && let Err(err) = engine.inner.store.set_process_group(id, &group).await
        {
            tracing::warn!(task = %id, error = %err, "could not record the task's process group");
        }
    }
}

/// What a panic said, when it said it with text (as `panic!` does): for the log line of a
/// handler (a tool's, or a request's in the server) whose panic was caught.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> Option<&str> {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
}
