-- 0013: the webhooks' deliveries, in the task store (they were in an SQLite file of their own
-- beside each server, written from the change feed after the task's commit: an event could be
-- lost between the two, and each replica delivered only what it saw). A row is written by the
-- statement that takes a task into an event status (`INSERT`, `CREATE`, `REPLACE`, `ANSWER`
-- of crates/postgres/src/sql.rs, given the event by a replica that records deliveries: it has
-- webhooks), and goes when every receiver answered (or it is given up). Every replica
-- delivers: a row is claimed by one node until `lease_until` (`FOR UPDATE SKIP LOCKED`, so
-- racing replicas take disjoint rows), and taken over by another after.
CREATE TABLE webhook_deliveries (
    -- An identity: a delivery's number is never reused (receivers may dedupe by it).
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id     TEXT COLLATE "C" NOT NULL,
    version     BIGINT NOT NULL,
    -- The status an operator is told: completed, failed, cancelled or input_required.
    event       TEXT NOT NULL,
    at          BIGINT NOT NULL,
    message     TEXT,
    attempts    INTEGER NOT NULL DEFAULT 0,
    next_at     BIGINT NOT NULL,
    claim_node  TEXT,
    lease_until BIGINT,
    -- The receivers (URLs) that answered 2xx already.
    done        TEXT[] NOT NULL DEFAULT '{}',
    last_error  TEXT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at, id);
