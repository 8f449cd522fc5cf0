//! The conformance fixture: every tool, resource, resource template, prompt and completion
//! that the official conformance suite's 2025-11-25 server scenarios call
//! (`@modelcontextprotocol/conformance`, see `shared/reference/peers-and-conformance.md` §2.4),
//! with the behaviour of the suite's reference server (`everything-server.ts`), built with the
//! public library API only; and, in `modern.rs`, the tools its 2026-07-28 server scenarios
//! call (the `tasks-*`, `input-required-result-*`, `server-stateless` and header scenarios;
//! `interop/conformance-2026.md` has the table). One fixture serves both eras.
//!
//! This file is not an example of its own (it sits in a subdirectory without `main.rs`). It is
//! included with `#[path]` by `examples/conformance_server.rs`, which serves it, and by the
//! test binary (`tests/it/conformance_fixture.rs`), which drives it over a pipe; so the
//! server the suite sees is the one the tests check, and the library gets no test-only API.
//!
//! Differences from the reference, on purpose: `test_elicitation` asks for `username` and
//! `email` as the scenario text specifies (the reference asks for one `response` field);
//! sampling and elicitation failures are results with `isError: true` (the scenarios say "return
//! an error"); `test_tool_with_progress` answers a fixed text (the handler does not see the
//! progress token); `test_reconnection` is best effort: it answers after 100 ms but does not
//! close the SSE stream, so the unscored `server-sse-polling` scenario is not exercised.

use std::time::Duration;

use mcp_tasks_engine::{Context, Engine, Outcome, Progress};
use mcp_tasks_protocol::mcp::Content;
use mcp_tasks_server::{
    CompletionDef, CompletionRef, GetPromptResult, PromptArgument, PromptDef, PromptMessage,
    ResourceContents, ResourceDef, ResourceTemplateDef, Server, ToolDef, UriTemplate,
    UriTemplateError, handler_fn, log_message,
};
use serde_json::{Value, json};

#[path = "modern.rs"]
mod modern;

/// A valid 1×1 red PNG (RGBA), base64: the reference server's test image.
pub(crate) const IMAGE_PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A valid WAV file, base64: PCM, mono, 8 kHz, 16-bit, two samples of silence. (The
/// reference's constant declares two data bytes it does not contain.)
pub(crate) const AUDIO_WAV_BASE64: &str =
    "UklGRigAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQQAAAAAAAAA";

/// The reference server's name in `serverInfo`.
pub(crate) const SERVER_NAME: &str = "mcp-conformance-test-server";

/// The pause between the steps of the logging and progress tools (the scenarios check that
/// several notifications arrive during one call).
const STEP: Duration = Duration::from_millis(50);

/// The fixture server over `engine`.
///
/// # Errors
/// Only if the template `test://template/{id}/data` failed to parse, or a tool's input
/// schema did not compile, which they do not.
pub(crate) fn server(engine: Engine) -> Result<Server, Box<dyn std::error::Error>> {
    let mut builder = Server::builder(engine).name(SERVER_NAME).version("1.0.0");
    let cell = modern::ServerCell::default();
    for tool in tools().into_iter().chain(modern::tools(&cell)) {
        builder = builder.tool(tool);
    }
    for resource in resources() {
        builder = builder.resource(resource);
    }
    for prompt in prompts().into_iter().chain(modern::prompts()) {
        builder = builder.prompt(prompt);
    }
    let server = builder
        .resource_template(template()?)
        .completion(CompletionDef::new(
            CompletionRef::prompt("test_prompt_with_arguments"),
            "arg1",
            |request| async move {
                let all = ["paris", "park", "party"];
                Ok(all
                    .iter()
                    .filter(|value| value.starts_with(&request.value))
                    .map(|value| (*value).to_owned())
                    .collect())
            },
        ))
        .build()?;
    // `test_trigger_tool_change` changes this server's tool list.
    let _ = cell.set(server.clone());
    Ok(server)
}

// ===== tools =====

fn tools() -> Vec<ToolDef> {
    let mut tools = content_tools();
    tools.extend(notifying_tools());
    tools.extend(asking_tools());
    tools
}

/// The tools that answer with each kind of content.
fn content_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            "test_simple_text",
            "Tests simple text content response",
            no_arguments(),
            handler_fn(|_, _| async {
                result(vec![text("This is a simple text response for testing.")])
            }),
        ),
        ToolDef::new(
            "test_image_content",
            "Tests image content response",
            no_arguments(),
            handler_fn(|_, _| async { result(vec![image()]) }),
        ),
        ToolDef::new(
            "test_audio_content",
            "Tests audio content response",
            no_arguments(),
            handler_fn(|_, _| async {
                result(vec![
                    json!({"type": "audio", "data": AUDIO_WAV_BASE64, "mimeType": "audio/wav"}),
                ])
            }),
        ),
        ToolDef::new(
            "test_embedded_resource",
            "Tests embedded resource content response",
            no_arguments(),
            handler_fn(|_, _| async {
                result(vec![embedded(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                )])
            }),
        ),
        ToolDef::new(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
            no_arguments(),
            handler_fn(|_, _| async {
                result(vec![
                    text("Multiple content types test:"),
                    image(),
                    embedded(
                        "test://mixed-content-resource",
                        "application/json",
                        r#"{"test":"data","value":123}"#,
                    ),
                ])
            }),
        ),
    ]
}

/// The tools that log, report progress, fail, or answer late.
fn notifying_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            "test_tool_with_logging",
            "Tests tool that emits log messages during execution",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                log_message(&ctx, "info", json!("Tool execution started"));
                tokio::time::sleep(STEP).await;
                log_message(&ctx, "info", json!("Tool processing data"));
                tokio::time::sleep(STEP).await;
                log_message(&ctx, "info", json!("Tool execution completed"));
                result(vec![text("Tool with logging executed successfully")])
            }),
        ),
        ToolDef::new(
            "test_tool_with_progress",
            "Tests tool that reports progress notifications",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                for (step, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if step > 0 {
                        tokio::time::sleep(STEP).await;
                    }
                    let message = format!("Completed step {progress} of 100");
                    ctx.progress(Progress {
                        progress,
                        total: Some(100.0),
                        message: Some(message),
                    });
                }
                result(vec![text("Progress tool completed")])
            }),
        ),
        ToolDef::new(
            "test_error_handling",
            "Tests error response handling",
            no_arguments(),
            handler_fn(|_, _| async {
                error_result("This tool intentionally returns an error for testing")
            }),
        ),
        ToolDef::new(
            "test_reconnection",
            "Tests SSE stream disconnection and client reconnection (SEP-1699). Best effort here: the result \
             comes after 100 ms on the same stream.",
            no_arguments(),
            handler_fn(|_, _| async {
                tokio::time::sleep(2 * STEP).await;
                result(vec![text(
                    "Reconnection test completed successfully. If you received this, the client properly \
                     reconnected after stream closure.",
                )])
            }),
        ),
    ]
}

/// The tools that ask the client (sampling, elicitation), and the JSON Schema 2020-12 tool.
fn asking_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            "test_sampling",
            "Tests server-initiated sampling (LLM completion request)",
            string_arguments(&[("prompt", "The prompt to send to the LLM")]),
            handler_fn(|arguments, ctx| async move { sampling(arguments, ctx).await }),
        ),
        ToolDef::new(
            "test_elicitation",
            "Tests server-initiated elicitation (user input request)",
            string_arguments(&[("message", "The message to show the user")]),
            handler_fn(|arguments, ctx| async move {
                let message = arguments["message"].as_str().unwrap_or_default().to_owned();
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}
                    },
                    "required": ["username", "email"]
                });
                elicit(&ctx, &message, schema, "User response").await
            }),
        ),
        ToolDef::new(
            "test_elicitation_sep1034_defaults",
            "Tests elicitation with default values per SEP-1034",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                let message = "Please review and update the form fields with defaults";
                elicit(&ctx, message, sep1034_schema(), "Elicitation completed").await
            }),
        ),
        ToolDef::new(
            "test_elicitation_sep1330_enums",
            "Tests elicitation with enum schema improvements per SEP-1330",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                let message = "Please select options from the enum fields";
                elicit(&ctx, message, sep1330_schema(), "Elicitation completed").await
            }),
        ),
        ToolDef::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
            json_schema_2020_12(),
            handler_fn(|arguments, _| async move {
                result(vec![text(format!(
                    "JSON Schema 2020-12 tool called with: {arguments}"
                ))])
            }),
        ),
    ]
}

/// `test_sampling`: asks the client's model, answers `LLM response: <its text>`.
async fn sampling(arguments: Value, ctx: Context) -> Outcome {
    let prompt = arguments["prompt"].as_str().unwrap_or_default();
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100
    });
    match ctx.sample(params).await {
        Ok(answer) => {
            let reply = answer["content"]["text"]
                .as_str()
                .or_else(|| answer["content"][0]["text"].as_str());
            result(vec![text(format!(
                "LLM response: {}",
                reply.unwrap_or("No response")
            ))])
        }
        Err(error) => error_result(&format!(
            "Sampling not supported or error: {error}"
        )),
    }
}

/// Asks the user through `elicitation/create`; answers `<prefix>: action=…, content={…}`.
async fn elicit(ctx: &Context, message: &str, schema: Value, prefix: &str) -> Outcome {
    let params = json!({"message": message, "requestedSchema": schema});
    match ctx.elicit(params).await {
        Ok(answer) => {
            let action = answer["action"].as_str().unwrap_or("unknown");
            let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
            result(vec![text(format!(
                "{prefix}: action={action}, content={content}"
            ))])
        }
        Err(error) => error_result(&format!(
            "Elicitation not supported or error: {error}"
        )),
    }
}

/// SEP-1034: a default for every primitive type.
fn sep1034_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        },
        "required": []
    })
}

/// SEP-1330: the five enum forms (untitled and titled single select, legacy `enumNames`,
/// untitled and titled multi select).
fn sep1330_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}
                ]
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {"anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"}
                ]}
            }
        },
        "required": []
    })
}

/// SEP-1613 / SEP-2106: an input schema that `tools/list` must return exactly as written.
pub(crate) fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

/// An object schema of required string arguments, each with a description.
fn string_arguments(arguments: &[(&str, &str)]) -> Value {
    let properties: serde_json::Map<String, Value> = arguments
        .iter()
        .map(|(name, description)| {
            (
                (*name).to_owned(),
                json!({"type": "string", "description": description}),
            )
        })
        .collect();
    let required: Vec<&str> = arguments.iter().map(|(name, _)| *name).collect();
    json!({"type": "object", "properties": properties, "required": required})
}

fn text(text: impl Into<String>) -> Value {
    json!({"type": "text", "text": text.into()})
}

fn image() -> Value {
    json!({"type": "image", "data": IMAGE_PNG_BASE64, "mimeType": "image/png"})
}

fn embedded(uri: &str, mime_type: &str, body: &str) -> Value {
    json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime_type, "text": body}})
}

fn result(content: Vec<Value>) -> Outcome {
    Outcome::Result(json!({"content": content}))
}

/// A tool failure: a result with `isError: true`, not a JSON-RPC error.
fn error_result(message: &str) -> Outcome {
    Outcome::Result(json!({"content": [text(message)], "isError": true}))
}

// ===== resources =====

fn resources() -> Vec<ResourceDef> {
    vec![
        ResourceDef::new("test://static-text", "static-text", |request| async move {
            Ok(vec![
                ResourceContents::text(
                    request.uri,
                    "This is the content of the static text resource.",
                )
                .mime_type("text/plain"),
            ])
        })
        .title("Static Text Resource")
        .description("A static text resource for testing")
        .mime_type("text/plain"),
        ResourceDef::new(
            "test://static-binary",
            "static-binary",
            |request| async move {
                Ok(vec![
                    ResourceContents::blob(request.uri, IMAGE_PNG_BASE64).mime_type("image/png"),
                ])
            },
        )
        .title("Static Binary Resource")
        .description("A static binary resource (image) for testing")
        .mime_type("image/png"),
        ResourceDef::new(
            "test://watched-resource",
            "watched-resource",
            |request| async move {
                Ok(vec![
                    ResourceContents::text(request.uri, "Watched resource content")
                        .mime_type("text/plain"),
                ])
            },
        )
        .title("Watched Resource")
        .description("A resource to subscribe to (resources/subscribe)")
        .mime_type("text/plain"),
    ]
}

/// `test://template/{id}/data`: `{"id":"123","templateTest":true,"data":"Data for ID: 123"}`,
/// keys in the reference's order.
fn template() -> Result<ResourceTemplateDef, UriTemplateError> {
    let template = UriTemplate::parse("test://template/{id}/data")?;
    Ok(
        ResourceTemplateDef::new(template, "template", |request| async move {
            let id = request.variable("id").unwrap_or_default();
            let body = format!(
                r#"{{"id":{},"templateTest":true,"data":{}}}"#,
                json!(id),
                json!(format!("Data for ID: {id}"))
            );
            Ok(vec![
                ResourceContents::text(request.uri.clone(), body).mime_type("application/json"),
            ])
        })
        .title("Resource Template")
        .description("A resource template with parameter substitution")
        .mime_type("application/json"),
    )
}

// ===== prompts =====

fn prompts() -> Vec<PromptDef> {
    vec![
        PromptDef::new("test_simple_prompt", |_| async {
            Ok(GetPromptResult::new(vec![PromptMessage::user(
                Content::text("This is a simple prompt for testing."),
            )]))
        })
        .title("Simple Test Prompt")
        .description("A simple prompt without arguments"),
        PromptDef::new("test_prompt_with_arguments", |request| async move {
            let arg1 = request.argument("arg1").unwrap_or_default();
            let arg2 = request.argument("arg2").unwrap_or_default();
            let text = format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'");
            Ok(GetPromptResult::new(vec![PromptMessage::user(
                Content::text(text),
            )]))
        })
        .title("Prompt With Arguments")
        .description("A prompt with required arguments")
        .argument(PromptArgument::required("arg1").description("First test argument"))
        .argument(PromptArgument::required("arg2").description("Second test argument")),
        PromptDef::new("test_prompt_with_embedded_resource", |request| async move {
            let uri = request.argument("resourceUri").unwrap_or_default();
            let resource = ResourceContents::text(uri, "Embedded resource content for testing.")
                .mime_type("text/plain");
            Ok(GetPromptResult::new(vec![
                PromptMessage::user(resource.into_content()),
                PromptMessage::user(Content::text("Please process the embedded resource above.")),
            ]))
        })
        .title("Prompt With Embedded Resource")
        .description("A prompt that includes an embedded resource")
        .argument(
            PromptArgument::required("resourceUri").description("URI of the resource to embed"),
        ),
        PromptDef::new("test_prompt_with_image", |_| async {
            let image = Content::Image {
                data: IMAGE_PNG_BASE64.to_owned(),
                mime_type: "image/png".to_owned(),
                annotations: None,
                meta: None,
            };
            Ok(GetPromptResult::new(vec![
                PromptMessage::user(image),
                PromptMessage::user(Content::text("Please analyze the image above.")),
            ]))
        })
        .title("Prompt With Image")
        .description("A prompt that includes image content"),
    ]
}
