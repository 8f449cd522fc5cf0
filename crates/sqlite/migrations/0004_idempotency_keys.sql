-- 0004: idempotency keys. A task created with a requestor's key (`dev.mcp-tasks/idempotency-key`)
-- keeps it, so that a retry of the same call, by the same owner, finds the task instead of
-- making a second one, across restarts too.
--
-- Rows of earlier builds have no key (NULL) and read back as before.

ALTER TABLE tasks ADD COLUMN idempotency_key TEXT;

-- At most one task per owner and key: what makes concurrent keyed inserts create one task
-- (`INSERT … ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO
-- NOTHING` in store.rs names this index). Keyless tasks are not in it.
CREATE UNIQUE INDEX tasks_by_idempotency_key ON tasks (owner, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
