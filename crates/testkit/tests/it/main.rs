//! Integration tests of `mcp-tasks-testkit`: the shared store suite against
//! [`MemoryStore`], so that the suite runs on a second store beside SQLite and stays
//! backend-neutral (the test server and peer are tested in `mcp-tasks-testkit-server`); and the
//! house rules of the whole workspace (`house`).

mod house;

use std::sync::Arc;

use mcp_tasks_testkit::MemoryStore;

mcp_tasks_testkit::store_suite!(async { Arc::new(MemoryStore::new()) });
