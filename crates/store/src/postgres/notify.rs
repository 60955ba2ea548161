//! Wake-ups across processes on PostgreSQL: once an append has committed, the store sends
//! `'<match_id>:<version>'` on [`NOTIFY_CHANNEL`]; a [`Listener`] receives what every process
//! sends on the same database.
//!
//! The notification is a separate statement after the commit, not part of the append: NOTIFY
//! inside a writing transaction takes a database-wide lock held through the commit's WAL flush,
//! which serialises every concurrent append (measured with pgbench on one PostgreSQL 15 with
//! fsync on: eight writers fell from about 1,800 to about 320 single-row inserts per second).
//! Sent afterwards, from a background task that gathers what is queued for [`LINGER`], keeps
//! the newest version of each match, and packs up to [`PER_NOTIFICATION`] of them into each
//! notification (`'<match_id>:<version>,<match_id>:<version>,…'`), it costs acks nothing and
//! writers little: one statement per batch however many appends it announces.
//!
//! Nothing is sent while no other store listens. Each [`Listener`] names its connection after
//! its store ([`LISTENER_PREFIX`] and the store's own id), and before a batch the sender checks,
//! at most every [`AUDIENCE_CHECK`], whether `pg_stat_activity` shows another store's listener
//! on the database: a lone server (the commonest deployment) then spends no statement on
//! announcements nobody hears. A listener that connects is told [`Notice::Resync`] and re-checks
//! from the store what was appended before; what the sender left unsent after a check that
//! found nobody is kept, and sent as soon as a check finds someone, so the appends between a
//! listener connecting and the sender's next check are not lost to it.
//!
//! Notifications are best effort: the queue drops them when full, and a listener misses those
//! sent while its connection is down. [`Notice::Resync`] tells the receiver that it may have
//! missed some; receivers must also re-check on a timer of their own.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::{MatchId, StoreError};

/// The PostgreSQL channel appends are announced on; the payload is one or more
/// `<match_id>:<version>`, separated by commas.
pub const NOTIFY_CHANNEL: &str = "missive_events";

/// Announcements waiting to be sent; beyond this they are dropped (receivers re-check anyway).
const QUEUE: usize = 4096;
/// Announcements gathered into one statement at most.
const BATCH: usize = 1024;
/// How long the sender gathers announcements after the first of a batch: the delay a watcher
/// on another replica may add, against one statement per append when appends are sparse.
const LINGER: Duration = Duration::from_millis(10);
/// Announcements per notification: 128 of at most 57 bytes stay under PostgreSQL's
/// 8,000-byte payload limit.
const PER_NOTIFICATION: usize = 128;

/// The application name of every listener's connection starts with this; the rest is its
/// store's id.
pub(crate) const LISTENER_PREFIX: &str = "missive listener ";
/// How long the answer to "does another store listen?" is trusted.
const AUDIENCE_CHECK: Duration = Duration::from_secs(1);

/// The application name of the listeners of one store: [`LISTENER_PREFIX`] and a new id, 49
/// bytes (PostgreSQL keeps 63).
pub(crate) fn listener_name() -> String {
    format!("{LISTENER_PREFIX}{}", uuid::Uuid::new_v4().simple())
}

/// The sending side: a queue drained by one background task.
#[derive(Debug, Clone)]
pub(crate) struct Notifier(mpsc::Sender<(MatchId, u64)>);

impl Notifier {
    /// Starts the sending task, for the store whose listeners are named `own` (they do not
    /// count as an audience); it ends once every clone of the notifier is dropped.
    pub(crate) fn spawn(pool: PgPool, own: String) -> Notifier {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(send_all(pool, Audience::new(own), rx));
        Notifier(tx)
    }

    /// Queues the notification of an append that has committed; never waits.
    pub(crate) fn appended(&self, id: MatchId, version: u64) {
        if self.0.try_send((id, version)).is_err() {
            tracing::debug!(match_id = %id, version, "append notification dropped: queue full");
        }
    }
}

async fn send_all(pool: PgPool, mut audience: Audience, mut rx: mpsc::Receiver<(MatchId, u64)>) {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let received = match audience.recheck_at() {
            // Appends are kept unsent: ask again in time even if no other append comes.
            Some(at) => tokio::select! {
                received = rx.recv_many(&mut batch, BATCH) => received,
                () = tokio::time::sleep_until(at) => {
                    if audience.heard(&pool).await {
                        send(&pool, &audience.take_kept()).await;
                    }
                    continue;
                }
            },
            None => rx.recv_many(&mut batch, BATCH).await,
        };
        if received == 0 {
            return;
        }
        tokio::time::sleep(LINGER).await;
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(appended) => batch.push(appended),
                Err(_) => break,
            }
        }
        if audience.heard(&pool).await {
            batch.extend(audience.take_kept());
            send(&pool, &batch).await;
        } else {
            audience.keep(&batch);
        }
        batch.clear();
    }
}

async fn send(pool: &PgPool, batch: &[(MatchId, u64)]) {
    if batch.is_empty() {
        return;
    }
    let sent = sqlx::query("SELECT pg_notify($1, p) FROM UNNEST($2::text[]) AS p")
        .bind(NOTIFY_CHANNEL)
        .bind(payloads(batch))
        .execute(pool)
        .await;
    if let Err(e) = sent {
        tracing::warn!(error = %e, dropped = batch.len(), "append notifications not sent");
    }
}

/// Whether another store's listener is connected to the database, as last checked, and the
/// appends left unsent since the last check that found nobody.
#[derive(Debug)]
struct Audience {
    /// This store's listeners' name.
    own: String,
    /// When the last check was made, and what it found.
    checked: Option<(Instant, bool)>,
    kept: HashMap<MatchId, u64>,
}

impl Audience {
    fn new(own: String) -> Audience {
        Audience {
            own,
            checked: None,
            kept: HashMap::new(),
        }
    }

    /// Whether anyone else listens: the last answer while it is recent, or a new check. A
    /// check that finds nobody forgets what was kept: a listener that connects after it
    /// re-checks those appends from the store. A failed check counts as someone.
    async fn heard(&mut self, pool: &PgPool) -> bool {
        if let Some((at, heard)) = self.checked
            && at.elapsed() < AUDIENCE_CHECK
        {
            return heard;
        }
        let checked = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity
                WHERE datname = current_database()
                    AND starts_with(application_name, $1) AND application_name <> $2)",
        )
        .bind(LISTENER_PREFIX)
        .bind(&self.own)
        .fetch_one(pool)
        .await;
        let heard = checked.unwrap_or_else(|e| {
            tracing::debug!(error = %e, "could not check for listeners; announcing");
            true
        });
        if !heard {
            self.kept.clear();
        }
        self.checked = Some((Instant::now(), heard));
        heard
    }

    fn keep(&mut self, batch: &[(MatchId, u64)]) {
        keep_newest(&mut self.kept, batch);
    }

    fn take_kept(&mut self) -> Vec<(MatchId, u64)> {
        self.kept.drain().collect()
    }

    /// When to check again for the sake of kept appends, if any are kept.
    fn recheck_at(&self) -> Option<Instant> {
        match self.checked {
            Some((at, _)) if !self.kept.is_empty() => Some(at + AUDIENCE_CHECK),
            _ => None,
        }
    }
}

/// Adds `batch` to `newest`, keeping the highest version of each match.
fn keep_newest(newest: &mut HashMap<MatchId, u64>, batch: &[(MatchId, u64)]) {
    for &(id, version) in batch {
        let v = newest.entry(id).or_insert(version);
        *v = (*v).max(version);
    }
}

/// The newest version of each match in `batch`, packed [`PER_NOTIFICATION`] to a payload.
fn payloads(batch: &[(MatchId, u64)]) -> Vec<String> {
    let mut newest = HashMap::with_capacity(batch.len());
    keep_newest(&mut newest, batch);
    let announced: Vec<String> = newest
        .into_iter()
        .map(|(id, version)| format!("{id}:{version}"))
        .collect();
    announced
        .chunks(PER_NOTIFICATION)
        .map(|chunk| chunk.join(","))
        .collect()
}

/// What a [`Listener`] heard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// A match's log reached `version` (an append by any process, this one included).
    Appended {
        /// The match appended to.
        match_id: MatchId,
        /// Its version once the append committed.
        version: u64,
    },
    /// The listener has just (re)connected: notifications sent before may have been missed,
    /// so every match of interest should be checked against the store.
    Resync,
}

impl Notice {
    /// One announcement, `<match_id>:<version>`.
    fn parse(announced: &str) -> Option<Notice> {
        let (id, version) = announced.split_once(':')?;
        Some(Notice::Appended {
            match_id: id.parse().ok()?,
            version: version.parse().ok()?,
        })
    }
}

/// Receives the appends announced on [`NOTIFY_CHANNEL`], on a connection of its own that it
/// re-establishes whenever it is lost. Made by [`crate::Store::listener`].
pub struct Listener {
    /// Connections for the listener only, so it never holds one of the store's pool.
    pool: PgPool,
    inner: Option<PgListener>,
    /// Announcements of a notification received but not yet returned.
    heard: VecDeque<Notice>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("connected", &self.inner.is_some())
            .finish()
    }
}

impl Listener {
    /// A listener whose connections are named `name` ([`listener_name`]), so that other
    /// stores' senders see it.
    pub(crate) fn new(
        options: &PgConnectOptions,
        acquire_timeout: Duration,
        name: &str,
    ) -> Listener {
        // Two connections: a lost one may still be closing while its replacement connects.
        let pool = PgPoolOptions::new()
            .max_connections(2)
            .min_connections(0)
            .acquire_timeout(acquire_timeout)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_lazy_with(options.clone().application_name(name));
        Listener {
            pool,
            inner: None,
            heard: VecDeque::new(),
        }
    }

    /// The next notice. Connects first if needed, and then returns [`Notice::Resync`]. An
    /// error means the database cannot be reached now: wait a little and call again.
    pub async fn next(&mut self) -> Result<Notice, StoreError> {
        loop {
            if let Some(notice) = self.heard.pop_front() {
                return Ok(notice);
            }
            let Some(listener) = self.inner.as_mut() else {
                let mut listener = PgListener::connect_with(&self.pool)
                    .await
                    .map_err(StoreError::from_sqlx)?;
                listener
                    .listen(NOTIFY_CHANNEL)
                    .await
                    .map_err(StoreError::from_sqlx)?;
                self.inner = Some(listener);
                return Ok(Notice::Resync);
            };
            match listener.try_recv().await {
                Ok(Some(notification)) => {
                    for announced in notification.payload().split(',') {
                        match Notice::parse(announced) {
                            Some(notice) => self.heard.push_back(notice),
                            None => tracing::debug!(announced, "unknown announcement"),
                        }
                    }
                }
                // The connection was lost and has been re-established, listening again.
                Ok(None) => return Ok(Notice::Resync),
                Err(e) => {
                    self.inner = None;
                    self.heard.clear();
                    return Err(StoreError::from_sqlx(e));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_parse_to_a_match_and_version() {
        let id = uuid::Uuid::new_v4();
        assert_eq!(
            Notice::parse(&format!("{id}:42")),
            Some(Notice::Appended {
                match_id: id,
                version: 42
            })
        );
        assert_eq!(Notice::parse("not-a-uuid:42"), None);
        assert_eq!(Notice::parse(&format!("{id}:-1")), None);
        assert_eq!(Notice::parse(&id.to_string()), None);
    }

    #[test]
    fn a_batch_keeps_the_newest_version_of_each_match_within_the_payload_limit() {
        let ids: Vec<MatchId> = (0..300).map(|_| uuid::Uuid::new_v4()).collect();
        let mut batch: Vec<(MatchId, u64)> = ids.iter().map(|&id| (id, 7)).collect();
        batch.push((ids[0], 9));
        batch.push((ids[1], 3));
        let payloads = payloads(&batch);
        assert_eq!(payloads.len(), 3, "300 matches, 128 per notification");
        let mut heard = HashMap::new();
        for payload in &payloads {
            assert!(payload.len() < 8000, "{} bytes", payload.len());
            for announced in payload.split(',') {
                let Some(Notice::Appended { match_id, version }) = Notice::parse(announced) else {
                    panic!("unparsable {announced}");
                };
                assert!(heard.insert(match_id, version).is_none(), "one per match");
            }
        }
        assert_eq!(heard.len(), 300);
        assert_eq!(heard[&ids[0]], 9);
        assert_eq!(heard[&ids[1]], 7);
        assert_eq!(heard[&ids[2]], 7);
    }
}
