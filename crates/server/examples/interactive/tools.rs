//! The tools of the TypeScript SDK's interactive task example (`simpleTaskInteractive.js` in
//! `@modelcontextprotocol/sdk` 1.32.2, `dist/esm/examples/server/`), with the same names,
//! input schemas, task support (`required`), requests to the client and result texts, built
//! with the public library API only:
//!
//! - `confirm_delete` (`filename`, default `unknown.txt`): asks `Are you sure you want to
//!   delete '<filename>'?` through `elicitation/create` (a form with one required boolean,
//!   `confirm`); answers `Deleted '<filename>'` when the user accepts with `confirm: true`,
//!   else `Deletion cancelled`.
//! - `write_haiku` (`topic`, default `nature`): asks the client's model for
//!   `Write a haiku about <topic>` through `sampling/createMessage` (50 tokens); answers
//!   `Haiku:\n<the text>` (`No response` when the answer has no text content).
//!
//! Inside a task each question makes the task `input_required` until the client answers it
//! (delivered while the client waits in `tasks/result`). A question the client cannot answer
//! (it did not declare the capability) or that fails ends the task `failed`, with the result
//! `Error: <message>` and `isError: true`, as the reference does.
//!
//! Not an example of its own (a subdirectory without `main.rs`): `examples/interactive.rs`
//! serves it and the test binary (`tests/it/interactive.rs`) drives it over a pipe.

use mcp_tasks_engine::{Context, Engine, Outcome};
use mcp_tasks_server::{BuildError, Server, TaskMode, ToolDef, handler_fn};
use serde_json::{Value, json};

/// The reference server's name in `serverInfo` (its version is `1.0.0`).
pub(crate) const SERVER_NAME: &str = "simple-task-interactive";

/// The interactive example server over `engine`.
///
/// # Errors
/// Only if a tool's input schema did not compile, which they do not.
pub(crate) fn server(engine: Engine) -> Result<Server, BuildError> {
    Server::builder(engine)
        .name(SERVER_NAME)
        .version("1.0.0")
        .tool(confirm_delete())
        .tool(write_haiku())
        .build()
}

fn confirm_delete() -> ToolDef {
    ToolDef::new(
        "confirm_delete",
        "Asks for confirmation before deleting (demonstrates elicitation)",
        string_argument("filename"),
        handler_fn(|arguments, ctx| async move {
            let filename = arguments["filename"]
                .as_str()
                .unwrap_or("unknown.txt")
                .to_owned();
            ask_to_delete(&filename, &ctx).await
        }),
    )
    .task_mode(TaskMode::Required)
}

fn write_haiku() -> ToolDef {
    ToolDef::new(
        "write_haiku",
        "Asks LLM to write a haiku (demonstrates sampling)",
        string_argument("topic"),
        handler_fn(|arguments, ctx| async move {
            let topic = arguments["topic"].as_str().unwrap_or("nature").to_owned();
            haiku(&topic, &ctx).await
        }),
    )
    .task_mode(TaskMode::Required)
}

async fn ask_to_delete(filename: &str, ctx: &Context) -> Outcome {
    let params = json!({
        "message": format!("Are you sure you want to delete '{filename}'?"),
        "requestedSchema": {
            "type": "object",
            "properties": {"confirm": {"type": "boolean"}},
            "required": ["confirm"]
        },
        "mode": "form"
    });
    match ctx.elicit(params).await {
        Ok(answer) => {
            let confirmed = answer["action"] == "accept" && answer["content"]["confirm"] == true;
            text_result(if confirmed {
                format!("Deleted '{filename}'")
            } else {
                "Deletion cancelled".to_owned()
            })
        }
        Err(error) => error_result(&error.to_string()),
    }
}

async fn haiku(topic: &str, ctx: &Context) -> Outcome {
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": format!("Write a haiku about {topic}")}}],
        "maxTokens": 50
    });
    match ctx.sample(params).await {
        Ok(answer) => {
            // As the reference: only a single text content counts (not an array of blocks).
            let haiku = answer["content"]["text"].as_str().unwrap_or("No response");
            text_result(format!("Haiku:\n{haiku}"))
        }
        Err(error) => error_result(&error.to_string()),
    }
}

/// `{"type": "object", "properties": {NAME: {"type": "string"}}}`: one optional string.
fn string_argument(name: &str) -> Value {
    json!({"type": "object", "properties": {name: {"type": "string"}}})
}

fn text_result(text: String) -> Outcome {
    Outcome::Result(json!({"content": [{"type": "text", "text": text}]}))
}

/// A failed question: a result with `isError: true` (the task ends `failed`).
fn error_result(message: &str) -> Outcome {
    Outcome::Result(
        json!({"content": [{"type": "text", "text": format!("Error: {message}")}], "isError": true}),
    )
}
