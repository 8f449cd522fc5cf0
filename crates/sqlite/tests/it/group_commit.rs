//! Group commit: concurrent writes share one transaction (one fsync), and each still
//! answers for itself: durable when it returns, its own error when it fails, and the
//! compare-and-set of `replace` exact within a batch.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::task::Poll;

use mcp_tasks_engine::{Inserted, RecordStore, StoreError, TaskRecord, TaskState, Timestamp, Update, Version};
use mcp_tasks_sqlite::SqliteStore;
use mcp_tasks_testkit::store_suite::sample_task;
use serde_json::json;

/// A completion of `task` by racer `n`.
fn completion(task: &TaskRecord, n: u32) -> Update {
    Update {
        state: TaskState::Completed {
            result: json!({"racer": n}),
        },
        status_message: Some(format!("racer {n}")),
        updated_at: Timestamp(task.created_at.0 + 1),
        attempt: n,
    }
}

/// Polls the store write `write` once, which queues it to the writer thread
/// ([`SqliteStore`] sends a write to its queue on the first poll, before it first awaits),
/// and then leaves the rest (the wait for its commit) to a Tokio task of its own. When this
/// returns, the write is queued: an event, not a guess of how long queueing takes.
async fn queue<T: Send + 'static>(
    write: impl Future<Output = T> + Send + 'static,
) -> tokio::task::JoinHandle<T> {
    let mut write = Box::pin(write);
    match std::future::poll_fn(|cx| Poll::Ready(write.as_mut().poll(cx))).await {
        Poll::Ready(done) => tokio::spawn(async move { done }),
        Poll::Pending => tokio::spawn(write),
    }
}

/// Inserts `tasks` from as many concurrent Tokio tasks, returning each insert's outcome.
async fn insert_concurrently(
    store: &SqliteStore,
    tasks: &[TaskRecord],
) -> Vec<Result<Inserted, StoreError>> {
    let inserts: Vec<_> = tasks
        .iter()
        .map(|task| {
            let (store, task) = (store.clone(), task.clone());
            tokio::spawn(async move { store.insert(&task).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for insert in inserts {
        outcomes.push(insert.await.expect("the insert does not panic"));
    }
    outcomes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_inserts_are_all_durable_and_share_commits() {
    const TASKS: usize = 400;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    let store = SqliteStore::open(&path).expect("the store opens");
    let tasks: Vec<_> = (0..TASKS).map(|_| sample_task("alice")).collect();
    for outcome in insert_concurrently(&store, &tasks).await {
        outcome.expect("every insert succeeds");
    }
    let stats = store.write_stats();
    assert_eq!(stats.writes, TASKS as u64);
    assert!(
        stats.commits < stats.writes,
        "concurrent inserts share transactions: {stats:?}"
    );
    drop(store);

    // Another process's view: the file alone, reopened.
    let reopened = SqliteStore::open(&path).expect("the store opens again");
    for task in &tasks {
        assert_eq!(
            reopened.get(&task.id).await.expect("get succeeds").as_ref(),
            Some(task)
        );
    }
    assert_eq!(
        reopened
            .count(&task_owner(&tasks))
            .await
            .expect("count succeeds"),
        TASKS as u64
    );
}

fn task_owner(tasks: &[TaskRecord]) -> mcp_tasks_engine::Principal {
    tasks[0].owner.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_replaces_under_batching_have_exactly_one_winner_per_task() {
    const TASKS: usize = 20;
    const RACERS: u32 = 16;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&dir.path().join("tasks.db")).expect("the store opens");
    let tasks: Vec<_> = (0..TASKS).map(|_| sample_task("alice")).collect();
    for outcome in insert_concurrently(&store, &tasks).await {
        outcome.expect("every insert succeeds");
    }
    let before = store.write_stats();
    let start = Arc::new(tokio::sync::Barrier::new(TASKS * RACERS as usize));
    let mut racers = Vec::new();
    for task in &tasks {
        for n in 0..RACERS {
            let (store, task, start) = (store.clone(), task.clone(), Arc::clone(&start));
            racers.push(tokio::spawn(async move {
                start.wait().await;
                let outcome = store
                    .replace(&task.id, task.version, &completion(&task, n))
                    .await;
                (task.id, outcome)
            }));
        }
    }
    let mut winners = std::collections::HashMap::new();
    for racer in racers {
        let (id, outcome) = racer.await.expect("the racer does not panic");
        match outcome {
            Ok(record) => {
                assert_eq!(record.version, Version(2));
                let previous = winners.insert(id.clone(), record);
                assert!(previous.is_none(), "a second winner for {id}");
            }
            Err(StoreError::Conflict(lost)) => assert_eq!(lost, id),
            Err(other) => panic!("expected Ok or Conflict, got {other:?}"),
        }
    }
    assert_eq!(winners.len(), TASKS, "every task has its one winner");
    for task in &tasks {
        assert_eq!(
            store.get(&task.id).await.expect("get succeeds").as_ref(),
            winners.get(&task.id),
            "the store holds the winner's write"
        );
    }
    let after = store.write_stats();
    assert!(
        after.commits - before.commits < after.writes - before.writes,
        "the racers were batched: {before:?} → {after:?}"
    );
}

/// Holds the file's write lock from a second connection, as another process would, so
/// that the store's writer waits and the writes queued meanwhile form one batch.
fn hold_write_lock(path: &Path) -> rusqlite::Connection {
    let other = rusqlite::Connection::open(path).expect("a second connection opens");
    other
        .execute_batch("BEGIN IMMEDIATE")
        .expect("the write lock is free");
    other
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_write_in_a_batch_fails_alone() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    let store = SqliteStore::open(&path).expect("the store opens");
    let taken = sample_task("alice");
    store.insert(&taken).await.expect("insert succeeds");
    let contested = sample_task("alice");
    store.insert(&contested).await.expect("insert succeeds");
    let before = store.write_stats();

    let lock = hold_write_lock(&path);
    let fresh: Vec<_> = (0..10).map(|_| sample_task("alice")).collect();
    let mut queued = fresh.clone();
    queued.insert(5, taken.clone()); // a duplicate id in the middle of the batch
    let mut inserts = Vec::new();
    for task in queued.clone() {
        let store = store.clone();
        inserts.push(queue(async move { store.insert(&task).await }).await);
    }
    let mut replaces = Vec::new();
    for n in 0..2 {
        let (store, task) = (store.clone(), contested.clone());
        replaces.push(
            queue(async move {
                store
                    .replace(&task.id, task.version, &completion(&task, n))
                    .await
            })
            .await,
        );
    }
    // Every write is queued behind the lock now; then the writer may go on.
    lock.execute_batch("ROLLBACK")
        .expect("the lock is released");

    check_inserts(&queued, inserts, &taken).await;
    check_replaces(replaces, &contested).await;
    let after = store.write_stats();
    assert_eq!(after.writes - before.writes, 13);
    assert!(
        after.commits - before.commits <= 2,
        "the writes queued behind the lock went in one batch (or two, if the writer took the \
         first before the others arrived): {before:?} → {after:?}"
    );
    drop(store);

    check_reopened(&path, &fresh, &taken).await;
}

/// Each insert of `queued` succeeded but that of `taken`'s id, refused as a duplicate.
async fn check_inserts(
    queued: &[TaskRecord],
    inserts: Vec<tokio::task::JoinHandle<Result<Inserted, StoreError>>>,
    taken: &TaskRecord,
) {
    let mut outcomes = Vec::new();
    for insert in inserts {
        outcomes.push(insert.await.expect("the insert does not panic"));
    }
    for (task, outcome) in queued.iter().zip(outcomes) {
        if task.id == taken.id {
            assert!(
                matches!(&outcome, Err(StoreError::Duplicate(id)) if *id == taken.id),
                "{outcome:?}"
            );
        } else {
            outcome.expect("the other inserts of the batch succeed");
        }
    }
}

/// One of the two racing replaces of `contested` won, the other met a conflict.
async fn check_replaces(
    replaces: Vec<tokio::task::JoinHandle<Result<TaskRecord, StoreError>>>,
    contested: &TaskRecord,
) {
    let mut won = 0;
    for replace in replaces {
        match replace.await.expect("the replace does not panic") {
            Ok(record) => {
                won += 1;
                assert_eq!(record.version, Version(2));
            }
            Err(StoreError::Conflict(id)) => assert_eq!(id, contested.id),
            Err(other) => panic!("expected Ok or Conflict, got {other:?}"),
        }
    }
    assert_eq!(won, 1, "one of two racing replaces in one batch wins");
}

/// The store at `path`, opened again, holds the `fresh` tasks and `taken` as first written.
async fn check_reopened(path: &Path, fresh: &[TaskRecord], taken: &TaskRecord) {
    let reopened = SqliteStore::open(path).expect("the store opens again");
    for task in fresh {
        assert_eq!(
            reopened.get(&task.id).await.expect("get succeeds").as_ref(),
            Some(task)
        );
    }
    assert_eq!(
        reopened.get(&taken.id).await.expect("get succeeds"),
        Some(taken.clone()),
        "the duplicate did not overwrite the first"
    );
    assert_eq!(
        reopened.count(&taken.owner).await.expect("count succeeds"),
        12
    );
}

/// The writer checkpoints the WAL itself, between batches, once it passes SQLite's threshold
/// of 1000 frames (the connection's automatic checkpoint is replaced by a WAL hook): the WAL
/// restarts from its beginning, so its file never grows much past that threshold however
/// many commits follow. Without a checkpoint the 1,200 one-write commits here (several
/// frames each) would leave a WAL several times that long.
#[tokio::test]
async fn the_writer_checkpoints_between_batches_so_the_wal_stays_near_1000_frames() {
    const FRAMES: u64 = 1000;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    // NORMAL: the same commits and checkpoints without an fsync each (a quicker test).
    let store = SqliteStore::open_with(&path, mcp_tasks_sqlite::Synchronous::Normal).expect("the store opens");
    let page: u64 = store.pragma("page_size").await.expect("pragma").parse().expect("a number");
    let frame = page + 24;
    let wal = dir.path().join("tasks.db-wal");
    let mut longest = 0;
    for _ in 0..1200 {
        // One at a time: every insert is a commit of its own.
        store.insert(&sample_task("alice")).await.expect("insert");
        longest = longest.max(std::fs::metadata(&wal).expect("the WAL exists").len());
    }
    let frames = |bytes: u64| bytes.saturating_sub(32) / frame;
    assert!(
        frames(longest) >= FRAMES,
        "the commits wrote past the threshold before the first checkpoint ({} frames at most)",
        frames(longest)
    );
    assert!(
        frames(longest) <= FRAMES + 64,
        "the WAL grew to {} frames: no checkpoint restarted it",
        frames(longest)
    );
    assert_eq!(store.count(&mcp_tasks_engine::Principal::new("alice")).await.expect("count"), 1200);
}

/// On `synchronous=FULL` the store grows its WAL when it opens, with zeros written and synced,
/// to what it holds at the checkpoint threshold, so that the first commits after a start
/// overwrite the file rather than append to it. What lies past the last frame is never read
/// as one: a copy of the files taken while the store is open, with commits in the WAL and no
/// checkpoint since (what a crash leaves), opens with every committed task, its last write
/// included, and nothing more.
#[tokio::test]
async fn a_presized_wal_recovers_every_commit_and_nothing_past_them() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    let store = SqliteStore::open(&path).expect("the store opens");
    let page: u64 = store.pragma("page_size").await.expect("pragma").parse().expect("a number");
    let wal = dir.path().join("tasks.db-wal");
    let frames = (std::fs::metadata(&wal).expect("the WAL exists").len() - 32) / (page + 24);
    assert!(frames >= 1000, "the WAL was grown at open to the checkpoint threshold: {frames} frames");
    let mut ids = Vec::new();
    for n in 0..20 {
        let task = sample_task("alice");
        store.insert(&task).await.expect("insert");
        if n == 19 {
            let update = completion(&task, task.attempt);
            store.replace(&task.id, task.version, &update).await.expect("the last write commits");
        }
        ids.push(task.id);
    }
    // The files as a crash would leave them: the WAL holds the commits, then zeros.
    let copy = tempfile::tempdir().expect("a temporary directory");
    for name in ["tasks.db", "tasks.db-wal"] {
        std::fs::copy(dir.path().join(name), copy.path().join(name)).expect("copy");
    }
    let recovered = SqliteStore::open(&copy.path().join("tasks.db")).expect("the copy opens");
    let alice = mcp_tasks_engine::Principal::new("alice");
    assert_eq!(recovered.count(&alice).await.expect("count"), 20);
    for id in &ids {
        assert!(recovered.get(id).await.expect("get").is_some(), "task {id} recovered");
    }
    let last = recovered.get(&ids[19]).await.expect("get").expect("the last task");
    assert!(last.status().is_terminal(), "the last write (its completion) recovered: {:?}", last.status());
}

/// Under `synchronous=FULL` the writer's connection is on the VFS that writes a commit's WAL
/// frames in one write (`mcp_tasks_sqlite_vfs`): SQLite asks for two writes per frame and
/// several frames per commit, and far fewer reach the file. (The counts are the process's;
/// other tests' FULL stores write through the same VFS, which only adds the same ratio.)
#[tokio::test]
async fn a_full_store_writes_each_commits_wal_frames_in_one_write() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&dir.path().join("tasks.db")).expect("the store opens");
    let before = mcp_tasks_sqlite_vfs::stats();
    for _ in 0..20 {
        store.insert(&sample_task("alice")).await.expect("insert");
    }
    let after = mcp_tasks_sqlite_vfs::stats();
    let (asked, written) = (after.asked - before.asked, after.written - before.written);
    assert!(asked >= 20 * 4, "SQLite asked the VFS for {asked} writes over 20 commits");
    assert!(written > 0 && written * 3 <= asked, "{asked} writes asked for, {written} made");
}
