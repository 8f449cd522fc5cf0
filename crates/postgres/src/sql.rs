//! The statements of [`PostgresStore`](crate::PostgresStore), in one place so that the
//! EXPLAIN tests (`tests/it/explain.rs`) plan exactly what the store runs.
//!
//! Public only for those tests: not part of the crate's API.

/// The columns every read selects, in the order `read_record` decodes them.
macro_rules! columns {
    () => {
        "id, owner, tool, arguments, state, status_message, created_at, updated_at, ttl_ms, \
         poll_interval_ms, attempt, version, error_result_fails, input_kinds, idempotency_key, \
         traceparent, tracestate"
    };
}

/// The statuses of tasks that may still change. It must match the `WHERE` of the partial
/// indexes `tasks_unfinished` and `tasks_unfinished_by_expiry` (migration 0001), or the
/// planner will not use them.
macro_rules! unfinished {
    () => {
        concat!("status IN ", unfinished_statuses!())
    };
}

/// The list of [`unfinished!`]'s statuses, for a column not named `status`.
macro_rules! unfinished_statuses {
    () => {
        "('working', 'input_required')"
    };
}

/// The server's clock in ms: a write's change stamp (`changed_at`), which the change feed's
/// backstop pages through.
macro_rules! now_ms {
    () => {
        "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
    };
}

/// The row of `task_counts` a backend adds to when it needs no lock (migration 0012).
macro_rules! shard {
    () => {
        "(pg_backend_pid() % 32)"
    };
}

/// The row of `running_counts` a backend adds to and takes from (migration 0016).
macro_rules! running_shard {
    () => {
        "(pg_backend_pid() % 64)"
    };
}

/// What a write that makes a task does besides when the row `inserted` is unfinished: one
/// more in the backend's shard of `running_counts` (migration 0016).
macro_rules! ran {
    () => {
        concat!(
            "ran AS (UPDATE running_counts SET running = running + 1 WHERE shard = ",
            running_shard!(),
            " AND EXISTS (SELECT 1 FROM inserted WHERE ",
            unfinished!(),
            ")), "
        )
    };
}

/// The columns of a new row, in the order of [`INSERT`]'s and [`CREATE`]'s parameters.
macro_rules! new_columns {
    () => {
        "id, owner, tool, arguments, status, state, status_message, created_at, updated_at, ttl_ms, \
         expires_at, poll_interval_ms, attempt, version, error_result_fails, input_kinds, idempotency_key, \
         traceparent, tracestate, claim_node, lease_until, era, client_name, client_version, changed_at"
    };
}

/// What a write that makes or changes a task does besides: the history row of the rows of
/// `written` whose status or message is new (`history!("written", "<condition>")`).
macro_rules! history {
    ($from:literal, $when:literal) => {
        concat!(
            "recorded AS (INSERT INTO task_history (task_id, version, at, status, message) \
             SELECT id, version, updated_at, status, status_message FROM ",
            $from,
            " WHERE ",
            $when,
            " ON CONFLICT (task_id, version) DO NOTHING)"
        )
    };
}

/// What a write that makes or changes a task does besides when the replica records webhook
/// deliveries: the delivery of the event `$param` (NULL: none, or not recorded) of the rows of
/// `written` that `<condition>` (`delivery!("written", "$8", "<condition>")`), in the same
/// statement, so in the same transaction (migration 0013).
macro_rules! delivery {
    ($from:literal, $param:literal, $when:literal) => {
        concat!(
            "delivered AS (INSERT INTO webhook_deliveries (task_id, version, event, at, message, next_at) \
             SELECT id, version, ",
            $param,
            "::text, updated_at, status_message, updated_at FROM ",
            $from,
            " WHERE ",
            $param,
            "::text IS NOT NULL AND ",
            $when,
            ")"
        )
    };
}

/// The statuses that never change again; matches `tasks_finished_by_expiry`.
macro_rules! terminal {
    () => {
        "status IN ('completed', 'failed', 'cancelled')"
    };
}

/// The text of [`INSERT`], with `extra` CTEs after its own.
macro_rules! insert {
    ($($extra:tt)*) => {
        concat!(
            "WITH inserted AS (INSERT INTO tasks (",
            new_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, \
             $20, $21, $22, $23, $24, ",
            now_ms!(),
            ") ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING \
             RETURNING id, owner, version, updated_at, status, status_message), \
             counted AS (INSERT INTO task_counts AS counts (owner, shard, tasks) SELECT owner, 0, 1 FROM inserted \
             ON CONFLICT (owner, shard) DO UPDATE SET tasks = counts.tasks + 1), ",
            ran!(),
            history!("inserted", "true"),
            $($extra)*
            " SELECT 1 FROM inserted"
        )
    };
}

/// `insert`: the row, unless its owner's idempotency key is taken (then no row, no error);
/// a taken id is a unique violation of the primary key. With the claim (`$20`, `$21`) and
/// the origin (`$22`..`$24`), NULL when there is none; with its count (shard 0, which
/// `insert_claimed` holds locked), its running count if it is unfinished, and its first
/// history row: one statement, one round trip.
/// Answers a row if the task was written.
pub const INSERT: &str = insert!();

/// [`INSERT`] by a replica that records webhook deliveries: with the delivery of the event
/// `$25` (NULL: none) in the same statement (migration 0013).
pub const INSERT_RECORDING: &str = insert!(", ", delivery!("inserted", "$25", "true"),);

/// The text of [`CREATE`], with `extra` CTEs after its own.
macro_rules! create {
    ($($extra:tt)*) => {
        concat!(
    "WITH calls AS (SELECT count(*) AS n, count(*) FILTER (WHERE owner = $2::text) AS mine FROM running_places \
     WHERE lease_until > $25::bigint AND NOT is_task), \
     slot AS (SELECT owner, slot FROM owner_slots WHERE owner = $2::text AND task_id IS NULL \
     AND slot < $28::bigint - (SELECT mine FROM calls) ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED), \
     decided AS (SELECT (SELECT coalesce(sum(tasks), 0)::bigint FROM task_counts WHERE owner = $2::text) AS retained, \
     (SELECT sum(running) FROM running_counts)::bigint + (SELECT n FROM calls) AS running, \
     EXISTS (SELECT 1 FROM slot) AS free), \
     inserted AS (INSERT INTO tasks (",
    new_columns!(),
    ") SELECT $1::text, $2::text, $3::text, $4::json, $5::text, $6::json, $7::text, $8::bigint, $9::bigint, \
     $10::bigint, $11::bigint, $12::bigint, $13::bigint, $14::bigint, $15::boolean, $16::json, $17::text, $18::text, \
     $19::text, $20::text, $21::bigint, $22::text, $23::text, $24::text, ",
    now_ms!(),
    " FROM decided WHERE retained < $26::bigint AND running < $27::bigint AND free \
     ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING \
     RETURNING id, owner, version, updated_at, status, status_message), \
     taken AS (UPDATE owner_slots SET task_id = inserted.id FROM inserted, slot \
     WHERE owner_slots.owner = slot.owner AND owner_slots.slot = slot.slot), \
     counted AS (INSERT INTO task_counts AS counts (owner, shard, tasks) SELECT owner, ",
    shard!(),
    ", 1 FROM inserted ON CONFLICT (owner, shard) DO UPDATE SET tasks = counts.tasks + 1), ",
    ran!(),
    history!("inserted", "true"),
    $($extra)*
    " SELECT EXISTS (SELECT 1 FROM inserted), retained, running, free FROM decided"
)
    };
}

/// `insert_placed`: a new task's whole creation in one statement, its own transaction
/// (migration 0012 says why this shape): `$1`…`$24` the row of [`INSERT`], `$25` now, then
/// the limits (retained, running in all, running of the owner). The owner's first free slot
/// below its limit (less its plain calls), skipping those other creations are taking; the
/// owner's count summed over its shards; the unfinished tasks (the sum of `running_counts`,
/// migration 0016) and live plain calls of every owner; the row if all three leave room, with
/// its slot, its count and its running count (this backend's shards) and its first history
/// row. Answers whether the row was written, the owner's count, the number
/// running, and whether a slot was free.
pub const CREATE: &str = create!();

/// [`CREATE`] by a replica that records webhook deliveries: with the delivery of the event
/// `$29` (NULL: none) in the same statement (migration 0013).
pub const CREATE_RECORDING: &str = create!(", ", delivery!("inserted", "$29", "true"),);


/// The text of [`CREATE_GROUP`]: `$events` the events' array parameter and `$event` its
/// column, `$delivery` the delivery CTE (all empty without).
macro_rules! create_group {
    ($events:literal, $event:literal, $delivery:expr) => {
        concat!(
    "WITH batch AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::json[], $5::text[], $6::json[], \
     $7::text[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], \
     $15::boolean[], $16::json[], $17::text[], $18::text[], $19::text[], $20::text[], $21::bigint[], $22::text[], \
     $23::text[], $24::text[]",
    $events,
    ") WITH ORDINALITY AS b(n_id, n_owner, n_tool, n_arguments, n_status, n_state, n_message, n_created, n_updated, \
     n_ttl, n_expires, n_poll, n_attempt, n_version, n_error_result_fails, n_input_kinds, n_key, n_traceparent, \
     n_tracestate, n_node, n_until, n_era, n_client_name, n_client_version",
    $event,
    ", k)), \
     ranked AS (SELECT k, row_number() OVER (PARTITION BY n_owner ORDER BY k) AS r, row_number() OVER (ORDER BY k) AS g \
     FROM batch), \
     owners AS (SELECT n_owner AS owner, count(*) AS n FROM batch GROUP BY n_owner), \
     calls AS (SELECT owner, count(*) AS n FROM running_places WHERE lease_until > $25::bigint AND NOT is_task \
     GROUP BY owner), \
     slots AS (SELECT owners.owner, free.slot, row_number() OVER (PARTITION BY owners.owner ORDER BY free.slot) AS r \
     FROM owners CROSS JOIN LATERAL (SELECT slot FROM owner_slots WHERE owner_slots.owner = owners.owner \
     AND task_id IS NULL AND slot < $28::bigint - coalesce((SELECT n FROM calls WHERE calls.owner = owners.owner), 0) \
     ORDER BY slot LIMIT owners.n FOR UPDATE SKIP LOCKED) AS free), \
     running AS (SELECT (SELECT sum(running) FROM running_counts)::bigint + (SELECT coalesce(sum(n), 0) FROM calls)::bigint AS n), \
     retained AS (SELECT owner, (SELECT coalesce(sum(tasks), 0) FROM task_counts WHERE task_counts.owner = owners.owner)::bigint AS n \
     FROM owners), \
     decided AS (SELECT batch.k, retained.n + LEAST(ranked.r - 1, GREATEST($26::bigint - retained.n, 0)) AS retained, \
     running.n + LEAST(ranked.g - 1, GREATEST($27::bigint - running.n, 0)) AS running, slots.slot \
     FROM batch JOIN ranked USING (k) JOIN retained ON retained.owner = batch.n_owner CROSS JOIN running \
     LEFT JOIN slots ON slots.owner = batch.n_owner AND slots.r = ranked.r), \
     inserted AS (INSERT INTO tasks (",
    new_columns!(),
    ") SELECT n_id, n_owner, n_tool, n_arguments, n_status, n_state, n_message, n_created, n_updated, n_ttl, \
     n_expires, n_poll, n_attempt, n_version, n_error_result_fails, n_input_kinds, n_key, n_traceparent, n_tracestate, \
     n_node, n_until, n_era, n_client_name, n_client_version, ",
    now_ms!(),
    " FROM batch JOIN decided USING (k) WHERE retained < $26::bigint AND running < $27::bigint AND slot IS NOT NULL \
     ORDER BY k ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING \
     RETURNING id, owner, version, updated_at, status, status_message), \
     taken AS (UPDATE owner_slots SET task_id = inserted.id FROM inserted JOIN batch ON batch.n_id = inserted.id \
     JOIN decided USING (k) WHERE owner_slots.owner = inserted.owner AND owner_slots.slot = decided.slot), \
     counted AS (INSERT INTO task_counts AS counts (owner, shard, tasks) SELECT owner, ",
    shard!(),
    ", count(*) FROM inserted GROUP BY owner ORDER BY owner \
     ON CONFLICT (owner, shard) DO UPDATE SET tasks = counts.tasks + EXCLUDED.tasks), \
     ran AS (UPDATE running_counts SET running = running + started.n FROM (SELECT count(*) AS n FROM inserted WHERE ",
    unfinished!(),
    ") AS started WHERE shard = ",
    running_shard!(),
    " AND started.n > 0), ",
    history!("inserted", "true"),
    $delivery,
    " SELECT EXISTS (SELECT 1 FROM inserted WHERE inserted.id = batch.n_id), decided.retained, decided.running, \
     decided.slot IS NOT NULL FROM batch JOIN decided USING (k) ORDER BY k"
)
    };
}

/// `insert_placed`, for a group of creations sent together (group commit, [`crate::group`]),
/// all with the same limits: `$1`…`$24` the columns of [`CREATE`]'s rows as arrays, one
/// element per creation, then as [`CREATE`] `$25` now and the limits. Each is decided as if
/// the group's creations ran alone one after another in their order: its owner's count and
/// the number running are what [`CREATE`] reads plus the creations of the group before it
/// (its owner's, and all), and its owner's slot is the owner's next free one that no other
/// creation is taking (`SKIP LOCKED`), in order. Answers, in the group's order, whether each
/// row was written, the owner's count and the number running it was decided on (as it would
/// have read them: the creations before it that a limit refused add nothing to either, so a
/// refused one reads the limit), and whether a slot was free for it. The counts and running counts of those written go in this
/// backend's shards, once per owner.
pub const CREATE_GROUP: &str = create_group!("", "", "");

/// [`CREATE_GROUP`] by a replica that records webhook deliveries: `$29` the events (NULL:
/// none).
pub const CREATE_GROUP_RECORDING: &str = create_group!(
    ", $29::text[]",
    ", n_event",
    concat!(", ", delivery!("inserted JOIN batch ON batch.n_id = inserted.id", "n_event", "true"))
);

/// `insert_placed`, when no slot was free: the owner's next slots (up to 16 more, never past
/// `$2`, the limit), and its slots whose task is no longer unfinished freed (a slot is freed by
/// the write that ends its task; this mends one that was not, such as a task written by an
/// earlier build). A slot taken again meanwhile keeps its new task: the update matches the
/// task it found.
pub const MAKE_SLOTS: &str = concat!(
    "WITH made AS (INSERT INTO owner_slots (owner, slot) \
     SELECT $1::text, n FROM generate_series((SELECT count(*) FROM owner_slots WHERE owner = $1::text)::integer, \
     LEAST($2::bigint, (SELECT count(*) FROM owner_slots WHERE owner = $1::text) + 16)::integer - 1) AS n \
     ON CONFLICT (owner, slot) DO NOTHING), \
     stale AS (SELECT slot, task_id FROM owner_slots WHERE owner = $1::text AND task_id IS NOT NULL \
     AND NOT EXISTS (SELECT 1 FROM tasks WHERE tasks.id = owner_slots.task_id AND tasks.",
    unfinished!(),
    ")) UPDATE owner_slots SET task_id = NULL FROM stale WHERE owner_slots.owner = $1::text \
     AND owner_slots.slot = stale.slot AND owner_slots.task_id = stale.task_id"
);

/// `insert_placed`, refused for the owner's limit: how many of its tasks run and plain calls
/// hold places.
pub const RUNNING_OF: &str = concat!(
    "SELECT (SELECT count(*) FROM tasks WHERE owner = $1 AND ",
    unfinished!(),
    ") + (SELECT count(*) FROM running_places WHERE owner = $1 AND lease_until > $2 AND NOT is_task)"
);

/// `announce`: a changed task's id, to every replica's feed, after its write committed.
/// The announcements gathered while the previous ones were sent, in one round trip.
pub const NOTIFY: &str = "SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload";

/// `insert`: the task holding an owner's key (`$1`, `$2`), retained or not.
pub const KEY_HOLDER: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM tasks WHERE owner = $1 AND idempotency_key = $2"
);

/// `insert`: a task past its TTL at `$3` gives up the owner's key.
pub const RELEASE_KEY: &str = "UPDATE tasks SET idempotency_key = NULL \
     WHERE owner = $1 AND idempotency_key = $2 AND expires_at <= $3";

/// `find_by_key`: one lookup in `tasks_by_idempotency_key`.
pub const FIND_BY_KEY: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM tasks WHERE owner = $1 AND idempotency_key = $2 \
     AND (expires_at IS NULL OR expires_at > $3)"
);

/// `get`.
pub const GET: &str = concat!("SELECT ", columns!(), " FROM tasks WHERE id = $1");

/// What a compare-and-set of the state (`REPLACE`, `ANSWER`) writes: the row at version
/// `$7` of task `$6` (`written`, with its status last), the history row if the status or the
/// message changed, the webhook delivery of the event `$event` if the status changed (`before` is the row as the statement's snapshot saw it: the version the
/// caller read, since only writes that bump the version change either), and, if the task
/// ended, the owner's slot freed and one less in this backend's shard of `running_counts`.
macro_rules! written {
    () => {
        written!(@with "")
    };
    ($event:literal) => {
        written!(@with concat!(", ", delivery!("written, before", $event, "status IS DISTINCT FROM was")))
    };
    (@with $delivery:expr) => {
        concat!(
            "before AS (SELECT status AS was, status_message AS was_message FROM tasks WHERE id = $6), \
             written AS (UPDATE tasks SET state = $1, status = $2, status_message = $3, updated_at = $4, \
             attempt = $5, version = version + 1, changed_at = ",
            now_ms!(),
            " WHERE id = $6 AND version = $7 RETURNING ",
            columns!(),
            ", status), ",
            history!(
                "written, before",
                "status IS DISTINCT FROM was OR status_message IS DISTINCT FROM was_message"
            ),
            $delivery,
            ", freed AS (UPDATE owner_slots SET task_id = NULL FROM written WHERE written.",
            terminal!(),
            " AND owner_slots.owner = written.owner AND owner_slots.task_id = written.id), \
             unran AS (UPDATE running_counts SET running = running - 1 FROM written, before WHERE shard = ",
            running_shard!(),
            " AND was IN ",
            unfinished_statuses!(),
            " AND written.",
            terminal!(),
            ")"
        )
    };
}

/// `replace`: the compare-and-set on the version and the read of the new row, one
/// statement. Under READ COMMITTED a racer blocked on the row lock re-checks the `WHERE`
/// against the winner's row, finds the version moved on and updates nothing.
pub const REPLACE: &str = concat!("WITH ", written!(), " SELECT ", columns!(), " FROM written");

/// [`REPLACE`] by a replica that records webhook deliveries: with the delivery of the event
/// `$8` (NULL: none) in the same statement (migration 0013).
pub const REPLACE_RECORDING: &str = concat!("WITH ", written!("$8"), " SELECT ", columns!(), " FROM written");

/// The text of [`REPLACE_GROUP`]: `$events` the events' array parameter and `$event` its
/// column, `$delivery` the delivery CTE (all empty without).
macro_rules! replace_group {
    ($events:literal, $event:literal, $delivery:expr) => {
        concat!(
            "WITH batch AS (SELECT * FROM unnest($1::json[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], \
             $6::text[], $7::bigint[]",
            $events,
            ") AS b(new_state, new_status, new_message, new_updated_at, new_attempt, task_id, expected",
            $event,
            ")), before AS (SELECT id, status AS was, status_message AS was_message FROM tasks \
             WHERE id IN (SELECT task_id FROM batch)), \
             written AS (UPDATE tasks SET state = new_state, status = new_status, status_message = new_message, \
             updated_at = new_updated_at, attempt = new_attempt, version = version + 1, changed_at = ",
            now_ms!(),
            " FROM batch WHERE tasks.id = batch.task_id AND tasks.version = batch.expected RETURNING ",
            columns!(),
            ", status",
            $event,
            "), ",
            history!(
                "written JOIN before USING (id)",
                "status IS DISTINCT FROM was OR status_message IS DISTINCT FROM was_message"
            ),
            $delivery,
            ", freed AS (UPDATE owner_slots SET task_id = NULL FROM written WHERE written.",
            terminal!(),
            " AND owner_slots.owner = written.owner AND owner_slots.task_id = written.id), \
             unran AS (UPDATE running_counts SET running = running - ended.n FROM (SELECT count(*) AS n \
             FROM written JOIN before USING (id) WHERE was IN ",
            unfinished_statuses!(),
            " AND written.",
            terminal!(),
            ") AS ended WHERE shard = ",
            running_shard!(),
            " AND ended.n > 0) SELECT ",
            columns!(),
            " FROM written"
        )
    };
}

/// `replace`, for a group of writes sent together (group commit, [`crate::group`]): the
/// columns of [`REPLACE`]'s parameters as arrays, one element per write (`$1` states … `$7`
/// expected versions), no two of the same task. Each row is written as [`REPLACE`] writes it
/// alone, with its history row; the slots of the tasks that ended freed, and as many fewer in
/// this backend's shard of `running_counts`. Answers the rows written.
pub const REPLACE_GROUP: &str = replace_group!("", "", "");

/// [`REPLACE_GROUP`] by a replica that records webhook deliveries: `$8` the events (NULL:
/// none).
pub const REPLACE_GROUP_RECORDING: &str = replace_group!(
    ", $8::text[]",
    ", event",
    concat!(", ", delivery!("written JOIN before USING (id)", "event", "status IS DISTINCT FROM was"))
);

/// `list`, first page.
pub const LIST_FIRST: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM tasks WHERE owner = $1 ORDER BY created_at, id LIMIT $2"
);

/// `list`, after a cursor (keyset paging on `tasks_by_owner`).
pub const LIST_AFTER: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM tasks WHERE owner = $1 AND (created_at, id) > ($2, $3) \
     ORDER BY created_at, id LIMIT $4"
);

/// `count`: the owner's rows of `task_counts`, summed.
pub const COUNT: &str = "SELECT coalesce(sum(tasks), 0)::bigint FROM task_counts WHERE owner = $1";

/// `unfinished`.
pub const UNFINISHED: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM tasks WHERE ",
    unfinished!(),
    " ORDER BY created_at, id LIMIT $1"
);

/// `expired`.
pub const EXPIRED: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM tasks WHERE ",
    unfinished!(),
    " AND expires_at <= $1 ORDER BY expires_at, id LIMIT $2"
);

/// `purge`: at most `$2` finished tasks past expiry. `SKIP LOCKED`: replicas purging at
/// once take disjoint batches instead of queueing on each other's rows.
/// With them their history, their event logs, and their owners' counts (this backend's shard).
/// Answers their ids.
pub const PURGE: &str = concat!(
    "WITH gone AS (DELETE FROM tasks WHERE id IN (SELECT id FROM tasks WHERE ",
    terminal!(),
    " AND expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING id, owner), \
     forgotten AS (DELETE FROM task_history WHERE task_id IN (SELECT id COLLATE \"default\" FROM gone)), \
     unlogged AS (DELETE FROM task_events WHERE task_id IN (SELECT id FROM gone)), \
     unheaded AS (DELETE FROM task_event_heads WHERE task_id IN (SELECT id FROM gone)), \
     counted AS (INSERT INTO task_counts AS counts (owner, shard, tasks) SELECT owner, ",
    shard!(),
    ", -count(*) FROM gone GROUP BY owner ON CONFLICT (owner, shard) DO UPDATE SET tasks = counts.tasks + EXCLUDED.tasks) \
     SELECT id FROM gone"
);

/// `set_process_group`: the version is not bumped (no change of the task's state).
pub const SET_PROCESS_GROUP: &str =
    "UPDATE tasks SET process_group = $1, process_start = $2 WHERE id = $3";

/// `process_group`.
pub const PROCESS_GROUP: &str = "SELECT process_group, process_start FROM tasks WHERE id = $1";

/// `set_kept_group` with a record: one row per key, replaced.
pub const SET_KEPT_GROUP: &str = "INSERT INTO kept_groups (key, process_group, process_start, keeper_pid, keeper_start) \
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key) DO UPDATE SET process_group = EXCLUDED.process_group, \
     process_start = EXCLUDED.process_start, keeper_pid = EXCLUDED.keeper_pid, keeper_start = EXCLUDED.keeper_start";

/// `set_kept_group` without one.
pub const FORGET_KEPT_GROUP: &str = "DELETE FROM kept_groups WHERE key = $1";

/// `kept_group`.
pub const KEPT_GROUP: &str = "SELECT process_group, process_start, keeper_pid, keeper_start FROM kept_groups WHERE key = $1";

/// `set_checkpoint`: fenced by the attempt, only while the task is unfinished; the version is
/// not bumped.
pub const SET_CHECKPOINT: &str = concat!(
    "UPDATE tasks SET checkpoint = $1 WHERE id = $2 AND attempt = $3 AND ",
    unfinished!()
);

/// `checkpoint`.
pub const CHECKPOINT: &str = "SELECT checkpoint FROM tasks WHERE id = $1";

/// `insert_claimed`: locks the owner's shard 0 of `task_counts` (creating it at zero) and
/// reads the count, one statement: concurrent `insert_claimed`s for one owner, from any
/// replica, queue on the row lock until the transaction holding it commits (its task counted
/// in shard 0, which the waiter reads as committed) or rolls back.
pub const LOCK_COUNT: &str = "WITH locked AS (INSERT INTO task_counts AS counts (owner, shard, tasks) VALUES ($1, 0, 0) \
     ON CONFLICT (owner, shard) DO UPDATE SET tasks = counts.tasks RETURNING tasks) \
     SELECT (SELECT tasks FROM locked) + coalesce((SELECT sum(tasks) FROM task_counts WHERE owner = $1 AND shard <> 0), 0)::bigint";

/// `claim`: the take-over of a lapsed (or absent) claim at the expected attempt, bumping the
/// attempt (the fence) and the version, one statement.
pub const CLAIM: &str = concat!(
    "UPDATE tasks SET claim_node = $1, lease_until = $2, attempt = attempt + 1, version = version + 1, changed_at = ",
    now_ms!(),
    " WHERE id = $3 AND attempt = $4 AND ",
    unfinished!(),
    " AND (lease_until IS NULL OR lease_until <= $5) RETURNING ",
    columns!()
);

/// `renew`: a node's live claims, through `tasks_by_claim`.
pub const RENEW: &str = concat!(
    "UPDATE tasks SET lease_until = $1 WHERE claim_node = $2 AND lease_until > $3 AND ",
    unfinished!(),
    " RETURNING id"
);

/// `lapsed`: unfinished tasks without a live claim, oldest first, through `tasks_unfinished`.
pub const LAPSED: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM tasks WHERE ",
    unfinished!(),
    " AND (lease_until IS NULL OR lease_until <= $1) ORDER BY created_at, id LIMIT $2"
);

/// `request_cancel`: the flag and a version bump (a change on the feed).
pub const REQUEST_CANCEL: &str = concat!(
    "UPDATE tasks SET cancel_requested = true, version = version + 1, changed_at = ",
    now_ms!(),
    " WHERE id = $1 AND ",
    unfinished!(),
    " RETURNING id"
);

/// `cancel_requested`.
pub const CANCEL_REQUESTED: &str = "SELECT cancel_requested FROM tasks WHERE id = $1";

/// `answer`: the compare-and-set of `replace` and the answer's row in one statement (and so
/// one transaction): no row updated, no answer stored.
pub const ANSWER: &str = concat!(
    "WITH ",
    written!(),
    ", stored AS (INSERT INTO task_answers (task_id, key, answer) SELECT id, $8, $9 FROM written \
     ON CONFLICT (task_id, key) DO UPDATE SET answer = EXCLUDED.answer) SELECT ",
    columns!(),
    " FROM written"
);

/// [`ANSWER`] by a replica that records webhook deliveries: with the delivery of the event
/// `$10` (NULL: none) in the same statement (migration 0013).
pub const ANSWER_RECORDING: &str = concat!(
    "WITH ",
    written!("$10"),
    ", stored AS (INSERT INTO task_answers (task_id, key, answer) SELECT id, $8, $9 FROM written \
     ON CONFLICT (task_id, key) DO UPDATE SET answer = EXCLUDED.answer) SELECT ",
    columns!(),
    " FROM written"
);

/// `take_answer`.
pub const TAKE_ANSWER: &str =
    "DELETE FROM task_answers WHERE task_id = $1 AND key = $2 RETURNING answer";

/// The change feed's polling backstop: which rows changed after a watermark, through
/// `tasks_by_change`: id, version and change time only (a replica reads in full only the
/// changes it has not seen, [`GET_CHANGED_ANY`]).
pub const CHANGED_SINCE: &str = "SELECT id, version, changed_at FROM tasks WHERE changed_at > $1 ORDER BY changed_at LIMIT $2";

/// The change feed: the changed tasks a replica had not seen (those its notifications named,
/// or its backstop found), by id, with their change time last.
pub const GET_CHANGED_ANY: &str = concat!(
    "SELECT ",
    columns!(),
    ", changed_at FROM tasks WHERE id = ANY ($1)"
);

/// The change feed's starting watermark: the server's clock now, in ms.
pub const CLOCK_MS: &str = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";


/// `take_slot`: serialises the takers of one tool's slots, across replicas, until commit.
pub const LOCK_SLOTS: &str = "SELECT pg_advisory_xact_lock(hashtext('mcp_tasks.slots.' || $1))";

/// `take_slot`: frees the tool's slots whose lease lapsed or whose task finished.
pub const FREE_SLOTS: &str = concat!(
    "DELETE FROM tool_slots WHERE tool = $1 AND (lease_until <= $2 OR NOT EXISTS \
     (SELECT 1 FROM tasks WHERE tasks.id = tool_slots.task_id AND tasks.",
    unfinished!(),
    "))"
);

/// `take_slot`: the slots held, and whether the task holds one.
pub const COUNT_SLOTS: &str = "SELECT count(*), count(*) FILTER (WHERE task_id = $2) FROM tool_slots WHERE tool = $1";

/// `take_slot`.
pub const TAKE_SLOT: &str = "INSERT INTO tool_slots (tool, task_id, node, lease_until) VALUES ($1, $2, $3, $4)";

/// `release_slot`.
pub const RELEASE_SLOT: &str = "DELETE FROM tool_slots WHERE tool = $1 AND task_id = $2";

/// `renew`: the node's live slots, beside its claims.
pub const RENEW_SLOTS: &str = "UPDATE tool_slots SET lease_until = $1 WHERE node = $2 AND lease_until > $3";

/// `renew`: the node's live running places, a task's only while the task is unfinished.
pub const RENEW_PLACES: &str = concat!(
    "UPDATE running_places SET lease_until = $1 WHERE node = $2 AND lease_until > $3 AND (NOT is_task OR EXISTS \
     (SELECT 1 FROM tasks WHERE tasks.id = running_places.holder AND tasks.",
    unfinished!(),
    "))"
);

/// `take_place`: the decision and its write in one statement, by the function of migration
/// 0010 (which says why): `(outcome, running)`.
pub const TAKE_PLACE: &str = "SELECT outcome, running FROM mcp_tasks_take_place($1, $2, $3, $4, $5, $6, $7, $8)";

/// `release_place`.
pub const RELEASE_PLACE: &str = "DELETE FROM running_places WHERE holder = $1";

/// `put_session`: the tasks it created are kept.
pub const PUT_SESSION: &str = "INSERT INTO sessions (id, owner, state, last_used) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, state = EXCLUDED.state, last_used = EXCLUDED.last_used";

/// `session`: by primary key, scoped to the owner.
pub const SESSION: &str = "SELECT state, created, last_used FROM sessions WHERE id = $1 AND owner = $2";

/// `add_session_task`: appended in one statement, so that concurrent creations both stay.
pub const ADD_SESSION_TASK: &str =
    "UPDATE sessions SET created = array_append(created, $2) WHERE id = $1 AND NOT ($2 = ANY (created))";

/// `touch_sessions`.
pub const TOUCH_SESSIONS: &str =
    "UPDATE sessions SET last_used = GREATEST(last_used, $2) WHERE id = ANY ($1) RETURNING id";

/// `end_session`.
pub const END_SESSION: &str = "DELETE FROM sessions WHERE id = $1";

/// `prune_sessions`: oldest first, from `sessions_by_last_use`, in a bounded batch.
pub const PRUNE_SESSIONS: &str = "DELETE FROM sessions WHERE id IN \
     (SELECT id FROM sessions WHERE last_used < $1 ORDER BY last_used LIMIT $2 FOR UPDATE SKIP LOCKED)";
/// `browse`: one statement for every combination of filters, each off when its parameter is
/// NULL (`$2` status, `$3` tool, `$4` lowercased text, `$5`/`$6` the cursor), newest first.
pub const BROWSE: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM tasks WHERE owner = $1 \
     AND ($2::text IS NULL OR status = $2) \
     AND ($3::text IS NULL OR tool = $3) \
     AND ($4::text IS NULL OR strpos(lower(id), $4) > 0 OR strpos(lower(tool), $4) > 0 \
          OR strpos(lower(coalesce(status_message, '')), $4) > 0 OR strpos(lower(arguments::text), $4) > 0) \
     AND ($5::bigint IS NULL OR (created_at, id) < ($5, $6::text)) \
     ORDER BY created_at DESC, id DESC LIMIT $7"
);

/// `status_counts`: the owner's entries of `tasks_by_owner_status`.
pub const STATUS_COUNTS: &str =
    "SELECT status, COUNT(*) FROM tasks WHERE owner = $1 GROUP BY status";

/// `history`.
pub const HISTORY: &str =
    "SELECT version, at, status, message FROM task_history WHERE task_id = $1 ORDER BY version";

/// `set_origin`: the version is not bumped.
pub const SET_ORIGIN: &str =
    "UPDATE tasks SET era = $1, client_name = $2, client_version = $3 WHERE id = $4";

/// `origin`.
pub const ORIGIN: &str = "SELECT era, client_name, client_version FROM tasks WHERE id = $1";

/// `claim_deliveries`: up to `$4` deliveries due at `$3` (no live claim), the longest due
/// first, claimed for node `$1` until `$2`. `SKIP LOCKED`: racing replicas take disjoint rows.
pub const CLAIM_DELIVERIES: &str = "UPDATE webhook_deliveries SET claim_node = $1, lease_until = $2 WHERE id IN \
     (SELECT id FROM webhook_deliveries WHERE next_at <= $3 AND (lease_until IS NULL OR lease_until <= $3) \
      ORDER BY next_at, id LIMIT $4 FOR UPDATE SKIP LOCKED) \
     RETURNING id, task_id, version, event, at, message, attempts, done";

/// `claim_deliveries`: the claimed deliveries' tasks.
pub const GET_MANY: &str = concat!("SELECT ", columns!(), " FROM tasks WHERE id = ANY($1)");

/// `finish_delivery`: delivery `$1`, if node `$2` still holds it.
pub const FINISH_DELIVERY: &str = "DELETE FROM webhook_deliveries WHERE id = $1 AND claim_node = $2";

/// `retry_delivery`: delivery `$1`, if node `$2` still holds it, tried again at `$3` with the
/// receivers `$4` done and the failure `$5`; its claim released.
pub const RETRY_DELIVERY: &str = "UPDATE webhook_deliveries SET attempts = attempts + 1, next_at = $3, done = $4, \
     last_error = $5, claim_node = NULL, lease_until = NULL WHERE id = $1 AND claim_node = $2";

/// `next_delivery_at`.
pub const NEXT_DELIVERY: &str = "SELECT min(GREATEST(next_at, coalesce(lease_until, 0))) FROM webhook_deliveries";

/// `append_events`: the events `$5` (types), `$6` (payloads), `$7` (times), `$3` of them
/// weighing `$4` bytes, added to the log of task `$1` if it is unfinished at attempt `$2`
/// (its row held `FOR SHARE` until the commit: the write that finishes it waits, or went
/// first and leaves nothing to match). Answers the first number, the log's earliest and its
/// bytes, or no row.
pub const APPEND_EVENTS: &str = concat!(
    "WITH live AS (SELECT id FROM tasks WHERE id = $1 AND attempt = $2 AND ",
    unfinished!(),
    " FOR SHARE), \
     head AS (INSERT INTO task_event_heads AS h (task_id, next_seq, earliest, bytes) \
     SELECT id, 1 + $3::bigint, 0, $4::bigint FROM live \
     ON CONFLICT (task_id) DO UPDATE SET next_seq = h.next_seq + $3::bigint, bytes = h.bytes + $4::bigint \
     RETURNING next_seq - $3::bigint AS first, next_seq, earliest, bytes), \
     added AS (INSERT INTO task_events (task_id, seq, type, payload, at) \
     SELECT $1, head.first + e.n - 1, e.type, e.payload, e.at FROM head, \
     unnest($5::text[], $6::text[], $7::bigint[]) WITH ORDINALITY AS e(type, payload, at, n)) \
     SELECT first, next_seq, earliest, bytes FROM head"
);

/// `append_events`, past the limits: the oldest events of task `$1` pruned until at most `$2`
/// are kept weighing at most `$3` bytes (the newest always stays), and the head moved on.
pub const PRUNE_EVENTS: &str = "WITH sizes AS (SELECT seq, \
     count(*) OVER (ORDER BY seq DESC) AS kept, sum(octet_length(payload)) OVER (ORDER BY seq DESC) AS weight \
     FROM task_events WHERE task_id = $1), \
     cut AS (SELECT coalesce(min(seq) FILTER (WHERE kept <= $2 AND weight <= $3), max(seq)) AS seq FROM sizes), \
     gone AS (DELETE FROM task_events WHERE task_id = $1 AND seq < (SELECT seq FROM cut) RETURNING octet_length(payload) AS size) \
     UPDATE task_event_heads SET earliest = GREATEST(earliest, (SELECT seq FROM cut)), \
     bytes = bytes - (SELECT coalesce(sum(size), 0) FROM gone) WHERE task_id = $1 AND (SELECT seq FROM cut) IS NOT NULL";

/// `logged_events`: the log's head of task `$1`.
pub const EVENT_HEAD: &str = "SELECT next_seq, earliest FROM task_event_heads WHERE task_id = $1";

/// `logged_events`: up to `$3` events of task `$1` after `$2`.
pub const EVENTS_AFTER: &str = "SELECT seq, type, payload, at FROM task_events WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3";

