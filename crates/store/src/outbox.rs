//! "Your turn" webhooks and their outbox.
//!
//! A seat may register one webhook per match ([`Store::set_webhook`]). An append whose
//! [`MatchUpdate::notify`](crate::MatchUpdate::notify) names seats inserts, in the same statement
//! or transaction as its events, one outbox row per named seat that has a webhook: a
//! notification is therefore never lost once its event is acknowledged, and never exists for an
//! event that was not stored. Delivery workers (one per server, any number of servers)
//! [`claim`](crate::Store::claim_deliveries) due rows under a lease, post them, and
//! [`record`](crate::Store::record_delivery) the outcome; the row, with its attempts, last status and
//! last error, is the delivery record ([`Store::deliveries`]).
//!
//! A row is due while `next_attempt_at` is set and past. Claiming moves `next_attempt_at` to the
//! end of the lease, so a worker that dies mid-delivery only delays the row: it is claimed again
//! once the lease runs out (delivery is at least once). Delivered and given-up rows have no
//! `next_attempt_at`.
//!
//! The store never renders a payload: the server hands it the exact bytes to post, with the
//! append ([`Notification`]) or when reminders fall due (from a [`Reminder`]), and the outbox
//! keeps them. This module holds the public types; each backend's `outbox.rs` its queries.
//!
//! [`Store::set_webhook`]: crate::Store::set_webhook
//! [`Store::deliveries`]: crate::Store::deliveries
//! [`Store::queue_reminders`]: crate::Store::queue_reminders

use chrono::{DateTime, Utc};

use crate::{MatchId, Notification, StoreError};

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

/// The error recorded on pending rows when their seat's webhook is removed.
pub const REMOVED: &str = "webhook removed";

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
