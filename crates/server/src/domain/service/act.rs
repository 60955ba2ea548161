//! Act, and the server's own turns: a player's action, a bot's choice and a passed deadline's
//! default action, each decided from the cached match, validated by the rules once and
//! appended through [`Service::write`], and their retries.

use super::*;

/// An action to play: who plays it, what, under which request id, at which version if pinned.
pub(super) struct Act<'a> {
    pub(super) id: MatchId,
    pub(super) by: By<'a>,
    pub(super) request_id: &'a str,
    pub(super) play: Play<'a>,
    pub(super) expected_version: Option<u64>,
    /// Answer with the version only: the caller takes its view from the act's update.
    pub(super) omit_view: bool,
}

impl Command for Act<'_> {
    /// The seat that acts.
    type Plan = u8;
    type Answer = pb::ActResponse;

    fn decide(&self, live: &Live, _fresh: bool, at: DateTime<Utc>) -> ApiResult<Decision<u8>> {
        let seat = match self.by {
            By::Caller(caller, wanted) => match auth::viewer(&live.record, caller, wanted, true)? {
                Viewer::Seat(seat) => seat,
                Viewer::Spectator => unreachable!("a required token gives a seat"),
            },
            By::Server(seat) => seat,
        };
        if let Some(&seq) = live.request_ids.get(self.request_id) {
            return Ok(Decision::Again(seq, seat));
        }
        match live.record.status {
            MatchStatus::Open => {
                return Err(ApiError::precondition(
                    Rule::MatchNotStarted,
                    "the match starts when every seat is taken",
                ));
            }
            MatchStatus::Finished | MatchStatus::Abandoned => {
                return Err(ApiError::precondition(Rule::MatchOver, "the match is over"));
            }
            MatchStatus::Active => {}
        }
        let version = live.record.version;
        if let Some(expected) = self.expected_version
            && expected != version
        {
            return Err(ApiError::Aborted(format!(
                "the match is at version {version}, not {expected}"
            )));
        }
        let state = live.state();
        let (action, timeout) = match self.play {
            Play::Action(action) => (live.game().parse_action(action)?, false),
            // The bot sees what its seat may see, and nothing else.
            Play::Bot(strategy) => (
                state
                    .bot_action(strategy, self.id, version, seat)
                    .ok_or_else(|| {
                        ApiError::precondition(Rule::NoLegalAction, "the bot has nothing to play")
                    })?,
                false,
            ),
            Play::Timeout => (
                state.default_action(seat).ok_or_else(|| {
                    ApiError::precondition(Rule::NotAwaited, "the seat is not awaited")
                })?,
                true,
            ),
        };
        let before = awaited(live.record.status, state);
        let mut next = live.table.clone();
        let observations = next.play(seat, &action)?;
        let stored = live.game().encode_action(&action)?;
        let event = if timeout {
            Event::Timeout {
                seat,
                action: stored,
            }
        } else {
            Event::Action {
                seat,
                action: stored,
            }
        };
        let after = live.after(&event, next.state(), at);
        let over = after.status == Some(MatchStatus::Finished);
        // Seats awaited after the action that were not before it.
        let notify = if over {
            Vec::new()
        } else {
            let newly = next
                .state()
                .awaiting()
                .iter()
                .filter(|s| !before.contains(*s));
            crate::webhooks::your_turn(self.id, version + 1, at, newly)
        };
        let update = after.update(Vec::new(), notify);
        let write = Write {
            applied: Some(Applied {
                table: next,
                observations,
            }),
            ends: over,
            ..Write::of(event, Some(self.request_id.to_owned()), at, update)
        };
        Ok(Decision::Append(Box::new(write), seat))
    }

    async fn answer(
        &self,
        service: &Service,
        live: &mut Live,
        seat: u8,
    ) -> ApiResult<pb::ActResponse> {
        let version = live.record.version;
        crate::metrics::record_act();
        tracing::info!(match_id = %self.id, seat, version, "action applied");
        Ok(pb::ActResponse {
            version,
            view: self.view(service, live, seat).await?,
            duplicate: false,
        })
    }

    /// The answer to an action whose request id the match holds, at `seq`: the version it
    /// created, with `duplicate` set, if it is the same action by the same seat (and, when the
    /// retry pins a version, pinned to the one it was applied at).
    async fn again(
        &self,
        service: &Service,
        live: &Live,
        seq: u64,
        seat: u8,
    ) -> ApiResult<pb::ActResponse> {
        if let By::Server(_) = self.by {
            // The server's own request ids name the seat and version: already played.
            return Ok(pb::ActResponse {
                version: seq,
                view: None,
                duplicate: true,
            });
        }
        let event = service.stored_event(live.record.id, seq).await?;
        let same_action = match (self.play, Event::of(&event)?) {
            (
                Play::Action(action),
                Event::Action {
                    seat: acted,
                    action: stored,
                },
            ) => {
                let game = live.game();
                acted == seat
                    && game.parse_action(action).is_ok_and(|action| {
                        game.decode_action(&stored)
                            .is_ok_and(|stored| stored == action)
                    })
            }
            _ => false,
        };
        let pinned = self
            .expected_version
            .is_none_or(|v| v.checked_add(1) == Some(seq));
        if !(same_action && pinned) {
            return Err(request_id_reused());
        }
        Ok(pb::ActResponse {
            version: seq,
            view: self.view(service, live, seat).await?,
            duplicate: true,
        })
    }

    fn lost_race(&self, actual: u64) -> Option<ApiError> {
        // A match still at the pinned version is decided again.
        self.expected_version.filter(|&v| v != actual).map(|_| {
            ApiError::Aborted(format!(
                "the match moved on to version {actual}; reload and retry"
            ))
        })
    }
}

impl Act<'_> {
    /// The acting seat's view for the answer, unless the caller asked to go without it.
    async fn view(
        &self,
        service: &Service,
        live: &Live,
        seat: u8,
    ) -> ApiResult<Option<pb::MatchView>> {
        if self.omit_view {
            return Ok(None);
        }
        Ok(Some(service.live_view(live, Viewer::Seat(seat)).await?))
    }
}

impl Service {
    pub async fn act(&self, caller: &Caller, req: pb::ActRequest) -> ApiResult<pb::ActResponse> {
        let id = match_named(&req.match_id)?;
        if req.request_id.is_empty() {
            return Err(ApiError::invalid(format!(
                "requestId is required: 1 to {} characters, unique per action",
                limits::MAX_REQUEST_ID
            )));
        }
        limits::request_id("requestId", &req.request_id, 1)?;
        crate::telemetry::record_request_id(Some(&req.request_id));
        let action = req
            .action
            .as_ref()
            .ok_or_else(|| ApiError::invalid("action is required"))?;
        let act = Act {
            id,
            by: By::Caller(caller, req.seat),
            request_id: &req.request_id,
            play: Play::Action(action),
            expected_version: req.expected_version,
            omit_view: req.omit_view,
        };
        self.write(id, &act).await
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
        crate::telemetry::record_request_id(Some(&request_id));
        let act = Act {
            id: turn.match_id,
            by: By::Server(turn.seat),
            request_id: &request_id,
            play,
            expected_version: Some(turn.version),
            omit_view: true,
        };
        match self.write(turn.match_id, &act).await {
            Ok(response) => {
                if !response.duplicate {
                    crate::metrics::record_turn(what);
                }
                Ok(())
            }
            // A match under rules this build does not run (a newer server created it, during
            // a rolling deploy): the turn is not this server's to drop. Its lease runs out and
            // a server that runs those rules plays it.
            Err(e) if e.rule() == Some(crate::error::Rule::RulesVersionUnavailable.code()) => {
                tracing::warn!(match_id = %turn.match_id, seat = turn.seat, error = %e,
                    "a {what} turn of a match under rules this server does not run; leaving it");
                Err(e)
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
}
