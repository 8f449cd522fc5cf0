-- 0016: the webhooks' deliveries, in the task store (they were in a file of their own,
-- `<store>.webhooks`, written from the change feed after the task's commit: an event could be
-- lost between the two). A row is written in the same transaction as the write that takes a
-- task into an event status (when the process records deliveries: it has webhooks), and
-- goes when every receiver answered (or it is given up). Any process on the file delivers:
-- a row is claimed by one node until `lease_until` (or until its process is gone), and taken
-- over after.
CREATE TABLE webhook_deliveries (
    -- AUTOINCREMENT: a delivery's number is never reused (receivers may dedupe by it).
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id     TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    -- The status an operator is told: completed, failed, cancelled or input_required.
    event       TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    message     TEXT,
    attempts    INTEGER NOT NULL DEFAULT 0,
    next_at     INTEGER NOT NULL,
    claim_node  TEXT,
    lease_until INTEGER,
    -- The receivers (a JSON array of URLs) that answered 2xx already.
    done        TEXT    NOT NULL DEFAULT '[]',
    last_error  TEXT
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at, id);
