//! Running the work: a task's handler started in the background (after its turn in the
//! tool's queue) and its outcome recorded, plain calls run in place, and the reports the
//! work makes on the way (status messages, progress).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::admission::{CallPlace, PlainCall, Running};
use crate::early::Early;
use crate::engine::{CANCELLED_MESSAGE, Engine};
use crate::error::{EngineError, WorkError};
use crate::slots::{Entry, Permit, Slots};
use crate::store::Update;
use crate::task::{Event, Outcome, Principal, TaskId, TaskRecord};
use crate::work::{Context, Progress, ToolRuntime};

/// The first wait before the outcome of a task is written again after a store failure.
const FINISH_RETRY_FIRST: Duration = Duration::from_millis(50);
/// The longest wait between two tries of writing an outcome.
const FINISH_RETRY_MAX: Duration = Duration::from_secs(5);

/// A registered tool: its runtime, and its slots if it limits concurrent calls.
#[derive(Clone)]
pub(crate) struct Registered {
    pub(crate) runtime: ToolRuntime,
    pub(crate) slots: Option<Arc<Slots>>,
}

/// Whether queued work got its turn.
enum Turn {
    /// Run now, holding the slot (if the tool has slots) until the work ends.
    Run(Option<Permit>),
    /// The work was cancelled (or its task expired) while it waited.
    Cancelled,
}

/// How the work of a task ended, as [`Engine::finish`] records it.
pub(crate) struct Ending {
    pub(crate) outcome: Outcome,
    /// What the handler's [`Handler::reported_failure`](crate::Handler::reported_failure)
    /// says of a result, for tasks whose `error_result_fails` is set.
    pub(crate) reported_failure: Option<String>,
    /// [`Engine::request_cancel`] asked the work to stop.
    pub(crate) cancel_requested: bool,
}

impl Ending {
    /// The event that records this ending, and the status message.
    fn event(self) -> (Event, Option<String>) {
        if self.cancel_requested {
            return (Event::Cancel, Some(CANCELLED_MESSAGE.to_owned()));
        }
        match (self.outcome, self.reported_failure) {
            (Outcome::Result(result), Some(detail)) => {
                let message = format!("The tool reported an error: {detail}");
                (Event::Fail(Outcome::Result(result)), Some(message))
            }
            (Outcome::Result(result), None) => (Event::Complete(result), None),
            (Outcome::Error(error), _) => {
                let message = format!("The request failed: {}", error.message);
                (Event::Fail(Outcome::Error(error)), Some(message))
            }
            (Outcome::Failure(failure), _) => {
                let message = format!("The request failed: {failure}");
                (Event::Fail(Outcome::Failure(failure)), Some(message))
            }
        }
    }
}

impl Engine {
    /// Starts the work of `task` (its current attempt) in the background; a task queued
    /// for another node (attempt 0, see [`Engine::set_runs_work`]) is left to it. If the tool's
    /// `max_concurrent` slots are all busy, the task joins the tool's queue now (so tasks
    /// start in the order of the calls to this method) and waits in `working` with a status
    /// message saying it is queued.
    ///
    /// # Errors
    /// [`EngineError::UnknownTool`] if the task's tool is not registered.
    ///
    /// A task whose work started before its creation committed
    /// ([`ToolRuntime::start_before_commit`]) is not started again: what its work showed
    /// meanwhile (its outcome too, if it ended) is published now, and from now on as it comes.
    pub fn start(&self, task: &TaskRecord) -> Result<(), EngineError> {
        let early = self.work().early.remove(&task.id);
        if let Some(early) = early {
            early.open(self);
            return Ok(());
        }
        let Registered { runtime, slots } =
            self.registered(&task.tool).ok_or_else(|| EngineError::UnknownTool(task.tool.clone()))?;
        if task.attempt == 0 {
            // Queued by a node that runs no work: a node that does claims it from the store.
            tracing::debug!(task = %task.id, "task queued for a node that runs work");
            return Ok(());
        }
        let cancel = CancellationToken::new();
        // Started only after its insert or take-over: the store holds this node's claim.
        let running = Running { claimed: true, ..Running::new(task.attempt, task.owner.clone(), cancel.clone()) };
        self.work().tasks.insert(task.id.clone(), running);
        let entry = slots.map(|slots| (slots.enter(), slots.size()));
        self.spawn_work(task, runtime, entry, cancel, None);
        Ok(())
    }

    /// Starts the work of new task `task`, admitted and about to be inserted, before its
    /// insert commits, if its tool lets it ([`ToolRuntime::start_before_commit`]) and nothing
    /// forbids it: no idempotency key (a keyed call must never run twice), this node runs
    /// the work, and the tool has no slots (whose queue order is that of
    /// [`Engine::start`]). The [`Early`] returned goes to the insert
    /// ([`ClaimStore::insert_claimed_early`](crate::ClaimStore::insert_claimed_early)). On a
    /// shared store the running place across the nodes is taken by that insert: work refused
    /// one there is abandoned, as after any failed insert (it has no effect outside its
    /// result, or its tool would not start it early).
    pub(crate) fn start_early(&self, task: &TaskRecord) -> Option<Arc<Early>> {
        if task.idempotency_key.is_some() || task.attempt == 0 {
            return None;
        }
        let Registered { runtime, slots } = self.registered(&task.tool)?;
        if !runtime.start_before_commit || slots.is_some() {
            return None;
        }
        let early = {
            let mut work = self.work();
            // Admitted: the place `admit_task` reserved, with the token the work stops by.
            let cancel = work.tasks.get(&task.id).filter(|run| run.attempt == task.attempt)?.cancel.clone();
            let early = Arc::new(Early::new(task.id.clone(), task.owner.clone(), task.attempt, self.inner.policy.events, cancel));
            work.early.insert(task.id.clone(), Arc::clone(&early));
            early
        };
        self.spawn_work(task, runtime, None, early.cancel().clone(), Some(Arc::clone(&early)));
        Some(early)
    }

    /// The creation of a task whose work started early ([`Engine::start_early`]) failed:
    /// its work stops, and nothing of it is ever shown.
    pub(crate) fn abandon_early(&self, id: &TaskId, early: &Early) {
        self.work().early.remove(id);
        early.refuse();
    }

    /// Runs the work of `task` in a Tokio task of its own: its turn in the tool's queue
    /// (`entry`), the handler, and the outcome recorded.
    fn spawn_work(
        &self,
        task: &TaskRecord,
        runtime: ToolRuntime,
        entry: Option<(Entry, u32)>,
        cancel: CancellationToken,
        early: Option<Arc<Early>>,
    ) {
        let ctx = Context::for_task(self.clone(), task, cancel, early.clone());
        let engine = self.clone();
        let (id, attempt, arguments) = (task.id.clone(), task.attempt, task.arguments.clone());
        let (tool, error_result_fails) = (task.tool.clone(), task.error_result_fails);
        // The work (the handler, in its own Tokio task) runs inside the task's span.
        let span = task_span(task);
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
            // On a shared store the tool's limit holds across every node: a slot in the store too.
            let shared_slot = match runtime.max_concurrent {
                Some(size) if engine.inner.store.shared() => Some(size),
                _ => None,
            };
            if let Some(size) = shared_slot
                && let Turn::Cancelled = engine.wait_shared_slot(&tool, size, &id, &ctx).await
            {
                drop(permit);
                engine.forget(&id, attempt);
                return;
            }
            engine.mark_started(&id, attempt);
            let handler = Arc::clone(&runtime.handler);
            // The handler runs in this Tokio task (inside the task's span), with its panic
            // caught here: a Tokio task of its own would cost a spawn, a move of this large
            // future and a wake-up per task, for the same catch.
            let outcome = match call_catching_panics(handler.call(arguments, ctx)).await {
                Ok(outcome) => outcome,
                Err(panic) => {
                    let error = crate::work::panic_message(panic.as_ref()).unwrap_or("a panic without a message");
                    tracing::error!(task = %id, %error, "tool handler panicked");
                    Outcome::Failure(WorkError::HandlerCrashed)
                }
            };
            let reported_failure = match &outcome {
                Outcome::Result(result) if error_result_fails => handler.reported_failure(result),
                _ => None,
            };
            // The slot and the place among the running work are free before the outcome
            // is written: whoever sees the task end may start another at once.
            drop(permit);
            if shared_slot.is_some()
                && let Err(err) = engine.inner.store.release_slot(&tool, &id).await
            {
                // It frees by itself once the task is seen finished.
                tracing::warn!(task = %id, error = %err, "could not give up the tool's slot");
            }
            let cancel_requested = engine.forget(&id, attempt);
            let ending = Ending { outcome, reported_failure, cancel_requested };
            match early {
                None => engine.finish(&id, attempt, ending).await,
                Some(early) => engine.finish_early(&early, &id, attempt, ending).await,
            }
        }.instrument(span));
    }

    /// Runs a plain (non-task) call of `tool` for `owner` and returns its outcome. The call
    /// counts as running while it runs (see [`Policy::max_running`](crate::Policy::max_running)),
    /// and takes one of the tool's `max_concurrent` slots, waiting its turn if they are busy.
    /// Cancelled while it waits, it ends with [`WorkError::CancelledInQueue`].
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
        let _running = PlainCall::admit(self, owner)?;
        let _place = CallPlace::take(self, owner).await?;
        let permit = match slots.map(|slots| slots.enter()) {
            None => None,
            Some(Entry::Admitted(permit)) => Some(permit),
            Some(Entry::Queued(turn)) => tokio::select! {
                biased;
                _ = ctx.cancelled() => {
                    return Ok(Outcome::Failure(WorkError::CancelledInQueue { tool: tool.to_owned() }));
                }
                permit = turn => permit.ok(),
            },
        };
        let outcome = runtime.handler.call(arguments, ctx).await;
        drop(permit);
        Ok(outcome)
    }

    /// Records the end of attempt `attempt` of task `id`. A stale attempt, or a task that
    /// is already terminal (cancelled meanwhile), keeps what it has; an attempt whose claim
    /// this node lost writes nothing.
    pub(crate) async fn finish(&self, id: &TaskId, attempt: u32, ending: Ending) {
        let (event, message) = ending.event();
        self.finish_with(id, attempt, event, message).await;
    }

    /// [`Engine::finish`] of work started before its creation committed: an ending that
    /// comes before the insert runs goes in with it; a later one is written on its own once
    /// the creation is answered; after a failed creation nothing is written.
    async fn finish_early(&self, early: &Early, id: &TaskId, attempt: u32, ending: Ending) {
        let (event, message) = ending.event();
        let Err((event, message)) = early.offer(event, message, self.inner.clock.now()) else {
            // The ending goes in with the insert, and what the work reported with it (on a
            // store that writes endings with inserts; another declines it, and it is written
            // when the creation is answered: `Early::open`).
            return;
        };
        if early.opened().await {
            self.finish_with(id, attempt, event, message).await;
        } else {
            self.forget_events(id);
        }
    }

    /// Records `event` (with status `message`) as the end of attempt `attempt` of task `id`.
    pub(crate) async fn finish_with(&self, id: &TaskId, attempt: u32, event: Event, message: Option<String>) {
        // What the work reported goes into the log before its outcome (after it, the log is
        // frozen).
        self.flush_events(id).await;
        if self.work().lost.remove(&(id.clone(), attempt)) {
            tracing::info!(task = %id, attempt, "work ended after this node lost its claim; nothing written");
            return;
        }
        let _finishing = self.finishing(id);
        // The outcome is the one thing the requestor waits for: a store that fails (a
        // database restarting, a connection cut) is tried again, backing off, until the write
        // lands or is refused (the task ended meanwhile, or another node took it over after
        // this node's claims went unrenewed: then its attempt is stale).
        let mut backoff = FINISH_RETRY_FIRST;
        loop {
            match self.apply(id, None, Some(attempt), |_| (event.clone(), message.clone())).await {
                Ok(record) => tracing::info!(task = %id, status = %record.status(), "task finished"),
                Err(EngineError::Refused { from, .. }) => {
                    tracing::debug!(task = %id, %from, "work ended after the task was already terminal, or taken over");
                }
                Err(err @ (EngineError::Store(_) | EngineError::Contended(_))) => {
                    tracing::warn!(task = %id, error = %err, retry_in = ?backoff, "could not record the task's outcome; trying again");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(FINISH_RETRY_MAX);
                    continue;
                }
                Err(err) => tracing::warn!(task = %id, error = %err, "could not record the task's outcome"),
            }
            return;
        }
    }

    /// Waits for one of the `size` slots of `tool` in the shared store (its `max_concurrent`
    /// across every node) for task `id`: taken at once if one is free, else again whenever a
    /// task of the tool ends (the change feed) and every half lease (a lapsed holder), telling
    /// the requestor through the status message that the task is queued.
    async fn wait_shared_slot(&self, tool: &str, size: u32, id: &TaskId, ctx: &Context) -> Turn {
        let mut feed = self.subscribe();
        let mut retries = tokio::time::interval(self.inner.lease / 2);
        retries.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut told = false;
        loop {
            match self.inner.store.take_slot(tool, size, id, &self.lease_from_now(), self.inner.clock.now()).await {
                Ok(true) => {
                    if told {
                        ctx.status(format!("started: a slot of tool {tool} came free")).await;
                    }
                    return Turn::Run(None);
                }
                Ok(false) => {}
                Err(err) => tracing::warn!(task = %id, error = %err, "could not take a slot of the tool; trying again"),
            }
            if !told {
                ctx.status(queued_message(size, tool)).await;
                told = true;
            }
            loop {
                tokio::select! {
                    biased;
                    () = ctx.cancelled() => return Turn::Cancelled,
                    change = feed.recv() => match change {
                        Ok(crate::Change::Task(record)) if record.tool == tool && record.status().is_terminal() => break,
                        Ok(_) => {}
                        Err(_) => break,
                    },
                    _ = retries.tick() => break,
                }
            }
        }
    }

    /// Notes that attempt `attempt` of task `id` is past its queue: its handler is called.
    fn mark_started(&self, id: &TaskId, attempt: u32) {
        if let Some(running) = self.work().tasks.get_mut(id).filter(|run| run.attempt == attempt) {
            running.started = true;
        }
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

    /// Publishes a progress report of attempt `attempt` of task `id`; a stale attempt's is
    /// dropped.
    pub(crate) fn report_progress(&self, id: &TaskId, attempt: u32, progress: Progress) {
        let owner = match self.work().tasks.get(id) {
            Some(running) if running.attempt == attempt => running.owner.clone(),
            _ => return,
        };
        self.log_progress(id, attempt, &progress);
        self.send_change(crate::Change::Progress { id: id.clone(), owner, progress });
    }

    /// Publishes output of attempt `attempt` of task `id` (its stdout: to the log and the
    /// live output feed; with `stderr`, to the log only); a stale attempt's is dropped.
    pub(crate) fn report_output(&self, id: &TaskId, attempt: u32, text: &str, stderr: bool) {
        let owner = match self.work().tasks.get(id) {
            Some(running) if running.attempt == attempt => running.owner.clone(),
            _ => return,
        };
        self.log_output(id, attempt, text, stderr);
        if !stderr {
            self.send_output(crate::engine::Output { id: id.clone(), owner, text: text.into() });
        }
    }

    /// Sends `output` to the subscribers of the output feed (none is fine).
    pub(crate) fn send_output(&self, output: crate::engine::Output) {
        let _ = self.inner.outputs.send(output);
    }
}

/// Drives `call` to its outcome, or to the payload of the panic it raised (then it is not
/// polled again, and dropped with any panic of its drop caught too), as a Tokio task's
/// `JoinError` would report it. std's `catch_unwind` around each poll: the engine does
/// not depend on `futures` for its one `catch_unwind` future.
async fn call_catching_panics<'a>(
    mut call: std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send + 'a>>,
) -> Result<Outcome, Box<dyn std::any::Any + Send>> {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::task::Poll;
    let polled = std::future::poll_fn(|cx| match catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(cx))) {
        Ok(Poll::Pending) => Poll::Pending,
        Ok(Poll::Ready(outcome)) => Poll::Ready(Ok(outcome)),
        Err(panic) => Poll::Ready(Err(panic)),
    })
    .await;
    if polled.is_err() {
        let _ = catch_unwind(AssertUnwindSafe(move || drop(call)));
    }
    polled
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

/// The span of `task`'s work, a child of the request's trace when it carried one.
fn task_span(task: &TaskRecord) -> tracing::Span {
    let span = tracing::info_span!(
        "task",
        task = %task.id,
        tool = %task.tool,
        attempt = task.attempt,
        trace_id = tracing::field::Empty,
    );
    if let Some(trace) = &task.trace {
        trace.adopt(&span);
    }
    span
}
