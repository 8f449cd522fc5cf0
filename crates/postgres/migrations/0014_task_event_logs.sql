-- 0014: each task's event log (what its work printed and reported, numbered from 0 with no
-- gaps, any replica reading it): `task_events` holds the stored events, `task_event_heads`
-- the log's bounds, written by one statement with each append (`APPEND_EVENTS`), which
-- holds the task's row `FOR SHARE` so that the write that finishes the task comes before or
-- after it, never between. Event 0 (the task's creation) and a finished task's last event
-- (its ending) are read from the task's row, not stored: a lifecycle that reports nothing
-- writes no row here. Both go with their task in `PURGE`.
CREATE TABLE task_events (
    task_id TEXT COLLATE "C" NOT NULL,
    seq     BIGINT NOT NULL,
    type    TEXT NOT NULL,
    payload TEXT NOT NULL,
    at      BIGINT NOT NULL,
    PRIMARY KEY (task_id, seq)
);

CREATE TABLE task_event_heads (
    task_id  TEXT COLLATE "C" PRIMARY KEY,
    -- The number the next stored event gets.
    next_seq BIGINT NOT NULL,
    -- The first number kept: 0 until an event is pruned.
    earliest BIGINT NOT NULL,
    -- The payload bytes of the events kept.
    bytes    BIGINT NOT NULL
);
