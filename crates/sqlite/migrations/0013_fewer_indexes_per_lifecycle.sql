-- 0013: two fewer index entries to move in every task's life, for the same queries.
--
-- A task is created `working` and finishes once. Every index whose entry depends on the
-- status was written at the creation and rewritten at the finish, each a b-tree to seek and
-- a page more in the commit: `tasks_unfinished`, `tasks_unfinished_by_expiry` (both partial,
-- on unfinished tasks) and `tasks_by_owner_status` (every task). Now:
--
-- * `tasks_unfinished` also carries `expires_at`, so the sweeper's search for unfinished
--   tasks past their TTL reads it (the few unfinished tasks, never a finished one) instead
--   of a second index of the same rows: `tasks_unfinished_by_expiry` goes.
-- * `tasks_by_owner_status` becomes `tasks_finished_by_owner_status`, an index of finished
--   tasks only: a task enters it once, when it finishes, and never leaves it. The web view's
--   filter and counts of the unfinished statuses read `tasks_unfinished`. It ends with `id`,
--   so that a page after a cursor, `(created_at, id) < (?, ?)`, is read in order, not sorted.
--
-- Per block lifecycle at c = 32 (benches/profile.sh): 280 k -> 267 k instructions.
-- The WHERE clauses must match `UNFINISHED` and `NOT_UNFINISHED` in store.rs word for word,
-- or SQLite will not use the indexes. A store with a million finished tasks builds the new
-- index once, when this build first opens it.

DROP INDEX tasks_unfinished_by_expiry;
DROP INDEX tasks_unfinished;
CREATE INDEX tasks_unfinished ON tasks (created_at, id, expires_at)
    WHERE status IN ('working', 'input_required');

DROP INDEX tasks_by_owner_status;
CREATE INDEX tasks_finished_by_owner_status ON tasks (owner, status, created_at, id)
    WHERE status NOT IN ('working', 'input_required');
