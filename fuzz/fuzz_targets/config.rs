//! Fuzz target `config`: see `mcp_tasks_fuzzing::config`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_tasks_fuzzing::config(data));
