//! The PostgreSQL backend.
//!
//! A match's head (version and last hash) is its last event: the `matches` row keeps only the
//! head as of creation, and is written again only by appends that change the status or seats.
//! An append is one read (the head, and whether the request id is already held) followed by one
//! statement that inserts the events only if the expected previous event (seq and hash) exists,
//! or for a match's first events the match row at version 0. The events primary key settles
//! races for a seq, and a unique index over each request's first event (which carries
//! `request_last`, the seq of the request's last event) settles races for a request id. Row
//! locks live only inside that one statement, never across a round trip to the client; a writer
//! that lost the race finds the head moved and gets a conflict (or, for a retried request, the
//! original events).
//!
//! Webhook notifications for the seats an append makes awaited are one more clause of the
//! same statement ([`ENQUEUE_OUTBOX`]), so they exist exactly when the events do.
//!
//! The read is skipped when this process already knows the match's head: the server that wrote
//! a match's last event usually writes its next one. The cached head is only a guess; the
//! statement itself checks both version and last hash, so a stale guess costs a retry of the
//! slow path, never a wrong write.
//!
//! The commonest append, one event that changes no match row and no pending turns, goes to the
//! group commit instead ([`crate::batch`]): written with whatever other appends are waiting, in
//! one statement. Its head is one this process saw committed (it wrote or read it), and
//! committed events never change, so there the primary key alone settles the race.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::Utc;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::batch::{Batcher, Row};
use crate::notify::Notifier;
use crate::rows::{EventRow, HeadRow, MatchRow, MatchSeatRow, SeatRow, SnapshotRow, to_i64};
use crate::turns::TurnColumns;
use crate::{
    Appended, Loaded, MatchFilter, MatchId, MatchRecord, MatchStatus, MatchUpdate, NewEvent,
    NewMatch, Snapshot, StoreError, StoreOptions, StoredEvent, canonical_json, chain,
    truncate_to_micros,
};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// A PostgreSQL store: the pool, the heads of the matches this process last wrote, and the
/// sender of append notifications (when they are on).
#[derive(Debug, Clone)]
pub(crate) struct Pg {
    pub(crate) pool: PgPool,
    heads: Arc<HeadCache>,
    notifier: Option<Notifier>,
    batcher: Batcher,
}

/// `(version, last_hash)` per match, as last written or read by this process.
#[derive(Debug, Default)]
struct HeadCache(Mutex<HashMap<MatchId, (u64, [u8; 32])>>);

impl HeadCache {
    /// Bounds memory; forgetting heads only costs one extra read per match.
    const CAPACITY: usize = 100_000;

    fn get(&self, id: MatchId) -> Option<(u64, [u8; 32])> {
        self.0.lock().ok()?.get(&id).copied()
    }

    fn put(&self, id: MatchId, version: u64, hash: [u8; 32]) {
        if let Ok(mut heads) = self.0.lock() {
            if heads.len() >= Self::CAPACITY && !heads.contains_key(&id) {
                heads.clear();
            }
            heads.insert(id, (version, hash));
        }
    }

    fn forget(&self, id: MatchId) {
        if let Ok(mut heads) = self.0.lock() {
            heads.remove(&id);
        }
    }
}

pub(crate) async fn connect(url: &str, options: &StoreOptions) -> Result<Pg, StoreError> {
    let pool = PgPoolOptions::new()
        .max_connections(options.max_connections.max(1))
        .acquire_timeout(options.acquire_timeout)
        // No ping before each use: it doubled the round trips of every query. A connection
        // that died fails its query (UNAVAILABLE) and is closed, not returned to the pool.
        .test_before_acquire(false)
        .connect_with(connect_options(url)?)
        .await
        .map_err(StoreError::from_sqlx)?;
    MIGRATOR
        .run(&pool)
        .await
        .map_err(|e| StoreError::from_sqlx(e.into()))?;
    let notifier = options.notify.then(|| Notifier::spawn(pool.clone()));
    Ok(Pg {
        batcher: Batcher::spawn(pool.clone()),
        pool,
        heads: Arc::default(),
        notifier,
    })
}

/// The store's connection settings: `url`'s, and generic plans for prepared statements.
/// Every statement here is keyed by `match_id`, so the generic plan is the right one; the
/// default re-plans statements over array parameters (the group commit's) on every execution,
/// which cost more than writing the rows.
fn connect_options(url: &str) -> Result<PgConnectOptions, StoreError> {
    let options: PgConnectOptions = url
        .parse()
        .map_err(|e| StoreError::Internal(format!("bad database URL: {e}")))?;
    Ok(options.options([("plan_cache_mode", "force_generic_plan")]))
}

/// The match row with its head: `version` is the last event's seq (read backwards through the
/// events primary key), and `updated_at` the later of the row's last write and that event's time.
const MATCH_SELECT: &str = "SELECT m.match_id::text AS match_id, m.kind, m.config::text AS config, \
    m.rules_version, m.seat_count, m.status, m.seed_hash, m.turn_timeout_secs, \
    m.turn_reminder_secs, m.created_at, \
    GREATEST(m.updated_at, last.at) AS updated_at, COALESCE(last.seq, m.version) AS version \
    FROM matches m LEFT JOIN LATERAL (SELECT e.seq, e.at FROM events e \
        WHERE e.match_id = m.match_id ORDER BY e.seq DESC LIMIT 1) last ON true";
const SEAT_COLUMNS: &str = "match_id::text AS match_id, seat, player, token_hash, bot";
const EVENT_COLUMNS: &str =
    "seq, kind, actor, request_id, payload::text AS payload, at, prev_hash, hash";

/// Column arrays for inserting events with one `UNNEST` (here and in [`crate::batch`]).
#[derive(Debug, Default, Clone)]
pub(crate) struct EventColumns {
    pub(crate) seq: Vec<i64>,
    pub(crate) kind: Vec<String>,
    pub(crate) actor: Vec<Option<i16>>,
    pub(crate) request_id: Vec<Option<String>>,
    /// On a request's first event, the seq of its last event; `None` elsewhere.
    pub(crate) request_last: Vec<Option<i64>>,
    pub(crate) payload: Vec<String>,
    pub(crate) at: Vec<chrono::DateTime<Utc>>,
    pub(crate) prev_hash: Vec<Vec<u8>>,
    pub(crate) hash: Vec<Vec<u8>>,
}

impl EventColumns {
    /// The events of one request.
    fn new(events: &[StoredEvent]) -> Result<EventColumns, StoreError> {
        let mut c = EventColumns::default();
        let last = events.last().map_or(Ok(0), |e| to_i64(e.seq))?;
        for (i, ev) in events.iter().enumerate() {
            c.push(ev, (i == 0 && ev.request_id.is_some()).then_some(last))?;
        }
        Ok(c)
    }

    pub(crate) fn push(
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
        self.prev_hash.push(ev.prev_hash.to_vec());
        self.hash.push(ev.hash.to_vec());
        Ok(())
    }
}

/// Binds the arrays of an [`EventColumns`] in its field order, the order of the `UNNEST`s.
macro_rules! bind_event_columns {
    ($query:expr, $cols:expr) => {{
        let cols = $cols;
        $query
            .bind(cols.seq)
            .bind(cols.kind)
            .bind(cols.actor)
            .bind(cols.request_id)
            .bind(cols.request_last)
            .bind(cols.payload)
            .bind(cols.at)
            .bind(cols.prev_hash)
            .bind(cols.hash)
    }};
}
pub(crate) use bind_event_columns;

fn is_unique_violation(err: &sqlx::Error, constraint: &str) -> bool {
    match err {
        sqlx::Error::Database(db) => {
            db.is_unique_violation() && db.constraint() == Some(constraint)
        }
        _ => false,
    }
}

pub(crate) async fn create_match(
    pg: &Pg,
    m: &NewMatch,
    events: &[StoredEvent],
) -> Result<(), StoreError> {
    let cols = EventColumns::new(events)?;
    let version = events.last().map_or(0, |e| e.seq);
    let last_hash = events.last().map_or(crate::GENESIS_HASH, |e| e.hash);
    let seats = &m.start.seats;
    let turns = TurnColumns::new(m.start.turns.as_deref().unwrap_or_default());
    // One statement: the new rows are invisible to everyone else until it commits.
    let result = sqlx::query(
        "WITH m AS (
            INSERT INTO matches (match_id, kind, config, rules_version, seat_count, status, seed,
                seed_hash, turn_timeout_secs, turn_reminder_secs, version, last_hash, created_at,
                updated_at)
            VALUES ($1::uuid, $2, $3::jsonb, $4, $5, $21, $6, $7, $8, $30, $9, $10, $11, $11)
            RETURNING match_id
        ), s AS (
            INSERT INTO seats (match_id, seat, player, token_hash, bot)
            SELECT m.match_id, g.seat, t.player, t.token_hash, t.bot
            FROM m CROSS JOIN generate_series(0, $5 - 1) AS g(seat)
            LEFT JOIN UNNEST($22::smallint[], $23::text[], $24::bytea[], $25::text[])
                AS t(seat, player, token_hash, bot) ON t.seat = g.seat
        ), tn AS (
            INSERT INTO turns (match_id, seat, version, due_at, bot, remind_at)
            SELECT m.match_id, t.seat, $9, t.due_at, t.bot, t.remind_at
            FROM m, UNNEST($26::smallint[], $27::timestamptz[], $28::text[], $29::timestamptz[])
                AS t(seat, due_at, bot, remind_at)
        ), e AS (
            INSERT INTO events (match_id, seq, kind, actor, request_id, request_last, payload, at,
                prev_hash, hash)
            SELECT m.match_id, e.seq, e.kind, e.actor, e.request_id, e.request_last,
                e.payload::jsonb, e.at, e.prev_hash, e.hash
            FROM m, UNNEST($12::bigint[], $13::text[], $14::smallint[], $15::text[], $16::bigint[],
                $17::text[], $18::timestamptz[], $19::bytea[], $20::bytea[])
                AS e(seq, kind, actor, request_id, request_last, payload, at, prev_hash, hash)
        )
        SELECT 1",
    )
    .bind(m.id.to_string())
    .bind(&m.kind)
    .bind(canonical_json(&m.config))
    .bind(
        i32::try_from(m.rules_version)
            .map_err(|_| StoreError::Internal("rules_version too large".into()))?,
    )
    .bind(i16::from(m.seat_count))
    .bind(m.seed.to_vec())
    .bind(m.seed_hash.to_vec())
    .bind(
        m.turn_timeout_secs
            .map(|t| i32::try_from(t).unwrap_or(i32::MAX)),
    )
    .bind(to_i64(version)?)
    .bind(last_hash.to_vec())
    .bind(truncate_to_micros(m.created_at))
    .bind(&cols.seq)
    .bind(&cols.kind)
    .bind(&cols.actor)
    .bind(&cols.request_id)
    .bind(&cols.request_last)
    .bind(&cols.payload)
    .bind(&cols.at)
    .bind(&cols.prev_hash)
    .bind(&cols.hash)
    .bind(m.start.status.unwrap_or(MatchStatus::Open).as_str())
    .bind(seats.iter().map(|s| i16::from(s.seat)).collect::<Vec<_>>())
    .bind(seats.iter().map(|s| s.player.clone()).collect::<Vec<_>>())
    .bind(
        seats
            .iter()
            .map(|s| s.token_hash.map(|h| h.to_vec()))
            .collect::<Vec<_>>(),
    )
    .bind(seats.iter().map(|s| s.bot.clone()).collect::<Vec<_>>())
    .bind(&turns.seat)
    .bind(&turns.due_at)
    .bind(&turns.bot)
    .bind(&turns.remind_at)
    .bind(
        m.turn_reminder_secs
            .map(|t| i32::try_from(t).unwrap_or(i32::MAX)),
    )
    .execute(&pg.pool)
    .await;
    match result {
        Ok(_) => {
            pg.heads.put(m.id, version, last_hash);
            Ok(())
        }
        Err(e) if is_unique_violation(&e, "matches_pkey") => Err(StoreError::AlreadyExists(m.id)),
        Err(e) => Err(StoreError::from_sqlx(e)),
    }
}

pub(crate) async fn get_match(pool: &PgPool, id: MatchId) -> Result<MatchRecord, StoreError> {
    read_match(pool, id).await
}

/// The match row and its seats in one statement: one row per seat, the match's columns repeated.
async fn read_match<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    id: MatchId,
) -> Result<MatchRecord, StoreError> {
    let rows: Vec<MatchSeatRow> = sqlx::query_as(&format!(
        "SELECT m.*, s.seat, s.player, s.token_hash, s.bot
         FROM ({MATCH_SELECT} WHERE m.match_id = $1::uuid) m
         LEFT JOIN seats s ON s.match_id = $1::uuid ORDER BY s.seat"
    ))
    .bind(id.to_string())
    .fetch_all(executor)
    .await
    .map_err(StoreError::from_sqlx)?;
    MatchSeatRow::into_record(rows).ok_or(StoreError::NotFound(id))?
}

pub(crate) async fn seed(pool: &PgPool, id: MatchId) -> Result<[u8; 32], StoreError> {
    let seed: Option<Vec<u8>> =
        sqlx::query_scalar("SELECT seed FROM matches WHERE match_id = $1::uuid")
            .bind(id.to_string())
            .fetch_optional(pool)
            .await
            .map_err(StoreError::from_sqlx)?;
    crate::rows::hash32(&seed.ok_or(StoreError::NotFound(id))?, "seed")
}

pub(crate) async fn list_matches(
    pool: &PgPool,
    filter: &MatchFilter,
) -> Result<Vec<MatchRecord>, StoreError> {
    let rows: Vec<MatchRow> = sqlx::query_as(&format!(
        "{MATCH_SELECT}
         WHERE ($1::text IS NULL OR m.status = $1) AND ($2::text IS NULL OR m.kind = $2)
           AND ($3::uuid IS NULL OR m.match_id > $3::uuid)
         ORDER BY m.match_id LIMIT $4"
    ))
    .bind(filter.status.map(|s| s.as_str()))
    .bind(filter.kind.as_deref())
    .bind(filter.after.map(|a| a.to_string()))
    .bind(filter.effective_limit())
    .fetch_all(pool)
    .await
    .map_err(StoreError::from_sqlx)?;
    let ids: Vec<String> = rows.iter().map(|r| r.match_id.clone()).collect();
    let seats: Vec<SeatRow> = sqlx::query_as(&format!(
        "SELECT {SEAT_COLUMNS} FROM seats WHERE match_id = ANY($1::uuid[]) ORDER BY match_id, seat"
    ))
    .bind(&ids)
    .fetch_all(pool)
    .await
    .map_err(StoreError::from_sqlx)?;
    rows.into_iter().map(|r| r.into_record(&seats)).collect()
}

async fn head(pool: &PgPool, id: MatchId, request_id: Option<&str>) -> Result<HeadRow, StoreError> {
    let row: Option<HeadRow> = sqlx::query_as(
        "SELECT m.seat_count, COALESCE(last.seq, m.version) AS version,
             COALESCE(last.hash, m.last_hash) AS last_hash,
             r.seq AS first_seq, r.request_last AS last_seq
         FROM matches m
         LEFT JOIN LATERAL (SELECT e.seq, e.hash FROM events e
             WHERE e.match_id = m.match_id ORDER BY e.seq DESC LIMIT 1) last ON true
         LEFT JOIN events r ON r.match_id = m.match_id AND r.request_id = $2
             AND r.request_last IS NOT NULL
         WHERE m.match_id = $1::uuid",
    )
    .bind(id.to_string())
    .bind(request_id)
    .fetch_optional(pool)
    .await
    .map_err(StoreError::from_sqlx)?;
    row.ok_or(StoreError::NotFound(id))
}

async fn events_between(
    pool: &PgPool,
    id: MatchId,
    first: u64,
    last: u64,
) -> Result<Vec<StoredEvent>, StoreError> {
    let rows: Vec<EventRow> = sqlx::query_as(&format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE match_id = $1::uuid AND seq BETWEEN $2 AND $3 ORDER BY seq"
    ))
    .bind(id.to_string())
    .bind(to_i64(first)?)
    .bind(to_i64(last)?)
    .fetch_all(pool)
    .await
    .map_err(StoreError::from_sqlx)?;
    rows.into_iter().map(|r| r.into_event(id)).collect()
}

/// What the database says about an append before (or after) the append statement.
#[derive(Debug)]
enum Checked {
    /// The request id is already held: these are its original events.
    Duplicate(Appended),
    /// The match is at the expected version, with this last hash.
    AtVersion([u8; 32]),
}

/// Reads the head: a retried request gets its original events, a stale version a conflict,
/// otherwise the hash to chain from.
async fn check(
    pool: &PgPool,
    id: MatchId,
    expected: u64,
    request_id: Option<&str>,
    update: &MatchUpdate,
) -> Result<Checked, StoreError> {
    let head = head(pool, id, request_id).await?;
    if let Some((first, last)) = head.request_range()? {
        return Ok(Checked::Duplicate(Appended {
            events: events_between(pool, id, first, last).await?,
            duplicate: true,
            webhooks_queued: false,
        }));
    }
    head.check_seats(update)?;
    if let Some(turns) = &update.turns {
        crate::turns::check(turns, head.seat_count)?;
    }
    let actual = head.version()?;
    if actual != expected {
        return Err(StoreError::Conflict { expected, actual });
    }
    Ok(Checked::AtVersion(head.last_hash()?))
}

pub(crate) async fn append(
    pg: &Pg,
    id: MatchId,
    expected: u64,
    events: Vec<NewEvent>,
    update: &MatchUpdate,
) -> Result<Appended, StoreError> {
    let pool = &pg.pool;
    if let Some(turns) = &update.turns {
        // Seat ranges are checked against the match below; two turns for one seat, here.
        crate::turns::check(turns, 256)?;
    }
    let request_id = events.first().and_then(|e| e.request_id.clone());
    let request_id = request_id.as_deref();
    let mut prev = match pg.heads.get(id) {
        Some((version, hash)) if version == expected => hash,
        _ => match check(pool, id, expected, request_id, update).await? {
            Checked::Duplicate(original) => return Ok(original),
            Checked::AtVersion(hash) => hash,
        },
    };
    // At most two writes: the second only if the first chained from a stale cached head.
    for _ in 0..2 {
        if let Some(appended) = write(pg, id, expected, &prev, events.clone(), update).await? {
            return Ok(appended);
        }
        pg.heads.forget(id);
        match check(pool, id, expected, request_id, update).await? {
            Checked::Duplicate(original) => return Ok(original),
            Checked::AtVersion(hash) => prev = hash,
        }
    }
    Err(StoreError::Unavailable(format!(
        "append to {id} kept losing to concurrent writers at version {expected}"
    )))
}

/// The head check every append makes: the previous event exists with the hash the new events
/// chain from, or there is none yet and the match row is still at version 0 with that hash.
const HEAD_IS: &str =
    "(EXISTS (SELECT 1 FROM events WHERE match_id = $1::uuid AND seq = $2 AND hash = $3)
        OR ($2 = 0 AND EXISTS (SELECT 1 FROM matches
            WHERE match_id = $1::uuid AND version = 0 AND last_hash = $3)))";

/// The events of an append, inserted if the head is as expected; see [`HEAD_IS`].
const INSERT_EVENTS: &str =
    "INSERT INTO events (match_id, seq, kind, actor, request_id, request_last, payload, at,
        prev_hash, hash)
    SELECT $1::uuid, e.seq, e.kind, e.actor, e.request_id, e.request_last, e.payload::jsonb, e.at,
        e.prev_hash, e.hash
    FROM UNNEST($4::bigint[], $5::text[], $6::smallint[], $7::text[], $8::bigint[], $9::text[],
        $10::timestamptz[], $11::bytea[], $12::bytea[])
        AS e(seq, kind, actor, request_id, request_last, payload, at, prev_hash, hash)
    WHERE ";

/// The status and seat changes of an append, applied only if `h` holds a row: the inserted
/// events, or for an append without events the match row when its head is as expected and no
/// event follows it.
const UPDATE_MATCH: &str = "m AS (
        UPDATE matches SET updated_at = $13, status = COALESCE($14, status)
        WHERE match_id = $1::uuid AND EXISTS (SELECT 1 FROM h)
        RETURNING match_id
    ), s AS (
        UPDATE seats SET player = s.player, token_hash = s.token_hash, bot = s.bot
        FROM m, UNNEST($16::smallint[], $17::text[], $18::bytea[], $19::text[])
            AS s(seat, player, token_hash, bot)
        WHERE seats.match_id = m.match_id AND seats.seat = s.seat
    )";

/// The pending turns of an append (see [`crate::MatchUpdate::turns`]), written only if `h`
/// holds a row, like [`UPDATE_MATCH`]: every other pending turn of the match is deleted, these
/// are upserted as awaited after the append's last event, and a seat that stays awaited keeps
/// its due time and reminder (or, once sent, none). A new version frees the lease, so the turn can be claimed again at once.
const WRITE_TURNS: &str = "td AS (
        DELETE FROM turns WHERE match_id = $1::uuid AND EXISTS (SELECT 1 FROM h)
            AND NOT (seat = ANY($20::smallint[]))
    ), tu AS (
        INSERT INTO turns (match_id, seat, version, due_at, bot, remind_at)
        SELECT $1::uuid, t.seat, $24, t.due_at, t.bot, t.remind_at
        FROM UNNEST($20::smallint[], $21::timestamptz[], $22::text[], $27::timestamptz[])
            AS t(seat, due_at, bot, remind_at)
        WHERE EXISTS (SELECT 1 FROM h)
        ON CONFLICT (match_id, seat) DO UPDATE SET version = EXCLUDED.version,
            bot = EXCLUDED.bot, lease_until = NULL,
            due_at = CASE WHEN EXCLUDED.seat = ANY($23::smallint[]) THEN turns.due_at
                ELSE EXCLUDED.due_at END,
            remind_at = CASE WHEN EXCLUDED.seat = ANY($23::smallint[]) THEN turns.remind_at
                ELSE EXCLUDED.remind_at END
    )";

/// The "your turn" notifications of an append: one outbox row per seat in `$25` (with its
/// payload in `$26`) that has a webhook, for the last inserted event, only if `h` inserted.
const ENQUEUE_OUTBOX: &str = "o AS (
        INSERT INTO webhook_outbox (match_id, seq, seat, url, body, next_attempt_at, created_at)
        SELECT w.match_id, (SELECT max(seq) FROM h), w.seat, w.url, n.body, $13, $13
        FROM UNNEST($25::smallint[], $26::text[]) AS n(seat, body)
        JOIN webhooks w ON w.match_id = $1::uuid AND w.seat = n.seat
        WHERE EXISTS (SELECT 1 FROM h)
        RETURNING seat
    )";

/// The single append statement: insert the events if the head is as expected, and with them
/// the status and seat changes, the pending turns and the webhook notifications, if any. `None`
/// when it wrote nothing (the head moved, a seat is out of range, or the request id or seq was
/// taken by a concurrent writer).
async fn write(
    pg: &Pg,
    id: MatchId,
    expected: u64,
    prev: &[u8; 32],
    events: Vec<NewEvent>,
    update: &MatchUpdate,
) -> Result<Option<Appended>, StoreError> {
    let stored = chain(id, expected, prev, events);
    let version = stored.last().map_or(expected, |e| e.seq);
    let last_hash = stored.last().map_or(*prev, |e| e.hash);
    let seats = &update.seats;
    let changes_match = update.status.is_some() || !seats.is_empty();
    if let (false, None, [_]) = (changes_match, &update.turns, stored.as_slice()) {
        // The commonest append: one event and maybe notifications, written with others.
        let [ev] = <[StoredEvent; 1]>::try_from(stored)
            .map_err(|_| StoreError::Internal("a single event became several".into()))?;
        let (notify_seats, notify_bodies) = crate::outbox::bodies(&update.notify);
        let row = Row {
            request_last: ev.request_id.as_ref().map(|_| to_i64(ev.seq)).transpose()?,
            notify: notify_seats.into_iter().zip(notify_bodies).collect(),
            event: ev,
        };
        let (ev, queued) = pg.batcher.write(row).await?;
        return Ok(queued.map(|queued| appended(pg, id, version, last_hash, vec![ev], queued)));
    }
    let cols = EventColumns::new(&stored)?;
    // The statement writes nothing unless the match has every seat named here.
    let max_seat = seats
        .iter()
        .map(|s| s.seat)
        .chain(update.turns.iter().flatten().map(|t| t.seat))
        .map(i16::from)
        .max()
        .unwrap_or(-1);
    let notify = !update.notify.is_empty() && !stored.is_empty();
    let plain = !changes_match && !notify && update.turns.is_none() && !stored.is_empty();
    let turns = TurnColumns::new(update.turns.as_deref().unwrap_or_default());
    let write_turns = if update.turns.is_some() {
        format!(", {WRITE_TURNS}")
    } else {
        String::new()
    };
    let (notify_seats, notify_bodies) = if notify {
        crate::outbox::bodies(&update.notify)
    } else {
        (Vec::new(), Vec::new())
    };
    let sql = if plain {
        // Most appends: one INSERT, nothing else written.
        format!("{INSERT_EVENTS}{HEAD_IS}")
    } else if !stored.is_empty() {
        // The match row is written only when the status or the seats change.
        let mut clauses = Vec::new();
        if changes_match {
            clauses.push(UPDATE_MATCH);
        }
        if update.turns.is_some() {
            clauses.push(WRITE_TURNS);
        }
        if notify {
            clauses.push(ENQUEUE_OUTBOX);
        }
        // Events written, and notifications queued (seats with a webhook).
        let queued = if notify {
            "(SELECT count(*) FROM o)"
        } else {
            "0::bigint"
        };
        format!(
            "WITH h AS ({INSERT_EVENTS}{HEAD_IS}
                AND EXISTS (SELECT 1 FROM matches WHERE match_id = $1::uuid AND seat_count > $15)
                RETURNING seq
            ), {}
            SELECT (SELECT count(*) FROM h), {queued}",
            clauses.join(", ")
        )
    } else {
        format!(
            "WITH h AS (SELECT 1 FROM matches WHERE match_id = $1::uuid AND seat_count > $15
                AND {HEAD_IS}
                AND NOT EXISTS (SELECT 1 FROM events WHERE match_id = $1::uuid AND seq = $2 + 1)
                AND cardinality($4::bigint[]) = 0
            ), {UPDATE_MATCH}{write_turns}
            SELECT (SELECT count(*) FROM m), 0::bigint"
        )
    };
    let query = bind_event_columns!(
        sqlx::query(&sql)
            .bind(id.to_string())
            .bind(to_i64(expected)?)
            .bind(prev.to_vec()),
        cols
    );
    // (rows written, notifications queued)
    let result = if plain {
        query
            .execute(&pg.pool)
            .await
            .map(|r| (r.rows_affected(), false))
    } else {
        query
            .bind(crate::canonical::changed_at(&stored))
            .bind(update.status.map(|s| s.as_str()))
            .bind(max_seat)
            .bind(seats.iter().map(|s| i16::from(s.seat)).collect::<Vec<_>>())
            .bind(seats.iter().map(|s| s.player.clone()).collect::<Vec<_>>())
            .bind(
                seats
                    .iter()
                    .map(|s| s.token_hash.map(|h| h.to_vec()))
                    .collect::<Vec<_>>(),
            )
            .bind(seats.iter().map(|s| s.bot.clone()).collect::<Vec<_>>())
            .bind(turns.seat)
            .bind(turns.due_at)
            .bind(turns.bot)
            .bind(turns.continuing)
            .bind(to_i64(version)?)
            .bind(notify_seats)
            .bind(notify_bodies)
            .bind(turns.remind_at)
            .fetch_one(&pg.pool)
            .await
            .and_then(|row| {
                let written: i64 = sqlx::Row::try_get(&row, 0)?;
                let queued: i64 = sqlx::Row::try_get(&row, 1)?;
                Ok((u64::try_from(written).unwrap_or(0), queued > 0))
            })
    };
    // Rows inserted into events, or for an append without events the match row updated.
    let want = if stored.is_empty() {
        1
    } else {
        stored.len() as u64
    };
    match result {
        Ok((n, queued)) if n == want => {
            Ok(Some(appended(pg, id, version, last_hash, stored, queued)))
        }
        Ok(_) => Ok(None),
        // Another writer committed the same request id or seq first.
        Err(e)
            if is_unique_violation(&e, "events_request")
                || is_unique_violation(&e, "events_pkey") =>
        {
            Ok(None)
        }
        Err(e) => Err(StoreError::from_sqlx(e)),
    }
}

impl Pg {
    pub(crate) fn group_commit(&self) -> crate::GroupCommit {
        self.batcher.counts()
    }
}

/// An append that committed: the head it leaves is remembered and announced.
fn appended(
    pg: &Pg,
    id: MatchId,
    version: u64,
    last_hash: [u8; 32],
    stored: Vec<StoredEvent>,
    webhooks_queued: bool,
) -> Appended {
    pg.heads.put(id, version, last_hash);
    if let Some(notifier) = &pg.notifier {
        notifier.appended(id, version);
    }
    Appended {
        events: stored,
        duplicate: false,
        webhooks_queued,
    }
}

pub(crate) async fn read_events(
    pool: &PgPool,
    id: MatchId,
    after: u64,
    limit: u32,
) -> Result<Vec<StoredEvent>, StoreError> {
    let rows: Vec<EventRow> = sqlx::query_as(&format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE match_id = $1::uuid AND seq > $2 ORDER BY seq LIMIT $3"
    ))
    .bind(id.to_string())
    .bind(to_i64(after)?)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
    .map_err(StoreError::from_sqlx)?;
    if rows.is_empty() {
        // Distinguish "no events yet" from "no such match".
        get_match(pool, id).await?;
    }
    rows.into_iter().map(|r| r.into_event(id)).collect()
}

pub(crate) async fn load(pg: &Pg, id: MatchId, rules_version: u32) -> Result<Loaded, StoreError> {
    // One snapshot of the database for all three reads, so the events follow the snapshot and
    // the record's version matches the last event.
    let mut tx = pg
        .pool
        .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .await
        .map_err(StoreError::from_sqlx)?;
    let record = read_match(&mut *tx, id).await?;
    let snapshot: Option<SnapshotRow> = sqlx::query_as(
        "SELECT seq, rules_version, state::text AS state FROM snapshots
         WHERE match_id = $1::uuid AND rules_version = $2 AND seq <= $3
         ORDER BY seq DESC LIMIT 1",
    )
    .bind(id.to_string())
    .bind(
        i32::try_from(rules_version)
            .map_err(|_| StoreError::Internal("rules_version too large".into()))?,
    )
    .bind(to_i64(record.version)?)
    .fetch_optional(&mut *tx)
    .await
    .map_err(StoreError::from_sqlx)?;
    let snapshot = snapshot.map(SnapshotRow::into_snapshot).transpose()?;
    let after = snapshot.as_ref().map_or(0, |s| s.seq);
    let rows: Vec<EventRow> = sqlx::query_as(&format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE match_id = $1::uuid AND seq > $2 ORDER BY seq"
    ))
    .bind(id.to_string())
    .bind(to_i64(after)?)
    .fetch_all(&mut *tx)
    .await
    .map_err(StoreError::from_sqlx)?;
    // The request ids the snapshot folded in, through the request index.
    let requests: Vec<(String, i64)> = if after > 0 {
        sqlx::query_as(
            "SELECT request_id, seq FROM events
             WHERE match_id = $1::uuid AND request_last IS NOT NULL AND seq <= $2",
        )
        .bind(id.to_string())
        .bind(to_i64(after)?)
        .fetch_all(&mut *tx)
        .await
        .map_err(StoreError::from_sqlx)?
    } else {
        Vec::new()
    };
    tx.commit().await.map_err(StoreError::from_sqlx)?;
    let events = rows
        .into_iter()
        .map(|r| r.into_event(id))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(last) = events.last().filter(|e| e.seq == record.version) {
        pg.heads.put(id, last.seq, last.hash);
    }
    Ok(Loaded {
        record,
        snapshot,
        events,
        requests: crate::rows::requests(requests)?,
    })
}

pub(crate) async fn put_snapshot(
    pool: &PgPool,
    id: MatchId,
    snapshot: &Snapshot,
) -> Result<(), StoreError> {
    let result = sqlx::query(
        "INSERT INTO snapshots (match_id, seq, rules_version, state)
         SELECT match_id, $2, $3, $4::jsonb FROM matches
         WHERE match_id = $1::uuid AND (version >= $2
             OR EXISTS (SELECT 1 FROM events WHERE match_id = $1::uuid AND seq = $2))
         ON CONFLICT (match_id, seq) DO UPDATE
             SET rules_version = EXCLUDED.rules_version, state = EXCLUDED.state",
    )
    .bind(id.to_string())
    .bind(to_i64(snapshot.seq)?)
    .bind(
        i32::try_from(snapshot.rules_version)
            .map_err(|_| StoreError::Internal("rules_version too large".into()))?,
    )
    .bind(canonical_json(&snapshot.state))
    .execute(pool)
    .await
    .map_err(StoreError::from_sqlx)?;
    if result.rows_affected() == 0 {
        // Either no such match, or a snapshot of events that do not exist yet.
        let record = get_match(pool, id).await?;
        return Err(StoreError::Internal(format!(
            "snapshot at seq {} is beyond the match's version {}",
            snapshot.seq, record.version
        )));
    }
    Ok(())
}
