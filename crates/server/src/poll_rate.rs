//! The polling rate limit: a token bucket per principal over the task reads a client polls
//! (`tasks/get`, `tasks/list`, in both eras). Polling faster than the suggested
//! `pollInterval` is answered as usual; only a principal that goes beyond `rate` reads per
//! second for longer than `burst` reads allow is refused, with [`LIMIT_EXCEEDED`] and
//! `data: {"limit": "poll_rate", "rate": …, "burst": …, "retryAfterMs": …}`. The refusal
//! changes nothing; the client waits `retryAfterMs` and asks again.
//!
//! A client that polls as told is never refused, however many tasks it runs: a read of a task
//! at least half a `pollInterval` after the principal's previous read of it (or its creation
//! here) is *paced*, and takes nothing from the bucket; faster reads, unknown ids and
//! `tasks/list` spend it.
//!
//! The code is the one of every other limit of the server (`-32010`, "refused by a limit,
//! nothing was done, try again later"), so a client that already backs off on it needs no
//! new case; `data.limit` says which limit it was.

use std::collections::HashMap;
use std::hash::{BuildHasher as _, RandomState};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use mcp_tasks_engine::Principal;
use mcp_tasks_protocol::jsonrpc::RpcError;
use serde_json::json;

use crate::errors::LIMIT_EXCEEDED;

/// Buckets kept before idle (full) ones are dropped: the map stays bounded even when many
/// principals poll once.
const PRUNE_ABOVE: usize = 1024;

/// The polling rate of one principal: `rate` reads per second on average, `burst` at once.
/// A `rate` of 0 turns the limit off.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PollRate {
    /// Reads per second, on average (0: no limit).
    pub rate: u32,
    /// Reads allowed at once, after a pause (at least 1 when `rate` is on).
    pub burst: u32,
}

impl PollRate {
    /// No limit.
    pub const OFF: PollRate = PollRate { rate: 0, burst: 0 };
}

/// Paced reads remembered at most: past this, new tasks' reads spend the bucket (the map
/// never grows without bound, whatever a client does).
const MOST_PACED: usize = 1 << 20;

/// The buckets of every principal that polled, and when each task was last read.
pub(crate) struct PollLimiter {
    rate: PollRate,
    /// The shortest gap between two reads of one task that is paced: half the `pollInterval`
    /// the server gives (a client starts its pause when an answer arrives, so half leaves
    /// room for any jitter).
    pace: Duration,
    buckets: Mutex<HashMap<Principal, Bucket>>,
    paced: Mutex<Paced>,
}

/// When each (principal, task) was last read or made, keyed by a keyed hash of the pair (a
/// collision, which nobody can aim at, only lets one more read through unpaced-checked).
#[derive(Default)]
struct Paced {
    hasher: RandomState,
    last: HashMap<u64, Instant>,
    /// The size past which stale entries are dropped next (doubling, so that dropping costs
    /// O(1) per read, amortized).
    prune_at: usize,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

impl PollLimiter {
    /// A limiter of `rate`, for a server that gives clients `poll_interval`.
    pub(crate) fn new(rate: PollRate, poll_interval: Duration) -> PollLimiter {
        PollLimiter {
            rate,
            pace: poll_interval / 2,
            buckets: Mutex::new(HashMap::new()),
            paced: Mutex::new(Paced { prune_at: PRUNE_ABOVE, ..Paced::default() }),
        }
    }

    /// Serves a read of `task` (none for `tasks/list`) if it is paced, else takes one read
    /// from `principal`'s bucket, or says how long to wait for one.
    ///
    /// # Errors
    /// [`LIMIT_EXCEEDED`] with `data.limit` `poll_rate` and `data.retryAfterMs`.
    pub(crate) fn check(&self, principal: &Principal, method: &str, task: Option<&str>) -> Result<(), RpcError> {
        if self.rate.rate == 0 {
            return Ok(());
        }
        let now = Instant::now();
        if let Some(task) = task
            && self.paced_read(principal, task, now)
        {
            return Ok(());
        }
        self.take(principal, now).map_err(|wait| self.refusal(method, wait))
    }

    /// Notes that `principal` made `task` here: its first read at the pace is paced.
    pub(crate) fn created(&self, principal: &Principal, task: &str) {
        if self.rate.rate != 0 {
            self.note(principal, task, Instant::now());
        }
    }

    /// Whether a read of `task` at `now` is paced; the read is noted either way.
    fn paced_read(&self, principal: &Principal, task: &str, now: Instant) -> bool {
        let previous = self.note(principal, task, now);
        previous.is_some_and(|at| now.saturating_duration_since(at) >= self.pace)
    }

    /// Notes a read (or the creation) of `task` at `now`; when the one before was.
    fn note(&self, principal: &Principal, task: &str, now: Instant) -> Option<Instant> {
        let mut paced = self.paced.lock().unwrap_or_else(PoisonError::into_inner);
        let key = paced.hasher.hash_one((principal, task));
        if paced.last.len() >= paced.prune_at {
            // Entries older than a few intervals belong to tasks nobody polls any more.
            let stale = (self.pace * 8).max(Duration::from_secs(60));
            paced.last.retain(|_, at| now.saturating_duration_since(*at) < stale);
            paced.prune_at = (paced.last.len() * 2).max(PRUNE_ABOVE);
        }
        if paced.last.len() >= MOST_PACED {
            return paced.last.get(&key).copied();
        }
        paced.last.insert(key, now)
    }

    /// One read at `now`; `Err(wait)` until the next token.
    fn take(&self, principal: &Principal, now: Instant) -> Result<(), Duration> {
        let PollRate { rate, burst } = self.rate;
        if rate == 0 {
            return Ok(());
        }
        let (rate, burst) = (f64::from(rate), f64::from(burst.max(1)));
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() > PRUNE_ABOVE {
            let refill = Duration::from_secs_f64(burst / rate);
            buckets.retain(|_, bucket| now.saturating_duration_since(bucket.at) < refill);
        }
        let bucket = buckets.entry(principal.clone()).or_insert(Bucket { tokens: burst, at: now });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * rate).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / rate))
        }
    }

    fn refusal(&self, method: &str, wait: Duration) -> RpcError {
        let PollRate { rate, burst } = self.rate;
        // Rounded up, so that a client that waits exactly this long finds a token.
        let retry_after = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).saturating_add(1);
        RpcError::new(
            LIMIT_EXCEEDED,
            format!(
                "Polling too fast: this server answers at most {rate} task reads per second per principal \
                 (poll_rate, bursts of {burst}); {method} was not served. Wait {retry_after} ms (data.retryAfterMs) \
                 and poll at the task's pollInterval."
            ),
        )
        .with_data(json!({"limit": "poll_rate", "rate": rate, "burst": burst, "retryAfterMs": retry_after}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_served_then_reads_come_at_the_rate_and_principals_have_their_own_buckets() {
        let limiter = PollLimiter::new(PollRate { rate: 10, burst: 3 }, Duration::from_secs(1));
        let (alice, bob) = (Principal::new("alice"), Principal::new("bob"));
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.take(&alice, start), Ok(()));
        }
        let wait = limiter.take(&alice, start).unwrap_err();
        assert!(wait > Duration::from_millis(90) && wait <= Duration::from_millis(100), "{wait:?}");
        assert_eq!(limiter.take(&bob, start), Ok(()), "another principal is not slowed");
        assert_eq!(limiter.take(&alice, start + Duration::from_millis(100)), Ok(()), "one token per 100 ms");
        assert!(limiter.take(&alice, start + Duration::from_millis(150)).is_err());
    }

    #[test]
    fn rate_zero_is_off_and_the_refusal_says_how_long_to_wait() {
        let off = PollLimiter::new(PollRate::OFF, Duration::from_secs(1));
        let anyone = Principal::new("p");
        assert!((0..10_000).all(|_| off.take(&anyone, Instant::now()).is_ok()));
        let on = PollLimiter::new(PollRate { rate: 1, burst: 1 }, Duration::from_secs(1));
        on.check(&anyone, "tasks/get", None).unwrap();
        let error = on.check(&anyone, "tasks/get", None).unwrap_err();
        assert_eq!(error.code, LIMIT_EXCEEDED);
        let data = error.data.unwrap();
        assert_eq!((data["limit"].clone(), data["rate"].clone(), data["burst"].clone()), (json!("poll_rate"), json!(1), json!(1)));
        assert!(data["retryAfterMs"].as_u64().is_some_and(|ms| ms > 900 && ms <= 1001), "{data}");
        assert!(error.message.starts_with("Polling too fast"), "{}", error.message);
    }

    #[test]
    fn reads_of_each_task_at_half_its_interval_are_paced_faster_ones_spend_the_bucket_and_the_map_stays_bounded() {
        let limiter = PollLimiter::new(PollRate { rate: 2, burst: 2 }, Duration::from_millis(250));
        let (alice, start) = (Principal::new("alice"), Instant::now());
        let tasks: Vec<String> = (0..60).map(|n| format!("task-{n}")).collect();
        tasks.iter().for_each(|task| limiter.created(&alice, task));
        // Sixty tasks, each read every 250 ms for 10 s: 2,400 reads at a rate of 2 per second.
        for round in 1..=40 {
            let now = start + Duration::from_millis(250 * round);
            assert!(tasks.iter().all(|task| limiter.paced_read(&alice, task, now)), "round {round}");
        }
        // One task read twice at once: the second read spends the bucket (2), then is refused.
        let later = start + Duration::from_secs(11);
        assert!(limiter.paced_read(&alice, &tasks[0], later) && !limiter.paced_read(&alice, &tasks[0], later));
        assert!(limiter.take(&alice, later).is_ok() && limiter.take(&alice, later).is_ok() && limiter.take(&alice, later).is_err());
        assert!(!limiter.paced_read(&Principal::new("bob"), &tasks[1], later), "another principal's reads are its own");
        // Tasks nobody polls any more are dropped as the map grows.
        (0..5_000).for_each(|n| _ = limiter.note(&alice, &format!("new-{n}"), later + Duration::from_secs(120)));
        assert!(limiter.paced.lock().unwrap().last.len() <= 5_000 + PRUNE_ABOVE);
    }
}
