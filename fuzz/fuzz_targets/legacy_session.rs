//! Fuzz target `legacy_session`: see `mcp_tasks_fuzzing::legacy_session`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_tasks_fuzzing::legacy_session(data));
