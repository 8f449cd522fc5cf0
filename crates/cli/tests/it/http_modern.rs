//! 2026-07-28 over Streamable HTTP against the real binary, on the endpoint that serves
//! 2025-11-25 sessions too: POST without a session, the mirrored headers checked against the
//! body, the statuses of the era's errors, and a command tool run as a task (created,
//! read, answered, cancelled) by the server's decision.

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::harness::{CONFIG, Workdir};
use crate::http::{Client, HttpServer, TOKENS};
use crate::http_peer::{self, Reply};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// `params` with the per-request `_meta` of a client declaring `capabilities`.
fn with_meta(mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "http-modern-test", "version": "0"},
    });
    params
}

fn tasks_client() -> Value {
    json!({"extensions": {TASKS: {}}, "elicitation": {}})
}

/// POSTs a 2026-07-28 request with the headers a client mirrors (`name` for `Mcp-Name`),
/// then `extra` (which replace them by name).
fn post(addr: SocketAddr, method: &str, params: &Value, name: Option<&str>, extra: &[(&str, &str)]) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    for (key, value) in extra {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(key));
        headers.push((key, value));
    }
    http_peer::request(addr, "POST", &headers, Some(&body))
}

/// The JSON-RPC response of a reply (a JSON body, or the last message of an SSE body).
fn response(reply: &Reply) -> Value {
    if reply.header("content-type").is_some_and(|kind| kind.starts_with("text/event-stream")) {
        let data = reply.body.lines().rev().find_map(|line| line.strip_prefix("data: ")).expect("an event");
        serde_json::from_str(data).expect("JSON")
    } else {
        reply.json()
    }
}

fn ready() -> (Workdir, HttpServer) {
    let work = Workdir::new();
    let server = HttpServer::start(&work);
    (work, server)
}

#[test]
fn modern_http_discover_and_a_plain_call_need_no_session_and_answer_with_result_type() {
    let (_work, server) = ready();
    let reply = post(server.addr, "server/discover", &with_meta(json!({}), json!({})), None, &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply.header("mcp-session-id").is_none(), "no session in this era");
    let discover = response(&reply)["result"].clone();
    assert_eq!(discover["supportedVersions"], json!(["2026-07-28"]));
    let params = with_meta(json!({"name": "echo", "arguments": {"text": "hi"}}), json!({}));
    let reply = post(server.addr, "tools/call", &params, Some("echo"), &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let result = response(&reply)["result"].clone();
    assert_eq!((result["resultType"].clone(), result["content"][0]["text"].clone()), (json!("complete"), json!("hi")));
}

#[test]
fn modern_http_headers_that_disagree_with_the_body_are_400_32020_and_the_server_goes_on() {
    let (_work, server) = ready();
    let params = with_meta(json!({"name": "echo", "arguments": {"text": "x"}}), json!({}));
    type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, &'a str);
    let cases: [Case; 5] = [
        (&[("Mcp-Method", "tools/list")], Some("echo"), "Mcp-Method"),
        (&[("MCP-Protocol-Version", "2025-11-25")], Some("echo"), "MCP-Protocol-Version"),
        (&[], Some("other"), "Mcp-Name"),
        (&[], None, "Mcp-Name"),
        (&[("Mcp-Name", "=?base64?!!!?=")], None, "Base64"),
    ];
    for (extra, name, says) in cases {
        let reply = post(server.addr, "tools/call", &params, name, extra);
        assert_eq!(reply.status, 400, "{says}: {}", reply.body);
        let error = response(&reply)["error"].clone();
        assert_eq!(error["code"], -32020, "{error}");
        assert!(error["message"].as_str().unwrap().contains(says), "{says}: {error}");
    }
    // The same name, Base64-encoded as a client must when it is not a plain header value.
    let encoded = "=?base64?ZWNobw==?=";
    let reply = post(server.addr, "tools/call", &params, Some(encoded), &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
}

#[test]
fn modern_http_errors_of_the_era_have_their_statuses() {
    let (_work, server) = ready();
    let reply = post(server.addr, "server/discover", &json!({}), None, &[]);
    assert_eq!((reply.status, response(&reply)["error"]["code"].clone()), (400, json!(-32602)), "{}", reply.body);
    let mut other = with_meta(json!({}), json!({}));
    other["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let reply = post(server.addr, "tools/list", &other, None, &[("MCP-Protocol-Version", "2099-01-01")]);
    assert_eq!((reply.status, response(&reply)["error"]["code"].clone()), (400, json!(-32022)), "{}", reply.body);
    let reply = post(server.addr, "ping", &with_meta(json!({}), json!({})), None, &[]);
    assert_eq!((reply.status, response(&reply)["error"]["code"].clone()), (404, json!(-32601)), "{}", reply.body);
    let reply = post(server.addr, "tools/call", &with_meta(json!({"name": "task_only"}), json!({})), Some("task_only"), &[]);
    assert_eq!((reply.status, response(&reply)["error"]["code"].clone()), (400, json!(-32021)), "{}", reply.body);
}

#[test]
fn modern_http_a_command_tool_becomes_a_task_that_is_read_cancelled_and_read_by_a_legacy_session() {
    let (_work, server) = ready();
    let params = with_meta(json!({"name": "slow", "arguments": {"seconds": 30}}), tasks_client());
    let reply = post(server.addr, "tools/call", &params, Some("slow"), &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let created = response(&reply)["result"].clone();
    assert_eq!(created["resultType"], "task", "past the inline wait the call is a task: {created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let get = |id: &str| {
        let reply = post(server.addr, "tasks/get", &with_meta(json!({"taskId": id}), tasks_client()), Some(id), &[]);
        assert_eq!(reply.status, 200, "{}", reply.body);
        response(&reply)["result"].clone()
    };
    assert_eq!(get(&id)["status"], "working");
    // The same task through a 2025-11-25 session of the same (anonymous) principal.
    let mut legacy = Client::new(&server, None);
    legacy.initialize();
    let seen = legacy.result("tasks/get", json!({"taskId": id}));
    assert_eq!((seen["status"].clone(), seen["ttl"].is_u64()), (json!("working"), true), "{seen}");
    let reply = post(server.addr, "tasks/cancel", &with_meta(json!({"taskId": id}), tasks_client()), Some(&id), &[]);
    assert_eq!((reply.status, response(&reply)["result"]["resultType"].clone()), (200, json!("complete")));
    let reply = post(server.addr, "tasks/cancel", &with_meta(json!({"taskId": id}), tasks_client()), Some("not-it"), &[]);
    assert_eq!(reply.status, 400, "Mcp-Name must be the task id: {}", reply.body);
    let mut status = get(&id)["status"].clone();
    while status == "working" {
        // Not without pause: the server limits polling beyond 50 reads a second.
        std::thread::sleep(std::time::Duration::from_millis(50));
        status = get(&id)["status"].clone();
    }
    assert_eq!(status, "cancelled");
}

#[test]
fn modern_http_mrtr_a_command_that_asks_keeps_running_and_reads_the_retrys_answer_on_stdin() {
    let (_work, server) = ready();
    let caps = json!({"elicitation": {}});
    let reply = post(server.addr, "tools/call", &with_meta(json!({"name": "confirm"}), caps.clone()), Some("confirm"), &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let round = response(&reply)["result"].clone();
    assert_eq!(round["resultType"], "input_required", "{round}");
    let key = round["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let state = round["requestState"].as_str().unwrap().to_owned();
    let answers = json!({key: {"action": "accept", "content": {"ok": true}}});
    let retry = with_meta(json!({"name": "confirm", "requestState": state, "inputResponses": answers}), caps);
    let reply = post(server.addr, "tools/call", &retry, Some("confirm"), &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let done = response(&reply)["result"].clone();
    assert_eq!(done["resultType"], "complete", "{done}");
    let text = done["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(r#"answer: {"action":"accept","content":{"ok":true}}"#), "{text}");
}

#[test]
fn modern_http_tasks_survive_a_sigkill_and_are_read_in_this_era_after_the_restart() {
    let work = Workdir::new();
    let mut server = HttpServer::start(&work);
    let call = |addr, name: &str, arguments: Value| {
        let reply = post(addr, "tools/call", &with_meta(json!({"name": name, "arguments": arguments}), tasks_client()), Some(name), &[]);
        assert_eq!(reply.status, 200, "{}", reply.body);
        let created = response(&reply)["result"].clone();
        assert_eq!(created["resultType"], "task", "{created}");
        created["taskId"].as_str().unwrap().to_owned()
    };
    let get = |addr, id: &str| {
        let reply = post(addr, "tasks/get", &with_meta(json!({"taskId": id}), tasks_client()), Some(id), &[]);
        assert_eq!(reply.status, 200, "{}", reply.body);
        response(&reply)["result"].clone()
    };
    let done = call(server.addr, "task_only", json!({}));
    let mut finished = get(server.addr, &done);
    while finished["status"] == "working" {
        // At the suggested interval, as a client should (the server limits faster polling).
        std::thread::sleep(std::time::Duration::from_millis(finished["pollIntervalMs"].as_u64().unwrap_or(250)));
        finished = get(server.addr, &done);
    }
    assert_eq!(finished["status"], "completed", "{finished}");
    let running = call(server.addr, "slow", json!({"seconds": 30}));
    assert_eq!(get(server.addr, &running)["status"], "working");
    server.kill();

    let server = HttpServer::start(&work);
    let again = get(server.addr, &done);
    assert_eq!(again["result"], finished["result"], "the result outlives the restart unchanged");
    let interrupted = get(server.addr, &running);
    assert_eq!(interrupted["status"], "failed", "{interrupted}");
    let message = interrupted["error"]["message"].as_str().unwrap();
    assert!(message.contains("interrupted by a server restart"), "{message}");
}

#[test]
fn modern_http_closing_the_response_of_a_plain_call_cancels_its_work() {
    let work = Workdir::new();
    let config = std::fs::read_to_string(work.config()).unwrap().replacen("name = \"test-server\"", "name = \"test-server\"\nmax_running = 1", 1);
    std::fs::write(work.config(), config).unwrap();
    let server = HttpServer::start(&work);
    let plain_call = |name: &str, arguments: Value| {
        let params = with_meta(json!({"name": name, "arguments": arguments}), json!({}));
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string()
    };
    // The slow call, written by hand on a socket of its own, whose answer is never read.
    let body = plain_call("slow", json!({"seconds": 60}));
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: slow\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let send_slow = || {
        let mut socket = std::net::TcpStream::connect(server.addr).unwrap();
        std::io::Write::write_all(&mut socket, format!("{head}{body}").as_bytes()).unwrap();
        socket
    };
    let has_answer = |socket: &std::net::TcpStream| {
        socket.set_nonblocking(true).unwrap();
        let answered = !matches!(socket.peek(&mut [0u8; 1]), Err(err) if err.kind() == std::io::ErrorKind::WouldBlock);
        socket.set_nonblocking(false).unwrap();
        answered
    };
    // It holds the one running slot: another call is refused by the limit while it runs. A
    // slow call that came while an echo ran was itself refused (its socket has an answer),
    // and is sent again.
    let echo = |addr| post(addr, "tools/call", &with_meta(json!({"name": "echo", "arguments": {"text": "x"}}), json!({})), Some("echo"), &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut socket = send_slow();
    let refused = loop {
        assert!(std::time::Instant::now() < deadline, "the slow call never held the slot");
        if has_answer(&socket) {
            socket = send_slow();
            continue;
        }
        let reply = response(&echo(server.addr));
        if reply.get("error").is_some() {
            break reply;
        }
    };
    assert_eq!(refused["error"]["code"], -32010, "{refused}");
    // Closing its response cancels it: its process group is ended and the slot freed.
    drop(socket);
    // The 60 s call would hold the slot for a minute; the bound is far below that.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let reply = response(&echo(server.addr));
        if reply.get("result").is_some() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the slot was never freed: {reply}");
    }
}

#[test]
fn modern_http_mrtr_another_principals_request_state_is_refused_like_a_forged_one() {
    let work = Workdir::new();
    std::fs::write(work.config(), format!("{CONFIG}\n{TOKENS}")).unwrap();
    let server = HttpServer::start(&work);
    let caps = json!({"elicitation": {}});
    let as_alice = [("Authorization", "Bearer alice-secret")];
    let as_bob = [("Authorization", "Bearer bob-secret-from-env")];
    let reply = post(server.addr, "tools/call", &with_meta(json!({"name": "confirm"}), caps.clone()), Some("confirm"), &as_alice);
    let round = response(&reply)["result"].clone();
    assert_eq!(round["resultType"], "input_required", "{round}");
    let key = round["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let answers = json!({key: {"action": "accept", "content": {"ok": true}}});
    let retry = with_meta(json!({"name": "confirm", "requestState": round["requestState"], "inputResponses": answers}), caps.clone());
    let stolen = response(&post(server.addr, "tools/call", &retry, Some("confirm"), &as_bob))["error"].clone();
    let forged_retry = with_meta(json!({"name": "confirm", "requestState": "0123456789abcdef0123456789abcdef", "inputResponses": answers}), caps);
    let forged = response(&post(server.addr, "tools/call", &forged_retry, Some("confirm"), &as_bob))["error"].clone();
    assert_eq!(stolen["code"], -32602, "{stolen}");
    let same = |error: &Value| error["message"].as_str().unwrap().replace(retry["requestState"].as_str().unwrap(), "S").replace("0123456789abcdef0123456789abcdef", "S");
    assert_eq!(same(&stolen), same(&forged), "another's state reads exactly like a made-up one");
    // Bob's attempt did not use it up: Alice's retry still continues her work.
    let done = response(&post(server.addr, "tools/call", &retry, Some("confirm"), &as_alice))["result"].clone();
    assert_eq!(done["resultType"], "complete", "{done}");
}

#[test]
fn modern_http_subscriptions_listen_is_an_sse_stream_acknowledged_first_then_the_tasks_changes() {
    use std::io::{BufRead, BufReader, Write};
    let (_work, server) = ready();
    let params = with_meta(json!({"name": "slow", "arguments": {"seconds": 2}}), tasks_client());
    let created = response(&post(server.addr, "tools/call", &params, Some("slow"), &[]))["result"].clone();
    let id = created["taskId"].as_str().unwrap().to_owned();
    let listen = with_meta(json!({"notifications": {"taskIds": [id]}}), tasks_client());
    let body = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen", "params": listen}).to_string();
    // Without SSE there is no stream to answer on.
    let reply = post(server.addr, "subscriptions/listen", &listen, None, &[("Accept", "application/json")]);
    assert_eq!(reply.status, 406, "{}", reply.body);
    let mut socket = std::net::TcpStream::connect(server.addr).unwrap();
    socket.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    socket.write_all(format!("{head}{body}").as_bytes()).unwrap();
    let mut events = BufReader::new(socket).lines().map_while(Result::ok).filter_map(|line| {
        line.strip_prefix("data: ").map(|data| serde_json::from_str::<Value>(data).expect("JSON"))
    });
    let ack = events.next().expect("the acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["notifications"], json!({"taskIds": [id]}));
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1");
    let done = events
        .find(|event| event["params"]["status"] != "working")
        .expect("a notification of the task's end");
    assert_eq!((done["method"].clone(), done["params"]["taskId"].clone()), (json!("notifications/tasks"), json!(id)));
    assert_eq!(done["params"]["status"], "completed", "{done}");
    assert_eq!(done["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1");
}

#[test]
fn modern_http_an_idempotency_key_is_per_principal_and_another_principals_key_reveals_nothing() {
    let work = Workdir::new();
    std::fs::write(work.config(), format!("{CONFIG}\n{TOKENS}")).unwrap();
    let server = HttpServer::start(&work);
    let as_alice = [("Authorization", "Bearer alice-secret")];
    let as_bob = [("Authorization", "Bearer bob-secret-from-env")];
    let keyed = |seconds: u32| {
        let mut params = with_meta(json!({"name": "slow", "arguments": {"seconds": seconds}}), tasks_client());
        params["_meta"]["dev.mcp-tasks/idempotency-key"] = json!("shared-key-1");
        params
    };
    let created = |reply: &Reply| {
        let result = response(reply)["result"].clone();
        assert_eq!(result["resultType"], "task", "{result}");
        result["taskId"].as_str().unwrap().to_owned()
    };
    let alice = created(&post(server.addr, "tools/call", &keyed(30), Some("slow"), &as_alice));
    assert_eq!(created(&post(server.addr, "tools/call", &keyed(30), Some("slow"), &as_alice)), alice, "a retry gets the task");
    // Bob's identical key is his own: a new task, not Alice's, and no error about hers.
    let bob = created(&post(server.addr, "tools/call", &keyed(30), Some("slow"), &as_bob));
    assert_ne!(bob, alice);
    // Another call under Alice's key is refused; the same under Bob's reads as his own key.
    let reused = response(&post(server.addr, "tools/call", &keyed(31), Some("slow"), &as_alice))["error"].clone();
    assert_eq!(reused["code"], -32602, "{reused}");
    let bobs = response(&post(server.addr, "tools/call", &keyed(31), Some("slow"), &as_bob))["error"].clone();
    assert_eq!(bobs["code"], -32602, "{bobs}");
    assert!(!bobs.to_string().contains(&alice), "nothing of Alice's task: {bobs}");
}
