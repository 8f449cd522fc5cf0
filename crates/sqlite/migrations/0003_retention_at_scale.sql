-- 0003: what a store retaining a million finished tasks needs so that no query on the
-- serving path reads more than its answer.

-- `count` (the retention limit, checked on every creation): one row per owner with the
-- number of its tasks, kept by triggers in the same statement as the insert or delete,
-- instead of counting the owner's entries of `tasks_by_owner` (a million of them take
-- tens of milliseconds, on every creation).
CREATE TABLE task_counts (
    owner TEXT    NOT NULL PRIMARY KEY,
    tasks INTEGER NOT NULL CHECK (tasks >= 0)
) STRICT, WITHOUT ROWID;

INSERT INTO task_counts (owner, tasks) SELECT owner, COUNT(*) FROM tasks GROUP BY owner;

CREATE TRIGGER task_counts_on_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO task_counts (owner, tasks) VALUES (new.owner, 1)
        ON CONFLICT (owner) DO UPDATE SET tasks = tasks + 1;
END;

CREATE TRIGGER task_counts_on_delete AFTER DELETE ON tasks BEGIN
    UPDATE task_counts SET tasks = tasks - 1 WHERE owner = old.owner;
    DELETE FROM task_counts WHERE owner = old.owner AND tasks = 0;
END;

-- The owner never changes, but should a row ever be moved, the counts follow.
CREATE TRIGGER task_counts_on_owner_change AFTER UPDATE OF owner ON tasks
    WHEN new.owner IS NOT old.owner BEGIN
    UPDATE task_counts SET tasks = tasks - 1 WHERE owner = old.owner;
    DELETE FROM task_counts WHERE owner = old.owner AND tasks = 0;
    INSERT INTO task_counts (owner, tasks) VALUES (new.owner, 1)
        ON CONFLICT (owner) DO UPDATE SET tasks = tasks + 1;
END;

-- `expired` (the sweeper): unfinished tasks by expiry. `tasks_by_expiry` holds finished
-- tasks too, and the sweeper would step over every finished task past its expiry not yet
-- purged. The WHERE must match `UNFINISHED` in store.rs word for word.
CREATE INDEX tasks_unfinished_by_expiry ON tasks (expires_at, id)
    WHERE status IN ('working', 'input_required');
