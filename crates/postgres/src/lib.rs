//! The PostgreSQL task store of mcp-tasks: [`PostgresStore`], a
//! [`mcp_tasks_engine::TaskStore`] on a PostgreSQL database (tokio-postgres, with a
//! deadpool pool of connections).
//!
//! # What this step supports
//! One serving replica per store, with the same semantics as the SQLite store (the shared
//! store suite runs against both): compare-and-set writes, one retained task per owner and
//! idempotency key, keyset listing, per-owner counts kept by triggers, sweeping and purging in
//! bounded batches. Many replicas on one store need what the engine does not yet ask of a store
//! (claims with leases in place of `unfinished`, a change feed across processes, stored input
//! answers and cancel requests, an atomic retention limit); that is the next step. Migrating
//! is already safe for replicas starting together.
//!
//! No TLS in this build: connect over loopback, a private network or a Unix socket.
//!
//! # Layout
//! - `store`: [`PostgresStore`]: connecting, the pool, the trait's methods.
//! - `sql`: every statement the store runs (public only for the EXPLAIN tests).
//! - `migrate`: the numbered migrations embedded from `migrations/000n_….sql`, applied at
//!   connect under `pg_advisory_xact_lock`, tracked in `mcp_tasks_schema`.
//! - `url`: [`redact`]: connection URLs as they may be shown, the password hidden.

mod migrate;
#[doc(hidden)]
pub mod sql;
mod store;
mod url;

pub use store::PostgresStore;
pub use url::redact;
