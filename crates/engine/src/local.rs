//! The session records and running places of a store that one process owns (SQLite, the
//! memory store), kept in that process's memory: nobody else reads them, and neither needs to
//! survive the process (its sessions' streams and its running work end with it). Both stores
//! use these tables, so they keep the same contract as PostgreSQL's
//! ([`TaskStore::take_place`](crate::TaskStore::take_place),
//! [`TaskStore::put_session`](crate::TaskStore::put_session) and the rest) and pass the same
//! store-suite cases.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::store::{Lease, Place, PlaceHolder, RunningLimits, SessionRecord};
use crate::task::{Principal, TaskId, Timestamp};

/// Stored sessions by id. A std mutex: map operations only, never across an await.
#[derive(Default)]
pub struct LocalSessions {
    sessions: Mutex<HashMap<String, SessionRecord>>,
}

impl LocalSessions {
    fn sessions(&self) -> MutexGuard<'_, HashMap<String, SessionRecord>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// [`TaskStore::put_session`](crate::TaskStore::put_session).
    pub fn put(&self, session: &SessionRecord) {
        let mut sessions = self.sessions();
        let created = sessions.remove(&session.id).map(|old| old.created).unwrap_or_default();
        sessions.insert(session.id.clone(), SessionRecord { created, ..session.clone() });
    }

    /// [`TaskStore::session`](crate::TaskStore::session).
    pub fn get(&self, id: &str, owner: &Principal) -> Option<SessionRecord> {
        self.sessions().get(id).filter(|session| &session.owner == owner).cloned()
    }

    /// [`TaskStore::add_session_task`](crate::TaskStore::add_session_task).
    pub fn add_task(&self, id: &str, task: &TaskId) {
        if let Some(session) = self.sessions().get_mut(id)
            && !session.created.contains(task)
        {
            session.created.push(task.clone());
        }
    }

    /// [`TaskStore::touch_sessions`](crate::TaskStore::touch_sessions).
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

    /// [`TaskStore::end_session`](crate::TaskStore::end_session).
    pub fn end(&self, id: &str) -> bool {
        self.sessions().remove(id).is_some()
    }

    /// [`TaskStore::prune_sessions`](crate::TaskStore::prune_sessions).
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

    /// [`TaskStore::take_place`](crate::TaskStore::take_place); `finished` are the holding
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

    /// [`TaskStore::release_place`](crate::TaskStore::release_place).
    pub fn release(&self, holder: &PlaceHolder) {
        self.places().remove(holder);
    }

    /// The renewal of [`TaskStore::renew`](crate::TaskStore::renew): every place of
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
