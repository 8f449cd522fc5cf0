//! The tasks written last, kept in memory so that reading them takes no SQLite read: a
//! `tasks/get` polling a task, a waiter reading it before it waits, and the engine's
//! compare-and-set reading it before it writes (three reads per lifecycle, each one a hop to
//! the blocking pool and a read transaction whose page cache the last commit had emptied).
//!
//! Correct because the writer thread applies each batch's changes here after the batch
//! commits and before any of its callers is answered, in commit order, and because it
//! forgets what other processes (or other handles of this one) write before it trusts the
//! cache again: the cache is read only while the store's commit counter ([`Signal`]) stands
//! where this writer last caught up with the file ([`Hot::synced_at`], after reading the
//! change log, `crate::changes`) or where its own commit left it. Another process counts its
//! commit before it answers its callers, so a write anyone was told of is never hidden by an
//! older record here. A write that changes a row without giving its new record evicts the
//! task instead; reads never fill the cache.
//!
//! Bounded: at most [`MAX_ENTRIES`] tasks and [`MAX_BYTES`] of their encoded state and
//! arguments; a record larger than [`MAX_RECORD_BYTES`] is not kept. When full, the task
//! written longest ago goes, one at a time, as each new write comes (a miss only costs the
//! read it would have cost anyway). Forgetting had been all at once, every finished task
//! in one pass when the cache filled up: under load that was every 4,096 creations, and the
//! writer then held the lock that every `tasks/get`, `tasks/result` and admission takes
//! while it dropped 4,096 records, stopping the server's Tokio worker with it (in a block
//! run at c = 32, two of the four bursts of slowest lifecycles, see
//! `docs/benchmarks/17-seventeenth-round.md`). What a write makes the cache forget is
//! dropped after the lock is released.
//!
//! Beside the tasks, each owner's number of stored tasks (`task_counts`), which admission
//! reads before every creation: set from the count the writer's insert read in its own
//! transaction, forgotten by any other write that changes it (a purge, a plain insert), at
//! most [`MAX_COUNTS`] owners. Like the tasks, a count is only ever set by the writer thread
//! from what it committed, never by a read.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcp_tasks_engine::{FastMap, Principal, TaskId, TaskRecord};

use crate::peers::Signal;

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
    signal: Arc<Signal>,
    /// The commit count at which the cache is the file's (see the module comment).
    synced: AtomicU32,
    state: Mutex<Entries>,
}

/// A kept task: its record, its encoded size, and the number of the write that put it.
struct Entry {
    record: Arc<TaskRecord>,
    size: Size,
    put: u64,
}

#[derive(Default)]
struct Entries {
    tasks: FastMap<TaskId, Entry>,
    bytes: usize,
    counts: FastMap<Principal, u64>,
    /// The kept tasks by the number of the write that put them, oldest first.
    order: BTreeMap<u64, TaskId>,
    /// The number of the next put.
    puts: u64,
}

impl Entries {
    fn remove(&mut self, id: &TaskId) -> Option<Arc<TaskRecord>> {
        let entry = self.tasks.remove(id)?;
        self.order.remove(&entry.put);
        self.bytes -= entry.size.total();
        Some(entry.record)
    }

    /// Forgets the tasks put longest ago until one of `bytes` more fits, handing their
    /// records to `dropped` (to be dropped once the lock is released).
    fn make_room(&mut self, bytes: usize, dropped: &mut Vec<Arc<TaskRecord>>) {
        while self.tasks.len() >= MAX_ENTRIES || self.bytes + bytes > MAX_BYTES {
            let Some((_, id)) = self.order.pop_first() else { break };
            if let Some(entry) = self.tasks.remove(&id) {
                self.bytes -= entry.size.total();
                dropped.push(entry.record);
            }
        }
    }

    fn put(&mut self, record: Arc<TaskRecord>, size: Size) {
        let put = self.puts;
        self.puts += 1;
        self.bytes += size.total();
        self.order.insert(put, record.id.clone());
        self.tasks.insert(record.id.clone(), Entry { record, size, put });
    }
}

impl Hot {
    pub(crate) fn new(signal: Arc<Signal>) -> Hot {
        let synced = AtomicU32::new(signal.load());
        Hot { signal, synced, state: Mutex::default() }
    }

    fn all_entries(&self) -> MutexGuard<'_, Entries> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The entries, if they are the file's: nobody committed since this writer caught up.
    fn entries(&self) -> Option<MutexGuard<'_, Entries>> {
        (self.signal.load() == self.synced.load(Ordering::SeqCst)).then(|| self.all_entries())
    }

    /// Whether the cache is the file's now (nobody committed since this writer caught up).
    pub(crate) fn is_synced(&self) -> bool {
        self.signal.load() == self.synced.load(Ordering::SeqCst)
    }

    /// The cache is the file's as of commit count `count` (the writer caught up with it).
    pub(crate) fn synced_at(&self, count: u32) {
        self.synced.store(count, Ordering::SeqCst);
    }

    /// This writer's own commit took the count from `before` to one more: if the cache was
    /// the file's at `before`, it is at the new count once the batch's touches are applied
    /// (the writer applies them before anyone reads a task it wrote, see `write_loop`).
    pub(crate) fn committed_at(&self, before: u32) {
        let _ = self.synced.compare_exchange(before, before.wrapping_add(1), Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Forgets every task and count (another writer changed the file in ways not known).
    pub(crate) fn forget_all(&self) {
        let dropped = std::mem::take(&mut *self.all_entries());
        drop(dropped);
    }

    /// Forgets what another writer touched (`touches`, evictions), and every count (its
    /// inserts and purges changed them).
    pub(crate) fn forget_others(&self, touches: Vec<Touch>) {
        self.all_entries().counts.clear();
        self.apply(touches);
    }

    /// Task `id` as last committed with its encoded size, if it is kept (the kept record
    /// itself, shared).
    pub(crate) fn get_sized(&self, id: &TaskId) -> Option<(Arc<TaskRecord>, Size)> {
        self.entries()?.tasks.get(id).map(|entry| (Arc::clone(&entry.record), entry.size))
    }

    /// How many tasks `owner` has stored as last committed, if it is kept.
    pub(crate) fn count(&self, owner: &Principal) -> Option<u64> {
        self.entries()?.counts.get(owner).copied()
    }

    /// Applies a committed batch's touches, in order. Called on the writer thread only.
    pub(crate) fn apply(&self, touches: Vec<Touch>) {
        // What this batch makes the cache forget, dropped after the guard (declared first,
        // so dropped last): the readers waiting on the lock do not wait for the frees.
        let mut dropped = Vec::new();
        let mut entries = self.all_entries();
        for touch in touches {
            match touch {
                Touch::Evict(id) => dropped.extend(entries.remove(&id)),
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
                    dropped.extend(entries.remove(&record.id));
                    if bytes > MAX_RECORD_BYTES {
                        continue;
                    }
                    entries.make_room(bytes, &mut dropped);
                    entries.put(record, size);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use mcp_tasks_engine::TaskState;
    use mcp_tasks_testkit::store_suite::sample_task;

    use super::*;

    fn hot() -> (Hot, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let signal = crate::peers::signal(&dir.path().join("tasks.sqlite3")).expect("the store's signal");
        (Hot::new(Arc::new(signal)), dir)
    }

    fn finished(bytes: usize) -> (Arc<TaskRecord>, Size) {
        let record = TaskRecord { state: TaskState::Completed { result: serde_json::json!({"content": []}) }, ..sample_task("alice") };
        (Arc::new(record), Size { state: bytes, arguments: 0 })
    }

    fn put(hot: &Hot, task: &(Arc<TaskRecord>, Size)) {
        hot.apply(vec![Touch::Put { record: Arc::clone(&task.0), size: task.1 }]);
    }

    fn kept(hot: &Hot, task: &(Arc<TaskRecord>, Size)) -> bool {
        hot.get_sized(&task.0.id).is_some()
    }

    #[test]
    fn a_full_cache_forgets_the_task_written_longest_ago_and_only_that_one() {
        let (hot, _dir) = hot();
        let tasks: Vec<_> = (0..MAX_ENTRIES + 10).map(|_| finished(100)).collect();
        for task in &tasks {
            put(&hot, task);
        }
        // Every task is finished, as in a run of quick tools: forgetting them all at once
        // (what the cache did) would leave only the last one.
        assert!(tasks[..10].iter().all(|task| !kept(&hot, task)), "the ten oldest were forgotten");
        assert!(tasks[10..].iter().all(|task| kept(&hot, task)), "the newest {MAX_ENTRIES} are all kept");
        let entries = hot.entries().expect("nobody else wrote");
        assert_eq!((entries.tasks.len(), entries.order.len(), entries.bytes), (MAX_ENTRIES, MAX_ENTRIES, MAX_ENTRIES * 100));
    }

    #[test]
    fn a_task_written_again_counts_from_its_last_write() {
        let (hot, _dir) = hot();
        let first = finished(100);
        put(&hot, &first);
        let others: Vec<_> = (0..MAX_ENTRIES - 1).map(|_| finished(100)).collect();
        for task in &others {
            put(&hot, task);
        }
        // Written again, it is now the newest; the next write makes the oldest other go.
        put(&hot, &first);
        put(&hot, &finished(100));
        assert!(kept(&hot, &first));
        assert!(!kept(&hot, &others[0]));
        assert!(others[1..].iter().all(|task| kept(&hot, task)));
        let entries = hot.entries().expect("nobody else wrote");
        assert_eq!(entries.order.len(), entries.tasks.len(), "one place in the order per kept task");
    }

    #[test]
    fn the_bytes_bound_forgets_the_oldest_until_the_new_record_fits() {
        let (hot, _dir) = hot();
        let big = MAX_RECORD_BYTES - 1;
        let tasks: Vec<_> = (0..MAX_BYTES / big + 3).map(|_| finished(big)).collect();
        for task in &tasks {
            put(&hot, task);
        }
        let fit = MAX_BYTES / big;
        assert!(tasks[..tasks.len() - fit].iter().all(|task| !kept(&hot, task)));
        assert!(tasks[tasks.len() - fit..].iter().all(|task| kept(&hot, task)));
        assert!(hot.entries().expect("nobody else wrote").bytes <= MAX_BYTES);
    }

    #[test]
    fn an_evicted_task_leaves_the_order_and_its_bytes() {
        let (hot, _dir) = hot();
        let (a, b) = (finished(300), finished(200));
        put(&hot, &a);
        put(&hot, &b);
        hot.apply(vec![Touch::Evict(a.0.id.clone())]);
        assert!(!kept(&hot, &a) && kept(&hot, &b));
        let entries = hot.entries().expect("nobody else wrote");
        assert_eq!((entries.tasks.len(), entries.order.len(), entries.bytes), (1, 1, 200));
    }

    #[test]
    fn another_writers_commit_hides_the_cache_until_the_writer_catches_up() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("tasks.sqlite3");
        let signal = Arc::new(crate::peers::signal(&path).expect("the store's signal"));
        let hot = Hot::new(Arc::clone(&signal));
        let task = finished(100);
        put(&hot, &task);
        assert!(kept(&hot, &task));
        // Another process (its own mapping of the same file) counts a commit.
        let other = crate::peers::signal(&path).expect("another mapping");
        let before = other.bump(false);
        assert!(!kept(&hot, &task), "a commit not caught up with hides the cache");
        // Our own commit after it does not make the cache the file's again...
        hot.committed_at(signal.bump(false));
        assert!(!kept(&hot, &task));
        // ...catching up does.
        hot.synced_at(signal.load());
        assert!(kept(&hot, &task));
        // Our own commit keeps it so.
        hot.committed_at(signal.bump(false));
        assert!(kept(&hot, &task));
        assert_eq!(signal.load(), before.wrapping_add(3));
    }
}
