//! Answers the server's `sampling/createMessage`: through `--sampling-cmd CMD` (the
//! request's params as JSON on CMD's stdin, its stdout the answer), or by declining with a
//! JSON-RPC error that says how to answer. The CLI declares the `sampling` capability
//! either way, so that a server can ask and the user learns why the request failed.

use std::process::Stdio;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_client::{RpcError, SamplingHandler, ServerRequest};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

use crate::remote::Display;

/// The JSON-RPC error code of a declined sampling request (the spec's "user rejected").
const DECLINED: i64 = -1;

/// `sampling/createMessage` handled by `--sampling-cmd` (or declined without it).
pub(crate) struct CommandSampling {
    /// The command's words (split like a shell would, run without one); `None`: decline.
    argv: Option<Vec<String>>,
    display: Arc<Display>,
}

impl CommandSampling {
    /// `command` is the `--sampling-cmd` text; an error if it cannot be split into words.
    pub(crate) fn new(
        command: Option<&str>,
        display: Arc<Display>,
    ) -> anyhow::Result<CommandSampling> {
        let argv = match command {
            None => None,
            Some(command) => {
                let words = shlex::split(command)
                    .ok_or_else(|| anyhow::anyhow!("--sampling-cmd {command:?}: unclosed quote"))?;
                if words.is_empty() {
                    anyhow::bail!("--sampling-cmd is empty");
                }
                Some(words)
            }
        };
        Ok(CommandSampling { argv, display })
    }
}

#[async_trait]
impl SamplingHandler for CommandSampling {
    async fn create_message(&self, request: ServerRequest) -> Result<Value, RpcError> {
        let Some(argv) = &self.argv else {
            self.display.note(
                "mcp-tasks: the server asks for a model's answer (sampling/createMessage); \
                 declined: rerun with --sampling-cmd CMD to answer through CMD",
            );
            return Err(RpcError::new(
                DECLINED,
                "the user's client (mcp-tasks) declined sampling: it answers sampling \
                 requests only when run with --sampling-cmd CMD",
            ));
        };
        let name = program_name(&argv[0]);
        self.display.note(&format!(
            "mcp-tasks: the server asks for a model's answer; asking --sampling-cmd {name}"
        ));
        match run(argv, &request.params).await {
            Ok(output) => answer(&output, &name).map_err(|problem| {
                self.display.note(&format!(
                    "mcp-tasks: --sampling-cmd {name}: {problem}; the server gets an error"
                ));
                RpcError::internal(format!("the client's --sampling-cmd {name} {problem}"))
            }),
            Err(problem) => {
                self.display.note(&format!(
                    "mcp-tasks: --sampling-cmd {name}: {problem}; the server gets an error"
                ));
                Err(RpcError::internal(format!(
                    "the client's --sampling-cmd {name}: {problem}"
                )))
            }
        }
    }
}

/// The file name of a program path (`/usr/bin/llm` → `llm`).
fn program_name(program: &str) -> String {
    std::path::Path::new(program).file_name().map_or_else(
        || program.to_owned(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// Runs the command with `params` on its stdin; its stdout when it exits 0. Its stderr
/// goes to ours.
async fn run(argv: &[String], params: &Value) -> Result<String, String> {
    let mut child = tokio::process::Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| format!("cannot start {:?}: {err}", argv[0]))?;
    if let Some(mut stdin) = child.stdin.take() {
        let mut input = params.to_string();
        input.push('\n');
        // A command that does not read its stdin is fine: a broken pipe is not an error.
        let _ = stdin.write_all(input.as_bytes()).await;
        drop(stdin);
    }
    let output = child
        .wait_with_output()
        .await
        .map_err(|err| format!("waiting for it: {err}"))?;
    if !output.status.success() {
        return Err(format!("failed ({})", output.status));
    }
    String::from_utf8(output.stdout).map_err(|_| "printed something that is not UTF-8".to_owned())
}

/// The `CreateMessageResult` a command printed: its JSON object (with `role` and `model`
/// filled in when missing), or plain text as the text of an assistant message.
fn answer(output: &str, name: &str) -> Result<Value, String> {
    let text = output.trim();
    if text.is_empty() {
        return Err("printed nothing".to_owned());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(mut result)) => {
            let content_ok = match result.get("content") {
                Some(Value::Object(block)) => block.get("type").is_some_and(Value::is_string),
                Some(Value::Array(blocks)) => {
                    !blocks.is_empty()
                        && blocks
                            .iter()
                            .all(|b| b.get("type").is_some_and(Value::is_string))
                }
                _ => false,
            };
            if !content_ok {
                return Err("printed a JSON object without a \"content\" block (a CreateMessageResult needs \
                            {\"role\": \"assistant\", \"content\": {\"type\": \"text\", \"text\": …}, \"model\": …})"
                    .to_owned());
            }
            result.entry("role").or_insert_with(|| json!("assistant"));
            result.entry("model").or_insert_with(|| json!(name));
            Ok(Value::Object(result))
        }
        // Plain text (or any other JSON, e.g. a string): the text of the answer.
        _ => {
            let text = match serde_json::from_str::<Value>(text) {
                Ok(Value::String(inner)) => inner,
                _ => output.trim_end_matches(['\n', '\r']).to_owned(),
            };
            Ok(
                json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": name}),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_becomes_an_assistant_text_message() {
        assert_eq!(
            answer("Leaves fall\nsoftly\n", "llm"),
            Ok(
                json!({"role": "assistant", "content": {"type": "text", "text": "Leaves fall\nsoftly"}, "model": "llm"})
            )
        );
    }

    #[test]
    fn a_create_message_result_is_kept_and_completed() {
        let got = answer(
            r#"{"content": {"type": "text", "text": "hi"}, "model": "m1", "stopReason": "endTurn"}"#,
            "llm",
        );
        assert_eq!(
            got,
            Ok(
                json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m1", "stopReason": "endTurn"})
            )
        );
    }

    #[test]
    fn empty_output_or_an_object_without_content_is_refused() {
        assert!(answer("  \n", "llm").is_err());
        assert!(
            answer(r#"{"text": "hi"}"#, "llm")
                .unwrap_err()
                .contains("content")
        );
    }
}
