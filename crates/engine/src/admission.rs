//! Admission: the [`Policy`] an engine applies at creation, and the bookkeeping of the work
//! running in this process that its running limits bound ([`Work`]). On a shared store
//! (PostgreSQL, many replicas) the running limits hold across every node too: each task and
//! plain call also takes a running place in the store ([`ClaimStore::take_place`](crate::ClaimStore::take_place)), held by
//! this node's lease like a claim.

use tokio_util::sync::CancellationToken;

use crate::engine::Engine;
use crate::error::{EngineError, LimitExceeded};
use crate::fast::{FastMap, FastSet};
use crate::store::{Place, PlaceHolder, RunningLimits};
use crate::task::{Principal, TaskId, TaskRecord};

/// Retention, polling and admission policy, applied at creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// TTL granted when the requestor asks for none, in ms.
    pub default_ttl_ms: u64,
    /// The largest TTL granted, in ms; `None` grants any request.
    pub max_ttl_ms: Option<u64>,
    /// Suggested interval between polls, in ms.
    pub poll_interval_ms: u64,
    /// At most this many tasks and plain calls run at once, for all principals together; a
    /// new one over it is refused ([`LimitExceeded::Running`]). A task counts from its
    /// creation until its work ends, including while it waits for input or queues for a slot
    /// of its tool; tasks retried by [`Engine::recover`] count but are never refused. On a
    /// shared store the limit holds across every replica and worker on it (a running place
    /// per task and call in the store; a task's place is given up when it is seen finished,
    /// or its creating node's lease lapses).
    pub max_running: u32,
    /// The same, for each principal alone ([`LimitExceeded::RunningPerPrincipal`]).
    pub max_running_per_principal: u32,
    /// At most this many tasks of one principal are kept in the store, finished or not
    /// (finished ones leave when their TTL runs out); a new task over it is refused
    /// ([`LimitExceeded::RetainedPerPrincipal`]). Plain calls are not stored and do not count.
    pub max_retained_per_principal: u64,
    /// How much of its event log each task keeps (its oldest events pruned past it).
    pub events: crate::store::EventLimits,
}

impl Default for Policy {
    /// One hour by default, a day at most, polls every second; 64 running at once, 16 per
    /// principal; 10,000 tasks kept per principal.
    fn default() -> Policy {
        Policy {
            default_ttl_ms: 3_600_000,
            max_ttl_ms: Some(86_400_000),
            poll_interval_ms: 1_000,
            max_running: 64,
            max_running_per_principal: 16,
            max_retained_per_principal: 10_000,
            events: crate::store::EventLimits::default(),
        }
    }
}

impl Policy {
    /// The TTL granted for `requested`: honoured up to the cap, the default when absent.
    pub fn grant(&self, requested: Option<u64>) -> u64 {
        let ttl = requested.unwrap_or(self.default_ttl_ms);
        self.max_ttl_ms.map_or(ttl, |max| ttl.min(max))
    }
}

/// Work running in this process for one task.
pub(crate) struct Running {
    pub(crate) attempt: u32,
    pub(crate) owner: Principal,
    pub(crate) cancel: CancellationToken,
    /// Whether the handler has been called (the task is past its tool's queue).
    pub(crate) started: bool,
    /// Whether [`Engine::request_cancel`] asked the work to stop: the task then ends
    /// `cancelled` when the work ends, whatever it returns.
    pub(crate) cancel_requested: bool,
    /// Plain-call work adopted by its task ([`Engine::adopt`](crate::Engine::adopt)): it
    /// holds its plain call's running slot already, so it does not count again here.
    pub(crate) adopted: bool,
    /// Whether the store holds this node's claim on the task (its insert or take-over
    /// returned): from then on the heartbeat must renew it, or the work stops.
    pub(crate) claimed: bool,
}

impl Running {
    /// Attempt `attempt` of a task of `owner`, not started yet.
    pub(crate) fn new(attempt: u32, owner: Principal, cancel: CancellationToken) -> Running {
        Running { attempt, owner, cancel, started: false, cancel_requested: false, adopted: false, claimed: false }
    }
}

/// Everything running in this process, which [`Policy::max_running`] and
/// [`Policy::max_running_per_principal`] bound.
#[derive(Default)]
pub(crate) struct Work {
    /// Tasks, from creation (or a retry's start) until their work ends or is stopped.
    pub(crate) tasks: FastMap<TaskId, Running>,
    /// Tasks whose work started before their creation committed and whose requestor has
    /// not been answered yet: [`Engine::start`] opens their gate ([`crate::early`]).
    pub(crate) early: FastMap<TaskId, std::sync::Arc<crate::early::Early>>,
    /// Plain calls in progress, by principal (never zero: an entry leaves at zero).
    pub(crate) plain: FastMap<Principal, usize>,
    /// Creations admitted under [`Policy::max_retained_per_principal`] whose insert has not
    /// returned yet, by principal (never zero): the store does not count them yet.
    pub(crate) inserting: FastMap<Principal, u64>,
    /// Attempts of tasks whose claim this node lost (it lapsed or was taken over): their
    /// work was stopped and writes nothing when it ends.
    pub(crate) lost: FastSet<(TaskId, u32)>,
}

impl Work {
    /// Whether one more task or call of `owner` fits under the policy's limits.
    pub(crate) fn admit(&self, owner: &Principal, policy: &Policy) -> Result<(), LimitExceeded> {
        let running = self.tasks.values().filter(|task| !task.adopted).count() + self.plain.values().sum::<usize>();
        if running >= policy.max_running as usize {
            return Err(LimitExceeded::Running { running, limit: policy.max_running });
        }
        let mine = self.tasks.values().filter(|task| !task.adopted && &task.owner == owner).count()
            + self.plain.get(owner).copied().unwrap_or(0);
        if mine >= policy.max_running_per_principal as usize {
            return Err(LimitExceeded::RunningPerPrincipal {
                owner: owner.clone(),
                running: mine,
                limit: policy.max_running_per_principal,
            });
        }
        Ok(())
    }
}

/// A plain call counted in [`Work::plain`] until dropped.
pub(crate) struct PlainCall<'a> {
    engine: &'a Engine,
    owner: Principal,
}

impl<'a> PlainCall<'a> {
    /// Admits a plain call of `owner` under the running limits and counts it.
    pub(crate) fn admit(engine: &'a Engine, owner: &Principal) -> Result<PlainCall<'a>, LimitExceeded> {
        let mut work = engine.work();
        work.admit(owner, &engine.policy())?;
        *work.plain.entry(owner.clone()).or_default() += 1;
        Ok(PlainCall { engine, owner: owner.clone() })
    }
}

impl Drop for PlainCall<'_> {
    fn drop(&mut self) {
        let mut work = self.engine.work();
        if let Some(count) = work.plain.get_mut(&self.owner) {
            *count -= 1;
            if *count == 0 {
                work.plain.remove(&self.owner);
            }
        }
    }
}

/// A creation counted in [`Work::inserting`] until dropped (its insert returned, or its
/// future was dropped).
pub(crate) struct Inserting<'a> {
    engine: &'a Engine,
    owner: Principal,
}

impl<'a> Inserting<'a> {
    pub(crate) fn new(engine: &'a Engine, owner: &Principal) -> Inserting<'a> {
        *engine.work().inserting.entry(owner.clone()).or_insert(0) += 1;
        Inserting { engine, owner: owner.clone() }
    }
}

impl Drop for Inserting<'_> {
    fn drop(&mut self) {
        {
            let mut work = self.engine.work();
            if let Some(count) = work.inserting.get_mut(&self.owner) {
                *count -= 1;
                if *count == 0 {
                    work.inserting.remove(&self.owner);
                }
            }
        }
        self.engine.inner.settled.notify_waiters();
    }
}

impl Engine {
    /// Admits the new task `record` under the policy's limits: its owner keeps fewer than
    /// [`Policy::max_retained_per_principal`] tasks, and one more fits under the running
    /// limits, where it is counted from now on. The guard counts it among the creations
    /// being inserted until dropped.
    ///
    /// The retention check here is exact among this process's creations (they are refused
    /// before they reach the store); across the nodes of a shared store the store's insert
    /// decides, atomically ([`ClaimStore::insert_claimed`](crate::ClaimStore::insert_claimed)).
    ///
    /// With `adopting` (the token that stops running plain-call work the task adopts,
    /// [`Engine::adopt`]), the running limits are not checked: the work is admitted and
    /// counted already, as the plain call it was; the task's place among the running work
    /// is that work's, started and stopped by the token.
    pub(crate) async fn admit_task(
        &self,
        record: &TaskRecord,
        adopting: Option<&CancellationToken>,
    ) -> Result<Inserting<'_>, EngineError> {
        let policy = self.policy();
        let limit = policy.max_retained_per_principal;
        let admission = self.inner.admission.lock().await;
        // A store whose insert decides the limit by itself, and whose count is a round trip
        // (PostgreSQL), is not asked first: its refusal comes from the insert.
        let counted_first = self.inner.store.count_before_insert();
        if counted_first {
            loop {
                // Registered before the counts are read: a creation that settles after them
                // wakes this one.
                let settled = self.inner.settled.notified();
                let mut settled = std::pin::pin!(settled);
                settled.as_mut().enable();
                // The creations admitted but not yet inserted, then the store's count. In this
                // order a creation is always seen at least once: one still inserting when the
                // first is read is counted there; one done by then committed before its guard
                // dropped, so the count, read after, has it. (Read the other way round, a
                // creation that commits and drops its guard between the two reads was seen by
                // neither, and one over the limit was admitted.)
                let inserting = self.work().inserting.get(&record.owner).copied().unwrap_or(0);
                let stored = self.inner.store.count(&record.owner).await?;
                let retained = stored.saturating_add(inserting);
                if retained < limit {
                    break;
                }
                // A creation whose commit the count has already seen may still be counted as
                // inserting too: the sum is then too many, and only the count alone is sure.
                // At the limit by the sum but not by the count (so some are inserting), wait
                // for the creations in flight to settle (one group commit) and count again,
                // rather than refuse one there is room for.
                if stored >= limit {
                    let owner = record.owner.clone();
                    return Err(LimitExceeded::RetainedPerPrincipal { owner, retained: stored, limit }.into());
                }
                settled.await;
            }
        }
        // Reserved before the insert, checking and counting in one critical section, so
        // that concurrent creations and plain calls cannot overshoot the running limits.
        {
            let mut work = self.work();
            let reserved = match adopting {
                None => {
                    work.admit(&record.owner, &policy)?;
                    Running::new(record.attempt, record.owner.clone(), CancellationToken::new())
                }
                Some(cancel) => {
                    let mut running = Running::new(record.attempt, record.owner.clone(), cancel.clone());
                    running.started = true;
                    running.adopted = true;
                    running
                }
            };
            work.tasks.insert(record.id.clone(), reserved);
        }
        let inserting = Inserting::new(self, &record.owner);
        drop(admission);
        // On a shared store the task's running place across the nodes is taken with its
        // insert ([`Engine::placing`]).
        Ok(inserting)
    }

    /// The running place a new task takes with its insert on a shared store
    /// ([`ClaimStore::insert_placed`](crate::ClaimStore::insert_placed)); `None` on a store
    /// one process owns (its own counters, checked at admission, are exact).
    pub(crate) fn placing(&self) -> Option<crate::store::Placing> {
        if !self.inner.store.shared() {
            return None;
        }
        Some(crate::store::Placing { limits: self.running_limits(), lease: self.lease_from_now(), now: self.inner.clock.now() })
    }

    /// The policy's running limits, as the store checks them.
    fn running_limits(&self) -> RunningLimits {
        let policy = self.policy();
        RunningLimits { max_running: policy.max_running, max_running_per_principal: policy.max_running_per_principal }
    }

    /// The refusal of a creation or a call that found no running place
    /// ([`StoreError::NoPlace`](crate::StoreError::NoPlace), or a refused
    /// [`ClaimStore::take_place`](crate::ClaimStore::take_place)).
    pub(crate) fn no_place(&self, place: Place, owner: &Principal) -> EngineError {
        let policy = self.policy();
        let count = |running: u64| usize::try_from(running).unwrap_or(usize::MAX);
        match place {
            Place::OwnerFull { running } => LimitExceeded::RunningPerPrincipal {
                owner: owner.clone(),
                running: count(running),
                limit: policy.max_running_per_principal,
            }
            .into(),
            // `Taken` is no refusal; never given here.
            Place::Full { running } => LimitExceeded::Running { running: count(running), limit: policy.max_running }.into(),
            Place::Taken => LimitExceeded::Running { running: 0, limit: policy.max_running }.into(),
        }
    }

    /// On a shared store, takes a running place for `holder` of `owner` in the store, so that
    /// the running limits hold across every node; nothing on a store one process owns (its
    /// own counters, checked before, are exact).
    ///
    /// # Errors
    /// [`LimitExceeded::Running`] or [`LimitExceeded::RunningPerPrincipal`] with the counts
    /// across the nodes; [`EngineError::Store`].
    pub(crate) async fn take_place(&self, holder: &PlaceHolder, owner: &Principal) -> Result<(), EngineError> {
        if !self.inner.store.shared() {
            return Ok(());
        }
        let limits = self.running_limits();
        match self.inner.store.take_place(holder, owner, &limits, &self.lease_from_now(), self.inner.clock.now()).await? {
            Place::Taken => Ok(()),
            refused => Err(self.no_place(refused, owner)),
        }
    }

    /// Gives up the running place of `holder` on a shared store (a creation that stored no
    /// task, a plain call that ended). A failure is logged: the place frees by itself when
    /// this node's lease lapses, or its task is seen finished.
    pub(crate) async fn release_place(&self, holder: &PlaceHolder) {
        if self.inner.store.shared()
            && let Err(err) = self.inner.store.release_place(holder).await
        {
            tracing::warn!(holder = holder.as_str(), error = %err, "could not give up a running place");
        }
    }
}

/// A plain call's running place in a shared store, given up when dropped.
pub(crate) struct CallPlace {
    engine: Engine,
    holder: Option<PlaceHolder>,
}

impl CallPlace {
    /// Takes a running place for a plain call of `owner` (on a shared store that keeps places
    /// for calls, [`ClaimStore::places_for_calls`](crate::ClaimStore::places_for_calls); see
    /// [`Engine::take_place`]).
    pub(crate) async fn take(engine: &Engine, owner: &Principal) -> Result<CallPlace, EngineError> {
        if !engine.inner.store.shared() || !engine.inner.store.places_for_calls() {
            return Ok(CallPlace { engine: engine.clone(), holder: None });
        }
        let holder = PlaceHolder::Call(TaskId::random().to_string());
        engine.take_place(&holder, owner).await?;
        Ok(CallPlace { engine: engine.clone(), holder: Some(holder) })
    }
}

impl Drop for CallPlace {
    fn drop(&mut self) {
        let Some(holder) = self.holder.take() else { return };
        let engine = self.engine.clone();
        // Dropped in async code that cannot wait here (a call's future, perhaps cancelled).
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { engine.release_place(&holder).await });
        }
    }
}

