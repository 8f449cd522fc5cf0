//! Row encoding of [`PostgresStore`](crate::PostgresStore): the keyed insert of a task (its
//! columns bound in order), the lookup of a key's holder, the compare-and-set's bound
//! values, and a row decoded into a [`TaskRecord`].

use crate::conn::Session;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{Json, ToSql};
use tokio_postgres::Row;

use mcp_tasks_engine::{
    IdempotencyKey, InputKind, Inserted, Lease, Origin, Principal, Status, StoreError, TaskId, TaskRecord, TaskState, Timestamp,
    TraceContext, Update, Version,
};

use crate::outage::backend;
use crate::sql;

/// How many times a keyed `insert` tries again when the key changed hands between its
/// statements (taken, then released by a task past its TTL, then taken again…).
const KEY_ROUNDS: usize = 4;

/// Inserts `task` through `client` (a connection or a transaction): a new task, or the
/// owner's retained task holding its idempotency key.
pub(crate) async fn insert_keyed(
    client: &impl Session,
    task: &TaskRecord,
    claim: Option<&Lease>,
    origin: Option<&Origin>,
    recording: bool,
) -> Result<Inserted, StoreError> {
    let values = InsertValues::new(task, claim, origin, recording)?;
    let row = &values.row;
    // Without webhooks the statement carries no delivery at all: its plan stays the one
    // every lifecycle had (a NULL event in it made PostgreSQL plan it anew each time).
    let insert = client
        .prepare_cached(if recording { sql::INSERT_RECORDING } else { sql::INSERT })
        .await
        .map_err(backend)?;
    let mut params = values.params().to_vec();
    if recording {
        params.push(values.event());
    }
    for _ in 0..KEY_ROUNDS {
        match client.execute(&insert, &params).await {
            Ok(1) => return Ok(Inserted::New),
            Ok(_) => {}
            Err(err) if is_duplicate_id(&err) => {
                return Err(StoreError::Duplicate(task.id.clone()));
            }
            Err(err) => return Err(backend(err)),
        }
        if let Some(existing) = retained_holder(client, task, row).await? {
            return Ok(Inserted::Existing(existing));
        }
    }
    Err(StoreError::Backend(
        format!(
            "the idempotency key of task {} changed hands {KEY_ROUNDS} times during its insert",
            task.id
        )
        .into(),
    ))
}

/// The values of a task's row in the order of [`sql::INSERT`]'s parameters (`$1`…`$24`), and
/// its webhook event (`$25` of [`sql::INSERT_RECORDING`]).
pub(crate) struct InsertValues<'a> {
    task: &'a TaskRecord,
    pub(crate) row: NewRow<'a>,
    traceparent: Option<&'a str>,
    tracestate: Option<&'a str>,
    node: Option<&'a str>,
    until: Option<i64>,
    era: Option<&'a str>,
    client_name: Option<&'a str>,
    client_version: Option<&'a str>,
    attempt: i64,
    arguments: Json<&'a serde_json::Value>,
    state: Json<&'a TaskState>,
    input_kinds: Json<&'a [InputKind]>,
    /// The webhook delivery the insert records ([`event_of`]), if the replica records them.
    event: Option<&'static str>,
}

impl<'a> InsertValues<'a> {
    /// `task`'s row, claimed by `claim`, with `origin`; with its webhook delivery if
    /// `recording` (the store records them).
    pub(crate) fn new(
        task: &'a TaskRecord,
        claim: Option<&'a Lease>,
        origin: Option<&'a Origin>,
        recording: bool,
    ) -> Result<InsertValues<'a>, StoreError> {
        Ok(InsertValues {
            task,
            row: NewRow::from_record(task)?,
            traceparent: task.trace.as_ref().map(TraceContext::traceparent),
            tracestate: task.trace.as_ref().and_then(TraceContext::tracestate),
            node: claim.map(|lease| lease.node.as_str()),
            until: claim.map(|lease| lease.until.0),
            era: origin.map(|origin| origin.era.as_str()),
            client_name: origin.and_then(|origin| origin.client_name.as_deref()),
            client_version: origin.and_then(|origin| origin.client_version.as_deref()),
            attempt: i64::from(task.attempt),
            arguments: Json(&task.arguments),
            state: Json(&task.state),
            input_kinds: Json(&task.input_kinds),
            event: event_of(&task.state, recording),
        })
    }

    /// The parameters `$1`…`$24`.
    pub(crate) fn params(&self) -> [&(dyn ToSql + Sync); 24] {
        let (task, row) = (self.task, &self.row);
        [
            &row.id,
            &row.owner,
            &task.tool,
            &self.arguments,
            &row.status,
            &self.state,
            &task.status_message,
            &task.created_at.0,
            &task.updated_at.0,
            &row.ttl_ms,
            &row.expires_at,
            &row.poll_interval_ms,
            &self.attempt,
            &row.version,
            &task.error_result_fails,
            &self.input_kinds,
            &row.idempotency_key,
            &self.traceparent,
            &self.tracestate,
            &self.node,
            &self.until,
            &self.era,
            &self.client_name,
            &self.client_version,
        ]
    }

    /// The webhook event's parameter (of the `_RECORDING` statements).
    pub(crate) fn event(&self) -> &(dyn ToSql + Sync) {
        &self.event
    }
}

/// The webhook event of a task in `state` (its status as an operator is told it, unless
/// `working`), when `recording`.
fn event_of(state: &TaskState, recording: bool) -> Option<&'static str> {
    Some(state.operator_status()).filter(|status| recording && *status != Status::Working).map(Status::as_str)
}

/// After an insert of `task` (encoded as `row`) that wrote no row and failed with no error:
/// the owner's key is taken (a keyless row never conflicts), by a retained task, which is the
/// answer, or by one past its TTL, which gives it up (`None`: the insert tries again).
/// Between these statements another replica may purge the holder, or take the released key:
/// the insert then tries again, and the unique index still lets exactly one of any number of
/// racers in.
async fn retained_holder(
    client: &impl Session,
    task: &TaskRecord,
    row: &NewRow<'_>,
) -> Result<Option<TaskRecord>, StoreError> {
    let Some(key) = row.idempotency_key else {
        return Err(StoreError::Backend("a keyless insert wrote no row".into()));
    };
    if let Some(existing) = key_holder(client, row.owner, key).await? {
        if existing.retained_at(task.created_at) {
            return Ok(Some(existing));
        }
        let release = client
            .prepare_cached(sql::RELEASE_KEY)
            .await
            .map_err(backend)?;
        client
            .execute(&release, &[&row.owner, &key, &task.created_at.0])
            .await
            .map_err(backend)?;
    }
    Ok(None)
}

/// The values the compare-and-set `REPLACE` (and `ANSWER`, which starts with it) binds, in
/// the order of its parameters: the update's state, status, status message, time and
/// attempt, then the task's id and expected version.
pub(crate) struct ReplaceValues<'a> {
    state: Json<&'a TaskState>,
    status: &'static str,
    message: &'a Option<String>,
    updated_at: i64,
    attempt: i64,
    id: &'a str,
    expected: i64,
    event: Option<&'static str>,
}

impl<'a> ReplaceValues<'a> {
    /// The values of `update` written over task `id` at version `expected`, with its webhook
    /// delivery if `recording`; `None` if the version is beyond `BIGINT`, which no row has
    /// (the task moved on).
    pub(crate) fn new(id: &'a TaskId, expected: Version, update: &'a Update, recording: bool) -> Option<ReplaceValues<'a>> {
        Some(ReplaceValues {
            state: Json(&update.state),
            status: update.state.operator_status().as_str(),
            message: &update.status_message,
            updated_at: update.updated_at.0,
            attempt: i64::from(update.attempt),
            id: id.as_str(),
            expected: i64::try_from(expected.0).ok()?,
            event: event_of(&update.state, recording),
        })
    }

    /// The parameters `$1` to `$7` of the write.
    pub(crate) fn params(&self) -> [&(dyn ToSql + Sync); 7] {
        [&self.state, &self.status, self.message, &self.updated_at, &self.attempt, &self.id, &self.expected]
    }

    /// The webhook event's parameter (`$8` of `REPLACE`, `$10` of `ANSWER`).
    pub(crate) fn event(&self) -> &(dyn ToSql + Sync) {
        &self.event
    }
}

/// The values of a group of new rows, as [`sql::CREATE_GROUP`] binds them: one array per
/// parameter of [`InsertValues`] (`$1`…`$24`), and the events.
pub(crate) struct InsertColumns<'a> {
    ids: Vec<&'a str>,
    owners: Vec<&'a str>,
    tools: Vec<&'a str>,
    arguments: Vec<Json<&'a serde_json::Value>>,
    statuses: Vec<&'static str>,
    states: Vec<Json<&'a TaskState>>,
    messages: Vec<Option<&'a str>>,
    created_at: Vec<i64>,
    updated_at: Vec<i64>,
    ttl_ms: Vec<Option<i64>>,
    expires_at: Vec<Option<i64>>,
    poll_interval_ms: Vec<Option<i64>>,
    attempts: Vec<i64>,
    versions: Vec<i64>,
    error_result_fails: Vec<bool>,
    input_kinds: Vec<Json<&'a [InputKind]>>,
    keys: Vec<Option<&'a str>>,
    traceparents: Vec<Option<&'a str>>,
    tracestates: Vec<Option<&'a str>>,
    nodes: Vec<Option<&'a str>>,
    until: Vec<Option<i64>>,
    eras: Vec<Option<&'a str>>,
    client_names: Vec<Option<&'a str>>,
    client_versions: Vec<Option<&'a str>>,
    events: Vec<Option<&'static str>>,
}

impl<'a> InsertColumns<'a> {
    pub(crate) fn new(rows: &[InsertValues<'a>]) -> InsertColumns<'a> {
        fn column<'v, 'a: 'v, T>(rows: &'v [InsertValues<'a>], value: impl Fn(&'v InsertValues<'a>) -> T) -> Vec<T> {
            rows.iter().map(value).collect()
        }
        InsertColumns {
            ids: column(rows, |row| row.row.id),
            owners: column(rows, |row| row.row.owner),
            tools: column(rows, |row| row.task.tool.as_str()),
            arguments: column(rows, |row| Json(row.arguments.0)),
            statuses: column(rows, |row| row.row.status),
            states: column(rows, |row| Json(row.state.0)),
            messages: column(rows, |row| row.task.status_message.as_deref()),
            created_at: column(rows, |row| row.task.created_at.0),
            updated_at: column(rows, |row| row.task.updated_at.0),
            ttl_ms: column(rows, |row| row.row.ttl_ms),
            expires_at: column(rows, |row| row.row.expires_at),
            poll_interval_ms: column(rows, |row| row.row.poll_interval_ms),
            attempts: column(rows, |row| row.attempt),
            versions: column(rows, |row| row.row.version),
            error_result_fails: column(rows, |row| row.task.error_result_fails),
            input_kinds: column(rows, |row| Json(row.input_kinds.0)),
            keys: column(rows, |row| row.row.idempotency_key),
            traceparents: column(rows, |row| row.traceparent),
            tracestates: column(rows, |row| row.tracestate),
            nodes: column(rows, |row| row.node),
            until: column(rows, |row| row.until),
            eras: column(rows, |row| row.era),
            client_names: column(rows, |row| row.client_name),
            client_versions: column(rows, |row| row.client_version),
            events: column(rows, |row| row.event),
        }
    }

    /// The parameters `$1`…`$24`.
    pub(crate) fn params(&self) -> [&(dyn ToSql + Sync); 24] {
        [
            &self.ids,
            &self.owners,
            &self.tools,
            &self.arguments,
            &self.statuses,
            &self.states,
            &self.messages,
            &self.created_at,
            &self.updated_at,
            &self.ttl_ms,
            &self.expires_at,
            &self.poll_interval_ms,
            &self.attempts,
            &self.versions,
            &self.error_result_fails,
            &self.input_kinds,
            &self.keys,
            &self.traceparents,
            &self.tracestates,
            &self.nodes,
            &self.until,
            &self.eras,
            &self.client_names,
            &self.client_versions,
        ]
    }

    /// The events' parameter (`$29` of the recording statement).
    pub(crate) fn events(&self) -> &(dyn ToSql + Sync) {
        &self.events
    }
}

/// The values of a group of compare-and-set writes, as [`sql::REPLACE_GROUP`] binds them:
/// one array per parameter of [`ReplaceValues`].
pub(crate) struct ReplaceColumns<'a> {
    states: Vec<Json<&'a TaskState>>,
    statuses: Vec<&'static str>,
    messages: Vec<Option<&'a str>>,
    updated_at: Vec<i64>,
    attempts: Vec<i64>,
    ids: Vec<&'a str>,
    expected: Vec<i64>,
    events: Vec<Option<&'static str>>,
}

impl<'a> ReplaceColumns<'a> {
    pub(crate) fn new(writes: &[ReplaceValues<'a>]) -> ReplaceColumns<'a> {
        ReplaceColumns {
            states: writes.iter().map(|write| Json(write.state.0)).collect(),
            statuses: writes.iter().map(|write| write.status).collect(),
            messages: writes.iter().map(|write| write.message.as_deref()).collect(),
            updated_at: writes.iter().map(|write| write.updated_at).collect(),
            attempts: writes.iter().map(|write| write.attempt).collect(),
            ids: writes.iter().map(|write| write.id).collect(),
            expected: writes.iter().map(|write| write.expected).collect(),
            events: writes.iter().map(|write| write.event).collect(),
        }
    }

    /// The parameters `$1` to `$7`, then the events (`$8` of the recording statement).
    pub(crate) fn params(&self) -> [&(dyn ToSql + Sync); 8] {
        [&self.states, &self.statuses, &self.messages, &self.updated_at, &self.attempts, &self.ids, &self.expected, &self.events]
    }
}

/// The task holding `owner`'s idempotency key `key`, retained or not.
pub(crate) async fn key_holder(
    client: &impl Session,
    owner: &str,
    key: &str,
) -> Result<Option<TaskRecord>, StoreError> {
    let holder = client
        .prepare_cached(sql::KEY_HOLDER)
        .await
        .map_err(backend)?;
    let holder = client
        .query_opt(&holder, &[&owner, &key])
        .await
        .map_err(backend)?;
    holder.as_ref().map(read_record).transpose()
}

/// The columns of a [`TaskRecord`] that need converting before they are stored.
pub(crate) struct NewRow<'a> {
    id: &'a str,
    owner: &'a str,
    status: &'static str,
    ttl_ms: Option<i64>,
    expires_at: Option<i64>,
    poll_interval_ms: Option<i64>,
    version: i64,
    idempotency_key: Option<&'a str>,
}

impl<'a> NewRow<'a> {
    fn from_record(task: &'a TaskRecord) -> Result<NewRow<'a>, StoreError> {
        Ok(NewRow {
            id: task.id.as_str(),
            owner: task.owner.as_str(),
            status: task.state.operator_status().as_str(),
            ttl_ms: task.ttl_ms.map(to_i64).transpose()?,
            expires_at: task.expires_at().map(|at| at.0),
            poll_interval_ms: task.poll_interval_ms.map(to_i64).transpose()?,
            version: to_i64(task.version.0)?,
            idempotency_key: task.idempotency_key.as_ref().map(IdempotencyKey::as_str),
        })
    }
}

/// Whether `err` is the primary key (the id) being taken already.
pub(crate) fn is_duplicate_id(err: &tokio_postgres::Error) -> bool {
    err.as_db_error().is_some_and(|db| {
        db.code() == &SqlState::UNIQUE_VIOLATION && db.constraint() == Some("tasks_pkey")
    })
}

/// PostgreSQL's `BIGINT` is signed 64-bit; a larger `u64` cannot be stored.
fn to_i64(n: u64) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| StoreError::Backend(format!("{n} does not fit a BIGINT column").into()))
}

/// Decodes a row selected with the store's column list (`sql::columns!`).
pub(crate) fn read_record(row: &Row) -> Result<TaskRecord, StoreError> {
    decode(row).map_err(|err| StoreError::Backend(format!("a stored task cannot be read: {err}").into()))
}

fn decode(row: &Row) -> Result<TaskRecord, Box<dyn std::error::Error + Send + Sync>> {
    let unsigned = |column: usize| -> Result<Option<u64>, Box<dyn std::error::Error + Send + Sync>> {
        Ok(row.try_get::<_, Option<i64>>(column)?.map(u64::try_from).transpose()?)
    };
    Ok(TaskRecord {
        id: TaskId::from(row.try_get::<_, String>(0)?),
        owner: Principal::new(row.try_get::<_, String>(1)?),
        tool: row.try_get(2)?,
        arguments: row.try_get::<_, Json<serde_json::Value>>(3)?.0,
        state: row.try_get::<_, Json<TaskState>>(4)?.0,
        status_message: row.try_get(5)?,
        created_at: Timestamp(row.try_get(6)?),
        updated_at: Timestamp(row.try_get(7)?),
        ttl_ms: unsigned(8)?,
        poll_interval_ms: unsigned(9)?,
        attempt: u32::try_from(row.try_get::<_, i64>(10)?)?,
        version: Version(u64::try_from(row.try_get::<_, i64>(11)?)?),
        error_result_fails: row.try_get(12)?,
        input_kinds: row.try_get::<_, Json<Vec<InputKind>>>(13)?.0,
        idempotency_key: row.try_get::<_, Option<String>>(14)?.map(IdempotencyKey::new),
        // Written valid; a row edited by hand to something else reads as no trace.
        trace: match row.try_get::<_, Option<String>>(15)? {
            Some(traceparent) => TraceContext::parse(&traceparent, row.try_get::<_, Option<String>>(16)?.as_deref()),
            None => None,
        },
    })
}
