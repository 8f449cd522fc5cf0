//! The count of unfinished tasks (`running_counts`, migration 0016) that a creation checks
//! `max_running` against: kept by every write that makes or ends a task, through any handle,
//! and made from the tasks already there by the migration.

use mcp_tasks_engine::{
    ClaimStore, Lease, NodeId, Place, Placing, RecordStore, RunningLimits, StoreError, TaskState, Timestamp, Update,
};
use mcp_tasks_testkit::store_suite::{T0, sample_task};
use serde_json::json;

use crate::db::Schema;

/// The sum of `running_counts` and the unfinished tasks counted in `tasks`.
async fn counted(schema: &Schema) -> (i64, i64) {
    let client = schema.client().await;
    let row = client
        .query_one(
            "SELECT (SELECT sum(running) FROM running_counts)::bigint, \
             (SELECT count(*) FROM tasks WHERE status IN ('working', 'input_required'))",
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

fn ended(state: TaskState, attempt: u32) -> Update {
    Update { state, status_message: Some("ended".to_owned()), updated_at: Timestamp(T0.0 + 10), attempt }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_counts_follow_every_creation_and_ending_through_either_handle() {
    let Some(handles) = crate::fresh_pair().await else { return };
    let (a, b, schema) = (&handles.first, &handles.second, &handles.guard);
    let node = NodeId::random();
    let lease = Lease { node: node.clone(), until: Timestamp(i64::MAX) };
    let placing = |max_running| Placing {
        limits: RunningLimits { max_running, max_running_per_principal: 100 },
        lease: lease.clone(),
        now: T0,
    };

    // Creations of both kinds, through both handles.
    let mut tasks = Vec::new();
    for n in 0..6 {
        let store = if n % 2 == 0 { a } else { b };
        let task = sample_task(if n < 3 { "alice" } else { "bob" });
        if n < 4 {
            store.insert_placed(&task, &lease, u64::MAX, None, &placing(100), None).await.unwrap();
        } else {
            store.insert_claimed(&task, &lease, u64::MAX, None).await.unwrap();
        }
        tasks.push(task);
    }
    assert_eq!(counted(schema).await, (6, 6));

    // A change that does not end a task leaves the count; a stale one writes nothing.
    let first = &tasks[0];
    let moved = Update { state: TaskState::Working, status_message: Some("halfway".to_owned()), updated_at: Timestamp(T0.0 + 1), attempt: 1 };
    let first_now = b.replace(&first.id, first.version, &moved).await.unwrap();
    assert!(matches!(a.replace(&first.id, first.version, &moved).await, Err(StoreError::Conflict(_))));
    assert_eq!(counted(schema).await, (6, 6));

    // Endings of each kind, through both handles: one less each, and a refused second ending
    // takes nothing.
    a.replace(&first.id, first_now.version, &ended(TaskState::Cancelled, 1)).await.unwrap();
    let completed = TaskState::Completed { result: json!({"content": []}) };
    b.replace(&tasks[1].id, tasks[1].version, &ended(completed.clone(), 1)).await.unwrap();
    assert!(a.replace(&tasks[1].id, tasks[1].version, &ended(completed, 1)).await.is_err());
    a.replace(&tasks[4].id, tasks[4].version, &ended(TaskState::Cancelled, 1)).await.unwrap();
    assert_eq!(counted(schema).await, (3, 3));

    // The limit is held against the count: three run, so a limit of three refuses, four takes.
    match a.insert_placed(&sample_task("carol"), &lease, u64::MAX, None, &placing(3), None).await {
        Err(StoreError::NoPlace(Place::Full { running: 3 })) => {}
        other => panic!("three run in all: {other:?}"),
    }
    b.insert_placed(&sample_task("carol"), &lease, u64::MAX, None, &placing(4), None).await.unwrap();
    assert_eq!(counted(schema).await, (4, 4));

    // Purging finished tasks leaves it.
    a.purge(Timestamp(i64::MAX), 100).await.unwrap();
    assert_eq!(counted(schema).await, (4, 4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_0016_counts_the_unfinished_tasks_already_stored() {
    let Some((store, schema)) = crate::fresh().await else { return };
    for owner in ["alice", "bob", "carol"] {
        store.insert(&sample_task(owner)).await.unwrap();
    }
    let done = sample_task("alice");
    store.insert(&done).await.unwrap();
    store.replace(&done.id, done.version, &ended(TaskState::Cancelled, 1)).await.unwrap();
    drop(store);
    // The schema as a build before 0016 left it, with these tasks in it.
    schema
        .client()
        .await
        .batch_execute("DROP TABLE running_counts; DELETE FROM mcp_tasks_schema WHERE version = 16")
        .await
        .unwrap();
    let _store = mcp_tasks_postgres::PostgresStore::connect(&schema.url()).await.unwrap();
    assert_eq!(counted(&schema).await, (3, 3), "the three unfinished tasks are counted");
}
