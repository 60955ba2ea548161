//! Pending turns: turn deadlines and bot turns, one row per awaited seat the server may have
//! to act for.
//!
//! Rows are written only by appends (and match creation), in the same statement or
//! transaction as the event that makes their seat awaited, through [`MatchUpdate::turns`];
//! this module claims, lists and drops them. A claim leases rows: on PostgreSQL with
//! `FOR UPDATE SKIP LOCKED`, so replicas claiming at once never wait on each other nor get the
//! same row; on SQLite inside `BEGIN IMMEDIATE`, which serialises claimers. A lease only keeps
//! other claimers away while the claimer acts; acting twice is prevented by the append itself
//! (expected version and request id).
//!
//! [`MatchUpdate::turns`]: crate::MatchUpdate::turns

use chrono::{DateTime, Utc};
use sqlx::{PgPool, SqlitePool};

use crate::rows::{parse_id, to_i64};
use crate::{MatchId, PendingTurn, Reminder, StoreError, TurnRecord};

#[derive(Debug, sqlx::FromRow)]
struct PgTurnRow {
    match_id: String,
    seat: i16,
    version: i64,
    due_at: DateTime<Utc>,
    remind_at: Option<DateTime<Utc>>,
    bot: Option<String>,
    lease_until: Option<DateTime<Utc>>,
}

#[derive(Debug, sqlx::FromRow)]
struct SqliteTurnRow {
    match_id: String,
    seat: i64,
    version: i64,
    due_at: i64,
    remind_at: Option<i64>,
    bot: Option<String>,
    lease_until: Option<i64>,
}

fn corrupt(what: &str, value: i64) -> StoreError {
    StoreError::Corrupt(format!("turn {what} {value} out of range"))
}

impl PgTurnRow {
    fn into_record(self) -> Result<TurnRecord, StoreError> {
        Ok(TurnRecord {
            match_id: parse_id(&self.match_id)?,
            seat: u8::try_from(self.seat).map_err(|_| corrupt("seat", self.seat.into()))?,
            version: u64::try_from(self.version).map_err(|_| corrupt("version", self.version))?,
            due_at: self.due_at,
            remind_at: self.remind_at,
            bot: self.bot,
            lease_until: self.lease_until,
        })
    }
}

/// A time as SQLite stores it here: microseconds since the Unix epoch.
pub(crate) fn micros(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

fn from_micros(value: i64) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_micros(value).ok_or_else(|| corrupt("time", value))
}

impl SqliteTurnRow {
    fn into_record(self) -> Result<TurnRecord, StoreError> {
        Ok(TurnRecord {
            match_id: parse_id(&self.match_id)?,
            seat: u8::try_from(self.seat).map_err(|_| corrupt("seat", self.seat))?,
            version: u64::try_from(self.version).map_err(|_| corrupt("version", self.version))?,
            due_at: from_micros(self.due_at)?,
            remind_at: self.remind_at.map(from_micros).transpose()?,
            bot: self.bot,
            lease_until: self.lease_until.map(from_micros).transpose()?,
        })
    }
}

const PG_COLUMNS: &str =
    "match_id::text AS match_id, seat, version, due_at, remind_at, bot, lease_until";
const SQLITE_COLUMNS: &str = "match_id, seat, version, due_at, remind_at, bot, lease_until";

/// Columns of pending turns for binding as arrays (PostgreSQL).
#[derive(Debug, Default)]
pub(crate) struct TurnColumns {
    pub(crate) seat: Vec<i16>,
    pub(crate) due_at: Vec<DateTime<Utc>>,
    pub(crate) remind_at: Vec<Option<DateTime<Utc>>>,
    pub(crate) bot: Vec<Option<String>>,
    /// The seats whose stored due time stands.
    pub(crate) continuing: Vec<i16>,
}

impl TurnColumns {
    pub(crate) fn new(turns: &[PendingTurn]) -> TurnColumns {
        let mut c = TurnColumns::default();
        for t in turns {
            c.seat.push(i16::from(t.seat));
            c.due_at.push(crate::truncate_to_micros(t.due_at));
            c.remind_at.push(t.remind_at.map(crate::truncate_to_micros));
            c.bot.push(t.bot.clone());
            if t.continues {
                c.continuing.push(i16::from(t.seat));
            }
        }
        c
    }
}

/// Refuses pending turns for seats the match does not have, or the same seat twice: a caller
/// bug, refused before anything is written.
pub(crate) fn check(turns: &[PendingTurn], seat_count: i16) -> Result<(), StoreError> {
    for (i, t) in turns.iter().enumerate() {
        if i16::from(t.seat) >= seat_count {
            return Err(StoreError::Internal(format!(
                "pending turn for seat {} of a match with {seat_count} seats",
                t.seat
            )));
        }
        if turns[..i].iter().any(|u| u.seat == t.seat) {
            return Err(StoreError::Internal(format!(
                "two pending turns for seat {}",
                t.seat
            )));
        }
    }
    Ok(())
}

pub(crate) async fn pg_claim(
    pool: &PgPool,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<TurnRecord>, StoreError> {
    let rows: Vec<PgTurnRow> = sqlx::query_as(
        "UPDATE turns SET lease_until = $2
         FROM (SELECT match_id, seat FROM turns
             WHERE due_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
             ORDER BY due_at LIMIT $3
             FOR UPDATE SKIP LOCKED) due
         WHERE turns.match_id = due.match_id AND turns.seat = due.seat
         RETURNING turns.match_id::text AS match_id, turns.seat, turns.version, turns.due_at,
             turns.remind_at, turns.bot, turns.lease_until",
    )
    .bind(crate::truncate_to_micros(now))
    .bind(crate::truncate_to_micros(lease_until))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
    .map_err(StoreError::from_sqlx)?;
    let mut turns = rows
        .into_iter()
        .map(PgTurnRow::into_record)
        .collect::<Result<Vec<_>, _>>()?;
    turns.sort_by_key(|t| t.due_at);
    Ok(turns)
}

pub(crate) async fn pg_drop(
    pool: &PgPool,
    id: MatchId,
    seat: u8,
    version: u64,
) -> Result<bool, StoreError> {
    let result =
        sqlx::query("DELETE FROM turns WHERE match_id = $1::uuid AND seat = $2 AND version = $3")
            .bind(id.to_string())
            .bind(i16::from(seat))
            .bind(to_i64(version)?)
            .execute(pool)
            .await
            .map_err(StoreError::from_sqlx)?;
    Ok(result.rows_affected() > 0)
}

pub(crate) async fn pg_list(pool: &PgPool, id: MatchId) -> Result<Vec<TurnRecord>, StoreError> {
    let rows: Vec<PgTurnRow> = sqlx::query_as(&format!(
        "SELECT {PG_COLUMNS} FROM turns WHERE match_id = $1::uuid ORDER BY seat"
    ))
    .bind(id.to_string())
    .fetch_all(pool)
    .await
    .map_err(StoreError::from_sqlx)?;
    rows.into_iter().map(PgTurnRow::into_record).collect()
}

/// Replaces the match's pending turns inside an open SQLite transaction; see
/// [`crate::MatchUpdate::turns`].
pub(crate) async fn sqlite_replace(
    conn: &mut sqlx::SqliteConnection,
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
    .map_err(crate::sqlite::db)?;
    for t in turns {
        sqlx::query(
            "INSERT INTO turns (match_id, seat, version, due_at, bot, remind_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?7)
             ON CONFLICT (match_id, seat) DO UPDATE SET version = excluded.version,
                 bot = excluded.bot, lease_until = NULL,
                 due_at = CASE WHEN ?6 THEN turns.due_at ELSE excluded.due_at END,
                 remind_at = CASE WHEN ?6 THEN turns.remind_at ELSE excluded.remind_at END",
        )
        .bind(id)
        .bind(i64::from(t.seat))
        .bind(to_i64(version)?)
        .bind(micros(crate::truncate_to_micros(t.due_at)))
        .bind(t.bot.as_deref())
        .bind(t.continues)
        .bind(t.remind_at.map(|at| micros(crate::truncate_to_micros(at))))
        .execute(&mut *conn)
        .await
        .map_err(crate::sqlite::db)?;
    }
    Ok(())
}

pub(crate) async fn sqlite_claim(
    pool: &SqlitePool,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<TurnRecord>, StoreError> {
    // The write lock first: no other claimer reads the same rows before this one leases them.
    let mut tx = pool
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(crate::sqlite::db)?;
    let rows: Vec<SqliteTurnRow> = sqlx::query_as(&format!(
        "UPDATE turns SET lease_until = ?2
         WHERE (match_id, seat) IN (SELECT match_id, seat FROM turns
             WHERE due_at <= ?1 AND (lease_until IS NULL OR lease_until < ?1)
             ORDER BY due_at LIMIT ?3)
         RETURNING {SQLITE_COLUMNS}"
    ))
    .bind(micros(now))
    .bind(micros(lease_until))
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await
    .map_err(crate::sqlite::db)?;
    tx.commit().await.map_err(crate::sqlite::db)?;
    let mut turns = rows
        .into_iter()
        .map(SqliteTurnRow::into_record)
        .collect::<Result<Vec<_>, _>>()?;
    turns.sort_by_key(|t| t.due_at);
    Ok(turns)
}

pub(crate) async fn sqlite_drop(
    pool: &SqlitePool,
    id: MatchId,
    seat: u8,
    version: u64,
) -> Result<bool, StoreError> {
    let result = sqlx::query("DELETE FROM turns WHERE match_id = ? AND seat = ? AND version = ?")
        .bind(id.to_string())
        .bind(i64::from(seat))
        .bind(to_i64(version)?)
        .execute(pool)
        .await
        .map_err(crate::sqlite::db)?;
    Ok(result.rows_affected() > 0)
}

pub(crate) async fn sqlite_list(
    pool: &SqlitePool,
    id: MatchId,
) -> Result<Vec<TurnRecord>, StoreError> {
    let rows: Vec<SqliteTurnRow> = sqlx::query_as(&format!(
        "SELECT {SQLITE_COLUMNS} FROM turns WHERE match_id = ? ORDER BY seat"
    ))
    .bind(id.to_string())
    .fetch_all(pool)
    .await
    .map_err(crate::sqlite::db)?;
    rows.into_iter().map(SqliteTurnRow::into_record).collect()
}

/// A reminder that fell due, with its seat's webhook URL if it has one.
#[derive(Debug, sqlx::FromRow)]
struct ReminderRow {
    match_id: String,
    seat: i64,
    version: i64,
    due_at: DateTime<Utc>,
    remind_at: DateTime<Utc>,
    url: Option<String>,
}

/// The outbox rows of the reminders in `due` that are still worth sending: the seat has a
/// webhook and its deadline is ahead of `now`.
fn reminders(
    due: Vec<ReminderRow>,
    now: DateTime<Utc>,
    body: &(impl Fn(&Reminder) -> String + Sync),
) -> Result<ReminderColumns, StoreError> {
    let mut c = ReminderColumns::default();
    for row in due {
        let Some(url) = row.url else { continue };
        if row.due_at <= now {
            continue;
        }
        let id = parse_id(&row.match_id)?;
        let seat = u8::try_from(row.seat).map_err(|_| corrupt("seat", row.seat))?;
        let seq = u64::try_from(row.version).map_err(|_| corrupt("version", row.version))?;
        c.body.push(body(&Reminder {
            match_id: id,
            seq,
            seat,
            due_at: row.due_at,
            remind_at: row.remind_at,
        }));
        c.match_id.push(row.match_id);
        c.seq.push(row.version);
        c.seat.push(row.seat);
        c.url.push(url);
        c.at.push(row.remind_at);
    }
    Ok(c)
}

#[derive(Debug, Default)]
struct ReminderColumns {
    match_id: Vec<String>,
    seq: Vec<i64>,
    seat: Vec<i64>,
    url: Vec<String>,
    body: Vec<String>,
    at: Vec<DateTime<Utc>>,
}

pub(crate) async fn pg_remind(
    pool: &PgPool,
    now: DateTime<Utc>,
    limit: u32,
    body: &(impl Fn(&Reminder) -> String + Sync),
) -> Result<u32, StoreError> {
    // Most rounds find nothing due: one indexed look, no transaction.
    let any: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM turns WHERE remind_at IS NOT NULL AND remind_at <= $1 LIMIT 1",
    )
    .bind(crate::truncate_to_micros(now))
    .fetch_optional(pool)
    .await
    .map_err(StoreError::from_sqlx)?;
    if any.is_none() {
        return Ok(0);
    }
    let mut tx = pool.begin().await.map_err(StoreError::from_sqlx)?;
    let due: Vec<ReminderRow> = sqlx::query_as(
        "WITH due AS (
            SELECT match_id, seat, remind_at FROM turns
            WHERE remind_at IS NOT NULL AND remind_at <= $1
            ORDER BY remind_at LIMIT $2
            FOR UPDATE SKIP LOCKED
        )
        UPDATE turns t SET remind_at = NULL
        FROM due LEFT JOIN webhooks w ON w.match_id = due.match_id AND w.seat = due.seat
        WHERE t.match_id = due.match_id AND t.seat = due.seat
        RETURNING t.match_id::text AS match_id, t.seat::bigint AS seat, t.version, t.due_at,
            due.remind_at, w.url",
    )
    .bind(crate::truncate_to_micros(now))
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await
    .map_err(StoreError::from_sqlx)?;
    let c = reminders(due, now, body)?;
    let queued = c.body.len();
    if queued > 0 {
        sqlx::query(
            "INSERT INTO webhook_outbox (match_id, seq, seat, kind, url, body, next_attempt_at,
                created_at)
            SELECT r.match_id::uuid, r.seq, r.seat, 'turn_reminder', r.url, r.body, r.at, r.at
            FROM UNNEST($1::text[], $2::bigint[], $3::smallint[], $4::text[], $5::text[],
                $6::timestamptz[]) AS r(match_id, seq, seat, url, body, at)
            ON CONFLICT DO NOTHING",
        )
        .bind(&c.match_id)
        .bind(&c.seq)
        .bind(c.seat.iter().map(|&s| s as i16).collect::<Vec<_>>())
        .bind(&c.url)
        .bind(&c.body)
        .bind(&c.at)
        .execute(&mut *tx)
        .await
        .map_err(StoreError::from_sqlx)?;
    }
    tx.commit().await.map_err(StoreError::from_sqlx)?;
    Ok(u32::try_from(queued).unwrap_or(u32::MAX))
}

#[derive(Debug, sqlx::FromRow)]
struct SqliteReminderRow {
    match_id: String,
    seat: i64,
    version: i64,
    due_at: i64,
    remind_at: i64,
    url: Option<String>,
}

pub(crate) async fn sqlite_remind(
    pool: &SqlitePool,
    now: DateTime<Utc>,
    limit: u32,
    body: &(impl Fn(&Reminder) -> String + Sync),
) -> Result<u32, StoreError> {
    // Most rounds find nothing due: one indexed look, no write lock.
    let any: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM turns WHERE remind_at IS NOT NULL AND remind_at <= ?1 LIMIT 1",
    )
    .bind(micros(now))
    .fetch_optional(pool)
    .await
    .map_err(crate::sqlite::db)?;
    if any.is_none() {
        return Ok(0);
    }
    // The write lock first: no other caller reads the same reminders before they are cleared.
    let mut tx = pool
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(crate::sqlite::db)?;
    let rows: Vec<SqliteReminderRow> = sqlx::query_as(
        "SELECT t.match_id, t.seat, t.version, t.due_at, t.remind_at, w.url
         FROM turns t LEFT JOIN webhooks w ON w.match_id = t.match_id AND w.seat = t.seat
         WHERE t.remind_at IS NOT NULL AND t.remind_at <= ?1
         ORDER BY t.remind_at LIMIT ?2",
    )
    .bind(micros(now))
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await
    .map_err(crate::sqlite::db)?;
    let mut due = Vec::with_capacity(rows.len());
    for row in rows {
        sqlx::query("UPDATE turns SET remind_at = NULL WHERE match_id = ?1 AND seat = ?2")
            .bind(&row.match_id)
            .bind(row.seat)
            .execute(&mut *tx)
            .await
            .map_err(crate::sqlite::db)?;
        due.push(ReminderRow {
            due_at: from_micros(row.due_at)?,
            remind_at: from_micros(row.remind_at)?,
            match_id: row.match_id,
            seat: row.seat,
            version: row.version,
            url: row.url,
        });
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
        .bind(micros(c.at[i]))
        .execute(&mut *tx)
        .await
        .map_err(crate::sqlite::db)?;
    }
    tx.commit().await.map_err(crate::sqlite::db)?;
    Ok(u32::try_from(c.body.len()).unwrap_or(u32::MAX))
}
