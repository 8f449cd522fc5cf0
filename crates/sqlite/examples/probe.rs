//! Times what the server asks of the store, on a store as it is (say, seeded with a million
//! finished tasks by the `seed` example): opening it, `get` of random tasks, `list` pages
//! (the first, and one resumed from a cursor in the middle), `count` (checked on every
//! creation), `unfinished` (restart recovery), `expired` and `purge` (the sweeper).
//!
//! ```text
//! cargo run --release -p mcp-tasks-sqlite --example probe -- --store PATH [--principal P] [--rounds N]
//! ```
//!
//! Prints one JSON object to stdout: microseconds per call (p50, p99, max over `N` rounds,
//! default 200), the process's RSS, and `sample_id`, one task of the principal (for a
//! `tasks/get` over HTTP; `null` on an empty store, where `get` looks up absent ids). Read-only except for `purge`, which deletes only tasks past their
//! expiry (none, on a freshly seeded store).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use mcp_tasks_engine::{Cursor, ListQuery, Principal, RecordStore, TaskId, Timestamp};
use mcp_tasks_sqlite::SqliteStore;
use serde_json::{Value, json};

/// Tasks per `list` page, as the server asks (a page of 100 and one to know there is more).
const PAGE: u32 = 101;

fn parse() -> Result<(PathBuf, String, usize), String> {
    let (mut store, mut principal, mut rounds) = (None, "anonymous".to_owned(), 200);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().ok_or_else(|| format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--store" => store = Some(PathBuf::from(value)),
            "--principal" => principal = value,
            "--rounds" => rounds = value.parse().map_err(|err| format!("--rounds: {err}"))?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok((
        store.ok_or("--store PATH is required")?,
        principal,
        rounds.max(1),
    ))
}

/// p50, p99 and max of `samples` (µs), as JSON.
fn percentiles(mut samples: Vec<u128>) -> Value {
    samples.sort_unstable();
    let at = |q: f64| {
        let index = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples.get(index).copied().unwrap_or(0)
    };
    json!({"p50_us": at(0.5), "p99_us": at(0.99), "max_us": at(1.0)})
}

/// Runs `f` `rounds` times, returning the percentiles of its wall time in µs.
async fn time<F, Fut, T>(rounds: usize, mut f: F) -> Result<Value, String>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<T, mcp_tasks_engine::StoreError>>,
{
    let mut samples = Vec::with_capacity(rounds);
    for n in 0..rounds {
        let start = Instant::now();
        f(n).await.map_err(|err| err.to_string())?;
        samples.push(start.elapsed().as_micros());
    }
    Ok(percentiles(samples))
}

/// This process's resident set size, KiB (Linux).
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

async fn probe(path: PathBuf, principal: String, rounds: usize) -> Result<Value, String> {
    let start = Instant::now();
    let store = SqliteStore::open(&path).map_err(|err| err.to_string())?;
    let open_us = start.elapsed().as_micros();
    let owner = Principal::new(principal);
    let count = store.count(&owner).await.map_err(|err| err.to_string())?;

    // Ids to get: a first page and a page from the middle of the owner's tasks (a cursor
    // made of a creation time halfway between the oldest and now).
    let first = store
        .list(&ListQuery {
            owner: owner.clone(),
            after: None,
            limit: PAGE,
        })
        .await
        .map_err(|err| err.to_string())?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        });
    let oldest = first.first().map_or(now, |task| task.created_at.0);
    let middle = Cursor {
        created_at: Timestamp(oldest + (now - oldest) / 2),
        id: TaskId::from(""),
    };
    let mut ids: Vec<_> = first.iter().map(|task| task.id.clone()).collect();
    let deep = store
        .list(&ListQuery {
            owner: owner.clone(),
            after: Some(middle.clone()),
            limit: PAGE,
        })
        .await
        .map_err(|err| err.to_string())?;
    ids.extend(deep.iter().map(|task| task.id.clone()));
    let sample_id = deep
        .first()
        .or(first.first())
        .map(|task| task.id.as_str().to_owned());
    if ids.is_empty() {
        // An empty store: time the lookup of ids that are not there.
        ids.extend((0..16).map(|_| TaskId::random()));
    }

    let get = time(rounds, |n| store.get(&ids[n % ids.len()])).await?;
    let first_page = ListQuery {
        owner: owner.clone(),
        after: None,
        limit: PAGE,
    };
    let middle_page = ListQuery {
        after: Some(middle),
        ..first_page.clone()
    };
    let list_first = time(rounds, |_| store.list(&first_page)).await?;
    let list_middle = time(rounds, |_| store.list(&middle_page)).await?;
    let count_us = time(rounds, |_| store.count(&owner)).await?;
    let unfinished = time(rounds.min(20), |_| store.unfinished(u32::MAX)).await?;
    let expired = time(rounds.min(20), |_| store.expired(Timestamp(now), 1000)).await?;
    let purge = time(rounds.min(20), |_| store.purge(Timestamp(now), 1000)).await?;
    Ok(json!({
        "store": path.display().to_string(),
        "principal": owner.as_str(),
        "tasks_of_principal": count,
        "open_us": open_us,
        "get": get,
        "list_first_page": list_first,
        "list_middle_page": list_middle,
        "count": count_us,
        "unfinished": unfinished,
        "expired": expired,
        "purge": purge,
        "rss_kib": rss_kib(),
        "sample_id": sample_id,
    }))
}

#[tokio::main]
async fn main() -> ExitCode {
    let (path, principal, rounds) = match parse() {
        Ok(args) => args,
        Err(err) => {
            eprintln!("probe: {err}\nusage: probe --store PATH [--principal P] [--rounds N]");
            return ExitCode::from(2);
        }
    };
    match probe(path, principal, rounds).await {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("probe: {err}");
            ExitCode::FAILURE
        }
    }
}
