//! Group commit (`crate::group`): the creations and compare-and-set writes one replica's
//! callers make at once go to PostgreSQL in one statement, and each is answered, counted and
//! limited exactly as if it had been sent alone. The writes are started together in one task
//! (`join_all`) on a runtime of one thread, so they are all queued before the first runner
//! runs and takes them: one group forms every time, whatever the machine's speed. (Groups in
//! flight at once are apart as two replicas' statements are: the retention and running limits
//! then hold within the documented overshoot, the creations in flight.)

use std::sync::{Arc, Mutex};

use futures_util::future::join_all;
use mcp_tasks_engine::{
    ClaimStore, DeliveryStore, Inserted, Lease, NodeId, Place, Placing, RecordStore, RunningLimits, StoreError,
    TaskRecord, TaskState, Timestamp, Update,
};
use mcp_tasks_postgres::PostgresStore;
use mcp_tasks_testkit::store_suite::{T0, sample_task};
use serde_json::json;

use crate::db::Schema;

fn lease() -> Lease {
    Lease { node: NodeId::random(), until: Timestamp(i64::MAX) }
}

fn placing(lease: &Lease, max_running: u32, mine: u32) -> Placing {
    Placing { limits: RunningLimits { max_running, max_running_per_principal: mine }, lease: lease.clone(), now: T0 }
}

fn completed(attempt: u32) -> Update {
    Update {
        state: TaskState::Completed { result: json!({"content": [{"type": "text", "text": "done"}]}) },
        status_message: None,
        updated_at: Timestamp(T0.0 + 10),
        attempt,
    }
}

/// Creates `tasks` at once through `store`, each with `max_retained` and `placing`.
async fn create_all(
    store: &PostgresStore,
    tasks: &[TaskRecord],
    lease: &Lease,
    max_retained: u64,
    placing: &Placing,
) -> Vec<Result<Inserted, StoreError>> {
    join_all(tasks.iter().map(|task| async move {
        store.insert_placed(task, lease, max_retained, None, placing, None).await.map(|(inserted, _)| inserted)
    }))
    .await
}

/// One number read from the schema.
async fn number(schema: &Schema, query: &str) -> i64 {
    schema.client().await.query_one(query, &[]).await.unwrap_or_else(|err| panic!("{query}: {err}")).get(0)
}

/// The bookkeeping of every write: tasks, retained counts, running count, history rows, taken
/// slots.
async fn books(schema: &Schema) -> [i64; 5] {
    [
        number(schema, "SELECT count(*) FROM tasks").await,
        number(schema, "SELECT coalesce(sum(tasks), 0)::bigint FROM task_counts").await,
        number(schema, "SELECT coalesce(sum(running), 0)::bigint FROM running_counts").await,
        number(schema, "SELECT count(*) FROM task_history").await,
        number(schema, "SELECT count(*) FROM owner_slots WHERE task_id IS NOT NULL").await,
    ]
}

#[tokio::test]
async fn creations_and_endings_made_at_once_go_in_groups_and_keep_every_count() {
    let Some((store, schema)) = crate::fresh().await else { return };
    // The observer is told of each statement with the writes it carried.
    let told = Arc::new(Mutex::new(Vec::new()));
    let sizes = Arc::clone(&told);
    store.on_commit(move |commit| sizes.lock().unwrap().push((commit.writes, commit.committed)));
    let lease = lease();
    let tasks: Vec<TaskRecord> = (0..60).map(|n| sample_task(["alice", "bob", "carol"][n % 3])).collect();
    let created = create_all(&store, &tasks, &lease, u64::MAX, &placing(&lease, 1000, 100)).await;
    assert!(created.iter().all(|created| matches!(created, Ok(Inserted::New))), "{created:?}");
    let (creations, _) = store.grouped();
    assert!(creations.groups >= 1 && creations.writes >= 2, "creations went in groups: {creations:?}");
    assert_eq!(creations.sent_again, 0);
    assert_eq!(books(&schema).await, [60, 60, 60, 60, 60]);
    assert_eq!(store.count(&tasks[0].owner).await.unwrap(), 20);
    for task in &tasks {
        let stored = store.get(&task.id).await.unwrap().expect("each task is stored");
        assert_eq!(stored, *task, "stored as given");
    }

    // Their endings at once: each answered with its own row, one version on.
    let done = completed(1);
    let ended = join_all(tasks.iter().map(|task| store.replace(&task.id, task.version, &done))).await;
    for (task, ended) in tasks.iter().zip(&ended) {
        let ended = ended.as_ref().expect("each ending is written");
        assert_eq!((&ended.id, ended.version.0, &ended.state), (&task.id, 2, &completed(1).state));
    }
    let (_, replaces) = store.grouped();
    assert!(replaces.groups >= 1 && replaces.writes >= 2, "endings went in groups: {replaces:?}");
    // Every task finished: none running, every slot free, a history row for each ending.
    assert_eq!(books(&schema).await, [60, 60, 0, 120, 0]);
    let told: Vec<(usize, bool)> = told.lock().unwrap().clone();
    assert!(told.iter().any(|(writes, _)| *writes >= 2), "a group is told as one commit: {told:?}");
    // 60 creations, 60 endings, and the owners' slots made when the first group found none.
    assert!(told.iter().map(|(writes, _)| writes).sum::<usize>() >= 120, "each write told: {told:?}");
    assert!(told.iter().all(|(_, committed)| *committed), "{told:?}");

    // The same writes again, at versions gone: each refused, nothing written.
    let stale = join_all(tasks.iter().map(|task| store.replace(&task.id, task.version, &done))).await;
    assert!(stale.iter().all(|stale| matches!(stale, Err(StoreError::Conflict(_)))), "{stale:?}");
    assert_eq!(books(&schema).await, [60, 60, 0, 120, 0]);
}

#[tokio::test]
async fn a_group_holds_each_limit_exactly_as_its_writes_would_alone() {
    let Some((store, schema)) = crate::fresh().await else { return };
    let lease = lease();
    let refused = |results: &[Result<Inserted, StoreError>], new: usize| {
        let made = results.iter().filter(|result| matches!(result, Ok(Inserted::New))).count();
        assert_eq!(made, new, "{results:?}");
    };

    // The owner's running limit: 5 of 30.
    let alice: Vec<TaskRecord> = (0..30).map(|_| sample_task("alice")).collect();
    let results = create_all(&store, &alice, &lease, u64::MAX, &placing(&lease, 1000, 5)).await;
    refused(&results, 5);
    assert!(
        results.iter().all(|result| matches!(result, Ok(_) | Err(StoreError::NoPlace(Place::OwnerFull { running: 5 })))),
        "{results:?}"
    );

    // The owner's retention limit: 7 of 20.
    let bob: Vec<TaskRecord> = (0..20).map(|_| sample_task("bob")).collect();
    let results = create_all(&store, &bob, &lease, 7, &placing(&lease, 1000, 100)).await;
    refused(&results, 7);
    assert!(
        results.iter().all(|result| matches!(result, Ok(_) | Err(StoreError::Full { retained: 7, .. }))),
        "{results:?}"
    );

    // The running limit of all owners: 12 run, so 8 of 25 under a limit of 20.
    let carol: Vec<TaskRecord> = (0..25).map(|n| sample_task(if n % 2 == 0 { "carol" } else { "dave" })).collect();
    let results = create_all(&store, &carol, &lease, u64::MAX, &placing(&lease, 20, 100)).await;
    refused(&results, 8);
    assert!(
        results.iter().all(|result| matches!(result, Ok(_) | Err(StoreError::NoPlace(Place::Full { running: 20 })))),
        "{results:?}"
    );
    let (creations, _) = store.grouped();
    assert!(creations.groups >= 3, "each wave went in a group: {creations:?}");
    assert_eq!(books(&schema).await, [20, 20, 20, 20, 20]);
}

#[tokio::test]
async fn a_group_with_a_taken_id_is_sent_again_alone_and_only_that_creation_is_refused() {
    let Some((store, schema)) = crate::fresh().await else { return };
    let lease = lease();
    let placing = placing(&lease, 1000, 100);
    let taken = sample_task("alice");
    store.insert_placed(&taken, &lease, u64::MAX, None, &placing, None).await.unwrap();
    let mut tasks: Vec<TaskRecord> = (0..19).map(|_| sample_task("alice")).collect();
    tasks.insert(7, TaskRecord { tool: "other".to_owned(), ..taken.clone() });
    let results = create_all(&store, &tasks, &lease, u64::MAX, &placing).await;
    for (task, result) in tasks.iter().zip(&results) {
        match result {
            Err(StoreError::Duplicate(id)) if *id == taken.id => {}
            Ok(Inserted::New) if task.id != taken.id => {}
            other => panic!("task {}: {other:?}", task.id),
        }
    }
    let (creations, _) = store.grouped();
    assert!(creations.sent_again >= 2, "the failed group was sent again alone: {creations:?}");
    // The failed statement wrote nothing: each creation is counted once.
    assert_eq!(books(&schema).await, [20, 20, 20, 20, 20]);
    assert_eq!(store.get(&taken.id).await.unwrap().map(|task| task.tool), Some(taken.tool), "the first task stays");
}

#[tokio::test]
async fn two_writes_of_one_task_made_at_once_never_share_a_group_and_exactly_one_wins() {
    let Some((store, schema)) = crate::fresh().await else { return };
    let lease = lease();
    let tasks: Vec<TaskRecord> = (0..10).map(|_| sample_task("alice")).collect();
    create_all(&store, &tasks, &lease, u64::MAX, &placing(&lease, 1000, 100)).await;
    let cancelled = Update { state: TaskState::Cancelled, status_message: None, updated_at: Timestamp(T0.0 + 5), attempt: 1 };
    let writes = tasks.iter().flat_map(|task| [(task, completed(1)), (task, cancelled.clone())]);
    let store = &store;
    let results = join_all(writes.map(|(task, update)| async move { store.replace(&task.id, task.version, &update).await })).await;
    for pair in results.chunks(2) {
        let won = pair.iter().filter(|result| result.is_ok()).count();
        let lost = pair.iter().filter(|result| matches!(result, Err(StoreError::Conflict(_)))).count();
        assert_eq!((won, lost), (1, 1), "{pair:?}");
    }
    assert_eq!(books(&schema).await, [10, 10, 0, 20, 0]);
}

#[tokio::test]
async fn a_replica_that_records_deliveries_records_one_for_each_write_of_a_group() {
    let Some((store, schema)) = crate::fresh().await else { return };
    store.record_deliveries();
    let lease = lease();
    // Twenty made at once, ten of them already ended (a delivery each), then the rest ended.
    let tasks: Vec<TaskRecord> = (0..20)
        .map(|n| TaskRecord { state: if n % 2 == 0 { TaskState::Cancelled } else { TaskState::Working }, ..sample_task("alice") })
        .collect();
    let created = create_all(&store, &tasks, &lease, u64::MAX, &placing(&lease, 1000, 100)).await;
    assert!(created.iter().all(|created| matches!(created, Ok(Inserted::New))), "{created:?}");
    assert_eq!(number(&schema, "SELECT count(*) FROM webhook_deliveries WHERE event = 'cancelled'").await, 10);
    let working = tasks.iter().filter(|task| task.state == TaskState::Working);
    let done = completed(1);
    let ended = join_all(working.map(|task| store.replace(&task.id, task.version, &done))).await;
    assert!(ended.iter().all(Result::is_ok), "{ended:?}");
    assert_eq!(number(&schema, "SELECT count(*) FROM webhook_deliveries WHERE event = 'completed'").await, 10);
    let (creations, replaces) = store.grouped();
    assert!(creations.groups >= 1 && replaces.groups >= 1, "{creations:?} {replaces:?}");
    assert_eq!(books(&schema).await[2], 0, "none running");
}

#[tokio::test]
async fn a_group_larger_than_its_owners_free_slots_makes_more_and_every_creation_runs() {
    let Some((store, schema)) = crate::fresh().await else { return };
    let lease = lease();
    let placing = placing(&lease, 1024, 1024);
    // One creation makes the owner's first 16 slots.
    store.insert_placed(&sample_task("alice"), &lease, u64::MAX, None, &placing, None).await.unwrap();
    assert_eq!(number(&schema, "SELECT count(*) FROM owner_slots").await, 16);
    // Forty at once, far below the limit: each runs, however many rounds of slots it takes.
    let tasks: Vec<TaskRecord> = (0..40).map(|_| sample_task("alice")).collect();
    let created = create_all(&store, &tasks, &lease, u64::MAX, &placing).await;
    assert!(created.iter().all(|created| matches!(created, Ok(Inserted::New))), "{created:?}");
    assert_eq!(books(&schema).await, [41, 41, 41, 41, 41]);
}
