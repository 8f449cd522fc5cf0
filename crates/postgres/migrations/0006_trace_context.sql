-- 0006: the W3C trace context of the request that created a task (`TaskRecord::trace`): its
-- `traceparent` (valid when written) and the `tracestate` that came with it, so that the
-- task's spans and its command (`TRACEPARENT`) join the requestor's trace in every attempt,
-- on any replica and after a restart. NULL for requests without one.

ALTER TABLE tasks ADD COLUMN traceparent TEXT;
ALTER TABLE tasks ADD COLUMN tracestate TEXT;
