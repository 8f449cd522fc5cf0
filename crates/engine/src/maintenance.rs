//! Maintenance: the rescuer, which takes over tasks whose claim lapsed (a node died, or lost
//! the store for longer than a lease) and recovery (its first pass at start, which also takes
//! what a previous process left), and the TTL sweeper. They write through the transition
//! function and the compare-and-set loop, fenced by the attempt the take-over bumped.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::engine::{CANCELLED_MESSAGE, Engine, transition};
use crate::error::{EngineError, WorkError};
use crate::process::{self, Leftover};
use crate::store::Update;
use crate::store::Lease;
use crate::task::{Event, Outcome, RestartPolicy, TaskId, TaskRecord, Timestamp};

/// How many tasks one sweep pass expires or purges at most.
const SWEEP_BATCH: u32 = 1000;
/// How many lapsed tasks one rescuer pass takes over at most.
const RESCUE_BATCH: u32 = 1000;

/// What [`Engine::recover`] did with tasks left unfinished by a previous process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Failed with the interrupted-by-restart error.
    pub failed: usize,
    /// Started again.
    pub retried: usize,
    /// Left alone because they kept changing while recovery wrote them, or another process
    /// took them over (logged).
    pub skipped: usize,
    /// Cancelled, because their requestor had asked them to stop before their node died.
    pub cancelled: usize,
    /// Queued by a node that runs no work, and started here for the first time.
    pub started: usize,
}

/// What one sweep pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Unfinished tasks failed because their TTL ran out.
    pub expired: usize,
    /// Finished tasks deleted.
    pub purged: u64,
}

impl Engine {
    /// Resolves tasks a previous process left unfinished, by their tool's restart policy:
    /// `fail` (also for tools no longer registered) or `retry`. A task whose handler
    /// recorded a checkpoint ([`Context::checkpoint`](crate::Context::checkpoint)) is run
    /// again (counted as retried) whatever its tool's policy, within its tool's
    /// `max_attempts`, and its handler reads the checkpoint to resume. A task that keeps changing
    /// while it is written (a compare-and-set conflict each time) is skipped and logged; the
    /// others are still recovered.
    ///
    /// Before a task is resolved, the process group its work started (if the store recorded
    /// one, [`Context::process_started`](crate::Context::process_started)) is ended if it
    /// still runs, and so is every process that carries the task's id in its environment
    /// ([`TASK_ID_ENV`](crate::TASK_ID_ENV); those a crash left before their group was
    /// recorded): a failed task never has a process left, and a retried one never runs
    /// beside its interrupted attempt.
    ///
    /// Each task is first taken over ([`ClaimStore::claim`](crate::ClaimStore::claim)), which
    /// bumps its attempt: whatever the previous runner still writes is refused. A task whose
    /// requestor had asked it to stop is cancelled instead.
    ///
    /// Call once at start, before serving. On a store one process owns (the memory store)
    /// every unfinished task is taken, whatever its lease says: the process that held it is
    /// gone. On a shared store (PostgreSQL, SQLite) only the lapsed ones are (on SQLite also
    /// those of a node whose process is gone, whatever its lease); the rescuer
    /// ([`Engine::spawn_claims`]) takes the others if their claims lapse later.
    ///
    /// # Errors
    /// A store failure.
    pub async fn recover(&self) -> Result<Recovery, EngineError> {
        let horizon = if self.inner.store.shared() { self.inner.clock.now() } else { Timestamp(i64::MAX) };
        self.rescue(horizon, u32::MAX, false).await
    }

    /// One pass of the rescuer at the clock's `now`: takes over at most a batch of tasks whose
    /// claims lapsed, as [`Engine::recover`] does.
    ///
    /// # Errors
    /// A store failure.
    pub async fn rescue_once(&self) -> Result<Recovery, EngineError> {
        self.rescue(self.inner.clock.now(), RESCUE_BATCH, true).await
    }

    /// Takes over at most `limit` tasks whose claims lapsed at `horizon` and resolves them;
    /// with `spare_own`, not those whose work runs in this process (the heartbeat judges
    /// them), else every one (at start, whatever ran before belongs to a dead process).
    async fn rescue(&self, horizon: Timestamp, limit: u32, spare_own: bool) -> Result<Recovery, EngineError> {
        let mut report = Recovery::default();
        if !self.runs_work() {
            return Ok(report);
        }
        let lapsed = self.inner.store.lapsed(horizon, limit).await?;
        let mut tagged = if lapsed.is_empty() { Default::default() } else { process::tagged_processes() };
        for task in lapsed {
            // This node's own work (its lease ran out by the clock, the heartbeat judges it).
            if spare_own && self.work().tasks.get(&task.id).is_some_and(|running| running.attempt == task.attempt) {
                continue;
            }
            // Subscribers see the task resolved, not the take-over on the way (a task failed
            // at recovery was never seen working by this process).
            self.hold_publishing(&task.id);
            let taken = self.inner.store.claim(&task.id, task.attempt, &self.lease_from_now(), horizon).await;
            let taken_attempt = taken.as_ref().ok().and_then(|taken| taken.as_ref().map(|taken| taken.attempt));
            let resolved = self.resolve_taken(&task, taken, &mut tagged, &mut report).await;
            if let (Err(err), Some(attempt)) = (&resolved, taken_attempt) {
                self.give_back(&task.id, attempt, err).await;
            }
            self.release_publishing(&task.id).await;
            resolved?;
        }
        if report != Recovery::default() {
            tracing::info!(failed = report.failed, retried = report.retried, skipped = report.skipped, cancelled = report.cancelled, started = report.started, "took over unfinished tasks whose node is gone");
        }
        Ok(report)
    }

    /// Resolves lapsed `task` after its take-over (`taken`: the claim's outcome) by its tool's
    /// restart policy, or cancels it if a cancel was requested; counts it in `report`.
    async fn resolve_taken(
        &self,
        task: &TaskRecord,
        taken: Result<Option<TaskRecord>, crate::store::StoreError>,
        tagged: &mut std::collections::HashMap<String, Vec<u32>>,
        report: &mut Recovery,
    ) -> Result<(), EngineError> {
        let Some(taken) = taken?
        else {
            tracing::debug!(task = %task.id, "another node took the lapsed task over first");
            report.skipped += 1;
            return Ok(());
        };
        self.end_leftovers(task, tagged).await?;
        if self.inner.store.cancel_requested(&task.id).await? {
            return self.cancel_taken(task, &taken, report).await;
        }
        if task.attempt == 0 {
            return self.start_queued(task, &taken, report).await;
        }
        self.restart_or_fail(task, &taken, report).await
    }

    /// Ends what the previous runner of lapsed `task` left running: its recorded process
    /// group, and the processes tagged with its id (`tagged`, taken out).
    async fn end_leftovers(
        &self,
        task: &TaskRecord,
        tagged: &mut std::collections::HashMap<String, Vec<u32>>,
    ) -> Result<(), EngineError> {
        self.end_leftover_group(task).await?;
        if let Some(pids) = tagged.remove(task.id.as_str()) {
            tracing::warn!(task = %task.id, processes = pids.len(), "killed processes a previous server left running");
            if !process::end_tagged(&pids).await {
                tracing::error!(task = %task.id, "processes a previous server left running survived SIGKILL");
            }
        }
        Ok(())
    }

    /// Cancels `taken` (lapsed `task`, taken over), whose cancel was requested.
    async fn cancel_taken(&self, task: &TaskRecord, taken: &TaskRecord, report: &mut Recovery) -> Result<(), EngineError> {
        let cancelled = self
            .apply(&task.id, None, Some(taken.attempt), |_| (Event::Cancel, Some(CANCELLED_MESSAGE.to_owned())))
            .await;
        match cancelled {
            Ok(_) => report.cancelled += 1,
            Err(EngineError::Refused { .. } | EngineError::NotFound(_) | EngineError::Contended(_)) => {
                report.skipped += 1;
            }
            Err(err) => return Err(err),
        }
        Ok(())
    }

    /// Starts the first attempt of `taken` (queued `task`, never run), or fails it if its
    /// tool is not registered here.
    async fn start_queued(&self, task: &TaskRecord, taken: &TaskRecord, report: &mut Recovery) -> Result<(), EngineError> {
        match self.start(taken) {
            Ok(()) => {
                report.started += 1;
                Ok(())
            }
            Err(EngineError::UnknownTool(tool)) => {
                tracing::warn!(task = %task.id, %tool, "a queued task's tool is not registered here; failing it");
                let failure = WorkError::InterruptedByRestart;
                self.fail_interrupted(taken, failure).await.map(|()| report.failed += 1)
            }
            Err(err) => Err(err),
        }
    }

    /// Runs `taken` (interrupted `task`, taken over) again or fails it, by its tool's restart
    /// policy and attempts; a task that changed meanwhile is skipped.
    async fn restart_or_fail(&self, task: &TaskRecord, taken: &TaskRecord, report: &mut Recovery) -> Result<(), EngineError> {
        let runtime = self.tool(&task.tool);
        // A task whose handler recorded a checkpoint is run again whatever its policy:
        // the handler said where its work stands so that it can resume from there
        // (e.g. a proxied call polls the upstream task it had started).
        let resumable = runtime.is_some() && self.inner.store.checkpoint(&task.id).await?.is_some();
        let policy = runtime.map(|tool| {
            let on_restart = if resumable { RestartPolicy::Retry } else { tool.on_restart };
            (on_restart, tool.max_attempts.max(1))
        });
        let done = match policy {
            Some((RestartPolicy::Retry, max_attempts)) if task.attempt < max_attempts => {
                match self.restart(taken).await {
                    Ok(Some(restarted)) => {
                        self.start(&restarted)?;
                        report.retried += 1;
                        Ok(())
                    }
                    Ok(None) => Err(EngineError::Contended(task.id.clone())),
                    Err(err) => Err(err),
                }
            }
            Some((RestartPolicy::Retry, max_attempts)) => {
                tracing::warn!(task = %task.id, tool = %task.tool, attempts = task.attempt, "a retried task was interrupted on its last attempt; failing it");
                let failure = WorkError::InterruptedRepeatedly { times: task.attempt, max_attempts };
                self.fail_interrupted(taken, failure).await.map(|()| report.failed += 1)
            }
            Some((RestartPolicy::Fail, _)) | None => {
                self.fail_interrupted(taken, WorkError::InterruptedByRestart).await.map(|()| report.failed += 1)
            }
        };
        match done {
            Ok(()) => Ok(()),
            Err(EngineError::Contended(_) | EngineError::Refused { .. } | EngineError::NotFound(_)) => {
                tracing::warn!(task = %task.id, "the task changed while it was recovered; skipping it");
                report.skipped += 1;
                Ok(())
            }
            Err(err) => Err(err),
        }
    }

    /// Gives back the claim this node took on task `id` (at `attempt`) but could not resolve
    /// (`err`): without it the heartbeat would renew a claim nobody runs. The claim is taken
    /// once more with a lease lapsed from the start (the attempt bumped again), so that the
    /// next rescuer pass, on any node, takes the task.
    async fn give_back(&self, id: &TaskId, attempt: u32, err: &EngineError) {
        let lapsed = Lease { node: self.inner.node.clone(), until: Timestamp(i64::MIN) };
        match self.inner.store.claim(id, attempt, &lapsed, Timestamp(i64::MAX)).await {
            Ok(_) => tracing::warn!(task = %id, error = %err, "could not resolve a task taken over; gave it back for the next rescuer pass"),
            Err(again) => tracing::error!(task = %id, error = %err, give_back = %again, "could not resolve a task taken over, nor give it back; it waits for this node to stop"),
        }
    }

    /// Ends the process group the work of `task` started in a previous process, if the
    /// store recorded one and it still runs.
    async fn end_leftover_group(&self, task: &TaskRecord) -> Result<(), EngineError> {
        let Some(group) = self.inner.store.process_group(&task.id).await? else {
            return Ok(());
        };
        match group.end_leftover().await {
            Leftover::Gone | Leftover::Reused => {}
            Leftover::Killed | Leftover::Terminated => {
                tracing::warn!(task = %task.id, pgid = group.pgid, "killed the process group a previous server left running");
            }
            Leftover::Survived => {
                tracing::error!(task = %task.id, pgid = group.pgid, "a process group a previous server left running survived SIGKILL");
            }
        }
        Ok(())
    }

    /// Takes `task` (just taken over, its attempt bumped by the claim) back to `working`
    /// ([`Event::Restart`]), for a retry after a restart. `None`: the task's attempt moved on
    /// since `task` was read (someone else took it).
    async fn restart(&self, task: &TaskRecord) -> Result<Option<TaskRecord>, EngineError> {
        let attempt = task.attempt;
        let message = format!("Running again after a server restart (attempt {attempt})");
        self.write(&task.id, None, |current| {
            if current.attempt != task.attempt {
                return Ok(None);
            }
            Ok(Some(Update {
                state: transition(current, Event::Restart)?,
                status_message: Some(message.clone()),
                updated_at: self.inner.clock.now(),
                attempt,
            }))
        })
        .await
        .map(|written| written.map(std::sync::Arc::unwrap_or_clone))
    }

    /// Fails a task a previous process left unfinished with `failure`; a task that finished
    /// or vanished meanwhile is left alone. Any place the task still holds among this
    /// process's running work is given up.
    async fn fail_interrupted(&self, task: &TaskRecord, failure: WorkError) -> Result<(), EngineError> {
        let failed = self
            .apply(&task.id, None, Some(task.attempt), |_| {
                (Event::Fail(Outcome::Failure(failure.clone())), Some(failure.to_string()))
            })
            .await;
        self.stop_work(&task.id);
        match failed {
            Ok(_) | Err(EngineError::Refused { .. } | EngineError::NotFound(_)) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// One pass of the TTL sweeper at the clock's `now`: fails unfinished tasks whose TTL
    /// ran out (stopping their work), then deletes finished ones.
    ///
    /// # Errors
    /// A store failure.
    pub async fn sweep_once(&self) -> Result<Sweep, EngineError> {
        let now = self.inner.clock.now();
        let mut sweep = Sweep::default();
        for task in self.inner.store.expired(now, SWEEP_BATCH).await? {
            match self.apply(&task.id, None, None, |_| (Event::Expire, Some(WorkError::Expired.to_string()))).await {
                Ok(_) => sweep.expired += 1,
                Err(EngineError::Refused { .. } | EngineError::NotFound(_)) => {}
                Err(err) => return Err(err),
            }
            self.stop_work(&task.id);
        }
        sweep.purged = self.inner.store.purge(now, SWEEP_BATCH).await?;
        if sweep != Sweep::default() {
            tracing::debug!(expired = sweep.expired, purged = sweep.purged, "swept expired tasks");
        }
        Ok(sweep)
    }

    /// Runs [`Engine::sweep_once`] every `every` until `shutdown` fires, and again at once
    /// after each pass that was full (so that expiry keeps up with the creations).
    pub fn spawn_sweeper(&self, every: Duration, shutdown: CancellationToken) -> JoinHandle<()> {
        let engine = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = ticks.tick() => {}
                }
                // A full pass leaves more behind: the next runs at once, until one is not full,
                // so that expiry keeps up with any rate of creations (a pass every `every` of at
                // most SWEEP_BATCH tasks would cap it at SWEEP_BATCH per `every`, and the store
                // would grow under a steady load of short-lived tasks).
                loop {
                    match engine.sweep_once().await {
                        Ok(sweep) if sweep.expired >= SWEEP_BATCH as usize || sweep.purged >= u64::from(SWEEP_BATCH) => {
                            if shutdown.is_cancelled() {
                                return;
                            }
                            tokio::task::yield_now().await;
                        }
                        Ok(_) => break,
                        Err(err) => {
                            tracing::warn!(error = %err, "TTL sweep failed; will try again");
                            break;
                        }
                    }
                }
            }
        })
    }
}
