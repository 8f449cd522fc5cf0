//! The engine's creations on the SQLite store: concurrent creations reach the store
//! together and share commits, and the retention limit still holds exactly.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_engine::{
    Context, Engine, EngineError, Handler, LimitExceeded, NewTask, Outcome, Policy, Principal, RecordStore, SystemClock,
    ToolRuntime,
};
use mcp_tasks_sqlite::SqliteStore;
use serde_json::{Value, json};

/// A tool that answers at once (never started here: only creation is measured).
struct Noop;

#[async_trait]
impl Handler for Noop {
    async fn call(&self, _arguments: Value, _ctx: Context) -> Outcome {
        Outcome::Result(json!({"content": []}))
    }
}

fn new_task(owner: &str) -> NewTask {
    NewTask {
        trace: None,
        origin: None,
        owner: Principal::new(owner),
        tool: "noop".to_owned(),
        arguments: json!({}),
        requested_ttl_ms: None,
        error_result_fails: false,
        input_kinds: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creations_share_commits_and_never_overshoot_max_retained() {
    const RETAINED: u64 = 40;
    const CALLS: usize = 120;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(&dir.path().join("tasks.db")).expect("the store opens");
    let policy = Policy {
        max_running: 1024,
        max_running_per_principal: 1024,
        max_retained_per_principal: RETAINED,
        ..Policy::default()
    };
    let engine = Engine::new(Arc::new(store.clone()), Arc::new(SystemClock), policy);
    engine.register("noop", ToolRuntime::new(Noop));
    let before = store.write_stats();

    let creations: Vec<_> = (0..CALLS)
        .map(|_| {
            let engine = engine.clone();
            tokio::spawn(async move { engine.create(new_task("alice")).await })
        })
        .collect();
    let (mut created, mut refused) = (0, 0);
    for creation in creations {
        match creation.await.expect("the creation does not panic") {
            Ok(_) => created += 1,
            Err(EngineError::Limit(LimitExceeded::RetainedPerPrincipal { limit, .. })) => {
                assert_eq!(limit, RETAINED);
                refused += 1;
            }
            Err(other) => panic!("expected a task or the retention limit, got {other:?}"),
        }
    }
    assert_eq!(created, RETAINED, "exactly the limit is created");
    assert_eq!(refused, CALLS as u64 - RETAINED);
    assert_eq!(
        store
            .count(&Principal::new("alice"))
            .await
            .expect("count succeeds"),
        RETAINED
    );
    let after = store.write_stats();
    assert_eq!(
        after.writes - before.writes,
        RETAINED,
        "a refusal writes nothing"
    );
    assert!(
        after.commits - before.commits < RETAINED,
        "concurrent creations share commits: {before:?} → {after:?}"
    );
}

/// A tool that ends as soon as it is released.
struct Released(Arc<tokio::sync::Notify>);

#[async_trait]
impl Handler for Released {
    async fn call(&self, _arguments: Value, _ctx: Context) -> Outcome {
        self.0.notified().await;
        Outcome::Result(json!({"content": [{"type": "text", "text": "done"}]}))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_while_the_outcome_commits_answers_the_outcome_not_working() {
    use std::time::Duration;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.db");
    let store = SqliteStore::open(&path).expect("the store opens");
    let engine = Engine::new(Arc::new(store), Arc::new(SystemClock), Policy::default());
    let release = Arc::new(tokio::sync::Notify::new());
    engine.register("released", ToolRuntime::new(Released(Arc::clone(&release))));
    let alice = Principal::new("alice");
    let task = engine.create(NewTask { tool: "released".to_owned(), ..new_task("alice") }).await.unwrap();
    let watch = engine.watch_task(&task.id);
    engine.start(&task).unwrap();

    // Another connection holds the file's write lock: the outcome's commit waits for it.
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    release.notify_one();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !engine.is_finishing(&task.id) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the work ends and its outcome is being written");
    let get = {
        let (engine, alice, id) = (engine.clone(), alice.clone(), task.id.clone());
        tokio::spawn(async move { engine.get(&alice, &id).await })
    };
    // Not answered `working` while the outcome waits for its commit...
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(!get.is_finished(), "the get waits for the outcome being committed");
    other.execute_batch("COMMIT").unwrap();
    // ...and answered with it once committed.
    let read = tokio::time::timeout(Duration::from_secs(10), get).await.unwrap().unwrap().unwrap();
    assert_eq!(read.status(), mcp_tasks_engine::Status::Completed);
    drop(watch);

    // A get of a task whose work is still running answers at once.
    let running = engine.create(NewTask { tool: "released".to_owned(), ..new_task("alice") }).await.unwrap();
    engine.start(&running).unwrap();
    let read = tokio::time::timeout(Duration::from_secs(1), engine.get(&alice, &running.id)).await.unwrap().unwrap();
    assert_eq!(read.status(), mcp_tasks_engine::Status::Working);
    release.notify_one();
}
