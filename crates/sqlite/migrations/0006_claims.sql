-- 0006: many nodes on one store (the same seam as PostgreSQL's, held trivially by the one
-- process that owns an SQLite file). A task's claim: the node (process incarnation) running
-- it and when its lease lapses unless renewed (NULL for rows of earlier builds: lapsed, so
-- recovery takes them over); whether its requestor asked it to stop (a cooperative cancel);
-- and the answers to its input requests not yet taken by its work, which go with the task.

ALTER TABLE tasks ADD COLUMN claim_node TEXT;
ALTER TABLE tasks ADD COLUMN lease_until INTEGER;
ALTER TABLE tasks ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;

CREATE TABLE task_answers (
    task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    key     TEXT NOT NULL,
    -- `Result<Value, ErrorObject>` as serde_json writes it: {"Ok": …} or {"Err": {…}}.
    answer  TEXT NOT NULL,
    PRIMARY KEY (task_id, key)
) STRICT;

-- The slots of each tool's `max_concurrent`, across every process on the store (one on
-- SQLite): the task holding one, and its node's lease (renewed with its claims). A slot whose
-- lease lapsed or whose task finished is free.
CREATE TABLE tool_slots (
    tool        TEXT    NOT NULL,
    task_id     TEXT    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    node        TEXT    NOT NULL,
    lease_until INTEGER NOT NULL,
    PRIMARY KEY (tool, task_id)
) STRICT;
