//! The transport-independent core: create, join, act, view, history, watch, list and leave,
//! over the event store and the rules engines. Both transports call these methods with the
//! request messages of the public API and the caller's bearer token, and relay the result.
//!
//! One action's path: authenticate → load the state (the cache, brought up to the store's
//! version, else the newest snapshot plus the events after it) → the rules apply it → append
//! with the expected version → update the cache → notify watchers. The cache never serves a
//! stale version: every use first asks the store for the match's version and folds in any
//! events it missed (another replica may have appended them).
//!
//! The server's own moves take the same path: a bot's choice (from its seat's view only) and a
//! passed deadline's default action (a `timeout` event) are played by [`Service::play_turn`].
//! Every append of a match with a turn timeout or bots also rewrites its pending turns, in the
//! same store write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use missive_proto::v1 as pb;
use missive_rules::{Observation, SeatSet, Viewer};
use missive_store::{
    MatchFilter, MatchId, MatchRecord, MatchStatus, MatchUpdate, NewEvent, NewMatch, PendingTurn,
    SeatRecord, Snapshot, Store, StoreError, StoredEvent, TurnRecord,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::{Notify, OwnedMutexGuard, broadcast, mpsc};

use crate::auth::{self, Keys};
use crate::bots;
use crate::error::{ApiError, ApiResult};
use crate::games::{GameKind, MatchState, Registry};
use crate::limits;

/// Event kinds, persisted: never rename one.
pub mod kinds {
    pub const CREATED: &str = "created";
    pub const JOINED: &str = "joined";
    pub const ACTION: &str = "action";
    pub const LEFT: &str = "left";
    /// A turn deadline passed and the server played the default action for the seat.
    pub const TIMEOUT: &str = "timeout";
}

/// How much longer than the store's connection wait a request may take before it is answered
/// UNAVAILABLE (see [`Service::bounded`]).
pub const STORE_GRACE: std::time::Duration = std::time::Duration::from_secs(1);
/// How often an act or join retries after losing a race to another writer.
const APPEND_ATTEMPTS: usize = 5;
/// Updates a match's watchers may fall behind before they catch up from the store instead.
/// The buffer is allocated whole for every watched match (about 40 bytes a slot), so it is
/// kept small: turn-based matches rarely append more than a few events at once.
const WATCH_BUFFER: usize = 16;

/// The caller of a request: the bearer token, if any.
#[derive(Clone, Default)]
pub struct Caller {
    pub token: Option<String>,
}

impl std::fmt::Debug for Caller {
    // A token is a credential: never print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("token", &self.token.as_ref().map(|_| ".."))
            .finish()
    }
}

/// Service settings that come from the server's configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    pub allow_fixed_deck: bool,
    pub cache_capacity: usize,
    /// How often a watch stream checks the store for updates it was not told of.
    pub watch_recheck: std::time::Duration,
    /// Whether webhook URLs may name non-public addresses (see `webhooks.rs`).
    pub webhook_allow_private: bool,
    /// What the service stamps events with and the turn worker claims due turns by.
    pub clock: crate::clock::Clock,
}

/// A match in memory, at `record.version`.
#[derive(Debug)]
struct Live {
    record: MatchRecord,
    game: Arc<dyn GameKind>,
    state: Box<dyn MatchState>,
    /// Every request id the match holds, with the seq of its (first) event.
    request_ids: HashMap<String, u64>,
    /// False when loaded from a snapshot: the events before it were not folded here.
    whole_log: bool,
    /// The awaited human seats' deadlines (see [`next_deadlines`]).
    deadlines: Deadlines,
    /// The seed, once read to be revealed (the match is over).
    seed: Option<[u8; 32]>,
    /// Seats a player left (so a webhook of theirs may remain), among the events folded here.
    vacated: Vec<u8>,
}

impl Live {
    /// What the cache keeps of each event besides the state: its request id, and a seat a
    /// player left.
    fn note(&mut self, event: &StoredEvent) {
        if let Some(request_id) = &event.request_id {
            self.request_ids
                .entry(request_id.clone())
                .or_insert(event.seq);
        }
        if event.kind == kinds::LEFT
            && let Ok(seat) = payload_seat(event)
            && !self.vacated.contains(&seat)
        {
            self.vacated.push(seat);
        }
    }

    /// Whether `seat` may still have a webhook of a player who left it: a seat left in the
    /// events folded here, or any seat when the log was only folded from a snapshot on.
    fn may_have_old_webhook(&self, seat: u8) -> bool {
        !self.whole_log || self.vacated.contains(&seat)
    }
}

/// `(seat, due at)` for each awaited human seat of an active match with a turn timeout.
pub type Deadlines = Vec<(u8, DateTime<Utc>)>;

/// One appended event, as broadcast to watchers.
#[derive(Debug)]
pub struct Update {
    pub event: StoredEvent,
    pub observations: Vec<Observation<pb::GameEvent>>,
    /// The state, the match row and the deadlines right after the event.
    pub state: Box<dyn MatchState>,
    pub record: MatchRecord,
    pub deadlines: Deadlines,
    /// The seed when the match is over and this server had read it.
    pub seed: Option<[u8; 32]>,
}

/// What wakes a match's watchers.
#[derive(Debug, Clone)]
enum Wake {
    /// An event this server appended, with everything a watcher needs to send it.
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

/// In a retry loop over a match read with [`Service::for_write`]: a refusal made from a cached
/// match not yet known to be current sets `$fresh` and goes round again (from a fresh read)
/// instead of being returned.
macro_rules! or_recheck {
    ($fresh:ident, $result:expr) => {
        match $result {
            Ok(value) => value,
            Err(_) if !$fresh => {
                $fresh = true;
                continue;
            }
            Err(e) => return Err(e),
        }
    };
}

/// The refusal of a request id sent again with a different request.
fn request_id_reused() -> ApiError {
    ApiError::precondition(
        "request-id-reused",
        "this requestId was used for a different request; use a new id for a new request",
    )
}

/// Whether two `created` payloads come from the same request: the same game options, seats,
/// timing and bots. What the server adds of its own is not compared.
fn same_creation(stored: &Value, new: &Value) -> bool {
    const FROM_THE_REQUEST: [&str; 5] = [
        "config",
        "seat_count",
        "turn_timeout_secs",
        "turn_reminder_secs",
        "fixed_deck",
    ];
    let bots = |payload: &Value| -> Vec<(Value, Value)> {
        payload["bots"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| (b["seat"].clone(), b["strategy"].clone()))
            .collect()
    };
    FROM_THE_REQUEST.iter().all(|key| stored[key] == new[key]) && bots(stored) == bots(new)
}

fn parse_id(id: &str) -> ApiResult<MatchId> {
    id.parse().map_err(|_| {
        // A long id is not echoed back.
        let shown: String = id.chars().take(40).collect();
        ApiError::invalid(format!("{shown:?} is not a match id (a UUID)"))
    })
}

fn payload_seat(event: &StoredEvent) -> ApiResult<u8> {
    event.payload["seat"]
        .as_u64()
        .and_then(|s| u8::try_from(s).ok())
        .ok_or_else(|| ApiError::internal(format!("event {} has no seat", event.seq)))
}

fn status_to_proto(status: MatchStatus) -> pb::MatchStatus {
    match status {
        MatchStatus::Open => pb::MatchStatus::Open,
        MatchStatus::Active => pb::MatchStatus::Active,
        MatchStatus::Finished => pb::MatchStatus::Finished,
        MatchStatus::Abandoned => pb::MatchStatus::Abandoned,
    }
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

/// The match row after `event`, computed the same way live and when replaying a log: seats
/// from joins and leaves, and the status each event leads to.
fn advance_record(
    record: &mut MatchRecord,
    event: &StoredEvent,
    state: &dyn MatchState,
) -> ApiResult<()> {
    match event.kind.as_str() {
        kinds::JOINED => {
            let seat = payload_seat(event)?;
            if let Some(s) = record.seats.get_mut(usize::from(seat)) {
                s.player = event.payload["player"].as_str().map(str::to_owned);
            }
            if record.seats.iter().all(|s| s.player.is_some()) {
                record.status = MatchStatus::Active;
            }
        }
        kinds::LEFT => {
            let seat = payload_seat(event)?;
            if record.status == MatchStatus::Open {
                if let Some(s) = record.seats.get_mut(usize::from(seat)) {
                    s.player = None;
                    s.token_hash = None;
                }
            } else {
                record.status = MatchStatus::Abandoned;
            }
        }
        kinds::CREATED => {
            for bot in event.payload["bots"].as_array().into_iter().flatten() {
                let seat = bot["seat"].as_u64().and_then(|s| usize::try_from(s).ok());
                let strategy = bot["strategy"].as_str().unwrap_or_default();
                if let Some(s) = seat.and_then(|seat| record.seats.get_mut(seat)) {
                    s.player = Some(bots::player_name(strategy));
                    s.bot = Some(strategy.to_owned());
                }
            }
            if record.seats.iter().all(|s| s.player.is_some()) {
                record.status = MatchStatus::Active;
            }
        }
        kinds::ACTION | kinds::TIMEOUT if state.outcome().is_some() => {
            record.status = MatchStatus::Finished;
        }
        _ => {}
    }
    record.version = event.seq;
    record.updated_at = event.at;
    Ok(())
}

/// Applies one stored event to a state, returning the observations it produced.
fn fold(
    state: &mut dyn MatchState,
    event: &StoredEvent,
) -> ApiResult<Vec<Observation<pb::GameEvent>>> {
    if event.kind != kinds::ACTION && event.kind != kinds::TIMEOUT {
        return Ok(Vec::new());
    }
    let seat = payload_seat(event)?;
    state
        .apply(seat, &event.payload["action"])
        .map_err(|refusal| {
            ApiError::internal(format!(
                "stored event {} refused on replay: {}",
                event.seq, refusal.rule
            ))
        })
}

/// A match's turn clock: how long a seat has to act, and how long before the end its webhook
/// is reminded.
#[derive(Debug, Clone, Copy)]
struct Timing {
    timeout_secs: Option<u32>,
    reminder_secs: Option<u32>,
}

impl Timing {
    fn of(record: &MatchRecord) -> Timing {
        Timing {
            timeout_secs: record.turn_timeout_secs,
            reminder_secs: record.turn_reminder_secs,
        }
    }
}

/// The pending turns of a match with these seats and timing once it has `status` and `state`
/// after an event at `at`: every awaited seat played by a bot (due at once) or, when the match
/// has a turn timeout, by a human (due `at` + the timeout, reminded `turn_reminder_secs`
/// earlier). `before` is who was awaited before the event and `actor` the seat that acted in
/// it: a seat awaited before and after that did not act keeps its deadline (and reminder).
/// `None` for a match with neither deadlines nor bots, whose appends then write no turns.
fn pending_turns(
    seats: &[SeatRecord],
    timing: Timing,
    status: MatchStatus,
    state: &dyn MatchState,
    before: SeatSet,
    actor: Option<u8>,
    at: DateTime<Utc>,
) -> Option<Vec<PendingTurn>> {
    if timing.timeout_secs.is_none() && seats.iter().all(|s| s.bot.is_none()) {
        return None;
    }
    if status != MatchStatus::Active {
        return Some(Vec::new());
    }
    let secs = |secs: u32| chrono::Duration::seconds(i64::from(secs));
    let timeout = timing.timeout_secs.map(secs);
    let reminder = timing.reminder_secs.map(secs);
    Some(
        state
            .awaiting()
            .iter()
            .filter_map(|seat| {
                let bot = seats.get(usize::from(seat))?.bot.clone();
                let (due_at, remind_at) = match (&bot, timeout) {
                    (Some(_), _) => (at, None),
                    (None, Some(timeout)) => {
                        (at + timeout, reminder.map(|early| at + timeout - early))
                    }
                    (None, None) => return None,
                };
                Some(PendingTurn {
                    seat,
                    due_at,
                    remind_at,
                    bot,
                    continues: before.contains(seat) && actor != Some(seat),
                })
            })
            .collect(),
    )
}

/// The deadlines after `event`, by the rule [`pending_turns`] writes the store's turns with:
/// in an active match with a turn timeout, an awaited human seat that was awaited before the
/// event and did not act in it keeps its deadline; any other gets the event's time plus the
/// timeout. `record` and `state` are as of after the event.
fn next_deadlines(
    before: &[(u8, DateTime<Utc>)],
    record: &MatchRecord,
    state: &dyn MatchState,
    event: &StoredEvent,
) -> Deadlines {
    let Some(secs) = record.turn_timeout_secs else {
        return Vec::new();
    };
    if record.status != MatchStatus::Active {
        return Vec::new();
    }
    let acted = match event.kind.as_str() {
        kinds::ACTION => event.actor,
        kinds::TIMEOUT => payload_seat(event).ok(),
        _ => None,
    };
    state
        .awaiting()
        .iter()
        .filter(|&seat| {
            record
                .seats
                .get(usize::from(seat))
                .is_some_and(|s| s.bot.is_none())
        })
        .map(|seat| {
            let kept = before
                .iter()
                .find(|(s, _)| *s == seat && acted != Some(seat))
                .map(|(_, due)| *due);
            (
                seat,
                kept.unwrap_or(event.at + chrono::Duration::seconds(i64::from(secs))),
            )
        })
        .collect()
}

/// A watch's catch-up result, except that a store that cannot be reached now is not an error:
/// the stream stays open (not over), and the next wake-up or tick tries again.
fn retry_later(id: MatchId, caught_up: ApiResult<bool>) -> ApiResult<bool> {
    match caught_up {
        Err(ApiError::Unavailable(detail)) => {
            tracing::debug!(match_id = %id, %detail, "watch catch-up failed; will retry");
            Ok(false)
        }
        done => done,
    }
}

/// Who the game awaited in a match with this status: nobody until it starts.
fn awaited(status: MatchStatus, state: &dyn MatchState) -> SeatSet {
    if status == MatchStatus::Active {
        state.awaiting()
    } else {
        SeatSet::EMPTY
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
        }
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

    fn wrote_turns(&self, turns: Option<&Vec<PendingTurn>>) {
        if turns.is_some_and(|t| !t.is_empty()) {
            self.turns_written.notify_one();
        }
    }

    /// Ends every watch stream; called when the server begins to shut down.
    pub fn stop_watches(&self) {
        self.stopping.send_replace(true);
    }

    pub fn store(&self) -> &Store {
        &self.store
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

    /// The match, locked and brought up to the store's current version.
    async fn current(&self, id: MatchId) -> ApiResult<OwnedMutexGuard<Option<Live>>> {
        let mut guard = self.slot(id).lock_owned().await;
        let record = self.store.get_match(id).await?;
        let cached = guard.as_ref().map(|live| live.record.version);
        match cached {
            Some(v) if v == record.version => {
                if let Some(live) = guard.as_mut() {
                    live.record = record;
                }
            }
            Some(v) if v < record.version => {
                let events = self.store.read_events(id, v, u32::MAX).await?;
                if let Some(live) = guard.as_mut() {
                    for event in &events {
                        Self::fold_live(live, event)?;
                    }
                    let latest = live.record.version;
                    live.record = if latest == record.version {
                        record
                    } else {
                        self.store.get_match(id).await?
                    };
                }
            }
            _ => *guard = Some(self.load(id).await?),
        }
        Ok(guard)
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
        if guard.is_none() {
            *guard = Some(self.load(id).await?);
            *fresh = true;
        }
        Ok(guard)
    }

    fn fold_live(
        live: &mut Live,
        event: &StoredEvent,
    ) -> ApiResult<Vec<Observation<pb::GameEvent>>> {
        let observations = fold(live.state.as_mut(), event)?;
        live.note(event);
        advance_record(&mut live.record, event, live.state.as_ref())?;
        live.deadlines = next_deadlines(&live.deadlines, &live.record, live.state.as_ref(), event);
        Ok(observations)
    }

    /// The newest usable snapshot plus the events after it, or the whole log from setup.
    async fn load(&self, id: MatchId) -> ApiResult<Live> {
        let record = self.store.get_match(id).await?;
        let game = self.games.get(&record.kind)?.clone();
        let loaded = self.store.load(id, game.rules_version()).await?;
        let (state, whole_log) = match loaded.snapshot {
            Some(snapshot) if snapshot.rules_version == game.rules_version() => {
                (game.restore(snapshot.state)?, false)
            }
            _ => {
                let seed = self.store.seed(id).await?;
                (
                    game.setup(&loaded.record.config, loaded.record.seat_count, seed)?,
                    true,
                )
            }
        };
        let mut live = Live {
            record: loaded.record.clone(),
            game,
            state,
            // The request ids of the events before the snapshot, then those after it.
            request_ids: loaded.requests.into_iter().collect(),
            whole_log,
            deadlines: Vec::new(),
            seed: None,
            vacated: Vec::new(),
        };
        for event in &loaded.events {
            let observations = fold(live.state.as_mut(), event)?;
            drop(observations);
            live.note(event);
        }
        // The store's row is authoritative for seats and status, its turns for deadlines (the
        // events that started them may be older than the snapshot).
        live.record = loaded.record;
        if live.record.turn_timeout_secs.is_some() && live.record.status == MatchStatus::Active {
            live.deadlines = self
                .store
                .turns(id)
                .await?
                .into_iter()
                .filter(|t| t.bot.is_none() && t.version == live.record.version)
                .map(|t| (t.seat, t.due_at))
                .collect();
        }
        Ok(live)
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

    fn subscribe(&self, id: MatchId) -> broadcast::Receiver<Wake> {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        watchers
            .entry(id)
            .or_insert_with(|| broadcast::channel(WATCH_BUFFER).0)
            .subscribe()
    }

    async fn info(&self, record: &MatchRecord, game: &dyn GameKind) -> ApiResult<pb::MatchInfo> {
        self.info_with(record, game, None).await
    }

    /// [`Service::info`], with the seed if it is already known (it is only read, and shown,
    /// once the match is over).
    async fn info_with(
        &self,
        record: &MatchRecord,
        game: &dyn GameKind,
        seed: Option<[u8; 32]>,
    ) -> ApiResult<pb::MatchInfo> {
        let over = is_over(record.status);
        let seed = match (over, seed) {
            (false, _) => None,
            (true, Some(seed)) => Some(hex::encode(seed)),
            (true, None) => Some(hex::encode(self.store.seed(record.id).await?)),
        };
        Ok(pb::MatchInfo {
            match_id: record.id.to_string(),
            kind: record.kind.clone(),
            status: status_to_proto(record.status) as i32,
            seat_count: record.seat_count.into(),
            seats: record
                .seats
                .iter()
                .map(|s| pb::SeatInfo {
                    seat: s.seat.into(),
                    taken: s.player.is_some(),
                    player: s.player.clone().unwrap_or_default(),
                    bot: s.bot.is_some(),
                })
                .collect(),
            options: Some(game.options_to_proto(&record.config, over)?),
            fixed_deck: game.fixed_deck(&record.config),
            turn_timeout_secs: record.turn_timeout_secs,
            turn_reminder_secs: record.turn_reminder_secs,
            seed_commitment: hex::encode(record.seed_hash),
            seed,
            version: record.version,
            created_at: Some(timestamp(record.created_at)),
            updated_at: Some(timestamp(record.updated_at)),
            rules_version: record.rules_version,
        })
    }

    fn view(
        info: pb::MatchInfo,
        record: &MatchRecord,
        state: &dyn MatchState,
        deadlines: &[(u8, DateTime<Utc>)],
        viewer: Viewer,
    ) -> pb::MatchView {
        let active = record.status == MatchStatus::Active;
        let seat = match viewer {
            Viewer::Seat(seat) => Some(seat),
            Viewer::Spectator => None,
        };
        pb::MatchView {
            fixed_deck: info.fixed_deck,
            version: record.version,
            seat: seat.map(u32::from),
            awaiting: if active {
                state.awaiting().iter().map(u32::from).collect()
            } else {
                Vec::new()
            },
            legal_actions: match seat {
                Some(seat) if active => state.legal_actions(seat),
                _ => Vec::new(),
            },
            game: (record.status != MatchStatus::Open).then(|| state.view(viewer)),
            outcome: state.outcome().map(|o| pb::Outcome {
                winners: o.winners.iter().map(u32::from).collect(),
                scores: o.scores,
            }),
            deadlines: deadlines
                .iter()
                .map(|&(seat, due_at)| pb::TurnDeadline {
                    seat: seat.into(),
                    due_at: Some(timestamp(due_at)),
                })
                .collect(),
            r#match: Some(info),
        }
    }

    async fn live_view(&self, live: &Live, viewer: Viewer) -> ApiResult<pb::MatchView> {
        let info = self
            .info_with(&live.record, live.game.as_ref(), live.seed)
            .await?;
        Ok(Self::view(
            info,
            &live.record,
            live.state.as_ref(),
            &live.deadlines,
            viewer,
        ))
    }

    pub async fn create_match(
        &self,
        req: pb::CreateMatchRequest,
    ) -> ApiResult<pb::CreateMatchResponse> {
        let options = req
            .options
            .ok_or_else(|| ApiError::invalid("options are required"))?;
        let seats = match req.seat_count {
            0 => 2,
            n => {
                u8::try_from(n).map_err(|_| ApiError::invalid(format!("{n} seats is too many")))?
            }
        };
        let request_id = limits::optional_request_id("requestId", &req.request_id, 1)?;
        let (game, parsed) = self.games.parse_options(&options, Some(seats))?;
        if parsed.fixed_deck && !self.settings.allow_fixed_deck {
            return Err(ApiError::PermissionDenied(
                "fixed decks are disabled on this server (MISSIVE_ALLOW_FIXED_DECK)".into(),
            ));
        }
        limits::turn_secs("turnTimeoutSecs", req.turn_timeout_secs)?;
        limits::turn_secs("turnReminderSecs", req.turn_reminder_secs)?;
        if let Some(early) = req.turn_reminder_secs {
            match req.turn_timeout_secs {
                None => {
                    return Err(ApiError::invalid(
                        "turnReminderSecs needs turnTimeoutSecs: a reminder comes before a deadline",
                    ));
                }
                Some(timeout) if early == 0 || early >= timeout => {
                    return Err(ApiError::invalid(format!(
                        "turnReminderSecs must be at least 1 and less than turnTimeoutSecs ({timeout})"
                    )));
                }
                Some(_) => {}
            }
        }
        let seed = auth::random_bytes()?;
        let seed_hash: [u8; 32] = Sha256::digest(seed).into();
        let now = self.settings.clock.now();
        let mut payload = json!({
            "config": parsed.config,
            "seat_count": seats,
            "fixed_deck": parsed.fixed_deck,
        });
        if let Some(secs) = req.turn_timeout_secs {
            payload["turn_timeout_secs"] = json!(secs);
        }
        if let Some(secs) = req.turn_reminder_secs {
            payload["turn_reminder_secs"] = json!(secs);
        }
        let mut bot_seats = std::collections::BTreeMap::new();
        for bot in &req.bots {
            let seat = u8::try_from(bot.seat)
                .ok()
                .filter(|s| *s < seats)
                .ok_or_else(|| {
                    ApiError::invalid(format!(
                        "bot seat {} does not exist (seats 0 to {})",
                        bot.seat,
                        seats - 1
                    ))
                })?;
            let strategy = bots::strategy(&bot.strategy).map_err(ApiError::invalid)?;
            if bot_seats.insert(seat, strategy).is_some() {
                return Err(ApiError::invalid(format!("seat {seat} is given two bots")));
            }
        }
        if !bot_seats.is_empty() {
            payload["bots"] = bot_seats
                .iter()
                .map(|(seat, strategy)| json!({ "seat": seat, "strategy": strategy }))
                .collect();
        }
        let taken: Vec<SeatRecord> = bot_seats
            .iter()
            .map(|(&seat, strategy)| SeatRecord {
                seat,
                player: Some(bots::player_name(strategy)),
                token_hash: None,
                bot: Some((*strategy).to_owned()),
            })
            .collect();
        let status = if taken.len() == usize::from(seats) {
            MatchStatus::Active
        } else {
            MatchStatus::Open
        };
        // A retried creation names the match its first attempt created.
        let id = match request_id {
            Some(request_id) => self.keys().await?.match_id(request_id),
            None => uuid::Uuid::new_v4(),
        };
        let state = game.setup(&parsed.config, seats, seed)?;
        let all_seats: Vec<SeatRecord> = (0..seats)
            .map(|seat| {
                taken
                    .iter()
                    .find(|s| s.seat == seat)
                    .cloned()
                    .unwrap_or(SeatRecord {
                        seat,
                        ..SeatRecord::default()
                    })
            })
            .collect();
        let turns = pending_turns(
            &all_seats,
            Timing {
                timeout_secs: req.turn_timeout_secs,
                reminder_secs: req.turn_reminder_secs,
            },
            status,
            state.as_ref(),
            SeatSet::EMPTY,
            None,
            now,
        );
        let wake = turns.as_ref().is_some_and(|t| !t.is_empty());
        let created = self
            .store
            .create_match(
                NewMatch {
                    id,
                    kind: game.kind().to_owned(),
                    config: parsed.config,
                    rules_version: game.rules_version(),
                    seat_count: seats,
                    seed,
                    seed_hash,
                    turn_timeout_secs: req.turn_timeout_secs,
                    turn_reminder_secs: req.turn_reminder_secs,
                    created_at: now,
                    start: MatchUpdate {
                        status: Some(status),
                        seats: taken,
                        turns,
                        notify: Vec::new(),
                    },
                },
                vec![NewEvent {
                    kind: kinds::CREATED.into(),
                    actor: None,
                    request_id: None,
                    payload: payload.clone(),
                    at: now,
                }],
            )
            .await;
        let (record, events) = match created {
            Err(StoreError::AlreadyExists(_)) if request_id.is_some() => {
                return self.created_again(id, &payload).await;
            }
            created => created?,
        };
        tracing::info!(match_id = %id, kind = game.kind(), seats, "match created");
        if wake {
            self.turns_written.notify_one();
        }
        let info = self.info(&record, game.as_ref()).await?;
        let slot = self.slot(id);
        let mut guard = slot.lock().await;
        if guard.is_none() && record.version == events.last().map_or(0, |e| e.seq) {
            // A new match awaits no human seat yet: open, or all bots.
            *guard = Some(Live {
                record,
                game,
                state,
                request_ids: HashMap::new(),
                whole_log: true,
                deadlines: Vec::new(),
                seed: None,
                vacated: Vec::new(),
            });
        }
        Ok(pb::CreateMatchResponse {
            r#match: Some(info),
        })
    }

    /// The answer to a creation retried with its request id: the match the first attempt
    /// created, as it is now, if it was created from the same request.
    async fn created_again(
        &self,
        id: MatchId,
        payload: &Value,
    ) -> ApiResult<pb::CreateMatchResponse> {
        let first = self.store.read_events(id, 0, 1).await?;
        let same = first
            .first()
            .is_some_and(|e| e.kind == kinds::CREATED && same_creation(&e.payload, payload));
        if !same {
            return Err(request_id_reused());
        }
        let record = self.store.get_match(id).await?;
        let game = self.games.get(&record.kind)?.clone();
        Ok(pb::CreateMatchResponse {
            r#match: Some(self.info(&record, game.as_ref()).await?),
        })
    }

    pub async fn get_match(&self, req: pb::GetMatchRequest) -> ApiResult<pb::GetMatchResponse> {
        let id = parse_id(&req.match_id)?;
        let record = self.store.get_match(id).await?;
        let game = self.games.get(&record.kind)?.clone();
        Ok(pb::GetMatchResponse {
            r#match: Some(self.info(&record, game.as_ref()).await?),
        })
    }

    pub async fn list_matches(
        &self,
        req: pb::ListMatchesRequest,
    ) -> ApiResult<pb::ListMatchesResponse> {
        let status = match pb::MatchStatus::try_from(req.status) {
            Ok(pb::MatchStatus::Unspecified | pb::MatchStatus::Open) => MatchStatus::Open,
            Ok(pb::MatchStatus::Active) => MatchStatus::Active,
            Ok(pb::MatchStatus::Finished) => MatchStatus::Finished,
            Ok(pb::MatchStatus::Abandoned) => MatchStatus::Abandoned,
            Err(_) => return Err(ApiError::invalid(format!("unknown status {}", req.status))),
        };
        let limit = match req.limit {
            0 => 50,
            n => n.min(200),
        };
        let after = if req.page_token.is_empty() {
            None
        } else {
            limits::text("pageToken", &req.page_token, limits::MAX_PAGE_TOKEN)?;
            Some(parse_id(&req.page_token).map_err(|_| ApiError::invalid("bad pageToken"))?)
        };
        if !req.kind.is_empty() {
            limits::text("kind", &req.kind, limits::MAX_KIND)?;
            self.games.get(&req.kind).map_err(|_| {
                ApiError::invalid(format!("kind {:?} is not a game of this server", req.kind))
            })?;
        }
        let records = self
            .store
            .list_matches(&MatchFilter {
                status: Some(status),
                kind: (!req.kind.is_empty()).then_some(req.kind),
                limit,
                after,
            })
            .await?;
        let next_page_token = if records.len() == limit as usize {
            records.last().map(|r| r.id.to_string()).unwrap_or_default()
        } else {
            String::new()
        };
        let mut matches = Vec::with_capacity(records.len());
        for record in &records {
            let game = self.games.get(&record.kind)?.clone();
            matches.push(self.info(record, game.as_ref()).await?);
        }
        Ok(pb::ListMatchesResponse {
            matches,
            next_page_token,
        })
    }

    pub async fn join_match(&self, req: pb::JoinMatchRequest) -> ApiResult<pb::JoinMatchResponse> {
        let id = parse_id(&req.match_id)?;
        let player = req.player.trim().to_owned();
        if player.is_empty() {
            return Err(ApiError::invalid(format!(
                "player must be a name of 1 to {} characters",
                limits::MAX_PLAYER_NAME
            )));
        }
        limits::text("player", &player, limits::MAX_PLAYER_NAME)?;
        let request_id =
            limits::optional_request_id("requestId", &req.request_id, limits::MIN_JOIN_REQUEST_ID)?;
        // What the join's event is stored under: never the client's id itself (see `Keys`).
        let stored_id = match request_id {
            Some(request_id) => Some(self.keys().await?.join_request_id(id, request_id)),
            None => None,
        };
        // As with actions: the cached match is trusted, a stale one fails the append's version
        // check, and a refusal is only returned once a fresh read confirms it.
        let mut fresh = false;
        for _ in 0..APPEND_ATTEMPTS {
            let mut guard = self.for_write(id, &mut fresh).await?;
            let live = guard
                .as_mut()
                .ok_or_else(|| ApiError::internal("match not loaded"))?;
            if let (Some(request_id), Some(stored_id)) = (request_id, &stored_id)
                && let Some(&seq) = live.request_ids.get(stored_id)
            {
                let again = self
                    .joined_again(live, &req, &player, request_id, seq)
                    .await;
                return Ok(or_recheck!(fresh, again));
            }
            if live.record.status != MatchStatus::Open {
                or_recheck!(
                    fresh,
                    Err(ApiError::precondition(
                        "match-not-open",
                        "the match is not open to join",
                    ))
                );
            }
            let seat = match req.seat {
                Some(seat) => {
                    let s = live.record.seats.get(seat as usize).ok_or_else(|| {
                        ApiError::invalid(format!(
                            "seat {seat} does not exist (seats 0 to {})",
                            live.record.seat_count.saturating_sub(1)
                        ))
                    })?;
                    if s.player.is_some() {
                        or_recheck!(
                            fresh,
                            Err(ApiError::precondition(
                                "seat-taken",
                                format!("seat {seat} is taken"),
                            ))
                        );
                    }
                    s.seat
                }
                None => or_recheck!(
                    fresh,
                    live.record
                        .seats
                        .iter()
                        .find(|s| s.player.is_none())
                        .map(|s| s.seat)
                        .ok_or_else(|| ApiError::precondition("match-full", "every seat is taken"))
                ),
            };
            let (token, token_hash) = match request_id {
                Some(request_id) => self.keys().await?.seat_token(id, seat, request_id),
                None => auth::new_token()?,
            };
            let starts = live
                .record
                .seats
                .iter()
                .filter(|s| s.player.is_none())
                .count()
                == 1;
            // A free seat's webhook, if any, is a previous player's: it must not learn of
            // this player's turns. Removed only from a freshly read match, so a stale cache
            // never removes the webhook of a player who took the seat on another server.
            if live.may_have_old_webhook(seat) {
                if !fresh {
                    fresh = true;
                    continue;
                }
                self.store.remove_webhook(id, seat).await?;
            }
            let at = self.settings.clock.now();
            let status = if starts {
                MatchStatus::Active
            } else {
                MatchStatus::Open
            };
            let update = MatchUpdate {
                status: starts.then_some(MatchStatus::Active),
                seats: vec![SeatRecord {
                    seat,
                    player: Some(player.clone()),
                    token_hash: Some(token_hash),
                    bot: None,
                }],
                turns: pending_turns(
                    &live.record.seats,
                    Timing::of(&live.record),
                    status,
                    live.state.as_ref(),
                    SeatSet::EMPTY,
                    None,
                    at,
                ),
                // The match starts: every seat it awaits is newly awaited.
                notify: if starts {
                    let seq = live.record.version + 1;
                    crate::webhooks::your_turn(id, seq, at, live.state.awaiting().iter())
                } else {
                    Vec::new()
                },
            };
            let event = NewEvent {
                kind: kinds::JOINED.into(),
                actor: Some(seat),
                request_id: stored_id.clone(),
                payload: json!({ "seat": seat, "player": player }),
                at,
            };
            let update_turns = update.turns.clone();
            match self
                .store
                .append(id, live.record.version, vec![event], update)
                .await
            {
                Ok(appended) if appended.duplicate => {
                    // Another server took the seat for this request first: answer as it did.
                    *guard = None;
                    drop(guard);
                    let mut guard = self.current(id).await?;
                    let live = guard
                        .as_mut()
                        .ok_or_else(|| ApiError::internal("match not loaded"))?;
                    let seq = appended.events.first().map_or(0, |e| e.seq);
                    let request_id = request_id.unwrap_or_default();
                    return self
                        .joined_again(live, &req, &player, request_id, seq)
                        .await;
                }
                Ok(appended) => {
                    let webhooks_queued = appended.webhooks_queued;
                    for event in appended.events {
                        self.after_append(live, event)?;
                    }
                    // The one change the event does not carry.
                    if let Some(s) = live.record.seats.get_mut(usize::from(seat)) {
                        s.token_hash = Some(token_hash);
                    }
                    self.wrote_turns(update_turns.as_ref());
                    self.wake_webhooks(webhooks_queued);
                    tracing::info!(match_id = %id, seat, "seat taken");
                    let info = self.info(&live.record, live.game.as_ref()).await?;
                    return Ok(pb::JoinMatchResponse {
                        seat: seat.into(),
                        seat_token: token,
                        r#match: Some(info),
                    });
                }
                Err(StoreError::Conflict { .. }) => *guard = None,
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::Unavailable(
            "too much contention on this match".into(),
        ))
    }

    /// The answer to a join retried with its request id, whose event is at `seq`: the same
    /// seat and the same seat token, while the player still holds the seat.
    async fn joined_again(
        &self,
        live: &Live,
        req: &pb::JoinMatchRequest,
        player: &str,
        request_id: &str,
        seq: u64,
    ) -> ApiResult<pb::JoinMatchResponse> {
        let event = self.stored_event(live.record.id, seq).await?;
        let seat = payload_seat(&event)?;
        let same = event.kind == kinds::JOINED
            && event.payload["player"].as_str() == Some(player)
            && req.seat.is_none_or(|wanted| wanted == u32::from(seat));
        if !same {
            return Err(request_id_reused());
        }
        let (token, token_hash) = self
            .keys()
            .await?
            .seat_token(live.record.id, seat, request_id);
        let holds = live
            .record
            .seats
            .get(usize::from(seat))
            .and_then(|s| s.token_hash)
            .is_some_and(|h| auth::same_hash(&h, &token_hash));
        if !holds {
            return Err(ApiError::precondition(
                "seat-left",
                format!("this request took seat {seat}, which its player has left since"),
            ));
        }
        Ok(pb::JoinMatchResponse {
            seat: seat.into(),
            seat_token: token,
            r#match: Some(self.info(&live.record, live.game.as_ref()).await?),
        })
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

    /// Folds an event this server appended into the cache, writes a snapshot when one is due
    /// and tells watchers.
    fn after_append(
        &self,
        live: &mut Live,
        event: StoredEvent,
    ) -> ApiResult<Vec<Observation<pb::GameEvent>>> {
        let before = live.record.version;
        let observations = Self::fold_live(live, &event)?;
        let every = self.store.snapshot_every();
        if every > 0 && before / every != event.seq / every {
            self.snapshot(live);
        }
        self.notify(Update {
            event,
            observations: observations.clone(),
            state: live.state.boxed_clone(),
            record: live.record.clone(),
            deadlines: live.deadlines.clone(),
            seed: live.seed,
        });
        Ok(observations)
    }

    /// Writes a snapshot in the background: it only speeds up later loads, so a failure is
    /// logged and otherwise ignored.
    fn snapshot(&self, live: &Live) {
        let Ok(state) = live.state.to_json() else {
            return;
        };
        let snapshot = Snapshot {
            seq: live.record.version,
            rules_version: live.game.rules_version(),
            state,
        };
        let store = self.store.clone();
        let id = live.record.id;
        tokio::spawn(async move {
            if let Err(e) = store.put_snapshot(id, &snapshot).await {
                tracing::warn!(match_id = %id, error = %e, "snapshot not written");
            }
        });
    }

    pub async fn act(&self, caller: &Caller, req: pb::ActRequest) -> ApiResult<pb::ActResponse> {
        let id = parse_id(&req.match_id)?;
        if req.request_id.is_empty() {
            return Err(ApiError::invalid(format!(
                "requestId is required: 1 to {} characters, unique per action",
                limits::MAX_REQUEST_ID
            )));
        }
        limits::request_id("requestId", &req.request_id, 1)?;
        let action = req
            .action
            .as_ref()
            .ok_or_else(|| ApiError::invalid("action is required"))?;
        self.perform(
            id,
            By::Caller(caller, req.seat),
            &req.request_id,
            Play::Action(action),
            req.expected_version,
        )
        .await
    }

    /// Plays a pending turn this server claimed: the bot's choice, or the default action of a
    /// seat whose deadline passed, through the same path as a player's action, pinned to the
    /// version the seat was awaited after and under a request id derived from it. A turn
    /// played twice (two replicas, an expired lease) is therefore applied at most once. A turn
    /// the match has moved past is dropped; on other errors it stays, to be claimed again once
    /// its lease expires.
    pub async fn play_turn(&self, turn: &TurnRecord) -> ApiResult<()> {
        let (request_id, play, what) = match &turn.bot {
            Some(strategy) => (
                format!("bot:{}:{}", turn.version, turn.seat),
                Play::Bot(strategy),
                "bot",
            ),
            None => (
                format!("timeout:{}:{}", turn.version, turn.seat),
                Play::Timeout,
                "timeout",
            ),
        };
        let result = self
            .perform(
                turn.match_id,
                By::Server(turn.seat),
                &request_id,
                play,
                Some(turn.version),
            )
            .await;
        match result {
            Ok(response) => {
                if !response.duplicate {
                    crate::metrics::record_turn(what);
                }
                Ok(())
            }
            Err(
                e @ (ApiError::Aborted(_)
                | ApiError::FailedPrecondition { .. }
                | ApiError::Rule { .. }
                | ApiError::NotFound(_)),
            ) => {
                if matches!(e, ApiError::Rule { .. }) {
                    tracing::error!(match_id = %turn.match_id, seat = turn.seat, error = %e,
                        "the rules refused a {what} turn; dropping it");
                }
                self.store
                    .drop_turn(turn.match_id, turn.seat, turn.version)
                    .await?;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// The one path of every action: authenticate (or act for a seat as the server), check the
    /// match and the version, let the rules apply it, append with the expected version and
    /// the pending turns that follow, then update the cache and tell watchers.
    async fn perform(
        &self,
        id: MatchId,
        by: By<'_>,
        request_id: &str,
        play: Play<'_>,
        expected_version: Option<u64>,
    ) -> ApiResult<pb::ActResponse> {
        // The cached match is trusted at first: an append made from a stale cache fails the
        // store's version check and is retried from a fresh one, and a refusal made from the
        // cache is only returned once the cache is known to be current.
        let mut fresh = false;
        for _ in 0..APPEND_ATTEMPTS {
            let mut guard = self.for_write(id, &mut fresh).await?;
            let live = guard
                .as_mut()
                .ok_or_else(|| ApiError::internal("match not loaded"))?;
            let seat = match by {
                By::Caller(caller, wanted) => {
                    match or_recheck!(
                        fresh,
                        auth::viewer(&live.record, caller.token.as_deref(), wanted, true)
                    ) {
                        Viewer::Seat(seat) => seat,
                        Viewer::Spectator => unreachable!("a required token gives a seat"),
                    }
                }
                By::Server(seat) => seat,
            };
            if let Some(&seq) = live.request_ids.get(request_id) {
                let again = self
                    .duplicate(live, by, seat, seq, play, expected_version)
                    .await;
                return Ok(or_recheck!(fresh, again));
            }
            or_recheck!(
                fresh,
                match live.record.status {
                    MatchStatus::Open => Err(ApiError::precondition(
                        "match-not-started",
                        "the match starts when every seat is taken",
                    )),
                    MatchStatus::Finished | MatchStatus::Abandoned => {
                        Err(ApiError::precondition("match-over", "the match is over"))
                    }
                    MatchStatus::Active => Ok(()),
                }
            );
            if let Some(expected) = expected_version
                && expected != live.record.version
            {
                or_recheck!(
                    fresh,
                    Err(ApiError::Aborted(format!(
                        "the match is at version {}, not {expected}",
                        live.record.version
                    )))
                );
            }
            let (kind, action) = match play {
                Play::Action(action) => (
                    kinds::ACTION,
                    or_recheck!(fresh, live.game.parse_action(action)),
                ),
                Play::Bot(strategy) => {
                    // The bot sees what its seat may see, and nothing else.
                    let view = self.live_view(live, Viewer::Seat(seat)).await?;
                    let choice = bots::choose(strategy, id, seat, &view).ok_or_else(|| {
                        ApiError::precondition("no-legal-action", "the bot has nothing to play")
                    })?;
                    (kinds::ACTION, live.game.parse_action(&choice)?)
                }
                Play::Timeout => {
                    let action = or_recheck!(
                        fresh,
                        live.state.default_action(seat).ok_or_else(|| {
                            ApiError::precondition("not-awaited", "the seat is not awaited")
                        })
                    );
                    (kinds::TIMEOUT, action)
                }
            };
            let before = awaited(live.record.status, live.state.as_ref());
            let mut next = live.state.boxed_clone();
            if let Err(refusal) = next.apply(seat, &action) {
                or_recheck!(fresh, Err(ApiError::from(refusal)));
            }
            let at = self.settings.clock.now();
            let event = NewEvent {
                kind: kind.into(),
                // A timeout is the server's doing: the seat is in the payload, not the actor.
                actor: (kind == kinds::ACTION).then_some(seat),
                request_id: Some(request_id.to_owned()),
                payload: json!({ "seat": seat, "action": action }),
                at,
            };
            let over = next.outcome().is_some();
            if over && live.seed.is_none() {
                // Read once here, so neither the answer nor any watcher reads it again.
                live.seed = Some(self.store.seed(id).await?);
            }
            let status = if over {
                MatchStatus::Finished
            } else {
                MatchStatus::Active
            };
            let turns = pending_turns(
                &live.record.seats,
                Timing::of(&live.record),
                status,
                next.as_ref(),
                before,
                Some(seat),
                at,
            );
            let update = MatchUpdate {
                status: over.then_some(MatchStatus::Finished),
                seats: Vec::new(),
                turns: turns.clone(),
                // Seats awaited after the action that were not before it.
                notify: if over {
                    Vec::new()
                } else {
                    let newly = next.awaiting().iter().filter(|s| !before.contains(*s));
                    crate::webhooks::your_turn(id, live.record.version + 1, at, newly)
                },
            };
            match self
                .store
                .append(id, live.record.version, vec![event], update)
                .await
            {
                Ok(appended) if appended.duplicate => {
                    // Another server applied this request first; report what it did. The
                    // slot's lock is released first: `current` takes it again.
                    *guard = None;
                    drop(guard);
                    let mut guard = self.current(id).await?;
                    let live = guard
                        .as_mut()
                        .ok_or_else(|| ApiError::internal("match not loaded"))?;
                    let seq = appended.events.first().map_or(0, |e| e.seq);
                    return self
                        .duplicate(live, by, seat, seq, play, expected_version)
                        .await;
                }
                Ok(appended) => {
                    let webhooks_queued = appended.webhooks_queued;
                    let mut version = live.record.version;
                    for event in appended.events {
                        version = event.seq;
                        self.after_append(live, event)?;
                    }
                    self.wrote_turns(turns.as_ref());
                    self.wake_webhooks(webhooks_queued);
                    crate::metrics::record_act();
                    tracing::info!(match_id = %id, seat, version, kind, "action applied");
                    let view = self.live_view(live, Viewer::Seat(seat)).await?;
                    return Ok(pb::ActResponse {
                        version,
                        view: Some(view),
                        duplicate: false,
                    });
                }
                Err(StoreError::Conflict { actual, .. }) => {
                    if expected_version.is_some() {
                        return Err(ApiError::Aborted(format!(
                            "the match moved on to version {actual}; reload and retry"
                        )));
                    }
                    *guard = None;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::Unavailable(
            "too much contention on this match".into(),
        ))
    }

    /// The answer to an action whose request id the match holds, at `seq`: the version it
    /// created, with `duplicate` set, if it is the same action by the same seat (and, when the
    /// retry pins a version, pinned to the one it was applied at).
    async fn duplicate(
        &self,
        live: &Live,
        by: By<'_>,
        seat: u8,
        seq: u64,
        play: Play<'_>,
        expected_version: Option<u64>,
    ) -> ApiResult<pb::ActResponse> {
        if let By::Server(_) = by {
            // The server's own request ids name the seat and version: already played.
            return Ok(pb::ActResponse {
                version: seq,
                view: None,
                duplicate: true,
            });
        }
        let event = self.stored_event(live.record.id, seq).await?;
        let same_action = match play {
            Play::Action(action) => live
                .game
                .parse_action(action)
                .is_ok_and(|action| event.payload["action"] == action),
            Play::Bot(_) | Play::Timeout => false,
        };
        let same = event.kind == kinds::ACTION
            && event.actor == Some(seat)
            && same_action
            && expected_version.is_none_or(|v| v.checked_add(1) == Some(seq));
        if !same {
            return Err(request_id_reused());
        }
        let view = self.live_view(live, Viewer::Seat(seat)).await?;
        Ok(pb::ActResponse {
            version: seq,
            view: Some(view),
            duplicate: true,
        })
    }

    pub async fn get_view(
        &self,
        caller: &Caller,
        req: pb::GetViewRequest,
    ) -> ApiResult<pb::GetViewResponse> {
        let id = parse_id(&req.match_id)?;
        let guard = self.current(id).await?;
        let live = guard
            .as_ref()
            .ok_or_else(|| ApiError::internal("match not loaded"))?;
        let viewer = auth::viewer(&live.record, caller.token.as_deref(), req.seat, false)?;
        Ok(pb::GetViewResponse {
            view: Some(self.live_view(live, viewer).await?),
        })
    }

    pub async fn leave_match(
        &self,
        caller: &Caller,
        req: pb::LeaveMatchRequest,
    ) -> ApiResult<pb::LeaveMatchResponse> {
        let id = parse_id(&req.match_id)?;
        let request_id = limits::optional_request_id("requestId", &req.request_id, 1)?;
        for _ in 0..APPEND_ATTEMPTS {
            let mut guard = self.current(id).await?;
            let live = guard
                .as_mut()
                .ok_or_else(|| ApiError::internal("match not loaded"))?;
            if let Some(&seq) = request_id.and_then(|r| live.request_ids.get(r)) {
                return self.left_again(live, caller, seq).await;
            }
            let Viewer::Seat(seat) =
                auth::viewer(&live.record, caller.token.as_deref(), None, true)?
            else {
                unreachable!("a required token gives a seat")
            };
            // Nobody is awaited any more, whether the seat is freed or the match abandoned.
            let turns = pending_turns(
                &live.record.seats,
                Timing::of(&live.record),
                MatchStatus::Abandoned,
                live.state.as_ref(),
                SeatSet::EMPTY,
                None,
                self.settings.clock.now(),
            );
            let update = match live.record.status {
                MatchStatus::Open => MatchUpdate {
                    status: None,
                    seats: vec![SeatRecord {
                        seat,
                        player: None,
                        token_hash: None,
                        bot: None,
                    }],
                    turns,
                    notify: Vec::new(),
                },
                MatchStatus::Active => MatchUpdate {
                    status: Some(MatchStatus::Abandoned),
                    seats: Vec::new(),
                    turns,
                    notify: Vec::new(),
                },
                _ => return Err(ApiError::precondition("match-over", "the match is over")),
            };
            let event = NewEvent {
                kind: kinds::LEFT.into(),
                actor: Some(seat),
                request_id: request_id.map(str::to_owned),
                payload: json!({ "seat": seat }),
                at: self.settings.clock.now(),
            };
            match self
                .store
                .append(id, live.record.version, vec![event], update)
                .await
            {
                Ok(appended) if appended.duplicate => {
                    *guard = None;
                    drop(guard);
                    let guard = self.current(id).await?;
                    let live = guard
                        .as_ref()
                        .ok_or_else(|| ApiError::internal("match not loaded"))?;
                    let seq = appended.events.first().map_or(0, |e| e.seq);
                    return self.left_again(live, caller, seq).await;
                }
                Ok(appended) => {
                    for event in appended.events {
                        self.after_append(live, event)?;
                    }
                    let info = self.info(&live.record, live.game.as_ref()).await?;
                    return Ok(pb::LeaveMatchResponse {
                        r#match: Some(info),
                    });
                }
                Err(StoreError::Conflict { .. }) => *guard = None,
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::Unavailable(
            "too much contention on this match".into(),
        ))
    }

    /// The answer to a leave retried with its request id, whose event is at `seq`: the match as
    /// it is now. The seat's token may no longer be valid (a seat left before the start is
    /// freed), so it is only required to be present, and to be the leaving seat's if it names
    /// a seat at all; nothing but what any spectator sees is answered.
    async fn left_again(
        &self,
        live: &Live,
        caller: &Caller,
        seq: u64,
    ) -> ApiResult<pb::LeaveMatchResponse> {
        if caller.token.is_none() {
            return Err(ApiError::Unauthenticated(
                "a seat token is required: authorization: Bearer <seat token>".into(),
            ));
        }
        let event = self.stored_event(live.record.id, seq).await?;
        let left = payload_seat(&event).ok();
        let same = event.kind == kinds::LEFT
            && match auth::viewer(&live.record, caller.token.as_deref(), None, true) {
                Ok(Viewer::Seat(seat)) => Some(seat) == left,
                _ => true,
            };
        if !same {
            return Err(request_id_reused());
        }
        Ok(pb::LeaveMatchResponse {
            r#match: Some(self.info(&live.record, live.game.as_ref()).await?),
        })
    }

    /// The seat of the caller's token, which is required.
    async fn token_seat(&self, caller: &Caller, id: MatchId) -> ApiResult<(MatchRecord, u8)> {
        let record = self.store.get_match(id).await?;
        let Viewer::Seat(seat) = auth::viewer(&record, caller.token.as_deref(), None, true)? else {
            unreachable!("a required token gives a seat")
        };
        Ok((record, seat))
    }

    /// Registers, replaces or (with an empty URL) removes the token's seat's webhook. A new
    /// secret is drawn at each registration and shown only in this response.
    pub async fn set_webhook(
        &self,
        caller: &Caller,
        req: pb::SetWebhookRequest,
    ) -> ApiResult<pb::SetWebhookResponse> {
        let id = parse_id(&req.match_id)?;
        let request_id = limits::optional_request_id("requestId", &req.request_id, 1)?;
        limits::text("url", &req.url, crate::webhooks::MAX_URL)?;
        let (record, seat) = self.token_seat(caller, id).await?;
        if req.url.is_empty() {
            self.store.remove_webhook(id, seat).await?;
            tracing::info!(match_id = %id, seat, "webhook removed");
            return Ok(pb::SetWebhookResponse {
                secret: String::new(),
            });
        }
        crate::webhooks::validate_url(&req.url, self.settings.webhook_allow_private)
            .map_err(ApiError::invalid)?;
        // A registration with a request id has its secret derived from it: a retry finds the
        // webhook it registered and answers the same secret.
        let secret = match request_id {
            Some(request_id) => {
                let secret = self.keys().await?.webhook_secret(id, seat, request_id);
                if let Some(current) = self.store.webhook(id, seat).await?
                    && auth::same_hash(&current.secret, &secret)
                {
                    if current.url != req.url {
                        return Err(request_id_reused());
                    }
                    return Ok(pb::SetWebhookResponse {
                        secret: hex::encode(secret),
                    });
                }
                secret
            }
            None => auth::random_bytes()?,
        };
        if is_over(record.status) {
            return Err(ApiError::precondition("match-over", "the match is over"));
        }
        self.store
            .set_webhook(id, seat, &req.url, secret, self.settings.clock.now())
            .await?;
        tracing::info!(match_id = %id, seat, "webhook set");
        Ok(pb::SetWebhookResponse {
            secret: hex::encode(secret),
        })
    }

    /// The token's seat's webhook URL and its most recent deliveries.
    pub async fn get_webhook(
        &self,
        caller: &Caller,
        req: pb::GetWebhookRequest,
    ) -> ApiResult<pb::GetWebhookResponse> {
        const RECENT: u32 = 50;
        let id = parse_id(&req.match_id)?;
        let (_, seat) = self.token_seat(caller, id).await?;
        let url = self
            .store
            .webhook(id, seat)
            .await?
            .map(|w| w.url)
            .unwrap_or_default();
        let deliveries = self
            .store
            .deliveries(id, Some(seat), RECENT)
            .await?
            .into_iter()
            .map(|d| pb::WebhookDelivery {
                version: d.key.seq,
                url: d.url,
                attempts: d.attempts,
                delivered_at: d.delivered_at.map(timestamp),
                next_attempt_at: d.next_attempt_at.map(timestamp),
                last_status: d.last_status.map(u32::from),
                last_error: d.last_error.unwrap_or_default(),
                r#type: d.key.kind.as_str().to_owned(),
            })
            .collect();
        Ok(pb::GetWebhookResponse { url, deliveries })
    }

    /// Replays the whole log from setup, calling `f` with each event, what it produced, and the
    /// state and match row right after it.
    async fn replay(
        &self,
        record: &MatchRecord,
        game: &dyn GameKind,
        after: u64,
        mut f: impl FnMut(
            &StoredEvent,
            &[Observation<pb::GameEvent>],
            &dyn MatchState,
            &MatchRecord,
            &[(u8, DateTime<Utc>)],
        ) -> ApiResult<()>,
    ) -> ApiResult<()> {
        let seed = self.store.seed(record.id).await?;
        let mut state = game.setup(&record.config, record.seat_count, seed)?;
        let mut past = record.clone();
        past.status = MatchStatus::Open;
        for seat in &mut past.seats {
            seat.player = None;
            seat.bot = None;
        }
        let mut opening = Some(state.setup_observations());
        let mut deadlines = Vec::new();
        for event in self.store.read_events(record.id, 0, u32::MAX).await? {
            // The first deal happened at creation: it belongs to the `created` event.
            let observations = match (event.kind.as_str(), opening.take()) {
                (kinds::CREATED, Some(opening)) => opening,
                _ => fold(state.as_mut(), &event)?,
            };
            advance_record(&mut past, &event, state.as_ref())?;
            deadlines = next_deadlines(&deadlines, &past, state.as_ref(), &event);
            if event.seq > after {
                f(&event, &observations, state.as_ref(), &past, &deadlines)?;
            }
        }
        Ok(())
    }

    /// What `viewer` may learn from one event.
    fn entries(
        game: &dyn GameKind,
        event: &StoredEvent,
        observations: &[Observation<pb::GameEvent>],
        viewer: Viewer,
    ) -> ApiResult<Vec<pb::HistoryEntry>> {
        use pb::history_entry::Entry;
        let entry = |entry| pb::HistoryEntry {
            seq: event.seq,
            at: Some(timestamp(event.at)),
            entry: Some(entry),
        };
        Ok(match event.kind.as_str() {
            kinds::CREATED => std::iter::once(entry(Entry::Created(Self::created(
                game,
                &event.payload,
                false,
            )?)))
            .chain(
                observations
                    .iter()
                    .filter(|o| o.audience.includes(viewer))
                    .map(|o| entry(Entry::Game(o.event.clone()))),
            )
            .collect(),
            kinds::JOINED => vec![entry(Entry::Joined(pb::PlayerJoined {
                seat: payload_seat(event)?.into(),
                player: event.payload["player"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            }))],
            kinds::LEFT => vec![entry(Entry::Left(pb::PlayerLeft {
                seat: payload_seat(event)?.into(),
            }))],
            kinds::TIMEOUT => {
                let seat = payload_seat(event)?;
                let action = &event.payload["action"];
                // The seat knows what was played for it; others only if the game shows it.
                let shown = viewer == Viewer::Seat(seat) || game.action_is_public(action);
                let timed_out = pb::TurnTimedOut {
                    seat: seat.into(),
                    action: shown.then(|| game.action_to_proto(action)).transpose()?,
                };
                std::iter::once(entry(Entry::TimedOut(timed_out)))
                    .chain(
                        observations
                            .iter()
                            .filter(|o| o.audience.includes(viewer))
                            .map(|o| entry(Entry::Game(o.event.clone()))),
                    )
                    .collect()
            }
            _ => observations
                .iter()
                .filter(|o| o.audience.includes(viewer))
                .map(|o| entry(Entry::Game(o.event.clone())))
                .collect(),
        })
    }

    fn created(game: &dyn GameKind, payload: &Value, reveal: bool) -> ApiResult<pb::MatchCreated> {
        Ok(pb::MatchCreated {
            options: Some(game.options_to_proto(&payload["config"], reveal)?),
            seat_count: payload["seat_count"].as_u64().unwrap_or_default() as u32,
            fixed_deck: payload["fixed_deck"].as_bool().unwrap_or_default(),
            turn_timeout_secs: payload["turn_timeout_secs"].as_u64().map(|s| s as u32),
            turn_reminder_secs: payload["turn_reminder_secs"].as_u64().map(|s| s as u32),
            bots: payload["bots"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| pb::BotSeat {
                    seat: b["seat"].as_u64().unwrap_or_default() as u32,
                    strategy: b["strategy"].as_str().unwrap_or_default().to_owned(),
                })
                .collect(),
        })
    }

    fn audit_event(game: &dyn GameKind, event: &StoredEvent) -> ApiResult<pb::AuditEvent> {
        use pb::audit_event::Body;
        let body = match event.kind.as_str() {
            kinds::CREATED => Some(Body::Created(Self::created(game, &event.payload, true)?)),
            kinds::JOINED => Some(Body::Joined(pb::PlayerJoined {
                seat: payload_seat(event)?.into(),
                player: event.payload["player"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            })),
            kinds::LEFT => Some(Body::Left(pb::PlayerLeft {
                seat: payload_seat(event)?.into(),
            })),
            kinds::ACTION => Some(Body::Action(pb::ActionTaken {
                seat: payload_seat(event)?.into(),
                action: Some(game.action_to_proto(&event.payload["action"])?),
            })),
            kinds::TIMEOUT => Some(Body::TimedOut(pb::TurnTimedOut {
                seat: payload_seat(event)?.into(),
                action: Some(game.action_to_proto(&event.payload["action"])?),
            })),
            _ => None,
        };
        Ok(pb::AuditEvent {
            seq: event.seq,
            kind: event.kind.clone(),
            actor: event.actor.map(u32::from),
            request_id: event.request_id.clone(),
            at: Some(timestamp(event.at)),
            prev_hash: hex::encode(event.prev_hash),
            hash: hex::encode(event.hash),
            body,
        })
    }

    pub async fn get_history(
        &self,
        caller: &Caller,
        req: pb::GetHistoryRequest,
    ) -> ApiResult<pb::GetHistoryResponse> {
        let id = parse_id(&req.match_id)?;
        let record = self.store.get_match(id).await?;
        let viewer = auth::viewer(&record, caller.token.as_deref(), req.seat, false)?;
        let game = self.games.get(&record.kind)?.clone();
        let mut entries = Vec::new();
        let mut audit_events = Vec::new();
        let mut version = 0;
        let over = is_over(record.status);
        self.replay(&record, game.as_ref(), 0, |event, observations, _, _, _| {
            version = event.seq;
            entries.extend(Self::entries(game.as_ref(), event, observations, viewer)?);
            if over {
                audit_events.push(Self::audit_event(game.as_ref(), event)?);
            }
            Ok(())
        })
        .await?;
        let audit = if over {
            Some(pb::AuditLog {
                seed: hex::encode(self.store.seed(id).await?),
                seed_commitment: hex::encode(record.seed_hash),
                rules_version: record.rules_version,
                events: audit_events,
            })
        } else {
            None
        };
        Ok(pb::GetHistoryResponse {
            entries,
            audit,
            version,
        })
    }

    /// Every update after `after_version`, in order, as the caller may see it; the stream ends
    /// once the match is over and its last update sent. Updates this server appends are handed
    /// over directly; others are read from the store when [`Service::wake`] or
    /// [`Service::wake_all`] says so, and at the latest on the `watch_recheck` timer. While the
    /// store is unreachable the stream waits rather than fails.
    pub async fn watch(
        self: &Arc<Self>,
        caller: &Caller,
        req: pb::WatchMatchRequest,
    ) -> ApiResult<mpsc::Receiver<ApiResult<pb::WatchMatchResponse>>> {
        let id = parse_id(&req.match_id)?;
        let record = self.store.get_match(id).await?;
        let viewer = auth::viewer(&record, caller.token.as_deref(), req.seat, false)?;
        let game = self.games.get(&record.kind)?.clone();
        // Subscribe before catching up, so nothing falls between the two.
        let mut updates = self.subscribe(id);
        let (tx, rx) = mpsc::channel(64);
        let service = Arc::clone(self);
        let mut stopping = self.stopping.subscribe();
        let period = self.settings.watch_recheck;
        tokio::spawn(async move {
            let mut last = req.after_version;
            let result: ApiResult<()> = async {
                let mut over = retry_later(
                    id,
                    service
                        .catch_up(id, game.as_ref(), viewer, &mut last, &tx, Some(record))
                        .await,
                )?;
                let mut recheck =
                    tokio::time::interval_at(tokio::time::Instant::now() + period, period);
                recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                while !over {
                    let wake = tokio::select! {
                        wake = updates.recv() => wake,
                        _ = recheck.tick() => Ok(Wake::Resync),
                        () = tx.closed() => return Ok(()),
                        _ = stopping.wait_for(|stop| *stop) => return Ok(()),
                    };
                    match wake {
                        Ok(Wake::Update(update)) if update.event.seq <= last => {}
                        Ok(Wake::Moved(version)) if version <= last => {}
                        Ok(Wake::Update(update)) if update.event.seq == last + 1 => {
                            let info = service
                                .info_with(&update.record, game.as_ref(), update.seed)
                                .await?;
                            let message = pb::WatchMatchResponse {
                                version: update.event.seq,
                                entries: Self::entries(
                                    game.as_ref(),
                                    &update.event,
                                    &update.observations,
                                    viewer,
                                )?,
                                view: Some(Self::view(
                                    info,
                                    &update.record,
                                    update.state.as_ref(),
                                    &update.deadlines,
                                    viewer,
                                )),
                            };
                            if tx.send(Ok(message)).await.is_err() {
                                return Ok(());
                            }
                            last = update.event.seq;
                            over = is_over(update.record.status);
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                            // Events this stream was not handed: read them from the store.
                            over = retry_later(
                                id,
                                service
                                    .catch_up(id, game.as_ref(), viewer, &mut last, &tx, None)
                                    .await,
                            )?;
                            recheck.reset();
                        }
                        Err(broadcast::error::RecvError::Closed) => return Ok(()),
                    }
                }
                Ok(())
            }
            .await;
            if let Err(e) = result {
                let _ = tx.send(Err(e)).await;
            }
        });
        Ok(rx)
    }

    /// Sends every update after `last` from the store; returns whether the match is over.
    /// `read` is the match as just read from the store, if it was.
    async fn catch_up(
        &self,
        id: MatchId,
        game: &dyn GameKind,
        viewer: Viewer,
        last: &mut u64,
        tx: &mpsc::Sender<ApiResult<pb::WatchMatchResponse>>,
        read: Option<MatchRecord>,
    ) -> ApiResult<bool> {
        let record = match read {
            Some(record) => record,
            None => self.store.get_match(id).await?,
        };
        if record.version <= *last {
            return Ok(is_over(record.status));
        }
        let mut pending = Vec::new();
        self.replay(
            &record,
            game,
            *last,
            |event, observations, state, past, deadlines| {
                pending.push((
                    event.seq,
                    Self::entries(game, event, observations, viewer)?,
                    past.clone(),
                    state.boxed_clone(),
                    deadlines.to_vec(),
                ));
                Ok(())
            },
        )
        .await?;
        let mut over = false;
        for (seq, entries, past, state, deadlines) in pending {
            let info = self.info(&past, game).await?;
            let view = Self::view(info, &past, state.as_ref(), &deadlines, viewer);
            if tx
                .send(Ok(pb::WatchMatchResponse {
                    version: seq,
                    entries,
                    view: Some(view),
                }))
                .await
                .is_err()
            {
                return Ok(true);
            }
            *last = seq;
            over = is_over(past.status);
        }
        Ok(over)
    }
}
