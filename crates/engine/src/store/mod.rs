//! The store seam: durable storage of [`TaskRecord`](crate::TaskRecord)s behind object-safe
//! async traits, split by what they serve, and joined by the one [`TaskStore`] the engine
//! holds.
//!
//! These traits are an internal seam of mcp-tasks, not a stable API: they change with the
//! engine. Every implementation must pass the shared store suite
//! (`mcp_tasks_testkit::store_suite!`), and should keep every query on the serving path off
//! full scans: a store retaining a million finished tasks must serve as fast as an empty one
//! (`benches/retention.sh`).
//!
//! # Layout
//! - `records`: [`RecordStore`], the task records (insert, read, compare-and-set replace,
//!   list, count, the scans, purge, cancel requests, input answers, the change feed).
//! - `claims`: [`ClaimStore`], many nodes on one store (claims with a lease, the claimed
//!   insert and its retention limit, a tool's slots, the running places).
//! - `view`: [`ViewStore`], what the web view reads (pages, counts, history, origin).
//! - `work`: [`WorkStore`], what the running work keeps beside its task (process groups,
//!   kept groups, checkpoints).
//! - [`TaskStore`]: the four joined, what [`Engine`](crate::Engine) holds
//!   (`Arc<dyn TaskStore>`); implemented for every type that implements the four.
//! - `sessions`: [`SessionStore`], the 2025-11-25 HTTP session records: the HTTP
//!   transport's, not the engine's, and not part of [`TaskStore`].
//! - `deliveries`: [`DeliveryStore`], the webhooks' deliveries, written with the task writes
//!   that cause them: the webhooks', not the engine's, and not part of [`TaskStore`].
//! - [`implement`]: helpers for the store crates only.

mod claims;
mod deliveries;
pub mod implement;
mod records;
mod sessions;
mod view;
mod work;

use std::error::Error as StdError;

pub use deliveries::{Delivery, DeliveryStore};
pub use claims::{ClaimStore, Lease, NodeId, Place, PlaceHolder, Placing, RunningLimits};
pub use records::{Answer, Cursor, Inserted, ListQuery, RecordStore, Update};
pub use sessions::{SessionRecord, SessionStore};
pub use view::{BrowseQuery, HistoryEntry, Origin, ViewStore};
pub use work::{EventLimits, EventPage, LoggedEvent, NewEvent, WorkStore};

use crate::task::{Principal, TaskId};

/// Durable storage for tasks: every role of the store joined, the one handle the engine
/// holds (`Arc<dyn TaskStore>`).
///
/// Implemented for every type that implements [`RecordStore`], [`ClaimStore`],
/// [`ViewStore`] and [`WorkStore`]: a store implements those, never this. Every method of
/// the four is callable on a `dyn TaskStore` without importing them; on a concrete store,
/// import the role trait whose method is called.
pub trait TaskStore: RecordStore + ClaimStore + ViewStore + WorkStore {}

impl<S: RecordStore + ClaimStore + ViewStore + WorkStore + ?Sized> TaskStore for S {}

/// What can go wrong in a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A task with this id already exists.
    #[error("task {0} already exists")]
    Duplicate(TaskId),
    /// The task's version changed (or the task vanished) since it was read.
    #[error("task {0} changed since it was read")]
    Conflict(TaskId),
    /// The storage under the store is full: nothing of the write was stored, and what was
    /// stored before is intact. Writes succeed again once space is freed.
    #[error("the task store's disk is full: {0}")]
    DiskFull(String),
    /// The owner keeps `retained` tasks, at or over the limit of an
    /// [`insert_claimed`](ClaimStore::insert_claimed); nothing was written.
    #[error("{owner} keeps {retained} tasks, the most allowed")]
    Full {
        /// The task's owner.
        owner: Principal,
        /// How many tasks the owner keeps.
        retained: u64,
    },
    /// Every running place is held ([`Place::Full`]) or the owner's are
    /// ([`Place::OwnerFull`]), at an [`insert_placed`](ClaimStore::insert_placed); nothing was
    /// written.
    #[error("no running place: {0:?}")]
    NoPlace(Place),
    /// The database cannot be reached for now (down, restarting, recovering from a crash, or
    /// the connection dropped): the request may be retried once it is back, which the store
    /// finds out by itself. A write whose connection dropped while it ran may have committed
    /// or not; one that could not get a connection stored nothing.
    #[error("the task store is unreachable: {0}")]
    Unavailable(String),
    /// The database failed.
    #[error("task store failed: {0}")]
    Backend(#[source] Box<dyn StdError + Send + Sync>),
}

impl StoreError {
    /// Wraps a driver error.
    pub fn backend(err: impl StdError + Send + Sync + 'static) -> StoreError {
        StoreError::Backend(Box::new(err))
    }
}
