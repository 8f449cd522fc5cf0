-- 0017: each task's event log (what its work printed and reported, numbered from 0 with no
-- gaps, any process reading it): `task_events` holds the stored events, `task_event_heads`
-- the log's bounds, both written in one transaction with each append. Event 0 (the task's
-- creation) and a finished task's last event (its ending) are read from the task's row, not
-- stored, so a lifecycle that reports nothing writes no row here. Both go with their task
-- when it is purged.
CREATE TABLE task_events (
    task_id TEXT    NOT NULL,
    seq     INTEGER NOT NULL,
    type    TEXT    NOT NULL,
    payload TEXT    NOT NULL,
    at      INTEGER NOT NULL,
    PRIMARY KEY (task_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE task_event_heads (
    task_id  TEXT    PRIMARY KEY,
    -- The number the next stored event gets.
    next_seq INTEGER NOT NULL,
    -- The first number kept: 0 until an event is pruned.
    earliest INTEGER NOT NULL,
    -- The payload bytes of the events kept.
    bytes    INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
