//! Prompts (2025-11-25 `server/prompts`): [`PromptDef`] (descriptor and get handler), the
//! wire shapes of `prompts/get` ([`GetPromptResult`], [`PromptMessage`]), and the
//! `prompts/list` and `prompts/get` handlers.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_tasks_engine::Context;
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::mcp::{Content, Meta};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Catalog, Work};

/// Schema `Prompt`: one entry of `prompts/list`. `icons` is not modelled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// Name used in `prompts/get`.
    pub name: String,
    /// Name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt provides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments the prompt takes; absent when it takes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Prompt `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Schema `PromptArgument`: one argument a prompt takes (arguments are strings).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// The argument's name.
    pub name: String,
    /// Name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the argument is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether `prompts/get` must supply it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

impl PromptArgument {
    /// An argument `prompts/get` must supply (`-32602` otherwise).
    pub fn required(name: impl Into<String>) -> PromptArgument {
        PromptArgument { name: name.into(), title: None, description: None, required: Some(true) }
    }

    /// An argument `prompts/get` may leave out.
    pub fn optional(name: impl Into<String>) -> PromptArgument {
        PromptArgument { name: name.into(), title: None, description: None, required: Some(false) }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> PromptArgument {
        self.description = Some(description.into());
        self
    }

    /// Sets the display name.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> PromptArgument {
        self.title = Some(title.into());
        self
    }
}

/// Schema `Role`: who a prompt message is from. On the wire: `"user"` or `"assistant"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The model's side.
    Assistant,
    /// The user's side.
    User,
}

/// Schema `PromptMessage`: one message of a prompt, with one content block (text, image,
/// audio, resource link or embedded resource).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who the message is from.
    pub role: Role,
    /// What it says.
    pub content: Content,
}

impl PromptMessage {
    /// A message from the user.
    pub fn user(content: Content) -> PromptMessage {
        PromptMessage { role: Role::User, content }
    }

    /// A message from the assistant.
    pub fn assistant(content: Content) -> PromptMessage {
        PromptMessage { role: Role::Assistant, content }
    }
}

/// Schema `GetPromptResult`: the result of `prompts/get`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetPromptResult {
    /// A description of the prompt as filled in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
}

impl GetPromptResult {
    /// A result with these messages and no description.
    pub fn new(messages: Vec<PromptMessage>) -> GetPromptResult {
        GetPromptResult { description: None, messages }
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> GetPromptResult {
        self.description = Some(description.into());
        self
    }
}

/// What a get handler is asked for. Every required argument is present (the server checks
/// before calling the handler).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PromptRequest {
    /// The prompt's name.
    pub name: String,
    /// The arguments the client sent.
    pub arguments: BTreeMap<String, String>,
}

impl PromptRequest {
    /// The value of argument `name`, if the client sent it.
    pub fn argument(&self, name: &str) -> Option<&str> {
        self.arguments.get(name).map(String::as_str)
    }
}

type GetFuture = Pin<Box<dyn Future<Output = Result<GetPromptResult, RpcError>> + Send>>;
type GetFn = Arc<dyn Fn(PromptRequest, Context) -> GetFuture + Send + Sync>;

/// A prompt as served: its descriptor and the handler that fills it in.
///
/// ```
/// # use mcp_tasks_protocol::mcp::Content;
/// # use mcp_tasks_server::{GetPromptResult, PromptArgument, PromptDef, PromptMessage};
/// let greet = PromptDef::new("greet", |request| async move {
///     let name = request.argument("name").unwrap_or_default();
///     Ok(GetPromptResult::new(vec![PromptMessage::user(Content::text(format!("Say hello to {name}.")))]))
/// })
/// .description("Greets someone")
/// .argument(PromptArgument::required("name").description("Whom to greet"));
/// ```
#[derive(Clone)]
pub struct PromptDef {
    descriptor: Prompt,
    get: GetFn,
}

impl PromptDef {
    /// A prompt named `name`, filled in by `get`.
    pub fn new<F, Fut>(name: impl Into<String>, get: F) -> PromptDef
    where
        F: Fn(PromptRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, RpcError>> + Send + 'static,
    {
        PromptDef::asking(name, move |request, _| get(request))
    }

    /// A prompt named `name` whose `get` may ask the client while it fills the prompt in
    /// ([`Context::elicit`], [`Context::request_named`]…): in 2025-11-25 as a request to the
    /// client, in 2026-07-28 as rounds of a Multi Round-Trip Request (`InputRequiredResult`).
    pub fn asking<F, Fut>(name: impl Into<String>, get: F) -> PromptDef
    where
        F: Fn(PromptRequest, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, RpcError>> + Send + 'static,
    {
        let descriptor = Prompt { name: name.into(), title: None, description: None, arguments: None, meta: None };
        PromptDef { descriptor, get: Arc::new(move |request, ctx| Box::pin(get(request, ctx))) }
    }

    /// Sets the display name.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> PromptDef {
        self.descriptor.title = Some(title.into());
        self
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> PromptDef {
        self.descriptor.description = Some(description.into());
        self
    }

    /// Adds an argument (in the order `prompts/list` shows them).
    #[must_use]
    pub fn argument(mut self, argument: PromptArgument) -> PromptDef {
        self.descriptor.arguments.get_or_insert_with(Vec::new).push(argument);
        self
    }

    /// What `prompts/list` shows.
    pub fn descriptor(&self) -> &Prompt {
        &self.descriptor
    }
}

/// The `params` of `prompts/get`.
#[derive(Deserialize)]
pub(crate) struct GetParams {
    pub(crate) name: String,
    #[serde(default)]
    arguments: Option<BTreeMap<String, String>>,
}

/// `prompts/list`: every prompt, by name, in one page.
pub(crate) fn list(catalog: &Catalog) -> Value {
    let prompts: Vec<&Prompt> = catalog.prompts.values().map(PromptDef::descriptor).collect();
    json!({ "prompts": prompts })
}

/// `prompts/get`, its handler asking the client through `ctx`. An unknown prompt and a
/// missing required argument are `-32602` (2025-11-25 prompts page, error handling).
pub(crate) async fn get(catalog: &Catalog, params: GetParams, ctx: Context) -> Result<Value, RpcError> {
    let get = getter(catalog, params)?;
    get(ctx).await
}

/// The checked `prompts/get` of `params`, to run with a context: the work of the request,
/// which in 2026-07-28 may outlive a round.
///
/// # Errors
/// `-32602` for an unknown prompt or a missing required argument.
pub(crate) fn getter(
    catalog: &Catalog,
    params: GetParams,
) -> Result<Work, RpcError> {
    let def = catalog.prompts.get(&params.name).ok_or_else(|| unknown_prompt(&params.name))?;
    let arguments = params.arguments.unwrap_or_default();
    let missing = def
        .descriptor
        .arguments
        .iter()
        .flatten()
        .find(|argument| argument.required == Some(true) && !arguments.contains_key(&argument.name));
    if let Some(argument) = missing {
        return Err(RpcError::invalid_params(format!(
            "Missing required argument '{}' for prompt {}",
            argument.name, params.name
        )));
    }
    let get = Arc::clone(&def.get);
    let request = PromptRequest { name: params.name, arguments };
    Ok(Box::new(move |ctx: Context| -> Pin<Box<dyn Future<Output = Result<Value, RpcError>> + Send>> {
        Box::pin(async move {
            let result = get(request, ctx).await?;
            serde_json::to_value(result).map_err(|err| RpcError::internal(err.to_string()))
        })
    }))
}

/// `-32602` for a prompt name the server does not have.
pub(crate) fn unknown_prompt(name: &str) -> RpcError {
    RpcError::invalid_params(format!("Unknown prompt: {name}"))
}
