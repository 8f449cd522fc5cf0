//! The SQL text of [`SqliteStore`](crate::SqliteStore) shared by its roles: the columns
//! every read selects, the status lists that must match the partial indexes word for word,
//! the compare-and-set `REPLACE`, and the writer's own statements ([`Sql`]).

/// The columns every read selects, in the order [`read_record`](crate::rows::read_record) decodes them.
pub(crate) const COLUMNS: &str = "id, owner, tool, arguments, state, status_message, created_at, \
                       updated_at, ttl_ms, poll_interval_ms, attempt, version, error_result_fails, \
                       input_methods, idempotency_key, traceparent, tracestate";

/// How many columns [`COLUMNS`] names: the index of a column selected after them.
pub(crate) const COLUMN_COUNT: usize = column_count(COLUMNS);

/// The number of comma-separated names in `columns`.
const fn column_count(columns: &str) -> usize {
    let bytes = columns.as_bytes();
    let (mut i, mut count) = (0, 1);
    while i < bytes.len() {
        if bytes[i] == b',' {
            count += 1;
        }
        i += 1;
    }
    count
}

/// The statuses of tasks that may still change, as an SQL list. `status IN {UNFINISHED}`
/// must match the `WHERE` of the partial index `tasks_unfinished` word for word, or SQLite
/// will not use it.
pub(crate) const UNFINISHED: &str = "('working', 'input_required')";

/// The `WHERE` of the partial index `tasks_finished_by_owner_status` (migration 0013), word for
/// word: a query reads that index only when its own `WHERE` has this term.
pub(crate) const NOT_UNFINISHED: &str = "status NOT IN ('working', 'input_required')";

/// The statuses that never change again.
pub(crate) const TERMINAL: &str = "('completed', 'failed', 'cancelled')";

/// `replace`: the compare-and-set of a task's state (`?6` its id, `?7` the expected version).
pub(crate) const REPLACE: &str = "UPDATE tasks SET state = ?1, status = ?2, status_message = ?3, updated_at = ?4, \
     attempt = ?5, version = version + 1 WHERE id = ?6 AND version = ?7";

/// The statements the writer runs for every task lifecycle, prepared once on its connection
/// and kept by [`Prepared`](crate::writer::Prepared).
#[derive(Clone, Copy)]
pub(crate) enum Sql {
    Begin,
    Commit,
    /// The row of `tasks` (`rows::insert_task_row`).
    InsertTask,
    /// `task_counts` one up, and its first row (`rows::count_one_more`).
    CountOneMore,
    CountFirst,
    /// An entry of `task_history` (`rows::record_history`).
    History,
    /// [`REPLACE`].
    Replace,
    /// An owner's number of stored tasks, read by every creation's admission.
    CountOf,
    /// `PRAGMA data_version` (`changes`: did another connection commit).
    DataVersion,
    /// A batch's row of the change log (`changes`).
    LogChanges,
    /// A creation's running place: the unfinished tasks, from `tasks_unfinished` alone, and
    /// the live places of `take_place` not held by a stored task, in all and of an owner.
    CountRunning,
    /// An owner's unfinished tasks (when the owner's limit may be reached).
    CountRunningOf,
    /// A webhook delivery recorded with the write that causes it (`rows::record_delivery`).
    Delivery,
}

impl Sql {
    /// How many there are: the last variant's index plus one (checked below).
    pub(crate) const ALL: usize = 13;

    pub(crate) fn text(self) -> &'static str {
        match self {
            Sql::Begin => "BEGIN IMMEDIATE",
            Sql::Commit => "COMMIT",
            Sql::InsertTask => {
                "INSERT INTO tasks (id, owner, tool, arguments, status, state, status_message, \
                 created_at, updated_at, ttl_ms, expires_at, poll_interval_ms, attempt, version, \
                 error_result_fails, input_methods, idempotency_key, traceparent, tracestate, \
                 claim_node, lease_until, era, client_name, client_version, creation_in_history) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, \
                 ?20, ?21, ?22, ?23, ?24, ?25) \
                 ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
            }
            Sql::CountOneMore => "UPDATE task_counts SET tasks = tasks + 1 WHERE owner = ?1",
            Sql::CountFirst => "INSERT INTO task_counts (owner, tasks) VALUES (?1, 1)",
            Sql::History => "INSERT INTO task_history (task_id, version, at, status, message) VALUES (?1, ?2, ?3, ?4, ?5)",
            Sql::Replace => REPLACE,
            Sql::CountOf => "SELECT tasks FROM task_counts WHERE owner = ?1",
            Sql::DataVersion => "PRAGMA data_version",
            // No RETURNING (an ephemeral table per run): the row's number is the last rowid.
            Sql::LogChanges => "INSERT INTO task_changes (writer, ids) VALUES (?1, ?2)",
            Sql::CountRunning => {
                "SELECT (SELECT count(*) FROM tasks INDEXED BY tasks_unfinished \
                         WHERE status IN ('working', 'input_required')), count(*), count(*) FILTER (WHERE owner = ?1) \
                 FROM running_places WHERE lease_until > ?2 AND NOT node_gone(node) AND NOT (is_task AND EXISTS \
                 (SELECT 1 FROM tasks WHERE tasks.id = running_places.holder))"
            }
            Sql::CountRunningOf => {
                "SELECT count(*) FROM tasks INDEXED BY tasks_unfinished \
                 WHERE status IN ('working', 'input_required') AND owner = ?1"
            }
            Sql::Delivery => {
                "INSERT INTO webhook_deliveries (task_id, version, event, at, message, next_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?4)"
            }
        }
    }
}

const _: () = assert!(Sql::Delivery as usize + 1 == Sql::ALL, "Sql::ALL counts the variants");
