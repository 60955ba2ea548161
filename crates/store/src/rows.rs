//! Rows as both backends return them, and their checked conversion to the public types.
//!
//! Both backends select the same column names with types both can decode (match ids and JSON
//! as text, small integers as `i16`/`i32`, times as `DateTime<Utc>`), so one set of row types
//! and one set of checks serve both.

use chrono::{DateTime, Utc};

use crate::{MatchId, MatchRecord, MatchStatus, SeatRecord, Snapshot, StoreError, StoredEvent};

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct MatchRow {
    pub(crate) match_id: String,
    pub(crate) kind: String,
    pub(crate) config: String,
    pub(crate) rules_version: i32,
    pub(crate) seat_count: i16,
    pub(crate) status: String,
    pub(crate) seed_hash: Vec<u8>,
    pub(crate) turn_timeout_secs: Option<i32>,
    pub(crate) turn_reminder_secs: Option<i32>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) updated_at: DateTime<Utc>,
    pub(crate) version: i64,
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct SeatRow {
    pub(crate) match_id: String,
    pub(crate) seat: i16,
    pub(crate) player: Option<String>,
    pub(crate) token_hash: Option<Vec<u8>>,
    pub(crate) bot: Option<String>,
}

/// A match row joined with one of its seats (`None` columns when it has no seat rows).
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct MatchSeatRow {
    #[sqlx(flatten)]
    pub(crate) m: MatchRow,
    pub(crate) seat: Option<i16>,
    pub(crate) player: Option<String>,
    pub(crate) token_hash: Option<Vec<u8>>,
    pub(crate) bot: Option<String>,
}

impl MatchSeatRow {
    /// The record of a match read as one row per seat; `None` for no rows (no such match).
    pub(crate) fn into_record(rows: Vec<MatchSeatRow>) -> Option<Result<MatchRecord, StoreError>> {
        let mut match_row = None;
        let mut seats = Vec::with_capacity(rows.len());
        for row in rows {
            if let Some(seat) = row.seat {
                seats.push(SeatRow {
                    match_id: row.m.match_id.clone(),
                    seat,
                    player: row.player,
                    token_hash: row.token_hash,
                    bot: row.bot,
                });
            }
            match_row.get_or_insert(row.m);
        }
        Some(match_row?.into_record(&seats))
    }
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct EventRow {
    pub(crate) seq: i64,
    pub(crate) kind: String,
    pub(crate) actor: Option<i16>,
    pub(crate) request_id: Option<String>,
    pub(crate) payload: String,
    pub(crate) at: DateTime<Utc>,
    pub(crate) prev_hash: Vec<u8>,
    pub(crate) hash: Vec<u8>,
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct SnapshotRow {
    pub(crate) seq: i64,
    pub(crate) rules_version: i32,
    pub(crate) state: String,
}

/// The `(version, last_hash)` pair an append compares against, and the seqs of the request
/// id being appended if the match already holds it.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct HeadRow {
    pub(crate) seat_count: i16,
    pub(crate) version: i64,
    pub(crate) last_hash: Vec<u8>,
    pub(crate) first_seq: Option<i64>,
    pub(crate) last_seq: Option<i64>,
}

pub(crate) fn hash32(bytes: &[u8], what: &str) -> Result<[u8; 32], StoreError> {
    bytes
        .try_into()
        .map_err(|_| StoreError::Corrupt(format!("{what} is {} bytes, not 32", bytes.len())))
}

pub(crate) fn parse_json(text: &str, what: &str) -> Result<serde_json::Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what} is not JSON: {e}")))
}

pub(crate) fn parse_id(text: &str) -> Result<MatchId, StoreError> {
    MatchId::parse_str(text).map_err(|e| StoreError::Corrupt(format!("match id {text:?}: {e}")))
}

fn small(value: i64, what: &str) -> Result<u8, StoreError> {
    u8::try_from(value).map_err(|_| StoreError::Corrupt(format!("{what} {value} out of range")))
}

fn unsigned(value: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt(format!("{what} {value} is negative")))
}

/// Request ids with the seq of their first event, as read.
pub(crate) fn requests(rows: Vec<(String, i64)>) -> Result<Vec<(String, u64)>, StoreError> {
    rows.into_iter()
        .map(|(request_id, seq)| Ok((request_id, unsigned(seq, "seq")?)))
        .collect()
}

/// Converts a seq or version for binding; they never exceed `i64::MAX` in practice.
pub(crate) fn to_i64(value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Internal(format!("{value} does not fit in i64")))
}

impl EventRow {
    pub(crate) fn into_event(self, match_id: MatchId) -> Result<StoredEvent, StoreError> {
        Ok(StoredEvent {
            match_id,
            seq: unsigned(self.seq, "seq")?,
            kind: self.kind,
            actor: self.actor.map(|a| small(a.into(), "actor")).transpose()?,
            request_id: self.request_id,
            payload: parse_json(&self.payload, "event payload")?,
            at: self.at,
            prev_hash: hash32(&self.prev_hash, "prev_hash")?,
            hash: hash32(&self.hash, "hash")?,
        })
    }
}

impl SnapshotRow {
    pub(crate) fn into_snapshot(self) -> Result<Snapshot, StoreError> {
        Ok(Snapshot {
            seq: unsigned(self.seq, "snapshot seq")?,
            rules_version: u32::try_from(self.rules_version)
                .map_err(|_| StoreError::Corrupt("negative snapshot rules_version".to_owned()))?,
            state: parse_json(&self.state, "snapshot state")?,
        })
    }
}

impl MatchRow {
    /// Builds the record from the row and its seat rows (which may hold other matches' seats).
    pub(crate) fn into_record(self, seats: &[SeatRow]) -> Result<MatchRecord, StoreError> {
        let seat_count = small(self.seat_count.into(), "seat_count")?;
        let mut records: Vec<SeatRecord> = (0..seat_count)
            .map(|seat| SeatRecord {
                seat,
                ..SeatRecord::default()
            })
            .collect();
        for row in seats.iter().filter(|s| s.match_id == self.match_id) {
            let seat = small(row.seat.into(), "seat")?;
            let slot = records.get_mut(usize::from(seat)).ok_or_else(|| {
                StoreError::Corrupt(format!("seat {seat} beyond seat_count {seat_count}"))
            })?;
            slot.player = row.player.clone();
            slot.token_hash = row
                .token_hash
                .as_deref()
                .map(|h| hash32(h, "token_hash"))
                .transpose()?;
            slot.bot = row.bot.clone();
        }
        Ok(MatchRecord {
            id: parse_id(&self.match_id)?,
            kind: self.kind,
            config: parse_json(&self.config, "match config")?,
            rules_version: u32::try_from(self.rules_version)
                .map_err(|_| StoreError::Corrupt("negative rules_version".to_owned()))?,
            seat_count,
            seats: records,
            status: MatchStatus::parse(&self.status)
                .ok_or_else(|| StoreError::Corrupt(format!("unknown status {:?}", self.status)))?,
            seed_hash: hash32(&self.seed_hash, "seed_hash")?,
            turn_timeout_secs: self
                .turn_timeout_secs
                .map(|t| {
                    u32::try_from(t)
                        .map_err(|_| StoreError::Corrupt("negative turn_timeout_secs".to_owned()))
                })
                .transpose()?,
            turn_reminder_secs: self
                .turn_reminder_secs
                .map(|t| {
                    u32::try_from(t)
                        .map_err(|_| StoreError::Corrupt("negative turn_reminder_secs".to_owned()))
                })
                .transpose()?,
            created_at: self.created_at,
            updated_at: self.updated_at,
            version: unsigned(self.version, "version")?,
        })
    }
}

impl HeadRow {
    /// Refuses seat updates for seats the match does not have: a caller bug, not a conflict.
    pub(crate) fn check_seats(&self, update: &crate::MatchUpdate) -> Result<(), StoreError> {
        match update
            .seats
            .iter()
            .find(|s| i16::from(s.seat) >= self.seat_count)
        {
            Some(bad) => Err(StoreError::Internal(format!(
                "seat {} does not exist (the match has {} seats)",
                bad.seat, self.seat_count
            ))),
            None => Ok(()),
        }
    }

    pub(crate) fn version(&self) -> Result<u64, StoreError> {
        unsigned(self.version, "version")
    }

    pub(crate) fn last_hash(&self) -> Result<[u8; 32], StoreError> {
        hash32(&self.last_hash, "last_hash")
    }

    /// The seq range of the already-stored request, if any.
    pub(crate) fn request_range(&self) -> Result<Option<(u64, u64)>, StoreError> {
        match (self.first_seq, self.last_seq) {
            (Some(first), Some(last)) => Ok(Some((
                unsigned(first, "first_seq")?,
                unsigned(last, "last_seq")?,
            ))),
            _ => Ok(None),
        }
    }
}
