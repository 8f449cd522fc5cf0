//! [`SessionStore`]: the 2025-11-25 HTTP session records (`Mcp-Session-Id`), so that on a
//! shared store (many replicas) any replica serves any session and a DELETE through one ends
//! it for all.
//!
//! It serves the HTTP transport only: the engine never calls it, and it is not part of
//! [`TaskStore`](super::TaskStore). It lives here, beside the store traits, because every
//! store implements it (SQLite and the memory store in memory with
//! [`LocalSessions`](super::implement::LocalSessions), PostgreSQL in its tables) and the
//! stores do not depend on the transport.

use async_trait::async_trait;
use serde_json::Value;

use super::StoreError;
use crate::task::{Principal, TaskId, Timestamp};

/// The stored 2025-11-25 HTTP sessions: the record of what `initialize` negotiated and what
/// the session changed since. The open streams of a session are not stored: they stay with
/// the process holding them.
///
/// Every method is atomic on its own; none holds a lock across calls.
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// Stores `session`, or replaces the stored one with this id (its state, owner and last
    /// use; the tasks it created are kept). Durable before returning.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn put_session(&self, session: &SessionRecord) -> Result<(), StoreError>;

    /// The session `id` of `owner`, if it is stored: another owner's session is never found
    /// (as if it did not exist). One lookup by id.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn session(&self, id: &str, owner: &Principal) -> Result<Option<SessionRecord>, StoreError>;

    /// Adds `task` to the tasks session `id` created (its listing when requestors are not
    /// identified), after those recorded before; a task recorded already is not added again.
    /// Atomic, so that creations through two nodes at once both stay. An unknown session is
    /// no error (nothing is written).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn add_session_task(&self, id: &str, task: &TaskId) -> Result<(), StoreError>;

    /// Sets the last use of each of the sessions `ids` that is stored to `now` (if later than
    /// the stored one), and returns the ids of those still stored (the others were ended,
    /// perhaps through another node). At most a few hundred ids at a time.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn touch_sessions(&self, ids: &[String], now: Timestamp) -> Result<Vec<String>, StoreError>;

    /// Deletes session `id` (DELETE, or ended by its node); `false` if it was not stored.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn end_session(&self, id: &str) -> Result<bool, StoreError>;

    /// Deletes sessions last used before `idle_before`, at most `limit` (oldest first);
    /// returns how many went. Served from an index on the last use.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn prune_sessions(&self, idle_before: Timestamp, limit: u32) -> Result<u64, StoreError>;
}

/// A stored 2025-11-25 HTTP session ([`SessionStore::put_session`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRecord {
    /// The `Mcp-Session-Id` (128 random bits).
    pub id: String,
    /// The principal the session belongs to.
    pub owner: Principal,
    /// What the era's codec needs to serve the session's requests (negotiated version,
    /// client capabilities and info, log level), as it writes it.
    pub state: Value,
    /// The tasks the session created, oldest first ([`SessionStore::add_session_task`]).
    pub created: Vec<TaskId>,
    /// When a request of the session was last served, as far as the store knows.
    pub last_used: Timestamp,
}

impl SessionRecord {
    /// The record [`SessionStore::put_session`] stores for session `id` of `owner` with the
    /// codec's `state`, used at `now` (the tasks it created are the stored record's).
    pub fn put(id: &str, owner: &Principal, state: Value, now: Timestamp) -> SessionRecord {
        SessionRecord { id: id.to_owned(), owner: owner.clone(), state, created: Vec::new(), last_used: now }
    }
}
