//! Work started before its task's creation commits ([`ToolRuntime::start_before_commit`]):
//! an outcome that comes before the insert runs goes in with it, with the events the work
//! reported before it (one row, its log and one commit for the whole lifecycle, on a store
//! that can: SQLite; another writes it on its own once the creation is answered), and a gate
//! holds back everything the work shows of its task (its outcome, progress, output, status,
//! input requests, checkpoints) until the creation has committed and its requestor has been
//! answered ([`Engine::start`](crate::Engine::start)).
//!
//! The order the rest of the engine relies on holds: the task is durable before its id
//! leaves (invariant 1), its outcome is durable before anyone sees it (the outcome is in the
//! creation's commit, or written after it as usual), and nothing of the task is published
//! before the answer that names it. A creation that fails (a full disk) stops the work and
//! forgets its outcome: the task never existed.
//!
//! [`ToolRuntime::start_before_commit`]: crate::ToolRuntime::start_before_commit

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::engine::{Change, Engine, Output};
use crate::store::implement::{EarlyEnd, EarlyEnding};
use crate::store::{EventLimits, Update};
use crate::task::{Event, Principal, TaskId, TaskRecord, TaskState, Timestamp};
use crate::work::Progress;

/// Whether what the work shows of its task may be seen yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gate {
    /// The creation is not answered yet.
    Closed,
    /// The creation committed and was answered: the work's effects show as they come.
    Open,
    /// The creation failed: the task does not exist, and nothing of the work shows.
    Refused,
}

/// A report the work made while the gate was closed, made again when it opens.
pub(crate) enum Deferred {
    Progress(Progress),
    /// Output, and whether on stderr.
    Output(String, bool),
    /// An event for the task's log: its type and payload.
    Event(String, serde_json::Value),
}

/// Where the outcome of the work stands against the creation's insert.
enum Slot {
    /// The insert has not run: an outcome may still go in with it.
    Waiting,
    /// The work ended first with this update (and this event, for a store that declines
    /// it): the creation's record with it is what the insert writes, if the store writes
    /// endings with its inserts.
    Ended(Update, Event),
    /// The insert ran (with or without the outcome): an outcome now is written on its own.
    Taken,
    /// The store wrote no ending with its insert, and the work had ended: its ending is
    /// written on its own when the gate opens.
    Declined(Event, Option<String>),
}

struct Inner {
    slot: Slot,
    /// The record committed with the creation (its outcome in), and when its commit returned:
    /// published when the gate opens.
    merged: Option<(Arc<TaskRecord>, Instant)>,
    /// Reports made while the gate was closed, in order.
    deferred: Vec<Deferred>,
}

/// One task's work started before its creation commits (see the module's comment).
pub(crate) struct Early {
    id: TaskId,
    owner: Principal,
    attempt: u32,
    /// The log's retention limits, for the events that go in with the insert.
    limits: EventLimits,
    /// The work's token: fired when the creation fails.
    cancel: CancellationToken,
    inner: Mutex<Inner>,
    gate: watch::Sender<Gate>,
}

impl Early {
    pub(crate) fn new(id: TaskId, owner: Principal, attempt: u32, limits: EventLimits, cancel: CancellationToken) -> Early {
        Early {
            id,
            owner,
            attempt,
            limits,
            cancel,
            inner: Mutex::new(Inner { slot: Slot::Waiting, merged: None, deferred: Vec::new() }),
            gate: watch::Sender::new(Gate::Closed),
        }
    }

    /// The token the work stops by.
    pub(crate) fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The work ended with `event` (a completion, failure or cancellation) and `message`
    /// before the creation's insert ran: both go in with it. Given back when the insert has
    /// run already; the caller writes them on their own once [`Early::opened`].
    pub(crate) fn offer(
        &self,
        event: Event,
        message: Option<String>,
        updated_at: Timestamp,
    ) -> Result<(), (Event, Option<String>)> {
        let mut inner = self.lock();
        if !matches!(inner.slot, Slot::Waiting) || !matches!(event, Event::Complete(_) | Event::Fail(_) | Event::Cancel) {
            return Err((event, message));
        }
        // The one transition function; from `working` (every creation's state) these three
        // are always allowed.
        match TaskState::Working.on(event.clone()) {
            Ok(state) => {
                let update = Update { state, status_message: message, updated_at, attempt: self.attempt };
                inner.slot = Slot::Ended(update, event);
                Ok(())
            }
            Err(refused) => {
                // Not reached: `working` takes every ending. Written as a failure of the
                // engine rather than lost.
                tracing::error!(task = %self.id, %refused, "an early ending was refused by the transition function");
                let failure = crate::task::Outcome::Failure(crate::error::WorkError::HandlerCrashed);
                Err((Event::Fail(failure), message))
            }
        }
    }

    /// The creation committed; `merged`: the record written with its outcome in, if the work
    /// ended first, and when its commit returned.
    pub(crate) fn committed(&self, merged: Option<Arc<TaskRecord>>, at: Instant) {
        self.lock().merged = merged.map(|record| (record, at));
    }

    /// The creation failed: the work is stopped and whatever it does is forgotten.
    pub(crate) fn refuse(&self) {
        let mut inner = self.lock();
        inner.deferred.clear();
        inner.merged = None;
        self.gate.send_replace(Gate::Refused);
        drop(inner);
        self.cancel.cancel();
    }

    /// The creation was answered: the outcome committed with it is published, the reports
    /// held back are made, and from now on the work's effects show as they come.
    pub(crate) fn open(&self, engine: &Engine) {
        let mut inner = self.lock();
        if *self.gate.borrow() != Gate::Closed {
            return;
        }
        // The reports' events went in with the insert if the ending did.
        let logged = inner.merged.is_some();
        // In order, under the lock, so that no report made meanwhile overtakes them; the
        // reports first, as they were made before the work ended (they are sent even if it
        // has ended: the engine no longer counts it as running by then).
        for deferred in std::mem::take(&mut inner.deferred) {
            let (id, owner) = (self.id.clone(), self.owner.clone());
            match deferred {
                Deferred::Progress(progress) => {
                    if !logged {
                        engine.log_progress(&id, self.attempt, &progress);
                    }
                    engine.send_change(Change::Progress { id, owner, progress });
                }
                Deferred::Output(text, stderr) => {
                    if !logged {
                        engine.log_output(&id, self.attempt, &text, stderr);
                    }
                    if !stderr {
                        engine.send_output(Output { id, owner, text: text.into() });
                    }
                }
                Deferred::Event(kind, payload) if !logged => engine.log_event(&id, self.attempt, &kind, payload),
                Deferred::Event(..) => {}
            }
        }
        if let Some((record, at)) = inner.merged.take() {
            engine.publish_shared(&record, Some(at));
            tracing::info!(task = %record.id, status = %record.status(), "task finished");
        }
        if let Slot::Declined(event, message) = std::mem::replace(&mut inner.slot, Slot::Taken) {
            // After the reports just logged: the write of the ending flushes them first.
            let (engine, id, attempt) = (engine.clone(), self.id.clone(), self.attempt);
            tokio::spawn(async move { engine.finish_with(&id, attempt, event, message).await });
        }
        self.gate.send_replace(Gate::Open);
    }

    /// Holds `report` back while the gate is closed (`None`); gives it back to be made now
    /// once it is open; drops it if the creation failed.
    fn defer(&self, report: Deferred) -> Option<Deferred> {
        let mut inner = self.lock();
        match *self.gate.borrow() {
            Gate::Closed => {
                inner.deferred.push(report);
                None
            }
            Gate::Open => Some(report),
            Gate::Refused => None,
        }
    }

    /// Makes `report` of the work (progress, output, an event) as [`Early::defer`] allows:
    /// held back, made now, or dropped.
    pub(crate) fn report(&self, engine: &Engine, report: Deferred) {
        match self.defer(report) {
            Some(Deferred::Progress(progress)) => engine.report_progress(&self.id, self.attempt, progress),
            Some(Deferred::Output(text, stderr)) => engine.report_output(&self.id, self.attempt, &text, stderr),
            Some(Deferred::Event(kind, payload)) => engine.log_event(&self.id, self.attempt, &kind, payload),
            None => {}
        }
    }

    /// Waits until the gate opens (`true`) or the creation fails (`false`).
    pub(crate) async fn opened(&self) -> bool {
        let mut gate = self.gate.subscribe();
        match gate.wait_for(|gate| *gate != Gate::Closed).await {
            Ok(gate) => *gate == Gate::Open,
            // The sender lives in `self`: not reached.
            Err(_) => false,
        }
    }
}

impl EarlyEnding for Early {
    fn take(&self) -> Option<EarlyEnd> {
        let mut inner = self.lock();
        match std::mem::replace(&mut inner.slot, Slot::Taken) {
            Slot::Ended(update, ..) => {
                // Logged as the engine would have logged them, each at the ending's time.
                let events = crate::events::early_events(&inner.deferred, update.updated_at);
                Some(EarlyEnd { update, events, limits: self.limits })
            }
            Slot::Waiting | Slot::Taken | Slot::Declined(..) => None,
        }
    }

    fn decline(&self) {
        let mut inner = self.lock();
        inner.slot = match std::mem::replace(&mut inner.slot, Slot::Taken) {
            Slot::Ended(update, event) => Slot::Declined(event, update.status_message),
            declined @ Slot::Declined(..) => declined,
            Slot::Waiting | Slot::Taken => Slot::Taken,
        };
    }
}
