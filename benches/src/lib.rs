//! Benchmarks of mcp-tasks (issue 7): the bench server ([`server`]: our real server with two
//! tools defined in code, `noop` and `sleep`, over Streamable HTTP on the durable SQLite
//! store) and the load harness ([`load`]: task lifecycles from concurrent MCP sessions over
//! keep-alive HTTP, every result checked, with throughput, latency percentiles and the
//! server's RSS).
//!
//! Binaries: `examples/bench_server.rs` serves [`server`]; `src/bin/load.rs` runs [`load`];
//! `benches/run.sh` runs both against our server and the TypeScript SDK peer and prints the
//! ratios (see `BENCHMARKS.md`).

pub mod load;
pub mod server;
