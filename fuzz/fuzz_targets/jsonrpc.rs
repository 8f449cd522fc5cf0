//! Fuzz target `jsonrpc`: see `mcp_tasks_fuzzing::jsonrpc`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_tasks_fuzzing::jsonrpc(data));
