//! Hash maps for the request path: [`FastMap`] and [`FastSet`], std's `HashMap` and `HashSet`
//! with foldhash in place of SipHash.
//!
//! Every lifecycle looks task ids (44-character strings) up in a dozen maps (the published
//! versions, the watchers, the running work, the store's cache, the metrics' live tasks), and
//! SipHash over those keys was about 5 % of a lifecycle's instructions (`benches/profile.sh`).
//! foldhash is several times faster on short strings and still seeded per process, so keys
//! cannot be chosen to collide without knowing the seed; the keys here are ids the server made
//! or principals it authenticated, and what a client names (a request id) is bounded per
//! connection.

use std::collections::{HashMap, HashSet};

/// A `HashMap` hashed with foldhash (seeded once per process). Build one with
/// `FastMap::default()`.
pub type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A `HashSet` hashed with foldhash (seeded once per process). Build one with
/// `FastSet::default()`.
pub type FastSet<K> = HashSet<K, foldhash::fast::RandomState>;
