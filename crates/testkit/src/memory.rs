//! [`MemoryStore`]: a [`TaskStore`](mcp_tasks_engine::TaskStore) (and a [`SessionStore`]) in a map behind a std mutex, for tests.
//!
//! It keeps every contract of the trait (compare-and-set on the version, `Duplicate` on a
//! taken id, one retained task per owner and idempotency key (a map beside the tasks, as
//! SQLite's unique index), keyset paging by creation time then id, owner scoping, a count per owner kept
//! beside the tasks, `unfinished`/`expired`/`purge` at `now` with their limits), and the
//! shared store suite runs against it (`crates/testkit/tests/it`), so the suite is proven
//! against two stores. It is not durable: a test of what survives a restart needs a real
//! file (`mcp-tasks-sqlite`).
//!
//! The multi-node part of the trait holds too: claims with leases (lapsing at the `now` given),
//! the retention limit checked under the same lock as the insert, cancel requests, stored
//! input answers, and the change feed (a broadcast sent under the lock, so in write order).
//! It is one process's store ([`ClaimStore::shared`] is `false`). Running places and HTTP
//! session records are the engine's [`LocalPlaces`] and [`LocalSessions`], as in SQLite.
//!
//! The orders follow the SQLite store's: `unfinished` by (creation time, id), `expired` and
//! `purge` by (expiry, id).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use tokio::sync::broadcast;

use mcp_tasks_engine::store::implement::{LocalPlaces, LocalSessions};
use mcp_tasks_engine::{
    Answer, BrowseQuery, ClaimStore, EventLimits, EventPage, HistoryEntry, LoggedEvent, NewEvent, IdempotencyKey, Inserted, KeptGroup, Lease, ListQuery, Origin, Place,
    PlaceHolder, Principal, ProcessGroup, RecordStore, RunningLimits, SessionRecord, SessionStore, Status, StoreError, TaskId,
    TaskRecord, Timestamp, Update, Version, ViewStore, WorkStore,
};

/// Capacity of the change feed; a slower subscriber lags and re-reads.
const FEED_CAPACITY: usize = 4096;

/// The tasks of one [`MemoryStore`], and the indexes beside them.
#[derive(Default)]
struct Tables {
    /// Every task by id.
    tasks: HashMap<TaskId, TaskRecord>,
    /// Each owner's tasks in listing order, and so also the owner's count.
    by_owner: HashMap<Principal, BTreeSet<(Timestamp, TaskId)>>,
    /// The task holding each owner's idempotency key (the unique index on owner and key).
    by_key: HashMap<(Principal, IdempotencyKey), TaskId>,
    /// The process group recorded for each task that has one.
    groups: HashMap<TaskId, ProcessGroup>,
    /// Process groups kept beside the tasks, by key (not tied to a task).
    kept: HashMap<String, KeptGroup>,
    /// Handlers' checkpoints, by task; removed with their task.
    checkpoints: HashMap<TaskId, serde_json::Value>,
    /// Each claimed task's lease.
    claims: HashMap<TaskId, Lease>,
    /// Tasks whose requestor asked them to stop.
    cancels: HashSet<TaskId>,
    /// Stored input answers not yet taken, by task and request key.
    answers: HashMap<(TaskId, String), Answer>,
    /// The slots of each tool's `max_concurrent`: holder task and lease.
    slots: HashMap<String, HashMap<TaskId, Lease>>,
    /// Each task's status history, oldest first (SQLite's `task_history`).
    history: HashMap<TaskId, Vec<HistoryEntry>>,
    /// Where each task came from, once recorded.
    origins: HashMap<TaskId, Origin>,
    /// Each task's event log, once something was appended; removed with its task.
    logs: HashMap<TaskId, Log>,
}

/// A task's stored events and its log's bounds (the SQL stores' `task_event_heads`).
#[derive(Default)]
struct Log {
    events: std::collections::VecDeque<LoggedEvent>,
    earliest: u64,
    next: u64,
    bytes: u64,
}

impl Log {
    /// Appends `events`, numbered on; prunes the oldest past `limits` (the newest stays).
    fn append(&mut self, events: &[NewEvent], limits: EventLimits) -> u64 {
        if self.next == 0 {
            self.next = 1;
        }
        let first = self.next;
        for event in events {
            self.bytes += event.payload.to_string().len() as u64;
            self.events.push_back(LoggedEvent { seq: self.next, kind: event.kind.clone(), payload: event.payload.clone(), at: event.at });
            self.next += 1;
        }
        while self.events.len() > 1 && (self.events.len() as u64 > limits.events.max(1) || self.bytes > limits.bytes) {
            if let Some(gone) = self.events.pop_front() {
                self.bytes -= gone.payload.to_string().len() as u64;
                self.earliest = gone.seq + 1;
            }
        }
        first
    }
}

/// The history entry of `task` as it now stands.
fn entry(task: &TaskRecord) -> HistoryEntry {
    HistoryEntry {
        version: task.version,
        at: task.updated_at,
        status: task.state.operator_status(),
        message: task.status_message.clone(),
    }
}

impl Tables {
    /// The tasks holding a running place that are stored and pass `test`.
    fn holders_where(&self, places: &LocalPlaces, test: impl Fn(&TaskRecord) -> bool) -> Vec<TaskId> {
        places.task_holders().into_iter().filter(|id| self.tasks.get(id).is_some_and(&test)).collect()
    }

    /// Takes a task out of both maps.
    fn remove(&mut self, id: &TaskId) {
        let Some(task) = self.tasks.remove(id) else {
            return;
        };
        self.groups.remove(id);
        self.checkpoints.remove(id);
        self.claims.remove(id);
        self.cancels.remove(id);
        self.answers.retain(|(task, _), _| task != id);
        self.history.remove(id);
        self.origins.remove(id);
        self.logs.remove(id);
        if let Some(key) = task.idempotency_key.clone() {
            let slot = (task.owner.clone(), key);
            if self.by_key.get(&slot) == Some(&task.id) {
                self.by_key.remove(&slot);
            }
        }
        if let Some(owned) = self.by_owner.get_mut(&task.owner) {
            owned.remove(&(task.created_at, task.id));
            if owned.is_empty() {
                self.by_owner.remove(&task.owner);
            }
        }
    }

    /// The task of `owner` holding `key`, if it is retained at `now`.
    fn keyed(&self, owner: &Principal, key: &IdempotencyKey, now: Timestamp) -> Option<&TaskRecord> {
        let id = self.by_key.get(&(owner.clone(), key.clone()))?;
        self.tasks.get(id).filter(|task| task.retained_at(now))
    }

    /// The tasks that satisfy `keep`, sorted by `key`, at most `limit`.
    fn select<K: Ord>(
        &self,
        keep: impl Fn(&TaskRecord) -> bool,
        key: impl Fn(&TaskRecord) -> K,
        limit: u32,
    ) -> Vec<&TaskRecord> {
        let mut found: Vec<&TaskRecord> = self.tasks.values().filter(|task| keep(task)).collect();
        found.sort_by_key(|task| key(task));
        found.truncate(limit as usize);
        found
    }
}

/// Whether a task with an expiry has reached it at `now` (expiry at exactly `now` counts).
fn due(task: &TaskRecord, now: Timestamp) -> bool {
    task.expires_at().is_some_and(|at| at <= now)
}

/// The (expiry, id) order of `expired` and `purge`.
fn by_expiry(task: &TaskRecord) -> (Option<Timestamp>, TaskId) {
    (task.expires_at(), task.id.clone())
}

/// Whether `task`'s claim, if any, has lapsed at `now`.
fn unclaimed(tables: &Tables, task: &TaskRecord, now: Timestamp) -> bool {
    tables
        .claims
        .get(&task.id)
        .is_none_or(|lease| lease.until <= now)
}

/// A [`TaskStore`](mcp_tasks_engine::TaskStore) held in memory: fast, and gone when dropped.
///
/// Every method takes the one lock, does its work and lets go, so each is atomic on its
/// own, as the trait asks; none awaits while holding it.
pub struct MemoryStore {
    tables: Mutex<Tables>,
    feed: broadcast::Sender<Arc<TaskRecord>>,
    /// The running places (lock order: `tables`, then this).
    places: LocalPlaces,
    /// 2025-11-25 HTTP sessions.
    sessions: LocalSessions,
}

impl Default for MemoryStore {
    fn default() -> MemoryStore {
        MemoryStore {
            tables: Mutex::default(),
            feed: broadcast::channel(FEED_CAPACITY).0,
            places: LocalPlaces::default(),
            sessions: LocalSessions::default(),
        }
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// Publishes `task` on the change feed (no subscriber is fine).
    fn publish(&self, task: &TaskRecord) {
        let _ = self.feed.send(Arc::new(task.clone()));
    }

    /// The insert of [`RecordStore::insert`], under the caller's lock.
    fn insert_locked(tables: &mut Tables, task: &TaskRecord) -> Result<Inserted, StoreError> {
        if tables.tasks.contains_key(&task.id) {
            return Err(StoreError::Duplicate(task.id.clone()));
        }
        if let Some(key) = &task.idempotency_key {
            if let Some(existing) = tables.keyed(&task.owner, key, task.created_at) {
                return Ok(Inserted::Existing(existing.clone()));
            }
            // Free, or held by a task past its TTL, which gives it up.
            tables
                .by_key
                .insert((task.owner.clone(), key.clone()), task.id.clone());
        }
        tables
            .by_owner
            .entry(task.owner.clone())
            .or_default()
            .insert((task.created_at, task.id.clone()));
        tables.history.insert(task.id.clone(), vec![entry(task)]);
        tables.tasks.insert(task.id.clone(), task.clone());
        Ok(Inserted::New)
    }

    /// The compare-and-set of [`RecordStore::replace`], under the caller's lock.
    fn replace_locked(
        tables: &mut Tables,
        id: &TaskId,
        expected: Version,
        update: &Update,
    ) -> Result<TaskRecord, StoreError> {
        let task = tables
            .tasks
            .get_mut(id)
            .filter(|task| task.version == expected)
            .ok_or_else(|| StoreError::Conflict(id.clone()))?;
        let changed = task.state.operator_status() != update.state.operator_status() || task.status_message != update.status_message;
        update.clone().apply(task);
        let task = task.clone();
        if changed {
            tables.history.entry(id.clone()).or_default().push(entry(&task));
        }
        Ok(task)
    }

    /// The tables, ignoring poisoning (a panicking test must not fail the others).
    fn lock(&self) -> MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl RecordStore for MemoryStore {
    async fn insert(&self, task: &TaskRecord) -> Result<Inserted, StoreError> {
        let mut tables = self.lock();
        let inserted = MemoryStore::insert_locked(&mut tables, task)?;
        if inserted == Inserted::New {
            self.publish(task);
        }
        Ok(inserted)
    }

    async fn find_by_key(
        &self,
        owner: &Principal,
        key: &IdempotencyKey,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.lock().keyed(owner, key, now).cloned())
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.lock().tasks.get(id).cloned())
    }

    async fn replace(
        &self,
        id: &TaskId,
        expected: Version,
        update: &Update,
    ) -> Result<TaskRecord, StoreError> {
        let mut tables = self.lock();
        let written = MemoryStore::replace_locked(&mut tables, id, expected, update)?;
        self.publish(&written);
        Ok(written)
    }

    async fn list(&self, query: &ListQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let tables = self.lock();
        let Some(owned) = tables.by_owner.get(&query.owner) else {
            return Ok(Vec::new());
        };
        let from = match &query.after {
            Some(cursor) => Bound::Excluded((cursor.created_at, cursor.id.clone())),
            None => Bound::Unbounded,
        };
        Ok(owned
            .range((from, Bound::Unbounded))
            .take(query.limit as usize)
            .filter_map(|(_, id)| tables.tasks.get(id).cloned())
            .collect())
    }

    async fn count(&self, owner: &Principal) -> Result<u64, StoreError> {
        let tables = self.lock();
        let count = tables.by_owner.get(owner).map_or(0, BTreeSet::len);
        Ok(count as u64)
    }

    async fn unfinished(&self, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        let tables = self.lock();
        let found = tables.select(
            |task| !task.status().is_terminal(),
            |task| (task.created_at, task.id.clone()),
            limit,
        );
        Ok(found.into_iter().cloned().collect())
    }

    async fn expired(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        let tables = self.lock();
        let found = tables.select(
            |task| !task.status().is_terminal() && due(task, now),
            by_expiry,
            limit,
        );
        Ok(found.into_iter().cloned().collect())
    }

    async fn purge(&self, now: Timestamp, limit: u32) -> Result<u64, StoreError> {
        let mut tables = self.lock();
        let gone: Vec<TaskId> = tables
            .select(
                |task| task.status().is_terminal() && due(task, now),
                by_expiry,
                limit,
            )
            .into_iter()
            .map(|task| task.id.clone())
            .collect();
        for id in &gone {
            tables.remove(id);
        }
        Ok(gone.len() as u64)
    }

    async fn request_cancel(&self, id: &TaskId) -> Result<bool, StoreError> {
        let mut tables = self.lock();
        let Some(task) = tables
            .tasks
            .get_mut(id)
            .filter(|task| !task.status().is_terminal())
        else {
            return Ok(false);
        };
        task.version = Version(task.version.0 + 1);
        let written = task.clone();
        tables.cancels.insert(id.clone());
        self.publish(&written);
        Ok(true)
    }

    async fn cancel_requested(&self, id: &TaskId) -> Result<bool, StoreError> {
        Ok(self.lock().cancels.contains(id))
    }

    async fn answer(
        &self,
        id: &TaskId,
        expected: Version,
        update: &Update,
        key: &str,
        answer: &Answer,
    ) -> Result<TaskRecord, StoreError> {
        let mut tables = self.lock();
        let written = MemoryStore::replace_locked(&mut tables, id, expected, update)?;
        tables
            .answers
            .insert((id.clone(), key.to_owned()), answer.clone());
        self.publish(&written);
        Ok(written)
    }

    async fn take_answer(&self, id: &TaskId, key: &str) -> Result<Option<Answer>, StoreError> {
        Ok(self.lock().answers.remove(&(id.clone(), key.to_owned())))
    }

    fn changes(&self) -> broadcast::Receiver<Arc<TaskRecord>> {
        self.feed.subscribe()
    }
}

#[async_trait]
impl ClaimStore for MemoryStore {
    fn shared(&self) -> bool {
        false
    }

    async fn insert_claimed(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
    ) -> Result<Inserted, StoreError> {
        let mut tables = self.lock();
        if let Some(key) = &task.idempotency_key
            && let Some(existing) = tables.keyed(&task.owner, key, task.created_at)
        {
            return Ok(Inserted::Existing(existing.clone()));
        }
        let retained = tables.by_owner.get(&task.owner).map_or(0, BTreeSet::len) as u64;
        if retained >= max_retained {
            return Err(StoreError::Full {
                owner: task.owner.clone(),
                retained,
            });
        }
        let inserted = MemoryStore::insert_locked(&mut tables, task)?;
        if inserted == Inserted::New {
            tables.claims.insert(task.id.clone(), lease.clone());
            if let Some(origin) = origin {
                tables.origins.insert(task.id.clone(), origin.clone());
            }
            self.publish(task);
        }
        Ok(inserted)
    }

    async fn claim(
        &self,
        id: &TaskId,
        attempt: u32,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let mut tables = self.lock();
        let Some(task) = tables.tasks.get(id) else {
            return Ok(None);
        };
        if task.status().is_terminal() || task.attempt != attempt || !unclaimed(&tables, task, now)
        {
            return Ok(None);
        }
        let task = tables
            .tasks
            .get_mut(id)
            .ok_or_else(|| StoreError::Conflict(id.clone()))?;
        task.attempt = attempt.saturating_add(1);
        task.version = Version(task.version.0 + 1);
        let taken = task.clone();
        tables.claims.insert(id.clone(), lease.clone());
        self.publish(&taken);
        Ok(Some(taken))
    }

    async fn renew(&self, lease: &Lease, now: Timestamp) -> Result<Vec<TaskId>, StoreError> {
        let mut tables = self.lock();
        let Tables { tasks, claims, .. } = &mut *tables;
        let mut renewed = Vec::new();
        for (id, held) in claims.iter_mut() {
            let unfinished = tasks
                .get(id)
                .is_some_and(|task| !task.status().is_terminal());
            if held.node == lease.node && held.until > now && unfinished {
                held.until = lease.until;
                renewed.push(id.clone());
            }
        }
        for held in tables.slots.values_mut() {
            for slot in held.values_mut() {
                if slot.node == lease.node && slot.until > now {
                    slot.until = lease.until;
                }
            }
        }
        let unfinished = tables.holders_where(&self.places, |task| !task.status().is_terminal());
        self.places.renew(lease, now, &unfinished);
        renewed.sort();
        Ok(renewed)
    }

    async fn lapsed(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        let tables = self.lock();
        let found = tables.select(
            |task| !task.status().is_terminal() && unclaimed(&tables, task, now),
            |task| (task.created_at, task.id.clone()),
            limit,
        );
        Ok(found.into_iter().cloned().collect())
    }

    async fn take_slot(&self, tool: &str, size: u32, id: &TaskId, lease: &Lease, now: Timestamp) -> Result<bool, StoreError> {
        let mut tables = self.lock();
        let Tables { tasks, slots, .. } = &mut *tables;
        let held = slots.entry(tool.to_owned()).or_default();
        held.retain(|holder, lease| {
            lease.until > now && tasks.get(holder).is_some_and(|task| !task.status().is_terminal())
        });
        if held.contains_key(id) {
            return Ok(true);
        }
        if held.len() >= size as usize {
            return Ok(false);
        }
        held.insert(id.clone(), lease.clone());
        Ok(true)
    }

    async fn release_slot(&self, tool: &str, id: &TaskId) -> Result<(), StoreError> {
        if let Some(held) = self.lock().slots.get_mut(tool) {
            held.remove(id);
        }
        Ok(())
    }

    async fn take_place(
        &self,
        holder: &PlaceHolder,
        owner: &Principal,
        limits: &RunningLimits,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Place, StoreError> {
        let tables = self.lock();
        let finished = tables.holders_where(&self.places, |task| task.status().is_terminal());
        Ok(self.places.take(holder, owner, limits, lease, now, &finished))
    }

    async fn release_place(&self, holder: &PlaceHolder) -> Result<(), StoreError> {
        self.places.release(holder);
        Ok(())
    }
}

#[async_trait]
impl ViewStore for MemoryStore {
    async fn browse(&self, query: &BrowseQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let tables = self.lock();
        let Some(owned) = tables.by_owner.get(&query.owner) else {
            return Ok(Vec::new());
        };
        let to = match &query.before {
            Some(cursor) => Bound::Excluded((cursor.created_at, cursor.id.clone())),
            None => Bound::Unbounded,
        };
        Ok(owned
            .range((Bound::Unbounded, to))
            .rev()
            .filter_map(|(_, id)| tables.tasks.get(id))
            .filter(|task| query.matches(task))
            .take(query.limit as usize)
            .cloned()
            .collect())
    }

    async fn status_counts(&self, owner: &Principal) -> Result<Vec<(Status, u64)>, StoreError> {
        let tables = self.lock();
        let mut counts: Vec<(Status, u64)> = Vec::new();
        for (_, id) in tables.by_owner.get(owner).into_iter().flatten() {
            let Some(status) = tables.tasks.get(id).map(|task| task.state.operator_status()) else {
                continue;
            };
            match counts.iter_mut().find(|(s, _)| *s == status) {
                Some((_, n)) => *n += 1,
                None => counts.push((status, 1)),
            }
        }
        Ok(counts)
    }

    async fn history(&self, id: &TaskId) -> Result<Vec<HistoryEntry>, StoreError> {
        Ok(self.lock().history.get(id).cloned().unwrap_or_default())
    }

    async fn set_origin(&self, id: &TaskId, origin: &Origin) -> Result<(), StoreError> {
        let mut tables = self.lock();
        if tables.tasks.contains_key(id) {
            tables.origins.insert(id.clone(), origin.clone());
        }
        Ok(())
    }

    async fn origin(&self, id: &TaskId) -> Result<Option<Origin>, StoreError> {
        Ok(self.lock().origins.get(id).cloned())
    }
}

#[async_trait]
impl WorkStore for MemoryStore {
    async fn set_process_group(&self, id: &TaskId, group: &ProcessGroup) -> Result<(), StoreError> {
        let mut tables = self.lock();
        if tables.tasks.contains_key(id) {
            tables.groups.insert(id.clone(), *group);
        }
        Ok(())
    }

    async fn process_group(&self, id: &TaskId) -> Result<Option<ProcessGroup>, StoreError> {
        Ok(self.lock().groups.get(id).copied())
    }

    async fn set_kept_group(&self, key: &str, kept: Option<&KeptGroup>) -> Result<(), StoreError> {
        let mut tables = self.lock();
        match kept {
            Some(kept) => tables.kept.insert(key.to_owned(), *kept),
            None => tables.kept.remove(key),
        };
        Ok(())
    }

    async fn kept_group(&self, key: &str) -> Result<Option<KeptGroup>, StoreError> {
        Ok(self.lock().kept.get(key).copied())
    }

    async fn set_checkpoint(&self, id: &TaskId, attempt: u32, checkpoint: &serde_json::Value) -> Result<bool, StoreError> {
        let mut tables = self.lock();
        let current = tables.tasks.get(id).is_some_and(|task| task.attempt == attempt && !task.status().is_terminal());
        if current {
            tables.checkpoints.insert(id.clone(), checkpoint.clone());
        }
        Ok(current)
    }

    async fn checkpoint(&self, id: &TaskId) -> Result<Option<serde_json::Value>, StoreError> {
        Ok(self.lock().checkpoints.get(id).cloned())
    }

    async fn append_events(
        &self,
        id: &TaskId,
        attempt: u32,
        events: &[NewEvent],
        limits: EventLimits,
    ) -> Result<Option<u64>, StoreError> {
        let mut tables = self.lock();
        let current = tables.tasks.get(id).is_some_and(|task| task.attempt == attempt && !task.status().is_terminal());
        if !current || events.is_empty() {
            return Ok(None);
        }
        Ok(Some(tables.logs.entry(id.clone()).or_default().append(events, limits)))
    }

    async fn logged_events(&self, id: &TaskId, after: u64, limit: u32) -> Result<EventPage, StoreError> {
        let tables = self.lock();
        let Some(log) = tables.logs.get(id) else {
            return Ok(EventPage { events: Vec::new(), earliest: 0, next: 1 });
        };
        let events = log.events.iter().filter(|event| event.seq > after).take(limit as usize).cloned().collect();
        Ok(EventPage { events, earliest: log.earliest, next: log.next })
    }
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn put_session(&self, session: &SessionRecord) -> Result<(), StoreError> {
        self.sessions.put(session);
        Ok(())
    }

    async fn session(&self, id: &str, owner: &Principal) -> Result<Option<SessionRecord>, StoreError> {
        Ok(self.sessions.get(id, owner))
    }

    async fn add_session_task(&self, id: &str, task: &TaskId) -> Result<(), StoreError> {
        self.sessions.add_task(id, task);
        Ok(())
    }

    async fn touch_sessions(&self, ids: &[String], now: Timestamp) -> Result<Vec<String>, StoreError> {
        Ok(self.sessions.touch(ids, now))
    }

    async fn end_session(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.sessions.end(id))
    }

    async fn prune_sessions(&self, idle_before: Timestamp, limit: u32) -> Result<u64, StoreError> {
        Ok(self.sessions.prune(idle_before, limit))
    }
}
