//! Fuzz target `sse`: see `mcp_tasks_fuzzing::sse`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_tasks_fuzzing::sse(data));
