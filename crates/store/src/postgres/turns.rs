//! Pending turns on PostgreSQL. Claims and reminders first read the due rows without a lock,
//! then take them with statements that change a row only if it is still due and unclaimed
//! (`UPDATE … WHERE <these rows> AND <still due> RETURNING …`): PostgreSQL re-checks the
//! condition on each row it locks, so of replicas claiming one turn at once exactly one gets it
//! back. A claim takes a round's candidates with one statement; a reminder is cleared row by
//! row, with its outbox row. Nothing locks rows with `FOR UPDATE`
//! across matches, which Citus would refuse, and each statement names its matches, so Citus
//! sends it only to their shards. Rows are written by appends ([`super::events`]) and match
//! creation.

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Postgres};

use super::{begin, custom_plans, db};
use crate::rows::{Binds, Params, ReminderRow, Time, TurnRow, to_i64};
use crate::turns::{ReminderColumns, reminders};
use crate::{MatchId, PendingTurn, Reminder, StoreError, TurnRecord};

const COLUMNS: &str =
    "match_id::text AS match_id, seat, version, due_at, remind_at, bot, lease_until";

/// Pending turns to write, one array per column
/// (`smallint[], timestamptz[], text[], timestamptz[]`).
#[derive(Debug, Default)]
pub(super) struct TurnColumns {
    seat: Vec<i16>,
    due_at: Vec<Time>,
    bot: Vec<Option<String>>,
    remind_at: Vec<Option<Time>>,
}

impl TurnColumns {
    pub(super) fn new(turns: &[PendingTurn]) -> TurnColumns {
        let mut c = TurnColumns::default();
        for t in turns {
            c.seat.push(i16::from(t.seat));
            c.due_at.push(t.due_at.into());
            c.bot.push(t.bot.clone());
            c.remind_at.push(t.remind_at.map(Time::from));
        }
        c
    }
}

impl Params<Postgres> for TurnColumns {
    fn bind_to<'q, Q: Binds<'q, Postgres>>(self, query: Q) -> Q {
        query
            .value(self.seat)
            .value(self.due_at)
            .value(self.bot)
            .value(self.remind_at)
    }
}

impl Params<Postgres> for ReminderColumns {
    fn bind_to<'q, Q: Binds<'q, Postgres>>(self, query: Q) -> Q {
        query
            .value(self.match_id)
            .value(self.seq)
            .value(self.seat)
            .value(self.url)
            .value(self.body)
            .value(self.at)
    }
}

/// The due turns a claim tries to take, oldest deadline first: `$1` now, `$2` the batch. Read
/// without a lock; each is then taken by [`CLAIM_ONE`].
pub const CANDIDATES: &str = "SELECT match_id, seat FROM turns
    WHERE due_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
    ORDER BY due_at LIMIT $2";

/// The claim of a round's candidates: `$1` now, `$2` the lease's end, `$3` and `$4` the
/// candidates' matches and seats. It returns the rows still due and unleased, which it leases:
/// PostgreSQL re-checks the `WHERE` on each row it locks, so of two servers claiming one turn
/// exactly one gets it back. `match_id = ANY($3)` lets Citus send it only to the shards that
/// hold the candidates, one task each.
const CLAIM: &str = "UPDATE turns SET lease_until = $2
    WHERE match_id = ANY($3::uuid[])
        AND (match_id, seat) IN (SELECT c.m, c.s FROM UNNEST($3::uuid[], $4::smallint[]) AS c(m, s))
        AND due_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
    RETURNING match_id::text AS match_id, seat, version, due_at, remind_at, bot, lease_until";

pub(crate) async fn claim(
    pool: &PgPool,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<TurnRecord>, StoreError> {
    // Each round's candidates are claimed by one statement. Two claimers of overlapping rounds
    // lock the rows they share in the order their (same) plan visits them; should PostgreSQL
    // ever find them waiting on each other, it fails one, whose worker claims again at its next
    // poll. A lease lost in a crash is a lease that expired: the turn is claimed again.
    let mut turns = claim_in_rounds(
        limit,
        |want| due_turns(pool, now, want),
        |due: Vec<(MatchId, i16)>| async move {
            let (ids, seats): (Vec<MatchId>, Vec<i16>) = due.into_iter().unzip();
            let rows: Vec<TurnRow> = sqlx::query_as(CLAIM)
                .bind(Time::from(now))
                .bind(Time::from(lease_until))
                .bind(ids)
                .bind(seats)
                .fetch_all(pool)
                .await
                .map_err(db)?;
            rows.into_iter().map(TurnRow::into_record).collect()
        },
    )
    .await?;
    turns.sort_by_key(|t| t.due_at);
    Ok(turns)
}

/// How many times a claim reads due rows again after others took some of those it read.
pub(super) const CLAIM_ROUNDS: usize = 16;

/// Claims up to `limit` rows: `read(want)` lists up to `want` candidates without a lock, and
/// `take` claims those it can of them (the others another replica took first). Rows others
/// took are leased or cleared, so the next read leaves them out: reads again while the batch
/// has room and the last read was not all taken by others, at most [`CLAIM_ROUNDS`] times.
pub(super) async fn claim_in_rounds<C, T, R, F>(
    limit: u32,
    mut read: impl FnMut(u32) -> R,
    mut take: impl FnMut(Vec<C>) -> F,
) -> Result<Vec<T>, StoreError>
where
    R: Future<Output = Result<Vec<C>, StoreError>>,
    F: Future<Output = Result<Vec<T>, StoreError>>,
{
    let mut claimed = Vec::new();
    for _ in 0..CLAIM_ROUNDS {
        let want = limit.saturating_sub(claimed.len() as u32);
        if want == 0 {
            break;
        }
        let due = read(want).await?;
        let (read, before) = (due.len(), claimed.len());
        if read > 0 {
            claimed.extend(take(due).await?);
        }
        if read < want as usize || claimed.len() - before == read {
            break;
        }
    }
    Ok(claimed)
}

/// Up to `limit` turns due at `now` and not leased, oldest deadline first.
async fn due_turns(
    pool: &PgPool,
    now: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<(MatchId, i16)>, StoreError> {
    // Planned with its values ([`custom_plans`]): a generic plan cannot cost an unknown
    // `LIMIT`. Read only, so nothing waits for its commit.
    let mut tx = custom_plans(pool).await?;
    let due = sqlx::query_as(CANDIDATES)
        .bind(Time::from(now))
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(due)
}

pub(crate) async fn drop(
    pool: &PgPool,
    id: MatchId,
    seat: u8,
    version: u64,
) -> Result<bool, StoreError> {
    let result =
        sqlx::query("DELETE FROM turns WHERE match_id = $1::uuid AND seat = $2 AND version = $3")
            .bind(id)
            .bind(i16::from(seat))
            .bind(to_i64(version)?)
            .execute(pool)
            .await
            .map_err(db)?;
    Ok(result.rows_affected() > 0)
}

pub(crate) async fn list(pool: &PgPool, id: MatchId) -> Result<Vec<TurnRecord>, StoreError> {
    let rows: Vec<TurnRow> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM turns WHERE match_id = $1::uuid ORDER BY seat"
    ))
    .bind(id)
    .fetch_all(pool)
    .await
    .map_err(db)?;
    rows.into_iter().map(TurnRow::into_record).collect()
}

/// The reminder of one turn, taken if it is still the one read as due (`$3`): it is cleared and
/// the row returned with its seat's webhook URL. `$1` the match, `$2` the seat.
const TAKE_REMINDER: &str = "WITH t AS (
        UPDATE turns SET remind_at = NULL
        WHERE match_id = $1 AND seat = $2 AND remind_at = $3
        RETURNING match_id, seat, version, due_at
    )
    SELECT t.match_id::text AS match_id, t.seat, t.version, t.due_at, $3 AS remind_at, w.url
    FROM t LEFT JOIN webhooks w ON w.match_id = $1 AND w.seat = $2";

pub(crate) async fn remind(
    pool: &PgPool,
    now: DateTime<Utc>,
    limit: u32,
    body: &(dyn Fn(&Reminder) -> String + Sync),
) -> Result<u32, StoreError> {
    let mut queued = 0;
    let mut taken = 0;
    // As in [`claim`]: reminders another replica took are cleared, so the next read leaves
    // them out.
    for _ in 0..CLAIM_ROUNDS {
        let want = limit.saturating_sub(taken);
        if want == 0 {
            break;
        }
        // Most rounds find nothing due: one indexed look, no transaction.
        let due: Vec<(MatchId, i16, Time)> = sqlx::query_as(
            "SELECT match_id, seat, remind_at FROM turns
            WHERE remind_at IS NOT NULL AND remind_at <= $1
            ORDER BY remind_at LIMIT $2",
        )
        .bind(Time::from(now))
        .bind(i64::from(want))
        .fetch_all(pool)
        .await
        .map_err(db)?;
        let read = due.len();
        let mut took = 0;
        for (id, seat, at) in due {
            if let Some(n) = remind_one(pool, id, seat, at, now, body).await? {
                took += 1;
                queued += n;
            }
        }
        taken += took;
        if read < want as usize || took as usize == read {
            break;
        }
    }
    Ok(u32::try_from(queued).unwrap_or(u32::MAX))
}

/// Takes the reminder of turn (`id`, `seat`) if it is still the one due at `at`, in a
/// transaction about that match alone: it is cleared exactly when its outbox row (if any) is
/// queued, and of replicas taking it at once one does. `None` if another took it; else the
/// notifications queued (none for a seat without a webhook or a deadline passed).
async fn remind_one(
    pool: &PgPool,
    id: MatchId,
    seat: i16,
    at: Time,
    now: DateTime<Utc>,
    body: &(dyn Fn(&Reminder) -> String + Sync),
) -> Result<Option<usize>, StoreError> {
    let mut tx = begin(pool, "BEGIN").await?;
    let taken: Vec<ReminderRow> = sqlx::query_as(TAKE_REMINDER)
        .bind(id)
        .bind(seat)
        .bind(at)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
    if taken.is_empty() {
        return Ok(None);
    }
    let c = reminders(taken, now, body)?;
    let queued = c.body.len();
    if queued > 0 {
        sqlx::query(
            "INSERT INTO webhook_outbox (match_id, seq, seat, kind, url, body,
                next_attempt_at, created_at)
            SELECT $1, r.seq, r.seat, 'turn_reminder', r.url, r.body, r.at, r.at
            FROM UNNEST($2::text[], $3::bigint[], $4::smallint[], $5::text[], $6::text[],
                $7::timestamptz[]) AS r(match_id, seq, seat, url, body, at)
            ON CONFLICT DO NOTHING",
        )
        .bind(id)
        .params(c)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    }
    tx.commit().await.map_err(db)?;
    Ok(Some(queued))
}
