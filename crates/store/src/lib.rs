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
//! - `lib.rs`: [`Store`], which checks what it is given and hands each call to its backend;
//!   `records.rs`: the records it takes and gives; `error.rs`: [`StoreError`]; `backend.rs`:
//!   the operations every backend implements.
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
mod error;
mod liveness;
pub mod metrics;
mod outbox;
mod postgres;
mod records;
mod rows;
mod sqlite;
mod turns;

use std::time::Duration;

use chrono::{DateTime, Utc};

pub use canonical::{canonical_bytes, canonical_json, event_hash};
pub use error::StoreError;
pub use outbox::{
    Attempt, Delivery, DeliveryKey, DeliveryRecord, NotificationKind, REMOVED, Reminder, Webhook,
};
pub use postgres::GroupCommit;
pub use postgres::notify::{Listener, NOTIFY_CHANNEL, Notice};
pub use records::{
    Appended, ChainCheck, GENESIS_HASH, Loaded, MatchFilter, MatchId, MatchRecord, MatchStatus,
    MatchUpdate, NewEvent, NewMatch, Notification, PackSweep, PendingTurn, PlayerFilter,
    SeatRecord, Snapshot, StoredEvent, TurnRecord, truncate_to_micros,
};

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

/// Runs `$call` with `$b` bound to the store's backend and `$m` to its folder, whichever it
/// is: the one place a call chooses a backend. Each arm is the same code, so both folders must
/// have the function `$call` names, taking what it is given (see `backend.rs`).
macro_rules! with_backend {
    ($store:expr, $b:ident, $m:ident => $call:expr) => {
        match &$store.backend {
            $crate::Backends::Postgres($b) => {
                use $crate::postgres as $m;
                $call
            }
            $crate::Backends::Sqlite($b) => {
                use $crate::sqlite as $m;
                $call
            }
        }
    };
}

/// [`with_backend!`] for an operation that reaches the database, timed as `$op` in
/// [`metrics::OPERATION_DURATION`].
macro_rules! timed {
    ($store:expr, $op:literal, $b:ident, $m:ident => $call:expr) => {{
        let start = std::time::Instant::now();
        let result = with_backend!($store, $b, $m => $call);
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
        timed!(self, "ping", b, sql => sql::ping(b).await)
    }

    /// How many events apart the caller should write snapshots.
    pub fn snapshot_every(&self) -> u64 {
        self.options.snapshot_every
    }

    /// The backend's name, `postgres` or `sqlite`.
    pub fn backend_name(&self) -> &'static str {
        with_backend!(self, _b, sql => sql::NAME)
    }

    /// What the group commit of single-event appends has written (PostgreSQL); `None` on
    /// SQLite and on Citus, where each append is its own transaction.
    pub fn group_commit(&self) -> Option<GroupCommit> {
        with_backend!(self, b, sql => sql::group_commit(b))
    }

    /// A listener for the appends other processes make to this database (and this store's
    /// own, which are announced while another store listens), on PostgreSQL with
    /// [`StoreOptions::notify`] on; `None` otherwise (SQLite has one writer process, so
    /// nothing to hear). It connects on its first [`Listener::next`].
    pub fn listener(&self) -> Option<Listener> {
        with_backend!(self, b, sql => sql::listener(b, &self.options))
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
        timed!(self, "create_match", b, sql => sql::matches::create(b, &m, &events).await)?;
        Ok((MatchRecord::created(&m, &events), events))
    }

    /// How many of the matches `creator` created are still open (waiting for players),
    /// counting no further than `limit`.
    pub async fn open_by_creator(&self, creator: &str, limit: u32) -> Result<u32, StoreError> {
        timed!(self, "open_by_creator", b, sql => sql::matches::open_by_creator(b, creator, limit).await)
    }

    /// Who created the match ([`NewMatch::creator`]); `None` when not known.
    pub async fn creator(&self, id: MatchId) -> Result<Option<String>, StoreError> {
        timed!(self, "creator", b, sql => sql::matches::creator(b, id).await)
    }

    /// Up to `limit` open matches whose last change (their creation, or their last join or
    /// leave) is at or before `before`, the longest idle first: those an expiry closes.
    pub async fn open_idle_since(
        &self,
        before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<MatchId>, StoreError> {
        timed!(self, "open_idle_since", b, sql => sql::matches::open_idle_since(b, before, limit).await)
    }

    /// The match row and its seats.
    pub async fn get_match(&self, id: MatchId) -> Result<MatchRecord, StoreError> {
        timed!(self, "get_match", b, sql => sql::matches::get(b, id).await)
    }

    /// The match's secret seed, for the server to replay; reveal it only once the match is over.
    pub async fn seed(&self, id: MatchId) -> Result<[u8; 32], StoreError> {
        timed!(self, "seed", b, sql => sql::matches::seed(b, id).await)
    }

    /// Matches passing the filter, ordered by id. A match with a seat held for an invited
    /// player is never listed.
    pub async fn list_matches(&self, filter: &MatchFilter) -> Result<Vec<MatchRecord>, StoreError> {
        timed!(self, "list_matches", b, sql => sql::matches::list(b, filter).await)
    }

    /// The matches in which the filter's account holds a seat, newest activity first.
    pub async fn player_matches(
        &self,
        filter: &PlayerFilter,
    ) -> Result<Vec<MatchRecord>, StoreError> {
        timed!(self, "player_matches", b, sql => sql::matches::of_player(b, filter).await)
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
        timed!(self, "append", b, sql => sql::events::append(b, id, expected_version, events, &update).await)
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
        timed!(self, "read_events", b, sql => sql::events::read(b, id, after_seq, limit).await)
    }

    /// The match row, the newest snapshot written by `rules_version` (snapshots of other
    /// versions are ignored) and every event after it.
    pub async fn load(&self, id: MatchId, rules_version: u32) -> Result<Loaded, StoreError> {
        timed!(self, "load", b, sql => sql::events::load(b, id, rules_version).await)
    }

    /// Stores a snapshot, replacing any snapshot at the same seq.
    pub async fn put_snapshot(&self, id: MatchId, snapshot: &Snapshot) -> Result<(), StoreError> {
        timed!(self, "put_snapshot", b, sql => sql::events::put_snapshot(b, id, snapshot).await)
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
        timed!(self, "claim_turns", b, sql => sql::turns::claim(b, now, lease_until, limit).await)
    }

    /// Deletes the match's pending turn for `seat` if it is still the one awaited after
    /// `version` (the match moved on without it: nothing is left to do). True if deleted.
    pub async fn drop_turn(&self, id: MatchId, seat: u8, version: u64) -> Result<bool, StoreError> {
        timed!(self, "drop_turn", b, sql => sql::turns::drop(b, id, seat, version).await)
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
        timed!(self, "queue_reminders", b, sql => sql::turns::remind(b, now, limit, &body).await)
    }

    /// The match's pending turns, by seat.
    pub async fn turns(&self, id: MatchId) -> Result<Vec<TurnRecord>, StoreError> {
        timed!(self, "turns", b, sql => sql::turns::list(b, id).await)
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
        let key = timed!(self, "server_key", b, sql => sql::server_key(b, name, candidate).await)?;
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
        timed!(self, "set_webhook", b, sql => sql::outbox::set_webhook(b, id, seat, url, secret, now).await)
    }

    /// Removes `seat`'s webhook and gives up the notifications still queued for it (their
    /// `last_error` says why). Returns whether there was one.
    pub async fn remove_webhook(&self, id: MatchId, seat: u8) -> Result<bool, StoreError> {
        timed!(self, "remove_webhook", b, sql => sql::outbox::remove_webhook(b, id, seat).await)
    }

    /// `seat`'s webhook, if it has one.
    pub async fn webhook(&self, id: MatchId, seat: u8) -> Result<Option<Webhook>, StoreError> {
        timed!(self, "webhook", b, sql => sql::outbox::webhook(b, id, seat).await)
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
        timed!(self, "claim_deliveries", b, sql => sql::outbox::claim(b, now, lease_until, limit).await)
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
        timed!(self, "defer_deliveries", b, sql => sql::outbox::defer(b, keys, lease_until, due_at).await)
    }

    /// Records one attempt at a claimed notification: delivered, or failed and retried at
    /// `retry_at` (or given up). A row already delivered is left as it is.
    pub async fn record_delivery(
        &self,
        key: DeliveryKey,
        attempt: &Attempt,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        timed!(self, "record_delivery", b, sql => sql::outbox::record(b, key, attempt, now).await)
    }

    /// The delivery records of a match, optionally of one seat, newest event first, at most
    /// `limit`.
    pub async fn deliveries(
        &self,
        id: MatchId,
        seat: Option<u8>,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        timed!(self, "deliveries", b, sql => sql::outbox::list(b, id, seat, limit).await)
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
        timed!(self, "archive_finished", b, sql => sql::archive_finished(b, ended_before, limit).await)
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
        timed!(self, "pack_live", b, sql => sql::pack_live(b, after, limit).await)
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
