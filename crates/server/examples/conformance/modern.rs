//! The conformance fixture's tools for the 2026-07-28 server scenarios of
//! `@modelcontextprotocol/conformance` 0.2.0-alpha.12 (`interop/conformance-2026.md` has the
//! table: which scenario calls what). Era-neutral like the rest of the fixture: a tool that
//! asks for input does so through [`Context::elicit`] / [`Context::sample`], which the
//! 2025-11-25 era sends to the client as a request and the 2026-07-28 era turns into an
//! `InputRequiredResult` round (plain call) or the task's `inputRequests`; how a tool runs as a
//! task is its [`TaskMode`] alone.
//!
//! Included by `fixture.rs`. The questions the scenarios know by name (`user_name`,
//! `capital_question`, `step1`…) are asked with [`Context::request_named`].

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp_tasks_engine::{Context, ErrorObject, InputKind, Outcome};
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::mcp::Content;
use mcp_tasks_server::{GetPromptResult, PromptDef, PromptMessage, Server, TaskMode, ToolDef, handler_fn, log_message};
use serde_json::{Value, json};

use super::{error_result, no_arguments, result, text};

/// How long `failing_job` runs before it reports its error (the scenario says "~1 s").
const FAILING_JOB_RUN: Duration = Duration::from_secs(1);

/// How long `test_tool_with_task` works after its input: longer than any inline wait, so in
/// the 2026-07-28 era the call becomes a task after its `InputRequiredResult` round.
const WORK_AFTER_INPUT: Duration = Duration::from_secs(2);

/// The server itself, for `test_trigger_tool_change` (set once it is built; the tool then
/// holds the server, which is fine for a process that serves until it stops).
pub(crate) type ServerCell = Arc<OnceLock<Server>>;

/// The name of the tool `test_trigger_tool_change` adds and removes.
pub(crate) const DYNAMIC_TOOL: &str = "test_dynamic_tool";

/// Every tool of the 2026-07-28 scenarios (sorted as `tools/list` lists them does not
/// matter here; the registry sorts).
pub(crate) fn tools(cell: &ServerCell) -> Vec<ToolDef> {
    let mut tools = vec![about()];
    tools.extend(task_tools());
    tools.extend(mrtr_tools());
    tools.extend(stateless_tools(cell));
    tools.push(custom_header_tool());
    tools
}

/// `about`: a plain tool without arguments that sorts first in `tools/list`, because
/// `http-header-validation` calls the first listed tool with `{}` and expects a result.
fn about() -> ToolDef {
    ToolDef::new(
        "about",
        "Says what this server is (the mcp-tasks conformance fixture); takes no arguments",
        no_arguments(),
        handler_fn(|_, _| async {
            result(vec![text(
                "mcp-tasks conformance fixture: the tools, resources and prompts of the official \
                 conformance suite's server scenarios",
            )])
        }),
    )
}

// ===== the tasks-* scenarios (SEP-2663 extension) =====

fn task_tools() -> Vec<ToolDef> {
    let mut tools = quick_and_failing_task_tools();
    tools.extend(asking_task_tools());
    tools
}

/// `greet`, `slow_compute` and the jobs that fail.
fn quick_and_failing_task_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            "greet",
            "Says hello to `name` (never a task)",
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            handler_fn(|arguments, _| async move {
                let name = arguments["name"].as_str().unwrap_or("World").to_owned();
                result(vec![text(format!("Hello, {name}!"))])
            }),
        ),
        ToolDef::new(
            "slow_compute",
            "Sleeps `seconds` seconds (0: answers at once), then answers; stops when cancelled",
            json!({
                "type": "object",
                "properties": {
                    "seconds": {"type": "number", "minimum": 0},
                    "label": {"type": "string"}
                },
                "required": ["seconds"]
            }),
            handler_fn(|arguments, ctx| async move { slow_compute(&arguments, &ctx).await }),
        )
        .task_mode(TaskMode::Optional)
        // tasks-* call it with `seconds: 1` and expect a task, and with 0 an inline answer.
        .inline_wait(std::time::Duration::from_millis(200)),
        ToolDef::new(
            "failing_job",
            "Always a task; after about a second it reports a tool error (isError)",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                tokio::select! {
                    () = tokio::time::sleep(FAILING_JOB_RUN) => {}
                    () = ctx.cancelled() => {}
                }
                error_result("failing_job: this job always fails (intentional tool error)")
            }),
        )
        .task_mode(TaskMode::Required),
        ToolDef::new(
            "protocol_error_job",
            "Always a task; ends with a protocol-level (JSON-RPC) error, not a tool result",
            no_arguments(),
            handler_fn(|_, _| async {
                Outcome::Error(ErrorObject {
                    code: -32603,
                    message: "protocol_error_job: intentional internal error".to_owned(),
                    data: None,
                })
            }),
        )
        .task_mode(TaskMode::Required),
    ]
}

/// The task tools that ask: one question, two at once, a question before the task.
fn asking_task_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            "confirm_delete",
            "Always a task; asks the user to confirm deleting `filename` (one elicitation)",
            json!({"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]}),
            handler_fn(|arguments, ctx| async move {
                let filename = arguments["filename"].as_str().unwrap_or_default().to_owned();
                confirm_delete(&filename, &ctx).await
            }),
        )
        .task_mode(TaskMode::Required),
        ToolDef::new(
            "multi_input",
            "Always a task; asks two questions at once (two elicitations outstanding together)",
            no_arguments(),
            handler_fn(|_, ctx| async move { multi_input(&ctx).await }),
        )
        .task_mode(TaskMode::Required),
        ToolDef::new(
            "test_tool_with_task",
            "Asks for the user's name, then works for two seconds and greets them (in the 2026-07-28 \
             era: an InputRequiredResult round, then a task)",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                let name = match ctx.request_named("user_name", InputKind::Elicitation, name_question("What is your name?")).await {
                    Ok(answer) => answer["content"]["name"].as_str().unwrap_or("stranger").to_owned(),
                    Err(error) => return error_result(&format!("Elicitation failed: {error}")),
                };
                tokio::select! {
                    () = tokio::time::sleep(WORK_AFTER_INPUT) => {}
                    () = ctx.cancelled() => {}
                }
                result(vec![text(format!("Hello, {name}! (finished as a task)"))])
            }),
        )
        .task_mode(TaskMode::Optional),
    ]
}

/// `slow_compute`: sleeps, or ends early when cancelled (the engine then records the task as
/// `cancelled`, whatever this returns).
async fn slow_compute(arguments: &Value, ctx: &Context) -> Outcome {
    let seconds = arguments["seconds"].as_f64().unwrap_or(0.0).clamp(0.0, 3600.0);
    let label = arguments["label"].as_str().unwrap_or("slow_compute").to_owned();
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs_f64(seconds)) => {}
        () = ctx.cancelled() => return error_result(&format!("{label}: cancelled")),
    }
    result(vec![text(format!("{label}: computed after {seconds} s"))])
}

async fn confirm_delete(filename: &str, ctx: &Context) -> Outcome {
    let params = json!({
        "message": format!("Delete '{filename}'?"),
        "requestedSchema": {
            "type": "object",
            "properties": {"confirm": {"type": "boolean", "description": "Delete the file"}},
            "required": ["confirm"]
        }
    });
    match ctx.elicit(params).await {
        Ok(answer) if answer["action"] == "accept" && answer["content"]["confirm"] == true => {
            result(vec![text(format!("Deleted '{filename}'"))])
        }
        Ok(answer) => result(vec![text(format!(
            "Kept '{filename}' (action={})",
            answer["action"].as_str().unwrap_or("unknown")
        ))]),
        Err(error) => error_result(&format!("Elicitation failed: {error}")),
    }
}

async fn multi_input(ctx: &Context) -> Outcome {
    let (first, second) = tokio::join!(
        ctx.elicit(name_question("First question: what is your name?")),
        ctx.elicit(json!({
            "message": "Second question: go ahead?",
            "requestedSchema": {
                "type": "object",
                "properties": {"confirm": {"type": "boolean"}},
                "required": ["confirm"]
            }
        })),
    );
    match (first, second) {
        (Ok(first), Ok(second)) => result(vec![text(format!(
            "multi_input: first={}, second={}",
            first.get("content").cloned().unwrap_or(Value::Null),
            second.get("content").cloned().unwrap_or(Value::Null)
        ))]),
        (Err(error), _) | (_, Err(error)) => error_result(&format!("Elicitation failed: {error}")),
    }
}

/// An elicitation asking for one string, `name`.
fn name_question(message: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"]
        }
    })
}

// ===== the input-required-result-* scenarios (SEP-2322, MRTR) =====

fn mrtr_tools() -> Vec<ToolDef> {
    let mut tools = single_input_tools();
    tools.extend(many_input_tools());
    tools
}

/// The tools that ask one thing in one round.
fn single_input_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            "test_input_required_result_elicitation",
            "Asks for the user's name (elicitation), answers `Hello, <name>!`",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                match ctx.request_named("user_name", InputKind::Elicitation, name_question("What is your name?")).await {
                    Ok(answer) => {
                        let name = answer["content"]["name"].as_str().unwrap_or("stranger");
                        result(vec![text(format!("Hello, {name}!"))])
                    }
                    Err(error) => error_result(&format!("Elicitation failed: {error}")),
                }
            }),
        ),
        ToolDef::new(
            "test_input_required_result_sampling",
            "Asks the client's model for the capital of France, answers with its reply",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                match ctx.request_named("capital_question", InputKind::Sampling, capital_question()).await {
                    Ok(answer) => result(vec![text(format!("Model says: {}", sampled_text(&answer)))]),
                    Err(error) => error_result(&format!("Sampling failed: {error}")),
                }
            }),
        ),
        ToolDef::new(
            "test_input_required_result_request_state",
            "Asks the user to confirm; answers `state-ok` once confirmed",
            no_arguments(),
            handler_fn(|_, ctx| async move { confirm_ok(&ctx, "state-ok").await }),
        ),
        ToolDef::new(
            "test_input_required_result_tampered_state",
            "Asks the user to confirm (the retry's requestState must be the server's own)",
            no_arguments(),
            handler_fn(|_, ctx| async move { confirm_ok(&ctx, "confirmed").await }),
        ),
    ]
}

/// The tools that ask several things, in one round or more, or by capability.
fn many_input_tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            "test_input_required_result_multiple_inputs",
            "Asks for a name (elicitation), a greeting (sampling) and the roots (roots/list) at once",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                let greeting = json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
                    "maxTokens": 50
                });
                let (name, greeting, roots) = tokio::join!(
                    ctx.request_named("user_name", InputKind::Elicitation, name_question("What is your name?")),
                    ctx.request_named("greeting", InputKind::Sampling, greeting),
                    ctx.request_named("client_roots", InputKind::Roots, json!({}))
                );
                match (name, greeting, roots) {
                    (Ok(name), Ok(greeting), Ok(roots)) => result(vec![text(format!(
                        "Name: {}; Greeting: {}; Roots: {}",
                        name["content"]["name"].as_str().unwrap_or("stranger"),
                        sampled_text(&greeting),
                        roots["roots"].as_array().map_or(0, Vec::len)
                    ))]),
                    (Err(error), _, _) | (_, Err(error), _) | (_, _, Err(error)) => {
                        error_result(&format!("Input failed: {error}"))
                    }
                }
            }),
        ),
        ToolDef::new(
            "test_input_required_result_list_roots",
            "Asks the client for its roots (roots/list), then lists them",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                match ctx.request_named("client_roots", InputKind::Roots, json!({})).await {
                    Ok(roots) => {
                        let uris: Vec<&str> = roots["roots"]
                            .as_array()
                            .map(|roots| roots.iter().filter_map(|root| root["uri"].as_str()).collect())
                            .unwrap_or_default();
                        result(vec![text(format!("Roots: {}", uris.join(", ")))])
                    }
                    Err(error) => error_result(&format!("Listing roots failed: {error}")),
                }
            }),
        ),
        ToolDef::new(
            "test_input_required_result_multi_round",
            "Asks for a name, then (a second round) for a favourite colour",
            no_arguments(),
            handler_fn(|_, ctx| async move { multi_round(&ctx).await }),
        ),
        ToolDef::new(
            "test_input_required_result_capabilities",
            "Asks the model (sampling) and the user (elicitation) at once; only what the client \
             declared is asked, the rest is reported as not asked",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                let (sampled, elicited) =
                    tokio::join!(ctx.sample(capital_question()), ctx.elicit(name_question("What is your name?")));
                let sampled = sampled.map_or_else(|e| format!("not asked ({e})"), |a| sampled_text(&a));
                let elicited = elicited.map_or_else(|e| format!("not asked ({e})"), |a| a["content"].to_string());
                result(vec![text(format!("sampling: {sampled}; elicitation: {elicited}"))])
            }),
        ),
    ]
}

async fn confirm_ok(ctx: &Context, done: &str) -> Outcome {
    let params = json!({
        "message": "Please confirm",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    });
    match ctx.request_named("confirm", InputKind::Elicitation, params).await {
        Ok(answer) if answer["content"]["ok"] == true => result(vec![text(done)]),
        Ok(answer) => result(vec![text(format!("not confirmed: {answer}"))]),
        Err(error) => error_result(&format!("Elicitation failed: {error}")),
    }
}

async fn multi_round(ctx: &Context) -> Outcome {
    let name = match ctx.request_named("step1", InputKind::Elicitation, name_question("Step 1: What is your name?")).await {
        Ok(answer) => answer["content"]["name"].as_str().unwrap_or("stranger").to_owned(),
        Err(error) => return error_result(&format!("Elicitation failed: {error}")),
    };
    let color = json!({
        "message": "Step 2: What is your favorite color?",
        "requestedSchema": {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
    });
    match ctx.request_named("step2", InputKind::Elicitation, color).await {
        Ok(answer) => {
            let color = answer["content"]["color"].as_str().unwrap_or("none");
            result(vec![text(format!("Hello, {name}! Your favorite color is {color}."))])
        }
        Err(error) => error_result(&format!("Elicitation failed: {error}")),
    }
}

fn capital_question() -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
        "maxTokens": 100
    })
}

/// The text of a `CreateMessageResult` (content as one block or a list).
fn sampled_text(answer: &Value) -> String {
    answer["content"]["text"]
        .as_str()
        .or_else(|| answer["content"][0]["text"].as_str())
        .unwrap_or("No response")
        .to_owned()
}

// ===== server-stateless diagnostics and the custom-header tool =====

fn stateless_tools(cell: &ServerCell) -> Vec<ToolDef> {
    let cell = Arc::clone(cell);
    vec![
        ToolDef::new(
            "test_missing_capability",
            "Needs the client's sampling capability (2026-07-28: -32021 when the request did not declare it)",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                match ctx.sample(capital_question()).await {
                    Ok(answer) => result(vec![text(format!("Model says: {}", sampled_text(&answer)))]),
                    Err(error) => error_result(&format!("Sampling failed: {error}")),
                }
            }),
        ),
        ToolDef::new(
            "test_streaming_elicitation",
            "Asks the user a question while the call is open (its answer stream may carry only the result)",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                match ctx.elicit(name_question("What is your name?")).await {
                    Ok(answer) => result(vec![text(format!("Elicited: {}", answer["content"]))]),
                    Err(error) => error_result(&format!("Elicitation failed: {error}")),
                }
            }),
        ),
        ToolDef::new(
            "test_logging_tool",
            "Logs three info messages during the call (2026-07-28: only if the request set a log level)",
            no_arguments(),
            handler_fn(|_, ctx| async move {
                for message in ["Logging tool started", "Logging tool working", "Logging tool done"] {
                    log_message(&ctx, "info", json!(message));
                }
                result(vec![text("Logging tool finished")])
            }),
        ),
        ToolDef::new(
            "test_trigger_tool_change",
            "Adds or removes the tool `test_dynamic_tool` (the tool list changes)",
            no_arguments(),
            handler_fn(move |_, _| {
                let cell = Arc::clone(&cell);
                async move { toggle_dynamic_tool(&cell) }
            }),
        ),
    ]
}

/// Adds [`DYNAMIC_TOOL`] if it is absent, removes it otherwise.
fn toggle_dynamic_tool(cell: &ServerCell) -> Outcome {
    let Some(server) = cell.get() else {
        return error_result("the server is not built yet");
    };
    if server.tools().remove(DYNAMIC_TOOL) {
        return result(vec![text(format!("removed {DYNAMIC_TOOL}"))]);
    }
    let tool = ToolDef::new(
        DYNAMIC_TOOL,
        "Added by test_trigger_tool_change",
        no_arguments(),
        handler_fn(|_, _| async { result(vec![text("dynamic tool called")]) }),
    );
    match server.tools().insert(tool) {
        Ok(()) => result(vec![text(format!("added {DYNAMIC_TOOL}"))]),
        Err(error) => error_result(&format!("could not add {DYNAMIC_TOOL}: {error}")),
    }
}

/// `test_custom_header`: its string argument `region` is mirrored into the HTTP header
/// `Mcp-Param-Region` (`x-mcp-header`, SEP-2243), which `http-custom-header-server-validation`
/// checks the server validates against the body.
fn custom_header_tool() -> ToolDef {
    ToolDef::new(
        "test_custom_header",
        "Echoes `region`, which clients also send as the HTTP header Mcp-Param-Region",
        json!({
            "type": "object",
            "properties": {"region": {"type": "string", "description": "A region name", "x-mcp-header": "Region"}},
            "required": ["region"]
        }),
        handler_fn(|arguments, _| async move {
            result(vec![text(format!("region={}", arguments["region"].as_str().unwrap_or_default()))])
        }),
    )
}

// ===== input-required-result-non-tool-request: a prompt that asks =====

/// `test_input_required_result_prompt`: asks the user (key `user_context`) what context the
/// prompt should use, then fills it in with the answer.
pub(crate) fn prompts() -> Vec<PromptDef> {
    vec![
        PromptDef::asking("test_input_required_result_prompt", |_, ctx| async move {
            let question = json!({
                "message": "What context should the prompt use?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"context": {"type": "string"}},
                    "required": ["context"]
                }
            });
            let answer = ctx
                .request_named("user_context", InputKind::Elicitation, question)
                .await
                .map_err(|error| RpcError::internal(format!("Elicitation failed: {error}")))?;
            let context = answer["content"]["context"].as_str().unwrap_or("none");
            Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(format!(
                "Use this context: {context}"
            )))]))
        })
        .title("Prompt That Asks")
        .description("Asks the user for the context to use (an InputRequiredResult round in 2026-07-28)"),
    ]
}
