//! Embedded, numbered schema migrations, tracked with `PRAGMA user_version`.
//!
//! Migration `n` (1-based) is `MIGRATIONS[n - 1]`, the file `migrations/000n_….sql`. A
//! database at `user_version = k` has had the first `k` applied. Each migration runs in its
//! own `IMMEDIATE` transaction together with the bump of `user_version`, so a crash leaves
//! the schema at a whole number, and two processes opening one file at once do not apply
//! the same migration twice.

use rusqlite::{Connection, TransactionBehavior};

use mcp_tasks_engine::StoreError;

/// One numbered migration.
struct Migration {
    /// Its SQL, run as one batch.
    sql: &'static str,
    /// Whether it edits the text of the schema (`PRAGMA writable_schema`, ending with it on):
    /// then the runner checks the edit was made, bumps `schema_version` (so every connection
    /// reads the schema again) and reloads this connection's.
    edits_schema: bool,
}

const fn sql(sql: &'static str) -> Migration {
    Migration { sql, edits_schema: false }
}

/// Every migration, in order. Append only.
const MIGRATIONS: &[Migration] = &[
    sql(include_str!("../migrations/0001_tasks.sql")),
    sql(include_str!("../migrations/0002_input_methods.sql")),
    sql(include_str!("../migrations/0003_retention_at_scale.sql")),
    sql(include_str!("../migrations/0004_idempotency_keys.sql")),
    sql(include_str!("../migrations/0005_process_groups.sql")),
    sql(include_str!("../migrations/0006_claims.sql")),
    sql(include_str!("../migrations/0007_web_view.sql")),
    sql(include_str!("../migrations/0008_checkpoints.sql")),
    sql(include_str!("../migrations/0009_trace_context.sql")),
    Migration {
        sql: include_str!("../migrations/0010_status_check_without_in_list.sql"),
        edits_schema: true,
    },
    sql(include_str!("../migrations/0011_kept_groups.sql")),
    sql(include_str!("../migrations/0012_counts_and_history_without_triggers.sql")),
    sql(include_str!("../migrations/0013_fewer_indexes_per_lifecycle.sql")),
    sql(include_str!("../migrations/0014_creation_entry_in_the_row.sql")),
    sql(include_str!("../migrations/0015_many_processes.sql")),
    sql(include_str!("../migrations/0016_webhook_deliveries.sql")),
    sql(include_str!("../migrations/0017_task_event_logs.sql")),
    sql(include_str!("../migrations/0018_operator_status.sql")),
];

/// The schema version this build writes: the number of migrations.
pub(crate) const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Brings the schema of `conn`'s database up to [`SCHEMA_VERSION`].
///
/// # Errors
/// [`StoreError::Backend`] if a migration fails (it is rolled back), or if the database was
/// written by a newer build whose schema this one does not know.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    // The versions applied by this call, said in one line at the end (a first start applies
    // every migration: one line, not one per migration).
    let mut applied: Option<(u32, u32)> = None;
    loop {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::backend)?;
        let current = user_version(&tx).map_err(StoreError::backend)?;
        let Some(migration) = usize::try_from(current)
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
            if let Some((from, to)) = applied {
                tracing::info!(from, to, "applied task store migrations");
            }
            return Ok(());
        };
        let next = current + 1;
        tx.execute_batch(migration.sql).map_err(StoreError::backend)?;
        if migration.edits_schema {
            finish_schema_edit(&tx, next)?;
        }
        tx.pragma_update(None, "user_version", next)
            .map_err(StoreError::backend)?;
        tx.commit().map_err(StoreError::backend)?;
        tracing::debug!(version = next, "applied task store migration");
        applied = Some((applied.map_or(next, |(from, _)| from), next));
    }
}

/// Ends a migration that edited the schema's text: refuses it if the edit found nothing to
/// change (a `tasks` table this build did not write), bumps `schema_version`, as SQLite's
/// procedure requires, and turns `writable_schema` off with a reload of this connection's
/// schema, which also parses the edited text (a malformed edit fails here, inside the
/// migration's transaction, and is rolled back).
fn finish_schema_edit(tx: &Connection, version: u32) -> Result<(), StoreError> {
    let edited = || -> rusqlite::Result<bool> {
        let changed = tx.changes() > 0;
        let schema: u32 = tx.pragma_query_value(None, "schema_version", |row| row.get(0))?;
        tx.pragma_update(None, "schema_version", schema.wrapping_add(1))?;
        tx.execute_batch("PRAGMA writable_schema = RESET")?;
        tx.query_row("SELECT count(*) FROM tasks WHERE 0", [], |_| Ok(()))?;
        Ok(changed)
    };
    match edited() {
        Ok(true) => Ok(()),
        Ok(false) => Err(StoreError::Backend(
            format!(
                "migration {version} found no table text to edit: this database's `tasks` table \
                 was not written by mcp-tasks; restore it from a backup or start a new store"
            )
            .into(),
        )),
        Err(err) => Err(StoreError::backend(err)),
    }
}

/// The database's `user_version`: how many migrations it has had.
fn user_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}
