//! The PostgreSQL task store of mcp-tasks: [`PostgresStore`], a
//! [`mcp_tasks_engine::TaskStore`] on a PostgreSQL database (tokio-postgres, with a
//! deadpool pool of connections).
//!
//! # What it supports
//! The same semantics as the SQLite store (the shared store suite runs against both):
//! compare-and-set writes, one retained task per owner and idempotency key, keyset listing,
//! per-owner counts, sweeping and purging in bounded batches; and what many
//! replicas on one store need (the suite's two-handle cases): claims with leases (taken over
//! with the attempt bumped as the fence, renewed in one statement per node), the retention
//! limit, the owners' running slots, stored cancel requests and input answers, and a change
//! feed across processes. Migrating is safe for replicas starting together.
//!
//! TLS as libpq's `sslmode` and `sslrootcert` say, through rustls ([`tls`]).
//!
//! # Layout
//! - `store`: [`PostgresStore`]: connecting, the pool, the statement helpers.
//! - `conn`: statements as the store sends them: prepared and cached, or unnamed behind a
//!   transaction pooler (`pooler=transaction`).
//! - `records`, `claims`, `view`, `work`, `sessions`, `deliveries`: the store traits, one file per role
//!   ([`mcp_tasks_engine::store`]).
//! - `rows`: the keyed insert and its bound columns, rows decoded into tasks.
//! - `sql`: every statement the store runs (public only for the EXPLAIN tests).
//! - `migrate`: the numbered migrations embedded from `migrations/000n_….sql`, applied at
//!   connect under `pg_advisory_xact_lock`, tracked in `mcp_tasks_schema`.
//! - `outage`: the database unreachable for a while: which failures say so
//!   (`StoreError::Unavailable`, retryable), and the bounded wait for a connection.
//! - `group`: group commit: concurrent creations and replaces of one replica in one
//!   statement.
//! - `feed`: the change feed across replicas (`LISTEN/NOTIFY` and a polling backstop).
//! - `url`: [`redact`]: connection URLs as they may be shown, the password hidden.
//! - `tls`: `sslmode` and `sslrootcert` read as libpq does, the rustls verifier of each mode.

mod claims;
mod conn;
mod deliveries;
mod feed;
mod group;
mod migrate;
mod outage;
mod records;
mod rows;
mod sessions;
#[doc(hidden)]
pub mod sql;
mod store;
pub mod tls;
mod url;
mod view;
mod work;

pub use mcp_tasks_engine::store::implement::Commit;
#[doc(hidden)]
pub use group::Grouped;
pub use store::PostgresStore;
pub use url::redact;
