//! Resources, resource templates, prompts, completion and logging defined through the
//! library API, checked on the wire: exact shapes, schema validity, and error codes.

use mcp_tasks_engine::Outcome;
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::mcp::Content;
use mcp_tasks_server::{
    CompletionDef, CompletionRef, GetPromptResult, PromptArgument, PromptDef, PromptMessage, ResourceContents,
    ResourceDef, ResourceTemplateDef, Server, ToolDef, UriTemplate, handler_fn, log_message, resource_not_found,
};
use serde_json::{Value, json};

use mcp_tasks_testkit_server::{TestPeer, peer::assert_schema};

use crate::sqlite_engine;

/// A server with two resources, a template, two prompts, two completion handlers and a
/// tool that logs at three levels.
fn server(engine: mcp_tasks_engine::Engine) -> Server {
    let greeting = ResourceDef::new("mem://greeting", "greeting", |request| async move {
        Ok(vec![ResourceContents::text(request.uri, "hello").mime_type("text/plain")])
    })
    .title("Greeting")
    .description("A friendly text")
    .mime_type("text/plain");
    let logo = ResourceDef::new("mem://logo", "logo", |request| async move {
        Ok(vec![ResourceContents::blob(request.uri, "AAEC").mime_type("application/octet-stream")])
    })
    .size(3);
    let items =
        ResourceTemplateDef::new(UriTemplate::parse("mem://items/{id}").unwrap(), "item", |request| async move {
            match request.variable("id") {
                Some("missing") => Err(resource_not_found(&request.uri)),
                Some(id) => Ok(vec![ResourceContents::text(request.uri.clone(), format!("item {id}"))]),
                None => Err(RpcError::internal("no id")),
            }
        })
        .description("Items by id")
        .mime_type("text/plain");
    let plain = PromptDef::new("plain", |_request| async move {
        Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text("Just this."))]))
    });
    let greet = PromptDef::new("greet", |request| async move {
        let name = request.argument("name").unwrap_or_default().to_owned();
        let tone = request.argument("tone").unwrap_or("warm").to_owned();
        Ok(GetPromptResult::new(vec![
            PromptMessage::user(Content::text(format!("Greet {name} in a {tone} tone."))),
            PromptMessage::assistant(ResourceContents::text("mem://greeting", "hello").into_content()),
        ])
        .description(format!("Greeting for {name}")))
    })
    .title("Greet")
    .description("Greets someone")
    .argument(PromptArgument::required("name").description("Whom to greet"))
    .argument(PromptArgument::optional("tone").title("Tone"));
    let names = CompletionDef::new(CompletionRef::prompt("greet"), "name", |request| async move {
        let all = ["ada", "alan", "grace"];
        Ok(all.iter().filter(|name| name.starts_with(&request.value)).map(|name| (*name).to_owned()).collect())
    });
    let ids = CompletionDef::new(CompletionRef::resource("mem://items/{id}"), "id", |_request| async move {
        Ok((0..150).map(|n| n.to_string()).collect())
    });
    let chatty = ToolDef::new(
        "chatty",
        "Logs at debug, info and error, then answers",
        json!({"type": "object", "properties": {}}),
        handler_fn(|_arguments, ctx| async move {
            log_message(&ctx, "debug", json!("d"));
            log_message(&ctx, "info", json!({"step": "i"}));
            log_message(&ctx, "error", json!("e"));
            Outcome::Result(json!({"content": [{"type": "text", "text": "done"}]}))
        }),
    );
    Server::builder(engine)
        .name("catalog-test")
        .resource(greeting)
        .resource(logo)
        .resource_template(items)
        .prompt(plain)
        .prompt(greet)
        .completion(names)
        .completion(ids)
        .tool(chatty)
        .build()
        .unwrap()
}

async fn start() -> (TestPeer, Server, tempfile::TempDir) {
    let (engine, dir) = sqlite_engine();
    let server = server(engine);
    (TestPeer::start(server.clone()).await, server, dir)
}

fn texts(messages: &[Value], method: &str) -> Vec<Value> {
    messages.iter().filter(|m| m["method"] == method).map(|m| m["params"].clone()).collect()
}

#[tokio::test]
async fn initialize_declares_resources_prompts_logging_and_completions() {
    let (engine, _dir) = sqlite_engine();
    let mut peer = TestPeer::connect(server(engine));
    let response = peer.initialize(json!({})).await;
    assert_eq!(
        response["result"]["capabilities"],
        json!({
            "completions": {},
            "logging": {},
            "prompts": {"listChanged": false},
            "resources": {"subscribe": true, "listChanged": false},
            "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
            "tools": {"listChanged": true}
        })
    );
    assert_schema("InitializeResult", &response["result"]);
    peer.validate();
}

#[tokio::test]
async fn a_server_without_resources_or_prompts_declares_neither_and_has_no_such_methods() {
    let (engine, _dir) = sqlite_engine();
    let mut peer = TestPeer::connect(Server::builder(engine).build().unwrap());
    let response = peer.initialize(json!({})).await;
    let capabilities = &response["result"]["capabilities"];
    assert!(capabilities.get("resources").is_none() && capabilities.get("prompts").is_none(), "{capabilities}");
    assert_eq!(capabilities["logging"], json!({}));
    assert_eq!(capabilities["completions"], json!({}));
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        let error = peer.error(method, json!({})).await;
        assert_eq!(error["code"], -32601);
        assert_eq!(error["message"], format!("Method not found: {method}"));
    }
    let error = peer.error("resources/read", json!({"uri": "mem://greeting"})).await;
    assert_eq!(error["code"], -32601);
    peer.validate();
}

#[tokio::test]
async fn resources_list_shows_every_static_resource_by_uri() {
    let (mut peer, _server, _dir) = start().await;
    let result = peer.result("resources/list", json!({})).await;
    assert_eq!(
        result,
        json!({"resources": [
            {
                "uri": "mem://greeting",
                "name": "greeting",
                "title": "Greeting",
                "description": "A friendly text",
                "mimeType": "text/plain"
            },
            {"uri": "mem://logo", "name": "logo", "size": 3}
        ]})
    );
    assert_schema("ListResourcesResult", &result);
    // `params` may be left out of a list request.
    let (_, response) = peer.request("resources/list", Value::Null).await;
    assert_eq!(response["result"], result);
    peer.validate();
}

#[tokio::test]
async fn resource_templates_list_shows_each_template() {
    let (mut peer, _server, _dir) = start().await;
    let result = peer.result("resources/templates/list", json!({})).await;
    assert_eq!(
        result,
        json!({"resourceTemplates": [
            {"uriTemplate": "mem://items/{id}", "name": "item", "description": "Items by id", "mimeType": "text/plain"}
        ]})
    );
    assert_schema("ListResourceTemplatesResult", &result);
    peer.validate();
}

#[tokio::test]
async fn resources_read_returns_text_and_blob_contents() {
    let (mut peer, _server, _dir) = start().await;
    let text = peer.result("resources/read", json!({"uri": "mem://greeting"})).await;
    assert_eq!(text, json!({"contents": [{"uri": "mem://greeting", "mimeType": "text/plain", "text": "hello"}]}));
    assert_schema("ReadResourceResult", &text);
    let blob = peer.result("resources/read", json!({"uri": "mem://logo"})).await;
    assert_eq!(
        blob,
        json!({"contents": [{"uri": "mem://logo", "mimeType": "application/octet-stream", "blob": "AAEC"}]})
    );
    assert_schema("ReadResourceResult", &blob);
    peer.validate();
}

#[tokio::test]
async fn a_template_read_passes_the_matched_variables_to_the_handler() {
    let (mut peer, _server, _dir) = start().await;
    let result = peer.result("resources/read", json!({"uri": "mem://items/a%20b"})).await;
    assert_eq!(result, json!({"contents": [{"uri": "mem://items/a%20b", "text": "item a b"}]}));
    assert_schema("ReadResourceResult", &result);
    peer.validate();
}

#[tokio::test]
async fn reading_an_unknown_uri_is_resource_not_found_with_the_uri_in_data() {
    let (mut peer, _server, _dir) = start().await;
    for uri in ["mem://nothing", "mem://items/1/2", "mem://items/missing"] {
        let error = peer.error("resources/read", json!({"uri": uri})).await;
        assert_eq!(error, json!({"code": -32002, "message": "Resource not found", "data": {"uri": uri}}));
    }
    let error = peer.error("resources/read", json!({})).await;
    assert_eq!(error["code"], -32602);
    peer.validate();
}

#[tokio::test]
async fn subscribe_then_update_notifies_and_unsubscribe_stops_it() {
    let (mut peer, server, _dir) = start().await;
    let result = peer.result("resources/subscribe", json!({"uri": "mem://items/7"})).await;
    assert_eq!(result, json!({}));
    assert_schema("EmptyResult", &result);
    server.notify_resource_updated("mem://items/7");
    server.notify_resource_updated("mem://greeting"); // not subscribed: not sent
    let (between, _) = peer.request("ping", json!({})).await;
    assert_eq!(texts(&between, "notifications/resources/updated"), vec![json!({"uri": "mem://items/7"})]);

    let result = peer.result("resources/unsubscribe", json!({"uri": "mem://items/7"})).await;
    assert_eq!(result, json!({}));
    server.notify_resource_updated("mem://items/7");
    let (between, _) = peer.request("ping", json!({})).await;
    assert!(texts(&between, "notifications/resources/updated").is_empty(), "{between:?}");
    // Unsubscribing again, or from something never subscribed, is still fine.
    assert_eq!(peer.result("resources/unsubscribe", json!({"uri": "mem://items/7"})).await, json!({}));
    peer.validate();
}

#[tokio::test]
async fn subscribing_to_an_unknown_uri_is_resource_not_found() {
    let (mut peer, _server, _dir) = start().await;
    let error = peer.error("resources/subscribe", json!({"uri": "mem://nothing"})).await;
    assert_eq!(error, json!({"code": -32002, "message": "Resource not found", "data": {"uri": "mem://nothing"}}));
    peer.validate();
}

#[tokio::test]
async fn prompts_list_shows_each_prompt_with_its_arguments() {
    let (mut peer, _server, _dir) = start().await;
    let result = peer.result("prompts/list", json!({})).await;
    assert_eq!(
        result,
        json!({"prompts": [
            {"name": "greet", "title": "Greet", "description": "Greets someone", "arguments": [
                {"name": "name", "description": "Whom to greet", "required": true},
                {"name": "tone", "title": "Tone", "required": false}
            ]},
            {"name": "plain"}
        ]})
    );
    assert_schema("ListPromptsResult", &result);
    peer.validate();
}

#[tokio::test]
async fn prompts_get_fills_in_the_arguments() {
    let (mut peer, _server, _dir) = start().await;
    let result = peer.result("prompts/get", json!({"name": "greet", "arguments": {"name": "Ada"}})).await;
    assert_eq!(
        result,
        json!({
            "description": "Greeting for Ada",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Greet Ada in a warm tone."}},
                {
                    "role": "assistant",
                    "content": {"type": "resource", "resource": {"uri": "mem://greeting", "text": "hello"}}
                }
            ]
        })
    );
    assert_schema("GetPromptResult", &result);
    let plain = peer.result("prompts/get", json!({"name": "plain"})).await;
    assert_eq!(plain, json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Just this."}}]}));
    assert_schema("GetPromptResult", &plain);
    peer.validate();
}

#[tokio::test]
async fn prompts_get_of_an_unknown_prompt_or_without_a_required_argument_is_32602() {
    let (mut peer, _server, _dir) = start().await;
    let error = peer.error("prompts/get", json!({"name": "nope"})).await;
    assert_eq!(error, json!({"code": -32602, "message": "Unknown prompt: nope"}));
    let error = peer.error("prompts/get", json!({"name": "greet", "arguments": {"tone": "dry"}})).await;
    assert_eq!(error, json!({"code": -32602, "message": "Missing required argument 'name' for prompt greet"}));
    let error = peer.error("prompts/get", json!({"name": "greet", "arguments": {"name": 7}})).await;
    assert_eq!(error["code"], -32602, "arguments are strings");
    peer.validate();
}

#[tokio::test]
async fn completion_asks_the_handler_of_the_argument() {
    let (mut peer, _server, _dir) = start().await;
    let params = json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "a"}});
    let result = peer.result("completion/complete", params).await;
    assert_eq!(result, json!({"completion": {"values": ["ada", "alan"], "total": 2, "hasMore": false}}));
    assert_schema("CompleteResult", &result);
    peer.validate();
}

#[tokio::test]
async fn completion_sends_at_most_100_values_and_says_there_are_more() {
    let (mut peer, _server, _dir) = start().await;
    let params = json!({
        "ref": {"type": "ref/resource", "uri": "mem://items/{id}"},
        "argument": {"name": "id", "value": ""},
        "context": {"arguments": {}}
    });
    let result = peer.result("completion/complete", params).await;
    assert_eq!(result["completion"]["values"].as_array().unwrap().len(), 100);
    assert_eq!(result["completion"]["total"], 150);
    assert_eq!(result["completion"]["hasMore"], true);
    assert_schema("CompleteResult", &result);
    peer.validate();
}

#[tokio::test]
async fn completion_without_a_handler_is_empty_and_for_an_unknown_reference_is_32602() {
    let (mut peer, _server, _dir) = start().await;
    let params = json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "tone", "value": ""}});
    let result = peer.result("completion/complete", params).await;
    assert_eq!(result, json!({"completion": {"values": [], "hasMore": false}}));
    assert_schema("CompleteResult", &result);
    let params = json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "x", "value": ""}});
    let error = peer.error("completion/complete", params).await;
    assert_eq!(error, json!({"code": -32602, "message": "Unknown prompt: nope"}));
    let params =
        json!({"ref": {"type": "ref/resource", "uri": "mem://else/{x}"}, "argument": {"name": "x", "value": ""}});
    let error = peer.error("completion/complete", params).await;
    assert_eq!(error, json!({"code": -32602, "message": "Unknown resource template: mem://else/{x}"}));
    peer.validate();
}

#[tokio::test]
async fn set_level_filters_the_log_messages_of_tools() {
    let (mut peer, _server, _dir) = start().await;
    let (before, response) = peer.request("tools/call", json!({"name": "chatty"})).await;
    assert_eq!(response["result"]["content"][0]["text"], "done");
    assert_eq!(
        texts(&before, "notifications/message"),
        vec![
            json!({"level": "debug", "data": "d"}),
            json!({"level": "info", "data": {"step": "i"}}),
            json!({"level": "error", "data": "e"})
        ]
    );

    let result = peer.result("logging/setLevel", json!({"level": "warning"})).await;
    assert_eq!(result, json!({}));
    assert_schema("EmptyResult", &result);
    let (before, _) = peer.request("tools/call", json!({"name": "chatty"})).await;
    assert_eq!(texts(&before, "notifications/message"), vec![json!({"level": "error", "data": "e"})]);

    let error = peer.error("logging/setLevel", json!({"level": "loud"})).await;
    assert_eq!(error["code"], -32602);
    peer.validate();
}

#[tokio::test]
async fn a_list_cursor_is_refused_since_lists_are_one_page() {
    let (mut peer, _server, _dir) = start().await;
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        let error = peer.error(method, json!({"cursor": "abc"})).await;
        assert_eq!(error["code"], -32602, "{method}");
    }
    peer.validate();
}

#[tokio::test]
async fn tool_def_new_makes_a_plain_tool_with_a_description() {
    let (mut peer, _server, _dir) = start().await;
    let result = peer.result("tools/list", json!({})).await;
    assert_eq!(
        result["tools"][0],
        json!({
            "name": "chatty",
            "description": "Logs at debug, info and error, then answers",
            "inputSchema": {"type": "object", "properties": {}},
            "execution": {"taskSupport": "forbidden"}
        })
    );
    assert_schema("ListToolsResult", &result);
    peer.validate();
}

#[tokio::test]
async fn completion_params_given_as_arrays_are_32602_naming_the_field() {
    let (mut peer, _server, _dir) = start().await;
    let reference = json!({"type": "ref/prompt", "name": "greet"});
    let argument = json!({"name": "name", "value": "a"});
    for (params, field) in [
        (json!({"ref": ["ref/prompt", "greet"], "argument": argument}), "`ref`"),
        (json!({"ref": reference, "argument": ["name", "a"]}), "`argument`"),
        (json!({"ref": reference, "argument": argument, "context": [{"name": "x"}]}), "`context`"),
    ] {
        let error = peer.error("completion/complete", params).await;
        assert_eq!(error["code"], -32602, "{field}: {error}");
        assert!(error["message"].as_str().unwrap().contains(field), "{field}: {error}");
    }
    let result = peer.result("completion/complete", json!({"ref": reference, "argument": argument})).await;
    assert_eq!(result["completion"]["values"], json!(["ada", "alan"]));
    peer.validate();
}

#[tokio::test]
async fn every_list_of_one_page_refuses_any_cursor_even_empty_or_non_ascii() {
    let (mut peer, _server, _dir) = start().await;
    for method in ["tools/list", "resources/list", "resources/templates/list", "prompts/list"] {
        for cursor in [json!(""), json!("é"), json!("abc"), json!(5)] {
            let error = peer.error(method, json!({"cursor": cursor})).await;
            assert_eq!(error["code"], -32602, "{method} {cursor}: {error}");
            assert!(error["message"].as_str().unwrap().contains(method), "{method} {cursor}: {error}");
        }
        assert!(peer.result(method, json!({})).await.get("nextCursor").is_none(), "{method}");
    }
    peer.validate();
}
