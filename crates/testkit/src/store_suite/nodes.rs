//! Store-suite cases for many nodes on one store: claims with a lease (taken, renewed, lapsing
//! at an injected `now`, taken over with the attempt bumped as the fence), the retention limit
//! enforced by the insert, cancel requests, stored input answers and the change feed. Each case
//! takes two handles on one database (`a`, `b`); a store one process owns (SQLite, memory)
//! passes the same handle twice.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use mcp_tasks_engine::{
    ErrorObject, InputKind, InputRequest, InputRequests, Inserted, Lease, NodeId, Principal,
    StoreError, TaskId, TaskRecord, TaskState, TaskStore, Timestamp, Update, Version,
};

use super::fixtures::{T0, completed, sample_task};

/// How long a case waits for a change on the feed before it fails (bounds the whole wait).
const FEED_DEADLINE: Duration = Duration::from_secs(10);

/// A lease of `node` lapsing `ms` after [`T0`].
fn lease(node: &NodeId, ms: i64) -> Lease {
    Lease {
        node: node.clone(),
        until: Timestamp(T0.0 + ms),
    }
}

/// `T0` plus `ms`.
fn at(ms: i64) -> Timestamp {
    Timestamp(T0.0 + ms)
}

/// Inserts `task` claimed by `lease`, with room for it.
async fn insert_claimed(store: &dyn TaskStore, task: &TaskRecord, lease: &Lease) {
    let inserted = store
        .insert_claimed(task, lease, u64::MAX, None)
        .await
        .expect("the claimed insert succeeds");
    assert_eq!(inserted, Inserted::New);
}

/// A claimed task is not lapsed while its lease runs (through either handle), lapses when
/// `now` reaches its end, cannot be taken before that, and is taken once after: the attempt
/// and the version are bumped, so the previous runner's compare-and-set fails, and a second
/// claim at the old attempt gets nothing.
pub async fn a_claim_holds_until_its_lease_lapses_and_a_take_over_fences_the_runner(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    let (first, second) = (NodeId::random(), NodeId::random());
    let task = sample_task("alice");
    insert_claimed(&*a, &task, &lease(&first, 30_000)).await;
    assert_eq!(
        b.get(&task.id).await.expect("get succeeds").as_ref(),
        Some(&task),
        "the record is as inserted"
    );

    assert!(
        b.lapsed(at(29_999), 10)
            .await
            .expect("lapsed succeeds")
            .is_empty(),
        "held until its lease ends"
    );
    assert_eq!(
        b.claim(&task.id, 1, &lease(&second, 60_000), at(29_999))
            .await
            .expect("claim succeeds"),
        None
    );
    let lapsed = b.lapsed(at(30_000), 10).await.expect("lapsed succeeds");
    assert_eq!(
        lapsed.iter().map(|task| &task.id).collect::<Vec<_>>(),
        vec![&task.id],
        "lapsed at its end"
    );

    let taken = b
        .claim(&task.id, 1, &lease(&second, 60_000), at(30_000))
        .await
        .expect("claim succeeds")
        .expect("a lapsed claim is taken over");
    assert_eq!(
        (taken.attempt, taken.version),
        (2, Version(2)),
        "attempt and version bumped"
    );
    assert_eq!(taken.state, task.state);
    assert_eq!(
        a.get(&task.id).await.expect("get succeeds"),
        Some(taken.clone()),
        "seen through the other handle"
    );
    assert!(
        a.lapsed(at(30_000), 10)
            .await
            .expect("lapsed succeeds")
            .is_empty(),
        "held by its new lease"
    );

    // The previous runner read version 1 at attempt 1: its write is refused.
    let late = Update {
        state: completed(),
        status_message: None,
        updated_at: at(30_001),
        attempt: 1,
    };
    assert!(matches!(
        a.replace(&task.id, task.version, &late).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        a.claim(&task.id, 1, &lease(&first, 90_000), at(90_000))
            .await
            .expect("claim succeeds"),
        None,
        "the old attempt is gone"
    );
    assert_eq!(
        a.renew(&lease(&first, 90_000), at(30_001))
            .await
            .expect("renew succeeds"),
        Vec::<TaskId>::new(),
        "the first node lost it"
    );
}

/// Of claims racing from both handles for one lapsed task, exactly one gets it.
pub async fn of_racing_claims_from_two_handles_exactly_one_wins(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    const RACERS: usize = 8;
    let task = sample_task("alice");
    insert_claimed(&*a, &task, &lease(&NodeId::random(), 1_000)).await;
    let start = Arc::new(tokio::sync::Barrier::new(RACERS));
    let racers: Vec<_> = (0..RACERS)
        .map(|n| {
            let store = if n % 2 == 0 {
                Arc::clone(&a)
            } else {
                Arc::clone(&b)
            };
            let (start, id) = (Arc::clone(&start), task.id.clone());
            tokio::spawn(async move {
                let node = NodeId::random();
                start.wait().await;
                store
                    .claim(&id, 1, &lease(&node, 60_000), at(1_000))
                    .await
                    .map(|won| won.map(|_| node))
            })
        })
        .collect();
    let mut winners = Vec::new();
    for racer in racers {
        if let Some(node) = racer
            .await
            .expect("the racer does not panic")
            .expect("claim succeeds")
        {
            winners.push(node);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one claim wins");
    let got = a
        .get(&task.id)
        .await
        .expect("get succeeds")
        .expect("the task is there");
    assert_eq!((got.attempt, got.version), (2, Version(2)), "bumped once");
    assert_eq!(
        a.renew(&lease(&winners[0], 90_000), at(1_001))
            .await
            .expect("renew succeeds"),
        vec![task.id]
    );
}

/// A renewal extends exactly the node's live claims on unfinished tasks, changing nothing
/// else of them; a lapsed claim is not renewed (it is lost), nor a finished task's.
pub async fn renew_extends_only_the_live_claims_of_its_node(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    let (mine, theirs) = (NodeId::random(), NodeId::random());
    let (one, two, done, other) = (
        sample_task("alice"),
        sample_task("bob"),
        sample_task("alice"),
        sample_task("alice"),
    );
    for task in [&one, &two, &done] {
        insert_claimed(&*a, task, &lease(&mine, 10_000)).await;
    }
    insert_claimed(&*b, &other, &lease(&theirs, 10_000)).await;
    let finish = Update {
        state: completed(),
        status_message: None,
        updated_at: at(1),
        attempt: 1,
    };
    b.replace(&done.id, done.version, &finish)
        .await
        .expect("replace succeeds");

    let mut expected = vec![one.id.clone(), two.id.clone()];
    expected.sort();
    let mut renewed = b
        .renew(&lease(&mine, 20_000), at(9_999))
        .await
        .expect("renew succeeds");
    renewed.sort();
    assert_eq!(
        renewed, expected,
        "the node's live claims on unfinished tasks"
    );
    assert_eq!(
        a.get(&one.id).await.expect("get succeeds").as_ref(),
        Some(&one),
        "the record unchanged, version too"
    );
    let lapsed = a.lapsed(at(10_000), 10).await.expect("lapsed succeeds");
    assert_eq!(
        lapsed.iter().map(|task| &task.id).collect::<Vec<_>>(),
        vec![&other.id],
        "only the unrenewed one lapsed"
    );
    assert!(
        a.lapsed(at(19_999), 10)
            .await
            .expect("lapsed succeeds")
            .iter()
            .all(|task| task.id == other.id)
    );

    assert_eq!(
        a.renew(&lease(&mine, 40_000), at(20_000))
            .await
            .expect("renew succeeds"),
        Vec::<TaskId>::new(),
        "lapsed: lost, not renewed"
    );
    assert_eq!(
        b.lapsed(at(20_000), 10)
            .await
            .expect("lapsed succeeds")
            .len(),
        3,
        "all three unfinished ones lapsed"
    );
}

/// A task inserted without a claim is lapsed at any time (an older process's, before claims
/// existed); finished tasks never are; `lapsed` keeps its order and limit.
pub async fn unclaimed_unfinished_tasks_are_lapsed_oldest_first(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    let mut tasks = Vec::new();
    for n in 0..3 {
        let mut task = sample_task("alice");
        task.created_at = at(3 - n);
        tasks.push(task);
    }
    tasks[1].state = completed();
    for task in &tasks {
        a.insert(task).await.expect("insert succeeds");
    }
    let lapsed = b.lapsed(Timestamp(0), 10).await.expect("lapsed succeeds");
    assert_eq!(
        lapsed.iter().map(|task| &task.id).collect::<Vec<_>>(),
        vec![&tasks[2].id, &tasks[0].id]
    );
    assert_eq!(
        b.lapsed(Timestamp(0), 1)
            .await
            .expect("lapsed succeeds")
            .len(),
        1,
        "the limit holds"
    );
    let taken = b
        .claim(&tasks[2].id, 1, &lease(&NodeId::random(), 1), Timestamp(0))
        .await
        .expect("claim succeeds");
    assert!(taken.is_some(), "an unclaimed task is taken");
}

/// Of inserts racing from both handles for one owner under a limit, exactly the limit's worth
/// are stored and the rest are refused as full, writing nothing; another owner has its own
/// room; a keyed retry at the limit still finds its task.
pub async fn the_retention_limit_holds_across_handles_under_racing_inserts(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    const LIMIT: u64 = 5;
    const RACERS: usize = 16;
    let node = NodeId::random();
    let start = Arc::new(tokio::sync::Barrier::new(RACERS));
    let racers: Vec<_> = (0..RACERS)
        .map(|n| {
            let store = if n % 2 == 0 {
                Arc::clone(&a)
            } else {
                Arc::clone(&b)
            };
            let (start, lease) = (Arc::clone(&start), lease(&node, 60_000));
            tokio::spawn(async move {
                let task = sample_task("alice");
                start.wait().await;
                store.insert_claimed(&task, &lease, LIMIT, None).await
            })
        })
        .collect();
    let (mut stored, mut full) = (0, 0);
    for racer in racers {
        match racer.await.expect("the racer does not panic") {
            Ok(Inserted::New) => stored += 1,
            Err(StoreError::Full { owner, retained }) => {
                assert_eq!(owner, Principal::new("alice"));
                assert!(
                    retained >= LIMIT,
                    "refused at the limit, not under it: {retained}"
                );
                full += 1;
            }
            other => panic!("expected New or Full, got {other:?}"),
        }
    }
    assert_eq!((stored, full), (LIMIT, RACERS as u64 - LIMIT));
    assert_eq!(
        a.count(&Principal::new("alice"))
            .await
            .expect("count succeeds"),
        LIMIT,
        "nothing written by a refusal"
    );
    assert_eq!(
        b.insert_claimed(&sample_task("bob"), &lease(&node, 1), LIMIT, None)
            .await
            .expect("bob has room"),
        Inserted::New
    );

    let mut keyed = sample_task("carol");
    keyed.idempotency_key = Some(mcp_tasks_engine::IdempotencyKey::new("once"));
    assert_eq!(
        a.insert_claimed(&keyed, &lease(&node, 1), 1, None)
            .await
            .expect("insert succeeds"),
        Inserted::New
    );
    let mut retry = sample_task("carol");
    retry.idempotency_key = keyed.idempotency_key.clone();
    assert_eq!(
        b.insert_claimed(&retry, &lease(&node, 1), 1, None)
            .await
            .expect("a retry is no new task"),
        Inserted::Existing(keyed)
    );
}

/// A cancel request written through one handle is read through the other and bumps the
/// version (a change); a finished or unknown task takes none.
pub async fn a_cancel_request_is_seen_through_the_other_handle(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    let (task, mut done) = (sample_task("alice"), sample_task("alice"));
    done.state = completed();
    insert_claimed(&*a, &task, &lease(&NodeId::random(), 60_000)).await;
    a.insert(&done).await.expect("insert succeeds");
    assert!(
        !b.cancel_requested(&task.id).await.expect("read succeeds"),
        "none asked yet"
    );
    assert!(a.request_cancel(&task.id).await.expect("request succeeds"));
    assert!(b.cancel_requested(&task.id).await.expect("read succeeds"));
    let got = b
        .get(&task.id)
        .await
        .expect("get succeeds")
        .expect("the task is there");
    assert_eq!(
        (got.version, got.state),
        (Version(2), TaskState::Working),
        "a change, not a transition"
    );
    assert!(
        !a.request_cancel(&done.id).await.expect("request succeeds"),
        "a finished task takes none"
    );
    assert!(!b.cancel_requested(&done.id).await.expect("read succeeds"));
    assert!(
        !a.request_cancel(&TaskId::random())
            .await
            .expect("an unknown id is no error")
    );
}

/// An answer is stored with its write and taken once, through the other handle; a stale
/// version stores neither; a purged task takes its answers with it.
pub async fn an_answer_is_stored_with_its_write_and_taken_once(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    let mut requests = InputRequests::new();
    requests.insert(
        "q1".to_owned(),
        InputRequest {
            kind: InputKind::Elicitation,
            params: json!({"message": "?"}),
        },
    );
    requests.insert(
        "q2".to_owned(),
        InputRequest {
            kind: InputKind::Sampling,
            params: json!({}),
        },
    );
    let mut task = sample_task("alice");
    task.state = TaskState::InputRequired {
        requests: requests.clone(),
    };
    task.ttl_ms = Some(10);
    insert_claimed(&*a, &task, &lease(&NodeId::random(), 60_000)).await;

    let mut rest = requests.clone();
    rest.remove("q1");
    let update = Update {
        state: TaskState::InputRequired { requests: rest },
        status_message: None,
        updated_at: at(1),
        attempt: 1,
    };
    let answer = Ok(json!({"action": "accept", "content": {"file": "ünï.txt"}}));
    let written = a
        .answer(&task.id, task.version, &update, "q1", &answer)
        .await
        .expect("answer succeeds");
    assert_eq!(
        (written.version, &written.state),
        (Version(2), &update.state)
    );
    let refused = ErrorObject {
        code: -1,
        message: "declined".to_owned(),
        data: None,
    };
    let stale = b
        .answer(&task.id, task.version, &update, "q2", &Err(refused.clone()))
        .await;
    assert!(
        matches!(stale, Err(StoreError::Conflict(_))),
        "a stale version: {stale:?}"
    );
    assert_eq!(
        b.take_answer(&task.id, "q2").await.expect("take succeeds"),
        None,
        "nothing stored by a conflict"
    );
    assert_eq!(
        b.take_answer(&task.id, "q1").await.expect("take succeeds"),
        Some(answer)
    );
    assert_eq!(
        a.take_answer(&task.id, "q1").await.expect("take succeeds"),
        None,
        "taken once"
    );

    let last = Update {
        state: TaskState::Working,
        status_message: None,
        updated_at: at(2),
        attempt: 1,
    };
    b.answer(&task.id, Version(2), &last, "q2", &Err(refused.clone()))
        .await
        .expect("answer succeeds");
    let done = Update {
        state: completed(),
        status_message: None,
        updated_at: at(3),
        attempt: 1,
    };
    a.replace(&task.id, Version(3), &done)
        .await
        .expect("replace succeeds");
    assert_eq!(a.purge(at(1_000), 10).await.expect("purge succeeds"), 1);
    assert_eq!(
        b.take_answer(&task.id, "q2").await.expect("take succeeds"),
        None,
        "gone with its task"
    );
}

/// The change feed of one handle carries the inserts and writes made through the other: for
/// each write, a record of its task at least as new (writes close together may arrive folded
/// into the newest), and each task's last write exactly as it stands.
pub async fn the_change_feed_carries_the_writes_of_either_handle(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    let mut feed = b.changes();
    let task = sample_task("alice");
    let node = NodeId::random();
    insert_claimed(&*a, &task, &lease(&node, 10)).await;
    let done = Update {
        state: completed(),
        status_message: Some("done".to_owned()),
        updated_at: at(1),
        attempt: 1,
    };
    let other = sample_task("bob");
    a.insert(&other).await.expect("insert succeeds");
    let taken = b
        .claim(&other.id, 1, &lease(&node, 60_000), at(0))
        .await
        .expect("claim succeeds")
        .expect("taken");
    let written = a
        .replace(&task.id, task.version, &done)
        .await
        .expect("replace succeeds");
    let mut last = vec![taken, written];
    let seen = tokio::time::timeout(FEED_DEADLINE, async {
        while !last.is_empty() {
            let change = feed.recv().await.expect("the feed stays open and keeps up");
            assert!(
                change.id == task.id || change.id == other.id,
                "only the tasks written: {change:?}"
            );
            last.retain(|record| record != &*change);
        }
    })
    .await;
    assert!(
        seen.is_ok(),
        "every change arrives within {FEED_DEADLINE:?}; missing: {last:?}"
    );
}

/// Of takers racing from both handles for the slots of one tool, no more than its size hold
/// one; a holder taking again still holds it; a released slot, one whose lease lapsed and one
/// whose task finished are free again; another tool's slots are its own; renewals keep a
/// node's slots.
pub async fn a_tools_slots_hold_across_handles_and_free_up_by_release_lapse_or_end(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    const SIZE: u32 = 2;
    let node = NodeId::random();
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let task = sample_task("alice");
        insert_claimed(&*a, &task, &lease(&node, 60_000)).await;
        tasks.push(task);
    }
    let start = Arc::new(tokio::sync::Barrier::new(tasks.len()));
    let racers: Vec<_> = tasks
        .iter()
        .enumerate()
        .map(|(n, task)| {
            let store = if n % 2 == 0 { Arc::clone(&a) } else { Arc::clone(&b) };
            let (start, id, lease) = (Arc::clone(&start), task.id.clone(), lease(&node, 10_000));
            tokio::spawn(async move {
                start.wait().await;
                store.take_slot("build", SIZE, &id, &lease, at(0)).await.map(|taken| taken.then_some(id))
            })
        })
        .collect();
    let mut holders = Vec::new();
    for racer in racers {
        if let Some(id) = racer.await.expect("the racer does not panic").expect("take succeeds") {
            holders.push(id);
        }
    }
    assert_eq!(holders.len(), SIZE as usize, "exactly the size hold a slot");
    let waiting: Vec<&TaskRecord> = tasks.iter().filter(|task| !holders.contains(&task.id)).collect();
    assert!(b.take_slot("build", SIZE, &holders[0], &lease(&node, 10_000), at(1)).await.expect("take succeeds"), "a holder holds");
    assert!(!a.take_slot("build", SIZE, &waiting[0].id, &lease(&node, 10_000), at(1)).await.expect("take succeeds"), "full");
    assert!(a.take_slot("test", 1, &waiting[0].id, &lease(&node, 10_000), at(1)).await.expect("take succeeds"), "another tool's slots");

    b.release_slot("build", &holders[0]).await.expect("release succeeds");
    assert!(a.take_slot("build", SIZE, &waiting[0].id, &lease(&node, 10_000), at(2)).await.expect("take succeeds"), "released");
    assert!(!b.take_slot("build", SIZE, &waiting[1].id, &lease(&node, 10_000), at(2)).await.expect("take succeeds"), "full again");

    // The holder of a slot finishes: its slot is free.
    let holder = b.get(&holders[1]).await.expect("get succeeds").expect("the task is there");
    let done = Update { state: completed(), status_message: None, updated_at: at(3), attempt: 1 };
    a.replace(&holder.id, holder.version, &done).await.expect("replace succeeds");
    assert!(b.take_slot("build", SIZE, &waiting[1].id, &lease(&node, 10_000), at(3)).await.expect("take succeeds"), "its task ended");

    // Renewed with the node's claims, the slots outlive their first lease; lapsed, they free.
    a.renew(&lease(&node, 20_000), at(9_999)).await.expect("renew succeeds");
    assert!(!a.take_slot("build", SIZE, &waiting[2].id, &lease(&node, 30_000), at(10_000)).await.expect("take succeeds"), "renewed");
    assert!(a.take_slot("build", SIZE, &waiting[2].id, &lease(&node, 30_000), at(20_000)).await.expect("take succeeds"), "lapsed");
}
