//! The CLI's waits outlive a restart of their server (issue 42): `mcp-tasks call` and
//! `mcp-tasks tasks wait`, in both eras, against a real `serve` killed with -9 while the task
//! runs and started again on the same port 3 s later. The task lives on in the store (its
//! tool retries on a restart), and the same wait goes on to its result. A server that does
//! not come back ends the wait with the command that resumes it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::harness::{CONFIG, Workdir};
use crate::http::HttpServer;

/// How long the server stays down: the "a start 3 s later", the scenario itself,
/// not a wait for something to happen.
const DOWNTIME: Duration = Duration::from_secs(3);

/// `mcp-tasks ARGS` against `url`, on a ledger of the workdir's own, its stderr read line by
/// line into a channel.
fn spawn(work: &Workdir, url: &str, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(args)
        .args(["--url", url])
        .env_remove("MCP_TASKS_URL")
        .env("MCP_TASKS_LEDGER", work.path("ledger.sqlite3"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcp-tasks");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[cli] {line}");
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// Reads `lines` until one holds `text`; the lines read, that one included.
fn until(lines: &mpsc::Receiver<String>, text: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("the CLI never said {text:?}; it said {seen:#?}"));
        let found = line.contains(text);
        seen.push(line);
        if found {
            return seen;
        }
    }
}

/// The CLI's exit status and stdout, waited for (bounded).
fn finish(mut child: Child) -> (Option<i32>, String) {
    let mut stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
        let _ = tx.send((child.wait().expect("wait for the CLI").code(), text));
    });
    rx.recv_timeout(Duration::from_secs(90)).expect("the CLI ends")
}

/// A server on the test config, killed with -9 once `started` said the task runs, started
/// again on the same port after [`DOWNTIME`]; the CLI's exit status, stdout and stderr.
fn ride_out_a_restart(era: &str, wait_with_tasks_wait: bool) -> (Option<i32>, String, Vec<String>) {
    let work = Workdir::new();
    std::fs::write(work.config(), CONFIG).unwrap();
    let mut server = HttpServer::start(&work);
    let url = format!("http://{}/mcp", server.addr);
    let marker = work.path("marker");
    let marker_arg = format!("marker={}", marker.display());
    let call = ["call", "retry_job", "--arg", &marker_arg, "--era", era];
    let (child, lines) = if wait_with_tasks_wait {
        let (detached, _) = spawn(&work, &url, &[&call[..], &["--detach"]].concat());
        let (status, id) = finish(detached);
        assert_eq!(status, Some(0), "call --detach prints the task id");
        spawn(&work, &url, &["tasks", "wait", id.trim(), "--era", era])
    } else {
        spawn(&work, &url, &call)
    };
    let mut said = until(&lines, "is running");
    // The task's first run has begun (it leaves its marker, then hangs).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(std::time::Instant::now() < deadline, "the task never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let addr = server.addr.to_string();
    server.kill();
    said.extend(until(&lines, "lost the server"));
    std::thread::sleep(DOWNTIME);
    let _again = HttpServer::start_with_args(
        &work,
        work.store().as_os_str(),
        &[],
        &[std::ffi::OsStr::new("--listen"), std::ffi::OsStr::new(&addr)],
    );
    let (status, stdout) = finish(child);
    said.extend(lines.try_iter());
    (status, stdout, said)
}

fn assert_rode_it_out((status, stdout, said): (Option<i32>, String, Vec<String>)) {
    assert_eq!(status, Some(0), "the same wait went on to the task's result: {said:#?}");
    assert_eq!(stdout.trim(), "second-run", "the result of the run after the restart: {said:#?}");
    let lost = said.iter().find(|line| line.contains("lost the server")).expect("said it lost the server");
    assert!(lost.contains("waiting for it to come back"), "says it waits: {lost}");
    assert!(said.iter().any(|line| line.contains("the server is back")), "says it is back: {said:#?}");
}

#[test]
fn call_in_2025_11_25_rides_out_a_kill_9_and_a_start_3_s_later() {
    assert_rode_it_out(ride_out_a_restart("legacy", false));
}

#[test]
fn call_in_2026_07_28_rides_out_a_kill_9_and_a_start_3_s_later() {
    assert_rode_it_out(ride_out_a_restart("modern", false));
}

#[test]
fn tasks_wait_in_2025_11_25_rides_out_a_kill_9_and_a_start_3_s_later() {
    assert_rode_it_out(ride_out_a_restart("legacy", true));
}

#[test]
fn tasks_wait_in_2026_07_28_rides_out_a_kill_9_and_a_start_3_s_later() {
    assert_rode_it_out(ride_out_a_restart("modern", true));
}
