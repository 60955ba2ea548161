//! Checking a finished match's exported log ([`pb::AuditLog`]) without trusting the server:
//! rebuild each stored event from its typed form, recompute the hash chain, check the seed
//! against the commitment published at creation, and replay every action through the rules,
//! dealt from the seed `deal.rs` defines: for a match dealt at its start, the committed seed
//! and the nonces of the seats' holders when the last seat was taken.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use missive_proto::v1 as pb;
use missive_store::{GENESIS_HASH, MatchId, NewEvent, canonical_bytes, event_hash};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::events::{Bot, Creation, Event};
use crate::games::{GameKind, MatchState, Registry};
use crate::table::{Replay, Table};

/// The audit format this server exports and [`verify`] reads: the canonical bytes, the hash
/// chain and the payload forms of docs/AUDIT.md.
pub const FORMAT: u32 = 1;

/// The GetHistory response header (HTTP) and metadata key (gRPC) that carries [`FORMAT`].
pub const FORMAT_HEADER: &str = "missive-audit-format";

/// Why a log does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    #[error("event {seq}: {reason}")]
    Event { seq: u64, reason: String },
    #[error("the seed does not match the commitment")]
    SeedMismatch,
    #[error("{0}")]
    Malformed(String),
}

fn bad(seq: u64, reason: impl Into<String>) -> AuditError {
    AuditError::Event {
        seq,
        reason: reason.into(),
    }
}

fn time(at: Option<&pbjson_types::Timestamp>) -> Option<DateTime<Utc>> {
    let at = at?;
    DateTime::from_timestamp(at.seconds, u32::try_from(at.nanos).ok()?)
}

/// The event as the store holds it, rebuilt from its typed export. `created` is the match's
/// first event, whose options give the game config that later payloads are read against.
pub fn stored_event(
    registry: &Registry,
    event: &pb::AuditEvent,
    created: Option<&pb::MatchCreated>,
) -> Result<NewEvent, AuditError> {
    let game = created
        .map(|created| game_of(registry, event.seq, created))
        .transpose()?;
    rebuild(registry, event, game.as_deref()).map(|(stored, _)| stored)
}

/// The game a match's creation names.
fn game_of(
    registry: &Registry,
    seq: u64,
    created: &pb::MatchCreated,
) -> Result<Arc<dyn GameKind>, AuditError> {
    let options = created
        .options
        .as_ref()
        .ok_or_else(|| bad(seq, "no options"))?;
    let seats = u8::try_from(created.seat_count).map_err(|_| bad(seq, "seat count"))?;
    let (game, _) = registry
        .parse_options(options, Some(seats))
        .map_err(|e| bad(seq, e.to_string()))?;
    Ok(game)
}

/// [`stored_event`], with the event typed, once the match's `game` is known (from its
/// creation; `None` before it).
fn rebuild(
    registry: &Registry,
    event: &pb::AuditEvent,
    game: Option<&dyn GameKind>,
) -> Result<(NewEvent, Event), AuditError> {
    use pb::audit_event::Body;
    let seq = event.seq;
    let seat = |seat: u32| u8::try_from(seat).map_err(|_| bad(seq, "seat out of range"));
    let nonce = |nonce: &str| (!nonce.is_empty()).then(|| nonce.to_owned());
    let typed = match &event.body {
        Some(Body::Created(c)) => {
            let options = c.options.as_ref().ok_or_else(|| bad(seq, "no options"))?;
            let seats = u8::try_from(c.seat_count).map_err(|_| bad(seq, "seat count"))?;
            let (_, parsed) = registry
                .parse_options(options, Some(seats))
                .map_err(|e| bad(seq, e.to_string()))?;
            Event::Created(Creation {
                config: parsed.config,
                seat_count: seats,
                fixed_deck: c.fixed_deck,
                turn_timeout_secs: c.turn_timeout_secs,
                turn_reminder_secs: c.turn_reminder_secs,
                bots: c
                    .bots
                    .iter()
                    .map(|b| {
                        Ok(Bot {
                            seat: seat(b.seat)?,
                            strategy: b.strategy.clone(),
                            nonce: nonce(&b.nonce),
                        })
                    })
                    .collect::<Result<_, AuditError>>()?,
                deal_at_start: c.deal_at_start,
                invited: c
                    .invited_seats
                    .iter()
                    .map(|&s| seat(s))
                    .collect::<Result<_, AuditError>>()?,
                rematch_of: match c.rematch_of.as_str() {
                    "" => None,
                    id => Some(
                        id.parse()
                            .map_err(|_| bad(seq, "rematchOf is not a match id"))?,
                    ),
                },
            })
        }
        Some(Body::Joined(j)) => Event::Joined {
            seat: seat(j.seat)?,
            player: j.player.clone(),
            nonce: nonce(&j.nonce),
        },
        Some(Body::Left(l)) => Event::Left {
            seat: seat(l.seat)?,
        },
        Some(Body::Action(pb::ActionTaken { seat: s, action }))
        | Some(Body::TimedOut(pb::TurnTimedOut { seat: s, action })) => {
            let game = game.ok_or_else(|| bad(seq, "action before creation"))?;
            let action = action.as_ref().ok_or_else(|| bad(seq, "no action"))?;
            let action = game
                .parse_action(action)
                .and_then(|action| game.encode_action(&action))
                .map_err(|e| bad(seq, e.to_string()))?;
            let seat = seat(*s)?;
            if matches!(event.body, Some(Body::Action(_))) {
                Event::Action { seat, action }
            } else {
                Event::Timeout { seat, action }
            }
        }
        None => return Err(bad(seq, "an event without a body")),
    };
    if typed.kind() != event.kind {
        return Err(bad(
            seq,
            format!("a {} body in a {} event", typed.kind(), event.kind),
        ));
    }
    let stored = NewEvent {
        kind: event.kind.clone(),
        actor: event.actor.map(|a| a as u8),
        request_id: event.request_id.clone(),
        payload: typed.payload(),
        at: time(event.at.as_ref()).ok_or_else(|| bad(seq, "bad timestamp"))?,
    };
    Ok((stored, typed))
}

/// Verifies `log` of match `match_id` and returns the state its actions replay to.
pub fn verify(
    registry: &Registry,
    match_id: MatchId,
    log: &pb::AuditLog,
) -> Result<Box<dyn MatchState>, AuditError> {
    let seed: [u8; 32] = hex::decode(&log.seed)
        .ok()
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| AuditError::Malformed("the seed is not 32 hex bytes".into()))?;
    if hex::encode(Sha256::digest(seed)) != log.seed_commitment {
        return Err(AuditError::SeedMismatch);
    }
    let mut prev = GENESIS_HASH;
    let mut table: Option<Table> = None;
    for (i, event) in log.events.iter().enumerate() {
        let seq = event.seq;
        if seq != i as u64 + 1 {
            return Err(bad(seq, format!("expected seq {}", i + 1)));
        }
        let game = table.as_ref().map(|t| t.game().as_ref());
        let (stored, typed) = rebuild(registry, event, game)?;
        if hex::encode(prev) != event.prev_hash {
            return Err(bad(seq, "prev_hash does not link to the previous event"));
        }
        let hash = event_hash(&prev, &canonical_bytes(match_id, seq, &stored));
        if hex::encode(hash) != event.hash {
            return Err(bad(seq, "hash does not match the event's content"));
        }
        prev = hash;
        if let (Some(pb::audit_event::Body::Created(c)), Event::Created(creation)) =
            (&event.body, &typed)
        {
            if table.is_some() {
                return Err(bad(seq, "a second creation"));
            }
            let game = game_of(registry, seq, c)?;
            // Dealt at creation from the committed seed itself (older matches), or at the start.
            let dealt = Table::new(
                game,
                &creation.config,
                creation.seat_count,
                seed,
                (log.rules_version, creation.deal_at_start),
            );
            table = Some(dealt.map_err(|e| bad(seq, e.to_string()))?);
        }
        let table = table
            .as_mut()
            .ok_or_else(|| bad(seq, "an event before the creation"))?;
        if matches!(typed, Event::Action { .. } | Event::Timeout { .. }) && !table.dealt() {
            return Err(bad(seq, "action before the deal"));
        }
        // The same fold as the server's: the event that fills the last seat deals, from the
        // committed seed and the nonce of every seat's holder at that moment.
        table.replay(seq, &typed).map_err(|e| match e {
            Replay::Refused(refusal) => bad(
                seq,
                format!("the rules refuse this action: {}", refusal.rule),
            ),
            Replay::Unreadable(ApiError::Internal(detail)) => bad(seq, detail),
            Replay::Unreadable(e) => bad(seq, e.to_string()),
        })?;
    }
    match table {
        Some(table) if table.dealt() => Ok(table.state().boxed_clone()),
        Some(_) => Err(AuditError::Malformed("the match never started".into())),
        None => Err(AuditError::Malformed(
            "the log has no creation event".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    //! docs/AUDIT.md against the code: its worked example verifies and its canonical bytes and
    //! hashes are the ones this code computes; its config and action forms are the ones the
    //! games map the API's messages to.

    use super::*;
    use crate::deal;
    use crate::events::kinds;

    const DOC: &str = include_str!("../../../docs/AUDIT.md");

    /// The fenced blocks whose info string starts with `marker`: (the rest of the info string,
    /// the block's text).
    fn blocks(marker: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut lines = DOC.lines();
        while let Some(line) = lines.next() {
            let Some(info) = line.trim_start().strip_prefix("```") else {
                continue;
            };
            let mut words = info.split_whitespace();
            let _language = words.next();
            let current = words.next() == Some(marker);
            let rest: Vec<&str> = words.collect();
            let mut body = Vec::new();
            for line in lines.by_ref() {
                if line.trim_start().starts_with("```") {
                    break;
                }
                body.push(line);
            }
            if current {
                out.push((rest.join(" "), body.join("\n")));
            }
        }
        out
    }

    fn one(marker: &str) -> String {
        let found = blocks(marker);
        assert_eq!(found.len(), 1, "one {marker} block in docs/AUDIT.md");
        found[0].1.clone()
    }

    #[test]
    fn the_worked_example_verifies_and_its_bytes_and_hashes_are_the_codes() {
        let match_id: MatchId = one("audit-example-match")
            .trim()
            .parse()
            .expect("a match id");
        let log: pb::AuditLog =
            serde_json::from_str(&one("audit-example-log")).expect("an AuditLog in JSON");
        let registry = Registry::new();
        verify(&registry, match_id, &log).expect("the worked example verifies");

        let seed: [u8; 32] = hex::decode(&log.seed)
            .expect("hex seed")
            .try_into()
            .expect("32 bytes");
        assert_eq!(hex::encode(Sha256::digest(seed)), log.seed_commitment);
        let nonces: Vec<String> = log
            .events
            .iter()
            .filter_map(|e| match &e.body {
                Some(pb::audit_event::Body::Joined(j)) => Some(j.nonce.clone()),
                _ => None,
            })
            .collect();
        let nonces: Vec<&str> = nonces.iter().map(String::as_str).collect();
        assert_eq!(
            hex::encode(deal::seed(&seed, &nonces)),
            one("audit-example-deal-seed").trim(),
            "the deal seed from the seed and the seats' nonces"
        );

        let documented: Vec<(u64, String)> = blocks("audit-example-bytes")
            .into_iter()
            .map(|(info, text)| {
                let seq = info
                    .strip_prefix("seq=")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("audit-example-bytes {info:?} names its seq"));
                (seq, text)
            })
            .collect();
        assert_eq!(
            documented.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(),
            (1..=log.events.len() as u64).collect::<Vec<_>>(),
            "the canonical bytes of every event, in order"
        );
        let kinds: std::collections::BTreeSet<&str> =
            log.events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                kinds::ACTION,
                kinds::CREATED,
                kinds::JOINED,
                kinds::LEFT,
                kinds::TIMEOUT
            ]
            .into(),
            "the example shows every event kind"
        );
        let created = match &log.events[0].body {
            Some(pb::audit_event::Body::Created(c)) => c.clone(),
            other => panic!("the first event is the creation, not {other:?}"),
        };
        let mut prev = GENESIS_HASH;
        for (event, (seq, bytes)) in log.events.iter().zip(&documented) {
            let stored = stored_event(&registry, event, Some(&created)).expect("rebuilds");
            let canonical = canonical_bytes(match_id, *seq, &stored);
            assert_eq!(
                std::str::from_utf8(&canonical).expect("utf-8"),
                bytes,
                "event {seq}'s canonical bytes as documented"
            );
            let hash = event_hash(&prev, bytes.as_bytes());
            assert_eq!(
                hex::encode(prev),
                event.prev_hash,
                "event {seq}'s prev_hash"
            );
            assert_eq!(
                hex::encode(hash),
                event.hash,
                "SHA-256(prev ‖ bytes) of event {seq}"
            );
            prev = hash;
        }
    }

    /// Each block holds the API's JSON on its first line and the rules' JSON (canonical) on
    /// its second.
    fn pairs(marker: &str) -> Vec<(String, String, String)> {
        blocks(marker)
            .into_iter()
            .map(|(game, text)| {
                let mut lines = text.lines();
                let api = lines.next().unwrap_or_default().to_owned();
                let rules = lines.next().unwrap_or_default().to_owned();
                assert!(lines.next().is_none(), "{marker} {game}: two lines");
                (game, api, rules)
            })
            .collect()
    }

    #[test]
    fn the_documented_configs_and_actions_are_what_the_games_store() {
        let registry = Registry::new();
        let configs = pairs("audit-config");
        let actions = pairs("audit-action");
        for kind in ["love-letter", "lopti", "amori-e-intrighi"] {
            assert!(configs.iter().any(|c| c.0 == kind), "a {kind} config");
            assert!(actions.iter().any(|a| a.0 == kind), "a {kind} action");
        }
        for (kind, api, rules) in configs {
            let options: pb::GameOptions =
                serde_json::from_str(&api).unwrap_or_else(|e| panic!("{kind} options {api}: {e}"));
            let (game, parsed) = registry
                .parse_options(&options, None)
                .unwrap_or_else(|e| panic!("{kind} options {api}: {e}"));
            assert_eq!(game.kind(), kind, "{api}");
            assert_eq!(
                missive_store::canonical_json(&parsed.config),
                rules,
                "{kind}: {api}"
            );
        }
        for (kind, api, rules) in actions {
            let action: pb::GameAction =
                serde_json::from_str(&api).unwrap_or_else(|e| panic!("{kind} action {api}: {e}"));
            let game = registry.get(&kind).expect("a game kind");
            let parsed = game
                .parse_action(&action)
                .and_then(|action| game.encode_action(&action))
                .unwrap_or_else(|e| panic!("{kind} action {api}: {e}"));
            assert_eq!(
                missive_store::canonical_json(&parsed),
                rules,
                "{kind}: {api}"
            );
        }
    }
}
