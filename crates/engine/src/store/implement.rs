//! Helpers for implementing the store traits, for the store crates (`mcp-tasks-sqlite`,
//! `mcp-tasks-postgres`, the test kit's `MemoryStore`) only.
//!
//! This module is an internal seam of mcp-tasks for the store crates, not a stable API: it
//! changes whenever they need it to. Nothing here is for a store's users.
//!
//! - [`EarlyEnding`]: the outcome of work that may end before its task's insert runs.
//! - [`Commit`] and [`CommitObserver`]: what a store's `on_commit` observer is told.
//! - [`LocalSessions`] and [`LocalPlaces`]: the session records and running places of a store
//!   that one process owns (the memory store), kept in that process's memory: nobody else
//!   reads them, and neither needs to survive the process (its sessions' streams and its
//!   running work end with it). So it keeps the same contract as the shared stores'
//!   ([`ClaimStore::take_place`](super::ClaimStore::take_place),
//!   [`SessionStore::put_session`](super::SessionStore::put_session) and the rest) and passes
//!   the same store-suite cases.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::{Lease, Place, PlaceHolder, RunningLimits, SessionRecord, Update};
use crate::task::{Principal, TaskId, Timestamp};

/// The outcome of a task's work that may have ended before the task's insert ran
/// ([`ClaimStore::insert_claimed_early`](super::ClaimStore::insert_claimed_early)). The
/// engine hands one to the insert; a store that writes the ending with its insert calls
/// [`EarlyEnding::take`] inside its transaction, any other store calls
/// [`EarlyEnding::decline`] once its insert has run.
pub trait EarlyEnding: Send + Sync {
    /// Called once, by the insert, inside its transaction: the ending of the work if it ended
    /// first, which the insert then writes with the row (the update from `working`, version
    /// 1, and the events the work reported before it, appended to the task's log in the same
    /// transaction). After this call no ending goes in with the insert: a later one is written
    /// on its own.
    fn take(&self) -> Option<EarlyEnd>;

    /// Called by a store that writes no ending with its insert, once the insert has run
    /// (whether or not it wrote the row): an ending that came before is written on its own,
    /// with the events before it, once the creation is answered, as a later one is.
    fn decline(&self);
}

/// The ending of early work that goes in with its task's insert ([`EarlyEnding::take`]).
#[derive(Clone, Debug)]
pub struct EarlyEnd {
    /// The update the ending makes to the new task.
    pub update: Update,
    /// The events the work reported before it ended, in order, for the task's log (numbered
    /// from 1, as the first append would number them).
    pub events: Vec<super::NewEvent>,
    /// The log's retention limits, as an append applies them.
    pub limits: super::EventLimits,
}

/// One write of a store as its `on_commit` observer is told of it (the metrics of
/// `mcp-tasks serve`): SQLite's writer thread reports each batch of its group commit,
/// PostgreSQL each statement or transaction (a group of creations or of compare-and-sets sent
/// as one statement is one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Commit {
    /// From the start of the write (SQLite: `BEGIN`; PostgreSQL: taking a pooled connection)
    /// to the end of its commit (the fsync or WAL flush included) or of its failure.
    pub elapsed: Duration,
    /// How many writes it held: the group commit's size (on PostgreSQL, of the creations and
    /// compare-and-sets sent together; 1 for any other write).
    pub writes: usize,
    /// Whether it committed: `false` for a rolled-back batch, a backend failure or an
    /// unreachable database (a compare-and-set that finds the task moved on, a duplicate id or
    /// a full owner committed nothing, but the database answered).
    pub committed: bool,
}

/// What a store's `on_commit` is told of each write.
pub type CommitObserver = Box<dyn Fn(Commit) + Send + Sync>;

/// Stored sessions by id. A std mutex: map operations only, never across an await.
#[derive(Default)]
pub struct LocalSessions {
    sessions: Mutex<HashMap<String, SessionRecord>>,
}

impl LocalSessions {
    fn sessions(&self) -> MutexGuard<'_, HashMap<String, SessionRecord>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// [`SessionStore::put_session`](crate::SessionStore::put_session).
    pub fn put(&self, session: &SessionRecord) {
        let mut sessions = self.sessions();
        let created = sessions.remove(&session.id).map(|old| old.created).unwrap_or_default();
        sessions.insert(session.id.clone(), SessionRecord { created, ..session.clone() });
    }

    /// [`SessionStore::session`](crate::SessionStore::session).
    pub fn get(&self, id: &str, owner: &Principal) -> Option<SessionRecord> {
        self.sessions().get(id).filter(|session| &session.owner == owner).cloned()
    }

    /// [`SessionStore::add_session_task`](crate::SessionStore::add_session_task).
    pub fn add_task(&self, id: &str, task: &TaskId) {
        if let Some(session) = self.sessions().get_mut(id)
            && !session.created.contains(task)
        {
            session.created.push(task.clone());
        }
    }

    /// [`SessionStore::touch_sessions`](crate::SessionStore::touch_sessions).
    pub fn touch(&self, ids: &[String], now: Timestamp) -> Vec<String> {
        let mut sessions = self.sessions();
        let mut stored = Vec::new();
        for id in ids {
            if let Some(session) = sessions.get_mut(id) {
                session.last_used = session.last_used.max(now);
                stored.push(id.clone());
            }
        }
        stored
    }

    /// [`SessionStore::end_session`](crate::SessionStore::end_session).
    pub fn end(&self, id: &str) -> bool {
        self.sessions().remove(id).is_some()
    }

    /// [`SessionStore::prune_sessions`](crate::SessionStore::prune_sessions).
    pub fn prune(&self, idle_before: Timestamp, limit: u32) -> u64 {
        let mut sessions = self.sessions();
        let mut idle: Vec<(Timestamp, String)> = sessions
            .values()
            .filter(|session| session.last_used < idle_before)
            .map(|session| (session.last_used, session.id.clone()))
            .collect();
        idle.sort();
        idle.truncate(limit as usize);
        for (_, id) in &idle {
            sessions.remove(id);
        }
        idle.len() as u64
    }
}

/// Running places by holder. A std mutex: map operations only, never across an await.
#[derive(Default)]
pub struct LocalPlaces {
    places: Mutex<HashMap<PlaceHolder, (Principal, Lease)>>,
}

impl LocalPlaces {
    fn places(&self) -> MutexGuard<'_, HashMap<PlaceHolder, (Principal, Lease)>> {
        self.places.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tasks holding a place: the store tells [`LocalPlaces::take`] which are finished
    /// and [`LocalPlaces::renew`] which are not.
    pub fn task_holders(&self) -> Vec<TaskId> {
        self.places()
            .keys()
            .filter_map(|holder| match holder {
                PlaceHolder::Task(id) => Some(id.clone()),
                PlaceHolder::Call(_) => None,
            })
            .collect()
    }

    /// [`ClaimStore::take_place`](crate::ClaimStore::take_place); `finished` are the holding
    /// tasks that are finished (their places are free; a task not stored (yet) keeps its place
    /// until its lease lapses).
    pub fn take(
        &self,
        holder: &PlaceHolder,
        owner: &Principal,
        limits: &RunningLimits,
        lease: &Lease,
        now: Timestamp,
        finished: &[TaskId],
    ) -> Place {
        let mut places = self.places();
        places.retain(|held, (_, lease)| {
            lease.until > now && !matches!(held, PlaceHolder::Task(id) if finished.contains(id))
        });
        if let Some((_, held)) = places.get_mut(holder) {
            *held = lease.clone();
            return Place::Taken;
        }
        let running = places.len() as u64;
        if running >= u64::from(limits.max_running) {
            return Place::Full { running };
        }
        let mine = places.values().filter(|(held_by, _)| held_by == owner).count() as u64;
        if mine >= u64::from(limits.max_running_per_principal) {
            return Place::OwnerFull { running: mine };
        }
        places.insert(holder.clone(), (owner.clone(), lease.clone()));
        Place::Taken
    }

    /// [`ClaimStore::release_place`](crate::ClaimStore::release_place).
    pub fn release(&self, holder: &PlaceHolder) {
        self.places().remove(holder);
    }

    /// The renewal of [`ClaimStore::renew`](crate::ClaimStore::renew): every place of
    /// `lease.node` not lapsed at `now` is held until `lease.until`, a task's only if the task
    /// is among `unfinished` (a finished or purged task's place lapses).
    pub fn renew(&self, lease: &Lease, now: Timestamp, unfinished: &[TaskId]) {
        for (holder, (_, held)) in self.places().iter_mut() {
            let done = matches!(holder, PlaceHolder::Task(id) if !unfinished.contains(id));
            if held.node == lease.node && held.until > now && !done {
                held.until = lease.until;
            }
        }
    }
}
