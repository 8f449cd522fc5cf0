//! Tools written as closures: [`handler_fn`] turns an `async` closure into a
//! [`Handler`], so a tool needs no struct of its own.

use std::future::Future;

use async_trait::async_trait;
use mcp_tasks_engine::{Context, Handler, Outcome};
use serde_json::Value;

/// A [`Handler`] made from a closure; see [`handler_fn`].
#[derive(Clone)]
pub struct FnHandler<F> {
    call: F,
}

/// Turns `call` into a tool [`Handler`]: it receives the call's arguments (a JSON object) and
/// the [`Context`], and returns the `CallToolResult` (or the JSON-RPC error) as an
/// [`Outcome`].
///
/// ```
/// # use mcp_tasks_engine::Outcome;
/// # use mcp_tasks_server::{ToolDef, handler_fn};
/// # use serde_json::json;
/// let echo = ToolDef::new(
///     "echo",
///     "Echoes its text",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
///     handler_fn(|arguments, _ctx| async move {
///         let text = arguments["text"].as_str().unwrap_or_default().to_owned();
///         Outcome::Result(json!({"content": [{"type": "text", "text": text}]}))
///     }),
/// );
/// ```
pub fn handler_fn<F, Fut>(call: F) -> FnHandler<F>
where
    F: Fn(Value, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    FnHandler { call }
}

#[async_trait]
impl<F, Fut> Handler for FnHandler<F>
where
    F: Fn(Value, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    async fn call(&self, arguments: Value, ctx: Context) -> Outcome {
        (self.call)(arguments, ctx).await
    }
}
