//! The shared store suite (to be written).
