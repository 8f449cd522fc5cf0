//! 2026-07-28 Multi Round-Trip Requests beyond the first plain call (`modern.rs` has that):
//! questions named by the work, answers sent ahead, a prompt that asks, MRTR rounds before
//! a task is shown (composed with the tasks extension), and a retry that comes too late.
//! Every result is checked against the 2026-07-28 and tasks extension schemas.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_engine::{Context, InputKind, Outcome};
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::mcp::Content;
use mcp_tasks_server::{
    GetPromptResult, PromptDef, PromptMessage, ResourceContents, ResourceDef, Server, TaskMode, ToolDef, handler_fn,
};
use mcp_tasks_testkit_server::peer::assert_era_schema;
use mcp_tasks_testkit_server::{Era, TestPeer};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::sqlite_engine;

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// `params` with the per-request `_meta` of a client with `capabilities`.
fn with(capabilities: Value, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "mrtr-test", "version": "0"},
    });
    params
}

fn elicits(params: Value) -> Value {
    with(json!({"elicitation": {}}), params)
}

fn elicits_with_tasks(params: Value) -> Value {
    with(json!({"elicitation": {}, "extensions": {TASKS: {}}}), params)
}

fn name_form(message: &str) -> Value {
    json!({"message": message, "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}})
}

fn accept(name: &str) -> Value {
    json!({"action": "accept", "content": {"name": name}})
}

/// `named`: asks `user_name` and then `nickname` (two rounds); `slow_greeter` (optional, 30 s
/// inline wait… unless `release` comes late): asks `user_name`, then waits for `release`;
/// `stopped` is notified when the work of `slow_greeter` or `named` is stopped; the prompt
/// `ask_context` asks `user_context`.
fn server(release: Arc<Notify>, stopped: Arc<Notify>, inline_wait: Duration, retry_wait: Duration) -> (Server, tempfile::TempDir) {
    let (engine, dir) = sqlite_engine();
    let schema = json!({"type": "object"});
    let named_stopped = Arc::clone(&stopped);
    let named = ToolDef::new("named", "Asks two named questions in turn", schema.clone(), handler_fn(move |_arguments, ctx: Context| {
        let stopped = Arc::clone(&named_stopped);
        async move {
            // Stopped while it waits: the question ends with an error.
            let Ok(first) = ctx.request_named("user_name", InputKind::Elicitation, name_form("Your name?")).await else {
                stopped.notify_one();
                return Outcome::Result(json!({"content": [], "isError": true}));
            };
            match ctx.request_named("nickname", InputKind::Elicitation, name_form("Your nickname?")).await {
                Ok(second) => Outcome::Result(json!({"content": [{"type": "text", "text": format!("{} aka {}", first["content"]["name"].as_str().unwrap_or("?"), second["content"]["name"].as_str().unwrap_or("?"))}]})),
                Err(error) => error.into(),
            }
        }
    }));
    let greeter = ToolDef::new("slow_greeter", "Asks a name, then works until released", schema, handler_fn(move |_arguments, ctx: Context| {
        let (release, stopped) = (Arc::clone(&release), Arc::clone(&stopped));
        async move {
            let name = match ctx.request_named("user_name", InputKind::Elicitation, name_form("Your name?")).await {
                Ok(answer) => answer["content"]["name"].as_str().unwrap_or("?").to_owned(),
                Err(error) => {
                    stopped.notify_one();
                    return error.into();
                }
            };
            tokio::select! {
                () = release.notified() => {}
                () = ctx.cancelled() => { stopped.notify_one(); }
            }
            Outcome::Result(json!({"content": [{"type": "text", "text": format!("Hello, {name}!")}]}))
        }
    }))
    .task_mode(TaskMode::Optional)
    .inline_wait(inline_wait);
    let prompt = PromptDef::asking("ask_context", |_, ctx| async move {
        let form = json!({"message": "Which context?", "requestedSchema": {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}});
        let answer = ctx
            .request_named("user_context", InputKind::Elicitation, form)
            .await
            .map_err(|error| RpcError::internal(error.to_string()))?;
        let context = answer["content"]["context"].as_str().unwrap_or("none").to_owned();
        Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(format!("Use {context}")))]))
    })
    .description("Asks which context to use");
    let resource = ResourceDef::asking("test://asks", "asks", |request, ctx| async move {
        let form = json!({"message": "Which part?", "requestedSchema": {"type": "object", "properties": {"part": {"type": "string"}}, "required": ["part"]}});
        let answer = ctx
            .request_named("part", InputKind::Elicitation, form)
            .await
            .map_err(|error| RpcError::internal(error.to_string()))?;
        Ok(vec![ResourceContents::text(request.uri, format!("part {}", answer["content"]["part"].as_str().unwrap_or("?")))])
    });
    let server = Server::builder(engine)
        .name("mrtr-test")
        .retry_wait(retry_wait)
        .tool(named)
        .tool(greeter)
        .prompt(prompt)
        .resource(resource)
        .build()
        .unwrap();
    (server, dir)
}

fn start(inline_wait: Duration, retry_wait: Duration) -> (TestPeer, Arc<Notify>, Arc<Notify>, tempfile::TempDir) {
    let (release, stopped) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (server, dir) = server(Arc::clone(&release), Arc::clone(&stopped), inline_wait, retry_wait);
    (TestPeer::connect(server), release, stopped, dir)
}

const LONG: Duration = Duration::from_secs(600);

#[tokio::test]
async fn modern_mrtr_a_question_the_work_names_is_asked_under_its_name_round_after_round() {
    let (mut peer, _, _, _dir) = start(LONG, LONG);
    let round = peer.result("tools/call", elicits(json!({"name": "named"}))).await;
    assert_era_schema(Era::Modern, "InputRequiredResult", &round);
    assert_eq!(round["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["user_name"], "{round}");
    let retry = json!({"name": "named", "requestState": round["requestState"], "inputResponses": {"user_name": accept("Ada")}});
    let round = peer.result("tools/call", elicits(retry)).await;
    assert_era_schema(Era::Modern, "InputRequiredResult", &round);
    assert_eq!(round["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["nickname"], "{round}");
    let retry = json!({"name": "named", "requestState": round["requestState"], "inputResponses": {"nickname": accept("Countess")}});
    let done = peer.result("tools/call", elicits(retry)).await;
    assert_era_schema(Era::Modern, "CallToolResult", &done);
    assert_eq!(done["content"][0]["text"], "Ada aka Countess", "{done}");
}

#[tokio::test]
async fn modern_mrtr_answers_sent_ahead_answer_their_questions_without_a_round_and_extra_ones_are_ignored() {
    let (mut peer, _, _, _dir) = start(LONG, LONG);
    let ahead = json!({"user_name": accept("Ada"), "nickname": accept("Countess"), "unknown_extra_key": {"x": 1}});
    let done = peer.result("tools/call", elicits(json!({"name": "named", "inputResponses": ahead}))).await;
    assert_era_schema(Era::Modern, "CallToolResult", &done);
    assert_eq!(done["content"][0]["text"], "Ada aka Countess", "{done}");
    // An answer ahead that is not an object is not used: the question is asked.
    let bad = json!({"user_name": 12345});
    let round = peer.result("tools/call", elicits(json!({"name": "named", "inputResponses": bad}))).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
    assert!(round["inputRequests"].get("user_name").is_some(), "{round}");
}

#[tokio::test]
async fn modern_mrtr_a_prompt_that_asks_answers_input_required_and_its_retry_returns_the_prompt() {
    let (mut peer, _, _, _dir) = start(LONG, LONG);
    let round = peer.result("prompts/get", elicits(json!({"name": "ask_context"}))).await;
    assert_era_schema(Era::Modern, "InputRequiredResult", &round);
    assert_eq!(round["inputRequests"]["user_context"]["method"], "elicitation/create", "{round}");
    let state = round["requestState"].clone();
    // The state names a prompts/get of this prompt: a tools/call cannot use it.
    let stolen = peer.error("tools/call", elicits(json!({"name": "named", "requestState": state, "inputResponses": {}}))).await;
    assert_eq!(stolen["code"], -32602, "{stolen}");
    let round = peer.result("prompts/get", elicits(json!({"name": "ask_context"}))).await;
    let retry = json!({
        "name": "ask_context",
        "requestState": round["requestState"],
        "inputResponses": {"user_context": {"action": "accept", "content": {"context": "the repo"}}}
    });
    let prompt = peer.result("prompts/get", elicits(retry)).await;
    assert_era_schema(Era::Modern, "GetPromptResult", &prompt);
    assert_eq!(prompt["messages"][0]["content"]["text"], "Use the repo", "{prompt}");
    // Without the elicitation capability the prompt cannot ask: -32021.
    let error = peer.error("prompts/get", with(json!({}), json!({"name": "ask_context"}))).await;
    assert_eq!((error["code"].clone(), error["data"]["requiredCapabilities"].clone()), (json!(-32021), json!({"elicitation": {}})));
}

#[tokio::test]
async fn modern_mrtr_a_resource_that_asks_answers_input_required_and_its_retry_returns_the_contents() {
    let (mut peer, _, _, _dir) = start(LONG, LONG);
    let round = peer.result("resources/read", elicits(json!({"uri": "test://asks"}))).await;
    assert_era_schema(Era::Modern, "InputRequiredResult", &round);
    assert_eq!(round["inputRequests"]["part"]["method"], "elicitation/create", "{round}");
    let retry = json!({
        "uri": "test://asks",
        "requestState": round["requestState"],
        "inputResponses": {"part": {"action": "accept", "content": {"part": "two"}}}
    });
    let read = peer.result("resources/read", elicits(retry)).await;
    assert_era_schema(Era::Modern, "ReadResourceResult", &read);
    assert_eq!(read["contents"][0]["text"], "part two", "{read}");
    let missing = peer.error("resources/read", elicits(json!({"uri": "test://nothing-here"}))).await;
    assert_eq!((missing["code"].clone(), missing["data"]["uri"].clone()), (json!(-32602), json!("test://nothing-here")), "{missing}");
}

#[tokio::test]
async fn tasks_mrtr_composition_a_task_that_asks_within_the_inline_wait_asks_in_rounds_then_is_shown_as_a_task() {
    let (mut peer, release, _, _dir) = start(Duration::from_millis(200), LONG);
    let round = peer.result("tools/call", elicits_with_tasks(json!({"name": "slow_greeter"}))).await;
    assert_era_schema(Era::Modern, "InputRequiredResult", &round);
    assert!(round.get("taskId").is_none(), "no task is shown before the rounds end: {round}");
    assert_eq!(round["inputRequests"]["user_name"]["method"], "elicitation/create", "{round}");
    let retry = json!({"name": "slow_greeter", "requestState": round["requestState"], "inputResponses": {"user_name": accept("Alice")}});
    let created = peer.result("tools/call", elicits_with_tasks(retry.clone())).await;
    assert_era_schema(Era::Modern, "CreateTaskResult", &created);
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("requestState").is_none() && created.get("inputRequests").is_none(), "{created}");
    let replayed = peer.error("tools/call", elicits_with_tasks(retry)).await;
    assert_eq!(replayed["code"], -32602, "the round's state is used up: {replayed}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    release.notify_one();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let done = loop {
        let task = peer.result("tasks/get", elicits_with_tasks(json!({"taskId": id}))).await;
        if task["status"] == "completed" {
            break task;
        }
        assert!(tokio::time::Instant::now() < deadline, "the task did not complete: {task}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_era_schema(Era::Modern, "GetTaskResult", &done);
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Alice!", "{done}");
}

#[tokio::test]
async fn tasks_mrtr_composition_a_round_nobody_retries_cancels_its_unshown_task() {
    let (mut peer, _, stopped, _dir) = start(Duration::from_secs(30), Duration::from_millis(100));
    let round = peer.result("tools/call", elicits_with_tasks(json!({"name": "slow_greeter"}))).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
    tokio::time::timeout(Duration::from_secs(30), stopped.notified()).await.expect("the task's work was not stopped");
    let retry = json!({"name": "slow_greeter", "requestState": round["requestState"], "inputResponses": {"user_name": accept("Late")}});
    let expired = peer.error("tools/call", elicits_with_tasks(retry)).await;
    assert_eq!(expired["code"], -32602, "an expired requestState is refused: {expired}");
}

#[tokio::test]
async fn modern_mrtr_an_expired_request_state_is_refused_and_its_work_was_stopped() {
    let (mut peer, _, stopped, _dir) = start(LONG, Duration::from_millis(100));
    let round = peer.result("tools/call", elicits(json!({"name": "named"}))).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
    tokio::time::timeout(Duration::from_secs(30), stopped.notified()).await.expect("the parked work was not stopped");
    let retry = json!({"name": "named", "requestState": round["requestState"], "inputResponses": {"user_name": accept("Late")}});
    let expired = peer.error("tools/call", elicits(retry)).await;
    assert_eq!(expired["code"], -32602, "{expired}");
    assert!(expired["message"].as_str().unwrap().contains("expired"), "the message says why: {expired}");
    // The server goes on serving.
    let again = peer.result("tools/call", elicits(json!({"name": "named"}))).await;
    assert_eq!(again["resultType"], "input_required", "{again}");
}

#[tokio::test]
async fn legacy_the_same_prompt_asks_with_an_elicitation_create_request_during_prompts_get() {
    let (mut peer, _, _, _dir) = start(LONG, LONG);
    peer.initialize(json!({"elicitation": {}})).await;
    let get = peer.send_request("prompts/get", json!({"name": "ask_context"})).await;
    let asked = peer.until(|message| message["method"] == "elicitation/create").await.pop().unwrap();
    assert_eq!(asked["params"]["message"], "Which context?", "{asked}");
    peer.send_result(&asked["id"], json!({"action": "accept", "content": {"context": "the wiki"}})).await;
    let response = peer.until(|message| message["id"] == get && message.get("method").is_none()).await.pop().unwrap();
    assert_eq!(response["result"]["messages"][0]["content"]["text"], "Use the wiki", "{response}");
    peer.validate();
}
