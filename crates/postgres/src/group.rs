//! Group commit: the writes of one kind (creations, compare-and-set replaces) that one
//! replica's callers make at once go to PostgreSQL together, as one statement over arrays,
//! so one transaction and one WAL flush for the group.
//!
//! A caller queues its write and waits for its own answer. At most [`RUNNERS`] group of a
//! kind runs at once; a runner takes what is queued (up to [`MOST`]), sends it, answers each
//! caller, and takes the next group until the queue is empty. Nothing waits to fill a group:
//! a write that finds a runner free goes at once, alone (by the kind's one-row statement),
//! and writes that come while the runners are busy go together in the next group. No caller
//! is answered before its group committed.
//!
//! Written by hand: no crate batches PostgreSQL statements this way (the grouping depends on
//! the statements, which take arrays); it is a queue, a semaphore and oneshot answers.
//!
//! A group's statement answers what each write would have answered alone, one after another
//! in the group's order (the kinds' statements say how). If the group's statement fails
//! otherwise than by the database being out of reach (a taken id, a deadlock), each write is
//! sent again alone, so each gets its own answer; out of reach, each gets that error, since
//! the group may have committed.
//!
//! The store's `on_commit` observer is told of each statement with the number of writes it
//! carried, as SQLite's writer tells of each batch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use async_trait::async_trait;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use mcp_tasks_engine::StoreError;

use crate::conn::Conn;
use crate::store::PostgresStore;

/// The most writes in one group.
pub(crate) const MOST: usize = 64;

/// The most groups of one kind in flight at once per replica (each on a connection of the
/// pool). One: the writes that come while a group runs wait for it and go together, so the
/// groups grow with the load. Measured with `benches/postgres.sh` (pg1, c = 24): one runner
/// ran 1,492–1,857 lifecycles/s at 523–620 µs of PostgreSQL CPU each, four ran 1,158/s at
/// 1,050 µs (smaller groups, more statements).
const RUNNERS: usize = 1;

/// The queue of one kind of write, and its runners' permits.
pub(crate) struct Group<K: Kind> {
    queue: Mutex<Vec<Waiting<K>>>,
    runners: Arc<Semaphore>,
    /// Statements that carried two or more writes, the writes they carried, and the writes
    /// sent again alone ([`Grouped`]).
    groups: AtomicU64,
    writes: AtomicU64,
    sent_again: AtomicU64,
}

impl<K: Kind> Default for Group<K> {
    fn default() -> Group<K> {
        Group {
            queue: Mutex::default(),
            runners: Arc::new(Semaphore::new(RUNNERS)),
            groups: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            sent_again: AtomicU64::new(0),
        }
    }
}

/// How one kind of write went in groups, since the store opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Grouped {
    /// Statements that carried two or more writes.
    pub groups: u64,
    /// The writes those carried.
    pub writes: u64,
    /// Writes sent again alone after their group's statement failed.
    pub sent_again: u64,
}

impl<K: Kind> Group<K> {
    /// What was sent so far.
    pub(crate) fn grouped(&self) -> Grouped {
        Grouped {
            groups: self.groups.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            sent_again: self.sent_again.load(Ordering::Relaxed),
        }
    }
}

/// Adds `n` to `counter`.
fn count(counter: &AtomicU64, n: usize) {
    counter.fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// A queued write and where its answer goes.
struct Waiting<K: Kind> {
    item: K::Item,
    answer: oneshot::Sender<Result<K::Answer, StoreError>>,
}

/// A kind of write that goes in groups.
#[async_trait]
pub(crate) trait Kind: Sized + Send + Sync + 'static {
    /// One write, owning what it writes.
    type Item: Send + Sync + 'static;
    /// What one write answers.
    type Answer: Send + 'static;
    /// The store's queue of this kind.
    fn group(store: &PostgresStore) -> &Group<Self>;
    /// Whether `item` may not share a statement with `other` (the same task twice, other
    /// limits).
    fn apart(item: &Self::Item, other: &Self::Item) -> bool;
    /// One write alone, by the kind's one-row statement.
    async fn one(store: &PostgresStore, client: &Conn, item: &Self::Item) -> Result<Self::Answer, StoreError>;
    /// Two or more writes in one statement, answered in their order.
    async fn many(store: &PostgresStore, client: &Conn, items: &[&Self::Item]) -> Result<Vec<Self::Answer>, StoreError>;
}

/// Queues `item`, starts a runner if one is free, and waits for the answer.
pub(crate) async fn write<K: Kind>(store: &PostgresStore, item: K::Item) -> Result<K::Answer, StoreError> {
    let group = K::group(store);
    let (answer, answered) = oneshot::channel();
    group.queue.lock().unwrap_or_else(PoisonError::into_inner).push(Waiting { item, answer });
    if let Ok(permit) = Arc::clone(&group.runners).try_acquire_owned() {
        // A task of its own: the group does not depend on this caller staying.
        tokio::spawn(run::<K>(store.clone(), permit));
    }
    answered
        .await
        .unwrap_or_else(|_| Err(StoreError::Backend("the group of writes ended without answering this one".into())))
}

/// A runner: groups from the queue until it is empty. The permit is given back under the
/// queue's lock, so a write queued after the runner saw the queue empty finds it free.
async fn run<K: Kind>(store: PostgresStore, permit: OwnedSemaphorePermit) {
    loop {
        let taken = {
            let mut queue = K::group(&store).queue.lock().unwrap_or_else(PoisonError::into_inner);
            if queue.is_empty() {
                drop(permit);
                return;
            }
            take::<K>(&mut queue)
        };
        send::<K>(&store, taken).await;
    }
}

/// The next group: the oldest writes, up to [`MOST`], leaving those apart from one taken.
fn take<K: Kind>(queue: &mut Vec<Waiting<K>>) -> Vec<Waiting<K>> {
    let mut taken: Vec<Waiting<K>> = Vec::new();
    let mut left = Vec::new();
    for waiting in queue.drain(..) {
        if taken.len() < MOST && !taken.iter().any(|other| K::apart(&waiting.item, &other.item)) {
            taken.push(waiting);
        } else {
            left.push(waiting);
        }
    }
    *queue = left;
    taken
}

/// Sends a group and answers its writers.
async fn send<K: Kind>(store: &PostgresStore, group: Vec<Waiting<K>>) {
    let items: Vec<&K::Item> = group.iter().map(|waiting| &waiting.item).collect();
    let started = Instant::now();
    let sent = async {
        let client = store.client().await?;
        match items.as_slice() {
            [item] => K::one(store, &client, item).await.map(|answer| vec![answer]),
            _ => {
                count(&K::group(store).groups, 1);
                count(&K::group(store).writes, items.len());
                K::many(store, &client, &items).await
            }
        }
    }
    .await;
    store.tell(started, group.len(), &sent);
    match sent {
        Ok(answers) if answers.len() == group.len() => {
            for (waiting, answer) in group.into_iter().zip(answers) {
                let _ = waiting.answer.send(Ok(answer));
            }
        }
        Ok(answers) => {
            let error = format!("a group of {} writes had {} answers", group.len(), answers.len());
            for waiting in group {
                let _ = waiting.answer.send(Err(StoreError::Backend(error.clone().into())));
            }
        }
        // The group may have committed: nothing may be sent again.
        Err(StoreError::Unavailable(error)) => {
            for waiting in group {
                let _ = waiting.answer.send(Err(StoreError::Unavailable(error.clone())));
            }
        }
        Err(error) if group.len() == 1 => {
            if let Some(waiting) = group.into_iter().next() {
                let _ = waiting.answer.send(Err(error));
            }
        }
        Err(error) => {
            tracing::debug!(%error, count = group.len(), "a group of writes failed; each is sent alone");
            count(&K::group(store).sent_again, group.len());
            for waiting in group {
                let started = Instant::now();
                let alone = async { K::one(store, &store.client().await?, &waiting.item).await }.await;
                store.tell(started, 1, &alone);
                let _ = waiting.answer.send(alone);
            }
        }
    }
}
