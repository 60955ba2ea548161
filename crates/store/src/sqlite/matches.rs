//! Match rows and their seats on SQLite: creation in one transaction, reads and listing.

use sqlx::{SqliteConnection, SqlitePool};

use super::db;
use crate::backend::begin;
use crate::rows::{Binds, MatchRow, MatchValues, SeatRow, hash32};
use crate::{MatchFilter, MatchId, MatchRecord, NewMatch, PlayerFilter, StoreError, StoredEvent};

const MATCH_COLUMNS: &str = "match_id, kind, config, rules_version, seat_count, status, \
    seed_hash, turn_timeout_secs, turn_reminder_secs, created_at, updated_at, version";
const SEAT_COLUMNS: &str = "match_id, seat, player, token_hash, bot, account, invited";

pub(crate) async fn create(
    pool: &SqlitePool,
    m: &NewMatch,
    events: &[StoredEvent],
) -> Result<(), StoreError> {
    let id = m.id.to_string();
    let mut tx = begin(pool, "BEGIN IMMEDIATE").await?;
    let inserted = sqlx::query(
        "INSERT INTO matches (match_id, kind, config, rules_version, seat_count, status, seed,
             seed_hash, turn_timeout_secs, turn_reminder_secs, version, last_hash, created_at,
             updated_at, creator)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?15, ?14)",
    )
    .params(MatchValues::new(m, events)?)
    .bind(m.creator.as_deref())
    .bind(crate::MatchRecord::last_change(m, events))
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
            "INSERT INTO seats (match_id, seat, player, token_hash, bot, account, invited)
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&id)
        .bind(i16::from(seat))
        .bind(taken.and_then(|s| s.player.as_deref()))
        .bind(taken.and_then(|s| s.token_hash.map(|h| h.to_vec())))
        .bind(taken.and_then(|s| s.bot.as_deref()))
        .bind(taken.and_then(|s| s.account.as_deref()))
        .bind(taken.is_some_and(|s| s.invited))
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    super::insert_events(&mut tx, events).await?;
    if let Some(turns) = &m.start.turns {
        let version = events.last().map_or(0, |e| e.seq);
        super::turns::replace(&mut tx, &id, version, turns).await?;
    }
    tx.commit().await.map_err(db)
}

/// How many of `creator`'s matches are open, counting no further than `limit` (through the
/// partial index `matches_creator_open`, whose condition the statement spells out as written:
/// SQLite uses a partial index only for a query whose terms name its condition).
pub(crate) async fn open_by_creator(
    pool: &SqlitePool,
    creator: &str,
    limit: u32,
) -> Result<u32, StoreError> {
    let (count,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM (SELECT 1 FROM matches
             WHERE creator = ?1 AND status = 'open' LIMIT ?2)",
    )
    .bind(creator)
    .bind(i64::from(limit))
    .fetch_one(pool)
    .await
    .map_err(db)?;
    Ok(u32::try_from(count).unwrap_or(u32::MAX))
}

pub(crate) async fn creator(pool: &SqlitePool, id: MatchId) -> Result<Option<String>, StoreError> {
    let row: Option<(Option<String>,)> =
        sqlx::query_as("SELECT creator FROM matches WHERE match_id = ?")
            .bind(id.to_string())
            .fetch_optional(pool)
            .await
            .map_err(db)?;
    Ok(row.ok_or(StoreError::NotFound(id))?.0)
}

/// Open matches last changed at or before `before`, the longest idle first (through the partial
/// index `matches_open_idle`). `updated_at` is RFC 3339 text in UTC, written with the same
/// formatting every time, which sorts as the times do.
pub(crate) async fn open_idle_since(
    pool: &SqlitePool,
    before: chrono::DateTime<chrono::Utc>,
    limit: u32,
) -> Result<Vec<MatchId>, StoreError> {
    let ids: Vec<(String,)> = sqlx::query_as(
        "SELECT match_id FROM matches WHERE status = 'open' AND updated_at <= ?1
         ORDER BY updated_at LIMIT ?2",
    )
    .bind(before)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
    .map_err(db)?;
    ids.into_iter()
        .map(|(id,)| {
            id.parse()
                .map_err(|_| StoreError::Corrupt(format!("match id {id:?}")))
        })
        .collect()
}

pub(super) async fn read(
    conn: &mut SqliteConnection,
    id: MatchId,
) -> Result<MatchRecord, StoreError> {
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

pub(crate) async fn get(pool: &SqlitePool, id: MatchId) -> Result<MatchRecord, StoreError> {
    let mut conn = pool.acquire().await.map_err(db)?;
    read(&mut conn, id).await
}

pub(crate) async fn seed(pool: &SqlitePool, id: MatchId) -> Result<[u8; 32], StoreError> {
    let seed: Option<Vec<u8>> = sqlx::query_scalar("SELECT seed FROM matches WHERE match_id = ?")
        .bind(id.to_string())
        .fetch_optional(pool)
        .await
        .map_err(db)?;
    hash32(&seed.ok_or(StoreError::NotFound(id))?, "seed")
}

pub(crate) async fn list(
    pool: &SqlitePool,
    filter: &MatchFilter,
) -> Result<Vec<MatchRecord>, StoreError> {
    let mut conn = pool.acquire().await.map_err(db)?;
    // Ids are stored as lowercase hyphenated text, which sorts like the UUIDs themselves.
    let rows: Vec<MatchRow> = sqlx::query_as(&format!(
        "SELECT {MATCH_COLUMNS} FROM matches
         WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR kind = ?2)
           AND (?3 IS NULL OR match_id > ?3)
           AND NOT EXISTS (SELECT 1 FROM seats s WHERE s.match_id = matches.match_id AND s.invited)
         ORDER BY match_id LIMIT ?4"
    ))
    .bind(filter.status.map(|s| s.as_str()))
    .bind(filter.kind.as_deref())
    .bind(filter.after.map(|a| a.to_string()))
    .bind(filter.effective_limit())
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    with_seats(&mut conn, rows).await
}

/// The matches the account holds a seat in (through `seats_account`), newest activity first.
/// `updated_at` is RFC 3339 text in UTC, written with the same formatting every time, which
/// sorts as the times do.
pub(crate) async fn of_player(
    pool: &SqlitePool,
    filter: &PlayerFilter,
) -> Result<Vec<MatchRecord>, StoreError> {
    let mut conn = pool.acquire().await.map_err(db)?;
    let rows: Vec<MatchRow> = sqlx::query_as(&format!(
        "SELECT {MATCH_COLUMNS} FROM matches
         WHERE match_id IN (SELECT match_id FROM seats WHERE account = ?1)
           AND (?2 IS NULL OR status = ?2)
           AND (?3 IS NULL OR updated_at < ?3 OR (updated_at = ?3 AND match_id < ?4))
         ORDER BY updated_at DESC, match_id DESC LIMIT ?5"
    ))
    .bind(&filter.account)
    .bind(filter.status.map(|s| s.as_str()))
    .bind(filter.after.map(|(at, _)| at))
    .bind(filter.after.map(|(_, id)| id.to_string()))
    .bind(filter.effective_limit())
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    with_seats(&mut conn, rows).await
}

/// The records of `rows`, with their seats read in one query.
async fn with_seats(
    conn: &mut SqliteConnection,
    rows: Vec<MatchRow>,
) -> Result<Vec<MatchRecord>, StoreError> {
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
