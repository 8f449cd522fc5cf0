-- 0015: any number of processes on one file (each a node with its own claims, as replicas
-- are on PostgreSQL).
--
-- The change log: one row per committed batch of a writer thread, naming the tasks whose
-- rows it changed (space-separated ids). Another process's writer reads the rows past the
-- last one it saw to learn what changed under it: it forgets those tasks from its cache of
-- the tasks written last, and sends their records to its change feed (the waiters and
-- running work of that process). `writer` is the random number of the store handle that
-- wrote the row (its own rows are skipped). Pruned from the oldest, by each writer, past a
-- minute of age.
CREATE TABLE task_changes (
    seq    INTEGER PRIMARY KEY,
    writer INTEGER NOT NULL,
    ids    TEXT    NOT NULL
) STRICT;

-- The running limits (`max_running`, `max_running_per_principal`) across processes, as on
-- PostgreSQL: a place per running task (from its creation) or plain call, held by its
-- node's lease and renewed with its claims. A place whose lease lapsed, whose node is gone
-- (its process ended) or whose task finished is free.
CREATE TABLE running_places (
    holder      TEXT    PRIMARY KEY,
    is_task     INTEGER NOT NULL,
    owner       TEXT    NOT NULL,
    node        TEXT    NOT NULL,
    lease_until INTEGER NOT NULL
) STRICT;

-- 2025-11-25 HTTP sessions (`Mcp-Session-Id`), as on PostgreSQL: any process serving HTTP on
-- the file finds a session another one made. `state` is what `initialize` negotiated and the
-- session changed since (JSON, as the codec writes it); `created` the tasks it created (a
-- JSON array of ids); `last_used` its last use as far as the processes have told.
CREATE TABLE sessions (
    id        TEXT    PRIMARY KEY,
    owner     TEXT    NOT NULL,
    state     TEXT    NOT NULL,
    created   TEXT    NOT NULL DEFAULT '[]',
    last_used INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_by_last_use ON sessions (last_used);
