//! Store-suite cases of [`DeliveryStore`] (the webhooks' deliveries), on two handles of a
//! shared store: a delivery is written with the write that takes a task into an event status,
//! only once recording is on; it is claimed by one node at a time, taken over when the claim
//! lapses, fenced against its former holder, retried with what was done, and finished.
//! [`delivery_suite!`](crate::delivery_suite!) runs them for the stores that implement it
//! (SQLite and PostgreSQL; the memory store does not).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use mcp_tasks_engine::{DeliveryStore, NodeId, Status, TaskState, TaskStore, Timestamp, Update};

use super::fixtures::*;

/// A handle of a store that keeps tasks and their webhook deliveries.
pub trait DeliveryHandle: TaskStore + DeliveryStore {}

impl<S: TaskStore + DeliveryStore + ?Sized> DeliveryHandle for S {}

/// A claim's lease in these cases.
const LEASE: Duration = Duration::from_secs(30);

/// Far enough after [`T0`] that every delivery written by the cases is due.
fn later() -> Timestamp {
    at(3_600_000)
}

/// An update of a task to `state` with `message`, `ms` after [`T0`].
fn update(state: TaskState, message: &str, ms: i64) -> Update {
    Update { state, status_message: Some(message.to_owned()), updated_at: at(ms), attempt: 1 }
}

/// Writes that take a task into `input_required`, `completed` (a tool error among them,
/// `failed` to an operator), `failed` or `cancelled` record one delivery each, in their
/// transaction, once recording is on; a write that keeps the status, or goes back to
/// `working`, records none, and neither does any write before recording.
pub async fn a_delivery_is_recorded_with_each_write_into_an_event_status(a: Arc<dyn DeliveryHandle>, b: Arc<dyn DeliveryHandle>) {
    let node = NodeId::random();
    // Before recording: nothing.
    let quiet = sample_task("alice");
    a.insert(&quiet).await.expect("insert succeeds");
    a.replace(&quiet.id, quiet.version, &update(completed(), "done", 1)).await.expect("replace succeeds");
    assert!(b.claim_deliveries(&node, later(), LEASE, 100).await.expect("claim succeeds").is_empty(), "nothing before recording");
    a.record_deliveries();

    let task = sample_task("alice");
    a.insert(&task).await.expect("insert succeeds");
    let asked = a.replace(&task.id, task.version, &update(input_required(), "Which file?", 1)).await.expect("replace succeeds");
    let again = a.replace(&task.id, asked.version, &update(input_required(), "Which one, again?", 2)).await.expect("replace");
    let back = a.replace(&task.id, again.version, &update(TaskState::Working, "answered", 3)).await.expect("replace");
    let tool_error = TaskState::Completed { result: json!({"content": [], "isError": true}) };
    let ended = a.replace(&task.id, back.version, &update(tool_error, "exit 2", 4)).await.expect("replace succeeds");
    let mut born_done = sample_task("bob");
    born_done.state = completed();
    a.insert(&born_done).await.expect("insert succeeds");
    let cancelled = sample_task("carol");
    a.insert(&cancelled).await.expect("insert succeeds");
    a.replace(&cancelled.id, cancelled.version, &update(TaskState::Cancelled, "stopped", 5)).await.expect("replace");
    let broken = sample_task("dave");
    a.insert(&broken).await.expect("insert succeeds");
    a.replace(&broken.id, broken.version, &update(failed(), "expired", 6)).await.expect("replace succeeds");

    let claimed = b.claim_deliveries(&node, later(), LEASE, 100).await.expect("claim succeeds");
    let seen: Vec<(String, Status, u64, Option<&str>)> = claimed
        .iter()
        .map(|d| (d.task.as_str().to_owned(), d.event, d.version.0, d.message.as_deref()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (task.id.as_str().to_owned(), Status::InputRequired, asked.version.0, Some("Which file?")),
            (task.id.as_str().to_owned(), Status::Failed, ended.version.0, Some("exit 2")),
            (born_done.id.as_str().to_owned(), Status::Completed, 1, None),
            (cancelled.id.as_str().to_owned(), Status::Cancelled, 2, Some("stopped")),
            (broken.id.as_str().to_owned(), Status::Failed, 2, Some("expired")),
        ],
        "one delivery per write into an event status, in order"
    );
    let first = &claimed[0];
    assert_eq!(first.at, at(1));
    assert_eq!(first.attempts, 0);
    assert!(first.done.is_empty());
    assert_eq!(first.record.as_ref().map(|record| record.version), Some(ended.version), "the task as stored now comes with it");
    let ids: HashSet<i64> = claimed.iter().map(|d| d.id).collect();
    assert_eq!(ids.len(), claimed.len(), "each delivery its own id");
}

/// A claimed delivery is not claimed again, through either handle, until its lease lapses;
/// then the other node takes it over and the first one's finish or retry changes nothing. A
/// retry releases it with the receivers done, due again at its time; a finish removes it.
pub async fn a_claimed_delivery_is_taken_over_when_its_lease_lapses_and_fenced_after(
    a: Arc<dyn DeliveryHandle>,
    b: Arc<dyn DeliveryHandle>,
) {
    a.record_deliveries();
    let (one, two) = (NodeId::random(), NodeId::random());
    let mut task = sample_task("alice");
    task.state = completed();
    a.insert(&task).await.expect("insert succeeds");
    let now = later();
    let claimed = a.claim_deliveries(&one, now, LEASE, 10).await.expect("claim succeeds");
    assert_eq!(claimed.len(), 1);
    let id = claimed[0].id;
    assert!(b.claim_deliveries(&two, now, LEASE, 10).await.expect("claim").is_empty(), "held by one");
    assert!(a.claim_deliveries(&two, now, LEASE, 10).await.expect("claim").is_empty(), "held by one, whoever asks");
    assert_eq!(a.next_delivery_at().await.expect("read"), Some(now.plus_ms(30_000)), "free when the lease lapses");

    let lapsed = now.plus_ms(30_000);
    let taken = b.claim_deliveries(&two, lapsed, LEASE, 10).await.expect("claim succeeds");
    assert_eq!(taken.iter().map(|d| d.id).collect::<Vec<_>>(), vec![id], "taken over once the lease lapsed");
    // The first node is fenced out: its finish and its retry change nothing.
    a.finish_delivery(id, &one).await.expect("finish succeeds");
    a.retry_delivery(id, &one, &["http://x".to_owned()], now, "late").await.expect("retry succeeds");
    assert!(a.claim_deliveries(&one, lapsed, LEASE, 10).await.expect("claim").is_empty(), "still held by two");

    let due = lapsed.plus_ms(500);
    let done = vec!["http://127.0.0.1:1/a".to_owned()];
    b.retry_delivery(id, &two, &done, due, "answered 500").await.expect("retry succeeds");
    assert_eq!(a.next_delivery_at().await.expect("read"), Some(due));
    assert!(a.claim_deliveries(&one, lapsed, LEASE, 10).await.expect("claim").is_empty(), "not due before its retry");
    let retried = a.claim_deliveries(&one, due, LEASE, 10).await.expect("claim succeeds");
    assert_eq!(retried.len(), 1);
    assert_eq!((retried[0].id, retried[0].attempts, &retried[0].done), (id, 1, &done), "the attempt and the receivers done are kept");
    a.finish_delivery(id, &one).await.expect("finish succeeds");
    assert_eq!(b.next_delivery_at().await.expect("read"), None, "finished: gone");
    assert!(b.claim_deliveries(&two, due.plus_ms(3_600_000), LEASE, 10).await.expect("claim").is_empty());
}

/// Two handles claiming at once, again and again, never get the same delivery, and between
/// them get every one.
pub async fn racing_claims_from_two_handles_never_share_a_delivery(a: Arc<dyn DeliveryHandle>, b: Arc<dyn DeliveryHandle>) {
    a.record_deliveries();
    for _ in 0..40 {
        let mut task = sample_task("alice");
        task.state = completed();
        a.insert(&task).await.expect("insert succeeds");
    }
    let claim_all = |store: Arc<dyn DeliveryHandle>| async move {
        let node = NodeId::random();
        let mut got = Vec::new();
        loop {
            let claimed = store.claim_deliveries(&node, later(), LEASE, 3).await.expect("claim succeeds");
            if claimed.is_empty() {
                return got;
            }
            got.extend(claimed.into_iter().map(|d| d.id));
        }
    };
    let (first, second) = tokio::join!(tokio::spawn(claim_all(Arc::clone(&a))), tokio::spawn(claim_all(Arc::clone(&b))));
    let (first, second) = (first.expect("first claimer"), second.expect("second claimer"));
    let (one, two): (HashSet<i64>, HashSet<i64>) = (first.iter().copied().collect(), second.iter().copied().collect());
    assert_eq!(one.len() + two.len(), first.len() + second.len(), "no handle got a delivery twice");
    assert!(one.is_disjoint(&two), "no delivery went to both");
    assert_eq!(one.len() + two.len(), 40, "every delivery was claimed");
}

/// Generates one `#[tokio::test]` per case of the delivery suite, each on two fresh handles
/// built by `$make` (an async expression yielding an `Option` of
/// [`Handles`](crate::store_suite::Handles) whose store implements `DeliveryStore`; `None`
/// skips, as `store_suite!(optional: …)` does).
#[macro_export]
macro_rules! delivery_suite {
    ($make:expr) => {
        $crate::delivery_suite!(@cases $make;
            a_delivery_is_recorded_with_each_write_into_an_event_status,
            a_claimed_delivery_is_taken_over_when_its_lease_lapses_and_fenced_after,
            racing_claims_from_two_handles_never_share_a_delivery,
        );
    };
    (@cases $make:expr; $($case:ident),+ $(,)?) => {
        /// The shared store suite's cases of the webhooks' deliveries, on two handles.
        mod delivery_suite {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let ::core::option::Option::Some(fixture) = $make.await else {
                        return;
                    };
                    let first = ::std::sync::Arc::clone(&fixture.first) as ::std::sync::Arc<dyn $crate::store_suite::DeliveryHandle>;
                    let second = ::std::sync::Arc::clone(&fixture.second) as ::std::sync::Arc<dyn $crate::store_suite::DeliveryHandle>;
                    $crate::store_suite::$case(first, second).await;
                    drop(fixture);
                }
            )+
        }
    };
}
