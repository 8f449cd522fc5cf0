-- 0001: the tasks table and the indexes its queries use.
--
-- Applied once, inside a transaction, by `migrate.rs`, which then sets
-- `PRAGMA user_version = 1`. Never edit a released migration: add `0002_….sql`.

CREATE TABLE tasks (
    id                 TEXT    NOT NULL PRIMARY KEY,
    owner              TEXT    NOT NULL,
    tool               TEXT    NOT NULL,
    -- The call's arguments, as JSON.
    arguments          TEXT    NOT NULL,
    -- The spec's name of the state's status (`Status::as_str`), kept beside `state` for
    -- the indexes; always derived from `state` when written.
    status             TEXT    NOT NULL
        CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
    -- `TaskState` as serde_json writes it.
    state              TEXT    NOT NULL,
    status_message     TEXT,
    -- Milliseconds since the Unix epoch, UTC.
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    -- NULL: unlimited retention.
    ttl_ms             INTEGER,
    -- created_at + ttl_ms (saturating); NULL: never expires.
    expires_at         INTEGER,
    poll_interval_ms   INTEGER,
    attempt            INTEGER NOT NULL,
    version            INTEGER NOT NULL,
    error_result_fails INTEGER NOT NULL CHECK (error_result_fails IN (0, 1))
) STRICT;

-- `list`: one owner's tasks in (created_at, id) order, resuming after a cursor.
CREATE INDEX tasks_by_owner ON tasks (owner, created_at, id);

-- `expired` and `purge`: tasks whose TTL ran out.
CREATE INDEX tasks_by_expiry ON tasks (expires_at) WHERE expires_at IS NOT NULL;

-- `unfinished` (restart recovery), oldest first; small, since most tasks are finished.
CREATE INDEX tasks_unfinished ON tasks (created_at, id)
    WHERE status IN ('working', 'input_required');
