//! [`ViewStore`] for [`SqliteStore`]: what the web view reads (pages newest first with
//! filters, each on an index; counts by status; a task's status history; its origin), and
//! the plan of a page's statement for the tests that keep it on an index.

use async_trait::async_trait;
use rusqlite::types::Type;
use rusqlite::{OptionalExtension, params};

use mcp_tasks_engine::{
    BrowseQuery, HistoryEntry, Origin, Principal, Status, StoreError, TaskId, TaskRecord, Timestamp, Version, ViewStore,
};

use crate::rows::{collect, read_record, to_u64};
use crate::sql::{COLUMNS, NOT_UNFINISHED, UNFINISHED};
use crate::store::SqliteStore;

impl SqliteStore {
    /// SQLite's plan (`EXPLAIN QUERY PLAN`, its details joined by `; `) of the statement
    /// [`ViewStore::browse`] runs for `query`'s filters and cursor: for diagnostics and the
    /// tests that keep every page on an index.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    pub async fn browse_plan(&self, query: &BrowseQuery) -> Result<String, StoreError> {
        let (sql, values) = browse_statement(query);
        self.read(move |conn| {
            let mut stmt = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .map_err(StoreError::backend)?;
            let rows: Vec<String> = stmt
                .query_map(rusqlite::params_from_iter(values.iter()), |row| row.get(3))
                .and_then(Iterator::collect)
                .map_err(StoreError::backend)?;
            Ok(rows.join("; "))
        })
        .await
    }
}

#[async_trait]
impl ViewStore for SqliteStore {
    async fn browse(&self, query: &BrowseQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let (sql, values) = browse_statement(query);
        self.read(move |conn| {
            conn.prepare_cached(&sql)
                .and_then(|mut stmt| {
                    collect(stmt.query_map(rusqlite::params_from_iter(values.iter()), read_record)?)
                })
                .map_err(StoreError::backend)
        })
        .await
    }

    async fn status_counts(&self, owner: &Principal) -> Result<Vec<(Status, u64)>, StoreError> {
        let owner = owner.as_str().to_owned();
        self.read(move |conn| {
            // The finished tasks: a covering scan of the owner's entries of
            // `tasks_finished_by_owner_status` (0013).
            let mut counts: Vec<(String, u64)> = conn
                .prepare_cached(&format!(
                    "SELECT status, COUNT(*) FROM tasks WHERE owner = ?1 AND {NOT_UNFINISHED} GROUP BY status"
                ))
                .and_then(|mut stmt| {
                    stmt.query_map([&owner], |row| Ok((row.get(0)?, u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0))))?
                        .collect()
                })
                .map_err(StoreError::backend)?;
            // The unfinished ones: the few entries of `tasks_unfinished`, each task's row read
            // for its owner and status, tallied here (a GROUP BY would sort them first). The
            // index named: SQLite would otherwise read all the owner's tasks through an index
            // that leads with the owner.
            let unfinished: Vec<String> = conn
                .prepare_cached(&format!(
                    "SELECT status FROM tasks INDEXED BY tasks_unfinished WHERE status IN {UNFINISHED} AND owner = ?1"
                ))
                .and_then(|mut stmt| stmt.query_map([&owner], |row| row.get(0))?.collect())
                .map_err(StoreError::backend)?;
            for status in unfinished {
                match counts.iter_mut().find(|(counted, _)| *counted == status) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((status, 1)),
                }
            }
            // In the order of the statuses' names, as one GROUP BY gave them before 0013.
            counts.sort_unstable();
            Ok(counts.into_iter().filter_map(|(status, n)| Some((Status::parse(&status)?, n))).collect())
        })
        .await
    }

    async fn history(&self, id: &TaskId) -> Result<Vec<HistoryEntry>, StoreError> {
        let id = id.as_str().to_owned();
        self.read(move |conn| {
            let entry = |row: &rusqlite::Row<'_>| {
                let status: String = row.get(2)?;
                Ok(HistoryEntry {
                    version: Version(to_u64(0, row.get(0)?)?),
                    at: Timestamp(row.get(1)?),
                    status: Status::parse(&status).ok_or_else(|| {
                        rusqlite::Error::FromSqlConversionFailure(2, Type::Text, format!("unknown status {status:?}").into())
                    })?,
                    message: row.get(3)?,
                })
            };
            // One read transaction: the entries and the row as of one commit.
            let read = || -> rusqlite::Result<Vec<HistoryEntry>> {
                let read = conn.unchecked_transaction()?;
                let mut entries: Vec<HistoryEntry> = read
                    .prepare_cached("SELECT version, at, status, message FROM task_history WHERE task_id = ?1 ORDER BY version")?
                    .query_map([&id], entry)?
                    .collect::<rusqlite::Result<_>>()?;
                // The entry of the write that finished the task is its finished row
                // ([`record_change`]); rows finished by earlier builds have it stored too.
                let row = read
                    .prepare_cached(
                        "SELECT version, updated_at, status, status_message, created_at, creation_in_history \
                         FROM tasks WHERE id = ?1",
                    )?
                    .query_row([&id], |row| Ok((entry(row)?, row.get::<_, i64>(4)?, row.get::<_, bool>(5)?)))
                    .optional()?;
                // The usual creation entry, when the row stands for it (0014).
                if let Some((_, created_at, false)) = row {
                    let creation = HistoryEntry { version: Version(1), at: Timestamp(created_at), status: Status::Working, message: None };
                    entries.insert(0, creation);
                }
                if let Some(row) = row.map(|(row, ..)| row).filter(|row| row.status.is_terminal())
                    && entries.last().is_none_or(|last| last.status != row.status || last.message != row.message)
                {
                    entries.push(row);
                }
                Ok(entries)
            };
            read().map_err(StoreError::backend)
        })
        .await
    }

    async fn set_origin(&self, id: &TaskId, origin: &Origin) -> Result<(), StoreError> {
        let id = id.as_str().to_owned();
        let origin = origin.clone();
        self.write(move |conn| {
            conn.prepare_cached(
                "UPDATE tasks SET era = ?1, client_name = ?2, client_version = ?3 WHERE id = ?4",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    origin.era,
                    origin.client_name,
                    origin.client_version,
                    id
                ])
            })
            .map(|_| ())
            .map_err(StoreError::backend)
        })
        .await
    }

    async fn origin(&self, id: &TaskId) -> Result<Option<Origin>, StoreError> {
        let id = id.as_str().to_owned();
        self.read(move |conn| {
            let found: Option<(Option<String>, Option<String>, Option<String>)> = conn
                .prepare_cached("SELECT era, client_name, client_version FROM tasks WHERE id = ?1")
                .and_then(|mut stmt| {
                    stmt.query_row([id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
                        .optional()
                })
                .map_err(StoreError::backend)?;
            Ok(found.and_then(|(era, client_name, client_version)| {
                era.map(|era| Origin {
                    era,
                    client_name,
                    client_version,
                })
            }))
        })
        .await
    }
}

/// The statement of `browse` for `query`'s filters, and its parameters in order (also
/// planned by [`SqliteStore::browse_plan`]).
fn browse_statement(query: &BrowseQuery) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value as Sql;
    // The index named, not left to the planner: without statistics it reads the owner's
    // tasks in order through `tasks_by_owner` and filters them, which steps over every
    // other task of the owner when few match.
    // A finished status: the owner's entries of that status in `tasks_finished_by_owner_status`;
    // an unfinished one: the few unfinished tasks of `tasks_unfinished`, newest first, each
    // row read for its owner and status (migration 0013). Each partial index needs its own
    // `WHERE` in the statement.
    let (index, partial) = match (query.status, &query.tool) {
        (Some(status), _) if status.is_terminal() => ("tasks_finished_by_owner_status", NOT_UNFINISHED.to_owned()),
        (Some(_), _) => ("tasks_unfinished", format!("status IN {UNFINISHED}")),
        (None, Some(_)) => ("tasks_by_owner_tool", String::new()),
        (None, None) => ("tasks_by_owner", String::new()),
    };
    let mut sql = format!("SELECT {COLUMNS} FROM tasks INDEXED BY {index} WHERE owner = ?");
    let mut values = vec![Sql::Text(query.owner.as_str().to_owned())];
    if let Some(status) = query.status {
        sql.push_str(&format!(" AND {partial} AND status = ?"));
        values.push(Sql::Text(status.as_str().to_owned()));
    }
    if let Some(tool) = &query.tool {
        sql.push_str(" AND tool = ?");
        values.push(Sql::Text(tool.clone()));
    }
    if let Some(text) = &query.text {
        // `lower` is ASCII-only in SQLite, as `BrowseQuery::matches` defines it.
        sql.push_str(
            " AND (instr(lower(id), ?1x) > 0 OR instr(lower(tool), ?1x) > 0 \
             OR instr(lower(coalesce(status_message, '')), ?1x) > 0 OR instr(lower(arguments), ?1x) > 0)",
        );
        let n = values.len() + 1;
        sql = sql.replace("?1x", &format!("?{n}"));
        values.push(Sql::Text(text.to_ascii_lowercase()));
    }
    if let Some(cursor) = &query.before {
        let n = values.len() + 1;
        sql.push_str(&format!(" AND (created_at, id) < (?{n}, ?{})", n + 1));
        values.push(Sql::Integer(cursor.created_at.0));
        values.push(Sql::Text(cursor.id.as_str().to_owned()));
    }
    let n = values.len() + 1;
    sql.push_str(&format!(" ORDER BY created_at DESC, id DESC LIMIT ?{n}"));
    values.push(Sql::Integer(i64::from(query.limit)));
    // Every placeholder numbered: `?` alone takes the next number, and mixing is legal.
    (sql, values)
}
