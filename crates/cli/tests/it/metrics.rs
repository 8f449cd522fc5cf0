//! `/metrics` of the real binary across a restart: what the recovery at start-up did with
//! the previous run's unfinished tasks (one failed, one retried), the retried task finishing
//! with `era="unknown"`, and counts that start from zero in each process.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::Workdir;
use crate::http::{Client, HttpServer};
use crate::http_peer;

/// The sample lines (not comments) of `/metrics` whose series is `name`.
fn series(body: &str, name: &str) -> Vec<String> {
    let mut lines: Vec<String> = body
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter(|line| line.split(['{', ' ']).next() == Some(name))
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

fn metrics(server: &HttpServer) -> String {
    let reply = http_peer::request_to(server.addr, "GET", "/metrics", &[], None);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.header("content-type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    reply.body
}

#[test]
fn metrics_after_a_restart_count_what_recovery_did_and_the_retried_task_finishing() {
    let work = Workdir::new();
    let marker = work.path("first-run-marker");
    let mut server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize();
    client.result("tools/call", json!({"name": "slow", "arguments": {"seconds": 60}, "task": {}}));
    client.result("tools/call", json!({"name": "retry_job", "arguments": {"marker": marker.to_str().unwrap()}, "task": {}}));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the first run of retry_job never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = metrics(&server);
    assert_eq!(series(&before, "mcp_tasks_tasks_created_total"), [
        r#"mcp_tasks_tasks_created_total{tool="retry_job",era="2025-11-25"} 1"#,
        r#"mcp_tasks_tasks_created_total{tool="slow",era="2025-11-25"} 1"#,
    ]);
    let running = series(&before, "mcp_tasks_tasks_running");
    assert!(running.contains(&r#"mcp_tasks_tasks_running{tool="slow"} 1"#.to_owned()), "{running:?}");
    assert!(running.contains(&r#"mcp_tasks_tasks_running{tool="retry_job"} 1"#.to_owned()), "{running:?}");
    server.kill();

    let server = HttpServer::start(&work);
    // `slow` is failed by recovery (not counted as finished here); `retry_job` runs again
    // and completes, its era unknown to this process. Scrape until it has (bounded).
    let deadline = Instant::now() + Duration::from_secs(20);
    let after = loop {
        let body = metrics(&server);
        if !series(&body, "mcp_tasks_tasks_finished_total").is_empty() {
            break body;
        }
        assert!(Instant::now() < deadline, "the retried task never finished:\n{body}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(series(&after, "mcp_tasks_tasks_recovered_total"), [
        r#"mcp_tasks_tasks_recovered_total{outcome="failed"} 1"#,
        r#"mcp_tasks_tasks_recovered_total{outcome="retried"} 1"#,
        r#"mcp_tasks_tasks_recovered_total{outcome="skipped"} 0"#,
    ]);
    assert_eq!(series(&after, "mcp_tasks_tasks_finished_total"), [
        r#"mcp_tasks_tasks_finished_total{tool="retry_job",era="unknown",status="completed"} 1"#,
    ]);
    assert!(series(&after, "mcp_tasks_tasks_created_total").is_empty(), "a new process counts from zero:\n{after}");
    let running = series(&after, "mcp_tasks_tasks_running");
    assert!(running.iter().all(|line| line.ends_with(" 0")), "nothing runs any more: {running:?}");
    assert!(running.contains(&r#"mcp_tasks_tasks_running{tool="slow"} 0"#.to_owned()), "every tool listed: {running:?}");
}

/// The one value of an unlabelled sample line `name VALUE`.
fn value(body: &str, name: &str) -> f64 {
    let lines = series(body, name);
    assert_eq!(lines.len(), 1, "{name}: {lines:?}");
    lines[0].rsplit(' ').next().unwrap().parse().unwrap()
}

/// Five `echo` task lifecycles (each a creation and a completion), then `/metrics`.
fn five_tasks_then_metrics(server: &HttpServer) -> String {
    let mut client = Client::new(server, None);
    client.initialize();
    for n in 0..5 {
        client.echo_task(&format!("n{n}"));
    }
    metrics(server)
}

#[test]
fn store_commit_metrics_observe_every_transaction_of_the_sqlite_writer() {
    let work = Workdir::new();
    let server = HttpServer::start(&work);
    let body = five_tasks_then_metrics(&server);
    let (commits, timed) = (value(&body, "mcp_tasks_store_commit_writes_count"), value(&body, "mcp_tasks_store_commit_seconds_count"));
    assert_eq!(commits, timed, "each transaction is timed once and sized once");
    // Five inserts and five completions at least (status messages and process groups come on top).
    let writes = value(&body, "mcp_tasks_store_commit_writes_sum");
    assert!(writes >= 10.0 && writes >= commits && commits >= 1.0, "writes {writes}, commits {commits}:\n{body}");
    assert!(value(&body, "mcp_tasks_store_commit_seconds_sum") > 0.0);
    assert_eq!(value(&body, "mcp_tasks_store_commit_failures_total"), 0.0);
    let buckets = series(&body, "mcp_tasks_store_commit_seconds_bucket");
    assert!(buckets.iter().any(|line| line.contains(r#"le="+Inf""#) && line.ends_with(&format!(" {commits}"))), "{buckets:?}");
}

#[test]
fn store_commit_metrics_observe_every_write_on_postgres() {
    let Some(server_url) = crate::postgres::database_url() else { return };
    let schema = crate::postgres::Schema::create(&server_url);
    let work = Workdir::new();
    let store = schema.url();
    let server = HttpServer::start_on(&work, store.as_ref(), &[]);
    let body = five_tasks_then_metrics(&server);
    let (commits, timed) = (value(&body, "mcp_tasks_store_commit_writes_count"), value(&body, "mcp_tasks_store_commit_seconds_count"));
    assert_eq!(commits, timed, "each write is timed once and sized once");
    // Five inserts and five completions at least; made one after another, each PostgreSQL
    // write goes alone (a group of one).
    let writes = value(&body, "mcp_tasks_store_commit_writes_sum");
    assert!(writes >= 10.0 && writes == commits, "writes {writes}, commits {commits}:\n{body}");
    assert!(value(&body, "mcp_tasks_store_commit_seconds_sum") > 0.0);
    assert_eq!(value(&body, "mcp_tasks_store_commit_failures_total"), 0.0);
    let sizes = series(&body, "mcp_tasks_store_commit_writes_bucket");
    assert!(sizes.iter().any(|line| line.contains(r#"le="1""#) && line.ends_with(&format!(" {commits}"))), "{sizes:?}");
}
