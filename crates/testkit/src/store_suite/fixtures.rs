//! The data the store suite's cases work on: sample tasks, one in every state, and small
//! builders, plus [`StoreFixture`], what a suite constructor yields.

use std::sync::Arc;

use serde_json::json;

use mcp_tasks_engine::{
    ErrorObject, IdempotencyKey, InputKind, InputRequest, InputRequests, Inserted, Lease, ListQuery, NodeId, Outcome,
    Principal, SessionStore, TaskId, TaskRecord, TaskState, TaskStore, Timestamp, TraceContext, Version, WorkError,
};

/// The creation time of [`sample_task`]: 2025-11-25T00:00:00.123Z, with milliseconds so
/// that a store that drops them fails the round trip.
pub const T0: Timestamp = Timestamp(1_764_028_800_123);

/// The TTL of [`sample_task`]: one minute.
pub const TTL_MS: u64 = 60_000;

/// What a [`store_suite!`](crate::store_suite!) constructor yields: the store under test,
/// possibly with things that must live as long as it does.
pub trait StoreFixture: Send {
    /// The store under test.
    fn store(&self) -> Arc<dyn TaskStore>;

    /// A second handle on the same database, for the cases of many nodes on one store
    /// (`store_suite::claims`, `store_suite::feed`): another connection pool for PostgreSQL,
    /// another handle sharing nothing but the file for SQLite. By default the same handle: a
    /// store one process owns (the memory store) is one handle.
    fn second(&self) -> Arc<dyn TaskStore> {
        self.store()
    }

    /// The store under test as the HTTP transport holds it, for its session records.
    fn sessions(&self) -> Arc<dyn SessionStore>;

    /// [`StoreFixture::second`] as the HTTP transport holds it.
    fn second_sessions(&self) -> Arc<dyn SessionStore> {
        self.sessions()
    }
}

/// Two handles on one database and a guard that lives as long as they do: the fixture of a
/// shared store.
pub struct Handles<S, G> {
    /// The first handle ([`StoreFixture::store`]).
    pub first: Arc<S>,
    /// The second handle ([`StoreFixture::second`]).
    pub second: Arc<S>,
    /// Dropped after both handles.
    pub guard: G,
}

impl<S: TaskStore + SessionStore, G: Send> StoreFixture for Handles<S, G> {
    fn store(&self) -> Arc<dyn TaskStore> {
        Arc::clone(&self.first) as Arc<dyn TaskStore>
    }

    fn second(&self) -> Arc<dyn TaskStore> {
        Arc::clone(&self.second) as Arc<dyn TaskStore>
    }

    fn sessions(&self) -> Arc<dyn SessionStore> {
        Arc::clone(&self.first) as Arc<dyn SessionStore>
    }

    fn second_sessions(&self) -> Arc<dyn SessionStore> {
        Arc::clone(&self.second) as Arc<dyn SessionStore>
    }
}

impl<S: TaskStore + SessionStore> StoreFixture for Arc<S> {
    fn store(&self) -> Arc<dyn TaskStore> {
        Arc::clone(self) as Arc<dyn TaskStore>
    }

    fn sessions(&self) -> Arc<dyn SessionStore> {
        Arc::clone(self) as Arc<dyn SessionStore>
    }
}

impl<S: TaskStore + SessionStore, G: Send> StoreFixture for (Arc<S>, G) {
    /// The store; the guard `G` stays alive beside it until the fixture is dropped.
    fn store(&self) -> Arc<dyn TaskStore> {
        Arc::clone(&self.0) as Arc<dyn TaskStore>
    }

    fn sessions(&self) -> Arc<dyn SessionStore> {
        Arc::clone(&self.0) as Arc<dyn SessionStore>
    }
}

/// A fresh `working` task of `owner` with a random id, created at [`T0`] with a TTL of
/// [`TTL_MS`], a poll interval, attempt 1 and version 1.
pub fn sample_task(owner: &str) -> TaskRecord {
    TaskRecord {
        id: TaskId::random(),
        owner: Principal::new(owner),
        tool: "echo".to_owned(),
        arguments: json!({"text": "hello", "times": 2, "nested": {"list": [1, "two", null, true]}}),
        state: TaskState::Working,
        status_message: None,
        created_at: T0,
        updated_at: T0,
        ttl_ms: Some(TTL_MS),
        poll_interval_ms: Some(1_000),
        attempt: 1,
        version: Version(1),
        error_result_fails: false,
        input_kinds: vec![InputKind::Elicitation, InputKind::Sampling],
        idempotency_key: None,
        trace: None,
    }
}

/// One task in each state the engine can store, with every optional field set on some.
pub(crate) fn tasks_in_every_state() -> Vec<TaskRecord> {
    let mut requests = InputRequests::new();
    requests.insert(
        "q1".to_owned(),
        InputRequest {
            kind: InputKind::Elicitation,
            params: json!({"message": "Which file?", "requestedSchema": {"type": "object"}}),
        },
    );
    let states = vec![
        TaskState::Working,
        TaskState::InputRequired { requests },
        TaskState::Completed {
            result: json!({"content": [{"type": "text", "text": "done"}], "isError": false}),
        },
        TaskState::Failed {
            outcome: Outcome::Result(
                json!({"content": [{"type": "text", "text": "no"}], "isError": true}),
            ),
        },
        TaskState::Failed {
            outcome: Outcome::Error(ErrorObject {
                code: -32000,
                message: "the tool broke".to_owned(),
                data: Some(json!({"retry": false})),
            }),
        },
        TaskState::Failed {
            outcome: Outcome::Error(ErrorObject {
                code: -32603,
                message: "no data".to_owned(),
                data: None,
            }),
        },
        TaskState::Failed {
            outcome: Outcome::Failure(WorkError::InterruptedRepeatedly {
                times: 2,
                max_attempts: 3,
            }),
        },
        TaskState::Failed {
            outcome: Outcome::Failure(WorkError::Expired),
        },
        TaskState::Cancelled,
    ];
    states
        .into_iter()
        .enumerate()
        .map(|(i, state)| {
            let mut task = sample_task("alice");
            let i = i64::try_from(i).unwrap_or_default();
            task.state = state;
            task.created_at = Timestamp(T0.0 + i);
            task.updated_at = Timestamp(T0.0 + 1_000 + i);
            task.attempt = 3;
            task.version = Version(7);
            task.error_result_fails = i % 2 == 0;
            if i % 3 == 0 {
                task.input_kinds.clear();
            }
            // A trace context with and without its tracestate, and none.
            task.trace = match i % 3 {
                0 => TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Some("rojo=1,congo=t61rcWkgMzE")),
                1 => TraceContext::parse(&format!("00-0af7651916cd43dd8448eb211c80319{i}-b7ad6b7169203331-00"), None),
                _ => None,
            };
            if i % 2 == 0 {
                task.idempotency_key = Some(IdempotencyKey::new(format!("key {i}: ünïcödé")));
                task.status_message = Some(format!("message {i}: ünïcödé 'quotes' \"and\" more"));
            } else {
                task.ttl_ms = None;
                task.poll_interval_ms = None;
            }
            task
        })
        .collect()
}

/// Inserts every task of `tasks`.
pub(crate) async fn insert_all(store: &dyn TaskStore, tasks: &[TaskRecord]) {
    for task in tasks {
        store.insert(task).await.expect("insert succeeds");
    }
}

/// A list query for `owner`'s first page.
pub(crate) fn first_page(owner: &str, limit: u32) -> ListQuery {
    ListQuery {
        owner: Principal::new(owner),
        after: None,
        limit,
    }
}

/// The ids of `tasks`, in order.
pub(crate) fn ids(tasks: &[TaskRecord]) -> Vec<TaskId> {
    tasks.iter().map(|task| task.id.clone()).collect()
}

/// A task of `owner` in `state`, created (and last updated) at `created_at`, with `ttl_ms`.
pub(crate) fn task_at(owner: &str, created_at: i64, ttl_ms: Option<u64>, state: TaskState) -> TaskRecord {
    let mut task = sample_task(owner);
    task.created_at = Timestamp(created_at);
    task.updated_at = Timestamp(created_at);
    task.ttl_ms = ttl_ms;
    task.state = state;
    task
}

pub(crate) fn completed() -> TaskState {
    TaskState::Completed {
        result: json!({"content": []}),
    }
}

pub(crate) fn failed() -> TaskState {
    TaskState::Failed {
        outcome: Outcome::Failure(WorkError::Expired),
    }
}

pub(crate) fn input_required() -> TaskState {
    TaskState::InputRequired {
        requests: InputRequests::new(),
    }
}

/// A lease of `node` lapsing `ms` after [`T0`].
pub(crate) fn lease(node: &NodeId, ms: i64) -> Lease {
    Lease {
        node: node.clone(),
        until: Timestamp(T0.0 + ms),
    }
}

/// `T0` plus `ms`.
pub(crate) fn at(ms: i64) -> Timestamp {
    Timestamp(T0.0 + ms)
}

/// Inserts `task` claimed by `lease`, with room for it.
pub(crate) async fn insert_claimed(store: &dyn TaskStore, task: &TaskRecord, lease: &Lease) {
    let inserted = store
        .insert_claimed(task, lease, u64::MAX, None)
        .await
        .expect("the claimed insert succeeds");
    assert_eq!(inserted, Inserted::New);
}
