-- 0016: the number of unfinished tasks of the whole schema, kept in 64 counted shards
-- instead of counted from `tasks_unfinished` by every creation.
--
-- Each creation used to count the unfinished tasks through the partial index
-- `tasks_unfinished`. A task that finishes leaves a dead entry there until a vacuum, and a
-- bitmap scan visits every dead entry: under a steady load the count grew by the entries of
-- every task finished since the last vacuum (autovacuum waits for a fifth of the table to
-- change), and the creation rate fell with it, from 1,325/s to 320/s in 90 s on a
-- benchmark of the creation alone (issue 41). Here a creation adds one to the shard of its
-- backend (`pg_backend_pid() % 64`), the write that finishes a task takes one from the shard of
-- its own, and a creation reads the sum of the 64 rows: a fixed cost, whatever the load.
--
-- The sum is read as the creation's snapshot sees it, as the retention count is: creations
-- racing on different connections may overshoot `max_running` by the creations in flight at
-- that instant, as before. A shard may go below zero; the sum is the number of unfinished
-- tasks. Every write that makes a task unfinished (`INSERT`, `CREATE`) or finishes one
-- (`REPLACE`, `ANSWER`) keeps it, in the same statement; tasks are never deleted unfinished.

CREATE TABLE running_counts (
    shard   INTEGER PRIMARY KEY CHECK (shard BETWEEN 0 AND 63),
    running BIGINT  NOT NULL
);

INSERT INTO running_counts (shard, running) SELECT shard, 0 FROM generate_series(0, 63) AS shard;
UPDATE running_counts SET running = (SELECT count(*) FROM tasks WHERE status IN ('working', 'input_required'))
    WHERE shard = 0;
