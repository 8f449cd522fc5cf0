//! Faults of PostgreSQL and of the network under two replicas (issue 14 item 5), on a private
//! cluster ([`Cluster`]) that the test may restart and crash, never the shared server:
//! PostgreSQL restarted (`pg_ctl restart -m fast`) and crashed (`-m immediate`) while tasks are
//! created and collected on both replicas; and one replica on a test host of its own
//! ([`TestHost`], a network namespace) cut off from the database for longer than its lease.
//! Skipped when the machine cannot run them (not root, no PostgreSQL binaries, no `ip netns`),
//! failed instead under `CI=true`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{CONFIG, Server, Workdir, create_task, started_pid};
use crate::netns::TestHost;
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

/// Sets its flag when dropped: the load threads stop also when the test fails.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
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
/// its tool run once; work of a third replica that ended during each outage completes; the
/// replicas serve again by themselves, the change feed included.
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
    // A third replica runs work that ends while the database is down: its outcome is written
    // again until it lands.
    let mut c = Server::start(&work.config(), Path::new(&store));
    c.initialize();
    let mut spanning = Vec::new();
    let stop = Arc::new(AtomicBool::new(false));
    let _stop_on_failure = StopOnDrop(Arc::clone(&stop));
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
    spanning.push(create_task(&mut c, "slow", json!({"seconds": 0.2})));
    let restarted = Instant::now();
    cluster.restart("fast");
    let fast_outage = restarted.elapsed();
    eprintln!("pg_faults: PostgreSQL restarted (-m fast) in {fast_outage:?}");
    let after_fast = acked.load(Ordering::SeqCst);
    wait_acked(&acked, after_fast + 20, &cluster);
    spanning.push(create_task(&mut c, "slow", json!({"seconds": 0.2})));
    let crashed = Instant::now();
    cluster.restart("immediate");
    let crash_outage = crashed.elapsed();
    eprintln!("pg_faults: PostgreSQL crashed and recovered (-m immediate) in {crash_outage:?}");
    let after_crash = acked.load(Ordering::SeqCst);
    wait_acked(&acked, after_crash + 20, &cluster);
    stop.store(true, Ordering::SeqCst);
    let mut replicas: Vec<Server> = threads.into_iter().map(|thread| thread.join().expect("the load ran")).collect();

    let seen: Vec<Seen> = seen.into_iter().map(|seen| std::mem::take(&mut *seen.lock().unwrap())).collect();
    check_answers(&seen, fast_outage.min(crash_outage));
    check_acknowledged(&seen, &mut replicas, &runs);
    for id in &spanning {
        let result = replicas[0].call("tasks/result", json!({"taskId": id}));
        assert_eq!(result["content"][0]["text"], "done\n", "work that ended during the outage completed: {result}");
    }
    // The change feed is back: a task created on one replica and waited for on the other.
    let [a, b] = &mut replicas[..] else { unreachable!() };
    let id = create_task(a, "slow", json!({"seconds": 0.2}));
    let result = b.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "done\n", "{result}");
}

/// Every answer of the load came within the bound, every error said it may be retried, and
/// some request met an outage (`shorter_outage`, the shorter of the two).
fn check_answers(seen: &[Seen], shorter_outage: Duration) {
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
    // The load never pauses, so some request meets each outage: it fails, or it waits for
    // much of it.
    let outage = shorter_outage / 4;
    let met_the_outage = seen.iter().any(|seen| !seen.errors.is_empty() || seen.slowest > outage);
    assert!(met_the_outage, "no request met an outage: the load did not run across the restarts");
}

/// Each acknowledged task of `seen`, read on the other replica: completed with its text, its
/// tool run once (by the lines in `runs`).
fn check_acknowledged(seen: &[Seen], replicas: &mut [Server], runs: &Path) {
    // Each acknowledged task, read on the other replica: completed with its text, run once.
    let runs = std::fs::read_to_string(runs).unwrap_or_default();
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
}

/// The lease of the partition test's replicas: short, so that the cut outlasts it quickly.
const LEASE: Duration = Duration::from_secs(2);

/// A tool whose work waits for a file to exist, then ends (so that it can end at a moment the
/// test chooses: inside a partition).
const ENDS_WHEN: &str = r#"
[[tools]]
name = "ends_when"
command = ["sh", "-c", "while [ ! -e \"$1\" ]; do sleep 0.05; done; echo late", "_", "{file}"]
[tools.input_schema]
type = "object"
properties = { file = { type = "string" } }
"#;

/// Calls `tasks/get` on `server` until the task leaves `working`, at most until `deadline`.
fn settled(server: &mut Server, id: &str, deadline: Instant) -> Value {
    loop {
        let task = server.call("tasks/get", json!({"taskId": id}));
        if task["status"] != "working" {
            return task;
        }
        assert!(Instant::now() < deadline, "task {id} never left working: {task}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Replica A runs on a test host of its own (a network namespace joined by a veth pair), B on
/// this one, both on a private cluster that listens on both; A's link goes down for longer
/// than its lease while A runs three tasks, one of which ends inside the partition: B takes
/// all three over by their restart policy; A's work is stopped, and the outcome A held is
/// never stored (fenced: by A, which knows its claim lapsed, or by the attempt B bumped);
/// once the link is back what B decided stands, and A serves again without a restart.
#[test]
fn replicas_a_replica_on_its_own_host_cut_off_longer_than_its_lease_is_taken_over_fenced_and_serves_again() {
    let Some(host) = TestHost::create() else { return };
    let Some(cluster) = Cluster::start(&[&host.host_address], &[&host.network]) else { return };
    let work = Workdir::new();
    let lease = format!("lease = \"{}ms\"", LEASE.as_millis());
    let config = CONFIG.replacen("name = \"test-server\"", &format!("name = \"test-server\"\n{lease}"), 1) + ENDS_WHEN;
    std::fs::write(work.config(), config).expect("write the config");
    let log = work.path("replica-a.log");
    let mut a = {
        let mut command = host.command(env!("CARGO_BIN_EXE_mcp-tasks"));
        command.args(["serve", "--stdio", "--config"]).arg(work.config());
        command.args(["--store", &cluster.url_on(&host.host_address)]);
        Server::spawn_logging(command, "warn,mcp_tasks_engine::run=debug", &log)
    };
    let mut b = Server::start(&work.config(), Path::new(&cluster.url()));
    a.initialize();
    b.initialize();
    let marker = work.path("first-run-marker");
    let release = work.path("release");
    let failing = create_task(&mut a, "slow", json!({"seconds": 60}));
    let pgid = started_pid(&mut a, &failing);
    let late = create_task(&mut a, "ends_when", json!({"file": release.to_str().unwrap()}));
    started_pid(&mut a, &late);
    let retried = create_task(&mut a, "retry_job", json!({"marker": marker.to_str().unwrap()}));
    let first_run = Instant::now() + DEADLINE;
    while !marker.exists() {
        assert!(Instant::now() < first_run, "the first run of retry_job never started");
        std::thread::sleep(Duration::from_millis(20));
    }

    host.set_link(false);
    let cut = Instant::now();
    // `late`'s work ends now, on A, which cannot write its outcome until the link is back.
    std::fs::write(&release, "").expect("release the work");
    let deadline = cut + DEADLINE;
    for id in [&failing, &late] {
        let task = settled(&mut b, id, deadline);
        assert_eq!(task["status"], "failed", "a fail tool of the cut-off replica is failed by B: {task}");
        assert!(task["statusMessage"].as_str().unwrap_or_default().contains("interrupted"), "{task}");
    }
    let done = settled(&mut b, &retried, deadline);
    let result = b.call("tasks/result", json!({"taskId": retried}));
    assert_eq!(result["content"][0]["text"], "second-run\n", "a retry tool is run again by B: {done} {result}");
    while nix::sys::signal::killpg(pgid, None).is_ok() {
        assert!(Instant::now() < deadline, "replica A's work still runs {:?} after the cut", cut.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("pg_faults: the cut-off replica's tasks were resolved by the other {:?} after the cut (lease {LEASE:?})", cut.elapsed());

    host.set_link(true);
    let healed = Instant::now();
    // A's outcome of `late` ("late") is never stored: A drops it itself once it knows its
    // claim lapsed (no renewal for a whole lease), or, written again until it reaches the
    // database, it is refused there (the attempt it is fenced by has moved on).
    let fenced = |line: &&str| {
        line.contains(&format!("task={late}"))
            && (line.contains("work ended after this node lost its claim; nothing written")
                || line.contains("work ended after the task was already terminal, or taken over"))
    };
    let refusal = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(line) = text.lines().find(fenced) {
            break line.to_owned();
        }
        assert!(healed.elapsed() < DEADLINE, "replica A never gave up its late write of {late}; its log:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!("pg_faults: the cut-off replica's late write: {refusal}");
    for (id, status) in [(&failing, "failed"), (&late, "failed"), (&retried, "completed")] {
        let seen_by_a = a.call("tasks/get", json!({"taskId": id}));
        assert_eq!(seen_by_a["status"], status, "what B decided stands: {seen_by_a}");
    }
    let error = a.call_err("tasks/result", json!({"taskId": late}));
    assert!(!error.to_string().contains("late"), "the late outcome was not stored: {error}");
    // A serves again, work included, and B sees it.
    let id = create_task(&mut a, "echo", json!({"text": "after the partition"}));
    let result = b.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "after the partition", "{result}");
}
