-- 0003: what the web view (`/ui`) reads: a task's status history, where it came from, and
-- the indexes of its newest-first pages and counts.

-- The status history: a row for the insert and for every write that changes the status or
-- the status message, written by triggers in the statement of that write, deleted with
-- the task (the foreign key cascades).
CREATE TABLE task_history (
    task_id TEXT   NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    version BIGINT NOT NULL,
    at      BIGINT NOT NULL,
    status  TEXT   NOT NULL,
    message TEXT,
    PRIMARY KEY (task_id, version)
);

CREATE FUNCTION task_history_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_history (task_id, version, at, status, message)
        VALUES (NEW.id, NEW.version, NEW.updated_at, NEW.status, NEW.status_message)
        ON CONFLICT (task_id, version) DO NOTHING;
    RETURN NULL;
END;
$$;

CREATE TRIGGER task_history_on_insert AFTER INSERT ON tasks
    FOR EACH ROW EXECUTE FUNCTION task_history_record();
CREATE TRIGGER task_history_on_change AFTER UPDATE OF status, status_message ON tasks
    FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status
                       OR NEW.status_message IS DISTINCT FROM OLD.status_message)
    EXECUTE FUNCTION task_history_record();

-- Where a task came from (NULL for rows of earlier builds); written once after the insert,
-- without bumping the version.
ALTER TABLE tasks ADD COLUMN era TEXT;
ALTER TABLE tasks ADD COLUMN client_name TEXT;
ALTER TABLE tasks ADD COLUMN client_version TEXT;

-- `browse` filtered by status or tool, newest first, and `status_counts`.
CREATE INDEX tasks_by_owner_status ON tasks (owner, status, created_at, id);
CREATE INDEX tasks_by_owner_tool ON tasks (owner, tool, created_at, id);
