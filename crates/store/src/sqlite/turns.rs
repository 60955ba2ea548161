//! Pending turns on SQLite: claims and reminders take the write lock first
//! (`BEGIN IMMEDIATE`), so no other claimer reads the same rows before they are leased or
//! cleared. Rows are written by appends ([`super::events`]) and match creation, through
//! [`replace`].

use chrono::{DateTime, Utc};
use sqlx::{Sqlite, SqliteConnection, SqlitePool};

use super::db;
use crate::backend::begin;
use crate::rows::{Binds, Params, ReminderRow, Time, TurnRow, to_i64};
use crate::turns::reminders;
use crate::{MatchId, PendingTurn, Reminder, StoreError, TurnRecord};

const COLUMNS: &str = "match_id, seat, version, due_at, remind_at, bot, lease_until";

/// One pending turn to upsert, `?1` to `?6` of [`replace`]'s statement.
#[derive(Debug)]
struct TurnValues {
    match_id: String,
    seat: i16,
    version: i64,
    due_at: Time,
    bot: Option<String>,
    remind_at: Option<Time>,
}

impl Params<Sqlite> for TurnValues {
    fn bind_to<'q, Q: Binds<'q, Sqlite>>(self, query: Q) -> Q {
        query
            .value(self.match_id)
            .value(self.seat)
            .value(self.version)
            .value(self.due_at)
            .value(self.bot)
            .value(self.remind_at)
    }
}

/// Replaces the match's pending turns inside an open transaction; see
/// [`crate::MatchUpdate::turns`].
pub(super) async fn replace(
    conn: &mut SqliteConnection,
    id: &str,
    version: u64,
    turns: &[PendingTurn],
) -> Result<(), StoreError> {
    let seats: Vec<u8> = turns.iter().map(|t| t.seat).collect();
    sqlx::query(
        "DELETE FROM turns WHERE match_id = ?
             AND seat NOT IN (SELECT value FROM json_each(?))",
    )
    .bind(id)
    .bind(serde_json::to_string(&seats).map_err(|e| StoreError::Internal(e.to_string()))?)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    for t in turns {
        sqlx::query(
            "INSERT INTO turns (match_id, seat, version, due_at, bot, remind_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (match_id, seat) DO UPDATE SET version = excluded.version,
                 bot = excluded.bot, lease_until = NULL, due_at = excluded.due_at,
                 remind_at = CASE WHEN turns.due_at = excluded.due_at THEN turns.remind_at
                     ELSE excluded.remind_at END",
        )
        .params(TurnValues {
            match_id: id.to_owned(),
            seat: i16::from(t.seat),
            version: to_i64(version)?,
            due_at: t.due_at.into(),
            bot: t.bot.clone(),
            remind_at: t.remind_at.map(Time::from),
        })
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    }
    Ok(())
}

pub(crate) async fn claim(
    pool: &SqlitePool,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<TurnRecord>, StoreError> {
    // The write lock first: no other claimer reads the same rows before this one leases them.
    let mut tx = begin(pool, "BEGIN IMMEDIATE").await?;
    let rows: Vec<TurnRow> = sqlx::query_as(&format!(
        "UPDATE turns SET lease_until = ?2
         WHERE (match_id, seat) IN (SELECT match_id, seat FROM turns
             WHERE due_at <= ?1 AND (lease_until IS NULL OR lease_until < ?1)
             ORDER BY due_at LIMIT ?3)
         RETURNING {COLUMNS}"
    ))
    .bind(Time::from(now))
    .bind(Time::from(lease_until))
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    let mut turns = rows
        .into_iter()
        .map(TurnRow::into_record)
        .collect::<Result<Vec<_>, _>>()?;
    turns.sort_by_key(|t| t.due_at);
    Ok(turns)
}

pub(crate) async fn drop(
    pool: &SqlitePool,
    id: MatchId,
    seat: u8,
    version: u64,
) -> Result<bool, StoreError> {
    let result = sqlx::query("DELETE FROM turns WHERE match_id = ? AND seat = ? AND version = ?")
        .bind(id.to_string())
        .bind(i16::from(seat))
        .bind(to_i64(version)?)
        .execute(pool)
        .await
        .map_err(db)?;
    Ok(result.rows_affected() > 0)
}

pub(crate) async fn list(pool: &SqlitePool, id: MatchId) -> Result<Vec<TurnRecord>, StoreError> {
    let rows: Vec<TurnRow> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM turns WHERE match_id = ? ORDER BY seat"
    ))
    .bind(id.to_string())
    .fetch_all(pool)
    .await
    .map_err(db)?;
    rows.into_iter().map(TurnRow::into_record).collect()
}

pub(crate) async fn remind(
    pool: &SqlitePool,
    now: DateTime<Utc>,
    limit: u32,
    body: &(dyn Fn(&Reminder) -> String + Sync),
) -> Result<u32, StoreError> {
    // Most rounds find nothing due: one indexed look, no write lock.
    let any: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM turns WHERE remind_at IS NOT NULL AND remind_at <= ?1 LIMIT 1",
    )
    .bind(Time::from(now))
    .fetch_optional(pool)
    .await
    .map_err(db)?;
    if any.is_none() {
        return Ok(0);
    }
    // The write lock first: no other caller reads the same reminders before they are cleared.
    let mut tx = begin(pool, "BEGIN IMMEDIATE").await?;
    let due: Vec<ReminderRow> = sqlx::query_as(
        "SELECT t.match_id, t.seat, t.version, t.due_at, t.remind_at, w.url
         FROM turns t LEFT JOIN webhooks w ON w.match_id = t.match_id AND w.seat = t.seat
         WHERE t.remind_at IS NOT NULL AND t.remind_at <= ?1
         ORDER BY t.remind_at LIMIT ?2",
    )
    .bind(Time::from(now))
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    for row in &due {
        sqlx::query("UPDATE turns SET remind_at = NULL WHERE match_id = ?1 AND seat = ?2")
            .bind(&row.match_id)
            .bind(row.seat)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
    }
    let c = reminders(due, now, body)?;
    for i in 0..c.body.len() {
        sqlx::query(
            "INSERT INTO webhook_outbox (match_id, seq, seat, kind, url, body, next_attempt_at,
                created_at)
             VALUES (?1, ?2, ?3, 'turn_reminder', ?4, ?5, ?6, ?6)
             ON CONFLICT DO NOTHING",
        )
        .bind(&c.match_id[i])
        .bind(c.seq[i])
        .bind(c.seat[i])
        .bind(&c.url[i])
        .bind(&c.body[i])
        .bind(c.at[i])
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    tx.commit().await.map_err(db)?;
    Ok(u32::try_from(c.body.len()).unwrap_or(u32::MAX))
}
