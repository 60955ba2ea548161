//! A run of a match's log in one value: what [`crate::Store::archive_finished`] writes in place
//! of an ended match's event rows (the whole log), what [`crate::Store::pack_live`] writes in
//! place of a live match's older rows (a block of them), and what reads unpack.
//!
//! The value is the events without their hashes, one compact JSON object per line, compressed
//! with DEFLATE:
//!
//! ```text
//! {"k":"action","a":0,"r":"req-7","l":9,"p":{"card":"guard"},"t":1834}
//! ```
//!
//! `k` the kind, `a` the actor, `r` the request id and `l` its last seq (on a request's first
//! event only), `p` the payload, `t` the time in microseconds after the previous event's (after
//! the Unix epoch for the first); an absent key is `null`. The seqs are the line numbers, counted
//! from the seq the run follows. The hashes are not kept: unpacking recomputes the chain from
//! the hash the run follows (the genesis hash for a whole log) and refuses a run whose last
//! hash is not the one stored beside it, so a changed archive is detected as surely
//! as a changed event row, and every event read back carries the hashes it was appended with.

use std::io::{Read, Write};

use chrono::{DateTime, Utc};
use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use serde::{Deserialize, Serialize};

use crate::{GENESIS_HASH, MatchId, NewEvent, StoreError, StoredEvent};

/// One event as archived; see the module docs.
#[derive(Debug, Serialize, Deserialize)]
struct Line {
    k: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    a: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    r: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    l: Option<u64>,
    p: serde_json::Value,
    t: i64,
}

/// A run of a match's log as packed: unpack with [`unpack`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Packed {
    /// The seq the run follows (0 for a whole log) and that event's hash.
    pub(crate) after: (u64, [u8; 32]),
    /// How many events it holds.
    pub(crate) events: u64,
    /// The last event's hash (the genesis hash for none).
    pub(crate) last_hash: [u8; 32],
    /// The compressed lines.
    pub(crate) body: Vec<u8>,
}

/// A packed run (or several runs that follow one another), unpacked.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Unpacked {
    /// Every event of the run, with its hashes.
    pub(crate) events: Vec<StoredEvent>,
    /// Each request id with the seqs of its first and last events.
    pub(crate) requests: Vec<(String, u64, u64)>,
}

impl Unpacked {
    /// The seq and hash of the last event held, if any.
    pub(crate) fn last(&self) -> Option<(u64, [u8; 32])> {
        self.events.last().map(|e| (e.seq, e.hash))
    }

    /// The events after seq `after`, and the seq and hash of the last event held, which the
    /// events after these chain from.
    pub(crate) fn after(self, after: u64) -> (Vec<StoredEvent>, Option<(u64, [u8; 32])>) {
        let last = self.last();
        let events = self.events.into_iter().filter(|e| e.seq > after).collect();
        (events, last)
    }

    /// The events of the request `request_id`, if the log holds it.
    pub(crate) fn request(&self, request_id: &str) -> Option<Vec<StoredEvent>> {
        let (_, first, last) = self.requests.iter().find(|(r, _, _)| r == request_id)?;
        Some(
            self.events
                .iter()
                .filter(|e| (*first..=*last).contains(&e.seq))
                .cloned()
                .collect(),
        )
    }
}

/// Packs a whole log, seq 1 to the last, given each request's last seq on its first event.
pub(crate) fn pack(events: &[(StoredEvent, Option<u64>)]) -> Result<Packed, StoreError> {
    pack_run((0, GENESIS_HASH), events)
}

/// Packs a run of a log that follows the event `after` (its seq and hash), given each
/// request's last seq on its first event. The run is checked first: gap-free from `after` and
/// chained from its hash, or nothing is packed (the value replaces the rows, so it must be
/// able to give them back).
pub(crate) fn pack_run(
    after: (u64, [u8; 32]),
    events: &[(StoredEvent, Option<u64>)],
) -> Result<Packed, StoreError> {
    let mut prev = after.1;
    let mut prev_at = 0;
    let mut encoder = DeflateEncoder::new(Vec::new(), Compression::best());
    for (seq, (ev, request_last)) in (after.0 + 1..).zip(events) {
        if ev.seq != seq || ev.prev_hash != prev {
            return Err(StoreError::Corrupt(format!(
                "match {}: event {} does not follow event {} in the chain; not archived",
                ev.match_id,
                ev.seq,
                seq - 1
            )));
        }
        let at = ev.at.timestamp_micros();
        let line = Line {
            k: ev.kind.clone(),
            a: ev.actor,
            r: ev.request_id.clone(),
            l: *request_last,
            p: ev.payload.clone(),
            t: at - prev_at,
        };
        let mut text = serde_json::to_vec(&line)
            .map_err(|e| StoreError::Internal(format!("archiving an event: {e}")))?;
        text.push(b'\n');
        encoder
            .write_all(&text)
            .map_err(|e| StoreError::Internal(format!("compressing an archive: {e}")))?;
        prev = ev.hash;
        prev_at = at;
    }
    let body = encoder
        .finish()
        .map_err(|e| StoreError::Internal(format!("compressing an archive: {e}")))?;
    Ok(Packed {
        after,
        events: events.len() as u64,
        last_hash: prev,
        body,
    })
}

/// The request ids a packed run holds, each with the seqs of its first and last events, read
/// without building the events or recomputing their chain: what a load lists of the requests a
/// snapshot folded in. The events of any of them are unpacked, and checked, when a retry asks
/// for them.
pub(crate) fn requests(
    id: MatchId,
    packed: &Packed,
) -> Result<Vec<(String, u64, u64)>, StoreError> {
    /// A line's request, its other keys skipped.
    #[derive(Deserialize)]
    struct RequestOf {
        #[serde(default)]
        r: Option<String>,
        #[serde(default)]
        l: Option<u64>,
    }
    let after = packed.after.0;
    let mut text = String::new();
    DeflateDecoder::new(packed.body.as_slice())
        .read_to_string(&mut text)
        .map_err(|e| StoreError::Corrupt(format!("packed events of match {id}: {e}")))?;
    let mut requests = Vec::new();
    for (seq, line) in (after + 1..).zip(text.lines()) {
        let of: RequestOf = serde_json::from_str(line)
            .map_err(|e| StoreError::Corrupt(format!("packed event {seq} of match {id}: {e}")))?;
        if let (Some(request_id), Some(last)) = (of.r, of.l) {
            requests.push((request_id, seq, last));
        }
    }
    Ok(requests)
}

/// Unpacks a run of the log of match `id`, recomputing its hash chain from `packed.after`;
/// [`StoreError::Corrupt`] if it does not end at `packed.last_hash` after `packed.events`
/// events.
pub(crate) fn unpack(id: MatchId, packed: &Packed) -> Result<Unpacked, StoreError> {
    let (after, prev) = packed.after;
    let corrupt = |what: String| {
        StoreError::Corrupt(format!(
            "the packed events {}..={} of match {id}: {what}",
            after + 1,
            after + packed.events
        ))
    };
    let mut text = String::new();
    DeflateDecoder::new(packed.body.as_slice())
        .read_to_string(&mut text)
        .map_err(|e| corrupt(format!("does not decompress: {e}")))?;
    let mut new = Vec::new();
    let mut requests = Vec::new();
    let mut at = 0i64;
    for (seq, text) in (after + 1..).zip(text.lines()) {
        let line: Line = serde_json::from_str(text)
            .map_err(|e| corrupt(format!("event {seq} is not readable: {e}")))?;
        at = at
            .checked_add(line.t)
            .ok_or_else(|| corrupt(format!("event {seq} has no valid time")))?;
        let at: DateTime<Utc> = DateTime::from_timestamp_micros(at)
            .ok_or_else(|| corrupt(format!("event {seq} has no valid time")))?;
        if let (Some(request_id), Some(last)) = (&line.r, line.l) {
            requests.push((request_id.clone(), seq, last));
        }
        new.push(NewEvent {
            kind: line.k,
            actor: line.a,
            request_id: line.r,
            payload: line.p,
            at,
        });
    }
    if new.len() as u64 != packed.events {
        return Err(corrupt(format!(
            "holds {} events, not {}",
            new.len(),
            packed.events
        )));
    }
    let events = crate::chain(id, after, &prev, new);
    let last = events.last().map_or(prev, |e| e.hash);
    if last != packed.last_hash {
        return Err(corrupt(
            "its events do not hash to the last hash stored with it".into(),
        ));
    }
    Ok(Unpacked { events, requests })
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use serde_json::json;

    use super::*;

    fn log(id: MatchId) -> Vec<(StoredEvent, Option<u64>)> {
        let start = Utc.timestamp_opt(1_767_000_000, 123_456_000).unwrap();
        let new = [
            (None, None, json!({"created": true})),
            (Some("join-0"), Some(2), json!({"seat": 0})),
            (Some("join-1"), Some(4), json!({"seat": 1})),
            (Some("join-1"), None, json!({"dealt": [1, 2]})),
            (
                Some("act-1"),
                Some(5),
                json!({"card": "guard", "target": 1, "guess": "priest"}),
            ),
        ];
        let events: Vec<NewEvent> = new
            .iter()
            .zip(0..)
            .map(|((request_id, _, payload), i)| NewEvent {
                kind: if i == 0 { "created" } else { "action" }.into(),
                actor: (i > 0).then_some(i as u8 % 2),
                request_id: request_id.map(str::to_owned),
                payload: payload.clone(),
                at: start + chrono::Duration::milliseconds(1_500 * i),
            })
            .collect();
        crate::chain(id, 0, &GENESIS_HASH, events)
            .into_iter()
            .zip(new.iter().map(|(_, last, _)| *last))
            .collect()
    }

    #[test]
    fn a_packed_log_unpacks_to_the_same_events_and_requests() {
        let id = MatchId::new_v4();
        let log = log(id);
        let packed = pack(&log).unwrap();
        assert_eq!(packed.events, 5);
        assert_eq!(packed.last_hash, log[4].0.hash);
        let unpacked = unpack(id, &packed).unwrap();
        let events: Vec<StoredEvent> = log.iter().map(|(e, _)| e.clone()).collect();
        assert_eq!(unpacked.events, events);
        assert_eq!(
            unpacked.requests,
            vec![
                ("join-0".to_owned(), 2, 2),
                ("join-1".to_owned(), 3, 4),
                ("act-1".to_owned(), 5, 5)
            ]
        );
        assert_eq!(unpacked.request("join-1").unwrap(), events[2..4].to_vec());
        assert_eq!(unpacked.request("nope"), None);
        assert_eq!(requests(id, &packed).unwrap(), unpacked.requests);
    }

    #[test]
    fn a_run_from_the_middle_unpacks_from_the_hash_it_follows() {
        let id = MatchId::new_v4();
        let log = log(id);
        let after = (log[1].0.seq, log[1].0.hash);
        let packed = pack_run(after, &log[2..]).unwrap();
        assert_eq!((packed.after, packed.events), (after, 3));
        let unpacked = unpack(id, &packed).unwrap();
        let events: Vec<StoredEvent> = log[2..].iter().map(|(e, _)| e.clone()).collect();
        assert_eq!(unpacked.events, events);
        assert_eq!(
            unpacked.requests,
            vec![("join-1".to_owned(), 3, 4), ("act-1".to_owned(), 5, 5)]
        );
        // Not from the hash or the seq the run follows: not packed, and not unpacked.
        assert!(pack_run((1, log[0].0.hash), &log[2..]).is_err());
        assert!(pack_run((2, log[0].0.hash), &log[2..]).is_err());
        let moved = Packed {
            after: (2, log[0].0.hash),
            ..packed.clone()
        };
        assert!(unpack(id, &moved).is_err());
        let shifted = Packed {
            after: (1, log[1].0.hash),
            ..packed
        };
        assert!(unpack(id, &shifted).is_err());
    }

    #[test]
    fn an_empty_log_packs_to_the_genesis_hash() {
        let id = MatchId::new_v4();
        let packed = pack(&[]).unwrap();
        assert_eq!(packed.last_hash, GENESIS_HASH);
        assert!(unpack(id, &packed).unwrap().events.is_empty());
    }

    #[test]
    fn a_log_with_a_broken_chain_is_not_packed() {
        let id = MatchId::new_v4();
        let mut log = log(id);
        log[3].0.prev_hash[0] ^= 1;
        assert!(matches!(pack(&log), Err(StoreError::Corrupt(_))));
        let mut log = self::log(id);
        log.remove(2);
        assert!(matches!(pack(&log), Err(StoreError::Corrupt(_))));
    }

    #[test]
    fn a_changed_archive_is_refused() {
        let id = MatchId::new_v4();
        let mut log = log(id);
        let honest = pack(&log).unwrap();
        // The same log with one payload changed, under the honest log's last hash.
        log[4].0.payload = json!({"card": "guard", "target": 1, "guess": "king"});
        let forged = Packed {
            last_hash: honest.last_hash,
            ..pack_unchecked(&log)
        };
        let err = unpack(id, &forged).unwrap_err();
        assert!(err.to_string().contains("do not hash"), "{err}");
        // Another match's archive, or a truncated count, is refused too.
        assert!(unpack(MatchId::new_v4(), &honest).is_err());
        let short = Packed {
            events: 4,
            ..honest.clone()
        };
        assert!(unpack(id, &short).is_err());
        let garbage = Packed {
            body: b"not deflate".to_vec(),
            ..honest
        };
        assert!(unpack(id, &garbage).is_err());
    }

    /// Packs `log` after re-chaining it, as a forger with the database could.
    fn pack_unchecked(log: &[(StoredEvent, Option<u64>)]) -> Packed {
        let id = log[0].0.match_id;
        let rechained = crate::chain(
            id,
            0,
            &GENESIS_HASH,
            log.iter().map(|(e, _)| e.to_new()).collect(),
        );
        let log: Vec<_> = rechained
            .into_iter()
            .zip(log.iter().map(|(_, l)| *l))
            .collect();
        pack(&log).unwrap()
    }

    #[test]
    fn archives_are_smaller_than_their_text() {
        let id = MatchId::new_v4();
        let log = log(id);
        let packed = pack(&log).unwrap();
        let text: usize = log
            .iter()
            .map(|(e, _)| crate::canonical_bytes(id, e.seq, &e.to_new()).len() + 64)
            .sum();
        assert!(
            packed.body.len() * 2 < text,
            "{} of {text}",
            packed.body.len()
        );
    }
}
