//! Streamable HTTP against the real binary: restart survival, stream resumption with
//! Last-Event-ID, principals, and each transport-level rejection (the server keeps serving).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{CONFIG, Workdir};
use crate::http_peer::{self, Reply};

pub(crate) const ALICE: &str = "alice-secret";
pub(crate) const BOB: &str = "bob-secret-from-env";
pub(crate) const TOKENS: &str = r#"
[[server.auth.tokens]]
principal = "alice"
token_sha256 = "0c848abb03307b06cf70cd4e29c157dc81af5e94ab3eb1d0c59a120269572376"

[[server.auth.tokens]]
principal = "bob"
token_env = "MCP_TASKS_TEST_BOB_TOKEN"
"#;

/// `mcp-tasks serve --listen 127.0.0.1:0` on the workdir's config and store.
pub(crate) struct HttpServer {
    child: Child,
    pub(crate) addr: SocketAddr,
    /// What the server printed on stderr so far.
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl HttpServer {
    pub(crate) fn start(work: &Workdir) -> HttpServer {
        HttpServer::start_with_env(work, &[])
    }

    /// As [`HttpServer::start`], with more environment variables for the server.
    pub(crate) fn start_with_env(work: &Workdir, env: &[(&str, &str)]) -> HttpServer {
        HttpServer::start_on(work, work.store().as_os_str(), env)
    }

    /// As [`HttpServer::start_with_env`], on the store `store` (a path or a `postgres://` URL).
    pub(crate) fn start_on(work: &Workdir, store: &std::ffi::OsStr, env: &[(&str, &str)]) -> HttpServer {
        HttpServer::start_with_args(work, store, env, &[])
    }

    /// As [`HttpServer::start_on`], with more arguments to `serve` (`--tls-cert …`).
    pub(crate) fn start_with_args(
        work: &Workdir,
        store: &std::ffi::OsStr,
        env: &[(&str, &str)],
        args: &[&std::ffi::OsStr],
    ) -> HttpServer {
        // A free port, unless `args` name where to listen.
        let listen = if args.iter().any(|arg| *arg == "--listen") { &[][..] } else { &["--listen", "127.0.0.1:0"][..] };
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
            .arg("serve")
            .args(listen)
            .arg("--config")
            .arg(work.config())
            .arg("--store")
            .arg(store)
            .args(args)
            .env("RUST_LOG", "warn")
            .env("MCP_TASKS_TEST_BOB_TOKEN", BOB)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcp-tasks");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = std::sync::Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                kept.lock().unwrap().push(line.clone());
                let listening = line.strip_prefix("mcp-tasks: listening on ");
                if let Some(url) = listening.and_then(|url| url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"))) {
                    let _ = tx.send(url.trim_end_matches("/mcp").to_owned());
                } else {
                    eprintln!("[server] {line}");
                }
            }
        });
        let addr = rx.recv_timeout(Duration::from_secs(30)).expect("the server prints where it listens");
        HttpServer { child, addr: addr.parse().expect("socket address"), log }
    }

    /// Waits (bounded) until the server printed a line holding `text` on stderr.
    pub(crate) fn wait_for_log(&self, text: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !self.log.lock().unwrap().iter().any(|line| line.contains(text)) {
            assert!(std::time::Instant::now() < deadline, "the server never printed {text:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client session: token and session id.
pub(crate) struct Client {
    addr: SocketAddr,
    token: Option<String>,
    session: Option<String>,
    next_id: i64,
}

impl Client {
    pub(crate) fn new(server: &HttpServer, token: Option<&str>) -> Client {
        Client { addr: server.addr, token: token.map(str::to_owned), session: None, next_id: 1 }
    }

    fn headers(&self) -> Vec<(String, String)> {
        let mut headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("Accept".to_owned(), "application/json, text/event-stream".to_owned()),
        ];
        if let Some(token) = &self.token {
            headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
        }
        if let Some(session) = &self.session {
            headers.push(("Mcp-Session-Id".to_owned(), session.clone()));
            headers.push(("MCP-Protocol-Version".to_owned(), "2025-11-25".to_owned()));
        }
        headers
    }

    /// From now on, requests go to `server` (another replica), with the same session.
    pub(crate) fn at(&mut self, server: &HttpServer) -> &mut Client {
        self.addr = server.addr;
        self
    }

    /// A client of `token` naming session `session` (someone else's, or none that exists).
    pub(crate) fn impostor(&self, token: Option<&str>, session: &str) -> Client {
        Client { addr: self.addr, token: token.map(str::to_owned), session: Some(session.to_owned()), next_id: 1 }
    }

    /// DELETE of the session; the status.
    pub(crate) fn delete(&self) -> u16 {
        let owned = self.headers();
        let headers: Vec<(&str, &str)> = owned.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        http_peer::request(self.addr, "DELETE", &headers, None).status
    }

    /// The session id `initialize` got.
    pub(crate) fn session(&self) -> &str {
        self.session.as_deref().expect("an initialized session")
    }

    pub(crate) fn post_with(&self, body: &str, extra: &[(&str, &str)]) -> Reply {
        let owned = self.headers();
        let mut headers: Vec<(&str, &str)> = owned.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        // An empty value removes the header.
        for (name, value) in extra {
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            if !value.is_empty() {
                headers.push((name, value));
            }
        }
        http_peer::request(self.addr, "POST", &headers, Some(body))
    }

    pub(crate) fn message(&mut self, method: &str, params: Value) -> String {
        let id = self.next_id;
        self.next_id += 1;
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
    }

    pub(crate) fn initialize(&mut self) {
        self.initialize_with(json!({}));
    }

    pub(crate) fn initialize_with(&mut self, capabilities: Value) {
        let body = self.message("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "http-test", "version": "0"}}));
        let reply = self.post_with(&body, &[]);
        assert_eq!(reply.status, 200, "{}", reply.body);
        let session = reply.header("mcp-session-id").expect("Mcp-Session-Id").to_owned();
        assert!(session.len() >= 32 && session.bytes().all(|b| (0x21..=0x7e).contains(&b)), "visible ASCII, unguessable: {session}");
        self.session = Some(session);
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        assert_eq!(self.post_with(&note, &[]).status, 202);
    }

    /// A request answered with one JSON-RPC response (from a JSON body or an SSE stream).
    pub(crate) fn call(&mut self, method: &str, params: Value) -> Value {
        let body = self.message(method, params);
        let reply = self.post_with(&body, &[]);
        assert_eq!(reply.status, 200, "{method}: {}", reply.body);
        let content_type = reply.header("content-type").unwrap_or("");
        if content_type.starts_with("text/event-stream") {
            let mut last = None;
            for block in reply.body.split("\n\n") {
                for line in block.lines() {
                    if let Some(data) = line.strip_prefix("data:") {
                        let data = data.trim();
                        if !data.is_empty() {
                            let message: Value = serde_json::from_str(data).unwrap();
                            if message.get("id").is_some() && message.get("method").is_none() {
                                last = Some(message);
                            }
                        }
                    }
                }
            }
            last.expect("a response on the stream")
        } else {
            reply.json()
        }
    }

    pub(crate) fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    pub(crate) fn error(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        response.get("error").cloned().unwrap_or_else(|| panic!("{method} should fail: {response}"))
    }

    /// A whole task lifecycle of the `echo` tool: `tools/call` as a task, then `tasks/result`,
    /// which must answer `text`.
    pub(crate) fn echo_task(&mut self, text: &str) {
        let created = self.result("tools/call", json!({"name": "echo", "arguments": {"text": text}, "task": {}}));
        let id = created["task"]["taskId"].clone();
        assert_eq!(self.result("tasks/result", json!({"taskId": id}))["content"][0]["text"], text);
    }
}

fn tokens_config(work: &Workdir) {
    std::fs::write(work.config(), format!("{CONFIG}\n{TOKENS}")).unwrap();
}

#[test]
fn http_task_survives_a_restart_and_its_result_is_fetched_over_a_new_session() {
    let work = Workdir::new();
    let mut server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize();
    let created = client.result("tools/call", json!({"name": "echo", "arguments": {"text": "durable"}, "task": {}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let first = client.result("tasks/result", json!({"taskId": id}));
    server.kill();

    let server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize();
    let again = client.result("tasks/result", json!({"taskId": id}));
    assert_eq!(again, first);
    assert_eq!(again["content"][0]["text"], "durable");
    assert_eq!(client.result("tasks/get", json!({"taskId": id}))["status"], "completed");
}

#[test]
fn http_a_dropped_tasks_result_stream_resumes_with_last_event_id_and_delivers_once() {
    let work = Workdir::new();
    let server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize();
    let created = client.result("tools/call", json!({"name": "slow", "arguments": {"seconds": 1.5}, "task": {}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();

    // Open the blocking tasks/result as SSE, read the priming event, then drop the connection.
    let body = client.message("tasks/result", json!({"taskId": id}));
    let owned = client.headers();
    let headers: Vec<(&str, &str)> = owned.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let mut stream = http_peer::open(server.addr, "POST", &headers, Some(&body));
    assert_eq!(stream.status, 200);
    let priming = stream.next_event().expect("priming event");
    let last_id = priming.id.expect("the priming event carries an id");
    assert!(priming.data.trim().is_empty());
    drop(stream);

    // Reconnect with GET + Last-Event-ID while the task still runs: the result arrives once.
    let mut headers = headers.clone();
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
    headers.push(("Last-Event-ID", &last_id));
    let mut resumed = http_peer::open(server.addr, "GET", &headers, None);
    assert_eq!(resumed.status, 200);
    let (event_id, message) = resumed.next_message().expect("the result on the resumed stream");
    assert_eq!(message["result"]["content"][0]["text"], "done\n");
    assert_eq!(message["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str());
    assert!(resumed.next_message().is_none(), "the stream ends after the result, which came once");

    // Resuming after the result's own id replays nothing.
    let result_id = event_id.expect("event id");
    headers.retain(|(n, _)| *n != "Last-Event-ID");
    headers.push(("Last-Event-ID", &result_id));
    let mut after = http_peer::open(server.addr, "GET", &headers, None);
    assert_eq!(after.status, 200);
    assert!(after.next_message().is_none(), "nothing after the last delivered event");
}

#[test]
fn legacy_81_83_a_second_principal_cannot_see_fetch_cancel_or_list_the_first_ones_task() {
    let work = Workdir::new();
    tokens_config(&work);
    let server = HttpServer::start(&work);
    let mut alice = Client::new(&server, Some(ALICE));
    alice.initialize();
    let mut bob = Client::new(&server, Some(BOB));
    bob.initialize();

    let created = alice.result("tools/call", json!({"name": "slow", "arguments": {"seconds": 30}, "task": {}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let unknown = "0123456789abcdef0123456789abcdef";
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let foreign = bob.error(method, json!({"taskId": id}));
        let missing = bob.error(method, json!({"taskId": unknown}));
        assert_eq!(foreign["code"], -32602, "{method}");
        assert_eq!(missing["code"], -32602);
        assert_eq!(
            foreign["message"].as_str().unwrap().replace(&id, "ID"),
            missing["message"].as_str().unwrap().replace(unknown, "ID"),
            "another principal's task looks exactly like an unknown one"
        );
    }
    assert!(bob.result("tasks/list", json!({}))["tasks"].as_array().unwrap().is_empty());
    let listed = alice.result("tasks/list", json!({}));
    assert_eq!(listed["tasks"][0]["taskId"], id.as_str());
    assert_eq!(alice.result("tasks/cancel", json!({"taskId": id}))["status"], "cancelled");

    // Bob cannot use Alice's session either.
    let mut thief = Client::new(&server, Some(BOB));
    thief.session = alice.session.clone();
    let body = thief.message("tasks/list", json!({}));
    assert_eq!(thief.post_with(&body, &[]).status, 404);
}

#[test]
fn a_request_without_a_valid_token_is_401_with_www_authenticate() {
    let work = Workdir::new();
    tokens_config(&work);
    let server = HttpServer::start(&work);
    for token in [None, Some("wrong-token")] {
        let mut client = Client::new(&server, token);
        let body = client.message("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}));
        let reply = client.post_with(&body, &[]);
        assert_eq!(reply.status, 401);
        assert!(reply.header("www-authenticate").unwrap().starts_with("Bearer"), "{:?}", reply.headers);
    }
    let mut alice = Client::new(&server, Some(ALICE));
    alice.initialize();
    alice.result("tools/list", json!({}));
}

#[test]
fn a_foreign_origin_or_host_is_refused_with_403_and_local_ones_are_served() {
    let work = Workdir::new();
    let server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    let body = client.message("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}));
    let evil_origin = client.post_with(&body, &[("Origin", "http://evil.example.com")]);
    assert_eq!(evil_origin.status, 403);
    assert!(evil_origin.json()["error"]["message"].as_str().unwrap().contains("Origin"));
    let evil_host = client.post_with(&body, &[("Host", "evil.example.com")]);
    assert_eq!(evil_host.status, 403);
    let port = server.addr.port().to_string();
    let local_origin = format!("http://localhost:{port}");
    let ok = client.post_with(&body, &[("Origin", &local_origin), ("Host", &format!("localhost:{port}"))]);
    assert_eq!(ok.status, 200, "{}", ok.body);
}

#[test]
fn oversized_bodies_wrong_versions_and_unknown_sessions_get_their_status_and_the_server_goes_on() {
    let work = Workdir::new();
    let server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize();

    let huge = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x".repeat(5 * 1024 * 1024)}}}).to_string();
    let reply = client.post_with(&huge, &[]);
    assert_eq!(reply.status, 413);
    assert_eq!(reply.json()["error"]["code"], -32600);

    let body = client.message("tools/list", json!({}));
    let reply = client.post_with(&body, &[("MCP-Protocol-Version", "1999-01-01")]);
    assert_eq!(reply.status, 400);
    assert!(reply.json()["error"]["message"].as_str().unwrap().contains("MCP-Protocol-Version"));

    let reply = client.post_with(&body, &[("Mcp-Session-Id", "no-such-session")]);
    assert_eq!(reply.status, 404);

    let mut no_session = Client::new(&server, None);
    let body = no_session.message("tools/list", json!({}));
    assert_eq!(no_session.post_with(&body, &[]).status, 400);

    let reply = client.post_with("{not json", &[]);
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["code"], -32700);

    // Still serving, same session.
    let tools = client.result("tools/list", json!({}));
    assert!(tools["tools"].as_array().unwrap().len() >= 3);
}

#[test]
fn delete_ends_the_session_and_its_id_then_gets_404() {
    let work = Workdir::new();
    let server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize();
    let owned = client.headers();
    let headers: Vec<(&str, &str)> = owned.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    assert_eq!(http_peer::request(server.addr, "DELETE", &headers, None).status, 200);
    let body = client.message("tools/list", json!({}));
    assert_eq!(client.post_with(&body, &[]).status, 404);
}

#[test]
fn anonymous_sessions_list_only_their_own_tasks_but_can_fetch_by_id() {
    let work = Workdir::new();
    let server = HttpServer::start(&work);
    let mut one = Client::new(&server, None);
    one.initialize();
    let mut two = Client::new(&server, None);
    two.initialize();
    let created = one.result("tools/call", json!({"name": "echo", "arguments": {"text": "mine"}, "task": {}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(one.result("tasks/list", json!({}))["tasks"][0]["taskId"], id.as_str());
    assert!(two.result("tasks/list", json!({}))["tasks"].as_array().unwrap().is_empty(), "no enumeration");
    // The unguessable id is the capability: a new session (e.g. after a restart) can fetch it.
    assert_eq!(two.result("tasks/result", json!({"taskId": id}))["content"][0]["text"], "mine");
}

#[test]
fn sigterm_stops_the_server_gracefully_and_running_tasks_keep_their_durable_state() {
    let work = Workdir::new();
    let mut server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize();
    let created = client.result("tools/call", json!({"name": "slow", "arguments": {"seconds": 60}, "task": {}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    // A standalone GET stream is open: shutdown must end it rather than wait for it.
    let owned = client.headers();
    let mut headers: Vec<(&str, &str)> = owned.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
    let mut standalone = http_peer::open(server.addr, "GET", &headers, None);
    assert_eq!(standalone.status, 200);
    standalone.next_event().expect("priming event");
    let group = loop {
        let (_, note) = standalone.next_message().expect("status notifications on the standalone stream");
        if let Some(pid) = note["params"]["statusMessage"].as_str().and_then(|m| m.strip_prefix("started (pid ")) {
            break nix::unistd::Pid::from_raw(pid.trim_end_matches(')').parse().unwrap());
        }
    };

    let pid = nix::unistd::Pid::from_raw(i32::try_from(server.child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    // It exits (and does not wait for the open stream forever), with success.
    let status = server.child.wait().expect("the server exits after SIGTERM");
    assert!(status.success(), "graceful exit, got {status:?}");
    while let Some((_, message)) = standalone.next_message() {
        assert_eq!(message["method"], "notifications/tasks/status", "only status notifications were pending");
    }
    // The command's process group went down with the server.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while nix::sys::signal::killpg(group, None).is_ok() {
        assert!(std::time::Instant::now() < deadline, "the command outlived the server");
        std::thread::sleep(Duration::from_millis(20));
    }

    // The task was never resolved by the shutdown: the next start applies its policy.
    let server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize();
    let task = client.result("tasks/get", json!({"taskId": id}));
    assert_eq!(task["status"], "failed");
    assert!(task["statusMessage"].as_str().unwrap().contains("interrupted by a server restart"));
}

#[test]
fn legacy_31_a_question_no_tasks_result_takes_reaches_the_open_get_stream_and_is_answered_once() {
    let work = Workdir::new();
    let server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize_with(json!({"elicitation": {}}));
    let owned = client.headers();
    let mut headers: Vec<(&str, &str)> = owned.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
    let mut standalone = http_peer::open(server.addr, "GET", &headers, None);
    assert_eq!(standalone.status, 200);

    let created = client.result("tools/call", json!({"name": "confirm", "task": {}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let asked = loop {
        let (_, message) = standalone.next_message().expect("the question on the GET stream");
        if message["method"] == "elicitation/create" {
            break message;
        }
    };
    assert_eq!(asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id.as_str());
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"ok": true}}}).to_string();
    assert_eq!(client.post_with(&answer, &[]).status, 202);
    // tasks/result does not ask again while the GET copy is open, and returns the outcome.
    let result = client.result("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "answer: {\"action\":\"accept\",\"content\":{\"ok\":true}}\n");
}

#[test]
fn an_idle_session_is_ended_while_one_with_an_open_stream_or_a_waiting_request_lives_on() {
    let work = Workdir::new();
    let config = CONFIG.replacen("[server]\n", "[server]\nsession_idle = \"300ms\"\n", 1);
    std::fs::write(work.config(), config).unwrap();
    let server = HttpServer::start(&work);
    let mut idle = Client::new(&server, None);
    idle.initialize();
    let mut streaming = Client::new(&server, None);
    streaming.initialize();
    let owned = streaming.headers();
    let mut headers: Vec<(&str, &str)> = owned.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case("content-type"));
    let mut standalone = http_peer::open(server.addr, "GET", &headers, None);
    assert_eq!(standalone.status, 200);
    standalone.next_event().expect("priming event");
    // A blocking tasks/result of a 1.5 s task: the request itself keeps its session alive.
    let mut waiting = Client::new(&server, None);
    waiting.initialize();
    let created = waiting.result("tools/call", json!({"name": "slow", "arguments": {"seconds": 1.5}, "task": {}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let result = waiting.result("tasks/result", json!({"taskId": id}));
    assert!(result["content"][0]["text"].as_str().unwrap().contains("done"), "{result}");
    let body = waiting.message("tasks/get", json!({"taskId": id}));
    assert_eq!(waiting.post_with(&body, &[]).status, 200, "the session that waited lives (it was busy until just now)");

    // By now (> 1.5 s) the idle session is gone: its id gets 404, and its tasks stay.
    let body = idle.message("tools/list", json!({}));
    let reply = idle.post_with(&body, &[]);
    assert_eq!(reply.status, 404, "{}", reply.body);
    let body = streaming.message("tools/list", json!({}));
    assert_eq!(streaming.post_with(&body, &[]).status, 200, "the session with an open GET stream lives");
    let mut fresh = Client::new(&server, None);
    fresh.initialize();
    assert_eq!(fresh.result("tasks/get", json!({"taskId": id}))["status"], "completed", "tasks outlive sessions");
}

#[test]
fn a_request_cancelled_by_notifications_cancelled_ends_its_post_and_its_stream_without_a_reply() {
    let work = Workdir::new();
    let server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize();
    let cancel = |client: &Client, id: i64| {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "test"}});
        assert_eq!(client.post_with(&note.to_string(), &[]).status, 202);
    };
    // Answered as JSON: the POST waits for the reply, and ends with 202 once cancelled.
    let body = client.message("tools/call", json!({"name": "slow", "arguments": {"seconds": 30}}));
    let id = serde_json::from_str::<Value>(&body).unwrap()["id"].as_i64().unwrap();
    let (done, waited) = mpsc::channel();
    let post = {
        let addr = server.addr;
        let headers = client_headers(&client, "application/json");
        std::thread::spawn(move || {
            let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            let reply = http_peer::request(addr, "POST", &headers, Some(&body));
            let _ = done.send(reply.status);
        })
    };
    // A cancel read before the POST is ignored (nothing is in flight yet to cancel) and no
    // event says when the POST has been read, so the cancel is repeated until the POST ends.
    let mut status = None;
    for _ in 0..50 {
        cancel(&client, id);
        if let Ok(code) = waited.recv_timeout(Duration::from_millis(200)) {
            status = Some(code);
            break;
        }
    }
    assert_eq!(status, Some(202), "the cancelled POST ends with 202 Accepted, not a hang");
    post.join().unwrap();
    // Answered on a stream: the stream ends after its priming event, with no response.
    let body = client.message("tools/call", json!({"name": "slow", "arguments": {"seconds": 30}}));
    let id = serde_json::from_str::<Value>(&body).unwrap()["id"].as_i64().unwrap();
    let headers = client_headers(&client, "text/event-stream");
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let mut stream = http_peer::open(server.addr, "POST", &headers, Some(&body));
    assert_eq!(stream.status, 200);
    let priming = stream.next_event().expect("the priming event");
    assert!(priming.data.trim().is_empty(), "{}", priming.data);
    // The priming event leaves after the request is registered in flight: this cancel
    // always finds it.
    cancel(&client, id);
    assert!(stream.next_message().is_none(), "the stream of a cancelled request ends without a response");
    assert_eq!(client.result("ping", json!({})), json!({}), "the session goes on");
}

/// 2025-11-25: a closed connection is not a cancellation. A plain call whose POST the client
/// closes before its answer runs to its end (a JSON answer here; the SSE stream's case is
/// `http_a_dropped_tasks_result_stream_resumes_with_last_event_id_and_delivers_once`). With
/// `max_running = 1` the call holds the one running slot until its work ends, so every other
/// call is refused until then: a call stopped by the close would free the slot while its
/// process still ran, or before its last marker.
#[test]
fn legacy_closing_a_post_before_its_answer_does_not_stop_its_call() {
    let work = Workdir::new();
    let marks = r#"
[[tools]]
name = "marks"
description = "Leaves a first marker, sleeps a moment, leaves a second."
command = ["sh", "-c", "touch \"$1\"; sleep 1.5; touch \"$2\"", "_", "{started}", "{done}"]
[tools.input_schema]
type = "object"
properties = { started = { type = "string" }, done = { type = "string" } }
"#;
    let config = format!("{CONFIG}{marks}").replacen("name = \"test-server\"", "name = \"test-server\"\nmax_running = 1", 1);
    std::fs::write(work.config(), config).unwrap();
    let server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize();
    let (started, done) = (work.path("started"), work.path("done"));
    let arguments = json!({"started": started.to_str().unwrap(), "done": done.to_str().unwrap()});
    let body = client.message("tools/call", json!({"name": "marks", "arguments": arguments}));
    let mut head = String::from("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (name, value) in client_headers(&client, "application/json") {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut socket = std::net::TcpStream::connect(server.addr).unwrap();
    std::io::Write::write_all(&mut socket, format!("{head}{body}").as_bytes()).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !started.exists() {
        assert!(std::time::Instant::now() < deadline, "the call never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Closed while the call runs, its answer unread.
    drop(socket);
    let mut refused = 0;
    loop {
        assert!(std::time::Instant::now() < deadline, "the slot was never freed");
        let echo = client.message("tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
        let reply = client.post_with(&echo, &[("Accept", "application/json")]).json();
        if reply.get("result").is_some() {
            // Free again: only once the call's work ended (its last marker is there).
            assert!(done.exists(), "the call was stopped when its POST was closed ({refused} calls refused before)");
            break;
        }
        assert_eq!(reply["error"]["code"], -32010, "{reply}");
        refused += 1;
    }
    assert!(refused > 0, "the call held the slot after its POST was closed");
}

/// The client's headers with `Accept` set to `accept` only.
fn client_headers(client: &Client, accept: &str) -> Vec<(String, String)> {
    let mut headers = client.headers();
    headers.retain(|(name, _)| !name.eq_ignore_ascii_case("accept"));
    headers.push(("Accept".to_owned(), accept.to_owned()));
    headers
}

#[test]
fn delete_also_ends_the_sessions_open_standalone_stream() {
    use std::io::{Read, Write};
    let work = Workdir::new();
    let server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize();
    let owned = client.headers();
    // The standalone GET stream, written by hand so that its end can be seen.
    let mut head = String::from("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n");
    for (name, value) in &owned {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut first = [0u8; 64];
    let n = stream.read(&mut first).unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"), "the stream opened");
    let headers: Vec<(&str, &str)> = owned.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    assert_eq!(http_peer::request(server.addr, "DELETE", &headers, None).status, 200);
    // The response ends (the chunked body's last chunk; the connection may stay open for
    // another request) instead of lingering on: read until it, within the bound.
    let mut rest = Vec::new();
    let mut chunk = [0u8; 256];
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !rest.ends_with(b"0\r\n\r\n") {
        // Keep-alive comments would keep a lingering stream readable: bound the whole wait.
        assert!(std::time::Instant::now() < deadline, "the stream did not end after DELETE: {:?}", String::from_utf8_lossy(&rest));
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => rest.extend_from_slice(&chunk[..n]),
            Err(err) => panic!("the stream did not end after DELETE: {err}; got {:?}", String::from_utf8_lossy(&rest)),
        }
    }
    assert!(rest.ends_with(b"0\r\n\r\n"), "a complete chunked body: {:?}", String::from_utf8_lossy(&rest));
}

/// The config with tokens and plain calls handed off after half a second.
fn handoff_config(work: &Workdir) {
    let config = CONFIG.replacen("[server]\n", "[server]\nsync_wait = \"500ms\"\n", 1);
    std::fs::write(work.config(), format!("{config}\n{TOKENS}")).unwrap();
}

fn handoff_text(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_handed_off_call_is_its_callers_alone_and_outlives_a_crash_as_a_durable_task() {
    let work = Workdir::new();
    handoff_config(&work);
    let mut server = HttpServer::start(&work);
    let mut alice = Client::new(&server, Some(ALICE));
    alice.initialize();
    let mut bob = Client::new(&server, Some(BOB));
    bob.initialize();

    let answer = alice.result("tools/call", json!({"name": "slow", "arguments": {"seconds": 30}}));
    let id = answer["structuredContent"]["taskId"].as_str().expect("handed off to a task").to_owned();
    assert!(handoff_text(&answer).contains(&id), "{answer}");
    let status = alice.result("tools/call", json!({"name": "task_status", "arguments": {"task_id": id}}));
    assert_eq!(status["structuredContent"]["status"], "working", "{status}");

    // To another principal the task does not exist: every helper answers as for an unknown id.
    let unknown = "0123456789abcdef0123456789abcdef";
    for tool in ["task_status", "task_result", "task_cancel"] {
        let foreign = bob.result("tools/call", json!({"name": tool, "arguments": {"task_id": id}}));
        let missing = bob.result("tools/call", json!({"name": tool, "arguments": {"task_id": unknown}}));
        assert_eq!(foreign["isError"], true, "{tool}: {foreign}");
        assert_eq!(handoff_text(&foreign).replace(&id, "ID"), handoff_text(&missing).replace(unknown, "ID"), "{tool}");
    }
    assert_eq!(bob.error("tasks/get", json!({"taskId": id}))["code"], -32602);

    // SIGKILL: the task was committed before the answer left; the next server resolves it by
    // the tool's policy (fail), and its owner reads why.
    server.kill();
    let server = HttpServer::start(&work);
    let mut alice = Client::new(&server, Some(ALICE));
    alice.initialize();
    let result = alice.result("tools/call", json!({"name": "task_result", "arguments": {"task_id": id}}));
    assert_eq!(result["isError"], true, "{result}");
    assert!(handoff_text(&result).contains("failed"), "{result}");
    assert_eq!(alice.result("tasks/get", json!({"taskId": id}))["status"], "failed");
}

#[test]
fn a_client_that_declared_tasks_is_not_listed_the_helper_tools() {
    let work = Workdir::new();
    handoff_config(&work);
    let server = HttpServer::start(&work);
    let names = |client: &mut Client| -> Vec<String> {
        let listed = client.result("tools/list", json!({}));
        listed["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect()
    };
    let mut plain = Client::new(&server, Some(ALICE));
    plain.initialize();
    assert!(names(&mut plain).contains(&"task_result".to_owned()));
    let mut tasks = Client::new(&server, Some(ALICE));
    tasks.initialize_with(json!({"tasks": {"list": {}, "cancel": {}}}));
    let helpers = ["task_status", "task_result", "task_cancel"];
    assert!(!names(&mut tasks).iter().any(|name| helpers.contains(&name.as_str())), "{:?}", names(&mut tasks));
}
