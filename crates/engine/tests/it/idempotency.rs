//! Exactly-once submission: [`Engine::create_with_key`] makes at most one retained task per
//! owner and idempotency key, however many calls race, and a retry gets the task the first
//! call made.

use std::time::Duration;

use mcp_tasks_engine::{
    Creation, EngineError, IdempotencyKey, LimitExceeded, ListQuery, Policy, Principal, RestartPolicy, Status,
    TaskRecord,
};
use serde_json::json;

use crate::recording::{new_task as numbered, recording};
use crate::{fixture, new_task};

/// A tool that answers at once.
struct Noop;

#[async_trait::async_trait]
impl mcp_tasks_engine::Handler for Noop {
    async fn call(&self, _arguments: serde_json::Value, _ctx: mcp_tasks_engine::Context) -> mcp_tasks_engine::Outcome {
        mcp_tasks_engine::Outcome::Result(json!({"content": []}))
    }
}

fn key(key: &str) -> IdempotencyKey {
    IdempotencyKey::new(key)
}

async fn stored(engine: &mcp_tasks_engine::Engine, owner: &str) -> Vec<TaskRecord> {
    let query = ListQuery { owner: Principal::new(owner), after: None, limit: 100 };
    engine.list(&query).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creations_with_one_key_make_one_task_and_all_get_it() {
    let f = fixture(RestartPolicy::Fail, false);
    let racers: Vec<_> = (0..12)
        .map(|_| {
            let engine = f.engine.clone();
            tokio::spawn(async move { engine.create_with_key(new_task("a", None), key("k1")).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for racer in racers {
        outcomes.push(racer.await.unwrap().unwrap());
    }
    let new: Vec<_> = outcomes.iter().filter(|creation| creation.is_new()).collect();
    assert_eq!(new.len(), 1, "exactly one call creates: {outcomes:?}");
    let id = &new[0].record().id;
    assert!(outcomes.iter().all(|creation| &creation.record().id == id), "every call gets that task");
    let tasks = stored(&f.engine, "a").await;
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].idempotency_key, Some(key("k1")));
}

#[tokio::test]
async fn a_retry_with_the_key_gets_the_task_as_it_stands_and_starts_nothing() {
    let mut f = fixture(RestartPolicy::Fail, false);
    let Creation::New(first) = f.engine.create_with_key(new_task("a", None), key("k")).await.unwrap() else {
        panic!("the first call creates");
    };
    f.engine.start(&first).unwrap();
    f.started.recv().await.unwrap();
    f.release.notify_one();
    let done = tokio::time::timeout(crate::WAIT, f.engine.wait_terminal(&first.owner, &first.id)).await.unwrap().unwrap();
    let again = f.engine.create_with_key(new_task("a", None), key("k")).await.unwrap();
    assert_eq!(again, Creation::Existing(done.clone()), "the finished task, as stored");
    assert_eq!(again.record().status(), Status::Completed);
    assert_eq!(stored(&f.engine, "a").await, vec![done]);
    assert!(f.started.try_recv().is_err(), "no work was started for the retry");
}

#[tokio::test]
async fn the_same_key_from_two_principals_makes_two_tasks() {
    let f = fixture(RestartPolicy::Fail, false);
    let alice = f.engine.create_with_key(new_task("alice", None), key("same")).await.unwrap();
    let bob = f.engine.create_with_key(new_task("bob", None), key("same")).await.unwrap();
    assert!(alice.is_new() && bob.is_new(), "{alice:?} {bob:?}");
    assert_ne!(alice.record().id, bob.record().id);
    // Bob's key, used for another call, is no business of Alice's: she gets her own task.
    let other = mcp_tasks_engine::NewTask { arguments: json!({"x": 1}), ..new_task("bob", None) };
    let bob_other = f.engine.create_with_key(other, key("other")).await.unwrap();
    let alice_other = f.engine.create_with_key(new_task("alice", None), key("other")).await.unwrap();
    assert!(bob_other.is_new() && alice_other.is_new());
    assert_eq!((stored(&f.engine, "alice").await.len(), stored(&f.engine, "bob").await.len()), (2, 2));
}

#[tokio::test]
async fn a_key_used_for_other_arguments_or_another_tool_is_refused_and_creates_nothing() {
    let f = fixture(RestartPolicy::Fail, false);
    f.engine.register("other", mcp_tasks_engine::ToolRuntime::new(Noop));
    f.engine.create_with_key(new_task("a", None), key("k")).await.unwrap();
    let before = stored(&f.engine, "a").await;
    let other_arguments = mcp_tasks_engine::NewTask { arguments: json!({"n": 2}), ..new_task("a", None) };
    let other_tool = mcp_tasks_engine::NewTask { tool: "other".into(), ..new_task("a", None) };
    for call in [other_arguments, other_tool] {
        match f.engine.create_with_key(call, key("k")).await {
            Err(EngineError::KeyReused(reused)) => assert_eq!(reused, key("k")),
            other => panic!("expected KeyReused, got {other:?}"),
        }
    }
    assert_eq!(stored(&f.engine, "a").await, before, "nothing was created");
    // Arguments that differ only in the order of their members are the same call.
    let ordered = mcp_tasks_engine::NewTask { arguments: json!({"a": 1, "b": 2}), ..new_task("a", None) };
    let reordered = mcp_tasks_engine::NewTask { arguments: json!({"b": 2, "a": 1}), ..new_task("a", None) };
    let first = f.engine.create_with_key(ordered, key("ab")).await.unwrap();
    let again = f.engine.create_with_key(reordered, key("ab")).await.unwrap();
    assert_eq!(again, Creation::Existing(first.into_record()));
}

#[tokio::test]
async fn a_key_whose_task_is_past_its_ttl_makes_a_new_task() {
    let f = fixture(RestartPolicy::Fail, false);
    let first = f.engine.create_with_key(new_task("a", Some(10_000)), key("nightly")).await.unwrap();
    f.clock.advance(Duration::from_millis(9_999));
    let retry = f.engine.create_with_key(new_task("a", Some(10_000)), key("nightly")).await.unwrap();
    assert_eq!(retry, Creation::Existing(first.record().clone()), "still retained");
    f.clock.advance(Duration::from_millis(1));
    let next = f.engine.create_with_key(new_task("a", Some(10_000)), key("nightly")).await.unwrap();
    assert!(next.is_new(), "the old task is past its TTL: {next:?}");
    assert_ne!(next.record().id, first.record().id);
}

#[tokio::test]
async fn a_retry_at_the_principals_limits_still_gets_its_task() {
    let policy = Policy { max_running_per_principal: 1, max_retained_per_principal: 1, ..Policy::default() };
    let f = recording(policy, |tool| tool);
    let first = f.engine.create_with_key(numbered("a", 1), key("k")).await.unwrap();
    f.engine.start(first.record()).unwrap();
    let refused = f.engine.create(numbered("a", 2)).await.unwrap_err();
    assert!(matches!(refused, EngineError::Limit(LimitExceeded::RetainedPerPrincipal { .. })), "{refused}");
    let retry = f.engine.create_with_key(numbered("a", 1), key("k")).await.unwrap();
    assert_eq!(retry, Creation::Existing(first.record().clone()));
    let fresh = f.engine.create_with_key(numbered("a", 3), key("k2")).await.unwrap_err();
    assert!(matches!(fresh, EngineError::Limit(_)), "a new key is a new task, under the limits: {fresh}");
}

#[tokio::test]
async fn a_keyed_creation_of_an_unknown_tool_is_refused() {
    let f = fixture(RestartPolicy::Fail, false);
    let unknown = mcp_tasks_engine::NewTask { tool: "nope".into(), ..new_task("a", None) };
    let err = f.engine.create_with_key(unknown, key("k")).await.unwrap_err();
    assert!(matches!(err, EngineError::UnknownTool(ref name) if name == "nope"), "{err}");
}
