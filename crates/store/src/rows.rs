//! Rows as both backends return them, and their checked conversion to the public types.
//!
//! Both backends select the same column names with types both can decode (match ids and JSON
//! as text, small integers as `i16`/`i32`, event and match times as `DateTime<Utc>`, the times
//! of turns and the outbox as [`Time`]), so one set of row types and one set of checks serve
//! both.

use chrono::{DateTime, Utc};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgTypeInfo, PgValueRef};
use sqlx::query::{Query, QueryAs, QueryScalar};
use sqlx::sqlite::{SqliteArgumentValue, SqliteTypeInfo, SqliteValueRef};
use sqlx::{Database, Decode, Encode, Postgres, Sqlite, Type};

use crate::{
    Delivery, DeliveryKey, DeliveryRecord, MatchId, MatchRecord, MatchStatus, NotificationKind,
    SeatRecord, Snapshot, StoreError, StoredEvent, TurnRecord, Webhook,
};

/// A group of a statement's parameters (a column struct), bound in the order of their
/// placeholders: statements bind through these rather than through long hand-written chains.
pub(crate) trait Params<DB: Database> {
    /// Binds every value of the group, in order.
    fn bind_to<'q, Q: Binds<'q, DB>>(self, query: Q) -> Q;
}

/// A statement that takes parameters: a query, whatever its rows are read as.
pub(crate) trait Binds<'q, DB: Database>: Sized {
    /// Binds the next parameter.
    fn value<T: 'q + Encode<'q, DB> + Type<DB>>(self, value: T) -> Self;

    /// Binds a group of parameters.
    fn params(self, params: impl Params<DB>) -> Self {
        params.bind_to(self)
    }
}

impl<'q, DB: Database> Binds<'q, DB> for Query<'q, DB, <DB as Database>::Arguments<'q>> {
    fn value<T: 'q + Encode<'q, DB> + Type<DB>>(self, value: T) -> Self {
        self.bind(value)
    }
}

impl<'q, DB: Database, O> Binds<'q, DB> for QueryAs<'q, DB, O, <DB as Database>::Arguments<'q>> {
    fn value<T: 'q + Encode<'q, DB> + Type<DB>>(self, value: T) -> Self {
        self.bind(value)
    }
}

impl<'q, DB: Database, O> Binds<'q, DB>
    for QueryScalar<'q, DB, O, <DB as Database>::Arguments<'q>>
{
    fn value<T: 'q + Encode<'q, DB> + Type<DB>>(self, value: T) -> Self {
        self.bind(value)
    }
}

/// Implements [`Params`] on both backends for a column struct whose values both can bind.
macro_rules! params_on_both {
    ($ty:ty, |$this:ident, $query:ident| $bind:expr) => {
        impl $crate::rows::Params<sqlx::Postgres> for $ty {
            fn bind_to<'q, Q: $crate::rows::Binds<'q, sqlx::Postgres>>(self, $query: Q) -> Q {
                let $this = self;
                $bind
            }
        }
        impl $crate::rows::Params<sqlx::Sqlite> for $ty {
            fn bind_to<'q, Q: $crate::rows::Binds<'q, sqlx::Sqlite>>(self, $query: Q) -> Q {
                let $this = self;
                $bind
            }
        }
    };
}

/// A new match row, in the order of its columns.
#[derive(Debug)]
pub(crate) struct MatchValues {
    id: Id,
    kind: String,
    config: String,
    rules_version: i32,
    seat_count: i16,
    status: &'static str,
    seed: Vec<u8>,
    seed_hash: Vec<u8>,
    turn_timeout_secs: Option<i32>,
    turn_reminder_secs: Option<i32>,
    version: i64,
    last_hash: Vec<u8>,
    created_at: DateTime<Utc>,
}

impl MatchValues {
    pub(crate) fn new(
        m: &crate::NewMatch,
        events: &[StoredEvent],
    ) -> Result<MatchValues, StoreError> {
        let secs = |s: Option<u32>| s.map(|t| i32::try_from(t).unwrap_or(i32::MAX));
        Ok(MatchValues {
            id: Id(m.id),
            kind: m.kind.clone(),
            config: crate::canonical_json(&m.config),
            rules_version: i32::try_from(m.rules_version)
                .map_err(|_| StoreError::Internal("rules_version too large".into()))?,
            seat_count: i16::from(m.seat_count),
            status: m.start.status.unwrap_or(crate::MatchStatus::Open).as_str(),
            seed: m.seed.to_vec(),
            seed_hash: m.seed_hash.to_vec(),
            turn_timeout_secs: secs(m.turn_timeout_secs),
            turn_reminder_secs: secs(m.turn_reminder_secs),
            version: to_i64(events.last().map_or(0, |e| e.seq))?,
            last_hash: events
                .last()
                .map_or(crate::GENESIS_HASH, |e| e.hash)
                .to_vec(),
            created_at: crate::truncate_to_micros(m.created_at),
        })
    }
}

params_on_both!(MatchValues, |m, query| query
    .value(m.id)
    .value(m.kind)
    .value(m.config)
    .value(m.rules_version)
    .value(m.seat_count)
    .value(m.status)
    .value(m.seed)
    .value(m.seed_hash)
    .value(m.turn_timeout_secs)
    .value(m.turn_reminder_secs)
    .value(m.version)
    .value(m.last_hash)
    .value(m.created_at));

/// One event's row, in the order of the events table's columns after `match_id`: the first
/// event of a request carries `request_last`.
#[derive(Debug)]
pub(crate) struct EventValues {
    match_id: String,
    seq: i64,
    kind: String,
    actor: Option<i16>,
    request_id: Option<String>,
    request_last: Option<i64>,
    payload: String,
    at: DateTime<Utc>,
    prev_hash: Vec<u8>,
    hash: Vec<u8>,
}

impl EventValues {
    pub(crate) fn new(ev: &StoredEvent, request_last: Option<i64>) -> EventValues {
        EventValues {
            match_id: ev.match_id.to_string(),
            seq: i64::try_from(ev.seq).unwrap_or(i64::MAX),
            kind: ev.kind.clone(),
            actor: ev.actor.map(i16::from),
            request_id: ev.request_id.clone(),
            request_last,
            payload: crate::canonical_json(&ev.payload),
            at: ev.at,
            prev_hash: ev.prev_hash.to_vec(),
            hash: ev.hash.to_vec(),
        }
    }
}

/// SQLite stores each row's `prev_hash`.
impl Params<Sqlite> for EventValues {
    fn bind_to<'q, Q: Binds<'q, Sqlite>>(self, query: Q) -> Q {
        EventValues::bind_common(self, query, true)
    }
}

/// PostgreSQL leaves it out: it is the hash of the row before ([`chained`]).
impl Params<Postgres> for EventValues {
    fn bind_to<'q, Q: Binds<'q, Postgres>>(self, query: Q) -> Q {
        EventValues::bind_common(self, query, false)
    }
}

impl EventValues {
    fn bind_common<'q, DB: sqlx::Database, Q: Binds<'q, DB>>(
        self,
        query: Q,
        with_prev_hash: bool,
    ) -> Q
    where
        String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
        i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
        Option<i16>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
        Option<String>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
        Option<i64>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
        DateTime<Utc>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
        Vec<u8>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    {
        let query = query
            .value(self.match_id)
            .value(self.seq)
            .value(self.kind)
            .value(self.actor)
            .value(self.request_id)
            .value(self.request_last)
            .value(self.payload)
            .value(self.at);
        let query = if with_prev_hash {
            query.value(self.prev_hash)
        } else {
            query
        };
        query.value(self.hash)
    }
}

/// An outbox row's key: the match, seq, seat and kind.
#[derive(Debug)]
pub(crate) struct KeyValues {
    pub(crate) match_id: Id,
    pub(crate) seq: i64,
    pub(crate) seat: i16,
    pub(crate) kind: &'static str,
}

impl KeyValues {
    pub(crate) fn new(key: &DeliveryKey) -> Result<KeyValues, StoreError> {
        Ok(KeyValues {
            match_id: Id(key.match_id),
            seq: to_i64(key.seq)?,
            seat: i16::from(key.seat),
            kind: key.kind.as_str(),
        })
    }
}

params_on_both!(KeyValues, |k, q| q
    .value(k.match_id)
    .value(k.seq)
    .value(k.seat)
    .value(k.kind));

/// What one delivery attempt writes: when it was delivered, when to try again, the status the
/// receiver answered and the error.
#[derive(Debug)]
pub(crate) struct AttemptValues {
    pub(crate) delivered_at: Option<Time>,
    pub(crate) retry_at: Option<Time>,
    pub(crate) status: Option<i32>,
    pub(crate) error: Option<String>,
}

impl AttemptValues {
    pub(crate) fn new(attempt: &crate::Attempt, now: DateTime<Utc>) -> AttemptValues {
        match attempt {
            crate::Attempt::Delivered { status } => AttemptValues {
                delivered_at: Some(now.into()),
                retry_at: None,
                status: Some(i32::from(*status)),
                error: None,
            },
            crate::Attempt::Failed {
                status,
                error,
                retry_at,
            } => AttemptValues {
                delivered_at: None,
                retry_at: retry_at.map(Time::from),
                status: status.map(i32::from),
                error: Some(error.clone()),
            },
        }
    }
}

params_on_both!(AttemptValues, |a, q| q
    .value(a.delivered_at)
    .value(a.retry_at)
    .value(a.status)
    .value(a.error));

/// A time column of the turns and the outbox, to the microsecond: `timestamptz` on PostgreSQL,
/// integer microseconds since the Unix epoch on SQLite (so that due rows are found by
/// comparing numbers). Made from a time, it drops what is finer than a microsecond, as
/// PostgreSQL would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Time(pub(crate) DateTime<Utc>);

impl From<DateTime<Utc>> for Time {
    fn from(at: DateTime<Utc>) -> Time {
        Time(crate::truncate_to_micros(at))
    }
}

impl Type<Postgres> for Time {
    fn type_info() -> PgTypeInfo {
        <DateTime<Utc> as Type<Postgres>>::type_info()
    }
}

impl Encode<'_, Postgres> for Time {
    fn encode_by_ref(
        &self,
        buf: &mut sqlx::postgres::PgArgumentBuffer,
    ) -> Result<IsNull, BoxDynError> {
        <DateTime<Utc> as Encode<Postgres>>::encode_by_ref(&self.0, buf)
    }
}

impl Decode<'_, Postgres> for Time {
    fn decode(value: PgValueRef<'_>) -> Result<Time, BoxDynError> {
        Ok(Time(<DateTime<Utc> as Decode<Postgres>>::decode(value)?))
    }
}

impl sqlx::postgres::PgHasArrayType for Time {
    fn array_type_info() -> PgTypeInfo {
        <DateTime<Utc> as sqlx::postgres::PgHasArrayType>::array_type_info()
    }
}

impl Type<Sqlite> for Time {
    fn type_info() -> SqliteTypeInfo {
        <i64 as Type<Sqlite>>::type_info()
    }

    fn compatible(ty: &SqliteTypeInfo) -> bool {
        <i64 as Type<Sqlite>>::compatible(ty)
    }
}

impl<'q> Encode<'q, Sqlite> for Time {
    fn encode_by_ref(&self, buf: &mut Vec<SqliteArgumentValue<'q>>) -> Result<IsNull, BoxDynError> {
        <i64 as Encode<Sqlite>>::encode(self.0.timestamp_micros(), buf)
    }
}

impl Decode<'_, Sqlite> for Time {
    fn decode(value: SqliteValueRef<'_>) -> Result<Time, BoxDynError> {
        let us = <i64 as Decode<Sqlite>>::decode(value)?;
        DateTime::from_timestamp_micros(us)
            .map(Time)
            .ok_or_else(|| format!("time {us} out of range").into())
    }
}

/// A match id as a parameter: `uuid` on PostgreSQL, so that a statement keyed by it names its
/// match with a value of the distribution column's own type (Citus routes such a statement to
/// one shard, with or without a generic plan); its text on SQLite, where ids are stored as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Id(pub(crate) MatchId);

impl Type<Postgres> for Id {
    fn type_info() -> PgTypeInfo {
        <MatchId as Type<Postgres>>::type_info()
    }
}

impl Encode<'_, Postgres> for Id {
    fn encode_by_ref(
        &self,
        buf: &mut sqlx::postgres::PgArgumentBuffer,
    ) -> Result<IsNull, BoxDynError> {
        <MatchId as Encode<Postgres>>::encode_by_ref(&self.0, buf)
    }
}

impl Type<Sqlite> for Id {
    fn type_info() -> SqliteTypeInfo {
        <String as Type<Sqlite>>::type_info()
    }
}

impl<'q> Encode<'q, Sqlite> for Id {
    fn encode_by_ref(&self, buf: &mut Vec<SqliteArgumentValue<'q>>) -> Result<IsNull, BoxDynError> {
        <String as Encode<Sqlite>>::encode(self.0.to_string(), buf)
    }
}

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
    pub(crate) account: Option<String>,
    pub(crate) invited: bool,
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
    pub(crate) account: Option<String>,
    pub(crate) invited: Option<bool>,
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
                    account: row.account,
                    invited: row.invited.unwrap_or(false),
                });
            }
            match_row.get_or_insert(row.m);
        }
        Some(match_row?.into_record(&seats))
    }

    /// The records of several matches read as one row per seat, each match's rows together,
    /// in the order of their first rows.
    pub(crate) fn into_records(rows: Vec<MatchSeatRow>) -> Result<Vec<MatchRecord>, StoreError> {
        let mut records = Vec::new();
        let mut one: Vec<MatchSeatRow> = Vec::new();
        for row in rows {
            if one
                .last()
                .is_some_and(|last| last.m.match_id != row.m.match_id)
            {
                records.extend(MatchSeatRow::into_record(std::mem::take(&mut one)));
            }
            one.push(row);
        }
        records.extend(MatchSeatRow::into_record(one));
        records.into_iter().collect()
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
    /// Absent from PostgreSQL's rows written since they became leaner: the hash of the row
    /// before, which [`chained`] fills in.
    pub(crate) prev_hash: Option<Vec<u8>>,
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
    /// PostgreSQL: the match's log is archived (`version` and `last_hash` are its final head,
    /// and its request ids are in the archive). SQLite archives nothing.
    #[sqlx(default)]
    pub(crate) archived: bool,
    /// PostgreSQL: another request of the match holds the request id's index key. SQLite
    /// indexes the ids themselves.
    #[sqlx(default)]
    pub(crate) key_taken: bool,
    /// PostgreSQL: some of the match's older events are packed into blocks, whose request ids
    /// are not in the request index. SQLite packs nothing.
    #[sqlx(default)]
    pub(crate) packed: bool,
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

pub(crate) fn small(value: i64, what: &str) -> Result<u8, StoreError> {
    u8::try_from(value).map_err(|_| StoreError::Corrupt(format!("{what} {value} out of range")))
}

pub(crate) fn unsigned(value: i64, what: &str) -> Result<u64, StoreError> {
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
    /// The event; `prev` is the hash of the event before it, for a row that does not hold it.
    pub(crate) fn into_event(
        self,
        match_id: MatchId,
        prev: Option<[u8; 32]>,
    ) -> Result<StoredEvent, StoreError> {
        let prev_hash = match (&self.prev_hash, prev) {
            (Some(stored), _) => hash32(stored, "prev_hash")?,
            (None, Some(prev)) => prev,
            (None, None) => {
                return Err(StoreError::Corrupt(format!(
                    "event {} of match {match_id} was read without the event before it",
                    self.seq
                )));
            }
        };
        Ok(StoredEvent {
            match_id,
            seq: unsigned(self.seq, "seq")?,
            kind: self.kind,
            actor: self.actor.map(|a| small(a.into(), "actor")).transpose()?,
            request_id: self.request_id,
            payload: parse_json(&self.payload, "event payload")?,
            at: self.at,
            prev_hash,
            hash: hash32(&self.hash, "hash")?,
        })
    }
}

/// The events after seq `after` among `rows`, a run of one match's rows in seq order that
/// starts with the row at `after` itself when `after > 0`: each row that does not hold its
/// `prev_hash` takes the hash of the row just before it (the first event of a match, the
/// genesis hash).
pub(crate) fn chained(
    rows: Vec<EventRow>,
    match_id: MatchId,
    after: u64,
) -> Result<Vec<StoredEvent>, StoreError> {
    chained_from(rows, match_id, after, None)
}

/// [`chained`], where the event before the first row may be no row: `before` is its seq and
/// hash (the last event of a packed block, PostgreSQL), used if the rows follow it.
pub(crate) fn chained_from(
    rows: Vec<EventRow>,
    match_id: MatchId,
    after: u64,
    before: Option<(u64, [u8; 32])>,
) -> Result<Vec<StoredEvent>, StoreError> {
    let mut before = before.or((after == 0).then_some((0, crate::GENESIS_HASH)));
    let mut events = Vec::with_capacity(rows.len());
    for row in rows {
        let seq = unsigned(row.seq, "seq")?;
        let hash = hash32(&row.hash, "hash")?;
        if seq > after {
            let prev = before.filter(|(s, _)| s + 1 == seq).map(|(_, h)| h);
            events.push(row.into_event(match_id, prev)?);
        }
        before = Some((seq, hash));
    }
    Ok(events)
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
            slot.account = row.account.clone();
            slot.invited = row.invited;
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

/// A pending turn, as both backends select it.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct TurnRow {
    pub(crate) match_id: String,
    pub(crate) seat: i16,
    pub(crate) version: i64,
    pub(crate) due_at: Time,
    pub(crate) remind_at: Option<Time>,
    pub(crate) bot: Option<String>,
    pub(crate) lease_until: Option<Time>,
}

impl TurnRow {
    pub(crate) fn into_record(self) -> Result<TurnRecord, StoreError> {
        Ok(TurnRecord {
            match_id: parse_id(&self.match_id)?,
            seat: small(self.seat.into(), "turn seat")?,
            version: unsigned(self.version, "turn version")?,
            due_at: self.due_at.0,
            remind_at: self.remind_at.map(|t| t.0),
            bot: self.bot,
            lease_until: self.lease_until.map(|t| t.0),
        })
    }
}

/// A reminder that fell due, with its seat's webhook URL if it has one.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct ReminderRow {
    pub(crate) match_id: String,
    pub(crate) seat: i16,
    pub(crate) version: i64,
    pub(crate) due_at: Time,
    pub(crate) remind_at: Time,
    pub(crate) url: Option<String>,
}

/// A seat's webhook.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct WebhookRow {
    pub(crate) match_id: String,
    pub(crate) seat: i16,
    pub(crate) url: String,
    pub(crate) secret: Vec<u8>,
    pub(crate) created_at: Time,
}

impl WebhookRow {
    pub(crate) fn into_webhook(self) -> Result<Webhook, StoreError> {
        Ok(Webhook {
            match_id: parse_id(&self.match_id)?,
            seat: small(self.seat.into(), "seat")?,
            url: self.url,
            secret: hash32(&self.secret, "webhook secret")?,
            created_at: self.created_at.0,
        })
    }
}

/// The key columns of an outbox row.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct KeyRow {
    pub(crate) match_id: String,
    pub(crate) seq: i64,
    pub(crate) seat: i16,
    pub(crate) kind: String,
}

impl KeyRow {
    pub(crate) fn into_key(self) -> Result<DeliveryKey, StoreError> {
        Ok(DeliveryKey {
            match_id: parse_id(&self.match_id)?,
            seq: unsigned(self.seq, "seq")?,
            seat: small(self.seat.into(), "seat")?,
            kind: NotificationKind::parse(&self.kind)?,
        })
    }
}

/// An outbox row as claimed, with its seat's current secret.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct ClaimRow {
    #[sqlx(flatten)]
    pub(crate) key: KeyRow,
    pub(crate) url: String,
    pub(crate) body: String,
    pub(crate) attempts: i32,
    pub(crate) secret: Option<Vec<u8>>,
}

impl ClaimRow {
    pub(crate) fn into_delivery(self) -> Result<Delivery, StoreError> {
        Ok(Delivery {
            key: self.key.into_key()?,
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

/// An outbox row, as the delivery record.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct RecordRow {
    #[sqlx(flatten)]
    pub(crate) key: KeyRow,
    pub(crate) url: String,
    pub(crate) body: String,
    pub(crate) attempts: i32,
    pub(crate) next_attempt_at: Option<Time>,
    pub(crate) delivered_at: Option<Time>,
    pub(crate) last_status: Option<i32>,
    pub(crate) last_error: Option<String>,
    pub(crate) created_at: Time,
}

/// The columns of a [`RecordRow`], the same on both backends but for the match id.
pub(crate) const RECORD_COLUMNS: &str = "seq, seat, kind, url, body, attempts, next_attempt_at, \
    delivered_at, last_status, last_error, created_at";

impl RecordRow {
    pub(crate) fn into_record(self) -> Result<DeliveryRecord, StoreError> {
        Ok(DeliveryRecord {
            key: self.key.into_key()?,
            url: self.url,
            body: self.body,
            attempts: u32::try_from(self.attempts).unwrap_or(u32::MAX),
            next_attempt_at: self.next_attempt_at.map(|t| t.0),
            delivered_at: self.delivered_at.map(|t| t.0),
            last_status: self.last_status.and_then(|s| u16::try_from(s).ok()),
            last_error: self.last_error,
            created_at: self.created_at.0,
        })
    }
}
