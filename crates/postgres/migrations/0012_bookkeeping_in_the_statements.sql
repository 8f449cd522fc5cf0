-- 0012: a creation that waits for no other creation, and the bookkeeping of every write done
-- by the write's own statement instead of by triggers.
--
-- Before, a creation (`mcp_tasks_create`, 0011) locked its owner's row of `task_counts` until
-- its commit, WAL flush included: one owner's creations, from every replica, took turns one
-- flush at a time (about 750 lifecycles/s on this machine, a tenth of what PostgreSQL commits).
-- And every write of a task ran triggers: the count, the status history and its foreign-key
-- check, the change stamp (six to nine statements and most of the database's CPU per task).
--
-- Now:
-- - The retention count (`max_retained_per_principal`) is sharded: each backend adds to its own
--   row of the owner's (`shard`, its pid modulo 32), so concurrent creations touch different
--   rows; a creation sums the owner's rows as its snapshot sees them. Creations in flight at
--   once do not see each other: the limit may be overshot by at most their number (one per
--   connection of every replica's pool). `insert_claimed` (keyed retries, stores without
--   places) still locks shard 0 and stays exact among its callers.
-- - The owner's running tasks (`max_running_per_principal`) hold slots: rows (owner, slot)
--   made as needed, slot < the limit. A creation takes the first free one with `FOR UPDATE
--   SKIP LOCKED` (a slot another creation is taking is skipped, not waited for) and writes its
--   task into it; the write that ends the task frees it, in its own statement. Exact across
--   replicas: a slot holds one unfinished task. Plain calls of the owner, which hold
--   `running_places` rows, take slots away from the top.
-- - `max_running` (across owners) is counted from the unfinished tasks and live places as the
--   statement's snapshot sees them, as in 0011: overshot by at most the creations in flight.
-- - The history row, the count and the change stamp are written by the statements of
--   crates/postgres/src/sql.rs (`INSERT`, `CREATE`, `REPLACE`, `ANSWER`, `CLAIM`,
--   `REQUEST_CANCEL`, `PURGE`), each one statement: no trigger fires on `tasks`. The history
--   loses its foreign key (PURGE deletes a task's history with it).

DROP TRIGGER task_counts_on_insert ON tasks;
DROP TRIGGER task_counts_on_delete ON tasks;
DROP TRIGGER task_counts_on_owner_change ON tasks;
DROP FUNCTION task_counts_on_insert();
DROP FUNCTION task_counts_on_delete();
DROP FUNCTION task_counts_on_owner_change();

DROP TRIGGER task_history_on_insert ON tasks;
DROP TRIGGER task_history_on_change ON tasks;
DROP FUNCTION task_history_record();
ALTER TABLE task_history DROP CONSTRAINT task_history_task_id_fkey;

DROP TRIGGER tasks_stamp_change ON tasks;
DROP FUNCTION tasks_stamp_change();

DROP FUNCTION mcp_tasks_create;

-- A shard's count may go below zero (a purge subtracts from the purging backend's shard);
-- the owner's sum is the number of its tasks.
ALTER TABLE task_counts DROP CONSTRAINT task_counts_tasks_check;
ALTER TABLE task_counts ADD COLUMN shard INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_counts DROP CONSTRAINT task_counts_pkey;
ALTER TABLE task_counts ADD PRIMARY KEY (owner, shard);

CREATE TABLE owner_slots (
    owner   TEXT COLLATE "C" NOT NULL,
    slot    INTEGER NOT NULL CHECK (slot >= 0),
    -- The unfinished task holding the slot; NULL: free.
    task_id TEXT COLLATE "C",
    PRIMARY KEY (owner, slot)
);

-- The tasks running at the upgrade hold the first slots of their owners.
INSERT INTO owner_slots (owner, slot, task_id)
    SELECT owner, (row_number() OVER (PARTITION BY owner ORDER BY created_at, id) - 1)::integer, id
    FROM tasks WHERE status IN ('working', 'input_required');
