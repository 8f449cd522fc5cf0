//! Running the work: a task's handler started in the background (after its turn in the
//! tool's queue) and its outcome recorded, plain calls run in place, and the reports the
//! work makes on the way (status messages, progress).

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::admission::{PlainCall, Running};
use crate::engine::{CANCELLED_MESSAGE, Engine};
use crate::error::{EngineError, WorkError};
use crate::slots::{Entry, Permit, Slots};
use crate::store::Update;
use crate::task::{Event, Outcome, Principal, TaskId, TaskRecord};
use crate::work::{Context, Progress, ToolRuntime};

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
struct Ending {
    outcome: Outcome,
    /// What the handler's [`Handler::reported_failure`](crate::Handler::reported_failure)
    /// says of a result, for tasks whose `error_result_fails` is set.
    reported_failure: Option<String>,
    /// [`Engine::request_cancel`] asked the work to stop.
    cancel_requested: bool,
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
        let running = Running::new(task.attempt, task.owner.clone(), cancel.clone());
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
            engine.mark_started(&id, attempt);
            let handler = Arc::clone(&runtime.handler);
            let work = tokio::spawn(async move { runtime.handler.call(arguments, ctx).await });
            let outcome = match work.await {
                Ok(outcome) => outcome,
                Err(err) => {
                    tracing::error!(task = %id, error = %err, "tool handler panicked");
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
            let cancel_requested = engine.forget(&id, attempt);
            engine.finish(&id, attempt, Ending { outcome, reported_failure, cancel_requested }).await;
        });
        Ok(())
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
    /// is already terminal (cancelled meanwhile), keeps what it has.
    async fn finish(&self, id: &TaskId, attempt: u32, ending: Ending) {
        let (event, message) = ending.event();
        match self.apply(id, None, Some(attempt), |_| (event.clone(), message.clone())).await {
            Ok(record) => tracing::info!(task = %id, status = %record.status(), "task finished"),
            Err(EngineError::Refused { from, .. }) => {
                tracing::debug!(task = %id, %from, "work ended after the task was already terminal");
            }
            Err(err) => tracing::warn!(task = %id, error = %err, "could not record the task's outcome"),
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
        let _ = self.inner.changes.send(crate::Change::Progress { id: id.clone(), owner, progress });
    }

    /// Publishes output of attempt `attempt` of task `id`; a stale attempt's is dropped.
    pub(crate) fn report_output(&self, id: &TaskId, attempt: u32, text: &str) {
        let owner = match self.work().tasks.get(id) {
            Some(running) if running.attempt == attempt => running.owner.clone(),
            _ => return,
        };
        let _ = self.inner.changes.send(crate::Change::Output { id: id.clone(), owner, text: text.into() });
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
