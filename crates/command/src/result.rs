//! What a finished call returns: its `CallToolResult` (stdout as text or as JSON, the text
//! of a failure, notes on cut output) and its final status message.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use jsonschema::Validator;
use mcp_tasks_config::{OutputFormat, ToolConfig};
use mcp_tasks_engine::Outcome;
use nix::sys::signal::Signal;
use serde_json::{Value, json};

use crate::{Tail, json_kind};

/// The most schema violations a result lists.
const VIOLATIONS_SHOWN: usize = 10;

/// How the wait for the command ended.
pub(super) enum End {
    Exited(std::io::Result<ExitStatus>),
    Cancelled,
    TimedOut,
}

/// What it took to end the process group once the wait was over.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Ending {
    /// Nothing: the leader had exited and the group was empty.
    Empty,
    /// SIGTERM.
    Terminated,
    /// SIGTERM, then SIGKILL after the grace.
    Killed,
}

/// The command's output, each stream's tail.
pub(super) struct Streams {
    pub(super) stdout: Tail,
    pub(super) stderr: Tail,
}

/// A call whose process group is gone, with everything its result is made of.
pub(super) struct Finished<'a> {
    pub(super) tool: &'a ToolConfig,
    /// The compiled `output_schema`.
    pub(super) output_validator: Option<&'a Validator>,
    pub(super) end: End,
    pub(super) ending: Ending,
    pub(super) streams: Streams,
}

impl Finished<'_> {
    /// The final status message: `exited (code N)`, `killed (SIGTERM)`, `timed out after
    /// 30s`. None for a cancelled call, whose task is already settled.
    pub(super) fn status_message(&self) -> Option<String> {
        match &self.end {
            End::Cancelled => None,
            End::Exited(Ok(status)) => Some(match (status.code(), status.signal()) {
                (Some(code), _) => format!("exited (code {code})"),
                (None, Some(signal)) => format!("killed ({})", signal_name(signal)),
                (None, None) => format!("ended ({status})"),
            }),
            End::Exited(Err(err)) => Some(format!("could not wait for the command: {err}")),
            End::TimedOut => Some(format!("timed out after {}", self.timeout())),
        }
    }

    /// The call's `CallToolResult`.
    pub(super) fn outcome(self) -> Outcome {
        let headline = match &self.end {
            End::Exited(Ok(status)) if status.success() => {
                return match self.tool.output {
                    OutputFormat::Json => self.json(),
                    OutputFormat::Text => self.text(),
                };
            }
            End::Exited(Ok(status)) => describe_exit(*status),
            End::Exited(Err(err)) => format!("could not wait for the command: {err}"),
            End::Cancelled => "cancelled".to_owned(),
            End::TimedOut => self.timed_out(),
        };
        self.failure(headline)
    }

    /// The tool's timeout, as humantime writes it.
    fn timeout(&self) -> String {
        humantime::format_duration(self.tool.timeout.unwrap_or_default()).to_string()
    }

    /// "timed out after 30s", and the signals the group got.
    fn timed_out(&self) -> String {
        let after = format!("timed out after {}", self.timeout());
        match self.ending {
            Ending::Empty => after,
            Ending::Terminated => format!("{after}; the process group got SIGTERM"),
            Ending::Killed => format!(
                "{after}; the process group got SIGTERM, then SIGKILL after the {} grace",
                humantime::format_duration(self.tool.kill_grace)
            ),
        }
    }

    /// Text output: stdout, then a note if some of it was cut.
    fn text(&self) -> Outcome {
        let stdout = &self.streams.stdout;
        let mut texts = vec![stdout.text()];
        texts.extend(stdout.cut_note("stdout"));
        tool_result(false, texts)
    }

    /// JSON output: stdout as `structuredContent` and as text, or an error result saying
    /// why it cannot be.
    fn json(&self) -> Outcome {
        let stdout = &self.streams.stdout;
        if stdout.cut > 0 {
            return self.failure(format!(
                "stdout is not one JSON object: it is longer than max_output ({} bytes) and \
                 was cut",
                self.tool.max_output
            ));
        }
        let object = match serde_json::from_slice::<Value>(&stdout.bytes) {
            Ok(Value::Object(object)) => Value::Object(object),
            Ok(other) => {
                return self.failure(format!(
                    "stdout is {}, not a JSON object (structuredContent must be an object)",
                    json_kind(&other)
                ));
            }
            Err(err) => return self.failure(format!("stdout is not valid JSON: {err}")),
        };
        if let Some(validator) = self.output_validator {
            let violations: Vec<String> = validator
                .iter_errors(&object)
                .map(|error| {
                    let at = error.instance_path().to_string();
                    format!(
                        "- at {}: {error} (rule `{}` at `{}`)",
                        if at.is_empty() {
                            "the top".to_owned()
                        } else {
                            format!("`{at}`")
                        },
                        error.kind().keyword(),
                        error.schema_path()
                    )
                })
                .collect();
            if !violations.is_empty() {
                let mut headline = "stdout does not match output_schema:".to_owned();
                for violation in violations.iter().take(VIOLATIONS_SHOWN) {
                    headline.push('\n');
                    headline.push_str(violation);
                }
                if violations.len() > VIOLATIONS_SHOWN {
                    let more = violations.len() - VIOLATIONS_SHOWN;
                    headline.push_str(&format!("\n- and {more} more"));
                }
                return self.failure(headline);
            }
        }
        Outcome::Result(json!({
            "content": [{"type": "text", "text": stdout.text()}],
            "structuredContent": object,
            "isError": false,
        }))
    }

    /// An error result: the headline, then stderr and stdout, if any, then notes on what
    /// was cut of them.
    fn failure(&self, headline: String) -> Outcome {
        let Streams { stdout, stderr } = &self.streams;
        let mut text = headline;
        if !stderr.bytes.is_empty() {
            text.push_str("\n--- stderr ---\n");
            text.push_str(&stderr.text());
        }
        if !stdout.bytes.is_empty() {
            text.push_str("\n--- stdout ---\n");
            text.push_str(&stdout.text());
        }
        let mut texts = vec![text];
        texts.extend(stderr.cut_note("stderr"));
        texts.extend(stdout.cut_note("stdout"));
        tool_result(true, texts)
    }
}

/// A `CallToolResult` with a text item for each of `texts`.
pub(super) fn tool_result(is_error: bool, texts: Vec<String>) -> Outcome {
    let content: Vec<Value> = texts
        .into_iter()
        .map(|text| json!({"type": "text", "text": text}))
        .collect();
    Outcome::Result(json!({"content": content, "isError": is_error}))
}

/// "command exited with code N" or "command was killed by signal SIGX".
fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("command exited with code {code}");
    }
    match status.signal() {
        Some(signal) => format!("command was killed by signal {}", signal_name(signal)),
        None => format!("command ended with {status}"),
    }
}

/// `SIGTERM` for 15; the number for a signal nix does not know.
fn signal_name(signal: i32) -> String {
    match Signal::try_from(signal) {
        Ok(signal) => signal.as_str().to_owned(),
        Err(_) => signal.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn status_messages_name_the_code_the_signal_or_the_timeout() {
        let tool = ToolConfig {
            timeout: Some(std::time::Duration::from_secs(30)),
            ..ToolConfig::new("t", vec!["true".into()])
        };
        let status = |end| {
            Finished {
                tool: &tool,
                output_validator: None,
                end,
                ending: Ending::Empty,
                streams: Streams {
                    stdout: Tail::default(),
                    stderr: Tail::default(),
                },
            }
            .status_message()
        };
        let exited = |raw| End::Exited(Ok(ExitStatus::from_raw(raw)));
        assert_eq!(status(exited(0)).as_deref(), Some("exited (code 0)"));
        assert_eq!(status(exited(3 << 8)).as_deref(), Some("exited (code 3)"));
        assert_eq!(status(exited(15)).as_deref(), Some("killed (SIGTERM)"));
        assert_eq!(status(exited(9)).as_deref(), Some("killed (SIGKILL)"));
        assert_eq!(
            status(End::TimedOut).as_deref(),
            Some("timed out after 30s")
        );
        assert_eq!(status(End::Cancelled), None);
    }
}
