//! The line protocol between a command and mcp-tasks (see [`MARKER`]): [`Talk`] reads a
//! command's stdout, keeps output lines as the result's text, and acts on marker lines.
//!
//! Lines are handled in order, one at a time, so output and messages keep their order.
//! While a question waits for its answer, no further line is read: the command's writes
//! block once the pipe is full, until the answer comes. A line is split by its bytes, not
//! by reads, so a marker cut across two reads is still a marker, and memory stays bounded
//! by the output cap and [`MESSAGE_CAP`], whatever the line lengths.

use mcp_tasks_engine::{Context, ErrorObject, InputError, Progress};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use crate::{CHUNK, Tail, json_kind};

/// The start of a line-protocol line: a line of a command's stdout that begins with
/// `@mcp-tasks ` (the word, then one space) carries one JSON object for mcp-tasks, and is
/// not part of the output.
///
/// The objects:
/// - `{"progress": 3, "total": 10, "message": "step 3"}` reports progress (`total` and
///   `message` are optional). `progress` must increase from one report to the next (an MCP
///   rule); a report that does not is not sent. The message also becomes the task's status
///   message.
/// - `{"status": "compiling…"}` sets the task's status message.
/// - `{"elicit": {"message": "Delete 3 files?", "requestedSchema": {…}}}` asks the user:
///   the inner object is sent as is as the params of `elicitation/create` (in a task: the
///   task is `input_required` until the client answers). The answer is written to the
///   command's stdin as one JSON line: the client's `ElicitResult` as is, e.g.
///   `{"action":"accept","content":{"confirm":true}}`, `{"action":"decline"}` or
///   `{"action":"cancel"}`; or, when the question could not be asked or answered (no
///   client, a client that cannot elicit, a client error),
///   `{"action":"error","error":{"code":-32603,"message":"…"}}`. The line is compact JSON
///   (no spaces between tokens). A shell reads it with `read -r answer`.
/// - `{"log": "compiled 12 files"}` or `{"log": {"level": "warning", "message": "…"}}` adds a
///   log line to the task's event log (`dev.mcp-tasks.log`, `{"level", "message"}`; the
///   level is one of MCP's logging levels, `info` by default). Not part of the result.
/// - `{"partial": {"content": [{"type": "text", "text": "first half"}]}}` adds a partial
///   result to the task's event log (`dev.mcp-tasks.partial`, the object as is: its `content`
///   an array of MCP content blocks), so that a client following the task's events may
///   show results as they come. The task's result is still the command's output.
///
/// A marker line that is not JSON, whose object has none or more than one of `progress`,
/// `status`, `elicit`, `log` and `partial` or an unknown key, whose values have the wrong types, or that is
/// longer than 1 MiB is ignored, with a warning in the server's log naming the problem.
///
/// A tool whose stdin carries an argument (`stdin = { arg = "…" }`) cannot be answered: its
/// questions are not asked (a warning in the server's log says so), and its stdin is
/// closed once the argument is written, so a `read` of the answer sees end-of-file.
///
/// Lines are handled in order, one at a time: while a question waits for its answer, no
/// further line is read. If the call is cancelled or times out meanwhile, no answer comes:
/// the process group is ended as always. Of the lines still unread when the group has
/// ended, progress is reported, but questions are not asked and status messages are not
/// set (the call's final status message replaces them at once). A command must flush its
/// stdout after a marker line (shell `echo` and `printf` do; Python needs
/// `print(…, flush=True)`), or the line may never arrive. In an inline `sh -c` script of a
/// tool's `command`, JSON braces are doubled (`{{"status": "…"}}`), as in every command
/// element.
///
/// The marker is plain ASCII, easy to write from any shell, and a line that starts with
/// `@` followed by the program's name is rare in ordinary output.
pub const MARKER: &str = "@mcp-tasks ";

/// The longest marker line (after the marker) that is read; a longer one is skipped.
const MESSAGE_CAP: usize = 1024 * 1024;
/// How much of a bad marker line a warning quotes.
const QUOTE_CAP: usize = 200;

/// The reader of a command's stdout, and the writer of answers to its stdin.
pub(super) struct Talk<W> {
    /// The tool's name, for warnings.
    tool: String,
    ctx: Context,
    /// The command's stdin; kept open until the group is gone, so that the command never
    /// sees end-of-file while it may still ask. `None` when stdin carries an argument
    /// instead: questions are then not asked.
    stdin: Option<W>,
    /// True once the command's process group is gone (or the call was dropped, which
    /// drops the sender): nobody is left to answer.
    group_gone: watch::Receiver<bool>,
    output: Tail,
    /// The output of the read being handled, published when it is.
    fresh: Vec<u8>,
    /// The cap of `output`.
    cap: usize,
    line: Line,
    /// The current marker line, after the marker.
    message: Vec<u8>,
    /// The last progress value sent.
    last_progress: Option<f64>,
}

/// Where the reader is within the current line.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Line {
    /// In the first bytes of a line, which so far match the first `n` bytes of the marker.
    Start(usize),
    /// In an output line.
    Output,
    /// In a marker line.
    Message,
    /// In a marker line longer than [`MESSAGE_CAP`], skipped to its end.
    TooLong,
}

impl<W: AsyncWrite + Unpin> Talk<W> {
    /// A reader for `tool`'s command: messages go to `ctx`, answers to `stdin`, output is
    /// kept up to `cap` bytes (the tail).
    pub(super) fn new(
        tool: &str,
        ctx: Context,
        stdin: Option<W>,
        group_gone: watch::Receiver<bool>,
        cap: usize,
    ) -> Talk<W> {
        Talk {
            tool: tool.to_owned(),
            ctx,
            stdin,
            group_gone,
            output: Tail::default(),
            fresh: Vec::new(),
            cap,
            line: Line::Start(0),
            message: Vec::new(),
            last_progress: None,
        }
    }

    /// Reads `stdout` to its end, handling its lines; then waits for the group to be gone
    /// and closes stdin. The output lines, as a tail.
    pub(super) async fn run(mut self, mut stdout: impl AsyncRead + Unpin) -> Tail {
        let mut chunk = vec![0u8; CHUNK];
        loop {
            match stdout.read(&mut chunk).await {
                Ok(0) => break,
                Ok(n) => self.feed(&chunk[..n]).await,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(err) => {
                    tracing::warn!(tool = %self.tool, error = %err, "could not read a tool's output");
                    break;
                }
            }
        }
        self.end_of_stream().await;
        wait_gone(&mut self.group_gone).await;
        drop(self.stdin);
        self.output.finish(self.cap)
    }

    /// Splits `bytes` into the lines they continue or start, and handles each line ended;
    /// the output among them is published once, as it came ([`Context::output`]: the live
    /// tail of the web view; not stored, the result keeps the tail).
    async fn feed(&mut self, bytes: &[u8]) {
        self.split(bytes).await;
        if !self.fresh.is_empty() {
            self.ctx.output(&String::from_utf8_lossy(&self.fresh));
            self.fresh.clear();
        }
    }

    async fn split(&mut self, mut bytes: &[u8]) {
        let marker = MARKER.as_bytes();
        while !bytes.is_empty() {
            match self.line {
                Line::Start(matched) => {
                    let rest = &marker[matched..];
                    let same = bytes.iter().zip(rest).take_while(|(a, b)| a == b).count();
                    if same == rest.len() {
                        self.line = Line::Message;
                        self.message.clear();
                        bytes = &bytes[same..];
                    } else if same == bytes.len() {
                        self.line = Line::Start(matched + same);
                        bytes = &[];
                    } else {
                        // Not a marker: what matched in earlier reads is output, and this
                        // read's bytes are taken as output from their start.
                        self.output.push(&marker[..matched], self.cap);
                        self.fresh.extend_from_slice(&marker[..matched]);
                        self.line = Line::Output;
                    }
                }
                Line::Output => match bytes.iter().position(|&b| b == b'\n') {
                    Some(end) => {
                        self.output.push(&bytes[..=end], self.cap);
                        self.fresh.extend_from_slice(&bytes[..=end]);
                        self.line = Line::Start(0);
                        bytes = &bytes[end + 1..];
                    }
                    None => {
                        self.output.push(bytes, self.cap);
                        self.fresh.extend_from_slice(bytes);
                        bytes = &[];
                    }
                },
                Line::Message | Line::TooLong => {
                    let end = bytes.iter().position(|&b| b == b'\n');
                    let part = &bytes[..end.unwrap_or(bytes.len())];
                    if self.message.len() + part.len() > MESSAGE_CAP {
                        self.line = Line::TooLong;
                        // Kept for the warning's quote.
                        self.message.truncate(QUOTE_CAP);
                    } else if self.line == Line::Message {
                        self.message.extend_from_slice(part);
                    }
                    match end {
                        Some(end) => {
                            bytes = &bytes[end + 1..];
                            self.end_message().await;
                        }
                        None => bytes = &[],
                    }
                }
            }
        }
    }

    /// Ends the line the stream ended in, which has no newline.
    async fn end_of_stream(&mut self) {
        match self.line {
            Line::Start(matched) => self.output.push(&MARKER.as_bytes()[..matched], self.cap),
            Line::Output => {}
            Line::Message | Line::TooLong => self.end_message().await,
        }
        self.line = Line::Start(0);
    }

    /// Handles the marker line just ended, and starts a new line.
    async fn end_message(&mut self) {
        let line = std::mem::replace(&mut self.line, Line::Start(0));
        let json = std::mem::take(&mut self.message);
        if line == Line::TooLong {
            let problem = format!("longer than {MESSAGE_CAP} bytes");
            self.warn(&problem, &json);
            return;
        }
        match parse(&json) {
            Ok(Message::Elicit(params)) => self.elicit(params, &json).await,
            Ok(Message::Progress(progress)) => self.progress(progress).await,
            Ok(Message::Status(status)) => self.status(status).await,
            Ok(Message::Event(kind, payload)) => self.ctx.event(kind, payload),
            Err(problem) => self.warn(&problem, &json),
        }
    }

    /// Reports `progress` if it increases, and makes its message the status message.
    async fn progress(&mut self, progress: Progress) {
        let message = progress.message.clone();
        match self.last_progress {
            Some(last) if progress.progress <= last => tracing::warn!(
                tool = %self.tool,
                progress = progress.progress,
                last,
                "a tool's progress did not increase; the report is not sent"
            ),
            _ => {
                self.last_progress = Some(progress.progress);
                self.ctx.progress(progress);
            }
        }
        if let Some(message) = message {
            self.status(message).await;
        }
    }

    /// Sets the status message, unless the group is gone: the call's final status message
    /// follows at once, and skipping the lines still in the pipe keeps their reading quick.
    async fn status(&self, message: String) {
        if !is_gone(&self.group_gone) {
            self.ctx.status(message).await;
        }
    }

    /// Asks the client, and writes the answer (or the failure) to stdin as one line. No
    /// answer if the call is cancelled or the group ends meanwhile.
    async fn elicit(&mut self, params: Map<String, Value>, json: &[u8]) {
        if is_gone(&self.group_gone) {
            self.warn("the command has ended; the question is not asked", json);
            return;
        }
        if self.stdin.is_none() {
            self.warn(
                "the tool's stdin carries an argument, so no answer could reach it; the \
                 question is not asked",
                json,
            );
            return;
        }
        // `elicit` itself ends on cancellation (and withdraws a task's input request).
        let answer = tokio::select! {
            biased;
            () = wait_gone(&mut self.group_gone) => return,
            answer = self.ctx.elicit(Value::Object(params)) => answer.map_err(answer_error),
        };
        let Some(stdin) = self.stdin.as_mut().filter(|_| !self.ctx.is_cancelled()) else {
            return;
        };
        let line = answer_line(answer);
        let written = tokio::select! {
            biased;
            () = wait_gone(&mut self.group_gone) => return,
            written = write_line(stdin, &line) => written,
        };
        if let Err(err) = written {
            tracing::warn!(tool = %self.tool, error = %err, "could not write an answer to a tool's stdin");
        }
    }

    /// Warns that a marker line was ignored, quoting its start.
    fn warn(&self, problem: &str, json: &[u8]) {
        let text = String::from_utf8_lossy(json);
        let quote: String = text.chars().take(QUOTE_CAP).collect();
        tracing::warn!(
            tool = %self.tool,
            line = %format!("{MARKER}{quote}"),
            "ignored a line-protocol line of a tool: {problem}"
        );
    }
}

/// A line-protocol message.
#[derive(Debug, PartialEq)]
enum Message {
    /// The params of an `elicitation/create` request.
    Elicit(Map<String, Value>),
    Progress(Progress),
    /// A status message.
    Status(String),
    /// An event for the task's log: a log line or a partial result.
    Event(&'static str, Value),
}

/// The levels of MCP's `logging/setLevel`, which a `log` line may name.
const LOG_LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// `{"log": "…"}` or `{"log": {"level": "…", "message": "…"}}`: its event payload.
fn log_payload(value: &Value) -> Result<Value, String> {
    match value {
        Value::String(message) => Ok(json!({"level": "info", "message": message})),
        Value::Object(object) => {
            let message = object.get("message").and_then(Value::as_str).ok_or("a log object needs a string `message`")?;
            let level = match object.get("level") {
                None => "info",
                Some(Value::String(level)) if LOG_LEVELS.contains(&level.as_str()) => level.as_str(),
                Some(other) => return Err(format!("log level {other} is not one of {}", LOG_LEVELS.join(", "))),
            };
            if let Some(key) = object.keys().find(|key| !matches!(key.as_str(), "message" | "level")) {
                return Err(format!("unknown field `{key}` in a log object (it has `level` and `message`)"));
            }
            Ok(json!({"level": level, "message": message}))
        }
        other => Err(format!("`log` is a string or an object, not {}", json_kind(other))),
    }
}

/// `{"partial": {"content": [...]}}`: its event payload (the object as is).
fn partial_payload(value: &Value) -> Result<Value, String> {
    let content = value.get("content").and_then(Value::as_array).ok_or("`partial` is an object with a `content` array of content blocks")?;
    if let Some(block) = content.iter().find(|block| block.get("type").and_then(Value::as_str).is_none()) {
        return Err(format!("a partial result's content block needs a string `type`: {block}"));
    }
    Ok(value.clone())
}

/// `{"elicit": {…}}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ElicitLine {
    elicit: Map<String, Value>,
}

/// `{"progress": n, "total": n, "message": "…"}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgressLine {
    progress: f64,
    #[serde(default)]
    total: Option<f64>,
    #[serde(default)]
    message: Option<String>,
}

/// `{"status": "…"}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusLine {
    status: String,
}

/// [`parse`], for the fuzz target: the kind of message, or the problem.
pub(crate) fn parse_for_fuzzing(json: &[u8]) -> Result<&'static str, String> {
    parse(json).map(|message| match message {
        Message::Elicit(_) => "elicit",
        Message::Progress(_) => "progress",
        Message::Status(_) => "status",
        Message::Event(kind, _) => kind,
    })
}

/// The message of a marker line (the JSON after the marker).
///
/// # Errors
/// What is wrong with the line, in words.
fn parse(json: &[u8]) -> Result<Message, String> {
    let value: Value =
        serde_json::from_slice(json).map_err(|err| format!("invalid JSON: {err}"))?;
    let Value::Object(object) = value else {
        return Err(format!(
            "a JSON object was expected, not {}",
            json_kind(&value)
        ));
    };
    let kinds: Vec<&str> = ["elicit", "progress", "status", "log", "partial"]
        .into_iter()
        .filter(|key| object.contains_key(*key))
        .collect();
    let value = Value::Object(object);
    let shape = |err: serde_json::Error| format!("not a valid {} message: {err}", kinds[0]);
    match kinds.as_slice() {
        ["elicit"] => serde_json::from_value(value)
            .map(|line: ElicitLine| Message::Elicit(line.elicit))
            .map_err(shape),
        ["progress"] => serde_json::from_value(value)
            .map(|line: ProgressLine| {
                Message::Progress(Progress {
                    progress: line.progress,
                    total: line.total,
                    message: line.message,
                })
            })
            .map_err(shape),
        ["status"] => serde_json::from_value(value)
            .map(|line: StatusLine| Message::Status(line.status))
            .map_err(shape),
        ["log"] | ["partial"] if value.as_object().is_some_and(|object| object.len() > 1) => {
            let key = value.as_object().and_then(|object| object.keys().find(|key| key.as_str() != kinds[0])).cloned().unwrap_or_default();
            Err(format!("not a valid {} message: unknown field `{key}`", kinds[0]))
        }
        ["log"] => log_payload(&value["log"]).map(|payload| Message::Event(mcp_tasks_engine::LOG_EVENT, payload)).map_err(|err| format!("not a valid log message: {err}")),
        ["partial"] => partial_payload(&value["partial"])
            .map(|payload| Message::Event(mcp_tasks_engine::PARTIAL_EVENT, payload))
            .map_err(|err| format!("not a valid partial message: {err}")),
        [] => Err("the object has none of the keys `progress`, `status`, `elicit`, `log` and `partial`".to_owned()),
        kinds => Err(format!(
            "the object has more than one of the keys `progress`, `status`, `elicit`, `log` and `partial`: {}",
            kinds.join(", ")
        )),
    }
}

/// The error the command reads for a question that got no answer: the client's as is, or
/// an internal error with the engine's reason.
fn answer_error(err: InputError) -> ErrorObject {
    match err {
        InputError::Client(error) => error,
        other => super::internal(other.to_string()),
    }
}

/// The line that answers a question: the client's `ElicitResult` as is, or
/// `{"action":"error","error":{…}}`; newline-terminated.
fn answer_line(answer: Result<Value, ErrorObject>) -> String {
    let value = match answer {
        Ok(result) => result,
        Err(error) => json!({"action": "error", "error": error}),
    };
    // Compact JSON has no raw newline: strings escape theirs.
    let mut line = value.to_string();
    line.push('\n');
    line
}

async fn write_line(stdin: &mut (impl AsyncWrite + Unpin), line: &str) -> std::io::Result<()> {
    stdin.write_all(line.as_bytes()).await?;
    stdin.flush().await
}

/// Whether the group is gone (or the call that ran it was dropped).
fn is_gone(group_gone: &watch::Receiver<bool>) -> bool {
    *group_gone.borrow() || group_gone.has_changed().is_err()
}

/// Resolves once the group is gone (or the call that ran it was dropped).
async fn wait_gone(group_gone: &mut watch::Receiver<bool>) {
    let _ = group_gone.wait_for(|gone| *gone).await;
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use mcp_tasks_engine::{ClientLink, InputKind};
    use tokio_util::sync::CancellationToken;

    use super::*;

    /// Records progress; answers every request with `{"action":"accept"}`.
    #[derive(Default)]
    struct Recorder {
        progress: Mutex<Vec<f64>>,
        asked: Mutex<Vec<Value>>,
    }

    #[async_trait]
    impl ClientLink for Recorder {
        fn progress(&self, progress: Progress) {
            self.progress.lock().unwrap().push(progress.progress);
        }
        fn notify(&self, _method: &str, _params: Value) {}
        async fn request(&self, _kind: InputKind, params: Value) -> Result<Value, ErrorObject> {
            self.asked.lock().unwrap().push(params);
            Ok(json!({"action": "accept"}))
        }
    }

    /// Feeds `text` in reads of `step` bytes; returns the output, the progress values
    /// reported, the questions asked, and what was written to stdin.
    async fn talk(text: &str, step: usize) -> (String, Vec<f64>, Vec<Value>, String) {
        let link = Arc::new(Recorder::default());
        let ctx = Context::plain(CancellationToken::new(), Some(link.clone()));
        let (gone, gone_seen) = watch::channel(false);
        let mut talk = Talk::new("test", ctx, Some(Vec::new()), gone_seen, 1 << 20);
        for chunk in text.as_bytes().chunks(step) {
            talk.feed(chunk).await;
        }
        talk.end_of_stream().await;
        gone.send_replace(true);
        let stdin = String::from_utf8(talk.stdin.take().unwrap()).unwrap();
        let output = talk.output.finish(1 << 20).text();
        let progress = link.progress.lock().unwrap().clone();
        let asked = link.asked.lock().unwrap().clone();
        (output, progress, asked, stdin)
    }

    const MIXED: &str = "one\n@mcp-tasks {\"progress\": 1}\n@mcp-tasks\n@mcp-task\n\n\
        @mcp-tasks {\"elicit\": {\"message\": \"ok?\"}}\n@mcp-tasks {bad\ntwo\n\
        @mcp-tasks {\"progress\": 2, \"total\": 2}";

    #[tokio::test]
    async fn lines_are_split_the_same_whatever_the_reads() {
        for step in [1, 2, 3, 7, 11, MIXED.len()] {
            let (output, progress, asked, stdin) = talk(MIXED, step).await;
            assert_eq!(output, "one\n@mcp-tasks\n@mcp-task\n\ntwo\n", "step {step}");
            assert_eq!(progress, [1.0, 2.0], "step {step}");
            assert_eq!(asked, [json!({"message": "ok?"})], "step {step}");
            assert_eq!(stdin, "{\"action\":\"accept\"}\n", "step {step}");
        }
    }

    #[tokio::test]
    async fn an_unfinished_marker_at_the_end_is_output() {
        let (output, ..) = talk("x\n@mcp-ta", 3).await;
        assert_eq!(output, "x\n@mcp-ta");
    }

    #[tokio::test]
    async fn progress_that_does_not_increase_is_not_reported() {
        let text = "@mcp-tasks {\"progress\": 2}\n@mcp-tasks {\"progress\": 2}\n\
            @mcp-tasks {\"progress\": 1}\n@mcp-tasks {\"progress\": 2.5}\n";
        let (output, progress, ..) = talk(text, text.len()).await;
        assert_eq!(output, "");
        assert_eq!(progress, [2.0, 2.5]);
    }

    #[tokio::test]
    async fn a_marker_line_over_the_cap_is_skipped() {
        let long = format!(
            "a\n@mcp-tasks {{\"status\": \"{}\"}}\n@mcp-tasks {{\"progress\": 1}}\nb\n",
            "x".repeat(MESSAGE_CAP)
        );
        let (output, progress, ..) = talk(&long, CHUNK).await;
        assert_eq!(output, "a\nb\n");
        assert_eq!(progress, [1.0]);
    }

    #[test]
    fn messages_are_parsed_by_their_key() {
        assert_eq!(
            parse(br#"{"progress": 3, "total": 10, "message": "step 3"}"#),
            Ok(Message::Progress(Progress {
                progress: 3.0,
                total: Some(10.0),
                message: Some("step 3".into())
            }))
        );
        assert_eq!(
            parse(br#"{"status": "compiling"}"#),
            Ok(Message::Status("compiling".into()))
        );
        let elicit = json!({"message": "m", "requestedSchema": {"type": "object"}});
        assert_eq!(
            parse(json!({"elicit": elicit}).to_string().as_bytes()),
            Ok(Message::Elicit(elicit.as_object().unwrap().clone()))
        );
    }

    #[test]
    fn bad_messages_are_named() {
        let problem = |json: &str| parse(json.as_bytes()).unwrap_err();
        assert!(problem("{bad").starts_with("invalid JSON: "));
        assert_eq!(problem("[1]"), "a JSON object was expected, not an array");
        assert!(problem("{}").contains("none of the keys"));
        assert!(problem(r#"{"status": "a", "progress": 1}"#).contains("progress, status"));
        assert!(
            problem(r#"{"progress": "3"}"#)
                .starts_with("not a valid progress message: invalid type")
        );
        assert!(problem(r#"{"progress": 3, "totl": 4}"#).contains("unknown field `totl`"));
        assert!(problem(r#"{"elicit": "why?"}"#).starts_with("not a valid elicit message"));
    }

    #[test]
    fn log_lines_and_partial_results_are_events_and_their_mistakes_are_named() {
        let event = |json: &str| parse(json.as_bytes());
        assert_eq!(event(r#"{"log": "built"}"#), Ok(Message::Event(mcp_tasks_engine::LOG_EVENT, json!({"level": "info", "message": "built"}))));
        assert_eq!(
            event(r#"{"log": {"level": "warning", "message": "slow disk"}}"#),
            Ok(Message::Event(mcp_tasks_engine::LOG_EVENT, json!({"level": "warning", "message": "slow disk"})))
        );
        let partial = json!({"content": [{"type": "text", "text": "half"}]});
        assert_eq!(event(&json!({"partial": partial}).to_string()), Ok(Message::Event(mcp_tasks_engine::PARTIAL_EVENT, partial)));
        let problem = |json: &str| parse(json.as_bytes()).unwrap_err();
        assert!(problem(r#"{"log": {"level": "loud", "message": "x"}}"#).contains("is not one of debug, info"), "{}", problem(r#"{"log": {"level": "loud", "message": "x"}}"#));
        assert!(problem(r#"{"log": {"level": "info"}}"#).contains("needs a string `message`"));
        assert!(problem(r#"{"log": 3}"#).contains("a string or an object"));
        assert!(problem(r#"{"log": {"message": "x", "lvl": "info"}}"#).contains("unknown field `lvl`"));
        assert!(problem(r#"{"log": "x", "extra": 1}"#).contains("unknown field `extra`"));
        assert!(problem(r#"{"partial": "half"}"#).contains("a `content` array"));
        assert!(problem(r#"{"partial": {"content": [{"text": "no type"}]}}"#).contains("needs a string `type`"));
        assert!(problem(r#"{"log": "x", "status": "y"}"#).contains("more than one of the keys"));
    }

    #[test]
    fn a_failure_is_answered_as_an_error_action() {
        assert_eq!(
            answer_line(Err(super::super::internal("no"))),
            "{\"action\":\"error\",\"error\":{\"code\":-32603,\"message\":\"no\"}}\n"
        );
    }
}
