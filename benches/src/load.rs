//! The load harness: `N` tool calls from `C` concurrent MCP clients over keep-alive HTTP/1.1
//! (one connection per client), every result checked.
//!
//! In the 2025-11-25 ("Legacy") dialect each worker opens its own session (`initialize`, then
//! `notifications/initialized`; later requests carry `Mcp-Session-Id` and
//! `MCP-Protocol-Version`); in the 2026-07-28 ("Modern") one ([`Mode::Modern`]) there is no
//! session: every request carries the protocol version, client info and the tasks extension
//! in `_meta`, and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers. Workers
//! wait until every one is ready, then take calls from a shared counter until `N` have run.
//! One call is, by [`Mode`]:
//! - [`Mode::Poll`]: `tools/call` with `params.task` (→ `CreateTaskResult`), `tasks/get` in a
//!   loop without pause until the task is terminal, then `tasks/result`;
//! - [`Mode::Block`]: `tools/call` with `params.task`, then `tasks/result`, which blocks
//!   until the task is done;
//! - [`Mode::Plain`]: `tools/call` without a task;
//! - [`Mode::Modern`]: `tools/call` (the server must answer with a task, `resultType:
//!   "task"`), then `tasks/get` in a loop without pause until the task is `completed`, whose
//!   inline `result` is checked (the Modern task lifecycle, SEP-2663).
//!
//! Requests accept JSON and SSE (or JSON only, [`Config::json_only`]); an SSE answer is read to its end and the response with the
//! request's id is taken from its `data` lines. Requests are written as JSON text, and each
//! answer is read into the few members its check needs, borrowed from the body, not into
//! `serde_json::Value` trees: the driver shares the machine's cores with the server it
//! measures, and with Values it used about half the server's instructions per lifecycle. A call whose answer is not what the tool
//! returns (`ok`, or `slept <ms> ms; done_at_us=…`) is a failure, with the first one kept.
//!
//! The lag the harness sees (the `sleep` tool's completion time to the result's arrival)
//! includes the durable commit of the completion. Our server also times, itself, each
//! result from that commit's return to the answer of the `tasks/result` waiting for it
//! ([`DELIVERY_HISTOGRAM`]); with [`Config::metrics_url`] the run scrapes it before and
//! after and reports what the run added ([`Report::lag_from_commit`]).

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri, header};
use hyper_util::rt::TokioIo;
use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::Barrier;

use crate::server::{DONE_AT, NOOP_TEXT, unix_micros};

/// How a call waits for its task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `tasks/get` until terminal, then `tasks/result`.
    Poll,
    /// `tasks/result` at once (it blocks until the task is done).
    Block,
    /// A plain `tools/call`, no task.
    Plain,
    /// 2026-07-28: `tools/call` → a task, `tasks/get` until `completed` (result inline).
    Modern,
}

impl Mode {
    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Poll => "poll",
            Mode::Block => "block",
            Mode::Plain => "plain",
            Mode::Modern => "modern",
        }
    }

    /// The mode named `name`.
    pub fn parse(name: &str) -> Option<Mode> {
        [Mode::Poll, Mode::Block, Mode::Plain, Mode::Modern]
            .into_iter()
            .find(|mode| mode.name() == name)
    }
}

/// Which tool is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// `noop`: answers `ok` at once.
    Noop,
    /// `sleep` with argument `ms`.
    Sleep(u64),
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Noop => "noop",
            Tool::Sleep(_) => "sleep",
        }
    }

    /// The call's arguments, as JSON text.
    fn arguments(self) -> String {
        match self {
            Tool::Noop => "{}".to_owned(),
            Tool::Sleep(ms) => format!(r#"{{"ms":{ms}}}"#),
        }
    }
}

/// One run's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The MCP endpoint, `http://HOST:PORT/PATH`; or several, comma-separated (replicas of
    /// one service): worker `i` talks to endpoint `i mod n`, so the clients are spread evenly.
    pub url: String,
    /// Calls in all.
    pub tasks: usize,
    /// Concurrent sessions (one connection each).
    pub concurrency: usize,
    /// How each call waits.
    pub mode: Mode,
    /// The tool called.
    pub tool: Tool,
    /// The server's pid, to read its RSS from `/proc/PID/status`.
    pub server_pid: Option<u32>,
    /// Accept only `application/json` answers (default: JSON and SSE, as MCP clients do).
    pub json_only: bool,
    /// The server's `/metrics` (`http://HOST:PORT/metrics`; ours only), scraped before and
    /// after the run for [`Report::lag_from_commit`].
    pub metrics_url: Option<String>,
    /// A file to write every checked call to, one line each, in the order they ended:
    /// `start_us,create_us,end_to_end_us` (the call's start from the run's start; its
    /// `tools/call` answer and its end from its own start), after a first line
    /// `# run_start_unix_us=…`, to see where a tail comes from and line it up with logs.
    pub samples: Option<std::path::PathBuf>,
}

/// Latency percentiles, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

impl Percentiles {
    /// Nearest-rank percentiles of `samples` (`None` if there are none).
    pub fn of(mut samples: Vec<u64>) -> Option<Percentiles> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let rank =
            |p: usize| samples[(samples.len() * p).div_ceil(100).clamp(1, samples.len()) - 1];
        Some(Percentiles {
            p50: rank(50),
            p99: rank(99),
            max: samples[samples.len() - 1],
        })
    }

    fn json(self) -> Value {
        json!({ "p50_us": self.p50, "p99_us": self.p99, "max_us": self.max })
    }
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// The settings of the run.
    pub config: Config,
    /// Calls whose result checked out.
    pub ok: usize,
    /// Calls that failed (error, wrong result, or not run because workers died).
    pub failures: usize,
    /// The first failure, described.
    pub first_failure: Option<String>,
    /// From the moment every session was ready to the end of the last call.
    pub elapsed: Duration,
    /// `tools/call` until its answer (`CreateTaskResult`, or the result of a plain call).
    pub create: Option<Percentiles>,
    /// `tools/call` until the checked result.
    pub end_to_end: Option<Percentiles>,
    /// For `sleep`: the result's arrival minus the completion time the tool reported.
    pub lag: Option<Percentiles>,
    /// The server's own measure over the run, from the commit of each completion to the
    /// answer of the `tasks/result` waiting for it ([`Config::metrics_url`]; `None` without
    /// it, or if no `tasks/result` waited).
    pub lag_from_commit: Option<CommitLag>,
    /// `tasks/get` requests per call (poll and modern modes), on average.
    pub gets_per_task: Option<f64>,
    /// The id of the first task the first worker created (task modes), to look it up later.
    pub first_task_id: Option<String>,
    /// The server's `VmRSS` at the end, KiB.
    pub rss_kib: Option<u64>,
    /// The server's `VmHWM` (peak RSS since it started), KiB.
    pub peak_rss_kib: Option<u64>,
    /// The server's CPU time (user + system, from `/proc/PID/stat`) during the run,
    /// divided by the checked calls: µs of server CPU per call or lifecycle.
    pub server_cpu_us_per_call: Option<f64>,
}

impl Report {
    /// Checked calls per second.
    pub fn per_second(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.ok as f64 / secs
        } else {
            0.0
        }
    }

    /// The report as one JSON object (latencies in µs, RSS in KiB).
    pub fn json(&self) -> Value {
        json!({
            "url": self.config.url,
            "mode": self.config.mode.name(),
            "tool": self.config.tool.name(),
            "sleep_ms": match self.config.tool { Tool::Sleep(ms) => Some(ms), Tool::Noop => None },
            "tasks": self.config.tasks,
            "concurrency": self.config.concurrency,
            "json_only": self.config.json_only,
            "ok": self.ok,
            "failures": self.failures,
            "first_failure": self.first_failure,
            "elapsed_s": self.elapsed.as_secs_f64(),
            "per_second": self.per_second(),
            "create": self.create.map(Percentiles::json),
            "end_to_end": self.end_to_end.map(Percentiles::json),
            "lag": self.lag.map(Percentiles::json),
            "lag_from_commit": self.lag_from_commit.map(CommitLag::json),
            "gets_per_task": self.gets_per_task,
            "first_task_id": self.first_task_id,
            "rss_kib": self.rss_kib,
            "peak_rss_kib": self.peak_rss_kib,
            "server_cpu_us_per_call": self.server_cpu_us_per_call,
        })
    }

    /// The report as a few human lines.
    pub fn table(&self) -> String {
        let ms = |us: u64| us as f64 / 1000.0;
        let pair = |p: Option<Percentiles>| {
            p.map_or_else(
                || "-".to_owned(),
                |p| format!("{:.2} / {:.2} ms", ms(p.p50), ms(p.p99)),
            )
        };
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} {} c={} n={}: {:.0} calls/s, {} ok, {} failed",
            self.config.mode.name(),
            self.config.tool.name(),
            self.config.concurrency,
            self.config.tasks,
            self.per_second(),
            self.ok,
            self.failures
        );
        let _ = writeln!(out, "  create      p50 / p99: {}", pair(self.create));
        let _ = writeln!(out, "  end-to-end  p50 / p99: {}", pair(self.end_to_end));
        if self.lag.is_some() {
            let _ = writeln!(out, "  result lag  p50 / p99: {}", pair(self.lag));
        }
        if let Some(lag) = self.lag_from_commit {
            let _ = writeln!(
                out,
                "  lag from commit p50 / p99 (server): {} / {} ms, {:.1} % within 2 ms ({} waited)",
                at_most_ms(lag.p50_le),
                at_most_ms(lag.p99_le),
                lag.within_2ms * 100.0,
                lag.count
            );
        }
        if let Some(gets) = self.gets_per_task {
            let _ = writeln!(out, "  tasks/get per task: {gets:.2}");
        }
        let kib = |k: Option<u64>| {
            k.map_or_else(
                || "-".to_owned(),
                |k| format!("{:.1} MiB", k as f64 / 1024.0),
            )
        };
        if let Some(cpu) = self.server_cpu_us_per_call {
            let _ = writeln!(out, "  server CPU per call: {cpu:.0} µs");
        }
        let _ = writeln!(
            out,
            "  server RSS {} (peak {})",
            kib(self.rss_kib),
            kib(self.peak_rss_kib)
        );
        if let Some(failure) = &self.first_failure {
            let _ = writeln!(out, "  first failure: {failure}");
        }
        out
    }
}

/// Why a run could not start.
#[derive(Debug)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

/// Runs `config` and reports. Failed calls are counted in the report, not returned as errors.
///
/// # Errors
/// The URL is not `http://host:port/path`, a session could not be opened, or
/// [`Config::metrics_url`] could not be scraped (before or after the run).
pub async fn run(config: Config) -> Result<Report, LoadError> {
    let targets = config.url.split(',').map(Target::parse).collect::<Result<Vec<_>, _>>()?;
    let deliveries_before = match &config.metrics_url {
        Some(url) => Some(Histogram::parse(&scrape(url).await?, DELIVERY_HISTOGRAM)),
        None => None,
    };
    let workers = config.concurrency.max(1);
    let barrier = Arc::new(Barrier::new(workers + 1));
    let next = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::with_capacity(workers);
    for worker in 0..workers {
        let (target, config, barrier, next) = (
            targets[worker % targets.len()].clone(),
            config.clone(),
            Arc::clone(&barrier),
            Arc::clone(&next),
        );
        handles.push(tokio::spawn(async move {
            let session = Session::open(&target, config.mode, config.json_only).await;
            barrier.wait().await;
            let mut session = session?;
            let mut samples = Samples::default();
            while next.fetch_add(1, Ordering::Relaxed) < config.tasks {
                match session.call(config.mode, config.tool).await {
                    Ok(sample) => samples.add(sample),
                    Err(failure) => {
                        samples.failures += 1;
                        samples.first_failure.get_or_insert(failure.message);
                        if failure.fatal {
                            break;
                        }
                    }
                }
            }
            session.close().await;
            Ok::<Samples, LoadError>(samples)
        }));
    }
    barrier.wait().await;
    let cpu_before = config.server_pid.and_then(cpu_ticks);
    let start = Instant::now();
    let start_unix_us = unix_micros();
    let mut all = Samples::default();
    let mut open_error = None;
    for handle in handles {
        match handle.await {
            Ok(Ok(samples)) => all.merge(samples),
            Ok(Err(err)) => open_error = Some(err),
            Err(err) => open_error = Some(LoadError(format!("a worker panicked: {err}"))),
        }
    }
    let elapsed = start.elapsed();
    let cpu_after = config.server_pid.and_then(cpu_ticks);
    if let Some(path) = &config.samples {
        write_samples(path, start, start_unix_us, &mut all.rows)?;
    }
    if let Some(err) = open_error
        && all.ok == 0
    {
        return Err(err);
    }
    // Each delivery is observed before its answer leaves: every one of this run is in.
    let lag_from_commit = match (&config.metrics_url, deliveries_before) {
        (Some(url), Some(before)) => {
            let after = Histogram::parse(&scrape(url).await?, DELIVERY_HISTOGRAM);
            CommitLag::of(&after.since(&before))
        }
        _ => None,
    };
    let ok = all.ok;
    let missing = config.tasks.saturating_sub(ok + all.failures);
    let (rss_kib, peak_rss_kib) = config.server_pid.map_or((None, None), rss);
    Ok(Report {
        failures: all.failures + missing,
        first_failure: all.first_failure,
        elapsed,
        create: Percentiles::of(all.create),
        end_to_end: Percentiles::of(all.end_to_end),
        lag: Percentiles::of(all.lag),
        lag_from_commit,
        gets_per_task: matches!(config.mode, Mode::Poll | Mode::Modern)
            .then_some(ok)
            .filter(|&ok| ok > 0)
            .map(|ok| all.gets as f64 / ok as f64),
        first_task_id: all.first_task_id,
        rss_kib,
        peak_rss_kib,
        server_cpu_us_per_call: cpu_before.zip(cpu_after).filter(|_| ok > 0).map(|(before, after)| {
            after.saturating_sub(before) as f64 * MICROS_PER_TICK / ok as f64
        }),
        ok,
        config,
    })
}

/// Our server's histogram of result deliveries: from the commit of a task's terminal state
/// to the answer of a `tasks/result` that was waiting for it, in seconds.
pub const DELIVERY_HISTOGRAM: &str = "mcp_tasks_result_delivery_seconds";

/// Issue 18's target for [`DELIVERY_HISTOGRAM`]: 2 ms at p99 (one of its bucket bounds).
const DELIVERY_TARGET_S: f64 = 0.002;

/// A histogram of the Prometheus text format, as scraped: its cumulative buckets (upper
/// bound in seconds, observations at most that), in increasing order, `+Inf` last.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram(pub Vec<(f64, u64)>);

impl Histogram {
    /// The buckets of the unlabelled histogram `name` in `text` (none if it is not there).
    pub fn parse(text: &str, name: &str) -> Histogram {
        let prefix = format!("{name}_bucket{{le=\"");
        let mut buckets: Vec<(f64, u64)> = text
            .lines()
            .filter_map(|line| {
                let (bound, count) = line.strip_prefix(&prefix)?.split_once("\"} ")?;
                let bound = match bound {
                    "+Inf" => f64::INFINITY,
                    finite => finite.parse().ok()?,
                };
                Some((bound, count.trim().parse::<f64>().ok()? as u64))
            })
            .collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        Histogram(buckets)
    }

    /// What was observed since `earlier`, a scrape of the same histogram.
    pub fn since(&self, earlier: &Histogram) -> Histogram {
        let before = |bound: f64| {
            earlier
                .0
                .iter()
                .find(|(earlier, _)| earlier.total_cmp(&bound).is_eq())
                .map_or(0, |(_, count)| *count)
        };
        Histogram(
            self.0
                .iter()
                .map(|&(bound, count)| (bound, count.saturating_sub(before(bound))))
                .collect(),
        )
    }

    /// How many observations it holds (its `+Inf` bucket).
    pub fn count(&self) -> u64 {
        self.0.last().map_or(0, |(_, count)| *count)
    }

    /// The smallest bound with at least `percent` % of the observations at or below it: an
    /// upper bound of that percentile (`None` without observations).
    pub fn percentile_bound(&self, percent: u64) -> Option<f64> {
        let need = (self.count() * percent).div_ceil(100).max(1);
        self.0
            .iter()
            .find(|(_, count)| *count >= need)
            .map(|(bound, _)| *bound)
    }

    /// The share of the observations at or below `bound`, counted by the buckets whose
    /// bound is at most `bound` (exact when `bound` is one; `None` without observations).
    pub fn share_within(&self, bound: f64) -> Option<f64> {
        let total = self.count();
        let within = self
            .0
            .iter()
            .take_while(|(upper, _)| *upper <= bound)
            .last()
            .map_or(0, |(_, count)| *count);
        (total > 0).then(|| within as f64 / total as f64)
    }
}

/// [`DELIVERY_HISTOGRAM`] over one run: the upper bounds of its median and 99th percentile
/// (bucket bounds, in seconds; `INFINITY` past the largest), and the share within 2 ms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CommitLag {
    /// Deliveries observed: `tasks/result` requests that waited for their task.
    pub count: u64,
    /// The median is at most this.
    pub p50_le: f64,
    /// The 99th percentile is at most this.
    pub p99_le: f64,
    /// The share of deliveries within 2 ms of the commit.
    pub within_2ms: f64,
}

impl CommitLag {
    /// The summary of `deliveries` (`None` if it holds none).
    pub fn of(deliveries: &Histogram) -> Option<CommitLag> {
        Some(CommitLag {
            count: deliveries.count(),
            p50_le: deliveries.percentile_bound(50)?,
            p99_le: deliveries.percentile_bound(99)?,
            within_2ms: deliveries.share_within(DELIVERY_TARGET_S)?,
        })
    }

    /// `{"count", "p50_le_ms", "p99_le_ms", "within_2ms"}`; a bound past the largest bucket
    /// is `null`.
    fn json(self) -> Value {
        json!({
            "count": self.count,
            "p50_le_ms": bound_ms(self.p50_le),
            "p99_le_ms": bound_ms(self.p99_le),
            "within_2ms": self.within_2ms,
        })
    }
}

/// A bucket bound in seconds as milliseconds to the µs; `None` past the largest bucket.
fn bound_ms(seconds: f64) -> Option<f64> {
    seconds.is_finite().then(|| (seconds * 1e6).round() / 1e3)
}

/// `≤ <ms>` for an upper bound in seconds, or `> largest bucket` past it.
fn at_most_ms(seconds: f64) -> String {
    bound_ms(seconds).map_or_else(|| "> largest bucket".to_owned(), |ms| format!("≤ {ms}"))
}

/// The body of `GET url` (`http://host:port/path`), on a connection of its own.
///
/// # Errors
/// The URL is not `http://host:port/path`, or the server did not answer 200.
pub async fn scrape(url: &str) -> Result<String, LoadError> {
    let target = Target::parse(url)?;
    let failed = |err: &dyn std::fmt::Display| LoadError(format!("GET {url}: {err}"));
    let mut sender = connect(&target).await.map_err(|err| failed(&err))?;
    let request = Request::builder()
        .method(Method::GET)
        .uri(&target.path)
        .header(header::HOST, &target.authority)
        .body(Full::new(Bytes::new()))
        .map_err(|err| failed(&err))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|err| failed(&err))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|err| failed(&err))?
        .to_bytes();
    let text = String::from_utf8_lossy(&body).into_owned();
    if status != StatusCode::OK {
        return Err(failed(&format!("HTTP {status}: {text}")));
    }
    Ok(text)
}

/// A keep-alive HTTP/1.1 connection of its own to `target` (`TCP_NODELAY`, as the server
/// sets), its driver spawned.
///
/// # Errors
/// The TCP connection or the HTTP handshake failed.
async fn connect(target: &Target) -> Result<SendRequest<Full<Bytes>>, LoadError> {
    let stream = TcpStream::connect(&target.authority)
        .await
        .map_err(|err| LoadError(format!("cannot connect to {}: {err}", target.authority)))?;
    let _ = stream.set_nodelay(true);
    let (sender, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|err| LoadError(format!("HTTP handshake: {err}")))?;
    tokio::spawn(connection);
    Ok(sender)
}

/// Microseconds per clock tick of `/proc/PID/stat`: Linux reports CPU times there in
/// `USER_HZ` units, which the kernel ABI fixes at 100 per second on every architecture.
const MICROS_PER_TICK: f64 = 10_000.0;

/// `utime + stime` of process `pid` (fields 14 and 15 of `/proc/PID/stat`), in ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// `VmRSS` and `VmHWM` of process `pid`, in KiB.
pub fn rss(pid: u32) -> (Option<u64>, Option<u64>) {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return (None, None);
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[derive(Default)]
struct Samples {
    ok: usize,
    failures: usize,
    first_failure: Option<String>,
    create: Vec<u64>,
    end_to_end: Vec<u64>,
    lag: Vec<u64>,
    gets: u64,
    first_task_id: Option<String>,
    /// Each call's start, `tools/call` and end-to-end latency, for [`Config::samples`].
    rows: Vec<(Instant, u64, u64)>,
}

impl Samples {
    fn add(&mut self, sample: Sample) {
        self.ok += 1;
        self.create.push(sample.create_us);
        self.end_to_end.push(sample.end_to_end_us);
        self.rows.push((sample.start, sample.create_us, sample.end_to_end_us));
        if let Some(lag) = sample.lag_us {
            self.lag.push(lag);
        }
        self.gets += sample.gets;
        if self.first_task_id.is_none() {
            self.first_task_id = sample.task_id;
        }
    }

    fn merge(&mut self, other: Samples) {
        self.ok += other.ok;
        self.failures += other.failures;
        if self.first_failure.is_none() {
            self.first_failure = other.first_failure;
        }
        self.create.extend(other.create);
        self.end_to_end.extend(other.end_to_end);
        self.rows.extend(other.rows);
        self.lag.extend(other.lag);
        self.gets += other.gets;
        if self.first_task_id.is_none() {
            self.first_task_id = other.first_task_id;
        }
    }
}

/// Writes [`Config::samples`]: one line per call, in the order the calls ended.
fn write_samples(path: &std::path::Path, run_start: Instant, run_start_unix_us: u64, rows: &mut [(Instant, u64, u64)]) -> Result<(), LoadError> {
    rows.sort_unstable_by_key(|&(start, _, end_to_end)| start + Duration::from_micros(end_to_end));
    // The workers start calling as they pass the barrier, which may be a moment before the run's
    // clock is read: the times are counted from the earlier of the two, so none is cut to zero.
    let origin = rows.iter().map(|&(start, ..)| start).min().map_or(run_start, |first| first.min(run_start));
    let origin_unix_us = run_start_unix_us.saturating_sub(micros(run_start.duration_since(origin)));
    let mut text = String::with_capacity(rows.len() * 24);
    // The run's start as Unix time, to line the calls up with a server's logs.
    let _ = writeln!(text, "# run_start_unix_us={origin_unix_us}");
    text.push_str("start_us,create_us,end_to_end_us\n");
    for &(start, create, end_to_end) in rows.iter() {
        let from_run = micros(start.duration_since(origin));
        let _ = writeln!(text, "{from_run},{create},{end_to_end}");
    }
    std::fs::write(path, text).map_err(|err| LoadError(format!("--samples {}: {err}", path.display())))
}

/// One checked call.
struct Sample {
    /// When the call started.
    start: Instant,
    create_us: u64,
    end_to_end_us: u64,
    lag_us: Option<u64>,
    gets: u64,
    task_id: Option<String>,
}

/// A failed call; `fatal` when the connection is gone.
struct Failure {
    message: String,
    fatal: bool,
}

impl Failure {
    fn check(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            fatal: false,
        }
    }
}

/// Where to connect and what to ask for.
#[derive(Clone, Debug)]
struct Target {
    authority: String,
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Target, LoadError> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| LoadError(format!("{url}: only http:// URLs are supported")))?;
        let (authority, path) = rest
            .split_once('/')
            .map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
        if authority.is_empty() {
            return Err(LoadError(format!("{url}: no host")));
        }
        Ok(Target {
            authority: authority.to_owned(),
            path,
        })
    }
}

const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// The protocol revision of [`Mode::Modern`].
const MODERN_VERSION: &str = "2026-07-28";
/// The tasks extension a [`Mode::Modern`] client declares on every request.
const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// One MCP client on one keep-alive connection: a Legacy session, or a stateless Modern client.
struct Session {
    sender: SendRequest<Full<Bytes>>,
    /// The 2025-11-25 session's id (`Mcp-Session-Id`), and the request's URI and Host,
    /// parsed once.
    session_id: Option<HeaderValue>,
    uri: Uri,
    host: HeaderValue,
    next_id: u64,
    accept: &'static str,
    modern: bool,
}

impl Session {
    async fn open(target: &Target, mode: Mode, json_only: bool) -> Result<Session, LoadError> {
        let sender = connect(target).await?;
        let invalid = |what: &str| LoadError(format!("{what} of {}:{} is not valid in a request", target.authority, target.path));
        let mut session = Session {
            sender,
            session_id: None,
            uri: target.path.parse().map_err(|_| invalid("the path"))?,
            host: HeaderValue::from_str(&target.authority).map_err(|_| invalid("the authority"))?,
            next_id: 1,
            accept: if json_only {
                "application/json"
            } else {
                "application/json, text/event-stream"
            },
            modern: mode == Mode::Modern,
        };
        if session.modern {
            return Ok(session);
        }
        let init = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "mcp-tasks-bench-load", "version": "1"}
        });
        let (headers, answer) = session
            .post(request_text(0, "initialize", &init.to_string()), None, None)
            .await
            .map_err(|failure| LoadError(format!("initialize: {}", failure.message)))?;
        let answer = answer.ok_or_else(|| LoadError("initialize: no answer".to_owned()))?;
        Answer { method: "initialize", id: 0, answer }
            .result(|_: IgnoredAny| Ok::<_, String>(()))
            .map_err(|failure| LoadError(failure.message))?;
        session.session_id = headers.get(MCP_SESSION_ID).cloned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        session.post(initialized.to_string(), None, None).await.map_err(|failure| {
            LoadError(format!("notifications/initialized: {}", failure.message))
        })?;
        Ok(session)
    }

    async fn call(&mut self, mode: Mode, tool: Tool) -> Result<Sample, Failure> {
        let start = Instant::now();
        let name = tool.name();
        let call = |task: &str| format!(r#"{{"name":{},"arguments":{}{task}}}"#, json_text(name), tool.arguments());
        if mode == Mode::Plain {
            let answer = self.request("tools/call", &call(""), Some(name)).await?;
            let arrival = unix_micros();
            let elapsed = micros(start.elapsed());
            let lag = answer.result(|result: ToolResult<'_>| check_result(&result, tool, arrival))?;
            return Ok(Sample {
                start,
                create_us: elapsed,
                end_to_end_us: elapsed,
                lag_us: lag,
                gets: 0,
                task_id: None,
            });
        }
        if mode == Mode::Modern {
            return self.modern_lifecycle(tool, &call(""), start).await;
        }
        let created = self.request("tools/call", &call(r#","task":{"ttl":600000}"#), Some(name)).await?;
        let create_us = micros(start.elapsed());
        let id = created.result(|created: Created<'_>| {
            let task = created.task.ok_or("no CreateTaskResult")?;
            task.task_id.map(Cow::into_owned).ok_or("no taskId")
        })?;
        let by_id = task_params(&id);
        let mut gets = 0;
        if mode == Mode::Poll {
            loop {
                let got = self.request("tasks/get", &by_id, Some(&id)).await?;
                gets += 1;
                let done = got.result(|task: TaskStatus<'_>| match task.status.as_deref() {
                    Some("completed") => Ok(true),
                    Some("working") => Ok(false),
                    other => Err(format!("task {id}: unexpected status {other:?}")),
                })?;
                if done {
                    break;
                }
            }
        }
        let answer = self.request("tasks/result", &by_id, Some(&id)).await?;
        let arrival = unix_micros();
        let end_to_end_us = micros(start.elapsed());
        let lag_us = answer.result(|result: ToolResult<'_>| check_result(&result, tool, arrival))?;
        Ok(Sample {
            start,
            create_us,
            end_to_end_us,
            lag_us,
            gets,
            task_id: Some(id),
        })
    }

    /// The Modern lifecycle: `tools/call` must answer with a task; `tasks/get` until it is
    /// `completed`, its inline result checked.
    async fn modern_lifecycle(
        &mut self,
        tool: Tool,
        params: &str,
        start: Instant,
    ) -> Result<Sample, Failure> {
        let created = self.request("tools/call", params, Some(tool.name())).await?;
        let create_us = micros(start.elapsed());
        let id = created.result(|created: ModernCreated<'_>| {
            if created.result_type.as_deref() != Some("task") {
                return Err("not a task");
            }
            created.task_id.map(Cow::into_owned).ok_or("no taskId")
        })?;
        let by_id = task_params(&id);
        let mut gets = 0;
        loop {
            let got = self.request("tasks/get", &by_id, Some(&id)).await?;
            gets += 1;
            let arrival = unix_micros();
            let end_to_end_us = micros(start.elapsed());
            let lag = got.result(|task: ModernTask<'_>| match task.status.as_deref() {
                Some("completed") => {
                    let result = task.result.ok_or_else(|| format!("task {id}: completed without a result"))?;
                    check_result(&result, tool, arrival).map(Some)
                }
                Some("working") => Ok(None),
                other => Err(format!("task {id}: unexpected status {other:?}")),
            })?;
            if let Some(lag_us) = lag {
                return Ok(Sample {
                    start,
                    create_us,
                    end_to_end_us,
                    lag_us,
                    gets,
                    task_id: Some(id),
                });
            }
        }
    }

    /// Sends request `method` with `params` (an object's JSON text) and returns its `result`.
    /// `name`: what a Modern request's `Mcp-Name` header mirrors (the tool, or the task id).
    /// The body is written as text, with the Modern `_meta` spliced in as text too: building
    /// a `serde_json::Value` for each request and serializing it was a third of the driver's
    /// instructions, on the cores the server under test uses.
    async fn request(&mut self, method: &'static str, params: &str, name: Option<&str>) -> Result<Answer, Failure> {
        let id = self.next_id;
        self.next_id += 1;
        let message = if self.modern {
            // `params` is an object: its closing brace gives way to the `_meta` member.
            let open = params.strip_suffix('}').unwrap_or(params);
            let comma = if open.trim_end().ends_with('{') { "" } else { "," };
            let meta: &str = &MODERN_META;
            request_text(id, method, &format!(r#"{open}{comma}"_meta":{meta}}}"#))
        } else {
            request_text(id, method, params)
        };
        let name = if self.modern { name } else { None };
        let (_, answer) = self.post(message, Some(method), name).await?;
        let answer = answer.ok_or_else(|| Failure::check(format!("{method}: no answer")))?;
        Ok(Answer { method, id, answer })
    }

    /// Ends the 2025-11-25 session (`DELETE`), as a client that is done does, so that runs
    /// one after the other do not pile up sessions on the server. Best effort.
    async fn close(mut self) {
        let Some(id) = self.session_id.take() else { return };
        let mut request = Request::new(Full::new(Bytes::new()));
        *request.method_mut() = Method::DELETE;
        *request.uri_mut() = self.uri.clone();
        let headers = request.headers_mut();
        headers.insert(header::HOST, self.host.clone());
        headers.insert(MCP_SESSION_ID, id);
        headers.insert(MCP_PROTOCOL_VERSION, HeaderValue::from_static("2025-11-25"));
        if self.sender.ready().await.is_ok()
            && let Ok(response) = self.sender.send_request(request).await
        {
            let _ = response.into_body().collect().await;
        }
    }

    /// POSTs `message` (JSON text); the answer's headers and, unless it is 202, the messages
    /// it carried. A Modern request also carries the headers that mirror its body (`method`:
    /// `Mcp-Method`, `name`: `Mcp-Name`).
    async fn post(
        &mut self,
        message: String,
        method: Option<&str>,
        name: Option<&str>,
    ) -> Result<(hyper::HeaderMap, Option<Body>), Failure> {
        // Built from values parsed once per session (the URI, the Host, the session id) and
        // names known at compile time: the builder parsed each name and value of every request.
        let mut request = Request::new(Full::new(Bytes::from(message)));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.uri.clone();
        let headers = request.headers_mut();
        headers.insert(header::HOST, self.host.clone());
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(header::ACCEPT, HeaderValue::from_static(self.accept));
        if let Some(id) = &self.session_id {
            headers.insert(MCP_SESSION_ID, id.clone());
            headers.insert(MCP_PROTOCOL_VERSION, HeaderValue::from_static("2025-11-25"));
        }
        if self.modern {
            let value = |text: &str| {
                HeaderValue::from_str(text).map_err(|err| Failure::check(format!("building the request: {err}")))
            };
            headers.insert(MCP_PROTOCOL_VERSION, HeaderValue::from_static(MODERN_VERSION));
            headers.insert(MCP_METHOD, value(method.unwrap_or(""))?);
            if let Some(name) = name {
                headers.insert(MCP_NAME, value(name)?);
            }
        }
        let fatal = |err: hyper::Error| Failure {
            message: format!("HTTP: {err}"),
            fatal: true,
        };
        self.sender.ready().await.map_err(fatal)?;
        let response = self.sender.send_request(request).await.map_err(fatal)?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.map_err(fatal)?.to_bytes();
        if parts.status == StatusCode::ACCEPTED {
            return Ok((parts.headers, None));
        }
        if parts.status != StatusCode::OK {
            return Err(Failure::check(format!(
                "HTTP {}: {}",
                parts.status,
                String::from_utf8_lossy(&body)
            )));
        }
        let sse = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        let text = String::from_utf8(Vec::from(body)).map_err(|_| Failure::check("the answer is not UTF-8"))?;
        Ok((parts.headers, Some(Body::new(text, sse))))
    }
}

/// A JSON-RPC request's text; `params`: an object's JSON text.
fn request_text(id: u64, method: &str, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{},"params":{params}}}"#, json_text(method))
}

/// `text` as a JSON string.
fn json_text(text: &str) -> String {
    Value::from(text).to_string()
}

/// The `params` of `tasks/get` and `tasks/result`: `{"taskId": id}`.
fn task_params(id: &str) -> String {
    format!(r#"{{"taskId":{}}}"#, json_text(id))
}

/// The `_meta` every 2026-07-28 request carries: the revision, who we are, and the tasks
/// extension declared.
static MODERN_META: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-tasks-bench-load", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}}
    })
    .to_string()
});

/// An answer's body: JSON, or an SSE stream of JSON messages, and where each message's
/// text is.
struct Body {
    text: String,
    /// Each message: a range of `text` (the body, or an event's one `data` line), or the
    /// index in `joined` of an event whose `data` came on several lines.
    messages: Vec<Text>,
    joined: Vec<String>,
}

enum Text {
    In(std::ops::Range<usize>),
    Joined(usize),
}

impl Body {
    /// `text` as a JSON body, or (`sse`) as an SSE stream: each event's `data` lines, joined
    /// (empty ones, such as the priming event, skipped).
    fn new(text: String, sse: bool) -> Body {
        let mut body = Body { messages: Vec::new(), joined: Vec::new(), text };
        if !sse {
            body.messages.push(Text::In(0..body.text.len()));
            return body;
        }
        // Line by line (a search for one byte), each event ending at an empty line: splitting
        // the text at "\n\n" first was a substring search, ~5 % of the driver's instructions.
        let base = body.text.as_ptr() as usize;
        let mut data: Vec<&str> = Vec::new();
        for line in body.text.split('\n').chain(std::iter::once("")) {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if !line.is_empty() {
                if let Some(rest) = line.strip_prefix("data:") {
                    data.push(rest.strip_prefix(' ').unwrap_or(rest));
                }
                continue;
            }
            match data.as_slice() {
                [] => {}
                [one] if one.trim().is_empty() => {}
                [one] => {
                    let start = one.as_ptr() as usize - base;
                    body.messages.push(Text::In(start..start + one.len()));
                }
                lines => {
                    let joined = lines.join("\n");
                    if !joined.trim().is_empty() {
                        body.messages.push(Text::Joined(body.joined.len()));
                        body.joined.push(joined);
                    }
                }
            }
            data.clear();
        }
        body
    }

    /// The JSON text of each message, in order.
    fn messages(&self) -> impl Iterator<Item = &str> {
        self.messages.iter().map(|text| match text {
            Text::In(range) => &self.text[range.clone()],
            Text::Joined(index) => self.joined[*index].as_str(),
        })
    }
}

/// The answer to the request `id` of `method`, read on demand into what the caller expects.
struct Answer {
    method: &'static str,
    id: u64,
    answer: Body,
}

impl Answer {
    /// Reads the `result` of the response with this request's id among the answer's messages
    /// as an `R` (only the members the driver checks, borrowed from the body), and hands it to
    /// `check`, whose error becomes a failed check naming the method and quoting the message.
    fn result<'a, R, T, E>(&'a self, check: impl FnOnce(R) -> Result<T, E>) -> Result<T, Failure>
    where
        R: Deserialize<'a>,
        E: std::fmt::Display,
    {
        let failed = |message: String| Failure::check(format!("{}: {message}", self.method));
        for text in self.answer.messages() {
            let envelope: Envelope<'a, R> =
                serde_json::from_str(text).map_err(|err| failed(format!("bad JSON ({err}): {text}")))?;
            if envelope.method.is_some() || envelope.id.as_ref().and_then(Value::as_u64) != Some(self.id) {
                continue;
            }
            if let Some(error) = envelope.error {
                return Err(failed(format!("JSON-RPC error {error}")));
            }
            let result = envelope.result.ok_or_else(|| failed(format!("a response without result: {text}")))?;
            return check(result).map_err(|err| failed(format!("{err}: {text}")));
        }
        Err(failed(format!("no response with id {} among {} message(s)", self.id, self.answer.messages.len())))
    }
}

/// A JSON-RPC message as the driver reads it: enough to tell its response from the rest,
/// and the `result` as the call expects it.
#[derive(Deserialize)]
#[serde(bound(deserialize = "R: Deserialize<'de>"))]
struct Envelope<'a, R> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    result: Option<R>,
    #[serde(default)]
    error: Option<Value>,
}

/// `CreateTaskResult` (2025-11-25): the task's id.
#[derive(Deserialize)]
struct Created<'a> {
    #[serde(default, borrow)]
    task: Option<TaskStatus<'a>>,
}

/// A 2025-11-25 `Task` (`tasks/get`, and the one a `CreateTaskResult` carries).
#[derive(Deserialize)]
struct TaskStatus<'a> {
    #[serde(default, borrow, rename = "taskId")]
    task_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
}

/// A 2026-07-28 `tools/call` answer: a task (`resultType: "task"`) and its id.
#[derive(Deserialize)]
struct ModernCreated<'a> {
    #[serde(default, borrow, rename = "resultType")]
    result_type: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "taskId")]
    task_id: Option<Cow<'a, str>>,
}

/// A 2026-07-28 `tasks/get` answer: its status, and once completed its inline result.
#[derive(Deserialize)]
struct ModernTask<'a> {
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    result: Option<ToolResult<'a>>,
}

/// A `CallToolResult`: whether it is an error, and the text of its content.
#[derive(Deserialize)]
struct ToolResult<'a> {
    #[serde(default, rename = "isError")]
    is_error: Option<bool>,
    #[serde(default, borrow)]
    content: Vec<Content<'a>>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

/// Checks a `CallToolResult` of `tool`; for `sleep`, the lag between `arrival` (unix µs) and
/// the completion time it reports.
fn check_result(result: &ToolResult<'_>, tool: Tool, arrival: u64) -> Result<Option<u64>, String> {
    if result.is_error == Some(true) {
        return Err("the tool failed".to_owned());
    }
    let text = result
        .content
        .first()
        .and_then(|first| first.text.as_deref())
        .ok_or_else(|| "no text content".to_owned())?;
    match tool {
        Tool::Noop if text == NOOP_TEXT => Ok(None),
        Tool::Sleep(ms) if text.starts_with(&format!("slept {ms} ms; ")) => {
            let done = text
                .split_once(DONE_AT)
                .and_then(|(_, rest)| rest.trim().parse::<u64>().ok())
                .ok_or_else(|| format!("no completion time in {text:?}"))?;
            Ok(Some(arrival.saturating_sub(done)))
        }
        _ => Err(format!("unexpected result text {text:?} from {}", tool.name())),
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn cpu_ticks_reads_this_process_and_grow_with_work() {
        let before = cpu_ticks(std::process::id()).expect("our own /proc/PID/stat");
        let started = std::time::Instant::now();
        let mut x = 0u64;
        while started.elapsed() < Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let after = cpu_ticks(std::process::id()).unwrap();
        assert!(after > before, "50 ms of spinning should take at least one 10 ms tick: {before} → {after}");
        assert_eq!(cpu_ticks(u32::MAX), None);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let p = Percentiles::of((1..=100).collect()).unwrap();
        assert_eq!((p.p50, p.p99, p.max), (50, 99, 100));
        let p = Percentiles::of(vec![7]).unwrap();
        assert_eq!((p.p50, p.p99, p.max), (7, 7, 7));
        assert!(Percentiles::of(Vec::new()).is_none());
    }

    #[test]
    fn sse_bodies_yield_their_messages() {
        let text = "id: 1-0\nretry: 1000\ndata: \n\nid: 1-1\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        assert_eq!(Body::new(text.to_owned(), true).messages().count(), 1);
        let answer = |id| Answer { method: "m", id, answer: Body::new(text.to_owned(), true) };
        assert!(answer(3).result(|_: IgnoredAny| Ok::<_, String>(())).is_ok());
        assert!(answer(4).result(|_: IgnoredAny| Ok::<_, String>(())).is_err());
        // An event's data on several lines is one message, its lines joined.
        let split = "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":5,\"result\":{\"status\":\"working\"}}\n\n";
        let answer = Answer { method: "m", id: 5, answer: Body::new(split.to_owned(), true) };
        let status = answer.result(|task: TaskStatus<'_>| Ok::<_, String>(task.status.map(Cow::into_owned)));
        assert_eq!(status.ok().flatten().as_deref(), Some("working"));
        // Lines may end in CRLF, and the last event needs no empty line after it.
        let crlf = "id: 1-0\r\ndata: \r\n\r\nid: 1-1\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}";
        let messages: Vec<String> = Body::new(crlf.to_owned(), true).messages().map(str::to_owned).collect();
        assert_eq!(messages, [r#"{"jsonrpc":"2.0","id":8,"result":{}}"#, r#"{"jsonrpc":"2.0","id":9,"result":{}}"#]);
        // A JSON-RPC error is a failure, and so is a body that is not JSON.
        let error = Answer { method: "m", id: 6, answer: Body::new(r#"{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"x"}}"#.to_owned(), false) };
        assert!(error.result(|_: IgnoredAny| Ok::<_, String>(())).is_err());
        let garbage = Answer { method: "m", id: 7, answer: Body::new("not json".to_owned(), false) };
        assert!(garbage.result(|_: IgnoredAny| Ok::<_, String>(())).is_err());
    }

    #[test]
    fn request_texts_are_the_json_rpc_requests_they_stand_for() {
        let call = serde_json::from_str::<Value>(&request_text(7, "tools/call", r#"{"name":"noop","arguments":{}}"#));
        assert_eq!(
            call.ok(),
            Some(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "noop", "arguments": {}}}))
        );
        let get = serde_json::from_str::<Value>(&request_text(8, "tasks/get", &task_params("a\"b")));
        assert_eq!(get.ok(), Some(json!({"jsonrpc": "2.0", "id": 8, "method": "tasks/get", "params": {"taskId": "a\"b"}})));
        let meta = serde_json::from_str::<Value>(&MODERN_META).ok();
        assert_eq!(
            meta.as_ref().and_then(|meta| meta.pointer("/io.modelcontextprotocol~1clientCapabilities/extensions")),
            Some(&json!({TASKS_EXTENSION: {}}))
        );
        assert_eq!(Tool::Sleep(5).arguments(), r#"{"ms":5}"#);
    }

    #[test]
    fn the_delivery_histogram_is_summarised_from_its_cumulative_buckets_over_the_run() {
        let scrape = |counts: [u64; 5]| {
            let mut text = format!(
                "# HELP {DELIVERY_HISTOGRAM} From commit to answer.\n# TYPE {DELIVERY_HISTOGRAM} histogram\n\
                 {DELIVERY_HISTOGRAM}_sum 0.5\n{DELIVERY_HISTOGRAM}_count {}\n",
                counts[4]
            );
            for (bound, count) in ["0.0005", "0.001", "0.002", "0.005", "+Inf"].iter().zip(counts) {
                text.push_str(&format!("{DELIVERY_HISTOGRAM}_bucket{{le=\"{bound}\"}} {count}\n"));
            }
            text.push_str("other_bucket{le=\"0.001\"} 99\n");
            Histogram::parse(&text, DELIVERY_HISTOGRAM)
        };
        let before = scrape([10, 10, 10, 10, 10]);
        assert_eq!(before.0.len(), 5, "{before:?}");
        assert_eq!(before.0[4], (f64::INFINITY, 10));
        // 200 in the run: 60 ≤ 0.5 ms, 100 ≤ 1 ms, 197 ≤ 2 ms, 199 ≤ 5 ms, 1 beyond.
        let run = scrape([70, 110, 207, 209, 210]).since(&before);
        assert_eq!(run.count(), 200);
        let lag = CommitLag::of(&run).unwrap();
        assert_eq!((lag.p50_le, lag.p99_le, lag.within_2ms), (0.001, 0.005, 0.985));
        assert_eq!(run.percentile_bound(100), Some(f64::INFINITY));
        assert_eq!(
            lag.json(),
            json!({"count": 200, "p50_le_ms": 1.0, "p99_le_ms": 5.0, "within_2ms": 0.985})
        );
        assert_eq!(CommitLag::of(&before.since(&before)), None, "no delivery in the run");
        assert_eq!(CommitLag::of(&Histogram::parse("", DELIVERY_HISTOGRAM)), None);
    }

    #[test]
    fn results_are_checked() {
        let read = |text: &'static str| serde_json::from_str::<ToolResult<'static>>(text).ok().unwrap();
        let ok = read(r#"{"content": [{"type": "text", "text": "ok"}]}"#);
        assert!(check_result(&ok, Tool::Noop, 0).is_ok());
        assert!(check_result(&ok, Tool::Sleep(5), 0).is_err());
        let slept = read(r#"{"content": [{"type": "text", "text": "slept 5 ms; done_at_us=100"}]}"#);
        assert_eq!(
            check_result(&slept, Tool::Sleep(5), 150).ok().unwrap(),
            Some(50)
        );
        let failed = read(r#"{"content": [{"type": "text", "text": "ok"}], "isError": true}"#);
        assert!(check_result(&failed, Tool::Noop, 0).is_err());
    }
}
