//! `/metrics`: a scripted run of tasks in both eras (some complete, one fails, some are
//! cancelled, some wait for input, one keeps working), then the Prometheus text parsed and
//! every series of the task counters, gauges and HTTP counter compared with what the run
//! did; open HTTP sessions and SSE streams; the delivery of a result to a `tasks/result`
//! that waited for it; and who may read `/metrics` (Host check, bearer tokens,
//! `metrics: false`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_engine::{Context, Outcome};
use mcp_tasks_http as http;
use mcp_tasks_server::{Server, TaskMode, ToolDef, handler_fn};
use mcp_tasks_testkit_server::{TestPeer, TestServer};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::sqlite_engine;

const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";
/// How long any one wait of these tests may take before it fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// A server whose every optional call is a task at once, with: `echo` (answers at once),
/// `gate` (works until cancelled), `asks` (elicits, so waits for input), `fails` (reports
/// a tool error: `failed` in 2025-11-25, `completed` in 2026-07-28).
fn server() -> (Server, tempfile::TempDir) {
    let (engine, dir) = sqlite_engine();
    let schema = json!({"type": "object"});
    let echo = ToolDef::new("echo", "Echoes", schema.clone(), handler_fn(|_arguments, _ctx| async move {
        Outcome::Result(json!({"content": [{"type": "text", "text": "echo"}]}))
    }))
    .task_mode(TaskMode::Optional);
    let gate = ToolDef::new("gate", "Works until cancelled", schema.clone(), handler_fn(|_arguments, ctx: Context| async move {
        ctx.cancelled().await;
        Outcome::Result(json!({"content": [{"type": "text", "text": "stopped"}]}))
    }))
    .task_mode(TaskMode::Optional);
    let asks = ToolDef::new("asks", "Asks a name", schema.clone(), handler_fn(|_arguments, ctx: Context| async move {
        let form = json!({"mode": "form", "message": "Your name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}});
        match ctx.elicit(form).await {
            Ok(_) => Outcome::Result(json!({"content": [{"type": "text", "text": "answered"}]})),
            Err(error) => error.into(),
        }
    }))
    .task_mode(TaskMode::Optional);
    let fails = ToolDef::new("fails", "Reports a tool error", schema, handler_fn(|_arguments, _ctx| async move {
        Outcome::Result(json!({"content": [{"type": "text", "text": "disk on fire"}], "isError": true}))
    }))
    .task_mode(TaskMode::Required);
    let server = Server::builder(engine)
        .inline_wait(Duration::ZERO)
        .tool(echo)
        .tool(gate)
        .tool(asks)
        .tool(fails)
        .build()
        .unwrap();
    (server, dir)
}

/// `params` with the per-request `_meta` of a 2026-07-28 client with the tasks extension
/// (and elicitation), or, if `!tasks`, of one that declared nothing.
fn modern(mut params: Value, tasks: bool) -> Value {
    let capabilities =
        if tasks { json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}) } else { json!({}) };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "metrics-test", "version": "0"},
    });
    params
}

/// The era's params of a request: as given (2025-11-25), or with the 2026-07-28 `_meta`.
fn params(era: &str, params: Value) -> Value {
    if era == MODERN { modern(params, true) } else { params }
}

/// Calls `tool` as a task in `era`; returns its id.
async fn start(peer: &mut TestPeer, era: &str, tool: &str) -> String {
    let created = if era == MODERN {
        peer.result("tools/call", modern(json!({"name": tool}), true)).await
    } else {
        peer.result("tools/call", json!({"name": tool, "task": {}})).await
    };
    let id = if era == MODERN { &created["taskId"] } else { &created["task"]["taskId"] };
    id.as_str().unwrap_or_else(|| panic!("{tool} in {era} made no task: {created}")).to_owned()
}

/// Reads the task with `tasks/get` until its status is `status` (failing past [`DEADLINE`]).
async fn until_status(peer: &mut TestPeer, era: &str, id: &str, status: &str) {
    let waited = tokio::time::timeout(DEADLINE, async {
        loop {
            let task = peer.result("tasks/get", params(era, json!({"taskId": id}))).await;
            if task["status"] == status {
                return;
            }
            assert!(
                task["status"] == "working" || task["status"] == "input_required",
                "task {id} ended {} instead of {status}: {task}",
                task["status"]
            );
            tokio::task::yield_now().await;
        }
    });
    waited.await.unwrap_or_else(|_| panic!("task {id} not {status} in time"));
}

/// One HTTP/1.1 request on its own connection; returns the status and the body.
async fn request(addr: SocketAddr, head: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(DEADLINE, stream.read_to_end(&mut answer)).await.expect("an answer in time").unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (headers, body) = answer.split_once("\r\n\r\n").expect("a complete HTTP response");
    let status = headers.split(' ').nth(1).and_then(|code| code.parse().ok()).expect("a status code");
    (status, body.to_owned())
}

/// `GET path` with `extra` header lines (each ending in `\r\n`).
async fn get(addr: SocketAddr, path: &str, extra: &str) -> (u16, String) {
    request(addr, &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Connection: close\r\n\r\n")).await
}

/// One sample's name and labels.
type Series = (String, BTreeMap<String, String>);

/// Parses the Prometheus text format (0.0.4) as this server writes it: `# HELP` and
/// `# TYPE` comments, and `name{label="value",...} number` samples (values without
/// escapes). Every sample line must parse and every series must be unique.
fn parse(text: &str) -> BTreeMap<Series, f64> {
    let mut samples = BTreeMap::new();
    for line in text.lines().filter(|line| !line.is_empty() && !line.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("a sample without a value: {line:?}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("not a number in {line:?}"));
        let (name, labels) = match series.split_once('{') {
            None => (series.to_owned(), BTreeMap::new()),
            Some((name, rest)) => {
                let inner = rest.strip_suffix('}').unwrap_or_else(|| panic!("unclosed labels in {line:?}"));
                let labels = inner
                    .split(',')
                    .filter(|pair| !pair.is_empty())
                    .map(|pair| {
                        let (key, quoted) = pair.split_once('=').unwrap_or_else(|| panic!("a bad label in {line:?}"));
                        let value = quoted.strip_prefix('"').and_then(|v| v.strip_suffix('"'));
                        (key.to_owned(), value.unwrap_or_else(|| panic!("an unquoted label in {line:?}")).to_owned())
                    })
                    .collect();
                (name.to_owned(), labels)
            }
        };
        assert!(samples.insert((name, labels), value).is_none(), "a series twice: {line:?}");
    }
    samples
}

/// The series of `name`, by their labels.
fn family(samples: &BTreeMap<Series, f64>, name: &str) -> BTreeMap<Vec<(String, String)>, f64> {
    samples
        .iter()
        .filter(|((series, _), _)| series == name)
        .map(|((_, labels), value)| (labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(), *value))
        .collect()
}

/// Expected series from `(label values…, value)` rows over `keys`.
fn rows<const N: usize>(keys: [&str; N], rows: &[([&str; N], f64)]) -> BTreeMap<Vec<(String, String)>, f64> {
    rows.iter()
        .map(|(values, value)| {
            let mut labels: Vec<(String, String)> =
                keys.iter().zip(values).map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
            labels.sort();
            (labels, *value)
        })
        .collect()
}

#[tokio::test]
async fn metrics_after_a_scripted_run_in_both_eras_count_every_task_and_request() {
    let (server, _dir) = server();
    let http = TestServer::http(server.clone()).await.unwrap();
    let addr = http.addr().unwrap();

    let mut legacy = TestPeer::connect(server.clone());
    legacy.initialize(json!({"elicitation": {}})).await;
    let mut modern_peer = TestPeer::connect(server.clone());
    scripted_run(&mut legacy, &mut modern_peer, addr).await;

    let finished = rows(["tool", "era", "status"], &[
        (["echo", LEGACY, "completed"], 2.0),
        (["fails", LEGACY, "failed"], 1.0),
        (["gate", LEGACY, "cancelled"], 1.0),
        (["echo", MODERN, "completed"], 1.0),
        // A tool's error is `failed` to the operator in both eras (issue 42), though the
        // 2026-07-28 wire says `completed` with `isError` (the run checks that above).
        (["fails", MODERN, "failed"], 1.0),
        (["gate", MODERN, "cancelled"], 1.0),
    ]);
    // The change feed is read by a task of its own: scrape until it caught up (bounded).
    let mut scrapes = 0;
    let mut seen = BTreeMap::new();
    let caught_up = tokio::time::timeout(DEADLINE, async {
        loop {
            let (status, body) = get(addr, "/metrics", "").await;
            scrapes += 1;
            assert_eq!(status, 200, "{body}");
            let samples = parse(&body);
            seen = family(&samples, "mcp_tasks_tasks_finished_total");
            if seen == finished {
                return samples;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    let samples = caught_up.unwrap_or_else(|_| panic!("finished tasks in time: expected {finished:?}, last seen {seen:?}"));

    check_task_families(&samples);
    // Counted after each answer: a scrape sees the scrapes before it, not itself.
    let http_requests = rows(["method", "status"], &[
        (["GET", "404"], 1.0),
        (["POST", "415"], 1.0),
        (["GET", "200"], f64::from(scrapes - 1)),
    ]);
    let http_requests: BTreeMap<_, _> = http_requests.into_iter().filter(|(_, value)| *value > 0.0).collect();
    assert_eq!(family(&samples, "mcp_tasks_http_requests_total"), http_requests);
    assert_eq!(family(&samples, "mcp_tasks_http_sessions_open"), rows([], &[([], 0.0)]), "stdio has no HTTP session");
    assert_eq!(family(&samples, "mcp_tasks_metrics_feed_lagged_total"), rows([], &[([], 0.0)]));
}

/// The run the metrics count: in each era tasks that complete, fail, are cancelled and ask
/// (two echoes in 2025-11-25), a task still working and a plain call; then two refused HTTP
/// requests.
async fn scripted_run(legacy: &mut TestPeer, modern_peer: &mut TestPeer, addr: SocketAddr) {
    for (era, peer) in [(LEGACY, &mut *legacy), (MODERN, &mut *modern_peer)] {
        for _ in 0..(if era == LEGACY { 2 } else { 1 }) {
            let echo = start(peer, era, "echo").await;
            until_status(peer, era, &echo, "completed").await;
        }
        let fails = start(peer, era, "fails").await;
        until_status(peer, era, &fails, if era == LEGACY { "failed" } else { "completed" }).await;
        let gate = start(peer, era, "gate").await;
        peer.result("tasks/cancel", params(era, json!({"taskId": gate}))).await;
        until_status(peer, era, &gate, "cancelled").await;
        let asks = start(peer, era, "asks").await;
        until_status(peer, era, &asks, "input_required").await;
    }
    // Still working at the scrape; and a plain call, which makes no task.
    start(modern_peer, MODERN, "gate").await;
    let plain = modern_peer.result("tools/call", modern(json!({"name": "echo"}), false)).await;
    assert_eq!(plain["content"][0]["text"], "echo", "{plain}");
    // Two refused HTTP requests: an unknown path, and a body that is not JSON.
    assert_eq!(get(addr, "/nope", "").await.0, 404);
    let not_json = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 2\r\nConnection: close\r\n\r\nhi"
    );
    assert_eq!(request(addr, &not_json).await.0, 415);
}

/// The task families of the scripted run's scrape: created, running, asking, durations.
fn check_task_families(samples: &BTreeMap<Series, f64>) {
    let created = rows(["tool", "era"], &[
        (["echo", LEGACY], 2.0),
        (["fails", LEGACY], 1.0),
        (["gate", LEGACY], 1.0),
        (["asks", LEGACY], 1.0),
        (["echo", MODERN], 1.0),
        (["fails", MODERN], 1.0),
        (["gate", MODERN], 2.0),
        (["asks", MODERN], 1.0),
    ]);
    assert_eq!(family(samples, "mcp_tasks_tasks_created_total"), created);
    let by_tool = |gate: f64, asks: f64| {
        rows(["tool"], &[(["echo"], 0.0), (["fails"], 0.0), (["gate"], gate), (["asks"], asks)])
    };
    assert_eq!(family(samples, "mcp_tasks_tasks_running"), by_tool(1.0, 0.0), "the gate left working");
    assert_eq!(family(samples, "mcp_tasks_tasks_input_required"), by_tool(0.0, 2.0), "one asks per era");
    let durations = rows(["tool"], &[(["echo"], 3.0), (["fails"], 2.0), (["gate"], 2.0)]);
    assert_eq!(family(samples, "mcp_tasks_task_duration_seconds_count"), durations, "one per finished task");
    let infinite = family(samples, "mcp_tasks_task_duration_seconds_bucket")
        .into_iter()
        .filter(|(labels, _)| labels.iter().any(|(k, v)| k == "le" && v == "+Inf"))
        .map(|(labels, value)| (labels.into_iter().filter(|(k, _)| k != "le").collect::<Vec<_>>(), value))
        .collect::<BTreeMap<_, _>>();
    assert_eq!(infinite, durations, "the +Inf bucket holds every observation");
}

/// `mcp_tasks_result_delivery_seconds` from one scrape: its count, its sum, and the count
/// of its `+Inf` bucket.
async fn deliveries(addr: SocketAddr) -> (f64, f64, f64) {
    let (status, body) = get(addr, "/metrics", "").await;
    assert_eq!(status, 200, "{body}");
    let samples = parse(&body);
    let one = |name: &str, labels: Vec<(String, String)>| {
        family(&samples, name).get(&labels).copied().unwrap_or_else(|| panic!("no {name} {labels:?} in:\n{body}"))
    };
    (
        one("mcp_tasks_result_delivery_seconds_count", Vec::new()),
        one("mcp_tasks_result_delivery_seconds_sum", Vec::new()),
        one("mcp_tasks_result_delivery_seconds_bucket", vec![("le".to_owned(), "+Inf".to_owned())]),
    )
}

#[tokio::test]
async fn a_tasks_result_that_waited_is_timed_from_the_commit_and_one_that_found_the_task_done_is_not() {
    let (server, _dir) = server();
    let http = TestServer::http(server.clone()).await.unwrap();
    let addr = http.addr().unwrap();
    let mut peer = TestPeer::connect(server);
    peer.initialize(json!({"elicitation": {}})).await;
    assert_eq!(deliveries(addr).await, (0.0, 0.0, 0.0), "nothing delivered yet");

    // `asks` waits for an answer: its question reaches the client on the stream of the
    // tasks/result, which has therefore read the task unfinished and waits for it.
    let id = start(&mut peer, LEGACY, "asks").await;
    let waiting = peer.send_request("tasks/result", json!({"taskId": id})).await;
    let question = peer.until(|message| message["method"] == "elicitation/create" || message["id"] == waiting).await.pop().unwrap();
    assert_eq!(question["method"], "elicitation/create", "the question before the result: {question}");
    peer.send_result(&question["id"], json!({"action": "accept", "content": {"name": "Ada"}})).await;
    let answer = peer.until(|message| message["id"] == waiting && message.get("method").is_none()).await.pop().unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "answered", "{answer}");
    // Observed before the answer left: the scrape after it sees it.
    let (count, sum, infinite) = deliveries(addr).await;
    assert_eq!((count, infinite), (1.0, 1.0), "one delivery to a waiter");
    assert!(sum > 0.0 && sum < DEADLINE.as_secs_f64(), "from the commit to the answer: {sum} s");

    // The task is finished now: this tasks/result waits for nothing and is not a delivery.
    let again = peer.result("tasks/result", json!({"taskId": id})).await;
    assert_eq!(again["content"][0]["text"], "answered", "{again}");
    assert_eq!(deliveries(addr).await, (1.0, sum, 1.0), "unchanged by a tasks/result on a finished task");
}

/// Accepts one token, `s3cret`, as the principal `ops`.
fn one_token() -> http::BearerAuth {
    // The static tokens of `mcp-tasks serve` are `mcp_tasks_config::Auth`; one token here.
    http::BearerAuth::new(|token| (token == "s3cret").then(|| mcp_tasks_engine::Principal::new("ops")), None)
}

#[tokio::test]
async fn metrics_need_a_known_host_and_with_tokens_configured_a_valid_token() {
    let (server, _dir) = server();
    let options = http::Options { auth: Some(Arc::new(one_token())), ..http::Options::default() };
    let http = TestServer::http_with(server, options).await.unwrap();
    let addr = http.addr().unwrap();
    assert_eq!(get(addr, "/metrics", "").await.0, 401, "no token");
    assert_eq!(get(addr, "/metrics", "Authorization: Bearer wrong\r\n").await.0, 401, "an unknown token");
    let foreign = request(addr, "GET /metrics HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer s3cret\r\nConnection: close\r\n\r\n");
    assert_eq!(foreign.await.0, 403, "a foreign Host, even with a token");
    let evil_origin = "Authorization: Bearer s3cret\r\nOrigin: https://evil.example\r\n";
    assert_eq!(get(addr, "/metrics", evil_origin).await.0, 403, "a foreign Origin, even with a token");
    let (status, body) = get(addr, "/metrics", "Authorization: Bearer s3cret\r\n").await;
    assert_eq!(status, 200, "{body}");
    let samples = parse(&body);
    let refused = rows(["method", "status"], &[(["GET", "401"], 2.0), (["GET", "403"], 2.0)]);
    assert_eq!(family(&samples, "mcp_tasks_http_requests_total"), refused, "refusals are counted too");
}

#[tokio::test]
async fn with_metrics_off_the_path_is_not_served() {
    let (server, _dir) = server();
    let options = http::Options { metrics: false, ..http::Options::default() };
    let http = TestServer::http_with(server, options).await.unwrap();
    let addr = http.addr().unwrap();
    assert_eq!(get(addr, "/metrics", "").await.0, 404);
}

/// Sends `head` (and keeps the connection); returns the stream and the response's header
/// block, read up to its blank line.
async fn open(addr: SocketAddr, head: &str) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut headers = Vec::new();
    let read = async {
        while !headers.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "the connection closed before the headers ended");
            headers.push(byte[0]);
        }
    };
    tokio::time::timeout(DEADLINE, read).await.expect("headers in time");
    (stream, String::from_utf8(headers).unwrap())
}

/// From one scrape: open HTTP sessions, and open 2025-11-25 SSE streams (0 if none yet).
async fn sessions_and_streams(addr: SocketAddr) -> (f64, f64) {
    let (status, body) = get(addr, "/metrics", "").await;
    assert_eq!(status, 200, "{body}");
    let samples = parse(&body);
    let sessions = family(&samples, "mcp_tasks_http_sessions_open");
    let streams = family(&samples, "mcp_tasks_http_streams_open");
    let legacy = vec![("era".to_owned(), LEGACY.to_owned())];
    (sessions[&Vec::new()], streams.get(&legacy).copied().unwrap_or(0.0))
}

#[tokio::test]
async fn metrics_count_an_open_http_session_and_its_stream_until_they_end() {
    let (server, _dir) = server();
    let http = TestServer::http(server).await.unwrap();
    let addr = http.addr().unwrap();
    assert_eq!(sessions_and_streams(addr).await, (0.0, 0.0));
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "metrics-test", "version": "0"}}})
    .to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{initialize}",
        initialize.len()
    );
    let (_answer, headers) = open(addr, &head).await;
    assert!(headers.starts_with("HTTP/1.1 200"), "{headers}");
    let session = headers
        .lines()
        .find_map(|line| line.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("mcp-session-id")))
        .map(|(_, value)| value.trim().to_owned())
        .expect("Mcp-Session-Id");
    assert_eq!(sessions_and_streams(addr).await, (1.0, 0.0), "a session, no stream yet");
    let listen = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         MCP-Protocol-Version: {LEGACY}\r\nConnection: close\r\n\r\n"
    );
    let (stream, headers) = open(addr, &listen).await;
    assert!(headers.starts_with("HTTP/1.1 200") && headers.contains("text/event-stream"), "{headers}");
    assert_eq!(sessions_and_streams(addr).await, (1.0, 1.0), "the standalone stream is open");
    // The client hangs up: the stream is no longer counted (the server sees it at once).
    drop(stream);
    let ended = tokio::time::timeout(DEADLINE, async {
        while sessions_and_streams(addr).await != (1.0, 0.0) {
            tokio::task::yield_now().await;
        }
    });
    ended.await.expect("the stream closed by the client counted as ended in time");
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {session}\r\nConnection: close\r\n\r\n");
    assert_eq!(request(addr, &delete).await.0, 200);
    // The session ends with DELETE (its id is removed from the live sessions at once; the
    // scrape is polled all the same, bounded).
    let ended = tokio::time::timeout(DEADLINE, async {
        while sessions_and_streams(addr).await != (0.0, 0.0) {
            tokio::task::yield_now().await;
        }
    });
    ended.await.expect("the session and its stream counted as ended in time");
}
