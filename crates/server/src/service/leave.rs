//! LeaveMatch, and its retry by request id.

use super::*;

impl Service {
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
                _ => return Err(ApiError::precondition(Rule::MatchOver, "the match is over")),
            };
            let event = Event::Left { seat }
                .to_new(request_id.map(str::to_owned), self.settings.clock.now());
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
    pub(super) async fn left_again(
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
        let left = match Event::of(&event)? {
            Event::Left { seat } => Some(seat),
            _ => None,
        };
        let same = left.is_some()
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
}
