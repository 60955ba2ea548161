//! Checking a finished match's exported log ([`pb::AuditLog`]) without trusting the server:
//! rebuild each stored event from its typed form, recompute the hash chain, check the seed
//! against the commitment published at creation, and replay every action through the rules,
//! dealt from the seed `deal.rs` defines: for a match dealt at its start, the committed seed
//! and the nonces of the seats' holders when the last seat was taken. From audit format 2 a
//! log states its head (the match, its last event's seq and hash, how it ended), which the
//! events must reach exactly, and the server signs that head with Ed25519 ([`Signer`]), so
//! that a log cut short or an outcome rewritten does not verify, and a head once shown binds
//! the operator.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use missive_proto::v1 as pb;
use missive_store::{GENESIS_HASH, MatchId, NewEvent, canonical_bytes, event_hash};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::events::{Bot, CloseReason, Creation, Event};
use crate::games::{GameKind, MatchState, Registry};
use crate::table::{Replay, Table};

/// The audit format this server exports: the canonical bytes, the hash chain, the payload
/// forms and the signed head of docs/AUDIT.md. [`verify`] reads it and format 1, the same
/// without a head.
pub const FORMAT: u32 = 2;

/// The algorithm of heads' signatures, as `GetAuditKeys` names it.
pub const ALGORITHM: &str = "ed25519";

/// What a head's canonical bytes begin with (their `type`): a signature over them is never
/// a signature over anything else the key might sign.
pub const HEAD_TYPE: &str = "missive audit head v1";

/// The GetHistory response header (HTTP) and metadata key (gRPC) that carries [`FORMAT`].
pub const FORMAT_HEADER: &str = "missive-audit-format";

/// Why a log does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    #[error("event {seq}: {reason}")]
    Event { seq: u64, reason: String },
    #[error("the seed does not match the commitment")]
    SeedMismatch,
    /// The events and the head they should reach disagree.
    #[error("{0}")]
    Head(String),
    /// The head's signature does not hold under the key it was checked with.
    #[error("the head's signature does not verify: {0}")]
    Signature(String),
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
        Some(Body::Closed(c)) => Event::Closed {
            reason: match pb::CloseReason::try_from(c.reason) {
                Ok(pb::CloseReason::Cancelled) => CloseReason::Cancelled,
                Ok(pb::CloseReason::Expired) => CloseReason::Expired,
                _ => return Err(bad(seq, "a closure without a known reason")),
            },
        },
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

/// Verifies `log` of match `match_id` and returns the state its actions replay to. A log
/// with a head (audit format 2) must reach it exactly: every event up to its version, ending
/// at its hash, with its outcome. Its signature is not checked here: [`check_signature`].
pub fn verify(
    registry: &Registry,
    match_id: MatchId,
    log: &pb::AuditLog,
) -> Result<Box<dyn MatchState>, AuditError> {
    let head = head_of(log, match_id)?;
    let seed: [u8; 32] = hex::decode(&log.seed)
        .ok()
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| AuditError::Malformed("the seed is not 32 hex bytes".into()))?;
    if hex::encode(Sha256::digest(seed)) != log.seed_commitment {
        return Err(AuditError::SeedMismatch);
    }
    let mut prev = GENESIS_HASH;
    let mut table: Option<Table> = None;
    // A closure ends the log: an open match cancelled or expired, never dealt.
    let mut closed = false;
    for (i, event) in log.events.iter().enumerate() {
        let seq = event.seq;
        if closed {
            return Err(bad(seq, "an event after the match was closed"));
        }
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
        closed = matches!(typed, Event::Closed { .. });
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
    if let Some(head) = head
        && hex::encode(prev) != head.hash
    {
        return Err(AuditError::Head(format!(
            "the last event's hash {} is not the head's {}: the log does not end where its \
             head says",
            hex::encode(prev),
            head.hash
        )));
    }
    let state = match table {
        Some(table) if table.dealt() || closed => table.state().boxed_clone(),
        Some(_) => return Err(AuditError::Malformed("the match never started".into())),
        None => {
            return Err(AuditError::Malformed(
                "the log has no creation event".into(),
            ));
        }
    };
    if let Some(head) = head {
        reaches_outcome(head, state.as_ref())?;
    }
    Ok(state)
}

/// The log's head, checked against what can be checked before the replay: the match, the
/// number of events, the commitment and rules version the log states. `None` for a log of
/// format 1, which has none.
fn head_of(log: &pb::AuditLog, match_id: MatchId) -> Result<Option<&pb::AuditHead>, AuditError> {
    if log.format > FORMAT {
        return Err(AuditError::Malformed(format!(
            "the log is in audit format {}, and this build reads formats 1 to {FORMAT}: use a \
             newer missive",
            log.format
        )));
    }
    let Some(head) = &log.head else {
        return match log.format {
            0 | 1 => Ok(None),
            format => Err(AuditError::Head(format!(
                "the log is in audit format {format} but has no head: its end cannot be checked \
                 (was the head removed?)"
            ))),
        };
    };
    if head.match_id.parse::<MatchId>().ok() != Some(match_id) {
        return Err(AuditError::Head(format!(
            "the head is of match {:?}, not of match {match_id}",
            head.match_id
        )));
    }
    let events = log.events.len() as u64;
    if events < head.version {
        return Err(AuditError::Head(format!(
            "the log stops short of its head: it holds {events} events, and its head is at \
             version {}: events {} to {} are missing",
            head.version,
            events + 1,
            head.version
        )));
    }
    if events > head.version {
        return Err(AuditError::Head(format!(
            "the log runs past its head: it holds {events} events, and its head is at version {}",
            head.version
        )));
    }
    if head.seed_commitment != log.seed_commitment {
        return Err(AuditError::Head(
            "the head's seed commitment is not the log's".into(),
        ));
    }
    if head.rules_version != log.rules_version {
        return Err(AuditError::Head(format!(
            "the head's rules version {} is not the log's {}",
            head.rules_version, log.rules_version
        )));
    }
    match pb::MatchStatus::try_from(head.status) {
        Ok(pb::MatchStatus::Finished | pb::MatchStatus::Abandoned) => Ok(Some(head)),
        _ => Err(AuditError::Head(format!(
            "the head says the match is {}: a log is only exported once its match is over",
            status_name(head.status)
        ))),
    }
}

/// The outcome `state` reached, as the API shows it.
pub fn outcome_of(state: &dyn MatchState) -> Option<pb::Outcome> {
    state.outcome().map(|o| pb::Outcome {
        winners: o.winners.iter().map(u32::from).collect(),
        scores: o.scores,
    })
}

/// Whether the replayed `state` ends the match as `head` says.
fn reaches_outcome(head: &pb::AuditHead, state: &dyn MatchState) -> Result<(), AuditError> {
    let replayed = outcome_of(state);
    let finished = head.status == pb::MatchStatus::Finished as i32;
    if finished && replayed.is_none() {
        return Err(AuditError::Head(
            "the head says the match finished, but its events reach no outcome: the log stops \
             short of the match's end"
                .into(),
        ));
    }
    if replayed != head.outcome {
        return Err(AuditError::Head(format!(
            "the events reach {}, and the head states {}",
            describe_outcome(replayed.as_ref()),
            describe_outcome(head.outcome.as_ref())
        )));
    }
    Ok(())
}

/// An outcome in words: `won by seat 0 (scores 1, 0)`, or `no outcome`.
pub fn describe_outcome(outcome: Option<&pb::Outcome>) -> String {
    let Some(outcome) = outcome else {
        return "no outcome".into();
    };
    let list = |items: Vec<String>, by: &str| items.join(by);
    format!(
        "won by seat {} (scores {})",
        list(
            outcome.winners.iter().map(u32::to_string).collect(),
            " and "
        ),
        list(outcome.scores.iter().map(i32::to_string).collect(), ", ")
    )
}

/// A status as the head's canonical bytes write it: the enum value's name without its
/// prefix, in lowercase (`finished`); an unknown number as itself.
fn status_name(status: i32) -> String {
    match pb::MatchStatus::try_from(status) {
        Ok(known) => known
            .as_str_name()
            .trim_start_matches("MATCH_STATUS_")
            .to_ascii_lowercase(),
        Err(_) => status.to_string(),
    }
}

/// The bytes a head's signature covers (docs/AUDIT.md, "The head's canonical bytes"): a JSON
/// object without whitespace, its keys in byte order, every field of the head but the
/// signature, numbers as numbers and a `type` that says what is signed.
pub fn head_bytes(head: &pb::AuditHead) -> Vec<u8> {
    let outcome = head.outcome.as_ref().map_or(
        serde_json::Value::Null,
        |o| serde_json::json!({ "scores": o.scores, "winners": o.winners }),
    );
    let value = serde_json::json!({
        "hash": head.hash,
        "key_id": head.key_id,
        "match_id": head.match_id,
        "outcome": outcome,
        "rules_version": head.rules_version,
        "seed_commitment": head.seed_commitment,
        "status": status_name(head.status),
        "type": HEAD_TYPE,
        "version": head.version,
    });
    missive_store::canonical_json(&value).into_bytes()
}

/// The id of a public key: hex of the first 8 bytes of its SHA-256.
pub fn key_id(public_key: &[u8; 32]) -> String {
    hex::encode(&Sha256::digest(public_key)[..8])
}

/// A public key as `GetAuditKeys` serves it and `missive verify --key` takes it: 64 hex digits.
pub fn parse_public_key(text: &str) -> Result<[u8; 32], String> {
    let mut key = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut key)
        .map_err(|_| "an audit key is 64 hex digits, as GET /v1/audit/keys serves it".to_owned())?;
    Ok(key)
}

/// Checks that `head` is signed by the key `public_key`: the key the head names, and a valid
/// Ed25519 signature of its canonical bytes.
pub fn check_signature(head: &pb::AuditHead, public_key: &[u8; 32]) -> Result<(), AuditError> {
    use ed25519_dalek::{Signature, VerifyingKey};
    let wrong = |reason: String| AuditError::Signature(reason);
    if head.signature.is_empty() {
        return Err(wrong("the head is not signed".into()));
    }
    let id = key_id(public_key);
    if head.key_id != id {
        return Err(wrong(format!(
            "the head names key {:?}, and the key given is {id}",
            head.key_id
        )));
    }
    let key = VerifyingKey::from_bytes(public_key)
        .map_err(|_| wrong("the key given is not an Ed25519 public key".into()))?;
    let mut signature = [0u8; 64];
    hex::decode_to_slice(&head.signature, &mut signature)
        .map_err(|_| wrong("the signature is not 64 hex bytes".into()))?;
    key.verify_strict(&head_bytes(head), &Signature::from_bytes(&signature))
        .map_err(|_| {
            wrong(format!(
                "key {id} did not sign this head: the head was changed after it was signed"
            ))
        })
}

/// The server's audit signing key: an Ed25519 key whose 32-byte seed every server of one
/// store shares (`Store::server_key`, under [`Signer::NAME`]), so that every replica, and a
/// restarted server, signs with the same key and serves the same public key.
#[derive(Clone)]
pub struct Signer {
    key: ed25519_dalek::SigningKey,
    id: String,
}

impl std::fmt::Debug for Signer {
    // The id names the key; the key itself is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer({})", self.id)
    }
}

impl Signer {
    /// The name the seed is stored under.
    pub const NAME: &str = "audit-signing";

    pub fn from_seed(seed: [u8; 32]) -> Signer {
        let key = ed25519_dalek::SigningKey::from_bytes(&seed);
        let id = key_id(&key.verifying_key().to_bytes());
        Signer { key, id }
    }

    pub fn key_id(&self) -> &str {
        &self.id
    }

    /// The public key, as `GetAuditKeys` serves it.
    pub fn public_key(&self) -> pb::AuditKey {
        pb::AuditKey {
            key_id: self.id.clone(),
            algorithm: ALGORITHM.into(),
            public_key: hex::encode(self.key.verifying_key().to_bytes()),
        }
    }

    /// Names this key in `head` and signs it.
    pub fn sign(&self, head: &mut pb::AuditHead) {
        use ed25519_dalek::Signer as _;
        head.key_id = self.id.clone();
        head.signature = hex::encode(self.key.sign(&head_bytes(head)).to_bytes());
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

    const DOC: &str = include_str!("../../../../docs/AUDIT.md");

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

    /// The worked example's log, and the example key that signed its head.
    fn example() -> (MatchId, pb::AuditLog, Signer) {
        let match_id = one("audit-example-match")
            .trim()
            .parse()
            .expect("a match id");
        let log = serde_json::from_str(&one("audit-example-log")).expect("an AuditLog in JSON");
        let seed: [u8; 32] = hex::decode(one("audit-example-key-seed").trim())
            .expect("hex")
            .try_into()
            .expect("32 bytes");
        (match_id, log, Signer::from_seed(seed))
    }

    fn public(signer: &Signer) -> [u8; 32] {
        parse_public_key(&signer.public_key().public_key).expect("a served key parses")
    }

    #[test]
    fn the_worked_examples_head_is_signed_over_the_documented_bytes_by_the_documented_key() {
        let (_, log, signer) = example();
        let head = log.head.clone().expect("the example has a head");
        assert_eq!(log.format, FORMAT, "the example is in the current format");
        assert_eq!(
            std::str::from_utf8(&head_bytes(&head)).expect("utf-8"),
            one("audit-example-head-bytes"),
            "the head's canonical bytes as documented"
        );
        let served = signer.public_key();
        assert_eq!(served.public_key, one("audit-example-public-key").trim());
        assert_eq!(served.algorithm, "ed25519");
        assert_eq!(served.key_id, head.key_id, "the key id the head names");
        assert_eq!(
            key_id(&public(&signer)),
            hex::encode(&Sha256::digest(public(&signer))[..8])
        );
        let mut signed = head.clone();
        signed.signature.clear();
        signer.sign(&mut signed);
        assert_eq!(
            signed, head,
            "signing is deterministic: the documented signature"
        );
        check_signature(&head, &public(&signer)).expect("the documented signature holds");
    }

    #[test]
    fn a_log_cut_short_of_its_head_does_not_verify() {
        let (id, log, _) = example();
        let registry = Registry::new();
        verify(&registry, id, &log).expect("the whole log verifies");
        let mut cut = log.clone();
        cut.events.pop();
        let error = verify(&registry, id, &cut).expect_err("a log cut short");
        assert!(
            matches!(&error, AuditError::Head(m) if m.contains("stops short of its head: it holds 6 events, and its head is at version 7")),
            "{error}"
        );
        let mut longer = log.clone();
        longer.head.as_mut().expect("a head").version = 6;
        let error = verify(&registry, id, &longer).expect_err("a log past its head");
        assert!(error.to_string().contains("runs past its head"), "{error}");
    }

    #[test]
    fn a_head_whose_hash_is_not_the_last_events_does_not_verify() {
        let (id, mut log, _) = example();
        let head = log.head.as_mut().expect("a head");
        head.hash = log.events[5].hash.clone();
        let error = verify(&Registry::new(), id, &log).expect_err("a head of another event");
        assert!(
            matches!(&error, AuditError::Head(m) if m.contains("is not the head's")),
            "{error}"
        );
    }

    #[test]
    fn a_head_claiming_an_end_the_events_do_not_reach_does_not_verify() {
        let (id, log, _) = example();
        let registry = Registry::new();
        // The example was abandoned: its events reach no outcome.
        let mut finished = log.clone();
        finished.head.as_mut().expect("a head").status = pb::MatchStatus::Finished as i32;
        let error = verify(&registry, id, &finished).expect_err("finished without an outcome");
        assert!(
            error
                .to_string()
                .contains("the head says the match finished, but its events reach no outcome"),
            "{error}"
        );
        let mut won = log.clone();
        won.head.as_mut().expect("a head").outcome = Some(pb::Outcome {
            winners: vec![1],
            scores: vec![0, 1],
        });
        let error = verify(&registry, id, &won).expect_err("an outcome the events do not reach");
        assert_eq!(
            error.to_string(),
            "the events reach no outcome, and the head states won by seat 1 (scores 0, 1)"
        );
        let mut open = log.clone();
        open.head.as_mut().expect("a head").status = pb::MatchStatus::Active as i32;
        let error = verify(&registry, id, &open).expect_err("a head of a match under way");
        assert!(error.to_string().contains("is active"), "{error}");
    }

    #[test]
    fn a_head_of_another_match_or_commitment_does_not_verify() {
        let (id, log, _) = example();
        let registry = Registry::new();
        let mut other = log.clone();
        other.head.as_mut().expect("a head").match_id = MatchId::from_u128(7).to_string();
        let error = verify(&registry, id, &other).expect_err("another match's head");
        assert!(
            error.to_string().contains("the head is of match"),
            "{error}"
        );
        let mut other = log.clone();
        other.head.as_mut().expect("a head").seed_commitment = "00".repeat(32);
        let error = verify(&registry, id, &other).expect_err("another commitment");
        assert!(error.to_string().contains("seed commitment"), "{error}");
    }

    #[test]
    fn a_log_of_format_1_verifies_without_a_head_and_a_later_one_needs_it() {
        let (id, log, _) = example();
        let registry = Registry::new();
        let mut old = log.clone();
        old.head = None;
        old.format = 0;
        verify(&registry, id, &old).expect("a format 1 log, as older servers exported it");
        old.format = 1;
        verify(&registry, id, &old).expect("format 1, named");
        old.format = FORMAT;
        let error = verify(&registry, id, &old).expect_err("a format 2 log without its head");
        assert!(error.to_string().contains("has no head"), "{error}");
        old.format = FORMAT + 1;
        let error = verify(&registry, id, &old).expect_err("a format this build cannot read");
        assert!(error.to_string().contains("use a newer missive"), "{error}");
    }

    #[test]
    fn a_signature_holds_only_under_its_own_key_and_over_the_head_it_signed() {
        let (_, log, signer) = example();
        let head = log.head.expect("a head");
        let key = public(&signer);
        check_signature(&head, &key).expect("signed by the example key");

        let mut flipped = head.clone();
        let mut bytes = hex::decode(&flipped.signature).expect("hex");
        bytes[10] ^= 1;
        flipped.signature = hex::encode(bytes);
        let error = check_signature(&flipped, &key).expect_err("a tampered signature");
        assert!(
            error.to_string().contains("did not sign this head"),
            "{error}"
        );

        let mut moved = head.clone();
        moved.version += 1;
        assert!(
            check_signature(&moved, &key).is_err(),
            "a head changed after signing"
        );
        let mut rehashed = head.clone();
        rehashed.hash = "00".repeat(32);
        assert!(
            check_signature(&rehashed, &key).is_err(),
            "another last hash"
        );

        let other = public(&Signer::from_seed([9; 32]));
        let error = check_signature(&head, &other).expect_err("another key");
        assert!(error.to_string().contains("the head names key"), "{error}");
        // Another key that claims the head's id still does not verify it.
        let mut claimed = head.clone();
        claimed.key_id = key_id(&other);
        assert!(check_signature(&claimed, &other).is_err());

        let mut unsigned = head;
        unsigned.signature.clear();
        let error = check_signature(&unsigned, &key).expect_err("no signature");
        assert!(error.to_string().contains("not signed"), "{error}");
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
