-- 0004: a handler's checkpoint (`Context::checkpoint`): a JSON note of where the work of a
-- task stands (e.g. the id of the upstream task a proxied call drives), written fenced by the
-- claim, without bumping the version, and read when the task is run again after a restart.
-- NULL for tasks that wrote none.

ALTER TABLE tasks ADD COLUMN checkpoint TEXT;
