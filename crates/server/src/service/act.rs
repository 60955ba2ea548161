//! The one write path of actions: a player's act, a bot's turn and a passed deadline's
//! default action, each applied once, and their retries.

use super::*;

impl Service {
    /// Folds an event this server appended into the cache, writes a snapshot when one is due
    /// and tells watchers.
    pub(super) fn after_append(
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
    pub(super) fn snapshot(&self, live: &Live) {
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
    pub(super) async fn perform(
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
                        Rule::MatchNotStarted,
                        "the match starts when every seat is taken",
                    )),
                    MatchStatus::Finished | MatchStatus::Abandoned => {
                        Err(ApiError::precondition(Rule::MatchOver, "the match is over"))
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
                        ApiError::precondition(Rule::NoLegalAction, "the bot has nothing to play")
                    })?;
                    (kinds::ACTION, live.game.parse_action(&choice)?)
                }
                Play::Timeout => {
                    let action = or_recheck!(
                        fresh,
                        live.state.default_action(seat).ok_or_else(|| {
                            ApiError::precondition(Rule::NotAwaited, "the seat is not awaited")
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
            let event = if kind == kinds::TIMEOUT {
                Event::Timeout { seat, action }
            } else {
                Event::Action { seat, action }
            }
            .to_new(Some(request_id.to_owned()), at);
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
    pub(super) async fn duplicate(
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
        let same_action = match (play, Event::of(&event)?) {
            (
                Play::Action(action),
                Event::Action {
                    seat: acted,
                    action: stored,
                },
            ) => {
                acted == seat
                    && live
                        .game
                        .parse_action(action)
                        .is_ok_and(|action| action == stored)
            }
            _ => false,
        };
        let same = same_action && expected_version.is_none_or(|v| v.checked_add(1) == Some(seq));
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
}
