//! The terminal the client commands talk to: whether there is one, the single reader of
//! stdin's lines that every prompt shares (elicitation forms, the Ctrl-C question), and
//! Ctrl-C counted so that a prompt waiting for a line can be interrupted.

use std::io::{BufRead as _, IsTerminal as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

/// How often a prompt waiting for a line looks whether it was interrupted.
const CHECK_EVERY: Duration = Duration::from_millis(50);

/// Whether the user is at a terminal: questions are asked on stderr and read from stdin.
pub(crate) fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Bumped by each Ctrl-C and by [`abandon_prompts`]: a prompt that started reading before
/// a bump stops waiting.
static INTERRUPTS: AtomicU64 = AtomicU64::new(0);

/// Lines of stdin (`None` at its end), read by one thread started at the first prompt.
static LINES: OnceLock<Mutex<mpsc::Receiver<Option<String>>>> = OnceLock::new();

/// What a prompt read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// A line, without its end of line.
    Line(String),
    /// stdin ended (Ctrl-D).
    Eof,
    /// Ctrl-C (or the prompt is no longer wanted).
    Interrupted,
}

/// Where a prompt starts: reads with this mark end at the next interruption.
pub(crate) fn mark() -> u64 {
    INTERRUPTS.load(Ordering::SeqCst)
}

/// The next line of stdin, unless an interruption comes after `since` ([`mark`]).
/// Blocking: call it from a blocking thread.
pub(crate) fn read_line(since: u64) -> Read {
    let lines = LINES.get_or_init(|| {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            loop {
                let mut line = String::new();
                match stdin.lock().read_line(&mut line) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(None);
                        return;
                    }
                    Ok(_) => {
                        let line = line.trim_end_matches(['\n', '\r']).to_owned();
                        if tx.send(Some(line)).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Mutex::new(rx)
    });
    let lines = lines.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if INTERRUPTS.load(Ordering::SeqCst) != since {
            return Read::Interrupted;
        }
        match lines.recv_timeout(CHECK_EVERY) {
            Ok(Some(line)) => return Read::Line(line),
            Ok(None) | Err(RecvTimeoutError::Disconnected) => return Read::Eof,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// Ends the prompts waiting for a line now (e.g. the task ended while one was open).
pub(crate) fn abandon_prompts() {
    INTERRUPTS.fetch_add(1, Ordering::SeqCst);
}

/// The one listener of Ctrl-C: its count, for every [`listen_for_ctrl_c`].
static CTRL_C: OnceLock<watch::Sender<u64>> = OnceLock::new();

/// Listens for Ctrl-C from now on (it no longer ends the process): each one interrupts
/// the open prompts and bumps the returned count. One listener serves every call (a
/// 2026-07-28 call listens before its task exists, then its wait), so that one Ctrl-C
/// interrupts once; the receiver sees only the Ctrl-Cs after the call.
pub(crate) fn listen_for_ctrl_c() -> std::io::Result<watch::Receiver<u64>> {
    if let Some(sender) = CTRL_C.get() {
        return Ok(sender.subscribe());
    }
    #[cfg(unix)]
    let mut signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let sender = CTRL_C.get_or_init(|| watch::channel(0).0);
    let rx = sender.subscribe();
    tokio::spawn(async move {
        loop {
            #[cfg(unix)]
            if signal.recv().await.is_none() {
                return;
            }
            #[cfg(not(unix))]
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            INTERRUPTS.fetch_add(1, Ordering::SeqCst);
            if let Some(sender) = CTRL_C.get() {
                sender.send_modify(|count| *count += 1);
            }
        }
    });
    Ok(rx)
}
