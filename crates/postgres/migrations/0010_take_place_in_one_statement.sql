-- 0010: a running place taken in one statement, by a function of the schema.
--
-- Taking a place is one decision across every replica (`max_running`,
-- `max_running_per_principal`), made under one transaction-level advisory lock. Made by the
-- store in five statements of one transaction (the lock, freeing the lapsed and finished
-- places, counting, taking, the commit), the lock was held for five round trips: the whole
-- cluster took one place at a time at that pace (about 300 tasks/s on this machine, whatever
-- the number of replicas). Here the same steps run inside the database, and the store sends
-- one statement. Its transaction commits without waiting for the WAL flush: a place is a
-- leased reservation, not an acknowledged result, so a PostgreSQL crash may lose the last few
-- taken (they then count as free until their tasks end; nothing is lost or run twice).
--
-- `outcome`: 'taken' (also when `holder` had its place: its lease is renewed), 'full' (all
-- places taken; `running` is their number), or 'owner_full' (the owner's places taken;
-- `running` is the owner's number).

CREATE FUNCTION mcp_tasks_take_place(
    p_holder TEXT, p_is_task BOOLEAN, p_owner TEXT, p_node TEXT, p_lease_until BIGINT,
    p_now BIGINT, p_max_running BIGINT, p_max_per_owner BIGINT,
    OUT outcome TEXT, OUT running BIGINT
) LANGUAGE plpgsql AS $$
DECLARE
    mine BIGINT;
    held BIGINT;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    PERFORM pg_advisory_xact_lock(hashtext('mcp_tasks.running.' || current_schema()));
    DELETE FROM running_places WHERE lease_until <= p_now OR (is_task AND EXISTS
        (SELECT 1 FROM tasks WHERE tasks.id = running_places.holder
         AND NOT tasks.status IN ('working', 'input_required')));
    SELECT count(*), count(*) FILTER (WHERE owner = p_owner), count(*) FILTER (WHERE holder = p_holder)
        INTO running, mine, held FROM running_places;
    IF held > 0 THEN
        UPDATE running_places SET lease_until = p_lease_until, node = p_node WHERE holder = p_holder;
        outcome := 'taken';
    ELSIF running >= p_max_running THEN
        outcome := 'full';
    ELSIF mine >= p_max_per_owner THEN
        outcome := 'owner_full';
        running := mine;
    ELSE
        INSERT INTO running_places (holder, is_task, owner, node, lease_until)
            VALUES (p_holder, p_is_task, p_owner, p_node, p_lease_until);
        outcome := 'taken';
    END IF;
END
$$;
