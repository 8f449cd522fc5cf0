//! The engine's publishing of task changes to its subscribers ([`Engine::publish_task`]:
//! its own writes as they return, and the store's feed), and what it last published of each
//! task:
//! its version, so that a change heard twice (from the write's return and from the store's
//! feed) is published once, and, for a finished task written here, the instant its commit
//! returned ([`Engine::committed_at`](crate::Engine::committed_at)).
//!
//! Bounded by forgetting finished tasks, the one published first going first, a step or
//! two per new task. Forgetting had been all at once: past the bound, one pass over the whole
//! map under the lock every publication and `committed_at` takes, dropping some 65,000
//! entries every 65,536 tasks, a stall of every request that publishes or waits meanwhile
//! (the same shape as the SQLite store's cache of hot tasks,
//! `docs/benchmarks/17-seventeenth-round.md`). An unfinished task is never forgotten: it
//! goes to the back of the order instead, so a map of mostly running tasks may hold more
//! than the bound, as it could before.

use std::collections::VecDeque;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use crate::engine::{Change, Engine};

use crate::fast::{FastMap, FastSet};
use crate::task::{TaskId, TaskRecord, Version};

/// Past this many tasks remembered, the finished ones are forgotten (their commit instants
/// with them).
pub(crate) const PUBLISHED_CAP: usize = 65_536;

/// The most entries looked at to make room for one new task: more than one, so that the map
/// shrinks back under the bound after running tasks pushed it over.
const STEPS_PER_INSERT: usize = 3;

/// What is remembered of one task.
#[derive(Clone, Copy)]
struct Seen {
    /// The version last published.
    version: Version,
    /// Whether it was terminal: only terminal ones are forgotten.
    terminal: bool,
    /// When this node's write of that terminal version returned from the store; `None` for
    /// any other version, and for one heard only on the store's feed (another node's
    /// write: no local commit to measure from).
    committed_at: Option<Instant>,
}

/// The published versions, bounded (see the module comment).
pub(crate) struct Published {
    seen: FastMap<TaskId, Seen>,
    /// Each remembered task once, in the order it was first remembered (ids forgotten by
    /// [`Published::release`] stay until they come up, and are skipped then).
    order: VecDeque<TaskId>,
    cap: usize,
}

impl Default for Published {
    fn default() -> Self {
        Published::with_cap(PUBLISHED_CAP)
    }
}

impl Published {
    fn with_cap(cap: usize) -> Published {
        Published { seen: FastMap::default(), order: VecDeque::new(), cap }
    }

    /// Notes `record` as published; `false` if it was at its version already (then only its
    /// commit instant may be added). `committed`: when this node's write of it returned.
    pub(crate) fn mark(&mut self, record: &TaskRecord, committed: Option<Instant>) -> bool {
        let terminal = record.status().is_terminal();
        let committed_at = committed.filter(|_| terminal);
        if let Some(seen) = self.seen.get_mut(&record.id) {
            if seen.version >= record.version {
                // The store's feed (SQLite: sent as the write returns) may get here first
                // with this very version: it is published already, and now has its instant.
                if seen.version == record.version && seen.committed_at.is_none() {
                    seen.committed_at = committed_at;
                }
                return false;
            }
            *seen = Seen { version: record.version, terminal, committed_at };
            return true;
        }
        self.make_room();
        self.remember(record.id.clone(), Seen { version: record.version, terminal, committed_at });
        true
    }

    /// The instant this node's write of task `id`'s terminal version returned, if kept.
    pub(crate) fn committed_at(&self, id: &TaskId) -> Option<Instant> {
        self.seen.get(id).and_then(|seen| seen.committed_at)
    }

    /// Holds back publishing task `id`: every version counts as published until
    /// [`Published::release`].
    pub(crate) fn hold(&mut self, id: &TaskId) {
        let held = Seen { version: Version(u64::MAX), terminal: false, committed_at: None };
        match self.seen.get_mut(id) {
            Some(seen) => *seen = held,
            None => {
                self.make_room();
                self.remember(id.clone(), held);
            }
        }
    }

    /// Forgets task `id`: its next version is published whatever it is.
    pub(crate) fn release(&mut self, id: &TaskId) {
        self.seen.remove(id);
    }

    fn remember(&mut self, id: TaskId, seen: Seen) {
        self.order.push_back(id.clone());
        self.seen.insert(id, seen);
        // Released ids left behind in the order: when they are as many again as the tasks,
        // they go in one pass (rare: a release follows a take-over).
        if self.order.len() > 2 * self.cap.max(self.seen.len()) {
            let seen = &self.seen;
            let mut kept = FastSet::default();
            self.order.retain(|id| seen.contains_key(id) && kept.insert(id.clone()));
        }
    }

    /// At the bound, looks at up to [`STEPS_PER_INSERT`] of the tasks remembered first:
    /// forgets the finished ones, sends the running ones to the back.
    fn make_room(&mut self) {
        let mut steps = 0;
        while self.seen.len() >= self.cap && steps < STEPS_PER_INSERT {
            let Some(id) = self.order.pop_front() else { break };
            match self.seen.get(&id) {
                // Released since: not a step.
                None => continue,
                Some(seen) if seen.terminal => {
                    self.seen.remove(&id);
                }
                Some(_) => self.order.push_back(id),
            }
            steps += 1;
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.seen.len()
    }
}

impl Engine {
    /// Publishes `record` to the engine's subscribers, unless it was published already at
    /// its version: this node's own writes are published as they return (so a subscriber
    /// sees them in order, before the call that made them returns), and again by the store's
    /// change feed, which also carries the other nodes' writes. `committed`: when this node's
    /// write of `record` returned from the store, kept for a terminal record
    /// ([`Engine::committed_at`]).
    pub(crate) fn publish_task(&self, record: &TaskRecord, committed: Option<Instant>) {
        if self.mark_published(record, committed) {
            self.send_change(Change::Task(Arc::new(record.clone())));
        }
    }

    /// [`Engine::publish_task`] of a record already shared: published without a copy.
    pub(crate) fn publish_shared(&self, record: &Arc<TaskRecord>, committed: Option<Instant>) {
        if self.mark_published(record, committed) {
            self.send_change(Change::Task(Arc::clone(record)));
        }
    }

    /// Notes `record` as published; `false` if it was at its version already (then only
    /// its commit instant may be added).
    fn mark_published(&self, record: &TaskRecord, committed: Option<Instant>) -> bool {
        self.inner.published.lock().unwrap_or_else(PoisonError::into_inner).mark(record, committed)
    }

    /// When this node's write of task `id`'s terminal state returned from the store: the
    /// moment its commit was done, from which the delivery of the outcome to a waiting
    /// request can be timed. `None` if the task is not terminal, was finished by another
    /// node (heard on a shared store's change feed), or was forgotten (the engine remembers
    /// a bounded number of finished tasks). A lookup under the lock that publishing takes.
    pub fn committed_at(&self, id: &TaskId) -> Option<Instant> {
        self.inner.published.lock().unwrap_or_else(PoisonError::into_inner).committed_at(id)
    }

    /// Sends `change` to the watchers of its task and to the subscribers of every change.
    pub(crate) fn send_change(&self, change: Change) {
        self.inner.hub.route(&change);
        if matches!(change, Change::Progress { .. }) && self.inner.progress.receiver_count() > 0 {
            let _ = self.inner.progress.send(change.clone());
        }
        // No subscribers is fine: nobody is waiting.
        let _ = self.inner.changes.send(change);
    }

    /// How many task ids have a [`TaskWatch`](crate::TaskWatch) on them (a test's check that
    /// watches end with their waits).
    #[doc(hidden)]
    pub fn watched_ids(&self) -> usize {
        self.inner.hub.watched_ids()
    }

    /// Holds back publishing task `id` (its take-over by the rescuer is under way) until
    /// [`Engine::release_publishing`].
    pub(crate) fn hold_publishing(&self, id: &TaskId) {
        self.inner.published.lock().unwrap_or_else(PoisonError::into_inner).hold(id);
    }

    /// Publishes task `id` as it stands, and lets its later changes through again.
    pub(crate) async fn release_publishing(&self, id: &TaskId) {
        self.inner.published.lock().unwrap_or_else(PoisonError::into_inner).release(id);
        match self.inner.store.get_shared(id).await {
            Ok(Some(record)) => self.publish_shared(&record, None),
            Ok(None) => {}
            Err(err) => tracing::warn!(task = %id, error = %err, "could not read a task after its take-over"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use serde_json::json;

    use super::*;
    use crate::task::{Principal, TaskState};

    fn task(state: TaskState) -> TaskRecord {
        TaskRecord {
            id: TaskId::random(),
            owner: Principal::new("alice"),
            tool: "noop".to_owned(),
            arguments: json!({}),
            state,
            status_message: None,
            created_at: crate::task::Timestamp(0),
            updated_at: crate::task::Timestamp(0),
            ttl_ms: None,
            poll_interval_ms: None,
            attempt: 1,
            version: Version(2),
            error_result_fails: false,
            input_kinds: Vec::new(),
            idempotency_key: None,
            trace: None,
        }
    }

    fn finished() -> TaskRecord {
        task(TaskState::Completed { result: json!({"content": []}) })
    }

    #[test]
    fn past_the_bound_the_task_published_first_is_forgotten_and_only_that_one() {
        let mut published = Published::with_cap(64);
        let now = Instant::now();
        let tasks: Vec<TaskRecord> = (0..74).map(|_| finished()).collect();
        for record in &tasks {
            assert!(published.mark(record, Some(now)));
        }
        // Forgetting every finished task at once (what the engine did) would keep only the
        // ten published after the bound.
        assert!(tasks[..10].iter().all(|record| published.committed_at(&record.id).is_none()));
        assert!(tasks[10..].iter().all(|record| published.committed_at(&record.id) == Some(now)));
        assert_eq!(published.len(), 64);
    }

    #[test]
    fn a_running_task_is_never_forgotten_and_the_map_comes_back_under_the_bound() {
        let mut published = Published::with_cap(8);
        let running: Vec<TaskRecord> = (0..4).map(|_| task(TaskState::Working)).collect();
        for record in &running {
            published.mark(record, None);
        }
        for _ in 0..100 {
            published.mark(&finished(), Some(Instant::now()));
        }
        assert_eq!(published.len(), 8);
        // Still remembered at their version: the same version again is not published twice.
        assert!(running.iter().all(|record| !published.mark(record, None)));
        // Over the bound with running tasks alone, then back under it as they finish.
        let more: Vec<TaskRecord> = (0..12).map(|_| task(TaskState::Working)).collect();
        for record in &more {
            published.mark(record, None);
        }
        assert!(published.len() > 8, "running tasks are kept past the bound");
        for record in running.iter().chain(&more) {
            let done = TaskRecord { version: Version(3), ..finished() };
            published.mark(&TaskRecord { id: record.id.clone(), ..done }, Some(Instant::now()));
        }
        for _ in 0..20 {
            published.mark(&finished(), Some(Instant::now()));
        }
        assert_eq!(published.len(), 8);
    }

    #[test]
    fn a_version_is_published_once_and_a_held_task_not_at_all_until_released() {
        let mut published = Published::default();
        let record = finished();
        let at = Instant::now();
        assert!(published.mark(&record, None));
        assert!(!published.mark(&record, Some(at)), "the same version again");
        assert_eq!(published.committed_at(&record.id), Some(at), "its commit instant is added");
        published.hold(&record.id);
        assert!(!published.mark(&TaskRecord { version: Version(9), ..record.clone() }, None));
        published.release(&record.id);
        assert!(published.mark(&TaskRecord { version: Version(9), ..record.clone() }, None));
    }

    #[test]
    fn ids_released_and_remembered_again_do_not_grow_the_order() {
        let mut published = Published::with_cap(8);
        let record = finished();
        for _ in 0..1_000 {
            published.hold(&record.id);
            published.release(&record.id);
            published.mark(&record, None);
        }
        assert_eq!(published.len(), 1);
        assert!(published.order.len() <= 2 * 8 + 1, "{} places for one task", published.order.len());
    }
}
