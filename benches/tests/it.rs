//! The load harness against the bench server, both in this process: a temporary SQLite store,
//! an ephemeral port, 100 calls from 4 sessions in each mode, every result checked; the
//! Modern lifecycle against a bench server whose calls are tasks at once (inline wait 0), and
//! refused as "not a task" against one that answers inline. Every run scrapes the server's
//! `/metrics` around it, for its own lag from commit to a waiting `tasks/result`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use mcp_tasks_bench::load::{self, Config, Mode, Report, Tool};
use mcp_tasks_bench::server::Settings;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// Serves the bench server on a fresh store and runs `runs` against it.
async fn against_bench_server(runs: &[(Mode, Tool, bool)]) -> Vec<Report> {
    against(Settings::default(), runs).await
}

/// A bench server with `settings` on a fresh store, on an ephemeral port of 127.0.0.1.
struct Serving {
    /// Its MCP endpoint.
    url: String,
    /// Its `/metrics`.
    metrics: String,
    stop: oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), String>>,
    _dir: tempfile::TempDir,
}

impl Serving {
    async fn start(settings: Settings) -> Serving {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("bench.sqlite3");
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            mcp_tasks_bench::server::serve(listener, &store, settings, || {}, async {
                let _ = stopped.await;
            })
            .await
            .map_err(|err| err.to_string())
        });
        Serving { url: format!("http://{addr}/mcp"), metrics: format!("http://{addr}/metrics"), stop, server, _dir: dir }
    }

    /// Stops the server and waits for it; it must have served without an error.
    async fn stop(self) {
        self.stop.send(()).unwrap();
        self.server.await.unwrap().unwrap();
    }
}

/// Serves the bench server with `settings` on a fresh store and runs `runs` against it.
async fn against(settings: Settings, runs: &[(Mode, Tool, bool)]) -> Vec<Report> {
    let serving = Serving::start(settings).await;
    let mut reports = Vec::new();
    for &(mode, tool, json_only) in runs {
        let config = Config {
            url: serving.url.clone(),
            tasks: tasks_of(tool),
            concurrency: 4,
            mode,
            tool,
            server_pid: Some(std::process::id()),
            json_only,
            metrics_url: Some(serving.metrics.clone()),
            samples: None,
        };
        let report = tokio::time::timeout(Duration::from_secs(60), load::run(config))
            .await
            .expect("the run took over 60 s")
            .unwrap();
        reports.push(report);
    }
    serving.stop().await;
    reports
}

/// How many tasks a run of `tool` makes: 100, or 20 of a sleep of a second or more (so
/// that the run stays short).
fn tasks_of(tool: Tool) -> usize {
    match tool {
        Tool::Sleep(ms) if ms >= 1_000 => 20,
        _ => 100,
    }
}

fn assert_all_checked(report: &Report) {
    assert_eq!(
        (report.ok, report.failures),
        (tasks_of(report.config.tool), 0),
        "{} {:?}: first failure {:?}",
        report.config.mode.name(),
        report.config.tool,
        report.first_failure
    );
    let e2e = report.end_to_end.expect("end-to-end latencies");
    assert!(e2e.p50 > 0 && e2e.p50 <= e2e.p99 && e2e.p99 <= e2e.max);
    assert!(report.per_second() > 0.0);
    assert!(
        report.peak_rss_kib.is_some_and(|peak| peak > 0),
        "RSS read from /proc"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mode_checks_every_result_against_the_bench_server() {
    let runs = [
        (Mode::Poll, Tool::Noop, false),
        (Mode::Block, Tool::Noop, false),
        (Mode::Plain, Tool::Noop, false),
        (Mode::Block, Tool::Sleep(2), false),
        (Mode::Poll, Tool::Sleep(2), false),
        (Mode::Plain, Tool::Sleep(2), false),
        // JSON answers only (no SSE).
        (Mode::Block, Tool::Noop, true),
        (Mode::Plain, Tool::Noop, true),
        // Long enough that every tasks/result waits for its task, even on a loaded machine
        // (CI runs the suites side by side: 50 ms, then 400 ms, once let one come late).
        (Mode::Block, Tool::Sleep(2_000), false),
    ];
    let reports = against_bench_server(&runs).await;
    for report in &reports {
        assert_all_checked(report);
    }
    // Poll mode asks tasks/get at least once per task; the others never.
    assert!(reports[0].gets_per_task.is_some_and(|gets| gets >= 1.0));
    assert!(reports[1].gets_per_task.is_none());
    // The sleep tool's completion time comes back, so the delivery lag is measured; a task
    // takes at least its sleep.
    for report in &reports[3..6] {
        assert!(report.lag.is_some(), "{:?}", report.config.mode);
        assert!(report.end_to_end.unwrap().p50 >= 2_000);
    }
    assert!(reports[0].lag.is_none());
    // The server timed each result from its commit to the waiting tasks/result's answer
    // (scraped around the run: the earlier runs' deliveries are not counted). A poll run's
    // tasks/result finds its task done: no delivery to a waiter.
    let lag = reports[8].lag_from_commit.expect("the server's delivery histogram");
    assert_eq!(lag.count, 20, "every tasks/result waited: {lag:?}");
    assert!(lag.p50_le <= lag.p99_le && lag.p99_le <= 1.0, "{lag:?}");
    assert!((0.0..=1.0).contains(&lag.within_2ms), "{lag:?}");
    assert_eq!(reports[8].json()["lag_from_commit"]["count"], 20);
    assert_eq!(reports[4].lag_from_commit, None, "poll: {:?}", reports[4].lag_from_commit);
    // The JSON report carries the figures the run script reads.
    let json = reports[1].json();
    assert_eq!(json["mode"], "block");
    assert_eq!(json["ok"], 100);
    assert!(json["end_to_end"]["p99_us"].as_u64().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_modern_lifecycle_makes_every_call_a_task_with_no_inline_wait() {
    let at_once = Settings {
        inline_wait: Some(Duration::ZERO),
        early: false,
        ttl_ms: None,
    };
    let runs = [
        (Mode::Modern, Tool::Noop, false),
        (Mode::Modern, Tool::Sleep(2), false),
        (Mode::Modern, Tool::Noop, true),
    ];
    let reports = against(at_once, &runs).await;
    for report in &reports {
        assert_all_checked(report);
        // Every call was a task (else a failure), polled at least once.
        assert!(report.gets_per_task.is_some_and(|gets| gets >= 1.0));
        assert!(report.first_task_id.is_some());
    }
    assert!(reports[1].lag.is_some());
    assert!(reports[1].end_to_end.unwrap().p50 >= 2_000);
    let json = reports[0].json();
    assert_eq!(json["mode"], "modern");
    assert!(json["first_task_id"].as_str().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noop_started_before_its_commit_passes_every_lifecycle_check_in_both_eras() {
    // The bench server as `benches/run.sh` runs it: `noop` declared `start_before_commit`.
    let early = Settings { inline_wait: Some(Duration::ZERO), early: true, ttl_ms: None };
    let runs = [
        (Mode::Poll, Tool::Noop, false),
        (Mode::Block, Tool::Noop, false),
        (Mode::Block, Tool::Noop, true),
        (Mode::Modern, Tool::Noop, false),
    ];
    let reports = against(early, &runs).await;
    for report in &reports {
        assert_all_checked(report);
    }
    assert!(reports[0].gets_per_task.is_some_and(|gets| gets >= 1.0));
    assert!(reports[3].first_task_id.is_some(), "every 2026-07-28 call was a task");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noop_started_before_its_commit_is_still_answered_inline_within_the_inline_wait() {
    // The default inline wait (1 s): the outcome written with the creation is published when
    // the call starts its task, and the call answers it inline, not as a task.
    let early = Settings { inline_wait: None, early: true, ttl_ms: None };
    let reports = against(early, &[(Mode::Modern, Tool::Noop, false)]).await;
    assert_eq!((reports[0].ok, reports[0].failures), (0, 100));
    let first = reports[0].first_failure.as_deref().unwrap_or("");
    assert!(first.contains("not a task"), "{first}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_modern_lifecycle_fails_a_call_answered_inline() {
    // The default inline wait (1 s): noop answers inline, which is not a task lifecycle.
    let reports = against(Settings::default(), &[(Mode::Modern, Tool::Noop, false)]).await;
    assert_eq!((reports[0].ok, reports[0].failures), (0, 100));
    let first = reports[0].first_failure.as_deref().unwrap_or("");
    assert!(first.contains("not a task"), "{first}");
}

#[tokio::test]
async fn a_wrong_url_is_an_error_not_a_report() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let config = Config {
        url: format!("http://{addr}/mcp"),
        tasks: 10,
        concurrency: 2,
        mode: Mode::Plain,
        tool: Tool::Noop,
        server_pid: None,
        json_only: false,
        metrics_url: None,
        samples: None,
    };
    assert!(load::run(config).await.is_err());
    let config = Config {
        url: "https://example.invalid/mcp".to_owned(),
        tasks: 1,
        concurrency: 1,
        mode: Mode::Plain,
        tool: Tool::Noop,
        server_pid: None,
        json_only: false,
        metrics_url: None,
        samples: None,
    };
    assert!(load::run(config).await.is_err());
}

/// Several comma-separated URLs (replicas): client `i` talks to URL `i mod n` (a lone client to
/// the first, whether it answers or not), and endpoints that answer share the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_are_spread_over_every_url_given() {
    let serving = Serving::start(Settings::default()).await;
    let url = serving.url.clone();
    let dead = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let config = |url: String, concurrency| Config {
        url,
        tasks: 100,
        concurrency,
        mode: Mode::Block,
        tool: Tool::Noop,
        server_pid: Some(std::process::id()),
        json_only: false,
        metrics_url: None,
        samples: None,
    };
    // One client: the first URL's. Two: one each.
    let dead = format!("http://{dead_addr}/mcp");
    let Err(err) = load::run(config(format!("{dead},{url}"), 1)).await else { panic!("the first endpoint gets the client") };
    assert!(err.to_string().contains(&dead_addr.to_string()), "{err}");
    assert_all_checked(&load::run(config(format!("{url},{dead}"), 1)).await.unwrap());
    assert_all_checked(&load::run(config(format!("{url},{url}"), 4)).await.unwrap());
    serving.stop().await;
}

/// `Config::samples`: one line per checked call, in the order they ended, after the run's
/// start as Unix time and a header; each call's `tools/call` answer came before its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn samples_are_written_one_line_per_call() {
    let serving = Serving::start(Settings::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("samples.csv");
    let before = mcp_tasks_bench::server::unix_micros();
    let config = Config {
        url: serving.url.clone(),
        tasks: 40,
        concurrency: 4,
        mode: Mode::Block,
        tool: Tool::Noop,
        server_pid: None,
        json_only: false,
        metrics_url: None,
        samples: Some(samples.clone()),
    };
    let report = load::run(config).await.unwrap();
    assert_eq!((report.ok, report.failures), (40, 0), "{:?}", report.first_failure);
    serving.stop().await;
    let text = std::fs::read_to_string(&samples).unwrap();
    let mut lines = text.lines();
    let run_start: u64 = lines.next().unwrap().strip_prefix("# run_start_unix_us=").unwrap().parse().unwrap();
    assert!(run_start >= before, "{run_start} < {before}");
    assert_eq!(lines.next(), Some("start_us,create_us,end_to_end_us"));
    let rows: Vec<[u64; 3]> = lines
        .map(|line| {
            let fields: Vec<u64> = line.split(',').map(|field| field.parse().unwrap()).collect();
            [fields[0], fields[1], fields[2]]
        })
        .collect();
    assert_eq!(rows.len(), 40);
    assert!(rows.iter().all(|[_, create, end]| create <= end), "{rows:?}");
    let ends: Vec<u64> = rows.iter().map(|[start, _, end]| start + end).collect();
    assert!(ends.windows(2).all(|pair| pair[0] <= pair[1] + 1), "{ends:?}");
}
