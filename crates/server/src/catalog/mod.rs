//! What a server offers besides tools, defined in code: resources and resource templates,
//! prompts, argument completion; plus the logging utility and closure-based tool handlers.
//! The methods here are those both eras share, plain request/response (none of them is
//! task-augmented); `resources/subscribe` and `logging/setLevel` are 2025-11-25 only and
//! live in its codec.
//!
//! - `resources`: [`ResourceDef`], [`ResourceTemplateDef`], [`ResourceContents`];
//!   `resources/list`, `resources/templates/list`, `resources/read`.
//! - `uri_template`: [`UriTemplate`], RFC 6570 level-1 templates and their matching.
//! - `prompts`: [`PromptDef`] and the `prompts/get` shapes; `prompts/list`, `prompts/get`.
//! - `completion`: [`CompletionDef`]; `completion/complete`.
//! - `logging`: [`log_message`], for a tool to send `notifications/message`.
//! - `tools`: [`handler_fn`], a tool handler from a closure.
//! - `upstream`: [`CatalogUpstream`], another server that serves these methods (the proxy).
//!
//! Lists come in a single page: a `cursor` is refused with `-32602`, since none is issued.

mod completion;
mod logging;
mod prompts;
mod resources;
mod tools;
mod upstream;
mod uri_template;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;

use mcp_tasks_engine::Context;
use mcp_tasks_protocol::jsonrpc::RpcError;
use mcp_tasks_protocol::mcp::{PaginatedParams, method};
use serde_json::{Value, json};

pub use completion::{CompletionDef, CompletionRef, CompletionRequest};
pub use logging::log_message;
pub(crate) use logging::LogLevel;
pub(crate) use prompts::{GetParams as PromptGetParams, getter as prompt_getter};
pub use prompts::{GetPromptResult, Prompt, PromptArgument, PromptDef, PromptMessage, PromptRequest, Role};
pub(crate) use resources::{UriParams, reading as resource_reading};
pub use resources::{
    RESOURCE_NOT_FOUND, ReadRequest, Resource, ResourceContents, ResourceDef, ResourceTemplate, ResourceTemplateDef,
    resource_not_found,
};
pub use tools::{FnHandler, handler_fn};
pub use upstream::{CatalogUpstream, UpstreamOffers};
pub use uri_template::{UriTemplate, UriTemplateError};

use crate::codec::parse_value;
use crate::server::Server;

/// The work of a `prompts/get` or `resources/read`, checked and ready to run with the
/// request's context (in 2026-07-28 it may outlive a round of the request).
pub(crate) type Work = Box<dyn FnOnce(Context) -> Pin<Box<dyn Future<Output = Result<Value, RpcError>> + Send>> + Send>;

/// The resources, templates, prompts and completion handlers of a server.
#[derive(Default)]
pub(crate) struct Catalog {
    /// Serves the methods it offers in place of the definitions below.
    pub(crate) upstream: Option<std::sync::Arc<dyn CatalogUpstream>>,
    /// By URI, so that `resources/list` is stable and reads find them at once.
    pub(crate) resources: BTreeMap<String, ResourceDef>,
    /// In registration order, which is also the order in which they are tried on a read.
    pub(crate) templates: Vec<ResourceTemplateDef>,
    /// By name, so that `prompts/list` is stable.
    pub(crate) prompts: BTreeMap<String, PromptDef>,
    /// By prompt or template, and argument.
    pub(crate) completions: HashMap<(CompletionRef, String), CompletionDef>,
}

impl Catalog {
    /// Whether the server offers resources (and so declares the capability).
    pub(crate) fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty() || self.upstream_offers().resources
    }

    /// Whether the server offers prompts (and so declares the capability).
    pub(crate) fn has_prompts(&self) -> bool {
        !self.prompts.is_empty() || self.upstream_offers().prompts
    }

    /// Whether the resource and prompt lists may change while the server runs (and so
    /// `listChanged` is declared): only when an upstream serves them.
    pub(crate) fn lists_change(&self) -> bool {
        self.upstream.is_some()
    }

    /// What the upstream serves (nothing without one).
    pub(crate) fn upstream_offers(&self) -> UpstreamOffers {
        self.upstream.as_ref().map(|upstream| upstream.offers()).unwrap_or_default()
    }

    /// The upstream, if it serves `name`.
    fn upstream_for(&self, name: &str) -> Option<&std::sync::Arc<dyn CatalogUpstream>> {
        let offers = self.upstream_offers();
        let served = match name {
            method::RESOURCES_LIST | method::RESOURCES_TEMPLATES_LIST | method::RESOURCES_READ => offers.resources,
            method::PROMPTS_LIST | method::PROMPTS_GET => offers.prompts,
            method::COMPLETION_COMPLETE => offers.completions,
            _ => false,
        };
        self.upstream.as_ref().filter(|_| served)
    }

    /// Whether requests of `name` go to the upstream.
    pub(crate) fn forwards(&self, name: &str) -> bool {
        self.upstream_for(name).is_some()
    }
}

/// Routes a method this module serves; `None` for any other method, and for the resource
/// and prompt methods of a server without resources or prompts (their capability is not
/// declared, so they do not exist).
/// `ctx` is the request's: how a prompt asks the client.
pub(crate) async fn route(server: &Server, name: &str, params: Option<Value>, ctx: Context) -> Option<Result<Value, RpcError>> {
    let catalog = &server.inner.catalog;
    if let Some(upstream) = catalog.upstream_for(name) {
        let params = match params {
            Some(Value::Object(params)) => Value::Object(params),
            None | Some(Value::Null) => json!({}),
            Some(other) => return Some(Err(RpcError::invalid_params(format!("the params of {name} must be an object, not {other}")))),
        };
        return Some(upstream.request(name, params).await);
    }
    let reply = match name {
        method::RESOURCES_LIST if catalog.has_resources() => {
            first_page(name, params).map(|()| resources::list(catalog))
        }
        method::RESOURCES_TEMPLATES_LIST if catalog.has_resources() => {
            first_page(name, params).map(|()| resources::list_templates(catalog))
        }
        method::RESOURCES_READ if catalog.has_resources() => {
            async { resources::read(catalog, parse_value(name, params)?, ctx).await }.await
        }
        method::PROMPTS_LIST if catalog.has_prompts() => first_page(name, params).map(|()| prompts::list(catalog)),
        method::PROMPTS_GET if catalog.has_prompts() => {
            async { prompts::get(catalog, parse_value(name, params)?, ctx).await }.await
        }
        method::COMPLETION_COMPLETE => async { completion::complete(catalog, parse_value(name, params)?).await }.await,
        _ => return None,
    };
    Some(reply)
}

/// Checks the `params` of a list request: lists are one page, so any cursor is invalid
/// (also for `tools/list`).
///
/// # Errors
/// `-32602` for params that are not `PaginatedRequestParams`, and for any cursor.
pub(crate) fn first_page(name: &str, params: Option<Value>) -> Result<(), RpcError> {
    let params: PaginatedParams = parse_value(name, Some(params.unwrap_or_else(|| json!({}))))?;
    match params.cursor {
        Some(cursor) => Err(RpcError::invalid_params(format!("Invalid cursor for {name}: {cursor:?}"))),
        None => Ok(()),
    }
}
