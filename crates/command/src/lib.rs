//! Command-backed tools of mcp-tasks: [`CommandTool`] runs a tool's `command` as a
//! process, without a shell, and turns its exit into a `CallToolResult`.
//!
//! A tool is built from its [`ToolConfig`], the plain data of one `[[tools]]` entry of the
//! configuration (`mcp-tasks-config`); this crate adds the runtime: it is the
//! [`Handler`] the engine calls.
//!
//! Each call runs in its own process group, and the whole group is ended when the call
//! ends (exit, cancellation, timeout, or the call being dropped), so that no process of a
//! tool outlives its call.
//!
//! While it runs, a command can talk back through its stdout with the line protocol of
//! [`MARKER`] (progress, status messages, questions to the user, answered on its stdin).
//!
//! # Layout
//! - the crate root: [`CommandTool`], the argv and environment of a call, spawning the
//!   command in its own process group, reading its output with a cap, and ending and
//!   reaping the group.
//! - `line_protocol`: reads the command's stdout, where lines that start with [`MARKER`]
//!   report progress and status or ask the user (the answer goes to the command's stdin).
//! - `result`: turns the output into the result (text or JSON, caps) and the final status
//!   message.
//!
//! # Example
//! ```
//! use mcp_tasks_command::CommandTool;
//! use mcp_tasks_config::Config;
//! use serde_json::json;
//!
//! let config = Config::parse(r#"
//!     [[tools]]
//!     name = "greet"
//!     command = ["echo", "hello", "{who}"]
//!     input_schema = { type = "object", properties = { who = { type = "string" } } }
//! "#)?;
//! let tool = CommandTool::new(&config.tools[0]);
//! assert_eq!(tool.argv(&json!({"who": "world; rm -rf /"})).ok(), Some(vec![
//!     "echo".to_owned(), "hello".to_owned(), "world; rm -rf /".to_owned(),
//! ]));
//! # Ok::<(), mcp_tasks_config::ConfigError>(())
//! ```

mod line_protocol;

/// Entry points for the fuzz targets (`fuzz/`) and their regression corpus; not an API.
#[doc(hidden)]
pub mod fuzzing {
    /// Parses the JSON of a line-protocol marker line: `Ok` with the message's kind, or
    /// what is wrong with it.
    pub fn line_protocol(json: &[u8]) -> Result<&'static str, String> {
        crate::line_protocol::parse_for_fuzzing(json)
    }
}
mod result;
mod supervisor;

use std::process::Stdio;
use std::sync::Once;
use std::time::Duration;

use async_trait::async_trait;
use jsonschema::Validator;
use mcp_tasks_config::template::{self, Piece};
use mcp_tasks_config::{InheritEnv, Stdin, ToolConfig};
use mcp_tasks_engine::{Context, ErrorObject, Handler, Outcome, ProcessGroup, TASK_ID_ENV, TraceContext};
use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::watch;
use tokio::time::Instant;

pub use line_protocol::MARKER;
pub use supervisor::{DEATH_GRACE, SUPERVISED_SPAWN_FAILURE, set_supervisor};
use line_protocol::Talk;
use result::{End, Ending, Streams};

/// The environment variable that carries a task's W3C `traceparent` to its command: the
/// trace id of the request that created the task, a span id of its own (a child of the
/// request's span), set only when the request carried a valid one, in every attempt.
pub const TRACEPARENT_ENV: &str = "TRACEPARENT";

/// The environment variable that carries the `tracestate` that came with
/// [`TRACEPARENT_ENV`] (unset when there was none).
pub const TRACESTATE_ENV: &str = "TRACESTATE";

/// The size of one read from a pipe.
const CHUNK: usize = 64 * 1024;
/// How long to wait for a SIGKILLed group to be gone before giving up on it.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How often to look whether a signalled group is gone: processes that are not our
/// children announce no exit, so this wait is the one bounded poll.
const GROUP_POLL: Duration = Duration::from_millis(10);
/// How long to wait for the pipes to close once the group is gone (they stay open only if
/// a process escaped the group and kept them).
const PIPE_WAIT: Duration = Duration::from_secs(2);
/// The variables a tool's process inherits from the server's environment, if set, unless
/// its `inherit_env` says otherwise.
const KEPT_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TZ"];
/// JSON-RPC invalid params.
const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC internal error: the tool's own failures (no argv, no process), and a question
/// that got no answer, as the command reads it on its stdin.
const INTERNAL_ERROR: i64 = -32603;

/// A JSON-RPC internal error with `message`.
fn internal(message: impl Into<String>) -> ErrorObject {
    ErrorObject { code: INTERNAL_ERROR, message: message.into(), data: None }
}

/// A tool that runs a command for each call, as its [`ToolConfig`] says.
///
/// - **No shell.** The argv is built from the tool's `command` template (see
///   [`CommandTool::argv`]) and its first element is executed directly; an argument is
///   never parsed by a shell unless the config author wrote a shell into the command, and
///   even then it arrives as its own argv element, never inside the script text.
/// - **A minimal environment.** By default the process gets only `PATH`, `HOME`, `LANG` and
///   `TZ` from the server's environment (those that are set): secrets in the server's
///   environment do not leak into tools. `inherit_env` widens this (a list of names, or
///   everything); `env` sets variables, whose values may hold placeholders like command
///   elements. `cwd` sets the directory.
/// - **stdin** carries the answers of the line protocol (below), or, with `stdin = { arg =
///   "…" }`, one argument's value, written and then closed.
/// - **Its own process group**, ended as a whole: on cancellation or timeout the group gets
///   SIGTERM, then SIGKILL after the tool's `kill_grace` (2 s by default); after a normal
///   exit, processes the command left running in its group are ended the same way; if the
///   call's future is dropped, the group gets SIGKILL. A process that leaves the group
///   (`setsid`) escapes this.
/// - **Surviving the server.** A task's group (its leader's pid and start time) is recorded
///   with the task as soon as it starts, and a server started after a crash (SIGKILL
///   included) SIGKILLs what is left of it before it resolves the task. The command itself gets
///   no parent-death signal (`PR_SET_PDEATHSIG` between fork and exec needs `pre_exec`,
///   unsafe code, which this workspace forbids, and would reach the leader only): a
///   supervisor (below) holds it instead. A crash between the spawn and the record's commit (one
///   store write) leaves the group unrecorded; for that, a task's processes carry its id in
///   `MCP_TASKS_TASK_ID` (inherited by their children unless they clear it), and the next
///   server also ends every process of its user that carries the id of a task it recovers.
/// - **A supervisor**, if one was set ([`set_supervisor`]; the `mcp-tasks` binary does on
///   Linux), leads the group in the command's place and ends it within a second of the
///   death of this process, however it died, whether or not a server starts again.
/// - **Reaping.** On Linux the server makes itself a child subreaper the first time it
///   runs a command, so that the orphans of a tool's group become its children and are
///   reaped by it, rather than left as zombies under an init that may not reap them.
/// - **Output.** stdout and stderr are each kept up to `max_output` bytes (1 MiB by
///   default), the tail; when anything was cut, the result ends with a text item saying
///   how much, e.g. `[mcp-tasks: 12345 bytes of stdout cut; showing the last 1048576]`.
///   With `output = "text"` (the default), stdout is the result's text. With `output =
///   "json"`, stdout must be one JSON object, returned as `structuredContent` and as text,
///   and checked against `output_schema` if the tool has one; anything else is an error
///   result saying why. A failure (exit code other than 0, death by a signal, timeout,
///   cancellation) is an error result: a headline such as `command exited with code 3`,
///   then the stderr and stdout, if any.
/// - **Status messages** follow the process: `started (pid N)`, the command's own status
///   and progress messages, then `exited (code N)`, `killed (SIGTERM)` or `timed out after
///   30s`.
/// - **Talking back.** A stdout line that starts with [`MARKER`] is not output but a
///   message: progress, a status message, or a question to the user whose answer is
///   written to the command's stdin as one JSON line. stdin is therefore a pipe that stays
///   open for the whole run (a command that reads stdin for other reasons waits on it; give
///   it `< /dev/null` in a shell if it must see end-of-file).
#[derive(Clone, Debug)]
pub struct CommandTool {
    tool: ToolConfig,
    /// The compiled `output_schema`, if any; the error if it does not compile (only for a
    /// hand-built [`ToolConfig`]: loaded configurations are checked).
    output_validator: Option<Result<Validator, String>>,
}

impl CommandTool {
    /// A tool that runs `tool.command` with `tool`'s settings.
    pub fn new(tool: &ToolConfig) -> CommandTool {
        let output_validator = tool.output_schema.as_ref().map(|schema| {
            jsonschema::validator_for(schema).map_err(|err| {
                format!(
                    "tool `{}`: output_schema is not a valid JSON Schema: {err}",
                    tool.name
                )
            })
        });
        CommandTool {
            tool: tool.clone(),
            output_validator,
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
        let arguments = self.arguments(arguments)?;
        let mut argv = Vec::with_capacity(self.tool.command.len());
        for element in &self.tool.command {
            argv.extend(self.fill("command element", element, arguments)?);
        }
        if argv.is_empty() {
            return Err(internal(format!(
                "tool `{}` has no program to run",
                self.tool.name
            )));
        }
        Ok(argv)
    }

    /// The `env` variables for a call with `arguments`: a value, or `None` to unset the
    /// variable (a value that is exactly `{arg}` for an absent or `null` argument).
    ///
    /// # Errors
    /// As [`CommandTool::argv`].
    fn env(&self, arguments: &Value) -> Result<Env<'_>, ErrorObject> {
        let arguments = self.arguments(arguments)?;
        let mut env = Vec::with_capacity(self.tool.env.len());
        for (name, value) in &self.tool.env {
            let value = self.fill(&format!("env `{name}` value"), value, arguments)?;
            env.push((name.as_str(), value));
        }
        Ok(env)
    }

    /// What to write to stdin for a call with `arguments`, if the tool's stdin is an
    /// argument (an absent or `null` argument: nothing).
    fn stdin_bytes(&self, arguments: &Value) -> Option<Vec<u8>> {
        match &self.tool.stdin {
            Stdin::Arg(name) => Some(
                arguments
                    .get(name)
                    .and_then(argument_text)
                    .unwrap_or_default()
                    .into_bytes(),
            ),
            _ => None,
        }
    }

    /// The call's arguments as an object (`null` counts as `{}`).
    ///
    /// # Errors
    /// Invalid params (`-32602`) if `arguments` is neither.
    fn arguments<'a>(&self, arguments: &'a Value) -> Result<&'a Map<String, Value>, ErrorObject> {
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        match arguments {
            Value::Object(arguments) => Ok(arguments),
            Value::Null => Ok(&EMPTY),
            other => Err(ErrorObject {
                code: INVALID_PARAMS,
                message: format!(
                    "tool `{}`: arguments must be a JSON object, not {}",
                    self.tool.name,
                    json_kind(other)
                ),
                data: None,
            }),
        }
    }

    /// Fills the placeholders of `template` (a command element or `env` value, as
    /// `setting` says): `None` if it is exactly `{arg}` and the argument is absent or
    /// `null`.
    ///
    /// # Errors
    /// Internal error if `template` is invalid.
    fn fill(
        &self,
        setting: &str,
        template: &str,
        arguments: &Map<String, Value>,
    ) -> Result<Option<String>, ErrorObject> {
        let pieces = template::parse(template).map_err(|err| {
            internal(format!(
                "tool `{}`: {setting} `{template}`: {err}",
                self.tool.name
            ))
        })?;
        let value = |name: &str| arguments.get(name).and_then(argument_text);
        Ok(match pieces.as_slice() {
            [Piece::Arg(name)] => value(name),
            pieces => Some(
                pieces
                    .iter()
                    .map(|piece| match piece {
                        Piece::Text(text) => text.clone(),
                        Piece::Arg(name) => value(name).unwrap_or_default(),
                    })
                    .collect(),
            ),
        })
    }

    /// Starts `argv` with the tool's environment and directory, in its own process group.
    /// A task's run carries the task's id in [`TASK_ID_ENV`] (`task`) and, when the task has
    /// a trace context, [`TRACEPARENT_ENV`] and [`TRACESTATE_ENV`] (`trace`), set last.
    fn spawn(
        &self,
        argv: &[String],
        env: &[(&str, Option<String>)],
        task: Option<&str>,
        trace: Option<&TraceContext>,
    ) -> std::io::Result<Child> {
        become_subreaper();
        let (program, args) = argv.split_first().ok_or(std::io::ErrorKind::InvalidInput)?;
        let (program, args) = supervisor::argv(program, args, self.tool.kill_grace);
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let passed: Option<&[String]> = match &self.tool.inherit_env {
            InheritEnv::All => None,
            InheritEnv::Minimal => Some(&[]),
            InheritEnv::Names(names) => Some(names),
        };
        if let Some(passed) = passed {
            command.env_clear();
            let names = KEPT_ENV
                .into_iter()
                .chain(passed.iter().map(String::as_str));
            for name in names {
                if let Some(value) = std::env::var_os(name) {
                    command.env(name, value);
                }
            }
        }
        for (name, value) in env {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        if let Some(task) = task {
            command.env(TASK_ID_ENV, task);
        }
        if let Some(trace) = trace {
            command.env(TRACEPARENT_ENV, trace.traceparent());
            match trace.tracestate() {
                Some(state) => command.env(TRACESTATE_ENV, state),
                None => command.env_remove(TRACESTATE_ENV),
            };
        }
        if let Some(cwd) = &self.tool.cwd {
            command.current_dir(cwd);
        }
        command.spawn()
    }

    /// Why the command could not start, naming the program (and the directory, if set).
    fn spawn_failure(&self, program: &str, err: &dyn std::fmt::Display) -> Outcome {
        let place = match &self.tool.cwd {
            Some(cwd) => format!(" in `{}`", cwd.display()),
            None => String::new(),
        };
        result::tool_result(
            true,
            vec![format!("could not start `{program}`{place}: {err}")],
        )
    }
}

#[async_trait]
impl Handler for CommandTool {
    async fn call(&self, arguments: Value, ctx: Context) -> Outcome {
        let (argv, env) = match self.prepare(&arguments, &ctx) {
            Ok(prepared) => prepared,
            Err(outcome) => return outcome,
        };
        let task = ctx.task_id().map(|id| id.as_str().to_owned());
        // The command is a child of the task's span: the request's trace id, a new span id.
        let trace = ctx.trace().map(TraceContext::child);
        let mut child = match self.spawn(&argv, &env, task.as_deref(), trace.as_ref()) {
            Ok(child) => child,
            Err(err) => return self.spawn_failure(&argv[0], &err),
        };
        let Some(group) = child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .map(Pid::from_raw)
        else {
            return Outcome::Error(internal("the started process has no pid"));
        };
        let mut guard = GroupGuard { group, armed: true };
        announce(group, &ctx).await;
        // Raised once the group is gone: the reader then stops asking and closes stdin.
        let (group_gone, group_gone_seen) = watch::channel(false);
        let pipes = self.attach(&mut child, &arguments, &ctx, group_gone_seen);
        let end = self.run_to_end(&mut child, &ctx).await;
        let ending = end_group(&mut child, group, self.tool.kill_grace).await;
        guard.armed = false;
        group_gone.send_replace(true);
        let streams = pipes.collect().await;
        if let Some(reason) = supervisor::spawn_failure(&end, &streams) {
            return self.spawn_failure(&argv[0], &reason);
        }
        self.finish(end, ending, streams, &ctx).await
    }
}

impl CommandTool {
    /// The argv and environment of a call, or the outcome that ends it before anything
    /// starts: arguments that do not fill the template, an output schema that did not
    /// compile, a call cancelled already.
    fn prepare(&self, arguments: &Value, ctx: &Context) -> Result<(Vec<String>, Env<'_>), Outcome> {
        let argv = self.argv(arguments).map_err(Outcome::Error)?;
        let env = self.env(arguments).map_err(Outcome::Error)?;
        if let Some(Err(err)) = &self.output_validator {
            return Err(Outcome::Error(internal(err.clone())));
        }
        if ctx.is_cancelled() {
            return Err(result::tool_result(true, vec!["cancelled".to_owned()]));
        }
        Ok((argv, env))
    }

    /// The child's pipes put to work: its stdin written (the arguments, when the tool says
    /// so) or kept for the line protocol's answers, its stdout read by the line protocol,
    /// the tail of its stderr kept.
    fn attach(&self, child: &mut Child, arguments: &Value, ctx: &Context, group_gone: watch::Receiver<bool>) -> Pipes {
        let (answers, writer) = match (self.stdin_bytes(arguments), child.stdin.take()) {
            (Some(bytes), Some(pipe)) => (None, Some(tokio::spawn(write_and_close(pipe, bytes)))),
            (_, pipe) => (pipe, None),
        };
        let cap = self.tool.max_output;
        let stdout = child.stdout.take().map(|pipe| {
            let talk = Talk::new(&self.tool.name, ctx.clone(), answers, group_gone, cap);
            tokio::spawn(talk.run(pipe))
        });
        let stderr = child
            .stderr
            .take()
            .map(|pipe| tokio::spawn(read_tail(pipe, cap, ctx.clone())));
        Pipes { writer, stdout, stderr }
    }

    /// Waits for the command to exit, the call to be cancelled, or the tool's timeout.
    async fn run_to_end(&self, child: &mut Child, ctx: &Context) -> End {
        let deadline = async {
            match self.tool.timeout {
                Some(timeout) => tokio::time::sleep(timeout).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            status = child.wait() => End::Exited(status),
            () = ctx.cancelled() => End::Cancelled,
            () = deadline => End::TimedOut,
        }
    }

    /// The call's outcome from how the command ended and what it wrote; its status
    /// message, if any, goes to the task first.
    async fn finish(&self, end: End, ending: Ending, streams: Streams, ctx: &Context) -> Outcome {
        let finished = result::Finished {
            tool: &self.tool,
            output_validator: self.output_validator.as_ref().and_then(|v| v.as_ref().ok()),
            end,
            ending,
            streams,
        };
        if let Some(status) = finished.status_message() {
            ctx.status(status).await;
        }
        finished.outcome()
    }
}

/// Tells the task its command started: its process group recorded with it (durably) at
/// once, so that should the server die the next one ends the group before it resolves the
/// task; then a status line, before the reader starts, so that the command's own status
/// lines come after it.
async fn announce(group: Pid, ctx: &Context) {
    if let Some(recorded) = u32::try_from(group.as_raw()).ok().and_then(ProcessGroup::led_by) {
        ctx.process_started(recorded).await;
    }
    ctx.status(format!("started (pid {group})")).await;
}

/// The tasks that feed and read a running command's pipes.
struct Pipes {
    /// Writes the arguments to stdin, when the tool takes them there.
    writer: Option<tokio::task::JoinHandle<()>>,
    /// The line protocol on stdout.
    stdout: Option<tokio::task::JoinHandle<Tail>>,
    /// The tail of stderr.
    stderr: Option<tokio::task::JoinHandle<Tail>>,
}

impl Pipes {
    /// Once the group is gone: stops writing, and takes what was read.
    async fn collect(self) -> Streams {
        if let Some(writer) = self.writer {
            writer.abort();
        }
        Streams {
            stdout: collect(self.stdout).await,
            stderr: collect(self.stderr).await,
        }
    }
}

/// A call's environment variables, by name: a value, or `None` to unset the variable.
type Env<'a> = Vec<(&'a str, Option<String>)>;

/// Writes `bytes` to the command's stdin, then closes it. A command that exits without
/// reading it all is no error.
async fn write_and_close(mut stdin: ChildStdin, bytes: Vec<u8>) {
    if let Err(err) = stdin.write_all(&bytes).await {
        tracing::debug!(error = %err, "a tool did not read all of its stdin");
    }
    drop(stdin);
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
    /// The tail as text (invalid UTF-8 replaced).
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// `[mcp-tasks: N bytes of <stream> cut; showing the last M]`, if anything was cut.
    fn cut_note(&self, stream: &str) -> Option<String> {
        (self.cut > 0).then(|| {
            format!(
                "[mcp-tasks: {} bytes of {stream} cut; showing the last {}]",
                self.cut,
                self.bytes.len()
            )
        })
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
async fn read_tail(mut pipe: impl AsyncRead + Unpin, cap: usize, ctx: Context) -> Tail {
    let mut tail = Tail::default();
    let mut chunk = vec![0u8; CHUNK];
    // The bytes of a character cut across two reads, held for the next one.
    let mut cut: Vec<u8> = Vec::new();
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) => break,
            Ok(n) => {
                tail.push(&chunk[..n], cap);
                // Into the task's event log as it comes (`stream: stderr`).
                cut.extend_from_slice(&chunk[..n]);
                let whole = match std::str::from_utf8(&cut) {
                    Err(err) if err.error_len().is_none() => err.valid_up_to(),
                    _ => cut.len(),
                };
                ctx.stderr(&String::from_utf8_lossy(&cut[..whole]));
                cut.drain(..whole);
            }
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
/// after `grace`. Returns at once if the leader has exited and the group is empty. Which
/// signals it took.
async fn end_group(child: &mut Child, group: Pid, grace: Duration) -> Ending {
    if let Ok(Some(_)) = child.try_wait() {
        reap_group(group);
        if !group_alive(group) {
            return Ending::Empty;
        }
    }
    let _ = killpg(group, Signal::SIGTERM);
    if wait_group_gone(child, group, grace).await {
        return Ending::Terminated;
    }
    let _ = killpg(group, Signal::SIGKILL);
    if !wait_group_gone(child, group, KILL_WAIT).await {
        tracing::warn!(pgid = %group, "a tool's process group survived SIGKILL");
    }
    Ending::Killed
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
        let ctx = || Context::plain(tokio_util::sync::CancellationToken::new(), None);
        let tail = read_tail(&data[..], 1000, ctx()).await;
        assert_eq!(tail.cut, 99_000);
        assert_eq!(tail.bytes, &data[99_000..]);
        assert_eq!(
            tail.cut_note("stdout").as_deref(),
            Some("[mcp-tasks: 99000 bytes of stdout cut; showing the last 1000]")
        );
        assert_eq!(read_tail(&data[..10], 1000, ctx()).await.cut_note("stdout"), None);
    }
}
