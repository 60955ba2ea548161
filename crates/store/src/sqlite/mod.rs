//! The SQLite backend: the embedded default, one file, WAL mode.
//!
//! SQLite has a single writer, so every write is a `BEGIN IMMEDIATE` transaction: it takes the
//! write lock first, then reads what it must check, and writes. An append reads the head from
//! the match row (which it updates with every append: the row is locked anyway), checks it and
//! writes the events, the match row's changes, the pending turns and the notifications. Claims
//! of turns and deliveries serialise the same way. Everything happens in-process (there is no
//! network round trip to hold a lock across), and waiting writers queue on the busy timeout
//! instead of failing.
//!
//! The files mirror [`crate::postgres`]'s: `matches.rs`, `events.rs`, `turns.rs`, `outbox.rs`.

mod events;
mod matches;
mod outbox;
mod turns;

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};

use crate::backend::{Answer, Backend};
use crate::{
    Appended, Attempt, Delivery, DeliveryKey, DeliveryRecord, Loaded, MatchFilter, MatchId,
    MatchRecord, MatchUpdate, NewEvent, NewMatch, PlayerFilter, Reminder, Snapshot, StoreError,
    StoreOptions, StoredEvent, TurnRecord, Webhook,
};

/// How long a writer waits for the write lock before giving up with `Unavailable`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// A SQLite store: its pool.
#[derive(Debug, Clone)]
pub(crate) struct Sqlite {
    pool: SqlitePool,
}

/// Maps a driver error: a database still locked after the busy timeout is overloaded, not
/// broken.
fn db(err: sqlx::Error) -> StoreError {
    match &err {
        // SQLITE_BUSY / SQLITE_LOCKED after the busy timeout: the database is overloaded.
        sqlx::Error::Database(e) if matches!(e.code().as_deref(), Some("5" | "6" | "517")) => {
            StoreError::Unavailable(e.to_string())
        }
        _ => StoreError::from_sqlx(err),
    }
}

pub(crate) async fn connect(url: &str, options: &StoreOptions) -> Result<Sqlite, StoreError> {
    let connect = SqliteConnectOptions::from_str(url)
        .map_err(|e| StoreError::Internal(format!("bad sqlite url: {e}")))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .foreign_keys(true)
        .busy_timeout(BUSY_TIMEOUT);
    let pool = SqlitePoolOptions::new()
        .max_connections(options.max_connections.max(1))
        .connect_with(connect)
        .await
        .map_err(db)?;
    let mut migrator = sqlx::migrate!("../../migrations/sqlite");
    migrator.set_ignore_missing(options.accept_newer_schema);
    migrator.run(&pool).await.map_err(|e| db(e.into()))?;
    Ok(Sqlite { pool })
}

impl Backend for Sqlite {
    const NAME: &'static str = "sqlite";

    async fn ping(&self) -> Answer<()> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(db)
    }

    async fn create_match(&self, m: &NewMatch, events: &[StoredEvent]) -> Answer<()> {
        matches::create(&self.pool, m, events).await
    }

    async fn open_by_creator(&self, creator: &str, limit: u32) -> Answer<u32> {
        matches::open_by_creator(&self.pool, creator, limit).await
    }

    async fn creator(&self, id: MatchId) -> Answer<Option<String>> {
        matches::creator(&self.pool, id).await
    }

    async fn open_idle_since(&self, before: DateTime<Utc>, limit: u32) -> Answer<Vec<MatchId>> {
        matches::open_idle_since(&self.pool, before, limit).await
    }

    async fn get_match(&self, id: MatchId) -> Answer<MatchRecord> {
        matches::get(&self.pool, id).await
    }

    async fn seed(&self, id: MatchId) -> Answer<[u8; 32]> {
        matches::seed(&self.pool, id).await
    }

    async fn list_matches(&self, filter: &MatchFilter) -> Answer<Vec<MatchRecord>> {
        matches::list(&self.pool, filter).await
    }

    async fn player_matches(&self, filter: &PlayerFilter) -> Answer<Vec<MatchRecord>> {
        matches::of_player(&self.pool, filter).await
    }

    async fn server_key(&self, name: &str, candidate: [u8; 32]) -> Answer<Vec<u8>> {
        sqlx::query(
            "INSERT INTO server_keys (name, key) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(candidate.as_slice())
        .execute(&self.pool)
        .await
        .map_err(db)?;
        sqlx::query_scalar("SELECT key FROM server_keys WHERE name = ?1")
            .bind(name)
            .fetch_one(&self.pool)
            .await
            .map_err(db)
    }

    async fn append(
        &self,
        id: MatchId,
        expected: u64,
        events: Vec<NewEvent>,
        update: &MatchUpdate,
    ) -> Answer<Appended> {
        events::append(&self.pool, id, expected, events, update).await
    }

    async fn read_events(&self, id: MatchId, after: u64, limit: u32) -> Answer<Vec<StoredEvent>> {
        events::read(&self.pool, id, after, limit).await
    }

    async fn load(&self, id: MatchId, rules_version: u32) -> Answer<Loaded> {
        events::load(&self.pool, id, rules_version).await
    }

    async fn put_snapshot(&self, id: MatchId, snapshot: &Snapshot) -> Answer<()> {
        events::put_snapshot(&self.pool, id, snapshot).await
    }

    async fn claim_turns(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> Answer<Vec<TurnRecord>> {
        turns::claim(&self.pool, now, lease_until, limit).await
    }

    async fn drop_turn(&self, id: MatchId, seat: u8, version: u64) -> Answer<bool> {
        turns::drop(&self.pool, id, seat, version).await
    }

    async fn queue_reminders(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        body: &(dyn Fn(&Reminder) -> String + Sync),
    ) -> Answer<u32> {
        turns::remind(&self.pool, now, limit, body).await
    }

    async fn turns(&self, id: MatchId) -> Answer<Vec<TurnRecord>> {
        turns::list(&self.pool, id).await
    }

    async fn set_webhook(
        &self,
        id: MatchId,
        seat: u8,
        url: &str,
        secret: [u8; 32],
        now: DateTime<Utc>,
    ) -> Answer<()> {
        outbox::set_webhook(&self.pool, id, seat, url, secret, now).await
    }

    async fn remove_webhook(&self, id: MatchId, seat: u8) -> Answer<bool> {
        outbox::remove_webhook(&self.pool, id, seat).await
    }

    async fn webhook(&self, id: MatchId, seat: u8) -> Answer<Option<Webhook>> {
        outbox::webhook(&self.pool, id, seat).await
    }

    async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> Answer<Vec<Delivery>> {
        outbox::claim(&self.pool, now, lease_until, limit).await
    }

    async fn defer_deliveries(
        &self,
        keys: &[DeliveryKey],
        lease_until: DateTime<Utc>,
        due_at: DateTime<Utc>,
    ) -> Answer<u64> {
        outbox::defer(&self.pool, keys, lease_until, due_at).await
    }

    async fn record_delivery(
        &self,
        key: DeliveryKey,
        attempt: &Attempt,
        now: DateTime<Utc>,
    ) -> Answer<()> {
        outbox::record(&self.pool, key, attempt, now).await
    }

    async fn deliveries(
        &self,
        id: MatchId,
        seat: Option<u8>,
        limit: u32,
    ) -> Answer<Vec<DeliveryRecord>> {
        outbox::list(&self.pool, id, seat, limit).await
    }
}
