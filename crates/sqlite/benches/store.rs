//! Store micro-benchmarks: creates (`insert`) and completions (`replace`, the
//! compare-and-set of a working task to completed) per second on a real SQLite file, one
//! at a time (`serial`) and with 32 writes in flight, for each durability setting:
//! `synchronous=FULL` (production: every commit fsyncs the WAL) and `NORMAL` (comparison
//! only: fsync at checkpoints).
//!
//! ```text
//! cargo bench -p mcp-tasks-sqlite --bench store                        # everything
//! cargo bench -p mcp-tasks-sqlite --bench store -- insert/synchronous=FULL
//! ```
//!
//! Criterion reports time per write and, as throughput, writes per second (`elem/s`). The
//! files live in a fresh temporary directory (`TMPDIR`), so that is the disk measured.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use tempfile::TempDir;
use tokio::runtime::Runtime;

use mcp_tasks_engine::{RecordStore, TaskRecord, TaskState, Timestamp, Update};
use mcp_tasks_sqlite::{SqliteStore, Synchronous};
use mcp_tasks_testkit::store_suite::sample_task;

/// Writes in flight in the concurrent variant: the load a busy server puts on its store.
const IN_FLIGHT: usize = 32;

/// What one measured write does.
#[derive(Clone, Copy)]
enum Op {
    /// Inserts a new working task.
    Insert,
    /// Completes a working task inserted beforehand (outside the measured time).
    Complete,
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime")
}

/// A fresh store in its own temporary directory.
fn fresh(synchronous: Synchronous) -> (Arc<SqliteStore>, TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store =
        SqliteStore::open_with(&dir.path().join("bench.db"), synchronous).expect("the store opens");
    (Arc::new(store), dir)
}

/// The completion written by [`Op::Complete`].
fn completion(task: &TaskRecord) -> Update {
    Update {
        state: TaskState::Completed {
            result: json!({"content": [{"type": "text", "text": "ok"}], "isError": false}),
        },
        status_message: None,
        updated_at: Timestamp(task.created_at.0 + 1),
        attempt: task.attempt,
    }
}

/// Runs `op` on each of `tasks` with `in_flight` writers (each doing its share one after
/// the other), and returns the wall time from the first write to the last answer.
async fn run(
    store: &Arc<SqliteStore>,
    op: Op,
    tasks: Vec<TaskRecord>,
    in_flight: usize,
) -> Duration {
    let mut shares: Vec<Vec<TaskRecord>> = (0..in_flight).map(|_| Vec::new()).collect();
    for (n, task) in tasks.into_iter().enumerate() {
        shares[n % in_flight].push(task);
    }
    let start = Instant::now();
    let writers: Vec<_> = shares
        .into_iter()
        .map(|share| {
            let store = Arc::clone(store);
            tokio::spawn(async move {
                for task in share {
                    match op {
                        Op::Insert => {
                            store.insert(&task).await.expect("insert succeeds");
                        }
                        Op::Complete => {
                            store
                                .replace(&task.id, task.version, &completion(&task))
                                .await
                                .expect("replace succeeds");
                        }
                    }
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("the writer does not panic");
    }
    start.elapsed()
}

/// Inserts `tasks` (untimed set-up of [`Op::Complete`]), many at a time.
async fn seed(store: &Arc<SqliteStore>, tasks: &[TaskRecord]) {
    run(store, Op::Insert, tasks.to_vec(), IN_FLIGHT).await;
}

fn bench_op(c: &mut Criterion, name: &str, op: Op) {
    let rt = runtime();
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(1));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    for synchronous in [Synchronous::Full, Synchronous::Normal] {
        let (store, _dir) = fresh(synchronous);
        let setting = format!("synchronous={}", synchronous.pragma());
        for in_flight in [1, IN_FLIGHT] {
            let variant = if in_flight == 1 {
                "serial".to_owned()
            } else {
                format!("in_flight={in_flight}")
            };
            group.bench_function(BenchmarkId::new(&setting, variant), |b| {
                b.iter_custom(|iters| {
                    let tasks: Vec<_> = (0..iters).map(|_| sample_task("bench")).collect();
                    rt.block_on(async {
                        if let Op::Complete = op {
                            seed(&store, &tasks).await;
                        }
                        run(&store, op, tasks, in_flight).await
                    })
                });
            });
        }
    }
    group.finish();
}

fn inserts(c: &mut Criterion) {
    bench_op(c, "insert", Op::Insert);
}

fn completions(c: &mut Criterion) {
    bench_op(c, "complete", Op::Complete);
}

criterion_group!(benches, inserts, completions);
criterion_main!(benches);
