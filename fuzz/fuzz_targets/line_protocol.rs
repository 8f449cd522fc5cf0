//! Fuzz target `line_protocol`: see `mcp_tasks_fuzzing::line_protocol`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_tasks_fuzzing::line_protocol(data));
