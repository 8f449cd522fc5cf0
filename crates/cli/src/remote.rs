//! What the client commands (`tools`, `call`, `tasks`) share: exit codes, connecting, the
//! progress display, and printing results.

use std::io::IsTerminal as _;
use std::sync::Arc;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use anyhow::{Context as _, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mcp_tasks_client::protocol::{CallToolResult, Content};
use mcp_tasks_client::{Client, ClientError, Era, TaskInfo};
use serde_json::{Value, json};

use crate::args::{AnswerArgs, ConnectArgs, EraArg, RemoteArgs};
use crate::prompt::TerminalElicitation;
use crate::sampling::CommandSampling;

/// Exit status: the call or task completed.
pub(crate) const COMPLETED: u8 = 0;
/// Exit status: the tool reported an error (`isError`) or the task failed.
pub(crate) const FAILED: u8 = 1;
/// Exit status: usage error, or the server could not be reached or refused the request.
pub(crate) const USAGE: u8 = 2;
/// Exit status: the task was cancelled.
pub(crate) const CANCELLED: u8 = 3;
/// Exit status: Ctrl-C, then "detach": the task was left running (resume it with
/// `mcp-tasks tasks wait ID`).
pub(crate) const DETACHED: u8 = 4;

/// Connects to the server of `args`, answering elicitation and sampling as `answer` says
/// (both capabilities are declared; without `answer`, sampling requests are declined).
pub(crate) async fn connect(
    args: &RemoteArgs,
    answer: Option<&AnswerArgs>,
    display: &Arc<Display>,
) -> anyhow::Result<Client> {
    let ConnectArgs { url, token, cmd, era, ca_file, verbose } = &args.connect;
    let handler = TerminalElicitation::new(
        answer.and_then(|answer| answer.answer.clone()),
        Arc::clone(display),
    );
    let sampling = CommandSampling::new(
        answer.and_then(|answer| answer.sampling_cmd.as_deref()),
        Arc::clone(display),
    )?;
    let mut builder = Client::builder().elicitation(handler).sampling(sampling);
    builder = match era {
        EraArg::Auto => builder,
        EraArg::Legacy => builder.era(Era::Legacy),
        EraArg::Modern => builder.era(Era::Modern),
    };
    if let Some(cmd) = cmd {
        // Split into words like a shell would, but spawned without one; its logs kept back
        // unless -v (shown if it fails).
        return builder
            .quiet_server(!verbose)
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
    if let Some(ca_file) = ca_file {
        builder = builder.ca_file(ca_file.clone());
    }
    builder.connect_http(url).await.with_context(|| match without_path(url) {
        // The commonest slip: the address without the endpoint's path.
        Some(endpoint) => format!("connecting to {url} (mcp-tasks serve answers at /mcp: try --url {endpoint})"),
        None => format!("connecting to {url}"),
    })
}

/// `URL` with `/mcp` as its path, if `url` has no path (or only `/`).
fn without_path(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.trim_end_matches('/');
    (!authority.is_empty() && !authority.contains('/') && !authority.contains('?'))
        .then(|| format!("{scheme}://{authority}/mcp"))
}

/// Ends the session: a `--cmd` server gets its stdin closed and time to stop on its own
/// (its running tasks keep their state in its store), then SIGTERM, then SIGKILL. Over
/// HTTP the session is left to expire.
pub(crate) async fn close(client: Client, connect: &ConnectArgs) {
    if connect.cmd.is_none() {
        return;
    }
    match client.close().await {
        Ok(Some(status)) if !status.success() => {
            tracing::debug!(%status, "the stdio server ended");
        }
        Ok(_) => {}
        Err(err) => tracing::debug!(error = %err, "closing the session"),
    }
}

/// What is shown on stderr while a task is waited for: a spinner with the task's status
/// (and status message), which becomes a bar when the server reports progress with a
/// total. Hidden when stderr is not a terminal or with `--json`. Prompts suspend it.
pub(crate) struct Display {
    bar: ProgressBar,
    enabled: bool,
    shown: Mutex<Shown>,
}

/// What the display knows. Updates go through its mutex, so none reaches the bar while a
/// prompt has it suspended (indicatif would block the updating thread until the prompt
/// ends).
#[derive(Default)]
struct Shown {
    /// Prompts open (an elicitation form and the Ctrl-C question may overlap).
    prompting: u32,
    status: Option<String>,
    status_message: Option<String>,
    progress: Option<Progress>,
    /// Whether the bar style (rather than the spinner's) is set.
    as_bar: bool,
    /// Whether the spinner is drawn (between `start` and `finish`).
    drawn: bool,
}

/// A `notifications/progress`, as shown.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Progress {
    pub(crate) progress: f64,
    pub(crate) total: Option<f64>,
    pub(crate) message: Option<String>,
}

/// The bar's length: progress is shown in thousandths of the total.
const BAR_STEPS: u64 = 1000;

impl Display {
    pub(crate) fn new(json: bool) -> Arc<Display> {
        let enabled = !json && std::io::stderr().is_terminal();
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        Arc::new(Display {
            bar,
            enabled,
            shown: Mutex::new(Shown::default()),
        })
    }

    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    fn shown(&self) -> MutexGuard<'_, Shown> {
        self.shown.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the spinner for `task_id`.
    pub(crate) fn start(&self, task_id: &str) {
        if !self.enabled {
            return;
        }
        let mut shown = self.shown();
        self.bar.set_style(spinner_style());
        self.bar.set_prefix(task_id.to_owned());
        shown.status = Some("working".to_owned());
        shown.drawn = true;
        self.redraw(&mut shown);
        self.bar.set_draw_target(ProgressDrawTarget::stderr());
        self.bar.enable_steady_tick(Duration::from_millis(120));
    }

    /// Shows the task's status and status message.
    pub(crate) fn show(&self, task: &TaskInfo) {
        if !self.enabled {
            return;
        }
        let mut shown = self.shown();
        shown.status = Some(task.status.to_string());
        shown.status_message.clone_from(&task.status_message);
        self.redraw(&mut shown);
    }

    /// Shows the server's progress: a bar when it has a total.
    pub(crate) fn progress(&self, progress: Progress) {
        if !self.enabled {
            return;
        }
        let mut shown = self.shown();
        shown.progress = Some(progress);
        self.redraw(&mut shown);
    }

    /// Prints a line on stderr, above the spinner when there is one.
    pub(crate) fn note(&self, line: &str) {
        let shown = self.shown();
        if shown.drawn && shown.prompting == 0 {
            self.bar.println(line);
        } else {
            eprintln!("{line}");
        }
    }

    fn redraw(&self, shown: &mut Shown) {
        if shown.prompting > 0 {
            return;
        }
        let mut parts = Vec::new();
        let total = shown
            .progress
            .as_ref()
            .and_then(|p| p.total.map(|t| (p.progress, t)))
            .filter(|(_, total)| *total > 0.0);
        match total {
            Some((progress, total)) => {
                if !shown.as_bar {
                    self.bar.set_style(bar_style());
                    self.bar.set_length(BAR_STEPS);
                    shown.as_bar = true;
                }
                let fraction = (progress / total).clamp(0.0, 1.0);
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                self.bar
                    .set_position((fraction * BAR_STEPS as f64).round() as u64);
                parts.push(format!("{}/{}", number(progress), number(total)));
            }
            None => {
                if shown.as_bar {
                    self.bar.set_style(spinner_style());
                    self.bar.unset_length();
                    shown.as_bar = false;
                }
                if let Some(progress) = &shown.progress {
                    parts.push(format!("progress {}", number(progress.progress)));
                }
            }
        }
        if let Some(message) = shown.progress.as_ref().and_then(|p| p.message.as_ref())
            && shown.status_message.as_ref() != Some(message)
        {
            parts.push(message.clone());
        }
        if let Some(status) = &shown.status {
            parts.push(match &shown.status_message {
                Some(message) => format!("{status}: {message}"),
                None => status.clone(),
            });
        }
        self.bar.set_message(parts.join("  "));
    }

    /// Runs `ask` (a blocking terminal prompt) with the spinner out of the way.
    pub(crate) fn suspend<T>(&self, ask: impl FnOnce() -> T) -> T {
        if !self.enabled {
            return ask();
        }
        self.shown().prompting += 1;
        let answer = self.bar.suspend(ask);
        let mut shown = self.shown();
        shown.prompting -= 1;
        self.redraw(&mut shown);
        answer
    }

    pub(crate) fn finish(&self) {
        if self.enabled {
            self.shown().drawn = false;
            self.bar.finish_and_clear();
        }
    }
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} task {prefix} {elapsed} {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} task {prefix} {elapsed} [{bar:24}] {wide_msg}")
        .map(|style| style.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// A progress number as people write it: `3`, not `3.0`.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}

/// `value` (a JSON object) with the protocol revision the command spoke, as `"era"`.
pub(crate) fn with_era(mut value: Value, era: Era) -> Value {
    if let Value::Object(object) = &mut value {
        object.insert("era".to_owned(), Value::String(era.revision().to_owned()));
    }
    value
}

/// Prints a tool result (its text, or the `CallToolResult` JSON with the `"era"` spoken)
/// and returns the exit status it means.
pub(crate) fn print_result(result: &CallToolResult, json: bool, era: Era) -> u8 {
    print_task_result(result, None, json, era)
}

/// [`print_result`] of the result of task `task_id`, if it was one: its JSON names the task.
fn print_task_result(result: &CallToolResult, task_id: Option<&str>, json: bool, era: Era) -> u8 {
    if json {
        let mut value = with_era(serde_json::to_value(result).unwrap_or(Value::Null), era);
        if let (Some(id), Value::Object(object)) = (task_id, &mut value) {
            object.insert("taskId".to_owned(), Value::String(id.to_owned()));
        }
        println!("{value}");
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

/// The exit status of a finished wait of task `task_id`: the result printed (with
/// `"taskId"` under `--json`, so that a script can name the task afterwards), or the task's
/// end reported. Other errors (transport, protocol, unknown task) are returned, for exit
/// status 2.
pub(crate) fn report(
    outcome: Result<CallToolResult, ClientError>,
    task_id: &str,
    json: bool,
    era: Era,
) -> anyhow::Result<u8> {
    match outcome {
        Ok(result) => Ok(print_task_result(&result, Some(task_id), json, era)),
        Err(ClientError::TaskCancelled { task_id, message }) => {
            if json {
                println!(
                    "{}",
                    json!({"taskId": task_id, "status": "cancelled", "statusMessage": message, "era": era.revision()})
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
                    json!({"taskId": task_id, "status": "failed", "error": error, "era": era.revision()})
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

/// Prints a table on stdout: a header row, then the rows, each column as wide as its widest
/// cell (the last one is not padded).
pub(crate) fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    let widths: Vec<usize> = (0..headers.len())
        .map(|column| {
            rows.iter().map(|row| row.get(column).map_or(0, |cell| cell.chars().count())).chain([headers[column].len()]).max().unwrap_or(0)
        })
        .collect();
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let padded: Vec<String> = cells.zip(&widths).map(|(cell, width)| format!("{cell:width$}")).collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(&mut headers.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
}

/// One line for a task: id, status, message, last update.
pub(crate) fn task_line(task: &TaskInfo) -> String {
    let message = task
        .status_message
        .as_deref()
        .map(|m| format!("  {m}"))
        .unwrap_or_default();
    format!(
        "{}  {}  {}{message}",
        task.id, task.status, task.last_updated_at
    )
}

/// Prints a task (its JSON with the `"era"` spoken, or one line).
pub(crate) fn print_task(task: &TaskInfo, json: bool, era: Era) {
    if json {
        println!("{}", with_era(serde_json::to_value(task).unwrap_or(Value::Null), era));
    } else {
        println!("{}", task_line(task));
    }
}

#[cfg(test)]
mod url_tests {
    use super::without_path;

    #[test]
    fn an_address_without_a_path_is_pointed_at_mcp() {
        assert_eq!(without_path("http://127.0.0.1:8765").as_deref(), Some("http://127.0.0.1:8765/mcp"));
        assert_eq!(without_path("http://127.0.0.1:8765/").as_deref(), Some("http://127.0.0.1:8765/mcp"));
        assert_eq!(without_path("http://127.0.0.1:8765/mcp"), None);
        assert_eq!(without_path("https://example.com/api/mcp"), None);
        assert_eq!(without_path("not a url"), None);
    }
}
