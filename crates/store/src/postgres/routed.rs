//! Writes of several tables on Citus: a creation, or an append that changes more than the log,
//! as one transaction of single-table statements about one match.
//!
//! On plain PostgreSQL each is one statement of data-modifying CTEs (see [`super::events`] and
//! [`super::matches`]). Citus runs such a statement in pieces: each CTE a subplan of its own,
//! and rows made from arrays (`INSERT … SELECT … FROM UNNEST`) pulled through the coordinator,
//! 20–30 ms a statement on one machine. Here every statement names the match (`$1`) and carries
//! its rows as `VALUES`, so Citus sends each whole to the match's worker (one task); the
//! transaction touches that worker alone and commits there in one phase.
//!
//! The events go first. An event row is only ever the one after a head this process knows to
//! be committed (it wrote or read it), and committed events never change, so the primary key
//! settles a race on its own, as in the group commit: if another writer took the seq or the
//! request id, the insert fails, the transaction is rolled back and the caller reads the head.

use chrono::{DateTime, Utc};
use sqlx::{Connection, PgConnection};

use super::is_unique_violation;
use crate::rows::{Binds, MatchValues, Time, to_i64};
use crate::{MatchId, MatchUpdate, NewMatch, SeatRecord, StoredEvent};

/// `rows` rows of placeholders after `$1` (the match, first in every row), numbered from
/// `$first`, each with its column's cast: `($1::uuid, $2, $3::json), ($1::uuid, $4, $5::json)`.
fn rows(first: usize, casts: &[&str], rows: usize) -> String {
    let mut n = first;
    let mut sql = String::new();
    for row in 0..rows {
        sql.push_str(if row == 0 { "($1::uuid" } else { ", ($1::uuid" });
        for cast in casts {
            sql.push_str(&format!(", ${n}{cast}"));
            n += 1;
        }
        sql.push(')');
    }
    sql
}

/// An event's columns after `match_id`, as [`insert_events`] binds them.
const EVENT_CASTS: [&str; 8] = ["", "", "", "", "", "::text::json", "", ""];

/// Inserts `events` of match `id`, `request_last` on a request's first event.
async fn insert_events(
    conn: &mut PgConnection,
    id: MatchId,
    events: &[StoredEvent],
) -> Result<(), sqlx::Error> {
    let sql = format!(
        "INSERT INTO events (match_id, seq, kind, actor, request_id, request_last, payload, at,
            hash) VALUES {}",
        rows(2, &EVENT_CASTS, events.len())
    );
    let last = events.last().map_or(Ok(0), |e| to_i64(e.seq));
    let last = last.map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
    let mut query = sqlx::query(&sql).bind(id);
    for (i, ev) in events.iter().enumerate() {
        let request_last = (i == 0 && ev.request_id.is_some()).then_some(last);
        query = query
            .bind(to_i64(ev.seq).unwrap_or(i64::MAX))
            .bind(ev.kind.clone())
            .bind(ev.actor.map(i16::from))
            .bind(ev.request_id.clone())
            .bind(request_last)
            .bind(crate::canonical_json(&ev.payload))
            .bind(ev.at)
            .bind(ev.hash.to_vec());
    }
    query.execute(&mut *conn).await.map(|_| ())
}

/// Makes `turns` the pending turns of match `id` at `version`: every other pending turn is
/// deleted, these are upserted.
async fn replace_turns(
    conn: &mut PgConnection,
    id: MatchId,
    version: i64,
    turns: &[crate::PendingTurn],
) -> Result<(), sqlx::Error> {
    let seats: Vec<i16> = turns.iter().map(|t| i16::from(t.seat)).collect();
    sqlx::query("DELETE FROM turns WHERE match_id = $1::uuid AND NOT (seat = ANY($2::smallint[]))")
        .bind(id)
        .bind(&seats)
        .execute(&mut *conn)
        .await?;
    upsert_turns(conn, id, version, turns).await
}

/// Writes `turns` as awaited at `version`; a turn whose due time stays keeps its reminder (or,
/// once sent, none), and a new version frees the lease.
async fn upsert_turns(
    conn: &mut PgConnection,
    id: MatchId,
    version: i64,
    turns: &[crate::PendingTurn],
) -> Result<(), sqlx::Error> {
    if turns.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "INSERT INTO turns (match_id, version, seat, due_at, bot, remind_at) VALUES {}
        ON CONFLICT (match_id, seat) DO UPDATE SET version = EXCLUDED.version,
            bot = EXCLUDED.bot, lease_until = NULL, due_at = EXCLUDED.due_at,
            remind_at = CASE WHEN turns.due_at = EXCLUDED.due_at THEN turns.remind_at
                ELSE EXCLUDED.remind_at END",
        rows(3, &["", "", "", ""], turns.len()).replace("$1::uuid", "$1::uuid, $2")
    );
    let mut query = sqlx::query(&sql).bind(id).bind(version);
    for t in turns {
        query = query
            .bind(i16::from(t.seat))
            .bind(Time::from(t.due_at))
            .bind(t.bot.clone())
            .bind(t.remind_at.map(Time::from));
    }
    query.execute(&mut *conn).await.map(|_| ())
}

/// An append's writes beyond a plain insert; see [`append`].
#[derive(Debug)]
pub(super) struct Append<'a> {
    pub(super) id: MatchId,
    pub(super) events: &'a [StoredEvent],
    pub(super) update: &'a MatchUpdate,
    /// The match row's time of last change.
    pub(super) changed_at: DateTime<Utc>,
    /// The highest seat named by the seats or the turns (the match must have it), or -1.
    pub(super) max_seat: i16,
    /// The version the append leaves.
    pub(super) version: i64,
    /// The head it follows: the version and its last hash (checked here for an append without
    /// events, which has no event row whose key could collide).
    pub(super) expected: i64,
    pub(super) prev: &'a [u8; 32],
}

/// Writes an append as one transaction: the events, the match row's status (and its time of
/// change) if it changes, its seats, its pending turns, and the "your turn" notifications of
/// the seats that have a webhook. `None`: nothing was written (a seq or the request id was
/// taken, the head moved, or a seat named is out of range); `Some(queued)`: committed, with
/// whether a notification was queued.
pub(super) async fn append(
    conn: &mut PgConnection,
    a: Append<'_>,
) -> Result<Option<bool>, sqlx::Error> {
    let Append { id, update, .. } = a;
    let mut tx = conn.begin().await?;
    let changes_match = update.status.is_some() || !update.seats.is_empty();
    let in_range = if a.events.is_empty() {
        // No event row to collide on: the match row is written only if the head is as
        // expected and no event follows it.
        sqlx::query(
            "UPDATE matches SET updated_at = $2, status = COALESCE($3, status)
             WHERE match_id = $1::uuid AND seat_count > $4
                AND (EXISTS (SELECT 1 FROM events
                        WHERE match_id = $1::uuid AND seq = $5 AND hash = $6)
                    OR ($5 = 0 AND version = 0 AND last_hash = $6))
                AND NOT EXISTS (SELECT 1 FROM events WHERE match_id = $1::uuid AND seq = $5 + 1)",
        )
        .bind(id)
        .bind(a.changed_at)
        .bind(update.status.map(|s| s.as_str()))
        .bind(a.max_seat)
        .bind(a.expected)
        .bind(a.prev.as_slice())
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1
    } else if let Err(e) = insert_events(&mut tx, id, a.events).await {
        return if is_unique_violation(&e) {
            Ok(None)
        } else {
            Err(e)
        };
    } else if changes_match {
        sqlx::query(
            "UPDATE matches SET updated_at = $2, status = COALESCE($3, status)
             WHERE match_id = $1::uuid AND seat_count > $4",
        )
        .bind(id)
        .bind(a.changed_at)
        .bind(update.status.map(|s| s.as_str()))
        .bind(a.max_seat)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1
    } else {
        a.max_seat < 0
            || sqlx::query("SELECT 1 FROM matches WHERE match_id = $1::uuid AND seat_count > $2")
                .bind(id)
                .bind(a.max_seat)
                .fetch_optional(&mut *tx)
                .await?
                .is_some()
    };
    if !in_range {
        return Ok(None);
    }
    if !update.seats.is_empty() {
        sqlx::query(
            "UPDATE seats SET player = s.player, token_hash = s.token_hash, bot = s.bot,
                account = s.account
            FROM UNNEST($2::smallint[], $3::text[], $4::bytea[], $5::text[], $6::text[])
                AS s(seat, player, token_hash, bot, account)
            WHERE seats.match_id = $1::uuid AND seats.seat = s.seat",
        )
        .bind(id)
        .params(super::columns::SeatColumns::new(&update.seats))
        .bind(super::columns::SeatColumns::accounts(&update.seats))
        .execute(&mut *tx)
        .await?;
    }
    if let Some(turns) = &update.turns {
        replace_turns(&mut tx, id, a.version, turns).await?;
    }
    let mut queued = false;
    if !update.notify.is_empty() {
        let (seats, bodies) = crate::outbox::bodies(&update.notify);
        queued = enqueue(&mut tx, id, a.version, &seats, &bodies).await?;
    }
    tx.commit().await?;
    Ok(Some(queued))
}

/// Queues the "your turn" notifications about event `seq` for those of `seats` that have a
/// webhook, one body each; whether any was queued. One statement reading one co-located table
/// of the match, which Citus runs on its worker.
pub(super) async fn enqueue(
    conn: &mut PgConnection,
    id: MatchId,
    seq: i64,
    seats: &[i16],
    bodies: &[String],
) -> Result<bool, sqlx::Error> {
    let now = crate::truncate_to_micros(Utc::now());
    let queued = sqlx::query(
        "INSERT INTO webhook_outbox (match_id, seq, seat, url, body, next_attempt_at, created_at)
        SELECT w.match_id, $2, w.seat, w.url, ($4::text[])[array_position($3::smallint[], w.seat)],
            $5, $5
        FROM webhooks w WHERE w.match_id = $1::uuid AND w.seat = ANY($3::smallint[])",
    )
    .bind(id)
    .bind(seq)
    .bind(seats)
    .bind(bodies)
    .bind(now)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(queued > 0)
}

/// Writes a new match as one transaction: its row, every seat (empty or as the start fills
/// them), its first pending turns and its first events.
pub(super) async fn create(
    conn: &mut PgConnection,
    m: &NewMatch,
    events: &[StoredEvent],
) -> Result<(), sqlx::Error> {
    let mut tx = conn.begin().await?;
    let values = MatchValues::new(m, events).map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
    sqlx::query(super::columns::INSERT_MATCH)
        .params(values)
        .bind(m.creator.as_deref())
        .execute(&mut *tx)
        .await?;
    let seats = SeatRecord::all(m.seat_count, &m.start.seats);
    let sql = format!(
        "INSERT INTO seats (match_id, seat, player, token_hash, bot, account, invited) VALUES {}",
        rows(2, &["", "", "", "", "", ""], seats.len())
    );
    let mut query = sqlx::query(&sql).bind(m.id);
    for s in &seats {
        query = query
            .bind(i16::from(s.seat))
            .bind(s.player.clone())
            .bind(s.token_hash.map(|h| h.to_vec()))
            .bind(s.bot.clone())
            .bind(s.account.clone())
            .bind(s.invited);
    }
    query.execute(&mut *tx).await?;
    if let Some(turns) = m.start.turns.as_deref().filter(|t| !t.is_empty()) {
        let version = events.last().map_or(Ok(0), |e| to_i64(e.seq));
        let version = version.map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
        upsert_turns(&mut tx, m.id, version, turns).await?;
    }
    if !events.is_empty() {
        insert_events(&mut tx, m.id, events).await?;
    }
    tx.commit().await
}

#[cfg(test)]
mod tests {
    use super::rows;

    #[test]
    fn rows_number_their_placeholders_after_the_match() {
        assert_eq!(
            rows(2, &["", "::json"], 2),
            "($1::uuid, $2, $3::json), ($1::uuid, $4, $5::json)"
        );
        assert_eq!(rows(4, &[""], 0), "");
    }
}
