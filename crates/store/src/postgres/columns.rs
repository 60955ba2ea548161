//! What several PostgreSQL statements share: the columns of events and seats bound as arrays
//! (one per column, for an `UNNEST`), the insert of a match row, and the event row a log read
//! gives with its request's last seq. The files that write and read those tables build on
//! these; this file builds on none of them.

use chrono::{DateTime, Utc};
use sqlx::Postgres;

use crate::rows::{Binds, EventRow, Params, to_i64};
use crate::{SeatRecord, StoreError, StoredEvent, canonical_json};

/// The columns a read of events selects, as [`EventRow`] reads them.
pub(super) const EVENT_COLUMNS: &str =
    "seq, kind, actor, request_id, payload::text AS payload, at, prev_hash, hash";

/// Events to insert with one `UNNEST`, one array per column (here and in [`super::batch`]):
/// `bigint[], text[], smallint[], text[], bigint[], text[], timestamptz[], bytea[]`. There is no
/// `prev_hash`: a row's is the hash of the row before it, filled in as rows are read
/// ([`crate::rows::chained`]).
#[derive(Debug, Default, Clone)]
pub(super) struct EventColumns {
    seq: Vec<i64>,
    kind: Vec<String>,
    actor: Vec<Option<i16>>,
    request_id: Vec<Option<String>>,
    /// On a request's first event, the seq of its last event; `None` elsewhere.
    request_last: Vec<Option<i64>>,
    payload: Vec<String>,
    at: Vec<DateTime<Utc>>,
    hash: Vec<Vec<u8>>,
}

impl EventColumns {
    /// The events of one request.
    pub(super) fn new(events: &[StoredEvent]) -> Result<EventColumns, StoreError> {
        let mut c = EventColumns::default();
        let last = events.last().map_or(Ok(0), |e| to_i64(e.seq))?;
        for (i, ev) in events.iter().enumerate() {
            c.push(ev, (i == 0 && ev.request_id.is_some()).then_some(last))?;
        }
        Ok(c)
    }

    pub(super) fn push(
        &mut self,
        ev: &StoredEvent,
        request_last: Option<i64>,
    ) -> Result<(), StoreError> {
        self.seq.push(to_i64(ev.seq)?);
        self.kind.push(ev.kind.clone());
        self.actor.push(ev.actor.map(i16::from));
        self.request_id.push(ev.request_id.clone());
        self.request_last.push(request_last);
        self.payload.push(canonical_json(&ev.payload));
        self.at.push(ev.at);
        self.hash.push(ev.hash.to_vec());
        Ok(())
    }
}

impl Params<Postgres> for EventColumns {
    fn bind_to<'q, Q: Binds<'q, Postgres>>(self, query: Q) -> Q {
        query
            .value(self.seq)
            .value(self.kind)
            .value(self.actor)
            .value(self.request_id)
            .value(self.request_last)
            .value(self.payload)
            .value(self.at)
            .value(self.hash)
    }
}

/// Seats to write, one array per column (`smallint[], text[], bytea[], text[]`). Their
/// accounts are bound apart, as the statement's last parameter ([`SeatColumns::accounts`]).
#[derive(Debug, Default)]
pub(super) struct SeatColumns {
    seat: Vec<i16>,
    player: Vec<Option<String>>,
    token_hash: Vec<Option<Vec<u8>>>,
    bot: Vec<Option<String>>,
}

impl SeatColumns {
    pub(super) fn new(seats: &[SeatRecord]) -> SeatColumns {
        let mut c = SeatColumns::default();
        for s in seats {
            c.seat.push(i16::from(s.seat));
            c.player.push(s.player.clone());
            c.token_hash.push(s.token_hash.map(|h| h.to_vec()));
            c.bot.push(s.bot.clone());
        }
        c
    }

    /// The seats' accounts (`text[]`), in the order of [`SeatColumns::new`].
    pub(super) fn accounts(seats: &[SeatRecord]) -> Vec<Option<String>> {
        seats.iter().map(|s| s.account.clone()).collect()
    }

    /// Whether each seat is held for an invited player (`boolean[]`), in the same order.
    pub(super) fn invited(seats: &[SeatRecord]) -> Vec<bool> {
        seats.iter().map(|s| s.invited).collect()
    }
}

impl Params<Postgres> for SeatColumns {
    fn bind_to<'q, Q: Binds<'q, Postgres>>(self, query: Q) -> Q {
        query
            .value(self.seat)
            .value(self.player)
            .value(self.token_hash)
            .value(self.bot)
    }
}

/// The insert of a match row, `$1`…`$13` ([`MatchValues`]), its creator the placeholder given.
macro_rules! insert_match {
    ($creator:literal) => {
        concat!(
            "INSERT INTO matches (match_id, kind, config, rules_version, seat_count, status, seed,
                seed_hash, turn_timeout_secs, turn_reminder_secs, version, last_hash, created_at,
                updated_at, creator)
            VALUES ($1::uuid, $2, $3::jsonb, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, ",
            $creator,
            ")"
        )
    };
}

/// The match row alone, its creator `$14`: on Citus, the first statement of a creation.
pub(super) const INSERT_MATCH: &str = insert_match!("$14");

/// An event row with its request's last seq.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct LogRow {
    #[sqlx(flatten)]
    pub(super) event: EventRow,
    pub(super) request_last: Option<i64>,
}
