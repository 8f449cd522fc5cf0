//! The client under test of the official MCP conformance suite's *client* scenarios
//! (`@modelcontextprotocol/conformance`, run by `interop/conformance-client.sh`).
//!
//! The harness runs `conformance_client <mock-server-url>` with the scenario in
//! `MCP_CONFORMANCE_SCENARIO`, the revision in `MCP_CONFORMANCE_PROTOCOL_VERSION` (2026-07-28
//! pins [`Era::Modern`], anything else [`Era::Legacy`]) and, for some scenarios, a JSON
//! `MCP_CONFORMANCE_CONTEXT`. This program only chooses the calls each scenario needs; the
//! protocol work (the per-request `_meta`, the mirrored headers, MRTR rounds, resumption) is
//! the library's. Exit status 0 when every call it made succeeded.
//!
//! ```text
//! MCP_CONFORMANCE_SCENARIO=tools_call conformance_client http://localhost:PORT/mcp
//! ```

use std::process::ExitCode;

use async_trait::async_trait;
use mcp_tasks_client::{Client, ClientError, ElicitationHandler, Era, RpcError, SamplingHandler, ServerRequest, ToolInfo};
use serde_json::{Map, Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client <server-url> (with MCP_CONFORMANCE_SCENARIO set)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let era = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").as_deref() {
        Ok("2026-07-28") => Era::Modern,
        _ => Era::Legacy,
    };
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    eprintln!("conformance_client: scenario {scenario:?}, era {era:?}, url {url}");
    match run(&scenario, era, &url, &context).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Unknown) => {
            eprintln!("conformance_client: no plan for scenario {scenario:?}");
            ExitCode::from(2)
        }
        Err(Failure::Client(error)) => {
            eprintln!("conformance_client: {error}");
            ExitCode::FAILURE
        }
    }
}

enum Failure {
    /// A scenario this driver has no plan for.
    Unknown,
    Client(ClientError),
}

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Failure {
        Failure::Client(error)
    }
}

async fn run(scenario: &str, era: Era, url: &str, context: &Value) -> Result<(), Failure> {
    let client = Client::builder().era(era).elicitation(Accept).sampling(Reply).connect_http(url).await?;
    eprintln!("conformance_client: connected to {:?}, era {:?}", client.server().implementation.name, client.era());
    match scenario {
        // Connect (above), list; nothing else asked.
        "initialize" | "request-metadata" => {
            let tools = client.list_tools().await?;
            eprintln!("conformance_client: {} tools", tools.len());
        }
        "tools_call" => {
            client.list_tools().await?;
            let result = client.call_tool("add_numbers", json!({"a": 5, "b": 3})).await?;
            eprintln!("conformance_client: add_numbers -> {}", text_of(&result));
        }
        "elicitation-sep1034-client-defaults" => {
            client.list_tools().await?;
            client.call_tool("test_client_elicitation_defaults", json!({})).await?;
        }
        "sse-retry" => {
            client.list_tools().await?;
            client.call_tool("test_reconnection", json!({})).await?;
        }
        "json-schema-2020-12-preservation" => {
            let tools = client.list_tools().await?;
            let focal = tools
                .iter()
                .find(|tool| tool.name == "json_schema_2020_12_tool")
                .ok_or_else(|| ClientError::UnknownTool("json_schema_2020_12_tool".into()))?;
            client.call_tool("json_schema_echo", json!({"schema": focal.input_schema})).await?;
        }
        // List only: the mock serves no tools/call, and the check is that listing (and
        // reading the schema) never fetches the network `$ref`.
        "json-schema-ref-no-deref" => {
            let tools = client.list_tools().await?;
            eprintln!("conformance_client: {} tools, schemas kept as sent", tools.len());
        }
        "sep-2322-client-request-state" => {
            client.list_tools().await?;
            // The MRTR calls and an unrelated one at the same time: retries must not leak
            // into the other call (parallel isolation).
            let (echo, unrelated) = tokio::join!(
                client.call_tool("test_mrtr_echo_state", json!({})),
                client.call_tool("test_mrtr_unrelated", json!({})),
            );
            echo?;
            unrelated?;
            client.call_tool("test_mrtr_no_state", json!({})).await?;
            client.call_tool("test_mrtr_no_result_type", json!({})).await?;
        }
        "http-standard-headers" | "http-invalid-tool-headers" => {
            // Every tool the client keeps (the library drops those it must refuse).
            for tool in client.list_tools().await? {
                let result = client.call_tool(&tool.name, sample_arguments(&tool)).await?;
                eprintln!("conformance_client: {} -> {}", tool.name, text_of(&result));
            }
        }
        "http-custom-headers" => {
            client.list_tools().await?;
            let calls = context.get("toolCalls").and_then(Value::as_array).cloned().unwrap_or_default();
            if calls.is_empty() {
                return Err(ClientError::InvalidArguments("MCP_CONFORMANCE_CONTEXT has no toolCalls".into()).into());
            }
            for call in calls {
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
                let arguments = call.get("arguments").cloned().unwrap_or(Value::Null);
                client.call_tool(name, arguments).await?;
            }
        }
        _ => return Err(Failure::Unknown),
    }
    Ok(())
}

/// Arguments that fit a tool's required properties: each property's `default`, else a
/// value of its type.
fn sample_arguments(tool: &ToolInfo) -> Value {
    let schema = &tool.input_schema;
    let required = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut arguments = Map::new();
    for name in required.iter().filter_map(Value::as_str) {
        let property = &schema["properties"][name];
        arguments.insert(name.to_owned(), sample_value(property));
    }
    Value::Object(arguments)
}

fn sample_value(property: &Value) -> Value {
    if let Some(default) = property.get("default") {
        return default.clone();
    }
    if let Some(first) = property.get("enum").and_then(Value::as_array).and_then(|values| values.first()) {
        return first.clone();
    }
    match property.get("type").and_then(Value::as_str) {
        Some("boolean") => json!(true),
        Some("integer") => json!(1),
        Some("number") => json!(1.5),
        Some("object") => json!({}),
        Some("array") => json!([]),
        Some("null") => Value::Null,
        _ => json!("sample"),
    }
}

fn text_of(result: &mcp_tasks_client::protocol::CallToolResult) -> String {
    serde_json::to_value(&result.content).map(|content| content.to_string()).unwrap_or_default()
}

/// Accepts every elicitation, filling each field of the requested schema with its default
/// (SEP-1034), else a value of its type.
struct Accept;

#[async_trait]
impl ElicitationHandler for Accept {
    async fn elicit(&self, request: ServerRequest) -> Result<Value, RpcError> {
        let properties = request.params["requestedSchema"]["properties"].as_object().cloned().unwrap_or_default();
        let content: Map<String, Value> =
            properties.iter().map(|(name, property)| (name.clone(), sample_value(property))).collect();
        eprintln!("conformance_client: elicitation answered with {}", Value::Object(content.clone()));
        Ok(json!({"action": "accept", "content": content}))
    }
}

/// Answers every sampling request with one fixed assistant message.
struct Reply;

#[async_trait]
impl SamplingHandler for Reply {
    async fn create_message(&self, _request: ServerRequest) -> Result<Value, RpcError> {
        Ok(json!({"role": "assistant", "content": {"type": "text", "text": "conformance"}, "model": "conformance-client"}))
    }
}
