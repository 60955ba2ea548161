//! The PostgreSQL backend.
//!
//! A match's head (version and last hash) is its last event: the `matches` row keeps only the
//! head as of creation, and is written again only by appends that change the status or seats.
//! An append is one read (the head, and whether the request id is already held) followed by one
//! statement that inserts the events only if the expected previous event (seq and hash) exists,
//! or for a match's first events the match row at version 0 ([`events`]). The events primary
//! key settles races for a seq, and a unique index over each request's first event (which
//! carries `request_last`, the seq of the request's last event) settles races for a request id.
//! Row locks live only inside that one statement, never across a round trip to the client; a
//! writer that lost the race finds the head moved and gets a conflict (or, for a retried
//! request, the original events).
//!
//! The read is skipped when this process already knows the match's head ([`HeadCache`]): the
//! server that wrote a match's last event usually writes its next one. The cached head is only
//! a guess; the statement itself checks both version and last hash, so a stale guess costs a
//! retry of the slow path, never a wrong write.
//!
//! What only this backend has: the group commit of the commonest appends ([`batch`]) and the
//! announcement of every append to every process ([`notify`]).
//!
//! Statements bind their values through column structs ([`crate::rows::Params`]): one array
//! per column for the rows of a table, or one struct for a row's scalars, each bound in one
//! place in the order of its placeholders.

mod archive;
mod batch;
mod blocks;
#[macro_use]
mod columns;
pub(crate) mod events;
mod held;
pub(crate) mod matches;
pub(crate) mod notify;
pub(crate) mod outbox;
mod routed;
pub(crate) mod turns;

pub(crate) use archive::archive_finished;
pub(crate) use blocks::pack_live;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::backend::{Answer, begin};
use crate::{Listener, MatchId, StoreError, StoreOptions};
pub use batch::GroupCommit;

use batch::Batcher;
use held::Connections;
use notify::Notifier;

/// Connections held for the reads and writes a match's start makes (its creation, the
/// creator's count, the match row a watch opens with, its first events, a load), so that each
/// does not cost the ping of a connection handed back to the pool. Beyond these a read takes
/// a connection of the pool's. Fewer in a small pool: held connections leave at least half of
/// it to everything else.
const HELD_READS: usize = 2;

/// A PostgreSQL store: the pool, the heads of the matches this process last wrote, the group
/// commit, and the sender of append notifications (when they are on).
#[derive(Debug, Clone)]
pub(crate) struct Pg {
    pool: PgPool,
    /// See [`HELD_READS`].
    reads: Arc<Connections>,
    heads: Arc<HeadCache>,
    notifier: Option<Notifier>,
    batcher: Batcher,
    /// The database is a Citus cluster: writes of several tables go as transactions of
    /// statements each routed whole to one worker ([`routed`]).
    citus: bool,
    /// What this store's listeners call their connections (see `notify.rs`).
    listener_name: String,
}

/// `(version, last_hash)` per match, as last written or read by this process, with when it was
/// cached. A head cached before a connection to the database last failed is not trusted: the
/// database may have failed over and lost its newest commits (a standby promoted before they
/// reached it), and the group commit chains from a cached head without checking it.
#[derive(Debug, Default)]
struct HeadCache(Mutex<HashMap<MatchId, Head>>);

#[derive(Debug, Clone, Copy)]
struct Head {
    version: u64,
    hash: [u8; 32],
    cached_at: std::time::Instant,
}

impl HeadCache {
    /// Bounds memory; forgetting heads only costs one extra read per match.
    const CAPACITY: usize = 100_000;

    fn get(&self, id: MatchId) -> Option<(u64, [u8; 32])> {
        let head = self.0.lock().ok()?.get(&id).copied()?;
        (!crate::liveness::suspect(head.cached_at)).then_some((head.version, head.hash))
    }

    fn put(&self, id: MatchId, version: u64, hash: [u8; 32]) {
        if let Ok(mut heads) = self.0.lock() {
            if heads.len() >= Self::CAPACITY && !heads.contains_key(&id) {
                heads.clear();
            }
            let cached_at = std::time::Instant::now();
            heads.insert(
                id,
                Head {
                    version,
                    hash,
                    cached_at,
                },
            );
        }
    }

    fn forget(&self, id: MatchId) {
        if let Ok(mut heads) = self.0.lock() {
            heads.remove(&id);
        }
    }
}

/// The smallest pool: the group commit's held connections and two more for everything else.
const MIN_CONNECTIONS: u32 = batch::IN_FLIGHT as u32 + 2;

pub(crate) async fn connect(url: &str, options: &StoreOptions) -> Result<Pg, StoreError> {
    if options.max_connections < MIN_CONNECTIONS {
        tracing::warn!(
            configured = options.max_connections,
            opened = MIN_CONNECTIONS,
            "a PostgreSQL pool needs {MIN_CONNECTIONS} connections at least"
        );
    }
    let (connect, citus) = connect_options(url).await?;
    let pool = PgPoolOptions::new()
        .max_connections(options.max_connections.max(MIN_CONNECTIONS))
        .acquire_timeout(options.acquire_timeout)
        // No ping before each use: it doubled the round trips of every query. A connection
        // that died fails its query (UNAVAILABLE) and is closed, not returned to the pool; the
        // ones idle when it failed are pinged before their next use.
        .test_before_acquire(false)
        .before_acquire(|conn, meta| Box::pin(crate::liveness::check(conn, meta)))
        .connect_with(connect.clone())
        .await
        .map_err(db)?;
    let mut migrator = sqlx::migrate!("../../migrations/postgres");
    migrator.set_ignore_missing(options.accept_newer_schema);
    migrator.run(&pool).await.map_err(|e| db(e.into()))?;
    let listener_name = notify::listener_name();
    let notifier = options
        .notify
        .then(|| Notifier::spawn(pool.clone(), listener_name.clone()));
    Ok(Pg {
        batcher: Batcher::spawn(pool.clone(), !citus),
        citus,
        reads: Connections::new(
            pool.clone(),
            HELD_READS.min(
                (pool.options().get_max_connections() as usize / 2)
                    .saturating_sub(batch::IN_FLIGHT),
            ),
        ),
        pool,
        heads: Arc::default(),
        notifier,
        listener_name,
    })
}

/// The store's connection settings: `url`'s, and on plain PostgreSQL generic plans for
/// prepared statements. Every statement here is keyed by `match_id`, so the generic plan is
/// the right one; the default re-plans statements over array parameters (the group commit's)
/// on every execution, which cost more than writing the rows.
///
/// A database with the `citus` extension keeps PostgreSQL's default (custom plans first, a
/// generic one only when it costs no more): Citus refuses forced generic plans of several of
/// the store's statements, match ids bound as `uuid` or not ("could not create distributed
/// plan": the append, the head read, the turn claim's read of due turns). Looked up once, on a
/// connection of its own, before the pool opens; answered beside the options (`true`: Citus).
async fn connect_options(url: &str) -> Result<(PgConnectOptions, bool), StoreError> {
    let options: PgConnectOptions = url
        .parse()
        .map_err(|e| StoreError::Internal(format!("bad database URL: {e}")))?;
    if is_citus(&options).await? {
        tracing::info!(
            "the database has the citus extension: statements planned per execution, \
             each append a statement of its own"
        );
        // A query over every shard (the polls, the listing, a creator's open matches) reads
        // one index entry or a few per shard: on the one connection per worker that each
        // session keeps, not on up to 16 opened for it and closed after it (a TLS handshake
        // each, between nodes): polls of 0.2–0.5 s were in the coordinator's slow log before.
        return Ok((
            options.options([("citus.max_adaptive_executor_pool_size", "1")]),
            true,
        ));
    }
    Ok((
        options.options([("plan_cache_mode", "force_generic_plan")]),
        false,
    ))
}

/// Whether the database has the `citus` extension.
async fn is_citus(options: &PgConnectOptions) -> Result<bool, StoreError> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect_with(options)
        .await
        .map_err(db)?;
    let citus: Option<i32> =
        sqlx::query_scalar("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
            .fetch_optional(&mut conn)
            .await
            .map_err(db)?;
    conn.close().await.map_err(db)?;
    Ok(citus.is_some())
}

/// A transaction whose statements are planned with their parameter values (custom plans),
/// overriding the pool's `force_generic_plan` for its length: `BEGIN` and the `SET LOCAL` go in
/// one round trip. For the reads whose best plan depends on the values (a `LIMIT` the planner
/// must know): a generic plan of the turn claim's read of due turns costs a sequential scan of
/// `turns` (docs/BENCHMARKS.md, "Scale"); the archiver's read of ended matches is planned the
/// same way.
async fn custom_plans(
    pool: &PgPool,
) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, StoreError> {
    begin(pool, "BEGIN; SET LOCAL plan_cache_mode = force_custom_plan").await
}

/// Maps a driver error; callers handle the unique violations they expect before this.
fn db(err: sqlx::Error) -> StoreError {
    StoreError::from_sqlx(err)
}

/// Whether `err` is a unique violation (SQLSTATE 23505), whichever constraint: Citus reports a
/// shard's constraint under the shard's name (`matches_pkey_102008`), so callers tell what was
/// there by reading it again, not by the constraint's name.
fn is_unique_violation(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// The backend's name, as [`crate::Store::backend_name`] gives it.
pub(crate) const NAME: &str = "postgres";

/// A backend is its pool to the operations that need nothing else of it.
impl std::ops::Deref for Pg {
    type Target = PgPool;

    fn deref(&self) -> &PgPool {
        &self.pool
    }
}

pub(crate) async fn ping(pool: &PgPool) -> Answer<()> {
    sqlx::query("SELECT 1")
        .execute(pool)
        .await
        .map(drop)
        .map_err(db)
}

pub(crate) async fn server_key(pool: &PgPool, name: &str, candidate: [u8; 32]) -> Answer<Vec<u8>> {
    sqlx::query(
        "INSERT INTO server_keys (name, key) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
    )
    .bind(name)
    .bind(candidate.as_slice())
    .execute(pool)
    .await
    .map_err(db)?;
    sqlx::query_scalar("SELECT key FROM server_keys WHERE name = $1")
        .bind(name)
        .fetch_one(pool)
        .await
        .map_err(db)
}

pub(crate) fn group_commit(pg: &Pg) -> Option<GroupCommit> {
    pg.batcher.groups().then(|| pg.batcher.counts())
}

pub(crate) fn listener(pg: &Pg, options: &StoreOptions) -> Option<Listener> {
    options.notify.then(|| {
        Listener::new(
            &pg.pool.connect_options(),
            options.acquire_timeout,
            &pg.listener_name,
        )
    })
}
