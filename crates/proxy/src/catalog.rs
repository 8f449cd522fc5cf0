//! The server's resources, templates, prompts and completion, forwarded to the upstream
//! request by request (so its lists are always current, whatever `list_changed` it sends).

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_client::{ClientError, RpcError};
use mcp_tasks_server::{CatalogUpstream, UpstreamOffers};
use serde_json::Value;

use crate::upstream::Upstream;

pub(crate) struct Forwarder(pub(crate) Arc<Upstream>);

#[async_trait]
impl CatalogUpstream for Forwarder {
    fn offers(&self) -> UpstreamOffers {
        self.0.offers()
    }

    async fn subscribe(&self, uri: &str) -> Result<(), RpcError> {
        self.0.subscribe(uri).await
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let link = self.0.wait_link(None).await.map_err(RpcError::internal)?;
        match link.client.request_raw(method, params).await {
            Ok(result) => Ok(result),
            Err(ClientError::Rpc { code, message, data }) => Err(RpcError { code, message, data }),
            Err(error) => {
                if crate::tool::upstream_lost(&error) {
                    self.0.report_broken(link.generation);
                }
                Err(RpcError::internal(format!("the upstream server could not answer {method}: {error}")))
            }
        }
    }
}
