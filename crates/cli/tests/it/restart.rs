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

/// A tool whose command leaves a child in its process group (the group outlives its leader's
/// `wait` only if someone ends it) and writes the child's pid to `{pidfile}`.
const FAMILY_TOOL: &str = r#"
[[tools]]
name = "family"
description = "Starts a child in its group, then waits for it."
command = ["sh", "-c", "sleep 300 & echo $! > \"$1\"; wait", "_", "{pidfile}"]
[tools.input_schema]
type = "object"
properties = { pidfile = { type = "string" } }
"#;

/// The processes of group `pgid` that still run (zombies, which only wait for whoever
/// inherited them to reap them, do not count), from `/proc`.
pub(crate) fn running_in_group(pgid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..].split_whitespace().collect();
        if fields[2].parse::<i32>() == Ok(pgid) && fields[0] != "Z" {
            found.push(pid);
        }
    }
    found
}

#[test]
fn a_sigkilled_servers_command_group_is_ended_at_recovery_before_its_fail_task_fails() {
    let work = Workdir::new();
    std::fs::write(work.config(), format!("{}\n{FAMILY_TOOL}", crate::harness::CONFIG)).unwrap();
    let pidfile = work.path("child.pid");
    // Without the supervisor, whose kill at the death of the server would leave nothing to
    // recover: what escapes it (a supervisor killed with its server) is what recovery ends.
    let mut server = work.start_unsupervised();
    server.initialize();
    let id = create_task(&mut server, "family", json!({"pidfile": pidfile.to_str().unwrap()}));
    let group = crate::harness::started_pid(&mut server, &id).as_raw();
    let deadline = Instant::now() + Duration::from_secs(20);
    let child: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile).ok().and_then(|text| text.trim().parse().ok()) {
            break pid;
        }
        assert!(Instant::now() < deadline, "the command never started its child");
        std::thread::sleep(Duration::from_millis(20));
    };
    server.kill();
    server.validate_received();
    // SIGKILL leaves the group running: nothing but the next server ends it.
    let mut left = running_in_group(group);
    left.sort_unstable();
    let mut expected = vec![group, child];
    expected.sort_unstable();
    assert_eq!(left, expected, "the leader and its child outlive the SIGKILLed server");
    // A process the store never heard of, as a crash right after a spawn leaves one: found by
    // the task's id in its environment.
    use std::os::unix::process::CommandExt as _;
    let mut straggler = std::process::Command::new("sleep")
        .arg("300")
        .env("MCP_TASKS_TASK_ID", &id)
        .process_group(0)
        .spawn()
        .unwrap();
    let straggler_group = i32::try_from(straggler.id()).unwrap();
    assert_eq!(running_in_group(straggler_group), vec![straggler_group]);

    let mut server = work.start();
    server.initialize(); // answered after recovery
    assert_eq!(running_in_group(group), Vec::<i32>::new(), "recovery ended the whole group before serving");
    assert_eq!(running_in_group(straggler_group), Vec::<i32>::new(), "and the process carrying the task's id");
    assert!(straggler.wait().unwrap().code().is_none(), "killed by a signal");
    let task = server.call("tasks/get", json!({"taskId": id}));
    assert_eq!(task["status"], "failed");
    let err = server.call_err("tasks/result", json!({"taskId": id}));
    assert!(err["message"].as_str().unwrap().contains("interrupted by a server restart"), "{err}");
    server.validate_received();
}
