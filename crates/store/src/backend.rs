//! What a backend does: the one list of operations that [`crate::postgres`] and
//! [`crate::sqlite`] both implement, each in a folder of the same shape (`matches.rs`,
//! `events.rs`, `turns.rs`, `outbox.rs`, with `mod.rs` implementing this trait by calling them).
//!
//! [`crate::Store`] checks what it is given once, for both, and then hands the call to its
//! backend through `with_backend!` (in `lib.rs`), the single place a call chooses one. A backend gets
//! values already checked (text, ranges, seats of a new match) and answers the guarantees the
//! crate docs state; how it keeps them is its own.

use std::future::Future;

use chrono::{DateTime, Utc};

use crate::{
    Appended, Attempt, Delivery, DeliveryKey, DeliveryRecord, GroupCommit, Listener, Loaded,
    MatchFilter, MatchId, MatchRecord, MatchUpdate, NewEvent, NewMatch, PackSweep, PlayerFilter,
    Reminder, Snapshot, StoreError, StoreOptions, StoredEvent, TurnRecord, Webhook,
};

/// What a backend operation answers.
pub(crate) type Answer<T> = Result<T, StoreError>;

/// A transaction on a connection of `pool`, begun by `statement`, whatever becomes of the
/// caller. sqlx 0.8 cannot be trusted with a `BEGIN` whose caller is dropped (a request
/// cancelled, a deadline) while it waits for the answer: PostgreSQL arms the transaction's
/// rollback only once `BEGIN` is answered, and SQLite's worker may hand its answer to a caller
/// already gone. The pool then gets back a connection inside a transaction, and the next
/// caller's statements run in it: on PostgreSQL its writes are never committed, on SQLite
/// every other writer waits on the lock it holds. So the `BEGIN` runs in a task of its own,
/// which a dropped caller does not cancel; the transaction it ends with, then dropped, rolls
/// back.
pub(crate) async fn begin<DB: sqlx::Database>(
    pool: &sqlx::Pool<DB>,
    statement: &'static str,
) -> Answer<sqlx::Transaction<'static, DB>> {
    let pool = pool.clone();
    tokio::spawn(async move { pool.begin_with(statement).await })
        .await
        .map_err(|e| StoreError::Internal(format!("beginning a transaction: {e}")))?
        .map_err(StoreError::from_sqlx)
}

/// The operations of a backend; see the [`crate::Store`] method of the same name for each.
pub(crate) trait Backend {
    /// `postgres` or `sqlite`.
    const NAME: &'static str;

    /// One round trip.
    fn ping(&self) -> impl Future<Output = Answer<()>> + Send;

    // matches.rs

    /// Writes the match row, its seats, `events` (already chained) and its first pending turns.
    fn create_match(
        &self,
        m: &NewMatch,
        events: &[StoredEvent],
    ) -> impl Future<Output = Answer<()>> + Send;
    fn get_match(&self, id: MatchId) -> impl Future<Output = Answer<MatchRecord>> + Send;
    fn open_by_creator(
        &self,
        creator: &str,
        limit: u32,
    ) -> impl Future<Output = Answer<u32>> + Send;
    fn creator(&self, id: MatchId) -> impl Future<Output = Answer<Option<String>>> + Send;
    fn open_idle_since(
        &self,
        before: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Answer<Vec<MatchId>>> + Send;
    fn seed(&self, id: MatchId) -> impl Future<Output = Answer<[u8; 32]>> + Send;
    fn list_matches(
        &self,
        filter: &MatchFilter,
    ) -> impl Future<Output = Answer<Vec<MatchRecord>>> + Send;
    fn player_matches(
        &self,
        filter: &PlayerFilter,
    ) -> impl Future<Output = Answer<Vec<MatchRecord>>> + Send;
    /// The stored key called `name`, after storing `candidate` if there was none.
    fn server_key(
        &self,
        name: &str,
        candidate: [u8; 32],
    ) -> impl Future<Output = Answer<Vec<u8>>> + Send;

    // events.rs

    fn append(
        &self,
        id: MatchId,
        expected: u64,
        events: Vec<NewEvent>,
        update: &MatchUpdate,
    ) -> impl Future<Output = Answer<Appended>> + Send;
    fn read_events(
        &self,
        id: MatchId,
        after: u64,
        limit: u32,
    ) -> impl Future<Output = Answer<Vec<StoredEvent>>> + Send;
    fn load(&self, id: MatchId, rules_version: u32) -> impl Future<Output = Answer<Loaded>> + Send;
    fn put_snapshot(
        &self,
        id: MatchId,
        snapshot: &Snapshot,
    ) -> impl Future<Output = Answer<()>> + Send;

    // turns.rs

    fn claim_turns(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Answer<Vec<TurnRecord>>> + Send;
    fn drop_turn(
        &self,
        id: MatchId,
        seat: u8,
        version: u64,
    ) -> impl Future<Output = Answer<bool>> + Send;
    fn queue_reminders(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        body: &(dyn Fn(&Reminder) -> String + Sync),
    ) -> impl Future<Output = Answer<u32>> + Send;
    fn turns(&self, id: MatchId) -> impl Future<Output = Answer<Vec<TurnRecord>>> + Send;

    // outbox.rs

    fn set_webhook(
        &self,
        id: MatchId,
        seat: u8,
        url: &str,
        secret: [u8; 32],
        now: DateTime<Utc>,
    ) -> impl Future<Output = Answer<()>> + Send;
    fn remove_webhook(&self, id: MatchId, seat: u8) -> impl Future<Output = Answer<bool>> + Send;
    fn webhook(
        &self,
        id: MatchId,
        seat: u8,
    ) -> impl Future<Output = Answer<Option<Webhook>>> + Send;
    fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Answer<Vec<Delivery>>> + Send;
    fn defer_deliveries(
        &self,
        keys: &[DeliveryKey],
        lease_until: DateTime<Utc>,
        due_at: DateTime<Utc>,
    ) -> impl Future<Output = Answer<u64>> + Send;
    fn record_delivery(
        &self,
        key: DeliveryKey,
        attempt: &Attempt,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Answer<()>> + Send;
    fn deliveries(
        &self,
        id: MatchId,
        seat: Option<u8>,
        limit: u32,
    ) -> impl Future<Output = Answer<Vec<DeliveryRecord>>> + Send;

    // What only some backends have.

    /// Moves the logs of up to `limit` matches that ended before `ended_before` into one
    /// archived value each; the number moved. A backend that keeps every event as a row
    /// archives nothing.
    fn archive_finished(
        &self,
        ended_before: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Answer<u32>> + Send {
        let _ = (ended_before, limit);
        async { Ok(0) }
    }

    /// Packs the older event rows of the live matches among up to `limit` after `after`, in id
    /// order, into blocks. A backend that keeps every event as a row packs nothing and looks
    /// at no match.
    fn pack_live(
        &self,
        after: Option<MatchId>,
        limit: u32,
    ) -> impl Future<Output = Answer<PackSweep>> + Send {
        let _ = (after, limit);
        async { Ok(PackSweep::default()) }
    }

    /// The group commit's counts, where appends are written in groups.
    fn group_commit(&self) -> Option<GroupCommit> {
        None
    }

    /// A listener for every process's appends, where the database announces them.
    fn listener(&self, options: &StoreOptions) -> Option<Listener> {
        let _ = options;
        None
    }
}
