//! Answers the server's `elicitation/create`: with `--answer JSON`, by prompting on the
//! terminal (stderr for the questions, stdin for the answers), or by declining.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_client::{ElicitationHandler, RpcError, ServerRequest};
use serde_json::{Map, Value, json};

use crate::remote::Display;

pub(crate) struct TerminalElicitation {
    answer: Option<Value>,
    display: Arc<Display>,
}

impl TerminalElicitation {
    pub(crate) fn new(answer: Option<Value>, display: Arc<Display>) -> TerminalElicitation {
        TerminalElicitation { answer, display }
    }
}

#[async_trait]
impl ElicitationHandler for TerminalElicitation {
    async fn elicit(&self, request: ServerRequest) -> Result<Value, RpcError> {
        let params = request.params;
        let message = params
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)")
            .to_owned();
        if let Some(content) = &self.answer {
            eprintln!("mcp-tasks: the server asks: {message}; answering with --answer");
            return Ok(json!({"action": "accept", "content": content}));
        }
        if params.get("mode").and_then(Value::as_str) == Some("url") {
            let url = params.get("url").and_then(Value::as_str).unwrap_or("?");
            eprintln!(
                "mcp-tasks: the server asks you to open {url} ({message}); declined: URL elicitation is not supported yet"
            );
            return Ok(json!({"action": "decline"}));
        }
        let schema = params
            .get("requestedSchema")
            .cloned()
            .unwrap_or_else(|| json!({}));
        if !std::io::stdin().is_terminal() {
            eprintln!(
                "mcp-tasks: the server asks: {message}; declined, as stdin is not a terminal. \
                 Answer non-interactively with --answer '{}'",
                answer_template(&schema)
            );
            return Ok(json!({"action": "decline"}));
        }
        let display = Arc::clone(&self.display);
        let asked =
            tokio::task::spawn_blocking(move || display.suspend(|| ask_form(&message, &schema)))
                .await;
        match asked {
            Ok(Ok(Some(content))) => Ok(json!({"action": "accept", "content": content})),
            Ok(Ok(None)) => Ok(json!({"action": "cancel"})),
            Ok(Err(err)) => Err(RpcError::internal(format!(
                "cannot read the answer from the terminal: {err}"
            ))),
            Err(err) => Err(RpcError::internal(format!("the prompt failed: {err}"))),
        }
    }
}

/// A sample `--answer` for a form: each property with its type as placeholder.
fn answer_template(schema: &Value) -> String {
    let fields: Vec<String> = properties(schema)
        .map(|(name, property)| format!("{}: <{}>", Value::from(name.as_str()), kind(property)))
        .collect();
    format!("{{{}}}", fields.join(", "))
}

fn properties(schema: &Value) -> impl Iterator<Item = (&String, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// The property's type (the first non-null one of a list).
fn kind(property: &Value) -> &str {
    match property.get("type") {
        Some(Value::String(kind)) => kind,
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null")
            .unwrap_or("string"),
        _ => "string",
    }
}

/// The choices of an enum property: (value, label).
fn choices(property: &Value) -> Vec<(Value, String)> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        let names = property.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .map(|(i, value)| {
                let name = names.and_then(|names| names.get(i)).and_then(Value::as_str);
                (
                    value.clone(),
                    name.map_or_else(|| plain(value), str::to_owned),
                )
            })
            .collect();
    }
    let options = property
        .get("oneOf")
        .or_else(|| property.get("anyOf"))
        .and_then(Value::as_array);
    options
        .into_iter()
        .flatten()
        .filter_map(|option| {
            let value = option.get("const")?.clone();
            let label = option
                .get("title")
                .and_then(Value::as_str)
                .map_or_else(|| plain(&value), str::to_owned);
            Some((value, label))
        })
        .collect()
}

fn plain(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

/// Asks every property of the form; `None` when stdin ends (the user gave up).
fn ask_form(message: &str, schema: &Value) -> std::io::Result<Option<Map<String, Value>>> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut stderr = std::io::stderr().lock();
    writeln!(stderr, "mcp-tasks: the server asks: {message}")?;
    let mut content = Map::new();
    for (name, property) in properties(schema) {
        let is_required = required.contains(&name.as_str());
        match ask_field(&mut stderr, name, property, is_required)? {
            Asked::Value(value) => {
                content.insert(name.clone(), value);
            }
            Asked::Skipped => {}
            Asked::EndOfInput => return Ok(None),
        }
    }
    Ok(Some(content))
}

enum Asked {
    Value(Value),
    Skipped,
    EndOfInput,
}

fn ask_field(
    out: &mut impl std::io::Write,
    name: &str,
    property: &Value,
    required: bool,
) -> std::io::Result<Asked> {
    let title = property
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or(name);
    if let Some(description) = property.get("description").and_then(Value::as_str) {
        writeln!(out, "  {title}: {description}")?;
    }
    let choices = choices(property);
    for (i, (_, label)) in choices.iter().enumerate() {
        writeln!(out, "    {}) {label}", i + 1)?;
    }
    let kind = kind(property);
    let default = property.get("default");
    let hint = match (kind, choices.is_empty()) {
        ("boolean", _) => "y/n".to_owned(),
        (_, false) => format!("1-{}", choices.len()),
        (kind, true) => kind.to_owned(),
    };
    let default_hint = default
        .map(|d| format!(", default {}", plain(d)))
        .unwrap_or_default();
    let optional = if required { "" } else { ", optional" };
    loop {
        write!(out, "  {title} ({hint}{default_hint}{optional}): ")?;
        out.flush()?;
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line)? == 0 {
            writeln!(out)?;
            return Ok(Asked::EndOfInput);
        }
        let line = line.trim();
        if line.is_empty() {
            match (default, required) {
                (Some(default), _) => return Ok(Asked::Value(default.clone())),
                (None, false) => return Ok(Asked::Skipped),
                (None, true) => {
                    writeln!(out, "    an answer is required")?;
                    continue;
                }
            }
        }
        match parse_answer(line, kind, &choices) {
            Ok(value) => return Ok(Asked::Value(value)),
            Err(problem) => writeln!(out, "    {problem}")?,
        }
    }
}

fn parse_answer(line: &str, kind: &str, choices: &[(Value, String)]) -> Result<Value, String> {
    if !choices.is_empty() {
        if let Ok(index) = line.parse::<usize>()
            && let Some((value, _)) = index.checked_sub(1).and_then(|i| choices.get(i))
        {
            return Ok(value.clone());
        }
        return choices
            .iter()
            .find(|(value, label)| plain(value) == line || label == line)
            .map(|(value, _)| value.clone())
            .ok_or_else(|| format!("pick a number from 1 to {}", choices.len()));
    }
    match kind {
        "boolean" => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("answer y or n".to_owned()),
        },
        "integer" => line
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "expected an integer".to_owned()),
        "number" => match serde_json::from_str::<Value>(line) {
            Ok(number @ Value::Number(_)) => Ok(number),
            _ => Err("expected a number".to_owned()),
        },
        "string" => Ok(Value::String(line.to_owned())),
        _ => serde_json::from_str(line).map_err(|err| format!("expected JSON: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_typed_by_the_schema() {
        assert_eq!(parse_answer("Y", "boolean", &[]), Ok(json!(true)));
        assert_eq!(parse_answer("42", "integer", &[]), Ok(json!(42)));
        assert!(parse_answer("4.2", "integer", &[]).is_err());
        assert_eq!(parse_answer("4.2", "number", &[]), Ok(json!(4.2)));
        assert_eq!(parse_answer("42", "string", &[]), Ok(json!("42")));
        let colours = choices(
            &json!({"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g"}]}),
        );
        assert_eq!(parse_answer("2", "string", &colours), Ok(json!("g")));
        assert_eq!(parse_answer("Red", "string", &colours), Ok(json!("r")));
        assert!(parse_answer("3", "string", &colours).is_err());
    }

    #[test]
    fn the_decline_message_shows_a_template_answer() {
        let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": ["integer", "null"]}}});
        assert_eq!(
            answer_template(&schema),
            r#"{"n": <integer>, "ok": <boolean>}"#
        );
    }
}
