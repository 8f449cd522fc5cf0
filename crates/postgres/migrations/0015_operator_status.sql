-- 0015: the `status` column holds the status an operator is told (`TaskState::operator_status`):
-- a task whose tool reported an error (`isError: true`) is `failed` whatever era made it. Its
-- state, which the wire reads, is unchanged: a 2026-07-28 tool error stays `completed` with
-- `isError` there, as that era's spec says. The column feeds only the indexes, the web view's
-- filter and counts, and the status history, so they all say `failed` for it.
--
-- Rows written before this build: a completed state with `isError: true` becomes `failed` in
-- the column and in its history's last entry.

UPDATE task_history SET status = 'failed'
    WHERE status = 'completed'
      AND task_id IN (SELECT id FROM tasks
                      WHERE status = 'completed' AND state -> 'result' ->> 'isError' = 'true');
UPDATE tasks SET status = 'failed'
    WHERE status = 'completed' AND state -> 'result' ->> 'isError' = 'true';
