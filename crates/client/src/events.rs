//! A task's event log, as the draft `tasks/stream` (SEP-2694) serves it in 2026-07-28 with
//! the tasks extension: [`TaskHandle::stream_events`] follows it after a cursor.
//!
//! The events come as `notifications/tasks/event` on the request's stream, read from the
//! connection's notifications; the request's answer ends the stream (the task's last event
//! was sent). A connection that drops notifications (a slow reader) is noticed by a gap in
//! the numbers: the stream then reports itself incomplete, and the caller opens it again
//! after the last event it took, which the server replays.

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::error::ClientError;
use crate::task::TaskHandle;

/// The draft's request and notification.
const TASKS_STREAM: &str = "tasks/stream";
const NOTIFY_TASK_EVENT: &str = "notifications/tasks/event";

/// One event of a task's log.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskEvent {
    /// Its number: 0 for the task's creation, each next one more.
    pub seq: u64,
    /// Its type, e.g. `dev.mcp-tasks.output`.
    pub kind: String,
    /// Its payload, a JSON object.
    pub payload: Value,
}

/// How a [`TaskHandle::stream_events`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamEnd {
    /// The number of the last event handed over, if any.
    pub last: Option<u64>,
    /// Whether the server ended the stream with every event handed over: the task's log is
    /// complete. `false`: events were missed on the way; open the stream again after `last`.
    pub complete: bool,
}

impl TaskHandle {
    /// Follows the task's events after `after` (exclusive; `None`: from the oldest the server
    /// keeps), handing each to `on_event` in order, until the server ends the stream (the
    /// task is finished and its last event sent) or events were missed (see [`StreamEnd`]).
    ///
    /// # Errors
    /// Transport errors; JSON-RPC errors of the server: `-32602` for a task that is unknown
    /// (or another principal's) or a cursor past the log, `-32010` with
    /// `data.reason = "events_gone"` and `data.earliestSeq` when the events after `after`
    /// are no longer kept, `-32601` from a server that does not serve the draft.
    pub async fn stream_events(&self, after: Option<u64>, mut on_event: impl FnMut(TaskEvent) + Send) -> Result<StreamEnd, ClientError> {
        // Subscribed before the request goes: no event is missed at the start.
        let mut notifications = self.connection.notifications.subscribe();
        let mut params = json!({"taskId": self.id});
        if let Some(after) = after {
            params["after"] = json!(after);
        }
        let request = self.request(TASKS_STREAM, params);
        tokio::pin!(request);
        let mut order = Order { last: after, gap: false };
        let mut take = |params: &Value, order: &mut Order| {
            if params.get("taskId").and_then(Value::as_str) != Some(self.id.as_str()) {
                return;
            }
            let Some(seq) = params.get("seq").and_then(Value::as_u64) else { return };
            if !order.take(seq) {
                return;
            }
            on_event(TaskEvent {
                seq,
                kind: params.get("type").and_then(Value::as_str).unwrap_or_default().to_owned(),
                payload: params.get("payload").cloned().unwrap_or(Value::Null),
            });
        };
        let answer = loop {
            tokio::select! {
                biased;
                note = notifications.recv() => match note {
                    Ok(note) if note.method == NOTIFY_TASK_EVENT => take(&note.params, &mut order),
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => order.gap = true,
                    Err(RecvError::Closed) => return Err(ClientError::Closed),
                },
                answer = &mut request => break answer,
            }
        };
        // The answer comes after the stream's last notification: take what is still queued.
        while let Ok(note) = notifications.try_recv() {
            if note.method == NOTIFY_TASK_EVENT {
                take(&note.params, &mut order);
            }
        }
        answer?;
        Ok(StreamEnd { last: order.last, complete: !order.gap })
    }
}

/// Where a stream stands: the last event taken, and whether one was missed.
struct Order {
    last: Option<u64>,
    gap: bool,
}

impl Order {
    /// Whether event `seq` is the one to take now: the first may be any (the oldest kept),
    /// each next one more. A repeat (after a reconnect) is dropped (stream_23, 24: de-duplicated
    /// on the task's `seq`); past a gap nothing more is taken, and the stream is incomplete.
    fn take(&mut self, seq: u64) -> bool {
        let expected = self.last.map_or(seq, |last| last + 1);
        if self.gap || seq < expected {
            return false;
        }
        if seq > expected {
            self.gap = true;
            return false;
        }
        self.last = Some(seq);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::Order;

    #[test]
    fn stream_23_24_repeats_are_dropped_on_their_seq_and_a_gap_ends_what_is_taken() {
        let mut order = Order { last: Some(2), gap: false };
        let taken: Vec<u64> = [3, 4, 4, 3, 5, 7, 6, 8].into_iter().filter(|seq| order.take(*seq)).collect();
        assert_eq!(taken, [3, 4, 5]);
        assert!(order.gap && order.last == Some(5), "incomplete after 5: reopen after it");
        let mut fresh = Order { last: None, gap: false };
        assert!(fresh.take(40) && fresh.take(41) && !fresh.take(41), "the first may be any (the oldest kept)");
    }
}
