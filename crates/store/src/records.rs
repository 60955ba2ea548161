//! The store's public records: what a caller gives it (a new match, events, an update) and
//! what it reads back (match rows, stored events, loads, pending turns), with the filters of
//! its listings.

use chrono::{DateTime, SubsecRound, Utc};

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
    /// reminders); see [`Store::queue_reminders`]. A reminder belongs to its deadline: when the
    /// stored turn of the seat has the same `due_at`, the stored reminder stands (so one sent is
    /// not sent again), and this applies only to a new deadline.
    pub remind_at: Option<DateTime<Utc>>,
    /// The bot's strategy, for a bot seat.
    pub bot: Option<String>,
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

/// A notification an append queues for a seat (see [`MatchUpdate::notify`]): the exact bytes
/// the server will post and sign, rendered by the server for the append's last event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// The seat notified, if it has a webhook.
    pub seat: u8,
    /// The payload.
    pub body: String,
}

/// Drops sub-microsecond precision, which PostgreSQL would drop anyway: what is hashed must be
/// exactly what is read back.
pub fn truncate_to_micros(at: DateTime<Utc>) -> DateTime<Utc> {
    at.trunc_subsecs(6)
}
