//! How long a write made by one process takes to reach the change feed of another process on
//! the same SQLite file (the cross-process wake-up: the writer's commit counter, the other
//! process's watcher, its writer catching up with the change log, its feed).
//!
//! ```text
//! cargo run --release -p mcp-tasks-sqlite --example wakeup -- [SAMPLES]
//! ```
//!
//! The example opens a store on a fresh file and subscribes to its feed, then starts itself
//! again as a child process (`--writer PATH`) on the same file. For each sample it asks the
//! child for one insert; the child prints the wall-clock time its insert returned (its caller
//! answered), and this process notes when the task reached its feed. Prints the latencies'
//! p50, p90, p99 and max in microseconds (a negative latency, the feed ahead of the writer's
//! answer, counts as 0), and, for comparison, the same within one process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_tasks_engine::{RecordStore, TaskId};
use mcp_tasks_sqlite::SqliteStore;
use mcp_tasks_testkit::store_suite::sample_task;

fn now_ns() -> i128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|since| since.as_nanos() as i128).unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--writer") {
        writer(&args[2]).await;
        return;
    }
    let samples: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(1000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("tasks.sqlite3");
    let store = Arc::new(SqliteStore::open(&path).expect("the store opens"));

    let across = measure(&store, samples, Spawned::start(&path)).await;
    report("another process", &across);
    let within = measure(&store, samples, Spawned::Within(Arc::clone(&store))).await;
    report("the same handle", &within);
}

/// Where the writes come from.
enum Spawned {
    Child(std::process::Child, BufReader<std::process::ChildStdout>),
    Within(Arc<SqliteStore>),
}

impl Spawned {
    fn start(path: &std::path::Path) -> Spawned {
        let exe = std::env::current_exe().expect("this example's path");
        let mut child = Command::new(exe)
            .arg("--writer")
            .arg(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the writer process");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Spawned::Child(child, stdout)
    }

    /// One insert; the id and when it returned (ns since the epoch).
    async fn write(&mut self) -> (TaskId, i128) {
        match self {
            Spawned::Child(child, stdout) => {
                let stdin = child.stdin.as_mut().expect("stdin");
                writeln!(stdin, "go").expect("ask the writer");
                stdin.flush().expect("flush");
                let mut line = String::new();
                stdout.read_line(&mut line).expect("the writer's answer");
                let (id, at) = line.trim().split_once(' ').expect("`ID NS`");
                (TaskId::from(id.to_owned()), at.parse().expect("ns"))
            }
            Spawned::Within(store) => {
                let task = sample_task("alice");
                store.insert(&task).await.expect("insert");
                (task.id, now_ns())
            }
        }
    }
}

/// Latencies in µs from each write's return to its arrival on `store`'s feed.
async fn measure(store: &SqliteStore, samples: usize, mut from: Spawned) -> Vec<i128> {
    let mut feed = store.changes();
    let mut latencies = Vec::with_capacity(samples);
    for _ in 0..samples {
        let (id, wrote) = from.write().await;
        let arrived = loop {
            let record = tokio::time::timeout(Duration::from_secs(5), feed.recv())
                .await
                .expect("the write reaches the feed within 5 s")
                .expect("the feed");
            if record.id == id {
                break now_ns();
            }
        };
        latencies.push(((arrived - wrote) / 1000).max(0));
    }
    if let Spawned::Child(mut child, _) = from {
        drop(child.stdin.take());
        let _ = child.wait();
    }
    latencies
}

fn report(what: &str, latencies: &[i128]) {
    let mut sorted = latencies.to_vec();
    sorted.sort_unstable();
    let at = |q: f64| sorted[((sorted.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "wake-up from {what}: {} samples, p50 {} µs, p90 {} µs, p99 {} µs, max {} µs",
        sorted.len(),
        at(0.5),
        at(0.9),
        at(0.99),
        sorted[sorted.len() - 1]
    );
}

/// The child: one insert per line on stdin, answering `ID NS` once it returned.
async fn writer(path: &str) {
    let store = SqliteStore::open(std::path::Path::new(path)).expect("the store opens in the writer");
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        if line.is_err() {
            break;
        }
        let task = sample_task("alice");
        store.insert(&task).await.expect("insert");
        writeln!(stdout, "{} {}", task.id, now_ns()).expect("answer");
        stdout.flush().expect("flush");
    }
}
