//! Each task's event log as the engine writes and reads it (SEP-2694's numbered task events).
//!
//! - **Writing.** What running work reports goes into its task's log in the store: the
//!   command's output, split into lines and coalesced per [`FLUSH_EVERY`] into one
//!   `dev.mcp-tasks.output` event per stream (`stdout`, `stderr`), its progress (the last
//!   report of the interval, one `dev.mcp-tasks.progress` event), and, in the order they
//!   happen, the changes of its status and message while it runs (`dev.mcp-tasks.status`),
//!   the questions it asks and their answers (`dev.mcp-tasks.input`), and the events its
//!   work adds itself ([`Engine::log_event`]: a command's log lines and partial results). A
//!   task's pending events are written before its outcome
//!   ([`Engine::flush_events`]), so the log is complete when the task finishes, and nothing
//!   is appended after (the store refuses a finished task's appends). Early work that ended
//!   before its task's insert ran has its reports' events written with the insert and its
//!   ending ([`early_events`]).
//! - **Reading.** [`Engine::events`] reads a page after a cursor and adds the two events the
//!   store does not keep, read from the task itself: number 0, the task's creation
//!   (`dev.mcp-tasks.status`, `working`), and, once the task is finished, the last one, its
//!   ending (`dev.mcp-tasks.status` with the status and message it ended with). A lifecycle
//!   that reports nothing so writes nothing to the log.
//!
//! Types are prefixed `dev.mcp-tasks.` (SEP-2694 reserves unprefixed ones); every payload is
//! a JSON object.

use std::collections::hash_map::Entry;
use std::sync::PoisonError;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use crate::early::Deferred;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::store::NewEvent;
use crate::task::{Principal, TaskId, TaskRecord, Timestamp};
use crate::work::Progress;

/// A status change: `{"status", "statusMessage"}`.
pub const STATUS_EVENT: &str = "dev.mcp-tasks.status";
/// Lines the work printed: `{"stream": "stdout", "lines": [...]}`, each line without its
/// newline, in order.
pub const OUTPUT_EVENT: &str = "dev.mcp-tasks.output";
/// A progress report: `{"progress", "total"?, "message"?}`.
pub const PROGRESS_EVENT: &str = "dev.mcp-tasks.progress";
/// A log line of the work: `{"level", "message"}` (a command's `@mcp-tasks {"log": …}`).
pub const LOG_EVENT: &str = "dev.mcp-tasks.log";
/// A partial result, shown before the task's result: `{"content": [content blocks]}` (a
/// command's `@mcp-tasks {"partial": …}`).
pub const PARTIAL_EVENT: &str = "dev.mcp-tasks.partial";
/// A question of the task and its answer: `{"key", "kind", "params"}` when asked (`kind`:
/// `elicitation`, `sampling` or `roots`), `{"key", "answered": true, "action"?}` when
/// answered (`action`: an elicitation's `accept`, `decline` or `cancel`), or
/// `{"key", "answered": false, "error"}` when the client answered with an error.
pub const INPUT_EVENT: &str = "dev.mcp-tasks.input";

/// How long output and progress gather before they are written as events.
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);

/// A task's event as its readers see it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskEvent {
    /// Its number in the task's log: 0 for the creation, each next one more.
    pub seq: u64,
    /// Its type (`dev.mcp-tasks.…`).
    #[serde(rename = "type")]
    pub kind: String,
    /// Its payload, a JSON object.
    pub payload: Value,
    /// When it happened.
    pub at: Timestamp,
}

/// What [`Engine::events`] found after the cursor.
#[derive(Clone, Debug, PartialEq)]
pub enum Events {
    /// The events after the cursor (up to the limit), in order; `finished`: the task is
    /// finished and its last event is among them (or was before the cursor): nothing follows.
    Page {
        /// The events.
        events: Vec<TaskEvent>,
        /// Whether the log is complete up to its end.
        finished: bool,
    },
    /// Events after the cursor were pruned: the log keeps them from `earliest` on.
    Gone {
        /// The first number kept.
        earliest: u64,
    },
    /// The cursor is past the log's last event, `last` (a log always has event 0).
    Ahead {
        /// The last number the log has now.
        last: u64,
    },
}

/// What gathers for one task between two writes of its events.
#[derive(Default)]
pub(crate) struct Pending {
    attempt: u32,
    /// Events ready to be written, in the order they happened.
    ready: Vec<(String, Value)>,
    /// What the work printed on its stdout and its stderr, not yet written.
    stdout: Lines,
    stderr: Lines,
    /// The last progress report not yet written.
    progress: Option<Progress>,
    /// A write of this task's events is scheduled or under way.
    scheduled: bool,
}

/// A stream's output not yet written: its complete lines, and the start of a line not yet
/// ended.
#[derive(Default)]
struct Lines {
    lines: Vec<String>,
    partial: String,
}

impl Lines {
    fn push(&mut self, text: &str) {
        self.partial.push_str(text);
        if let Some(end) = self.partial.rfind('\n') {
            let rest = self.partial.split_off(end + 1);
            let done = std::mem::replace(&mut self.partial, rest);
            self.lines.extend(done.lines().map(str::to_owned));
        }
    }

    /// The complete lines (with the unended one when `all`) as an output event of `stream`.
    fn take(&mut self, stream: &str, all: bool) -> Option<(String, Value)> {
        if all && !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.lines.push(line);
        }
        (!self.lines.is_empty()).then(|| (OUTPUT_EVENT.to_owned(), json!({"stream": stream, "lines": std::mem::take(&mut self.lines)})))
    }
}

impl Pending {
    /// The complete lines of both streams, moved to the ready events (before an event that
    /// happened after them).
    fn settle_lines(&mut self) {
        let (stdout, stderr) = (self.stdout.take("stdout", false), self.stderr.take("stderr", false));
        self.ready.extend(stdout.into_iter().chain(stderr));
    }

    /// Output `text` of the work, on its stdout or its stderr.
    fn output(&mut self, text: &str, stderr: bool) {
        if stderr {
            self.stderr.push(text);
        } else {
            self.stdout.push(text);
        }
    }

    /// An event of the work, after the lines it printed before it.
    fn event(&mut self, kind: &str, payload: Value) {
        self.settle_lines();
        self.ready.push((kind.to_owned(), payload));
    }

    /// What is pending, as the events to write, each at `at`: the ready ones, the complete
    /// lines (the unended ones too when `all`), then the last progress report.
    fn drain(&mut self, all: bool, at: Timestamp) -> Vec<NewEvent> {
        let mut ready = std::mem::take(&mut self.ready);
        ready.extend(self.stdout.take("stdout", all).into_iter().chain(self.stderr.take("stderr", all)));
        let mut events: Vec<NewEvent> = ready.into_iter().map(|(kind, payload)| NewEvent { kind, payload, at }).collect();
        if let Some(progress) = self.progress.take() {
            let mut payload = json!({"progress": progress.progress});
            if let Some(total) = progress.total {
                payload["total"] = json!(total);
            }
            if let Some(message) = progress.message {
                payload["message"] = json!(message);
            }
            events.push(NewEvent { kind: PROGRESS_EVENT.to_owned(), payload, at });
        }
        events
    }
}

/// The events of the reports early work made before it ended ([`crate::early`]), as the
/// engine would have logged them had they come one by one and been written before the
/// ending: they go in with the creation and its ending, each at `at`.
pub(crate) fn early_events(deferred: &[Deferred], at: Timestamp) -> Vec<NewEvent> {
    let mut pending = Pending::default();
    for report in deferred {
        match report {
            Deferred::Progress(progress) => pending.progress = Some(progress.clone()),
            Deferred::Output(text, stderr) => pending.output(text, *stderr),
            Deferred::Event(kind, payload) => pending.event(kind, payload.clone()),
        }
    }
    pending.drain(true, at)
}

impl Engine {
    /// The events of `owner`'s task `id` after `after` (exclusive; `None`: from the first
    /// kept), at most about `limit`. Another principal's task is [`EngineError::NotFound`],
    /// as an unknown one.
    ///
    /// # Errors
    /// [`EngineError::NotFound`], [`EngineError::Store`].
    pub async fn events(&self, owner: &Principal, id: &TaskId, after: Option<u64>, limit: u32) -> Result<Events, EngineError> {
        // The task first: once it is finished its log no longer changes, so the log read
        // after it is complete, and its ending is numbered right after the last stored event.
        let record = self.get_shared(owner, id).await?;
        let finished = record.status().is_terminal();
        let page = self.inner.store.logged_events(id, after.unwrap_or(0), limit.max(1)).await?;
        let last_stored = page.next.saturating_sub(1);
        let last = if finished { page.next } else { last_stored };
        if let Some(after) = after {
            if after > last {
                return Ok(Events::Ahead { last });
            }
            if after.saturating_add(1) < page.earliest {
                return Ok(Events::Gone { earliest: page.earliest });
            }
        }
        let mut events = Vec::with_capacity(page.events.len() + 2);
        if after.is_none() && page.earliest == 0 {
            events.push(TaskEvent { seq: 0, kind: STATUS_EVENT.to_owned(), payload: json!({"status": "working"}), at: record.created_at });
        }
        let all_stored = page.events.last().is_none_or(|event| event.seq >= last_stored);
        events.extend(page.events.into_iter().map(|event| TaskEvent { seq: event.seq, kind: event.kind, payload: event.payload, at: event.at }));
        let end_sent = after.is_some_and(|after| after >= page.next);
        if finished && all_stored && !end_sent {
            events.push(ending(&record, page.next));
        }
        Ok(Events::Page { events, finished: finished && all_stored })
    }

    /// The end of what `owner`'s task `id` printed on its stdout, as its log keeps it (the
    /// last `events` stored events read), and its last progress report there. For views that show a task's output
    /// whatever process ran it, and after a restart. Another principal's task is
    /// [`EngineError::NotFound`].
    ///
    /// # Errors
    /// [`EngineError::NotFound`], [`EngineError::Store`].
    pub async fn output_tail(&self, owner: &Principal, id: &TaskId, events: u32) -> Result<(String, Option<Progress>), EngineError> {
        self.get_shared(owner, id).await?;
        let head = self.inner.store.logged_events(id, 0, 1).await?;
        let from = head.next.saturating_sub(u64::from(events)).max(head.earliest.saturating_sub(1));
        let page = self.inner.store.logged_events(id, from, events.max(1)).await?;
        let (mut text, mut progress) = (String::new(), None);
        for event in page.events {
            match event.kind.as_str() {
                OUTPUT_EVENT if event.payload["stream"] == "stdout" => {
                    for line in event.payload["lines"].as_array().into_iter().flatten() {
                        text.push_str(line.as_str().unwrap_or_default());
                        text.push('\n');
                    }
                }
                PROGRESS_EVENT => {
                    progress = event.payload["progress"].as_f64().map(|done| Progress {
                        progress: done,
                        total: event.payload["total"].as_f64(),
                        message: event.payload["message"].as_str().map(str::to_owned),
                    });
                }
                _ => {}
            }
        }
        Ok((text, progress))
    }

    /// Output of attempt `attempt` of task `id` on its stdout (or, with `stderr`, its
    /// stderr), to be written into its log with the rest of the interval's.
    pub(crate) fn log_output(&self, id: &TaskId, attempt: u32, text: &str, stderr: bool) {
        self.pending(id, attempt, |pending| pending.output(text, stderr));
    }

    /// An event of attempt `attempt` of task `id` (`kind`, a JSON object `payload`), to be
    /// written into its log after what the work printed before it.
    pub fn log_event(&self, id: &TaskId, attempt: u32, kind: &str, payload: Value) {
        self.pending(id, attempt, |pending| pending.event(kind, payload));
    }

    /// Logs what a write changed in a running task (its creation and its ending are read
    /// from the task itself): a change of status or status message, the questions it now
    /// asks. Nothing for a write that finishes the task.
    pub(crate) fn log_change(&self, before: &TaskRecord, after: &TaskRecord) {
        if after.status().is_terminal() || after.attempt == 0 {
            return;
        }
        if let crate::TaskState::InputRequired { requests } = &after.state {
            let asked_before = match &before.state {
                crate::TaskState::InputRequired { requests } => Some(requests),
                _ => None,
            };
            for (key, request) in requests {
                if asked_before.is_none_or(|asked| !asked.contains_key(key)) {
                    let payload = json!({"key": key, "kind": request.kind.as_str(), "params": request.params});
                    self.log_event(&after.id, after.attempt, INPUT_EVENT, payload);
                }
            }
        }
        if before.status() != after.status() || before.status_message != after.status_message {
            let mut payload = json!({"status": after.status().as_str()});
            if let Some(message) = &after.status_message {
                payload["statusMessage"] = json!(message);
            }
            self.log_event(&after.id, after.attempt, STATUS_EVENT, payload);
        }
    }

    /// A progress report of attempt `attempt` of task `id`, to be written into its log (the
    /// last of the interval).
    pub(crate) fn log_progress(&self, id: &TaskId, attempt: u32, progress: &Progress) {
        self.pending(id, attempt, |pending| pending.progress = Some(progress.clone()));
    }

    /// Runs `add` on task `id`'s pending events (a stale attempt's are dropped) and schedules
    /// their write.
    fn pending(&self, id: &TaskId, attempt: u32, add: impl FnOnce(&mut Pending)) {
        let schedule = {
            let mut logs = self.inner.logs.lock().unwrap_or_else(PoisonError::into_inner);
            let pending = match logs.entry(id.clone()) {
                Entry::Occupied(entry) => entry.into_mut(),
                Entry::Vacant(entry) => entry.insert(Pending { attempt, ..Pending::default() }),
            };
            if pending.attempt != attempt {
                return;
            }
            add(pending);
            !std::mem::replace(&mut pending.scheduled, true)
        };
        if schedule {
            let (engine, id) = (self.clone(), id.clone());
            tokio::spawn(async move {
                tokio::time::sleep(FLUSH_EVERY).await;
                engine.write_pending(&id, false).await;
            });
        }
    }

    /// Forgets what task `id`'s work reported and is not yet written.
    pub(crate) fn forget_events(&self, id: &TaskId) {
        self.inner.logs.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
    }

    /// Writes task `id`'s pending events now, its unended line included: called before its
    /// outcome is written, so that the log holds everything the work reported.
    pub(crate) async fn flush_events(&self, id: &TaskId) {
        self.write_pending(id, true).await;
    }

    /// Writes what is pending for task `id` (with its unended line when `all`), and forgets
    /// the task when nothing more is. A failed write is logged; the events are lost, the
    /// task is not.
    async fn write_pending(&self, id: &TaskId, all: bool) {
        let at = self.inner.clock.now();
        let (attempt, events) = {
            let mut logs = self.inner.logs.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(pending) = logs.get_mut(id) else { return };
            let taken = (pending.attempt, pending.drain(all, at));
            if all || (pending.stdout.partial.is_empty() && pending.stderr.partial.is_empty()) {
                logs.remove(id);
            } else {
                pending.scheduled = false;
            }
            taken
        };
        if events.is_empty() {
            return;
        }
        match self.inner.store.append_events(id, attempt, &events, self.inner.policy.events).await {
            Ok(Some(first)) => {
                let _ = self.inner.appended.send((id.clone(), first + events.len() as u64 - 1));
            }
            Ok(None) => tracing::debug!(task = %id, "events of a finished task or a stale attempt; not logged"),
            Err(err) => tracing::warn!(task = %id, error = %err, "could not write the task's events; they are lost"),
        }
    }

    /// The numbers of events appended by this process, as (task, last number): a reader of a
    /// log wakes on them (other processes' appends are found by reading again).
    pub fn subscribe_appended(&self) -> tokio::sync::broadcast::Receiver<(TaskId, u64)> {
        self.inner.appended.subscribe()
    }
}

/// A finished task's last event, number `seq`: its ending as the task says it.
fn ending(record: &TaskRecord, seq: u64) -> TaskEvent {
    let mut payload = json!({"status": record.status().as_str()});
    if let Some(message) = &record.status_message {
        payload["statusMessage"] = json!(message);
    }
    TaskEvent { seq, kind: STATUS_EVENT.to_owned(), payload, at: record.updated_at }
}
