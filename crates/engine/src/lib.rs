//! The durable task engine of mcp-tasks. It knows tasks, not protocol eras: the wire
//! dialects (2025-11-25 core tasks, 2026-07-28 tasks extension) are codecs in
//! `mcp-tasks-server` over this one engine.
//!
//! # Layout
//!
//! Every type a user of the engine names is exported here, at the root; the modules are
//! private, but for [`store`], whose [`store::implement`] holds the helpers meant only for
//! the store crates.
//! - `task`: ids, statuses, [`TaskState`] and the one transition function [`TaskState::on`].
//! - [`store`]: the store seam, split by role ([`RecordStore`], [`ClaimStore`],
//!   [`ViewStore`], [`WorkStore`]) and joined by [`TaskStore`], the one handle the engine
//!   holds; [`SessionStore`], the HTTP transport's session records; and the store errors.
//! - `engine`: [`Engine`]: create, get, list, cancel ([`Engine::cancel`] and the cooperative
//!   [`Engine::request_cancel`]), await, and the one compare-and-set loop.
//! - `admission`: the [`Policy`] and its limits on the work running in this process (and, on
//!   a shared store, across its nodes: running places in the store).
//! - `run`: starting a task's work, recording its end, plain calls, the tools' slots.
//! - `early`: work started before its task's creation commits, its outcome written with the
//!   creation and its effects held back until the creation is answered.
//! - `adopt`: a running plain call handed off to a task ([`Engine::adopt`], [`TaskLink`]).
//! - `input`: input requests of the work and their answers.
//! - `maintenance`: the rescuer ([`Engine::rescue_once`]), restart recovery
//!   ([`Engine::recover`], its first pass) and the TTL sweeper.
//! - `claims`: claims with a lease, the heartbeat ([`Engine::spawn_claims`]), and the store's
//!   change feed followed (forwarded to subscribers, watched for the work run here).
//! - `work`: the [`Handler`] trait tools implement, the [`ToolRuntime`] they are
//!   registered with, and the [`Context`] they receive.
//! - `view`: what a person's view of tasks reads ([`Engine::browse`], counts, history,
//!   origin, output), owner-scoped like every read.
//! - `kept`: process groups a server keeps beside its tasks (a proxy's stdio upstream),
//!   recorded by key, and the one a killed server left ended ([`Engine::end_kept_group`]).
//! - `slots`: a tool's `max_concurrent` limit, a gate that admits queued calls in order.
//! - `error`: [`EngineError`], [`LimitExceeded`] for the [`Policy`] limits, and the
//!   engine's own failures of the work, [`WorkError`] and [`InputError`].
//! - `events`: each task's event log: what its work reports, written per interval, read
//!   after a cursor with its creation and ending ([`Engine::events`]).
//! - `clock`: injected time.
//! - `trace`: [`TraceContext`], the W3C trace context a task keeps from its request.
//!
//! The engine speaks no wire dialect: which results count as failures and how input
//! requests are named is the handler's say ([`Handler::reported_failure`],
//! [`Handler::describe_input`]); input is asked by [`InputKind`]; the engine's own
//! failures are [`WorkError`]s, which each era renders.
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
//! `Restart` (recovery in a new process) takes `working` or `input_required` back to
//! `working`, with the attempt bumped in the same write.
//!
//! # Guarantees
//! - A task is in the store before [`Engine::create`] returns.
//! - With an idempotency key ([`Engine::create_with_key`]) an owner gets at most one
//!   retained task per key, however many calls race and across restarts; the store
//!   enforces it ([`RecordStore::insert`]).
//! - Every write is a compare-and-set on the task's version; a runner's write also carries
//!   its attempt, so a stale attempt cannot complete a task, and nothing completes twice.
//!   Recovery writes the same way: a task that keeps changing under it is skipped.
//! - Waiting ([`Engine::wait_terminal`]) wakes on the change feed, never on a timer.
//! - A creation refused by a [`Policy`] limit writes nothing; plain calls count towards
//!   the running limits too.

mod admission;
mod adopt;
mod claims;
mod clock;
mod early;
mod engine;
mod error;
mod events;
mod fast;
mod input;
mod kept;
mod maintenance;
mod process;
mod published;
mod run;
mod slots;
pub mod store;
mod task;
mod trace;
mod view;
mod watch;
mod work;

pub use admission::Policy;
pub use adopt::TaskLink;
pub use clock::{Clock, FakeClock, SystemClock};
pub use engine::{Change, Creation, DEFAULT_LEASE, Engine, NewTask, Output};
pub use fast::{FastMap, FastSet};
pub use events::{Events, FLUSH_EVERY, INPUT_EVENT, LOG_EVENT, OUTPUT_EVENT, PARTIAL_EVENT, PROGRESS_EVENT, STATUS_EVENT, TaskEvent};
pub use error::{EngineError, InputError, LimitExceeded, WorkError};
pub use maintenance::{Recovery, Sweep};
pub use process::{KeptGroup, Leftover, ProcessGroup, TASK_ID_ENV};
pub use store::{
    Answer, BrowseQuery, ClaimStore, Cursor, Delivery, DeliveryStore, EventLimits, EventPage, HistoryEntry, LoggedEvent, NewEvent, Inserted, Lease, ListQuery, NodeId, Origin, Place, PlaceHolder, Placing, RecordStore,
    RunningLimits, SessionRecord, SessionStore, StoreError, TaskStore, Update, ViewStore, WorkStore,
};
pub use task::{
    ErrorObject, Event, EventKind, IdempotencyKey, InputKind, InputRequest, InputRequests, Outcome, Principal,
    Refused, RestartPolicy, Status, TaskId, TaskRecord, TaskState, Timestamp, Version,
};
pub use trace::{TraceContext, set_span_parent};
pub use view::Inspected;
pub use watch::{TaskWatch, Watched};
pub use work::{ClientLink, Context, Handler, Progress, ToolRuntime, panic_message};
