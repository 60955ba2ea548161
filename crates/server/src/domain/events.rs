//! The match log's events, typed: what each stored event's `kind` and JSON `payload` say, read
//! and written in one place. The field names are the stored ones, so an event written from
//! this type has the canonical bytes, and the hash, that the log has always held (a test
//! re-encodes real matches of every game and compares the bytes).

use missive_store::{MatchId, NewEvent, StoredEvent};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// Event kinds, persisted: never rename one.
pub mod kinds {
    pub const CREATED: &str = "created";
    pub const JOINED: &str = "joined";
    pub const ACTION: &str = "action";
    pub const LEFT: &str = "left";
    /// A turn deadline passed and the server played the default action for the seat.
    pub const TIMEOUT: &str = "timeout";
    /// An open match was closed before it started: cancelled by its creator, or expired.
    pub const CLOSED: &str = "closed";
}

/// Why an open match was closed, as its `closed` event stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CloseReason {
    /// Its creator cancelled it.
    Cancelled,
    /// Nobody joined it for the server's expiry time.
    Expired,
}

/// The creation record: the first event of every match, shared by creation, history, the
/// audit log and its verifier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Creation {
    /// The game's config as the rules read it.
    pub config: Value,
    pub seat_count: u8,
    pub fixed_deck: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_timeout_secs: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_reminder_secs: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bots: Vec<Bot>,
    /// Dealt when the match starts, from the seats' nonces (every match created since nonces
    /// exist); absent on older matches, dealt at creation from the committed seed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deal_at_start: bool,
    /// Seats held for invited players.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invited: Vec<u8>,
    /// The match this one is the rematch of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rematch_of: Option<MatchId>,
}

/// A seat a bot plays from creation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bot {
    pub seat: u8,
    pub strategy: String,
    /// Its part of the deal seed (matches dealt at the start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
}

/// One event of a match's log.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Created(Creation),
    /// A player took a seat; `nonce` is their part of the deal seed (absent on older matches).
    Joined {
        seat: u8,
        player: String,
        nonce: Option<String>,
    },
    /// A seat played an action (the rules' JSON form).
    Action {
        seat: u8,
        action: Value,
    },
    /// A seat's deadline passed and the server played the game's default action for it.
    Timeout {
        seat: u8,
        action: Value,
    },
    /// A seat's holder left it.
    Left {
        seat: u8,
    },
    /// The open match was closed before it started; the server's doing or its creator's, so
    /// no seat acts in it.
    Closed {
        reason: CloseReason,
    },
}

/// A join's payload; written from borrowed strings, read into owned ones.
#[derive(Serialize, Deserialize)]
struct Joined<S> {
    seat: u8,
    player: S,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nonce: Option<S>,
}

/// An action's or a timeout's payload; written from a borrowed action, read into an owned one.
#[derive(Serialize, Deserialize)]
struct Played<A> {
    seat: u8,
    action: A,
}

#[derive(Serialize, Deserialize)]
struct Seat {
    seat: u8,
}

/// A closure's payload.
#[derive(Serialize, Deserialize)]
struct Closed {
    reason: CloseReason,
}

impl Event {
    /// The stored kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Created(_) => kinds::CREATED,
            Event::Joined { .. } => kinds::JOINED,
            Event::Action { .. } => kinds::ACTION,
            Event::Timeout { .. } => kinds::TIMEOUT,
            Event::Left { .. } => kinds::LEFT,
            Event::Closed { .. } => kinds::CLOSED,
        }
    }

    /// The seat the event is about (none for a creation or a closure).
    pub fn seat(&self) -> Option<u8> {
        match self {
            Event::Created(_) | Event::Closed { .. } => None,
            Event::Joined { seat, .. }
            | Event::Action { seat, .. }
            | Event::Timeout { seat, .. }
            | Event::Left { seat } => Some(*seat),
        }
    }

    /// The stored payload.
    pub fn payload(&self) -> Value {
        let value = match self {
            Event::Created(creation) => serde_json::to_value(creation),
            Event::Joined {
                seat,
                player,
                nonce,
            } => serde_json::to_value(Joined {
                seat: *seat,
                player: player.as_str(),
                nonce: nonce.as_deref(),
            }),
            Event::Action { seat, action } | Event::Timeout { seat, action } => {
                serde_json::to_value(Played {
                    seat: *seat,
                    action,
                })
            }
            Event::Left { seat } => serde_json::to_value(Seat { seat: *seat }),
            Event::Closed { reason } => serde_json::to_value(Closed { reason: *reason }),
        };
        value.expect("an event's payload is plain JSON")
    }

    /// The event to append: a timeout is the server's doing, so it has no actor; nor has a
    /// closure, which no seat makes.
    pub fn to_new(
        &self,
        request_id: Option<String>,
        at: chrono::DateTime<chrono::Utc>,
    ) -> NewEvent {
        NewEvent {
            kind: self.kind().to_owned(),
            actor: match self {
                Event::Created(_) | Event::Timeout { .. } | Event::Closed { .. } => None,
                _ => self.seat(),
            },
            request_id,
            payload: self.payload(),
            at,
        }
    }

    /// Reads a stored event's kind and payload.
    pub fn parse(kind: &str, payload: &Value) -> Result<Event, String> {
        fn read<T: for<'de> Deserialize<'de>>(payload: &Value) -> Result<T, String> {
            T::deserialize(payload).map_err(|e| e.to_string())
        }
        Ok(match kind {
            kinds::CREATED => Event::Created(read(payload)?),
            kinds::JOINED => {
                let Joined {
                    seat,
                    player,
                    nonce,
                } = read(payload)?;
                Event::Joined {
                    seat,
                    player,
                    nonce,
                }
            }
            kinds::ACTION => {
                let Played { seat, action } = read(payload)?;
                Event::Action { seat, action }
            }
            kinds::TIMEOUT => {
                let Played { seat, action } = read(payload)?;
                Event::Timeout { seat, action }
            }
            kinds::LEFT => Event::Left {
                seat: read::<Seat>(payload)?.seat,
            },
            kinds::CLOSED => Event::Closed {
                reason: read::<Closed>(payload)?.reason,
            },
            other => return Err(format!("unknown event kind {other:?}")),
        })
    }

    /// A stored event, read; one the server cannot read is corrupt data, not the caller's
    /// fault.
    pub fn of(event: &StoredEvent) -> ApiResult<Event> {
        Event::parse(&event.kind, &event.payload).map_err(|e| {
            ApiError::internal(format!("event {} of {}: {e}", event.seq, event.match_id))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn round_trip(kind: &str, payload: Value) {
        let event = Event::parse(kind, &payload).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(event.kind(), kind);
        assert_eq!(
            event.payload(),
            payload,
            "{kind} re-encodes to the same payload"
        );
    }

    #[test]
    fn every_kind_reads_and_writes_the_stored_fields() {
        round_trip(
            "created",
            json!({"config": {"edition": "2019"}, "seat_count": 2, "fixed_deck": false}),
        );
        round_trip(
            "created",
            json!({"config": {}, "seat_count": 3, "fixed_deck": true, "turn_timeout_secs": 60,
                   "turn_reminder_secs": 10, "deal_at_start": true,
                   "bots": [{"seat": 2, "strategy": "random", "nonce": "n"}]}),
        );
        round_trip(
            "created",
            json!({"config": {}, "seat_count": 2, "fixed_deck": false,
                   "bots": [{"seat": 1, "strategy": "counting"}]}),
        );
        round_trip("joined", json!({"seat": 1, "player": "ann"}));
        round_trip("joined", json!({"seat": 0, "player": "bob", "nonce": "x1"}));
        round_trip(
            "action",
            json!({"seat": 0, "action": {"play": {"card": "4♠"}}}),
        );
        round_trip("timeout", json!({"seat": 1, "action": "pass"}));
        round_trip("left", json!({"seat": 3}));
        round_trip("closed", json!({"reason": "cancelled"}));
        round_trip("closed", json!({"reason": "expired"}));
    }

    #[test]
    fn a_payload_missing_a_field_or_of_an_unknown_kind_is_refused() {
        assert!(Event::parse("joined", &json!({"seat": 1})).is_err());
        assert!(Event::parse("action", &json!({"action": 1})).is_err());
        assert!(Event::parse("left", &json!({"seat": 300})).is_err());
        assert!(Event::parse("renamed", &json!({})).is_err());
        assert!(Event::parse("closed", &json!({})).is_err());
        assert!(Event::parse("closed", &json!({"reason": "bored"})).is_err());
    }

    #[test]
    fn a_timeout_has_no_actor_and_an_action_has_its_seat() {
        let at = chrono::Utc::now();
        let timeout = Event::Timeout {
            seat: 1,
            action: json!("pass"),
        };
        assert_eq!(timeout.to_new(None, at).actor, None);
        let action = Event::Action {
            seat: 1,
            action: json!("pass"),
        };
        assert_eq!(action.to_new(Some("r".into()), at).actor, Some(1));
        assert_eq!(Event::Left { seat: 2 }.to_new(None, at).actor, Some(2));
        let closed = Event::Closed {
            reason: CloseReason::Cancelled,
        };
        assert_eq!(closed.to_new(None, at).actor, None);
    }
}
