//! Events on PostgreSQL: the append (one read of the head, then one statement that writes the
//! events only if the head is as expected, and with them the match row's changes, the pending
//! turns and the webhook notifications), reads, loads and snapshots.
//!
//! Webhook notifications for the seats an append makes awaited are one more clause of the
//! same statement ([`ENQUEUE_OUTBOX`]), so they exist exactly when the events do.
//!
//! The commonest append, one event that changes no match row and no pending turns, goes to the
//! group commit instead ([`super::batch`]): written with whatever other appends are waiting, in
//! one statement. Its head is one this process saw committed (it wrote or read it), and
//! committed events never change, so there the primary key alone settles the race.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use sqlx::{Connection, PgConnection, PgPool, Postgres};

use super::batch::Row;
use super::columns::{EVENT_COLUMNS, EventColumns, SeatColumns};
use super::turns::TurnColumns;
use super::{Pg, db, is_unique_violation, routed};
use crate::rows::{Binds, EventRow, HeadRow, Params, SnapshotRow, chained, to_i64};
use crate::{
    Appended, Loaded, MatchId, MatchUpdate, NewEvent, Snapshot, StoreError, StoredEvent,
    canonical_json, chain,
};

/// The head an append expects: `$1` the match, `$2` its version, `$3` its last hash.
#[derive(Debug)]
struct HeadValues {
    id: MatchId,
    expected: i64,
    prev: Vec<u8>,
}

impl Params<Postgres> for HeadValues {
    fn bind_to<'q, Q: Binds<'q, Postgres>>(self, query: Q) -> Q {
        query.value(self.id).value(self.expected).value(self.prev)
    }
}

/// The match row's side of an append, `$12` to `$15`: the time it records as its last change,
/// the new status if any, the highest seat named (the match must have it) and the version the
/// append leaves.
#[derive(Debug)]
struct UpdateValues {
    changed_at: DateTime<Utc>,
    status: Option<&'static str>,
    max_seat: i16,
    version: i64,
}

impl Params<Postgres> for UpdateValues {
    fn bind_to<'q, Q: Binds<'q, Postgres>>(self, query: Q) -> Q {
        query
            .value(self.changed_at)
            .value(self.status)
            .value(self.max_seat)
            .value(self.version)
    }
}

/// The "your turn" notifications of an append, `$24` and `$25`: one seat and payload each.
#[derive(Debug)]
struct NotifyColumns {
    seat: Vec<i16>,
    body: Vec<String>,
}

impl Params<Postgres> for NotifyColumns {
    fn bind_to<'q, Q: Binds<'q, Postgres>>(self, query: Q) -> Q {
        query.value(self.seat).value(self.body)
    }
}

/// The head read, with the request's range and whether its index key is taken when the append
/// carries a request id (`$2`). Every table is filtered by `$1` itself, not through a join on
/// `match_id`: Citus then sends the whole statement to the match's shard, where it asks every
/// shard otherwise. Without a request id the request's parts are left out, not matched against
/// NULL: the planner folds such a join condition to `false`, and Citus refuses a join of
/// distributed tables with no condition on the distribution column.
fn head_sql(with_request: bool) -> String {
    let (request, join) = if with_request {
        (
            "r.seq AS first_seq, r.request_last AS last_seq,
             EXISTS (SELECT 1 FROM events k WHERE k.match_id = $1
                 AND request_key(k.request_id) = request_key($2)
                 AND k.request_last IS NOT NULL) AS key_taken",
            "LEFT JOIN events r ON r.match_id = $1
             AND request_key(r.request_id) = request_key($2) AND r.request_id = $2
             AND r.request_last IS NOT NULL",
        )
    } else {
        (
            "NULL::bigint AS first_seq, NULL::bigint AS last_seq, false AS key_taken",
            "",
        )
    };
    format!(
        "SELECT m.seat_count, COALESCE(last.seq, m.version) AS version,
             COALESCE(last.hash, m.last_hash) AS last_hash, m.archived, {request},
             EXISTS (SELECT 1 FROM event_blocks b WHERE b.match_id = $1) AS packed
         FROM matches m
         LEFT JOIN LATERAL (SELECT e.seq, e.hash FROM events e
             WHERE e.match_id = $1 ORDER BY e.seq DESC LIMIT 1) last ON true
         {join}
         WHERE m.match_id = $1"
    )
}

async fn head(pool: &PgPool, id: MatchId, request_id: Option<&str>) -> Result<HeadRow, StoreError> {
    static SQL: LazyLock<[String; 2]> = LazyLock::new(|| [head_sql(false), head_sql(true)]);
    let query = sqlx::query_as(&SQL[usize::from(request_id.is_some())]).bind(id);
    let query = match request_id {
        Some(request_id) => query.bind(request_id),
        None => query,
    };
    let row: Option<HeadRow> = query.fetch_optional(pool).await.map_err(db)?;
    row.ok_or(StoreError::NotFound(id))
}

/// The events `first..=last` of match `id`, wherever they are stored. Run on a lease, which
/// closes a connection whose work was cancelled, since the read may begin a transaction.
async fn events_between(
    pg: &Pg,
    id: MatchId,
    first: u64,
    last: u64,
) -> Result<Vec<StoredEvent>, StoreError> {
    let count = u32::try_from(last + 1 - first)
        .map_err(|_| StoreError::Internal(format!("a request of {} events", last + 1 - first)))?;
    pg.reads
        .run(async |conn| read_on(conn, id, first.saturating_sub(1), count).await)
        .await
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
    pg: &Pg,
    id: MatchId,
    expected: u64,
    request_id: Option<&str>,
    update: &MatchUpdate,
) -> Result<Checked, StoreError> {
    let pool = &pg.pool;
    let head = head(pool, id, request_id).await?;
    if let Some((first, last)) = head.request_range()? {
        return Ok(Checked::Duplicate(Appended {
            events: events_between(pg, id, first, last).await?,
            duplicate: true,
            webhooks_queued: false,
        }));
    }
    if let (true, Some(request_id)) = (head.packed, request_id) {
        // A retry of a request packed into a block: the index no longer holds its id.
        let range = pg
            .reads
            .run(async |conn| super::blocks::request_range(conn, id, request_id).await)
            .await?;
        if let Some((first, last)) = range {
            return Ok(Checked::Duplicate(Appended {
                events: events_between(pg, id, first, last).await?,
                duplicate: true,
                webhooks_queued: false,
            }));
        }
    }
    if let (true, Some(request_id)) = (head.archived, request_id) {
        // A retry that comes after the match was archived: its events are in the archive.
        let original = super::archive::read(pool, id)
            .await?
            .and_then(|archived| archived.request(request_id));
        if let Some(events) = original {
            return Ok(Checked::Duplicate(Appended {
                events,
                duplicate: true,
                webhooks_queued: false,
            }));
        }
    }
    if head.archived {
        return Err(StoreError::Invalid(format!(
            "match {id} has ended and its log is archived: nothing more can be appended"
        )));
    }
    if let (true, Some(request_id)) = (head.key_taken, request_id) {
        // Another request id of this match has the same 64-bit key (see the request index's
        // migration): the index cannot hold both, so this one is refused, not retried.
        return Err(StoreError::Invalid(format!(
            "request id {request_id:?} has the index key of another request id of match {id}: \
             send the action again under a new request id"
        )));
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
    if let Some(turns) = &update.turns {
        // Seat ranges are checked against the match below; two turns for one seat, here.
        crate::turns::check(turns, 256)?;
    }
    let request_id = events.first().and_then(|e| e.request_id.clone());
    let request_id = request_id.as_deref();
    let prev = match pg.heads.get(id) {
        Some((version, hash)) if version == expected => hash,
        _ => match check(pg, id, expected, request_id, update).await? {
            Checked::Duplicate(original) => return Ok(original),
            Checked::AtVersion(hash) => hash,
        },
    };
    let refused = match write(pg, id, expected, &prev, events, update).await? {
        Written::Done(appended) => return Ok(appended),
        Written::Not(refused) => refused,
    };
    // Nothing was written. The head as stored tells a retried request (its original events)
    // and a lost race (a conflict) from a refusal that stands; this is no retry: the caller,
    // which decided what to append, decides again.
    pg.heads.forget(id);
    match (check(pg, id, expected, request_id, update).await?, refused) {
        (Checked::Duplicate(original), _) => Ok(original),
        // The head the refused statement chained from still stands: the refusal is the answer.
        (Checked::AtVersion(hash), Some(refusal)) if hash == prev => Err(refusal),
        // The cached head was not the stored one, or a concurrent writer took the seq or the
        // request id and went away again: the match is at the version expected, but what was
        // decided from it must be appended again.
        (Checked::AtVersion(_), _) => Err(StoreError::Conflict {
            expected,
            actual: expected,
        }),
    }
}

/// The head check every append makes: the previous event exists with the hash the new events
/// chain from, or there is none yet and the match row is still at version 0 with that hash.
/// Its parameters are [`HeadValues`].
const HEAD_IS: &str =
    "(EXISTS (SELECT 1 FROM events WHERE match_id = $1::uuid AND seq = $2 AND hash = $3)
        OR ($2 = 0 AND EXISTS (SELECT 1 FROM matches
            WHERE match_id = $1::uuid AND version = 0 AND last_hash = $3)))";

/// The events of an append ([`EventColumns`], `$4` to `$11`), inserted if the head is as
/// expected; see [`HEAD_IS`].
const INSERT_EVENTS: &str =
    "INSERT INTO events (match_id, seq, kind, actor, request_id, request_last, payload, at,
        hash)
    SELECT $1::uuid, e.seq, e.kind, e.actor, e.request_id, e.request_last, e.payload::json, e.at,
        e.hash
    FROM UNNEST($4::bigint[], $5::text[], $6::smallint[], $7::text[], $8::bigint[], $9::text[],
        $10::timestamptz[], $11::bytea[])
        AS e(seq, kind, actor, request_id, request_last, payload, at, hash)
    WHERE ";

/// The status and seat changes of an append ([`UpdateValues`], then [`SeatColumns`] as `$16`
/// to `$19` and the seats' accounts as `$26`), applied only if `h` holds a row: the inserted
/// events, or for an append without events the match row when its head is as expected and no
/// event follows it.
const UPDATE_MATCH: &str = "m AS (
        UPDATE matches SET updated_at = $12, status = COALESCE($13, status)
        WHERE match_id = $1::uuid AND EXISTS (SELECT 1 FROM h)
        RETURNING match_id
    ), s AS (
        UPDATE seats SET player = s.player, token_hash = s.token_hash, bot = s.bot,
            account = s.account
        FROM m, UNNEST($16::smallint[], $17::text[], $18::bytea[], $19::text[], $26::text[])
            AS s(seat, player, token_hash, bot, account)
        WHERE seats.match_id = m.match_id AND seats.seat = s.seat
    )";

/// The pending turns of an append (see [`crate::MatchUpdate::turns`]; [`TurnColumns`] as `$20`
/// to `$23`), written only if `h` holds a row, like [`UPDATE_MATCH`]: every other pending turn
/// of the match is deleted, these are written as awaited after the append's last event, and a
/// turn whose due time stays keeps its reminder (or, once sent, none). A new version frees the
/// lease, so the turn can be claimed again at once.
const WRITE_TURNS: &str = "td AS (
        DELETE FROM turns WHERE match_id = $1::uuid AND EXISTS (SELECT 1 FROM h)
            AND NOT (seat = ANY($20::smallint[]))
    ), tu AS (
        INSERT INTO turns (match_id, seat, version, due_at, bot, remind_at)
        SELECT $1::uuid, t.seat, $15, t.due_at, t.bot, t.remind_at
        FROM UNNEST($20::smallint[], $21::timestamptz[], $22::text[], $23::timestamptz[])
            AS t(seat, due_at, bot, remind_at)
        WHERE EXISTS (SELECT 1 FROM h)
        ON CONFLICT (match_id, seat) DO UPDATE SET version = EXCLUDED.version,
            bot = EXCLUDED.bot, lease_until = NULL,
            due_at = EXCLUDED.due_at,
            remind_at = CASE WHEN turns.due_at = EXCLUDED.due_at THEN turns.remind_at
                ELSE EXCLUDED.remind_at END
    )";

/// The "your turn" notifications of an append ([`NotifyColumns`]): one outbox row per seat
/// that has a webhook, for the last inserted event, only if `h` inserted.
const ENQUEUE_OUTBOX: &str = "o AS (
        INSERT INTO webhook_outbox (match_id, seq, seat, url, body, next_attempt_at, created_at)
        SELECT w.match_id, (SELECT max(seq) FROM h), w.seat, w.url, n.body, $12, $12
        FROM UNNEST($24::smallint[], $25::text[]) AS n(seat, body)
        JOIN webhooks w ON w.match_id = $1::uuid AND w.seat = n.seat
        WHERE EXISTS (SELECT 1 FROM h)
        RETURNING seat
    )";

/// What the append statement did.
#[derive(Debug)]
enum Written {
    Done(Appended),
    /// Nothing written: the head moved, a seat is out of range, or the request id or seq was
    /// taken by a concurrent writer; with the database's refusal, if it refused the statement.
    Not(Option<StoreError>),
}

/// The single append statement: insert the events if the head is as expected, and with them
/// the status and seat changes, the pending turns and the webhook notifications, if any.
async fn write(
    pg: &Pg,
    id: MatchId,
    expected: u64,
    prev: &[u8; 32],
    events: Vec<NewEvent>,
    update: &MatchUpdate,
) -> Result<Written, StoreError> {
    let stored = chain(id, expected, prev, events);
    let version = stored.last().map_or(expected, |e| e.seq);
    let last_hash = stored.last().map_or(*prev, |e| e.hash);
    let seats = &update.seats;
    let changes_match = update.status.is_some() || !seats.is_empty();
    // On Citus only without notifications: there the outbox rows cannot share the event's
    // statement and still go to one worker whole.
    let alone = !pg.citus || update.notify.is_empty();
    if let (false, None, [_], true) = (changes_match, &update.turns, stored.as_slice(), alone) {
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
        return Ok(match queued {
            Some(queued) => Written::Done(appended(pg, id, version, last_hash, vec![ev], queued)),
            None => Written::Not(None),
        });
    }
    // The statement writes nothing unless the match has every seat named here.
    let max_seat = seats
        .iter()
        .map(|s| s.seat)
        .chain(update.turns.iter().flatten().map(|t| t.seat))
        .map(i16::from)
        .max()
        .unwrap_or(-1);
    if pg.citus {
        let append = routed::Append {
            id,
            events: &stored,
            update,
            changed_at: crate::canonical::changed_at(&stored),
            max_seat,
            version: to_i64(version)?,
            expected: to_i64(expected)?,
            prev,
        };
        let mut lease = pg.reads.any();
        let written = match lease.conn().await {
            Ok(conn) => routed::append(conn, append).await,
            Err(e) => Err(e),
        };
        lease.done(&written);
        return match written {
            Ok(Some(queued)) => Ok(Written::Done(appended(
                pg, id, version, last_hash, stored, queued,
            ))),
            Ok(None) => Ok(Written::Not(None)),
            Err(e) => refused(e),
        };
    }
    let cols = EventColumns::new(&stored)?;
    let notify = !update.notify.is_empty() && !stored.is_empty();
    let plain = !changes_match && !notify && update.turns.is_none() && !stored.is_empty();
    let write_turns = if update.turns.is_some() {
        format!(", {WRITE_TURNS}")
    } else {
        String::new()
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
                AND EXISTS (SELECT 1 FROM matches WHERE match_id = $1::uuid AND seat_count > $14)
                RETURNING seq
            ), {}
            SELECT (SELECT count(*) FROM h), {queued}",
            clauses.join(", ")
        )
    } else {
        format!(
            "WITH h AS (SELECT 1 FROM matches WHERE match_id = $1::uuid AND seat_count > $14
                AND {HEAD_IS}
                AND NOT EXISTS (SELECT 1 FROM events WHERE match_id = $1::uuid AND seq = $2 + 1)
                AND cardinality($4::bigint[]) = 0
            ), {UPDATE_MATCH}{write_turns}
            SELECT (SELECT count(*) FROM m), 0::bigint"
        )
    };
    let query = sqlx::query(&sql)
        .params(HeadValues {
            id,
            expected: to_i64(expected)?,
            prev: prev.to_vec(),
        })
        .params(cols);
    // (rows written, notifications queued)
    let result = if plain {
        query
            .execute(&pg.pool)
            .await
            .map(|r| (r.rows_affected(), false))
    } else {
        let (seat, body) = if notify {
            crate::outbox::bodies(&update.notify)
        } else {
            (Vec::new(), Vec::new())
        };
        query
            .params(UpdateValues {
                changed_at: crate::canonical::changed_at(&stored),
                status: update.status.map(|s| s.as_str()),
                max_seat,
                version: to_i64(version)?,
            })
            .params(SeatColumns::new(seats))
            .params(TurnColumns::new(
                update.turns.as_deref().unwrap_or_default(),
            ))
            .params(NotifyColumns { seat, body })
            .value(SeatColumns::accounts(seats))
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
        Ok((n, queued)) if n == want => Ok(Written::Done(appended(
            pg, id, version, last_hash, stored, queued,
        ))),
        Ok(_) => Ok(Written::Not(None)),
        // Another writer committed the same request id or seq first (a unique violation), or
        // the database refused the statement: the caller reads the head again, which tells a
        // retried request (its original events) and a lost race (a conflict, or a write after
        // the new head) from a refusal that stands (the head has not moved). Not told apart by
        // SQLSTATE alone: Citus writes an `INSERT … SELECT` through the coordinator, which
        // reports a shard's unique violation as an internal error (XX000).
        Err(e) => refused(e),
    }
}

/// An append statement the database refused: lost to a concurrent writer (a unique
/// violation), refused for good (an internal error, told apart by reading the head), or an
/// error to answer as it is.
fn refused(e: sqlx::Error) -> Result<Written, StoreError> {
    if is_unique_violation(&e) {
        return Ok(Written::Not(None));
    }
    match db(e) {
        e @ StoreError::Internal(_) => Ok(Written::Not(Some(e))),
        e => Err(e),
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

/// A page of a match's events: `$1` the match, after seq `$2`, at most `$3`. It starts at
/// seq `$2` itself, whose hash the page's first event chains from (see [`chained`]), and so
/// returns one row more.
pub fn read_sql() -> String {
    format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE match_id = $1::uuid AND seq >= $2
         ORDER BY seq LIMIT $3 + 1"
    )
}

/// A load's newest snapshot: `$1` the match, `$2` the rules version, at or before seq `$3`.
pub const LOAD_SNAPSHOT: &str = "SELECT seq, rules_version, state::text AS state FROM snapshots
     WHERE match_id = $1::uuid AND rules_version = $2 AND seq <= $3
     ORDER BY seq DESC LIMIT 1";

/// A load's events: `$1` the match, after seq `$2` (the snapshot's), read from seq `$2` itself
/// like [`read_sql`].
pub fn load_events_sql() -> String {
    format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE match_id = $1::uuid AND seq >= $2 ORDER BY seq"
    )
}

pub(crate) async fn read(
    pg: &Pg,
    id: MatchId,
    after: u64,
    limit: u32,
) -> Result<Vec<StoredEvent>, StoreError> {
    pg.reads
        .run(async |conn| read_on(conn, id, after, limit).await)
        .await
}

async fn read_on(
    conn: &mut PgConnection,
    id: MatchId,
    after: u64,
    limit: u32,
) -> Result<Vec<StoredEvent>, StoreError> {
    let rows: Vec<EventRow> = sqlx::query_as(&read_sql())
        .bind(id)
        .bind(to_i64(after)?)
        .bind(i64::from(limit))
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    if rows.is_empty() {
        // No events yet, no such match, or an archived match.
        return read_archived(conn, id, after, limit).await;
    }
    if !follows(&rows, after) {
        // The events from `after` begin in the match's packed blocks: read them and the rows
        // again as one snapshot of the database left them.
        let mut tx = conn
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await
            .map_err(db)?;
        let events = super::blocks::read_events(&mut tx, id, after, Some(limit)).await?;
        tx.commit().await.map_err(db)?;
        if events.is_empty() {
            // Archived since the first read.
            return read_archived(conn, id, after, limit).await;
        }
        return Ok(events);
    }
    let mut events = chained(rows, id, after)?;
    events.truncate(limit as usize);
    Ok(events)
}

/// Whether `rows`, read from seq `after`, begin where the events after `after` do: with the
/// row at `after` itself, or at seq 1 for the whole log. Otherwise they begin after a packed
/// block.
fn follows(rows: &[EventRow], after: u64) -> bool {
    rows.first()
        .is_some_and(|row| u64::try_from(row.seq) == Ok(after.max(1)))
}

/// A page of a match without event rows after `after`: of its archive if it is archived,
/// empty if it has no such events, [`StoreError::NotFound`] if there is no such match.
async fn read_archived(
    conn: &mut PgConnection,
    id: MatchId,
    after: u64,
    limit: u32,
) -> Result<Vec<StoredEvent>, StoreError> {
    let archived = super::archive::read_if_exists(conn, id)
        .await?
        .ok_or(StoreError::NotFound(id))?;
    Ok(archived.map_or_else(Vec::new, |archived| {
        let page = archived.events.into_iter().filter(|e| e.seq > after);
        page.take(limit as usize).collect()
    }))
}

pub(crate) async fn load(pg: &Pg, id: MatchId, rules_version: u32) -> Result<Loaded, StoreError> {
    pg.reads
        .run(async |conn| load_on(conn, pg, id, rules_version).await)
        .await
}

async fn load_on(
    conn: &mut PgConnection,
    pg: &Pg,
    id: MatchId,
    rules_version: u32,
) -> Result<Loaded, StoreError> {
    // One snapshot of the database for all three reads, so the events follow the snapshot and
    // the record's version matches the last event.
    let mut tx = conn
        .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .await
        .map_err(db)?;
    let record = super::matches::read(&mut *tx, id).await?;
    // A match that ended is usually archived by now: its whole log is then one row, read first.
    if matches!(
        record.status,
        crate::MatchStatus::Finished | crate::MatchStatus::Abandoned
    ) && let Some(archived) = super::archive::read(&mut *tx, id).await?
    {
        tx.commit().await.map_err(db)?;
        return Ok(Loaded {
            record,
            snapshot: None,
            events: archived.events,
            requests: Vec::new(),
        });
    }
    let snapshot: Option<SnapshotRow> = sqlx::query_as(LOAD_SNAPSHOT)
        .bind(id)
        .bind(
            i32::try_from(rules_version)
                .map_err(|_| StoreError::Internal("rules_version too large".into()))?,
        )
        .bind(to_i64(record.version)?)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?;
    let snapshot = snapshot.map(SnapshotRow::into_snapshot).transpose()?;
    let after = snapshot.as_ref().map_or(0, |s| s.seq);
    let rows: Vec<EventRow> = sqlx::query_as(&load_events_sql())
        .bind(id)
        .bind(to_i64(after)?)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
    // Packed blocks, if the rows begin after one, or for the request ids the snapshot folded
    // in (a block's are not in the request index).
    let packed = !rows.is_empty() && !follows(&rows, after);
    let blocks = if packed || after > 0 {
        super::blocks::for_load(&mut tx, id, after).await?
    } else {
        crate::archive::Unpacked::default()
    };
    // The request ids the snapshot folded in, through the request index.
    let mut requests: Vec<(String, i64)> = if after > 0 {
        sqlx::query_as(
            "SELECT request_id, seq FROM events
             WHERE match_id = $1::uuid AND request_last IS NOT NULL AND seq <= $2",
        )
        .bind(id)
        .bind(to_i64(after)?)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?
    } else {
        Vec::new()
    };
    tx.commit().await.map_err(db)?;
    for (request_id, first, _) in &blocks.requests {
        if *first <= after {
            requests.push((request_id.clone(), to_i64(*first)?));
        }
    }
    let (mut events, before) = blocks.after(after);
    events.extend(crate::rows::chained_from(
        rows,
        id,
        after,
        before.filter(|(seq, _)| *seq >= after),
    )?);
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
         WHERE match_id = $1::uuid AND NOT archived AND (version >= $2
             OR EXISTS (SELECT 1 FROM events WHERE match_id = $1::uuid AND seq = $2))
         ON CONFLICT (match_id, seq) DO UPDATE
             SET rules_version = EXCLUDED.rules_version, state = EXCLUDED.state",
    )
    .bind(id)
    .bind(to_i64(snapshot.seq)?)
    .bind(
        i32::try_from(snapshot.rules_version)
            .map_err(|_| StoreError::Internal("rules_version too large".into()))?,
    )
    .bind(canonical_json(&snapshot.state))
    .execute(pool)
    .await
    .map_err(db)?;
    if result.rows_affected() == 0 {
        // No such match, a snapshot of events that do not exist yet, or an archived match,
        // whose log is one value and has no snapshots.
        let record = super::matches::read(pool, id).await?;
        if snapshot.seq <= record.version {
            return Ok(());
        }
        return Err(StoreError::Internal(format!(
            "snapshot at seq {} is beyond the match's version {}",
            snapshot.seq, record.version
        )));
    }
    Ok(())
}
