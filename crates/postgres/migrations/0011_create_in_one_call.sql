-- 0011: a task's creation with its running place in one call (`insert_placed`).
--
-- Before, a creation was two transactions and six round trips: the running place, taken under
-- one advisory lock per schema (`mcp_tasks_take_place`), then the insert under the owner's
-- count row lock. Here one function does both in one transaction, one round trip: it takes
-- the owner's count row (locked until the commit: the retention limit stays exact, and one
-- owner's creations take turns), then counts, in a statement of its own (so with a snapshot
-- taken after the lock: the owner's earlier creations are seen), the unfinished tasks and the
-- live places of plain calls, and inserts the task if the owner keeps fewer than
-- `p_max_retained` tasks and fewer than `p_max_running` run in all and `p_max_mine` of the
-- owner's. No advisory lock: creations of other owners, on any replica, are not waited for,
-- so `max_running` (across owners) may be overshot by the creations in flight at once; a task
-- holds its place by being unfinished, so no place row is written for it.
--
-- `inserted`: whether the row was written (false also when its idempotency key is taken);
-- `retained`, `running`, `mine`: the counts it was decided on.
CREATE FUNCTION mcp_tasks_create(
    p_id TEXT, p_owner TEXT, p_tool TEXT, p_arguments JSON, p_status TEXT, p_state JSON,
    p_status_message TEXT, p_created_at BIGINT, p_updated_at BIGINT, p_ttl_ms BIGINT,
    p_expires_at BIGINT, p_poll_interval_ms BIGINT, p_attempt BIGINT, p_version BIGINT,
    p_error_result_fails BOOLEAN, p_input_kinds JSON, p_idempotency_key TEXT, p_traceparent TEXT,
    p_tracestate TEXT, p_claim_node TEXT, p_lease_until BIGINT, p_era TEXT, p_client_name TEXT,
    p_client_version TEXT, p_now BIGINT, p_max_retained BIGINT, p_max_running BIGINT, p_max_mine BIGINT,
    OUT inserted BOOLEAN, OUT retained BIGINT, OUT running BIGINT, OUT mine BIGINT
) LANGUAGE plpgsql AS $$
DECLARE
    calls BIGINT;
    my_calls BIGINT;
BEGIN
    inserted := false;
    INSERT INTO task_counts AS counts (owner, tasks) VALUES (p_owner, 0)
        ON CONFLICT (owner) DO UPDATE SET tasks = counts.tasks RETURNING tasks INTO retained;
    SELECT count(*), count(*) FILTER (WHERE owner = p_owner) INTO running, mine
        FROM tasks WHERE status IN ('working', 'input_required');
    SELECT count(*), count(*) FILTER (WHERE owner = p_owner) INTO calls, my_calls FROM running_places
        WHERE lease_until > p_now AND NOT (is_task AND EXISTS
            (SELECT 1 FROM tasks WHERE tasks.id = running_places.holder));
    running := running + calls;
    mine := mine + my_calls;
    IF retained >= p_max_retained OR running >= p_max_running OR mine >= p_max_mine THEN
        RETURN;
    END IF;
    INSERT INTO tasks (id, owner, tool, arguments, status, state, status_message, created_at,
        updated_at, ttl_ms, expires_at, poll_interval_ms, attempt, version, error_result_fails,
        input_kinds, idempotency_key, traceparent, tracestate, claim_node, lease_until, era,
        client_name, client_version)
    VALUES (p_id, p_owner, p_tool, p_arguments, p_status, p_state, p_status_message, p_created_at,
        p_updated_at, p_ttl_ms, p_expires_at, p_poll_interval_ms, p_attempt, p_version,
        p_error_result_fails, p_input_kinds, p_idempotency_key, p_traceparent, p_tracestate,
        p_claim_node, p_lease_until, p_era, p_client_name, p_client_version)
    ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING;
    inserted := FOUND;
END
$$;
