//! The hidden `mcp-tasks __supervise` subcommand: a small supervisor between a process of
//! mcp-tasks and a program it starts (a command tool, a proxy's stdio upstream, a `--cmd`
//! server), so that the program and its process group die with the process that started
//! them, however it died (SIGKILL included), restarted or not.
//!
//! `mcp-tasks __supervise --parent PID --grace-ms N -- PROGRAM ARGS…`, started as the leader
//! of a process group of its own:
//! 1. holds `PR_SET_PDEATHSIG` (SIGTERM) on itself, then checks that its parent is still
//!    `PID` (the parent may have died before the `prctl`), and becomes a child subreaper, so
//!    that the orphans of its program are its children;
//! 2. runs the program in its own group (the supervisor's; the signals it waits for are
//!    blocked but for the spawn itself, since a blocked mask would be inherited), its stdin,
//!    stdout and stderr untouched, and exits as the program did (its code, or by the same signal), so the
//!    caller sees the same status and output as without it;
//! 3. on a signal while its parent lives (the server's SIGTERM to the group, which reached
//!    the program too), it goes on waiting; once its parent is gone (the death signal), it
//!    sends SIGTERM to the group, waits up to the grace for its descendants to end, then
//!    SIGKILLs the group, itself included. The kernel sends the death signal when the
//!    *thread* that started the supervisor ends, too (a Tokio blocking thread that retires):
//!    the parent check tells that apart, and the signal still comes at the process's death.
//!
//! Linux only: elsewhere the libraries are never given a supervisor, and this subcommand
//! runs the program and exits as it did, without the parent-death part.

use std::ffi::OsString;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, SigSet, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

/// The name of the hidden subcommand (first argument).
pub(crate) const SUBCOMMAND: &str = "__supervise";
/// The environment variable that turns the supervisor off (`0`): the processes mcp-tasks
/// starts then outlive a crash until the next start's recovery, as before.
pub(crate) const OFF_ENV: &str = "MCP_TASKS_SUPERVISE";
/// The exit code when the program could not be started (as a shell's).
const CANNOT_RUN: u8 = 127;
/// How often to look whether the descendants are gone, once the parent died.
const POLL: Duration = Duration::from_millis(5);

/// The argv prefix the libraries put before `--parent PID --grace-ms N -- PROGRAM ARGS…`:
/// this binary (through `/proc/self/exe`, which stays valid if the file is replaced by an
/// upgrade) and the subcommand; `None` off Linux or when [`OFF_ENV`] is `0`.
pub(crate) fn prefix() -> Option<Vec<OsString>> {
    if !cfg!(target_os = "linux") || std::env::var_os(OFF_ENV).is_some_and(|value| value == "0") {
        return None;
    }
    let exe = std::path::Path::new("/proc/self/exe");
    let program = if exe.exists() { exe.to_path_buf() } else { std::env::current_exe().ok()? };
    Some(vec![program.into_os_string(), SUBCOMMAND.into()])
}

/// What the command line gave the supervisor.
struct Args {
    parent: Option<Pid>,
    grace: Duration,
    argv: Vec<OsString>,
}

/// Parses `--parent PID --grace-ms N -- PROGRAM ARGS…` (after the subcommand).
fn parse(mut args: impl Iterator<Item = OsString>) -> Result<Args, String> {
    let mut parsed = Args { parent: None, grace: Duration::from_millis(500), argv: Vec::new() };
    while let Some(arg) = args.next() {
        let mut number = |name: &str| {
            args.next().and_then(|value| value.to_str()?.parse::<u64>().ok()).ok_or_else(|| format!("{name} needs a number"))
        };
        match arg.to_str() {
            Some("--parent") => parsed.parent = Some(Pid::from_raw(i32::try_from(number("--parent")?).map_err(|e| e.to_string())?)),
            Some("--grace-ms") => parsed.grace = Duration::from_millis(number("--grace-ms")?),
            Some("--") => {
                parsed.argv = args.collect();
                break;
            }
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    if parsed.argv.is_empty() {
        return Err("no program to run".into());
    }
    Ok(parsed)
}

/// Runs the supervisor with the arguments after the subcommand.
pub(crate) fn run(args: impl Iterator<Item = OsString>) -> ExitCode {
    let args = match parse(args) {
        Ok(args) => args,
        Err(err) => {
            eprintln!("mcp-tasks {SUBCOMMAND}: {err}");
            return ExitCode::from(2);
        }
    };
    // Blocked before the program starts, so that none is lost; the program starts with an
    // empty mask (the standard library resets it in the child).
    let mut waited = SigSet::empty();
    for signal in [Signal::SIGCHLD, Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        waited.add(signal);
    }
    if let Err(err) = waited.thread_block() {
        eprintln!("mcp-tasks {SUBCOMMAND}: cannot block signals: {err}");
    }
    // The leader of its own group already when started by mcp-tasks; made so otherwise, so
    // that the group it ends is never its starter's.
    let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
    if !hold_parent(args.parent) {
        return ExitCode::from(1);
    }
    let (program, rest) = args.argv.split_first().unwrap_or_else(|| unreachable!("checked by parse"));
    // The mask is inherited across exec (the standard library does not reset it), so it is
    // lifted for the spawn alone; a SIGCHLD of those few microseconds is not lost (reaped
    // below), a SIGTERM in them ends this process as it would have without the block.
    let _ = waited.thread_unblock();
    let spawned = Command::new(program).args(rest).spawn();
    let _ = waited.thread_block();
    let child = match spawned {
        Ok(child) => Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX)),
        Err(err) => {
            eprintln!("{}{err}", mcp_tasks_command::SUPERVISED_SPAWN_FAILURE);
            return ExitCode::from(CANNOT_RUN);
        }
    };
    if let Some(status) = reap(child) {
        return exit_as(status);
    }
    if parent_gone(args.parent) {
        end_group(args.grace);
    }
    loop {
        match waited.wait() {
            Ok(Signal::SIGCHLD) => {
                if let Some(status) = reap(child) {
                    return exit_as(status);
                }
            }
            Ok(_) if parent_gone(args.parent) => end_group(args.grace),
            _ => {}
        }
    }
}

/// Sets the parent-death signal on this process (Linux) and checks that the parent is still
/// `parent`. Whether it is (always `true` without a parent to watch).
fn hold_parent(parent: Option<Pid>) -> bool {
    #[cfg(target_os = "linux")]
    {
        if let Err(err) = nix::sys::prctl::set_pdeathsig(Signal::SIGTERM) {
            eprintln!("mcp-tasks {SUBCOMMAND}: cannot set a parent-death signal: {err}");
        }
        let _ = nix::sys::prctl::set_child_subreaper(true);
    }
    !parent_gone(parent)
}

/// Whether this process was reparented (its parent, `parent`, died).
fn parent_gone(parent: Option<Pid>) -> bool {
    parent.is_some_and(|parent| nix::unistd::getppid() != parent)
}

/// Reaps every exited child; the status of `child` if it is one of them.
fn reap(child: Pid) -> Option<WaitStatus> {
    let mut found = None;
    while let Ok(status) = waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
        match status {
            WaitStatus::StillAlive => break,
            WaitStatus::Exited(pid, _) | WaitStatus::Signaled(pid, _, _) if pid == child => found = Some(status),
            _ => {}
        }
    }
    found
}

/// Exits as the program did: its code, or the same signal (128 + its number if that signal
/// does not end this process).
fn exit_as(status: WaitStatus) -> ExitCode {
    match status {
        WaitStatus::Exited(_, code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        WaitStatus::Signaled(_, signal, _) => {
            let _ = SigSet::from(signal).thread_unblock();
            let _ = nix::sys::signal::raise(signal);
            ExitCode::from(128u8.saturating_add(u8::try_from(signal as i32).unwrap_or(0)))
        }
        _ => ExitCode::from(1),
    }
}

/// The parent died: SIGTERM to the group, up to `grace` for every descendant to end (all of
/// them are children of this subreaper by then, or children of those), then SIGKILL to the
/// group, this process included. Never returns.
fn end_group(grace: Duration) -> ! {
    let group = nix::unistd::getpgrp();
    let _ = killpg(group, Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            Err(Errno::ECHILD) => std::process::exit(1),
            Ok(WaitStatus::StillAlive) => std::thread::sleep(POLL),
            _ => {}
        }
    }
    let _ = killpg(group, Signal::SIGKILL);
    std::process::exit(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reads_the_parent_the_grace_and_the_program() {
        let args = ["--parent", "42", "--grace-ms", "250", "--", "sh", "-c", "true"].map(OsString::from);
        let parsed = parse(args.into_iter()).expect("parses");
        assert_eq!(parsed.parent, Some(Pid::from_raw(42)));
        assert_eq!(parsed.grace, Duration::from_millis(250));
        assert_eq!(parsed.argv, ["sh", "-c", "true"].map(OsString::from));
        assert!(parse(["--"].map(OsString::from).into_iter()).is_err());
    }
}
