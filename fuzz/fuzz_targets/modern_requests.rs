//! Fuzz target `modern_requests`: see `mcp_tasks_fuzzing::modern_requests`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_tasks_fuzzing::modern_requests(data));
