//! Events on SQLite: the append (one `BEGIN IMMEDIATE` transaction that checks the head in the
//! match row and writes the events, the match row's changes, the pending turns and the webhook
//! notifications), reads, loads and snapshots.

use chrono::Utc;
use sqlx::{SqliteConnection, SqlitePool};

use super::db;
use crate::backend::begin;
use crate::rows::{EventRow, HeadRow, SnapshotRow, Time, to_i64};
use crate::{
    Appended, Loaded, MatchId, MatchUpdate, NewEvent, Snapshot, StoreError, StoredEvent,
    canonical_json, chain,
};

const EVENT_COLUMNS: &str = "seq, kind, actor, request_id, payload, at, prev_hash, hash";

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
    rows.into_iter().map(|r| r.into_event(id, None)).collect()
}

pub(crate) async fn append(
    pool: &SqlitePool,
    id: MatchId,
    expected: u64,
    events: Vec<NewEvent>,
    update: &MatchUpdate,
) -> Result<Appended, StoreError> {
    let request_id = events.first().and_then(|e| e.request_id.clone());
    let mut tx = begin(pool, "BEGIN IMMEDIATE").await?;
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
    super::insert_events(&mut tx, &stored).await?;
    for seat in &update.seats {
        sqlx::query(
            "UPDATE seats SET player = ?, token_hash = ?, bot = ?, account = ?
             WHERE match_id = ? AND seat = ?",
        )
        .bind(seat.player.as_deref())
        .bind(seat.token_hash.map(|h| h.to_vec()))
        .bind(seat.bot.as_deref())
        .bind(seat.account.as_deref())
        .bind(&key)
        .bind(i16::from(seat.seat))
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    if let Some(turns) = &update.turns {
        super::turns::replace(&mut tx, &key, version, turns).await?;
    }
    let mut webhooks_queued = false;
    if let Some(last) = stored.last() {
        let (seats, bodies) = crate::outbox::bodies(&update.notify);
        let now = Time::from(Utc::now());
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

pub(crate) async fn read(
    pool: &SqlitePool,
    id: MatchId,
    after: u64,
    limit: u32,
) -> Result<Vec<StoredEvent>, StoreError> {
    let mut conn = pool.acquire().await.map_err(db)?;
    let events = events_between(&mut conn, id, after, None, Some(limit)).await?;
    if events.is_empty() {
        // Distinguish "no events yet" from "no such match".
        super::matches::read(&mut conn, id).await?;
    }
    Ok(events)
}

pub(crate) async fn load(
    pool: &SqlitePool,
    id: MatchId,
    rules_version: u32,
) -> Result<Loaded, StoreError> {
    // A read transaction keeps one consistent view across the three reads.
    let mut tx = begin(pool, "BEGIN").await?;
    let record = super::matches::read(&mut tx, id).await?;
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
        let record = super::matches::get(pool, id).await?;
        return Err(StoreError::Internal(format!(
            "snapshot at seq {} is beyond the match's version {}",
            snapshot.seq, record.version
        )));
    }
    Ok(())
}
