//! Answers the server's `elicitation/create`: with `--answer JSON`, by prompting on the
//! terminal (stderr for the questions, stdin for the answers), or by declining.
//!
//! A form asks each property of the requested schema in turn: strings, numbers and
//! integers (with their bounds), booleans (y/n), single-select enums (`enum`, with
//! `enumNames` as labels, or `oneOf`/`anyOf` of `const` and `title`) and multi-select
//! ones (arrays of such `items`, answered as a comma-separated list); a default is taken
//! on an empty line, a required field must be answered. Ctrl-D cancels the form; Ctrl-C
//! leaves it unanswered while the user chooses to cancel the task or detach.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_client::{ElicitationHandler, RpcError, ServerRequest};
use serde_json::{Map, Value, json};

use crate::remote::Display;
use crate::terminal::{self, Read};

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
        let since = terminal::mark();
        let asked = tokio::task::spawn_blocking(move || {
            display.suspend(|| ask_form(&message, &schema, since))
        })
        .await;
        match asked {
            Ok(Ok(Form::Answered(content))) => Ok(json!({"action": "accept", "content": content})),
            Ok(Ok(Form::Cancelled)) => {
                self.display
                    .note("mcp-tasks: question cancelled (the server is told \"cancel\")");
                Ok(json!({"action": "cancel"}))
            }
            // Ctrl-C: the user now chooses between cancelling the task and detaching, and
            // this process ends either way. The question stays unanswered, so that after a
            // detach `tasks wait` asks it again.
            Ok(Ok(Form::Interrupted)) => std::future::pending().await,
            Ok(Err(err)) => Err(RpcError::internal(format!(
                "cannot read the answer from the terminal: {err}"
            ))),
            Err(err) => Err(RpcError::internal(format!("the prompt failed: {err}"))),
        }
    }
}

/// A sample `--answer` for a form: each property with its type (or its choices) as
/// placeholder.
fn answer_template(schema: &Value) -> String {
    let fields: Vec<String> = properties(schema)
        .map(|(name, property)| {
            let values: Vec<String> = choices(property)
                .iter()
                .map(|(value, _)| value.to_string())
                .collect();
            let placeholder = match (kind(property), values.is_empty()) {
                (_, true) => kind(property).to_owned(),
                ("array", false) => format!("[{}]", values.join("|")),
                (_, false) => values.join("|"),
            };
            format!("{}: <{placeholder}>", Value::from(name.as_str()))
        })
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

/// The choices of an enum property, or of the items of a multi-select array: (value,
/// label).
fn choices(property: &Value) -> Vec<(Value, String)> {
    if kind(property) == "array" {
        return property.get("items").map(choices).unwrap_or_default();
    }
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

/// How a form ended.
enum Form {
    Answered(Map<String, Value>),
    /// stdin ended (Ctrl-D).
    Cancelled,
    /// Ctrl-C, or the wait ended meanwhile.
    Interrupted,
}

/// Asks every property of the form, until stdin ends or an interruption comes after
/// `since`.
fn ask_form(message: &str, schema: &Value, since: u64) -> std::io::Result<Form> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut stderr = std::io::stderr().lock();
    writeln!(stderr, "mcp-tasks: the server asks: {message}")?;
    writeln!(
        stderr,
        "  (Enter takes the default; Ctrl-D cancels the question)"
    )?;
    let mut content = Map::new();
    for (name, property) in properties(schema) {
        let is_required = required.contains(&name.as_str());
        match ask_field(&mut stderr, name, property, is_required, since)? {
            Asked::Value(value) => {
                content.insert(name.clone(), value);
            }
            Asked::Skipped => {}
            Asked::EndOfInput => return Ok(Form::Cancelled),
            Asked::Interrupted => return Ok(Form::Interrupted),
        }
    }
    Ok(Form::Answered(content))
}

enum Asked {
    Value(Value),
    Skipped,
    EndOfInput,
    Interrupted,
}

fn ask_field(
    out: &mut impl std::io::Write,
    name: &str,
    property: &Value,
    required: bool,
    since: u64,
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
        ("array", false) => format!("some of 1-{}, comma-separated", choices.len()),
        (_, false) => format!("1-{}", choices.len()),
        (kind, true) => format!("{kind}{}", bounds(property)),
    };
    let default_hint = default
        .map(|d| format!(", default {}", shown_value(d, kind, &choices)))
        .unwrap_or_default();
    let optional = if required { "" } else { ", optional" };
    loop {
        write!(out, "  {title} ({hint}{default_hint}{optional}): ")?;
        out.flush()?;
        let line = match terminal::read_line(since) {
            Read::Line(line) => line,
            Read::Eof => {
                writeln!(out)?;
                return Ok(Asked::EndOfInput);
            }
            Read::Interrupted => {
                writeln!(out)?;
                return Ok(Asked::Interrupted);
            }
        };
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
        match parse_answer(line, kind, &choices).and_then(|value| within(&value, property)) {
            Ok(value) => return Ok(Asked::Value(value)),
            Err(problem) => writeln!(out, "    {problem}")?,
        }
    }
}

/// A default as the user would type it: the label of a choice, y/n for a boolean.
fn shown_value(value: &Value, kind: &str, choices: &[(Value, String)]) -> String {
    if let Some((_, label)) = choices.iter().find(|(choice, _)| choice == value) {
        return label.clone();
    }
    match (kind, value) {
        ("boolean", Value::Bool(true)) => "y".to_owned(),
        ("boolean", Value::Bool(false)) => "n".to_owned(),
        (_, Value::Array(items)) => items
            .iter()
            .map(|item| shown_value(item, "", choices))
            .collect::<Vec<_>>()
            .join(", "),
        _ => plain(value),
    }
}

/// The bounds of a number or string property, for the hint: `, 1 to 10`, `, 3-20 characters`.
fn bounds(property: &Value) -> String {
    let number = |key: &str| property.get(key).filter(|v| v.is_number()).map(plain);
    match kind(property) {
        "number" | "integer" => match (number("minimum"), number("maximum")) {
            (Some(min), Some(max)) => format!(", {min} to {max}"),
            (Some(min), None) => format!(", at least {min}"),
            (None, Some(max)) => format!(", at most {max}"),
            (None, None) => String::new(),
        },
        "string" => {
            let format = property
                .get("format")
                .and_then(Value::as_str)
                .map(|format| format!(", {format}"))
                .unwrap_or_default();
            let length = match (number("minLength"), number("maxLength")) {
                (Some(min), Some(max)) => format!(", {min}-{max} characters"),
                (Some(min), None) => format!(", at least {min} characters"),
                (None, Some(max)) => format!(", at most {max} characters"),
                (None, None) => String::new(),
            };
            format!("{format}{length}")
        }
        _ => String::new(),
    }
}

/// `value` if it keeps to the property's bounds (minimum, maximum, minLength, maxLength,
/// minItems, maxItems); else what is wrong.
fn within(value: &Value, property: &Value) -> Result<Value, String> {
    let bound = |key: &str| property.get(key).and_then(Value::as_f64);
    #[allow(clippy::cast_precision_loss)]
    let size = match value {
        Value::Number(number) => number.as_f64().map(|n| (n, "minimum", "maximum", "")),
        Value::String(text) => Some((
            text.chars().count() as f64,
            "minLength",
            "maxLength",
            " characters",
        )),
        Value::Array(items) => Some((items.len() as f64, "minItems", "maxItems", " choices")),
        _ => None,
    };
    if let Some((size, min_key, max_key, unit)) = size {
        if let Some(min) = bound(min_key)
            && size < min
        {
            return Err(format!("at least {}{unit}", plain(&property[min_key])));
        }
        if let Some(max) = bound(max_key)
            && size > max
        {
            return Err(format!("at most {}{unit}", plain(&property[max_key])));
        }
    }
    Ok(value.clone())
}

fn parse_answer(line: &str, kind: &str, choices: &[(Value, String)]) -> Result<Value, String> {
    if kind == "array" && !choices.is_empty() {
        return line
            .split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(|part| parse_answer(part, "", choices))
            .collect::<Result<Vec<Value>, String>>()
            .map(Value::Array);
    }
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
    fn enums_with_titles_and_multi_select_lists() {
        let named = json!({"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"], "default": "m"});
        let sizes = choices(&named);
        assert_eq!(parse_answer("Small", "string", &sizes), Ok(json!("s")));
        assert_eq!(shown_value(&named["default"], "string", &sizes), "Medium");
        let multi = json!({"type": "array", "items": {"anyOf": [{"const": "a", "title": "Apple"}, {"const": "b", "title": "Banana"}]}});
        let fruit = choices(&multi);
        assert_eq!(
            parse_answer("2, Apple", "array", &fruit),
            Ok(json!(["b", "a"]))
        );
        assert!(parse_answer("1, 9", "array", &fruit).is_err());
        assert_eq!(shown_value(&json!(true), "boolean", &[]), "y");
    }

    #[test]
    fn answers_outside_the_bounds_are_asked_again() {
        let age = json!({"type": "integer", "minimum": 0, "maximum": 150});
        assert_eq!(within(&json!(42), &age), Ok(json!(42)));
        assert_eq!(within(&json!(200), &age), Err("at most 150".to_owned()));
        let name = json!({"type": "string", "minLength": 2, "format": "email"});
        assert_eq!(
            within(&json!("x"), &name),
            Err("at least 2 characters".to_owned())
        );
        assert_eq!(bounds(&name), ", email, at least 2 characters");
        assert_eq!(bounds(&age), ", 0 to 150");
    }

    #[test]
    fn fields_are_asked_in_the_order_the_server_listed_them() {
        // As the message arrives: text, not a map built in code.
        let schema: Value = serde_json::from_str(
            r#"{"type": "object", "properties": {"name": {"type": "string"}, "email": {"type": "string"}, "age": {"type": "integer"}}}"#,
        )
        .unwrap();
        let names: Vec<&str> = properties(&schema).map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["name", "email", "age"]);
    }

    #[test]
    fn the_decline_message_shows_a_template_answer() {
        let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": ["integer", "null"]}}});
        assert_eq!(
            answer_template(&schema),
            r#"{"ok": <boolean>, "n": <integer>}"#
        );
        let schema = json!({"type": "object", "properties": {"size": {"type": "string", "enum": ["s", "m"]}}});
        assert_eq!(answer_template(&schema), r#"{"size": <"s"|"m">}"#);
    }
}
