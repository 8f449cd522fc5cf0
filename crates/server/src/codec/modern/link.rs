//! The client side of a plain call in 2026-07-28: what the work sends while it runs goes on
//! the request's own stream (progress under the request's `progressToken`, log messages at
//! or above the request's `logLevel`). The server sends no requests in this era: a question
//! of the work becomes a round of a Multi Round-Trip Request (`mrtr`), or `-32021` when the
//! request did not declare the capability it needs.

use async_trait::async_trait;
use mcp_tasks_engine::{ClientLink, ErrorObject, InputKind, Progress};
use mcp_tasks_protocol::jsonrpc::{self, RequestId, RpcError};
use mcp_tasks_protocol::mcp::{ProgressToken, method};
use mcp_tasks_protocol::modern::{MISSING_CLIENT_CAPABILITY, RequestMeta};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, oneshot};

use crate::catalog::LogLevel;
use crate::context::{ClientCaps, RequestContext};
use crate::connection::{Connection, Route};
use super::mrtr::Event;
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
    /// Where the questions of the work go (a Multi Round-Trip Request round each).
    pub(crate) asks: mpsc::UnboundedSender<Event>,
    /// Numbers the questions: their keys in `inputRequests`.
    pub(crate) asked: AtomicU64,
}

impl ModernLink {
    /// The link of the plain request `ctx` whose `_meta` is `meta`; the work's questions go
    /// to `asks`.
    pub(crate) fn new(ctx: &RequestContext, meta: &RequestMeta, asks: mpsc::UnboundedSender<Event>) -> ModernLink {
        ModernLink {
            conn: Arc::clone(&ctx.conn),
            request: ctx.id.clone(),
            progress_token: meta.progress_token.clone(),
            log_level: meta.log_level.as_ref().and_then(|level| serde_json::from_value(json!(level)).ok()),
            client: ctx.client,
            missing: Mutex::new(None),
            asks,
            asked: AtomicU64::new(0),
        }
    }

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

    async fn request(&self, kind: InputKind, params: Value) -> Result<Value, ErrorObject> {
        self.ask(None, kind, params).await
    }

    async fn request_named(&self, key: &str, kind: InputKind, params: Value) -> Result<Value, ErrorObject> {
        self.ask(Some(key), kind, params).await
    }
}

impl ModernLink {
    /// A question of the work: a round's input request under `key` (the work's name for it,
    /// else `input-N`), or `-32021` for a kind the request did not declare.
    async fn ask(&self, key: Option<&str>, kind: InputKind, params: Value) -> Result<Value, ErrorObject> {
        if !self.client.declares(kind) {
            self.missing.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(kind);
            return Err(ErrorObject {
                code: MISSING_CLIENT_CAPABILITY,
                message: format!("the request did not declare the client capability {} needs", input_method(kind)),
                data: None,
            });
        }
        let number = self.asked.fetch_add(1, Ordering::Relaxed) + 1;
        let key = key.map_or_else(|| format!("input-{number}"), str::to_owned);
        let (answer, answered) = oneshot::channel();
        let asked = self.asks.send(Event::Asked { key, kind, params, answer });
        let lost = || ErrorObject {
            code: RpcError::INTERNAL_ERROR,
            message: format!("the call ended before the client answered {}", input_method(kind)),
            data: None,
        };
        if asked.is_err() {
            return Err(lost());
        }
        answered.await.map_err(|_| lost())
    }
}
