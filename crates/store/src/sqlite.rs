//! The SQLite backend: the embedded default, one file, WAL mode.
//!
//! SQLite has a single writer, so an append is a `BEGIN IMMEDIATE` transaction: it takes the
//! write lock first, then reads the version, checks it and writes. Everything happens in-process
//! (there is no network round trip to hold a lock across), and waiting writers queue on the
//! busy timeout instead of failing.

use std::str::FromStr;
use std::time::Duration;

use chrono::Utc;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{SqliteConnection, SqlitePool};

use crate::first_request;
use crate::rows::{EventRow, HeadRow, MatchRow, SeatRow, SnapshotRow, to_i64};
use crate::{
    Appended, Loaded, MatchFilter, MatchId, MatchRecord, MatchStatus, MatchUpdate, NewEvent,
    NewMatch, Snapshot, StoreError, StoreOptions, StoredEvent, canonical_json, chain,
    truncate_to_micros,
};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");

/// How long a writer waits for the write lock before giving up with `Unavailable`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

const MATCH_COLUMNS: &str = "match_id, kind, config, rules_version, seat_count, status, \
    seed_hash, turn_timeout_secs, turn_reminder_secs, created_at, updated_at, version";
const SEAT_COLUMNS: &str = "match_id, seat, player, token_hash, bot";
const EVENT_COLUMNS: &str = "seq, kind, actor, request_id, payload, at, prev_hash, hash";

pub(crate) fn db(err: sqlx::Error) -> StoreError {
    match &err {
        // SQLITE_BUSY / SQLITE_LOCKED after the busy timeout: the database is overloaded.
        sqlx::Error::Database(e) if matches!(e.code().as_deref(), Some("5" | "6" | "517")) => {
            StoreError::Unavailable(e.to_string())
        }
        _ => StoreError::from_sqlx(err),
    }
}

pub(crate) async fn connect(url: &str, options: &StoreOptions) -> Result<SqlitePool, StoreError> {
    let connect = SqliteConnectOptions::from_str(url)
        .map_err(|e| StoreError::Internal(format!("bad sqlite url: {e}")))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .foreign_keys(true)
        .busy_timeout(BUSY_TIMEOUT);
    let pool = SqlitePoolOptions::new()
        .max_connections(options.max_connections.max(1))
        .connect_with(connect)
        .await
        .map_err(db)?;
    MIGRATOR.run(&pool).await.map_err(|e| db(e.into()))?;
    Ok(pool)
}

async fn insert_events(
    conn: &mut SqliteConnection,
    id: &str,
    events: &[StoredEvent],
) -> Result<(), StoreError> {
    // The request's first event carries the seq of its last: the request index's row.
    let request_last = first_request(events).map(|_| events.last().map_or(0, |e| e.seq));
    for (i, ev) in events.iter().enumerate() {
        sqlx::query(
            "INSERT INTO events (match_id, seq, kind, actor, request_id, request_last, payload, at,
                 prev_hash, hash)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(id)
        .bind(to_i64(ev.seq)?)
        .bind(&ev.kind)
        .bind(ev.actor.map(i16::from))
        .bind(ev.request_id.as_deref())
        .bind(request_last.filter(|_| i == 0).map(to_i64).transpose()?)
        .bind(canonical_json(&ev.payload))
        .bind(ev.at)
        .bind(ev.prev_hash.as_slice())
        .bind(ev.hash.as_slice())
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    }
    Ok(())
}

pub(crate) async fn create_match(
    pool: &SqlitePool,
    m: &NewMatch,
    events: &[StoredEvent],
) -> Result<(), StoreError> {
    let id = m.id.to_string();
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(db)?;
    let inserted = sqlx::query(
        "INSERT INTO matches (match_id, kind, config, rules_version, seat_count, status, seed,
             seed_hash, turn_timeout_secs, turn_reminder_secs, version, last_hash, created_at,
             updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&id)
    .bind(&m.kind)
    .bind(canonical_json(&m.config))
    .bind(i64::from(m.rules_version))
    .bind(i16::from(m.seat_count))
    .bind(m.start.status.unwrap_or(MatchStatus::Open).as_str())
    .bind(m.seed.as_slice())
    .bind(m.seed_hash.as_slice())
    .bind(m.turn_timeout_secs.map(i64::from))
    .bind(m.turn_reminder_secs.map(i64::from))
    .bind(to_i64(events.last().map_or(0, |e| e.seq))?)
    .bind(
        events
            .last()
            .map_or(crate::GENESIS_HASH, |e| e.hash)
            .to_vec(),
    )
    .bind(truncate_to_micros(m.created_at))
    .bind(truncate_to_micros(m.created_at))
    .execute(&mut *tx)
    .await;
    match inserted {
        Ok(_) => {}
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
            return Err(StoreError::AlreadyExists(m.id));
        }
        Err(e) => return Err(db(e)),
    }
    for seat in 0..m.seat_count {
        let taken = m.start.seats.iter().find(|s| s.seat == seat);
        sqlx::query(
            "INSERT INTO seats (match_id, seat, player, token_hash, bot) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(&id)
        .bind(i16::from(seat))
        .bind(taken.and_then(|s| s.player.as_deref()))
        .bind(taken.and_then(|s| s.token_hash.map(|h| h.to_vec())))
        .bind(taken.and_then(|s| s.bot.as_deref()))
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    insert_events(&mut tx, &id, events).await?;
    if let Some(turns) = &m.start.turns {
        let version = events.last().map_or(0, |e| e.seq);
        crate::turns::sqlite_replace(&mut tx, &id, version, turns).await?;
    }
    tx.commit().await.map_err(db)
}

async fn match_row(conn: &mut SqliteConnection, id: MatchId) -> Result<MatchRecord, StoreError> {
    let row: Option<MatchRow> = sqlx::query_as(&format!(
        "SELECT {MATCH_COLUMNS} FROM matches WHERE match_id = ?"
    ))
    .bind(id.to_string())
    .fetch_optional(&mut *conn)
    .await
    .map_err(db)?;
    let row = row.ok_or(StoreError::NotFound(id))?;
    let seats: Vec<SeatRow> = sqlx::query_as(&format!(
        "SELECT {SEAT_COLUMNS} FROM seats WHERE match_id = ? ORDER BY seat"
    ))
    .bind(id.to_string())
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    row.into_record(&seats)
}

pub(crate) async fn get_match(pool: &SqlitePool, id: MatchId) -> Result<MatchRecord, StoreError> {
    let mut conn = pool.acquire().await.map_err(db)?;
    match_row(&mut conn, id).await
}

pub(crate) async fn seed(pool: &SqlitePool, id: MatchId) -> Result<[u8; 32], StoreError> {
    let seed: Option<Vec<u8>> = sqlx::query_scalar("SELECT seed FROM matches WHERE match_id = ?")
        .bind(id.to_string())
        .fetch_optional(pool)
        .await
        .map_err(db)?;
    crate::rows::hash32(&seed.ok_or(StoreError::NotFound(id))?, "seed")
}

pub(crate) async fn list_matches(
    pool: &SqlitePool,
    filter: &MatchFilter,
) -> Result<Vec<MatchRecord>, StoreError> {
    let mut conn = pool.acquire().await.map_err(db)?;
    // Ids are stored as lowercase hyphenated text, which sorts like the UUIDs themselves.
    let rows: Vec<MatchRow> = sqlx::query_as(&format!(
        "SELECT {MATCH_COLUMNS} FROM matches
         WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR kind = ?2)
           AND (?3 IS NULL OR match_id > ?3)
         ORDER BY match_id LIMIT ?4"
    ))
    .bind(filter.status.map(|s| s.as_str()))
    .bind(filter.kind.as_deref())
    .bind(filter.after.map(|a| a.to_string()))
    .bind(filter.effective_limit())
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    // One query for every listed match's seats: the ids go in as one JSON array.
    let ids: Vec<&str> = rows.iter().map(|r| r.match_id.as_str()).collect();
    let seats: Vec<SeatRow> = sqlx::query_as(&format!(
        "SELECT {SEAT_COLUMNS} FROM seats
         WHERE match_id IN (SELECT value FROM json_each(?)) ORDER BY match_id, seat"
    ))
    .bind(serde_json::to_string(&ids).map_err(|e| StoreError::Internal(e.to_string()))?)
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    rows.into_iter().map(|r| r.into_record(&seats)).collect()
}

async fn events_between(
    conn: &mut SqliteConnection,
    id: MatchId,
    after: u64,
    last: Option<u64>,
    limit: Option<u32>,
) -> Result<Vec<StoredEvent>, StoreError> {
    let rows: Vec<EventRow> = sqlx::query_as(&format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE match_id = ? AND seq > ? AND seq <= ?
         ORDER BY seq LIMIT ?"
    ))
    .bind(id.to_string())
    .bind(to_i64(after)?)
    .bind(last.map_or(Ok(i64::MAX), to_i64)?)
    .bind(limit.map_or(-1, i64::from))
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    rows.into_iter().map(|r| r.into_event(id)).collect()
}

pub(crate) async fn append(
    pool: &SqlitePool,
    id: MatchId,
    expected: u64,
    events: Vec<NewEvent>,
    update: &MatchUpdate,
) -> Result<Appended, StoreError> {
    let request_id = events.first().and_then(|e| e.request_id.clone());
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(db)?;
    let head: Option<HeadRow> = sqlx::query_as(
        "SELECT m.seat_count, m.version, m.last_hash, r.seq AS first_seq,
             r.request_last AS last_seq
         FROM matches m
         LEFT JOIN events r ON r.match_id = m.match_id AND r.request_id = ?2
             AND r.request_last IS NOT NULL
         WHERE m.match_id = ?1",
    )
    .bind(id.to_string())
    .bind(request_id.as_deref())
    .fetch_optional(&mut *tx)
    .await
    .map_err(db)?;
    let head = head.ok_or(StoreError::NotFound(id))?;
    if let Some((first, last)) = head.request_range()? {
        let events = events_between(&mut tx, id, first - 1, Some(last), None).await?;
        return Ok(Appended {
            events,
            duplicate: true,
            webhooks_queued: false,
        });
    }
    let actual = head.version()?;
    if actual != expected {
        return Err(StoreError::Conflict { expected, actual });
    }
    head.check_seats(update)?;
    if let Some(turns) = &update.turns {
        crate::turns::check(turns, head.seat_count)?;
    }
    let stored = chain(id, expected, &head.last_hash()?, events);
    let version = stored.last().map_or(expected, |e| e.seq);
    let last_hash = stored.last().map_or(head.last_hash()?, |e| e.hash);
    let key = id.to_string();
    sqlx::query(
        "UPDATE matches SET version = ?, last_hash = ?, updated_at = ?, status = COALESCE(?, status)
         WHERE match_id = ?",
    )
    .bind(to_i64(version)?)
    .bind(last_hash.as_slice())
    .bind(crate::canonical::changed_at(&stored))
    .bind(update.status.map(|s| s.as_str()))
    .bind(&key)
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    insert_events(&mut tx, &key, &stored).await?;
    for seat in &update.seats {
        sqlx::query(
            "UPDATE seats SET player = ?, token_hash = ?, bot = ? WHERE match_id = ? AND seat = ?",
        )
        .bind(seat.player.as_deref())
        .bind(seat.token_hash.map(|h| h.to_vec()))
        .bind(seat.bot.as_deref())
        .bind(&key)
        .bind(i16::from(seat.seat))
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    if let Some(turns) = &update.turns {
        crate::turns::sqlite_replace(&mut tx, &key, version, turns).await?;
    }
    let mut webhooks_queued = false;
    if let Some(last) = stored.last() {
        let (seats, bodies) = crate::outbox::bodies(&update.notify);
        let now = crate::outbox::micros(truncate_to_micros(Utc::now()));
        for (seat, body) in seats.into_iter().zip(bodies) {
            let queued = sqlx::query(
                "INSERT INTO webhook_outbox (match_id, seq, seat, url, body, next_attempt_at,
                     created_at)
                 SELECT match_id, ?1, seat, url, ?2, ?3, ?3 FROM webhooks
                 WHERE match_id = ?4 AND seat = ?5",
            )
            .bind(to_i64(last.seq)?)
            .bind(body)
            .bind(now)
            .bind(&key)
            .bind(seat)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
            webhooks_queued |= queued.rows_affected() > 0;
        }
    }
    tx.commit().await.map_err(db)?;
    Ok(Appended {
        events: stored,
        duplicate: false,
        webhooks_queued,
    })
}

pub(crate) async fn read_events(
    pool: &SqlitePool,
    id: MatchId,
    after: u64,
    limit: u32,
) -> Result<Vec<StoredEvent>, StoreError> {
    let mut conn = pool.acquire().await.map_err(db)?;
    let events = events_between(&mut conn, id, after, None, Some(limit)).await?;
    if events.is_empty() {
        // Distinguish "no events yet" from "no such match".
        match_row(&mut conn, id).await?;
    }
    Ok(events)
}

pub(crate) async fn load(
    pool: &SqlitePool,
    id: MatchId,
    rules_version: u32,
) -> Result<Loaded, StoreError> {
    // A read transaction keeps one consistent view across the three reads.
    let mut tx = pool.begin().await.map_err(db)?;
    let record = match_row(&mut tx, id).await?;
    let snapshot: Option<SnapshotRow> = sqlx::query_as(
        "SELECT seq, rules_version, state FROM snapshots
         WHERE match_id = ? AND rules_version = ? AND seq <= ?
         ORDER BY seq DESC LIMIT 1",
    )
    .bind(id.to_string())
    .bind(i64::from(rules_version))
    .bind(to_i64(record.version)?)
    .fetch_optional(&mut *tx)
    .await
    .map_err(db)?;
    let snapshot = snapshot.map(SnapshotRow::into_snapshot).transpose()?;
    let after = snapshot.as_ref().map_or(0, |s| s.seq);
    let events = events_between(&mut tx, id, after, None, None).await?;
    let requests: Vec<(String, i64)> = if after > 0 {
        sqlx::query_as(
            "SELECT request_id, seq FROM events
             WHERE match_id = ? AND request_last IS NOT NULL AND seq <= ?",
        )
        .bind(id.to_string())
        .bind(to_i64(after)?)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?
    } else {
        Vec::new()
    };
    tx.commit().await.map_err(db)?;
    Ok(Loaded {
        record,
        snapshot,
        events,
        requests: crate::rows::requests(requests)?,
    })
}

pub(crate) async fn put_snapshot(
    pool: &SqlitePool,
    id: MatchId,
    snapshot: &Snapshot,
) -> Result<(), StoreError> {
    let result = sqlx::query(
        "INSERT INTO snapshots (match_id, seq, rules_version, state)
         SELECT match_id, ?2, ?3, ?4 FROM matches WHERE match_id = ?1 AND version >= ?2
         ON CONFLICT (match_id, seq) DO UPDATE
             SET rules_version = excluded.rules_version, state = excluded.state",
    )
    .bind(id.to_string())
    .bind(to_i64(snapshot.seq)?)
    .bind(i64::from(snapshot.rules_version))
    .bind(canonical_json(&snapshot.state))
    .execute(pool)
    .await
    .map_err(db)?;
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
