//! The group commit on PostgreSQL (not on Citus: see [`Batcher`]): the single-event appends that change nothing but the log (and
//! the outbox) are written together, whatever their matches: one statement, so one transaction
//! and one WAL flush, for every append waiting at that moment.
//!
//! A row is only ever the event right after a head this process knows to be committed (it
//! wrote or read it), and committed events never change or go away, so the row needs no head
//! check of its own: if its seq is free, its predecessor is the one it chains from. A batch is
//! first written as a plain INSERT; if a row's seq or request id was taken by another writer
//! (a unique violation: nothing went in), it is written again with `ON CONFLICT DO NOTHING`,
//! which skips the rows that collide, and `RETURNING` names the rows that went in, so one
//! append's loss never fails its neighbours. (`ON CONFLICT`'s speculative insertion costs about
//! half as much again as the plain insert, so it is only paid when there is a conflict.) A
//! caller whose row is missing does what a lone append does when its statement wrote nothing,
//! and reads the head. A caller is answered only once the statement has returned, so only after
//! its row is committed.
//!
//! A batch leaves at once when a connection slot is free, so a lone writer waits for nobody;
//! while [`IN_FLIGHT`] batches are being written the queue grows, and the next batch takes all
//! of it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Postgres};
use tokio::sync::{mpsc, oneshot};

use super::columns::EventColumns;
use super::held::{Connections, Lease};
use crate::rows::{Binds, EventValues, Params, to_i64};
use crate::{StoreError, StoredEvent};

/// Appends in one statement at most.
const MAX_BATCH: usize = 128;
/// Statements being written at once.
pub(super) const IN_FLIGHT: usize = 2;
/// Appends waiting for a statement; callers wait for room beyond this.
const QUEUE: usize = 1024;

/// Several rows: one array per column.
const INSERT_ROWS: &str =
    "INSERT INTO events (match_id, seq, kind, actor, request_id, request_last,
        payload, at, hash)
    SELECT e.match_id, e.seq, e.kind, e.actor, e.request_id, e.request_last, e.payload::json,
        e.at, e.hash
    FROM UNNEST($1::uuid[], $2::bigint[], $3::text[], $4::smallint[], $5::text[], $6::bigint[],
        $7::text[], $8::timestamptz[], $9::bytea[])
        AS e(match_id, seq, kind, actor, request_id, request_last, payload, at, hash)";

/// The "your turn" notifications of the rows [`INSERT_ROWS`] inserted, for seats with a webhook.
const ENQUEUE_ROWS: &str = "o AS (
        INSERT INTO webhook_outbox (match_id, seq, seat, url, body, next_attempt_at, created_at)
        SELECT w.match_id, n.seq, w.seat, w.url, n.body, $14, $14
        FROM UNNEST($10::uuid[], $11::bigint[], $12::smallint[], $13::text[])
            AS n(match_id, seq, seat, body)
        JOIN e ON e.match_id = n.match_id AND e.seq = n.seq
        JOIN webhooks w ON w.match_id = n.match_id AND w.seat = n.seat
        RETURNING match_id, seq
    )";

/// One row, bound as scalars: the commonest batch when writers are few, and cheaper than
/// unnesting arrays of one. Without notifications it is written as it stands (cheaper than
/// `ON CONFLICT`'s speculative insertion: a unique violation means another writer took the seq
/// or the request id first); with them, with `ON CONFLICT DO NOTHING` like [`INSERT_ROWS`].
const PLAIN_ONE: &str = "INSERT INTO events (match_id, seq, kind, actor, request_id, request_last,
        payload, at, hash)
    VALUES ($1::uuid, $2, $3, $4, $5, $6, $7::text::json, $8, $9)";

/// The notifications of [`PLAIN_ONE`]'s row, for seats with a webhook.
const ENQUEUE_ONE: &str = "o AS (
        INSERT INTO webhook_outbox (match_id, seq, seat, url, body, next_attempt_at, created_at)
        SELECT w.match_id, e.seq, w.seat, w.url, n.body, $12, $12
        FROM e, UNNEST($10::smallint[], $11::text[]) AS n(seat, body)
        JOIN webhooks w ON w.match_id = $1::uuid AND w.seat = n.seat
        RETURNING match_id, seq
    )";

/// The statements that return `(match_id, seq, queued)` for each row they inserted: several
/// rows without notifications, several with, and one row with (one row without is
/// [`PLAIN_ONE`]); `[false]` as they stand, `[true]` skipping the rows that collide.
static RETURNING: LazyLock<[[String; 3]; 2]> = LazyLock::new(|| {
    let with = |insert: &str, enqueue: &str| {
        format!(
            "WITH e AS ({insert} RETURNING match_id, seq), {enqueue}
            SELECT e.match_id::text, e.seq,
                EXISTS (SELECT 1 FROM o WHERE o.match_id = e.match_id AND o.seq = e.seq)
            FROM e"
        )
    };
    [false, true].map(|skip| {
        let rows = if skip {
            format!("{INSERT_ROWS} ON CONFLICT DO NOTHING")
        } else {
            INSERT_ROWS.to_owned()
        };
        let one = if skip {
            format!("{PLAIN_ONE} ON CONFLICT DO NOTHING")
        } else {
            PLAIN_ONE.to_owned()
        };
        [
            format!("{rows} RETURNING match_id::text, seq, false"),
            with(&rows, ENQUEUE_ROWS),
            with(&one, ENQUEUE_ONE),
        ]
    })
});

fn is_unique_violation<T>(result: &Result<T, sqlx::Error>) -> bool {
    matches!(result, Err(sqlx::Error::Database(e)) if e.is_unique_violation())
}

/// One append's row, and the "your turn" notifications that go with it.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) event: StoredEvent,
    /// The seqs' end of the request the event starts, if it carries a request id.
    pub(crate) request_last: Option<i64>,
    /// `(seat, body)` of each notification, written if the seat has a webhook.
    pub(crate) notify: Vec<(i16, String)>,
}

/// What became of a row: `Some(queued)` when it was inserted (`queued`: a webhook
/// notification was written with it), `None` when another writer got there first.
type Outcome = Result<Option<bool>, StoreError>;

struct Job {
    row: Row,
    reply: oneshot::Sender<Result<(StoredEvent, Option<bool>), StoreError>>,
}

impl Job {
    /// Answers the caller, handing its event back with the outcome.
    fn answer(self, outcome: Outcome) {
        let _ = self
            .reply
            .send(outcome.map(|queued| (self.row.event, queued)));
    }
}

/// The queue of appends waiting for the next statement; cloned with the store.
#[derive(Debug, Clone)]
pub(crate) struct Batcher {
    queue: mpsc::Sender<Job>,
    connections: Arc<Connections>,
    counts: Arc<Counts>,
    /// Whether appends of several matches share a statement. Not on Citus: rows of several
    /// matches from arrays are not a router query there (the coordinator materialises them,
    /// ships them to the workers and commits on each in two phases, about 100 ms a statement),
    /// so each append is a statement of its own that names its match, sent whole to its
    /// worker.
    group: bool,
}

/// What the group commit has written so far.
#[derive(Debug, Default)]
struct Counts {
    statements: AtomicU64,
    rows: AtomicU64,
}

impl Counts {
    fn wrote(&self, rows: usize) {
        crate::metrics::group_commit(rows);
        self.statements.fetch_add(1, Ordering::Relaxed);
        self.rows.fetch_add(rows as u64, Ordering::Relaxed);
    }
}

/// Statements the group commit has written and the appends they carried, since the store was
/// opened; `rows / statements` is the average batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupCommit {
    /// Statements written (each one commit).
    pub statements: u64,
    /// Appends they carried.
    pub rows: u64,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job").field("row", &self.row).finish()
    }
}

impl Batcher {
    /// Starts the writing task; it ends once every clone of the batcher is dropped.
    pub(crate) fn spawn(pool: PgPool, group: bool) -> Batcher {
        let (queue, rx) = mpsc::channel(QUEUE);
        // The connections statements are written on, by the writing task or by a caller
        // directly, held between statements.
        let connections = Connections::new(pool, IN_FLIGHT);
        let counts = Arc::new(Counts::default());
        tokio::spawn(write_all(Arc::clone(&connections), rx, Arc::clone(&counts)));
        Batcher {
            queue,
            connections,
            counts,
            group,
        }
    }

    /// Whether appends of several matches share statements (not on Citus).
    pub(crate) fn groups(&self) -> bool {
        self.group
    }

    pub(crate) fn counts(&self) -> GroupCommit {
        GroupCommit {
            statements: self.counts.statements.load(Ordering::Relaxed),
            rows: self.counts.rows.load(Ordering::Relaxed),
        }
    }

    /// Writes `row` with whatever else is waiting; see [`Outcome`]. When nothing is waiting
    /// and a slot is free, the caller writes its row itself, without handing it over.
    pub(crate) async fn write(&self, row: Row) -> Result<(StoredEvent, Option<bool>), StoreError> {
        if !self.group {
            // A held connection if one is free, else one of the pool's: appends of different
            // matches go out side by side, each routed to its own worker.
            let mut lease = self.connections.any();
            let written = write_one(&mut lease, &row).await;
            lease.done(&written);
            self.counts.wrote(1);
            let queued = written.map_err(StoreError::from_sqlx)?;
            return Ok((row.event, queued));
        }
        if self.queue.capacity() == self.queue.max_capacity()
            && let Ok(permit) = Arc::clone(&self.connections.permits).try_acquire_owned()
        {
            let mut lease = self.connections.lease(permit);
            let written = write_one(&mut lease, &row).await;
            lease.done(&written);
            self.counts.wrote(1);
            let queued = written.map_err(StoreError::from_sqlx)?;
            return Ok((row.event, queued));
        }
        let (reply, outcome) = oneshot::channel();
        self.queue
            .send(Job { row, reply })
            .await
            .map_err(|_| StoreError::Unavailable("the store is shutting down".into()))?;
        outcome
            .await
            .map_err(|_| StoreError::Internal("an append's batch was lost".into()))?
    }
}

async fn write_all(
    connections: Arc<Connections>,
    mut rx: mpsc::Receiver<Job>,
    counts: Arc<Counts>,
) {
    loop {
        let Ok(permit) = Arc::clone(&connections.permits).acquire_owned().await else {
            return;
        };
        let lease = connections.lease(permit);
        let mut jobs = Vec::with_capacity(MAX_BATCH);
        if rx.recv_many(&mut jobs, MAX_BATCH).await == 0 {
            return;
        }
        counts.wrote(jobs.len());
        tokio::spawn(write_batch(lease, jobs));
    }
}

/// The statement's parameters, one array per column.
#[derive(Debug, Default, Clone)]
struct Columns {
    match_id: Vec<String>,
    events: EventColumns,
    notify: NotifyColumns,
}

/// The notifications of a batch's rows (`$10` to `$13` of [`ENQUEUE_ROWS`]).
#[derive(Debug, Default, Clone)]
struct NotifyColumns {
    match_id: Vec<String>,
    seq: Vec<i64>,
    seat: Vec<i16>,
    body: Vec<String>,
}

impl Params<Postgres> for NotifyColumns {
    fn bind_to<'q, Q: Binds<'q, Postgres>>(self, query: Q) -> Q {
        query
            .value(self.match_id)
            .value(self.seq)
            .value(self.seat)
            .value(self.body)
    }
}

impl Columns {
    fn push(&mut self, row: &Row) -> Result<(), StoreError> {
        let ev = &row.event;
        let id = ev.match_id.to_string();
        let seq = to_i64(ev.seq)?;
        self.events.push(ev, row.request_last)?;
        for (seat, body) in &row.notify {
            self.notify.match_id.push(id.clone());
            self.notify.seq.push(seq);
            self.notify.seat.push(*seat);
            self.notify.body.push(body.clone());
        }
        self.match_id.push(id);
        Ok(())
    }
}

async fn write_batch(mut lease: Lease, jobs: Vec<Job>) {
    let mut cols = Columns::default();
    let mut waiting = Vec::with_capacity(jobs.len());
    // One row per seq of a match: the rows that come back are then named by match and seq.
    // A second append for the same seq loses to the first, as it would to a concurrent
    // statement; it is told so once the statement is over, so that what it reads next is what
    // the first left (if that failed for another reason, the loser's retry finds the seq free).
    let mut seqs = HashSet::with_capacity(jobs.len());
    let mut lost = Vec::new();
    for job in jobs {
        if !seqs.insert((job.row.event.match_id, job.row.event.seq)) {
            lost.push(job);
            continue;
        }
        match cols.push(&job.row) {
            Ok(()) => waiting.push(job),
            Err(e) => {
                job.answer(Err(e));
            }
        }
    }
    if let [_] = waiting.as_slice()
        && let Some(job) = waiting.pop()
    {
        let written = write_one(&mut lease, &job.row).await;
        lease.done(&written);
        job.answer(written.map_err(StoreError::from_sqlx));
    } else if !waiting.is_empty() {
        write_rows(&mut lease, cols, waiting).await;
    }
    for job in lost {
        job.answer(Ok(None));
    }
}

/// Writes two rows or more, in one statement (two if a row collides), and answers each.
async fn write_rows(lease: &mut Lease, cols: Columns, waiting: Vec<Job>) {
    let now = truncate_now();
    let mut written = insert_rows(lease, cols.clone(), false, now).await;
    if is_unique_violation(&written) {
        written = insert_rows(lease, cols, true, now).await;
    }
    lease.done(&written);
    match written {
        Ok(rows) => {
            let inserted: HashMap<(String, i64), bool> =
                rows.into_iter().map(|(m, s, q)| ((m, s), q)).collect();
            for job in waiting {
                let ev = &job.row.event;
                let key = (ev.match_id.to_string(), to_i64(ev.seq).unwrap_or(-1));
                job.answer(Ok(inserted.get(&key).copied()));
            }
        }
        Err(e) => match StoreError::from_sqlx(e) {
            // The database is out of reach: alone, each row would fail the same way.
            e @ StoreError::Unavailable(_) => {
                for job in waiting {
                    job.answer(Err(e.clone()));
                }
            }
            // A row the database refused fails the whole statement: each row is written again
            // on its own, so that only the row at fault gets the error.
            e => {
                tracing::warn!(error = %e, rows = waiting.len(), "a batch failed; writing its rows alone");
                for job in waiting {
                    let written = write_one(lease, &job.row).await;
                    lease.done(&written);
                    job.answer(written.map_err(StoreError::from_sqlx));
                }
            }
        },
    }
}

/// `(match_id, seq, queued)` of each row the statement inserted; with `skip`, rows that
/// collide are left out, without it they fail the statement.
async fn insert_rows(
    lease: &mut Lease,
    cols: Columns,
    skip: bool,
    now: DateTime<Utc>,
) -> Result<Vec<(String, i64, bool)>, sqlx::Error> {
    let notify = !cols.notify.seat.is_empty();
    let query = sqlx::query_as(&RETURNING[usize::from(skip)][usize::from(notify)])
        .value(cols.match_id)
        .params(cols.events);
    let query = if notify {
        query.params(cols.notify).value(now)
    } else {
        query
    };
    query.fetch_all(lease.conn().await?).await
}

/// Writes one row; see [`Outcome`].
async fn write_one(lease: &mut Lease, row: &Row) -> Result<Option<bool>, sqlx::Error> {
    let notify = !row.notify.is_empty();
    let one = || EventValues::new(&row.event, row.request_last);
    let conn = lease.conn().await?;
    if !notify {
        return match sqlx::query(PLAIN_ONE).params(one()).execute(conn).await {
            Ok(_) => Ok(Some(false)),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Ok(None),
            Err(e) => Err(e),
        };
    }
    let (seats, bodies): (Vec<i16>, Vec<&str>) =
        row.notify.iter().map(|(s, b)| (*s, b.as_str())).unzip();
    let now = truncate_now();
    let mut written: Result<Option<(String, i64, bool)>, sqlx::Error> = Ok(None);
    for skip in [false, true] {
        written = sqlx::query_as(&RETURNING[usize::from(skip)][2])
            .params(one())
            .bind(&seats)
            .bind(&bodies)
            .bind(now)
            .fetch_optional(&mut *conn)
            .await;
        if !is_unique_violation(&written) {
            break;
        }
    }
    Ok(written?.map(|(_, _, queued)| queued))
}

fn truncate_now() -> DateTime<Utc> {
    crate::truncate_to_micros(Utc::now())
}
