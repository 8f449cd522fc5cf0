//! Multi Round-Trip Requests (2026-07-28, SEP-2322) for plain `tools/call`: when the work of
//! a call asks the client something, the call answers `InputRequiredResult` (`inputRequests`
//! and a `requestState`) while the work keeps running, parked; the client's retry (a new
//! request with `inputResponses` and the echoed `requestState`) hands the answers to the
//! same work and continues it, to its result or to the next round.
//!
//! `requestState` is a random 128-bit handle to the parked call, not a blob the client
//! could edit: it cannot be forged, it names a call of the principal that made it (another's
//! is an unknown one), it is used once (each round gets a new one), and it expires: work
//! whose client never retries is stopped after [`PARK_LIMIT`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mcp_tasks_engine::{InputKind, Principal, TaskId};
use mcp_tasks_protocol::jsonrpc::RpcError;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::tool::input_method;

/// How long parked work waits for the client's retry before it is stopped.
pub(crate) const PARK_LIMIT: Duration = Duration::from_secs(10 * 60);

/// What the running work of a plain call reports to the request serving it.
pub(crate) enum Event {
    /// The work asks the client: `key` names the question in `inputRequests`.
    Asked { key: String, kind: InputKind, params: Value, answer: oneshot::Sender<Value> },
    /// The work ended with this answer to the call.
    Done(Result<Value, RpcError>),
}

/// A call whose work is running, with the questions it has asked and not had answered.
pub(crate) struct Running {
    pub(crate) owner: Principal,
    pub(crate) tool: String,
    pub(crate) events: mpsc::UnboundedReceiver<Event>,
    /// Outstanding questions by key: what was asked, and where its answer goes.
    pub(crate) open: BTreeMap<String, (InputKind, Value, oneshot::Sender<Value>)>,
    /// Stops the work.
    pub(crate) cancel: CancellationToken,
}

/// Parked calls by `requestState`. Cheap to clone; one per server.
#[derive(Clone, Default)]
pub(crate) struct Parked {
    /// A std mutex: inserts and removals only, never across an await.
    calls: Arc<Mutex<HashMap<String, Running>>>,
}

impl Parked {
    /// Parks `running` until its client retries; returns the `requestState` that names it.
    /// Past [`PARK_LIMIT`] without a retry, the work is stopped.
    pub(crate) fn park(&self, running: Running) -> String {
        let state = TaskId::random().to_string();
        self.calls().insert(state.clone(), running);
        let (calls, expiring) = (Arc::clone(&self.calls), state.clone());
        tokio::spawn(async move {
            tokio::time::sleep(PARK_LIMIT).await;
            let expired = calls.lock().unwrap_or_else(PoisonError::into_inner).remove(&expiring);
            if let Some(running) = expired {
                tracing::info!(tool = %running.tool, "stopping the work of a call whose client never retried");
                running.cancel.cancel();
            }
        });
        state
    }

    /// Takes the parked call named by `state`, if it is `owner`'s call of `tool`.
    ///
    /// # Errors
    /// `-32602` for a state this server did not issue, already used, expired, another
    /// principal's, or another tool's.
    pub(crate) fn take(&self, state: &str, owner: &Principal, tool: &str) -> Result<Running, RpcError> {
        let mut calls = self.calls();
        match calls.get(state) {
            Some(running) if &running.owner == owner && running.tool == tool => {
                calls.remove(state).ok_or_else(|| invalid_state(state))
            }
            _ => Err(invalid_state(state)),
        }
    }

    fn calls(&self) -> MutexGuard<'_, HashMap<String, Running>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn invalid_state(state: &str) -> RpcError {
    let shown: String = state.chars().take(64).collect();
    RpcError::invalid_params(format!(
        "Invalid requestState {shown:?}: it was not issued by this server for this call, was already used, or expired; \
         call the tool again without it"
    ))
}

/// Hands the `answers` to the outstanding questions they name; the rest stay outstanding.
///
/// # Errors
/// `-32602` for an answer that is not a JSON object (an `ElicitResult`, a
/// `CreateMessageResult`).
pub(crate) fn answer(running: &mut Running, answers: Map<String, Value>) -> Result<(), RpcError> {
    if let Some((key, _)) = answers.iter().find(|(key, answer)| running.open.contains_key(*key) && !answer.is_object()) {
        return Err(RpcError::invalid_params(format!("Invalid inputResponses: the answer to {key:?} must be an object")));
    }
    for (key, answer) in answers {
        if let Some((_, _, to)) = running.open.remove(&key) {
            let _ = to.send(answer);
        }
    }
    Ok(())
}

/// The next answer of the call: its result when the work ends, or an `InputRequiredResult`
/// (the call parked) when it waits for the client. `cancel` is the request's own.
pub(crate) async fn drive(parked: &Parked, mut running: Running, cancel: &CancellationToken) -> Result<Value, RpcError> {
    loop {
        if !running.open.is_empty() {
            // Questions asked at once go in one round.
            while let Ok(event) = running.events.try_recv() {
                match event {
                    Event::Asked { key, kind, params, answer } => {
                        running.open.insert(key, (kind, params, answer));
                    }
                    Event::Done(reply) => return reply,
                }
            }
            return Ok(input_required(parked, running));
        }
        let event = tokio::select! {
            event = running.events.recv() => event,
            () = cancel.cancelled() => {
                running.cancel.cancel();
                return Err(RpcError::internal("the call was cancelled"));
            }
        };
        match event {
            Some(Event::Asked { key, kind, params, answer }) => {
                running.open.insert(key, (kind, params, answer));
                tokio::task::yield_now().await;
            }
            Some(Event::Done(reply)) => return reply,
            None => return Err(RpcError::internal("the tool's work ended without an answer")),
        }
    }
}

/// `InputRequiredResult`: the outstanding questions, and the state that names the parked call.
fn input_required(parked: &Parked, running: Running) -> Value {
    let requests: Map<String, Value> = running
        .open
        .iter()
        .map(|(key, (kind, params, _))| (key.clone(), json!({"method": input_method(*kind), "params": params})))
        .collect();
    let state = parked.park(running);
    json!({"resultType": "input_required", "inputRequests": requests, "requestState": state})
}
