//! Webhooks and their outbox on PostgreSQL. Claims take due rows with
//! `FOR UPDATE SKIP LOCKED`, so workers on any number of servers never wait on each other nor
//! claim one row twice; "your turn" rows are written by appends ([`super::events`]) and
//! reminders by [`super::turns`].

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::db;
use crate::rows::{
    AttemptValues, Binds, ClaimRow, KeyValues, RECORD_COLUMNS, RecordRow, Time, WebhookRow,
};
use crate::{
    Attempt, Delivery, DeliveryKey, DeliveryRecord, MatchId, REMOVED, StoreError, Webhook,
};

pub(super) async fn set_webhook(
    pool: &PgPool,
    id: MatchId,
    seat: u8,
    url: &str,
    secret: [u8; 32],
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO webhooks (match_id, seat, url, secret, created_at)
         VALUES ($1::uuid, $2, $3, $4, $5)
         ON CONFLICT (match_id, seat) DO UPDATE
             SET url = EXCLUDED.url, secret = EXCLUDED.secret, created_at = EXCLUDED.created_at",
    )
    .bind(id.to_string())
    .bind(i16::from(seat))
    .bind(url)
    .bind(secret.to_vec())
    .bind(Time::from(now))
    .execute(pool)
    .await
    .map(drop)
    .map_err(db)
}

pub(super) async fn remove_webhook(
    pool: &PgPool,
    id: MatchId,
    seat: u8,
) -> Result<bool, StoreError> {
    // One statement, so one round trip: joins call this for every seat taken.
    let removed: i64 = sqlx::query_scalar(
        "WITH removed AS (
            DELETE FROM webhooks WHERE match_id = $1::uuid AND seat = $2 RETURNING seat
        ), cancelled AS (
            UPDATE webhook_outbox SET next_attempt_at = NULL, last_error = $3
            WHERE match_id = $1::uuid AND seat = $2 AND next_attempt_at IS NOT NULL
        )
        SELECT count(*) FROM removed",
    )
    .bind(id.to_string())
    .bind(i16::from(seat))
    .bind(REMOVED)
    .fetch_one(pool)
    .await
    .map_err(db)?;
    Ok(removed > 0)
}

pub(super) async fn webhook(
    pool: &PgPool,
    id: MatchId,
    seat: u8,
) -> Result<Option<Webhook>, StoreError> {
    let row: Option<WebhookRow> = sqlx::query_as(
        "SELECT match_id::text AS match_id, seat, url, secret, created_at
         FROM webhooks WHERE match_id = $1::uuid AND seat = $2",
    )
    .bind(id.to_string())
    .bind(i16::from(seat))
    .fetch_optional(pool)
    .await
    .map_err(db)?;
    row.map(WebhookRow::into_webhook).transpose()
}

pub(super) async fn claim(
    pool: &PgPool,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<Delivery>, StoreError> {
    let rows: Vec<ClaimRow> = sqlx::query_as(
        "WITH due AS (
            SELECT match_id, seq, seat, kind FROM webhook_outbox
            WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= $1
            ORDER BY next_attempt_at LIMIT $3
            FOR UPDATE SKIP LOCKED
        )
        UPDATE webhook_outbox o
        SET lease_until = $2, next_attempt_at = $2, url = COALESCE(w.url, o.url)
        FROM due LEFT JOIN webhooks w ON w.match_id = due.match_id AND w.seat = due.seat
        WHERE o.match_id = due.match_id AND o.seq = due.seq AND o.seat = due.seat
            AND o.kind = due.kind
        RETURNING o.match_id::text AS match_id, o.seq, o.seat, o.kind, o.url, o.body,
            o.attempts, w.secret",
    )
    .bind(Time::from(now))
    .bind(Time::from(lease_until))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
    .map_err(db)?;
    rows.into_iter().map(ClaimRow::into_delivery).collect()
}

pub(super) async fn defer(
    pool: &PgPool,
    keys: &[DeliveryKey],
    lease_until: DateTime<Utc>,
    due_at: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let keys = keys
        .iter()
        .map(KeyValues::new)
        .collect::<Result<Vec<_>, _>>()?;
    let deferred = sqlx::query(
        "UPDATE webhook_outbox o SET next_attempt_at = $1, lease_until = NULL
        FROM UNNEST($3::text[], $4::bigint[], $5::smallint[], $6::text[])
            AS k(match_id, seq, seat, kind)
        WHERE o.match_id = k.match_id::uuid AND o.seq = k.seq AND o.seat = k.seat
            AND o.kind = k.kind AND o.lease_until = $2 AND o.next_attempt_at IS NOT NULL
            AND o.delivered_at IS NULL",
    )
    .bind(Time::from(due_at))
    .bind(Time::from(lease_until))
    .bind(keys.iter().map(|k| k.match_id.clone()).collect::<Vec<_>>())
    .bind(keys.iter().map(|k| k.seq).collect::<Vec<_>>())
    .bind(keys.iter().map(|k| k.seat).collect::<Vec<_>>())
    .bind(keys.iter().map(|k| k.kind).collect::<Vec<_>>())
    .execute(pool)
    .await
    .map_err(db)?;
    Ok(deferred.rows_affected())
}

pub(super) async fn record(
    pool: &PgPool,
    key: DeliveryKey,
    attempt: &Attempt,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE webhook_outbox SET attempts = attempts + 1, delivered_at = $1,
            next_attempt_at = $2, lease_until = NULL, last_status = $3, last_error = $4
        WHERE match_id = $5::uuid AND seq = $6 AND seat = $7 AND kind = $8
            AND delivered_at IS NULL",
    )
    .params(AttemptValues::new(attempt, now))
    .params(KeyValues::new(&key)?)
    .execute(pool)
    .await
    .map(drop)
    .map_err(db)
}

pub(super) async fn list(
    pool: &PgPool,
    id: MatchId,
    seat: Option<u8>,
    limit: u32,
) -> Result<Vec<DeliveryRecord>, StoreError> {
    let rows: Vec<RecordRow> = sqlx::query_as(&format!(
        "SELECT match_id::text AS match_id, {RECORD_COLUMNS} FROM webhook_outbox
         WHERE match_id = $1::uuid AND ($2::smallint IS NULL OR seat = $2)
         ORDER BY seq DESC, seat, kind LIMIT $3"
    ))
    .bind(id.to_string())
    .bind(seat.map(i16::from))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
    .map_err(db)?;
    rows.into_iter().map(RecordRow::into_record).collect()
}
