//! Seeds a task store with finished tasks, fast, through the store API: many inserts in
//! flight at once, which the store's group commit turns into large transactions.
//!
//! ```text
//! cargo run --release -p mcp-tasks-sqlite --example seed -- --store PATH --count 1000000 [--principal P]
//! ```
//!
//! Every task is `completed` with a short text result, belongs to `P` (default
//! `anonymous`: the principal of unauthenticated HTTP requests, so that a benchmark's own
//! principal is the one holding them all), was created in the past (one millisecond apart,
//! the last just now), and expires a week from now, so that a server started on the store
//! keeps every one of them while it is measured. The store is opened with its production
//! settings (`synchronous=FULL`). Prints its progress and the rate to stderr.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use mcp_tasks_engine::{Principal, RecordStore, TaskId, TaskRecord, TaskState, Timestamp, Version};
use mcp_tasks_sqlite::SqliteStore;
use serde_json::json;

/// Inserts in flight at once: enough to fill the store's batches.
const IN_FLIGHT: u64 = 512;
/// How long past now the seeded tasks are kept: a week.
const KEEP_MS: i64 = 7 * 24 * 3_600_000;

struct Args {
    store: PathBuf,
    count: u64,
    principal: String,
}

fn parse() -> Result<Args, String> {
    let (mut store, mut count, mut principal) = (None, None, "anonymous".to_owned());
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().ok_or_else(|| format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--store" => store = Some(PathBuf::from(value)),
            "--count" => count = Some(value.parse().map_err(|err| format!("--count: {err}"))?),
            "--principal" => principal = value,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args {
        store: store.ok_or("--store PATH is required")?,
        count: count.ok_or("--count N is required")?,
        principal,
    })
}

/// The `n`th of `count` seeded tasks, at `now` (ms since the epoch).
fn finished_task(owner: &Principal, n: u64, count: u64, now: i64) -> TaskRecord {
    let age = i64::try_from(count - n).unwrap_or(i64::MAX);
    let created_at = now.saturating_sub(age);
    TaskRecord {
        // The id the server would have given a task made then (time-ordered, as the
        // index pages of a store the server filled).
        id: TaskId::ordered(Timestamp(created_at)),
        owner: owner.clone(),
        tool: "noop".to_owned(),
        arguments: json!({}),
        state: TaskState::Completed {
            result: json!({"content": [{"type": "text", "text": "ok"}], "isError": false}),
        },
        status_message: None,
        created_at: Timestamp(created_at),
        updated_at: Timestamp(created_at),
        ttl_ms: u64::try_from(now + KEEP_MS - created_at).ok(),
        poll_interval_ms: Some(1_000),
        attempt: 1,
        version: Version(2),
        error_result_fails: true,
        input_kinds: Vec::new(),
        idempotency_key: None,
        trace: None,
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(err) => {
            eprintln!("seed: {err}\nusage: seed --store PATH --count N [--principal P]");
            return ExitCode::from(2);
        }
    };
    let store = match SqliteStore::open(&args.store) {
        Ok(store) => Arc::new(store),
        Err(err) => {
            eprintln!("seed: {err}");
            return ExitCode::FAILURE;
        }
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        });
    let owner = Principal::new(args.principal.clone());
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..IN_FLIGHT.min(args.count.max(1)))
        .map(|_| {
            let (store, next, owner) = (Arc::clone(&store), Arc::clone(&next), owner.clone());
            let count = args.count;
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= count {
                        return Ok::<(), mcp_tasks_engine::StoreError>(());
                    }
                    store.insert(&finished_task(&owner, n, count, now)).await?;
                    if (n + 1) % 100_000 == 0 {
                        eprintln!(
                            "seed: {} tasks ({:.1} s)",
                            n + 1,
                            start.elapsed().as_secs_f64()
                        );
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        match worker.await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                eprintln!("seed: {err}");
                return ExitCode::FAILURE;
            }
            Err(err) => {
                eprintln!("seed: a worker failed: {err}");
                return ExitCode::FAILURE;
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let stats = store.write_stats();
    let stored = store.count(&owner).await.unwrap_or(0);
    eprintln!(
        "seed: {} finished tasks of {} in {elapsed:.1} s ({:.0} inserts/s, {} commits, {:.0} writes per commit); {} now holds {stored} tasks of {}",
        args.count,
        args.principal,
        args.count as f64 / elapsed.max(f64::EPSILON),
        stats.commits,
        stats.writes as f64 / stats.commits.max(1) as f64,
        args.store.display(),
        args.principal,
    );
    ExitCode::SUCCESS
}
