//! The transport-independent core: create, join, act, view, history, watch, list and leave,
//! over the event store and the rules engines. Both transports call these methods with the
//! request messages of the public API and the caller's bearer token, and relay the result.
//!
//! One action's path: authenticate → load the state (the cache, brought up to the store's
//! version, else the newest snapshot plus the events after it) → the rules apply it → append
//! with the expected version → update the cache → notify watchers. The cache never serves a
//! stale version: every use first asks the store for the match's version and folds in any
//! events it missed (another replica may have appended them).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::Utc;
use missive_proto::v1 as pb;
use missive_rules::{Observation, Viewer};
use missive_store::{
    MatchFilter, MatchId, MatchRecord, MatchStatus, MatchUpdate, NewEvent, NewMatch, SeatRecord,
    Snapshot, Store, StoreError, StoredEvent,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::{OwnedMutexGuard, broadcast, mpsc};

use crate::auth;
use crate::error::{ApiError, ApiResult};
use crate::games::{GameKind, MatchState, Registry};

/// Event kinds, persisted: never rename one.
pub mod kinds {
    pub const CREATED: &str = "created";
    pub const JOINED: &str = "joined";
    pub const ACTION: &str = "action";
    pub const LEFT: &str = "left";
}

const MAX_REQUEST_ID: usize = 128;
const MAX_PLAYER_NAME: usize = 64;
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
}

/// A match in memory, at `record.version`.
#[derive(Debug)]
struct Live {
    record: MatchRecord,
    game: Arc<dyn GameKind>,
    state: Box<dyn MatchState>,
    /// Request ids seen while folding, with their actor and seq.
    request_ids: HashMap<String, (Option<u8>, u64)>,
    /// False when loaded from a snapshot: older request ids are then only in the store.
    ids_complete: bool,
}

/// One appended event, as broadcast to watchers.
#[derive(Debug)]
pub struct Update {
    pub event: StoredEvent,
    pub observations: Vec<Observation<pb::GameEvent>>,
    /// The state and the match row right after the event.
    pub state: Box<dyn MatchState>,
    pub record: MatchRecord,
}

type Slot = Arc<tokio::sync::Mutex<Option<Live>>>;

/// The service. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Service {
    store: Store,
    games: Registry,
    settings: Settings,
    cache: Mutex<HashMap<MatchId, Slot>>,
    watchers: Mutex<HashMap<MatchId, broadcast::Sender<Arc<Update>>>>,
    /// Set once the server stops: watch streams end so connections can drain.
    stopping: tokio::sync::watch::Sender<bool>,
}

fn parse_id(id: &str) -> ApiResult<MatchId> {
    id.parse()
        .map_err(|_| ApiError::invalid(format!("{id:?} is not a match id (a UUID)")))
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
        kinds::ACTION if state.outcome().is_some() => record.status = MatchStatus::Finished,
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
    if event.kind != kinds::ACTION {
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

impl Service {
    pub fn new(store: Store, settings: Settings) -> Self {
        Service {
            store,
            games: Registry::new(),
            settings,
            cache: Mutex::new(HashMap::new()),
            watchers: Mutex::new(HashMap::new()),
            stopping: tokio::sync::watch::Sender::new(false),
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

    fn fold_live(
        live: &mut Live,
        event: &StoredEvent,
    ) -> ApiResult<Vec<Observation<pb::GameEvent>>> {
        let observations = fold(live.state.as_mut(), event)?;
        if let Some(request_id) = &event.request_id {
            live.request_ids
                .insert(request_id.clone(), (event.actor, event.seq));
        }
        advance_record(&mut live.record, event, live.state.as_ref())?;
        Ok(observations)
    }

    /// The newest usable snapshot plus the events after it, or the whole log from setup.
    async fn load(&self, id: MatchId) -> ApiResult<Live> {
        let record = self.store.get_match(id).await?;
        let game = self.games.get(&record.kind)?.clone();
        let loaded = self.store.load(id, game.rules_version()).await?;
        let (state, ids_complete) = match loaded.snapshot {
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
            request_ids: HashMap::new(),
            ids_complete,
        };
        for event in &loaded.events {
            let observations = fold(live.state.as_mut(), event)?;
            drop(observations);
            if let Some(request_id) = &event.request_id {
                live.request_ids
                    .insert(request_id.clone(), (event.actor, event.seq));
            }
        }
        // The store's row is authoritative for seats and status.
        live.record = loaded.record;
        Ok(live)
    }

    /// The one place watchers are told of new events. A multi-replica deployment adds its
    /// cross-server notification here.
    fn notify(&self, update: Update) {
        let id = update.event.match_id;
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(sender) = watchers.get(&id)
            && sender.send(Arc::new(update)).is_err()
        {
            watchers.remove(&id);
        }
    }

    fn subscribe(&self, id: MatchId) -> broadcast::Receiver<Arc<Update>> {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        watchers
            .entry(id)
            .or_insert_with(|| broadcast::channel(WATCH_BUFFER).0)
            .subscribe()
    }

    async fn info(&self, record: &MatchRecord, game: &dyn GameKind) -> ApiResult<pb::MatchInfo> {
        let over = is_over(record.status);
        let seed = if over {
            Some(hex::encode(self.store.seed(record.id).await?))
        } else {
            None
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
                })
                .collect(),
            options: Some(game.options_to_proto(&record.config, over)?),
            fixed_deck: game.fixed_deck(&record.config),
            turn_timeout_secs: record.turn_timeout_secs,
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
            r#match: Some(info),
        }
    }

    async fn live_view(&self, live: &Live, viewer: Viewer) -> ApiResult<pb::MatchView> {
        let info = self.info(&live.record, live.game.as_ref()).await?;
        Ok(Self::view(info, &live.record, live.state.as_ref(), viewer))
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
        let (game, parsed) = self.games.parse_options(&options, Some(seats))?;
        if parsed.fixed_deck && !self.settings.allow_fixed_deck {
            return Err(ApiError::PermissionDenied(
                "fixed decks are disabled on this server (MISSIVE_ALLOW_FIXED_DECK)".into(),
            ));
        }
        if req.turn_timeout_secs == Some(0) {
            return Err(ApiError::invalid("turnTimeoutSecs must be at least 1"));
        }
        let seed = auth::random_bytes()?;
        let seed_hash: [u8; 32] = Sha256::digest(seed).into();
        let now = missive_store::truncate_to_micros(Utc::now());
        let mut payload = json!({
            "config": parsed.config,
            "seat_count": seats,
            "fixed_deck": parsed.fixed_deck,
        });
        if let Some(secs) = req.turn_timeout_secs {
            payload["turn_timeout_secs"] = json!(secs);
        }
        let id = uuid::Uuid::new_v4();
        let state = game.setup(&parsed.config, seats, seed)?;
        let (record, events) = self
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
                    created_at: now,
                },
                vec![NewEvent {
                    kind: kinds::CREATED.into(),
                    actor: None,
                    request_id: None,
                    payload,
                    at: now,
                }],
            )
            .await?;
        tracing::info!(match_id = %id, kind = game.kind(), seats, "match created");
        let info = self.info(&record, game.as_ref()).await?;
        let slot = self.slot(id);
        let mut guard = slot.lock().await;
        if guard.is_none() && record.version == events.last().map_or(0, |e| e.seq) {
            *guard = Some(Live {
                record,
                game,
                state,
                request_ids: HashMap::new(),
                ids_complete: true,
            });
        }
        Ok(pb::CreateMatchResponse {
            r#match: Some(info),
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
            Some(parse_id(&req.page_token).map_err(|_| ApiError::invalid("bad pageToken"))?)
        };
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
        if player.is_empty() || player.chars().count() > MAX_PLAYER_NAME {
            return Err(ApiError::invalid(format!(
                "player must be a name of 1 to {MAX_PLAYER_NAME} characters"
            )));
        }
        for _ in 0..APPEND_ATTEMPTS {
            let mut guard = self.current(id).await?;
            let live = guard
                .as_mut()
                .ok_or_else(|| ApiError::internal("match not loaded"))?;
            if live.record.status != MatchStatus::Open {
                return Err(ApiError::precondition(
                    "match-not-open",
                    "the match is not open to join",
                ));
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
                        return Err(ApiError::precondition(
                            "seat-taken",
                            format!("seat {seat} is taken"),
                        ));
                    }
                    s.seat
                }
                None => live
                    .record
                    .seats
                    .iter()
                    .find(|s| s.player.is_none())
                    .map(|s| s.seat)
                    .ok_or_else(|| ApiError::precondition("match-full", "every seat is taken"))?,
            };
            let (token, token_hash) = auth::new_token()?;
            let starts = live
                .record
                .seats
                .iter()
                .filter(|s| s.player.is_none())
                .count()
                == 1;
            let update = MatchUpdate {
                status: starts.then_some(MatchStatus::Active),
                seats: vec![SeatRecord {
                    seat,
                    player: Some(player.clone()),
                    token_hash: Some(token_hash),
                    bot: None,
                }],
            };
            let event = NewEvent {
                kind: kinds::JOINED.into(),
                actor: Some(seat),
                request_id: None,
                payload: json!({ "seat": seat, "player": player }),
                at: missive_store::truncate_to_micros(Utc::now()),
            };
            match self
                .store
                .append(id, live.record.version, vec![event], update)
                .await
            {
                Ok(appended) => {
                    for event in appended.events {
                        self.after_append(live, event)?;
                    }
                    self.sync_record(live).await?;
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

    /// Takes the store's match row (its `updated_at` is the store's clock) unless another
    /// writer has moved the match on, which the next request folds in.
    async fn sync_record(&self, live: &mut Live) -> ApiResult<()> {
        let record = self.store.get_match(live.record.id).await?;
        if record.version == live.record.version {
            live.record = record;
        }
        Ok(())
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
        if req.request_id.is_empty() || req.request_id.len() > MAX_REQUEST_ID {
            return Err(ApiError::invalid(format!(
                "requestId is required: 1 to {MAX_REQUEST_ID} characters, unique per action"
            )));
        }
        let action = req
            .action
            .as_ref()
            .ok_or_else(|| ApiError::invalid("action is required"))?;
        for _ in 0..APPEND_ATTEMPTS {
            let mut guard = self.current(id).await?;
            let live = guard
                .as_mut()
                .ok_or_else(|| ApiError::internal("match not loaded"))?;
            let viewer = auth::viewer(&live.record, caller.token.as_deref(), req.seat, true)?;
            let Viewer::Seat(seat) = viewer else {
                unreachable!("a required token gives a seat")
            };
            if let Some(&(actor, seq)) = live.request_ids.get(&req.request_id) {
                return self.duplicate(live, seat, actor, seq).await;
            }
            match live.record.status {
                MatchStatus::Open => {
                    return Err(ApiError::precondition(
                        "match-not-started",
                        "the match starts when every seat is taken",
                    ));
                }
                MatchStatus::Finished | MatchStatus::Abandoned => {
                    return Err(ApiError::precondition("match-over", "the match is over"));
                }
                MatchStatus::Active => {}
            }
            if let Some(expected) = req.expected_version
                && expected != live.record.version
            {
                return Err(ApiError::Aborted(format!(
                    "the match is at version {}, not {expected}",
                    live.record.version
                )));
            }
            let action = live.game.parse_action(action)?;
            let mut next = live.state.boxed_clone();
            if let Err(refusal) = next.apply(seat, &action) {
                // A retry of an action applied before the newest snapshot is only in the store.
                if !live.ids_complete
                    && let Some((actor, seq)) = self.find_request(id, &req.request_id).await?
                {
                    return self.duplicate(live, seat, actor, seq).await;
                }
                return Err(refusal.into());
            }
            let event = NewEvent {
                kind: kinds::ACTION.into(),
                actor: Some(seat),
                request_id: Some(req.request_id.clone()),
                payload: json!({ "seat": seat, "action": action }),
                at: missive_store::truncate_to_micros(Utc::now()),
            };
            let update = MatchUpdate {
                status: next.outcome().is_some().then_some(MatchStatus::Finished),
                seats: Vec::new(),
            };
            // An append that leaves the match row alone changes nothing the cache does not
            // already know: the store's `updated_at` is then the event's own time.
            let row_changes = update.status.is_some();
            match self
                .store
                .append(id, live.record.version, vec![event], update)
                .await
            {
                Ok(appended) if appended.duplicate => {
                    // Another server applied this request first; report what it did.
                    *guard = None;
                    let mut guard = self.current(id).await?;
                    let live = guard
                        .as_mut()
                        .ok_or_else(|| ApiError::internal("match not loaded"))?;
                    let seq = appended.events.first().map_or(0, |e| e.seq);
                    let actor = appended.events.first().and_then(|e| e.actor);
                    return self.duplicate(live, seat, actor, seq).await;
                }
                Ok(appended) => {
                    let mut version = live.record.version;
                    for event in appended.events {
                        version = event.seq;
                        self.after_append(live, event)?;
                    }
                    if row_changes {
                        self.sync_record(live).await?;
                    }
                    crate::metrics::record_act();
                    tracing::info!(match_id = %id, seat, version, "action applied");
                    let view = self.live_view(live, viewer).await?;
                    return Ok(pb::ActResponse {
                        version,
                        view: Some(view),
                        duplicate: false,
                    });
                }
                Err(StoreError::Conflict { actual, .. }) => {
                    if req.expected_version.is_some() {
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

    async fn find_request(
        &self,
        id: MatchId,
        request_id: &str,
    ) -> ApiResult<Option<(Option<u8>, u64)>> {
        let events = self.store.read_events(id, 0, u32::MAX).await?;
        Ok(events
            .iter()
            .find(|e| e.request_id.as_deref() == Some(request_id))
            .map(|e| (e.actor, e.seq)))
    }

    async fn duplicate(
        &self,
        live: &Live,
        seat: u8,
        actor: Option<u8>,
        seq: u64,
    ) -> ApiResult<pb::ActResponse> {
        if actor != Some(seat) {
            return Err(ApiError::invalid(
                "this requestId was already used by another seat",
            ));
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
        for _ in 0..APPEND_ATTEMPTS {
            let mut guard = self.current(id).await?;
            let live = guard
                .as_mut()
                .ok_or_else(|| ApiError::internal("match not loaded"))?;
            let Viewer::Seat(seat) =
                auth::viewer(&live.record, caller.token.as_deref(), None, true)?
            else {
                unreachable!("a required token gives a seat")
            };
            let update = match live.record.status {
                MatchStatus::Open => MatchUpdate {
                    status: None,
                    seats: vec![SeatRecord {
                        seat,
                        player: None,
                        token_hash: None,
                        bot: None,
                    }],
                },
                MatchStatus::Active => MatchUpdate {
                    status: Some(MatchStatus::Abandoned),
                    seats: Vec::new(),
                },
                _ => return Err(ApiError::precondition("match-over", "the match is over")),
            };
            let event = NewEvent {
                kind: kinds::LEFT.into(),
                actor: Some(seat),
                request_id: None,
                payload: json!({ "seat": seat }),
                at: missive_store::truncate_to_micros(Utc::now()),
            };
            match self
                .store
                .append(id, live.record.version, vec![event], update)
                .await
            {
                Ok(appended) => {
                    for event in appended.events {
                        self.after_append(live, event)?;
                    }
                    self.sync_record(live).await?;
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
        ) -> ApiResult<()>,
    ) -> ApiResult<()> {
        let seed = self.store.seed(record.id).await?;
        let mut state = game.setup(&record.config, record.seat_count, seed)?;
        let mut past = record.clone();
        past.status = MatchStatus::Open;
        for seat in &mut past.seats {
            seat.player = None;
        }
        let mut opening = Some(state.setup_observations());
        for event in self.store.read_events(record.id, 0, u32::MAX).await? {
            // The first deal happened at creation: it belongs to the `created` event.
            let observations = match (event.kind.as_str(), opening.take()) {
                (kinds::CREATED, Some(opening)) => opening,
                _ => fold(state.as_mut(), &event)?,
            };
            advance_record(&mut past, &event, state.as_ref())?;
            if event.seq > after {
                f(&event, &observations, state.as_ref(), &past)?;
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
        self.replay(&record, game.as_ref(), 0, |event, observations, _, _| {
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
    /// once the match is over and its last update sent.
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
        tokio::spawn(async move {
            let mut last = req.after_version;
            let result: ApiResult<()> = async {
                let mut over = service
                    .catch_up(id, game.as_ref(), viewer, &mut last, &tx)
                    .await?;
                while !over {
                    let update = tokio::select! {
                        update = updates.recv() => update,
                        () = tx.closed() => return Ok(()),
                        _ = stopping.wait_for(|stop| *stop) => return Ok(()),
                    };
                    match update {
                        Ok(update) if update.event.seq <= last => {}
                        Ok(update) if update.event.seq == last + 1 => {
                            let info = service.info(&update.record, game.as_ref()).await?;
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
                            over = service
                                .catch_up(id, game.as_ref(), viewer, &mut last, &tx)
                                .await?;
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
    async fn catch_up(
        &self,
        id: MatchId,
        game: &dyn GameKind,
        viewer: Viewer,
        last: &mut u64,
        tx: &mpsc::Sender<ApiResult<pb::WatchMatchResponse>>,
    ) -> ApiResult<bool> {
        let record = self.store.get_match(id).await?;
        if record.version <= *last {
            return Ok(is_over(record.status));
        }
        let mut pending = Vec::new();
        self.replay(&record, game, *last, |event, observations, state, past| {
            pending.push((
                event.seq,
                Self::entries(game, event, observations, viewer)?,
                past.clone(),
                state.boxed_clone(),
            ));
            Ok(())
        })
        .await?;
        let mut over = false;
        for (seq, entries, past, state) in pending {
            let info = self.info(&past, game).await?;
            let view = Self::view(info, &past, state.as_ref(), viewer);
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
