//! Crash recovery: SIGKILL the server mid-task, restart it on the same store.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{Workdir, create_task};

#[test]
fn restart_keeps_completed_results_and_fails_interrupted_tasks() {
    let work = Workdir::new();
    let mut server = work.start();
    server.initialize();
    let done = create_task(&mut server, "echo", json!({"text": "kept across restarts"}));
    let before = server.call("tasks/result", json!({"taskId": done}));
    let running = create_task(&mut server, "slow", json!({"seconds": 60}));
    server.notification(|n| {
        n["params"]["taskId"] == running.as_str()
            && n["params"]["statusMessage"].as_str().is_some_and(|m| m.starts_with("started"))
    });
    server.kill();
    server.validate_received();

    let mut server = work.start();
    server.initialize();
    assert_eq!(server.call("tasks/result", json!({"taskId": done})), before, "the completed result comes back unchanged");
    let task = server.call("tasks/get", json!({"taskId": running}));
    assert_eq!(task["status"], "failed");
    let err = server.call_err("tasks/result", json!({"taskId": running}));
    assert_eq!(err["code"], -32603);
    assert!(err["message"].as_str().unwrap().contains("interrupted by a server restart"), "{err}");
    let list = server.call("tasks/list", json!({}));
    let ids: Vec<&str> = list["tasks"].as_array().unwrap().iter().map(|t| t["taskId"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![done.as_str(), running.as_str()]);
    server.validate_received();
}

#[test]
fn restart_reruns_tasks_whose_tool_says_retry_and_completes_once() {
    let work = Workdir::new();
    let marker = work.path("first-run-marker");
    let mut server = work.start();
    server.initialize();
    let id = create_task(&mut server, "retry_job", json!({"marker": marker.to_str().unwrap()}));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "first run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.kill();

    let mut server = work.start();
    server.initialize();
    let result = server.call("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "second-run\n");
    assert_eq!(result["isError"], false);
    let task = server.call("tasks/get", json!({"taskId": id}));
    assert_eq!(task["status"], "completed");
    let list = server.call("tasks/list", json!({}));
    assert_eq!(list["tasks"].as_array().unwrap().len(), 1, "one task, completed once");
    server.validate_received();
}
