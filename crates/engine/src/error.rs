//! Errors of the engine. They name domain failures; the server maps them to JSON-RPC once.
//!
//! - [`EngineError`]: an engine call failed (the caller's fault or ours).
//! - [`WorkError`]: the work behind a task or call could not go on because of the engine
//!   (interrupted, expired, crashed, no answer to its question). Stored in a failed task as
//!   [`Outcome::Failure`](crate::Outcome::Failure); each era renders it on the wire.
//! - [`InputError`]: why a question of the work ([`Context::request`](crate::Context::request))
//!   got no answer.

use serde::{Deserialize, Serialize};

use crate::store::StoreError;
use crate::task::{ErrorObject, EventKind, IdempotencyKey, InputKind, Outcome, Principal, Status, TaskId};

/// What can go wrong in an engine call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// No such task for this principal (also: another principal's task, or purged).
    #[error("task not found: {0}")]
    NotFound(TaskId),
    /// The task's state does not allow this.
    #[error("cannot {event} task {id}: already in terminal status '{from}'")]
    Refused {
        /// The task.
        id: TaskId,
        /// Its status.
        from: Status,
        /// What was tried.
        event: EventKind,
    },
    /// No tool (handler) of this name is registered.
    #[error("unknown tool: {0}")]
    UnknownTool(String),
    /// A limit of the engine's [`Policy`](crate::Policy) refused a new task or call; nothing
    /// was created or started. The requestor may try again later.
    #[error(transparent)]
    Limit(#[from] LimitExceeded),
    /// The requestor's task with this idempotency key was made for another call (another
    /// tool or other arguments); nothing was created. Says nothing about other principals:
    /// their keys are theirs.
    #[error("idempotency key {0:?} was used for another call (another tool or other arguments)")]
    KeyReused(IdempotencyKey),
    /// The task kept changing under us; the caller may retry.
    #[error("task {0} kept changing while we tried to update it")]
    Contended(TaskId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Which limit of the [`Policy`](crate::Policy) refused a task or call, and by how much.
///
/// The requestor's problem, not the server's: it has too much going on. Checked before
/// anything is written, so a refusal leaves the store as it was.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitExceeded {
    /// [`Policy::max_running`](crate::Policy::max_running): as many tasks and plain calls run
    /// as may (in this process; on a shared store, across its nodes).
    #[error("{running} tasks and calls are running, the most this server allows (max_running = {limit})")]
    Running {
        /// Tasks and plain calls running now.
        running: usize,
        /// The limit.
        limit: u32,
    },
    /// [`Policy::max_running_per_principal`](crate::Policy::max_running_per_principal): the
    /// principal runs as many tasks and plain calls as one principal may.
    #[error(
        "principal {owner} has {running} tasks and calls running, the most one principal may \
         (max_running_per_principal = {limit})"
    )]
    RunningPerPrincipal {
        /// The principal.
        owner: Principal,
        /// Its tasks and plain calls running now.
        running: usize,
        /// The limit.
        limit: u32,
    },
    /// [`Policy::max_retained_per_principal`](crate::Policy::max_retained_per_principal):
    /// the store keeps as many of the principal's tasks (finished or not) as it may.
    #[error(
        "principal {owner} has {retained} tasks in the store, the most one principal may keep \
         (max_retained_per_principal = {limit})"
    )]
    RetainedPerPrincipal {
        /// The principal.
        owner: Principal,
        /// Its tasks in the store now.
        retained: u64,
        /// The limit.
        limit: u64,
    },
}

/// A failure of the engine's own that ends (or stops) the work behind a task or call: not
/// an error the work or the client chose. Its `Display` is the message the requestor sees.
///
/// Stored as `{"type": "expired"}` (snake-case variant names, fields beside `type`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum WorkError {
    /// The process running the task died with the server (restart policy `fail`).
    #[error(
        "Task execution was interrupted by a server restart; the work did not finish. \
         Call the tool again to re-run it."
    )]
    InterruptedByRestart,
    /// A task of a tool with restart policy `retry` restarted interrupted `times` times,
    /// reaching the tool's `max_attempts`: it is not run again.
    #[error(
        "Task execution was interrupted by a server restart {times} times, and the tool allows \
         {max_attempts} attempts; it is not retried again. Call the tool again to re-run it."
    )]
    InterruptedRepeatedly {
        /// How many attempts were interrupted.
        times: u32,
        /// The tool's `max_attempts`.
        max_attempts: u32,
    },
    /// The task's TTL ran out before it finished.
    #[error("Task expired: its TTL elapsed before the work finished")]
    Expired,
    /// The tool's handler panicked.
    #[error("the tool's handler crashed")]
    HandlerCrashed,
    /// A plain call was cancelled while it waited for a slot of `tool`.
    #[error("the call was cancelled while it waited for a slot of tool {tool}")]
    CancelledInQueue {
        /// The tool whose slots were all busy.
        tool: String,
    },
    /// A plain call was cancelled while it waited for the client's answer.
    #[error("the call was cancelled")]
    CallCancelled,
    /// A task was cancelled while it waited for the client's answer.
    #[error("the task was cancelled while waiting for input")]
    CancelledWhileWaiting,
    /// A plain call has no client to ask. `name` is what the era calls the request.
    #[error("no client to send {name} to")]
    NoClient {
        /// What was asked for.
        kind: InputKind,
        /// Its name in messages (see [`Handler::describe_input`](crate::Handler::describe_input)).
        name: String,
    },
    /// The requestor of the task did not declare, when it created the task, that it can
    /// answer this kind of input.
    #[error(
        "cannot ask the client for input with {name}: the client did not declare that capability \
         when it created this task"
    )]
    InputUndeclared {
        /// What was asked for.
        kind: InputKind,
        /// Its name in messages (see [`Handler::describe_input`](crate::Handler::describe_input)).
        name: String,
    },
    /// The work named its question with a key that names a question of the task still
    /// waiting for its answer ([`Context::request_named`](crate::Context::request_named)).
    #[error("the task already waits for the answer to an input request named {key:?}")]
    InputKeyInUse {
        /// The key.
        key: String,
    },
    /// The input request could not be written to the task.
    #[error("could not record the input request: {reason}")]
    InputNotRecorded {
        /// Why.
        reason: String,
    },
    /// The wait for the answer ended without one (the engine dropped the request).
    #[error("the input request was dropped")]
    InputDropped,
    /// The store failed while the work needed it.
    #[error("{reason}")]
    Store {
        /// The store's error.
        reason: String,
    },
}

/// Why a question of the work ([`Context::request`](crate::Context::request)) got no answer.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The client answered with an error (or the era's link to it failed with one).
    #[error("{}", .0.message)]
    Client(ErrorObject),
    /// The engine could not get an answer.
    #[error(transparent)]
    Work(#[from] WorkError),
}

impl From<InputError> for Outcome {
    /// The outcome of work that ends because its question got no answer: the client's error
    /// as is, or the engine's failure.
    fn from(err: InputError) -> Outcome {
        match err {
            InputError::Client(error) => Outcome::Error(error),
            InputError::Work(failure) => Outcome::Failure(failure),
        }
    }
}
