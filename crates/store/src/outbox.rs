//! "Your turn" webhooks and their outbox.
//!
//! A seat may register one webhook per match ([`Store::set_webhook`]). An append whose
//! [`MatchUpdate::notify`](crate::MatchUpdate::notify) names seats inserts, in the same statement
//! or transaction as its events, one outbox row per named seat that has a webhook: a
//! notification is therefore never lost once its event is acknowledged, and never exists for an
//! event that was not stored. Delivery workers (one per server, any number of servers)
//! [`claim`](Store::claim_deliveries) due rows under a lease, post them, and
//! [`record`](Store::record_delivery) the outcome; the row, with its attempts, last status and
//! last error, is the delivery record ([`Store::deliveries`]).
//!
//! A row is due while `next_attempt_at` is set and past. Claiming moves `next_attempt_at` to the
//! end of the lease, so a worker that dies mid-delivery only delays the row: it is claimed again
//! once the lease runs out (delivery is at least once). Delivered and given-up rows have no
//! `next_attempt_at`.

use chrono::{DateTime, TimeZone, Utc};

use crate::rows::{hash32, parse_id};
use crate::{Backend, MatchId, Store, StoreError};

/// A seat's webhook.
#[derive(Clone, PartialEq, Eq)]
pub struct Webhook {
    /// The match.
    pub match_id: MatchId,
    /// The seat it notifies.
    pub seat: u8,
    /// Where notifications are posted.
    pub url: String,
    /// The HMAC-SHA256 key the payloads are signed with.
    pub secret: [u8; 32],
    /// When it was registered (or last replaced).
    pub created_at: DateTime<Utc>,
}

impl std::fmt::Debug for Webhook {
    // The secret is a credential: never print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("match_id", &self.match_id)
            .field("seat", &self.seat)
            .field("url", &self.url)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

/// What a notification tells its seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NotificationKind {
    /// The seat became awaited.
    YourTurn,
    /// The seat's deadline is near ([`Reminder`]).
    TurnReminder,
}

impl NotificationKind {
    /// The name stored in the outbox and posted as the payload's `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::YourTurn => "your_turn",
            NotificationKind::TurnReminder => "turn_reminder",
        }
    }

    pub(crate) fn parse(kind: &str) -> Result<Self, StoreError> {
        match kind {
            "your_turn" => Ok(NotificationKind::YourTurn),
            "turn_reminder" => Ok(NotificationKind::TurnReminder),
            other => Err(StoreError::Corrupt(format!(
                "unknown notification kind {other:?}"
            ))),
        }
    }
}

/// Identifies one outbox row: a notification of `kind` to `seat`, about the event `seq` that
/// made it awaited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeliveryKey {
    /// The match.
    pub match_id: MatchId,
    /// The event's seq.
    pub seq: u64,
    /// The seat notified.
    pub seat: u8,
    /// What the notification says.
    pub kind: NotificationKind,
}

/// A notification claimed for delivery.
#[derive(Clone, PartialEq, Eq)]
pub struct Delivery {
    /// Which row.
    pub key: DeliveryKey,
    /// Where to post it: the seat's current webhook URL.
    pub url: String,
    /// The exact bytes to post and sign.
    pub body: String,
    /// The seat's current webhook secret; `None` when the webhook has been removed since.
    pub secret: Option<[u8; 32]>,
    /// Attempts made before this one.
    pub attempts: u32,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("key", &self.key)
            .field("url", &self.url)
            .field("body", &self.body)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

/// The outcome of one delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// The receiver answered 2xx.
    Delivered {
        /// The HTTP status.
        status: u16,
    },
    /// Anything else.
    Failed {
        /// The HTTP status, if the receiver answered at all.
        status: Option<u16>,
        /// What went wrong, for the record.
        error: String,
        /// When to try again; `None` gives up.
        retry_at: Option<DateTime<Utc>>,
    },
}

/// An outbox row, as the delivery record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRecord {
    /// Which row.
    pub key: DeliveryKey,
    /// Where it was (or will be) posted.
    pub url: String,
    /// The payload.
    pub body: String,
    /// Attempts made.
    pub attempts: u32,
    /// When the next attempt is due (or the current claim ends); `None` once delivered or given up.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// When a receiver accepted it.
    pub delivered_at: Option<DateTime<Utc>>,
    /// The HTTP status of the last attempt, if the receiver answered.
    pub last_status: Option<u16>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// When it was enqueued (the event's append).
    pub created_at: DateTime<Utc>,
}

/// A notification an append queues for a seat (see [`MatchUpdate::notify`]): the exact bytes
/// the server will post and sign, rendered by the server for the append's last event.
///
/// [`MatchUpdate::notify`]: crate::MatchUpdate::notify
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// The seat notified, if it has a webhook.
    pub seat: u8,
    /// The payload.
    pub body: String,
}

/// A reminder that fell due ([`Store::queue_reminders`]): what its notification tells the seat,
/// for the server to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reminder {
    /// The match.
    pub match_id: MatchId,
    /// The seq the seat is awaited after: the version to act on.
    pub seq: u64,
    /// The seat reminded.
    pub seat: u8,
    /// The seat's deadline.
    pub due_at: DateTime<Utc>,
    /// When the reminder fell due.
    pub remind_at: DateTime<Utc>,
}

/// Times in the outbox tables, as integer microseconds since the epoch (SQLite stores them so;
/// PostgreSQL converts in its queries).
pub(crate) fn micros(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

fn from_micros(us: i64) -> Result<DateTime<Utc>, StoreError> {
    Utc.timestamp_micros(us)
        .single()
        .ok_or_else(|| StoreError::Corrupt(format!("time {us} out of range")))
}

fn small(value: i64, what: &str) -> Result<u8, StoreError> {
    u8::try_from(value).map_err(|_| StoreError::Corrupt(format!("{what} {value} out of range")))
}

fn seq(value: i64) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt(format!("seq {value} is negative")))
}

fn to_i64(value: u64) -> Result<i64, StoreError> {
    crate::rows::to_i64(value)
}

#[derive(Debug, sqlx::FromRow)]
struct WebhookRow {
    match_id: String,
    seat: i64,
    url: String,
    secret: Vec<u8>,
    created_at: i64,
}

impl WebhookRow {
    fn into_webhook(self) -> Result<Webhook, StoreError> {
        Ok(Webhook {
            match_id: parse_id(&self.match_id)?,
            seat: small(self.seat, "seat")?,
            url: self.url,
            secret: hash32(&self.secret, "webhook secret")?,
            created_at: from_micros(self.created_at)?,
        })
    }
}

#[derive(Debug, sqlx::FromRow)]
struct ClaimRow {
    match_id: String,
    seq: i64,
    seat: i64,
    kind: String,
    url: String,
    body: String,
    attempts: i64,
    secret: Option<Vec<u8>>,
}

impl ClaimRow {
    fn into_delivery(self) -> Result<Delivery, StoreError> {
        Ok(Delivery {
            key: DeliveryKey {
                match_id: parse_id(&self.match_id)?,
                seq: seq(self.seq)?,
                seat: small(self.seat, "seat")?,
                kind: NotificationKind::parse(&self.kind)?,
            },
            url: self.url,
            body: self.body,
            secret: self
                .secret
                .map(|s| hash32(&s, "webhook secret"))
                .transpose()?,
            attempts: u32::try_from(self.attempts).unwrap_or(u32::MAX),
        })
    }
}

#[derive(Debug, sqlx::FromRow)]
struct RecordRow {
    match_id: String,
    seq: i64,
    seat: i64,
    kind: String,
    url: String,
    body: String,
    attempts: i64,
    next_attempt_at: Option<i64>,
    delivered_at: Option<i64>,
    last_status: Option<i64>,
    last_error: Option<String>,
    created_at: i64,
}

impl RecordRow {
    fn into_record(self) -> Result<DeliveryRecord, StoreError> {
        Ok(DeliveryRecord {
            key: DeliveryKey {
                match_id: parse_id(&self.match_id)?,
                seq: seq(self.seq)?,
                seat: small(self.seat, "seat")?,
                kind: NotificationKind::parse(&self.kind)?,
            },
            url: self.url,
            body: self.body,
            attempts: u32::try_from(self.attempts).unwrap_or(u32::MAX),
            next_attempt_at: self.next_attempt_at.map(from_micros).transpose()?,
            delivered_at: self.delivered_at.map(from_micros).transpose()?,
            last_status: self.last_status.and_then(|s| u16::try_from(s).ok()),
            last_error: self.last_error,
            created_at: from_micros(self.created_at)?,
        })
    }
}

/// PostgreSQL keeps outbox times as `timestamptz`; these read them as microseconds.
fn pg_us(column: &str) -> String {
    format!("(EXTRACT(EPOCH FROM {column}) * 1000000)::bigint")
}

fn record_columns(pg: bool) -> String {
    if !pg {
        return "match_id, seq, seat, kind, url, body, attempts, next_attempt_at, delivered_at, \
            last_status, last_error, created_at"
            .to_owned();
    }
    format!(
        "match_id::text AS match_id, seq, seat::bigint AS seat, kind, url, body, \
         attempts::bigint AS attempts, {} AS next_attempt_at, {} AS delivered_at, \
         last_status::bigint AS last_status, last_error, {} AS created_at",
        pg_us("next_attempt_at"),
        pg_us("delivered_at"),
        pg_us("created_at")
    )
}

/// The error recorded on pending rows when their seat's webhook is removed.
pub const REMOVED: &str = "webhook removed";

impl Store {
    /// Registers (or replaces) `seat`'s webhook. Notifications already queued for the seat go
    /// to the new URL, signed with the new secret.
    pub async fn set_webhook(
        &self,
        id: MatchId,
        seat: u8,
        url: &str,
        secret: [u8; 32],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let now = crate::truncate_to_micros(now);
        let sql = "INSERT INTO webhooks (match_id, seat, url, secret, created_at)";
        let result = match &self.backend {
            Backend::Postgres(pg) => sqlx::query(&format!(
                "{sql} VALUES ($1::uuid, $2, $3, $4, $5)
                 ON CONFLICT (match_id, seat) DO UPDATE
                     SET url = EXCLUDED.url, secret = EXCLUDED.secret, created_at = EXCLUDED.created_at"
            ))
            .bind(id.to_string())
            .bind(i16::from(seat))
            .bind(url)
            .bind(secret.to_vec())
            .bind(now)
            .execute(&pg.pool)
            .await
            .map(drop),
            Backend::Sqlite(pool) => sqlx::query(&format!(
                "{sql} VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (match_id, seat) DO UPDATE
                     SET url = excluded.url, secret = excluded.secret, created_at = excluded.created_at"
            ))
            .bind(id.to_string())
            .bind(i16::from(seat))
            .bind(url)
            .bind(secret.to_vec())
            .bind(micros(now))
            .execute(pool)
            .await
            .map(drop),
        };
        result.map_err(StoreError::from_sqlx)
    }

    /// Removes `seat`'s webhook and gives up the notifications still queued for it (their
    /// `last_error` says why). Returns whether there was one.
    pub async fn remove_webhook(&self, id: MatchId, seat: u8) -> Result<bool, StoreError> {
        let cancel = "UPDATE webhook_outbox SET next_attempt_at = NULL, last_error = $3
            WHERE match_id = $1 AND seat = $2 AND next_attempt_at IS NOT NULL";
        let remove = "DELETE FROM webhooks WHERE match_id = $1 AND seat = $2";
        let removed = match &self.backend {
            Backend::Postgres(pg) => {
                // One statement, so one round trip: joins call this for every seat taken.
                let both = format!(
                    "WITH removed AS ({} RETURNING seat), cancelled AS ({}) SELECT count(*) FROM removed",
                    remove.replace("$1", "$1::uuid"),
                    cancel.replace("$1", "$1::uuid")
                );
                let removed: i64 = sqlx::query_scalar(&both)
                    .bind(id.to_string())
                    .bind(i16::from(seat))
                    .bind(REMOVED)
                    .fetch_one(&pg.pool)
                    .await
                    .map_err(StoreError::from_sqlx)?;
                u64::try_from(removed).unwrap_or(0)
            }
            Backend::Sqlite(pool) => {
                let mut tx = pool
                    .begin_with("BEGIN IMMEDIATE")
                    .await
                    .map_err(StoreError::from_sqlx)?;
                let removed = sqlx::query(&remove.replace('$', "?"))
                    .bind(id.to_string())
                    .bind(i16::from(seat))
                    .execute(&mut *tx)
                    .await
                    .map_err(StoreError::from_sqlx)?
                    .rows_affected();
                sqlx::query(&cancel.replace('$', "?"))
                    .bind(id.to_string())
                    .bind(i16::from(seat))
                    .bind(REMOVED)
                    .execute(&mut *tx)
                    .await
                    .map_err(StoreError::from_sqlx)?;
                tx.commit().await.map_err(StoreError::from_sqlx)?;
                removed
            }
        };
        Ok(removed > 0)
    }

    /// `seat`'s webhook, if it has one.
    pub async fn webhook(&self, id: MatchId, seat: u8) -> Result<Option<Webhook>, StoreError> {
        let row: Option<WebhookRow> = match &self.backend {
            Backend::Postgres(pg) => sqlx::query_as(&format!(
                "SELECT match_id::text AS match_id, seat::bigint AS seat, url, secret, {} AS created_at
                 FROM webhooks WHERE match_id = $1::uuid AND seat = $2",
                pg_us("created_at")
            ))
            .bind(id.to_string())
            .bind(i16::from(seat))
            .fetch_optional(&pg.pool)
            .await,
            Backend::Sqlite(pool) => sqlx::query_as(
                "SELECT match_id, seat, url, secret, created_at
                 FROM webhooks WHERE match_id = ?1 AND seat = ?2",
            )
            .bind(id.to_string())
            .bind(i16::from(seat))
            .fetch_optional(pool)
            .await,
        }
        .map_err(StoreError::from_sqlx)?;
        row.map(WebhookRow::into_webhook).transpose()
    }

    /// Claims up to `limit` due notifications, of any match, until `lease_until`: no other
    /// worker claims them before then. Each comes with its seat's current webhook URL and
    /// secret (no secret when the webhook has been removed).
    pub async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        let rows: Vec<ClaimRow> = match &self.backend {
            Backend::Postgres(pg) => sqlx::query_as(
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
                RETURNING o.match_id::text AS match_id, o.seq, o.seat::bigint AS seat, o.kind,
                    o.url, o.body, o.attempts::bigint AS attempts, w.secret",
            )
            .bind(crate::truncate_to_micros(now))
            .bind(crate::truncate_to_micros(lease_until))
            .bind(i64::from(limit))
            .fetch_all(&pg.pool)
            .await
            .map_err(StoreError::from_sqlx)?,
            Backend::Sqlite(pool) => {
                // One writer at a time: the immediate transaction is the claim's lock.
                let mut tx = pool
                    .begin_with("BEGIN IMMEDIATE")
                    .await
                    .map_err(StoreError::from_sqlx)?;
                let rows: Vec<ClaimRow> = sqlx::query_as(
                    "SELECT o.match_id, o.seq, o.seat, o.kind, COALESCE(w.url, o.url) AS url, o.body,
                        o.attempts, w.secret
                     FROM webhook_outbox o
                     LEFT JOIN webhooks w ON w.match_id = o.match_id AND w.seat = o.seat
                     WHERE o.next_attempt_at IS NOT NULL AND o.next_attempt_at <= ?1
                     ORDER BY o.next_attempt_at LIMIT ?2",
                )
                .bind(micros(now))
                .bind(i64::from(limit))
                .fetch_all(&mut *tx)
                .await
                .map_err(StoreError::from_sqlx)?;
                for row in &rows {
                    sqlx::query(
                        "UPDATE webhook_outbox SET lease_until = ?1, next_attempt_at = ?1, url = ?2
                         WHERE match_id = ?3 AND seq = ?4 AND seat = ?5 AND kind = ?6",
                    )
                    .bind(micros(lease_until))
                    .bind(&row.url)
                    .bind(&row.match_id)
                    .bind(row.seq)
                    .bind(row.seat)
                    .bind(&row.kind)
                    .execute(&mut *tx)
                    .await
                    .map_err(StoreError::from_sqlx)?;
                }
                tx.commit().await.map_err(StoreError::from_sqlx)?;
                rows
            }
        };
        rows.into_iter().map(ClaimRow::into_delivery).collect()
    }

    /// Records one attempt at a claimed notification: delivered, or failed and retried at
    /// `retry_at` (or given up). A row already delivered is left as it is.
    pub async fn record_delivery(
        &self,
        key: DeliveryKey,
        attempt: &Attempt,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let now = crate::truncate_to_micros(now);
        let (delivered, status, error, retry) = match attempt {
            Attempt::Delivered { status } => (Some(now), Some(*status), None, None),
            Attempt::Failed {
                status,
                error,
                retry_at,
            } => (
                None,
                *status,
                Some(error.as_str()),
                retry_at.map(crate::truncate_to_micros),
            ),
        };
        let sql = "UPDATE webhook_outbox SET attempts = attempts + 1, delivered_at = $1,
                next_attempt_at = $2, lease_until = NULL, last_status = $3, last_error = $4
            WHERE match_id = $5 AND seq = $6 AND seat = $7 AND kind = $8 AND delivered_at IS NULL";
        let result = match &self.backend {
            Backend::Postgres(pg) => sqlx::query(&sql.replace("$5", "$5::uuid"))
                .bind(delivered)
                .bind(retry)
                .bind(status.map(i32::from))
                .bind(error)
                .bind(key.match_id.to_string())
                .bind(to_i64(key.seq)?)
                .bind(i16::from(key.seat))
                .bind(key.kind.as_str())
                .execute(&pg.pool)
                .await
                .map(drop),
            Backend::Sqlite(pool) => sqlx::query(&sql.replace('$', "?"))
                .bind(delivered.map(micros))
                .bind(retry.map(micros))
                .bind(status.map(i32::from))
                .bind(error)
                .bind(key.match_id.to_string())
                .bind(to_i64(key.seq)?)
                .bind(i16::from(key.seat))
                .bind(key.kind.as_str())
                .execute(pool)
                .await
                .map(drop),
        };
        result.map_err(StoreError::from_sqlx)
    }

    /// The delivery records of a match, optionally of one seat, newest event first, at most
    /// `limit`.
    pub async fn deliveries(
        &self,
        id: MatchId,
        seat: Option<u8>,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        let rows: Vec<RecordRow> = match &self.backend {
            Backend::Postgres(pg) => {
                sqlx::query_as(&format!(
                    "SELECT {} FROM webhook_outbox
                 WHERE match_id = $1::uuid AND ($2::smallint IS NULL OR seat = $2)
                 ORDER BY seq DESC, seat, kind LIMIT $3",
                    record_columns(true)
                ))
                .bind(id.to_string())
                .bind(seat.map(i16::from))
                .bind(i64::from(limit))
                .fetch_all(&pg.pool)
                .await
            }
            Backend::Sqlite(pool) => {
                sqlx::query_as(&format!(
                    "SELECT {} FROM webhook_outbox
                 WHERE match_id = ?1 AND (?2 IS NULL OR seat = ?2)
                 ORDER BY seq DESC, seat, kind LIMIT ?3",
                    record_columns(false)
                ))
                .bind(id.to_string())
                .bind(seat.map(i16::from))
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await
            }
        }
        .map_err(StoreError::from_sqlx)?;
        rows.into_iter().map(RecordRow::into_record).collect()
    }
}

/// The seats to notify of an append and their payloads, for the append statements: one per
/// seat, the first named.
pub(crate) fn bodies(notify: &[Notification]) -> (Vec<i16>, Vec<String>) {
    let mut notify: Vec<&Notification> = notify.iter().collect();
    notify.sort_by_key(|n| n.seat);
    notify.dedup_by_key(|n| n.seat);
    notify
        .into_iter()
        .map(|n| (i16::from(n.seat), n.body.clone()))
        .unzip()
}
