-- 0007: what many replicas share besides tasks.
--
-- 2025-11-25 HTTP sessions (`Mcp-Session-Id`), so that a load balancer need not be sticky:
-- the session's owner, what `initialize` negotiated and the session changed since (JSON text,
-- as the codec writes it), the tasks it created (its listing when requestors are not
-- identified), and its last use as far as the replicas have told (each touches the sessions
-- it served, in batches; idle ones are pruned oldest first).
CREATE TABLE sessions (
    id        TEXT COLLATE "C" PRIMARY KEY,
    owner     TEXT NOT NULL,
    state     TEXT NOT NULL,
    created   TEXT[] NOT NULL DEFAULT '{}',
    last_used BIGINT NOT NULL
);
CREATE INDEX sessions_by_last_use ON sessions (last_used);

-- The running limits (`max_running`, `max_running_per_principal`) across replicas: a place
-- per running task (from its creation) or plain call, held by its node's lease and renewed
-- with its claims. A place whose lease lapsed, or whose task finished, is free. Taken under
-- one transaction-level advisory lock; the table holds at most the places in use.
CREATE TABLE running_places (
    holder      TEXT COLLATE "C" PRIMARY KEY,
    is_task     BOOLEAN NOT NULL,
    owner       TEXT NOT NULL,
    node        TEXT NOT NULL,
    lease_until BIGINT NOT NULL
);
CREATE INDEX running_places_by_node ON running_places (node);
