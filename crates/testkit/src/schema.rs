//! Schema validation (to be written).
