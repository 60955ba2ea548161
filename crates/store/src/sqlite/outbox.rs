//! Webhooks and their outbox on SQLite. Claims take the write lock first (`BEGIN IMMEDIATE`),
//! which is what keeps two workers from claiming one row; "your turn" rows are written by
//! appends ([`super::events`]) and reminders by [`super::turns`].

use chrono::{DateTime, Utc};
use sqlx::SqlitePool;

use super::db;
use crate::backend::begin;
use crate::rows::{
    AttemptValues, Binds, ClaimRow, KeyValues, RECORD_COLUMNS, RecordRow, Time, WebhookRow,
};
use crate::{
    Attempt, Delivery, DeliveryKey, DeliveryRecord, MatchId, REMOVED, StoreError, Webhook,
};

pub(crate) async fn set_webhook(
    pool: &SqlitePool,
    id: MatchId,
    seat: u8,
    url: &str,
    secret: [u8; 32],
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO webhooks (match_id, seat, url, secret, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (match_id, seat) DO UPDATE
             SET url = excluded.url, secret = excluded.secret, created_at = excluded.created_at",
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

pub(crate) async fn remove_webhook(
    pool: &SqlitePool,
    id: MatchId,
    seat: u8,
) -> Result<bool, StoreError> {
    let mut tx = begin(pool, "BEGIN IMMEDIATE").await?;
    let removed = sqlx::query("DELETE FROM webhooks WHERE match_id = ?1 AND seat = ?2")
        .bind(id.to_string())
        .bind(i16::from(seat))
        .execute(&mut *tx)
        .await
        .map_err(db)?
        .rows_affected();
    sqlx::query(
        "UPDATE webhook_outbox SET next_attempt_at = NULL, last_error = ?3
         WHERE match_id = ?1 AND seat = ?2 AND next_attempt_at IS NOT NULL",
    )
    .bind(id.to_string())
    .bind(i16::from(seat))
    .bind(REMOVED)
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(removed > 0)
}

pub(crate) async fn webhook(
    pool: &SqlitePool,
    id: MatchId,
    seat: u8,
) -> Result<Option<Webhook>, StoreError> {
    let row: Option<WebhookRow> = sqlx::query_as(
        "SELECT match_id, seat, url, secret, created_at
         FROM webhooks WHERE match_id = ?1 AND seat = ?2",
    )
    .bind(id.to_string())
    .bind(i16::from(seat))
    .fetch_optional(pool)
    .await
    .map_err(db)?;
    row.map(WebhookRow::into_webhook).transpose()
}

pub(crate) async fn claim(
    pool: &SqlitePool,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<Delivery>, StoreError> {
    // One writer at a time: the immediate transaction is the claim's lock.
    let mut tx = begin(pool, "BEGIN IMMEDIATE").await?;
    let rows: Vec<ClaimRow> = sqlx::query_as(
        "SELECT o.match_id, o.seq, o.seat, o.kind, COALESCE(w.url, o.url) AS url, o.body,
            o.attempts, w.secret
         FROM webhook_outbox o
         LEFT JOIN webhooks w ON w.match_id = o.match_id AND w.seat = o.seat
         WHERE o.next_attempt_at IS NOT NULL AND o.next_attempt_at <= ?1
         ORDER BY o.next_attempt_at LIMIT ?2",
    )
    .bind(Time::from(now))
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    for row in &rows {
        sqlx::query(
            "UPDATE webhook_outbox SET lease_until = ?1, next_attempt_at = ?1, url = ?2
             WHERE match_id = ?3 AND seq = ?4 AND seat = ?5 AND kind = ?6",
        )
        .bind(Time::from(lease_until))
        .bind(&row.url)
        .bind(&row.key.match_id)
        .bind(row.key.seq)
        .bind(row.key.seat)
        .bind(&row.key.kind)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    tx.commit().await.map_err(db)?;
    rows.into_iter().map(ClaimRow::into_delivery).collect()
}

pub(crate) async fn defer(
    pool: &SqlitePool,
    keys: &[DeliveryKey],
    lease_until: DateTime<Utc>,
    due_at: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let mut tx = begin(pool, "BEGIN IMMEDIATE").await?;
    let mut deferred = 0;
    for key in keys {
        deferred += sqlx::query(
            "UPDATE webhook_outbox SET next_attempt_at = ?1, lease_until = NULL
            WHERE match_id = ?3 AND seq = ?4 AND seat = ?5 AND kind = ?6
                AND lease_until = ?2 AND next_attempt_at IS NOT NULL AND delivered_at IS NULL",
        )
        .bind(Time::from(due_at))
        .bind(Time::from(lease_until))
        .params(KeyValues::new(key)?)
        .execute(&mut *tx)
        .await
        .map_err(db)?
        .rows_affected();
    }
    tx.commit().await.map_err(db)?;
    Ok(deferred)
}

pub(crate) async fn record(
    pool: &SqlitePool,
    key: DeliveryKey,
    attempt: &Attempt,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE webhook_outbox SET attempts = attempts + 1, delivered_at = ?1,
            next_attempt_at = ?2, lease_until = NULL, last_status = ?3, last_error = ?4
        WHERE match_id = ?5 AND seq = ?6 AND seat = ?7 AND kind = ?8 AND delivered_at IS NULL",
    )
    .params(AttemptValues::new(attempt, now))
    .params(KeyValues::new(&key)?)
    .execute(pool)
    .await
    .map(drop)
    .map_err(db)
}

pub(crate) async fn list(
    pool: &SqlitePool,
    id: MatchId,
    seat: Option<u8>,
    limit: u32,
) -> Result<Vec<DeliveryRecord>, StoreError> {
    let rows: Vec<RecordRow> = sqlx::query_as(&format!(
        "SELECT match_id, {RECORD_COLUMNS} FROM webhook_outbox
         WHERE match_id = ?1 AND (?2 IS NULL OR seat = ?2)
         ORDER BY seq DESC, seat, kind LIMIT ?3"
    ))
    .bind(id.to_string())
    .bind(seat.map(i16::from))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
    .map_err(db)?;
    rows.into_iter().map(RecordRow::into_record).collect()
}
