//! The embedded default task store of mcp-tasks: [`SqliteStore`], a
//! [`mcp_tasks_engine::TaskStore`] on one SQLite file (rusqlite, SQLite bundled).
//!
//! # Layout
//! - `store`: [`SqliteStore`]: the handle, opening, connection settings, reads and queued
//!   writes.
//! - `writer`: the writer thread: group commit, prepared statements, the transaction a
//!   write runs in, checkpoints, the disk's free space.
//! - `sql`: the SQL text the roles share (columns, status lists, `REPLACE`, the writer's
//!   statements).
//! - `rows`: a task as a row (encoding, decoding, the status history a write records).
//! - `records`, `claims`, `view`, `work`, `sessions`: the store traits, one file per role
//!   ([`mcp_tasks_engine::store`]).
//! - `hot`: the tasks written last, kept by the writer thread.
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

mod claims;
mod compat;
mod changes;
mod faults;
mod hot;
mod migrate;
mod peers;
mod records;
mod rows;
mod sessions;
mod sql;
mod store;
mod view;
mod work;
mod writer;

pub use mcp_tasks_engine::store::implement::Commit;
pub use store::{SqliteStore, Synchronous, WriteStats};
