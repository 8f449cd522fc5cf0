//! Embedded, numbered schema migrations, tracked in the table `mcp_tasks_schema`.
//!
//! Migration `n` (1-based) is `MIGRATIONS[n - 1]`, the file `migrations/000n_….sql`. A schema
//! whose `mcp_tasks_schema` holds versions `1..=k` has had the first `k` applied. Every
//! replica migrates at open, in one transaction that first takes a transaction-level advisory
//! lock (`pg_advisory_xact_lock`) on the schema's name: replicas starting together queue on
//! the lock, and each one after the first finds the work done. The lock ends with the
//! transaction, so a replica that dies while migrating leaves neither a half-applied schema
//! (PostgreSQL's DDL is transactional) nor a lock behind.

use tokio_postgres::Client;

use mcp_tasks_engine::StoreError;

/// Every migration, in order. Append only.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_tasks.sql"),
    include_str!("../migrations/0002_process_groups.sql"),
    include_str!("../migrations/0003_claims.sql"),
    include_str!("../migrations/0004_web_view.sql"),
    include_str!("../migrations/0005_checkpoints.sql"),
    include_str!("../migrations/0006_trace_context.sql"),
    include_str!("../migrations/0007_sessions.sql"),
    include_str!("../migrations/0008_kept_groups.sql"),
    include_str!("../migrations/0009_notify_after_commit.sql"),
    include_str!("../migrations/0010_take_place_in_one_statement.sql"),
    include_str!("../migrations/0011_create_in_one_call.sql"),
    include_str!("../migrations/0012_bookkeeping_in_the_statements.sql"),
    include_str!("../migrations/0013_webhook_deliveries.sql"),
    include_str!("../migrations/0014_task_event_logs.sql"),
    include_str!("../migrations/0015_operator_status.sql"),
    include_str!("../migrations/0016_running_counts.sql"),
];

/// The schema version this build writes: the number of migrations.
pub(crate) const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// The first key of the advisory lock taken while migrating ("mcpt"); the second is a hash of
/// the schema's name, so stores in different schemas of one database do not wait on each other.
const LOCK_CLASS: i32 = 0x6d63_7074;

/// Brings the schema of `client`'s current schema (the first of its `search_path`) up to
/// [`SCHEMA_VERSION`]. Returns the version found before.
///
/// # Errors
/// [`StoreError::Backend`] if the `search_path` names no existing schema, a migration fails
/// (the transaction is rolled back: nothing of it stays), or the schema was written by a newer
/// build whose migrations this one does not know.
pub(crate) async fn migrate(client: &mut Client) -> Result<i32, StoreError> {
    let tx = client.transaction().await.map_err(StoreError::backend)?;
    let schema: Option<String> = tx
        .query_one("SELECT current_schema()", &[])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(StoreError::backend)?;
    let Some(schema) = schema else {
        return Err(StoreError::Backend(
            "the connection's search_path names no existing schema; create it first \
             (CREATE SCHEMA …) or fix the URL's options"
                .into(),
        ));
    };
    tx.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", &[&LOCK_CLASS, &schema])
        .await
        .map_err(StoreError::backend)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS mcp_tasks_schema (\
             version    INTEGER     NOT NULL PRIMARY KEY, \
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    )
    .await
    .map_err(StoreError::backend)?;
    let found: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM mcp_tasks_schema", &[])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(StoreError::backend)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::Backend(
            format!(
                "the task store's schema {schema:?} is at version {found}, newer than the \
                 {SCHEMA_VERSION} this build knows; use a newer mcp-tasks"
            )
            .into(),
        ));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(usize::try_from(found).unwrap_or(0)) {
        let version = i32::try_from(index + 1).unwrap_or(i32::MAX);
        tx.batch_execute(sql).await.map_err(|err| {
            StoreError::Backend(format!("task store migration {version} failed: {err}").into())
        })?;
        tx.execute("INSERT INTO mcp_tasks_schema (version) VALUES ($1)", &[&version])
            .await
            .map_err(StoreError::backend)?;
        tracing::debug!(version, schema, "applied task store migration");
    }
    tx.commit().await.map_err(StoreError::backend)?;
    // One line for all the versions applied (a first start applies every migration).
    if usize::try_from(found).is_ok_and(|found| found < MIGRATIONS.len()) {
        tracing::info!(from = found + 1, to = MIGRATIONS.len(), schema, "applied task store migrations");
    }
    Ok(found)
}
