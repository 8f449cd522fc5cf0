//! The Tokio runtime the `mcp-tasks` binary serves on (and the bench server, so that it
//! measures the same): one worker thread fewer than the machine has cores, at least one.
//!
//! A server of ours always has a busy party beside its Tokio workers: the SQLite store's
//! writer thread, which runs every commit (about a third of a task lifecycle's CPU), or the
//! PostgreSQL server on the same host. As many workers as cores then compete with it for
//! the cores, and a wake-up more often finds its worker parked or on the other core. On the
//! 2-core machine of `docs/benchmarks/09-ninth-round.md`, one worker instead of two cut the
//! server's CPU per task lifecycle by ~10 % (Modern 95 -> 84 us, poll 120 -> 110 us,
//! `benches/ab.sh`) at the same or a slightly higher rate. `TOKIO_WORKER_THREADS` still sets
//! the count.

use std::io;

use tokio::runtime::{Builder, Runtime};

/// The environment variable Tokio reads for its worker count; when set, it wins.
const WORKERS_VAR: &str = "TOKIO_WORKER_THREADS";

/// How many worker threads [`build_runtime`] starts when `TOKIO_WORKER_THREADS` is not set:
/// one fewer than the cores available to this process, at least one.
pub fn worker_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |cores| cores.get().saturating_sub(1).max(1))
}

/// A multi-thread Tokio runtime with every driver enabled and [`worker_threads`] workers
/// (or what `TOKIO_WORKER_THREADS` says).
///
/// # Errors
/// What Tokio's builder returns (threads that cannot be started, an unusable
/// `TOKIO_WORKER_THREADS`).
pub fn build_runtime() -> io::Result<Runtime> {
    let mut builder = Builder::new_multi_thread();
    builder.enable_all();
    if std::env::var_os(WORKERS_VAR).is_none() {
        builder.worker_threads(worker_threads());
    }
    builder.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_fewer_than_the_cores_and_never_none() {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let workers = worker_threads();
        assert!(workers >= 1);
        assert_eq!(workers, if cores > 1 { cores - 1 } else { 1 });
    }

    #[test]
    fn the_runtime_runs_work() {
        let runtime = build_runtime().expect("a runtime");
        assert_eq!(runtime.block_on(async { tokio::spawn(async { 7 }).await.expect("joined") }), 7);
    }
}
