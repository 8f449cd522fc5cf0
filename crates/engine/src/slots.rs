//! [`Slots`]: a tool's `max_concurrent` limit, a counting gate that lets waiting calls in
//! strictly in the order they asked.
//!
//! Tokio's `Semaphore` is fair too, but a waiter joins its queue only when the `acquire`
//! future is first polled, and the engine starts each task's work on a spawned Tokio task,
//! which runs in no particular order. Here [`Slots::enter`] is synchronous: the queue order
//! is the order of the calls to it, that is the order in which tasks were started.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

/// At most `size` holders at once; more wait in a first-in, first-out queue.
pub(crate) struct Slots {
    size: u32,
    /// A std mutex: the critical sections are a counter update and a queue push or pop;
    /// nothing is awaited or sent while it is held.
    state: Mutex<State>,
}

struct State {
    /// Slots held, by [`Permit`]s alive or on their way to a waiter.
    busy: u32,
    /// Waiters, oldest first. A waiter that gave up has dropped its receiver.
    queue: VecDeque<oneshot::Sender<Permit>>,
}

/// The result of [`Slots::enter`].
pub(crate) enum Entry {
    /// A slot was free; it is held until the permit is dropped.
    Admitted(Permit),
    /// Every slot is busy; the permit arrives here when it is this waiter's turn.
    /// Dropping the receiver gives up the place in the queue (and a permit already on its
    /// way goes to the next waiter).
    Queued(oneshot::Receiver<Permit>),
}

/// One slot, held until dropped; then it goes to the oldest waiter, if any.
pub(crate) struct Permit {
    /// `None` once defused: a permit that no waiter took is not handed over again.
    slots: Option<Arc<Slots>>,
}

impl Slots {
    /// A gate of `size` slots (at least one: a limit of zero would queue calls forever).
    pub(crate) fn new(size: u32) -> Arc<Slots> {
        Arc::new(Slots { size: size.max(1), state: Mutex::new(State { busy: 0, queue: VecDeque::new() }) })
    }

    /// How many slots there are.
    pub(crate) fn size(&self) -> u32 {
        self.size
    }

    /// Takes a free slot now, or joins the end of the queue.
    pub(crate) fn enter(self: &Arc<Self>) -> Entry {
        let mut state = self.state();
        if state.busy < self.size {
            state.busy += 1;
            return Entry::Admitted(Permit { slots: Some(Arc::clone(self)) });
        }
        let (tx, rx) = oneshot::channel();
        state.queue.push_back(tx);
        Entry::Queued(rx)
    }

    /// Passes a freed slot to the oldest waiter still waiting, or frees it. The permit is
    /// sent with the lock released, so a permit dropped by a waiter that just gave up can
    /// come back here without deadlock.
    fn hand_over(self: &Arc<Self>) {
        loop {
            let waiter = {
                let mut state = self.state();
                match state.queue.pop_front() {
                    Some(waiter) => waiter,
                    // Freed under the same lock that found the queue empty, so no waiter
                    // can queue in between and be left behind with a slot free.
                    None => {
                        state.busy -= 1;
                        return;
                    }
                }
            };
            match waiter.send(Permit { slots: Some(Arc::clone(self)) }) {
                Ok(()) => return,
                Err(mut unwanted) => unwanted.slots = None,
            }
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.take() {
            slots.hand_over();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admitted(entry: Entry) -> Permit {
        match entry {
            Entry::Admitted(permit) => permit,
            Entry::Queued(_) => panic!("expected a free slot"),
        }
    }

    fn queued(entry: Entry) -> oneshot::Receiver<Permit> {
        match entry {
            Entry::Queued(rx) => rx,
            Entry::Admitted(_) => panic!("expected to wait"),
        }
    }

    #[test]
    fn waiters_get_freed_slots_in_the_order_they_queued() {
        let slots = Slots::new(2);
        let first = admitted(slots.enter());
        let second = admitted(slots.enter());
        let mut third = queued(slots.enter());
        let mut fourth = queued(slots.enter());
        drop(second);
        let third_permit = third.try_recv().expect("the oldest waiter gets the slot");
        assert!(fourth.try_recv().is_err(), "the next waiter still waits");
        drop(first);
        let fourth_permit = fourth.try_recv().expect("then the next one");
        drop((third_permit, fourth_permit));
        // Everything is free again.
        let _a = admitted(slots.enter());
        let _b = admitted(slots.enter());
    }

    #[test]
    fn a_waiter_that_gave_up_is_skipped() {
        let slots = Slots::new(1);
        let holder = admitted(slots.enter());
        let gave_up = queued(slots.enter());
        let mut next = queued(slots.enter());
        drop(gave_up);
        drop(holder);
        let permit = next.try_recv().expect("the slot skips the waiter that left");
        drop(permit);
        let _again = admitted(slots.enter());
    }

    #[test]
    fn a_permit_sent_to_a_waiter_that_then_leaves_goes_to_the_next() {
        let slots = Slots::new(1);
        let holder = admitted(slots.enter());
        let leaving = queued(slots.enter());
        let mut next = queued(slots.enter());
        drop(holder); // the permit is now in `leaving`'s channel
        drop(leaving); // dropped unread: it is handed on
        let permit = next.try_recv().expect("handed on");
        drop(permit);
        let _again = admitted(slots.enter());
    }

    #[test]
    fn a_size_of_zero_still_admits_one_call() {
        let slots = Slots::new(0);
        assert_eq!(slots.size(), 1);
        let _one = admitted(slots.enter());
        let _waits = queued(slots.enter());
    }
}
