//! Many replicas on one PostgreSQL: three `mcp-tasks serve --stdio --store postgres://…` on
//! one fresh schema and one config (a 2 s lease), each its own client session. Any replica
//! answers for any task; a cancel and an input answer reach the work wherever it runs; a dead
//! replica's work is taken over by the others. Skipped without `TEST_DATABASE_URL` (failed
//! under `CI=true`).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{CONFIG, Server, Workdir, create_task, started_pid};
use crate::http::{ALICE, BOB, Client, HttpServer, TOKENS};
use crate::postgres::{Schema, database_url};

/// The lease of the replicas' claims: a dead replica's tasks are taken over this long after
/// its last heartbeat, plus one rescuer sweep (half a lease).
const LEASE: Duration = Duration::from_secs(2);

/// How long a take-over may take at most, with room for a loaded machine.
pub(crate) const TAKE_OVER_DEADLINE: Duration = Duration::from_secs(20);

/// A tool one call of which may run at a time, across the replicas: each run takes a
/// directory as a lock (`mkdir` fails if it exists) and notes an overlap if it cannot.
pub(crate) const ONE_AT_A_TIME: &str = r#"
[[tools]]
name = "one_at_a_time"
max_concurrent = 1
command = ["sh", "-c", "if mkdir \"$1\"; then sleep 0.2; rmdir \"$1\"; echo ok; else echo overlap >> \"$2\"; echo overlap; fi", "_", "{lock}", "{overlaps}"]
[tools.input_schema]
type = "object"
properties = { lock = { type = "string" }, overlaps = { type = "string" } }
"#;

/// Three replicas (A, B, C) on a fresh schema, their config with a short lease, and the guards.
struct Replicas {
    servers: Vec<Server>,
    schema: Schema,
    _work: Workdir,
}

impl Replicas {
    fn start(capabilities: &Value) -> Option<Replicas> {
        Replicas::start_with(capabilities, "")
    }

    /// As [`Replicas::start`], with `server` added to the config's `[server]` table.
    fn start_with(capabilities: &Value, server: &str) -> Option<Replicas> {
        let server_url = database_url()?;
        let schema = Schema::create(&server_url);
        let work = Workdir::new();
        std::fs::write(work.config(), replica_config(server) + ONE_AT_A_TIME).expect("write the config");
        let store = schema.url();
        let servers = (0..3)
            .map(|_| {
                let mut server = Server::start(&work.config(), Path::new(&store));
                server.initialize_with(capabilities.clone());
                server
            })
            .collect();
        Some(Replicas { servers, schema, _work: work })
    }
}

/// Calls `tasks/get` on `server` until `done` holds for the task, at most until `deadline`.
pub(crate) fn get_until(server: &mut Server, id: &str, deadline: Instant, done: impl Fn(&Value) -> bool) -> Value {
    loop {
        let task = server.call("tasks/get", json!({"taskId": id}));
        if done(&task) {
            return task;
        }
        assert!(Instant::now() < deadline, "task {id} never got there: {task}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn replicas_a_task_created_on_a_is_read_listed_and_collected_on_b_and_c() {
    let Some(mut replicas) = Replicas::start(&json!({})) else { return };
    let [a, b, c] = &mut replicas.servers[..] else { unreachable!() };
    let id = create_task(a, "slow", json!({"seconds": 1}));
    let got = b.call("tasks/get", json!({"taskId": id}));
    assert_eq!((got["taskId"].as_str(), got["status"].as_str()), (Some(id.as_str()), Some("working")), "{got}");
    // B's tasks/result waits for the work on A, woken by the change from the store.
    let result = b.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "done\n", "{result}");
    let listed = c.call("tasks/list", json!({}));
    let ids: Vec<&str> = listed["tasks"].as_array().unwrap().iter().filter_map(|task| task["taskId"].as_str()).collect();
    assert_eq!(ids, [id.as_str()], "{listed}");
    assert_eq!(c.call("tasks/get", json!({"taskId": id}))["status"], "completed");
    assert_eq!(replicas.schema.status(&id), "completed");
}

#[test]
fn replicas_a_cancel_sent_to_c_stops_the_work_running_on_a_within_a_second() {
    let Some(mut replicas) = Replicas::start(&json!({})) else { return };
    let [a, _, c] = &mut replicas.servers[..] else { unreachable!() };
    let id = create_task(a, "slow", json!({"seconds": 60}));
    let pgid = started_pid(a, &id);
    let cancelled = c.call("tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancelled["status"], "cancelled", "legacy_70: cancelled before the answer: {cancelled}");
    let asked = Instant::now();
    let deadline = asked + Duration::from_secs(1);
    while nix::sys::signal::killpg(pgid, None).is_ok() {
        assert!(Instant::now() < deadline, "the work's process group {pgid} still runs a second after the cancel");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(a.call("tasks/get", json!({"taskId": id}))["status"], "cancelled");
}

#[test]
fn replicas_an_input_request_raised_by_work_on_b_is_answered_through_a_and_the_work_completes() {
    const RELATED: &str = "io.modelcontextprotocol/related-task";
    let Some(mut replicas) = Replicas::start(&json!({"elicitation": {}})) else { return };
    let [a, b, _] = &mut replicas.servers[..] else { unreachable!() };
    let id = create_task(b, "confirm", json!({}));
    let deadline = Instant::now() + TAKE_OVER_DEADLINE;
    get_until(a, &id, deadline, |task| task["status"] == "input_required");
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
fn replicas_a_killed_replicas_tasks_are_taken_over_within_the_lease_by_their_restart_policy() {
    let Some(mut replicas) = Replicas::start(&json!({})) else { return };
    let marker = replicas._work.path("first-run-marker");
    let mut a = replicas.servers.remove(0);
    let failing = create_task(&mut a, "slow", json!({"seconds": 60}));
    let retried = create_task(&mut a, "retry_job", json!({"marker": marker.to_str().unwrap()}));
    let first_run = Instant::now() + TAKE_OVER_DEADLINE;
    while !marker.exists() {
        assert!(Instant::now() < first_run, "the first run of retry_job never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    a.kill();
    let killed = Instant::now();
    let b = &mut replicas.servers[0];
    let deadline = killed + TAKE_OVER_DEADLINE;
    let failed = get_until(b, &failing, deadline, |task| task["status"] != "working");
    assert_eq!(failed["status"], "failed", "a fail tool is failed, never run twice: {failed}");
    assert!(failed["statusMessage"].as_str().unwrap_or_default().contains("interrupted"), "{failed}");
    let done = get_until(b, &retried, deadline, |task| task["status"] == "completed");
    let taken = killed.elapsed();
    let result = b.call("tasks/result", json!({"taskId": retried}));
    assert_eq!(result["content"][0]["text"], "second-run\n", "{done} {result}");
    // A lease, one rescuer sweep (half a lease) and the heartbeat's third; bounded loosely
    // above for a loaded machine, printed for the record.
    eprintln!("replicas: the killed replica's tasks were resolved {taken:?} after the kill (lease {LEASE:?})");
    assert!(taken < TAKE_OVER_DEADLINE);
}

/// An `mcp-tasks worker` (on the schema of a [`Schema`], or as any command gives it), killed
/// when dropped.
pub(crate) struct Worker(std::process::Child);

impl Worker {
    fn start(config: &Path, schema: &Schema) -> Worker {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
        command.args(["worker", "--config"]).arg(config).args(["--store", &schema.url()]);
        Worker::spawn(command)
    }

    /// Starts `command` (an `mcp-tasks worker …`) and waits until it says it started.
    pub(crate) fn spawn(mut command: std::process::Command) -> Worker {
        use std::io::{BufRead, BufReader};
        let mut child = command
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn mcp-tasks worker");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.starts_with("mcp-tasks: worker ") {
                    let _ = tx.send(());
                }
                eprintln!("[worker] {line}");
            }
        });
        rx.recv_timeout(Duration::from_secs(30)).expect("the worker says it started");
        Worker(child)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn replicas_a_no_work_replica_queues_tasks_and_a_worker_runs_them() {
    let Some(server_url) = database_url() else { return };
    let schema = Schema::create(&server_url);
    let work = Workdir::new();
    let mut http_tier = {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
        child.args(["serve", "--stdio", "--no-work", "--config"]).arg(work.config()).args(["--store", &schema.url()]);
        Server::spawn(child)
    };
    http_tier.initialize();
    let id = create_task(&mut http_tier, "echo", json!({"text": "run by the worker"}));
    let queued = http_tier.call("tasks/get", json!({"taskId": id}));
    assert_eq!(queued["status"], "working", "{queued}");
    let _worker = Worker::start(&work.config(), &schema);
    let result = http_tier.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "run by the worker", "{result}");
    // Queued after the worker started: claimed as it arrives (woken by the store's change).
    let next = create_task(&mut http_tier, "echo", json!({"text": "next"}));
    let result = http_tier.call("tasks/result", json!({"taskId": next}));
    assert_eq!(result["content"][0]["text"], "next", "{result}");
}

#[test]
fn replicas_max_concurrent_1_holds_across_replicas_under_concurrent_calls() {
    const PER_REPLICA: usize = 3;
    let Some(mut replicas) = Replicas::start(&json!({})) else { return };
    let lock = replicas._work.path("lock");
    let overlaps = replicas._work.path("overlaps");
    let arguments = json!({"lock": lock.to_str().unwrap(), "overlaps": overlaps.to_str().unwrap()});
    // Calls sent to all three before any answer is read: the tasks are created together.
    let mut sent = Vec::new();
    for _ in 0..PER_REPLICA {
        for (n, server) in replicas.servers.iter_mut().enumerate() {
            let params = json!({"name": "one_at_a_time", "arguments": arguments, "task": {"ttl": 60000}});
            sent.push((n, server.send_request("tools/call", params)));
        }
    }
    // Each replica answers its calls in any order.
    let mut ids = Vec::new();
    for (n, server) in replicas.servers.iter_mut().enumerate() {
        let mut waiting: Vec<i64> = sent.iter().filter(|(to, _)| *to == n).map(|(_, request)| *request).collect();
        while !waiting.is_empty() {
            let message = server.recv();
            let Some(id) = message.get("id").and_then(Value::as_i64).filter(|id| waiting.contains(id)) else { continue };
            waiting.retain(|request| *request != id);
            ids.push((n, message["result"]["task"]["taskId"].as_str().expect("a task").to_owned()));
        }
    }
    for (n, id) in &ids {
        let result = replicas.servers[(n + 1) % 3].call("tasks/result", json!({"taskId": id}));
        assert_eq!(result["content"][0]["text"], "ok\n", "task {id} ran alone: {result}");
    }
    assert!(!overlaps.exists(), "runs overlapped: {:?}", std::fs::read_to_string(&overlaps));
}

/// The database cuts every connection of two replicas (`pg_terminate_backend`, as a restart of
/// PostgreSQL does to its clients) five times under load: a request that meets a cut gets an
/// error and the replica keeps serving; every task acknowledged runs to its end; the replicas
/// reconnect by themselves (pool and listener), and a result waited for on the other replica
/// still arrives.
#[test]
fn replicas_connections_cut_by_the_database_under_load_lose_nothing_and_service_resumes() {
    use crate::postgres::execute;
    let Some(server_url) = database_url() else { return };
    let schema = Schema::create(&server_url);
    let work = Workdir::new();
    let name = format!("mcp_tasks_cut_{}", std::process::id());
    let store = format!("{}&application_name={name}", schema.url());
    let lease = format!("lease = \"{}ms\"", LEASE.as_millis());
    std::fs::write(work.config(), CONFIG.replacen("name = \"test-server\"", &format!("name = \"test-server\"\n{lease}"), 1))
        .expect("write the config");
    let mut a = Server::start(&work.config(), Path::new(&store));
    let mut b = Server::start(&work.config(), Path::new(&store));
    a.initialize();
    b.initialize();
    let (mut acknowledged, mut refused) = (Vec::new(), 0);
    for round in 0..5 {
        for n in 0..4 {
            let text = format!("round {round} call {n}");
            let params = json!({"name": "echo", "arguments": {"text": text}, "task": {"ttl": 60000}});
            let response = a.request("tools/call", params);
            match response["result"]["task"]["taskId"].as_str() {
                Some(id) => acknowledged.push((id.to_owned(), text)),
                None => {
                    assert!(response["error"]["message"].is_string(), "an error that says what failed: {response}");
                    refused += 1;
                }
            }
        }
        execute(&server_url, &format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '{name}'"));
    }
    let deadline = Instant::now() + TAKE_OVER_DEADLINE;
    for (id, text) in &acknowledged {
        let done = loop {
            let response = b.request("tasks/get", json!({"taskId": id}));
            if response["result"]["status"] == "completed" {
                break response["result"].clone();
            }
            assert!(Instant::now() < deadline, "task {id} never completed: {response}");
            std::thread::sleep(Duration::from_millis(50));
        };
        let result = b.call("tasks/result", json!({"taskId": id}));
        assert_eq!(result["content"][0]["text"].as_str(), Some(text.as_str()), "{done} {result}");
    }
    eprintln!("replicas: {} tasks acknowledged, {refused} calls refused during the cuts, all completed", acknowledged.len());
    assert!(acknowledged.len() >= 10, "most calls between the cuts succeed: {} of 20", acknowledged.len());
    // After the cuts, a task created on A and waited for on B arrives through the feed.
    let id = create_task(&mut a, "slow", json!({"seconds": 0.3}));
    let result = b.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "done\n", "{result}");
}

/// A TCP proxy in front of the database that the test can cut: while cut it forwards nothing
/// either way and keeps every connection open (a partition: packets go nowhere, nobody is
/// told); healed, what waited flows on.
struct Partition {
    addr: std::net::SocketAddr,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Partition {
    fn to(target: std::net::SocketAddr) -> Partition {
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let cut = std::sync::Arc::new(AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&cut);
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                let Ok(server) = std::net::TcpStream::connect(target) else { continue };
                for (from, to) in [(client.try_clone(), server.try_clone()), (server.try_clone(), client.try_clone())] {
                    let (Ok(mut from), Ok(mut to)) = (from, to) else { continue };
                    let cut = std::sync::Arc::clone(&flag);
                    std::thread::spawn(move || {
                        use std::io::{Read, Write};
                        let _ = from.set_read_timeout(Some(Duration::from_millis(20)));
                        let mut buffer = [0u8; 16 * 1024];
                        loop {
                            if cut.load(Ordering::SeqCst) {
                                // Nothing read: the bytes wait in the kernel, as on a dead link.
                                std::thread::park_timeout(Duration::from_millis(20));
                                continue;
                            }
                            match from.read(&mut buffer) {
                                Ok(0) => return,
                                Ok(n) => {
                                    if to.write_all(&buffer[..n]).is_err() {
                                        return;
                                    }
                                }
                                Err(err) if matches!(err.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                                Err(_) => return,
                            }
                        }
                    });
                }
            }
        });
        Partition { addr, cut }
    }

    fn set_cut(&self, cut: bool) {
        self.cut.store(cut, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The `host:port` of a `postgres://user@host:port/db…` URL.
fn database_address(url: &str) -> Option<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    let rest = url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let host_port = authority.rsplit('@').next()?;
    let host_port = if host_port.contains(':') { host_port.to_owned() } else { format!("{host_port}:5432") };
    host_port.to_socket_addrs().ok()?.next()
}

/// Replica A is cut off from PostgreSQL (a partition, through a proxy) for longer than its
/// lease while B is not: B takes A's tasks over by their restart policy; A's work is gone
/// (stopped by A, and on one machine also ended by B); healed, A's late writes change nothing.
#[test]
fn replicas_a_replica_cut_off_longer_than_its_lease_loses_its_tasks_and_writes_nothing_late() {
    let Some(server_url) = database_url() else { return };
    let Some(database) = database_address(&server_url) else {
        panic!("TEST_DATABASE_URL names no host:port to put a proxy in front of: {server_url}");
    };
    let schema = Schema::create(&server_url);
    let work = Workdir::new();
    let lease = format!("lease = \"{}ms\"", LEASE.as_millis());
    std::fs::write(work.config(), CONFIG.replacen("name = \"test-server\"", &format!("name = \"test-server\"\n{lease}"), 1))
        .expect("write the config");
    let partition = Partition::to(database);
    let through_proxy = schema.url().replacen(&authority_of(&server_url), &format!("{}", partition.addr), 1);
    let mut a = Server::start(&work.config(), Path::new(&through_proxy));
    let mut b = Server::start(&work.config(), Path::new(&schema.url()));
    a.initialize();
    b.initialize();
    let marker = work.path("first-run-marker");
    let failing = create_task(&mut a, "slow", json!({"seconds": 60}));
    let pgid = started_pid(&mut a, &failing);
    let retried = create_task(&mut a, "retry_job", json!({"marker": marker.to_str().unwrap()}));
    let first_run = Instant::now() + TAKE_OVER_DEADLINE;
    while !marker.exists() {
        assert!(Instant::now() < first_run, "the first run of retry_job never started");
        std::thread::sleep(Duration::from_millis(20));
    }

    partition.set_cut(true);
    let cut = Instant::now();
    let deadline = cut + TAKE_OVER_DEADLINE;
    let failed = get_until(&mut b, &failing, deadline, |task| task["status"] != "working");
    assert_eq!(failed["status"], "failed", "{failed}");
    let done = get_until(&mut b, &retried, deadline, |task| task["status"] == "completed");
    let result = b.call("tasks/result", json!({"taskId": retried}));
    assert_eq!(result["content"][0]["text"], "second-run\n", "{done} {result}");
    // A's work is stopped: A cannot renew and stops it after a lease, and on this one machine
    // B, taking the task over, also ends the process group A recorded (either suffices here).
    while nix::sys::signal::killpg(pgid, None).is_ok() {
        assert!(Instant::now() < deadline, "replica A's work still runs {:?} after the partition", cut.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("replicas: the partitioned replica's work was gone {:?} after the cut; lease {LEASE:?}", cut.elapsed());

    partition.set_cut(false);
    // Healed: A answers again, and what B decided stands.
    let seen_by_a = a.call("tasks/get", json!({"taskId": failing}));
    assert_eq!(seen_by_a["status"], "failed", "{seen_by_a}");
    let again = a.call("tasks/result", json!({"taskId": retried}));
    assert_eq!(again, result, "the completion stands");
    assert_eq!(schema.status(&failing), "failed");
    assert_eq!(schema.status(&retried), "completed");
}

/// The `user@host:port` part of a URL, as it appears in it.
fn authority_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or_default();
    authority.rsplit('@').next().unwrap_or_default().to_owned()
}

/// Three `mcp-tasks serve --listen` on one fresh schema and one config with bearer tokens
/// (alice, bob): a load balancer without sticky sessions in front of them.
fn http_replicas() -> Option<(Vec<HttpServer>, Schema, Workdir)> {
    http_replicas_with("", TOKENS)
}

/// The replicas' config: the test config with the short [`LEASE`] and `server` added to its
/// `[server]` table.
fn replica_config(server: &str) -> String {
    let lease = format!("lease = \"{}ms\"\n{server}", LEASE.as_millis());
    CONFIG.replacen("name = \"test-server\"", &format!("name = \"test-server\"\n{lease}"), 1)
}

/// As [`http_replicas`], with `server` added to the config's `[server]` table and `tokens`
/// (the bearer tokens, or nothing: requestors are then not identified).
fn http_replicas_with(server: &str, tokens: &str) -> Option<(Vec<HttpServer>, Schema, Workdir)> {
    let server_url = database_url()?;
    let schema = Schema::create(&server_url);
    let work = Workdir::new();
    std::fs::write(work.config(), replica_config(server) + tokens).expect("write the config");
    let store = schema.url();
    let servers = (0..3).map(|_| HttpServer::start_on(&work, std::ffi::OsStr::new(&store), &[])).collect();
    Some((servers, schema, work))
}

/// A 2025-11-25 client whose every request reaches another replica: `initialize` on A,
/// `tools/call` as a task on B, `tasks/get` on C, `tasks/result` on A, `tasks/list` on B and
/// C; the session id used by another principal is 404 on every replica, exactly as an unknown
/// id; DELETE on B ends it for all, C and A (which holds it in memory) included.
#[test]
fn replicas_a_legacy_http_session_is_served_by_whichever_replica_each_request_reaches() {
    let Some((servers, _schema, _work)) = http_replicas() else { return };
    let [a, b, c] = &servers[..] else { unreachable!() };
    let mut client = Client::new(a, Some(ALICE));
    client.initialize();
    let created = client.at(b).result("tools/call", json!({"name": "slow", "arguments": {"seconds": 0.5}, "task": {}}));
    let id = created["task"]["taskId"].as_str().expect("a task").to_owned();
    let got = client.at(c).result("tasks/get", json!({"taskId": id}));
    assert_eq!(got["taskId"], id.as_str(), "{got}");
    let result = client.at(a).result("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "done\n", "{result}");
    for server in [b, c] {
        let listed = client.at(server).result("tasks/list", json!({}));
        let ids: Vec<&str> = listed["tasks"].as_array().expect("tasks").iter().filter_map(|task| task["taskId"].as_str()).collect();
        assert_eq!(ids, [id.as_str()], "{listed}");
    }
    assert_eq!(client.at(c).result("logging/setLevel", json!({"level": "error"})), json!({}));

    // Bob naming alice's session: 404, the same answer as for an id that never existed.
    for server in [a, b, c] {
        client.at(server);
        let ask = |mut impostor: Client| {
            let body = impostor.message("tasks/list", json!({}));
            impostor.post_with(&body, &[])
        };
        let stolen = ask(client.impostor(Some(BOB), client.session()));
        let unknown = ask(client.impostor(Some(BOB), "0123456789abcdef0123456789abcdef"));
        assert_eq!((stolen.status, unknown.status), (404, 404), "{} / {}", stolen.body, unknown.body);
        assert_eq!(stolen.body, unknown.body, "indistinguishable from an unknown id");
    }
    assert_eq!(client.at(a).result("tasks/get", json!({"taskId": id}))["status"], "completed", "alice still has her session");

    assert_eq!(client.at(b).delete(), 200, "DELETE on B");
    for server in [c, a] {
        let body = client.message("tasks/list", json!({}));
        let reply = client.at(server).post_with(&body, &[]);
        assert_eq!(reply.status, 404, "the session ended for every replica: {}", reply.body);
    }
}

/// `max_running_per_principal = 2` across three replicas: six task calls of one principal
/// sent to the three at once (two each, before any answer is read) create exactly two tasks;
/// the other four are refused with -32010 naming the limit, counted across the replicas.
#[test]
fn replicas_max_running_per_principal_2_holds_across_replicas_under_concurrent_calls() {
    let Some(mut replicas) = Replicas::start_with(&json!({}), "max_running_per_principal = 2") else { return };
    let mut sent = Vec::new();
    for _ in 0..2 {
        for (n, server) in replicas.servers.iter_mut().enumerate() {
            let params = json!({"name": "slow", "arguments": {"seconds": 30}, "task": {"ttl": 60000}});
            sent.push((n, server.send_request("tools/call", params)));
        }
    }
    let (mut created, mut refused) = (Vec::new(), Vec::new());
    for (n, server) in replicas.servers.iter_mut().enumerate() {
        let mut waiting: Vec<i64> = sent.iter().filter(|(to, _)| *to == n).map(|(_, request)| *request).collect();
        while !waiting.is_empty() {
            let message = server.recv();
            let Some(id) = message.get("id").and_then(Value::as_i64).filter(|id| waiting.contains(id)) else { continue };
            waiting.retain(|request| *request != id);
            match message["result"]["task"]["taskId"].as_str() {
                Some(task) => created.push(task.to_owned()),
                None => refused.push(message["error"].clone()),
            }
        }
    }
    assert_eq!(created.len(), 2, "exactly the limit, across the replicas: {created:?} / {refused:?}");
    for error in &refused {
        assert_eq!(error["code"], -32010, "{error}");
        assert_eq!(error["data"]["limit"], "max_running_per_principal", "{error}");
        assert_eq!(error["data"]["max"], 2, "{error}");
    }
    // A task that ends frees its place, for any replica (once the replica that runs it has
    // seen its work end: until then its own count still has it).
    let [a, _, c] = &mut replicas.servers[..] else { unreachable!() };
    assert_eq!(a.call("tasks/cancel", json!({"taskId": created[0]}))["status"], "cancelled");
    let deadline = Instant::now() + TAKE_OVER_DEADLINE;
    loop {
        let again = c.request("tools/call", json!({"name": "slow", "arguments": {"seconds": 30}, "task": {"ttl": 60000}}));
        if again["result"]["task"]["taskId"].is_string() {
            break;
        }
        assert_eq!(again["error"]["data"]["limit"], "max_running_per_principal", "{again}");
        assert!(Instant::now() < deadline, "no place came free after the cancel: {again}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Idle expiry of stored sessions (`session_idle = "1s"`): a session used through B alone
/// stays alive for every replica well past the idle period (B marks its record used, so A,
/// which let its own copy go, restores it); left alone for the idle period, its record is
/// pruned and every replica answers 404.
#[test]
fn replicas_a_stored_session_used_anywhere_stays_and_one_left_idle_ends_for_every_replica() {
    let Some((servers, schema, _work)) = http_replicas_with("session_idle = \"1s\"", TOKENS) else { return };
    let [a, b, c] = &servers[..] else { unreachable!() };
    let mut client = Client::new(a, Some(ALICE));
    client.initialize();
    let session = client.session().to_owned();
    let started = schema.session_last_used(&session).expect("stored at initialize");
    let deadline = Instant::now() + TAKE_OVER_DEADLINE;
    client.at(b);
    // Used through B until its record shows a use two idle periods after initialize.
    while schema.session_last_used(&session).expect("kept while used") < started + 2_000 {
        assert!(client.call("tools/list", json!({})).get("result").is_some(), "served by B");
        assert!(Instant::now() < deadline, "B never marked the session used");
        std::thread::sleep(Duration::from_millis(100));
    }
    for server in [a, c] {
        let listed = client.at(server).call("tools/list", json!({}));
        assert!(listed.get("result").is_some(), "still a session for every replica: {listed}");
    }
    // Left alone: pruned within the idle period and a sweep or two.
    while schema.session_last_used(&session).is_some() {
        assert!(Instant::now() < deadline, "the idle session's record was never pruned");
        std::thread::sleep(Duration::from_millis(100));
    }
    for server in [a, b, c] {
        let body = client.message("tools/list", json!({}));
        let reply = client.at(server).post_with(&body, &[]);
        assert_eq!(reply.status, 404, "ended for every replica: {}", reply.body);
    }
}

/// Without tokens a session lists only the tasks it created (2025-11-25 tasks security), on
/// whichever replica it asks: a task created through B is listed through C, and another
/// anonymous session sees none of it on any replica.
#[test]
fn replicas_an_unidentified_sessions_listing_is_its_own_on_every_replica() {
    let Some((servers, _schema, _work)) = http_replicas_with("", "") else { return };
    let [a, b, c] = &servers[..] else { unreachable!() };
    let mut mine = Client::new(a, None);
    mine.initialize();
    let created = mine.at(b).result("tools/call", json!({"name": "echo", "arguments": {"text": "x"}, "task": {}}));
    let id = created["task"]["taskId"].as_str().expect("a task").to_owned();
    let mut other = Client::new(c, None);
    other.initialize();
    for server in [a, b, c] {
        let listed = mine.at(server).result("tasks/list", json!({}));
        let ids: Vec<&str> = listed["tasks"].as_array().expect("tasks").iter().filter_map(|task| task["taskId"].as_str()).collect();
        assert_eq!(ids, [id.as_str()], "{listed}");
        let theirs = other.at(server).result("tasks/list", json!({}));
        assert_eq!(theirs["tasks"], json!([]), "{theirs}");
    }
}

// The replica tests again, every replica reaching the store through PgBouncer in transaction
// mode (issue 43, part 4). The two that cut a replica's own network path to the database
// (a proxy in front of PostgreSQL, connections terminated by name) test that path, not the
// pooler's, and run direct only.
crate::through_pgbouncer!(
    pgbouncer_replicas_a_task_created_on_a_is_read_listed_and_collected_on_b_and_c
        => replicas_a_task_created_on_a_is_read_listed_and_collected_on_b_and_c,
    pgbouncer_replicas_a_cancel_sent_to_c_stops_the_work_running_on_a_within_a_second
        => replicas_a_cancel_sent_to_c_stops_the_work_running_on_a_within_a_second,
    pgbouncer_replicas_an_input_request_raised_by_work_on_b_is_answered_through_a_and_the_work_completes
        => replicas_an_input_request_raised_by_work_on_b_is_answered_through_a_and_the_work_completes,
    pgbouncer_replicas_a_killed_replicas_tasks_are_taken_over_within_the_lease_by_their_restart_policy
        => replicas_a_killed_replicas_tasks_are_taken_over_within_the_lease_by_their_restart_policy,
    pgbouncer_replicas_a_no_work_replica_queues_tasks_and_a_worker_runs_them
        => replicas_a_no_work_replica_queues_tasks_and_a_worker_runs_them,
    pgbouncer_replicas_max_concurrent_1_holds_across_replicas_under_concurrent_calls
        => replicas_max_concurrent_1_holds_across_replicas_under_concurrent_calls,
    pgbouncer_replicas_a_legacy_http_session_is_served_by_whichever_replica_each_request_reaches
        => replicas_a_legacy_http_session_is_served_by_whichever_replica_each_request_reaches,
    pgbouncer_replicas_max_running_per_principal_2_holds_across_replicas_under_concurrent_calls
        => replicas_max_running_per_principal_2_holds_across_replicas_under_concurrent_calls,
    pgbouncer_replicas_a_stored_session_used_anywhere_stays_and_one_left_idle_ends_for_every_replica
        => replicas_a_stored_session_used_anywhere_stays_and_one_left_idle_ends_for_every_replica,
    pgbouncer_replicas_an_unidentified_sessions_listing_is_its_own_on_every_replica
        => replicas_an_unidentified_sessions_listing_is_its_own_on_every_replica,
);
