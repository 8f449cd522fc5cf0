//! [`McpTool`]: what makes a handler an MCP tool for the engine. The engine knows no wire
//! shapes; this wrapper, around every tool the server registers, tells it which results
//! report a failure (a `CallToolResult` with `isError: true`) and how input requests are
//! named in messages (their 2025-11-25 method).

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_engine::{Context, Handler, InputKind, Outcome};
use serde_json::Value;

use mcp_tasks_protocol::mcp::method;

/// How many characters of a failed result's first text go into the status message.
const DETAIL_CHARS: usize = 200;

/// A tool's handler as the engine runs it: calls go to `inner`; results and input requests
/// are read the MCP way.
pub(crate) struct McpTool {
    pub(crate) inner: Arc<dyn Handler>,
}

#[async_trait]
impl Handler for McpTool {
    async fn call(&self, arguments: Value, ctx: Context) -> Outcome {
        self.inner.call(arguments, ctx).await
    }

    /// A `CallToolResult` with `isError: true` reports a failure; the detail is its first
    /// text content, shortened to 200 characters (with `…`), or `no details`.
    fn reported_failure(&self, result: &Value) -> Option<String> {
        reports_error(result).then(|| first_text(result))
    }

    /// The request's method, e.g. `elicitation/create`.
    fn describe_input(&self, kind: InputKind) -> String {
        input_method(kind).to_owned()
    }
}

/// The request method that asks a client for input of `kind` (the same in both eras).
pub(crate) fn input_method(kind: InputKind) -> &'static str {
    match kind {
        InputKind::Elicitation => method::ELICITATION_CREATE,
        InputKind::Sampling => method::SAMPLING_CREATE_MESSAGE,
        InputKind::Roots => method::ROOTS_LIST,
    }
}

/// The client capability that says it can answer input of `kind` (the same name in both
/// eras: declared at `initialize` in 2025-11-25, per request in 2026-07-28).
pub(crate) fn input_capability(kind: InputKind) -> &'static str {
    match kind {
        InputKind::Elicitation => "elicitation",
        InputKind::Sampling => "sampling",
        InputKind::Roots => "roots",
    }
}

/// Whether a result object says `isError: true` (a `CallToolResult` that failed).
fn reports_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

/// The first text content of a result, shortened, for a status message.
fn first_text(result: &Value) -> String {
    let text = result
        .get("content")
        .and_then(Value::as_array)
        .and_then(|items| items.iter().find_map(|item| item.get("text").and_then(Value::as_str)))
        .unwrap_or("no details");
    let mut short: String = text.chars().take(DETAIL_CHARS).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Nothing;

    #[async_trait]
    impl Handler for Nothing {
        async fn call(&self, _arguments: Value, _ctx: Context) -> Outcome {
            Outcome::Result(json!({}))
        }
    }

    fn tool() -> McpTool {
        McpTool { inner: Arc::new(Nothing) }
    }

    #[test]
    fn only_a_result_with_is_error_true_reports_a_failure_with_its_first_text() {
        let failed = json!({"content": [{"type": "image"}, {"type": "text", "text": "bad input"}], "isError": true});
        assert_eq!(tool().reported_failure(&failed).as_deref(), Some("bad input"));
        assert_eq!(tool().reported_failure(&json!({"isError": true})).as_deref(), Some("no details"));
        for fine in [json!({"content": [], "isError": false}), json!({"content": []}), json!({"isError": "true"})] {
            assert_eq!(tool().reported_failure(&fine), None, "{fine}");
        }
    }

    #[test]
    fn a_long_detail_is_cut_at_200_characters_with_an_ellipsis() {
        let long = "é".repeat(250);
        let detail = tool().reported_failure(&json!({"content": [{"type": "text", "text": long}], "isError": true}));
        assert_eq!(detail, Some(format!("{}…", "é".repeat(200))));
        let exact = "x".repeat(200);
        let detail = tool().reported_failure(&json!({"content": [{"type": "text", "text": exact}], "isError": true}));
        assert_eq!(detail, Some(exact));
    }

    #[test]
    fn input_requests_are_named_by_their_method() {
        assert_eq!(tool().describe_input(InputKind::Elicitation), "elicitation/create");
        assert_eq!(tool().describe_input(InputKind::Sampling), "sampling/createMessage");
    }
}
