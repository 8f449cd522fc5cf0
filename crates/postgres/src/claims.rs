//! [`ClaimStore`] for [`PostgresStore`]: claims with a lease across replicas, the claimed
//! insert under a row lock of the owner's count (the retention limit), a tool's slots and
//! the running places (`mcp_tasks_take_place`); a creation with its owner's slot in one
//! statement that waits for no other creation (`insert_placed`, [`sql::CREATE`]), sent with the
//! creations made at once in one statement ([`sql::CREATE_GROUP`], [`crate::group`]).

use std::sync::Arc;

use async_trait::async_trait;
use crate::conn::Session;
use tokio_postgres::types::ToSql;

use mcp_tasks_engine::store::implement::EarlyEnding;
use mcp_tasks_engine::{
    ClaimStore, Inserted, Lease, Origin, Place, PlaceHolder, Placing, Principal, RunningLimits, StoreError, TaskId,
    TaskRecord, Timestamp,
};

use crate::outage::backend;
use crate::conn::Conn;
use crate::group::{self, Group, Kind};
use crate::rows::{self, InsertColumns, InsertValues, insert_keyed, key_holder};
use crate::sql;
use crate::store::PostgresStore;

#[async_trait]
impl ClaimStore for PostgresStore {
    fn shared(&self) -> bool {
        true
    }

    /// The count is a round trip, and both inserts check the limit themselves.
    fn count_before_insert(&self) -> bool {
        false
    }

    async fn insert_claimed(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
    ) -> Result<Inserted, StoreError> {
        let inserted = self.observed(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(backend)?;
            // The owner's count row, locked until commit: the check and the insert are atomic
            // against every replica's inserts for this owner.
            let lock = tx
                .prepare_cached(sql::LOCK_COUNT)
                .await
                .map_err(backend)?;
            let retained: i64 = tx
                .query_one(&lock, &[&task.owner.as_str()])
                .await
                .and_then(|row| row.try_get(0))
                .map_err(backend)?;
            let retained = u64::try_from(retained).unwrap_or(0);
            if retained >= max_retained {
                return at_the_limit(&tx, task, retained).await;
            }
            // The claim and the origin go in with the row: one round trip, not three.
            let inserted = insert_keyed(&tx, task, Some(lease), origin, self.recording()).await?;
            tx.commit().await.map_err(backend)?;
            Ok(inserted)
        })
        .await;
        if let Ok(Inserted::New) = &inserted {
            self.announce(&task.id, Some(task)).await;
        }
        inserted
    }

    /// The whole creation in one statement ([`PostgresStore::place_and_insert`]). The
    /// ending of early work is not written with it: it is declined, and written on its own.
    async fn insert_placed(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
        placing: &Placing,
        ending: Option<Arc<dyn EarlyEnding>>,
    ) -> Result<(Inserted, Option<Arc<TaskRecord>>), StoreError> {
        let placed = self.place_and_insert(task, lease, max_retained, origin, placing).await;
        if let Some(ending) = ending {
            ending.decline();
        }
        placed.map(|inserted| (inserted, None))
    }

    async fn claim(
        &self,
        id: &TaskId,
        attempt: u32,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let taken = self.observed(async {
            self.query_opt(
                sql::CLAIM,
                &[
                    &lease.node.as_str(),
                    &lease.until.0,
                    &id.as_str(),
                    &i64::from(attempt),
                    &now.0,
                ],
            )
            .await
        })
        .await;
        if let Ok(Some(taken)) = &taken {
            self.announce(id, Some(taken)).await;
        }
        taken
    }

    async fn renew(&self, lease: &Lease, now: Timestamp) -> Result<Vec<TaskId>, StoreError> {
        self.observed(async {
            let client = self.client().await?;
            let statement = client
                .prepare_cached(sql::RENEW)
                .await
                .map_err(backend)?;
            let rows = client
                .query(&statement, &[&lease.until.0, &lease.node.as_str(), &now.0])
                .await
                .map_err(backend)?;
            let slots = client.prepare_cached(sql::RENEW_SLOTS).await.map_err(backend)?;
            client
                .execute(&slots, &[&lease.until.0, &lease.node.as_str(), &now.0])
                .await
                .map_err(backend)?;
            let places = client.prepare_cached(sql::RENEW_PLACES).await.map_err(backend)?;
            client
                .execute(&places, &[&lease.until.0, &lease.node.as_str(), &now.0])
                .await
                .map_err(backend)?;
            rows.iter()
                .map(|row| {
                    row.try_get::<_, String>(0)
                        .map(TaskId::from)
                        .map_err(backend)
                })
                .collect()
        })
        .await
    }

    async fn lapsed(&self, now: Timestamp, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        self.query(sql::LAPSED, &[&now.0, &i64::from(limit)]).await
    }

    async fn take_slot(&self, tool: &str, size: u32, id: &TaskId, lease: &Lease, now: Timestamp) -> Result<bool, StoreError> {
        self.observed(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(backend)?;
            let lock = tx.prepare_cached(sql::LOCK_SLOTS).await.map_err(backend)?;
            tx.execute(&lock, &[&tool]).await.map_err(backend)?;
            let free = tx.prepare_cached(sql::FREE_SLOTS).await.map_err(backend)?;
            tx.execute(&free, &[&tool, &now.0]).await.map_err(backend)?;
            let count = tx.prepare_cached(sql::COUNT_SLOTS).await.map_err(backend)?;
            let row = tx.query_one(&count, &[&tool, &id.as_str()]).await.map_err(backend)?;
            let (held, mine): (i64, i64) =
                (row.try_get(0).map_err(backend)?, row.try_get(1).map_err(backend)?);
            let taken = if mine > 0 {
                true
            } else if held >= i64::from(size) {
                false
            } else {
                let take = tx.prepare_cached(sql::TAKE_SLOT).await.map_err(backend)?;
                tx.execute(&take, &[&tool, &id.as_str(), &lease.node.as_str(), &lease.until.0])
                    .await
                    .map_err(backend)?;
                true
            };
            tx.commit().await.map_err(backend)?;
            Ok(taken)
        })
        .await
    }

    async fn take_place(
        &self,
        holder: &PlaceHolder,
        owner: &Principal,
        limits: &RunningLimits,
        lease: &Lease,
        now: Timestamp,
    ) -> Result<Place, StoreError> {
        self.observed(async {
            let client = self.client().await?;
            let take = client.prepare_cached(sql::TAKE_PLACE).await.map_err(backend)?;
            let limit = |limit: u32| i64::from(limit);
            let row = client
                .query_one(
                    &take,
                    &[
                        &holder.as_str(),
                        &holder.is_task(),
                        &owner.as_str(),
                        &lease.node.as_str(),
                        &lease.until.0,
                        &now.0,
                        &limit(limits.max_running),
                        &limit(limits.max_running_per_principal),
                    ],
                )
                .await
                .map_err(backend)?;
            let outcome: String = row.try_get(0).map_err(backend)?;
            let running = row.try_get::<_, i64>(1).map(|count| count.max(0).unsigned_abs()).map_err(backend)?;
            match outcome.as_str() {
                "taken" => Ok(Place::Taken),
                "full" => Ok(Place::Full { running }),
                "owner_full" => Ok(Place::OwnerFull { running }),
                other => Err(StoreError::Backend(format!("mcp_tasks_take_place answered {other:?}").into())),
            }
        })
        .await
    }

    async fn release_place(&self, holder: &PlaceHolder) -> Result<(), StoreError> {
        self.execute(sql::RELEASE_PLACE, &[&holder.as_str()]).await.map(|_| ())
    }

    async fn release_slot(&self, tool: &str, id: &TaskId) -> Result<(), StoreError> {
        self.execute(sql::RELEASE_SLOT, &[&tool, &id.as_str()]).await.map(|_| ())
    }
}

/// How many times a placed creation that found no slot free makes its owner's slots and tries
/// again, while its owner runs fewer tasks than its limit.
const SLOT_ROUNDS: usize = 8;

/// The limits of a placed creation, as the statement binds them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    retained: i64,
    running: i64,
    mine: i64,
}

impl Limits {
    fn new(max_retained: u64, placing: &Placing) -> Limits {
        Limits {
            retained: i64::try_from(max_retained).unwrap_or(i64::MAX),
            running: i64::from(placing.limits.max_running),
            mine: i64::from(placing.limits.max_running_per_principal),
        }
    }
}

/// What [`sql::CREATE`] answered.
pub(crate) struct Created {
    inserted: bool,
    retained: i64,
    running: i64,
    slot_free: bool,
}

impl Created {
    /// Whether the counts left room, whatever the owner's slots.
    fn room(&self, limits: &Limits) -> bool {
        self.retained < limits.retained && self.running < limits.running
    }
}

impl PostgresStore {
    /// The creation of [`ClaimStore::insert_placed`], its place with it: in one statement
    /// ([`sql::CREATE`]): no lock waited for, no place row for the task (it holds its owner's
    /// slot while unfinished), one round trip and the announcement. With no slot free, the
    /// owner's slots are made or mended ([`sql::MAKE_SLOTS`]) and the creation tried again
    /// (up to [`SLOT_ROUNDS`] times, while the owner runs fewer than its limit). A keyed creation whose key is taken goes the way of
    /// [`ClaimStore::insert_claimed`], which settles the key.
    async fn place_and_insert(
        &self,
        task: &TaskRecord,
        lease: &Lease,
        max_retained: u64,
        origin: Option<&Origin>,
        placing: &Placing,
    ) -> Result<Inserted, StoreError> {
        // Checked before it is queued: a row that cannot be encoded fails alone.
        InsertValues::new(task, Some(lease), origin, false)?;
        let limits = Limits::new(max_retained, placing);
        let create = || Create { task: task.clone(), lease: lease.clone(), origin: origin.cloned(), limits, now: placing.now };
        let mut created = group::write::<Creations>(self, create()).await?;
        // No slot was free: the owner's slots are made (16 more at a time) and the creation
        // tried again, while the owner runs fewer than its limit. A group of its creations may
        // need more slots than one round makes.
        let owner = task.owner.as_str();
        let running_params: [&(dyn ToSql + Sync); 2] = [&owner, &placing.now.0];
        let running_of = || self.query_scalar(sql::RUNNING_OF, &running_params);
        // The owner's running count, when a round read it at the limit.
        let mut at_limit = None;
        for round in 0..SLOT_ROUNDS {
            if created.inserted || created.slot_free || !created.room(&limits) {
                break;
            }
            if round > 0 {
                let mine = running_of().await?;
                if mine >= limits.mine {
                    at_limit = Some(mine);
                    break;
                }
            }
            self.execute(sql::MAKE_SLOTS, &[&owner, &limits.mine]).await?;
            created = group::write::<Creations>(self, create()).await?;
        }
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        if created.inserted {
            self.announce(&task.id, Some(task)).await;
            return Ok(Inserted::New);
        }
        if created.retained >= limits.retained {
            return at_the_limit(&self.client().await?, task, count(created.retained)).await;
        }
        if created.running >= limits.running {
            return Err(StoreError::NoPlace(Place::Full { running: count(created.running) }));
        }
        if !created.slot_free {
            // Slots that creations in flight are taking count as taken: their tasks are about
            // to run, though not yet counted.
            let mine = match at_limit {
                Some(mine) => mine,
                None => running_of().await?,
            };
            return Err(StoreError::NoPlace(Place::OwnerFull { running: count(mine.max(limits.mine)) }));
        }
        // Room for it, and no row: its key is taken.
        self.insert_claimed(task, lease, max_retained, origin).await
    }

}

/// The answer to a creation of `task` whose owner keeps `retained` tasks, its limit: a retry
/// of a retained keyed task adds nothing, so that task is the answer even at the limit;
/// anything else is refused.
async fn at_the_limit(client: &impl Session, task: &TaskRecord, retained: u64) -> Result<Inserted, StoreError> {
    if let Some(key) = &task.idempotency_key
        && let Some(existing) = key_holder(client, task.owner.as_str(), key.as_str()).await?
        && existing.retained_at(task.created_at)
    {
        return Ok(Inserted::Existing(existing));
    }
    Err(StoreError::Full { owner: task.owner.clone(), retained })
}

/// A creation of `insert_placed`, owning what it writes, queued for its group.
pub(crate) struct Create {
    task: TaskRecord,
    lease: Lease,
    origin: Option<Origin>,
    limits: Limits,
    now: Timestamp,
}

impl Create {
    fn values(&self, recording: bool) -> Result<InsertValues<'_>, StoreError> {
        InsertValues::new(&self.task, Some(&self.lease), self.origin.as_ref(), recording)
    }
}

/// `insert_placed`'s statement in groups ([`crate::group`]): [`sql::CREATE`] alone,
/// [`sql::CREATE_GROUP`] for creations with the same limits.
pub(crate) struct Creations;

#[async_trait]
impl Kind for Creations {
    type Item = Create;
    type Answer = Created;

    fn group(store: &PostgresStore) -> &Group<Creations> {
        &store.groups.creations
    }

    fn apart(item: &Create, other: &Create) -> bool {
        item.limits != other.limits || item.task.id == other.task.id
    }

    async fn one(store: &PostgresStore, client: &Conn, item: &Create) -> Result<Created, StoreError> {
        let recording = store.recording();
        let values = item.values(recording)?;
        let create = client.prepare_cached(if recording { sql::CREATE_RECORDING } else { sql::CREATE }).await.map_err(backend)?;
        let limits = &item.limits;
        let mut params: Vec<&(dyn ToSql + Sync)> = values.params().to_vec();
        params.extend([&item.now.0 as &(dyn ToSql + Sync), &limits.retained, &limits.running, &limits.mine]);
        if recording {
            params.push(values.event());
        }
        let answer = client.query_one(&create, &params).await.map_err(|err| {
            if rows::is_duplicate_id(&err) { StoreError::Duplicate(item.task.id.clone()) } else { backend(err) }
        })?;
        Created::read(&answer)
    }

    async fn many(store: &PostgresStore, client: &Conn, items: &[&Create]) -> Result<Vec<Created>, StoreError> {
        let recording = store.recording();
        let values = items.iter().map(|item| item.values(recording)).collect::<Result<Vec<_>, _>>()?;
        let columns = InsertColumns::new(&values);
        // The group's writes share their limits (`apart`); the first's time stands for all.
        let Some(first) = items.first() else { return Ok(Vec::new()) };
        let limits = &first.limits;
        let mut params: Vec<&(dyn ToSql + Sync)> = columns.params().to_vec();
        params.extend([&first.now.0 as &(dyn ToSql + Sync), &limits.retained, &limits.running, &limits.mine]);
        if recording {
            params.push(columns.events());
        }
        let statement = client
            .prepare_cached(if recording { sql::CREATE_GROUP_RECORDING } else { sql::CREATE_GROUP })
            .await
            .map_err(backend)?;
        let rows = client.query(&statement, &params).await.map_err(backend)?;
        rows.iter().map(Created::read).collect()
    }
}

impl Created {
    /// The answer of [`sql::CREATE`], or a row of [`sql::CREATE_GROUP`]'s.
    fn read(row: &tokio_postgres::Row) -> Result<Created, StoreError> {
        Ok(Created {
            inserted: row.try_get(0).map_err(backend)?,
            retained: row.try_get(1).map_err(backend)?,
            running: row.try_get(2).map_err(backend)?,
            slot_free: row.try_get(3).map_err(backend)?,
        })
    }
}
