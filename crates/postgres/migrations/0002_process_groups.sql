-- 0002: the process group a task's work started (a command tool): its leader's pid and start
-- time (clock ticks after boot, `/proc/PID/stat`), so that a server started after a crash ends
-- what the crashed one left running before it resolves the task. Written once the group
-- exists, without bumping the version; NULL for tasks that started none.

ALTER TABLE tasks ADD COLUMN process_group BIGINT CHECK (process_group BETWEEN 0 AND 4294967295);
ALTER TABLE tasks ADD COLUMN process_start BIGINT CHECK (process_start >= 0);
