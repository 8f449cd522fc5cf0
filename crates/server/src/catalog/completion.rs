//! Argument completion (2025-11-25 `server/utilities/completion`): [`CompletionDef`], one
//! handler per prompt argument or template variable, and the `completion/complete` handler.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::object;
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use super::Catalog;
use super::prompts::unknown_prompt;

/// The most values one `completion/complete` answer may carry (2025-11-25 `CompleteResult`).
const MAX_VALUES: usize = 100;

/// What a completion is for: a prompt (by name) or a resource template (by its URI
/// template, or a static resource by URI). On the wire: `{"type": "ref/prompt", "name"}` or
/// `{"type": "ref/resource", "uri"}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CompletionRef {
    /// `ref/prompt`: the prompt's name.
    Prompt(String),
    /// `ref/resource`: the template's `uriTemplate` (or a resource's URI).
    Resource(String),
}

impl CompletionRef {
    /// A reference to the prompt `name`.
    pub fn prompt(name: impl Into<String>) -> CompletionRef {
        CompletionRef::Prompt(name.into())
    }

    /// A reference to the resource template `uri_template`.
    pub fn resource(uri_template: impl Into<String>) -> CompletionRef {
        CompletionRef::Resource(uri_template.into())
    }
}

/// What a completion handler is asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompletionRequest {
    /// The prompt or template.
    pub reference: CompletionRef,
    /// The argument (or template variable) being completed.
    pub argument: String,
    /// What the user has typed so far.
    pub value: String,
    /// Arguments or variables already resolved (`context.arguments`).
    pub context: BTreeMap<String, String>,
}

type CompleteFuture = Pin<Box<dyn Future<Output = Result<Vec<String>, RpcError>> + Send>>;
type CompleteFn = Arc<dyn Fn(CompletionRequest) -> CompleteFuture + Send + Sync>;

/// A completion handler for one argument of one prompt or template. It returns every
/// candidate for the typed value, best first; the server sends the first 100 and sets
/// `total` and `hasMore`.
///
/// ```
/// # use mcp_tasks_server::{CompletionDef, CompletionRef};
/// let cities = CompletionDef::new(CompletionRef::prompt("travel"), "city", |request| async move {
///     let all = ["paris", "park", "prague"];
///     Ok(all.iter().filter(|c| c.starts_with(&request.value)).map(|c| c.to_string()).collect())
/// });
/// ```
#[derive(Clone)]
pub struct CompletionDef {
    reference: CompletionRef,
    argument: String,
    complete: CompleteFn,
}

impl CompletionDef {
    /// Completes `argument` of `reference` with `complete`.
    pub fn new<F, Fut>(reference: CompletionRef, argument: impl Into<String>, complete: F) -> CompletionDef
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, RpcError>> + Send + 'static,
    {
        CompletionDef {
            reference,
            argument: argument.into(),
            complete: Arc::new(move |request| Box::pin(complete(request))),
        }
    }

    /// The prompt or template this completes.
    pub fn reference(&self) -> &CompletionRef {
        &self.reference
    }

    /// The argument this completes.
    pub fn argument(&self) -> &str {
        &self.argument
    }

    /// The key the catalog files it under.
    pub(crate) fn key(&self) -> (CompletionRef, String) {
        (self.reference.clone(), self.argument.clone())
    }
}

/// The `params` of `completion/complete`.
#[derive(Deserialize)]
pub(crate) struct CompleteParams {
    #[serde(rename = "ref", deserialize_with = "reference")]
    reference: WireRef,
    #[serde(deserialize_with = "argument")]
    argument: WireArgument,
    #[serde(default, deserialize_with = "context")]
    context: Option<WireContext>,
}

// Objects in the schema: a derived struct (or tagged enum) would read an array as its fields.

fn reference<'de, D: Deserializer<'de>>(deserializer: D) -> Result<WireRef, D::Error> {
    object::required(deserializer, "ref")
}

fn argument<'de, D: Deserializer<'de>>(deserializer: D) -> Result<WireArgument, D::Error> {
    object::required(deserializer, "argument")
}

fn context<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<WireContext>, D::Error> {
    object::optional(deserializer, "context")
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum WireRef {
    #[serde(rename = "ref/prompt")]
    Prompt { name: String },
    #[serde(rename = "ref/resource")]
    Resource { uri: String },
}

#[derive(Deserialize)]
struct WireArgument {
    name: String,
    value: String,
}

#[derive(Deserialize)]
struct WireContext {
    #[serde(default)]
    arguments: Option<BTreeMap<String, String>>,
}

/// `completion/complete`. An unknown prompt or template is `-32602`; a known one without a
/// handler for the argument gets no suggestions: `{"completion": {"values": [], "hasMore":
/// false}}`.
pub(crate) async fn complete(catalog: &Catalog, params: CompleteParams) -> Result<Value, RpcError> {
    let reference = match params.reference {
        WireRef::Prompt { name } if catalog.prompts.contains_key(&name) => CompletionRef::Prompt(name),
        WireRef::Prompt { name } => return Err(unknown_prompt(&name)),
        WireRef::Resource { uri } if catalog.has_template_or_resource(&uri) => CompletionRef::Resource(uri),
        WireRef::Resource { uri } => {
            return Err(RpcError::invalid_params(format!("Unknown resource template: {uri}")));
        }
    };
    let key = (reference, params.argument.name);
    let Some(def) = catalog.completions.get(&key) else {
        return Ok(json!({ "completion": { "values": [], "hasMore": false } }));
    };
    let complete = Arc::clone(&def.complete);
    let (reference, argument) = key;
    let context = params.context.and_then(|context| context.arguments).unwrap_or_default();
    let mut values = complete(CompletionRequest { reference, argument, value: params.argument.value, context }).await?;
    let total = values.len();
    values.truncate(MAX_VALUES);
    Ok(json!({ "completion": { "values": values, "total": total, "hasMore": total > MAX_VALUES } }))
}

impl Catalog {
    /// Whether `uri` is the `uriTemplate` of a template or the URI of a static resource.
    fn has_template_or_resource(&self, uri: &str) -> bool {
        self.resources.contains_key(uri) || self.templates.iter().any(|def| def.template().as_str() == uri)
    }
}
