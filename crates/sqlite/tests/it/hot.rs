//! The tasks written last are read from memory (`hot.rs`): each read must give what the
//! file has, through every kind of write, and a second store on the same file in this
//! process turns that memory off.

use mcp_tasks_engine::{
    ClaimStore, IdempotencyKey, Inserted, RecordStore, Status, TaskId, TaskRecord, TaskState, Timestamp, Update,
};
use mcp_tasks_sqlite::SqliteStore;
use mcp_tasks_testkit::store_suite::sample_task;
use serde_json::json;

fn update(task: &TaskRecord, state: TaskState, message: &str) -> Update {
    Update {
        state,
        status_message: Some(message.to_owned()),
        updated_at: Timestamp(task.updated_at.0 + 1),
        attempt: task.attempt,
    }
}

#[tokio::test]
async fn every_task_read_after_each_kind_of_write_is_what_the_file_has() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let store = SqliteStore::open(&path).unwrap();
    let mut ids: Vec<TaskId> = Vec::new();

    // Inserted, then replaced twice (the second one with a big result, not kept in memory).
    let plain = sample_task("alice");
    store.insert(&plain).await.unwrap();
    let working = store.replace(&plain.id, plain.version, &update(&plain, TaskState::Working, "half way")).await.unwrap();
    let big = json!({"content": [{"type": "text", "text": "x".repeat(200 * 1024)}]});
    store.replace(&plain.id, working.version, &update(&working, TaskState::Completed { result: big }, "done")).await.unwrap();
    ids.push(plain.id.clone());

    // A task whose cancel was asked for, one answered, one claimed.
    for _ in 0..3 {
        let task = sample_task("bob");
        store.insert(&task).await.unwrap();
        ids.push(task.id.clone());
    }
    assert!(store.request_cancel(&ids[1]).await.unwrap());
    let asked = store.get(&ids[2]).await.unwrap().unwrap();
    store
        .answer(&ids[2], asked.version, &update(&asked, TaskState::Working, "answered"), "q1", &Ok(json!({"action": "accept"})))
        .await
        .unwrap();
    let lease = mcp_tasks_engine::Lease { node: mcp_tasks_engine::NodeId::random(), until: Timestamp(i64::MAX / 2) };
    let _ = store.claim(&ids[3], 1, &lease, Timestamp(0)).await.unwrap();

    // An idempotency key given up by an expired holder and taken by a new task.
    let key = IdempotencyKey::new("k-1");
    let holder = TaskRecord { idempotency_key: Some(key.clone()), ttl_ms: Some(1), ..sample_task("carol") };
    assert_eq!(store.insert(&holder).await.unwrap(), Inserted::New);
    let done = store.replace(&holder.id, holder.version, &update(&holder, TaskState::Cancelled, "stopped")).await.unwrap();
    let later = Timestamp(done.created_at.0 + 10_000);
    let taker = TaskRecord { idempotency_key: Some(key), created_at: later, updated_at: later, ..sample_task("carol") };
    assert_eq!(store.insert(&taker).await.unwrap(), Inserted::New);
    ids.extend([holder.id.clone(), taker.id.clone()]);

    let seen: Vec<Option<TaskRecord>> = read_all(&store, &ids).await;
    assert_eq!(seen[0].as_ref().map(TaskRecord::status), Some(Status::Completed));
    assert_eq!(seen[4].as_ref().and_then(|task| task.idempotency_key.clone()), None, "the holder gave its key up");
    drop(store);

    // A fresh store keeps nothing in memory: it reads every task from the file.
    let reopened = SqliteStore::open(&path).unwrap();
    assert_eq!(read_all(&reopened, &ids).await, seen, "each read from memory matched the file");

    // Purged tasks are gone from memory too.
    reopened.replace(&taker.id, taker.version, &update(&taker, TaskState::Cancelled, "stopped")).await.unwrap();
    assert!(reopened.get(&taker.id).await.unwrap().is_some());
    let purged = reopened.purge(Timestamp(i64::MAX / 4), 100).await.unwrap();
    assert!(purged >= 2, "the two cancelled tasks of carol at least: {purged}");
    assert_eq!(reopened.get(&taker.id).await.unwrap(), None);
    assert_eq!(reopened.get(&holder.id).await.unwrap(), None);
}

async fn read_all(store: &SqliteStore, ids: &[TaskId]) -> Vec<Option<TaskRecord>> {
    let mut out = Vec::new();
    for id in ids {
        out.push(store.get(id).await.expect("get succeeds"));
    }
    out
}

#[tokio::test]
async fn a_second_store_on_the_same_file_makes_the_first_read_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let first = SqliteStore::open(&path).unwrap();
    let task = sample_task("alice");
    first.insert(&task).await.unwrap();
    assert_eq!(first.get(&task.id).await.unwrap().unwrap().version, task.version);

    let second = SqliteStore::open(&path).unwrap();
    let written = second.replace(&task.id, task.version, &update(&task, TaskState::Cancelled, "by the second")).await.unwrap();
    assert_eq!(first.get(&task.id).await.unwrap(), Some(written.clone()), "not the first store's remembered version");
    assert_eq!(second.get(&task.id).await.unwrap(), Some(written));
}
