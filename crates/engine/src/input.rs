//! Input requests: the work of a task asks its requestor a question (the task is
//! `input_required` until answered) and waits; the dialect delivers it and hands the
//! client's answer back through [`Engine::answer`], on whichever node: the answer is stored
//! with the task in the same write that takes the request out ([`RecordStore::answer`]), and
//! the work, wherever it runs, wakes on that change and takes it.
//!
//! [`RecordStore::answer`]: crate::RecordStore::answer

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::engine::{Change, Engine, MAX_CAS_ATTEMPTS, transition};
use crate::error::{EngineError, InputError, WorkError};
use crate::store::{StoreError, Update};
use crate::task::{ErrorObject, Event, InputKind, InputRequest, Principal, TaskId, TaskState};
use crate::watch::Watched;

/// Work in this process waiting for the answer to an input request, by task and request key:
/// woken when an answer is stored through this node (answers through other nodes wake it
/// through the change feed).
pub(crate) type InputWaiters = crate::fast::FastMap<(TaskId, String), Arc<Notify>>;

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
        let woken = Arc::new(Notify::new());
        {
            let mut inputs = self.inputs();
            if inputs.contains_key(&(id.clone(), key.clone())) {
                return Err(WorkError::InputKeyInUse { key }.into());
            }
            inputs.insert((id.clone(), key.clone()), Arc::clone(&woken));
        }
        // Subscribed before the request is recorded: no answer can come before it.
        let feed = self.watch_task(id);
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
        loop {
            // Woken by an answer through this node, or by a change of the task that took the
            // request out (an answer stored through another node), ended it or moved it to
            // another attempt; the changes that leave the request outstanding are not read.
            tokio::select! {
                () = woken.notified() => {}
                change = feed.recv() => match change {
                    Watched::Change(Change::Task(record)) => {
                        if record.status().is_terminal() || record.attempt != attempt {
                            return Err(WorkError::InputDropped.into());
                        }
                        if matches!(&record.state, TaskState::InputRequired { requests } if requests.contains_key(&key)) {
                            continue;
                        }
                    }
                    Watched::Change(Change::Progress { .. }) => continue,
                    Watched::Lagged => {}
                },
                () = cancel.cancelled() => return Err(WorkError::CancelledWhileWaiting.into()),
            }
            match self.inner.store.take_answer(id, &key).await {
                Ok(Some(answer)) => return answer.map_err(InputError::Client),
                Ok(None) => {}
                Err(err) => return Err(WorkError::Store { reason: err.to_string() }.into()),
            }
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
    /// (already answered, so a repeated answer is applied once; or the task moved on). The
    /// answer is stored with the task, so the work waiting for it may run on any node.
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
            let task = match self.inner.store.get(id).await? {
                Some(task) if &task.owner == owner => task,
                _ => return Err(EngineError::NotFound(id.clone())),
            };
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
            let state = transition(&task, event)?;
            let update = Update { state, status_message: message, updated_at: self.inner.clock.now(), attempt: task.attempt };
            // The answer is stored in the same write that takes the request out: the work
            // finds it wherever it runs, and a repeated answer finds no request (applied once).
            match self.inner.store.answer(id, task.version, &update, key, &answer).await {
                Ok(written) => {
                    let answered = match &answer {
                        Ok(response) => {
                            let mut answered = json!({"key": key, "answered": true});
                            if let Some(action) = response.get("action").filter(|action| action.is_string()) {
                                answered["action"] = action.clone();
                            }
                            answered
                        }
                        Err(error) => json!({"key": key, "answered": false, "error": error.message}),
                    };
                    self.log_event(id, written.attempt, crate::events::INPUT_EVENT, answered);
                    self.log_change(&task, &written);
                    self.publish_task(&written, None);
                    if let Some(waiter) = self.inputs().get(&(id.clone(), key.to_owned())) {
                        waiter.notify_one();
                    }
                    return Ok(true);
                }
                Err(StoreError::Conflict(_)) => continue,
                Err(err) => return Err(err.into()),
            }
        }
        Err(EngineError::Contended(id.clone()))
    }
}
