//! Webhooks and their outbox on PostgreSQL. A claim reads the due rows without a lock, then
//! takes each with a statement about that one row that leases it only if it is still due
//! (PostgreSQL re-checks the condition on the row it locked), so workers on any number of
//! servers never claim one row twice, and one that races for a row waits at most for that
//! one-row statement. Every statement that writes names its match, so Citus routes it to one
//! shard. "Your turn" rows are written by appends ([`super::events`]) and reminders by
//! [`super::turns`].

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::db;
use crate::rows::{
    AttemptValues, Binds, ClaimRow, KeyRow, KeyValues, RECORD_COLUMNS, RecordRow, Time, WebhookRow,
};
use crate::{
    Attempt, Delivery, DeliveryKey, DeliveryRecord, MatchId, REMOVED, StoreError, Webhook,
};

pub(crate) async fn set_webhook(
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
    .bind(id)
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
    .bind(id)
    .bind(i16::from(seat))
    .bind(REMOVED)
    .fetch_one(pool)
    .await
    .map_err(db)?;
    Ok(removed > 0)
}

pub(crate) async fn webhook(
    pool: &PgPool,
    id: MatchId,
    seat: u8,
) -> Result<Option<Webhook>, StoreError> {
    let row: Option<WebhookRow> = sqlx::query_as(
        "SELECT match_id::text AS match_id, seat, url, secret, created_at
         FROM webhooks WHERE match_id = $1::uuid AND seat = $2",
    )
    .bind(id)
    .bind(i16::from(seat))
    .fetch_optional(pool)
    .await
    .map_err(db)?;
    row.map(WebhookRow::into_webhook).transpose()
}

/// The lease of one due outbox row (`$3` to `$6` its key, [`KeyValues`]) until `$2`, if it is
/// still due at `$1`; it returns the row with its seat's current URL and secret.
const CLAIM_ONE: &str = "WITH w AS (
        SELECT url, secret FROM webhooks WHERE match_id = $3 AND seat = $5
    ), c AS (
        UPDATE webhook_outbox
        SET lease_until = $2, next_attempt_at = $2, url = COALESCE((SELECT url FROM w), url)
        WHERE match_id = $3 AND seq = $4 AND seat = $5 AND kind = $6
            AND next_attempt_at IS NOT NULL AND next_attempt_at <= $1
        RETURNING match_id, seq, seat, kind, url, body, attempts
    )
    SELECT c.match_id::text AS match_id, c.seq, c.seat, c.kind, c.url, c.body, c.attempts,
        (SELECT secret FROM w) AS secret
    FROM c";

pub(crate) async fn claim(
    pool: &PgPool,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<Delivery>, StoreError> {
    // Rows another worker took are leased (due again only at the lease's end).
    super::turns::claim_in_rounds(
        limit,
        |want| async move {
            sqlx::query_as::<_, KeyRow>(
                "SELECT match_id::text AS match_id, seq, seat, kind FROM webhook_outbox
                WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= $1
                ORDER BY next_attempt_at LIMIT $2",
            )
            .bind(Time::from(now))
            .bind(i64::from(want))
            .fetch_all(pool)
            .await
            .map_err(db)
        },
        |keys: Vec<KeyRow>| async move {
            // Each row by a statement of its own: its lease reads its seat's webhook too.
            let mut claimed = Vec::new();
            for key in keys {
                let key = key.into_key()?;
                let row: Option<ClaimRow> = sqlx::query_as(CLAIM_ONE)
                    .bind(Time::from(now))
                    .bind(Time::from(lease_until))
                    .params(KeyValues::new(&key)?)
                    .fetch_optional(pool)
                    .await
                    .map_err(db)?;
                claimed.extend(row.map(ClaimRow::into_delivery).transpose()?);
            }
            Ok(claimed)
        },
    )
    .await
}

/// Puts claimed rows back, due at `due_at`, if they are still under the lease `lease_until`:
/// one statement per row, each about its match.
pub(crate) async fn defer(
    pool: &PgPool,
    keys: &[DeliveryKey],
    lease_until: DateTime<Utc>,
    due_at: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let mut deferred = 0;
    for key in keys {
        let done = sqlx::query(
            "UPDATE webhook_outbox SET next_attempt_at = $1, lease_until = NULL
            WHERE match_id = $3 AND seq = $4 AND seat = $5 AND kind = $6
                AND lease_until = $2 AND next_attempt_at IS NOT NULL AND delivered_at IS NULL",
        )
        .bind(Time::from(due_at))
        .bind(Time::from(lease_until))
        .params(KeyValues::new(key)?)
        .execute(pool)
        .await
        .map_err(db)?;
        deferred += done.rows_affected();
    }
    Ok(deferred)
}

pub(crate) async fn record(
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

pub(crate) async fn list(
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
    .bind(id)
    .bind(seat.map(i16::from))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
    .map_err(db)?;
    rows.into_iter().map(RecordRow::into_record).collect()
}
