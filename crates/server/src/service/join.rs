//! JoinMatch, and its retry by request id.

use super::*;

impl Service {
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
        // The seat's part of the deal seed: the player's own, or one the server draws.
        let nonce = match &req.nonce {
            Some(nonce) => {
                deal::check_nonce(nonce).map_err(ApiError::invalid)?;
                nonce.clone()
            }
            None => deal::random_nonce()?,
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
                        Rule::MatchNotOpen,
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
                                Rule::SeatTaken,
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
                        .ok_or_else(|| ApiError::precondition(
                            Rule::MatchFull,
                            "every seat is taken"
                        ))
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
            let joined = Event::Joined {
                seat,
                player: player.clone(),
                nonce: Some(nonce.clone()),
            };
            // A match dealt at its start is dealt by this join when it takes the last seat.
            let dealt = match &live.undealt {
                Some(undealt) if starts => {
                    let mut undealt = undealt.clone();
                    undealt.holders.note(live.record.version + 1, &joined)?;
                    undealt.deal(
                        live.game.as_ref(),
                        &live.record.config,
                        live.record.seat_count,
                    )?
                }
                _ => None,
            };
            let state = dealt.as_deref().unwrap_or(live.state.as_ref());
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
                    state,
                    SeatSet::EMPTY,
                    None,
                    at,
                ),
                // The match starts: every seat it awaits is newly awaited.
                notify: if starts {
                    let seq = live.record.version + 1;
                    crate::webhooks::your_turn(id, seq, at, state.awaiting().iter())
                } else {
                    Vec::new()
                },
            };
            let event = joined.to_new(stored_id.clone(), at);
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
    pub(super) async fn joined_again(
        &self,
        live: &Live,
        req: &pb::JoinMatchRequest,
        player: &str,
        request_id: &str,
        seq: u64,
    ) -> ApiResult<pb::JoinMatchResponse> {
        let event = self.stored_event(live.record.id, seq).await?;
        let Event::Joined {
            seat,
            player: joined,
            nonce: stored_nonce,
        } = Event::of(&event)?
        else {
            return Err(request_id_reused());
        };
        let same = joined == player
            && req.seat.is_none_or(|wanted| wanted == u32::from(seat))
            && req
                .nonce
                .as_ref()
                .is_none_or(|nonce| stored_nonce.as_ref() == Some(nonce));
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
                Rule::SeatLeft,
                format!("this request took seat {seat}, which its player has left since"),
            ));
        }
        Ok(pb::JoinMatchResponse {
            seat: seat.into(),
            seat_token: token,
            r#match: Some(self.info(&live.record, live.game.as_ref()).await?),
        })
    }
}
