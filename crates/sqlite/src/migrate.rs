//! Embedded, numbered schema migrations, tracked with `PRAGMA user_version`.
//!
//! Migration `n` (1-based) is `MIGRATIONS[n - 1]`, the file `migrations/000n_….sql`. A
//! database at `user_version = k` has had the first `k` applied. Each migration runs in its
//! own `IMMEDIATE` transaction together with the bump of `user_version`, so a crash leaves
//! the schema at a whole number, and two processes opening one file at once do not apply
//! the same migration twice.

use rusqlite::{Connection, TransactionBehavior};

use mcp_tasks_engine::StoreError;

/// Every migration, in order. Append only.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_tasks.sql"),
    include_str!("../migrations/0002_input_methods.sql"),
    include_str!("../migrations/0003_retention_at_scale.sql"),
    include_str!("../migrations/0004_idempotency_keys.sql"),
    include_str!("../migrations/0005_process_groups.sql"),
    include_str!("../migrations/0006_claims.sql"),
    include_str!("../migrations/0007_web_view.sql"),
    include_str!("../migrations/0008_checkpoints.sql"),
    include_str!("../migrations/0009_trace_context.sql"),
    include_str!("../migrations/0010_kept_groups.sql"),
];

/// The schema version this build writes: the number of migrations.
pub(crate) const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Brings the schema of `conn`'s database up to [`SCHEMA_VERSION`].
///
/// # Errors
/// [`StoreError::Backend`] if a migration fails (it is rolled back), or if the database was
/// written by a newer build whose schema this one does not know.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    loop {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::backend)?;
        let current = user_version(&tx).map_err(StoreError::backend)?;
        let Some(sql) = usize::try_from(current)
            .ok()
            .and_then(|n| MIGRATIONS.get(n))
        else {
            if current > SCHEMA_VERSION {
                return Err(StoreError::Backend(
                    format!(
                        "the database schema is at version {current}, newer than the \
                         {SCHEMA_VERSION} this build knows; use a newer mcp-tasks"
                    )
                    .into(),
                ));
            }
            // Up to date; dropping `tx` ends the empty transaction.
            return Ok(());
        };
        let next = current + 1;
        tx.execute_batch(sql).map_err(StoreError::backend)?;
        tx.pragma_update(None, "user_version", next)
            .map_err(StoreError::backend)?;
        tx.commit().map_err(StoreError::backend)?;
        tracing::info!(version = next, "applied task store migration");
    }
}

/// The database's `user_version`: how many migrations it has had.
fn user_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}
