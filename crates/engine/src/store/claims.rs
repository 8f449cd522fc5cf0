//! [`ClaimStore`]: what lets many nodes run tasks on one store: claims with a lease (taken,
//! renewed, lapsed, taken over with the attempt as the fence), the claimed insert that holds
//! the retention limit, a tool's `max_concurrent` slots and the running places of
//! [`Policy::max_running`](crate::Policy::max_running) across nodes. On a store that one
//! process owns (SQLite, memory) the same methods hold, trivially: that process holds every
//! claim.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use super::implement::EarlyEnding;
use super::{Inserted, Origin, StoreError};
use crate::task::{Principal, TaskId, TaskRecord, Timestamp};

/// Claims, leases, slots and running places ([`TaskStore`](super::TaskStore)'s part for
/// many nodes on one store).
///
/// Every method is atomic on its own; none holds a lock across calls.
#[async_trait]
pub trait ClaimStore: Send + Sync + 'static {
    /// Whether processes other than this one may run tasks on this store at the same time
    /// (PostgreSQL and SQLite: yes; the memory store: no, one process owns it). On a store
    /// that is not shared, a claim left by an earlier process is lapsed as soon as a new one
    /// starts: recovery need not wait for its lease to run out.
    fn shared(&self) -> bool;

    /// Whether the engine reads the owner's count ([`RecordStore::count`](super::RecordStore::count))
    /// before each creation, to refuse one at the retention limit without a write: yes by
    /// default. A store whose count is a round trip to a server and whose insert checks the
    /// limit itself, atomically, answers no (PostgreSQL: the check is inside its creation's
    /// one call), and a creation over the limit is refused by its insert.
    fn count_before_insert(&self) -> bool {
        true
    }

    /// Whether a plain call takes a running place in the store ([`ClaimStore::take_place`]) on
    /// a shared store, so that it counts toward the running limits of every node: yes by
    /// default. A store answers no when a place per call would cost more than the call
    /// (SQLite: two commits, each an fsync, per call): its plain calls count toward the
    /// limits of their own process only, its tasks toward every process's.
    fn places_for_calls(&self) -> bool {
        true
    }

    /// How often a node's rescuer looks for lapsed claims, with claims that hold for `lease`:
    /// every half lease by default. A store that knows at once when a node is gone (SQLite:
    /// its processes are on one machine) looks more often, so that a killed node's tasks are
    /// taken over promptly.
    fn rescue_every(&self, lease: std::time::Duration) -> std::time::Duration {
        lease / 2
    }

    /// Inserts `task` like [`RecordStore::insert`](super::RecordStore::insert), claimed by `lease` (its runner), if its
    /// owner keeps fewer than `max_retained` tasks in the store; the check and the insert
    /// are one atomic step, so of concurrent inserts from any number of handles no more are
    /// stored than the limit allows. An idempotency key that finds a retained task answers
    /// [`Inserted::Existing`] even when the owner is at the limit (it adds nothing).
    /// `origin`, where the task came from, is written with the new row (what
    /// [`ViewStore::set_origin`](super::ViewStore::set_origin) would write, without a second write).
    ///
    /// # Errors
    /// [`StoreError::Full`] if the owner is at the limit (nothing is written);
    /// [`StoreError::Duplicate`]; [`StoreError::Backend`].
    async fn insert_claimed(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
    ) -> Result<Inserted, StoreError>;

    /// [`ClaimStore::insert_claimed`] of a task whose work started before this insert
    /// ([`ToolRuntime::start_before_commit`](crate::ToolRuntime::start_before_commit)). When
    /// the insert runs, [`EarlyEnding::take`] gives the work's outcome if it ended first: the
    /// row written is then `task` with that update (its version one up), in the same
    /// commit, and its status history the same as if the two had been written one after the
    /// other; the events the work reported go into the task's log in that commit too, as
    /// [`WorkStore::append_events`](super::WorkStore::append_events) would have written them
    /// before. Returns the record written with the outcome in, if it was.
    ///
    /// The default inserts `task` alone, then declines the ending ([`EarlyEnding::decline`]):
    /// an outcome is then written on its own, as it would be without this method.
    ///
    /// # Errors
    /// As [`ClaimStore::insert_claimed`].
    async fn insert_claimed_early(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
        ending: Arc<dyn EarlyEnding>,
    ) -> Result<(Inserted, Option<Arc<TaskRecord>>), StoreError> {
        let inserted = self.insert_claimed(task, lease, max_retained, origin).await;
        ending.decline();
        Ok((inserted?, None))
    }

    /// [`ClaimStore::insert_claimed`] (or [`ClaimStore::insert_claimed_early`] with `ending`)
    /// of a task that takes its running place ([`ClaimStore::take_place`]) with it, as
    /// `placing` says: a store that can make both one atomic write does (SQLite: one
    /// transaction of its group commit, so a lifecycle stays one commit). The default takes
    /// the place first, then inserts; a place taken for a task that was not inserted is the
    /// caller's to give up, as after a [`ClaimStore::take_place`].
    ///
    /// # Errors
    /// [`StoreError::NoPlace`] if no place is free (nothing is written); otherwise as
    /// [`ClaimStore::insert_claimed`].
    async fn insert_placed(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
        placing: &Placing,
        ending: Option<Arc<dyn EarlyEnding>>,
    ) -> Result<(Inserted, Option<Arc<TaskRecord>>), StoreError> {
        let holder = PlaceHolder::Task(task.id.clone());
        match self.take_place(&holder, &task.owner, &placing.limits, &placing.lease, placing.now).await? {
            Place::Taken => {}
            refused => return Err(StoreError::NoPlace(refused)),
        }
        match ending {
            Some(ending) => self.insert_claimed_early(task, lease, max_retained, origin, ending).await,
            None => Ok((self.insert_claimed(task, lease, max_retained, origin).await?, None)),
        }
    }

    /// Takes unfinished task `id` over for `lease`, if its claim is absent or lapsed at `now`
    /// (its lease ends at or before `now`) and its attempt is still `attempt`: the claim
    /// becomes `lease`, the attempt is bumped (the fencing token: every write the previous
    /// runner makes carries the old attempt and is refused) and so is the version. Of racing
    /// claims exactly one gets the task. `None`: held by a live claim, finished, gone, or
    /// already taken at another attempt.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn claim(
        &self,
        id: &TaskId,
        attempt: u32,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError>;

    /// Extends to `lease.until` every claim of `lease.node` on an unfinished task that has not
    /// lapsed at `now`, and returns those tasks' ids (the heartbeat: one statement for all of
    /// a node's claims). A claim missing from the answer is lost: it lapsed, was taken over,
    /// or its task finished. Neither the version nor anything else of a task changes.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn renew(&self, lease: &Lease, now: Timestamp) -> Result<Vec<TaskId>, StoreError>;

    /// Unfinished tasks whose claim is absent or lapsed at `now`, oldest first (by creation
    /// time, then id), at most `limit`: what a rescuer takes over ([`ClaimStore::claim`]).
    /// Replaces "every unfinished task is mine" ([`RecordStore::unfinished`](super::RecordStore::unfinished)) at recovery.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn lapsed(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError>;

    /// Takes one of the `size` slots of `tool` (its `max_concurrent`, across every node on
    /// the store) for task `id`, held by `lease`: `true` if the task holds one now (already
    /// held, or one was free). A slot is free if no task holds it, or its holder's lease
    /// lapsed at `now`, or its holder finished. Atomic: of racing takers no more than `size`
    /// hold a slot. Renewed by [`ClaimStore::renew`] with the node's claims.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn take_slot(&self, tool: &str, size: u32, id: &TaskId, lease: &Lease, now: Timestamp) -> Result<bool, StoreError>;

    /// Gives up the slot of `tool` task `id` holds, if any.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn release_slot(&self, tool: &str, id: &TaskId) -> Result<(), StoreError>;

    // The running limits across nodes ([`Policy::max_running`](crate::Policy::max_running)
    // and `max_running_per_principal`): a place per running task or plain call, held by a
    // node's lease like a claim. The engine takes places only on a shared store; on one that
    // one process owns its own counters are exact.

    /// Takes a running place for `holder` (of `owner`, held by `lease`) if fewer than
    /// `limits.max_running` places are held in all and fewer than
    /// `limits.max_running_per_principal` by `owner`; a place is free if its lease lapsed at
    /// `now`, or it is held by a task that is finished. Atomic: of racing takers from any
    /// number of handles no more hold a place than the limits allow. A holder that holds a
    /// place already keeps it ([`Place::Taken`]). Renewed by [`ClaimStore::renew`] with the
    /// node's claims, except those of finished tasks.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn take_place(
        &self,
        holder: &PlaceHolder,
        owner: &Principal,
        limits: &RunningLimits,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Place, StoreError>;

    /// Gives up the running place of `holder`, if it holds one.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn release_place(&self, holder: &PlaceHolder) -> Result<(), StoreError>;
}

/// Who holds a running place ([`ClaimStore::take_place`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PlaceHolder {
    /// A task, from its creation until its work ends (or it is seen finished).
    Task(TaskId),
    /// A plain call while it runs, by a random id of its own.
    Call(String),
}

impl PlaceHolder {
    /// The holder's id as stored (a task id, or a plain call's id).
    pub fn as_str(&self) -> &str {
        match self {
            PlaceHolder::Task(id) => id.as_str(),
            PlaceHolder::Call(id) => id,
        }
    }

    /// Whether the holder is a task.
    pub fn is_task(&self) -> bool {
        matches!(self, PlaceHolder::Task(_))
    }
}

/// The running limits a [`ClaimStore::take_place`] checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunningLimits {
    /// Places held in all, by every owner on every node.
    pub max_running: u32,
    /// Places held by one owner.
    pub max_running_per_principal: u32,
}

/// The running place an [`insert_placed`](ClaimStore::insert_placed) takes for its task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placing {
    /// The limits it checks.
    pub limits: RunningLimits,
    /// The lease the place is held by.
    pub lease: Lease,
    /// When the place is taken (a held place whose lease lapsed by then is free).
    pub now: Timestamp,
}

/// What [`ClaimStore::take_place`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The holder holds a place now.
    Taken,
    /// Every place is held: `running` in all (nothing was written).
    Full {
        /// Places held in all.
        running: u64,
    },
    /// The owner holds `running` places, its limit (nothing was written).
    OwnerFull {
        /// Places the owner holds.
        running: u64,
    },
}

/// A node (one process incarnation: a replica or a worker) that runs tasks. A fresh random
/// id per process, so that a restarted process never mistakes its predecessor's claims for
/// its own.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(String);

impl NodeId {
    /// A fresh random node id.
    pub fn random() -> NodeId {
        NodeId(TaskId::random().to_string())
    }

    /// Wraps a stored node id.
    pub fn new(id: impl Into<String>) -> NodeId {
        NodeId(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A claim's lease: who runs a task, and until when the claim holds unless renewed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The node that runs the task.
    pub node: NodeId,
    /// The claim lapses at this time (a claim whose `until` is at or before `now` has lapsed).
    pub until: Timestamp,
}
