-- 0001: the tasks table, the per-owner counts and the indexes the store's queries use:
-- SQLite's migrations 0001-0004 in one, since no PostgreSQL store predates them.
--
-- Applied once by `migrate.rs`, in one transaction under a transaction-level advisory lock,
-- which then records version 1 in `mcp_tasks_schema`. Never edit a released migration: add
-- `0002_….sql`. Every name is unqualified: the tables go into the connection's current schema
-- (the first of its `search_path`), so one database can hold several stores.

CREATE TABLE tasks (
    -- `COLLATE "C"`: ids and owners compare byte by byte, as the engine's `Ord` does, so
    -- listing ties break by id in the same order on every server, whatever its locale.
    id                 TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    owner              TEXT COLLATE "C" NOT NULL,
    tool               TEXT    NOT NULL,
    -- The call's arguments and `TaskState` as serde_json writes them. `json`, not `jsonb`:
    -- kept as written, never queried into, and `jsonb` refuses the `\u0000` escape that a
    -- client may legitimately send inside a string.
    arguments          JSON    NOT NULL,
    -- The spec's name of the state's status (`Status::as_str`), kept beside `state` for
    -- the indexes; always derived from `state` when written.
    status             TEXT    NOT NULL
        CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
    state              JSON    NOT NULL,
    status_message     TEXT,
    -- Milliseconds since the Unix epoch, UTC.
    created_at         BIGINT  NOT NULL,
    updated_at         BIGINT  NOT NULL,
    -- NULL: unlimited retention.
    ttl_ms             BIGINT  CHECK (ttl_ms >= 0),
    -- created_at + ttl_ms (saturating); NULL: never expires.
    expires_at         BIGINT,
    poll_interval_ms   BIGINT  CHECK (poll_interval_ms >= 0),
    -- A u32.
    attempt            BIGINT  NOT NULL CHECK (attempt BETWEEN 0 AND 4294967295),
    version            BIGINT  NOT NULL CHECK (version >= 0),
    error_result_fails BOOLEAN NOT NULL,
    -- Which input requests the requestor can answer: a JSON array of kind names.
    input_kinds        JSON    NOT NULL,
    -- The requestor's idempotency key (`dev.mcp-tasks/idempotency-key`), if it sent one.
    idempotency_key    TEXT
);

-- `list`: one owner's tasks in (created_at, id) order, resuming after a cursor.
CREATE INDEX tasks_by_owner ON tasks (owner, created_at, id);

-- `unfinished` (restart recovery), oldest first; small, since most tasks are finished.
-- The WHERE must match `UNFINISHED` in sql.rs, or the planner cannot use it.
CREATE INDEX tasks_unfinished ON tasks (created_at, id)
    WHERE status IN ('working', 'input_required');

-- `expired` (the sweeper): unfinished tasks by expiry, never stepping over finished ones.
CREATE INDEX tasks_unfinished_by_expiry ON tasks (expires_at, id)
    WHERE status IN ('working', 'input_required');

-- `purge`: finished tasks by expiry, deleted in bounded batches.
CREATE INDEX tasks_finished_by_expiry ON tasks (expires_at)
    WHERE status IN ('completed', 'failed', 'cancelled');

-- At most one task per owner and key: what makes concurrent keyed inserts, from any
-- replica, create one task (`INSERT … ON CONFLICT (owner, idempotency_key) WHERE
-- idempotency_key IS NOT NULL DO NOTHING` in sql.rs names this index). Keyless tasks are not
-- in it.
CREATE UNIQUE INDEX tasks_by_idempotency_key ON tasks (owner, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- `count` (the retention limit, checked on every creation): one row per owner with the
-- number of its tasks, kept by triggers in the same statement as the insert or delete,
-- instead of counting the owner's entries of `tasks_by_owner`.
CREATE TABLE task_counts (
    owner TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tasks BIGINT NOT NULL CHECK (tasks >= 0)
);

CREATE FUNCTION task_counts_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_counts AS counts (owner, tasks) VALUES (NEW.owner, 1)
        ON CONFLICT (owner) DO UPDATE SET tasks = counts.tasks + 1;
    RETURN NULL;
END
$$;

CREATE FUNCTION task_counts_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE task_counts SET tasks = tasks - 1 WHERE owner = OLD.owner;
    DELETE FROM task_counts WHERE owner = OLD.owner AND tasks = 0;
    RETURN NULL;
END
$$;

-- The owner never changes, but should a row ever be moved, the counts follow.
CREATE FUNCTION task_counts_on_owner_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE task_counts SET tasks = tasks - 1 WHERE owner = OLD.owner;
    DELETE FROM task_counts WHERE owner = OLD.owner AND tasks = 0;
    INSERT INTO task_counts AS counts (owner, tasks) VALUES (NEW.owner, 1)
        ON CONFLICT (owner) DO UPDATE SET tasks = counts.tasks + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER task_counts_on_insert AFTER INSERT ON tasks
    FOR EACH ROW EXECUTE FUNCTION task_counts_on_insert();
CREATE TRIGGER task_counts_on_delete AFTER DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION task_counts_on_delete();
CREATE TRIGGER task_counts_on_owner_change AFTER UPDATE OF owner ON tasks
    FOR EACH ROW WHEN (NEW.owner IS DISTINCT FROM OLD.owner)
    EXECUTE FUNCTION task_counts_on_owner_change();
