//! Log hygiene (issue "reliability", item 8): at the default level no log line carries a
//! call's arguments, a result, a bearer token or an elicitation answer. A full run over stdio
//! (tasks and plain calls, a failure, a question answered, a cancel, bad input) and over
//! HTTP with tokens, each with marker strings in every such place; then the logs are grepped.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::harness::{CONFIG, Server, Workdir, create_task};
use crate::http::TOKENS;

/// Strings that may appear only in requests and results, never in a log line.
const ARGUMENT: &str = "ARG-MARKER-5b1e";
const ANSWER: &str = "ANSWER-MARKER-c93a";
const TOKEN: &str = "alice-secret";

fn assert_clean(log: &str, what: &str) {
    assert!(!log.trim().is_empty(), "{what}: the run logged nothing at all, so the check would prove nothing");
    for marker in [ARGUMENT, ANSWER, TOKEN, "partial", "disk on fire"] {
        let lines: Vec<&str> = log.lines().filter(|line| line.contains(marker)).collect();
        assert!(lines.is_empty(), "{what}: {marker:?} is in the logs:\n{}", lines.join("\n"));
    }
}

#[test]
fn at_the_default_level_no_log_line_carries_arguments_results_or_answers_over_stdio() {
    let work = Workdir::new();
    let log = work.path("serve.log");
    {
        let mut server = Server::start_logging(&work.config(), &work.store(), &log);
        server.initialize_with(json!({"elicitation": {}}));
        // A task and a plain call whose arguments and results carry the marker.
        let id = create_task(&mut server, "echo", json!({"text": ARGUMENT}));
        let result = server.call("tasks/result", json!({"taskId": id}));
        assert_eq!(result["content"][0]["text"], ARGUMENT);
        let plain = server.call("tools/call", json!({"name": "echo", "arguments": {"text": ARGUMENT}}));
        assert_eq!(plain["content"][0]["text"], ARGUMENT);
        // A failure whose output ("partial", "disk on fire") is the result's, not the log's.
        let failed = create_task(&mut server, "fails", json!({}));
        server.call("tasks/result", json!({"taskId": failed}));
        // A question, answered with the marker.
        let asked_id = create_task(&mut server, "confirm", json!({}));
        let waiting = server.send_request("tasks/result", json!({"taskId": asked_id}));
        let asked = server.notification(|n| n["method"] == "elicitation/create");
        server.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"ok": true, "note": ANSWER}}}));
        let answered = server.response(waiting);
        assert!(answered["result"]["content"][0]["text"].as_str().unwrap().contains(ANSWER), "{answered}");
        // A cancel, and bad input carrying the marker.
        let slow = create_task(&mut server, "slow", json!({"seconds": 30}));
        server.call("tasks/cancel", json!({"taskId": slow}));
        let bad = server.request("tools/call", json!({"name": "echo", "arguments": {"text": 7, "extra": ARGUMENT}}));
        assert!(bad.get("error").is_some(), "{bad}");
        let unknown = server.request("tools/call", json!({"name": ARGUMENT, "arguments": {}}));
        assert!(unknown.get("error").is_some(), "{unknown}");
        server.send_raw(&format!("{{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": \"tools/call\", \"params\": {{\"name\": \"{ARGUMENT}\"")); // cut short
        // The cancelled task's status notification may still be on its way.
        let parse_error = server.next_response();
        assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
        let _ = server.request("ping", json!({}));
    }
    assert_clean(&std::fs::read_to_string(&log).unwrap(), "stdio");
}

#[test]
fn at_the_default_level_no_log_line_carries_a_bearer_token_over_http() {
    let work = Workdir::new();
    std::fs::write(work.config(), format!("{CONFIG}\n{TOKENS}")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(work.config())
        .arg("--store")
        .arg(work.store())
        .env_remove("RUST_LOG")
        .env("MCP_TASKS_TEST_BOB_TOKEN", "bob-secret-from-env")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("mcp-tasks: listening on http://") {
                let _ = tx.send(url.trim_end_matches("/mcp").to_owned());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let addr: std::net::SocketAddr = rx.recv_timeout(Duration::from_secs(30)).unwrap().parse().unwrap();
    let post = |token: &str, body: serde_json::Value| {
        let body = body.to_string();
        let headers = [
            ("Authorization", format!("Bearer {token}")),
            ("Content-Type", "application/json".to_owned()),
            ("Accept", "application/json, text/event-stream".to_owned()),
        ];
        let headers: Vec<(&str, &str)> = headers.iter().map(|(name, value)| (*name, value.as_str())).collect();
        crate::http_peer::request(addr, "POST", &headers, Some(&body))
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    assert_eq!(post(TOKEN, initialize.clone()).status, 200);
    // Wrong tokens, one carrying the marker: refused, and not logged.
    assert_eq!(post(&format!("{TOKEN}-wrong"), initialize.clone()).status, 401);
    assert_eq!(post(ARGUMENT, initialize).status, 401);
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()), nix::sys::signal::Signal::SIGTERM);
    child.wait().unwrap();
    let log = reader.join().unwrap();
    assert_clean(&log, "HTTP");
}

/// Issue 42 point 7: a first start on a new store says its migrations in one line (every
/// version applied, from the first to the last), not one line per migration; a second start
/// on the same store, with nothing to apply, says none.
#[test]
fn a_first_start_says_its_migrations_in_one_line_and_a_second_start_in_none() {
    let work = Workdir::new();
    let count = |log: &std::path::Path| {
        let text = std::fs::read_to_string(log).expect("the log");
        text.lines().filter(|line| line.contains("migration")).map(str::to_owned).collect::<Vec<_>>()
    };
    for (run, expected) in [("first", 1), ("second", 0)] {
        let log = work.path(&format!("{run}.log"));
        {
            let mut server = Server::start_logging(&work.config(), &work.store(), &log);
            server.initialize();
        }
        let lines = count(&log);
        assert_eq!(lines.len(), expected, "{run} start: {lines:#?}");
        if run == "first" {
            assert!(lines[0].contains("applied task store migrations") && lines[0].contains("from=1"), "{lines:#?}");
        }
    }
}
