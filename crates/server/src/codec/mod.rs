//! One codec per protocol era: engine records ↔ wire messages, with that era's rules.

pub(crate) mod legacy;
