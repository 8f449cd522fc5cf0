-- 0009: a changed task's notification is sent by the store after its write commits, not by a
-- trigger inside the write's transaction.
--
-- A transaction that calls pg_notify takes one lock for the whole database at its commit
-- and holds it until the commit ends, WAL flush included: every write of every replica that
-- changed a task queued behind one lock, one flush at a time (about 300 writes/s on this
-- machine's disk, whatever the number of replicas or clients). Sent after the commit, from a
-- statement of its own that writes nothing (so flushes nothing), the lock is held for an
-- instant. The notification stays a hint: what a lost one would have announced, the feed's
-- poll of `tasks_by_change` finds within a second (crates/postgres/src/feed.rs).

DROP TRIGGER tasks_notify_insert ON tasks;
DROP TRIGGER tasks_notify_update ON tasks;
DROP FUNCTION tasks_notify_change();
