//! Input requests: the work of a task asks its requestor a question (the task is
//! `input_required` until answered) and waits; the dialect delivers it and hands the
//! client's answer back through [`Engine::answer`].

use std::collections::HashMap;

use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::engine::{Engine, transition};
use crate::error::{EngineError, InputError, WorkError};
use crate::store::Update;
use crate::task::{ErrorObject, Event, InputKind, InputRequest, Principal, TaskId, TaskState};

/// Work waiting for the answer to an input request, by task and request key.
pub(crate) type InputWaiters = HashMap<(TaskId, String), oneshot::Sender<Result<Value, ErrorObject>>>;

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

impl Engine {
    /// Asks the requestor of task `id` for input on behalf of attempt `attempt`: records the
    /// request in the store under `key` or a fresh random one (the task becomes
    /// `input_required`) and waits
    /// for [`Engine::answer`]. The requestor must have declared it can answer the request's
    /// kind.
    pub(crate) async fn ask(
        &self,
        id: &TaskId,
        attempt: u32,
        key: Option<&str>,
        request: InputRequest,
        cancel: &CancellationToken,
    ) -> Result<Value, InputError> {
        let kind = request.kind;
        let task = self.inner.store.get(id).await.map_err(|err| WorkError::Store { reason: err.to_string() })?;
        let name = self.describe_input(task.as_ref().map(|task| task.tool.as_str()), kind);
        if !task.is_some_and(|task| task.input_kinds.contains(&kind)) {
            return Err(WorkError::InputUndeclared { kind, name }.into());
        }
        let key = key.map_or_else(|| TaskId::random().to_string(), str::to_owned);
        let (tx, rx) = oneshot::channel();
        {
            let mut inputs = self.inputs();
            if inputs.contains_key(&(id.clone(), key.clone())) {
                return Err(WorkError::InputKeyInUse { key }.into());
            }
            inputs.insert((id.clone(), key.clone()), tx);
        }
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
                (Event::NeedInput(requests), Some(format!("Waiting for the client to answer {name}")))
            })
            .await;
        if let Err(err) = asked {
            return Err(WorkError::InputNotRecorded { reason: err.to_string() }.into());
        }
        tokio::select! {
            answer = rx => match answer {
                Ok(answer) => answer.map_err(InputError::Client),
                Err(_) => Err(WorkError::InputDropped.into()),
            },
            _ = cancel.cancelled() => Err(WorkError::CancelledWhileWaiting.into()),
        }
    }

    /// How messages name input of `kind` asked by work of `tool`: as the tool's handler
    /// says ([`Handler::describe_input`](crate::Handler::describe_input)).
    fn describe_input(&self, tool: Option<&str>, kind: InputKind) -> String {
        match tool.and_then(|tool| self.registered(tool)) {
            Some(registered) => registered.runtime.handler.describe_input(kind),
            None => kind.to_string(),
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
}
