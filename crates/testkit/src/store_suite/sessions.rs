//! Store-suite cases of [`SessionStore`], the 2025-11-25 HTTP session records (the HTTP
//! transport's, not part of the engine's `TaskStore`), on two handles (`a`, `b`): found only
//! by their owner through either handle, their created tasks appended atomically, touched,
//! ended for both handles, idle ones pruned oldest first within a limit.

use std::sync::Arc;

use serde_json::json;

use mcp_tasks_engine::{Principal, SessionRecord, SessionStore, TaskId};

use super::fixtures::*;

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
    a: Arc<dyn SessionStore>,
    b: Arc<dyn SessionStore>,
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
pub async fn idle_sessions_are_pruned_oldest_first_within_the_limit(a: Arc<dyn SessionStore>, b: Arc<dyn SessionStore>) {
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
