-- 0014: a task's first history entry is read from its row when it is the engine's usual one.
--
-- The engine creates every task at version 1, `working`, with no status message, updated
-- when it was created; its history's first entry is then (1, created_at, 'working', NULL),
-- which the row already says. `creation_in_history` = 0 marks such a row: its creation
-- entry is not a row of `task_history`, and `history` puts it first. Every other row, and
-- every row written before this migration, keeps its creation entry in `task_history`
-- (1, the default). With the finished row's entry (read from the row since the build before
-- this one), a task that runs and finishes writes no row of `task_history` at all: its
-- lifecycle is two b-tree inserts lighter than in schema 12.
--
-- Adding a column with a constant default rewrites no row: a store of a million tasks
-- migrates in the time of a schema change.

ALTER TABLE tasks ADD COLUMN creation_in_history INTEGER NOT NULL DEFAULT 1;
