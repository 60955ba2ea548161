//! The event store: every match is an append-only, hash-chained log of events, plus one match
//! row and periodic snapshots of the game state.
//!
//! Two backends share one API: PostgreSQL (production, `postgres://…`) and SQLite (embedded,
//! `sqlite://path`). The store is game-agnostic: payloads, configs and snapshot states are
//! `serde_json::Value`, and it never depends on the rules engine.
//!
//! # Guarantees
//! - A match's log is keyed `(match_id, seq)` and gap-free from 1. [`Store::append`] takes the
//!   version (last seq) the caller expects; of two writers racing for the same seq exactly one
//!   wins and the other gets [`StoreError::Conflict`]. On PostgreSQL the append is a single
//!   statement, so no row lock is ever held while waiting on a network round trip.
//! - Each event carries `hash = SHA-256(prev_hash ‖ canonical bytes)`, genesis `prev_hash` being
//!   32 zero bytes; [`Store::verify_chain`] recomputes the chain and names the first bad event.
//! - An append whose first event carries a request id the match already holds returns the events
//!   originally stored for that request (`duplicate = true`), never a second copy or an error.
//! - The match row keeps `H(seed)` for everyone and the seed itself for the server
//!   ([`Store::seed`]), which reveals it only once the match is over. Seat tokens are only ever
//!   stored hashed ([`SeatRecord::token_hash`]).
//! - Snapshots written by another rules version are ignored by [`Store::load`]: events are the
//!   truth, snapshots only a cache.
//! - An archived match ([`Store::archive_finished`], PostgreSQL) reads, retries and verifies
//!   exactly as its rows did: the archive is unpacked with its chain recomputed and refused
//!   ([`StoreError::Corrupt`]) unless it ends at the hash stored with it. So does a live match
//!   whose older events are packed into blocks ([`Store::pack_live`], PostgreSQL), with one
//!   limit: a packed request id is no longer in the database's request index, so an append
//!   that reuses it is answered with the original by every store that checks the append
//!   against the database (no cached head, or a lost race), and [`Loaded::requests`] lists it,
//!   but a store whose cached head is current writes what it is given: its caller checks
//!   request ids first, as the server does against every id its cached match holds.
//! - Pending turns (turn deadlines and bot turns, [`MatchUpdate::turns`]) are written by the
//!   same statement (PostgreSQL) or transaction (SQLite) as the events that make their seats
//!   awaited, so a committed event never lacks its deadline. [`Store::claim_turns`] leases due
//!   turns; concurrent claimers never get the same turn while its lease runs.
//! - An append with seats in [`MatchUpdate::notify`] queues their "your turn" webhook
//!   notifications atomically with its events (see [`Store::claim_deliveries`]).
//! - Errors are [`StoreError`]; `sqlx::Error` never leaves the crate. A lost or unreachable
//!   database is [`StoreError::Unavailable`] (on PostgreSQL within
//!   [`StoreOptions::acquire_timeout`] for a new connection); the pool reconnects by itself
//!   once the database is back.
//! - On PostgreSQL, once an append has committed, `'<match_id>:<version>'` is sent on
//!   [`NOTIFY_CHANNEL`] (best effort, after the commit, and only while another store's
//!   [`Listener`] is connected), so every other process listening learns of it.
//!
//! # Canonical bytes of an event (what the hash covers)
//! [`canonical_bytes`] is a JSON object with no whitespace and keys in byte order:
//!
//! ```text
//! {"actor":A,"at":"T","kind":"K","match_id":"M","payload":P,"request_id":R,"seq":N}
//! ```
//! - `A`: the acting seat as an integer, or `null` for system events;
//! - `T`: the event time in UTC, RFC 3339 with exactly six fractional digits and a `Z`
//!   (`2026-01-02T03:04:05.678901Z`); times are truncated to microseconds before hashing and
//!   storing, because PostgreSQL keeps no more;
//! - `K`: the event kind; `M`: the match id, lowercase hyphenated;
//! - `P`: the payload, re-serialised with every object's keys sorted by byte order at every depth,
//!   no whitespace, strings escaped as `serde_json` does (JSONB reorders keys, so the hash must
//!   not depend on the order they were written in);
//! - `R`: the client's request id as a string, or `null`; `N`: the sequence number.
//!
//! An auditor recomputes `hash[n] = SHA-256(hash[n-1] ‖ canonical_bytes(event n))` from the
//! stored columns alone; for an archived match, from the archived events, the last of which
//! must hash to the `last_hash` stored beside them.
//!
//! # Code map
//! - `lib.rs`: the public types and [`Store`], which checks what it is given and hands each call
//!   to its backend; `backend.rs`: the operations every backend implements.
//! - `postgres/` and `sqlite/`: one folder per backend, with the same files for the same things:
//!   `mod.rs` (connecting, errors, the backend's operations), `matches.rs` (match rows and
//!   seats), `events.rs` (appends, reads, loads, snapshots), `turns.rs` (pending turns and
//!   reminders), `outbox.rs` (webhooks and their notifications). Only PostgreSQL has `batch.rs`
//!   (the group commit), `notify.rs` (append announcements across processes) and `archive.rs`
//!   (ended matches' logs, each in one row in the format of the crate's `archive.rs`).
//! - `rows.rs`: the rows both backends read and the column structs they bind; `canonical.rs`:
//!   the canonical bytes and the hash chain; `turns.rs` and `outbox.rs`: what both backends
//!   share about pending turns and the outbox, and the outbox's public types.
//! - `metrics.rs`: the latencies and group-commit batch sizes the store records through the
//!   `metrics` facade (exported by the recorder the process installs, if any).
//! - `migrations/` at the workspace root: each backend's schema; its README lists what differs.

mod archive;
mod backend;
mod canonical;
pub mod metrics;
mod outbox;
mod postgres;
mod rows;
mod sqlite;
mod turns;

use std::time::Duration;

use chrono::{DateTime, Utc};

use backend::Backend;

pub use canonical::{canonical_bytes, canonical_json, event_hash, truncate_to_micros};
pub use outbox::{
    Attempt, Delivery, DeliveryKey, DeliveryRecord, Notification, NotificationKind, REMOVED,
    Reminder, Webhook,
};
pub use postgres::GroupCommit;
pub use postgres::notify::{Listener, NOTIFY_CHANNEL, Notice};

/// The PostgreSQL statements behind the store's reads and the turn claim, exactly as it issues
/// them, for tools that explain their plans (the scale benchmark). Not part of the API.
#[doc(hidden)]
pub mod statements {
    pub use crate::postgres::events::{
        LOAD_SNAPSHOT, load_events_sql, read_sql as read_events_sql,
    };
    pub use crate::postgres::matches::{list_sql as list_matches_sql, read_sql as read_match_sql};
    pub use crate::postgres::turns::CANDIDATES as CLAIM_TURNS;
}

/// A match's identifier; also the distribution key of every table.
pub type MatchId = uuid::Uuid;

/// The genesis `prev_hash` of the first event of every match.
pub const GENESIS_HASH: [u8; 32] = [0; 32];

/// The lifecycle of a match, stored as the stable strings of [`MatchStatus::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchStatus {
    /// Waiting for players to take the seats.
    Open,
    /// Being played.
    Active,
    /// Over, with an outcome; the seed may now be revealed.
    Finished,
    /// Stopped without an outcome.
    Abandoned,
}

impl MatchStatus {
    /// The stable string stored in the database; renaming one breaks every stored match.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchStatus::Open => "open",
            MatchStatus::Active => "active",
            MatchStatus::Finished => "finished",
            MatchStatus::Abandoned => "abandoned",
        }
    }

    /// Parses a stored string back; `None` for anything this version does not know.
    pub fn parse(s: &str) -> Option<MatchStatus> {
        match s {
            "open" => Some(MatchStatus::Open),
            "active" => Some(MatchStatus::Active),
            "finished" => Some(MatchStatus::Finished),
            "abandoned" => Some(MatchStatus::Abandoned),
            _ => None,
        }
    }
}

/// Who sits in one seat. A seat nobody has taken has every field `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SeatRecord {
    /// Seat number, from 0 to `seat_count - 1`.
    pub seat: u8,
    /// The player's display name or account id, as the server chooses.
    pub player: Option<String>,
    /// SHA-256 of the seat token; the token itself is never stored.
    pub token_hash: Option<[u8; 32]>,
    /// The bot playing this seat, if any.
    pub bot: Option<String>,
    /// The player account the seat is bound to (a verified player token's subject), if any.
    pub account: Option<String>,
    /// Held for an invited player. Written only when the match is created (from
    /// [`NewMatch::start`]'s seats); appends leave it as it is.
    pub invited: bool,
}

impl SeatRecord {
    /// Every seat of a match of `seat_count` seats, in order: those of `given` as they are, the
    /// others empty.
    pub fn all(seat_count: u8, given: &[SeatRecord]) -> Vec<SeatRecord> {
        (0..seat_count)
            .map(|seat| {
                given
                    .iter()
                    .find(|s| s.seat == seat)
                    .cloned()
                    .unwrap_or(SeatRecord {
                        seat,
                        ..SeatRecord::default()
                    })
            })
            .collect()
    }
}

/// Everything needed to create a match.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMatch {
    /// Chosen by the caller so that creation can be retried safely.
    pub id: MatchId,
    /// The game's stable kind id (`love-letter`).
    pub kind: String,
    /// The game configuration, as the rules engine reads it.
    pub config: serde_json::Value,
    /// The rules version the match is played under.
    pub rules_version: u32,
    /// Number of seats; one empty seat row is created per seat.
    pub seat_count: u8,
    /// The RNG seed; kept secret until the match is over.
    pub seed: [u8; 32],
    /// The public commitment `H(seed)`.
    pub seed_hash: [u8; 32],
    /// Time a seat has to act, if the match has turn deadlines.
    pub turn_timeout_secs: Option<u32>,
    /// How long before a deadline the seat's webhook gets a reminder, if it does.
    pub turn_reminder_secs: Option<u32>,
    /// Creation time (also `updated_at` of the new row).
    pub created_at: DateTime<Utc>,
    /// Who created it (the server's client key as text), counted by
    /// [`Store::open_by_creator`] and read by [`Store::creator`]; `None` when not known.
    pub creator: Option<String>,
    /// Written with the match: seats taken at creation (by bots), the status (`None`: open)
    /// and the first pending turns. `Default` gives an open match with empty seats.
    pub start: MatchUpdate,
}

/// A match row as stored, with its seats.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchRecord {
    /// The match id.
    pub id: MatchId,
    /// The game's stable kind id.
    pub kind: String,
    /// The game configuration.
    pub config: serde_json::Value,
    /// The rules version the match is played under.
    pub rules_version: u32,
    /// Number of seats.
    pub seat_count: u8,
    /// One record per seat, in seat order.
    pub seats: Vec<SeatRecord>,
    /// Lifecycle status.
    pub status: MatchStatus,
    /// The public commitment `H(seed)`.
    pub seed_hash: [u8; 32],
    /// Time a seat has to act, if any.
    pub turn_timeout_secs: Option<u32>,
    /// How long before a deadline the seat's webhook gets a reminder, if it does.
    pub turn_reminder_secs: Option<u32>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Time of the last change.
    pub updated_at: DateTime<Utc>,
    /// The seq of the last event (0 for a match with no events).
    pub version: u64,
}

impl MatchRecord {
    /// The row [`Store::create_match`] writes for `m` with its first `events`, as
    /// [`Store::get_match`] would read it back.
    pub(crate) fn created(m: &NewMatch, events: &[StoredEvent]) -> MatchRecord {
        let created_at = truncate_to_micros(m.created_at);
        let seats = SeatRecord::all(m.seat_count, &m.start.seats);
        MatchRecord {
            id: m.id,
            kind: m.kind.clone(),
            config: m.config.clone(),
            rules_version: m.rules_version,
            seat_count: m.seat_count,
            seats,
            status: m.start.status.unwrap_or(MatchStatus::Open),
            seed_hash: m.seed_hash,
            turn_timeout_secs: m.turn_timeout_secs,
            turn_reminder_secs: m.turn_reminder_secs,
            created_at,
            updated_at: Self::last_change(m, events),
            version: events.last().map_or(0, |e| e.seq),
        }
    }

    /// A new match's time of last change: its creation, or its latest first event if later.
    pub(crate) fn last_change(m: &NewMatch, events: &[StoredEvent]) -> DateTime<Utc> {
        let created_at = truncate_to_micros(m.created_at);
        events.iter().map(|e| e.at).fold(created_at, DateTime::max)
    }
}

/// An event to append.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// The stable event kind: `created`, `joined`, `action`, `timeout`, `left`, …
    pub kind: String,
    /// The seat that acted; `None` for system events.
    pub actor: Option<u8>,
    /// The client's request id, for idempotent retries.
    pub request_id: Option<String>,
    /// The game action or system event details.
    pub payload: serde_json::Value,
    /// When it happened; truncated to microseconds when stored.
    pub at: DateTime<Utc>,
}

/// An event as stored, with its place in the hash chain.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// The match the event belongs to.
    pub match_id: MatchId,
    /// Position in the log, from 1.
    pub seq: u64,
    /// The stable event kind.
    pub kind: String,
    /// The seat that acted, if any.
    pub actor: Option<u8>,
    /// The client's request id, if any.
    pub request_id: Option<String>,
    /// The game action or system event details.
    pub payload: serde_json::Value,
    /// When it happened, to the microsecond.
    pub at: DateTime<Utc>,
    /// The hash of the previous event ([`GENESIS_HASH`] for seq 1).
    pub prev_hash: [u8; 32],
    /// `SHA-256(prev_hash ‖ canonical_bytes(this event))`.
    pub hash: [u8; 32],
}

impl StoredEvent {
    /// The event as it was appended, without its position and hashes.
    pub fn to_new(&self) -> NewEvent {
        NewEvent {
            kind: self.kind.clone(),
            actor: self.actor,
            request_id: self.request_id.clone(),
            payload: self.payload.clone(),
            at: self.at,
        }
    }
}

/// Changes to the match row applied atomically with an append. `Default` changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MatchUpdate {
    /// The new status, if it changes.
    pub status: Option<MatchStatus>,
    /// Seats to overwrite, each identified by its `seat` number.
    pub seats: Vec<SeatRecord>,
    /// `Some`: the match's pending turns become exactly these, each awaited after the append's
    /// last event (its `version`); every other pending turn of the match is deleted. `None`
    /// leaves them alone (matches with no deadlines and no bots), keeping the append a plain
    /// insert.
    pub turns: Option<Vec<PendingTurn>>,
    /// Seats this append makes awaited, with the "your turn" payload each is posted about the
    /// append's last event: each seat that has a webhook gets it queued in the outbox, written
    /// with the events or not at all. Ignored by an append without events.
    pub notify: Vec<Notification>,
}

/// A seat the server will act for unless the seat acts first: a human seat's turn deadline
/// (the game's default action is played when it passes), or a bot seat's turn (due at once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingTurn {
    /// The awaited seat.
    pub seat: u8,
    /// When the server acts for the seat.
    pub due_at: DateTime<Utc>,
    /// When the seat's webhook gets a reminder (a human seat's deadline, when the match sets
    /// reminders); see [`Store::queue_reminders`].
    pub remind_at: Option<DateTime<Utc>>,
    /// The bot's strategy, for a bot seat.
    pub bot: Option<String>,
    /// The seat was awaited before this append too and did not act in it: a stored pending
    /// turn keeps its `due_at` and `remind_at` (the deadline runs from when the seat became
    /// awaited, and a reminder sent is not sent again), and these apply only when there is none.
    pub continues: bool,
}

/// A pending turn as stored: the seat, awaited after event `version`, is due at `due_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRecord {
    /// The match.
    pub match_id: MatchId,
    /// The awaited seat.
    pub seat: u8,
    /// The seq after which the seat is awaited: act with this expected version.
    pub version: u64,
    /// When the server acts for the seat.
    pub due_at: DateTime<Utc>,
    /// When the seat's webhook gets a reminder; `None` once queued, or with no reminder.
    pub remind_at: Option<DateTime<Utc>>,
    /// The bot's strategy, for a bot seat; `None` for a human seat's deadline.
    pub bot: Option<String>,
    /// Set while a server has claimed the turn; after it, another server may claim it again.
    pub lease_until: Option<DateTime<Utc>>,
}

/// What one call of [`Store::pack_live`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackSweep {
    /// Live matches looked at: fewer than the limit asked for means the sweep reached the end.
    pub looked_at: u32,
    /// Matches that had a block packed.
    pub packed: u32,
    /// The last match looked at: where the next call goes on from.
    pub last: Option<MatchId>,
}

/// The result of [`Store::append`].
#[derive(Debug, Clone, PartialEq)]
pub struct Appended {
    /// The stored events: the new ones, or for a duplicate the ones stored the first time.
    pub events: Vec<StoredEvent>,
    /// True when the request id was already held and nothing was written.
    pub duplicate: bool,
    /// A "your turn" notification was queued in the outbox with these events (or may have
    /// been); false when no seat named in [`MatchUpdate::notify`] has a webhook.
    pub webhooks_queued: bool,
}

/// A cached game state after event `seq`, produced by the given rules version.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The seq of the last event folded into `state`.
    pub seq: u64,
    /// The rules version that produced `state`.
    pub rules_version: u32,
    /// The serialised game state.
    pub state: serde_json::Value,
}

/// What [`Store::load`] returns: fold `events` over `snapshot` (or over a fresh setup when there
/// is none) to get the current state.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The match row.
    pub record: MatchRecord,
    /// The newest snapshot written by the requested rules version, if any.
    pub snapshot: Option<Snapshot>,
    /// Every event after the snapshot (all events when there is none), in order.
    pub events: Vec<StoredEvent>,
    /// The request ids of the events the snapshot holds (none without a snapshot), each with
    /// the seq of the first event of its request: with `events`, every request id of the match.
    pub requests: Vec<(String, u64)>,
}

/// The verdict of [`Store::verify_chain`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainCheck {
    /// Every event links to the previous one and hashes to its stored hash.
    Valid {
        /// Number of events checked.
        events: u64,
    },
    /// The first event that does not check out, and why.
    Broken {
        /// The first bad event's seq.
        seq: u64,
        /// What is wrong with it.
        reason: String,
    },
}

/// Which matches [`Store::list_matches`] returns, ordered by id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MatchFilter {
    /// Only matches with this status.
    pub status: Option<MatchStatus>,
    /// Only matches of this game kind.
    pub kind: Option<String>,
    /// At most this many (0 means [`MatchFilter::DEFAULT_LIMIT`]; capped at
    /// [`MatchFilter::MAX_LIMIT`]).
    pub limit: u32,
    /// Only matches whose id sorts after this one: the cursor of the previous page.
    pub after: Option<MatchId>,
}

impl MatchFilter {
    /// The page size used when `limit` is 0.
    pub const DEFAULT_LIMIT: u32 = 100;
    /// The largest page size served.
    pub const MAX_LIMIT: u32 = 1000;

    pub(crate) fn effective_limit(&self) -> i64 {
        let limit = if self.limit == 0 {
            Self::DEFAULT_LIMIT
        } else {
            self.limit.min(Self::MAX_LIMIT)
        };
        i64::from(limit)
    }
}

/// Which of one player's matches [`Store::player_matches`] returns: those with a seat bound
/// to the account, newest activity (`updated_at`) first, ties by id, highest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlayerFilter {
    /// The account whose seats count.
    pub account: String,
    /// Only matches with this status.
    pub status: Option<MatchStatus>,
    /// At most this many (0 means [`MatchFilter::DEFAULT_LIMIT`]; capped at
    /// [`MatchFilter::MAX_LIMIT`]).
    pub limit: u32,
    /// Only matches that sort after this `(updated_at, id)` in that order: the last match of
    /// the previous page.
    pub after: Option<(DateTime<Utc>, MatchId)>,
}

impl PlayerFilter {
    pub(crate) fn effective_limit(&self) -> i64 {
        MatchFilter {
            limit: self.limit,
            ..MatchFilter::default()
        }
        .effective_limit()
    }
}

/// The store's errors. Database driver errors are mapped here and never leak out.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// No match with this id.
    #[error("match {0} not found")]
    NotFound(MatchId),
    /// The match's version was not the one the caller expected.
    #[error("version conflict: expected {expected}, match is at {actual}")]
    Conflict {
        /// The version the caller appended against.
        expected: u64,
        /// The match's version when the append was refused.
        actual: u64,
    },
    /// A match with this id already exists.
    #[error("match {0} already exists")]
    AlreadyExists(MatchId),
    /// The database could not be reached in time (connection lost, pool exhausted); retryable.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Stored data that cannot be what this store wrote (bad hash length, unknown status…).
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    /// Values the store refuses before writing anything: text the database cannot hold (a NUL
    /// character), a number beyond the range both backends store. Nothing was written.
    #[error("{0}")]
    Invalid(String),
    /// Anything else: a bug or an unexpected database error.
    #[error("internal store error: {0}")]
    Internal(String),
}

impl StoreError {
    /// Maps a driver error; callers handle the unique violations they expect before this.
    pub(crate) fn from_sqlx(err: sqlx::Error) -> StoreError {
        match err {
            sqlx::Error::PoolClosed => StoreError::Unavailable(err.to_string()),
            // A timeout waiting for a connection includes failing to open one: the database
            // may be gone, and the connections idle now with it.
            sqlx::Error::PoolTimedOut
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed => {
                postgres::liveness::connection_failed();
                StoreError::Unavailable(err.to_string())
            }
            sqlx::Error::Database(db) => {
                // 57P01..03: the server is shutting down or refused us; 08xxx: connection;
                // 53xxx: out of connections, memory or disk for now; 25006: a node that is
                // not (or not yet) the primary, as a proxy may reach while a standby is
                // promoted, refused a write.
                let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
                if code.starts_with("08") || code.starts_with("57P") {
                    postgres::liveness::connection_failed();
                }
                if code.starts_with("08")
                    || code.starts_with("57P")
                    || code.starts_with("53")
                    || code == "25006"
                {
                    StoreError::Unavailable(db.to_string())
                } else {
                    StoreError::Internal(db.to_string())
                }
            }
            sqlx::Error::Migrate(e) => StoreError::Internal(format!("migration failed: {e}")),
            other => StoreError::Internal(other.to_string()),
        }
    }
}

/// Tuning for a [`Store`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// Callers write a snapshot every this many events (see [`Store::snapshot_every`]).
    pub snapshot_every: u64,
    /// Size of the connection pool; on PostgreSQL at least four (the group commit holds two).
    pub max_connections: u32,
    /// PostgreSQL: how long a query waits for a connection (including connecting) before the
    /// store answers [`StoreError::Unavailable`].
    pub acquire_timeout: Duration,
    /// PostgreSQL only: announce appends on [`NOTIFY_CHANNEL`] while another store listens,
    /// and let [`Store::listener`] hear other processes' appends. Off, [`Store::listener`] is
    /// `None`.
    pub notify: bool,
    /// Start on a database that already holds migrations this build does not know (a newer
    /// release applied them during a rolling deploy, or before a rollback): migrations only
    /// add, so an older server still reads and writes what it knows. Off, such a database is
    /// refused; `missive migrate` turns it off, so a schema is only ever set up by a build that
    /// knows all of it.
    pub accept_newer_schema: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            snapshot_every: 64,
            max_connections: 10,
            acquire_timeout: Duration::from_secs(3),
            notify: true,
            accept_newer_schema: true,
        }
    }
}

/// The backend a [`Store`] talks to.
#[derive(Debug, Clone)]
enum Backends {
    Postgres(postgres::Pg),
    Sqlite(sqlite::Sqlite),
}

/// Runs `$call` with `$b` bound to the store's backend, whichever it is: the one place a call
/// chooses a backend (each arm is the same code, checked against [`backend::Backend`]).
macro_rules! with_backend {
    ($store:expr, $b:ident => $call:expr) => {
        match &$store.backend {
            $crate::Backends::Postgres($b) => $call,
            $crate::Backends::Sqlite($b) => $call,
        }
    };
}

/// [`with_backend!`] for an operation that reaches the database, timed as `$op` in
/// [`metrics::OPERATION_DURATION`].
macro_rules! timed {
    ($store:expr, $op:literal, $b:ident => $call:expr) => {{
        let start = std::time::Instant::now();
        let result = with_backend!($store, $b => $call);
        $crate::metrics::operation($op, start);
        result
    }};
}

/// The event store. Cheap to clone: clones share the connection pool.
#[derive(Debug, Clone)]
pub struct Store {
    backend: Backends,
    options: StoreOptions,
}

impl Store {
    /// Connects to `postgres://…` or `sqlite://path` (the file is created if missing) and runs
    /// the backend's migrations.
    pub async fn connect(url: &str, options: StoreOptions) -> Result<Store, StoreError> {
        let backend = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backends::Postgres(postgres::connect(url, &options).await?)
        } else if url.starts_with("sqlite:") {
            Backends::Sqlite(sqlite::connect(url, &options).await?)
        } else {
            return Err(StoreError::Internal(format!(
                "unsupported database url scheme (want postgres:// or sqlite://): {}",
                url.split(':').next().unwrap_or_default()
            )));
        };
        Ok(Store { backend, options })
    }

    /// How long a query waits for a connection before the store answers
    /// [`StoreError::Unavailable`] (PostgreSQL; SQLite waits on its write lock instead).
    pub fn acquire_timeout(&self) -> Duration {
        self.options.acquire_timeout
    }

    /// Whether the database answers a query now: one round trip, whatever the matches.
    pub async fn ping(&self) -> Result<(), StoreError> {
        timed!(self, "ping", b => b.ping().await)
    }

    /// How many events apart the caller should write snapshots.
    pub fn snapshot_every(&self) -> u64 {
        self.options.snapshot_every
    }

    /// The backend's name, `postgres` or `sqlite`.
    pub fn backend_name(&self) -> &'static str {
        fn name<B: Backend>(_: &B) -> &'static str {
            B::NAME
        }
        with_backend!(self, b => name(b))
    }

    /// What the group commit of single-event appends has written (PostgreSQL); `None` on
    /// SQLite and on Citus, where each append is its own transaction.
    pub fn group_commit(&self) -> Option<GroupCommit> {
        with_backend!(self, b => b.group_commit())
    }

    /// A listener for the appends other processes make to this database (and this store's
    /// own, which are announced while another store listens), on PostgreSQL with
    /// [`StoreOptions::notify`] on; `None` otherwise (SQLite has one writer process, so
    /// nothing to hear). It connects on its first [`Listener::next`].
    pub fn listener(&self) -> Option<Listener> {
        with_backend!(self, b => b.listener(&self.options))
    }

    /// Creates the match row, its seats (empty, or as `m.start` fills them), its first events
    /// (seq 1…) and its first pending turns, atomically.
    pub async fn create_match(
        &self,
        m: NewMatch,
        first: Vec<NewEvent>,
    ) -> Result<(MatchRecord, Vec<StoredEvent>), StoreError> {
        if let Some(bad) = m.start.seats.iter().find(|s| s.seat >= m.seat_count) {
            return Err(StoreError::Internal(format!(
                "seat {} does not exist (the match has {} seats)",
                bad.seat, m.seat_count
            )));
        }
        if let Some(turns) = &m.start.turns {
            turns::check(turns, i16::from(m.seat_count))?;
        }
        check_match(&m)?;
        check_events(&first)?;
        let events = chain(m.id, 0, &GENESIS_HASH, first);
        timed!(self, "create_match", b => b.create_match(&m, &events).await)?;
        Ok((MatchRecord::created(&m, &events), events))
    }

    /// How many of the matches `creator` created are still open (waiting for players),
    /// counting no further than `limit`.
    pub async fn open_by_creator(&self, creator: &str, limit: u32) -> Result<u32, StoreError> {
        timed!(self, "open_by_creator", b => b.open_by_creator(creator, limit).await)
    }

    /// Who created the match ([`NewMatch::creator`]); `None` when not known.
    pub async fn creator(&self, id: MatchId) -> Result<Option<String>, StoreError> {
        timed!(self, "creator", b => b.creator(id).await)
    }

    /// Up to `limit` open matches whose last change (their creation, or their last join or
    /// leave) is at or before `before`, the longest idle first: those an expiry closes.
    pub async fn open_idle_since(
        &self,
        before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<MatchId>, StoreError> {
        timed!(self, "open_idle_since", b => b.open_idle_since(before, limit).await)
    }

    /// The match row and its seats.
    pub async fn get_match(&self, id: MatchId) -> Result<MatchRecord, StoreError> {
        timed!(self, "get_match", b => b.get_match(id).await)
    }

    /// The match's secret seed, for the server to replay; reveal it only once the match is over.
    pub async fn seed(&self, id: MatchId) -> Result<[u8; 32], StoreError> {
        timed!(self, "seed", b => b.seed(id).await)
    }

    /// Matches passing the filter, ordered by id. A match with a seat held for an invited
    /// player is never listed.
    pub async fn list_matches(&self, filter: &MatchFilter) -> Result<Vec<MatchRecord>, StoreError> {
        timed!(self, "list_matches", b => b.list_matches(filter).await)
    }

    /// The matches in which the filter's account holds a seat, newest activity first.
    pub async fn player_matches(
        &self,
        filter: &PlayerFilter,
    ) -> Result<Vec<MatchRecord>, StoreError> {
        timed!(self, "player_matches", b => b.player_matches(filter).await)
    }

    /// Appends `events` after `expected_version`, applying `update` atomically with them.
    ///
    /// If the first event's request id is already held by the match, returns the events
    /// originally stored for it with `duplicate = true`, whatever the expected version.
    /// Otherwise, if the match is not at `expected_version`, returns [`StoreError::Conflict`].
    pub async fn append(
        &self,
        id: MatchId,
        expected_version: u64,
        events: Vec<NewEvent>,
        update: MatchUpdate,
    ) -> Result<Appended, StoreError> {
        check_events(&events)?;
        check_seats(&update.seats)?;
        timed!(self, "append", b => b.append(id, expected_version, events, &update).await)
    }

    /// Up to `limit` events with `seq > after_seq`, in order.
    pub async fn read_events(
        &self,
        id: MatchId,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        // No seq is beyond what both backends store: asking after it finds nothing.
        let after_seq = after_seq.min(MAX_STORED);
        timed!(self, "read_events", b => b.read_events(id, after_seq, limit).await)
    }

    /// The match row, the newest snapshot written by `rules_version` (snapshots of other
    /// versions are ignored) and every event after it.
    pub async fn load(&self, id: MatchId, rules_version: u32) -> Result<Loaded, StoreError> {
        timed!(self, "load", b => b.load(id, rules_version).await)
    }

    /// Stores a snapshot, replacing any snapshot at the same seq.
    pub async fn put_snapshot(&self, id: MatchId, snapshot: &Snapshot) -> Result<(), StoreError> {
        timed!(self, "put_snapshot", b => b.put_snapshot(id, snapshot).await)
    }

    /// Claims up to `limit` pending turns due at `now` that no unexpired lease holds, oldest
    /// first, leasing them until `lease_until`. Concurrent claimers (other replicas) never get
    /// the same turn while its lease runs; a claimer that dies leaves it to be claimed again
    /// once the lease expires.
    pub async fn claim_turns(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<TurnRecord>, StoreError> {
        timed!(self, "claim_turns", b => b.claim_turns(now, lease_until, limit).await)
    }

    /// Deletes the match's pending turn for `seat` if it is still the one awaited after
    /// `version` (the match moved on without it: nothing is left to do). True if deleted.
    pub async fn drop_turn(&self, id: MatchId, seat: u8, version: u64) -> Result<bool, StoreError> {
        timed!(self, "drop_turn", b => b.drop_turn(id, seat, version).await)
    }

    /// Queues the reminders due at `now`, at most `limit`: each pending turn whose `remind_at`
    /// has passed gets it cleared and, if its seat has a webhook and its deadline is still
    /// ahead, a "turn_reminder" notification in the outbox, its payload rendered by `body`, in
    /// one transaction (on PostgreSQL, one per reminder). Concurrent callers (other replicas)
    /// never queue one reminder twice.
    /// Returns how many were queued.
    pub async fn queue_reminders(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        body: impl Fn(&Reminder) -> String + Send + Sync,
    ) -> Result<u32, StoreError> {
        timed!(self, "queue_reminders", b => b.queue_reminders(now, limit, &body).await)
    }

    /// The match's pending turns, by seat.
    pub async fn turns(&self, id: MatchId) -> Result<Vec<TurnRecord>, StoreError> {
        timed!(self, "turns", b => b.turns(id).await)
    }

    /// The shared key called `name`: the one stored, or `candidate` if none was (it is then
    /// stored, and a server racing to store its own gets this one). Every server of one store
    /// therefore derives the same values from it.
    pub async fn server_key(
        &self,
        name: &str,
        candidate: [u8; 32],
    ) -> Result<[u8; 32], StoreError> {
        check_text("a key name", name)?;
        let key = timed!(self, "server_key", b => b.server_key(name, candidate).await)?;
        key.try_into()
            .map_err(|_| StoreError::Corrupt(format!("server key {name:?} is not 32 bytes")))
    }

    /// Registers (or replaces) `seat`'s webhook. Notifications already queued for the seat go
    /// to the new URL, signed with the new secret.
    pub async fn set_webhook(
        &self,
        id: MatchId,
        seat: u8,
        url: &str,
        secret: [u8; 32],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        timed!(self, "set_webhook", b => b.set_webhook(id, seat, url, secret, now).await)
    }

    /// Removes `seat`'s webhook and gives up the notifications still queued for it (their
    /// `last_error` says why). Returns whether there was one.
    pub async fn remove_webhook(&self, id: MatchId, seat: u8) -> Result<bool, StoreError> {
        timed!(self, "remove_webhook", b => b.remove_webhook(id, seat).await)
    }

    /// `seat`'s webhook, if it has one.
    pub async fn webhook(&self, id: MatchId, seat: u8) -> Result<Option<Webhook>, StoreError> {
        timed!(self, "webhook", b => b.webhook(id, seat).await)
    }

    /// Claims up to `limit` due notifications, of any match, until `lease_until`: no other
    /// worker claims them before then. Each comes with its seat's current webhook URL and
    /// secret (no secret when the webhook has been removed).
    pub async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        timed!(self, "claim_deliveries", b => b.claim_deliveries(now, lease_until, limit).await)
    }

    /// Hands claimed notifications back unattempted: each row of `keys` still held under the
    /// claim that ends at `lease_until` (not delivered, given up or cancelled since) is due
    /// again at `due_at`, its attempts unchanged. A worker defers what it will not post now (its
    /// host is busy or backing off) rather than hold it past its lease. Returns how many rows
    /// were deferred.
    pub async fn defer_deliveries(
        &self,
        keys: &[DeliveryKey],
        lease_until: DateTime<Utc>,
        due_at: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        if keys.is_empty() {
            return Ok(0);
        }
        timed!(self, "defer_deliveries", b => b.defer_deliveries(keys, lease_until, due_at).await)
    }

    /// Records one attempt at a claimed notification: delivered, or failed and retried at
    /// `retry_at` (or given up). A row already delivered is left as it is.
    pub async fn record_delivery(
        &self,
        key: DeliveryKey,
        attempt: &Attempt,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        timed!(self, "record_delivery", b => b.record_delivery(key, attempt, now).await)
    }

    /// The delivery records of a match, optionally of one seat, newest event first, at most
    /// `limit`.
    pub async fn deliveries(
        &self,
        id: MatchId,
        seat: Option<u8>,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        timed!(self, "deliveries", b => b.deliveries(id, seat, limit).await)
    }

    /// Archives the logs of up to `limit` matches that ended (finished or abandoned) before
    /// `ended_before`, oldest first; answers how many it archived, so a caller repeats while
    /// that is `limit`. On PostgreSQL a match's event rows and snapshots are replaced, in one
    /// transaction, by one compressed value (the format in `archive.rs`) that holds every event and
    /// request id, checked to give them back before the rows are deleted; reads, retries and
    /// [`Store::verify_chain`] answer exactly as before. SQLite keeps its rows and archives
    /// nothing. Concurrent callers (replicas) archive disjoint matches.
    pub async fn archive_finished(
        &self,
        ended_before: DateTime<Utc>,
        limit: u32,
    ) -> Result<u32, StoreError> {
        timed!(self, "archive_finished", b => b.archive_finished(ended_before, limit).await)
    }

    /// Packs the older events of live (open or active) matches into blocks, looking at up to
    /// `limit` of them after `after` in id order; a caller sweeps every live match by passing
    /// each answer's [`PackSweep::last`] to the next call until fewer than `limit` were looked
    /// at. On PostgreSQL a match with at least 20 event rows since its last block (16 and the 4
    /// newest, which stay rows) has those older rows replaced, in one transaction, by one
    /// compressed block (the format in `archive.rs`), ending where a request ends; reads,
    /// retries, loads and [`Store::verify_chain`] answer exactly as before. SQLite packs
    /// nothing. Concurrent callers never pack one match at once.
    pub async fn pack_live(
        &self,
        after: Option<MatchId>,
        limit: u32,
    ) -> Result<PackSweep, StoreError> {
        timed!(self, "pack_live", b => b.pack_live(after, limit).await)
    }

    /// Recomputes the whole hash chain from the stored columns and names the first bad event.
    pub async fn verify_chain(&self, id: MatchId) -> Result<ChainCheck, StoreError> {
        const PAGE: u32 = 1000;
        let mut version = self.get_match(id).await?.version;
        let mut checker = canonical::ChainChecker::new(id);
        let mut after = 0;
        loop {
            let page = self.read_events(id, after, PAGE).await?;
            for ev in &page {
                if ev.seq > version {
                    // Appended since we looked, or a row no append wrote: the match row decides.
                    version = self.get_match(id).await?.version;
                }
                if ev.seq > version {
                    return Ok(ChainCheck::Broken {
                        seq: ev.seq,
                        reason: format!("event beyond the match's version {version}"),
                    });
                }
                if let Some(broken) = checker.check(ev) {
                    return Ok(broken);
                }
            }
            match page.last() {
                Some(last) if page.len() == PAGE as usize => after = last.seq,
                _ => break,
            }
        }
        Ok(checker.finish(version))
    }
}

/// The largest integer both backends store in their 64-bit columns.
const MAX_STORED: u64 = i64::MAX as u64;

/// Text the store refuses: PostgreSQL keeps no NUL in `text` or `jsonb`, and a value that one
/// backend could not hold must not be written by the other either.
fn check_text(what: &str, text: &str) -> Result<(), StoreError> {
    if text.contains('\0') {
        return Err(StoreError::Invalid(format!(
            "{what} contains a NUL character"
        )));
    }
    Ok(())
}

/// [`check_text`] over every string and object key of a JSON value.
fn check_json(what: &str, value: &serde_json::Value) -> Result<(), StoreError> {
    match value {
        serde_json::Value::String(s) => check_text(what, s),
        serde_json::Value::Array(items) => items.iter().try_for_each(|v| check_json(what, v)),
        serde_json::Value::Object(map) => map.iter().try_for_each(|(k, v)| {
            check_text(what, k)?;
            check_json(what, v)
        }),
        _ => Ok(()),
    }
}

fn check_events(events: &[NewEvent]) -> Result<(), StoreError> {
    for ev in events {
        check_text("an event kind", &ev.kind)?;
        if let Some(request_id) = &ev.request_id {
            check_text("a request id", request_id)?;
        }
        check_json("an event", &ev.payload)?;
    }
    Ok(())
}

fn check_seats(seats: &[SeatRecord]) -> Result<(), StoreError> {
    for seat in seats {
        for text in [&seat.player, &seat.bot].into_iter().flatten() {
            check_text("a seat's player", text)?;
        }
    }
    Ok(())
}

fn check_match(m: &NewMatch) -> Result<(), StoreError> {
    check_text("a game kind", &m.kind)?;
    check_json("a game config", &m.config)?;
    check_seats(&m.start.seats)?;
    // Both backends keep these in 32-bit signed columns.
    for (what, secs) in [
        ("turn_timeout_secs", m.turn_timeout_secs),
        ("turn_reminder_secs", m.turn_reminder_secs),
    ] {
        if secs.is_some_and(|s| i32::try_from(s).is_err()) {
            return Err(StoreError::Invalid(format!("{what} is out of range")));
        }
    }
    if i32::try_from(m.rules_version).is_err() {
        return Err(StoreError::Invalid("rules_version is out of range".into()));
    }
    Ok(())
}

/// The first event's request id and seq: the key under which a retry finds this append.
pub(crate) fn first_request(events: &[StoredEvent]) -> Option<(String, u64)> {
    let first = events.first()?;
    Some((first.request_id.clone()?, first.seq))
}

/// Gives `events` their seqs after `version` and chains their hashes from `prev`.
fn chain(id: MatchId, version: u64, prev: &[u8; 32], events: Vec<NewEvent>) -> Vec<StoredEvent> {
    let mut prev = *prev;
    events
        .into_iter()
        .zip(version + 1..)
        .map(|(ev, seq)| {
            let ev = NewEvent {
                at: truncate_to_micros(ev.at),
                ..ev
            };
            let hash = event_hash(&prev, &canonical_bytes(id, seq, &ev));
            let stored = StoredEvent {
                match_id: id,
                seq,
                kind: ev.kind,
                actor: ev.actor,
                request_id: ev.request_id,
                payload: ev.payload,
                at: ev.at,
                prev_hash: prev,
                hash,
            };
            prev = hash;
            stored
        })
        .collect()
}
