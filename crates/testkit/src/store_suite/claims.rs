//! Store-suite cases of [`ClaimStore`], many nodes on one store, each on two handles (`a`,
//! `b`; a store one process owns passes the same handle twice): claims with a lease (taken,
//! renewed, lapsing at an injected `now`, taken over with the attempt bumped as the fence),
//! the retention limit enforced by the claimed insert, a tool's slots, and the running places
//! that hold `max_running` and `max_running_per_principal` across nodes (taken within both
//! limits, racing, freed by release, lapse or their task's end, renewed with the node's
//! claims).

use std::sync::Arc;

use mcp_tasks_engine::{
    Inserted, NodeId, Place, PlaceHolder, Principal, RunningLimits, StoreError, TaskId, TaskRecord, TaskStore,
    Timestamp, Update, Version,
};

use super::fixtures::*;

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

    held_until_the_lease_ends(&*b, &task, &second).await;
    taken_over(&*a, &*b, &task, &second).await;
    the_previous_runner_is_fenced(&*a, &task, &first).await;
}

/// `task`, claimed until 30 s, is not lapsed nor taken by `second` before then, and lapsed
/// at 30 s.
async fn held_until_the_lease_ends(b: &dyn TaskStore, task: &TaskRecord, second: &NodeId) {
    assert!(
        b.lapsed(at(29_999), 10)
            .await
            .expect("lapsed succeeds")
            .is_empty(),
        "held until its lease ends"
    );
    assert_eq!(
        b.claim(&task.id, 1, &lease(second, 60_000), at(29_999))
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
}

/// `second` takes lapsed `task` over: attempt and version bumped, seen through the other
/// handle, held by its new lease.
async fn taken_over(a: &dyn TaskStore, b: &dyn TaskStore, task: &TaskRecord, second: &NodeId) {
    let taken = b
        .claim(&task.id, 1, &lease(second, 60_000), at(30_000))
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
}

/// The previous runner of `task` (node `first`, attempt 1) is fenced: its write is refused, a
/// claim at its attempt gets nothing, and its renewal finds the task no longer its own.
async fn the_previous_runner_is_fenced(a: &dyn TaskStore, task: &TaskRecord, first: &NodeId) {
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
        a.claim(&task.id, 1, &lease(first, 90_000), at(90_000))
            .await
            .expect("claim succeeds"),
        None,
        "the old attempt is gone"
    );
    assert_eq!(
        a.renew(&lease(first, 90_000), at(30_001))
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

fn call(name: &str) -> PlaceHolder {
    PlaceHolder::Call(format!("call-{name}-{}", TaskId::random()))
}

/// Three places in all, two per owner: a task and a plain call of alice take two, her third is
/// refused with her count, bob takes the last, carol is refused with the total; a holder keeps
/// its place (a task not stored yet too); a release, its task's end and a lapsed lease each
/// free one; a renewal (the heartbeat) keeps a node's places past their first lease, a task's
/// while it is unfinished.
pub async fn running_places_hold_within_both_limits_and_free_up_by_release_lapse_or_end(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    let limits = RunningLimits { max_running: 3, max_running_per_principal: 2 };
    let (alice, bob, carol) = (Principal::new("alice"), Principal::new("bob"), Principal::new("carol"));
    let node = NodeId::random();
    let task = sample_task("alice");
    // Taken before the insert, as the engine does: a task not stored yet holds its place.
    let held = PlaceHolder::Task(task.id.clone());
    assert_eq!(a.take_place(&held, &alice, &limits, &lease(&node, 10_000), at(0)).await.expect("take"), Place::Taken);
    let alices_call = call("alice");
    assert_eq!(b.take_place(&alices_call, &alice, &limits, &lease(&node, 10_000), at(1)).await.expect("take"), Place::Taken);
    assert_eq!(a.insert_claimed(&task, &lease(&node, 10_000), u64::MAX, None).await.expect("insert"), Inserted::New);
    let third = call("alice");
    assert_eq!(
        a.take_place(&third, &alice, &limits, &lease(&node, 10_000), at(2)).await.expect("take"),
        Place::OwnerFull { running: 2 },
        "alice holds her two"
    );
    let bobs = call("bob");
    assert_eq!(b.take_place(&bobs, &bob, &limits, &lease(&node, 10_000), at(2)).await.expect("take"), Place::Taken);
    let carols = call("carol");
    assert_eq!(
        a.take_place(&carols, &carol, &limits, &lease(&node, 10_000), at(3)).await.expect("take"),
        Place::Full { running: 3 },
        "all three are held"
    );
    assert_eq!(
        b.take_place(&held, &alice, &limits, &lease(&node, 10_000), at(3)).await.expect("take"),
        Place::Taken,
        "a holder keeps its place"
    );

    // A release frees one, for anybody.
    a.release_place(&bobs).await.expect("release");
    assert_eq!(b.take_place(&carols, &carol, &limits, &lease(&node, 10_000), at(4)).await.expect("take"), Place::Taken);

    // The holding task ends: its place is free.
    let done = Update { state: completed(), status_message: None, updated_at: at(5), attempt: task.attempt };
    b.replace(&task.id, task.version, &done).await.expect("replace");
    assert_eq!(a.take_place(&third, &alice, &limits, &lease(&node, 10_000), at(5)).await.expect("take"), Place::Taken);

    // Renewed, the calls outlive their first lease; lapsed, every place is free.
    a.renew(&lease(&node, 20_000), at(9_999)).await.expect("renew");
    assert_eq!(
        b.take_place(&call("dave"), &Principal::new("dave"), &limits, &lease(&node, 30_000), at(10_000)).await.expect("take"),
        Place::Full { running: 3 },
        "renewed by the heartbeat"
    );
    let lapsed = RunningLimits { max_running: 3, max_running_per_principal: 3 };
    for n in 0..3 {
        assert_eq!(
            a.take_place(&call("erin"), &Principal::new("erin"), &lapsed, &lease(&node, 40_000), at(20_000 + n)).await.expect("take"),
            Place::Taken,
            "lapsed places are free"
        );
    }

    // A task's place is renewed while the task is unfinished, and freed when it ends.
    let other = NodeId::random();
    let running = sample_task("frank");
    let frank = Principal::new("frank");
    let holder = PlaceHolder::Task(running.id.clone());
    let wide = RunningLimits { max_running: 100, max_running_per_principal: 1 };
    assert_eq!(a.take_place(&holder, &frank, &wide, &lease(&other, 50_000), at(40_001)).await.expect("take"), Place::Taken);
    assert_eq!(a.insert_claimed(&running, &lease(&other, 50_000), u64::MAX, None).await.expect("insert"), Inserted::New);
    b.renew(&lease(&other, 90_000), at(40_002)).await.expect("renew");
    assert_eq!(
        a.take_place(&call("frank"), &frank, &wide, &lease(&other, 90_000), at(60_000)).await.expect("take"),
        Place::OwnerFull { running: 1 },
        "an unfinished task's place is renewed"
    );
    let stored = b.get(&running.id).await.expect("get").expect("stored");
    let done = Update { state: completed(), status_message: None, updated_at: at(60_001), attempt: stored.attempt };
    a.replace(&running.id, stored.version, &done).await.expect("replace");
    assert_eq!(a.take_place(&call("frank"), &frank, &wide, &lease(&other, 90_000), at(60_002)).await.expect("take"), Place::Taken);
}

/// Of 16 takers racing through two handles for one owner's three places, exactly three hold one.
pub async fn of_racing_place_takers_from_two_handles_no_more_than_the_limit_hold_one(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    let limits = RunningLimits { max_running: 100, max_running_per_principal: 3 };
    let node = NodeId::random();
    let start = Arc::new(tokio::sync::Barrier::new(16));
    let racers: Vec<_> = (0..16)
        .map(|n| {
            let store = if n % 2 == 0 { Arc::clone(&a) } else { Arc::clone(&b) };
            let (start, lease) = (Arc::clone(&start), lease(&node, 10_000));
            tokio::spawn(async move {
                start.wait().await;
                store.take_place(&call("alice"), &Principal::new("alice"), &limits, &lease, at(0)).await
            })
        })
        .collect();
    let mut taken = 0;
    for racer in racers {
        match racer.await.expect("the racer does not panic").expect("take succeeds") {
            Place::Taken => taken += 1,
            Place::OwnerFull { running } => assert_eq!(running, 3, "refused with the owner's count"),
            Place::Full { running } => panic!("the total limit is not reached: {running}"),
        }
    }
    assert_eq!(taken, 3, "exactly the limit hold a place");
}

/// [`insert_placed`](mcp_tasks_engine::ClaimStore::insert_placed): a creation takes its running
/// place with its insert, through either handle; refused past either running limit, or past
/// the retention limit, with nothing written; the task holds its place until it ends.
pub async fn a_placed_insert_holds_the_running_limits_and_the_retention_limit_across_handles(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    let limits = RunningLimits { max_running: 2, max_running_per_principal: 1 };
    let node = NodeId::random();
    let placing = |ms: i64| mcp_tasks_engine::Placing { limits, lease: lease(&node, 10_000), now: at(ms) };
    let insert = |store: &Arc<dyn TaskStore>, task: TaskRecord, retained: u64, ms: i64| {
        let (store, placing) = (Arc::clone(store), placing(ms));
        let lease = lease(&node, 10_000);
        async move { store.insert_placed(&task, &lease, retained, None, &placing, None).await.map(|(inserted, _)| inserted) }
    };
    let alices = sample_task("alice");
    assert_eq!(insert(&a, alices.clone(), u64::MAX, 0).await.expect("alice's first"), Inserted::New);
    let second = sample_task("alice");
    match insert(&b, second.clone(), u64::MAX, 1).await {
        Err(StoreError::NoPlace(Place::OwnerFull { running: 1 })) => {}
        other => panic!("alice runs one already, through the other handle: {other:?}"),
    }
    assert!(b.get(&second.id).await.expect("get").is_none(), "a refusal writes nothing");
    let bobs = sample_task("bob");
    assert_eq!(insert(&b, bobs.clone(), u64::MAX, 2).await.expect("bob's"), Inserted::New);
    match insert(&a, sample_task("carol"), u64::MAX, 3).await {
        Err(StoreError::NoPlace(Place::Full { running: 2 })) => {}
        other => panic!("two run in all: {other:?}"),
    }
    // Alice's task ends: her place is free again.
    let done = Update { state: completed(), status_message: None, updated_at: at(4), attempt: alices.attempt };
    a.replace(&alices.id, alices.version, &done).await.expect("replace");
    assert_eq!(insert(&b, second.clone(), u64::MAX, 5).await.expect("alice's second"), Inserted::New);
    // With places free, the retention limit refuses, with nothing written.
    for task in [&second, &bobs] {
        let done = Update { state: completed(), status_message: None, updated_at: at(6), attempt: task.attempt };
        b.replace(&task.id, task.version, &done).await.expect("replace");
    }
    let third = sample_task("alice");
    match insert(&a, third.clone(), 2, 6).await {
        Err(StoreError::Full { retained: 2, .. }) => {}
        other => panic!("alice keeps two: {other:?}"),
    }
    assert!(a.get(&third.id).await.expect("get").is_none());
}

/// Placed creations of one owner racing from both handles under `max_running_per_principal =
/// 3`: exactly three are created and the rest refused with the owner's limit, writing nothing
/// (on PostgreSQL: three slots, taken without waiting for each other); a task that ends frees
/// its place for the next creation.
pub async fn racing_placed_inserts_hold_the_owners_running_limit_exactly_across_handles(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    const RACERS: usize = 12;
    let limits = RunningLimits { max_running: 1000, max_running_per_principal: 3 };
    let node = NodeId::random();
    let start = Arc::new(tokio::sync::Barrier::new(RACERS));
    let racers: Vec<_> = (0..RACERS)
        .map(|n| {
            let store = Arc::clone(if n % 2 == 0 { &a } else { &b });
            let (start, lease) = (Arc::clone(&start), lease(&node, 60_000));
            tokio::spawn(async move {
                let task = sample_task("alice");
                let placing = mcp_tasks_engine::Placing { limits, lease: lease.clone(), now: at(0) };
                start.wait().await;
                let placed = store.insert_placed(&task, &lease, u64::MAX, None, &placing, None).await;
                (task, placed.map(|(inserted, _)| inserted))
            })
        })
        .collect();
    let mut created = Vec::new();
    for racer in racers {
        match racer.await.expect("the racer does not panic") {
            (task, Ok(Inserted::New)) => created.push(task),
            (task, Err(StoreError::NoPlace(Place::OwnerFull { running }))) => {
                assert!(running >= 3, "refused at the owner's limit: {running}");
                assert!(a.get(&task.id).await.expect("get").is_none(), "a refusal writes nothing");
            }
            (_, other) => panic!("expected New or OwnerFull, got {other:?}"),
        }
    }
    assert_eq!(created.len(), 3, "exactly the owner's limit run");
    let ended = &created[0];
    let done = Update { state: completed(), status_message: None, updated_at: at(1), attempt: ended.attempt };
    b.replace(&ended.id, ended.version, &done).await.expect("replace");
    let next = sample_task("alice");
    let placing = mcp_tasks_engine::Placing { limits, lease: lease(&node, 60_000), now: at(2) };
    let placed = a.insert_placed(&next, &lease(&node, 60_000), u64::MAX, None, &placing, None).await;
    assert_eq!(placed.expect("a place came free").0, Inserted::New);
}
