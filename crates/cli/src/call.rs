//! `mcp-tasks tools` and `mcp-tasks call`: list the tools, call one (as a task when it
//! allows), with `--arg` values typed by the tool's input schema.

use std::sync::Arc;

use anyhow::{Context as _, bail};
use mcp_tasks_client::ledger::new_idempotency_key;
use mcp_tasks_client::protocol::CallToolResult;
use mcp_tasks_client::{Called, Client, ClientError, Era, ServerNotification, TaskHandle, TaskMode, ToolInfo};
use serde_json::{Map, Value, json};

use crate::args::{CallArgs, ToolsArgs};
use crate::remote::{self, COMPLETED, Display};

pub(crate) async fn tools(args: ToolsArgs) -> anyhow::Result<u8> {
    let display = Display::new(args.remote.json);
    let client = remote::connect(&args.remote, None, &display).await?;
    let tools = client.list_tools().await.context("listing the tools")?;
    let era = client.era();
    if args.remote.json {
        println!("{}", json!({ "tools": tools, "era": era.revision() }));
        return Ok(COMPLETED);
    }
    if era == Era::Modern {
        // Tools declare no task support in this era: no column for it.
        eprintln!(
            "mcp-tasks: the server speaks MCP 2026-07-28: it decides per call whether a call becomes a task"
        );
    }
    let rows: Vec<Vec<String>> = tools
        .iter()
        .map(|tool| {
            let description = tool.description.as_deref().unwrap_or("").lines().next().unwrap_or("");
            let mut row = vec![tool.name.clone()];
            if era != Era::Modern {
                row.push(as_task_in_words(tool.task_mode.as_str()).to_owned());
            }
            row.extend([arguments_of(&tool.input_schema), description.to_owned()]);
            row
        })
        .collect();
    if era == Era::Modern {
        remote::print_table(&["TOOL", "ARGUMENTS", "DESCRIPTION"], &rows);
    } else {
        remote::print_table(&["TOOL", "AS A TASK", "ARGUMENTS", "DESCRIPTION"], &rows);
    }
    Ok(COMPLETED)
}

/// A 2025-11-25 tool's `execution.taskSupport`, in words: whether a call of it runs as a task.
fn as_task_in_words(support: &str) -> &str {
    match support {
        "required" => "always",
        "optional" => "if asked",
        "forbidden" => "never",
        other => other,
    }
}

/// A tool's arguments as `tools` shows them: each property of its input schema with its type,
/// `?` after one not required (`seconds: number, note?: string`), or `-` for none.
fn arguments_of(schema: &Value) -> String {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return "-".to_owned() };
    if properties.is_empty() {
        return "-".to_owned();
    }
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).map(|names| names.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    properties
        .iter()
        .map(|(name, property)| {
            let optional = if required.contains(&name.as_str()) { "" } else { "?" };
            match property.get("type").and_then(Value::as_str) {
                Some(kind) => format!("{name}{optional}: {kind}"),
                None => format!("{name}{optional}"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) async fn call(args: CallArgs) -> anyhow::Result<u8> {
    let display = Display::new(args.remote.json);
    let client = remote::connect(&args.remote, Some(&args.answer), &display).await?;
    let outcome = call_on(&client, &args, &display).await;
    remote::close(client, &args.remote.connect).await;
    outcome
}

async fn call_on(client: &Client, args: &CallArgs, display: &Arc<Display>) -> anyhow::Result<u8> {
    let json = args.remote.json;
    let tools = client.list_tools().await.context("listing the tools")?;
    let Some(tool) = tools.iter().find(|tool| tool.name == args.tool) else {
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        bail!(
            "the server has no tool {:?} (it has: {})",
            args.tool,
            names.join(", ")
        );
    };
    let arguments = Value::Object(arguments(tool, args.args.as_ref(), &args.arg)?);
    let as_task = client.era() == Era::Modern
        || (client.server_runs_tool_tasks() && tool.task_mode != TaskMode::Forbidden);
    if !as_task {
        if args.detach {
            bail!(
                "--detach: tool {:?} does not run as a task on this server; call it without --detach",
                tool.name
            );
        }
        let result = client
            .call_tool(&tool.name, arguments)
            .await
            .with_context(|| format!("calling {}", tool.name))?;
        return Ok(remote::print_result(&result, json, Era::Legacy));
    }
    // Exactly once: the call is recorded with a fresh idempotency key before it is sent, so
    // that a CLI killed before the answer comes can send it again (`tasks wait KEY`) and get
    // the one task the server made of it.
    let tracker = crate::ledger::Tracker::open(&args.ledger, &args.remote.connect);
    let key = new_idempotency_key();
    if let Some(tracker) = &tracker {
        tracker.submit(&key, &tool.name, &arguments).await;
    }
    let notifications = client.notifications();
    let called = if client.era() == Era::Modern {
        // 2026-07-28: the server decides whether the call becomes a task.
        match modern_call(client, &tool.name, arguments.clone(), &key).await {
            Ok(Ok(called)) => Ok(called),
            // Abandoned before a task was shown: the submission stays, `tasks wait KEY`
            // sends the call again and gets the task the server may have made of it.
            Ok(Err(status)) => {
                if tracker.is_some() {
                    eprintln!("mcp-tasks: to pick the call up again: mcp-tasks tasks wait {key}");
                }
                return Ok(status);
            }
            Err(err) => Err(err),
        }
    } else {
        client.call_with_key(&tool.name, arguments.clone(), &key).await.with_context(|| format!("calling {}", tool.name))
    };
    let called = match called {
        Ok(called) => called,
        Err(err) => {
            // Refused (the call made nothing): no task to come back for.
            if let (Some(tracker), true) = (&tracker, refused(&err)) {
                tracker.settle(&key).await;
            }
            return Err(err);
        }
    };
    let handle = match called {
        Called::Result(result) => {
            if let Some(tracker) = &tracker {
                tracker.settle(&key).await;
            }
            if args.detach {
                return Ok(answered_at_once(&result, &tool.name, json));
            }
            return Ok(remote::print_result(&result, json, client.era()));
        }
        Called::Task(handle) => handle,
    };
    follow(handle, &tool.name, &arguments, tracker.map(|tracker| (tracker, key)), notifications, args, display).await
}

/// Whether a call's error means the server refused it (nothing was created), rather than
/// an answer that was lost.
fn refused(err: &anyhow::Error) -> bool {
    matches!(err.downcast_ref::<ClientError>(), Some(ClientError::Rpc { .. } | ClientError::Http { .. }))
}

/// A task the call made: recorded in the ledger, then printed (`--detach`) or driven to
/// its end.
async fn follow(
    handle: TaskHandle,
    tool: &str,
    arguments: &Value,
    tracker: Option<(crate::ledger::Tracker, String)>,
    notifications: tokio::sync::broadcast::Receiver<ServerNotification>,
    args: &CallArgs,
    display: &Arc<Display>,
) -> anyhow::Result<u8> {
    let json = args.remote.json;
    let era = handle.era();
    // Recorded before anything waits: a process killed from here on leaves the task in
    // the ledger, for `tasks pending` and `tasks wait ID`; then its submission goes.
    let mut recorded = false;
    if let Some((tracker, key)) = &tracker {
        let status = handle.last_seen().map(|task| task.status);
        recorded = tracker
            .record(handle.id(), tool, arguments, status, era)
            .await;
        if recorded {
            tracker.settle(key).await;
        }
    }
    let tracker = tracker.map(|(tracker, _)| tracker);
    let handle = match &tracker {
        Some(tracker) => tracker.remember(handle),
        None => handle,
    };
    if args.detach {
        match handle.last_seen() {
            Some(task) if json => remote::print_task(&task, true, era),
            _ => println!("{}", handle.id()),
        }
        return Ok(COMPLETED);
    }
    let waiting = crate::wait::Waiting {
        display,
        json,
        tracker: tracker.as_ref(),
        notifications,
        resume: crate::wait::resume_command(
            handle.id(),
            &args.remote.connect,
            &args.ledger,
            recorded,
        ),
        stdio: args.remote.connect.cmd.is_some(),
        again: Some(crate::wait::Again { server: &args.remote, answer: Some(&args.answer) }),
        lines: args.follow,
    };
    crate::wait::drive(&handle, waiting).await
}

/// A 2026-07-28 `tools/call`, its rounds answered. Ctrl-C before the server made a task of
/// it (while it answers inline, or at a round's question) abandons the call: there is no
/// task to detach from yet. `Err(status)`: the call ended without a result (abandoned, or a
/// question this run could not answer), said on stderr.
async fn modern_call(client: &Client, tool: &str, arguments: Value, key: &str) -> anyhow::Result<Result<Called, u8>> {
    let mut interrupts = crate::terminal::listen_for_ctrl_c().context("listening for Ctrl-C")?;
    let call = client.call_with_key(tool, arguments, key);
    tokio::pin!(call);
    let called = tokio::select! {
        called = &mut call => called,
        changed = interrupts.changed() => match changed {
            Ok(()) => {
                crate::terminal::abandon_prompts();
                eprintln!(
                    "mcp-tasks: interrupted: the call of {tool} is abandoned. It had not become a task (in MCP \
                     2026-07-28 the server decides, and asks a call's first questions before it makes one), so \
                     there is no task to detach from or cancel; a question left open is dropped by the server \
                     when its wait for the answer runs out"
                );
                return Ok(Err(remote::CANCELLED));
            }
            Err(_) => call.await,
        },
    };
    match called {
        Ok(called) => Ok(Ok(called)),
        Err(ClientError::InputUnanswered { method, message }) => {
            eprintln!(
                "mcp-tasks: the server asked {method} before answering the call of {tool}, and this run could \
                 not answer: {message}. The call is abandoned (MCP 2026-07-28 has no way to send the server an \
                 error for a question); rerun it with {}",
                crate::wait::answering(&method)
            );
            Ok(Err(remote::FAILED))
        }
        Err(err) => Err(anyhow::Error::new(err).context(format!("calling {tool}"))),
    }
}

/// `--detach` of a call the server answered at once (2026-07-28: the server decides): the
/// tool ran to its end and there is no task. Its result is printed all the same (nothing
/// is lost), and the exit status is 2: what was asked for, a task id, cannot be given.
fn answered_at_once(result: &CallToolResult, tool: &str, json: bool) -> u8 {
    eprintln!(
        "mcp-tasks: --detach: the server answered the call of {tool} at once, without making a task (in MCP \
         2026-07-28 the server decides which calls become tasks), so there is no task id to print: the tool \
         ran to its end and its result follows"
    );
    remote::print_result(result, json, Era::Modern);
    remote::USAGE
}

/// The call's arguments: `--args`, then each `--arg` typed by the tool's input schema.
fn arguments(
    tool: &ToolInfo,
    args: Option<&Value>,
    pairs: &[String],
) -> anyhow::Result<Map<String, Value>> {
    let mut arguments = match args {
        Some(Value::Object(map)) => map.clone(),
        Some(other) => bail!("--args must be a JSON object, not {other}"),
        None => Map::new(),
    };
    for pair in pairs {
        let Some((key, raw)) = pair.split_once('=') else {
            bail!("--arg {pair:?}: write it KEY=VALUE");
        };
        let property = tool
            .input_schema
            .get("properties")
            .and_then(|properties| properties.get(key));
        let value = typed(raw, property)
            .with_context(|| format!("--arg {pair:?} for tool {:?}", tool.name))?;
        arguments.insert(key.to_owned(), value);
    }
    Ok(arguments)
}

/// `raw` as the type the schema property gives it; JSON (or else a string) when it gives
/// none.
fn typed(raw: &str, property: Option<&Value>) -> anyhow::Result<Value> {
    let kind = match property.and_then(|property| property.get("type")) {
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|kind| *kind != "null"),
        _ => None,
    };
    let parsed = serde_json::from_str::<Value>(raw);
    Ok(match kind {
        Some("string") => Value::String(raw.to_owned()),
        Some("integer") => match raw.parse::<i64>() {
            Ok(n) => Value::from(n),
            Err(_) => bail!("the tool's schema wants an integer, not {raw:?}"),
        },
        Some("number") => match parsed {
            Ok(number @ Value::Number(_)) => number,
            _ => bail!("the tool's schema wants a number, not {raw:?}"),
        },
        Some("boolean") => match raw {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => bail!("the tool's schema wants true or false, not {raw:?}"),
        },
        Some(kind @ ("object" | "array" | "null")) => match parsed {
            Ok(value) if json_kind(&value) == kind => value,
            _ => bail!("the tool's schema wants a JSON {kind}, not {raw:?}"),
        },
        _ => parsed.unwrap_or_else(|_| Value::String(raw.to_owned())),
    })
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool() -> ToolInfo {
        ToolInfo::new(
            "t",
            json!({"type": "object", "properties": {
                "text": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"},
                "flag": {"type": "boolean"}, "list": {"type": "array"}, "maybe": {"type": ["integer", "null"]}
            }}),
        )
    }

    fn pairs(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| (*item).to_owned()).collect()
    }

    #[test]
    fn the_arguments_column_names_each_property_its_type_and_whether_it_is_required() {
        let schema = json!({"type": "object", "properties": {"seconds": {"type": "number"}, "note": {"type": "string"}, "any": {}},
            "required": ["seconds"]});
        assert_eq!(super::arguments_of(&schema), "seconds: number, note?: string, any?");
        assert_eq!(super::arguments_of(&json!({"type": "object"})), "-");
    }

    #[test]
    fn arg_values_take_the_schema_type() {
        let got = arguments(
            &tool(),
            None,
            &pairs(&[
                "text=42",
                "n=7",
                "x=2.5",
                "flag=true",
                "list=[1,2]",
                "maybe=3",
                "free={\"a\":1}",
                "word=hi",
            ]),
        )
        .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"text": "42", "n": 7, "x": 2.5, "flag": true, "list": [1, 2], "maybe": 3, "free": {"a": 1}, "word": "hi"})
        );
    }

    #[test]
    fn values_that_do_not_fit_are_refused_before_the_call() {
        for bad in ["n=1.5", "x=many", "flag=yes", "list={}", "novalue"] {
            assert!(
                arguments(&tool(), None, &pairs(&[bad])).is_err(),
                "{bad} accepted"
            );
        }
    }

    #[test]
    fn arg_wins_over_args() {
        let got = arguments(
            &tool(),
            Some(&json!({"n": 1, "text": "a"})),
            &pairs(&["n=2"]),
        )
        .unwrap();
        assert_eq!(Value::Object(got), json!({"n": 2, "text": "a"}));
    }
}
