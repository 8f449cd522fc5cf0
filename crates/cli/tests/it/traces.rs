//! Trace context: the W3C `traceparent` of a `tools/call` (its `_meta`, in either era, or the
//! HTTP `traceparent` header) is kept with the task and handed to its command as
//! `TRACEPARENT` (same trace id and flags, a new span id) and `TRACESTATE`, also when the
//! task runs again after a restart; a malformed one is ignored, never an error.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Server, Workdir};
use crate::http::{Client, HttpServer};
use crate::http_peer;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

const CONFIG: &str = r#"
[server]
name = "trace-test"
inline_wait = "20s"

[[tools]]
name = "trace_env"
description = "Prints TRACEPARENT and TRACESTATE."
command = ["sh", "-c", "printf '%s|%s' \"${{TRACEPARENT-unset}}\" \"${{TRACESTATE-unset}}\""]

[[tools]]
name = "trace_retry"
on_restart = "retry"
description = "First run: leaves a marker and hangs. Later runs: print TRACEPARENT."
command = ["sh", "-c", "if [ -e \"$1\" ]; then printf '%s' \"${{TRACEPARENT-unset}}\"; else touch \"$1\"; sleep 60; fi", "_", "{marker}"]
[tools.input_schema]
type = "object"
properties = { marker = { type = "string" } }
"#;

fn workdir() -> Workdir {
    let work = Workdir::new();
    std::fs::write(work.config(), CONFIG).expect("write config");
    work
}

/// Splits the `trace_env` output `TRACEPARENT|TRACESTATE`.
fn printed(result: &Value) -> (String, String) {
    let text = result["content"][0]["text"].as_str().expect("text content").to_owned();
    let (parent, state) = text.split_once('|').expect("two fields");
    (parent.to_owned(), state.to_owned())
}

/// Checks that `seen` continues the test's trace: its trace id and flags, a new span id.
fn assert_child(seen: &str) {
    let parts: Vec<&str> = seen.split('-').collect();
    assert_eq!(parts.len(), 4, "{seen}");
    assert_eq!((parts[0], parts[1], parts[3]), ("00", TRACE_ID, "01"), "{seen}");
    assert!(parts[2].len() == 16 && parts[2] != PARENT_ID && parts[2] != "0000000000000000", "a new span id: {seen}");
}

#[test]
fn traces_a_legacy_task_over_stdio_passes_the_meta_traceparent_to_its_command() {
    let work = workdir();
    let mut server = work.start();
    server.initialize();
    let meta = json!({"traceparent": TRACEPARENT, "tracestate": "rojo=00f067aa0ba902b7"});
    let created = server.call("tools/call", json!({"name": "trace_env", "arguments": {}, "task": {}, "_meta": meta}));
    let id = created["task"]["taskId"].as_str().expect("taskId").to_owned();
    let (parent, state) = printed(&server.call("tasks/result", json!({"taskId": id})));
    assert_child(&parent);
    assert_eq!(state, "rojo=00f067aa0ba902b7");
    // Without trace context the command gets none.
    let created = server.call("tools/call", json!({"name": "trace_env", "arguments": {}, "task": {}}));
    let id = created["task"]["taskId"].as_str().expect("taskId").to_owned();
    assert_eq!(printed(&server.call("tasks/result", json!({"taskId": id}))), ("unset".to_owned(), "unset".to_owned()));
}

#[test]
fn traces_a_malformed_traceparent_is_ignored_and_the_task_runs() {
    let work = workdir();
    let mut server = work.start();
    server.initialize();
    for bad in [json!("00-zz-nope-01"), json!(42), json!("00-00000000000000000000000000000000-00f067aa0ba902b7-01")] {
        let meta = json!({"traceparent": bad, "tracestate": "k=v"});
        let created = server.call("tools/call", json!({"name": "trace_env", "arguments": {}, "task": {}, "_meta": meta}));
        let id = created["task"]["taskId"].as_str().expect("a task, not an error").to_owned();
        let result = server.call("tasks/result", json!({"taskId": id}));
        assert_eq!(printed(&result), ("unset".to_owned(), "unset".to_owned()), "{bad}");
    }
}

#[test]
fn traces_the_http_traceparent_header_reaches_the_command_in_both_eras() {
    let work = workdir();
    let server = HttpServer::start(&work);
    // 2025-11-25, a session: the header of the tools/call POST.
    let mut client = Client::new(&server, None);
    client.initialize();
    let body = client.message("tools/call", json!({"name": "trace_env", "arguments": {}, "task": {}}));
    let reply = client.post_with(&body, &[("traceparent", TRACEPARENT), ("tracestate", "congo=t61rcWkgMzE")]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let created = sse_or_json(&reply);
    let id = created["result"]["task"]["taskId"].as_str().expect("taskId").to_owned();
    let (parent, state) = printed(&client.result("tasks/result", json!({"taskId": id})));
    assert_child(&parent);
    assert_eq!(state, "congo=t61rcWkgMzE");

    // 2026-07-28: the header, and `_meta`'s own traceparent, which wins over it.
    let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    for (meta_trace, expected_trace) in [(None, TRACE_ID), (Some(other), "0af7651916cd43dd8448eb211c80319c")] {
        let mut meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        });
        if let Some(trace) = meta_trace {
            meta["traceparent"] = json!(trace);
        }
        let params = json!({"name": "trace_env", "arguments": {}, "_meta": meta});
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "trace_env"),
            ("traceparent", TRACEPARENT),
        ];
        let reply = http_peer::request(server.addr, "POST", &headers, Some(&body));
        assert_eq!(reply.status, 200, "{}", reply.body);
        let result = sse_or_json(&reply)["result"].clone();
        assert_eq!(result["resultType"], "complete", "done within the inline wait: {result}");
        let (parent, _) = printed(&result);
        assert_eq!(parent.split('-').nth(1), Some(expected_trace), "{parent}");
    }
}

/// The JSON-RPC response of a reply (a JSON body, or the last message of an SSE body).
fn sse_or_json(reply: &http_peer::Reply) -> Value {
    if reply.header("content-type").is_some_and(|kind| kind.starts_with("text/event-stream")) {
        let data = reply.body.lines().rev().find_map(|line| line.strip_prefix("data: ")).expect("an event");
        serde_json::from_str(data).expect("JSON")
    } else {
        reply.json()
    }
}

#[test]
fn traces_a_task_retried_after_a_restart_gets_the_stored_traceparent() {
    let work = workdir();
    let marker = work.path("first-run-marker");
    let mut server = Server::start(&work.config(), &work.store());
    server.initialize();
    let params = json!({
        "name": "trace_retry",
        "arguments": {"marker": marker.to_str().expect("utf-8 path")},
        "task": {"ttl": 60000},
        "_meta": {"traceparent": TRACEPARENT},
    });
    let id = server.call("tools/call", params)["task"]["taskId"].as_str().expect("taskId").to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the first run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.kill();

    let mut again = Server::start(&work.config(), &work.store());
    again.initialize();
    let result = again.call("tasks/result", json!({"taskId": id}));
    let seen = result["content"][0]["text"].as_str().expect("text").to_owned();
    assert_child(&seen);
}

/// `[server.tracing]` naming a collector at `endpoint`, after the test's tools.
fn config_with_collector(endpoint: &str) -> String {
    format!("{CONFIG}\n[server.tracing]\notlp_endpoint = \"{endpoint}\"\n")
}

#[cfg(not(feature = "otlp"))]
#[test]
fn traces_an_otlp_endpoint_in_a_build_without_the_feature_is_a_clear_error() {
    let work = workdir();
    std::fs::write(work.config(), config_with_collector("http://127.0.0.1:4318")).expect("write config");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["serve", "--stdio", "--config"])
        .arg(work.config())
        .arg("--store")
        .arg(work.store())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run mcp-tasks");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("built without OTLP support") && stderr.contains("--features otlp"), "{stderr}");
}

/// A loopback OTLP/HTTP collector: answers every POST 200 and hands its path and body on.
#[cfg(feature = "otlp")]
fn collector() -> (String, std::sync::mpsc::Receiver<(String, Vec<u8>)>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("address"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let path = request_line.split(' ').nth(1).unwrap_or("").to_owned();
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            if tx.send((path, body)).is_err() {
                return;
            }
        }
    });
    (endpoint, rx)
}

#[cfg(feature = "otlp")]
#[test]
fn traces_with_otlp_a_loopback_collector_gets_the_task_span_in_the_requests_trace() {
    let (endpoint, received) = collector();
    let work = workdir();
    std::fs::write(work.config(), config_with_collector(&endpoint)).expect("write config");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    command.args(["serve", "--stdio", "--config"]).arg(work.config()).arg("--store").arg(work.store());
    command.env("OTEL_BSP_SCHEDULE_DELAY", "100");
    let mut server = Server::spawn(command);
    server.initialize();
    let meta = json!({"traceparent": TRACEPARENT});
    let created = server.call("tools/call", json!({"name": "trace_env", "arguments": {}, "task": {}, "_meta": meta}));
    let id = created["task"]["taskId"].as_str().expect("taskId").to_owned();
    let (parent, _) = printed(&server.call("tasks/result", json!({"taskId": id})));
    assert_child(&parent);
    // The trace id as it is in the protobuf body: 16 raw bytes.
    let trace_id: Vec<u8> = (0..16).map(|i| u8::from_str_radix(&TRACE_ID[2 * i..2 * i + 2], 16).expect("hex")).collect();
    let task_id = id.as_bytes();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut exports = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (path, body) = received.recv_timeout(left).unwrap_or_else(|_| panic!("no span of the trace in {exports} exports"));
        exports += 1;
        assert_eq!(path, "/v1/traces");
        let has = |needle: &[u8]| body.windows(needle.len()).any(|window| window == needle);
        if has(&trace_id) && has(task_id) && has(b"trace_env") {
            break;
        }
    }
}
