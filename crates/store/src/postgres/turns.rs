//! Pending turns on PostgreSQL: claims and reminders take their rows with
//! `FOR UPDATE SKIP LOCKED`, so replicas claiming at once never wait on each other nor get the
//! same row. Rows are written by appends ([`super::events`]) and match creation.

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Postgres};

use super::{Durability, begin, custom_plans, db};
use crate::rows::{Binds, Params, ReminderRow, Time, TurnRow, to_i64};
use crate::turns::{ReminderColumns, reminders};
use crate::{MatchId, PendingTurn, Reminder, StoreError, TurnRecord};

const COLUMNS: &str =
    "match_id::text AS match_id, seat, version, due_at, remind_at, bot, lease_until";

/// Pending turns to write, one array per column
/// (`smallint[], timestamptz[], text[], timestamptz[], smallint[]`).
#[derive(Debug, Default)]
pub(super) struct TurnColumns {
    seat: Vec<i16>,
    due_at: Vec<Time>,
    bot: Vec<Option<String>>,
    remind_at: Vec<Option<Time>>,
    /// The seats whose stored due time stands.
    continuing: Vec<i16>,
}

impl TurnColumns {
    pub(super) fn new(turns: &[PendingTurn]) -> TurnColumns {
        let mut c = TurnColumns::default();
        for t in turns {
            c.seat.push(i16::from(t.seat));
            c.due_at.push(t.due_at.into());
            c.bot.push(t.bot.clone());
            c.remind_at.push(t.remind_at.map(Time::from));
            if t.continues {
                c.continuing.push(i16::from(t.seat));
            }
        }
        c
    }
}

impl Params<Postgres> for TurnColumns {
    fn bind_to<'q, Q: Binds<'q, Postgres>>(self, query: Q) -> Q {
        query
            .value(self.seat)
            .value(self.due_at)
            .value(self.bot)
            .value(self.remind_at)
            .value(self.continuing)
    }
}

impl Params<Postgres> for ReminderColumns {
    fn bind_to<'q, Q: Binds<'q, Postgres>>(self, query: Q) -> Q {
        query
            .value(self.match_id)
            .value(self.seq)
            .value(self.seat)
            .value(self.url)
            .value(self.body)
            .value(self.at)
    }
}

/// The claim of due turns: `$1` now, `$2` the lease's end, `$3` the batch.
pub const CLAIM: &str = "UPDATE turns SET lease_until = $2
    FROM (SELECT match_id, seat FROM turns
        WHERE due_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
        ORDER BY due_at LIMIT $3
        FOR UPDATE SKIP LOCKED) due
    WHERE turns.match_id = due.match_id AND turns.seat = due.seat
    RETURNING turns.match_id::text AS match_id, turns.seat, turns.version, turns.due_at,
        turns.remind_at, turns.bot, turns.lease_until";

pub(super) async fn claim(
    pool: &PgPool,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<TurnRecord>, StoreError> {
    // Planned with its values ([`custom_plans`]): a generic plan cannot cost the join back from
    // an unknown `LIMIT` and makes it a hash join over a sequential scan of `turns` instead of
    // `turns_pkey` probes. Committed without waiting for the WAL flush: a lease lost in a crash
    // is a lease that expired, and the turn is claimed again; whatever the claimer then writes
    // waits for a flush that takes the lease with it.
    let mut tx = custom_plans(pool, Durability::Unflushed).await?;
    let rows: Vec<TurnRow> = sqlx::query_as(CLAIM)
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

pub(super) async fn drop(
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
            .map_err(db)?;
    Ok(result.rows_affected() > 0)
}

pub(super) async fn list(pool: &PgPool, id: MatchId) -> Result<Vec<TurnRecord>, StoreError> {
    let rows: Vec<TurnRow> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM turns WHERE match_id = $1::uuid ORDER BY seat"
    ))
    .bind(id.to_string())
    .fetch_all(pool)
    .await
    .map_err(db)?;
    rows.into_iter().map(TurnRow::into_record).collect()
}

pub(super) async fn remind(
    pool: &PgPool,
    now: DateTime<Utc>,
    limit: u32,
    body: &(dyn Fn(&Reminder) -> String + Sync),
) -> Result<u32, StoreError> {
    // Most rounds find nothing due: one indexed look, no transaction.
    let any: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM turns WHERE remind_at IS NOT NULL AND remind_at <= $1 LIMIT 1",
    )
    .bind(Time::from(now))
    .fetch_optional(pool)
    .await
    .map_err(db)?;
    if any.is_none() {
        return Ok(0);
    }
    let mut tx = begin(pool, "BEGIN").await?;
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
        RETURNING t.match_id::text AS match_id, t.seat, t.version, t.due_at, due.remind_at, w.url",
    )
    .bind(Time::from(now))
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
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
        .params(c)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    tx.commit().await.map_err(db)?;
    Ok(u32::try_from(queued).unwrap_or(u32::MAX))
}
