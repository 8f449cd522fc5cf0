//! What the ledger keeps besides the tasks a host started: the calls it sent and has no
//! answer for yet ([`Submission`], with their idempotency keys), the input requests it
//! answered (by key, so that a restarted host does not ask twice), and, when asked, the
//! results of finished tasks. One more `impl Ledger`, split from `ledger.rs` to keep it short.

use std::time::SystemTime;

use rusqlite::{OptionalExtension as _, Row, params};
use serde_json::Value;

use super::{Endpoint, Ledger, LedgerError, MAX_KEPT_RESULT, from_millis, millis};

/// A call sent (or about to be) with an idempotency key, whose task is not known yet: the
/// host crashed, or lost the answer, between sending it and recording its task. Sending
/// the same call again with the same key gets the one task the server made of it
/// (`dev.mcp-tasks/idempotency-key`; see the README), never a second one.
///
/// Unlike a recorded task, a submission keeps the call's arguments (they are needed to
/// send it again), until its task is recorded ([`Ledger::settle`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Submission {
    /// The idempotency key.
    pub key: String,
    /// The server it went to.
    pub endpoint: Endpoint,
    /// The tool called.
    pub tool: String,
    /// The arguments.
    pub arguments: Value,
    /// When it was recorded (just before it was sent).
    pub created_at: SystemTime,
}

/// A fresh idempotency key: `mcp-tasks-` and 128 random bits in hex.
///
/// # Panics
/// If the operating system has no randomness to give.
pub fn new_idempotency_key() -> String {
    let mut bytes = [0u8; 16];
    #[allow(clippy::expect_used)] // no randomness: nothing safe to do
    getrandom::fill(&mut bytes).expect("the operating system gives random bytes");
    bytes.iter().fold(String::from("mcp-tasks-"), |mut key, byte| {
        key.push_str(&format!("{byte:02x}"));
        key
    })
}

impl Ledger {
    /// Records a call about to be sent with idempotency `key`, with its arguments (kept until
    /// [`Ledger::settle`]). Recording the same key again replaces it.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the write fails.
    pub async fn submit(&self, endpoint: &Endpoint, key: &str, tool: &str, arguments: &Value) -> Result<(), LedgerError> {
        let (kind, address, key, tool) = (endpoint.kind(), endpoint.address().to_owned(), key.to_owned(), tool.to_owned());
        let arguments = arguments.to_string();
        let now = millis(SystemTime::now());
        self.call(move |conn| {
            conn.execute(
                "INSERT OR REPLACE INTO submissions (key, endpoint_kind, endpoint, tool, arguments, created_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![key, kind, address, tool, arguments, now],
            )
            .map(|_| ())
        })
        .await
    }

    /// The submission of `key`, if its task is not recorded yet.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the read fails.
    pub async fn submission(&self, key: &str) -> Result<Option<Submission>, LedgerError> {
        let key = key.to_owned();
        self.call(move |conn| {
            conn.query_row(&format!("SELECT {SUBMISSION_COLUMNS} FROM submissions WHERE key = ?1"), params![key], read_submission)
                .optional()
        })
        .await
    }

    /// Every call sent whose task is not recorded yet, oldest first.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the read fails.
    pub async fn submissions(&self) -> Result<Vec<Submission>, LedgerError> {
        self.call(move |conn| {
            let mut statement =
                conn.prepare(&format!("SELECT {SUBMISSION_COLUMNS} FROM submissions ORDER BY created_at_ms, key"))?;
            statement.query_map([], read_submission)?.collect()
        })
        .await
    }

    /// The call of `key` has its task (recorded with [`Ledger::record`]) or needs none: its
    /// submission, and its arguments, go. Returns whether it was there.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the write fails.
    pub async fn settle(&self, key: &str) -> Result<bool, LedgerError> {
        let key = key.to_owned();
        self.call(move |conn| conn.execute("DELETE FROM submissions WHERE key = ?1", params![key]).map(|n| n > 0)).await
    }

    /// Notes that the host answered input request `key` of a task (2026-07-28
    /// `inputRequests`), so that a restarted host does not ask its user again.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the write fails.
    pub async fn note_answered(&self, endpoint: &Endpoint, task_id: &str, key: &str) -> Result<(), LedgerError> {
        let (kind, address, task_id, key) = (endpoint.kind(), endpoint.address().to_owned(), task_id.to_owned(), key.to_owned());
        self.call(move |conn| {
            conn.execute(
                "INSERT OR IGNORE INTO answers (endpoint_kind, endpoint, task_id, key) VALUES (?1, ?2, ?3, ?4)",
                params![kind, address, task_id, key],
            )
            .map(|_| ())
        })
        .await
    }

    /// The keys of the input requests of a task the host answered.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the read fails.
    pub async fn answered(&self, endpoint: &Endpoint, task_id: &str) -> Result<Vec<String>, LedgerError> {
        let (kind, address, task_id) = (endpoint.kind(), endpoint.address().to_owned(), task_id.to_owned());
        self.call(move |conn| {
            let mut statement = conn.prepare(
                "SELECT key FROM answers WHERE endpoint_kind = ?1 AND endpoint = ?2 AND task_id = ?3 ORDER BY key",
            )?;
            statement.query_map(params![kind, address, task_id], |row| row.get(0))?.collect()
        })
        .await
    }

    /// Keeps the result of a finished task (a `CallToolResult`, as JSON), so that it can be
    /// read after the server has forgotten the task; `false` (nothing kept) for a result
    /// over [`MAX_KEPT_RESULT`] bytes.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the write fails.
    pub async fn keep_result(&self, endpoint: &Endpoint, task_id: &str, result: &Value) -> Result<bool, LedgerError> {
        let text = result.to_string();
        if text.len() > MAX_KEPT_RESULT {
            return Ok(false);
        }
        let (kind, address, task_id) = (endpoint.kind(), endpoint.address().to_owned(), task_id.to_owned());
        self.call(move |conn| {
            conn.execute(
                "INSERT OR REPLACE INTO results (endpoint_kind, endpoint, task_id, result) VALUES (?1, ?2, ?3, ?4)",
                params![kind, address, task_id, text],
            )
            .map(|_| true)
        })
        .await
    }

    /// The result kept for a task, if any.
    ///
    /// # Errors
    /// [`LedgerError::Database`] if the read fails.
    pub async fn kept_result(&self, endpoint: &Endpoint, task_id: &str) -> Result<Option<Value>, LedgerError> {
        let (kind, address, task_id) = (endpoint.kind(), endpoint.address().to_owned(), task_id.to_owned());
        let text: Option<String> = self
            .call(move |conn| {
                conn.query_row(
                    "SELECT result FROM results WHERE endpoint_kind = ?1 AND endpoint = ?2 AND task_id = ?3",
                    params![kind, address, task_id],
                    |row| row.get(0),
                )
                .optional()
            })
            .await?;
        Ok(text.and_then(|text| serde_json::from_str(&text).ok()))
    }
}

/// The columns of a submission, in the order [`read_submission`] decodes them.
const SUBMISSION_COLUMNS: &str = "key, endpoint_kind, endpoint, tool, arguments, created_at_ms";

fn read_submission(row: &Row<'_>) -> rusqlite::Result<Submission> {
    let kind: String = row.get(1)?;
    let address: String = row.get(2)?;
    let endpoint = if kind == "cmd" { Endpoint::Command(address) } else { Endpoint::Url(address) };
    let arguments: String = row.get(4)?;
    let arguments = serde_json::from_str(&arguments).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(4, rusqlite::types::Type::Text, format!("arguments: {e}").into())
    })?;
    Ok(Submission { key: row.get(0)?, endpoint, tool: row.get(3)?, arguments, created_at: from_millis(row.get(5)?) })
}
