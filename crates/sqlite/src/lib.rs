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
//! - `records`, `claims`, `view`, `work`, `sessions`, `deliveries`: the store traits, one
//!   file per role ([`mcp_tasks_engine::store`]).
//! - `events`: each task's event log (the append and the read of a page).
//! - `hot`: the tasks written last, kept by the writer thread.
//! - `changes`: the change log the writers of all processes keep and read (what another
//!   process changed: forgotten from the cache, sent to the change feed).
//! - `peers`: the other processes on the file: the shared commit counter that wakes them,
//!   and each node's lock that says whether it lives (`node_gone`).
//! - `migrate`: the numbered migrations embedded from `migrations/000n_….sql`, applied
//!   on open and tracked with `PRAGMA user_version`.
//! - `compat`: reading rows written by earlier builds (input requests named by method).
//! - `faults`: the store file's faults said plainly (not a database, locked, read-only, disk
//!   full) and the lock that keeps builds allowing one server per file off it.
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
//! connections on Tokio's blocking pool, alongside the writer (WAL).
//!
//! Any number of processes serve one file (hosts start a stdio server per window; an HTTP
//! server, a `worker` or the CLI's `--cmd` beside them), each a node with its own claims, as
//! replicas are on PostgreSQL ([`ClaimStore::shared`](mcp_tasks_engine::ClaimStore::shared)
//! is true). Their writer threads take turns at SQLite's one write lock (`BEGIN IMMEDIATE`,
//! waiting up to a busy timeout of 5 s for another's batch); each keeps its group
//! commit. A batch of one process wakes the others within tens of microseconds
//! (`peers`, `crates/sqlite/examples/wakeup.rs`), and each reads from the change
//! log what changed under it (`changes`). A process killed with -9 has its tasks
//! taken over by a live one on its next rescuer pass (every second): its node's lock went
//! with it. Other programs may read the file, and wait up to the busy timeout for the write
//! lock.

mod claims;
mod compat;
mod changes;
mod deliveries;
mod events;
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
