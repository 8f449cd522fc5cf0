//! Hostile clients against the real binary: one table of bad inputs over stdio and
//! Streamable HTTP, in both eras (2025-11-25 with its session, 2026-07-28 stateless with
//! per-request `_meta`). Each row is one input, where it goes, and the error it must get
//! (HTTP status, JSON-RPC code, a fragment of the message); after each row the same
//! transport and era serve a correct request. Tasks started before the table run meanwhile
//! and must end with their results intact. Then the limits: polling rate, sessions per
//! principal, streams per session, a reader that never reads, a client that sends its
//! headers byte by byte.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{CONFIG, Server, Workdir};
use crate::http::{ALICE, BOB, Client, HttpServer, TOKENS};
use crate::http_peer::{self, Reply};

mod table;

use table::{Input, Row, Via, raw_call, table};

const TASKS: &str = "io.modelcontextprotocol/tasks";
/// An id no task has.
pub(super) const UNKNOWN: &str = "0123456789abcdef0123456789abcdef";

/// The running tasks and the connections of the table.
struct Ctx {
    stdio: Server,
    addr: SocketAddr,
    alice: Client,
    bob: Client,
}

fn modern_meta(params: &Value) -> Value {
    let mut params = params.clone();
    if !params.is_object() {
        return params;
    }
    let given = params.get("_meta").cloned().unwrap_or_else(|| json!({}));
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "0"},
    });
    for (key, value) in given.as_object().into_iter().flatten() {
        if value.is_null() {
            meta.as_object_mut().unwrap().remove(key);
        } else {
            meta[key] = value.clone();
        }
    }
    params["_meta"] = meta;
    params
}

/// The JSON-RPC message of a reply: its JSON body, or the last message of an SSE body.
fn message_of(reply: &Reply) -> Option<Value> {
    if reply.header("content-type").is_some_and(|kind| kind.starts_with("text/event-stream")) {
        let data = reply.body.lines().rev().find_map(|line| line.strip_prefix("data: ").filter(|data| !data.trim().is_empty()))?;
        return serde_json::from_str(data).ok();
    }
    serde_json::from_str(&reply.body).ok()
}

/// The next message on stdio that is not a notification or a request of the server.
fn stdio_reply(stdio: &mut Server) -> Value {
    loop {
        let message = stdio.recv();
        if message.get("method").is_none() {
            return message;
        }
    }
}

impl Ctx {
    fn token(via: Via) -> &'static str {
        match via {
            Via::HttpLegacyBob | Via::HttpModernBob => BOB,
            _ => ALICE,
        }
    }

    /// Sends a row's input; the HTTP status (0 over stdio) and the JSON-RPC message, if any.
    fn send(&mut self, via: Via, input: &Input) -> (u16, Option<Value>) {
        match via {
            Via::StdioLegacy | Via::StdioModern => {
                let text = match input {
                    Input::Raw(text) => text.clone(),
                    Input::Call(method, params) => {
                        let params = if matches!(via, Via::StdioModern) { modern_meta(params) } else { params.clone() };
                        raw_call(method, &params)
                    }
                    _ => panic!("stdio rows are lines"),
                };
                self.stdio.send_raw(&text);
                (0, Some(stdio_reply(&mut self.stdio)))
            }
            Via::HttpLegacy | Via::HttpLegacyBob => {
                let client = if matches!(via, Via::HttpLegacy) { &mut self.alice } else { &mut self.bob };
                let (body, extra): (String, &[(&str, String)]) = match input {
                    Input::Raw(text) => (text.clone(), &[]),
                    Input::RawWith(text, extra) => (text.clone(), extra),
                    Input::Call(method, params) => (client.message(method, params.clone()), &[]),
                    Input::CallWith(method, params, extra) => (client.message(method, params.clone()), extra),
                    Input::Get(extra) => return self.get(via, extra),
                };
                let extra: Vec<(&str, &str)> = extra.iter().map(|(n, v)| (*n, v.as_str())).collect();
                let reply = client.post_with(&body, &extra);
                (reply.status, message_of(&reply))
            }
            Via::HttpModern | Via::HttpModernBob => {
                let (method, params, extra): (&str, Value, &[(&str, String)]) = match input {
                    Input::Call(method, params) => (method, modern_meta(params), &[]),
                    Input::CallWith(method, params, extra) => (method, modern_meta(params), extra),
                    _ => panic!("modern rows are calls"),
                };
                let name = params.get("name").or_else(|| params.get("taskId")).and_then(Value::as_str).map(str::to_owned);
                let body = raw_call(method, &params);
                let bearer = format!("Bearer {}", Ctx::token(via));
                let mut headers: Vec<(&str, String)> = vec![
                    ("Content-Type", "application/json".into()),
                    ("Accept", "application/json, text/event-stream".into()),
                    ("MCP-Protocol-Version", "2026-07-28".into()),
                    ("Mcp-Method", method.into()),
                    ("Authorization", bearer),
                ];
                if let Some(name) = name {
                    headers.push(("Mcp-Name", name));
                }
                let reply = http(self.addr, "POST", headers, extra, Some(&body));
                (reply.status, message_of(&reply))
            }
        }
    }

    /// `GET /mcp` (or another method given as the `:method` pseudo-header) on alice's
    /// session, with `extra` headers.
    fn get(&mut self, via: Via, extra: &[(&str, String)]) -> (u16, Option<Value>) {
        let method = extra.iter().find(|(n, _)| *n == ":method").map_or("GET", |(_, v)| v.as_str()).to_owned();
        let extra: Vec<(&str, String)> = extra.iter().filter(|(n, _)| *n != ":method").cloned().collect();
        let headers = vec![
            ("Accept", "text/event-stream".to_owned()),
            ("Authorization", format!("Bearer {}", Ctx::token(via))),
            ("Mcp-Session-Id", self.alice.session().to_owned()),
        ];
        let reply = http(self.addr, &method, headers, &extra, None);
        (reply.status, message_of(&reply))
    }

    /// A correct request on the same transport and era.
    fn still_serves(&mut self, via: Via) {
        match via {
            Via::StdioLegacy => assert_eq!(self.stdio.call("ping", json!({})), json!({})),
            Via::StdioModern => {
                let (_, reply) = self.send(via, &Input::Call("server/discover", json!({})));
                assert!(reply.unwrap()["result"]["supportedVersions"].is_array());
            }
            Via::HttpLegacy => assert_eq!(self.alice.result("ping", json!({})), json!({})),
            Via::HttpLegacyBob => assert_eq!(self.bob.result("ping", json!({})), json!({})),
            Via::HttpModern | Via::HttpModernBob => {
                let (status, reply) = self.send(via, &Input::Call("server/discover", json!({})));
                assert_eq!(status, 200);
                assert!(reply.unwrap()["result"]["supportedVersions"].is_array());
            }
        }
    }
}

/// A request with `headers`, then `extra` replacing them by name (an empty value removes one).
fn http<'a>(addr: SocketAddr, method: &str, mut headers: Vec<(&'a str, String)>, extra: &[(&'a str, String)], body: Option<&str>) -> Reply {
    for (name, value) in extra {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        if !value.is_empty() {
            headers.push((name, value.clone()));
        }
    }
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    http_peer::request(addr, method, &headers, body)
}

fn check(row: &Row, status: u16, message: Option<&Value>) -> Result<(), String> {
    let via = row.via;
    let stdio = matches!(via, Via::StdioLegacy | Via::StdioModern);
    if !stdio && status != row.expect.status {
        return Err(format!("status {status}, expected {}", row.expect.status));
    }
    let Some(code) = row.expect.code else { return Ok(()) };
    let Some(message) = message else { return Err("no JSON-RPC message in the answer".into()) };
    let error = &message["error"];
    if error["code"] != code {
        let shown: String = message.to_string().chars().take(300).collect();
        return Err(format!("code {}, expected {code}: {shown}", error["code"]));
    }
    let text = error["message"].as_str().unwrap_or("");
    let said = if row.expect.exact {
        text == row.expect.says
    } else {
        text.to_lowercase().contains(&row.expect.says.to_lowercase())
    };
    if !said {
        let shown: String = text.chars().take(300).collect();
        return Err(format!("message {shown:?} should say {:?}", row.expect.says.chars().take(100).collect::<String>()));
    }
    Ok(())
}

pub(crate) fn hostile_config(work: &Workdir, extra: &str) {
    std::fs::write(work.config(), format!("{CONFIG}\n{TOKENS}")).unwrap();
    let text = std::fs::read_to_string(work.config()).unwrap();
    // The [server] table comes first in CONFIG: the extra keys go into it.
    let text = text.replacen("[server]\n", &format!("[server]\n{extra}\n"), 1);
    std::fs::write(work.config(), text).unwrap();
}

#[test]
fn hostile_bad_input_table_over_stdio_and_http_in_both_eras() {
    let work = Workdir::new();
    hostile_config(&work, "max_body = \"64KiB\"");
    let server = HttpServer::start(&work);
    // The config names bob's token by environment variable, which stdio needs set too.
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    command.args(["serve", "--stdio", "--config"]).arg(work.config()).arg("--store").arg(work.path("stdio.sqlite3"));
    command.env("MCP_TASKS_TEST_BOB_TOKEN", BOB);
    let mut stdio = Server::spawn(command);
    stdio.initialize();
    let mut alice = Client::new(&server, Some(ALICE));
    alice.initialize();
    let mut bob = Client::new(&server, Some(BOB));
    bob.initialize();
    let mut gone = Client::new(&server, Some(ALICE));
    gone.initialize();
    let deleted = gone.session().to_owned();
    let bearer = vec![("Authorization", format!("Bearer {ALICE}"))];
    let reply = http(server.addr, "DELETE", bearer, &[("Mcp-Session-Id", deleted.clone())], None);
    assert_eq!(reply.status, 200, "{}", reply.body);

    // Tasks running while the table is fed: one over stdio, one of alice's over HTTP.
    let started = Instant::now();
    let over_stdio = stdio.call("tools/call", json!({"name": "slow", "arguments": {"seconds": 2}, "task": {"ttl": 60000}}));
    let stdio_task = over_stdio["task"]["taskId"].as_str().unwrap().to_owned();
    let over_http = alice.result("tools/call", json!({"name": "slow", "arguments": {"seconds": 2}, "task": {}}));
    let alice_task = over_http["task"]["taskId"].as_str().unwrap().to_owned();

    let rows = table(&alice_task, bob.session(), &deleted);
    println!("hostile: the bad-input table has {} rows", rows.len());
    assert!(rows.len() >= 60, "at least 60 rows, have {}", rows.len());
    let mut ctx = Ctx { stdio, addr: server.addr, alice, bob };
    let mut failures = Vec::new();
    for row in &rows {
        let (status, message) = ctx.send(row.via, &row.input);
        if let Err(why) = check(row, status, message.as_ref()) {
            failures.push(format!("{} ({:?}): {why}", row.name, row.via));
        }
        ctx.still_serves(row.via);
    }
    assert!(failures.is_empty(), "{} of {} rows failed:\n{}", failures.len(), rows.len(), failures.join("\n"));

    // The tasks that ran meanwhile ended with their results intact.
    let stdio_result = ctx.stdio.call("tasks/result", json!({"taskId": stdio_task}));
    assert_eq!(stdio_result["content"][0]["text"], "done\n", "{stdio_result}");
    let http_result = ctx.alice.result("tasks/result", json!({"taskId": alice_task}));
    assert_eq!(http_result["content"][0]["text"], "done\n", "{http_result}");
    assert_eq!(ctx.alice.result("tasks/get", json!({"taskId": alice_task}))["status"], "completed");
    println!("hostile: {} rows in {:?}, both running tasks completed", rows.len(), started.elapsed());
}

/// A server with bearer tokens and `extra` keys in `[server]`.
fn limited(extra: &str) -> (Workdir, HttpServer) {
    let work = Workdir::new();
    hostile_config(&work, extra);
    let server = HttpServer::start(&work);
    (work, server)
}

/// A 2026-07-28 `tasks/get` of `id` as the bearer of `token`.
pub(crate) fn modern_get(addr: SocketAddr, token: &str, id: &str) -> (u16, Value) {
    let params = modern_meta(&json!({"taskId": id}));
    let headers = vec![
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json".to_owned()),
        ("MCP-Protocol-Version", "2026-07-28".to_owned()),
        ("Mcp-Method", "tasks/get".to_owned()),
        ("Mcp-Name", id.to_owned()),
        ("Authorization", format!("Bearer {token}")),
    ];
    let reply = http(addr, "POST", headers, &[], Some(&raw_call("tasks/get", &params)));
    (reply.status, message_of(&reply).expect("a JSON-RPC answer"))
}

#[test]
fn hostile_polling_beyond_the_rate_is_refused_per_principal_with_32010_and_a_wait_then_served_again() {
    // A pollInterval of 30 s: every read below comes far sooner after the one before than
    // half of it, so none is a paced read (those are never refused; see `compliant_polls`).
    let work = Workdir::new();
    hostile_config(&work, "poll_rate = 2\npoll_burst = 4");
    let text = std::fs::read_to_string(work.config()).unwrap().replacen("poll_interval = \"250ms\"", "poll_interval = \"30s\"", 1);
    std::fs::write(work.config(), text).unwrap();
    let server = HttpServer::start(&work);
    let mut alice = Client::new(&server, Some(ALICE));
    alice.initialize();
    let mut bob = Client::new(&server, Some(BOB));
    bob.initialize();
    let created = alice.result("tools/call", json!({"name": "echo", "arguments": {"text": "x"}, "task": {}}));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    // The burst is answered, faster than the task's pollInterval (30 s) and without pause.
    for _ in 0..4 {
        alice.result("tasks/get", json!({"taskId": id}));
    }
    let refused = alice.error("tasks/get", json!({"taskId": id}));
    assert_eq!(refused["code"], -32010, "{refused}");
    assert_eq!((refused["data"]["limit"].clone(), refused["data"]["rate"].clone()), (json!("poll_rate"), json!(2)));
    let wait = refused["data"]["retryAfterMs"].as_u64().unwrap();
    assert!(wait > 0 && wait <= 501, "{refused}");
    assert!(refused["message"].as_str().unwrap().starts_with("Polling too fast"), "{refused}");
    // tasks/list counts too, and so does the other era: the bucket is the principal's.
    assert_eq!(alice.error("tasks/list", json!({}))["data"]["limit"], "poll_rate");
    let (status, modern) = modern_get(server.addr, ALICE, &id);
    assert_eq!((status, modern["error"]["code"].clone(), modern["error"]["data"]["limit"].clone()), (200, json!(-32010), json!("poll_rate")));
    // Everything else is served; another principal is not slowed.
    assert_eq!(alice.result("ping", json!({})), json!({}));
    assert!(alice.result("tools/list", json!({}))["tools"].is_array());
    for _ in 0..4 {
        assert!(bob.result("tasks/list", json!({}))["tasks"].is_array());
    }
    // After the wait it names, alice is served again.
    std::thread::sleep(Duration::from_millis(wait));
    assert_eq!(alice.result("tasks/get", json!({"taskId": id}))["taskId"], id.as_str());
}

#[test]
fn hostile_sessions_over_max_sessions_per_principal_are_429_32010_and_others_are_not_affected() {
    let (_work, server) = limited("max_sessions_per_principal = 2");
    let mut first = Client::new(&server, Some(ALICE));
    first.initialize();
    let mut second = Client::new(&server, Some(ALICE));
    second.initialize();
    let third = Client::new(&server, Some(ALICE));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}});
    let reply = third.post_with(&init.to_string(), &[]);
    assert_eq!(reply.status, 429, "{}", reply.body);
    assert!(reply.header("mcp-session-id").is_none());
    let error = reply.json()["error"].clone();
    assert_eq!((error["code"].clone(), error["data"].clone()), (json!(-32010), json!({"limit": "max_sessions_per_principal", "max": 2, "current": 2})));
    assert_eq!(reply.json()["id"], 1);
    assert!(error["message"].as_str().unwrap().contains("DELETE"), "{error}");
    // Another principal gets its own sessions; alice's serve on.
    Client::new(&server, Some(BOB)).initialize();
    assert_eq!(first.result("ping", json!({})), json!({}));
    // Ending one makes room.
    let reply = http(server.addr, "DELETE", vec![("Authorization", format!("Bearer {ALICE}"))], &[("Mcp-Session-Id", second.session().to_owned())], None);
    assert_eq!(reply.status, 200);
    Client::new(&server, Some(ALICE)).initialize();
}

#[test]
fn hostile_streams_over_max_streams_per_session_are_429_32010_and_json_answers_go_on() {
    let (_work, server) = limited("max_streams_per_session = 1");
    let mut alice = Client::new(&server, Some(ALICE));
    alice.initialize();
    let bearer = format!("Bearer {ALICE}");
    let session = alice.session().to_owned();
    let get = [("Accept", "text/event-stream"), ("Authorization", bearer.as_str()), ("Mcp-Session-Id", session.as_str())];
    let mut standalone = http_peer::open(server.addr, "GET", &get, None);
    assert_eq!(standalone.status, 200);
    assert!(standalone.next_event().is_some(), "the priming event");
    let call = alice.message("tools/call", json!({"name": "echo", "arguments": {"text": "streamed"}}));
    let reply = alice.post_with(&call, &[]);
    assert_eq!(reply.status, 429, "{}", reply.body);
    let error = reply.json()["error"].clone();
    assert_eq!((error["code"].clone(), error["data"]["limit"].clone(), error["data"]["max"].clone()), (json!(-32010), json!("max_streams_per_session"), json!(1)));
    assert!(error["message"].as_str().unwrap().contains("Accept: application/json"), "{error}");
    // The same call answered as JSON needs no stream.
    let reply = alice.post_with(&call, &[("Accept", "application/json")]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["result"]["content"][0]["text"], "streamed");
    // A second GET stream is refused as well (a stream limit, before the one-standalone rule).
    let reply = http_peer::request(server.addr, "GET", &get, None);
    assert_eq!(reply.status, 429, "{}", reply.body);
    drop(standalone);
}

/// A tool that sends `count` progress notifications of about 4 KiB each, then prints `end`.
const CHATTY: &str = r#"
[[tools]]
name = "chatty"
description = "Reports progress many times with long messages."
command = ["sh", "-c", "pad=$(head -c 4000 /dev/zero | tr '\\0' x); i=0; while [ $i -lt \"$1\" ]; do i=$((i+1)); printf '@mcp-tasks {{\"progress\": %d, \"message\": \"%s\"}}\n' $i $pad; done; echo end", "_", "{count}"]
[tools.input_schema]
type = "object"
properties = { count = { type = "integer" } }
"#;

#[test]
fn hostile_a_reader_that_never_reads_its_stream_has_it_closed_and_others_are_served_meanwhile() {
    let work = Workdir::new();
    hostile_config(&work, "max_stream_events = 8");
    let text = std::fs::read_to_string(work.config()).unwrap();
    std::fs::write(work.config(), format!("{text}\n{CHATTY}")).unwrap();
    let server = HttpServer::start(&work);
    let mut slow = Client::new(&server, Some(ALICE));
    slow.initialize();
    // 4000 events of 4 KiB, about 16 MiB: more than the socket buffers hold.
    let count = 4000;
    let call = slow.message("tools/call", json!({"name": "chatty", "arguments": {"count": count}, "_meta": {"progressToken": "p"}}));
    let bearer = format!("Bearer {ALICE}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", bearer.as_str()),
        ("Mcp-Session-Id", slow.session()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let mut stream = http_peer::open(server.addr, "POST", &headers, Some(&call));
    assert_eq!(stream.status, 200);
    // While the stream is not read, another client's whole lifecycle completes in time.
    let started = Instant::now();
    let mut other = Client::new(&server, Some(BOB));
    other.initialize();
    other.echo_task("meanwhile");
    assert!(started.elapsed() < Duration::from_secs(10), "served in {:?}", started.elapsed());
    // Once the command has printed everything, the stream ends without the reply: the
    // server closed it rather than buffer 16 MiB for a client that does not read.
    let mut seen = 0;
    let mut last_id = None;
    let mut reply = None;
    while let Some((event_id, message)) = stream.next_message() {
        last_id = event_id.or(last_id);
        if message.get("method").is_some() {
            seen += 1;
        } else {
            reply = Some(message);
        }
    }
    assert!(reply.is_none() && seen < count, "the stream was closed early ({seen} of {count} events, no reply)");
    // The last events are kept for resumption: a client that comes back, reading this time,
    // resumes from the last event it read (closed again whenever it falls behind) until the
    // reply, which is always kept.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = last_id.expect("events had ids");
    let answer = loop {
        assert!(Instant::now() < deadline, "no reply by resumption");
        let get = [
            ("Accept", "text/event-stream"),
            ("Authorization", bearer.as_str()),
            ("Mcp-Session-Id", slow.session()),
            ("Last-Event-ID", last.as_str()),
        ];
        let mut resumed = http_peer::open(server.addr, "GET", &get, None);
        assert_eq!(resumed.status, 200);
        let mut reply = None;
        while let Some((event_id, message)) = resumed.next_message() {
            last = event_id.unwrap_or(last);
            if message.get("method").is_none() {
                reply = Some(message);
            }
        }
        if let Some(reply) = reply {
            break reply;
        }
    };
    assert_eq!(answer["result"]["content"][0]["text"], "end\n", "{}", answer.to_string().chars().take(300).collect::<String>());
}

#[test]
fn hostile_modern_a_reader_that_never_reads_its_stream_has_it_ended_and_others_are_served_meanwhile() {
    let work = Workdir::new();
    hostile_config(&work, "max_stream_events = 8");
    let text = std::fs::read_to_string(work.config()).unwrap();
    std::fs::write(work.config(), format!("{text}\n{CHATTY}")).unwrap();
    let server = HttpServer::start(&work);
    let count = 4000;
    // A plain 2026-07-28 call from a client without tasks, with a progress token: its
    // progress comes on the response's SSE stream.
    let mut params = modern_meta(&json!({"name": "chatty", "arguments": {"count": count}}));
    params["_meta"]["progressToken"] = json!("p");
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let body = raw_call("tools/call", &params);
    let bearer = format!("Bearer {ALICE}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "chatty"),
    ];
    let mut stream = http_peer::open(server.addr, "POST", &headers, Some(&body));
    assert_eq!(stream.status, 200);
    let started = Instant::now();
    let mut other = Client::new(&server, Some(BOB));
    other.initialize();
    other.echo_task("meanwhile");
    let (status, discover) = modern_get(server.addr, BOB, UNKNOWN);
    assert_eq!((status, discover["error"]["code"].clone()), (200, json!(-32602)));
    assert!(started.elapsed() < Duration::from_secs(10), "served in {:?}", started.elapsed());
    let mut seen = 0;
    let mut reply = None;
    while let Some((_, message)) = stream.next_message() {
        if message.get("method").is_some() {
            seen += 1;
        } else {
            reply = Some(message);
        }
    }
    assert!(reply.is_none() && seen < count, "the stream was ended early ({seen} of {count} events, no reply)");
}

/// Opens a 2026-07-28 `subscriptions/listen` stream as the bearer of `token`.
fn listen(addr: SocketAddr, token: &str) -> http_peer::EventStream {
    let params = modern_meta(&json!({"notifications": {"taskIds": [UNKNOWN]}}));
    let bearer = format!("Bearer {token}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "subscriptions/listen"),
    ];
    http_peer::open(addr, "POST", &headers, Some(&raw_call("subscriptions/listen", &params)))
}

#[test]
fn hostile_listen_streams_over_max_listens_per_principal_are_429_32010_and_a_closed_one_frees_its_place() {
    let (_work, server) = limited("max_listens_per_principal = 2");
    let mut first = listen(server.addr, ALICE);
    let mut second = listen(server.addr, ALICE);
    for stream in [&mut first, &mut second] {
        assert_eq!(stream.status, 200);
        let (_, ack) = stream.next_message().expect("the acknowledgement");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    }
    let params = modern_meta(&json!({"notifications": {"taskIds": [UNKNOWN]}}));
    let headers = vec![
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json, text/event-stream".to_owned()),
        ("Authorization", format!("Bearer {ALICE}")),
        ("MCP-Protocol-Version", "2026-07-28".to_owned()),
        ("Mcp-Method", "subscriptions/listen".to_owned()),
    ];
    let third = http(server.addr, "POST", headers, &[], Some(&raw_call("subscriptions/listen", &params)));
    assert_eq!(third.status, 429, "{}", third.body);
    let error = third.json()["error"].clone();
    assert_eq!((error["code"].clone(), error["data"].clone()), (json!(-32010), json!({"limit": "max_listens_per_principal", "max": 2, "current": 2})));
    // Another principal listens; alice's other requests are served.
    let bob = listen(server.addr, BOB);
    assert_eq!(bob.status, 200);
    let (status, unknown) = modern_get(server.addr, ALICE, UNKNOWN);
    assert_eq!((status, unknown["error"]["code"].clone()), (200, json!(-32602)));
    // A stream the client closes frees its place (the server notices at its next write at
    // the latest: keep-alives every 15 s).
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let mut again = listen(server.addr, ALICE);
        if again.status == 200 {
            assert!(again.next_message().is_some());
            break;
        }
        assert!(Instant::now() < deadline, "the closed stream's place was not freed");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn hostile_a_client_sending_its_headers_byte_by_byte_is_cut_off_and_others_are_served_meanwhile() {
    let (_work, server) = limited("header_timeout = \"1s\"");
    let mut slowloris = std::net::TcpStream::connect(server.addr).unwrap();
    slowloris.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let request = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nX-Pad: {}\r\n", server.addr, "y".repeat(200));
    let started = Instant::now();
    let mut other: Option<Duration> = None;
    let mut cut_off = None;
    for byte in request.bytes() {
        if std::io::Write::write_all(&mut slowloris, &[byte]).is_err() {
            cut_off = Some(started.elapsed());
            break;
        }
        let mut buf = [0u8; 512];
        match std::io::Read::read(&mut slowloris, &mut buf) {
            Ok(0) => {
                cut_off = Some(started.elapsed());
                break;
            }
            // A 408 or similar before the close.
            Ok(_) => {}
            Err(err) if matches!(err.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => {
                cut_off = Some(started.elapsed());
                break;
            }
        }
        if other.is_none() {
            // Meanwhile, another client's lifecycle.
            let begun = Instant::now();
            let mut client = Client::new(&server, Some(BOB));
            client.initialize();
            client.echo_task("meanwhile");
            other = Some(begun.elapsed());
        }
        if started.elapsed() > Duration::from_secs(10) {
            break;
        }
    }
    let other = other.unwrap();
    assert!(other < Duration::from_secs(5), "the other client took {other:?}");
    let cut_off = cut_off.expect("the slow client was cut off");
    assert!(cut_off >= Duration::from_millis(900) && cut_off < Duration::from_secs(5), "cut off after {cut_off:?}");
    // The timeout is for headers only: a response streamed for longer is not cut.
    let mut client = Client::new(&server, Some(ALICE));
    client.initialize();
    let created = client.result("tools/call", json!({"name": "slow", "arguments": {"seconds": 2}, "task": {}}));
    let id = created["task"]["taskId"].clone();
    assert_eq!(client.result("tasks/result", json!({"taskId": id}))["content"][0]["text"], "done\n");
}
