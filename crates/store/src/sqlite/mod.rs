//! The SQLite backend: the embedded default, one file, WAL mode.
//!
//! SQLite has a single writer, so every write is a `BEGIN IMMEDIATE` transaction: it takes the
//! write lock first, then reads what it must check, and writes. An append reads the head from
//! the match row (which it updates with every append: the row is locked anyway), checks it and
//! writes the events, the match row's changes, the pending turns and the notifications. Claims
//! of turns and deliveries serialise the same way. Everything happens in-process (there is no
//! network round trip to hold a lock across), and waiting writers queue on the busy timeout
//! instead of failing.
//!
//! The files mirror [`crate::postgres`]'s: `matches.rs`, `events.rs`, `turns.rs`, `outbox.rs`.

pub(crate) mod events;
pub(crate) mod matches;
pub(crate) mod outbox;
pub(crate) mod turns;

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{SqliteConnection, SqlitePool};

use crate::backend::Answer;
use crate::rows::{Binds, EventValues, to_i64};
use crate::{
    GroupCommit, Listener, MatchId, PackSweep, StoreError, StoreOptions, StoredEvent, first_request,
};

/// How long a writer waits for the write lock before giving up with `Unavailable`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// A SQLite store: its pool.
#[derive(Debug, Clone)]
pub(crate) struct Sqlite {
    pool: SqlitePool,
}

/// Maps a driver error: a database still locked after the busy timeout is overloaded, not
/// broken.
fn db(err: sqlx::Error) -> StoreError {
    match &err {
        // SQLITE_BUSY / SQLITE_LOCKED after the busy timeout: the database is overloaded.
        sqlx::Error::Database(e) if matches!(e.code().as_deref(), Some("5" | "6" | "517")) => {
            StoreError::Unavailable(e.to_string())
        }
        _ => StoreError::from_sqlx(err),
    }
}

pub(crate) async fn connect(url: &str, options: &StoreOptions) -> Result<Sqlite, StoreError> {
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
    let mut migrator = sqlx::migrate!("../../migrations/sqlite");
    migrator.set_ignore_missing(options.accept_newer_schema);
    migrator.run(&pool).await.map_err(|e| db(e.into()))?;
    Ok(Sqlite { pool })
}

/// Inserts a request's events inside an open transaction; the first carries the seq of the
/// last (`request_last`), the request index's row. A creation (`matches.rs`) and an append
/// (`events.rs`) both write events with it.
async fn insert_events(
    conn: &mut SqliteConnection,
    events: &[StoredEvent],
) -> Result<(), StoreError> {
    let request_last = first_request(events)
        .map(|_| to_i64(events.last().map_or(0, |e| e.seq)))
        .transpose()?;
    for (i, ev) in events.iter().enumerate() {
        sqlx::query(
            "INSERT INTO events (match_id, seq, kind, actor, request_id, request_last, payload, at,
                 prev_hash, hash)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )
        .params(EventValues::new(ev, request_last.filter(|_| i == 0)))
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    }
    Ok(())
}

/// The backend's name, as [`crate::Store::backend_name`] gives it.
pub(crate) const NAME: &str = "sqlite";

/// A backend is its pool to the operations that need nothing else of it.
impl std::ops::Deref for Sqlite {
    type Target = SqlitePool;

    fn deref(&self) -> &SqlitePool {
        &self.pool
    }
}

pub(crate) async fn ping(pool: &SqlitePool) -> Answer<()> {
    sqlx::query("SELECT 1")
        .execute(pool)
        .await
        .map(drop)
        .map_err(db)
}

pub(crate) async fn server_key(
    pool: &SqlitePool,
    name: &str,
    candidate: [u8; 32],
) -> Answer<Vec<u8>> {
    sqlx::query(
        "INSERT INTO server_keys (name, key) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING",
    )
    .bind(name)
    .bind(candidate.as_slice())
    .execute(pool)
    .await
    .map_err(db)?;
    sqlx::query_scalar("SELECT key FROM server_keys WHERE name = ?1")
        .bind(name)
        .fetch_one(pool)
        .await
        .map_err(db)
}

/// Every event stays a row here: nothing is archived.
pub(crate) async fn archive_finished(
    _: &SqlitePool,
    _ended_before: DateTime<Utc>,
    _limit: u32,
) -> Answer<u32> {
    Ok(0)
}

/// Every event stays a row here: nothing is packed, and no match is looked at.
pub(crate) async fn pack_live(
    _: &SqlitePool,
    _after: Option<MatchId>,
    _limit: u32,
) -> Answer<PackSweep> {
    Ok(PackSweep::default())
}

/// Each append is its own transaction: there is no group commit.
pub(crate) fn group_commit(_: &Sqlite) -> Option<GroupCommit> {
    None
}

/// One process holds the file: there is nobody to announce appends to.
pub(crate) fn listener(_: &Sqlite, _: &StoreOptions) -> Option<Listener> {
    None
}
