-- 0003: many replicas on one store. A task's claim: the node (process incarnation) running
-- it and when its lease lapses unless renewed (NULL for rows of earlier builds: lapsed, taken
-- over by the first rescuer); whether its requestor asked it to stop (a cooperative cancel,
-- read by whichever node runs it); the answers to its input requests not yet taken by its work
-- (they go with the task); and the change feed: every insert and every write that bumps the
-- version stamps `changed_at` (the server's clock, ms) and sends `NOTIFY "mcp_tasks.<schema>"`
-- with the task's id at commit. Notifications are a hint; each replica also polls
-- `tasks_by_change` for what it missed (a listener reconnecting, a full queue).

ALTER TABLE tasks ADD COLUMN claim_node TEXT;
ALTER TABLE tasks ADD COLUMN lease_until BIGINT;
ALTER TABLE tasks ADD COLUMN cancel_requested BOOLEAN NOT NULL DEFAULT false;
-- Added without a default, so that existing rows are not rewritten; set by the trigger below.
ALTER TABLE tasks ADD COLUMN changed_at BIGINT;

-- `renew` (the heartbeat): a node's claims on unfinished tasks.
CREATE INDEX tasks_by_claim ON tasks (claim_node) WHERE status IN ('working', 'input_required');

-- The polling backstop of the change feed: rows changed after a watermark.
CREATE INDEX tasks_by_change ON tasks (changed_at);

CREATE TABLE task_answers (
    task_id TEXT COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    key     TEXT NOT NULL,
    -- `Result<Value, ErrorObject>` as serde_json writes it: {"Ok": …} or {"Err": {…}}.
    answer  JSON NOT NULL,
    PRIMARY KEY (task_id, key)
);

CREATE FUNCTION tasks_stamp_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.version IS DISTINCT FROM OLD.version THEN
        NEW.changed_at := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    END IF;
    RETURN NEW;
END
$$;

CREATE FUNCTION tasks_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('mcp_tasks.' || TG_TABLE_SCHEMA, NEW.id);
    RETURN NULL;
END
$$;

CREATE TRIGGER tasks_stamp_change BEFORE INSERT OR UPDATE ON tasks
    FOR EACH ROW EXECUTE FUNCTION tasks_stamp_change();
-- Not on renewals or process groups: only what changes a task's record (its version).
CREATE TRIGGER tasks_notify_insert AFTER INSERT ON tasks
    FOR EACH ROW EXECUTE FUNCTION tasks_notify_change();
CREATE TRIGGER tasks_notify_update AFTER UPDATE ON tasks
    FOR EACH ROW WHEN (NEW.version IS DISTINCT FROM OLD.version)
    EXECUTE FUNCTION tasks_notify_change();

-- The slots of each tool's `max_concurrent`, across every replica and worker: the task
-- holding one, and its node's lease (renewed with its claims). A slot whose lease lapsed or
-- whose task finished is free. Taken under a transaction-level advisory lock per tool.
CREATE TABLE tool_slots (
    tool        TEXT COLLATE "C" NOT NULL,
    task_id     TEXT COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    node        TEXT NOT NULL,
    lease_until BIGINT NOT NULL,
    PRIMARY KEY (tool, task_id)
);
CREATE INDEX tool_slots_by_node ON tool_slots (node);
