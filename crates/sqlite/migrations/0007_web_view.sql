-- 0006: what the web view (`/ui`) reads: a task's status history, where it came from, and
-- the indexes of its newest-first pages and counts.

-- The status history: a row for the insert and for every write that changes the status or
-- the status message, written by triggers in the statement of that write (no store code
-- writes it), deleted with the task.
CREATE TABLE task_history (
    task_id TEXT    NOT NULL,
    version INTEGER NOT NULL,
    at      INTEGER NOT NULL,
    status  TEXT    NOT NULL,
    message TEXT,
    PRIMARY KEY (task_id, version)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER task_history_on_insert AFTER INSERT ON tasks BEGIN
    INSERT OR REPLACE INTO task_history (task_id, version, at, status, message)
        VALUES (new.id, new.version, new.updated_at, new.status, new.status_message);
END;

CREATE TRIGGER task_history_on_change AFTER UPDATE OF status, status_message ON tasks
    WHEN new.status IS NOT old.status OR new.status_message IS NOT old.status_message BEGIN
    INSERT OR REPLACE INTO task_history (task_id, version, at, status, message)
        VALUES (new.id, new.version, new.updated_at, new.status, new.status_message);
END;

CREATE TRIGGER task_history_on_delete AFTER DELETE ON tasks BEGIN
    DELETE FROM task_history WHERE task_id = old.id;
END;

-- Where a task came from: the era and the client that created it (NULL for rows of earlier
-- builds). Written once after the insert, without bumping the version.
ALTER TABLE tasks ADD COLUMN era TEXT;
ALTER TABLE tasks ADD COLUMN client_name TEXT;
ALTER TABLE tasks ADD COLUMN client_version TEXT;

-- `browse` filtered by status or tool, newest first, and `status_counts` (a covering scan
-- of one owner's entries). Unfiltered pages read `tasks_by_owner` backwards. Without `id`:
-- an index holding `status` and `id` would cover `SELECT id … WHERE status IN (…)` and the
-- planner could take it over the small partial `tasks_unfinished`; ties of `created_at` are
-- sorted apart (a few rows), not the page.
CREATE INDEX tasks_by_owner_status ON tasks (owner, status, created_at);
CREATE INDEX tasks_by_owner_tool ON tasks (owner, tool, created_at);
