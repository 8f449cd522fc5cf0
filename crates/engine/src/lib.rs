//! The durable task engine of mcp-tasks. It knows tasks, not protocol eras: the wire
//! dialects (2025-11-25 core tasks, 2026-07-28 tasks extension) are codecs in
//! `mcp-tasks-server` over this one engine.
//!
//! # Layout
//! - [`task`]: ids, statuses, [`TaskState`] and the one transition function [`TaskState::on`].
//! - [`store`]: the [`TaskStore`] seam (compare-and-set writes) and its errors.
//! - [`engine`]: [`Engine`]: create, get, list, cancel, await, recover, sweep.
//! - [`work`]: the [`Handler`] trait tools implement, the [`ToolRuntime`] they are
//!   registered with, and the [`Context`] they receive.
//! - `slots`: a tool's `max_concurrent` limit, a gate that admits queued calls in order.
//! - [`error`]: [`EngineError`], and [`LimitExceeded`] for the [`Policy`] limits.
//! - [`clock`]: injected time.
//!
//! # States
//!
//! ```text
//!              NeedInput                  Complete / Fail / Cancel / Expire
//!   working ─────────────▶ input_required ────────────────────────────────┐
//!      │    ◀───────────────                                              ▼
//!      │      InputAnswered                         completed | failed | cancelled
//!      └──────────────────────────────────────────────────────────▶  (never change)
//!             Complete / Fail / Cancel / Expire
//! ```
//!
//! # Guarantees
//! - A task is in the store before [`Engine::create`] returns.
//! - Every write is a compare-and-set on the task's version; a runner's write also carries
//!   its attempt, so a stale attempt cannot complete a task, and nothing completes twice.
//! - Waiting ([`Engine::wait_terminal`]) wakes on the change feed, never on a timer.
//! - A creation refused by a [`Policy`] limit writes nothing; plain calls count towards
//!   the running limits too.

pub mod clock;
pub mod engine;
pub mod error;
mod slots;
pub mod store;
pub mod task;
pub mod work;

pub use clock::{Clock, FakeClock, SystemClock};
pub use engine::{Change, Engine, NewTask, Policy, Recovery, Sweep};
pub use error::{EngineError, LimitExceeded};
pub use store::{Cursor, ListQuery, StoreError, TaskStore, Update};
pub use task::{
    ErrorObject, Event, EventKind, InputRequest, InputRequests, Outcome, Principal, Refused,
    RestartPolicy, Status, TaskId, TaskRecord, TaskState, Timestamp, Version,
};
pub use work::{ClientLink, Context, Handler, Progress, ToolRuntime};
