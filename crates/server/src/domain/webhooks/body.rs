//! What a webhook carries: the delivery id, the JSON bodies (no game state in any) and their
//! signature.

use chrono::{DateTime, SecondsFormat, Utc};
use hmac::{Hmac, Mac};
use missive_store::{DeliveryKey, MatchId, Notification, NotificationKind, Reminder};
use serde::Serialize;
use sha2::Sha256;

/// The [`DELIVERY_HEADER`] of a notification: one id per outbox row, the same on every attempt.
pub fn delivery_id(key: &DeliveryKey) -> String {
    let id = format!("{}/{}/{}", key.match_id, key.seq, key.seat);
    match key.kind {
        NotificationKind::YourTurn => id,
        kind => format!("{id}/{}", kind.as_str()),
    }
}

/// The payload posted to a seat's webhook when the event `seq` makes it awaited. It carries no
/// game state: the receiver fetches the seat's view with the seat's token.
pub fn your_turn_body(match_id: MatchId, seq: u64, seat: u8, at: DateTime<Utc>) -> String {
    Body {
        at: &at.to_rfc3339_opts(SecondsFormat::Micros, true),
        due_at: None,
        match_id: &match_id.to_string(),
        seat,
        kind: NotificationKind::YourTurn.as_str(),
        version: seq,
    }
    .encode()
}

/// The payload posted to a seat's webhook at `remind_at`, ahead of its deadline `due_at`, while
/// it is awaited after event `seq` (the version to act on). Like [`your_turn_body`], it carries
/// no game state.
pub fn turn_reminder_body(r: &Reminder) -> String {
    Body {
        at: &r.remind_at.to_rfc3339_opts(SecondsFormat::Micros, true),
        due_at: Some(&r.due_at.to_rfc3339_opts(SecondsFormat::Micros, true)),
        match_id: &r.match_id.to_string(),
        seat: r.seat,
        kind: NotificationKind::TurnReminder.as_str(),
        version: r.seq,
    }
    .encode()
}

/// A notification's payload, its fields in the byte order of their keys (the order the bodies
/// have always been sent in).
#[derive(Serialize)]
struct Body<'a> {
    at: &'a str,
    #[serde(rename = "dueAt", skip_serializing_if = "Option::is_none")]
    due_at: Option<&'a str>,
    #[serde(rename = "matchId")]
    match_id: &'a str,
    seat: u8,
    #[serde(rename = "type")]
    kind: &'a str,
    version: u64,
}

impl Body<'_> {
    fn encode(&self) -> String {
        // Strings and integers always serialise.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The "your turn" notifications of `seats`, newly awaited after the event `seq` appended at
/// `at`, for [`missive_store::MatchUpdate::notify`].
pub fn your_turn(
    match_id: MatchId,
    seq: u64,
    at: DateTime<Utc>,
    seats: impl IntoIterator<Item = u8>,
) -> Vec<Notification> {
    // The store keeps the event's time to the microsecond; the body says what it keeps.
    let at = missive_store::truncate_to_micros(at);
    seats
        .into_iter()
        .map(|seat| Notification {
            seat,
            body: your_turn_body(match_id, seq, seat, at),
        })
        .collect()
}

/// The signature header's value for `body` sent at `timestamp` (unix seconds).
pub fn sign(secret: &[u8; 32], timestamp: i64, body: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key size");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_these_exact_bytes() {
        let id: MatchId = "0b9e6c1e-5a4f-4d2b-9c3e-7f1a2b3c4d5e"
            .parse()
            .expect("uuid");
        let at = DateTime::parse_from_rfc3339("2026-01-02T03:04:05.678901234Z")
            .expect("time")
            .with_timezone(&Utc);
        let due_at = at + chrono::Duration::seconds(30);
        assert_eq!(
            your_turn_body(id, 7, 1, at),
            r#"{"at":"2026-01-02T03:04:05.678901Z","matchId":"0b9e6c1e-5a4f-4d2b-9c3e-7f1a2b3c4d5e","seat":1,"type":"your_turn","version":7}"#
        );
        assert_eq!(
            your_turn(id, 7, at, [1]),
            [Notification {
                seat: 1,
                body: your_turn_body(id, 7, 1, at)
            }]
        );
        let reminder = Reminder {
            match_id: id,
            seq: 7,
            seat: 2,
            due_at,
            remind_at: at,
        };
        assert_eq!(
            turn_reminder_body(&reminder),
            r#"{"at":"2026-01-02T03:04:05.678901Z","dueAt":"2026-01-02T03:04:35.678901Z","matchId":"0b9e6c1e-5a4f-4d2b-9c3e-7f1a2b3c4d5e","seat":2,"type":"turn_reminder","version":7}"#
        );
    }

    #[test]
    fn signatures_cover_the_timestamp_and_the_body() {
        let secret = [7u8; 32];
        let sig = sign(&secret, 1_700_000_000, r#"{"a":1}"#);
        assert!(sig.starts_with("sha256="));
        assert_eq!(sig.len(), "sha256=".len() + 64);
        assert_ne!(sig, sign(&secret, 1_700_000_001, r#"{"a":1}"#));
        assert_ne!(sig, sign(&secret, 1_700_000_000, r#"{"a":2}"#));
        assert_ne!(sig, sign(&[8u8; 32], 1_700_000_000, r#"{"a":1}"#));
        // Computed independently (Python's hmac module) for this key and message.
        assert_eq!(
            sig,
            "sha256=fa499c40baa09b566dfde0859145f8950e319e3b0f33a29fa072f3fa436334b1"
        );
    }
}
