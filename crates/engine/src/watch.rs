//! Changes routed by task id ([`TaskWatch`]): a request waiting for one task, or a session
//! forwarding the changes of the tasks it created, hears only those tasks.
//!
//! The broadcast feed ([`Engine::subscribe`]) wakes every subscriber for every change, so
//! with `c` clients each waiting on its own task every change cost `c` wake-ups (and as
//! many cross-thread hand-offs), `c²` per round of lifecycles: the largest item of the
//! lifecycle profile in `docs/benchmarks/02-second-round.md`. Here a change costs one map
//! lookup and wakes only the watchers of its task. Tokio has no keyed channel, hence this
//! small registry.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use crate::engine::{Change, Engine};
use crate::fast::{FastMap, FastSet};
use crate::task::{TaskId, TaskRecord};

/// How many changes a watcher may hold unread before it is told it lagged.
const WATCH_CAPACITY: usize = 1024;

/// What [`TaskWatch::recv`] hands out.
#[derive(Clone, Debug)]
pub enum Watched {
    /// A change of a watched task, in the order they were published.
    Change(Change),
    /// Changes were dropped because the watcher did not read them in time: read the
    /// tasks again.
    Lagged,
}

/// The registry of watchers by task id, one per engine.
#[derive(Default)]
pub(crate) struct Hub {
    routes: Mutex<FastMap<TaskId, Vec<Arc<Watcher>>>>,
}

struct Watcher {
    state: Mutex<Queue>,
    woken: Notify,
}

#[derive(Default)]
struct Queue {
    changes: VecDeque<Change>,
    lagged: bool,
    /// The ids this watcher is registered under (so that dropping it unregisters them).
    ids: FastSet<TaskId>,
}

impl Watcher {
    fn state(&self) -> MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, change: &Change) {
        {
            let mut queue = self.state();
            if queue.changes.len() >= WATCH_CAPACITY {
                queue.changes.clear();
                queue.lagged = true;
            } else {
                queue.changes.push_back(change.clone());
            }
        }
        self.woken.notify_one();
    }
}

impl Hub {
    fn routes(&self) -> MutexGuard<'_, FastMap<TaskId, Vec<Arc<Watcher>>>> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `change` to the watchers of its task. A terminal task changes no more, so its
    /// watchers are unregistered from it once they have its last change.
    pub(crate) fn route(&self, change: &Change) {
        let (id, last) = match change {
            Change::Task(record) => (&record.id, record.status().is_terminal()),
            Change::Progress { id, .. } => (id, false),
        };
        let mut routes = self.routes();
        if last {
            let Some(watchers) = routes.remove(id) else { return };
            drop(routes);
            for watcher in watchers {
                watcher.push(change);
                watcher.state().ids.remove(id);
            }
        } else if let Some(watchers) = routes.get(id) {
            for watcher in watchers {
                watcher.push(change);
            }
        }
    }

    /// How many task ids have a watcher (for tests: routes do not outlive their watchers).
    pub(crate) fn watched_ids(&self) -> usize {
        self.routes().len()
    }
}

/// Hears the changes of the tasks it watches, and no others: made by [`Engine::watch_tasks`],
/// given ids by [`TaskWatch::add`]. Dropping it unregisters it.
///
/// A change published before [`TaskWatch::add`] returns is not heard: add first, then read
/// the task, then wait for changes (as with [`Engine::subscribe`]).
pub struct TaskWatch {
    hub: Arc<Hub>,
    watcher: Arc<Watcher>,
}

impl std::fmt::Debug for TaskWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskWatch").field("ids", &self.watcher.state().ids.len()).finish()
    }
}

impl TaskWatch {
    /// From now on, the changes of task `id` are heard (until it is terminal: its last
    /// change is heard, then the watch on it ends by itself).
    pub fn add(&self, id: &TaskId) {
        let mut routes = self.hub.routes();
        if !self.watcher.state().ids.insert(id.clone()) {
            return;
        }
        routes.entry(id.clone()).or_default().push(Arc::clone(&self.watcher));
    }

    /// The next change of a watched task, or [`Watched::Lagged`] if some were dropped.
    /// Waits until there is one; cancel-safe (nothing is lost when the future is dropped).
    pub async fn recv(&self) -> Watched {
        loop {
            let woken = self.watcher.woken.notified();
            {
                let mut queue = self.watcher.state();
                if queue.lagged {
                    queue.lagged = false;
                    return Watched::Lagged;
                }
                if let Some(change) = queue.changes.pop_front() {
                    return Watched::Change(change);
                }
            }
            woken.await;
        }
    }

    /// The next record of a watched task, its progress reports passed over; `None` if
    /// changes were dropped ([`Watched::Lagged`]: read the task again).
    pub async fn next_task(&self) -> Option<Arc<TaskRecord>> {
        loop {
            match self.recv().await {
                Watched::Change(Change::Task(record)) => return Some(record),
                Watched::Change(Change::Progress { .. }) => {}
                Watched::Lagged => return None,
            }
        }
    }
}

impl Drop for TaskWatch {
    fn drop(&mut self) {
        let ids = std::mem::take(&mut self.watcher.state().ids);
        if ids.is_empty() {
            return;
        }
        let mut routes = self.hub.routes();
        for id in ids {
            if let Some(watchers) = routes.get_mut(&id) {
                watchers.retain(|watcher| !Arc::ptr_eq(watcher, &self.watcher));
                if watchers.is_empty() {
                    routes.remove(&id);
                }
            }
        }
    }
}

impl Engine {
    /// A watcher of no task yet: give it ids with [`TaskWatch::add`]. Cheaper than
    /// [`Engine::subscribe`] for waiting on a few tasks: it is woken only by their changes.
    pub fn watch_tasks(&self) -> TaskWatch {
        TaskWatch {
            hub: Arc::clone(&self.inner.hub),
            watcher: Arc::new(Watcher { state: Mutex::new(Queue::default()), woken: Notify::new() }),
        }
    }

    /// A watcher of task `id` alone.
    pub fn watch_task(&self, id: &TaskId) -> TaskWatch {
        let watch = self.watch_tasks();
        watch.add(id);
        watch
    }
}
