//! Command-backed tools: [`CommandTool`] runs a tool's `command` as a process, without a
//! shell, and turns its exit into a `CallToolResult`.
//!
//! Each call runs in its own process group, and the whole group is ended when the call
//! ends (exit, cancellation, timeout, or the call being dropped), so that no process of a
//! tool outlives its call.
//!
//! While it runs, a command can talk back through its stdout with the line protocol of
//! [`MARKER`] (progress, status messages, questions to the user, answered on its stdin);
//! the reader of that protocol is the `line_protocol` submodule.

mod line_protocol;

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::Once;
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_engine::{Context, ErrorObject, Handler, Outcome};
use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::ToolConfig;
use crate::template::{self, Piece};
pub use line_protocol::MARKER;
use line_protocol::Talk;

/// The most of stdout a result carries; past it, the start is cut and the tail kept.
const STDOUT_CAP: usize = 16 * 1024 * 1024;
/// The tail of stderr a failure reports.
const STDERR_CAP: usize = 4 * 1024;
/// The size of one read from a pipe.
const CHUNK: usize = 64 * 1024;
/// How long a process group has between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);
/// How long to wait for a SIGKILLed group to be gone before giving up on it.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How often to look whether a signalled group is gone: processes that are not our
/// children announce no exit, so this wait is the one bounded poll.
const GROUP_POLL: Duration = Duration::from_millis(10);
/// How long to wait for the pipes to close once the group is gone (they stay open only if
/// a process escaped the group and kept them).
const PIPE_WAIT: Duration = Duration::from_secs(2);
/// The variables a tool's process inherits from the server's environment, if set.
const KEPT_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TZ"];
/// JSON-RPC invalid params.
const INVALID_PARAMS: i64 = -32602;

/// A tool that runs a command for each call.
///
/// - **No shell.** The argv is built from the tool's `command` template (see
///   [`CommandTool::argv`]) and its first element is executed directly; an argument is
///   never parsed by a shell unless the config author wrote a shell into the command, and
///   even then it arrives as its own argv element, never inside the script text.
/// - **A minimal environment.** The process gets only `PATH`, `HOME`, `LANG` and `TZ` from
///   the server's environment (those that are set): secrets in the server's environment do
///   not leak into tools.
/// - **Its own process group**, ended as a whole: on cancellation or timeout the group gets
///   SIGTERM, then SIGKILL after a 2 s grace; after a normal exit, processes the command
///   left running in its group are ended the same way; if the call's future is dropped,
///   the group gets SIGKILL. A process that leaves the group (`setsid`) escapes this.
/// - **Reaping.** On Linux the server makes itself a child subreaper the first time it
///   runs a command, so that the orphans of a tool's group become its children and are
///   reaped by it, rather than left as zombies under an init that may not reap them.
/// - **Output.** stdout is returned as text (at most 16 MiB, keeping the tail); a failure
///   reports the exit code or signal and the last 4 KiB of stderr.
/// - **Talking back.** A stdout line that starts with [`MARKER`] is not output but a
///   message: progress, a status message, or a question to the user whose answer is
///   written to the command's stdin as one JSON line. stdin is therefore a pipe that stays
///   open for the whole run (a command that reads stdin for other reasons waits on it; give
///   it `< /dev/null` in a shell if it must see end-of-file).
#[derive(Clone, Debug)]
pub struct CommandTool {
    name: String,
    command: Vec<String>,
    timeout: Option<Duration>,
}

impl CommandTool {
    /// A tool that runs `tool.command`, killed after `tool.timeout` if it has one.
    pub fn new(tool: &ToolConfig) -> CommandTool {
        CommandTool {
            name: tool.name.clone(),
            command: tool.command.clone(),
            timeout: tool.timeout,
        }
    }

    /// The argv for a call with `arguments`.
    ///
    /// An element that is exactly `{arg}` becomes the argument's value as one element:
    /// strings as they are, numbers and booleans as their JSON text, arrays and objects as
    /// compact JSON; it is left out if the argument is absent or `null`. A placeholder
    /// inside a longer element is replaced in that element only (absent or `null`: the
    /// empty string). `null` arguments (no arguments at all) count as `{}`.
    ///
    /// # Errors
    /// Invalid params (`-32602`) if `arguments` is not an object; internal error if the
    /// command template is invalid (only possible for a hand-built [`ToolConfig`]: loaded
    /// configurations are checked) or the argv has no program.
    pub fn argv(&self, arguments: &Value) -> Result<Vec<String>, ErrorObject> {
        let empty = Map::new();
        let arguments = match arguments {
            Value::Object(arguments) => arguments,
            Value::Null => &empty,
            other => {
                return Err(ErrorObject {
                    code: INVALID_PARAMS,
                    message: format!(
                        "tool `{}`: arguments must be a JSON object, not {}",
                        self.name,
                        json_kind(other)
                    ),
                    data: None,
                });
            }
        };
        let mut argv = Vec::with_capacity(self.command.len());
        for element in &self.command {
            let pieces = template::parse(element).map_err(|err| {
                ErrorObject::internal(format!(
                    "tool `{}`: command element `{element}`: {err}",
                    self.name
                ))
            })?;
            let value = |name: &str| arguments.get(name).and_then(argument_text);
            match pieces.as_slice() {
                [Piece::Arg(name)] => argv.extend(value(name)),
                pieces => argv.push(
                    pieces
                        .iter()
                        .map(|piece| match piece {
                            Piece::Text(text) => text.clone(),
                            Piece::Arg(name) => value(name).unwrap_or_default(),
                        })
                        .collect(),
                ),
            }
        }
        if argv.is_empty() {
            return Err(ErrorObject::internal(format!(
                "tool `{}` has no program to run",
                self.name
            )));
        }
        Ok(argv)
    }

    /// Starts `argv` with the minimal environment, in its own process group.
    fn spawn(argv: &[String]) -> std::io::Result<Child> {
        become_subreaper();
        let (program, args) = argv.split_first().ok_or(std::io::ErrorKind::InvalidInput)?;
        let mut command = Command::new(program);
        command
            .args(args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        for key in KEPT_ENV {
            if let Some(value) = std::env::var_os(key) {
                command.env(key, value);
            }
        }
        command.spawn()
    }
}

#[async_trait]
impl Handler for CommandTool {
    async fn call(&self, arguments: Value, ctx: Context) -> Outcome {
        let argv = match self.argv(&arguments) {
            Ok(argv) => argv,
            Err(err) => return Outcome::Error(err),
        };
        if ctx.is_cancelled() {
            return tool_result(true, "cancelled".to_owned());
        }
        let mut child = match CommandTool::spawn(&argv) {
            Ok(child) => child,
            Err(err) => {
                return tool_result(true, format!("could not start `{}`: {err}", argv[0]));
            }
        };
        let Some(group) = child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .map(Pid::from_raw)
        else {
            return Outcome::Error(ErrorObject::internal("the started process has no pid"));
        };
        let mut guard = GroupGuard { group, armed: true };
        // Before the reader starts, so that the command's own status lines come after it.
        ctx.status(format!("started (pid {group})")).await;
        // Raised once the group is gone: the reader then stops asking and closes stdin.
        let (group_gone, group_gone_seen) = watch::channel(false);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().map(|pipe| {
            let talk = Talk::new(&self.name, ctx.clone(), stdin, group_gone_seen, STDOUT_CAP);
            tokio::spawn(talk.run(pipe))
        });
        let stderr = child
            .stderr
            .take()
            .map(|pipe| tokio::spawn(read_tail(pipe, STDERR_CAP)));

        let deadline = async {
            match self.timeout {
                Some(timeout) => tokio::time::sleep(timeout).await,
                None => std::future::pending().await,
            }
        };
        let end = tokio::select! {
            status = child.wait() => End::Exited(status),
            () = ctx.cancelled() => End::Cancelled,
            () = deadline => End::TimedOut,
        };
        end_group(&mut child, group).await;
        guard.armed = false;
        group_gone.send_replace(true);

        let stdout = collect(stdout).await;
        let stderr = collect(stderr).await;
        let headline = match &end {
            End::Exited(Ok(status)) if status.success() => None,
            End::Exited(Ok(status)) => Some(describe_exit(*status)),
            End::Exited(Err(err)) => Some(format!("could not wait for the command: {err}")),
            End::Cancelled => Some("cancelled".to_owned()),
            End::TimedOut => {
                let timeout = humantime::format_duration(self.timeout.unwrap_or_default());
                Some(format!("timed out after {timeout}"))
            }
        };
        if let Some(status) = status_message(&end, headline.as_deref()) {
            ctx.status(status).await;
        }
        match headline {
            None => tool_result(false, stdout.text()),
            Some(headline) => tool_result(true, failure_text(headline, &stdout, &stderr)),
        }
    }
}

/// How the wait for the command ended.
enum End {
    Exited(std::io::Result<ExitStatus>),
    Cancelled,
    TimedOut,
}

/// The final status message: "exited (code N)", or the headline of a failure. None for a
/// cancelled call, whose task is already settled.
fn status_message(end: &End, headline: Option<&str>) -> Option<String> {
    match end {
        End::Cancelled => None,
        End::Exited(Ok(status)) => Some(match status.code() {
            Some(code) => format!("exited (code {code})"),
            None => describe_exit(*status).replacen("command was ", "", 1),
        }),
        _ => headline.map(str::to_owned),
    }
}

/// The text of a failed call: the headline, then the stderr tail and stdout, if any.
fn failure_text(headline: String, stdout: &Tail, stderr: &Tail) -> String {
    let mut text = headline;
    if !stderr.bytes.is_empty() {
        text.push_str("\n--- stderr (last 4 KiB) ---\n");
        text.push_str(&String::from_utf8_lossy(&stderr.bytes));
    }
    if !stdout.bytes.is_empty() {
        text.push_str("\n--- stdout ---\n");
        text.push_str(&stdout.text());
    }
    text
}

/// A `CallToolResult` with one text item.
fn tool_result(is_error: bool, text: String) -> Outcome {
    Outcome::Result(json!({"content": [{"type": "text", "text": text}], "isError": is_error}))
}

/// "command exited with code N" or "command was killed by signal SIGX".
fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("command exited with code {code}");
    }
    match status.signal() {
        Some(signal) => match Signal::try_from(signal) {
            Ok(signal) => format!("command was killed by signal {}", signal.as_str()),
            Err(_) => format!("command was killed by signal {signal}"),
        },
        None => format!("command ended with {status}"),
    }
}

/// An argument's value as argv text; `None` for `null`.
fn argument_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Makes the server a child subreaper (Linux), once: orphans of a tool's process group
/// are then reparented to the server, which reaps them in [`end_group`].
fn become_subreaper() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Err(err) = nix::sys::prctl::set_child_subreaper(true) {
            tracing::warn!(error = %err, "could not become a child subreaper; orphans of tools may linger as zombies");
        }
    });
}

/// The tail of a stream, and how much was cut before it.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    cut: u64,
}

impl Tail {
    /// The tail as text, after a note on what was cut, if anything.
    fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.bytes);
        if self.cut == 0 {
            return text.into_owned();
        }
        format!(
            "[output truncated: the first {} bytes were cut, the last {} are kept]\n{text}",
            self.cut,
            self.bytes.len()
        )
    }

    /// Appends `bytes`, cutting the front back to `cap` once twice that has piled up.
    fn push(&mut self, bytes: &[u8], cap: usize) {
        self.bytes.extend_from_slice(bytes);
        if self.bytes.len() >= cap.saturating_mul(2) {
            self.cut += drop_front(&mut self.bytes, cap);
        }
    }

    /// The final tail: at most `cap` bytes.
    fn finish(mut self, cap: usize) -> Tail {
        self.cut += drop_front(&mut self.bytes, cap);
        self
    }
}

/// Reads `pipe` to its end, keeping the last `cap` bytes.
async fn read_tail(mut pipe: impl AsyncRead + Unpin, cap: usize) -> Tail {
    let mut tail = Tail::default();
    let mut chunk = vec![0u8; CHUNK];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) => break,
            Ok(n) => tail.push(&chunk[..n], cap),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => {
                tracing::warn!(error = %err, "could not read a tool's output");
                break;
            }
        }
    }
    tail.finish(cap)
}

/// Drops bytes from the front of `bytes` until at most `cap` are left; returns how many.
fn drop_front(bytes: &mut Vec<u8>, cap: usize) -> u64 {
    let excess = bytes.len().saturating_sub(cap);
    bytes.drain(..excess);
    excess as u64
}

/// The result of a pipe reader, waiting at most [`PIPE_WAIT`] for it: the group is gone, so
/// only a process that escaped it can still hold the pipe open.
async fn collect(reader: Option<tokio::task::JoinHandle<Tail>>) -> Tail {
    let Some(mut reader) = reader else {
        return Tail::default();
    };
    match tokio::time::timeout(PIPE_WAIT, &mut reader).await {
        Ok(Ok(tail)) => tail,
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "a tool's output reader failed");
            Tail::default()
        }
        Err(_) => {
            reader.abort();
            tracing::warn!(
                "a process outside the tool's group kept its output open; output dropped"
            );
            Tail::default()
        }
    }
}

/// Ends every process of `group` (led by `child`) and reaps them: SIGTERM, then SIGKILL
/// after [`TERM_GRACE`]. Returns at once if the leader has exited and the group is empty.
async fn end_group(child: &mut Child, group: Pid) {
    if let Ok(Some(_)) = child.try_wait() {
        reap_group(group);
        if !group_alive(group) {
            return;
        }
    }
    let _ = killpg(group, Signal::SIGTERM);
    if wait_group_gone(child, group, TERM_GRACE).await {
        return;
    }
    let _ = killpg(group, Signal::SIGKILL);
    if !wait_group_gone(child, group, KILL_WAIT).await {
        tracing::warn!(pgid = %group, "a tool's process group survived SIGKILL");
    }
}

/// Waits up to `limit` for the leader to exit and then for the rest of `group` to be gone,
/// reaping those that were reparented to us. Whether the group is gone.
async fn wait_group_gone(child: &mut Child, group: Pid, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    // The leader is reaped by tokio; reaping the group by pgid only once it is done keeps
    // us from taking its exit status from under tokio.
    if tokio::time::timeout_at(deadline, child.wait())
        .await
        .is_err()
    {
        return false;
    }
    loop {
        reap_group(group);
        if !group_alive(group) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(GROUP_POLL).await;
    }
}

/// Reaps every exited process of `group` that is our child (orphans, once we are a
/// subreaper). Never blocks.
fn reap_group(group: Pid) {
    let any_in_group = Pid::from_raw(-group.as_raw());
    while let Ok(status) = waitpid(any_in_group, Some(WaitPidFlag::WNOHANG)) {
        if status == WaitStatus::StillAlive {
            break;
        }
    }
}

/// Whether any process (zombies included) is still in `group`.
fn group_alive(group: Pid) -> bool {
    !matches!(killpg(group, None), Err(Errno::ESRCH))
}

/// SIGKILLs the group if the call is dropped before it ended the group itself.
struct GroupGuard {
    group: Pid,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let _ = killpg(self.group, Signal::SIGKILL);
        // Reap what the kill leaves, off the dropped call. tokio reaps the leader itself
        // (`kill_on_drop`); if we take it first, tokio drops it on the resulting error.
        let group = self.group;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let deadline = Instant::now() + KILL_WAIT;
                while group_alive(group) && Instant::now() < deadline {
                    reap_group(group);
                    tokio::time::sleep(GROUP_POLL).await;
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_front_keeps_the_last_cap_bytes() {
        let mut bytes = b"0123456789".to_vec();
        assert_eq!(drop_front(&mut bytes, 4), 6);
        assert_eq!(bytes, b"6789");
        assert_eq!(drop_front(&mut bytes, 4), 0);
    }

    #[tokio::test]
    async fn read_tail_keeps_the_tail_and_counts_the_cut() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let tail = read_tail(&data[..], 1000).await;
        assert_eq!(tail.cut, 99_000);
        assert_eq!(tail.bytes, &data[99_000..]);
        assert!(
            tail.text()
                .starts_with("[output truncated: the first 99000 bytes were cut")
        );
    }

    #[test]
    fn exits_are_described_by_code_or_signal_name() {
        assert_eq!(
            describe_exit(ExitStatus::from_raw(3 << 8)),
            "command exited with code 3"
        );
        assert_eq!(
            describe_exit(ExitStatus::from_raw(9)),
            "command was killed by signal SIGKILL"
        );
    }
}
