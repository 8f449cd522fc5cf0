//! A server that went away while the CLI waited on one of its tasks (killed, restarted,
//! redeployed): which errors mean that, and the bounded, backed-off tries to reach it again
//! that `call`, `tasks wait` and `tasks watch` share. The task lives on in the server's store,
//! so the same wait goes on once the server answers again.

use std::time::Duration;

use mcp_tasks_client::ClientError;
use tokio::time::Instant;

/// How long a lost server is tried again before the wait gives up.
pub(crate) const RECONNECT_FOR: Duration = Duration::from_secs(60);
/// The first pause between tries; each next one doubles, up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(250);
const LONGEST_PAUSE: Duration = Duration::from_secs(5);

/// Whether `error` means the server went away (its connection refused or reset, its stdio
/// process ended, its session forgotten by a restart), not that it refused the request.
pub(crate) fn server_lost(error: &ClientError) -> bool {
    match error {
        ClientError::Transport(_) | ClientError::StreamLost { .. } | ClientError::ServerExited { .. } => true,
        // 404: the session this client had is unknown to the server (a restarted one);
        // 502-504: a proxy in front of a server that is down.
        ClientError::Http { status, .. } => matches!(status, 404 | 502..=504),
        _ => false,
    }
}

/// The tries to reach a lost server again: the first failure starts the clock and says so on
/// stderr; each try waits a pause that doubles; after [`RECONNECT_FOR`] it gives up.
#[derive(Default)]
pub(crate) struct Reconnecting {
    lost: Option<(Instant, Duration)>,
}

impl Reconnecting {
    /// After `failure`: says (the first time) that the server was lost, then waits the next
    /// pause. `false` when the time is up and the caller should give up.
    pub(crate) async fn pause(&mut self, failure: &dyn std::fmt::Display, say: impl FnOnce(&str)) -> bool {
        let (since, pause) = self.lost.get_or_insert_with(|| {
            say(&format!(
                "mcp-tasks: lost the server ({failure}); waiting for it to come back, for up to {} s",
                RECONNECT_FOR.as_secs()
            ));
            (Instant::now(), FIRST_PAUSE)
        });
        if since.elapsed() > RECONNECT_FOR {
            return false;
        }
        tokio::time::sleep(*pause).await;
        *pause = (*pause * 2).min(LONGEST_PAUSE);
        true
    }

    /// Whether a server was lost since the last [`Reconnecting::found`].
    pub(crate) fn lost(&self) -> bool {
        self.lost.is_some()
    }

    /// The server answered again: the next loss starts a new clock.
    pub(crate) fn found(&mut self) {
        self.lost = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_server_is_told_from_a_refusal() {
        assert!(server_lost(&ClientError::Transport("connection refused".into())));
        assert!(server_lost(&ClientError::ServerExited { status: None, stderr: Vec::new() }));
        assert!(server_lost(&ClientError::Http { status: 404, body: "no such session".into() }));
        assert!(server_lost(&ClientError::Http { status: 503, body: String::new() }));
        assert!(!server_lost(&ClientError::Http { status: 401, body: String::new() }));
        assert!(!server_lost(&ClientError::Rpc { code: -32602, message: "unknown task".into(), data: None }));
        assert!(!server_lost(&ClientError::TaskCancelled { task_id: "t".into(), message: None }));
    }
}
