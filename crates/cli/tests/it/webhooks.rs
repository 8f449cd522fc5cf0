//! Completion webhooks of the real binary: a receiver on loopback gets each event once with a
//! valid signature (checked here with HMAC-SHA256 computed by the test itself), and a
//! receiver that is down gets its deliveries once it is back, also across a restart of the
//! server (SIGKILL), from the deliveries kept in the task store; an `https://` receiver is
//! verified against a webhook's CA file, and refused by the system's roots when its CA is not
//! among them. With three processes on one store (an SQLite file, a PostgreSQL schema), one of
//! them killed with -9 again and again, every committed ending is delivered.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::certs::Ca;
use crate::harness::{CONFIG, Workdir};
use crate::http::{Client, HttpServer};

/// How long any one expected delivery may take (retries after a failure back off from 0.5 s).
const DEADLINE: Duration = Duration::from_secs(30);

/// One POST the receiver got.
#[derive(Debug)]
struct Received {
    path: String,
    headers: HashMap<String, String>,
    body: String,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
}

/// An HTTP receiver on loopback: answers every request 200 and hands it to the test.
struct Receiver {
    addr: SocketAddr,
    got: mpsc::Receiver<Received>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Receiver {
    fn start(addr: &str) -> Receiver {
        Receiver::start_with(addr, None)
    }

    /// An `https://` receiver serving the PEM certificate `cert` with its key `key`.
    fn start_tls(addr: &str, cert: &str, key: &str) -> Receiver {
        Receiver::start_with(addr, Some(crate::certs::server_config(cert, key)))
    }

    fn start_with(addr: &str, tls: Option<Arc<rustls::ServerConfig>>) -> Receiver {
        let listener = TcpListener::bind(addr).expect("bind the receiver");
        let addr = listener.local_addr().expect("address");
        let (tx, got) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                if stream.set_read_timeout(Some(Duration::from_secs(10))).is_err() {
                    continue;
                }
                let received = match &tls {
                    None => read_request(stream),
                    Some(config) => rustls::ServerConnection::new(Arc::clone(config))
                        .ok()
                        .and_then(|connection| read_request(rustls::StreamOwned::new(connection, stream))),
                };
                if let Some(received) = received {
                    let _ = tx.send(received);
                }
            }
        });
        Receiver { addr, got, stop, thread: Some(thread) }
    }

    /// The next delivery, within the deadline.
    fn next(&self) -> Received {
        self.got.recv_timeout(DEADLINE).expect("a delivery within the deadline")
    }

    /// Stops listening (the port then refuses connections).
    fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wakes the accept
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the receiver thread");
        }
    }
}

fn read_request(stream: impl Read + Write) -> Option<Received> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut headers = HashMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        let (name, value) = trimmed.split_once(':')?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    let length: usize = headers.get("content-length")?.parse().ok()?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let mut stream = reader.into_inner();
    stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok").ok()?;
    stream.flush().ok()?;
    Some(Received { path, headers, body: String::from_utf8(body).ok()? })
}

/// Checks the delivery's signature with `secret`, computed here, and its timestamp.
fn assert_signed(received: &Received, secret: &str) {
    let header = received.headers.get("x-mcp-tasks-signature").expect("a signature header");
    let (t, v1) = header.split_once(',').expect("t=…,v1=…");
    let t = t.strip_prefix("t=").expect("t=");
    let v1 = v1.strip_prefix("v1=").expect("v1=");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{}", received.body).as_bytes());
    let expected: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(v1, expected, "the signature of {}", received.body);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    assert!(t.parse::<u64>().unwrap().abs_diff(now) < 300, "a fresh timestamp: {t}");
    let mut wrong = Hmac::<Sha256>::new_from_slice(b"another secret").unwrap();
    wrong.update(format!("{t}.{}", received.body).as_bytes());
    let forged: String = wrong.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    assert_ne!(v1, forged, "another secret signs differently");
}

fn webhook_config(work: &Workdir, hooks: &str) {
    std::fs::write(work.config(), format!("{CONFIG}\n{hooks}")).unwrap();
}

fn start_task(server: &HttpServer, tool: &str, arguments: Value) -> (Client, String) {
    let mut client = Client::new(server, None);
    client.initialize_with(json!({"elicitation": {}}));
    let created = client.result("tools/call", json!({"name": tool, "arguments": arguments, "task": {}}));
    (client, created["task"]["taskId"].as_str().unwrap().to_owned())
}

/// The attempts recorded for the deliveries still kept in the task store at `path`.
fn kept_attempts(path: &Path) -> Vec<i64> {
    let Ok(conn) = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else { return vec![] };
    let Ok(mut stmt) = conn.prepare("SELECT attempts FROM webhook_deliveries ORDER BY id") else { return vec![] };
    stmt.query_map([], |row| row.get(0)).map(|rows| rows.filter_map(Result::ok).collect()).unwrap_or_default()
}

/// The last error recorded of each delivery still kept in the task store at `path`.
fn kept_errors(path: &Path) -> Vec<String> {
    let Ok(conn) = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else { return vec![] };
    let Ok(mut stmt) = conn.prepare("SELECT coalesce(last_error, '') FROM webhook_deliveries ORDER BY id") else { return vec![] };
    stmt.query_map([], |row| row.get(0)).map(|rows| rows.filter_map(Result::ok).collect()).unwrap_or_default()
}

/// Waits until the store holds one delivery tried at least `attempts` times (the store is
/// the only witness of an attempt at a receiver that is down; bounded).
fn wait_for_attempts(path: &Path, attempts: i64) {
    let deadline = Instant::now() + DEADLINE;
    while !kept_attempts(path).iter().any(|&n| n >= attempts) {
        assert!(Instant::now() < deadline, "no delivery was tried {attempts} times: {:?}", kept_attempts(path));
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn webhooks_a_receiver_gets_each_event_once_with_a_valid_signature() {
    let receiver = Receiver::start("127.0.0.1:0");
    let work = Workdir::new();
    webhook_config(&work, &format!(
        r#"
[[server.webhooks]]
url = "http://{addr}/all"
events = ["completed", "failed", "cancelled", "input_required"]
secret = "all-secret"

[[server.webhooks]]
url = "http://{addr}/failures"
events = ["failed"]
secret_env = "MCP_TASKS_TEST_WEBHOOK_SECRET"
"#,
        addr = receiver.addr
    ));
    // secret_env is read at start, from the server's environment.
    let server = HttpServer::start_with_env(&work, &[("MCP_TASKS_TEST_WEBHOOK_SECRET", "failure-secret")]);
    let (_echo, echoed) = start_task(&server, "echo", json!({"text": "hi"}));
    let (_fails, failed) = start_task(&server, "fails", json!({}));
    let (mut slow_client, slow) = start_task(&server, "slow", json!({"seconds": 60}));
    slow_client.result("tasks/cancel", json!({"taskId": slow}));
    let (_confirm, confirm) = start_task(&server, "confirm", json!({}));

    let mut expected = vec![
        ("/all", echoed.clone(), "completed"),
        ("/all", failed.clone(), "failed"),
        ("/failures", failed.clone(), "failed"),
        ("/all", slow.clone(), "cancelled"),
        ("/all", confirm.clone(), "input_required"),
    ];
    let mut seen = Vec::new();
    while seen.len() < expected.len() {
        let received = receiver.next();
        let body = received.json();
        let event = received.headers["x-mcp-tasks-event"].clone();
        assert_eq!(body["event"], event.as_str());
        let task = body["task"]["id"].as_str().unwrap().to_owned();
        assert_eq!(body["task"]["status"], event.as_str(), "{body}");
        assert_eq!(body["task"]["principal"], "anonymous");
        assert_eq!(received.headers["content-type"], "application/json");
        assert_signed(&received, if received.path == "/all" { "all-secret" } else { "failure-secret" });
        if event == "input_required" {
            // Answered over the web view's API: the task goes on and completes.
            let page = crate::http_peer::request_to(server.addr, "GET", &format!("/ui/api/tasks/{task}"), &[], None).json();
            let key = page["inputRequests"][0]["key"].as_str().unwrap().to_owned();
            let answer = json!({"key": key, "action": "accept", "content": {"ok": true}}).to_string();
            let reply = crate::http_peer::request_to(server.addr, "POST", &format!("/ui/api/tasks/{task}/answer"), &[("Content-Type", "application/json")], Some(&answer));
            assert_eq!(reply.status, 200, "{}", reply.body);
            expected.push(("/all", confirm.clone(), "completed"));
        }
        if event == "completed" {
            assert!(body["task"]["result"]["content"].is_array(), "the result is in the delivery: {body}");
        }
        seen.push((received.path.clone(), task, event));
    }
    // A last event, delivered after every earlier one was: nothing came twice meanwhile.
    let (_last, last) = start_task(&server, "echo", json!({"text": "last"}));
    let flush = receiver.next();
    assert_eq!((flush.path.as_str(), flush.json()["task"]["id"].as_str()), ("/all", Some(last.as_str())), "no repeat before it");
    let mut sorted_seen: Vec<_> = seen.iter().map(|(p, t, e)| (p.clone(), t.clone(), e.clone())).collect();
    let mut sorted_expected: Vec<_> = expected.iter().map(|(p, t, e)| ((*p).to_owned(), t.clone(), (*e).to_owned())).collect();
    sorted_seen.sort();
    sorted_expected.sort();
    assert_eq!(sorted_seen, sorted_expected, "each event once, to the webhooks that asked for it");
    assert!(receiver.got.try_recv().is_err(), "nothing else");
}

#[test]
fn webhooks_deliveries_wait_for_a_receiver_that_is_down_also_across_a_restart() {
    // A port where nothing listens yet.
    let addr = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).unwrap();
    let work = Workdir::new();
    webhook_config(&work, &format!(
        "[[server.webhooks]]\nurl = \"http://{addr}/hook\"\nevents = [\"completed\"]\nsecret = \"s\"\n"
    ));
    let store = work.store();

    // Down: the delivery is tried, and tried again.
    let mut server = HttpServer::start(&work);
    let (_client, first) = start_task(&server, "echo", json!({"text": "one"}));
    wait_for_attempts(&store, 2);
    // Back: it arrives, once.
    let receiver = Receiver::start(&addr.to_string());
    let got = receiver.next();
    assert_eq!(got.json()["task"]["id"], first.as_str());
    assert_signed(&got, "s");
    let first_delivery = got.headers["x-mcp-tasks-delivery"].clone();
    receiver.stop();

    // Down again, and the server killed with the delivery still queued.
    let (_client, second) = start_task(&server, "echo", json!({"text": "two"}));
    wait_for_attempts(&store, 1);
    server.kill();
    let receiver = Receiver::start(&addr.to_string());
    let _server = HttpServer::start(&work);
    let got = receiver.next();
    assert_eq!(got.json()["task"]["id"], second.as_str(), "the queued delivery survived the restart");
    assert_signed(&got, "s");
    assert_ne!(got.headers["x-mcp-tasks-delivery"], first_delivery);
    // Then a new event: the first task was not delivered again meanwhile.
    let (_client, third) = start_task(&_server, "echo", json!({"text": "three"}));
    assert_eq!(receiver.next().json()["task"]["id"], third.as_str());
    // The last answer is recorded just after it is read: the store keeps none (bounded).
    let deadline = Instant::now() + DEADLINE;
    while !kept_attempts(&store).is_empty() {
        assert!(Instant::now() < deadline, "deliveries left in the store: {:?}", kept_attempts(&store));
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn webhooks_an_https_receiver_is_verified_against_the_ca_file_or_refused_by_the_system_roots() {
    let ca = Ca::new("webhook receivers' CA");
    let (cert, key) = ca.issue(&["localhost", "127.0.0.1"]);
    let receiver = Receiver::start_tls("127.0.0.1:0", &cert, &key);
    let work = Workdir::new();
    let ca_file = work.path("receivers-ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    webhook_config(&work, &format!(
        "[[server.webhooks]]\nurl = \"https://localhost:{port}/trusted\"\nevents = [\"completed\"]\nsecret = \"s\"\nca_file = \"{ca}\"\n\n\
         [[server.webhooks]]\nurl = \"https://127.0.0.1:{port}/untrusted\"\nevents = [\"completed\"]\nsecret = \"s\"\n",
        port = receiver.addr.port(),
        ca = ca_file.display()
    ));
    let server = HttpServer::start(&work);
    let (_client, id) = start_task(&server, "echo", json!({"text": "over https"}));
    let got = receiver.next();
    assert_eq!(got.path, "/trusted");
    assert_eq!(got.json()["task"]["id"], id.as_str());
    assert_signed(&got, "s");
    // The other webhook trusts the system's roots only: its receiver's certificate is refused,
    // the delivery kept and retried, the reason recorded.
    let store = work.store();
    wait_for_attempts(&store, 1);
    let errors = kept_errors(&store);
    assert!(errors.iter().any(|error| error.contains("certificate") && error.contains("UnknownIssuer")), "{errors:?}");
    assert!(receiver.got.try_recv().is_err(), "nothing reached the receiver through the untrusted webhook");
}

/// One meaning of failure for the operator (issue 42): a 2026-07-28 client's task whose tool
/// fails is `completed` with an `isError` result on its own wire, and `failed` to the
/// operator: the webhook's event and status, and `/metrics`' finished count.
#[test]
fn webhooks_a_2026_07_28_tool_error_is_delivered_and_counted_as_failed() {
    let receiver = Receiver::start("127.0.0.1:0");
    let work = Workdir::new();
    webhook_config(&work, &format!(
        "[[server.webhooks]]\nurl = \"http://{}/hook\"\nevents = [\"completed\", \"failed\"]\nsecret = \"s\"\n\n\
         [[tools]]\nname = \"fails_later\"\ncommand = [\"sh\", \"-c\", \"sleep 1.5; echo 'no luck' >&2; exit 3\"]\n",
        receiver.addr
    ));
    let server = HttpServer::start(&work);
    let url = format!("http://{}/mcp", server.addr);
    let cli = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
            .env("MCP_TASKS_LEDGER", work.path("ledger.sqlite3"))
            .args(args)
            .output()
            .expect("run mcp-tasks")
    };
    let called = cli(&["call", "--era", "modern", "--detach", "--url", &url, "fails_later"]);
    assert!(called.status.success(), "{}", String::from_utf8_lossy(&called.stderr));
    let id = String::from_utf8_lossy(&called.stdout).trim().to_owned();
    let got = receiver.next();
    let body = got.json();
    assert_eq!((got.headers["x-mcp-tasks-event"].as_str(), &body["task"]["id"]), ("failed", &json!(id)), "{body}");
    assert_eq!(body["task"]["status"], "failed", "{body}");
    assert_eq!(body["task"]["result"]["isError"], true, "{body}");
    // On its own wire the task stays what 2026-07-28 says: completed, with isError.
    let wire = cli(&["tasks", "get", &id, "--era", "modern", "--url", &url, "--json"]);
    let wire: Value = serde_json::from_slice(&wire.stdout).expect("the task as JSON");
    assert_eq!(wire["status"], "completed", "{wire}");
    let metrics = crate::http_peer::request_to(server.addr, "GET", "/metrics", &[], None).body;
    assert!(
        metrics.lines().any(|line| line.starts_with("mcp_tasks_tasks_finished_total{tool=\"fails_later\"") && line.contains("status=\"failed\"")),
        "{metrics}"
    );
    // The web view: the task's badge, the `failed` filter and the counts say failed; what
    // its era said on the wire is beside it.
    let ui = |path: &str| -> Value {
        let reply = crate::http_peer::request_to(server.addr, "GET", path, &[], None);
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
        reply.json()
    };
    let task = ui(&format!("/ui/api/tasks/{id}"));
    let task = if task.get("task").is_some() { task["task"].clone() } else { task };
    assert_eq!((task["status"].clone(), task["wireStatus"].clone()), (json!("failed"), json!("completed")), "{task}");
    let failed = ui("/ui/api/tasks?status=failed");
    assert!(failed["tasks"].as_array().unwrap().iter().any(|task| task["id"] == id.as_str()), "{failed}");
    let completed = ui("/ui/api/tasks?status=completed");
    assert!(!completed["tasks"].as_array().unwrap().iter().any(|task| task["id"] == id.as_str()), "{completed}");
    assert_eq!(failed["counts"]["failed"], 1, "{failed}");
    assert!(failed["counts"].get("completed").is_none_or(|n| n == 0), "{failed}");
}

/// Kill -9 loops on an SQLite file (issue 43, part 3): every ending committed by any of
/// three processes is delivered at least once, while one of them is killed again and again.
#[test]
fn webhooks_every_committed_ending_is_delivered_while_one_of_three_sqlite_processes_is_killed_again_and_again() {
    let work = Workdir::new();
    every_ending_delivered_through_kills(&work, work.store().as_os_str());
}

/// The same on PostgreSQL: three replicas on one schema.
#[test]
fn webhooks_every_committed_ending_is_delivered_while_one_of_three_postgres_replicas_is_killed_again_and_again() {
    let Some(server) = crate::postgres::database_url() else { return };
    let schema = crate::postgres::Schema::create(&server);
    let work = Workdir::new();
    every_ending_delivered_through_kills(&work, std::ffi::OsStr::new(&schema.url()));
}

/// Three servers on `store` with one webhook for every ending; in each of eight rounds, tasks
/// are created through all three (quick ones and ones that run a while), then the first server
/// is killed with -9 and started again. Then every task ends (a killed server's running tasks
/// are resolved by a live one), and each task's ending reaches the receiver, under the event
/// its status says, at least once; a repeat carries the same delivery id.
fn every_ending_delivered_through_kills(work: &Workdir, store: &std::ffi::OsStr) {
    let receiver = Receiver::start("127.0.0.1:0");
    webhook_config(work, &format!(
        "[[server.webhooks]]\nurl = \"http://{}/hook\"\nevents = [\"completed\", \"failed\", \"cancelled\"]\nsecret = \"s\"\n",
        receiver.addr
    ));
    let mut servers: Vec<HttpServer> = (0..3).map(|_| HttpServer::start_on(work, store, &[])).collect();
    let mut created = Vec::new();
    for _round in 0..8 {
        for server in &servers {
            for n in 0..3 {
                created.push(start_task(server, "echo", json!({"text": format!("quick {n}")})).1);
            }
            created.push(start_task(server, "slow", json!({"seconds": 0.2})).1);
        }
        servers[0].kill();
        servers[0] = HttpServer::start_on(work, store, &[]);
    }
    // What each task ended as, read through a live server once it ended.
    let mut client = Client::new(&servers[1], None);
    client.initialize();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut ended: HashMap<String, String> = HashMap::new();
    for id in &created {
        loop {
            let task = client.result("tasks/get", json!({"taskId": id}));
            let status = task["status"].as_str().unwrap_or_default().to_owned();
            if status != "working" {
                ended.insert(id.clone(), status);
                break;
            }
            assert!(Instant::now() < deadline, "task {id} never ended: {task}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    // Every ending delivered, as its status says; repeats (at least once) keep their id.
    let mut delivered: HashMap<String, (String, String)> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while delivered.len() < created.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(got) = receiver.got.recv_timeout(left) else {
            let missing: Vec<_> = created.iter().filter(|id| !delivered.contains_key(*id)).collect();
            panic!("{} of {} endings never delivered: {missing:?}", missing.len(), created.len());
        };
        assert_signed(&got, "s");
        let body = got.json();
        let task = body["task"]["id"].as_str().expect("a task id").to_owned();
        let (event, id) = (got.headers["x-mcp-tasks-event"].clone(), got.headers["x-mcp-tasks-delivery"].clone());
        assert_eq!(Some(&event), ended.get(&task), "the event is the task's ending: {body}");
        if let Some((_, first)) = delivered.insert(task.clone(), (event, id.clone())) {
            assert_eq!(first, id, "a repeat of {task}'s ending carries its delivery id");
        }
    }
    let failed = ended.values().filter(|status| *status == "failed").count();
    eprintln!("webhooks through kills: {} endings delivered ({failed} failed by the kills)", created.len());
}

/// An earlier version's outbox file beside the store is no longer read: `serve` says so at
/// start, naming it and how to see what it still holds, and serves on.
#[test]
fn webhooks_an_earlier_versions_outbox_file_is_named_at_start_as_no_longer_read() {
    let work = Workdir::new();
    webhook_config(&work, "[[server.webhooks]]\nurl = \"http://127.0.0.1:9/hook\"\nevents = [\"completed\"]\nsecret = \"s\"\n");
    let old = work.path("tasks.sqlite3.webhooks");
    std::fs::write(&old, b"").unwrap();
    let server = HttpServer::start(&work);
    server.wait_for_log(&format!("{} is the webhook outbox of an earlier version, no longer read", old.display()));
    server.wait_for_log("SELECT url, event, body FROM deliveries");
    let (mut client, id) = start_task(&server, "echo", json!({"text": "still serving"}));
    assert!(client.result("tasks/get", json!({"taskId": id}))["taskId"].is_string());
}
