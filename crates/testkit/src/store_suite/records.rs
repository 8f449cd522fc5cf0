//! Store-suite cases of [`RecordStore`], the task records, on one handle: the round trip of
//! every field, duplicate ids, the compare-and-set replace (stale versions, racing writers),
//! keyset listing, counting, the scans of unfinished and expired tasks, and purge. The cases
//! of idempotency keys are in `keys`; those that need two handles in `feed`.

use std::sync::Arc;

use serde_json::json;

use mcp_tasks_engine::{
    Cursor, IdempotencyKey, InputKind, InputRequest, InputRequests, Inserted, Lease, ListQuery, NodeId, Principal,
    StoreError, TaskId, TaskRecord, TaskState, TaskStore, Timestamp, Update, Version,
};

use super::fixtures::*;

/// Insert, then get, returns every field as written, for every state variant, including
/// absent optional fields and timestamps to the millisecond.
pub async fn insert_then_get_round_trips_every_field(store: Arc<dyn TaskStore>) {
    let tasks = tasks_in_every_state();
    insert_all(&*store, &tasks).await;
    for task in &tasks {
        let got = store.get(&task.id).await.expect("get succeeds");
        assert_eq!(
            got.as_ref(),
            Some(task),
            "round trip of a {} task",
            task.status()
        );
    }
}

/// A second insert with a taken id fails with `Duplicate` and leaves the first task as it
/// was.
pub async fn a_duplicate_id_is_rejected(store: Arc<dyn TaskStore>) {
    let first = sample_task("alice");
    store
        .insert(&first)
        .await
        .expect("the first insert succeeds");
    let mut second = sample_task("mallory");
    second.id = first.id.clone();
    second.tool = "other".to_owned();
    match store.insert(&second).await {
        Err(StoreError::Duplicate(id)) => assert_eq!(id, first.id),
        other => panic!("expected Duplicate, got {other:?}"),
    }
    assert_eq!(
        store.get(&first.id).await.expect("get succeeds"),
        Some(first)
    );
}

/// Getting an id that was never inserted finds nothing, and is not an error.
pub async fn get_of_an_unknown_id_is_none(store: Arc<dyn TaskStore>) {
    store
        .insert(&sample_task("alice"))
        .await
        .expect("insert succeeds");
    assert_eq!(
        store.get(&TaskId::random()).await.expect("get succeeds"),
        None
    );
}

/// A replace that expects an old version, or a task that does not exist, fails with
/// `Conflict` and writes nothing.
pub async fn replace_with_a_stale_version_is_a_conflict(store: Arc<dyn TaskStore>) {
    let task = sample_task("alice");
    store.insert(&task).await.expect("insert succeeds");
    let update = Update {
        state: TaskState::Cancelled,
        status_message: Some("stale".to_owned()),
        updated_at: Timestamp(T0.0 + 5),
        attempt: 1,
    };
    let current = store
        .replace(&task.id, task.version, &update)
        .await
        .expect("the first replace wins");
    for stale in [task.version, Version(task.version.0 + 5)] {
        match store.replace(&task.id, stale, &update).await {
            Err(StoreError::Conflict(id)) => assert_eq!(id, task.id),
            other => panic!("expected Conflict for {stale:?}, got {other:?}"),
        }
    }
    assert_eq!(
        store.get(&task.id).await.expect("get succeeds"),
        Some(current)
    );
    let unknown = TaskId::random();
    match store.replace(&unknown, Version(1), &update).await {
        Err(StoreError::Conflict(id)) => assert_eq!(id, unknown),
        other => panic!("expected Conflict for an unknown task, got {other:?}"),
    }
}

/// A replace bumps the version by one and changes exactly the state, the status message,
/// the update time and the attempt; the returned record is what a get then reads.
pub async fn replace_bumps_the_version_and_changes_exactly_the_update(store: Arc<dyn TaskStore>) {
    let mut task = sample_task("alice");
    task.status_message = Some("starting".to_owned());
    store.insert(&task).await.expect("insert succeeds");
    let mut requests = InputRequests::new();
    requests.insert(
        "k".to_owned(),
        InputRequest {
            kind: InputKind::Sampling,
            params: json!({}),
        },
    );
    let steps = [
        Update {
            state: TaskState::InputRequired { requests },
            status_message: Some("waiting".to_owned()),
            updated_at: Timestamp(T0.0 + 10),
            attempt: 1,
        },
        Update {
            state: TaskState::Working,
            status_message: None,
            updated_at: Timestamp(T0.0 + 20),
            attempt: 2,
        },
        Update {
            state: TaskState::Completed {
                result: json!({"content": [], "structuredContent": {"n": 1}}),
            },
            status_message: Some("done".to_owned()),
            updated_at: Timestamp(T0.0 + 30),
            attempt: 2,
        },
    ];
    let mut expected = task;
    for update in steps {
        let written = store
            .replace(&expected.id, expected.version, &update)
            .await
            .expect("replace succeeds");
        expected.state = update.state;
        expected.status_message = update.status_message;
        expected.updated_at = update.updated_at;
        expected.attempt = update.attempt;
        expected.version = Version(expected.version.0 + 1);
        assert_eq!(written, expected);
        assert_eq!(
            store.get(&expected.id).await.expect("get succeeds"),
            Some(expected.clone())
        );
    }
}

/// Of several replaces racing from one version, spawned concurrently, exactly one wins;
/// every other fails with `Conflict`, and the store holds the winner's write.
pub async fn of_racing_replaces_from_one_version_exactly_one_wins(store: Arc<dyn TaskStore>) {
    const RACERS: u32 = 8;
    let task = sample_task("alice");
    store.insert(&task).await.expect("insert succeeds");
    let start = Arc::new(tokio::sync::Barrier::new(RACERS as usize));
    let racers: Vec<_> = (0..RACERS)
        .map(|n| {
            let store = Arc::clone(&store);
            let start = Arc::clone(&start);
            let (id, version) = (task.id.clone(), task.version);
            tokio::spawn(async move {
                let update = Update {
                    state: TaskState::Completed {
                        result: json!({"racer": n}),
                    },
                    status_message: Some(format!("racer {n}")),
                    updated_at: Timestamp(T0.0 + i64::from(n)),
                    attempt: n,
                };
                start.wait().await;
                store.replace(&id, version, &update).await
            })
        })
        .collect();
    let mut winners = Vec::new();
    for racer in racers {
        match racer.await.expect("the racer does not panic") {
            Ok(record) => winners.push(record),
            Err(StoreError::Conflict(id)) => assert_eq!(id, task.id),
            Err(other) => panic!("expected Ok or Conflict, got {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one replace wins: {winners:?}");
    let winner = winners.remove(0);
    assert_eq!(winner.version, Version(task.version.0 + 1));
    assert_eq!(
        store.get(&task.id).await.expect("get succeeds"),
        Some(winner)
    );
}

/// Listing pages through the owner's tasks by (creation time, id), resuming after a
/// cursor, with no task missed or repeated and each page within its limit; ties in
/// creation time are broken by id, and insertion order does not matter.
pub async fn list_pages_in_a_stable_order_with_a_cursor(store: Arc<dyn TaskStore>) {
    // Creation times with ties, inserted out of order.
    let mut mine: Vec<TaskRecord> = [30, 10, 20, 10, 30, 10, 40]
        .into_iter()
        .map(|offset| task_at("alice", T0.0 + offset, Some(TTL_MS), TaskState::Working))
        .collect();
    insert_all(&*store, &mine).await;
    mine.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));

    for limit in [1, 2, 3, 7, 100] {
        let mut seen = Vec::new();
        let mut query = first_page("alice", limit);
        loop {
            let page = store.list(&query).await.expect("list succeeds");
            assert!(
                page.len() <= limit as usize,
                "limit {limit} respected: got {}",
                page.len()
            );
            let Some(last) = page.last() else { break };
            query.after = Some(Cursor {
                created_at: last.created_at,
                id: last.id.clone(),
            });
            let short = page.len() < limit as usize;
            seen.extend(page);
            if short {
                break;
            }
        }
        assert_eq!(ids(&seen), ids(&mine), "pages of {limit}");
        assert_eq!(seen, mine, "list returns whole records");
    }
    assert!(
        store
            .list(&first_page("alice", 0))
            .await
            .expect("list succeeds")
            .is_empty()
    );
}

/// Listing returns only the owner's tasks, however the owners' tasks interleave.
pub async fn list_returns_only_the_owners_tasks(store: Arc<dyn TaskStore>) {
    let mut alice = Vec::new();
    for offset in 0..6 {
        let owner = if offset % 2 == 0 { "alice" } else { "bob" };
        let task = task_at(owner, T0.0 + offset, None, TaskState::Working);
        store.insert(&task).await.expect("insert succeeds");
        if owner == "alice" {
            alice.push(task);
        }
    }
    // A principal whose name extends another's must not match it.
    store
        .insert(&sample_task("alice2"))
        .await
        .expect("insert succeeds");
    let listed = store
        .list(&first_page("alice", 100))
        .await
        .expect("list succeeds");
    assert_eq!(listed, alice);
    // A cursor taken from another owner's task still yields only the owner's tasks.
    let bob = store
        .list(&first_page("bob", 1))
        .await
        .expect("list succeeds");
    let after = bob.first().map(|task| Cursor {
        created_at: task.created_at,
        id: task.id.clone(),
    });
    let listed = store
        .list(&ListQuery {
            owner: Principal::new("alice"),
            after,
            limit: 100,
        })
        .await
        .expect("list succeeds");
    assert!(listed.iter().all(|task| task.owner.as_str() == "alice"));
    assert_eq!(ids(&listed), ids(&alice[1..]));
    assert!(
        store
            .list(&first_page("nobody", 100))
            .await
            .expect("list succeeds")
            .is_empty()
    );
}

/// `count` counts the owner's tasks in every status and no one else's (not even a
/// principal whose name extends the owner's); purged tasks stop counting.
pub async fn count_counts_the_owners_tasks_in_every_status(store: Arc<dyn TaskStore>) {
    assert_eq!(
        store
            .count(&Principal::new("alice"))
            .await
            .expect("count succeeds"),
        0
    );
    let tasks = tasks_in_every_state(); // all alice's
    insert_all(&*store, &tasks).await;
    insert_all(
        &*store,
        &[sample_task("bob"), sample_task("alice2"), sample_task("")],
    )
    .await;
    let count = |owner: &'static str| {
        let store = Arc::clone(&store);
        async move {
            store
                .count(&Principal::new(owner))
                .await
                .expect("count succeeds")
        }
    };
    assert_eq!(count("alice").await, tasks.len() as u64);
    assert_eq!(
        (count("bob").await, count("alice2").await, count("").await),
        (1, 1, 1)
    );
    assert_eq!(count("nobody").await, 0);
    // Finished tasks with a TTL (every other one here) go at purge, and stop counting.
    let purged = store
        .purge(Timestamp(i64::MAX), 100)
        .await
        .expect("purge succeeds");
    let finished_with_ttl = tasks
        .iter()
        .filter(|task| task.status().is_terminal() && task.ttl_ms.is_some())
        .count() as u64;
    assert_eq!(purged, finished_with_ttl);
    assert_eq!(count("alice").await, tasks.len() as u64 - finished_with_ttl);
}

/// `count` stays exact through a rejected duplicate insert and through purging every task
/// of the owner down to zero and inserting again (a store that keeps counts beside the
/// tasks must keep them in step with both).
pub async fn count_stays_exact_through_duplicates_and_purges_to_zero(store: Arc<dyn TaskStore>) {
    let count = |owner: &'static str| {
        let store = Arc::clone(&store);
        async move {
            store
                .count(&Principal::new(owner))
                .await
                .expect("count succeeds")
        }
    };
    let tasks: Vec<_> = (0..3)
        .map(|i| task_at("carol", T0.0 + i, Some(10), completed()))
        .collect();
    insert_all(&*store, &tasks).await;
    assert!(matches!(
        store.insert(&tasks[1]).await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(
        count("carol").await,
        3,
        "a rejected duplicate does not count"
    );
    let purged = store
        .purge(Timestamp(T0.0 + 1_000), 100)
        .await
        .expect("purge succeeds");
    assert_eq!(purged, 3);
    assert_eq!(count("carol").await, 0);
    store
        .insert(&sample_task("carol"))
        .await
        .expect("insert succeeds");
    assert_eq!(count("carol").await, 1);
}

/// `count` stays exact through the inserts that admission is counted for: claimed inserts
/// (counted one by one), one refused at the retention limit and a keyed one answered with its
/// retained task (neither counts), a purge of some of them, a plain insert after the purge,
/// and claimed inserts again (a store that keeps counts in memory beside the tasks must keep
/// them in step with every one of these writes).
pub async fn count_stays_exact_through_claimed_inserts_refusals_and_purges(store: Arc<dyn TaskStore>) {
    let count = |owner: &'static str| {
        let store = Arc::clone(&store);
        async move { store.count(&Principal::new(owner)).await.expect("count succeeds") }
    };
    let lease = Lease { node: NodeId::random(), until: Timestamp(T0.0 + 60_000) };
    let tasks: Vec<_> = (0..4).map(|i| task_at("dave", T0.0 + i, Some(10), completed())).collect();
    for (i, task) in tasks.iter().enumerate() {
        let inserted = store.insert_claimed(task, &lease, 4, None).await.expect("room for it");
        assert_eq!(inserted, Inserted::New);
        assert_eq!(count("dave").await, i as u64 + 1, "counted as it is inserted");
    }
    let refused = store.insert_claimed(&sample_task("dave"), &lease, 4, None).await;
    assert!(matches!(refused, Err(StoreError::Full { retained: 4, .. })), "at the limit: {refused:?}");
    assert_eq!(count("dave").await, 4, "a refusal does not count");
    let mut keyed = task_at("dave", T0.0 + 10, None, TaskState::Working);
    keyed.idempotency_key = Some(IdempotencyKey::new("once"));
    assert_eq!(store.insert_claimed(&keyed, &lease, 10, None).await.expect("room"), Inserted::New);
    assert_eq!(count("dave").await, 5);
    let mut again = keyed.clone();
    again.id = TaskId::random();
    let existing = store.insert_claimed(&again, &lease, 10, None).await.expect("the retained one");
    assert!(matches!(existing, Inserted::Existing(ref task) if task.id == keyed.id), "{existing:?}");
    assert_eq!(count("dave").await, 5, "the answer with the retained task does not count");
    // The four finished ones, with a TTL of 10 ms, are past it at T0 + 1 s; the keyed one is
    // working and stays.
    assert_eq!(store.purge(Timestamp(T0.0 + 1_000), 100).await.expect("purge succeeds"), 4);
    assert_eq!(count("dave").await, 1, "purged tasks stop counting");
    store.insert(&sample_task("dave")).await.expect("insert succeeds");
    assert_eq!(count("dave").await, 2, "a plain insert counts");
    let last = task_at("dave", T0.0 + 20, None, TaskState::Working);
    assert_eq!(store.insert_claimed(&last, &lease, 10, None).await.expect("room"), Inserted::New);
    assert_eq!(count("dave").await, 3);
    assert_eq!(count("erin").await, 0, "no one else's");
}

/// `unfinished` returns the `working` and `input_required` tasks of every owner, oldest
/// first, at most `limit`, and no terminal task.
pub async fn unfinished_returns_only_working_and_input_required_tasks(store: Arc<dyn TaskStore>) {
    let tasks = vec![
        task_at("alice", T0.0 + 50, Some(TTL_MS), TaskState::Working),
        task_at("bob", T0.0 + 10, None, input_required()),
        task_at("alice", T0.0 + 5, Some(TTL_MS), completed()),
        task_at("alice", T0.0 + 20, Some(TTL_MS), failed()),
        task_at("carol", T0.0 + 30, Some(TTL_MS), TaskState::Cancelled),
        task_at("carol", T0.0 + 40, Some(1), TaskState::Working),
    ];
    insert_all(&*store, &tasks).await;
    let all = store.unfinished(100).await.expect("unfinished succeeds");
    assert_eq!(
        ids(&all),
        ids(&[tasks[1].clone(), tasks[5].clone(), tasks[0].clone()])
    );
    assert_eq!(all[0], tasks[1], "whole records");
    let two = store.unfinished(2).await.expect("unfinished succeeds");
    assert_eq!(ids(&two), ids(&all[..2]));
    assert!(
        store
            .unfinished(0)
            .await
            .expect("unfinished succeeds")
            .is_empty()
    );

    // A task that finishes drops out.
    let task = &tasks[1];
    let update = Update {
        state: completed(),
        status_message: None,
        updated_at: Timestamp(T0.0 + 99),
        attempt: 1,
    };
    store
        .replace(&task.id, task.version, &update)
        .await
        .expect("replace succeeds");
    let left = store.unfinished(100).await.expect("unfinished succeeds");
    assert_eq!(ids(&left), ids(&[tasks[5].clone(), tasks[0].clone()]));
}

/// `expired` returns unfinished tasks whose TTL has run out at `now` (expiry at exactly
/// `now` included), at most `limit`; it skips terminal tasks, tasks still within their TTL
/// and tasks with unlimited TTL.
pub async fn expired_respects_now_and_skips_terminal_tasks(store: Arc<dyn TaskStore>) {
    let now = T0.0 + 1_000;
    let early = task_at("alice", T0.0, Some(500), TaskState::Working); // expired at T0+500
    let exact = task_at("bob", T0.0, Some(1_000), input_required()); // expires at now
    let later = task_at("alice", T0.0, Some(1_001), TaskState::Working); // 1 ms left
    let unlimited = task_at("alice", T0.0 - 1_000_000, None, TaskState::Working);
    let done = task_at("alice", T0.0, Some(10), completed());
    let cancelled = task_at("alice", T0.0, Some(10), TaskState::Cancelled);
    let tasks = [
        early.clone(),
        exact.clone(),
        later.clone(),
        unlimited,
        done,
        cancelled,
    ];
    insert_all(&*store, &tasks).await;

    let mut got = ids(&store
        .expired(Timestamp(now), 100)
        .await
        .expect("expired succeeds"));
    got.sort();
    let mut want = ids(&[early.clone(), exact.clone()]);
    want.sort();
    assert_eq!(got, want, "at now");

    assert!(
        store
            .expired(Timestamp(T0.0 + 499), 100)
            .await
            .expect("expired succeeds")
            .is_empty()
    );
    assert_eq!(
        store
            .expired(Timestamp(T0.0 + 500), 100)
            .await
            .expect("expired succeeds"),
        vec![early]
    );
    assert_eq!(
        store
            .expired(Timestamp(now), 1)
            .await
            .expect("expired succeeds")
            .len(),
        1,
        "limit"
    );
    assert_eq!(
        store
            .expired(Timestamp(now + 1), 100)
            .await
            .expect("expired succeeds")
            .len(),
        3
    );
    assert_eq!(
        store
            .expired(Timestamp(i64::MAX), 100)
            .await
            .expect("expired succeeds")
            .len(),
        3
    );
}

/// `purge` deletes terminal tasks whose TTL has run out at `now` (expiry at exactly `now`
/// included), and nothing else: not unfinished tasks, not tasks within their TTL, never
/// tasks with unlimited TTL. It returns how many it deleted.
pub async fn purge_deletes_only_terminal_tasks_past_expiry(store: Arc<dyn TaskStore>) {
    let now = T0.0 + 1_000;
    let gone = vec![
        task_at("alice", T0.0, Some(500), completed()),
        task_at("bob", T0.0, Some(1_000), failed()),
        task_at("alice", T0.0, Some(1), TaskState::Cancelled),
    ];
    let kept = vec![
        task_at("alice", T0.0, Some(1_001), completed()),
        task_at("alice", T0.0 - 1_000_000, None, completed()),
        task_at("alice", T0.0 - 1_000_000, None, TaskState::Cancelled),
        task_at("alice", T0.0, Some(1), TaskState::Working),
        task_at("alice", T0.0, Some(1), input_required()),
    ];
    insert_all(&*store, &gone).await;
    insert_all(&*store, &kept).await;

    assert_eq!(
        store
            .purge(Timestamp(T0.0), 100)
            .await
            .expect("purge succeeds"),
        0,
        "nothing due yet"
    );
    assert_eq!(
        store
            .purge(Timestamp(now), 100)
            .await
            .expect("purge succeeds"),
        3
    );
    for task in &gone {
        assert_eq!(
            store.get(&task.id).await.expect("get succeeds"),
            None,
            "{} purged",
            task.status()
        );
    }
    for task in &kept {
        assert_eq!(
            store.get(&task.id).await.expect("get succeeds").as_ref(),
            Some(task),
            "{} kept",
            task.status()
        );
    }
    assert_eq!(
        store
            .purge(Timestamp(now), 100)
            .await
            .expect("purge succeeds"),
        0,
        "idempotent"
    );
    // Far in the future only the finished task with a TTL goes; unlimited ones stay.
    assert_eq!(
        store
            .purge(Timestamp(i64::MAX), 100)
            .await
            .expect("purge succeeds"),
        1
    );
    assert_eq!(
        store.get(&kept[1].id).await.expect("get succeeds").as_ref(),
        Some(&kept[1])
    );
    assert_eq!(
        store.get(&kept[2].id).await.expect("get succeeds").as_ref(),
        Some(&kept[2])
    );
}

/// `purge` deletes at most `limit` tasks per call; repeated calls finish the job.
pub async fn purge_respects_its_limit(store: Arc<dyn TaskStore>) {
    let tasks: Vec<_> = (0..5)
        .map(|i| task_at("alice", T0.0 + i, Some(10), completed()))
        .collect();
    insert_all(&*store, &tasks).await;
    let now = Timestamp(T0.0 + 1_000);
    assert_eq!(store.purge(now, 0).await.expect("purge succeeds"), 0);
    assert_eq!(store.purge(now, 2).await.expect("purge succeeds"), 2);
    assert_eq!(store.purge(now, 2).await.expect("purge succeeds"), 2);
    assert_eq!(store.purge(now, 2).await.expect("purge succeeds"), 1);
    assert_eq!(store.purge(now, 2).await.expect("purge succeeds"), 0);
    for task in &tasks {
        assert_eq!(store.get(&task.id).await.expect("get succeeds"), None);
    }
}
