//! Match rows and their seats on PostgreSQL: creation in one statement, reads and listing.

use sqlx::{PgPool, Postgres, QueryBuilder};

use super::columns::{EventColumns, SeatColumns};
use super::turns::TurnColumns;
use super::{Pg, db};
use crate::rows::{Binds, MatchSeatRow, MatchValues, hash32};
use crate::{MatchFilter, MatchId, MatchRecord, NewMatch, PlayerFilter, StoreError, StoredEvent};

/// The match row with its head: `version` is the last event's seq (read backwards through the
/// events primary key), and `updated_at` the later of the row's last write and that event's time.
const MATCH_SELECT: &str = "SELECT m.match_id::text AS match_id, m.kind, m.config::text AS config, \
    m.rules_version, m.seat_count, m.status, m.seed_hash, m.turn_timeout_secs, \
    m.turn_reminder_secs, m.created_at, \
    GREATEST(m.updated_at, last.at) AS updated_at, COALESCE(last.seq, m.version) AS version \
    FROM matches m LEFT JOIN LATERAL (SELECT e.seq, e.at FROM events e \
        WHERE e.match_id = m.match_id ORDER BY e.seq DESC LIMIT 1) last ON true";

/// One statement: the match row (`$1`…`$13`, [`MatchValues`]), its seats, empty or as the
/// start fills them (`$14`…, [`SeatColumns`], their accounts as `$31` and invitations as `$32`),
/// its first pending turns (`$18`…, [`TurnColumns`]), its first events
/// (`$22`…, [`EventColumns`]) and its creator (`$30`). The new rows are
/// invisible to everyone else until it commits.
const CREATE: &str = concat!(
    "WITH m AS (",
    insert_match!("$30"),
    " RETURNING match_id
    ), s AS (
        INSERT INTO seats (match_id, seat, player, token_hash, bot, account, invited)
        SELECT m.match_id, g.seat, t.player, t.token_hash, t.bot, t.account,
            COALESCE(t.invited, false)
        FROM m CROSS JOIN generate_series(0, $5 - 1) AS g(seat)
        LEFT JOIN UNNEST($14::smallint[], $15::text[], $16::bytea[], $17::text[], $31::text[],
                $32::boolean[])
            AS t(seat, player, token_hash, bot, account, invited) ON t.seat = g.seat
    ), tn AS (
        INSERT INTO turns (match_id, seat, version, due_at, bot, remind_at)
        SELECT m.match_id, t.seat, $11, t.due_at, t.bot, t.remind_at
        FROM m, UNNEST($18::smallint[], $19::timestamptz[], $20::text[], $21::timestamptz[])
            AS t(seat, due_at, bot, remind_at)
    ), e AS (
        INSERT INTO events (match_id, seq, kind, actor, request_id, request_last, payload, at,
            hash)
        SELECT m.match_id, e.seq, e.kind, e.actor, e.request_id, e.request_last,
            e.payload::json, e.at, e.hash
        FROM m, UNNEST($22::bigint[], $23::text[], $24::smallint[], $25::text[], $26::bigint[],
            $27::text[], $28::timestamptz[], $29::bytea[])
            AS e(seq, kind, actor, request_id, request_last, payload, at, hash)
    )
    SELECT 1"
);

pub(crate) async fn create(
    pg: &Pg,
    m: &NewMatch,
    events: &[StoredEvent],
) -> Result<(), StoreError> {
    let version = events.last().map_or(0, |e| e.seq);
    let last_hash = events.last().map_or(crate::GENESIS_HASH, |e| e.hash);
    let query = sqlx::query(CREATE)
        .params(MatchValues::new(m, events)?)
        .params(SeatColumns::new(&m.start.seats))
        .params(TurnColumns::new(
            m.start.turns.as_deref().unwrap_or_default(),
        ))
        .params(EventColumns::new(events)?)
        .bind(m.creator.as_deref())
        .value(SeatColumns::accounts(&m.start.seats))
        .value(SeatColumns::invited(&m.start.seats));
    pg.reads
        .run(async |conn| {
            let written = if pg.citus {
                super::routed::create(&mut *conn, m, events).await
            } else {
                query.execute(&mut *conn).await.map(|_| ())
            };
            match written {
                Ok(()) => Ok(()),
                // A unique violation, or on Citus an internal error (a shard's unique
                // violation reported without its SQLSTATE): a match that exists if its row
                // says so.
                Err(e @ sqlx::Error::Database(_)) => match creator_of(&mut *conn, m.id).await {
                    Ok(_) => Err(StoreError::AlreadyExists(m.id)),
                    Err(StoreError::NotFound(_)) => Err(db(e)),
                    Err(other) => Err(other),
                },
                Err(e) => Err(db(e)),
            }
        })
        .await?;
    pg.heads.put(m.id, version, last_hash);
    Ok(())
}

/// How many of `creator`'s matches are open, `limit` at most (through the partial index
/// `matches_creator_open`). Counted whole, not in a subquery that stops at `limit`: a creation
/// is refused at the cap, so there are few to count, and on Citus a flat count is summed from
/// each shard's, where a `LIMIT` in a subquery is run as a subplan whose rows go through the
/// coordinator (0.1–1.6 s a creation on two cores).
pub(crate) async fn open_by_creator(pg: &Pg, creator: &str, limit: u32) -> Result<u32, StoreError> {
    pg.reads
        .run(async |conn| count_open(conn, creator, limit).await)
        .await
}

async fn count_open(
    executor: impl sqlx::PgExecutor<'_>,
    creator: &str,
    limit: u32,
) -> Result<u32, StoreError> {
    let (count,): (i64,) = sqlx::query_as(
        "SELECT LEAST(count(*), $2) FROM matches WHERE creator = $1 AND status = 'open'",
    )
    .bind(creator)
    .bind(i64::from(limit))
    .fetch_one(executor)
    .await
    .map_err(db)?;
    Ok(u32::try_from(count).unwrap_or(u32::MAX))
}

pub(crate) async fn creator(pool: &PgPool, id: MatchId) -> Result<Option<String>, StoreError> {
    creator_of(pool, id).await
}

async fn creator_of(
    executor: impl sqlx::PgExecutor<'_>,
    id: MatchId,
) -> Result<Option<String>, StoreError> {
    let row: Option<(Option<String>,)> =
        sqlx::query_as("SELECT creator FROM matches WHERE match_id = $1::uuid")
            .bind(id)
            .fetch_optional(executor)
            .await
            .map_err(db)?;
    Ok(row.ok_or(StoreError::NotFound(id))?.0)
}

/// Open matches last changed at or before `before`, the longest idle first (through the partial
/// index `matches_open_idle`). An open match's row is written by each of its events (every
/// one changes its seats or its status), so its `updated_at` is its last event's time.
pub(crate) async fn open_idle_since(
    pool: &PgPool,
    before: chrono::DateTime<chrono::Utc>,
    limit: u32,
) -> Result<Vec<MatchId>, StoreError> {
    let ids: Vec<(String,)> = sqlx::query_as(
        "SELECT match_id::text FROM matches WHERE status = 'open' AND updated_at <= $1
         ORDER BY updated_at LIMIT $2",
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

pub(crate) async fn get(pg: &Pg, id: MatchId) -> Result<MatchRecord, StoreError> {
    pg.reads.run(async |conn| read(conn, id).await).await
}

/// A seat's columns beside its match's, as [`MatchSeatRow`] reads them (seats as `s`).
const SEAT_OF_ROW: &str = "s.seat, s.player, s.token_hash, s.bot, s.account, s.invited";

/// The match row and its seats in one statement: one row per seat, the match's columns repeated.
pub(super) async fn read<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    id: MatchId,
) -> Result<MatchRecord, StoreError> {
    let rows: Vec<MatchSeatRow> = sqlx::query_as(&read_sql())
        .bind(id)
        .fetch_all(executor)
        .await
        .map_err(db)?;
    MatchSeatRow::into_record(rows).ok_or(StoreError::NotFound(id))?
}

pub(crate) async fn seed(pool: &PgPool, id: MatchId) -> Result<[u8; 32], StoreError> {
    let seed: Option<Vec<u8>> =
        sqlx::query_scalar("SELECT seed FROM matches WHERE match_id = $1::uuid")
            .bind(id)
            .fetch_optional(pool)
            .await
            .map_err(db)?;
    hash32(&seed.ok_or(StoreError::NotFound(id))?, "seed")
}

/// ListMatches as one statement whose generic plan is the right one for its filter, so the
/// pool's prepared plan serves it in one round trip: the status (one of four) and the page
/// size (at most [`MatchFilter::MAX_LIMIT`]) are written into the statement, which lets
/// `matches_open`, a partial index, serve open matches and the planner cost the page's seats
/// as the few probes they are; only the filters given are in it, each an index condition and
/// a parameter: the kind, if given, then the cursor. A page's seats come with it, one row per
/// seat. Invited seats are found through `seats_invited`.
fn list_query(filter: &MatchFilter) -> QueryBuilder<'_, Postgres> {
    let mut query = QueryBuilder::new(format!(
        "SELECT m.*, {SEAT_OF_ROW} FROM ({MATCH_SELECT}
             WHERE NOT EXISTS (SELECT 1 FROM seats s WHERE s.match_id = m.match_id AND s.invited)"
    ));
    if let Some(status) = filter.status {
        query.push(format_args!(" AND m.status = '{}'", status.as_str()));
    }
    if let Some(kind) = &filter.kind {
        query.push(" AND m.kind = ").push_bind(kind.as_str());
    }
    if let Some(after) = filter.after {
        query
            .push(" AND m.match_id > ")
            .push_bind(after)
            .push("::uuid");
    }
    query.push(format_args!(
        "
             ORDER BY m.match_id LIMIT {}) m
         LEFT JOIN seats s ON s.match_id = m.match_id::uuid
         ORDER BY m.match_id, s.seat",
        filter.effective_limit()
    ));
    query
}

/// The statement [`list`] sends for `filter`, its parameters numbered from `$1`.
pub fn list_sql(filter: &MatchFilter) -> String {
    list_query(filter).into_sql()
}

/// A match row with its seats, one row per seat: `$1` the match. Its last event is found by
/// `$1` too, not through the join on `match_id` ([`MATCH_SELECT`]'s), so that Citus sends the
/// whole statement to the match's shard instead of asking every shard.
pub fn read_sql() -> String {
    let match_select = MATCH_SELECT.replace("e.match_id = m.match_id", "e.match_id = $1");
    format!(
        "SELECT m.*, {SEAT_OF_ROW}
         FROM ({match_select} WHERE m.match_id = $1) m
         LEFT JOIN seats s ON s.match_id = $1 ORDER BY s.seat"
    )
}

pub(crate) async fn list(
    pool: &PgPool,
    filter: &MatchFilter,
) -> Result<Vec<MatchRecord>, StoreError> {
    let rows: Vec<MatchSeatRow> = list_query(filter)
        .build_query_as()
        .fetch_all(pool)
        .await
        .map_err(db)?;
    MatchSeatRow::into_records(rows)
}

/// The matches the account holds a seat in (through `seats_account`), newest activity first.
pub(crate) async fn of_player(
    pool: &PgPool,
    filter: &PlayerFilter,
) -> Result<Vec<MatchRecord>, StoreError> {
    // A generic plan, unlike `list`'s: `seats_account` finds the account's matches whatever the
    // other parameters are, and no index gives their order, so the values change nothing.
    let rows: Vec<MatchSeatRow> = sqlx::query_as(&format!(
        "SELECT m.*, {SEAT_OF_ROW} FROM (SELECT * FROM ({MATCH_SELECT}
                 WHERE m.match_id IN (SELECT match_id FROM seats WHERE account = $1)) m
             WHERE ($2::text IS NULL OR m.status = $2)
               AND ($3::timestamptz IS NULL OR (m.updated_at, m.match_id) < ($3, $4::text))
             ORDER BY m.updated_at DESC, m.match_id DESC LIMIT $5) m
         LEFT JOIN seats s ON s.match_id = m.match_id::uuid
         ORDER BY m.updated_at DESC, m.match_id DESC, s.seat"
    ))
    .bind(&filter.account)
    .bind(filter.status.map(|s| s.as_str()))
    .bind(filter.after.map(|(at, _)| at))
    .bind(filter.after.map(|(_, id)| id.to_string()))
    .bind(filter.effective_limit())
    .fetch_all(pool)
    .await
    .map_err(db)?;
    MatchSeatRow::into_records(rows)
}
