//! The transport-independent core: create, join, act, view, history, watch, list and leave,
//! over the event store and the rules engines. Both transports call these methods with the
//! request messages of the public API and the caller's bearer token, and relay the result.
//!
//! One action's path: authenticate → the cached match (loaded when absent: the newest snapshot
//! plus the events after it) → the command decides from it, the rules validating the action
//! once → append with the expected version → fold the event into the cache as decided →
//! notify watchers. Writes trust the cache: one made from a stale cache (another replica
//! appended meanwhile) fails the store's version check and is decided again from a fresh read,
//! and a refusal made from the cache is only returned once a fresh read confirms it
//! (`write.rs`). Reads (views, history, watches) first bring the cache up to the store's
//! version.
//!
//! The server's own moves take the same path: a bot's choice (from its seat's view only) and a
//! passed deadline's default action (a `timeout` event) are played by [`Service::play_turn`].
//! Every append of a match with a turn timeout or bots also rewrites its pending turns, in the
//! same store write.
//!
//! Where things are: this file holds the service, its cache and the helpers every command
//! shares; `projection.rs` the cached match and the one fold of an event into it, and the
//! deadline rule; `write.rs` the write path of every command that appends (decide, append,
//! retry, fold); `render.rs` every `pb::` message built from store records; one file per
//! command (`create.rs`, `join.rs`, `act.rs`, `leave.rs`, `cancel.rs`, `webhook.rs`); `queries.rs` the
//! reads; `watch.rs` the live streams.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use missive_proto::v1 as pb;
use missive_rules::{Observation, SeatSet, Viewer};
use missive_store::{
    Appended, MatchFilter, MatchId, MatchRecord, MatchStatus, MatchUpdate, NewEvent, NewMatch,
    Notification, PendingTurn, SeatRecord, Snapshot, Store, StoreError, StoredEvent, TurnRecord,
};

use sha2::{Digest, Sha256};
use tokio::sync::{Notify, OwnedMutexGuard, broadcast};
use tracing::Instrument;

pub use crate::auth::Caller;
use crate::auth::{self, Keys};
use crate::bots;
use crate::deal;
use crate::error::{ApiError, ApiResult, Rule};
use crate::events::{Bot, CloseReason, Creation, Event};
use crate::games::{GameKind, MatchState, Registry};
use crate::limits;
use crate::table::{Observations, Table};

pub use crate::events::kinds;

/// How much longer than the store's connection wait a request may take before it is answered
/// UNAVAILABLE (see [`Service::bounded`]).
pub const STORE_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// The longest a write's work runs, whether or not its caller still waits
/// ([`Service::bounded_write`]).
const WRITE_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// How often a command decides again after its write lost a race to another writer: the one
/// retry of a write there is (the store makes none of its own).
const APPEND_ATTEMPTS: usize = 5;
/// Updates a match's watchers may fall behind before they catch up from the store instead.
/// The buffer is allocated whole for every watched match (about 40 bytes a slot), so it is
/// kept small: turn-based matches rarely append more than a few events at once.
const WATCH_BUFFER: usize = 16;

/// Service settings that come from the server's configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    pub allow_fixed_deck: bool,
    pub cache_capacity: usize,
    /// How often a watch stream checks the store for updates it was not told of.
    pub watch_recheck: std::time::Duration,
    /// Whether webhook URLs may name non-public addresses (see `webhooks/address.rs`).
    pub webhook_allow_private: bool,
    /// What the service stamps events with and the turn worker claims due turns by.
    pub clock: crate::clock::Clock,
    /// What player tokens are verified with; `None`: seat tokens only.
    pub identity: Option<Arc<crate::identity::Verifier>>,
    /// How long an open match waits for a join (from its last event) before it is closed as
    /// expired (`expiry.rs`); `None`: open matches never expire.
    pub open_match_expiry: Option<std::time::Duration>,
}

/// One appended event, as broadcast to watchers.
#[derive(Debug)]
pub struct Update {
    pub event: StoredEvent,
    /// The event, typed.
    pub typed: Event,
    pub observations: Vec<Observation<pb::GameEvent>>,
    /// The state, the match row and the deadlines right after the event.
    pub state: Box<dyn MatchState>,
    pub record: MatchRecord,
    pub deadlines: Deadlines,
    /// The match's info after the event, built once for every watcher (`None`: it needs the
    /// seed read first).
    pub info: Option<Arc<pb::MatchInfo>>,
}

/// What wakes a match's watchers.
#[derive(Debug, Clone)]
enum Wake {
    /// An event folded into this server's cached match (its own append, or another replica's
    /// read from the store), with everything a watcher needs to send it.
    Update(Arc<Update>),
    /// Another replica (or this one) took the match to this version: read it from the store.
    Moved(u64),
    /// Notifications may have been missed: check the store.
    Resync,
}

type Slot = Arc<tokio::sync::Mutex<Option<Live>>>;

/// The service. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Service {
    store: Store,
    games: Registry,
    settings: Settings,
    cache: Mutex<HashMap<MatchId, Slot>>,
    watchers: Mutex<HashMap<MatchId, broadcast::Sender<Wake>>>,
    /// Set once the server stops: watch streams end so connections can drain.
    stopping: tokio::sync::watch::Sender<bool>,
    /// Woken when this server wrote pending turns, so the turn worker claims bot turns at
    /// once instead of at its next poll.
    turns_written: tokio::sync::Notify,
    /// Wakes the webhook delivery worker after an append queued notifications.
    webhook_wake: Arc<Notify>,
    /// What retried requests' answers are derived from, read from the store once.
    keys: tokio::sync::OnceCell<Keys>,
    /// The key audit heads are signed with, read from the store once.
    audit_signer: tokio::sync::OnceCell<crate::audit::Signer>,
}

/// Who acts: a caller with a seat token (and the seat the request names, if any), or this
/// server for a seat (a bot's turn, or a turn deadline that passed).
#[derive(Debug, Clone, Copy)]
enum By<'a> {
    Caller(&'a Caller, Option<u32>),
    Server(u8),
}

/// What is played.
#[derive(Debug, Clone, Copy)]
enum Play<'a> {
    /// The caller's action.
    Action(&'a pb::GameAction),
    /// What the bot with this strategy chooses from the seat's view.
    Bot(&'a str),
    /// The game's default action for the seat, recorded as a timeout.
    Timeout,
}

/// The refusal of a request id sent again with a different request.
fn request_id_reused() -> ApiError {
    ApiError::precondition(
        Rule::RequestIdReused,
        "this requestId was used for a different request; use a new id for a new request",
    )
}

/// The match a request names, recorded on the request's span.
fn match_named(id: &str) -> ApiResult<MatchId> {
    let id = parse_id(id)?;
    crate::telemetry::record_match(id);
    Ok(id)
}

/// The optional request id a request carries, checked and recorded on the request's span.
fn request_id_named(request_id: &str) -> ApiResult<Option<&str>> {
    let request_id = limits::optional_request_id("requestId", request_id, 1)?;
    crate::telemetry::record_request_id(request_id);
    Ok(request_id)
}

fn parse_id(id: &str) -> ApiResult<MatchId> {
    id.parse().map_err(|_| {
        // A long id is not echoed back.
        let shown: String = id.chars().take(40).collect();
        ApiError::invalid(format!("{shown:?} is not a match id (a UUID)"))
    })
}

fn is_over(status: MatchStatus) -> bool {
    matches!(status, MatchStatus::Finished | MatchStatus::Abandoned)
}

pub(crate) fn timestamp(at: chrono::DateTime<Utc>) -> pbjson_types::Timestamp {
    pbjson_types::Timestamp {
        seconds: at.timestamp(),
        nanos: at.timestamp_subsec_nanos() as i32,
    }
}

impl Service {
    pub fn new(store: Store, settings: Settings) -> Self {
        Service {
            store,
            games: Registry::new(),
            settings,
            cache: Mutex::new(HashMap::new()),
            watchers: Mutex::new(HashMap::new()),
            stopping: tokio::sync::watch::Sender::new(false),
            turns_written: tokio::sync::Notify::new(),
            webhook_wake: Arc::new(Notify::new()),
            keys: tokio::sync::OnceCell::new(),
            audit_signer: tokio::sync::OnceCell::new(),
        }
    }

    /// The key every server of this store signs audit heads with: its seed is stored once,
    /// by whichever server needed it first.
    pub(crate) async fn audit_signer(&self) -> ApiResult<&crate::audit::Signer> {
        self.audit_signer
            .get_or_try_init(|| async {
                let seed = self
                    .store
                    .server_key(crate::audit::Signer::NAME, auth::random_bytes()?)
                    .await?;
                Ok(crate::audit::Signer::from_seed(seed))
            })
            .await
    }

    /// The key every server of this store derives retried requests' answers from.
    async fn keys(&self) -> ApiResult<&Keys> {
        self.keys
            .get_or_try_init(|| async {
                let key = self
                    .store
                    .server_key(Keys::NAME, auth::random_bytes()?)
                    .await?;
                Ok(Keys::new(key))
            })
            .await
    }

    /// Runs one request's work, answering UNAVAILABLE once it has waited longer than a store
    /// that answers at all would make it wait: the pool's connection wait and a second more.
    /// An outage then fails every request within that bound, however many queue behind one
    /// match or one connection. A request cut short may still have been applied, as when its
    /// answer is lost: retried with the same request id, it answers the original outcome.
    pub async fn bounded<T>(
        &self,
        work: impl std::future::Future<Output = ApiResult<T>>,
    ) -> ApiResult<T> {
        let bound = self.store.acquire_timeout() + STORE_GRACE;
        tokio::time::timeout(bound, work).await.unwrap_or_else(|_| {
            Err(ApiError::Unavailable(format!(
                "no answer from the store within {bound:?}"
            )))
        })
    }

    /// [`Service::bounded`] for a request that writes, whose work runs in a task of its own:
    /// once the request has reached the server, its work goes to its end even if the caller
    /// goes away (a client's deadline, a dropped connection), so that what it appended is not
    /// only committed but folded into the cache and told to watchers, the turn worker and the
    /// webhook worker. The caller waits no longer than `bounded` says either way; the work
    /// itself is given up after [`WRITE_LIMIT`], so that writes queued behind one match on a
    /// database that hangs do not pile up for good.
    pub async fn bounded_write<T, F>(
        self: &Arc<Self>,
        work: impl FnOnce(Arc<Service>) -> F,
    ) -> ApiResult<T>
    where
        T: Send + 'static,
        F: std::future::Future<Output = ApiResult<T>> + Send + 'static,
    {
        let work = tokio::time::timeout(WRITE_LIMIT, work(Arc::clone(self)));
        // In the request's span, which its log lines and its recorded ids belong to.
        let task = tokio::spawn(
            async move {
                work.await.unwrap_or_else(|_| {
                    Err(ApiError::Unavailable(format!(
                        "a write took longer than {WRITE_LIMIT:?}"
                    )))
                })
            }
            .in_current_span(),
        );
        self.bounded(async {
            task.await
                .map_err(|e| ApiError::internal(format!("a write's task failed: {e}")))?
        })
        .await
    }

    /// How long an open match waits for a join before it expires; `None`: forever.
    pub fn open_match_expiry(&self) -> Option<std::time::Duration> {
        self.settings.open_match_expiry
    }

    /// The clock events are stamped with and turns fall due by.
    pub fn clock(&self) -> &crate::clock::Clock {
        &self.settings.clock
    }

    /// What the webhook delivery worker waits on between polls.
    pub fn webhook_wake(&self) -> Arc<Notify> {
        self.webhook_wake.clone()
    }

    /// Tells the delivery worker that an append queued webhook notifications.
    pub(crate) fn wake_webhooks(&self, queued: bool) {
        if queued {
            self.webhook_wake.notify_one();
        }
    }

    /// Resolves after this server wrote pending turns (at once if it did since the last call).
    pub async fn turns_written(&self) {
        self.turns_written.notified().await;
    }

    /// Ends every watch stream; called when the server begins to shut down.
    /// Starts the drain: health checks answer "not serving" from now on, and every watch
    /// stream ends with UNAVAILABLE naming the version to resume after.
    pub fn drain(&self) {
        self.stopping.send_replace(true);
    }

    /// Whether [`Service::drain`] was called.
    pub fn draining(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Changes to `true` when the drain starts.
    pub fn stopping(&self) -> tokio::sync::watch::Receiver<bool> {
        self.stopping.subscribe()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// What the transports verify player tokens with, if the server accepts them.
    pub fn identity(&self) -> Option<Arc<crate::identity::Verifier>> {
        self.settings.identity.clone()
    }

    pub fn games(&self) -> &Registry {
        &self.games
    }

    fn slot(&self, id: MatchId) -> Slot {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= self.settings.cache_capacity && !cache.contains_key(&id) {
            // Evict matches nobody is using right now; they reload from the store on demand.
            cache.retain(|_, slot| Arc::strong_count(slot) > 1);
        }
        cache.entry(id).or_default().clone()
    }

    /// The match's secret seed: the cached match's when this server knows it (a seed never
    /// changes), else the store's.
    pub(super) async fn seed(&self, id: MatchId) -> ApiResult<[u8; 32]> {
        let slot = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache.get(&id).cloned()
        };
        let cached = slot.and_then(|slot| {
            // A slot busy with a write is not waited for: the store answers as well.
            let live = slot.try_lock().ok()?;
            live.as_ref()?.seed
        });
        match cached {
            Some(seed) => Ok(seed),
            None => Ok(self.store.seed(id).await?),
        }
    }

    /// The match, locked and brought up to the store's current version. Events another
    /// replica appended are folded into the cached match from the version it has, and told to
    /// watchers as this server's own appends are (see [`Live::told_from`]).
    async fn current(&self, id: MatchId) -> ApiResult<OwnedMutexGuard<Option<Live>>> {
        let mut guard = self.slot(id).lock_owned().await;
        let record = self.store.get_match(id).await?;
        let cached = guard.as_ref().map(|live| live.record.version);
        crate::metrics::record_cache(cached.is_some());
        match cached {
            Some(v) if v == record.version => {
                if let Some(live) = guard.as_mut() {
                    live.replace_record(record);
                }
            }
            Some(v) if v < record.version => {
                let events = self.store.read_events(id, v, u32::MAX).await?;
                if let Some(live) = guard.as_mut() {
                    for event in events {
                        let typed = Event::of(&event)?;
                        self.fold_and_tell(live, event, &typed, None)?;
                    }
                    let latest = live.record.version;
                    live.replace_record(if latest == record.version {
                        record
                    } else {
                        self.store.get_match(id).await?
                    });
                }
            }
            _ => *guard = Some(self.load(id).await?),
        }
        Ok(guard)
    }

    /// Brings the cached match up to the store's version (see [`Service::current`]) and
    /// returns the version from which every event it folded was told to watchers.
    pub(super) async fn follow(&self, id: MatchId) -> ApiResult<u64> {
        let guard = self.current(id).await?;
        Ok(guard.as_ref().map_or(u64::MAX, |live| live.told_from))
    }

    /// The match, locked, for a change: as this server last knew it while `fresh` is false
    /// (loading it, when not cached, makes it fresh), brought up to date once it is true.
    async fn for_write(
        &self,
        id: MatchId,
        fresh: &mut bool,
    ) -> ApiResult<OwnedMutexGuard<Option<Live>>> {
        if *fresh {
            return self.current(id).await;
        }
        let mut guard = self.slot(id).lock_owned().await;
        crate::metrics::record_cache(guard.is_some());
        if guard.is_none() {
            *guard = Some(self.load(id).await?);
            *fresh = true;
        }
        Ok(guard)
    }

    /// The one place watchers are told of events this server appended. Other replicas' appends
    /// arrive through [`Service::wake`] (see `fanout.rs`).
    fn notify(&self, update: Update) {
        self.send_wake(update.event.match_id, Wake::Update(Arc::new(update)));
    }

    /// Another replica (or this one) took the match to `version`: watchers behind it read the
    /// new events from the store.
    pub fn wake(&self, id: MatchId, version: u64) {
        self.send_wake(id, Wake::Moved(version));
    }

    /// Every watcher checks the store: notifications of other replicas' appends may have been
    /// missed.
    pub fn wake_all(&self) {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        watchers.retain(|_, sender| sender.send(Wake::Resync).is_ok());
    }

    fn send_wake(&self, id: MatchId, wake: Wake) {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(sender) = watchers.get(&id)
            && sender.send(wake).is_err()
        {
            watchers.remove(&id);
        }
    }

    /// Whether anyone on this server watches match `id` (an update is only built for them).
    fn watched(&self, id: MatchId) -> bool {
        let watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        watchers.get(&id).is_some_and(|s| s.receiver_count() > 0)
    }

    fn subscribe(&self, id: MatchId) -> broadcast::Receiver<Wake> {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        watchers
            .entry(id)
            .or_insert_with(|| broadcast::channel(WATCH_BUFFER).0)
            .subscribe()
    }

    /// Forgets the match's channel once nobody listens to it (a watch refused at its start).
    fn unsubscribed(&self, id: MatchId) {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        if watchers.get(&id).is_some_and(|s| s.receiver_count() == 0) {
            watchers.remove(&id);
        }
    }

    /// The stored event at `seq`.
    async fn stored_event(&self, id: MatchId, seq: u64) -> ApiResult<StoredEvent> {
        self.store
            .read_events(id, seq.saturating_sub(1), 1)
            .await?
            .into_iter()
            .next()
            .filter(|e| e.seq == seq)
            .ok_or_else(|| ApiError::internal(format!("event {seq} of {id} is missing")))
    }
}

// After the macro above, which the commands use.
mod act;
mod cancel;
mod create;
mod join;
mod leave;
mod projection;
mod queries;
mod rematch;
mod render;
mod watch;
mod webhook;
mod write;

pub use projection::Deadlines;
use projection::*;
use queries::Replayed;
use write::*;

#[cfg(test)]
mod tests;
