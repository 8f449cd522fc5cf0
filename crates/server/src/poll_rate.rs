//! The polling rate limit: a token bucket per principal over the task reads a client polls
//! (`tasks/get`, `tasks/list`, in both eras). Polling faster than the suggested
//! `pollInterval` is answered as usual; only a principal that goes beyond `rate` reads per
//! second for longer than `burst` reads allow is refused, with [`LIMIT_EXCEEDED`] and
//! `data: {"limit": "poll_rate", "rate": …, "burst": …, "retryAfterMs": …}`. The refusal
//! changes nothing; the client waits `retryAfterMs` and asks again.
//!
//! The code is the one of every other limit of the server (`-32010`, "refused by a limit,
//! nothing was done, try again later"), so a client that already backs off on it needs no
//! new case; `data.limit` says which limit it was.

use std::collections::HashMap;
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

/// The buckets of every principal that polled.
pub(crate) struct PollLimiter {
    rate: PollRate,
    buckets: Mutex<HashMap<Principal, Bucket>>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

impl PollLimiter {
    pub(crate) fn new(rate: PollRate) -> PollLimiter {
        PollLimiter { rate, buckets: Mutex::new(HashMap::new()) }
    }

    /// Takes one read from `principal`'s bucket, or says how long to wait for one.
    ///
    /// # Errors
    /// [`LIMIT_EXCEEDED`] with `data.limit` `poll_rate` and `data.retryAfterMs`.
    pub(crate) fn check(&self, principal: &Principal, method: &str) -> Result<(), RpcError> {
        self.take(principal, Instant::now()).map_err(|wait| self.refusal(method, wait))
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
        let limiter = PollLimiter::new(PollRate { rate: 10, burst: 3 });
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
        let off = PollLimiter::new(PollRate::OFF);
        let anyone = Principal::new("p");
        assert!((0..10_000).all(|_| off.take(&anyone, Instant::now()).is_ok()));
        let on = PollLimiter::new(PollRate { rate: 1, burst: 1 });
        on.check(&anyone, "tasks/get").unwrap();
        let error = on.check(&anyone, "tasks/get").unwrap_err();
        assert_eq!(error.code, LIMIT_EXCEEDED);
        let data = error.data.unwrap();
        assert_eq!((data["limit"].clone(), data["rate"].clone(), data["burst"].clone()), (json!("poll_rate"), json!(1), json!(1)));
        assert!(data["retryAfterMs"].as_u64().is_some_and(|ms| ms > 900 && ms <= 1001), "{data}");
        assert!(error.message.starts_with("Polling too fast"), "{}", error.message);
    }
}
