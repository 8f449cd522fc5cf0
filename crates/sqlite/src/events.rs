//! Each task's event log on SQLite (`task_events`, `task_event_heads`, migration 0017): the
//! append (fenced by the task's attempt, numbered from the head, pruned from the oldest past
//! the limits) and the read of a page after a cursor.

use rusqlite::{Connection, OptionalExtension, params};

use mcp_tasks_engine::{EventLimits, EventPage, LoggedEvent, NewEvent, Timestamp};

use crate::sql::UNFINISHED;

/// `events` as the rows [`append`] takes: type, payload as JSON text, time.
pub(crate) fn rows_of(events: &[NewEvent]) -> Vec<(String, String, i64)> {
    events.iter().map(|event| (event.kind.clone(), event.payload.to_string(), event.at.0)).collect()
}

/// Appends `rows` (type, payload as JSON text, time) to the log of task `id` if it is
/// unfinished at attempt `attempt`; prunes past `limits`. The number of the first, or `None`.
pub(crate) fn append(
    conn: &Connection,
    id: &str,
    attempt: u32,
    rows: &[(String, String, i64)],
    limits: EventLimits,
) -> rusqlite::Result<Option<u64>> {
    let live: Option<i64> = conn
        .prepare_cached(&format!("SELECT 1 FROM tasks WHERE id = ?1 AND attempt = ?2 AND status IN {UNFINISHED}"))?
        .query_row(params![id, i64::from(attempt)], |row| row.get(0))
        .optional()?;
    if live.is_none() {
        return Ok(None);
    }
    append_rows(conn, id, rows, limits).map(Some)
}

/// Appends `rows` to the log of task `id`, whatever its state (inside the transaction that
/// writes it: the insert of early work that ended first); prunes past `limits`. The number
/// of the first.
pub(crate) fn append_rows(conn: &Connection, id: &str, rows: &[(String, String, i64)], limits: EventLimits) -> rusqlite::Result<u64> {
    let count = i64::try_from(rows.len()).unwrap_or(i64::MAX);
    let bytes: i64 = rows.iter().map(|(_, payload, _)| i64::try_from(payload.len()).unwrap_or(i64::MAX)).sum();
    // Two single-row statements, not an upsert (which SQLite runs with a statement journal).
    let head: Option<(i64, i64, i64)> = conn
        .prepare_cached(
            "UPDATE task_event_heads SET next_seq = next_seq + ?2, bytes = bytes + ?3 WHERE task_id = ?1 \
             RETURNING next_seq - ?2, earliest, bytes",
        )?
        .query_row(params![id, count, bytes], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .optional()?;
    let (first, earliest, kept_bytes) = match head {
        Some(head) => head,
        None => {
            conn.prepare_cached("INSERT INTO task_event_heads (task_id, next_seq, earliest, bytes) VALUES (?1, ?2, 0, ?3)")?
                .execute(params![id, 1 + count, bytes])?;
            (1, 0, bytes)
        }
    };
    let mut insert = conn.prepare_cached("INSERT INTO task_events (task_id, seq, type, payload, at) VALUES (?1, ?2, ?3, ?4, ?5)")?;
    for (n, (kind, payload, at)) in rows.iter().enumerate() {
        insert.execute(params![id, first + i64::try_from(n).unwrap_or(i64::MAX), kind, payload, at])?;
    }
    prune(conn, id, first + count, earliest, kept_bytes, limits)?;
    Ok(u64::try_from(first).unwrap_or_default())
}

/// Prunes the oldest stored events of task `id` while more than `limits.events` are kept or
/// their payloads weigh more than `limits.bytes` (the newest one always stays).
fn prune(conn: &Connection, id: &str, next: i64, earliest: i64, bytes: i64, limits: EventLimits) -> rusqlite::Result<()> {
    let max_events = i64::try_from(limits.events.max(1)).unwrap_or(i64::MAX);
    let max_bytes = i64::try_from(limits.bytes).unwrap_or(i64::MAX);
    let oldest_stored = earliest.max(1);
    if next - oldest_stored <= max_events && bytes <= max_bytes {
        return Ok(());
    }
    // Walk from the oldest, dropping until both bounds hold.
    let (mut cut, mut dropped) = (oldest_stored, 0_i64);
    {
        let mut sizes = conn.prepare_cached("SELECT seq, length(CAST(payload AS BLOB)) FROM task_events WHERE task_id = ?1 ORDER BY seq")?;
        let mut rows = sizes.query([id])?;
        while let Some(row) = rows.next()? {
            let (seq, size): (i64, i64) = (row.get(0)?, row.get(1)?);
            if seq >= next - 1 || (next - seq <= max_events && bytes - dropped <= max_bytes) {
                break;
            }
            dropped += size;
            cut = seq + 1;
        }
    }
    conn.prepare_cached("DELETE FROM task_events WHERE task_id = ?1 AND seq < ?2")?.execute(params![id, cut])?;
    conn.prepare_cached("UPDATE task_event_heads SET earliest = ?2, bytes = bytes - ?3 WHERE task_id = ?1")?
        .execute(params![id, cut, dropped])?;
    Ok(())
}

/// Up to `limit` stored events of task `id` after `after`, with the log's bounds.
pub(crate) fn page(conn: &Connection, id: &str, after: u64, limit: u32) -> rusqlite::Result<EventPage> {
    let head: Option<(i64, i64)> = conn
        .prepare_cached("SELECT next_seq, earliest FROM task_event_heads WHERE task_id = ?1")?
        .query_row([id], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let Some((next, earliest)) = head else {
        return Ok(EventPage { events: Vec::new(), earliest: 0, next: 1 });
    };
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let events = conn
        .prepare_cached("SELECT seq, type, payload, at FROM task_events WHERE task_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3")?
        .query_map(params![id, after, i64::from(limit)], |row| {
            let payload: String = row.get(2)?;
            Ok(LoggedEvent {
                seq: u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                kind: row.get(1)?,
                payload: serde_json::from_str(&payload)
                    .map_err(|err| rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, Box::new(err)))?,
                at: Timestamp(row.get(3)?),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(EventPage { events, earliest: u64::try_from(earliest).unwrap_or(0), next: u64::try_from(next).unwrap_or(1) })
}
