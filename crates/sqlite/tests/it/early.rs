//! Work started before its task's creation commits (`ToolRuntime::start_before_commit`), on
//! the SQLite store: an outcome that comes while the insert waits is written with it (one
//! row, one write), nothing of the work shows before the creation is answered
//! (`Engine::start`), a creation that fails stops the work and writes nothing, and a keyed
//! call or a tool without the setting never starts before `start`.
//!
//! The insert is held back by another connection holding the file's write lock (the writer
//! waits in `BEGIN IMMEDIATE`), and the tests run on one thread, so "the handler has run"
//! (its message received) means its whole Tokio task has run: the handler and what the
//! engine does with its outcome right after.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_engine::{
    Change, Context, Engine, EngineError, Handler, IdempotencyKey, LimitExceeded, ListQuery, NewTask, Outcome, Policy,
    Principal, Progress, RecordStore, Status, SystemClock, TaskId, TaskRecord, ToolRuntime, Version, ViewStore,
};
use mcp_tasks_sqlite::SqliteStore;
use mcp_tasks_testkit::early::{Chatty, chatty_log, log_of, new_task};
use mcp_tasks_testkit::store_suite::sample_task;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

const WAIT: Duration = Duration::from_secs(10);

fn done() -> Outcome {
    Outcome::Result(json!({"content": [{"type": "text", "text": "done"}]}))
}

/// Reports its progress, says it ran, and ends at once.
struct Quick(mpsc::UnboundedSender<()>);

#[async_trait]
impl Handler for Quick {
    async fn call(&self, _arguments: Value, ctx: Context) -> Outcome {
        ctx.progress(Progress { progress: 1.0, total: Some(1.0), message: None });
        let _ = self.0.send(());
        done()
    }
}

/// Sets a status message, then says whether the work was cancelled by then, and ends.
struct Reporting(mpsc::UnboundedSender<bool>);

#[async_trait]
impl Handler for Reporting {
    async fn call(&self, _arguments: Value, ctx: Context) -> Outcome {
        ctx.status("halfway").await;
        let _ = self.0.send(ctx.is_cancelled());
        done()
    }
}

/// Says it started, then records a checkpoint and says whether it was durable and whether
/// the work was cancelled.
struct Checkpointing(mpsc::UnboundedSender<(&'static str, bool, bool)>);

#[async_trait]
impl Handler for Checkpointing {
    async fn call(&self, _arguments: Value, ctx: Context) -> Outcome {
        let _ = self.0.send(("started", false, false));
        let durable = ctx.checkpoint(json!({"step": 1})).await;
        let _ = self.0.send(("checkpointed", durable, ctx.is_cancelled()));
        done()
    }
}

/// Counts its calls.
struct Counted(Arc<AtomicUsize>);

#[async_trait]
impl Handler for Counted {
    async fn call(&self, _arguments: Value, _ctx: Context) -> Outcome {
        self.0.fetch_add(1, Ordering::SeqCst);
        done()
    }
}

/// The changes of task `id` received so far: its records' statuses and versions, and
/// `None` for a progress report.
fn changes_of(changes: &mut broadcast::Receiver<Change>, id: &TaskId) -> Vec<Option<(Status, Version)>> {
    let mut seen = Vec::new();
    while let Ok(change) = changes.try_recv() {
        match change {
            Change::Task(record) if &record.id == id => seen.push(Some((record.status(), record.version))),
            Change::Progress { id: of, .. } if &of == id => seen.push(None),
            _ => {}
        }
    }
    seen
}

/// Creates a task of `tool` while another connection holds the file's write lock (the insert
/// waits in `BEGIN IMMEDIATE`) until its work says it ran (`has_run`), then lets the insert
/// go: the task as its creation answers it.
async fn create_held_back(engine: &Engine, path: &Path, tool: &str, has_run: &mut mpsc::UnboundedReceiver<()>) -> TaskRecord {
    let other = rusqlite::Connection::open(path).expect("another connection opens the file");
    other.execute_batch("BEGIN IMMEDIATE").expect("it takes the write lock");
    let creating = tokio::spawn({
        let (engine, task) = (engine.clone(), new_task(tool));
        async move { engine.create(task).await }
    });
    let ran = tokio::time::timeout(WAIT, has_run.recv()).await.expect("the work runs before the insert commits");
    assert!(ran.is_some(), "the handler said it ran");
    other.execute_batch("ROLLBACK").expect("the write lock is let go");
    let created = tokio::time::timeout(WAIT, creating).await.expect("the creation answers in time");
    created.expect("the creation does not panic").expect("the creation commits")
}

#[tokio::test]
async fn invariant_1_early_work_that_ends_first_is_written_with_its_creation_and_shown_after_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let store = SqliteStore::open(&path).unwrap();
    let engine = Engine::new(Arc::new(store.clone()), Arc::new(SystemClock), Policy::default());
    let (ran, mut has_run) = mpsc::unbounded_channel();
    engine.register("quick", ToolRuntime::new(Quick(ran)).start_before_commit(true));
    let mut changes = engine.subscribe();
    let before = store.write_stats();

    // The writer waits for the file's write lock: the insert is held back.
    let task = create_held_back(&engine, &path, "quick", &mut has_run).await;

    // The answer is the task as created; the store has it finished, written once.
    assert_eq!((task.status(), task.version), (Status::Working, Version(1)));
    let stored = store.get(&task.id).await.unwrap().expect("the task is stored");
    assert_eq!((stored.status(), stored.version), (Status::Completed, Version(2)));
    assert_eq!(store.write_stats().writes - before.writes, 1, "one write: the creation with its outcome");
    let history: Vec<_> = store.history(&task.id).await.unwrap().iter().map(|entry| (entry.status, entry.version)).collect();
    assert_eq!(
        history,
        [(Status::Working, Version(1)), (Status::Completed, Version(2))],
        "the history reads as if created, then finished"
    );

    // Nothing the work did is published before the requestor is answered: only the creation.
    tokio::task::yield_now().await;
    let early = changes_of(&mut changes, &task.id);
    assert_eq!(early, [Some((Status::Working, Version(1)))], "only the creation shows before the answer");

    engine.start(&task).unwrap();
    let after = changes_of(&mut changes, &task.id);
    assert_eq!(
        after,
        [None, Some((Status::Completed, Version(2)))],
        "once started: the progress the work reported, then its outcome"
    );
    let waited = tokio::time::timeout(WAIT, engine.wait_terminal(&task.owner, &task.id)).await.unwrap().unwrap();
    assert_eq!(waited.status(), Status::Completed);
    // Started once: the handler did not run again.
    assert!(has_run.try_recv().is_err(), "the work ran twice");

    // Durable: another store on the file reads it finished.
    drop((engine, store));
    let reopened = SqliteStore::open(&path).unwrap();
    assert_eq!(reopened.get(&task.id).await.unwrap().unwrap().status(), Status::Completed);
}

#[tokio::test]
async fn early_work_that_ends_first_has_what_it_reported_logged_with_its_creation_in_the_same_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let store = SqliteStore::open(&path).unwrap();
    let engine = Engine::new(Arc::new(store.clone()), Arc::new(SystemClock), Policy::default());
    let (ran, mut has_run) = mpsc::unbounded_channel();
    engine.register("chatty", ToolRuntime::new(Chatty(ran)).start_before_commit(true));
    let mut output = engine.subscribe_output();
    let before = store.write_stats();

    // The insert is held back until the work has ended.
    let task = create_held_back(&engine, &path, "chatty", &mut has_run).await;
    assert_eq!(store.write_stats().writes - before.writes, 1, "one write: the creation, its log and its outcome");

    // The log is whole at once, read through the engine as any reader reads it, and the
    // task finished: nothing is appended later.
    let (log, finished) = log_of(&engine, &task.owner, &task.id).await;
    assert_eq!(log, chatty_log(), "every report of the work, in order, then the ending");
    assert!(finished, "the log is complete");

    // Once answered, the live output is shown, and nothing more is written.
    engine.start(&task).unwrap();
    let shown = tokio::time::timeout(WAIT, output.recv()).await.unwrap().unwrap();
    assert_eq!((shown.id.clone(), &*shown.text), (task.id.clone(), "one\ntwo\n"), "the live view gets the output");
    let finished = engine.wait_terminal(&task.owner, &task.id).await.unwrap();
    assert_eq!(finished.status(), Status::Completed);
}

#[tokio::test]
async fn early_work_sets_its_status_only_after_the_creation_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("tasks.db")).unwrap();
    let engine = Engine::new(Arc::new(store.clone()), Arc::new(SystemClock), Policy::default());
    let (reported, mut reports) = mpsc::unbounded_channel();
    engine.register("reporting", ToolRuntime::new(Reporting(reported)).start_before_commit(true));

    let task = engine.create(new_task("reporting")).await.unwrap();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    // The work waits in `status` for the answer: nothing written, nothing told.
    let stored = store.get(&task.id).await.unwrap().unwrap();
    assert_eq!((stored.status(), stored.status_message.as_deref(), stored.version), (Status::Working, None, Version(1)));
    assert!(reports.try_recv().is_err(), "the status was set before the answer");

    engine.start(&task).unwrap();
    let cancelled = tokio::time::timeout(WAIT, reports.recv()).await.unwrap().unwrap();
    assert!(!cancelled, "the work goes on once answered");
    let finished = tokio::time::timeout(WAIT, engine.wait_terminal(&task.owner, &task.id)).await.unwrap().unwrap();
    assert_eq!(finished.status(), Status::Completed);
    let history = store.history(&task.id).await.unwrap();
    assert!(
        history.iter().any(|entry| entry.message.as_deref() == Some("halfway")),
        "the status message was written after the answer: {history:?}"
    );
}

#[tokio::test]
async fn a_creation_that_fails_stops_its_early_work_and_nothing_of_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let store = SqliteStore::open(&path).unwrap();
    let policy = Policy { max_running: 1, max_retained_per_principal: 1, ..Policy::default() };
    let engine = Engine::new(Arc::new(store.clone()), Arc::new(SystemClock), policy);
    let (said, mut says) = mpsc::unbounded_channel();
    engine.register("checkpointing", ToolRuntime::new(Checkpointing(said)).start_before_commit(true));
    let mut changes = engine.subscribe();

    // Held back behind the write lock: another task of alice's, inserted straight into the
    // store, is queued first; the engine admits the creation (the store counts no task of
    // hers yet) and the insert finds her at the limit.
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let first = sample_task("alice");
    let inserting = tokio::spawn({
        let store = store.clone();
        let first = first.clone();
        async move { store.insert(&first).await }
    });
    tokio::task::yield_now().await;
    let creating = tokio::spawn({
        let engine = engine.clone();
        async move { engine.create(new_task("checkpointing")).await }
    });
    let started = tokio::time::timeout(WAIT, says.recv()).await.unwrap().unwrap();
    assert_eq!(started.0, "started", "the work starts before the insert commits");
    other.execute_batch("ROLLBACK").unwrap();
    inserting.await.unwrap().unwrap();
    let refused = tokio::time::timeout(WAIT, creating).await.unwrap().unwrap();
    assert!(
        matches!(refused, Err(EngineError::Limit(LimitExceeded::RetainedPerPrincipal { .. }))),
        "the insert finds the owner at the limit: {refused:?}"
    );

    // The work is stopped, and its checkpoint is not written (there is no task).
    let (what, durable, cancelled) = tokio::time::timeout(WAIT, says.recv()).await.unwrap().unwrap();
    assert_eq!((what, durable, cancelled), ("checkpointed", false, true));
    let alice = Principal::new("alice");
    let listed = store.list(&ListQuery { owner: alice.clone(), after: None, limit: 10 }).await.unwrap();
    assert_eq!(listed.iter().map(|task| &task.id).collect::<Vec<_>>(), [&first.id], "only the other task is stored");
    while let Ok(change) = changes.try_recv() {
        if let Change::Task(record) = change {
            assert_eq!(record.id, first.id, "nothing of the refused task is published");
        }
    }
    // Its place among the running work (one in all) is free again: bob's creation fits once
    // the other task, unfinished in the store and so holding a place of its own across the
    // processes on the file, has ended.
    let ended = mcp_tasks_engine::Update {
        state: mcp_tasks_engine::TaskState::Cancelled,
        status_message: None,
        updated_at: first.created_at,
        attempt: first.attempt,
    };
    store.replace(&first.id, first.version, &ended).await.unwrap();
    engine.register("counted", ToolRuntime::new(Counted(Arc::new(AtomicUsize::new(0)))));
    let bobs = NewTask { owner: Principal::new("bob"), ..new_task("counted") };
    engine.create(bobs).await.expect("the refused creation's running place was given back");
}

#[tokio::test]
async fn a_keyed_call_and_a_tool_without_the_setting_start_only_when_started() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("tasks.db")).unwrap();
    let engine = Engine::new(Arc::new(store.clone()), Arc::new(SystemClock), Policy::default());
    let (early_calls, default_calls) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    engine.register("early", ToolRuntime::new(Counted(Arc::clone(&early_calls))).start_before_commit(true));
    engine.register("default", ToolRuntime::new(Counted(Arc::clone(&default_calls))));

    let keyed = engine.create_with_key(new_task("early"), IdempotencyKey::new("once")).await.unwrap();
    let unkeyed = engine.create(new_task("default")).await.unwrap();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(early_calls.load(Ordering::SeqCst), 0, "a keyed call must never run before its task is answered");
    assert_eq!(default_calls.load(Ordering::SeqCst), 0, "a tool runs after its creation by default");

    let keyed = keyed.into_record();
    engine.start(&keyed).unwrap();
    engine.start(&unkeyed).unwrap();
    for task in [&keyed, &unkeyed] {
        let finished = tokio::time::timeout(WAIT, engine.wait_terminal(&task.owner, &task.id)).await.unwrap().unwrap();
        assert_eq!(finished.status(), Status::Completed);
    }
    assert_eq!((early_calls.load(Ordering::SeqCst), default_calls.load(Ordering::SeqCst)), (1, 1));
}
