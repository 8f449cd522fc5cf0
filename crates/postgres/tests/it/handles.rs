//! Two store handles on one database (two pools, as two replicas would have) see each other's
//! writes, and the compare-and-set and the idempotency index hold across them.

use std::sync::Arc;

use serde_json::json;

use mcp_tasks_engine::{IdempotencyKey, Inserted, Principal, StoreError, TaskState, TaskStore, Timestamp, Update};
use mcp_tasks_postgres::PostgresStore;
use mcp_tasks_testkit::store_suite::{T0, sample_task};

use crate::db::{self, Schema};

/// Two independent stores on one fresh schema, with its guard.
async fn two_handles() -> Option<(Arc<dyn TaskStore>, Arc<dyn TaskStore>, Schema)> {
    let server = db::database_url()?;
    let schema = Schema::create(&server).await;
    let a = PostgresStore::connect(&schema.url()).await.expect("the first store connects");
    let b = PostgresStore::connect(&schema.url()).await.expect("the second store connects");
    Some((Arc::new(a), Arc::new(b), schema))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_handles_on_one_database_see_each_others_writes() {
    let Some((a, b, _schema)) = two_handles().await else { return };
    let task = sample_task("alice");
    a.insert(&task).await.expect("insert through a");
    assert_eq!(b.get(&task.id).await.expect("get through b"), Some(task.clone()));
    assert!(matches!(b.insert(&task).await, Err(StoreError::Duplicate(_))), "b sees a's id");
    let update = Update {
        state: TaskState::Completed { result: json!({"content": []}) },
        status_message: Some("done".to_owned()),
        updated_at: Timestamp(T0.0 + 5),
        attempt: 1,
    };
    let written = b.replace(&task.id, task.version, &update).await.expect("replace through b");
    assert_eq!(a.get(&task.id).await.expect("get through a"), Some(written.clone()));
    assert!(
        matches!(a.replace(&task.id, task.version, &update).await, Err(StoreError::Conflict(_))),
        "a's stale version is refused"
    );
    let owner = Principal::new("alice");
    assert_eq!(a.count(&owner).await.expect("count"), 1);
    assert_eq!(b.purge(Timestamp(i64::MAX), 10).await.expect("purge through b"), 1);
    assert_eq!((a.get(&task.id).await.expect("get"), a.count(&owner).await.expect("count")), (None, 0));
}

/// Replaces racing from one version through two handles: exactly one wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_replaces_racing_through_two_handles_exactly_one_wins() {
    const RACERS: usize = 8;
    let Some((a, b, _schema)) = two_handles().await else { return };
    let task = sample_task("alice");
    a.insert(&task).await.expect("insert succeeds");
    let start = Arc::new(tokio::sync::Barrier::new(RACERS));
    let racers: Vec<_> = (0..RACERS)
        .map(|n| {
            let store = if n % 2 == 0 { Arc::clone(&a) } else { Arc::clone(&b) };
            let (start, id, version) = (Arc::clone(&start), task.id.clone(), task.version);
            tokio::spawn(async move {
                let update = Update {
                    state: TaskState::Completed { result: json!({"racer": n}) },
                    status_message: None,
                    updated_at: Timestamp(T0.0 + 1),
                    attempt: 1,
                };
                start.wait().await;
                store.replace(&id, version, &update).await
            })
        })
        .collect();
    let mut winners = Vec::new();
    for racer in racers {
        match racer.await.expect("no panic") {
            Ok(record) => winners.push(record),
            Err(StoreError::Conflict(_)) => {}
            Err(other) => panic!("expected Ok or Conflict, got {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    assert_eq!(b.get(&task.id).await.expect("get"), winners.pop());
}

/// Keyed inserts racing through two handles: exactly one task is made, and every racer gets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_keyed_inserts_racing_through_two_handles_exactly_one_is_new() {
    const RACERS: usize = 16;
    let Some((a, b, _schema)) = two_handles().await else { return };
    let start = Arc::new(tokio::sync::Barrier::new(RACERS));
    let racers: Vec<_> = (0..RACERS)
        .map(|n| {
            let store = if n % 2 == 0 { Arc::clone(&a) } else { Arc::clone(&b) };
            let start = Arc::clone(&start);
            let mut task = sample_task("alice");
            task.idempotency_key = Some(IdempotencyKey::new("deploy"));
            tokio::spawn(async move {
                start.wait().await;
                let inserted = store.insert(&task).await.expect("a keyed insert succeeds");
                (task, inserted)
            })
        })
        .collect();
    let (mut new, mut existing) = (Vec::new(), Vec::new());
    for racer in racers {
        match racer.await.expect("no panic") {
            (task, Inserted::New) => new.push(task),
            (_, Inserted::Existing(found)) => existing.push(found),
        }
    }
    assert_eq!(new.len(), 1);
    assert!(existing.iter().all(|found| found == &new[0]));
    assert_eq!(a.count(&Principal::new("alice")).await.expect("count"), 1);
}

/// The change feed's polling backstop: changes whose notification never came (written here
/// by hand, as a lost notification leaves them) reach a handle's feed within its poll, read
/// in full with their new version; and so do changes made after it, long after the handle
/// started (the poll's watermark follows the changes it found).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_without_a_notification_reach_the_feed_through_its_poll() {
    let Some((a, _b, schema)) = two_handles().await else { return };
    let mut changes = a.changes();
    let client = schema.client().await;
    for round in 0..2 {
        let task = sample_task("alice");
        a.insert(&task).await.expect("insert");
        let bump = "UPDATE tasks SET version = version + 7, status_message = $2, \
                    changed_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint WHERE id = $1";
        client.execute(bump, &[&task.id.as_str(), &format!("round {round}")]).await.expect("a silent change");
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let change = tokio::time::timeout_at(deadline, changes.recv())
                .await
                .unwrap_or_else(|_| panic!("round {round}: the silent change did not come through the poll"))
                .expect("the feed is open");
            if change.id == task.id && change.version.0 == task.version.0 + 7 {
                assert_eq!(change.status_message.as_deref(), Some(format!("round {round}").as_str()));
                break;
            }
        }
    }
}

/// A finished task is answered from the handle's memory while it is retained, and a purge
/// forgets it there too: once purged it is unknown through the handle that purged it, though
/// its copy says it is retained by this machine's clock. (Another handle keeps its copy until
/// its own clock passes the task's expiry: a replica whose clock runs behind the purger's
/// answers an expired task for as long as the clocks differ.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_task_read_from_memory_is_forgotten_by_its_purge() {
    let Some((a, b, _schema)) = two_handles().await else { return };
    let now = Timestamp(i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()).unwrap());
    let mut task = sample_task("alice");
    (task.created_at, task.updated_at, task.ttl_ms) = (now, now, Some(3_600_000));
    a.insert(&task).await.expect("insert");
    let update = Update {
        state: TaskState::Completed { result: json!({"content": []}) },
        status_message: None,
        updated_at: now,
        attempt: 1,
    };
    let done = a.replace(&task.id, task.version, &update).await.expect("replace");
    assert_eq!(a.get(&task.id).await.expect("get"), Some(done.clone()));
    assert_eq!(b.get(&task.id).await.expect("get"), Some(done));
    // A clock an hour and a minute ahead (the engine's, in a test) purges it.
    assert_eq!(a.purge(Timestamp(now.0 + 3_660_000), 10).await.expect("purge"), 1);
    assert_eq!(a.get(&task.id).await.expect("get"), None, "the handle that purged it forgets it");
}
