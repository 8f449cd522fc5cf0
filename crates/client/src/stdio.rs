//! The stdio transport (2025-11-25): newline-delimited JSON-RPC over any writer (the
//! server's stdin) and reader (its stdout). [`StdioTransport::spawn`] starts the server
//! from an argv, without a shell; its stderr is passed through to ours, or, for a quiet
//! server, kept (its last [`KEPT_LINES`] lines) for the error that says it ended. [`StdioTransport::close`]
//! ends it gracefully (stdin closed, then SIGTERM, then SIGKILL, as the 2025-11-25 lifecycle
//! describes); when the transport is shut down or dropped it is killed at once. Reading and
//! routing are in [`crate::connection`].

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};
use tokio_util::sync::CancellationToken;

use crate::error::ClientError;
use crate::supervisor;

/// What the connection reads server messages from.
pub(crate) type LineReader = Box<dyn AsyncBufRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// The writing side of a stdio session, and the child process if we spawned it.
pub(crate) struct StdioTransport {
    /// A tokio mutex: held across the write of one whole line, so lines never interleave.
    /// `None` once closed.
    writer: tokio::sync::Mutex<Option<Writer>>,
    child: Mutex<Option<Child>>,
    /// A quiet server's stderr, as far as it was read.
    said: Option<Arc<Said>>,
}

/// How many of a quiet server's last lines on stderr are kept, and how much of each.
pub(crate) const KEPT_LINES: usize = 40;
const LONGEST_LINE: usize = 2_000;

/// The last lines a quiet server wrote on stderr, and whether it closed it.
#[derive(Default)]
struct Said {
    lines: Mutex<VecDeque<String>>,
    ended: CancellationToken,
}

impl Said {
    /// Reads `stderr` to its end in the background, keeping the last lines.
    fn keep(stderr: ChildStderr) -> Arc<Said> {
        let said = Arc::new(Said::default());
        let kept = Arc::clone(&said);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(mut line)) = lines.next_line().await {
                if line.len() > LONGEST_LINE {
                    let cut = (0..=LONGEST_LINE).rev().find(|&at| line.is_char_boundary(at)).unwrap_or(0);
                    line.truncate(cut);
                    line.push('…');
                }
                let mut kept_lines = kept.lines.lock().unwrap_or_else(PoisonError::into_inner);
                if kept_lines.len() == KEPT_LINES {
                    kept_lines.pop_front();
                }
                kept_lines.push_back(line);
            }
            kept.ended.cancel();
        });
        said
    }
}

impl StdioTransport {
    /// A transport over `reader` (server to client) and `writer` (client to server).
    pub(crate) fn new(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
    ) -> (StdioTransport, LineReader) {
        let transport = StdioTransport { writer: tokio::sync::Mutex::new(Some(Box::new(writer))), child: Mutex::new(None), said: None };
        (transport, Box::new(BufReader::new(reader)))
    }

    /// Spawns `program` with `args` (no shell), its stdin and stdout piped to us, its
    /// stderr inherited, in a process group of its own: a Ctrl-C at the terminal reaches
    /// the host alone, which decides (cancel, detach, close) while the server keeps
    /// serving; the server still ends with the client (close, drop, or stdin EOF).
    ///
    /// With a supervisor ([`crate::set_supervisor`]), the supervisor leads that group and
    /// the server runs in it; signals then go to the group. A `quiet` server's stderr is
    /// kept instead of shown ([`StdioTransport::last_words`]).
    pub(crate) fn spawn<S: AsRef<OsStr>>(
        program: &str,
        args: &[S],
        quiet: bool,
    ) -> Result<(StdioTransport, LineReader), ClientError> {
        if supervisor::is_set() {
            supervisor::findable(program).map_err(|e| ClientError::Spawn { program: program.to_owned(), reason: e.to_string() })?;
        }
        let (started, args) = supervisor::argv(program, args);
        let mut child = Command::new(started)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if quiet { Stdio::piped() } else { Stdio::inherit() })
            .kill_on_drop(true)
            .process_group(0)
            .spawn()
            .map_err(|e| ClientError::Spawn { program: program.to_owned(), reason: e.to_string() })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ClientError::Spawn { program: program.to_owned(), reason: "no pipes to the child".into() });
        };
        let said = child.stderr.take().map(Said::keep);
        let (mut transport, reader) = StdioTransport::new(stdout, stdin);
        *transport.child.lock().unwrap_or_else(PoisonError::into_inner) = Some(child);
        transport.said = said;
        Ok((transport, reader))
    }

    /// The last lines a quiet server wrote on stderr (none for one whose stderr is ours).
    pub(crate) fn last_words(&self) -> Vec<String> {
        self.said.as_ref().map_or_else(Vec::new, |said| said.lines.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect())
    }

    /// Waits (at most half a second) until a quiet server's stderr is read to its end: its
    /// output just ended, and what it said last is what its error shows.
    pub(crate) async fn stderr_read(&self) {
        if let Some(said) = &self.said {
            let _ = tokio::time::timeout(Duration::from_millis(500), said.ended.cancelled()).await;
        }
    }

    /// Writes one message as one line.
    pub(crate) async fn send(&self, message: &Value) -> Result<(), ClientError> {
        let mut line = serde_json::to_vec(message).map_err(|e| ClientError::Protocol(e.to_string()))?;
        line.push(b'\n');
        let mut writer = self.writer.lock().await;
        let Some(writer) = writer.as_mut() else { return Err(ClientError::Closed) };
        let written = async {
            writer.write_all(&line).await?;
            writer.flush().await
        };
        written.await.map_err(|e| ClientError::Transport(format!("writing to the server's stdin: {e}")))
    }

    /// The child's process id, if this transport spawned one that still runs.
    pub(crate) fn child_id(&self) -> Option<u32> {
        self.child.lock().unwrap_or_else(PoisonError::into_inner).as_ref().and_then(Child::id)
    }

    /// How the child ended, if it has.
    pub(crate) fn exit_status(&self) -> Option<String> {
        let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        child.as_mut().and_then(|child| child.try_wait().ok().flatten()).map(|status| status.to_string())
    }

    /// Ends the session gracefully: closes the writer (the child's stdin), waits up to
    /// `grace` for the child to exit, then sends SIGTERM and waits up to `grace` again, then
    /// SIGKILL; the child is reaped. Returns how it ended (`None` without a child).
    pub(crate) async fn close(&self, grace: Duration) -> Option<ExitStatus> {
        let writer = self.writer.lock().await.take();
        if let Some(mut writer) = writer {
            if let Err(error) = writer.shutdown().await {
                tracing::debug!(%error, "closing the stdio server's stdin");
            }
            drop(writer);
        }
        let child = self.child.lock().unwrap_or_else(PoisonError::into_inner).take();
        let mut child = child?;
        if let Ok(Ok(status)) = tokio::time::timeout(grace, child.wait()).await {
            tracing::debug!(%status, "stdio server exited after its stdin closed");
            return Some(status);
        }
        if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
            tracing::debug!(pid, "stdio server still runs; SIGTERM");
            if let Err(error) = signal(pid, nix::sys::signal::Signal::SIGTERM) {
                tracing::debug!(%error, "SIGTERM to the stdio server");
            }
            if let Ok(Ok(status)) = tokio::time::timeout(grace, child.wait()).await {
                return Some(status);
            }
        }
        tracing::debug!("stdio server still runs; SIGKILL");
        if let Err(error) = kill(&mut child) {
            tracing::debug!(%error, "killing the stdio server");
        }
        child.wait().await.ok()
    }

    /// Kills the child, if any, and reaps it: at once if it has already exited, otherwise
    /// in a background task (or, outside a runtime, by tokio's orphan reaper).
    pub(crate) fn shutdown(&self) {
        let child = self.child.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(mut child) = child else { return };
        if let Err(error) = kill(&mut child) {
            tracing::debug!(%error, "killing the stdio server");
        }
        if let Ok(Some(status)) = child.try_wait() {
            tracing::debug!(%status, "stdio server ended");
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                match child.wait().await {
                    Ok(status) => tracing::debug!(%status, "stdio server killed"),
                    Err(error) => tracing::debug!(%error, "waiting for the killed stdio server"),
                }
            });
        }
    }
}

/// Sends `signal` to the server `pid`: to its whole group when a supervisor leads it (the
/// supervisor and the server then both get it; the supervisor waits for the server).
fn signal(pid: i32, signal: nix::sys::signal::Signal) -> nix::Result<()> {
    let pid = nix::unistd::Pid::from_raw(pid);
    if supervisor::is_set() { nix::sys::signal::killpg(pid, signal) } else { nix::sys::signal::kill(pid, signal) }
}

/// SIGKILLs the server (its group, with a supervisor), if it still runs.
fn kill(child: &mut Child) -> std::io::Result<()> {
    match child.id().and_then(|pid| i32::try_from(pid).ok()) {
        Some(pid) if supervisor::is_set() => signal(pid, nix::sys::signal::Signal::SIGKILL).map_err(std::io::Error::from),
        _ => child.start_kill(),
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.shutdown();
    }
}
