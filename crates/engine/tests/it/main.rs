//! The engine over the memory store of `mcp-tasks-testkit`: TTL sweeping with an injected clock, fencing of
//! stale attempts, cancellation races, scoping by principal, event-driven waiting.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a failed unwrap is a failed test

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_tasks_engine::{
    Context, Engine, EngineError, ErrorObject, FakeClock, Handler, InputKind, ListQuery, NewTask,
    Outcome, Policy, Principal, RestartPolicy, Status, TaskState, Timestamp, ToolRuntime, WorkError,
};
use mcp_tasks_testkit::MemoryStore;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio::time::timeout;

mod adopt;
mod cancel;
mod claims;
mod idempotency;
mod limits;
mod queue;
mod recording;
mod recovery;
mod retry;
mod watch;

pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// Finishes with `"attempt N"` when released; reports which attempt started.
struct Gate {
    release: Arc<Notify>,
    started: mpsc::UnboundedSender<u32>,
    ignore_cancel: bool,
}

#[async_trait]
impl Handler for Gate {
    async fn call(&self, _arguments: Value, ctx: Context) -> Outcome {
        let _ = self.started.send(ctx.attempt());
        if self.ignore_cancel {
            self.release.notified().await;
        } else {
            tokio::select! {
                _ = self.release.notified() => {}
                _ = ctx.cancelled() => return Outcome::Error(stopped()),
            }
        }
        Outcome::Result(json!({"content": [{"type": "text", "text": format!("attempt {}", ctx.attempt())}]}))
    }
}

/// The error a test handler ends with when it is cancelled.
pub(crate) fn stopped() -> ErrorObject {
    ErrorObject { code: -32603, message: "stopped".into(), data: None }
}

pub(crate) struct Fixture {
    engine: Engine,
    clock: FakeClock,
    release: Arc<Notify>,
    started: mpsc::UnboundedReceiver<u32>,
}

pub(crate) fn fixture(on_restart: RestartPolicy, ignore_cancel: bool) -> Fixture {
    let store = MemoryStore::new();
    let clock = FakeClock::new(Timestamp(1_764_000_000_000));
    let policy = Policy { default_ttl_ms: 60_000, max_ttl_ms: Some(120_000), poll_interval_ms: 500, ..Policy::default() };
    let engine = Engine::new(Arc::new(store), Arc::new(clock.clone()), policy);
    let release = Arc::new(Notify::new());
    let (tx, started) = mpsc::unbounded_channel();
    let gate = Gate { release: Arc::clone(&release), started: tx, ignore_cancel };
    engine.register("gate", ToolRuntime::new(gate).on_restart(on_restart));
    Fixture { engine, clock, release, started }
}

pub(crate) fn new_task(owner: &str, ttl: Option<u64>) -> NewTask {
    NewTask {
        trace: None,
        origin: None,
        owner: Principal::new(owner),
        tool: "gate".into(),
        arguments: json!({}),
        requested_ttl_ms: ttl,
        error_result_fails: true,
        input_kinds: vec![InputKind::Elicitation],
    }
}

fn text(state: &TaskState) -> String {
    match state {
        TaskState::Completed { result } => result["content"][0]["text"].as_str().unwrap().to_owned(),
        other => panic!("not completed: {other:?}"),
    }
}

#[tokio::test]
async fn legacy_39_requested_ttl_is_honoured_up_to_the_cap_and_defaulted() {
    let f = fixture(RestartPolicy::Fail, false);
    let asked = f.engine.create(new_task("a", Some(30_000))).await.unwrap();
    let capped = f.engine.create(new_task("a", Some(999_999_999))).await.unwrap();
    let default = f.engine.create(new_task("a", None)).await.unwrap();
    assert_eq!((asked.ttl_ms, capped.ttl_ms, default.ttl_ms), (Some(30_000), Some(120_000), Some(60_000)));
}

#[tokio::test]
async fn sweeper_fails_overdue_running_tasks_stops_their_work_and_purges_finished_ones() {
    let mut f = fixture(RestartPolicy::Fail, false);
    let owner = Principal::new("a");
    let running = f.engine.create(new_task("a", Some(10_000))).await.unwrap();
    f.engine.start(&running).unwrap();
    f.started.recv().await.unwrap();
    let keeper = f.engine.create(new_task("a", Some(100_000))).await.unwrap();

    // Before the TTL: nothing happens.
    f.clock.advance(Duration::from_secs(9));
    let sweep = f.engine.sweep_once().await.unwrap();
    assert_eq!((sweep.expired, sweep.purged), (0, 0));

    // A waiter on the running task learns it failed with the expiry error.
    let waiter = {
        let engine = f.engine.clone();
        let (owner, id) = (owner.clone(), running.id.clone());
        tokio::spawn(async move { engine.wait_terminal(&owner, &id).await })
    };
    tokio::task::yield_now().await;
    f.clock.advance(Duration::from_secs(2));
    let sweep = f.engine.sweep_once().await.unwrap();
    assert_eq!(sweep.expired, 1);
    assert_eq!(sweep.purged, 1, "the expired task, now failed, is purged in the same pass");
    let ended = timeout(WAIT, waiter).await.unwrap().unwrap().unwrap();
    assert_eq!(ended.state, TaskState::Failed { outcome: Outcome::Failure(WorkError::Expired) });
    assert!(matches!(f.engine.get(&owner, &running.id).await, Err(EngineError::NotFound(_))));
    assert_eq!(f.engine.get(&owner, &keeper.id).await.unwrap().status(), Status::Working);
}

/// More expired tasks than one pass takes (1,000) are all purged at one tick of the sweeper:
/// full passes follow each other at once, so expiry keeps up with any rate of creations.
#[tokio::test]
async fn the_sweeper_purges_more_than_one_pass_takes_at_one_tick() {
    let store = Arc::new(MemoryStore::new());
    let clock = FakeClock::new(mcp_tasks_testkit::store_suite::T0);
    let engine = Engine::new(Arc::clone(&store) as Arc<dyn mcp_tasks_engine::TaskStore>, Arc::new(clock.clone()), Policy::default());
    let owner = Principal::new("a");
    for _ in 0..2_500 {
        let mut task = mcp_tasks_testkit::store_suite::sample_task("a");
        task.state = TaskState::Cancelled;
        mcp_tasks_engine::RecordStore::insert(&*store, &task).await.unwrap();
    }
    let count = || mcp_tasks_engine::RecordStore::count(&*store, &owner);
    assert_eq!(count().await.unwrap(), 2_500);
    clock.advance(Duration::from_secs(3_600));

    // One tick (the first comes at once), then none for an hour.
    let shutdown = tokio_util::sync::CancellationToken::new();
    let sweeper = engine.spawn_sweeper(Duration::from_secs(3_600), shutdown.clone());
    timeout(WAIT, async {
        while count().await.unwrap() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("every expired task is purged at the first tick");
    shutdown.cancel();
    sweeper.await.unwrap();
}

#[tokio::test]
async fn a_stale_attempt_cannot_complete_a_task_and_nothing_completes_twice() {
    let mut f = fixture(RestartPolicy::Retry, true);
    let owner = Principal::new("a");
    let task = f.engine.create(new_task("a", None)).await.unwrap();
    f.engine.start(&task).unwrap();
    assert_eq!(f.started.recv().await, Some(1));
    // As if the first runner's process had died: recovery gives the task attempt 2 and
    // runs it again while attempt 1 is (here) still alive.
    let recovery = f.engine.recover().await.unwrap();
    assert_eq!(recovery.retried, 1);
    assert_eq!(f.started.recv().await, Some(2));

    let mut feed = f.engine.subscribe();
    f.release.notify_one(); // one of the two attempts finishes
    f.release.notify_one(); // then the other
    let done = timeout(WAIT, f.engine.wait_terminal(&owner, &task.id)).await.unwrap().unwrap();
    assert_eq!(text(&done.state), "attempt 2", "only the current claim may complete the task");
    assert_eq!(done.attempt, 2);
    // Exactly one terminal write reached the feed.
    let mut terminal_writes = 0;
    while let Ok(Ok(change)) = timeout(Duration::from_millis(300), feed.recv()).await {
        if let mcp_tasks_engine::Change::Task(record) = change {
            terminal_writes += usize::from(record.status().is_terminal());
        }
    }
    assert_eq!(terminal_writes, 1);
}

#[tokio::test]
async fn legacy_25_a_cancelled_task_stays_cancelled_when_its_work_completes_later() {
    let mut f = fixture(RestartPolicy::Fail, true);
    let owner = Principal::new("a");
    let task = f.engine.create(new_task("a", None)).await.unwrap();
    f.engine.start(&task).unwrap();
    f.started.recv().await.unwrap();
    let cancelled = f.engine.cancel(&owner, &task.id).await.unwrap();
    assert_eq!(cancelled.status(), Status::Cancelled, "legacy_70: cancelled before cancel returns");
    let mut feed = f.engine.subscribe();
    f.release.notify_one();
    // The late completion is refused: no further write.
    assert!(timeout(Duration::from_millis(300), feed.recv()).await.is_err(), "no write after cancel");
    assert_eq!(f.engine.get(&owner, &task.id).await.unwrap().status(), Status::Cancelled);
    let again = f.engine.cancel(&owner, &task.id).await.unwrap_err();
    assert!(matches!(again, EngineError::Refused { from: Status::Cancelled, .. }), "{again:?}");
}

#[tokio::test]
async fn legacy_82_83_another_principals_task_is_not_found_and_not_listed() {
    let f = fixture(RestartPolicy::Fail, false);
    let alice = Principal::new("alice");
    let mallory = Principal::new("mallory");
    let task = f.engine.create(new_task("alice", None)).await.unwrap();
    for result in [
        f.engine.get(&mallory, &task.id).await,
        f.engine.cancel(&mallory, &task.id).await,
        f.engine.wait_terminal(&mallory, &task.id).await,
    ] {
        assert!(matches!(result, Err(EngineError::NotFound(_))), "{result:?}");
    }
    let listed = f.engine.list(&ListQuery { owner: mallory, after: None, limit: 10 }).await.unwrap();
    assert!(listed.is_empty());
    let listed = f.engine.list(&ListQuery { owner: alice.clone(), after: None, limit: 10 }).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(f.engine.get(&alice, &task.id).await.unwrap().status(), Status::Working);
}

#[tokio::test]
async fn restart_policy_fail_marks_interrupted_tasks_failed_with_the_restart_error() {
    let f = fixture(RestartPolicy::Fail, false);
    let owner = Principal::new("a");
    let task = f.engine.create(new_task("a", None)).await.unwrap(); // never started: as if the process died
    let recovery = f.engine.recover().await.unwrap();
    assert_eq!((recovery.failed, recovery.retried), (1, 0));
    let failed = f.engine.get(&owner, &task.id).await.unwrap();
    assert_eq!(failed.state, TaskState::Failed { outcome: Outcome::Failure(WorkError::InterruptedByRestart) });
    assert!(failed.status_message.unwrap().contains("interrupted by a server restart"));
}

#[tokio::test]
async fn a_tool_result_with_is_error_fails_the_task_only_when_the_dialect_says_so() {
    struct Erring;
    #[async_trait]
    impl Handler for Erring {
        async fn call(&self, _arguments: Value, _ctx: Context) -> Outcome {
            Outcome::Result(json!({"content": [{"type": "text", "text": "bad input"}], "isError": true}))
        }
        fn reported_failure(&self, result: &Value) -> Option<String> {
            (result["isError"] == true).then(|| result["content"][0]["text"].as_str().unwrap_or_default().to_owned())
        }
    }
    let f = fixture(RestartPolicy::Fail, false);
    f.engine.register("erring", ToolRuntime::new(Erring).on_restart(RestartPolicy::Fail));
    let owner = Principal::new("a");
    for (fails, expected) in [(true, Status::Failed), (false, Status::Completed)] {
        let new = NewTask { tool: "erring".into(), error_result_fails: fails, ..new_task("a", None) };
        let task = f.engine.create(new).await.unwrap();
        f.engine.start(&task).unwrap();
        let done = timeout(WAIT, f.engine.wait_terminal(&owner, &task.id)).await.unwrap().unwrap();
        assert_eq!(done.status(), expected);
        assert_eq!(done.state.outcome().map(|o| matches!(o, Outcome::Result(_))), Some(true), "the result is kept either way");
        if fails {
            assert_eq!(done.status_message.as_deref(), Some("The tool reported an error: bad input"));
        }
    }
}

/// Asks once for input through the context and completes with the answer it got.
struct Asker {
    asked: mpsc::UnboundedSender<()>,
}

#[async_trait]
impl Handler for Asker {
    async fn call(&self, _arguments: Value, ctx: Context) -> Outcome {
        let _ = self.asked.send(());
        match ctx.elicit(json!({"message": "Proceed?", "requestedSchema": {"type": "object", "properties": {}}})).await {
            Ok(answer) => Outcome::Result(json!({"content": [{"type": "text", "text": answer.to_string()}]})),
            Err(error) => error.into(),
        }
    }
}

fn asker(f: &Fixture) -> mpsc::UnboundedReceiver<()> {
    let (tx, rx) = mpsc::unbounded_channel();
    f.engine.register("asker", ToolRuntime::new(Asker { asked: tx }).on_restart(RestartPolicy::Fail));
    rx
}

async fn wait_for_input(engine: &Engine, owner: &Principal, id: &mcp_tasks_engine::TaskId) -> String {
    let mut feed = engine.subscribe();
    loop {
        let task = engine.get(owner, id).await.unwrap();
        if let TaskState::InputRequired { requests } = &task.state {
            return requests.keys().next().unwrap().clone();
        }
        timeout(WAIT, feed.recv()).await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn legacy_33_36_input_goes_working_input_required_working_completed_and_applies_once() {
    let f = fixture(RestartPolicy::Fail, false);
    let mut asked = asker(&f);
    let owner = Principal::new("a");
    let task = f.engine.create(NewTask { tool: "asker".into(), ..new_task("a", None) }).await.unwrap();
    let mut feed = f.engine.subscribe();
    f.engine.start(&task).unwrap();
    asked.recv().await.unwrap();
    let key = wait_for_input(&f.engine, &owner, &task.id).await;
    let waiting = f.engine.get(&owner, &task.id).await.unwrap();
    let TaskState::InputRequired { requests } = &waiting.state else { panic!() };
    assert_eq!(requests[&key].kind, InputKind::Elicitation);
    assert_eq!(waiting.status_message.as_deref(), Some("Waiting for the client to answer elicitation"));
    assert_eq!(requests[&key].params["message"], "Proceed?");

    let answer = json!({"action": "accept", "content": {}});
    assert!(f.engine.answer(&owner, &task.id, &key, Ok(answer.clone())).await.unwrap());
    assert!(!f.engine.answer(&owner, &task.id, &key, Ok(json!({"action": "decline"}))).await.unwrap(), "a repeated answer is applied once");
    let done = timeout(WAIT, f.engine.wait_terminal(&owner, &task.id)).await.unwrap().unwrap();
    assert_eq!(text(&done.state), answer.to_string());

    let mut statuses = Vec::new();
    while let Ok(Ok(change)) = timeout(Duration::from_millis(200), feed.recv()).await {
        if let mcp_tasks_engine::Change::Task(record) = change
            && statuses.last() != Some(&record.status())
        {
            statuses.push(record.status());
        }
    }
    assert_eq!(statuses, vec![Status::InputRequired, Status::Working, Status::Completed]);
}

#[tokio::test]
async fn the_commit_of_a_terminal_write_is_remembered_by_the_node_that_wrote_it_only() {
    let f = fixture(RestartPolicy::Fail, false);
    let mut asked = asker(&f);
    let owner = Principal::new("a");
    let task = f.engine.create(NewTask { tool: "asker".into(), ..new_task("a", None) }).await.unwrap();
    assert_eq!(f.engine.committed_at(&task.id), None, "created: not terminal");
    f.engine.start(&task).unwrap();
    asked.recv().await.unwrap();
    let key = wait_for_input(&f.engine, &owner, &task.id).await;
    assert_eq!(f.engine.committed_at(&task.id), None, "input_required: written here, but not terminal");

    let before = Instant::now();
    assert!(f.engine.answer(&owner, &task.id, &key, Ok(json!({"action": "accept", "content": {}}))).await.unwrap());
    let done = timeout(WAIT, f.engine.wait_terminal(&owner, &task.id)).await.unwrap().unwrap();
    let after = Instant::now();
    assert_eq!(done.status(), Status::Completed);
    let committed = f.engine.committed_at(&task.id).expect("the completion was committed here");
    assert!(before <= committed && committed <= after, "between the answer and the completion's arrival");
    assert_eq!(f.engine.committed_at(&mcp_tasks_engine::TaskId::from("no-such-task")), None);
}

#[tokio::test]
async fn a_terminal_record_heard_on_the_stores_feed_has_no_commit_instant_here() {
    let store: Arc<dyn mcp_tasks_engine::TaskStore> = Arc::new(MemoryStore::new());
    let policy = Policy::default();
    let writer = Engine::new(Arc::clone(&store), Arc::new(mcp_tasks_engine::SystemClock), policy);
    let listener = Engine::new(store, Arc::new(mcp_tasks_engine::SystemClock), policy);
    let (started, _) = mpsc::unbounded_channel();
    let gate = Gate { release: Arc::new(Notify::new()), started, ignore_cancel: false };
    writer.register("gate", ToolRuntime::new(gate));
    let owner = Principal::new("a");
    let task = writer.create(new_task("a", None)).await.unwrap();
    // What the listener publishes of the task (the feed's records, once it has noted them).
    let heard = listener.watch_task(&task.id);
    writer.cancel(&owner, &task.id).await.unwrap();
    timeout(WAIT, async {
        while !heard.next_task().await.expect("no lag").status().is_terminal() {}
    })
    .await
    .expect("the listener hears the cancel on the store's feed");
    assert!(writer.committed_at(&task.id).is_some(), "the writer committed it");
    assert_eq!(listener.committed_at(&task.id), None, "the listener only heard of it");
}

#[tokio::test]
async fn asking_for_input_the_requestor_cannot_give_fails_at_once_instead_of_hanging() {
    let f = fixture(RestartPolicy::Fail, false);
    let mut asked = asker(&f);
    let owner = Principal::new("a");
    let new = NewTask { tool: "asker".into(), input_kinds: vec![InputKind::Sampling], ..new_task("a", None) };
    let task = f.engine.create(new).await.unwrap();
    f.engine.start(&task).unwrap();
    asked.recv().await.unwrap();
    let done = timeout(WAIT, f.engine.wait_terminal(&owner, &task.id)).await.unwrap().unwrap();
    let TaskState::Failed { outcome: Outcome::Failure(failure) } = &done.state else { panic!("{:?}", done.state) };
    assert!(failure.to_string().contains("did not declare"), "{failure}");
    assert_eq!(
        failure.to_string(),
        "cannot ask the client for input with elicitation: the client did not declare that capability when it \
         created this task"
    );
}

#[tokio::test]
async fn cancelling_a_task_that_waits_for_input_ends_it_cancelled_and_stops_the_work() {
    let f = fixture(RestartPolicy::Fail, false);
    let mut asked = asker(&f);
    let owner = Principal::new("a");
    let task = f.engine.create(NewTask { tool: "asker".into(), ..new_task("a", None) }).await.unwrap();
    f.engine.start(&task).unwrap();
    asked.recv().await.unwrap();
    let key = wait_for_input(&f.engine, &owner, &task.id).await;
    let cancelled = f.engine.cancel(&owner, &task.id).await.unwrap();
    assert_eq!(cancelled.status(), Status::Cancelled);
    assert!(!f.engine.answer(&owner, &task.id, &key, Ok(json!({"action": "accept"}))).await.unwrap());
    assert_eq!(f.engine.get(&owner, &task.id).await.unwrap().status(), Status::Cancelled);
}
