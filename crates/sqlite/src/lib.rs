//! The embedded default task store of mcp-tasks: [`SqliteStore`], a
//! [`mcp_tasks_engine::TaskStore`] on one SQLite file (rusqlite, SQLite bundled).
//!
//! # Layout
//! - `store`: [`SqliteStore`]: opening, connection settings, the trait's queries.
//! - `migrate`: the numbered migrations embedded from `migrations/000n_….sql`, applied
//!   on open and tracked with `PRAGMA user_version`.
//! - `compat`: reading rows written by earlier builds (input requests named by method).
//! - `faults`: the store file's faults said plainly (not a database, locked, read-only, disk
//!   full) and the lock that keeps a second server off the file.
//!
//! # Durability
//! The file runs in WAL mode with `synchronous=FULL`: every commit fsyncs the WAL before
//! it returns, so a task is on disk before its CreateTaskResult leaves (invariant 1), even
//! across a power loss. `NORMAL` would survive a crash of the process only.
//!
//! # Concurrency
//! Writes go to one writer thread that owns the write connection and commits every write
//! queued meanwhile in one transaction (group commit: one fsync for the batch; each caller
//! still returns only once its own write is on disk). Reads run on a small pool of read
//! connections on Tokio's blocking pool, alongside the writer (WAL). One serving process per
//! file: a second store opened on it (in any process) is refused while the first is open
//! (`PATH-lock`); other programs may read the file, and wait up to a busy timeout for the
//! write lock.

mod compat;
mod faults;
mod hot;
mod migrate;
mod store;

pub use store::{Commit, SqliteStore, Synchronous, WriteStats};
