//! What the client commands (`tools`, `call`, `tasks`) share: exit codes, connecting, the
//! progress display, and printing results.

use std::io::IsTerminal as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mcp_tasks_client::protocol::{CallToolResult, Content, Task};
use mcp_tasks_client::{Client, ClientError};
use serde_json::{Value, json};

use crate::args::{AnswerArgs, ConnectArgs, RemoteArgs};
use crate::prompt::TerminalElicitation;

/// Exit status: the call or task completed.
pub(crate) const COMPLETED: u8 = 0;
/// Exit status: the tool reported an error (`isError`) or the task failed.
pub(crate) const FAILED: u8 = 1;
/// Exit status: usage error, or the server could not be reached or refused the request.
pub(crate) const USAGE: u8 = 2;
/// Exit status: the task was cancelled.
pub(crate) const CANCELLED: u8 = 3;

/// Connects to the server of `args`, answering elicitation as `answer` says.
pub(crate) async fn connect(
    args: &RemoteArgs,
    answer: Option<&AnswerArgs>,
    display: &Arc<Display>,
) -> anyhow::Result<Client> {
    let ConnectArgs { url, token, cmd } = &args.connect;
    let handler = TerminalElicitation::new(
        answer.and_then(|answer| answer.answer.clone()),
        Arc::clone(display),
    );
    let mut builder = Client::builder().elicitation(handler);
    if let Some(cmd) = cmd {
        // Split into words like a shell would, but spawned without one.
        return builder
            .connect_command(cmd)
            .await
            .with_context(|| format!("starting the stdio server {cmd:?}"));
    }
    let Some(url) = url else {
        bail!("give the server with --url URL or --cmd \"COMMAND ARGS\"")
    };
    if let Some(token) = token {
        builder = builder.token(token.clone());
    }
    builder
        .connect_http(url)
        .await
        .with_context(|| format!("connecting to {url}"))
}

/// The spinner shown on stderr while waiting for a task; hidden when stderr is not a
/// terminal or with `--json`. Prompts suspend it.
pub(crate) struct Display {
    bar: ProgressBar,
    enabled: bool,
    prompting: AtomicBool,
}

impl Display {
    pub(crate) fn new(json: bool) -> Arc<Display> {
        let enabled = !json && std::io::stderr().is_terminal();
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        Arc::new(Display {
            bar,
            enabled,
            prompting: AtomicBool::new(false),
        })
    }

    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// Starts the spinner for `task_id`.
    pub(crate) fn start(&self, task_id: &str) {
        if !self.enabled {
            return;
        }
        let style = ProgressStyle::with_template("{spinner} task {prefix} {elapsed} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        self.bar.set_style(style);
        self.bar.set_prefix(task_id.to_owned());
        self.bar.set_message("working");
        self.bar.set_draw_target(ProgressDrawTarget::stderr());
        self.bar.enable_steady_tick(Duration::from_millis(120));
    }

    /// Shows the task's status and status message (skipped while a prompt is open).
    pub(crate) fn show(&self, task: &Task) {
        if !self.enabled || self.prompting.load(Ordering::SeqCst) {
            return;
        }
        let message = match &task.status_message {
            Some(message) => format!("{}: {message}", task.status),
            None => task.status.to_string(),
        };
        self.bar.set_message(message);
    }

    /// Runs `ask` (a blocking terminal prompt) with the spinner out of the way.
    pub(crate) fn suspend<T>(&self, ask: impl FnOnce() -> T) -> T {
        self.prompting.store(true, Ordering::SeqCst);
        let answer = if self.enabled {
            self.bar.suspend(ask)
        } else {
            ask()
        };
        self.prompting.store(false, Ordering::SeqCst);
        answer
    }

    pub(crate) fn finish(&self) {
        if self.enabled {
            self.bar.finish_and_clear();
        }
    }
}

/// Prints a tool result (its text, or the `CallToolResult` JSON) and returns the exit
/// status it means.
pub(crate) fn print_result(result: &CallToolResult, json: bool) -> u8 {
    if json {
        println!("{}", serde_json::to_value(result).unwrap_or(Value::Null));
    } else {
        for block in &result.content {
            print_block(block);
        }
        if result.content.is_empty()
            && let Some(structured) = &result.structured_content
        {
            println!("{structured}");
        }
    }
    if result.is_error == Some(true) {
        eprintln!("mcp-tasks: the tool reported an error");
        FAILED
    } else {
        COMPLETED
    }
}

fn print_block(block: &Content) {
    match block {
        Content::Text { text, .. } if text.ends_with('\n') => print!("{text}"),
        Content::Text { text, .. } => println!("{text}"),
        Content::Image {
            mime_type, data, ..
        }
        | Content::Audio {
            mime_type, data, ..
        } => {
            println!("[{mime_type}, {} bytes of base64]", data.len());
        }
        Content::ResourceLink { uri, .. } => println!("{uri}"),
        Content::Resource { resource, .. } => match resource.get("text").and_then(Value::as_str) {
            Some(text) => println!("{text}"),
            None => println!(
                "[resource {}]",
                resource.get("uri").and_then(Value::as_str).unwrap_or("?")
            ),
        },
    }
}

/// The exit status of a finished wait: the result printed, or the task's end reported.
/// Other errors (transport, protocol, unknown task) are returned, for exit status 2.
pub(crate) fn report(
    outcome: Result<CallToolResult, ClientError>,
    json: bool,
) -> anyhow::Result<u8> {
    match outcome {
        Ok(result) => Ok(print_result(&result, json)),
        Err(ClientError::TaskCancelled { task_id, message }) => {
            if json {
                println!(
                    "{}",
                    json!({"taskId": task_id, "status": "cancelled", "statusMessage": message})
                );
            }
            eprintln!(
                "mcp-tasks: {}",
                ClientError::TaskCancelled { task_id, message }
            );
            Ok(CANCELLED)
        }
        Err(ClientError::TaskFailed {
            task_id,
            code,
            message,
            data,
        }) => {
            if json {
                let error = json!({"code": code, "message": message, "data": data});
                println!(
                    "{}",
                    json!({"taskId": task_id, "status": "failed", "error": error})
                );
            }
            eprintln!(
                "mcp-tasks: {}",
                ClientError::TaskFailed {
                    task_id,
                    code,
                    message,
                    data
                }
            );
            Ok(FAILED)
        }
        Err(other) => Err(other.into()),
    }
}

/// One line for a task: id, status, message, last update.
pub(crate) fn task_line(task: &Task) -> String {
    let message = task
        .status_message
        .as_deref()
        .map(|m| format!("  {m}"))
        .unwrap_or_default();
    format!(
        "{}  {}  {}{message}",
        task.task_id, task.status, task.last_updated_at
    )
}

/// Prints a task (its JSON, or one line).
pub(crate) fn print_task(task: &Task, json: bool) {
    if json {
        println!("{}", serde_json::to_value(task).unwrap_or(Value::Null));
    } else {
        println!("{}", task_line(task));
    }
}
