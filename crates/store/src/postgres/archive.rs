//! Archived matches on PostgreSQL: a match that ended has its event rows and snapshots
//! replaced by one `archives` row ([`crate::archive`]'s format), in one transaction, and the
//! reads of [`super::events`] unpack it where the rows used to be.
//!
//! `matches.archived` marks such a match, and `matches.version` and `matches.last_hash` become
//! its final head (there is no last event row left to read it from), so the head, the match
//! record and the listings read as before. The ended matches still to archive are found through
//! the partial index `matches_to_archive`, without a lock; each is then archived in a
//! transaction of its own that first takes its match row with a one-row update that holds only
//! while the match is still ended and unarchived, so of replicas archiving at once one archives
//! it and the others, once it commits, find it archived and pass.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

use super::columns::{EVENT_COLUMNS, LogRow};
use super::{begin, custom_plans, db};
use crate::archive::{self, Packed, Unpacked};
use crate::rows::{EventRow, chained_from, hash32, to_i64, unsigned};
use crate::{MatchId, StoreError, StoredEvent};

/// An `archives` row, or the nulls of a match without one.
#[derive(Debug, sqlx::FromRow)]
struct ArchiveRow {
    events: Option<i64>,
    last_hash: Option<Vec<u8>>,
    body: Option<Vec<u8>>,
}

impl ArchiveRow {
    /// The archive unpacked and checked; `None` for no archive.
    fn unpack(self, id: MatchId) -> Option<Result<Unpacked, StoreError>> {
        let (events, last_hash, body) = (self.events?, self.last_hash?, self.body?);
        let packed = || {
            Ok(Packed {
                after: (0, crate::GENESIS_HASH),
                events: unsigned(events, "archived event count")?,
                last_hash: hash32(&last_hash, "archived last_hash")?,
                body,
            })
        };
        Some(packed().and_then(|packed| archive::unpack(id, &packed)))
    }
}

/// The archive of match `id`, unpacked and checked; `None` if the match is not archived.
pub(super) async fn read<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    id: MatchId,
) -> Result<Option<Unpacked>, StoreError> {
    let row: Option<ArchiveRow> =
        sqlx::query_as("SELECT events, last_hash, body FROM archives WHERE match_id = $1::uuid")
            .bind(id)
            .fetch_optional(executor)
            .await
            .map_err(db)?;
    row.and_then(|row| row.unpack(id)).transpose()
}

/// Whether match `id` exists, and its archive if it is archived: one statement.
pub(super) async fn read_if_exists(
    executor: impl sqlx::PgExecutor<'_>,
    id: MatchId,
) -> Result<Option<Option<Unpacked>>, StoreError> {
    let row: Option<ArchiveRow> = sqlx::query_as(
        "SELECT a.events, a.last_hash, a.body FROM matches m
         LEFT JOIN archives a ON a.match_id = m.match_id WHERE m.match_id = $1::uuid",
    )
    .bind(id)
    .fetch_optional(executor)
    .await
    .map_err(db)?;
    row.map(|row| row.unpack(id).transpose()).transpose()
}

/// Archives up to `limit` matches that ended before `ended_before`, oldest first, each in a
/// transaction of its own; the number archived. A match whose rows do not form a whole chain is left as
/// it is and reported, never archived.
pub(crate) async fn archive_finished(
    pool: &PgPool,
    ended_before: DateTime<Utc>,
    limit: u32,
) -> Result<u32, StoreError> {
    // Planned with its values ([`custom_plans`]), for its `LIMIT`; read only.
    let mut tx = custom_plans(pool).await?;
    let ids: Vec<(MatchId,)> = sqlx::query_as(
        "SELECT match_id FROM matches
         WHERE status IN ('finished', 'abandoned') AND NOT archived AND updated_at < $1
         ORDER BY updated_at LIMIT $2",
    )
    .bind(ended_before)
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    let mut archived = 0;
    for (id,) in ids {
        let mut tx = begin(pool, "BEGIN").await?;
        // The match row, held until the commit: a packer or another archiver waits for it.
        let taken: Option<(i32,)> = sqlx::query_as(
            "UPDATE matches SET archived = archived
             WHERE match_id = $1 AND status IN ('finished', 'abandoned') AND NOT archived
             RETURNING 1",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?;
        if taken.is_none() {
            continue;
        }
        let log = match whole_log(&mut tx, id).await {
            Ok(log) => log,
            Err(e @ StoreError::Corrupt(_)) => {
                tracing::error!(match_id = %id, error = %e, "a match's log cannot be archived");
                continue;
            }
            Err(e) => return Err(e),
        };
        let packed = match pack_checked(id, &log) {
            Ok(packed) => packed,
            Err(e) => {
                tracing::error!(match_id = %id, error = %e, "a match's log cannot be archived");
                continue;
            }
        };
        let last_at = log.last().map(|(e, _)| e.at);
        // Only the rows archived are deleted: an event appended since (none should be, the
        // match having ended) would stay a row, never be lost.
        sqlx::query(
            "WITH a AS (
                INSERT INTO archives (match_id, events, last_hash, body)
                VALUES ($1::uuid, $2, $3, $4)
            ), e AS (
                DELETE FROM events WHERE match_id = $1::uuid AND seq <= $2
            ), b AS (
                DELETE FROM event_blocks WHERE match_id = $1::uuid AND last_seq <= $2
            ), s AS (
                DELETE FROM snapshots WHERE match_id = $1::uuid
            )
            UPDATE matches SET archived = true, version = $2, last_hash = $3,
                updated_at = GREATEST(updated_at, $5)
            WHERE match_id = $1::uuid",
        )
        .bind(id)
        .bind(to_i64(packed.events)?)
        .bind(packed.last_hash.to_vec())
        .bind(packed.body)
        .bind(last_at)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)?;
        archived += 1;
    }
    Ok(archived)
}

/// Every event of match `id`, from its packed blocks and its rows, each with its request's last
/// seq on the request's first event.
async fn whole_log(
    conn: &mut PgConnection,
    id: MatchId,
) -> Result<Vec<(StoredEvent, Option<u64>)>, StoreError> {
    let blocks = super::blocks::read(&mut *conn, id, 0, None).await?;
    let before = blocks.last();
    let rows: Vec<LogRow> = sqlx::query_as(&format!(
        "SELECT {EVENT_COLUMNS}, request_last FROM events
         WHERE match_id = $1::uuid AND seq > $2 ORDER BY seq"
    ))
    .bind(id)
    .bind(to_i64(before.map_or(0, |(seq, _)| seq))?)
    .fetch_all(conn)
    .await
    .map_err(db)?;
    let (rows, lasts): (Vec<EventRow>, Vec<Option<i64>>) =
        rows.into_iter().map(|r| (r.event, r.request_last)).unzip();
    let lasts = lasts
        .into_iter()
        .map(|l| l.map(|l| unsigned(l, "request_last")).transpose())
        .collect::<Result<Vec<Option<u64>>, StoreError>>()?;
    let block_lasts = blocks.events.iter().map(|e| {
        blocks
            .requests
            .iter()
            .find(|(_, first, _)| *first == e.seq)
            .map(|(_, _, last)| *last)
    });
    let block_lasts: Vec<Option<u64>> = block_lasts.collect();
    let rows = chained_from(rows, id, before.map_or(0, |(seq, _)| seq), before)?;
    Ok(blocks
        .events
        .into_iter()
        .zip(block_lasts)
        .chain(rows.into_iter().zip(lasts))
        .collect())
}

/// Packs `log` and unpacks it again: the rows are deleted only if the archive gives back
/// exactly these events and request ids.
fn pack_checked(id: MatchId, log: &[(StoredEvent, Option<u64>)]) -> Result<Packed, StoreError> {
    let packed = archive::pack(log)?;
    let back = archive::unpack(id, &packed)?;
    let same_events =
        back.events.len() == log.len() && back.events.iter().zip(log).all(|(a, (b, _))| a == b);
    let requests = log
        .iter()
        .filter_map(|(e, last)| Some((e.request_id.clone()?, e.seq, (*last)?)))
        .collect::<Vec<_>>();
    if !same_events || back.requests != requests {
        return Err(StoreError::Corrupt(format!(
            "the archive of match {id} would not give back its events"
        )));
    }
    Ok(packed)
}
