//! The reads: ListGames, GetMatch, ListMatches, GetView and GetHistory (with the replay behind
//! it).

use super::*;

/// One event of a replayed log, with what it told whom and the match right after it.
pub(super) struct Replayed<'a> {
    pub(super) event: &'a StoredEvent,
    pub(super) typed: &'a Event,
    pub(super) observations: &'a [Observation<pb::GameEvent>],
    pub(super) state: &'a dyn MatchState,
    pub(super) record: &'a MatchRecord,
    pub(super) deadlines: &'a [(u8, DateTime<Utc>)],
}

impl Service {
    /// ListGames: every game's catalogue, built once with the registry.
    pub fn list_games(&self, _req: pb::ListGamesRequest) -> pb::ListGamesResponse {
        self.games.catalogue().clone()
    }

    pub async fn get_match(&self, req: pb::GetMatchRequest) -> ApiResult<pb::GetMatchResponse> {
        let id = match_named(&req.match_id)?;
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
            0 => limits::LIST_MATCHES_DEFAULT,
            n => n.min(limits::LIST_MATCHES_MAX),
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

    pub async fn get_view(
        &self,
        caller: &Caller,
        req: pb::GetViewRequest,
    ) -> ApiResult<pb::GetViewResponse> {
        let id = match_named(&req.match_id)?;
        let guard = self.current(id).await?;
        let live = guard
            .as_ref()
            .ok_or_else(|| ApiError::internal("match not loaded"))?;
        let viewer = auth::viewer(&live.record, caller, req.seat, false)?;
        Ok(pb::GetViewResponse {
            view: Some(self.live_view(live, viewer).await?),
        })
    }

    /// Replays the whole log from setup, calling `f` with each event, what it produced, and the
    /// state and match row right after it.
    pub(super) async fn replay(
        &self,
        record: &MatchRecord,
        game: &Arc<dyn GameKind>,
        after: u64,
        mut f: impl FnMut(Replayed<'_>) -> ApiResult<()>,
    ) -> ApiResult<()> {
        let seed = self.seed(record.id).await?;
        let events = self.store.read_events(record.id, 0, u32::MAX).await?;
        let mut past = record.clone();
        past.status = MatchStatus::Open;
        for seat in &mut past.seats {
            seat.player = None;
            seat.bot = None;
        }
        let table = Table::of_match(game.clone(), record, events.first(), seed)?;
        let mut live = Live::new(past, table, true, HashMap::new());
        for event in events {
            let typed = Event::of(&event)?;
            let observations = live.apply(&event, &typed, None)?;
            if event.seq > after {
                f(Replayed {
                    event: &event,
                    typed: &typed,
                    observations: &observations,
                    state: live.state(),
                    record: &live.record,
                    deadlines: &live.deadlines,
                })?;
            }
        }
        Ok(())
    }

    pub async fn get_history(
        &self,
        caller: &Caller,
        req: pb::GetHistoryRequest,
    ) -> ApiResult<pb::GetHistoryResponse> {
        let id = match_named(&req.match_id)?;
        let record = self.store.get_match(id).await?;
        let viewer = auth::viewer(&record, caller, req.seat, false)?;
        let game = self.games.get(&record.kind)?.clone();
        let mut entries = Vec::new();
        let mut audit_events = Vec::new();
        let mut version = 0;
        let mut outcome = None;
        let over = is_over(record.status);
        self.replay(&record, &game, 0, |step| {
            version = step.event.seq;
            entries.extend(Self::entries(game.as_ref(), &step, viewer)?);
            if over {
                audit_events.push(Self::audit_event(game.as_ref(), step.event, step.typed)?);
                outcome = crate::audit::outcome_of(step.state);
            }
            Ok(())
        })
        .await?;
        let audit = if over {
            let seed = self.store.seed(id).await?;
            let signer = self.audit_signer().await?;
            Some(Self::audit_log(
                &record,
                seed,
                audit_events,
                outcome,
                signer,
            ))
        } else {
            None
        };
        Ok(pb::GetHistoryResponse {
            entries,
            audit,
            version,
        })
    }
}

impl Service {
    /// The public keys audit heads are signed with: the one this store's servers share.
    pub async fn get_audit_keys(
        &self,
        _req: pb::GetAuditKeysRequest,
    ) -> ApiResult<pb::GetAuditKeysResponse> {
        Ok(pb::GetAuditKeysResponse {
            keys: vec![self.audit_signer().await?.public_key()],
        })
    }
}

impl Service {
    /// The caller's matches, newest activity first: each with the caller's seat, whether it
    /// is awaited and until when. Needs a player token.
    pub async fn list_my_matches(
        &self,
        caller: &Caller,
        req: pb::ListMyMatchesRequest,
    ) -> ApiResult<pb::ListMyMatchesResponse> {
        let Some(player) = &caller.player else {
            return Err(ApiError::Unauthenticated(
                "ListMyMatches needs a player token: authorization: Bearer <JWT>".into(),
            ));
        };
        let status = match pb::MatchStatus::try_from(req.status) {
            Ok(pb::MatchStatus::Unspecified) => None,
            Ok(pb::MatchStatus::Open) => Some(MatchStatus::Open),
            Ok(pb::MatchStatus::Active) => Some(MatchStatus::Active),
            Ok(pb::MatchStatus::Finished) => Some(MatchStatus::Finished),
            Ok(pb::MatchStatus::Abandoned) => Some(MatchStatus::Abandoned),
            Err(_) => return Err(ApiError::invalid(format!("unknown status {}", req.status))),
        };
        let limit = match req.limit {
            0 => limits::MY_MATCHES_DEFAULT,
            n => n.min(limits::MY_MATCHES_MAX),
        };
        let after = if req.page_token.is_empty() {
            None
        } else {
            limits::text("pageToken", &req.page_token, limits::MAX_PAGE_TOKEN)?;
            Some(parse_activity_token(&req.page_token)?)
        };
        let records = self
            .store
            .player_matches(&missive_store::PlayerFilter {
                account: player.id.clone(),
                status,
                limit,
                after,
            })
            .await?;
        let next_page_token = match records.last() {
            Some(last) if records.len() == limit as usize => activity_token(last),
            _ => String::new(),
        };
        let mut matches = Vec::with_capacity(records.len());
        for record in records {
            matches.push(self.my_match(record, &player.id).await?);
        }
        Ok(pb::ListMyMatchesResponse {
            matches,
            next_page_token,
        })
    }

    /// One of a player's matches, from their seat: an active one is read through the cache
    /// (loaded when absent) for whom it awaits and the deadlines.
    async fn my_match(&self, record: MatchRecord, account: &str) -> ApiResult<pb::MyMatch> {
        let seat = record
            .seats
            .iter()
            .find(|s| s.account.as_deref() == Some(account))
            .map(|s| s.seat)
            .ok_or_else(|| ApiError::internal("a listed match without the player's seat"))?;
        let game = self.games.get(&record.kind)?.clone();
        let (your_turn, deadline) = if record.status == MatchStatus::Active {
            let guard = self.current(record.id).await?;
            let live = guard
                .as_ref()
                .ok_or_else(|| ApiError::internal("match not loaded"))?;
            let awaited =
                live.record.status == MatchStatus::Active && live.state().awaiting().contains(seat);
            let deadline = live
                .deadlines
                .iter()
                .find(|(s, _)| *s == seat)
                .map(|(_, due)| *due);
            (awaited, deadline.filter(|_| awaited))
        } else {
            (false, None)
        };
        let info = self.info(&record, game.as_ref()).await?;
        Ok(Self::my_match_of(
            info,
            seat,
            your_turn,
            deadline,
            record.updated_at,
        ))
    }
}

/// The page token after `record`: its last activity in microseconds and its id.
fn activity_token(record: &MatchRecord) -> String {
    format!("{}_{}", record.updated_at.timestamp_micros(), record.id)
}

fn parse_activity_token(token: &str) -> ApiResult<(DateTime<Utc>, MatchId)> {
    let bad = || ApiError::invalid("bad pageToken");
    let (micros, id) = token.split_once('_').ok_or_else(bad)?;
    let at = micros
        .parse::<i64>()
        .ok()
        .and_then(DateTime::from_timestamp_micros)
        .ok_or_else(bad)?;
    Ok((at, parse_id(id).map_err(|_| bad())?))
}
