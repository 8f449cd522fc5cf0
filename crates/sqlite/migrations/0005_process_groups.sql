-- 0005: the process group a task's work started (a command tool): its leader's pid and start
-- time (clock ticks after boot, `/proc/PID/stat`), so that a server started after a crash ends
-- what the crashed one left running before it resolves the task. Written once the group
-- exists, without bumping the version; NULL for tasks that started none (and rows of earlier
-- builds).

ALTER TABLE tasks ADD COLUMN process_group INTEGER;
ALTER TABLE tasks ADD COLUMN process_start INTEGER;
