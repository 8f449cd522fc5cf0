//! Faults of PostgreSQL itself under two replicas (issue 14 item 5), on a private cluster
//! ([`Cluster`]) that the test may restart and crash, never the shared server: PostgreSQL
//! restarted (`pg_ctl restart -m fast`) and crashed (`-m immediate`) while tasks are created
//! and collected on both replicas. Skipped when the machine cannot run a private cluster
//! (not root, no binaries), failed instead under `CI=true`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{CONFIG, Server, Workdir};
use crate::pg_cluster::Cluster;

/// How long the load may wait for the acknowledgements it counts on, and a task to finish.
const DEADLINE: Duration = Duration::from_secs(60);

/// The longest any one request may take during an outage (a bounded wait, not a hang).
const LONGEST_ANSWER: Duration = Duration::from_secs(15);

/// A tool that notes every run of it (one line per run in `runs`), then prints its text.
const NOTED_ECHO: &str = r#"
[[tools]]
name = "noted_echo"
command = ["sh", "-c", "echo \"$1\" >> \"$2\"; printf '%s' \"$1\"", "_", "{text}", "{runs}"]
[tools.input_schema]
type = "object"
properties = { text = { type = "string" }, runs = { type = "string" } }
"#;

/// What the load on one replica saw.
#[derive(Default)]
struct Seen {
    /// Tasks acknowledged (a `CreateTaskResult`): id and the text it must print.
    acknowledged: Vec<(String, String)>,
    /// Error answers (to `tools/call` or `tasks/result`) during the outages.
    errors: Vec<Value>,
    /// The longest a request took to be answered.
    slowest: Duration,
}

/// Creates tasks on `server` and collects each one's result on it, until `stop`; counts
/// each acknowledgement in `acked`.
fn load(mut server: Server, name: &str, runs: &Path, stop: &AtomicBool, acked: &AtomicUsize, seen: &Mutex<Seen>) -> Server {
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let text = format!("{name} {n}");
        let params = json!({"name": "noted_echo", "arguments": {"text": text, "runs": runs}, "task": {"ttl": 600_000}});
        let asked = Instant::now();
        let created = server.request("tools/call", params);
        note_time(seen, asked.elapsed());
        let Some(id) = created["result"]["task"]["taskId"].as_str().map(str::to_owned) else {
            seen.lock().unwrap().errors.push(created["error"].clone());
            continue;
        };
        seen.lock().unwrap().acknowledged.push((id.clone(), text.clone()));
        acked.fetch_add(1, Ordering::SeqCst);
        let asked = Instant::now();
        let result = server.request("tasks/result", json!({"taskId": id}));
        note_time(seen, asked.elapsed());
        match result["result"]["content"][0]["text"].as_str() {
            Some(printed) => assert_eq!(printed, text, "{result}"),
            None => seen.lock().unwrap().errors.push(result["error"].clone()),
        }
    }
    server
}

fn note_time(seen: &Mutex<Seen>, took: Duration) {
    let mut seen = seen.lock().unwrap();
    seen.slowest = seen.slowest.max(took);
}

/// Waits until `acked` reaches `count`.
fn wait_acked(acked: &AtomicUsize, count: usize, cluster: &Cluster) {
    let deadline = Instant::now() + DEADLINE;
    while acked.load(Ordering::SeqCst) < count {
        assert!(
            Instant::now() < deadline,
            "service did not resume: {} of {count} tasks acknowledged; the server's log:\n{}",
            acked.load(Ordering::SeqCst),
            cluster.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// PostgreSQL restarted (`-m fast`) and then crashed and recovered (`-m immediate`) while two
/// replicas take calls and collect results: every answer comes within a bound, an error is
/// one that says to retry; every task acknowledged is found on the other replica, completed,
/// its tool run once; both replicas serve again by themselves, the change feed included.
#[test]
fn replicas_postgres_restarted_and_crashed_under_load_lose_no_acknowledged_task_and_resume() {
    let Some(cluster) = Cluster::start(&[], &[]) else { return };
    let work = Workdir::new();
    std::fs::write(work.config(), format!("{CONFIG}{NOTED_ECHO}")).expect("write the config");
    let runs = work.path("runs");
    let store = cluster.url();
    let mut replicas: Vec<Server> = (0..2).map(|_| Server::start(&work.config(), Path::new(&store))).collect();
    for server in &mut replicas {
        server.initialize();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicUsize::new(0));
    let seen: Vec<Arc<Mutex<Seen>>> = (0..2).map(|_| Arc::default()).collect();
    let threads: Vec<_> = replicas
        .into_iter()
        .enumerate()
        .map(|(n, server)| {
            let (stop, acked, seen, runs) = (Arc::clone(&stop), Arc::clone(&acked), Arc::clone(&seen[n]), runs.clone());
            std::thread::spawn(move || load(server, &format!("replica{n}"), &runs, &stop, &acked, &seen))
        })
        .collect();

    wait_acked(&acked, 20, &cluster);
    let restarted = Instant::now();
    cluster.restart("fast");
    eprintln!("pg_faults: PostgreSQL restarted (-m fast) in {:?}", restarted.elapsed());
    let after_fast = acked.load(Ordering::SeqCst);
    wait_acked(&acked, after_fast + 20, &cluster);
    let crashed = Instant::now();
    cluster.restart("immediate");
    eprintln!("pg_faults: PostgreSQL crashed and recovered (-m immediate) in {:?}", crashed.elapsed());
    let after_crash = acked.load(Ordering::SeqCst);
    wait_acked(&acked, after_crash + 20, &cluster);
    stop.store(true, Ordering::SeqCst);
    let mut replicas: Vec<Server> = threads.into_iter().map(|thread| thread.join().expect("the load ran")).collect();

    let seen: Vec<Seen> = seen.into_iter().map(|seen| std::mem::take(&mut *seen.lock().unwrap())).collect();
    for (n, seen) in seen.iter().enumerate() {
        eprintln!(
            "pg_faults: replica {n}: {} acknowledged, {} error answers, slowest answer {:?}",
            seen.acknowledged.len(),
            seen.errors.len(),
            seen.slowest
        );
        assert!(seen.slowest < LONGEST_ANSWER, "replica {n} took {:?} to answer a request", seen.slowest);
        for error in &seen.errors {
            let message = error["message"].as_str().unwrap_or_default();
            assert!(
                error["data"]["retryable"] == true && message.to_lowercase().contains("retry"),
                "an outage's error says it may be retried: {error}"
            );
        }
    }
    let met_the_outage = seen.iter().any(|seen| !seen.errors.is_empty() || seen.slowest > Duration::from_millis(300));
    assert!(met_the_outage, "no request met an outage: the load did not run across the restarts");
    // Each acknowledged task, read on the other replica: completed with its text, run once.
    let runs = std::fs::read_to_string(&runs).unwrap_or_default();
    let mut run_count: HashMap<&str, usize> = HashMap::new();
    for line in runs.lines() {
        *run_count.entry(line).or_default() += 1;
    }
    let deadline = Instant::now() + DEADLINE;
    for (n, seen) in seen.iter().enumerate() {
        let other = &mut replicas[1 - n];
        for (id, text) in &seen.acknowledged {
            let task = loop {
                let task = other.call("tasks/get", json!({"taskId": id}));
                if task["status"] != "working" {
                    break task;
                }
                assert!(Instant::now() < deadline, "task {id} never finished: {task}");
                std::thread::sleep(Duration::from_millis(50));
            };
            assert_eq!(task["status"], "completed", "acknowledged task {id} ({text}): {task}");
            let result = other.call("tasks/result", json!({"taskId": id}));
            assert_eq!(result["content"][0]["text"].as_str(), Some(text.as_str()), "{result}");
            assert_eq!(run_count.get(text.as_str()), Some(&1), "the tool ran once for {text}");
        }
    }
    assert!(run_count.values().all(|count| *count == 1), "no call's tool ran twice: {run_count:?}");
    // The change feed is back: a task created on one replica and waited for on the other.
    let [a, b] = &mut replicas[..] else { unreachable!() };
    let id = crate::harness::create_task(a, "slow", json!({"seconds": 0.2}));
    let result = b.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "done\n", "{result}");
}
