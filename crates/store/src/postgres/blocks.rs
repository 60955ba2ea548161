//! Packed blocks of live matches on PostgreSQL: a match still being played has its oldest event
//! rows replaced, a run at a time and in one transaction each, by `event_blocks` rows
//! ([`crate::archive`]'s format), and the reads of [`super::events`] unpack the blocks they need
//! where the rows used to be.
//!
//! A match's blocks cover seq 1 to some seq without a gap, and its rows follow: the newest
//! [`KEEP_ROWS`] events always stay rows, so an append still checks its head against a row and
//! the commonest reads (a page from a recent version) find rows only. A block ends where a
//! request ends, so a request's events are in one block or all in rows. Packed request ids
//! leave the request index: a retry that the index does not answer reads the blocks
//! ([`super::events`]' check), and a load gives the server every request id, blocks' included.
//!
//! Packing first takes the match row with a one-row update that holds only while the match is
//! not archived, and keeps it until its commit: two replicas never pack one match at once (the
//! second waits, then packs only what is left), a match being archived (whose archiver holds
//! the row the same way) is not packed, and appends, whose foreign key only shares the row's
//! key, go on.

use sqlx::{PgConnection, PgPool};

use super::columns::{EVENT_COLUMNS, LogRow};
use super::{begin, db};
use crate::archive::{self, Packed, Unpacked};
use crate::rows::{EventRow, chained_from, hash32, parse_id, to_i64, unsigned};
use crate::{GENESIS_HASH, MatchId, PackSweep, StoreError, StoredEvent};

/// The newest events of a match that are never packed.
pub(super) const KEEP_ROWS: u64 = 4;
/// The fewest events a block holds: a match is packed once it has this many beyond
/// [`KEEP_ROWS`] since its last block.
pub(super) const MIN_BLOCK: u64 = 16;

/// An `event_blocks` row.
#[derive(Debug, sqlx::FromRow)]
struct BlockRow {
    first_seq: i64,
    last_seq: i64,
    prev_hash: Vec<u8>,
    last_hash: Vec<u8>,
    body: Vec<u8>,
}

/// The blocks of match `id` that hold the event at seq `after` or a later one (every block for
/// 0), up to the one that holds seq `through` (the last block for `None`), still packed: the
/// first of them gives the hash the events after `after` chain from.
/// [`StoreError::Corrupt`] if one does not follow the one before.
async fn fetch(
    conn: &mut PgConnection,
    id: MatchId,
    after: u64,
    through: Option<u64>,
) -> Result<Vec<Packed>, StoreError> {
    let rows: Vec<BlockRow> = sqlx::query_as(
        "SELECT first_seq, last_seq, prev_hash, last_hash, body FROM event_blocks
         WHERE match_id = $1::uuid AND last_seq >= $2 AND ($3::bigint IS NULL OR first_seq <= $3)
         ORDER BY last_seq",
    )
    .bind(id)
    .bind(to_i64(after)?)
    .bind(through.map(to_i64).transpose()?)
    .fetch_all(conn)
    .await
    .map_err(super::db)?;
    let mut blocks: Vec<Packed> = Vec::with_capacity(rows.len());
    for row in rows {
        let first = unsigned(row.first_seq, "block first_seq")?;
        let last = unsigned(row.last_seq, "block last_seq")?;
        let packed = Packed {
            after: (
                first.saturating_sub(1),
                hash32(&row.prev_hash, "block prev_hash")?,
            ),
            events: (last + 1).saturating_sub(first),
            last_hash: hash32(&row.last_hash, "block last_hash")?,
            body: row.body,
        };
        let follows = match blocks.last() {
            Some(before) => (before.after.0 + before.events, before.last_hash) == packed.after,
            // The first block read holds the event after `after`; the first of all follows the
            // genesis hash.
            None => first <= after + 1 && (first > 1 || packed.after.1 == GENESIS_HASH),
        };
        if first == 0 || !follows {
            return Err(StoreError::Corrupt(format!(
                "the packed events {first}..={last} of match {id} do not follow the events \
                 before them"
            )));
        }
        blocks.push(packed);
    }
    Ok(blocks)
}

/// The blocks of match `id` that hold the event at seq `after` or a later one (every block for
/// 0), up to the one holding seq `through` (the last for `None`), unpacked, each block's chain
/// recomputed; [`StoreError::Corrupt`] if one does not hash to its last hash or does not
/// follow the one before.
pub(super) async fn read(
    conn: &mut PgConnection,
    id: MatchId,
    after: u64,
    through: Option<u64>,
) -> Result<Unpacked, StoreError> {
    unpack_from(id, fetch(conn, id, after, through).await?, after)
}

/// The seqs of the first and last events of request `request_id` if a block of match `id`
/// holds it, read without unpacking the events (see [`archive::requests`]).
pub(super) async fn request_range(
    conn: &mut PgConnection,
    id: MatchId,
    request_id: &str,
) -> Result<Option<(u64, u64)>, StoreError> {
    for packed in fetch(conn, id, 0, None).await? {
        let requests = archive::requests(id, &packed)?;
        if let Some((_, first, last)) = requests.into_iter().find(|(r, _, _)| r == request_id) {
            return Ok(Some((first, last)));
        }
    }
    Ok(None)
}

/// The blocks of match `id` as a load from a snapshot at seq `after` (0 for none) needs them:
/// the events of those that hold `after` or a later event, unpacked and checked, and every
/// block's request ids, those before `after` read without unpacking their events.
pub(super) async fn for_load(
    conn: &mut PgConnection,
    id: MatchId,
    after: u64,
) -> Result<Unpacked, StoreError> {
    unpack_from(id, fetch(conn, id, 0, None).await?, after)
}

/// `blocks` unpacked from the one holding seq `after` on; of those before it, only their
/// request ids.
fn unpack_from(id: MatchId, blocks: Vec<Packed>, after: u64) -> Result<Unpacked, StoreError> {
    let mut out = Unpacked::default();
    for packed in blocks {
        if packed.after.0 + packed.events < after {
            out.requests.extend(archive::requests(id, &packed)?);
        } else {
            let unpacked = archive::unpack(id, &packed)?;
            out.events.extend(unpacked.events);
            out.requests.extend(unpacked.requests);
        }
    }
    Ok(out)
}

/// Up to `limit` events of match `id` after seq `after` (every one for `None`), from its
/// blocks and then its rows. `conn` should be a repeatable-read transaction's, so the rows
/// follow the blocks as one snapshot of the database left them.
pub(super) async fn read_events(
    conn: &mut PgConnection,
    id: MatchId,
    after: u64,
    limit: Option<u32>,
) -> Result<Vec<StoredEvent>, StoreError> {
    let through = limit.map(|l| after + u64::from(l));
    let (mut events, before) = read(&mut *conn, id, after, through).await?.after(after);
    let wanted = limit.map(|l| l as usize);
    if let Some(wanted) = wanted {
        events.truncate(wanted);
    }
    let left = wanted.map(|w| w - events.len());
    if left == Some(0) {
        return Ok(events);
    }
    // The rows from the last block's last event (or from `after`), as every read takes them.
    let from = before.map_or(after, |(seq, _)| seq.max(after));
    let rows: Vec<EventRow> = sqlx::query_as(&format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE match_id = $1::uuid AND seq >= $2
         ORDER BY seq LIMIT $3"
    ))
    .bind(id)
    .bind(to_i64(from)?)
    .bind(left.map(|l| l as i64 + 1))
    .fetch_all(conn)
    .await
    .map_err(db)?;
    let mut rows = chained_from(rows, id, from, before)?;
    if let Some(left) = left {
        rows.truncate(left);
    }
    events.extend(rows);
    Ok(events)
}

/// Looks at up to `limit` live (open or active) matches after `after` in id order and packs
/// those with enough rows; see [`crate::Store::pack_live`].
pub(crate) async fn pack_live(
    pool: &PgPool,
    after: Option<MatchId>,
    limit: u32,
) -> Result<PackSweep, StoreError> {
    // Each match's newest seq and the last seq packed: one index probe each.
    let candidates: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT m.match_id::text, last.seq,
             COALESCE((SELECT b.last_seq FROM event_blocks b WHERE b.match_id = m.match_id
                 ORDER BY b.last_seq DESC LIMIT 1), 0)
         FROM matches m
         CROSS JOIN LATERAL (SELECT e.seq FROM events e WHERE e.match_id = m.match_id
             ORDER BY e.seq DESC LIMIT 1) last
         WHERE m.match_id > $1::uuid AND m.status IN ('open', 'active') AND NOT m.archived
         ORDER BY m.match_id LIMIT $2",
    )
    .bind(after.unwrap_or_default())
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
    .map_err(db)?;
    let mut sweep = PackSweep {
        looked_at: candidates.len() as u32,
        packed: 0,
        last: None,
    };
    for (id, head, packed) in candidates {
        let id = parse_id(&id)?;
        sweep.last = Some(id);
        if unsigned(head, "seq")? < unsigned(packed, "block last_seq")? + KEEP_ROWS + MIN_BLOCK {
            continue;
        }
        match pack_one(pool, id).await {
            Ok(true) => sweep.packed += 1,
            Ok(false) => {}
            Err(e @ StoreError::Corrupt(_)) => {
                tracing::error!(match_id = %id, error = %e, "a match's rows cannot be packed");
            }
            Err(e) => return Err(e),
        }
    }
    Ok(sweep)
}

/// Packs the rows of match `id` after its last block, all but the newest [`KEEP_ROWS`] and up
/// to the end of a request, into one block; whether it wrote one.
async fn pack_one(pool: &PgPool, id: MatchId) -> Result<bool, StoreError> {
    let mut tx = begin(pool, "BEGIN").await?;
    let live: Option<(i32,)> = sqlx::query_as(
        "UPDATE matches SET archived = archived WHERE match_id = $1 AND NOT archived
         RETURNING 1",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await
    .map_err(db)?;
    if live.is_none() {
        return Ok(false);
    }
    let last_block: Option<(i64, Vec<u8>)> = sqlx::query_as(
        "SELECT last_seq, last_hash FROM event_blocks WHERE match_id = $1::uuid
         ORDER BY last_seq DESC LIMIT 1",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await
    .map_err(db)?;
    let after = match last_block {
        Some((seq, hash)) => (
            unsigned(seq, "block last_seq")?,
            hash32(&hash, "last_hash")?,
        ),
        None => (0, GENESIS_HASH),
    };
    let rows: Vec<LogRow> = sqlx::query_as(&format!(
        "SELECT {EVENT_COLUMNS}, request_last FROM events
         WHERE match_id = $1::uuid AND seq > $2 ORDER BY seq"
    ))
    .bind(id)
    .bind(to_i64(after.0)?)
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    let (rows, lasts): (Vec<EventRow>, Vec<Option<i64>>) =
        rows.into_iter().map(|r| (r.event, r.request_last)).unzip();
    let events = chained_from(rows, id, after.0, (after.0 > 0).then_some(after))?;
    // The run ends before the newest KEEP_ROWS events, where the next event starts a request
    // (or has none).
    let starts_request = |i: usize| events[i].request_id.is_none() || lasts[i].is_some();
    let end = (1..=events.len().saturating_sub(KEEP_ROWS as usize))
        .rev()
        .find(|&n| starts_request(n));
    let Some(end) = end.filter(|&n| n as u64 >= MIN_BLOCK) else {
        return Ok(false);
    };
    let run = events[..end]
        .iter()
        .cloned()
        .zip(lasts[..end].iter().map(|l| l.map(|l| l as u64)))
        .collect::<Vec<_>>();
    let packed = archive::pack_run(after, &run)?;
    let back = archive::unpack(id, &packed)?;
    if back.events.len() != run.len() || back.events.iter().zip(&run).any(|(a, (b, _))| a != b) {
        return Err(StoreError::Corrupt(format!(
            "the block of match {id} would not give back its events"
        )));
    }
    let last_seq = to_i64(after.0 + packed.events)?;
    let written = sqlx::query(
        "WITH b AS (
            INSERT INTO event_blocks (match_id, last_seq, first_seq, prev_hash, last_hash, body)
            VALUES ($1::uuid, $2, $3, $4, $5, $6)
        )
        DELETE FROM events WHERE match_id = $1::uuid AND seq >= $3 AND seq <= $2",
    )
    .bind(id)
    .bind(last_seq)
    .bind(to_i64(after.0 + 1)?)
    .bind(after.1.to_vec())
    .bind(packed.last_hash.to_vec())
    .bind(packed.body)
    .execute(&mut *tx)
    .await;
    match written {
        Ok(done) if done.rows_affected() == packed.events => {}
        Ok(done) => {
            return Err(StoreError::Corrupt(format!(
                "packing match {id}: {} rows to delete, {} deleted; nothing packed",
                packed.events,
                done.rows_affected()
            )));
        }
        Err(e @ sqlx::Error::Database(_)) => {
            // A unique violation (or on Citus an internal error, a shard's unique violation
            // reported without its SQLSTATE) is a block packed by someone else meanwhile, if
            // it is there now.
            drop(tx);
            let there: Option<(i32,)> = sqlx::query_as(
                "SELECT 1 FROM event_blocks WHERE match_id = $1 AND last_seq >= $2 LIMIT 1",
            )
            .bind(id)
            .bind(last_seq)
            .fetch_optional(pool)
            .await
            .map_err(db)?;
            return match there {
                Some(_) => Ok(false),
                None => Err(db(e)),
            };
        }
        Err(e) => return Err(db(e)),
    }
    tx.commit().await.map_err(db)?;
    Ok(true)
}
