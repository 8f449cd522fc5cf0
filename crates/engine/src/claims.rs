//! Claims: what lets many nodes (replicas, workers) run tasks on one store. Each task's work
//! runs under this node's claim, with a lease the heartbeat renews; a node that loses a claim
//! (lapsed, or taken over by another node's rescuer, which bumps the attempt) stops that work,
//! and the work writes nothing when it ends. The rescuer takes over lapsed claims by the tool's
//! `on_restart` policy (restart recovery is its first pass). And the store's change feed is
//! followed here: forwarded to the engine's subscribers, and watched for the tasks this node
//! runs (finished, cancelled or taken over elsewhere; a cancel requested through another node).

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Instant;

use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::engine::{Engine, Inner};
use crate::error::EngineError;
use crate::task::{TaskId, TaskRecord};

impl Engine {
    /// Follows the store's change feed `feed` in the background: each record goes to the
    /// engine's subscribers, and a change of a task this node runs may stop its work. Holds
    /// the engine weakly: it ends with the engine (its store's feed closes).
    pub(crate) fn follow(&self, mut feed: broadcast::Receiver<Arc<TaskRecord>>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!("the engine was made outside a Tokio runtime: it cannot follow the store's changes");
            return;
        };
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        runtime.spawn(async move {
            loop {
                let record = match feed.recv().await {
                    Ok(record) => record,
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        // Waiters that lag re-read the store themselves; the work this node
                        // runs is checked again by the next heartbeat.
                        tracing::warn!(missed, "the engine fell behind the store's change feed");
                        continue;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let Some(inner) = weak.upgrade() else { return };
                let engine = Engine { inner };
                engine.publish_shared(&record, None);
                engine.watch(&record);
            }
        });
    }

    /// Acts on a change of a task whose work runs here: a terminal task (cancelled or expired
    /// through another node) stops its work; a newer attempt (taken over) stops it as lost;
    /// on a shared store, a cancel requested through another node is read and obeyed.
    fn watch(&self, record: &TaskRecord) {
        if record.attempt == 0 && !record.status().is_terminal() {
            // Queued by a node that runs no work: claim it now rather than at the next sweep.
            self.nudge_rescue();
            return;
        }
        let (attempt, asked) = match self.work().tasks.get(&record.id) {
            Some(running) if running.claimed => (running.attempt, running.cancel_requested),
            _ => return,
        };
        if record.status().is_terminal() {
            self.stop_work(&record.id);
        } else if record.attempt != attempt {
            self.lose(&record.id, attempt);
        } else if self.inner.store.shared() && !asked {
            let engine = self.clone();
            let id = record.id.clone();
            tokio::spawn(async move {
                match engine.inner.store.cancel_requested(&id).await {
                    Ok(true) => engine.obey_cancel(&id, attempt).await,
                    Ok(false) => {}
                    Err(err) => tracing::warn!(task = %id, error = %err, "could not read whether a cancel was requested"),
                }
            });
        }
    }

    /// A cancel was requested through another node for attempt `attempt` of task `id`, whose
    /// work this node runs: a started handler is asked to stop (the task ends `cancelled`
    /// when it does); work still queued for a slot is cancelled at once.
    async fn obey_cancel(&self, id: &TaskId, attempt: u32) {
        let started = match self.work().tasks.get_mut(id) {
            Some(running) if running.attempt == attempt && running.started => {
                running.cancel_requested = true;
                running.cancel.cancel();
                true
            }
            Some(running) if running.attempt == attempt => false,
            _ => return,
        };
        if started {
            tracing::info!(task = %id, "task asked to stop through another node");
            return;
        }
        let cancelled = self
            .apply(id, None, Some(attempt), |_| (crate::task::Event::Cancel, Some(crate::engine::CANCELLED_MESSAGE.to_owned())))
            .await;
        self.stop_work(id);
        if let Err(err) = cancelled {
            tracing::debug!(task = %id, error = %err, "a queued task asked to stop had moved on");
        }
    }

    /// Runs a rescuer pass soon, on a node that runs work (a queued task arrived); passes
    /// asked for while one runs make one more after it, not one each.
    fn nudge_rescue(&self) {
        if !self.runs_work() {
            return;
        }
        if self.inner.rescue_pending.swap(true, Ordering::AcqRel) {
            self.inner.rescue_again.store(true, Ordering::Release);
            return;
        }
        let engine = self.clone();
        tokio::spawn(async move {
            loop {
                engine.inner.rescue_again.store(false, Ordering::Release);
                if let Err(err) = engine.rescue_once().await {
                    tracing::warn!(error = %err, "the rescuer failed; the next sweep tries again");
                }
                if !engine.inner.rescue_again.load(Ordering::Acquire) {
                    engine.inner.rescue_pending.store(false, Ordering::Release);
                    // One asked for between the check and the release runs now.
                    if !engine.inner.rescue_again.swap(false, Ordering::AcqRel)
                        || engine.inner.rescue_pending.swap(true, Ordering::AcqRel)
                    {
                        return;
                    }
                }
            }
        });
    }

    /// Notes that the store holds this node's claim on attempt `attempt` of task `id`.
    pub(crate) fn mark_claimed(&self, id: &TaskId, attempt: u32) {
        if let Some(running) = self.work().tasks.get_mut(id).filter(|run| run.attempt == attempt) {
            running.claimed = true;
        }
    }

    /// This node lost its claim on attempt `attempt` of task `id`: the work is stopped and
    /// writes nothing when it ends.
    fn lose(&self, id: &TaskId, attempt: u32) {
        let mut work = self.work();
        if work.tasks.get(id).is_some_and(|run| run.attempt == attempt)
            && let Some(running) = work.tasks.remove(id)
        {
            running.cancel.cancel();
            work.lost.insert((id.clone(), attempt));
            tracing::warn!(task = %id, attempt, "this node lost its claim on the task; its work stops");
        }
    }

    /// One heartbeat: renews this node's claims in the store and stops the work of each task
    /// whose claim was not renewed (lost). Returns the tasks lost.
    ///
    /// # Errors
    /// A store failure (nothing is stopped then; see [`Engine::spawn_claims`]).
    pub async fn heartbeat_once(&self) -> Result<Vec<TaskId>, EngineError> {
        let now = self.inner.clock.now();
        // Taken before the renewal: a claim made after it is not judged by it.
        let held: Vec<(TaskId, u32)> = self
            .work()
            .tasks
            .iter()
            .filter(|(_, running)| running.claimed)
            .map(|(id, running)| (id.clone(), running.attempt))
            .collect();
        let renewed: HashSet<TaskId> = self.inner.store.renew(&self.lease_from_now(), now).await?.into_iter().collect();
        let mut lost = Vec::new();
        for (id, attempt) in held {
            if !renewed.contains(&id) && self.work().tasks.get(&id).is_some_and(|run| run.attempt == attempt) {
                self.lose(&id, attempt);
                lost.push(id);
            }
        }
        Ok(lost)
    }

    /// Stops the work of every task this node runs under a claim, as lost (the store could
    /// not be reached for longer than a lease: another node may have taken them over).
    fn lose_all(&self) {
        let held: Vec<(TaskId, u32)> = self
            .work()
            .tasks
            .iter()
            .filter(|(_, running)| running.claimed)
            .map(|(id, running)| (id.clone(), running.attempt))
            .collect();
        for (id, attempt) in held {
            self.lose(&id, attempt);
        }
    }

    /// On a shared store ([`ClaimStore::shared`](crate::ClaimStore::shared)), runs the
    /// heartbeat every third of the lease and the rescuer
    /// ([`Engine::rescue_once`]) as often as the store says (every half lease by default,
    /// [`ClaimStore::rescue_every`](crate::ClaimStore::rescue_every)), until `shutdown` fires. A node that cannot
    /// renew for a whole lease stops all its work, as lost: by then another node may run it.
    /// On a store one process owns there is nobody to take over from, or to lose to: the
    /// task ends at once.
    pub fn spawn_claims(&self, shutdown: CancellationToken) -> JoinHandle<()> {
        let engine = self.clone();
        tokio::spawn(async move {
            if !engine.inner.store.shared() {
                return;
            }
            // Two loops, so that a rescuer pass waiting on the database never delays a beat.
            tokio::join!(engine.clone().heartbeats(shutdown.clone()), engine.rescues(shutdown));
        })
    }

    /// The heartbeat loop of [`Engine::spawn_claims`].
    async fn heartbeats(self, shutdown: CancellationToken) {
        let lease = self.inner.lease;
        let mut beats = tokio::time::interval(lease / 3);
        beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut renewed = Instant::now();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = beats.tick() => {}
            }
            // Bounded: a database that stops answering (a partition) must not hold the heartbeat
            // past the lease, or the node would never stop its work.
            match tokio::time::timeout(lease / 3, self.heartbeat_once()).await {
                Ok(Ok(_)) => renewed = Instant::now(),
                failed => {
                    match failed {
                        Ok(Err(err)) => tracing::warn!(error = %err, "could not renew this node's claims"),
                        _ => tracing::warn!("renewing this node's claims timed out"),
                    }
                    if renewed.elapsed() >= lease {
                        tracing::error!("this node's claims went unrenewed for a whole lease; stopping its work");
                        self.lose_all();
                    }
                }
            }
        }
    }

    /// The rescuer loop of [`Engine::spawn_claims`].
    async fn rescues(self, shutdown: CancellationToken) {
        let mut sweeps = tokio::time::interval(self.inner.store.rescue_every(self.inner.lease));
        sweeps.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = sweeps.tick() => {}
            }
            // Dropped mid-pass only at shutdown: what it claimed lapses with this node.
            tokio::select! {
                _ = shutdown.cancelled() => return,
                rescued = self.rescue_once() => if let Err(err) = rescued {
                    tracing::warn!(error = %err, "the rescuer failed; will try again");
                },
            }
        }
    }
}
