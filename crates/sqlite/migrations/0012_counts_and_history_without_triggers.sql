-- 0012: `task_counts` and `task_history` are written by the store's own statements, in the
-- same transaction as the write they follow, instead of by triggers.
--
-- A trigger makes every insert and status update a statement that writes more than one row,
-- and SQLite then keeps a statement journal for it inside the batch's transaction (group
-- commit): a copy of each page the statement touches that an earlier write of the batch had
-- already changed, so that the statement alone could be undone. That copying was a tenth of
-- a lifecycle's instructions (benches/profile.sh). The store's statements write one row each,
-- need no statement journal, and keep the tables exactly as the triggers did: `task_counts`
-- one row per owner with stored tasks (gone at zero), `task_history` a row for the insert and
-- for every write that changes the status or the status message, deleted with its task.
-- The rows on disk do not change.

DROP TRIGGER task_counts_on_insert;
DROP TRIGGER task_counts_on_delete;
DROP TRIGGER task_counts_on_owner_change;
DROP TRIGGER task_history_on_insert;
DROP TRIGGER task_history_on_change;
DROP TRIGGER task_history_on_delete;
