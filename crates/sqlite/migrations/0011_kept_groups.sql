-- 0011: process groups a server keeps running beside its tasks (a proxy's stdio upstream),
-- by a key of the server's (scoped to the boot that wrote it): the group's leader pid and start
-- time, and the pid and start time of the server process that keeps it. A server started
-- after one that was killed ends the group it left running, unless its keeper still runs.
-- Not tied to a task: rows go when the group is closed or ended.

CREATE TABLE kept_groups (
    key           TEXT PRIMARY KEY NOT NULL,
    process_group INTEGER NOT NULL,
    process_start INTEGER NOT NULL,
    keeper_pid    INTEGER NOT NULL,
    keeper_start  INTEGER NOT NULL
) WITHOUT ROWID;
