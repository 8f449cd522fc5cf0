//! Store-suite cases of each task's event log ([`WorkStore::append_events`],
//! [`WorkStore::logged_events`]): numbered from 1 without gaps across appends and handles,
//! fenced by the attempt, frozen once the task is finished, pruned from the oldest past its
//! limits, and gone with its task.
//!
//! [`WorkStore::append_events`]: mcp_tasks_engine::WorkStore::append_events
//! [`WorkStore::logged_events`]: mcp_tasks_engine::WorkStore::logged_events

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::json;

use mcp_tasks_engine::{EventLimits, NewEvent, TaskId, TaskState, TaskStore, Timestamp, Update};

use super::fixtures::*;

/// Limits no case reaches.
const ROOMY: EventLimits = EventLimits { events: 10_000, bytes: 1 << 30 };

/// `n` output events, `text` and their index in each.
fn lines(text: &str, n: usize) -> Vec<NewEvent> {
    (0..n)
        .map(|i| NewEvent {
            kind: "dev.mcp-tasks.output".to_owned(),
            payload: json!({"stream": "stdout", "lines": [format!("{text} {i}")], "é": [1, 2.5, null]}),
            at: Timestamp(T0.0 + i64::try_from(i).unwrap_or(0)),
        })
        .collect()
}

/// Appends are numbered on from 1 without gaps and read back exactly, paged after any cursor;
/// another attempt, a finished task and an unknown one take nothing, and a finished task's
/// log stays as it was.
pub async fn an_event_log_numbers_appends_from_one_and_pages_after_a_cursor(store: Arc<dyn TaskStore>) {
    let task = task_at("alice", T0.0, Some(10), TaskState::Working);
    insert_all(&*store, std::slice::from_ref(&task)).await;
    let empty = store.logged_events(&task.id, 0, 10).await.expect("read succeeds");
    assert_eq!((empty.events.len(), empty.earliest, empty.next), (0, 0, 1), "nothing stored yet");
    let first = lines("one", 3);
    assert_eq!(store.append_events(&task.id, task.attempt, &first, ROOMY).await.expect("append"), Some(1));
    assert_eq!(store.append_events(&task.id, task.attempt, &lines("two", 2), ROOMY).await.expect("append"), Some(4));
    let page = store.logged_events(&task.id, 0, 10).await.expect("read succeeds");
    assert_eq!(page.events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);
    assert_eq!((page.earliest, page.next), (0, 6));
    assert_eq!((page.events[0].kind.as_str(), &page.events[0].payload, page.events[0].at), (first[0].kind.as_str(), &first[0].payload, first[0].at));
    let after = store.logged_events(&task.id, 3, 1).await.expect("read succeeds");
    assert_eq!(after.events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![4], "after 3, one");
    assert!(store.logged_events(&task.id, 5, 10).await.expect("read").events.is_empty(), "nothing after the last");

    let stale = store.append_events(&task.id, task.attempt + 1, &lines("stale", 1), ROOMY).await.expect("append runs");
    assert_eq!(stale, None, "another attempt's events are refused");
    let unknown = TaskId::random();
    assert_eq!(store.append_events(&unknown, 1, &lines("x", 1), ROOMY).await.expect("append runs"), None);
    let done = Update { state: completed(), status_message: None, updated_at: Timestamp(T0.0 + 5), attempt: task.attempt };
    store.replace(&task.id, task.version, &done).await.expect("replace succeeds");
    assert_eq!(store.append_events(&task.id, task.attempt, &lines("late", 1), ROOMY).await.expect("append runs"), None);
    assert_eq!(store.logged_events(&task.id, 0, 10).await.expect("read").next, 6, "a finished task's log is frozen");
    assert_eq!(store.get(&task.id).await.expect("get").map(|t| t.version), Some(mcp_tasks_engine::Version(task.version.0 + 1)), "only the replace bumped it");
}

/// Past its limits a log drops its oldest events (the newest always stays), says from where
/// it keeps them, and goes with its task when it is purged.
pub async fn an_event_log_prunes_its_oldest_past_its_limits_and_goes_with_its_task(store: Arc<dyn TaskStore>) {
    let task = task_at("alice", T0.0, Some(10), TaskState::Working);
    insert_all(&*store, std::slice::from_ref(&task)).await;
    let three = EventLimits { events: 3, bytes: 1 << 30 };
    store.append_events(&task.id, task.attempt, &lines("a", 5), three).await.expect("append");
    let page = store.logged_events(&task.id, 0, 10).await.expect("read");
    assert_eq!(page.events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![3, 4, 5], "the newest three");
    assert_eq!((page.earliest, page.next), (3, 6));
    store.append_events(&task.id, task.attempt, &lines("b", 1), three).await.expect("append");
    let page = store.logged_events(&task.id, 0, 10).await.expect("read");
    assert_eq!((page.events[0].seq, page.earliest, page.next), (4, 4, 7));
    // A byte limit below one event: only the newest stays.
    let tiny = EventLimits { events: 100, bytes: 10 };
    store.append_events(&task.id, task.attempt, &lines("c", 2), tiny).await.expect("append");
    let page = store.logged_events(&task.id, 0, 10).await.expect("read");
    assert_eq!(page.events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![8], "the newest alone");
    assert_eq!(page.earliest, 8);

    let done = Update { state: completed(), status_message: None, updated_at: Timestamp(T0.0 + 5), attempt: task.attempt };
    store.replace(&task.id, task.version, &done).await.expect("replace succeeds");
    assert_eq!(store.purge(Timestamp(T0.0 + 1_000), 10).await.expect("purge succeeds"), 1);
    let gone = store.logged_events(&task.id, 0, 10).await.expect("read");
    assert_eq!((gone.events.len(), gone.earliest, gone.next), (0, 0, 1), "gone with its task");
}

/// Appends racing through two handles to one task's log get every number from 1 exactly once.
pub async fn racing_appends_through_two_handles_number_a_log_without_gaps(a: Arc<dyn TaskStore>, b: Arc<dyn TaskStore>) {
    let task = task_at("alice", T0.0, Some(60_000), TaskState::Working);
    insert_all(&*a, std::slice::from_ref(&task)).await;
    let append = |store: Arc<dyn TaskStore>, id: TaskId, attempt: u32| async move {
        for _ in 0..10 {
            store.append_events(&id, attempt, &lines("race", 2), ROOMY).await.expect("append succeeds").expect("written");
        }
    };
    let (one, two) = tokio::join!(
        tokio::spawn(append(Arc::clone(&a), task.id.clone(), task.attempt)),
        tokio::spawn(append(Arc::clone(&b), task.id.clone(), task.attempt))
    );
    one.expect("first appender");
    two.expect("second appender");
    let page = b.logged_events(&task.id, 0, 100).await.expect("read");
    let seqs: BTreeSet<u64> = page.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=40).collect::<BTreeSet<u64>>(), "every number once, no gap");
    assert_eq!(page.next, 41);
}
