//! The client side of a plain call in 2026-07-28: what the work sends while it runs goes on
//! the request's own stream (progress under the request's `progressToken`, log messages at
//! or above the request's `logLevel`). The server sends no requests in this era: a question
//! from the work of a plain call needs a Multi Round-Trip Request, which is not served yet,
//! so it is refused and the work decides what to do.

use async_trait::async_trait;
use mcp_tasks_engine::{ClientLink, ErrorObject, InputKind, Progress};
use mcp_tasks_protocol::jsonrpc::{self, RequestId, RpcError};
use mcp_tasks_protocol::mcp::{ProgressToken, method};
use mcp_tasks_protocol::modern::MISSING_CLIENT_CAPABILITY;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, PoisonError};

use crate::catalog::LogLevel;
use crate::context::ClientCaps;
use crate::connection::{Connection, Route};
use crate::tool::input_method;

/// A plain call's link to its client.
pub(crate) struct ModernLink {
    pub(crate) conn: Arc<Connection>,
    pub(crate) request: RequestId,
    pub(crate) progress_token: Option<ProgressToken>,
    /// The request's `logLevel`: without one, no `notifications/message` is sent.
    pub(crate) log_level: Option<LogLevel>,
    /// What the request declared it can answer.
    pub(crate) client: ClientCaps,
    /// The first kind of input the work asked for that the request did not declare: the
    /// call then answers `-32021` whatever the work made of the refusal.
    pub(crate) missing: Mutex<Option<InputKind>>,
}

impl ModernLink {
    /// The input kind the work needed and the request did not declare, if any.
    pub(crate) fn missing_capability(&self) -> Option<InputKind> {
        *self.missing.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl ClientLink for ModernLink {
    fn progress(&self, progress: Progress) {
        if let Some(token) = &self.progress_token {
            let mut params = json!({"progressToken": token, "progress": progress.progress});
            if let Some(total) = progress.total {
                params["total"] = json!(total);
            }
            if let Some(message) = progress.message {
                params["message"] = json!(message);
            }
            let message = jsonrpc::notification(method::NOTIFY_PROGRESS, params);
            self.conn.send(message, Route::Related(self.request.clone()));
        }
    }

    fn notify(&self, name: &str, params: Value) {
        if name == method::NOTIFY_MESSAGE {
            let level: Option<LogLevel> = params.get("level").cloned().and_then(|level| serde_json::from_value(level).ok());
            let wanted = matches!((level, self.log_level), (Some(level), Some(min)) if level >= min);
            if !wanted {
                return;
            }
        }
        self.conn.send(jsonrpc::notification(name, params), Route::Related(self.request.clone()));
    }

    async fn request(&self, kind: InputKind, _params: Value) -> Result<Value, ErrorObject> {
        let declared = match kind {
            InputKind::Elicitation => self.client.elicitation,
            InputKind::Sampling => self.client.sampling,
        };
        if !declared {
            self.missing.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(kind);
            return Err(ErrorObject {
                code: MISSING_CLIENT_CAPABILITY,
                message: format!("the request did not declare the client capability {} needs", input_method(kind)),
                data: None,
            });
        }
        Err(ErrorObject {
            code: RpcError::INTERNAL_ERROR,
            message: format!(
                "cannot ask the client ({}) during a plain 2026-07-28 call: that needs a Multi Round-Trip \
                 Request, which this server does not serve yet; call the tool as a task (declare the \
                 io.modelcontextprotocol/tasks extension)",
                input_method(kind)
            ),
            data: None,
        })
    }
}
