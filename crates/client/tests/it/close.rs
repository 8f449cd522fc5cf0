//! `Client::close`: a spawned stdio server (the `stdio_peer` example) is asked to leave by
//! closing its stdin, then SIGTERM, then SIGKILL, and is reaped; over HTTP the session is
//! ended with DELETE.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcp_tasks_client::{Client, ClientError};

use crate::harness::{bounded, start};

/// The `stdio_peer` example, built next to this test binary by `cargo test` (not by
/// `cargo test --test it` alone).
fn peer_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("examples").join("stdio_peer");
    path.is_file().then_some(path)
}

/// Whether `pid` still has a process entry: running, or a zombie nobody reaped.
fn exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Spawns the peer with `flags`; returns the client, its pid, and the marker file it writes
/// when its stdin ends.
async fn spawn(flags: &[&str]) -> Option<(Client, u32, PathBuf, tempfile::TempDir)> {
    let Some(binary) = peer_binary() else {
        eprintln!("skipped: no target/debug/examples/stdio_peer (run cargo test -p mcp-tasks-client to build it)");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let mut args = vec!["--marker".to_owned(), marker.display().to_string()];
    args.extend(flags.iter().map(|flag| (*flag).to_owned()));
    let client = bounded(crate::harness::legacy().connect_process(&binary.display().to_string(), &args)).await.unwrap();
    let pid = client.server_process_id().expect("a child");
    Some((client, pid, marker, dir))
}

#[tokio::test]
async fn close_ends_a_server_that_leaves_on_stdin_eof_without_any_signal() {
    let Some((client, pid, marker, _dir)) = spawn(&[]).await else { return };
    let other = client.clone();
    let started = Instant::now();
    let status = bounded(client.close()).await.unwrap().expect("the child's exit status");
    assert_eq!(status.code(), Some(0), "exited by itself, not by a signal: {status}");
    assert!(started.elapsed() < Duration::from_secs(2), "no grace period spent: {:?}", started.elapsed());
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "stdin closed");
    assert!(!exists(pid), "reaped");
    let after = bounded(other.list_tools()).await.unwrap_err();
    assert!(matches!(after, ClientError::Closed | ClientError::ServerExited { .. }), "{after}");
}

#[tokio::test]
async fn close_sends_sigterm_after_the_grace_period_to_a_server_that_ignores_stdin_eof() {
    let Some((client, pid, marker, _dir)) = spawn(&["--ignore-eof"]).await else { return };
    let started = Instant::now();
    let status = bounded(client.close_within(Duration::from_millis(300))).await.unwrap().unwrap();
    assert_eq!(status.signal(), Some(15), "{status}");
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "stdin closed", "stdin was closed before the signal");
    assert!(!exists(pid), "reaped");
}

#[tokio::test]
async fn close_kills_a_server_that_ignores_stdin_eof_and_sigterm() {
    let Some((client, pid, marker, _dir)) = spawn(&["--ignore-eof", "--ignore-term"]).await else { return };
    let started = Instant::now();
    let status = bounded(client.close_within(Duration::from_millis(300))).await.unwrap().unwrap();
    assert_eq!(status.signal(), Some(9), "{status}");
    assert!(started.elapsed() >= Duration::from_millis(600), "two grace periods: {:?}", started.elapsed());
    assert!(marker.exists());
    assert!(!exists(pid), "reaped");
}

#[tokio::test]
async fn close_over_http_ends_the_session_with_delete() {
    let server = start().await;
    let client = bounded(crate::harness::legacy_http(&server.url, None)).await.unwrap();
    let other = client.clone();
    assert_eq!(bounded(client.close()).await.unwrap(), None);
    // The session is gone on the server: the same session id now gets 404.
    let after = bounded(other.list_tools()).await.unwrap_err();
    assert!(matches!(after, ClientError::Http { status: 404, .. } | ClientError::Closed), "{after}");
}

/// The process group of `pid`, from `/proc/PID/stat` (the field after the state).
fn process_group(pid: &str) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    after_name.split(' ').nth(2).unwrap().to_owned()
}

#[tokio::test]
async fn a_spawned_server_has_a_process_group_of_its_own_so_a_terminal_ctrl_c_reaches_the_host_alone() {
    let Some((client, pid, _marker, _dir)) = spawn(&[]).await else { return };
    let child_group = process_group(&pid.to_string());
    assert_eq!(child_group, pid.to_string(), "the server leads its own group");
    assert_ne!(child_group, process_group("self"), "not the test's (the terminal's) group");
    bounded(client.close()).await.unwrap();
    assert!(!exists(pid));
}
