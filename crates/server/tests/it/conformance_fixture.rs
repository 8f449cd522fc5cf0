//! The conformance fixture (`examples/conformance/fixture.rs`, the server of the
//! `conformance_server` example) driven over a pipe the way the official suite's 2025-11-25
//! server scenarios drive it, one test per scenario family; every message is checked
//! against the schema.

use serde_json::{Value, json};

use mcp_tasks_testkit_server::{TestPeer, peer::assert_schema};

use crate::sqlite_engine;

#[path = "../../examples/conformance/fixture.rs"]
mod fixture;

/// The fixture, initialized by a client that declares sampling and elicitation.
async fn start() -> (TestPeer, Value, tempfile::TempDir) {
    let (engine, dir) = sqlite_engine();
    let mut peer = TestPeer::connect(fixture::server(engine).unwrap());
    let response = peer.initialize(json!({"sampling": {}, "elicitation": {}})).await;
    (peer, response, dir)
}

async fn call(peer: &mut TestPeer, name: &str, arguments: Value) -> (Vec<Value>, Value) {
    let (before, response) = peer.request("tools/call", json!({"name": name, "arguments": arguments})).await;
    assert_schema("CallToolResult", &response["result"]);
    (before, response["result"].clone())
}

#[tokio::test]
async fn server_initialize_declares_every_capability_the_scenarios_need() {
    let (mut peer, response, _dir) = start().await;
    let result = &response["result"];
    assert_eq!(result["serverInfo"], json!({"name": fixture::SERVER_NAME, "version": "1.0.0"}));
    let capabilities = &result["capabilities"];
    for capability in ["tools", "resources", "prompts", "logging", "completions"] {
        assert!(capabilities[capability].is_object(), "{capability} missing from {capabilities}");
    }
    assert_eq!(capabilities["resources"]["subscribe"], true);
    assert_schema("InitializeResult", result);
    assert_eq!(peer.result("ping", json!({})).await, json!({}));
    peer.validate();
}

#[tokio::test]
async fn tools_list_names_every_fixture_tool_with_a_description_and_keeps_the_2020_12_schema() {
    let (mut peer, _, _dir) = start().await;
    let result = peer.result("tools/list", json!({})).await;
    assert_schema("ListToolsResult", &result);
    let tools = result["tools"].as_array().unwrap();
    let mut names: Vec<&str> = tools.iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            // `about` first: http-header-validation calls the first listed tool with `{}`.
            "about",
            "confirm_delete",
            "failing_job",
            "greet",
            "json_schema_2020_12_tool",
            "multi_input",
            "protocol_error_job",
            "slow_compute",
            "test_audio_content",
            "test_custom_header",
            "test_elicitation",
            "test_elicitation_sep1034_defaults",
            "test_elicitation_sep1330_enums",
            "test_embedded_resource",
            "test_error_handling",
            "test_image_content",
            "test_input_required_result_capabilities",
            "test_input_required_result_elicitation",
            "test_input_required_result_list_roots",
            "test_input_required_result_multi_round",
            "test_input_required_result_multiple_inputs",
            "test_input_required_result_request_state",
            "test_input_required_result_sampling",
            "test_input_required_result_tampered_state",
            "test_logging_tool",
            "test_missing_capability",
            "test_multiple_content_types",
            "test_reconnection",
            "test_sampling",
            "test_simple_text",
            "test_streaming_elicitation",
            "test_tool_with_logging",
            "test_tool_with_progress",
            "test_tool_with_task",
            "test_trigger_tool_change",
        ]
    );
    for tool in tools {
        assert!(tool["description"].is_string() && tool["inputSchema"]["type"] == "object", "{tool}");
    }
    let schema_tool = tools.iter().find(|tool| tool["name"] == "json_schema_2020_12_tool").unwrap();
    assert_eq!(schema_tool["inputSchema"], fixture::json_schema_2020_12());
    assert_eq!(schema_tool["inputSchema"]["$defs"]["address"]["$anchor"], "addressDef");
    peer.validate();
}

#[tokio::test]
async fn content_tools_return_text_image_audio_embedded_and_mixed_content() {
    let (mut peer, _, _dir) = start().await;
    // The simple-text scenario leaves `arguments` out.
    let (_, response) = peer.request("tools/call", json!({"name": "test_simple_text"})).await;
    assert_eq!(
        response["result"],
        json!({"content": [{"type": "text", "text": "This is a simple text response for testing."}]})
    );
    let image = json!({"type": "image", "data": fixture::IMAGE_PNG_BASE64, "mimeType": "image/png"});
    assert_eq!(call(&mut peer, "test_image_content", json!({})).await.1, json!({"content": [image]}));
    let (_, audio) = call(&mut peer, "test_audio_content", json!({})).await;
    assert_eq!(
        audio,
        json!({"content": [{"type": "audio", "data": fixture::AUDIO_WAV_BASE64, "mimeType": "audio/wav"}]})
    );
    let (_, embedded) = call(&mut peer, "test_embedded_resource", json!({})).await;
    assert_eq!(
        embedded["content"][0],
        json!({"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."
        }})
    );
    let (_, mixed) = call(&mut peer, "test_multiple_content_types", json!({})).await;
    assert_eq!(
        mixed["content"],
        json!([
            {"type": "text", "text": "Multiple content types test:"},
            image,
            {"type": "resource", "resource": {
                "uri": "test://mixed-content-resource",
                "mimeType": "application/json",
                "text": "{\"test\":\"data\",\"value\":123}"
            }}
        ])
    );
    peer.validate();
}

#[tokio::test]
async fn test_error_handling_returns_a_result_with_is_error() {
    let (mut peer, _, _dir) = start().await;
    let (_, result) = call(&mut peer, "test_error_handling", json!({})).await;
    assert_eq!(
        result,
        json!({
            "content": [{"type": "text", "text": "This tool intentionally returns an error for testing"}],
            "isError": true
        })
    );
    peer.validate();
}

#[tokio::test]
async fn test_tool_with_logging_sends_three_info_messages_during_the_call() {
    let (mut peer, _, _dir) = start().await;
    assert_eq!(peer.result("logging/setLevel", json!({"level": "debug"})).await, json!({}));
    let (before, result) = call(&mut peer, "test_tool_with_logging", json!({})).await;
    let logs: Vec<&Value> =
        before.iter().filter(|m| m["method"] == "notifications/message").map(|m| &m["params"]).collect();
    assert_eq!(
        logs,
        [
            &json!({"level": "info", "data": "Tool execution started"}),
            &json!({"level": "info", "data": "Tool processing data"}),
            &json!({"level": "info", "data": "Tool execution completed"}),
        ]
    );
    assert_eq!(result["content"][0]["text"], "Tool with logging executed successfully");
    peer.validate();
}

#[tokio::test]
async fn test_tool_with_progress_echoes_the_token_with_rising_progress() {
    let (mut peer, _, _dir) = start().await;
    let params =
        json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "progress-test-1"}});
    let (before, response) = peer.request("tools/call", params).await;
    let progress: Vec<&Value> =
        before.iter().filter(|m| m["method"] == "notifications/progress").map(|m| &m["params"]).collect();
    assert_eq!(progress.len(), 3, "{before:?}");
    for (params, expected) in progress.iter().zip([0.0, 50.0, 100.0]) {
        assert_eq!(params["progressToken"], "progress-test-1");
        assert_eq!(params["progress"].as_f64(), Some(expected));
        assert_eq!(params["total"].as_f64(), Some(100.0));
    }
    assert_eq!(progress[1]["message"], "Completed step 50 of 100");
    assert!(response["result"]["content"][0]["text"].is_string());
    peer.validate();
}

#[tokio::test]
async fn test_sampling_asks_the_client_and_returns_its_answer() {
    let (mut peer, _, _dir) = start().await;
    let id = peer
        .send_request(
            "tools/call",
            json!({"name": "test_sampling", "arguments": {"prompt": "Test prompt for sampling"}}),
        )
        .await;
    let request = peer.until(|m| m["method"] == "sampling/createMessage").await.pop().unwrap();
    assert_eq!(
        request["params"],
        json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "Test prompt for sampling"}}],
            "maxTokens": 100
        })
    );
    let answer = json!({
        "role": "assistant",
        "content": {"type": "text", "text": "This is a test response from the client"},
        "model": "test-model",
        "stopReason": "endTurn"
    });
    assert_schema("CreateMessageResult", &answer);
    peer.send_result(&request["id"], answer).await;
    let response = peer.until(|m| m["id"] == id).await.pop().unwrap();
    assert_eq!(
        response["result"],
        json!({"content": [{"type": "text", "text": "LLM response: This is a test response from the client"}]})
    );
    peer.validate();
}

#[tokio::test]
async fn test_sampling_without_the_client_capability_is_a_tool_error() {
    let (engine, _dir) = sqlite_engine();
    let mut peer = TestPeer::start(fixture::server(engine).unwrap()).await;
    let (_, result) = call(&mut peer, "test_sampling", json!({"prompt": "hi"})).await;
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"].as_str().unwrap().starts_with("Sampling not supported or error: "),
        "{result}"
    );
    peer.validate();
}

/// Calls an elicitation tool, checks the request's schema, accepts with `content`, and
/// returns the tool's text.
async fn elicitation(peer: &mut TestPeer, tool: &str, arguments: Value, content: Value) -> (Value, String) {
    let id = peer.send_request("tools/call", json!({"name": tool, "arguments": arguments})).await;
    let request = peer.until(|m| m["method"] == "elicitation/create").await.pop().unwrap();
    let answer = json!({"action": "accept", "content": content});
    assert_schema("ElicitResult", &answer);
    peer.send_result(&request["id"], answer).await;
    let response = peer.until(|m| m["id"] == id).await.pop().unwrap();
    assert_schema("CallToolResult", &response["result"]);
    (request["params"].clone(), response["result"]["content"][0]["text"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn test_elicitation_asks_for_username_and_email() {
    let (mut peer, _, _dir) = start().await;
    let content = json!({"username": "testuser", "email": "test@example.com"});
    let (params, text) =
        elicitation(&mut peer, "test_elicitation", json!({"message": "Please provide your information"}), content.clone())
            .await;
    assert_eq!(params["message"], "Please provide your information");
    assert_eq!(params["requestedSchema"]["required"], json!(["username", "email"]));
    // Key order follows serde_json's map (sorted, or as sent when a crate in the build enables
    // preserve_order), so the content is compared as JSON.
    let shown = text.strip_prefix("User response: action=accept, content=").unwrap_or_else(|| panic!("{text}"));
    assert_eq!(serde_json::from_str::<Value>(shown).unwrap(), content);
    peer.validate();
}

#[tokio::test]
async fn test_elicitation_sep1034_defaults_offers_a_default_for_every_primitive() {
    let (mut peer, _, _dir) = start().await;
    let (params, text) =
        elicitation(&mut peer, "test_elicitation_sep1034_defaults", json!({}), json!({"name": "Jane"})).await;
    let properties = &params["requestedSchema"]["properties"];
    assert_eq!(properties["name"]["default"], "John Doe");
    assert_eq!(properties["age"], json!({"type": "integer", "description": "User age", "default": 30}));
    assert_eq!(properties["score"]["default"], 95.5);
    assert_eq!(properties["status"]["enum"], json!(["active", "inactive", "pending"]));
    assert_eq!(properties["status"]["default"], "active");
    assert_eq!(properties["verified"]["default"], true);
    assert_eq!(text, r#"Elicitation completed: action=accept, content={"name":"Jane"}"#);
    peer.validate();
}

#[tokio::test]
async fn test_elicitation_sep1330_enums_uses_all_five_enum_forms() {
    let (mut peer, _, _dir) = start().await;
    let (params, text) =
        elicitation(&mut peer, "test_elicitation_sep1330_enums", json!({}), json!({"untitledSingle": "option1"})).await;
    let properties = &params["requestedSchema"]["properties"];
    assert_eq!(properties["untitledSingle"]["enum"], json!(["option1", "option2", "option3"]));
    assert_eq!(properties["titledSingle"]["oneOf"][0], json!({"const": "value1", "title": "First Option"}));
    assert_eq!(properties["legacyEnum"]["enumNames"], json!(["Option One", "Option Two", "Option Three"]));
    assert_eq!(properties["untitledMulti"]["items"]["enum"], json!(["option1", "option2", "option3"]));
    assert_eq!(properties["titledMulti"]["items"]["anyOf"][2], json!({"const": "value3", "title": "Third Choice"}));
    assert_eq!(text, r#"Elicitation completed: action=accept, content={"untitledSingle":"option1"}"#);
    peer.validate();
}

#[tokio::test]
async fn resources_list_read_template_and_subscriptions_behave_as_the_scenarios_expect() {
    let (mut peer, _, _dir) = start().await;
    let list = peer.result("resources/list", json!({})).await;
    assert_schema("ListResourcesResult", &list);
    let uris: Vec<&str> = list["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["test://static-binary", "test://static-text", "test://watched-resource"]);
    for resource in list["resources"].as_array().unwrap() {
        assert!(resource["name"].is_string() && resource["description"].is_string(), "{resource}");
    }

    let text = peer.result("resources/read", json!({"uri": "test://static-text"})).await;
    assert_eq!(
        text,
        json!({"contents": [{
            "uri": "test://static-text",
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource."
        }]})
    );
    let binary = peer.result("resources/read", json!({"uri": "test://static-binary"})).await;
    assert_eq!(
        binary,
        json!({"contents": [
            {"uri": "test://static-binary", "mimeType": "image/png", "blob": fixture::IMAGE_PNG_BASE64}
        ]})
    );
    let templated = peer.result("resources/read", json!({"uri": "test://template/123/data"})).await;
    assert_eq!(
        templated,
        json!({"contents": [{
            "uri": "test://template/123/data",
            "mimeType": "application/json",
            "text": r#"{"id":"123","templateTest":true,"data":"Data for ID: 123"}"#
        }]})
    );
    for result in [&text, &binary, &templated] {
        assert_schema("ReadResourceResult", result);
    }
    let templates = peer.result("resources/templates/list", json!({})).await;
    assert_eq!(templates["resourceTemplates"][0]["uriTemplate"], "test://template/{id}/data");
    assert_schema("ListResourceTemplatesResult", &templates);

    assert_eq!(peer.result("resources/subscribe", json!({"uri": "test://watched-resource"})).await, json!({}));
    assert_eq!(peer.result("resources/unsubscribe", json!({"uri": "test://watched-resource"})).await, json!({}));
    let error =
        peer.error("resources/read", json!({"uri": "test://nonexistent-resource-for-conformance-testing"})).await;
    assert_eq!(error["code"], -32002);
    assert_eq!(error["data"]["uri"], "test://nonexistent-resource-for-conformance-testing");
    peer.validate();
}

#[tokio::test]
async fn prompts_list_and_get_return_the_fixture_prompts() {
    let (mut peer, _, _dir) = start().await;
    let list = peer.result("prompts/list", json!({})).await;
    assert_schema("ListPromptsResult", &list);
    let names: Vec<&str> = list["prompts"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "test_input_required_result_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_simple_prompt"
        ]
    );
    assert!(list["prompts"].as_array().unwrap().iter().all(|p| p["description"].is_string()));

    let simple = peer.result("prompts/get", json!({"name": "test_simple_prompt"})).await;
    assert_eq!(
        simple,
        json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}
        ]})
    );
    let params = json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "hello", "arg2": "world"}});
    let with_arguments = peer.result("prompts/get", params).await;
    assert_eq!(with_arguments["messages"][0]["content"]["text"], "Prompt with arguments: arg1='hello', arg2='world'");
    let params =
        json!({"name": "test_prompt_with_embedded_resource", "arguments": {"resourceUri": "test://example-resource"}});
    let embedded = peer.result("prompts/get", params).await;
    assert_eq!(
        embedded["messages"],
        json!([
            {"role": "user", "content": {"type": "resource", "resource": {
                "uri": "test://example-resource",
                "mimeType": "text/plain",
                "text": "Embedded resource content for testing."
            }}},
            {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}}
        ])
    );
    let image = peer.result("prompts/get", json!({"name": "test_prompt_with_image"})).await;
    assert_eq!(
        image["messages"][0]["content"],
        json!({"type": "image", "data": fixture::IMAGE_PNG_BASE64, "mimeType": "image/png"})
    );
    assert_eq!(image["messages"][1]["content"]["text"], "Please analyze the image above.");
    for result in [&simple, &with_arguments, &embedded, &image] {
        assert_schema("GetPromptResult", result);
    }
    peer.validate();
}

#[tokio::test]
async fn completion_complete_answers_for_the_prompt_argument() {
    let (mut peer, _, _dir) = start().await;
    let reference = json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"});
    let params = json!({"ref": reference, "argument": {"name": "arg1", "value": "par"}});
    let result = peer.result("completion/complete", params).await;
    assert_eq!(result, json!({"completion": {"values": ["paris", "park", "party"], "total": 3, "hasMore": false}}));
    assert_schema("CompleteResult", &result);
    let params = json!({"ref": reference, "argument": {"name": "arg1", "value": "test"}});
    assert_eq!(peer.result("completion/complete", params).await["completion"]["values"], json!([]));
    peer.validate();
}
