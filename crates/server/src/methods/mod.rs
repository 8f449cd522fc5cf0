//! Method handlers, one module per family: `tools/*` and `tasks/*` (2025-11-25).

pub(crate) mod tasks;
pub(crate) mod tools;
