//! [`CatalogUpstream`]: resources, resource templates, prompts and completion served by
//! another MCP server (the proxy's upstream). When a server has one, the catalog methods it
//! offers go to it as they come, so the lists are always the upstream's current ones; what
//! the server defined in code is not consulted for those methods.

use async_trait::async_trait;
use mcp_tasks_protocol::jsonrpc::RpcError;
use serde_json::Value;

/// Which catalog methods an upstream serves, from the capabilities it declared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpstreamOffers {
    /// `resources/list`, `resources/templates/list`, `resources/read`.
    pub resources: bool,
    /// `prompts/list`, `prompts/get`.
    pub prompts: bool,
    /// `completion/complete`.
    pub completions: bool,
}

/// Another server that serves this server's catalog methods (see the module's comment).
#[async_trait]
pub trait CatalogUpstream: Send + Sync + 'static {
    /// Which methods it serves; asked on each request (an upstream that restarts may offer
    /// other ones).
    fn offers(&self) -> UpstreamOffers;

    /// Sends the request `method` with `params` (a JSON object) and returns its result.
    ///
    /// # Errors
    /// The upstream's JSON-RPC error, or an error that says why it could not be asked
    /// (e.g. `-32603` "the upstream server is restarting").
    async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError>;

    /// A downstream client subscribed to `uri` (2025-11-25 `resources/subscribe`, or a
    /// 2026-07-28 listen stream's `resourceSubscriptions`): the upstream is asked for its
    /// updates too, which come back through
    /// [`Server::notify_resource_updated`](crate::Server::notify_resource_updated). The
    /// server filters them for its clients, so an upstream subscription may outlive the
    /// downstream ones. The default does nothing.
    ///
    /// # Errors
    /// Why the upstream could not be asked (an upstream without subscriptions is no error).
    async fn subscribe(&self, uri: &str) -> Result<(), RpcError> {
        let _ = uri;
        Ok(())
    }
}
