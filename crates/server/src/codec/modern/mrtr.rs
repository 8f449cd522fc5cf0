//! Multi Round-Trip Requests (2026-07-28, SEP-2322): when the work of a request asks the
//! client something, the request answers `InputRequiredResult` (`inputRequests` and a
//! `requestState`) while the work keeps running, parked; the client's retry (a new request
//! with `inputResponses` and the echoed `requestState`) hands the answers to the same work
//! and continues it, to its result or to the next round. Two kinds of work are parked:
//!
//! - the in-process work of a plain `tools/call` or `prompts/get` ([`Running`]);
//! - a task made by a `tools/call` that asked before its inline wait ended and before its
//!   `CreateTaskResult` was sent ([`Round::Task`]): the rounds run first, on retries of
//!   the call, and the task is shown only after them (tasks extension: MRTR composed with
//!   task creation).
//!
//! `requestState` is a random 128-bit handle to the parked call, not a blob the client
//! could edit: it cannot be forged, it names a call of the principal that made it (another's
//! is an unknown one), it is used once (each round gets a new one), and it expires: work
//! whose client never retries is stopped after the server's retry wait
//! ([`ServerBuilder::retry_wait`](crate::ServerBuilder::retry_wait)).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mcp_tasks_engine::{ClientLink, Engine, ErrorObject, InputKind, Outcome, Principal, TaskId};
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::modern::{MISSING_CLIENT_CAPABILITY, RequestMeta};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::link::ModernLink;
use crate::ops::handoff::{self, Long, LongRun};
use crate::context::RequestContext;
use crate::tool::{input_capability, input_method};

/// What the running work of a plain call reports to the request serving it.
pub(crate) enum Event {
    /// The work asks the client: `key` names the question in `inputRequests`.
    Asked { key: String, kind: InputKind, params: Value, answer: oneshot::Sender<Value> },
    /// The work ended with this answer to the call.
    Done(Result<Value, RpcError>),
}

/// A request whose work is running, with the questions it has asked and not had answered.
pub(crate) struct Running {
    pub(crate) owner: Principal,
    /// What the request was for (`tools/call NAME`, `prompts/get NAME`): a retry must name
    /// the same.
    pub(crate) tool: String,
    pub(crate) events: mpsc::UnboundedReceiver<Event>,
    /// Outstanding questions by key: what was asked, and where its answer goes.
    pub(crate) open: BTreeMap<String, (InputKind, Value, oneshot::Sender<Value>)>,
    /// Answers the client sent before it was asked (`inputResponses` on a first call): a
    /// question of one of these keys is answered at once, with no round, if the answer is
    /// an object; the other keys are ignored.
    pub(crate) ahead: Map<String, Value>,
    /// Stops the work.
    pub(crate) cancel: CancellationToken,
    /// A plain `tools/call` that may get heartbeats, or be handed off to a task while it
    /// waits for its work ([`handoff`]).
    pub(crate) long: Option<LongRun>,
}

impl Running {
    /// The work asked `key`: answered from the answers sent ahead, or outstanding.
    fn asked(&mut self, key: String, kind: InputKind, params: Value, answer: oneshot::Sender<Value>) {
        match self.ahead.remove(&key) {
            Some(early) if early.is_object() => {
                let _ = answer.send(early);
            }
            _ => {
                self.open.insert(key, (kind, params, answer));
            }
        }
    }
}

/// What waits for the client's retry.
#[allow(clippy::large_enum_variant)] // one per parked round, taken and matched at once
pub(crate) enum Round {
    /// The in-process work of a plain request.
    Work(Running),
    /// `owner`'s task made by a call of `tool`, `input_required`, its id not yet shown.
    Task { owner: Principal, tool: String, id: TaskId, engine: Engine },
}

impl Round {
    fn belongs_to(&self, who: &Principal, what: &str) -> bool {
        match self {
            Round::Work(running) => &running.owner == who && running.tool == what,
            Round::Task { owner, tool, .. } => owner == who && tool == what,
        }
    }

    /// Stops the work of a round whose client never retried.
    fn expire(self) {
        match self {
            Round::Work(running) => {
                tracing::info!(what = %running.tool, "stopping the work of a request whose client never retried");
                running.cancel.cancel();
            }
            Round::Task { owner, tool, id, engine } => {
                tracing::info!(%tool, task = %id, "cancelling a task whose client never answered its first questions");
                tokio::spawn(async move {
                    if let Err(err) = engine.request_cancel(&owner, &id).await {
                        tracing::warn!(task = %id, error = %err, "could not cancel an abandoned task");
                    }
                });
            }
        }
    }
}

/// Parked rounds by `requestState`. Cheap to clone; one per server.
#[derive(Clone)]
pub(crate) struct Parked {
    /// A std mutex: inserts and removals only, never across an await.
    calls: Arc<Mutex<HashMap<String, Round>>>,
    /// How long a round waits for its retry.
    limit: Duration,
}

impl Parked {
    /// Parked rounds that wait `limit` for their retry.
    pub(crate) fn with_limit(limit: Duration) -> Parked {
        Parked { calls: Arc::default(), limit }
    }

    /// Parks `round` until its client retries; returns the `requestState` that names it.
    /// Past the limit without a retry, its work is stopped.
    pub(crate) fn park(&self, round: Round) -> String {
        let state = TaskId::random().to_string();
        self.calls().insert(state.clone(), round);
        let (calls, expiring, limit) = (Arc::clone(&self.calls), state.clone(), self.limit);
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            let expired = calls.lock().unwrap_or_else(PoisonError::into_inner).remove(&expiring);
            if let Some(round) = expired {
                round.expire();
            }
        });
        state
    }

    /// Takes the parked round named by `state`, if it is `owner`'s request for `what`.
    ///
    /// # Errors
    /// `-32602` for a state this server did not issue, already used, expired, another
    /// principal's, or another request's.
    pub(crate) fn take(&self, state: &str, owner: &Principal, what: &str) -> Result<Round, RpcError> {
        let mut calls = self.calls();
        match calls.get(state) {
            Some(round) if round.belongs_to(owner, what) => calls.remove(state).ok_or_else(|| invalid_state(state)),
            _ => Err(invalid_state(state)),
        }
    }

    fn calls(&self) -> MutexGuard<'_, HashMap<String, Round>> {
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

/// `-32602` when an answer to one of the `open` questions is not a JSON object (an
/// `ElicitResult`, a `CreateMessageResult`, a `ListRootsResult`).
///
/// # Errors
/// As said.
pub(crate) fn check_answers<'a>(mut open: impl Iterator<Item = &'a String>, answers: &Map<String, Value>) -> Result<(), RpcError> {
    match open.find(|key| answers.get(*key).is_some_and(|answer| !answer.is_object())) {
        Some(key) => Err(RpcError::invalid_params(format!("Invalid inputResponses: the answer to {key:?} must be an object"))),
        None => Ok(()),
    }
}

/// What a parked round of a `tools/call` of `tool` is for: its retry must be for the same.
pub(crate) fn call_of(tool: &str) -> String {
    format!("tools/call {tool}")
}

/// Runs `work` as the work of the plain request `ctx` (`what` it is for, e.g. `prompts/get
/// NAME`): its messages go on the request's stream through the link it is given, its
/// questions become rounds. The work runs in a task of its own, so that it outlives a round
/// (it waits, parked, for the client's retry); it is stopped through the token it is given.
pub(crate) async fn run<W, F>(
    meta: &RequestMeta,
    ctx: &RequestContext,
    what: String,
    ahead: Map<String, Value>,
    long: Option<Long>,
    work: W,
) -> Result<Value, RpcError>
where
    W: FnOnce(Arc<dyn ClientLink>, CancellationToken) -> F + Send + 'static,
    F: Future<Output = Result<Value, RpcError>> + Send + 'static,
{
    let (asks, events) = mpsc::unbounded_channel();
    let link = Arc::new(ModernLink::new(ctx, meta, asks.clone()));
    let cancel = CancellationToken::new();
    let work_cancel = cancel.clone();
    // A long call's work talks through a link that can be re-pointed at a task.
    let mut long = long.map(|long| LongRun::new(long, Arc::clone(&link) as Arc<dyn ClientLink>, cancel.clone()));
    let (work_link, ended) = match &mut long {
        Some(run) => (run.link(), run.ended()),
        None => (Arc::clone(&link) as Arc<dyn ClientLink>, None),
    };
    tokio::spawn(async move {
        let reply = work(work_link, work_cancel).await;
        // 2026-07-28: processing needed a capability the request did not declare.
        let reply = match link.missing_capability() {
            Some(kind) => Err(missing_capability(kind)),
            None => reply,
        };
        if let Some(ended) = ended {
            let _ = ended.send(Some(outcome_of(&reply)));
        }
        let _ = asks.send(Event::Done(reply));
    });
    let running =
        Running { owner: ctx.principal.clone(), tool: what, events, open: BTreeMap::new(), ahead, cancel, long };
    drive(ctx, running).await
}

/// Continues parked work with the client's `answers`, to its next answer.
///
/// # Errors
/// As [`answer`]; then as [`drive`].
pub(crate) async fn resume(ctx: &RequestContext, mut running: Running, answers: Map<String, Value>) -> Result<Value, RpcError> {
    answer(&mut running, answers)?;
    drive(ctx, running).await
}

/// A reply of the work as the outcome of the task that adopts it.
fn outcome_of(reply: &Result<Value, RpcError>) -> Outcome {
    match reply {
        Ok(result) => Outcome::Result(result.clone()),
        Err(error) => Outcome::Error(ErrorObject { code: error.code, message: error.message.clone(), data: error.data.clone() }),
    }
}

/// `-32021` for a request whose work needed input of `kind` that it did not declare.
fn missing_capability(kind: InputKind) -> RpcError {
    let capability = input_capability(kind);
    RpcError::new(
        MISSING_CLIENT_CAPABILITY,
        format!(
            "Missing required client capability: the request's work asks the client for {capability}; declare it \
             in _meta[\"io.modelcontextprotocol/clientCapabilities\"]"
        ),
    )
    .with_data(json!({"requiredCapabilities": {capability: {}}}))
}

/// Hands the `answers` to the outstanding questions they name; the rest stay outstanding.
///
/// # Errors
/// As [`check_answers`].
pub(crate) fn answer(running: &mut Running, answers: Map<String, Value>) -> Result<(), RpcError> {
    check_answers(running.open.keys(), &answers)?;
    for (key, answer) in answers {
        if let Some((_, _, to)) = running.open.remove(&key) {
            let _ = to.send(answer);
        }
    }
    Ok(())
}

/// The next answer of the call `ctx`: its result when the work ends, or an
/// `InputRequiredResult` (the call parked) when it waits for the client; for a long
/// `tools/call`, the handoff answer once the sync wait is over (heartbeats meanwhile).
pub(crate) async fn drive(ctx: &RequestContext, mut running: Running) -> Result<Value, RpcError> {
    let (parked, cancel) = (&ctx.server().inner.codecs.modern.parked, &ctx.cancel);
    let started = Instant::now();
    let mut handoff_at = running.long.as_ref().and_then(|long| long.handoff_at(started));
    let mut beats = running.long.as_ref().and_then(|long| long.beats(started));
    loop {
        if !running.open.is_empty() {
            // Questions asked at once go in one round.
            while let Ok(event) = running.events.try_recv() {
                match event {
                    Event::Asked { key, kind, params, answer } => running.asked(key, kind, params, answer),
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
            () = handoff::sleep_until(handoff_at), if handoff_at.is_some() => {
                handoff_at = None;
                if let Some(answer) = hand_off(ctx, &mut running).await {
                    return Ok(answer);
                }
                continue;
            }
            () = handoff::tick(&mut beats), if beats.is_some() => {
                if let Some(long) = &running.long {
                    long.beat(started.elapsed());
                }
                continue;
            }
        };
        match event {
            Some(Event::Asked { key, kind, params, answer }) => {
                running.asked(key, kind, params, answer);
                tokio::task::yield_now().await;
            }
            Some(Event::Done(reply)) => return reply,
            None => return Err(RpcError::internal("the tool's work ended without an answer")),
        }
    }
}

/// Hands a long call's work off to a task ([`LongRun::hand_off`]); the questions it asked
/// before its link was re-pointed go to the task too. `None`: not handed off.
async fn hand_off(ctx: &RequestContext, running: &mut Running) -> Option<Value> {
    let (answer, task) = running.long.as_ref()?.hand_off(ctx).await?;
    while let Ok(event) = running.events.try_recv() {
        if let Event::Asked { key, kind, params, answer } = event {
            let task = Arc::clone(&task);
            tokio::spawn(async move {
                // Unanswered (the task ended first): the work hears that its call ended.
                if let Ok(value) = task.request_named(&key, kind, params).await {
                    let _ = answer.send(value);
                }
            });
        }
    }
    Some(answer)
}

/// `InputRequiredResult`: the outstanding questions, and the state that names the parked call.
fn input_required(parked: &Parked, running: Running) -> Value {
    let requests: Map<String, Value> = running
        .open
        .iter()
        .map(|(key, (kind, params, _))| (key.clone(), json!({"method": input_method(*kind), "params": params})))
        .collect();
    let state = parked.park(Round::Work(running));
    json!({"resultType": "input_required", "inputRequests": requests, "requestState": state})
}
