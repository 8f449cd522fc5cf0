-- 0008: process groups a server keeps running beside its tasks (a proxy's stdio upstream),
-- by a key of the server's (scoped to the boot that wrote it, so replicas on other machines
-- keep their own rows): the group's leader pid and start time, and the pid and start time of
-- the server process that keeps it. A server started after one that was killed ends the group
-- it left running, unless its keeper still runs. Not tied to a task: rows go when the group
-- is closed or ended.

CREATE TABLE kept_groups (
    key           TEXT PRIMARY KEY,
    process_group BIGINT NOT NULL CHECK (process_group BETWEEN 0 AND 4294967295),
    process_start BIGINT NOT NULL CHECK (process_start >= 0),
    keeper_pid    BIGINT NOT NULL CHECK (keeper_pid BETWEEN 0 AND 4294967295),
    keeper_start  BIGINT NOT NULL CHECK (keeper_start >= 0)
);
