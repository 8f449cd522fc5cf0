//! A task's whole life over stdio, with the exact shapes of 2025-11-25.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Workdir, create_task, poll_until_terminal};

const RELATED: &str = "io.modelcontextprotocol/related-task";

fn is_status(n: &Value, id: &str, status: &str) -> bool {
    n["method"] == "notifications/tasks/status" && n["params"]["taskId"] == id && n["params"]["status"] == status
}

#[test]
fn legacy_full_lifecycle_create_poll_result_list_cancel() {
    let work = Workdir::new();
    let mut server = work.start();

    // legacy_1_2: initialize declares tasks {list, cancel, requests.tools.call} and tools.
    let init = server.initialize();
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(init["capabilities"]["tasks"], json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}));
    assert!(init["capabilities"]["tools"].is_object());
    assert_eq!(init["serverInfo"]["name"], "test-server");

    // Tools carry execution.taskSupport.
    let tools = server.call("tools/list", json!({}));
    let support = |name: &str| {
        tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("echo"), "optional");
    assert_eq!(support("plain_only"), "forbidden");
    assert_eq!(support("task_only"), "required");

    // legacy_15_22: CreateTaskResult nests the full Task, which starts `working`.
    let created = server.call("tools/call", json!({"name": "echo", "arguments": {"text": "hello"}, "task": {"ttl": 60000}}));
    let task = &created["task"];
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60000);
    assert_eq!(task["pollInterval"], 250);
    assert!(task["createdAt"].as_str().unwrap().ends_with('Z'));
    assert!(task["lastUpdatedAt"].is_string());
    // legacy_18: the creation time in 12 hex digits, then 128 random bits in 32.
    assert_eq!(id.len(), 44, "time-ordered 128-bit hex id: {id}");
    assert!(id.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')), "{id}");

    // legacy_43_48: tasks/result blocks until terminal and returns the original result
    // with the related-task metadata.
    let result = server.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"], json!([{"type": "text", "text": "hello"}]));
    assert_eq!(result["isError"], false);
    assert_eq!(result["_meta"][RELATED], json!({"taskId": id}));

    // Polling: tasks/get is the Task flattened into result, now completed, no related-task.
    let got = server.call("tasks/get", json!({"taskId": id}));
    assert_eq!(got["status"], "completed");
    assert_eq!(got["taskId"], id);
    assert!(got.get("_meta").is_none(), "legacy_54: no related-task on tasks/get results");

    // A status notification for the change to completed, without related-task metadata.
    let note = server.notification(|n| is_status(n, &id, "completed"));
    assert!(note["params"].get("_meta").is_none(), "legacy_59");

    // tasks/list shows it.
    let list = server.call("tasks/list", json!({}));
    assert!(list["tasks"].as_array().unwrap().iter().any(|t| t["taskId"] == id));
    assert!(list.get("nextCursor").is_none());

    // legacy_68: cancelling a terminal task is -32602.
    let err = server.call_err("tasks/cancel", json!({"taskId": id}));
    assert_eq!(err["code"], -32602);
    assert_eq!(err["message"], "Cannot cancel task: already in terminal status 'completed'");

    // The result can be read again, unchanged.
    assert_eq!(server.call("tasks/result", json!({"taskId": id})), result);
    server.validate_received();
}

#[test]
fn legacy_27_polling_reaches_the_terminal_status() {
    let work = Workdir::new();
    let mut server = work.start();
    server.initialize();
    let id = create_task(&mut server, "slow", json!({"seconds": 0.3}));
    let task = poll_until_terminal(&mut server, &id);
    assert_eq!(task["status"], "completed");
    server.validate_received();
}

#[test]
fn legacy_70_cancel_moves_to_cancelled_before_answering_and_kills_the_process_group() {
    let work = Workdir::new();
    let mut server = work.start();
    server.initialize();
    let id = create_task(&mut server, "slow", json!({"seconds": 60}));
    // The command tool reports "started (pid N)" as a status message once the process runs.
    let started = server.notification(|n| {
        n["params"]["taskId"] == id.as_str()
            && n["params"]["statusMessage"].as_str().is_some_and(|m| m.starts_with("started (pid "))
    });
    let message = started["params"]["statusMessage"].as_str().unwrap();
    let pid: i32 = message.trim_start_matches("started (pid ").trim_end_matches(')').parse().unwrap();

    let cancelled = server.call("tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["taskId"], id);
    assert!(cancelled["statusMessage"].is_string());
    assert_eq!(server.call("tasks/get", json!({"taskId": id}))["status"], "cancelled");

    // The whole process group goes away (bounded wait: signals are asynchronous).
    let group = nix::unistd::Pid::from_raw(pid);
    let deadline = Instant::now() + Duration::from_secs(10);
    while nix::sys::signal::killpg(group, None).is_ok() {
        assert!(Instant::now() < deadline, "process group {pid} still alive after cancel");
        std::thread::sleep(Duration::from_millis(20));
    }

    // legacy_25: it stays cancelled; cancelling again is -32602; the result is an error.
    let again = server.call_err("tasks/cancel", json!({"taskId": id}));
    assert_eq!(again["code"], -32602);
    let err = server.call_err("tasks/result", json!({"taskId": id}));
    assert!(err["message"].as_str().unwrap().contains("cancelled"), "{err}");
    assert_eq!(server.call("tasks/get", json!({"taskId": id}))["status"], "cancelled");
    server.validate_received();
}

#[test]
fn legacy_80_is_error_result_makes_the_task_failed_and_replays_the_result() {
    let work = Workdir::new();
    let mut server = work.start();
    server.initialize();
    let id = create_task(&mut server, "fails", json!({}));
    let result = server.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("exited with code 3"), "{text}");
    assert!(text.contains("disk on fire"), "stderr tail: {text}");
    assert_eq!(result["_meta"][RELATED]["taskId"], id);
    let task = server.call("tasks/get", json!({"taskId": id}));
    assert_eq!(task["status"], "failed");
    assert!(task["statusMessage"].as_str().unwrap().contains("exited with code 3"), "legacy_79: {task}");
    server.validate_received();
}

#[test]
fn legacy_39_ttl_is_capped_and_defaulted() {
    let work = Workdir::new();
    let mut server = work.start();
    server.initialize();
    let capped = server.call("tools/call", json!({"name": "echo", "arguments": {"text": "a"}, "task": {"ttl": 36_000_000}}));
    assert_eq!(capped["task"]["ttl"], 7_200_000, "max_ttl = 2h");
    let defaulted = server.call("tools/call", json!({"name": "echo", "arguments": {"text": "a"}, "task": {}}));
    assert_eq!(defaulted["task"]["ttl"], 3_600_000, "default_ttl = 1h");
    server.validate_received();
}

#[test]
fn plain_call_to_an_optional_tool_answers_with_the_result() {
    let work = Workdir::new();
    let mut server = work.start();
    server.initialize();
    let result = server.call("tools/call", json!({"name": "echo", "arguments": {"text": "hi there"}}));
    assert_eq!(result["content"], json!([{"type": "text", "text": "hi there"}]));
    assert_eq!(result["isError"], false);
    server.validate_received();
}

#[test]
fn legacy_75_notifications_cancelled_stops_a_plain_call_without_answer() {
    let work = Workdir::new();
    let mut server = work.start();
    server.initialize();
    let slow = server.send_request("tools/call", json!({"name": "slow", "arguments": {"seconds": 60}}));
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": slow, "reason": "changed my mind"}}));
    // The next answer is the ping's: the cancelled call never answers.
    let ping = server.send_request("ping", json!({}));
    let first = server.recv();
    assert_eq!(first["id"], ping, "expected only the ping response, got {first}");
    // And the server still serves calls.
    let result = server.call("tools/call", json!({"name": "echo", "arguments": {"text": "after"}}));
    assert_eq!(result["content"][0]["text"], "after");
    server.validate_received();
}

#[test]
fn legacy_63_67_tasks_list_pages_with_opaque_cursors() {
    let work = Workdir::new();
    let mut server = work.start();
    server.initialize();
    let mut ids = Vec::new();
    for n in 0..103 {
        ids.push(create_task(&mut server, "echo", json!({"text": n.to_string()})));
    }
    let first = server.call("tasks/list", json!({}));
    let cursor = first["nextCursor"].as_str().expect("legacy_64: nextCursor while more exist").to_owned();
    let second = server.call("tasks/list", json!({"cursor": cursor}));
    assert!(second.get("nextCursor").is_none());
    let tasks: Vec<&serde_json::Value> =
        first["tasks"].as_array().unwrap().iter().chain(second["tasks"].as_array().unwrap()).collect();
    let mut listed: Vec<String> = tasks.iter().map(|t| t["taskId"].as_str().unwrap().to_owned()).collect();
    // Oldest first by creation time; tasks created in the same millisecond come in the order
    // of their ids, which need not be the order they were made in.
    let created: Vec<&str> = tasks.iter().map(|t| t["createdAt"].as_str().unwrap()).collect();
    assert!(created.windows(2).all(|pair| pair[0] <= pair[1]), "oldest first: {created:?}");
    listed.sort();
    let mut made = ids.clone();
    made.sort();
    assert_eq!(listed, made, "every task once");
    let err = server.call_err("tasks/list", json!({"cursor": "not-a-cursor"}));
    assert_eq!(err["code"], -32602);
    server.validate_received();
}
