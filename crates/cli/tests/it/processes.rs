//! Many processes on one SQLite file, from outside: `mcp-tasks serve --stdio` started two or
//! three times on one store (the default store, as hosts start one per window), each its own
//! client session. Any process answers for any task; a cancel and an input answer reach the
//! work wherever it runs; a process killed with -9 has its tasks resolved by a live one by
//! their `on_restart`; creations spread over processes each run once; `max_concurrent`
//! holds across them; a `--no-work` process queues and an `mcp-tasks worker` runs.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{CONFIG, Server, Workdir, create_task, started_pid};
use crate::replicas::{ONE_AT_A_TIME, TAKE_OVER_DEADLINE, Worker, get_until};

/// A tool that notes each of its runs in a file, one line per run.
const COUNTED: &str = r#"
[[tools]]
name = "counted"
command = ["sh", "-c", "echo \"$1\" >> \"$2\"; echo \"ran $1\"", "_", "{n}", "{runs}"]
[tools.input_schema]
type = "object"
properties = { n = { type = "string" }, runs = { type = "string" } }
"#;

/// A home of its own where the default store lives (`$XDG_DATA_HOME/mcp-tasks/…`), and the
/// config; servers started without `--store`, as a host starts them.
struct Host {
    work: Workdir,
}

impl Host {
    fn new() -> Host {
        // Twenty creations at once: room for them all to run together.
        Host::with_limit(32)
    }

    /// A host whose config allows `per_principal` running tasks and calls per principal.
    fn with_limit(per_principal: u32) -> Host {
        let work = Workdir::new();
        let config = CONFIG.replace(
            "poll_interval = \"250ms\"",
            &format!("poll_interval = \"250ms\"\nmax_running_per_principal = {per_principal}"),
        );
        assert_ne!(config, CONFIG);
        std::fs::write(work.config(), format!("{config}{COUNTED}{ONE_AT_A_TIME}")).expect("write the config");
        Host { work }
    }

    fn data_home(&self) -> PathBuf {
        self.work.path("data")
    }

    /// `mcp-tasks serve --stdio` on the default store, initialized with `capabilities`.
    fn serve(&self, capabilities: Value) -> Server {
        self.serve_with(&[], capabilities)
    }

    fn serve_with(&self, extra: &[&str], capabilities: Value) -> Server {
        let mut command = self.command();
        command.args(["serve", "--stdio", "--config"]).arg(self.work.config()).args(extra);
        let mut server = Server::spawn(command);
        server.initialize_with(capabilities);
        server
    }

    fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
        command.env("XDG_DATA_HOME", self.data_home()).env("HOME", self.work.path("home"));
        command
    }

    /// The default store's file, once a server made it.
    fn store(&self) -> PathBuf {
        self.data_home().join("mcp-tasks").join("tasks.sqlite3")
    }
}

#[test]
fn sqlite_processes_two_stdio_servers_on_the_default_store_both_serve_and_share_their_tasks() {
    let host = Host::new();
    let mut a = host.serve(json!({}));
    let mut b = host.serve(json!({}));
    assert!(host.store().exists(), "both serve the default store {}", host.store().display());
    // Made through A: read and collected through B (B's tasks/result is woken by A's write).
    let id = create_task(&mut a, "slow", json!({"seconds": 1}));
    let got = b.call("tasks/get", json!({"taskId": id}));
    assert_eq!((got["taskId"].as_str(), got["status"].as_str()), (Some(id.as_str()), Some("working")), "{got}");
    let result = b.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "done\n", "{result}");
    assert_eq!(a.call("tasks/get", json!({"taskId": id}))["status"], "completed");
    // One principal (the local user) on both: B lists what A made, and A what B made.
    let other = create_task(&mut b, "echo", json!({"text": "from b"}));
    assert_eq!(a.call("tasks/result", json!({"taskId": other}))["content"][0]["text"], "from b");
    for server in [&mut a, &mut b] {
        let listed = server.call("tasks/list", json!({}));
        let ids: Vec<&str> = listed["tasks"].as_array().unwrap().iter().filter_map(|task| task["taskId"].as_str()).collect();
        assert!(ids.contains(&id.as_str()) && ids.contains(&other.as_str()), "{listed}");
    }
    // Cancelled through B while it runs on A: A's work ends within a second.
    let running = create_task(&mut a, "slow", json!({"seconds": 60}));
    let pgid = started_pid(&mut a, &running);
    let cancelled = b.call("tasks/cancel", json!({"taskId": running}));
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let deadline = Instant::now() + Duration::from_secs(1);
    while nix::sys::signal::killpg(pgid, None).is_ok() {
        assert!(Instant::now() < deadline, "the work's process group {pgid} still runs a second after the cancel");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(a.call("tasks/get", json!({"taskId": running}))["status"], "cancelled");
}

#[test]
fn sqlite_processes_an_input_request_raised_on_b_is_answered_through_a_and_the_work_completes() {
    const RELATED: &str = "io.modelcontextprotocol/related-task";
    let host = Host::new();
    let mut a = host.serve(json!({"elicitation": {}}));
    let mut b = host.serve(json!({"elicitation": {}}));
    let id = create_task(&mut b, "confirm", json!({}));
    get_until(&mut a, &id, Instant::now() + TAKE_OVER_DEADLINE, |task| task["status"] == "input_required");
    let waiting = a.send_request("tasks/result", json!({"taskId": id}));
    let asked = a.notification(|n| n["method"] == "elicitation/create");
    assert_eq!(asked["params"]["message"], "Really?");
    a.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"ok": true}},
        "_meta": {RELATED: {"taskId": id}}}));
    let response = a.response(waiting);
    let text = response["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(text, "answer: {\"action\":\"accept\",\"content\":{\"ok\":true}}\n", "{response}");
    assert_eq!(b.call("tasks/get", json!({"taskId": id}))["status"], "completed");
}

#[test]
fn sqlite_processes_a_process_killed_with_9_has_its_tasks_resolved_by_a_live_one_by_their_restart_policy() {
    let host = Host::new();
    let marker = host.work.path("first-run-marker");
    let mut a = host.serve(json!({}));
    let mut b = host.serve(json!({}));
    let failing = create_task(&mut a, "slow", json!({"seconds": 60}));
    let retried = create_task(&mut a, "retry_job", json!({"marker": marker.to_str().unwrap()}));
    let first_run = Instant::now() + TAKE_OVER_DEADLINE;
    while !marker.exists() {
        assert!(Instant::now() < first_run, "the first run of retry_job never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    a.kill();
    let killed = Instant::now();
    // The default lease is 30 s: B knows at once that A is gone (its node's lock went with
    // it) and resolves its tasks on its next rescuer pass.
    let deadline = killed + TAKE_OVER_DEADLINE;
    let failed = get_until(&mut b, &failing, deadline, |task| task["status"] != "working");
    assert_eq!(failed["status"], "failed", "a fail tool is failed, never run twice: {failed}");
    assert!(failed["statusMessage"].as_str().unwrap_or_default().contains("interrupted"), "{failed}");
    get_until(&mut b, &retried, deadline, |task| task["status"] == "completed");
    let taken = killed.elapsed();
    let result = b.call("tasks/result", json!({"taskId": retried}));
    assert_eq!(result["content"][0]["text"], "second-run\n", "{result}");
    eprintln!("sqlite processes: the killed process's tasks were resolved {taken:?} after the kill");
    assert!(taken < Duration::from_secs(15), "well within the 30 s lease: {taken:?}");
}

#[test]
fn sqlite_processes_twenty_creations_spread_over_three_processes_each_run_once() {
    let host = Host::new();
    let runs = host.work.path("runs");
    let mut servers: Vec<Server> = (0..3).map(|_| host.serve(json!({}))).collect();
    // Sent to all three before any answer is read: the creations race.
    let mut sent = Vec::new();
    for n in 0..20 {
        let params = json!({"name": "counted", "arguments": {"n": n.to_string(), "runs": runs.to_str().unwrap()}, "task": {"ttl": 60000}});
        sent.push((n % 3, servers[n % 3].send_request("tools/call", params)));
    }
    let mut ids = Vec::new();
    for (to, request) in sent {
        let answer = servers[to].response_in_any_order(request);
        ids.push(answer["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {answer}")).to_owned());
    }
    // Each collected through another process than the one that made it.
    for (n, id) in ids.iter().enumerate() {
        let result = servers[(n + 1) % 3].call("tasks/result", json!({"taskId": id}));
        assert_eq!(result["content"][0]["text"], format!("ran {n}\n"), "{result}");
    }
    let mut lines: Vec<u32> = std::fs::read_to_string(&runs).unwrap().lines().map(|line| line.parse().unwrap()).collect();
    lines.sort_unstable();
    assert_eq!(lines, (0..20).collect::<Vec<u32>>(), "each creation ran once");
}

#[test]
fn sqlite_processes_max_concurrent_1_holds_across_processes_under_concurrent_calls() {
    let host = Host::new();
    let (lock, overlaps) = (host.work.path("lock"), host.work.path("overlaps"));
    let arguments = json!({"lock": lock.to_str().unwrap(), "overlaps": overlaps.to_str().unwrap()});
    let mut servers: Vec<Server> = (0..3).map(|_| host.serve(json!({}))).collect();
    let mut sent = Vec::new();
    for n in 0..9 {
        let params = json!({"name": "one_at_a_time", "arguments": arguments, "task": {"ttl": 60000}});
        sent.push((n % 3, servers[n % 3].send_request("tools/call", params)));
    }
    let ids: Vec<(usize, String)> = sent
        .into_iter()
        .map(|(to, request)| (to, servers[to].response_in_any_order(request)["result"]["task"]["taskId"].as_str().expect("a task").to_owned()))
        .collect();
    for (n, id) in &ids {
        let result = servers[(n + 1) % 3].call("tasks/result", json!({"taskId": id}));
        assert_eq!(result["content"][0]["text"], "ok\n", "task {id} ran alone: {result}");
    }
    assert!(!overlaps.exists(), "runs overlapped: {:?}", std::fs::read_to_string(&overlaps));
}

/// `max_running_per_principal = 2` across three processes on one file: six task calls of the
/// local user sent to the three at once create exactly two tasks; the other four are refused
/// with -32010 naming the limit; a task that ends frees its place for any process.
#[test]
fn sqlite_processes_max_running_per_principal_2_holds_across_processes_under_concurrent_calls() {
    let host = Host::with_limit(2);
    let mut servers: Vec<Server> = (0..3).map(|_| host.serve(json!({}))).collect();
    let mut sent = Vec::new();
    for n in 0..6 {
        let params = json!({"name": "slow", "arguments": {"seconds": 30}, "task": {"ttl": 60000}});
        sent.push((n % 3, servers[n % 3].send_request("tools/call", params)));
    }
    let (mut created, mut refused) = (Vec::new(), Vec::new());
    for (to, request) in sent {
        let answer = servers[to].response_in_any_order(request);
        match answer["result"]["task"]["taskId"].as_str() {
            Some(task) => created.push(task.to_owned()),
            None => refused.push(answer["error"].clone()),
        }
    }
    assert_eq!(created.len(), 2, "exactly the limit, across the processes: {created:?} / {refused:?}");
    for error in &refused {
        assert_eq!(error["code"], -32010, "{error}");
        assert_eq!(error["data"]["limit"], "max_running_per_principal", "{error}");
    }
    // One ends (cancelled through another process than the one running it): a place is free
    // for any process.
    let cancelled = servers[2].call("tasks/cancel", json!({"taskId": created[0]}));
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let deadline = Instant::now() + TAKE_OVER_DEADLINE;
    loop {
        let again = servers[1].request("tools/call", json!({"name": "slow", "arguments": {"seconds": 30}, "task": {"ttl": 60000}}));
        if again["result"]["task"]["taskId"].is_string() {
            break;
        }
        assert_eq!(again["error"]["data"]["limit"], "max_running_per_principal", "{again}");
        assert!(Instant::now() < deadline, "no place came free after the cancel: {again}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sqlite_processes_a_no_work_process_queues_tasks_and_a_worker_on_the_same_file_runs_them() {
    let host = Host::new();
    let mut front = host.serve_with(&["--no-work"], json!({}));
    let id = create_task(&mut front, "echo", json!({"text": "run by the worker"}));
    assert_eq!(front.call("tasks/get", json!({"taskId": id}))["status"], "working");
    let store = host.store();
    let mut worker = host.command();
    worker.args(["worker", "--config"]).arg(host.work.config()).arg("--store").arg(&store);
    let _worker = Worker::spawn(worker);
    let result = front.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "run by the worker", "{result}");
    // Queued after the worker started: claimed as it arrives (woken by the file's change).
    let next = create_task(&mut front, "echo", json!({"text": "next"}));
    assert_eq!(front.call("tasks/result", json!({"taskId": next}))["content"][0]["text"], "next");
}

/// An earlier build allowed one server per file and held `PATH-lock` exclusively: while one
/// serves, this build is refused, saying so (and it is refused while this one serves).
#[test]
fn sqlite_processes_a_file_served_by_an_earlier_single_server_build_is_refused_with_what_to_do() {
    let work = Workdir::new();
    let store = work.store();
    let lock = format!("{}-lock", store.display());
    let mut holder = std::process::Command::new("python3")
        .args(["-c", "import fcntl, os, sys; f = open(sys.argv[1], 'w'); f.write(str(os.getpid())); f.flush(); fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()", &lock])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut line).unwrap();
    assert_eq!(line.trim(), "locked");
    let output = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["serve", "--stdio", "--config"])
        .arg(work.config())
        .arg("--store")
        .arg(&store)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run mcp-tasks");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("earlier mcp-tasks build"), "{stderr}");
    assert!(stderr.contains(&format!("process {}", holder.id())), "names the holder: {stderr}");
    assert!(stderr.contains("stop or upgrade"), "says what to do: {stderr}");
    drop(holder.stdin.take());
    holder.wait().unwrap();
    let mut server = work.start();
    server.initialize();
}
