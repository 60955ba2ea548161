//! The canonical encoding of an event and the hash chain over it (see the crate docs for the
//! exact format an auditor recomputes).

use std::fmt::Write as _;

use chrono::format::{Fixed, Item, Numeric, Pad};
use chrono::{DateTime, Datelike, Timelike, Utc};
use sha2::{Digest, Sha256};

use crate::{ChainCheck, GENESIS_HASH, MatchId, NewEvent, StoredEvent, truncate_to_micros};

/// `SHA-256(prev ‖ canonical)`; the first event of a match uses [`GENESIS_HASH`] as `prev`.
pub fn event_hash(prev: &[u8; 32], canonical: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(prev);
    hasher.update(canonical);
    hasher.finalize().into()
}

/// The time a match row records as its last change: the last appended event's own time, so a
/// server that folds the events it wrote knows the row without reading it back; now, for a
/// change without events.
pub(crate) fn changed_at(stored: &[crate::StoredEvent]) -> DateTime<Utc> {
    stored.last().map_or_else(
        || truncate_to_micros(chrono::Utc::now()),
        |e| truncate_to_micros(e.at),
    )
}

/// The bytes an event's hash covers: a sorted-key, whitespace-free JSON object of
/// `actor, at, kind, match_id, payload, request_id, seq` (documented in the crate docs).
/// `at` is truncated to microseconds first.
pub fn canonical_bytes(match_id: MatchId, seq: u64, ev: &NewEvent) -> Vec<u8> {
    // Writing to a `String` cannot fail.
    let mut out = String::with_capacity(256);
    out.push_str("{\"actor\":");
    match ev.actor {
        Some(seat) => _ = write!(out, "{seat}"),
        None => out.push_str("null"),
    }
    out.push_str(",\"at\":\"");
    push_time(&mut out, truncate_to_micros(ev.at));
    out.push_str("\",\"kind\":");
    push_json_string(&mut out, &ev.kind);
    _ = write!(
        out,
        ",\"match_id\":\"{}\",\"payload\":",
        match_id.hyphenated()
    );
    write_canonical(&mut out, &ev.payload);
    out.push_str(",\"request_id\":");
    match &ev.request_id {
        Some(id) => push_json_string(&mut out, id),
        None => out.push_str("null"),
    }
    _ = write!(out, ",\"seq\":{seq}}}");
    out.into_bytes()
}

/// `at` as `%Y-%m-%dT%H:%M:%S%.6fZ` writes it: by hand for years 0 to 9999 outside a leap
/// second, through the format otherwise.
fn push_time(out: &mut String, at: DateTime<Utc>) {
    let nanos = at.nanosecond();
    if (0..=9999).contains(&at.year()) && nanos < 1_000_000_000 {
        _ = write!(
            out,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
            at.year(),
            at.month(),
            at.day(),
            at.hour(),
            at.minute(),
            at.second(),
            nanos / 1000
        );
    } else {
        _ = write!(out, "{}", at.format_with_items(AT_FORMAT.iter()));
    }
}

/// `%Y-%m-%dT%H:%M:%S%.6fZ`, parsed ahead of time.
const AT_FORMAT: &[Item<'static>] = &[
    Item::Numeric(Numeric::Year, Pad::Zero),
    Item::Literal("-"),
    Item::Numeric(Numeric::Month, Pad::Zero),
    Item::Literal("-"),
    Item::Numeric(Numeric::Day, Pad::Zero),
    Item::Literal("T"),
    Item::Numeric(Numeric::Hour, Pad::Zero),
    Item::Literal(":"),
    Item::Numeric(Numeric::Minute, Pad::Zero),
    Item::Literal(":"),
    Item::Numeric(Numeric::Second, Pad::Zero),
    Item::Fixed(Fixed::Nanosecond6),
    Item::Literal("Z"),
];

/// A JSON value serialised with every object's keys in byte order and no whitespace. Written by
/// hand rather than relying on `serde_json::Map` being sorted, which a feature flag elsewhere in
/// the dependency graph (`preserve_order`) could silently change.
pub fn canonical_json(value: &serde_json::Value) -> String {
    let mut out = String::new();
    write_canonical(&mut out, value);
    out
}

fn write_canonical(out: &mut String, value: &serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => _ = write!(out, "{n}"),
        Value::String(s) => push_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_string(out, key);
                out.push(':');
                write_canonical(out, item);
            }
            out.push('}');
        }
    }
}

/// `s` as a JSON string, escaped as `serde_json` escapes it (quote, backslash and control
/// characters; nothing else).
fn push_json_string(out: &mut String, s: &str) {
    if s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        // Serialising a &str cannot fail.
        out.push_str(&serde_json::to_string(s).unwrap_or_default());
    } else {
        out.push('"');
        out.push_str(s);
        out.push('"');
    }
}

/// Walks a log in seq order and reports the first event that breaks the chain.
#[derive(Debug)]
pub(crate) struct ChainChecker {
    match_id: MatchId,
    prev: [u8; 32],
    next_seq: u64,
}

impl ChainChecker {
    pub(crate) fn new(match_id: MatchId) -> ChainChecker {
        ChainChecker {
            match_id,
            prev: GENESIS_HASH,
            next_seq: 1,
        }
    }

    /// Checks the next event; `Some` names the first problem.
    pub(crate) fn check(&mut self, ev: &StoredEvent) -> Option<ChainCheck> {
        let broken = |seq: u64, reason: String| Some(ChainCheck::Broken { seq, reason });
        if ev.seq != self.next_seq {
            return broken(
                self.next_seq,
                format!("missing event: next stored seq is {}", ev.seq),
            );
        }
        if ev.prev_hash != self.prev {
            return broken(
                ev.seq,
                "prev_hash does not match the previous event's hash".to_owned(),
            );
        }
        let expected = event_hash(
            &self.prev,
            &canonical_bytes(self.match_id, ev.seq, &ev.to_new()),
        );
        if ev.hash != expected {
            return broken(
                ev.seq,
                format!(
                    "stored hash {} but the event's contents hash to {}",
                    hex::encode(ev.hash),
                    hex::encode(expected)
                ),
            );
        }
        self.prev = ev.hash;
        self.next_seq += 1;
        None
    }

    /// The verdict once every stored event was checked; the match row's version must agree.
    pub(crate) fn finish(self, version: u64) -> ChainCheck {
        let events = self.next_seq - 1;
        if version > events {
            ChainCheck::Broken {
                seq: self.next_seq,
                reason: format!("match is at version {version} but the log ends at {events}"),
            }
        } else if version < events {
            ChainCheck::Broken {
                seq: version + 1,
                reason: format!("log holds {events} events but the match is at version {version}"),
            }
        } else {
            ChainCheck::Valid { events }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn event(payload: serde_json::Value) -> NewEvent {
        NewEvent {
            kind: "action".to_owned(),
            actor: Some(1),
            request_id: Some("r-1".to_owned()),
            payload,
            at: Utc.timestamp_opt(1_700_000_000, 123_456_789).unwrap(),
        }
    }

    #[test]
    fn canonical_bytes_sort_keys_at_every_depth_and_truncate_time_to_micros() {
        let id = uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        let ev = event(serde_json::json!({"z": 1, "a": {"y": [true, null], "b": "é\"q"}}));
        let bytes = String::from_utf8(canonical_bytes(id, 7, &ev)).unwrap();
        assert_eq!(
            bytes,
            "{\"actor\":1,\"at\":\"2023-11-14T22:13:20.123456Z\",\"kind\":\"action\",\
             \"match_id\":\"01234567-89ab-cdef-0123-456789abcdef\",\
             \"payload\":{\"a\":{\"b\":\"é\\\"q\",\"y\":[true,null]},\"z\":1},\
             \"request_id\":\"r-1\",\"seq\":7}"
        );
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        for s in [
            "plain",
            "",
            "quote \" and backslash \\",
            "tab\t, newline\n, nul\u{0}, unit separator\u{1f}",
            "delete \u{7f}, é, 𝄞, \u{2028}",
        ] {
            let mut out = String::new();
            push_json_string(&mut out, s);
            assert_eq!(out, serde_json::to_string(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn times_are_written_as_the_strftime_format_writes_them() {
        let times = [
            Utc.timestamp_opt(1_700_000_000, 123_456_000).unwrap(),
            Utc.timestamp_opt(0, 0).unwrap(),
            Utc.with_ymd_and_hms(7, 3, 4, 5, 6, 7).unwrap(),
            Utc.with_ymd_and_hms(12_345, 12, 31, 23, 59, 59).unwrap(),
            // A leap second: 22:13:59 and 1.5 s.
            Utc.timestamp_opt(1_700_000_039, 1_500_000_000).unwrap(),
        ];
        for at in times {
            let mut out = String::new();
            push_time(&mut out, at);
            assert_eq!(out, at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string());
        }
    }

    #[test]
    fn the_same_payload_written_in_another_key_order_hashes_the_same() {
        let id = uuid::Uuid::nil();
        let a: serde_json::Value = serde_json::from_str(r#"{"b":1,"a":2}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{"a":2,"b":1}"#).unwrap();
        assert_eq!(
            event_hash(&GENESIS_HASH, &canonical_bytes(id, 1, &event(a))),
            event_hash(&GENESIS_HASH, &canonical_bytes(id, 1, &event(b)))
        );
    }

    #[test]
    fn event_hash_is_sha256_of_prev_then_bytes() {
        // SHA-256 of 32 zero bytes followed by "abc", computed independently.
        let mut input = vec![0u8; 32];
        input.extend_from_slice(b"abc");
        let direct: [u8; 32] = Sha256::digest(&input).into();
        assert_eq!(event_hash(&GENESIS_HASH, b"abc"), direct);
        assert_ne!(event_hash(&[1; 32], b"abc"), direct);
    }
}
