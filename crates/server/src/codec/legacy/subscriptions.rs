//! Who subscribed to which resource (2025-11-25 `resources/subscribe`), per Legacy session,
//! so that [`crate::Server::notify_resource_updated`] can reach them (2026-07-28 listen
//! streams hear of updates through the Modern codec's state).
//!
//! The registry lives in the server, not in the session, because an update is announced by
//! server code that knows the URI but not the sessions. It holds sessions weakly: a session
//! that ended is forgotten at the next change to the registry.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use mcp_tasks_protocol::jsonrpc;
use mcp_tasks_protocol::legacy::method;
use serde_json::json;

use super::session::LegacySession;
use crate::connection::Route;

/// Resource subscriptions of every live session.
#[derive(Default)]
pub(crate) struct Subscriptions {
    /// A std mutex: each critical section is a scan of a short list, never across an await.
    entries: Mutex<Vec<Entry>>,
}

struct Entry {
    session: Weak<LegacySession>,
    uris: BTreeSet<String>,
}

impl Subscriptions {
    /// `session` wants `notifications/resources/updated` for `uri`.
    pub(crate) fn subscribe(&self, session: &Arc<LegacySession>, uri: &str) {
        let mut entries = self.entries();
        entries.retain(|entry| entry.session.strong_count() > 0);
        let weak = Arc::downgrade(session);
        match entries.iter_mut().find(|entry| Weak::ptr_eq(&entry.session, &weak)) {
            Some(entry) => {
                entry.uris.insert(uri.to_owned());
            }
            None => entries.push(Entry { session: weak, uris: BTreeSet::from([uri.to_owned()]) }),
        }
    }

    /// `session` no longer wants updates of `uri` (a no-op if it never subscribed).
    pub(crate) fn unsubscribe(&self, session: &Arc<LegacySession>, uri: &str) {
        let mut entries = self.entries();
        let weak = Arc::downgrade(session);
        if let Some(entry) = entries.iter_mut().find(|entry| Weak::ptr_eq(&entry.session, &weak)) {
            entry.uris.remove(uri);
        }
        entries.retain(|entry| entry.session.strong_count() > 0 && !entry.uris.is_empty());
    }

    /// Sends `notifications/resources/updated` for `uri` to every live session subscribed to
    /// it, on the stream for messages not tied to a request.
    pub(crate) fn notify_updated(&self, uri: &str) {
        let message = jsonrpc::notification(method::NOTIFY_RESOURCE_UPDATED, json!({ "uri": uri }));
        for session in self.subscribers(uri) {
            session.conn.send(message.clone(), Route::General);
        }
    }

    /// The live sessions subscribed to `uri`.
    fn subscribers(&self, uri: &str) -> Vec<Arc<LegacySession>> {
        self.entries()
            .iter()
            .filter(|entry| entry.uris.contains(uri))
            .filter_map(|entry| entry.session.upgrade())
            .collect()
    }

    fn entries(&self) -> MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
