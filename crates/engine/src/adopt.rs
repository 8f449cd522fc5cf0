//! Adopting running work: a plain (non-task) call that outlives its requestor's patience is
//! handed off to a task ([`Engine::adopt`]) without stopping or restarting it. The task is
//! created as any other; the work already running becomes its attempt: cancelling the task
//! stops it, its end is the task's outcome, and what it reports from then on goes to the
//! task through the [`TaskLink`] (progress, input requests), not to the answered request.

use std::future::Future;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::engine::{Engine, NewTask};
use crate::error::{EngineError, InputError, WorkError};
use crate::run::Ending;
use crate::task::{ErrorObject, InputKind, InputRequest, Outcome, TaskId, TaskRecord};
use crate::work::{ClientLink, Progress};

/// JSON-RPC's internal error, for the engine's own failures of a question asked through a
/// [`TaskLink`] (the link speaks [`ErrorObject`]s).
const INTERNAL_ERROR: i64 = -32603;

impl Engine {
    /// Creates a task for `new` that adopts `work`: a plain call of `new.tool` that already
    /// runs (with `new.arguments`) and stops when `cancel` fires. The task is committed
    /// before this returns, like any other ([`Engine::create`]; the retention limit
    /// applies), but the running limits are not checked again: the work was admitted as the
    /// plain call it was, and keeps that call's running slot (and its tool's
    /// `max_concurrent` slot). From then on [`Engine::request_cancel`] of the task fires
    /// `cancel`, and the outcome `work` resolves to is recorded as the task's (attempt 1),
    /// as for work the engine started. The work's reports must then go to the returned
    /// [`TaskLink`].
    ///
    /// A server that dies meanwhile recovers the task by its tool's restart policy, as any
    /// other.
    ///
    /// # Errors
    /// As [`Engine::create`], except for the running limits; nothing was created, and the
    /// work goes on as the plain call it was.
    pub async fn adopt<F>(
        &self,
        new: NewTask,
        cancel: CancellationToken,
        work: F,
    ) -> Result<(TaskRecord, TaskLink), EngineError>
    where
        F: Future<Output = Outcome> + Send + 'static,
    {
        let record = self
            .insert_new(new, None, Some(&cancel))
            .await?
            .into_record();
        let handler = self
            .registered(&record.tool)
            .map(|registered| registered.runtime.handler);
        let (engine, id, attempt, error_result_fails) = (
            self.clone(),
            record.id.clone(),
            record.attempt,
            record.error_result_fails,
        );
        tokio::spawn(async move {
            let outcome = work.await;
            let reported_failure = match (&outcome, &handler) {
                (Outcome::Result(result), Some(handler)) if error_result_fails => {
                    handler.reported_failure(result)
                }
                _ => None,
            };
            let cancel_requested = engine.forget(&id, attempt);
            engine
                .finish(
                    &id,
                    attempt,
                    Ending {
                        outcome,
                        reported_failure,
                        cancel_requested,
                    },
                )
                .await;
        });
        let link = TaskLink {
            engine: self.clone(),
            id: record.id.clone(),
            attempt: record.attempt,
            cancel,
        };
        Ok((record, link))
    }
}

/// Where the reports of adopted work go ([`Engine::adopt`]): progress is published as the
/// task's (attempt-fenced), questions become the task's input requests (`input_required`
/// until answered), notifications are dropped (a task has no request to relate them to).
#[derive(Clone)]
pub struct TaskLink {
    engine: Engine,
    id: TaskId,
    attempt: u32,
    cancel: CancellationToken,
}

impl TaskLink {
    /// The task the reports go to.
    pub fn task_id(&self) -> &TaskId {
        &self.id
    }

    async fn ask(
        &self,
        key: Option<&str>,
        kind: InputKind,
        params: Value,
    ) -> Result<Value, ErrorObject> {
        let request = InputRequest { kind, params };
        self.engine
            .ask(&self.id, self.attempt, key, request, &self.cancel)
            .await
            .map_err(|err| match err {
                InputError::Client(error) => error,
                InputError::Work(failure) => work_error(&failure),
            })
    }
}

fn work_error(failure: &WorkError) -> ErrorObject {
    ErrorObject {
        code: INTERNAL_ERROR,
        message: failure.to_string(),
        data: None,
    }
}

#[async_trait]
impl ClientLink for TaskLink {
    fn progress(&self, progress: Progress) {
        self.engine
            .report_progress(&self.id, self.attempt, progress);
    }

    fn notify(&self, method: &str, params: Value) {
        let _ = (method, params);
    }

    async fn request(&self, kind: InputKind, params: Value) -> Result<Value, ErrorObject> {
        self.ask(None, kind, params).await
    }

    async fn request_named(
        &self,
        key: &str,
        kind: InputKind,
        params: Value,
    ) -> Result<Value, ErrorObject> {
        self.ask(Some(key), kind, params).await
    }
}
