//! Store-suite cases for what many nodes share besides tasks: the running places that hold
//! `max_running` and `max_running_per_principal` across nodes (taken within both limits,
//! racing from two handles, freed by release, lapse or their task's end, renewed with the
//! node's claims), and the 2025-11-25 HTTP session records (found only by their owner through
//! either handle, their created tasks appended atomically, touched, ended for both handles,
//! idle ones pruned oldest first within a limit). Each case takes two handles (`a`, `b`).

use std::sync::Arc;

use serde_json::json;

use mcp_tasks_engine::{
    Inserted, Lease, NodeId, Place, PlaceHolder, Principal, RunningLimits, SessionRecord, TaskId, TaskStore, Timestamp,
    Update,
};

use super::fixtures::{T0, completed, sample_task};

/// A lease of `node` lapsing `ms` after [`T0`].
fn lease(node: &NodeId, ms: i64) -> Lease {
    Lease { node: node.clone(), until: Timestamp(T0.0 + ms) }
}

/// `T0` plus `ms`.
fn at(ms: i64) -> Timestamp {
    Timestamp(T0.0 + ms)
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

fn session(owner: &str, last_used: i64) -> SessionRecord {
    SessionRecord {
        id: TaskId::random().to_string(),
        owner: Principal::new(owner),
        state: json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "logLevel": null}),
        created: Vec::new(),
        last_used: at(last_used),
    }
}

/// A stored session is found through the other handle by its owner only (another principal
/// finds nothing, as for an unknown id); tasks added through both handles at once all stay, in
/// order, once each; a put replaces the state and keeps them; a touch moves the last use
/// forward and names the sessions still stored; an end through one handle is seen through the
/// other, and a second end finds nothing.
pub async fn a_session_is_found_by_its_owner_through_either_handle_and_ended_for_both(
    a: Arc<dyn TaskStore>,
    b: Arc<dyn TaskStore>,
) {
    let stored = session("alice", 0);
    a.put_session(&stored).await.expect("put");
    assert_eq!(b.session(&stored.id, &stored.owner).await.expect("read").as_ref(), Some(&stored), "as put");
    assert_eq!(b.session(&stored.id, &Principal::new("mallory")).await.expect("read"), None, "another owner's");
    assert_eq!(a.session("no-such-session", &stored.owner).await.expect("read"), None, "unknown");

    let tasks: Vec<TaskId> = (0..8).map(|_| TaskId::random()).collect();
    let adders: Vec<_> = tasks
        .iter()
        .enumerate()
        .map(|(n, task)| {
            let store = if n % 2 == 0 { Arc::clone(&a) } else { Arc::clone(&b) };
            let (id, task) = (stored.id.clone(), task.clone());
            tokio::spawn(async move { store.add_session_task(&id, &task).await })
        })
        .collect();
    for adder in adders {
        adder.await.expect("the adder does not panic").expect("add succeeds");
    }
    a.add_session_task(&stored.id, &tasks[0]).await.expect("add again");
    a.add_session_task("no-such-session", &tasks[0]).await.expect("an unknown session is no error");
    let read = b.session(&stored.id, &stored.owner).await.expect("read").expect("stored");
    let mut created = read.created.clone();
    assert_eq!(created.len(), tasks.len(), "every task once: {created:?}");
    created.sort();
    let mut expected = tasks.clone();
    expected.sort();
    assert_eq!(created, expected);

    let leveled = SessionRecord { state: json!({"logLevel": "error"}), last_used: at(5), ..stored.clone() };
    b.put_session(&leveled).await.expect("put again");
    let read = a.session(&stored.id, &stored.owner).await.expect("read").expect("stored");
    assert_eq!((read.state.clone(), read.last_used), (json!({"logLevel": "error"}), at(5)), "replaced");
    assert_eq!(read.created.len(), tasks.len(), "the created tasks are kept");

    let touched = a.touch_sessions(&[stored.id.clone(), "no-such-session".to_owned()], at(100)).await.expect("touch");
    assert_eq!(touched, std::slice::from_ref(&stored.id), "only the stored one");
    a.touch_sessions(std::slice::from_ref(&stored.id), at(50)).await.expect("an older touch");
    assert_eq!(b.session(&stored.id, &stored.owner).await.expect("read").expect("stored").last_used, at(100), "never back");

    assert!(b.end_session(&stored.id).await.expect("end"));
    assert_eq!(a.session(&stored.id, &stored.owner).await.expect("read"), None, "ended for both");
    assert!(!a.end_session(&stored.id).await.expect("end again"), "nothing to end");
    assert!(a.touch_sessions(std::slice::from_ref(&stored.id), at(200)).await.expect("touch").is_empty(), "ended elsewhere");
}

/// Pruning deletes the sessions last used before the cut-off, oldest first, at most the limit
/// at a time; a session touched after the cut-off stays.
pub async fn idle_sessions_are_pruned_oldest_first_within_the_limit(a: Arc<dyn TaskStore>, b: Arc<dyn TaskStore>) {
    let (oldest, older, touched, fresh) = (session("alice", 0), session("bob", 10), session("alice", 20), session("carol", 80));
    for stored in [&oldest, &older, &touched, &fresh] {
        a.put_session(stored).await.expect("put");
    }
    b.touch_sessions(std::slice::from_ref(&touched.id), at(90)).await.expect("touch");
    assert_eq!(b.prune_sessions(at(50), 1).await.expect("prune"), 1, "the limit");
    assert_eq!(a.session(&oldest.id, &oldest.owner).await.expect("read"), None, "the oldest went first");
    assert!(a.session(&older.id, &older.owner).await.expect("read").is_some());
    assert_eq!(a.prune_sessions(at(50), 10).await.expect("prune"), 1, "the rest of the idle ones");
    for kept in [&touched, &fresh] {
        assert!(b.session(&kept.id, &kept.owner).await.expect("read").is_some(), "{} is kept", kept.id);
    }
    assert_eq!(b.prune_sessions(at(50), 10).await.expect("prune"), 0);
}
