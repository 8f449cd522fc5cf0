//! The database unreachable for a while (restarted, crashed and recovering, or the network
//! between): which failures are of that kind ([`StoreError::Unavailable`], a request the
//! client may retry once it is back), and how long taking a connection waits for it to come
//! back before it says so ([`CONNECT_WAIT`]).
//!
//! A restart ends every connection of the pool (PostgreSQL sends `57P01 admin_shutdown`, or
//! a crash just closes the socket); the pool drops closed connections when they are handed
//! out, and opens new ones once the server accepts them, so service resumes by itself.

use std::any::Any;
use std::error::Error as StdError;
use std::time::Duration;

use mcp_tasks_engine::StoreError;
use tokio_postgres::error::SqlState;

/// How long taking a connection waits for the database to accept connections again before
/// the request fails as [`StoreError::Unavailable`]: longer than a restart of a small
/// database takes (about a second, a few after a crash), short enough that a client is told
/// within its patience.
pub(crate) const CONNECT_WAIT: Duration = Duration::from_secs(5);

/// How long to wait between two tries of opening a connection while it is refused.
pub(crate) const CONNECT_RETRY: Duration = Duration::from_millis(100);

/// A driver error (or any other) as a [`StoreError`]: [`StoreError::Unavailable`] if it says
/// the database went away, [`StoreError::Backend`] otherwise.
pub(crate) fn backend<E: StdError + Send + Sync + 'static>(err: E) -> StoreError {
    match (&err as &dyn Any).downcast_ref::<tokio_postgres::Error>() {
        Some(driver) if unreachable(driver) => StoreError::Unavailable(mcp_tasks_tls::with_causes(driver)),
        // A prepared statement gone between its preparation and its use: the connection is
        // shared by a pooler in transaction mode that the URL does not name.
        Some(driver) if driver.code() == Some(&SqlState::INVALID_SQL_STATEMENT_NAME) => StoreError::Backend(
            format!(
                "{}: is the store behind a pooler in transaction mode (PgBouncer's pool_mode = transaction)? \
                 Add pooler=transaction to the store's URL (and listen_url=<a direct URL> for the change feed)",
                mcp_tasks_tls::with_causes(driver)
            )
            .into(),
        ),
        _ => StoreError::backend(err),
    }
}

/// Whether `err` says the database cannot be reached, not that it refused a statement: the
/// connection closed or failed in transit, or the server is shutting down, starting up or
/// recovering (SQLSTATE class 08, connection exception, and class 57 but for a cancelled
/// statement).
pub(crate) fn unreachable(err: &tokio_postgres::Error) -> bool {
    if err.is_closed() {
        return true;
    }
    match err.code() {
        Some(code) => {
            let class = &code.code()[..2];
            class == "08" || (class == "57" && *code != SqlState::QUERY_CANCELED)
        }
        // No SQLSTATE: the driver's own failure; I/O (a reset, a refused or timed-out connect)
        // is the network's, anything else (a bad row, a type mismatch) is not.
        None => {
            let mut cause = err.source();
            while let Some(next) = cause {
                if next.is::<std::io::Error>() {
                    return true;
                }
                cause = next.source();
            }
            false
        }
    }
}
