//! Store suite cases for idempotency keys: one retained task per owner and key, found by
//! [`RecordStore::find_by_key`] and returned by [`RecordStore::insert`] instead of a second one.

use std::sync::Arc;

use mcp_tasks_engine::{IdempotencyKey, Inserted, Principal, TaskRecord, TaskStore, Timestamp};

use super::fixtures::{T0, TTL_MS, completed, sample_task};

/// A task of `owner` made with `key`.
fn keyed(owner: &str, key: &str) -> TaskRecord {
    let mut task = sample_task(owner);
    task.idempotency_key = Some(IdempotencyKey::new(key));
    task
}

/// The time just before [`sample_task`]'s TTL runs out.
const BEFORE_EXPIRY: Timestamp = Timestamp(T0.0 + TTL_MS as i64 - 1);

/// A second insert with the owner's key returns the first task as stored and writes
/// nothing: the count, the listing and the new id show no second task.
pub async fn a_keyed_insert_returns_the_retained_task_with_that_key(store: Arc<dyn TaskStore>) {
    let first = keyed("alice", "order-1");
    assert_eq!(store.insert(&first).await.expect("insert succeeds"), Inserted::New);
    let mut retry = keyed("alice", "order-1");
    retry.created_at = BEFORE_EXPIRY;
    retry.updated_at = BEFORE_EXPIRY;
    retry.tool = "another".to_owned();
    match store.insert(&retry).await.expect("insert succeeds") {
        Inserted::Existing(existing) => assert_eq!(existing, first),
        Inserted::New => panic!("a second task was inserted under a taken key"),
    }
    assert_eq!(store.get(&retry.id).await.expect("get succeeds"), None, "nothing written");
    assert_eq!(store.count(&first.owner).await.expect("count succeeds"), 1);
    let key = IdempotencyKey::new("order-1");
    assert_eq!(
        store.find_by_key(&first.owner, &key, BEFORE_EXPIRY).await.expect("find succeeds"),
        Some(first)
    );
    let unknown = IdempotencyKey::new("order-2");
    assert_eq!(store.find_by_key(&Principal::new("alice"), &unknown, T0).await.expect("find succeeds"), None);
}

/// The same key from another owner is another key: both tasks are inserted, and neither
/// owner finds the other's.
pub async fn idempotency_keys_are_per_owner(store: Arc<dyn TaskStore>) {
    let alice = keyed("alice", "shared");
    let bob = keyed("bob", "shared");
    assert_eq!(store.insert(&alice).await.expect("insert succeeds"), Inserted::New);
    assert_eq!(store.insert(&bob).await.expect("insert succeeds"), Inserted::New);
    let key = IdempotencyKey::new("shared");
    assert_eq!(store.find_by_key(&alice.owner, &key, T0).await.expect("find succeeds"), Some(alice));
    assert_eq!(store.find_by_key(&bob.owner, &key, T0).await.expect("find succeeds"), Some(bob));
    assert_eq!(store.find_by_key(&Principal::new("carol"), &key, T0).await.expect("find succeeds"), None);
}

/// Keyless tasks never meet: many tasks of one owner without a key are all inserted.
pub async fn keyless_tasks_never_conflict(store: Arc<dyn TaskStore>) {
    for _ in 0..3 {
        assert_eq!(store.insert(&sample_task("alice")).await.expect("insert succeeds"), Inserted::New);
    }
    assert_eq!(store.count(&Principal::new("alice")).await.expect("count succeeds"), 3);
}

/// A task past its TTL (expiry at exactly `now` included) no longer holds its key, purged
/// or not: it is not found, and a new task with the key is inserted.
pub async fn a_key_is_free_again_once_its_task_is_past_its_ttl(store: Arc<dyn TaskStore>) {
    let mut old = keyed("alice", "nightly");
    old.state = completed();
    store.insert(&old).await.expect("insert succeeds");
    let key = IdempotencyKey::new("nightly");
    let expiry = Timestamp(T0.0 + TTL_MS as i64);
    assert_eq!(store.find_by_key(&old.owner, &key, BEFORE_EXPIRY).await.expect("find succeeds"), Some(old.clone()));
    assert_eq!(store.find_by_key(&old.owner, &key, expiry).await.expect("find succeeds"), None);
    let mut next = keyed("alice", "nightly");
    next.created_at = expiry;
    next.updated_at = expiry;
    assert_eq!(store.insert(&next).await.expect("insert succeeds"), Inserted::New);
    assert_eq!(store.find_by_key(&next.owner, &key, expiry).await.expect("find succeeds"), Some(next.clone()));
    assert!(store.get(&old.id).await.expect("get succeeds").is_some(), "the old task stays until purged");
    // Purging the old task leaves the new one's key alone.
    assert_eq!(store.purge(expiry, 10).await.expect("purge succeeds"), 1);
    assert_eq!(store.find_by_key(&next.owner, &key, expiry).await.expect("find succeeds"), Some(next.clone()));
    let mut again = keyed("alice", "nightly");
    again.created_at = expiry;
    assert_eq!(store.insert(&again).await.expect("insert succeeds"), Inserted::Existing(next));
}

/// A purged task frees its key.
pub async fn a_purged_task_frees_its_key(store: Arc<dyn TaskStore>) {
    let mut done = keyed("alice", "k");
    done.state = completed();
    store.insert(&done).await.expect("insert succeeds");
    let after = Timestamp(T0.0 + TTL_MS as i64 + 5);
    assert_eq!(store.purge(after, 10).await.expect("purge succeeds"), 1);
    let mut fresh = keyed("alice", "k");
    fresh.created_at = after;
    fresh.updated_at = after;
    assert_eq!(store.insert(&fresh).await.expect("insert succeeds"), Inserted::New);
    assert_eq!(store.count(&done.owner).await.expect("count succeeds"), 1);
}

/// Of many concurrent inserts with one owner and key, exactly one is new, and every other
/// returns that one's task.
pub async fn of_racing_keyed_inserts_exactly_one_is_new(store: Arc<dyn TaskStore>) {
    const RACERS: usize = 24;
    let racers: Vec<_> = (0..RACERS)
        .map(|_| {
            let (store, task) = (Arc::clone(&store), keyed("alice", "once"));
            tokio::spawn(async move {
                let outcome = store.insert(&task).await;
                (task, outcome)
            })
        })
        .collect();
    let (mut new, mut existing) = (Vec::new(), Vec::new());
    for racer in racers {
        match racer.await.expect("the racer does not panic") {
            (task, Ok(Inserted::New)) => new.push(task),
            (_, Ok(Inserted::Existing(found))) => existing.push(found),
            (_, Err(err)) => panic!("a keyed insert failed: {err}"),
        }
    }
    assert_eq!(new.len(), 1, "exactly one insert is new");
    assert_eq!(existing.len(), RACERS - 1);
    assert!(existing.iter().all(|found| found == &new[0]), "every other gets the winner's task");
    assert_eq!(store.count(&Principal::new("alice")).await.expect("count succeeds"), 1);
}
