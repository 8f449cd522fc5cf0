//! Integration tests of `mcp-tasks-testkit-server`: the test server and peer against a real
//! server on the memory store (`server`).

mod server;
