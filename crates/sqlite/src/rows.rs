//! Row encoding of [`SqliteStore`](crate::SqliteStore): a [`TaskRecord`] as the `tasks`
//! table stores it ([`NewRow`], inserted with its count and first history entry) and as a read
//! decodes it ([`read_record`]), the status history a write records, and the JSON and
//! integer conversions of the columns.

use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};

use mcp_tasks_engine::{IdempotencyKey, Origin, Principal, Status, TaskId, TaskRecord, TaskState, Timestamp, TraceContext, Version};

use crate::compat;
use crate::sql::Sql;
use crate::writer::Prepared;

/// A [`TaskRecord`] as the `tasks` table stores it.
pub(crate) struct NewRow {
    pub(crate) id: String,
    pub(crate) owner: String,
    pub(crate) tool: String,
    pub(crate) arguments: String,
    pub(crate) status: &'static str,
    pub(crate) state: String,
    pub(crate) status_message: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) ttl_ms: Option<i64>,
    pub(crate) expires_at: Option<i64>,
    pub(crate) poll_interval_ms: Option<i64>,
    pub(crate) attempt: u32,
    pub(crate) version: i64,
    pub(crate) error_result_fails: bool,
    pub(crate) input_methods: String,
    pub(crate) idempotency_key: Option<String>,
    pub(crate) traceparent: Option<String>,
    pub(crate) tracestate: Option<String>,
    /// The runner's claim (node, lease end); `None`: unclaimed.
    pub(crate) claim: Option<(String, i64)>,
    /// Where the task came from; `None`: unrecorded.
    pub(crate) origin: Option<Origin>,
    /// The row is a new task with the outcome of its early work in ([`NewRow::end_early`]):
    /// its creation entry is still the usual one.
    pub(crate) ended_early: bool,
    /// The webhook event the row is in, if any ([`event_of`]).
    pub(crate) event: Option<&'static str>,
}

impl NewRow {
    pub(crate) fn from_record(task: &TaskRecord) -> rusqlite::Result<NewRow> {
        Ok(NewRow {
            id: task.id.as_str().to_owned(),
            owner: task.owner.as_str().to_owned(),
            tool: task.tool.clone(),
            arguments: to_json(&task.arguments)?,
            status: task.state.operator_status().as_str(),
            state: to_json(&task.state)?,
            status_message: task.status_message.clone(),
            created_at: task.created_at.0,
            updated_at: task.updated_at.0,
            ttl_ms: task.ttl_ms.map(to_i64).transpose()?,
            expires_at: task.expires_at().map(|at| at.0),
            poll_interval_ms: task.poll_interval_ms.map(to_i64).transpose()?,
            attempt: task.attempt,
            version: to_i64(task.version.0)?,
            error_result_fails: task.error_result_fails,
            input_methods: to_json(&task.input_kinds)?,
            idempotency_key: task.idempotency_key.as_ref().map(|key| key.as_str().to_owned()),
            traceparent: task.trace.as_ref().map(|trace| trace.traceparent().to_owned()),
            tracestate: task.trace.as_ref().and_then(TraceContext::tracestate).map(str::to_owned),
            claim: None,
            origin: None,
            ended_early: false,
            event: event_of(&task.state),
        })
    }

    /// The row of a new task becomes that of `ended`, the task as its early work's ending
    /// left it (one version later). Its status history reads as if the creation and the
    /// ending had been written one after the other: the usual creation entry from the row,
    /// and the finished row itself (no `task_history` row, as for any usual lifecycle).
    pub(crate) fn end_early(&mut self, ended: &TaskRecord) -> rusqlite::Result<()> {
        self.ended_early = self.creation_in_row();
        self.status = ended.state.operator_status().as_str();
        self.state = to_json(&ended.state)?;
        self.event = event_of(&ended.state);
        self.status_message.clone_from(&ended.status_message);
        self.updated_at = ended.updated_at.0;
        self.attempt = ended.attempt;
        self.version = to_i64(ended.version.0)?;
        Ok(())
    }
}

/// Inserts `row` unless its owner's idempotency key is taken; how many rows went in (0: the
/// key is taken). A taken id is an error, as before keys existed. A row that went in is
/// counted for its owner and gets its first history entry (migration 0012): a row of
/// `task_history`, or for the engine's usual creation the row itself (migration 0014).
pub(crate) fn insert_row(prepared: &Prepared<'_>, row: &NewRow) -> rusqlite::Result<usize> {
    let inserted = insert_task_row(prepared, row)?;
    if inserted == 1 {
        count_one_more(prepared, &row.owner)?;
        if !row.creation_in_row() {
            record_history(prepared, &row.id, row.version, row.updated_at, row.status, row.status_message.as_deref())?;
        }
        if let Some(event) = row.event {
            record_delivery(prepared, &row.id, row.version, event, row.updated_at, row.status_message.as_deref())?;
        }
    }
    Ok(inserted)
}

/// The webhook event of a task in `state`: the status an operator is told, unless it is
/// `working` (no event).
pub(crate) fn event_of(state: &TaskState) -> Option<&'static str> {
    Some(state.operator_status()).filter(|status| *status != Status::Working).map(Status::as_str)
}

/// A webhook delivery of `event` for version `version` of task `id`, written in the
/// transaction of the write that caused it, when this store records deliveries
/// ([`crate::deliveries`]).
fn record_delivery(
    prepared: &Prepared<'_>,
    id: &str,
    version: i64,
    event: &str,
    at: i64,
    message: Option<&str>,
) -> rusqlite::Result<()> {
    if !prepared.records_deliveries() {
        return Ok(());
    }
    prepared.execute(Sql::Delivery, params![id, version, event, at, message]).map(|_| ())
}

impl NewRow {
    /// Whether the row's creation entry is the usual one, (1, `created_at`, `working`, no
    /// message), which `history` reads from the row instead of `task_history` (0014).
    fn creation_in_row(&self) -> bool {
        self.ended_early
            || (self.version == 1
                && self.status == Status::Working.as_str()
                && self.status_message.is_none()
                && self.updated_at == self.created_at)
    }
}

/// `owner` has one more row of `tasks`: its row of `task_counts` goes up, or starts at one.
/// Two single-row statements rather than an upsert, which SQLite would run with a statement
/// journal.
fn count_one_more(prepared: &Prepared<'_>, owner: &str) -> rusqlite::Result<()> {
    let updated = prepared.execute(Sql::CountOneMore, [owner])?;
    if updated == 0 {
        prepared.execute(Sql::CountFirst, [owner])?;
    }
    Ok(())
}

/// The status history's entry for version `version` of task `id`: written at the insert and
/// at every write that changes the status or the status message.
fn record_history(
    prepared: &Prepared<'_>,
    id: &str,
    version: i64,
    at: i64,
    status: &str,
    message: Option<&str>,
) -> rusqlite::Result<()> {
    prepared.execute(Sql::History, params![id, version, at, status, message]).map(|_| ())
}

/// A task's row as one entry of its status history sees it: version, `updated_at`, status
/// and status message.
pub(crate) struct Entry<'a> {
    pub(crate) version: i64,
    pub(crate) at: i64,
    pub(crate) status: &'a str,
    pub(crate) message: Option<&'a str>,
    /// The webhook event of the row ([`event_of`]); only an `after` entry's is read.
    pub(crate) event: Option<&'static str>,
}

impl Entry<'_> {
    pub(crate) fn of(record: &TaskRecord) -> Entry<'_> {
        Entry {
            version: i64::try_from(record.version.0).unwrap_or(i64::MAX),
            at: record.updated_at.0,
            status: record.state.operator_status().as_str(),
            message: record.status_message.as_deref(),
            event: event_of(&record.state),
        }
    }
}

fn is_finished(status: &str) -> bool {
    Status::parse(status).is_some_and(Status::is_terminal)
}

/// The status history of a write that took task `id`'s row from `before` to `after`: nothing
/// if neither the status nor the message changed; else `after`'s entry, except for the write
/// that finishes an unfinished task. That entry is the finished row itself, which never
/// changes again through the engine, and [`ViewStore::history`](mcp_tasks_engine::ViewStore::history) reads it from there: a
/// lifecycle writes one history row (its creation's), not two, which was 5 % of its
/// instructions (`benches/profile.sh`, thirteenth round). Should a finished row be written
/// again (the store allows it; the engine never does), its entry, if it is one, is written
/// first, as the row is about to stop saying it.
///
/// A change of status into an event status also records a webhook delivery
/// ([`record_delivery`]).
pub(crate) fn record_change(conn: &Connection, prepared: &Prepared<'_>, id: &str, before: &Entry<'_>, after: &Entry<'_>) -> rusqlite::Result<()> {
    if let Some(event) = after.event.filter(|_| before.status != after.status) {
        record_delivery(prepared, id, after.version, event, after.at, after.message)?;
    }
    let finished_before = is_finished(before.status);
    if finished_before {
        // The finished row is an entry unless the last one stored already says what it says.
        let last: Option<(String, Option<String>)> = conn
            .prepare_cached("SELECT status, message FROM task_history WHERE task_id = ?1 ORDER BY version DESC LIMIT 1")?
            .query_row([id], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        if last.is_none_or(|(status, message)| status != before.status || message.as_deref() != before.message) {
            record_history(prepared, id, before.version, before.at, before.status, before.message)?;
        }
    }
    if before.status == after.status && before.message == after.message {
        return Ok(());
    }
    if is_finished(after.status) && !finished_before {
        return Ok(());
    }
    record_history(prepared, id, after.version, after.at, after.status, after.message)
}

/// The row of `tasks` itself (see [`insert_row`]).
fn insert_task_row(prepared: &Prepared<'_>, row: &NewRow) -> rusqlite::Result<usize> {
    prepared.execute(
        Sql::InsertTask,
        params![
        row.id,
        row.owner,
        row.tool,
        row.arguments,
        row.status,
        row.state,
        row.status_message,
        row.created_at,
        row.updated_at,
        row.ttl_ms,
        row.expires_at,
        row.poll_interval_ms,
        row.attempt,
        row.version,
        row.error_result_fails,
        row.input_methods,
        row.idempotency_key,
        row.traceparent,
        row.tracestate,
        row.claim.as_ref().map(|(node, _)| node),
        row.claim.as_ref().map(|(_, until)| until),
        row.origin.as_ref().map(|origin| &origin.era),
        row.origin.as_ref().and_then(|origin| origin.client_name.as_ref()),
        row.origin.as_ref().and_then(|origin| origin.client_version.as_ref()),
        !row.creation_in_row(),
        ],
    )
}

/// Decodes a row selected with [`COLUMNS`](crate::sql::COLUMNS).
pub(crate) fn read_record(row: &Row<'_>) -> rusqlite::Result<TaskRecord> {
    let arguments: String = row.get(3)?;
    let state: String = row.get(4)?;
    Ok(TaskRecord {
        id: TaskId::from(row.get::<_, String>(0)?),
        owner: Principal::new(row.get::<_, String>(1)?),
        tool: row.get(2)?,
        arguments: from_json(3, &arguments)?,
        state: compat::state(4, &state)?,
        status_message: row.get(5)?,
        created_at: Timestamp(row.get(6)?),
        updated_at: Timestamp(row.get(7)?),
        ttl_ms: row
            .get::<_, Option<i64>>(8)?
            .map(|n| to_u64(8, n))
            .transpose()?,
        poll_interval_ms: row
            .get::<_, Option<i64>>(9)?
            .map(|n| to_u64(9, n))
            .transpose()?,
        attempt: row.get(10)?,
        version: Version(to_u64(11, row.get(11)?)?),
        error_result_fails: row.get(12)?,
        input_kinds: compat::input_kinds(13, &row.get::<_, String>(13)?)?,
        idempotency_key: row.get::<_, Option<String>>(14)?.map(IdempotencyKey::new),
        // Written valid; a row edited by hand to something else reads as no trace.
        trace: match row.get::<_, Option<String>>(15)? {
            Some(traceparent) => TraceContext::parse(&traceparent, row.get::<_, Option<String>>(16)?.as_deref()),
            None => None,
        },
    })
}

/// Collects rows, stopping at the first error.
pub(crate) fn collect(
    rows: impl Iterator<Item = rusqlite::Result<TaskRecord>>,
) -> rusqlite::Result<Vec<TaskRecord>> {
    rows.collect()
}

/// Whether `err` is the primary key (the id) being taken already.
pub(crate) fn is_duplicate_key(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_extended_error_code(),
        Some(rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY | rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE)
    )
}

pub(crate) fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> rusqlite::Result<String> {
    serde_json::to_string(value)
        .map_err(|err| rusqlite::Error::ToSqlConversionFailure(Box::new(err)))
}

pub(crate) fn from_json<T: serde::de::DeserializeOwned>(column: usize, text: &str) -> rusqlite::Result<T> {
    serde_json::from_str(text)
        .map_err(|err| rusqlite::Error::FromSqlConversionFailure(column, Type::Text, Box::new(err)))
}

/// SQLite integers are signed 64-bit; a larger `u64` cannot be stored.
pub(crate) fn to_i64(n: u64) -> rusqlite::Result<i64> {
    i64::try_from(n).map_err(|err| rusqlite::Error::ToSqlConversionFailure(Box::new(err)))
}

pub(crate) fn to_u64(column: usize, n: i64) -> rusqlite::Result<u64> {
    u64::try_from(n).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(column, n))
}
