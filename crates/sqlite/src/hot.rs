//! The tasks written last, kept in memory so that reading them takes no SQLite read: a
//! `tasks/get` polling a task, a waiter reading it before it waits, and the engine's
//! compare-and-set reading it before it writes (three reads per lifecycle, each one a hop to
//! the blocking pool and a read transaction whose page cache the last commit had emptied).
//!
//! Correct because the writer thread is the only writer of the file: it applies each
//! batch's changes here after the batch commits and before any of its callers is answered,
//! in commit order, so a read that finds a task here finds it as the file has it. When a
//! second store of this process opens the same file ([`StoreLock::is_shared`]) there are
//! two writers, and the cache is bypassed and emptied for good. A write that changes a row
//! without giving its new record evicts the task instead; reads never fill the cache.
//!
//! Bounded: at most [`MAX_ENTRIES`] tasks and [`MAX_BYTES`] of their encoded state and
//! arguments; a record larger than [`MAX_RECORD_BYTES`] is not kept. When full, finished
//! tasks go first, then everything (misses only cost the read they would have cost anyway).
//!
//! Beside the tasks, each owner's number of stored tasks (`task_counts`), which admission
//! reads before every creation: set from the count the writer's insert read in its own
//! transaction, forgotten by any other write that changes it (a purge, a plain insert), at
//! most [`MAX_COUNTS`] owners. Like the tasks, a count is only ever set by the writer thread
//! from what it committed, never by a read.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcp_tasks_engine::{FastMap, Principal, TaskId, TaskRecord};

use crate::faults::StoreLock;

/// The most tasks kept.
const MAX_ENTRIES: usize = 4096;
/// The most bytes of encoded state and arguments kept, over all tasks.
const MAX_BYTES: usize = 8 * 1024 * 1024;
/// A larger record (a big result) is read from the file instead.
const MAX_RECORD_BYTES: usize = 64 * 1024;
/// The most owners whose count is kept; past it the counts are forgotten and set again.
const MAX_COUNTS: usize = 4096;

/// The encoded size of a record's state and arguments, in bytes (what the bound counts).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Size {
    pub(crate) state: usize,
    pub(crate) arguments: usize,
}

impl Size {
    fn total(self) -> usize {
        self.state.saturating_add(self.arguments)
    }
}

/// What a write did to the rows of `tasks`, for the cache.
#[derive(Debug)]
pub(crate) enum Touch {
    /// The task's row is now `record`, whose encoded state and arguments take `size`. Shared
    /// with the store's change feed and the write's caller: kept here without a copy.
    Put { record: Arc<TaskRecord>, size: Size },
    /// The task's row changed or went: forget it.
    Evict(TaskId),
    /// The owner now has `tasks` rows of `tasks`, as the write's transaction counted them.
    Counted { owner: Principal, tasks: u64 },
    /// The owner's number of rows changed otherwise: forget it.
    Uncounted(Principal),
}

pub(crate) struct Hot {
    lock: StoreLock,
    state: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    tasks: FastMap<TaskId, (Arc<TaskRecord>, Size)>,
    bytes: usize,
    counts: FastMap<Principal, u64>,
}

impl Entries {
    fn remove(&mut self, id: &TaskId) {
        if let Some((_, size)) = self.tasks.remove(id) {
            self.bytes -= size.total();
        }
    }

    fn make_room(&mut self, bytes: usize) {
        if self.tasks.len() < MAX_ENTRIES && self.bytes + bytes <= MAX_BYTES {
            return;
        }
        self.tasks.retain(|_, (record, _)| !record.status().is_terminal());
        self.bytes = self.tasks.values().map(|(_, size)| size.total()).sum();
        if self.tasks.len() >= MAX_ENTRIES / 2 || self.bytes + bytes > MAX_BYTES / 2 {
            self.tasks.clear();
            self.bytes = 0;
        }
    }
}

impl Hot {
    pub(crate) fn new(lock: StoreLock) -> Hot {
        Hot { lock, state: Mutex::default() }
    }

    fn entries(&self) -> Option<MutexGuard<'_, Entries>> {
        let mut entries = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if self.lock.is_shared() {
            if !entries.tasks.is_empty() || !entries.counts.is_empty() {
                *entries = Entries::default();
            }
            return None;
        }
        Some(entries)
    }

    /// Task `id` as last committed with its encoded size, if it is kept (the kept record
    /// itself, shared).
    pub(crate) fn get_sized(&self, id: &TaskId) -> Option<(Arc<TaskRecord>, Size)> {
        self.entries()?.tasks.get(id).cloned()
    }

    /// How many tasks `owner` has stored as last committed, if it is kept.
    pub(crate) fn count(&self, owner: &Principal) -> Option<u64> {
        self.entries()?.counts.get(owner).copied()
    }

    /// Applies a committed batch's touches, in order. Called on the writer thread only.
    pub(crate) fn apply(&self, touches: Vec<Touch>) {
        let Some(mut entries) = self.entries() else { return };
        for touch in touches {
            match touch {
                Touch::Evict(id) => entries.remove(&id),
                Touch::Counted { owner, tasks } => {
                    if entries.counts.len() >= MAX_COUNTS && !entries.counts.contains_key(&owner) {
                        entries.counts.clear();
                    }
                    entries.counts.insert(owner, tasks);
                }
                Touch::Uncounted(owner) => {
                    entries.counts.remove(&owner);
                }
                Touch::Put { record, size } => {
                    let bytes = size.total();
                    entries.remove(&record.id);
                    if bytes > MAX_RECORD_BYTES {
                        continue;
                    }
                    entries.make_room(bytes);
                    entries.bytes += bytes;
                    entries.tasks.insert(record.id.clone(), (record, size));
                }
            }
        }
    }
}
