//! How `serve --stdio` ends: when the client closes our stdin while a `tasks/result` still
//! waits, and on SIGTERM. Either way the server exits promptly and the running command's
//! process group goes with it (its task is resolved by `on_restart` at the next start).

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::json;

use crate::harness::{Server, Workdir, create_task, started_pid};

/// Starts a 60 s `slow` task and returns the server and the command's process group (from
/// the "started (pid N)" status notification).
fn a_running_slow_task(work: &Workdir) -> (Server, String, Pid) {
    let mut server = work.start();
    server.initialize();
    let id = create_task(&mut server, "slow", json!({"seconds": 60}));
    let group = started_pid(&mut server, &id);
    assert_eq!(server.call("tasks/get", json!({"taskId": id}))["status"], "working");
    (server, id, group)
}

fn assert_group_gone(group: Pid) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while killpg(group, None).is_ok() {
        assert!(Instant::now() < deadline, "the command outlived the server");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn stdin_closed_while_tasks_result_waits_ends_the_server_and_its_commands() {
    let work = Workdir::new();
    let (mut server, id, group) = a_running_slow_task(&work);
    // A blocking tasks/result is in flight when the client leaves: the server reads its
    // input in order, so once a ping sent after it is answered (and `response` panics on
    // any other response first), the tasks/result has been read and is still unanswered.
    let blocked = server.send_request("tasks/result", json!({"taskId": id}));
    let ping = server.send_request("ping", json!({}));
    assert_eq!(server.response(ping)["result"], json!({}), "the ping, not the tasks/result {blocked}, is answered");
    server.close_stdin();
    let status = server.wait_exit(Duration::from_secs(10)).expect("the server exits once its stdin is closed");
    assert!(status.success(), "a clean exit, got {status:?}");
    assert_group_gone(group);

    // The interrupted task is resolved by its policy at the next start, not lost.
    let mut server = work.start();
    server.initialize();
    let task = server.call("tasks/get", json!({"taskId": id}));
    assert_eq!(task["status"], "failed", "{task}");
    assert!(task["statusMessage"].as_str().unwrap().contains("interrupted by a server restart"), "{task}");
}

#[test]
fn an_answer_already_under_way_is_still_written_after_stdin_closes() {
    let work = Workdir::new();
    let mut server = work.start();
    server.initialize();
    let id = server.send_request("tools/list", json!({}));
    server.close_stdin();
    let answer = server.response(id);
    assert!(answer["result"]["tools"].is_array(), "{answer}");
    assert!(server.wait_exit(Duration::from_secs(5)).is_some(), "and then the server exits");
}

#[test]
fn sigterm_ends_stdio_serving_and_kills_the_running_commands() {
    let work = Workdir::new();
    let (mut server, _id, group) = a_running_slow_task(&work);
    let started = Instant::now();
    kill(Pid::from_raw(i32::try_from(server.pid()).unwrap()), Signal::SIGTERM).unwrap();
    let status = server.wait_exit(Duration::from_secs(10)).expect("the server exits on SIGTERM");
    assert!(started.elapsed() < Duration::from_secs(3), "promptly, not after a shutdown timeout: {:?}", started.elapsed());
    assert!(status.success(), "a graceful exit, got {status:?}");
    assert_group_gone(group);
}
