//! The engine's creations on the SQLite store: concurrent creations reach the store
//! together and share commits, and the retention limit still holds exactly.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_engine::{
    Context, Engine, EngineError, Handler, LimitExceeded, NewTask, Outcome, Policy, Principal,
    SystemClock, TaskStore, ToolRuntime,
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
