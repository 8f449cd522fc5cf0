//! One codec per protocol era. A codec decodes a request into era-neutral operations
//! (`crate::ops`), encodes their outcome in its era's shapes, renders task changes as its
//! era's notifications, and maps engine errors to its era's JSON-RPC errors. Dispatch picks
//! the codec of each request; nothing else knows which era is speaking.
//!
//! - [`legacy`]: 2025-11-25 (core Tasks): the `initialize` lifecycle and the state it
//!   creates (`legacy::session`), `tools/*` with `params.task`, `tasks/get|result|list|cancel`,
//!   `logging/setLevel`, `resources/subscribe`, and the `Task` shape (`legacy::wire`).
//!
//! The 2026-07-28 codec (`modern`) joins beside it.

pub(crate) mod legacy;

use mcp_tasks_protocol::jsonrpc::RpcError;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Parses required params.
///
/// # Errors
/// `-32602` naming the method and what serde found wrong.
pub(crate) fn parse_value<T: DeserializeOwned>(method: &str, params: Option<Value>) -> Result<T, RpcError> {
    let params = params.ok_or_else(|| RpcError::invalid_params(format!("Invalid params for {method}: params are required")))?;
    serde_json::from_value(params).map_err(|err| RpcError::invalid_params(format!("Invalid params for {method}: {err}")))
}
