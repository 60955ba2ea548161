//! JoinMatch, and its retry by request id.

use super::*;

impl Service {
    pub async fn join_match(
        &self,
        caller: &Caller,
        req: pb::JoinMatchRequest,
    ) -> ApiResult<pb::JoinMatchResponse> {
        let request_id =
            limits::optional_request_id("requestId", &req.request_id, limits::MIN_JOIN_REQUEST_ID)?
                .map(str::to_owned);
        crate::telemetry::record_request_id(request_id.as_deref());
        self.join(caller, &req, request_id.as_deref()).await
    }

    /// Takes a seat under a request id already checked (or the server's own, for a rematch).
    pub(super) async fn join(
        &self,
        caller: &Caller,
        req: &pb::JoinMatchRequest,
        request_id: Option<&str>,
    ) -> ApiResult<pb::JoinMatchResponse> {
        let id = match_named(&req.match_id)?;
        let account = caller.player.as_ref();
        // With a player token the name may come from the token: its `name`, else its subject.
        let player = match (req.player.trim(), account) {
            ("", Some(account)) => account
                .name
                .clone()
                .unwrap_or_else(|| account.id.chars().take(limits::MAX_PLAYER_NAME).collect()),
            (name, _) => name.to_owned(),
        };
        if player.is_empty() {
            return Err(ApiError::invalid(format!(
                "player must be a name of 1 to {} characters",
                limits::MAX_PLAYER_NAME
            )));
        }
        limits::text("player", &player, limits::MAX_PLAYER_NAME)?;
        limits::text("inviteCode", &req.invite_code, limits::MAX_INVITE_CODE)?;
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
        let keys = self.keys().await?;
        // A seat token of the server's own drawing, unless the request id derives one.
        let drawn = match request_id {
            Some(_) => None,
            None => Some(auth::new_token()?),
        };
        let join = Join {
            id,
            req,
            player: &player,
            account: account.map(|a| a.id.as_str()),
            request_id,
            stored_id,
            nonce,
            keys,
            drawn,
        };
        self.write(id, &join).await
    }
}

/// A join: who takes which seat, under which request id.
pub(super) struct Join<'a> {
    pub(super) id: MatchId,
    pub(super) req: &'a pb::JoinMatchRequest,
    pub(super) player: &'a str,
    /// The player the seat is bound to, when the join came with a player token.
    pub(super) account: Option<&'a str>,
    pub(super) request_id: Option<&'a str>,
    /// The request id as the join's event stores it (see [`Keys::join_request_id`]).
    pub(super) stored_id: Option<String>,
    pub(super) nonce: String,
    pub(super) keys: &'a Keys,
    /// A seat token and its hash, when no request id derives them.
    pub(super) drawn: Option<(String, [u8; 32])>,
}

/// The seat a join takes, with the seat token it answers.
pub(super) struct Taken {
    pub(super) seat: u8,
    pub(super) token: String,
    pub(super) token_hash: [u8; 32],
}

impl Command for Join<'_> {
    type Plan = Option<Taken>;
    type Answer = pb::JoinMatchResponse;

    fn decide(
        &self,
        live: &Live,
        fresh: bool,
        at: DateTime<Utc>,
    ) -> ApiResult<Decision<Option<Taken>>> {
        if let Some(stored_id) = &self.stored_id
            && let Some(&seq) = live.request_ids.get(stored_id)
        {
            return Ok(Decision::Again(seq, None));
        }
        let record = &live.record;
        if record.status != MatchStatus::Open {
            return Err(ApiError::precondition(
                Rule::MatchNotOpen,
                "the match is not open to join",
            ));
        }
        if let Some(account) = self.account
            && let Some(held) = record
                .seats
                .iter()
                .find(|s| s.account.as_deref() == Some(account))
        {
            return Err(ApiError::precondition(
                Rule::AlreadySeated,
                format!("this player already holds seat {}", held.seat),
            ));
        }
        // An invite code opens its own seat, and only invited seats are opened by codes.
        let invited = match self.req.invite_code.as_str() {
            "" => None,
            code => Some(
                self.keys
                    .invited_seat(
                        self.id,
                        record.seats.iter().filter(|s| s.invited).map(|s| s.seat),
                        code,
                    )
                    .ok_or_else(|| {
                        ApiError::PermissionDenied(
                            "the invite code is not valid for this match".into(),
                        )
                    })?,
            ),
        };
        let seat = match (invited, self.req.seat) {
            (Some(seat), Some(wanted)) if wanted != u32::from(seat) => {
                return Err(ApiError::invalid(format!(
                    "the invite code is for seat {seat}, not seat {wanted}"
                )));
            }
            (Some(seat), _) => {
                if record.seats[usize::from(seat)].player.is_some() {
                    return Err(ApiError::precondition(
                        Rule::SeatTaken,
                        format!("seat {seat} is taken"),
                    ));
                }
                seat
            }
            (None, Some(seat)) => {
                let s = record.seats.get(seat as usize).ok_or_else(|| {
                    ApiError::invalid(format!(
                        "seat {seat} does not exist (seats 0 to {})",
                        record.seat_count.saturating_sub(1)
                    ))
                })?;
                if s.player.is_some() {
                    return Err(ApiError::precondition(
                        Rule::SeatTaken,
                        format!("seat {seat} is taken"),
                    ));
                }
                if s.invited {
                    return Err(ApiError::PermissionDenied(format!(
                        "seat {seat} is held for an invited player: join it with its invite code"
                    )));
                }
                s.seat
            }
            (None, None) => record
                .seats
                .iter()
                .find(|s| s.player.is_none() && !s.invited)
                .map(|s| s.seat)
                .ok_or_else(|| {
                    ApiError::precondition(
                        Rule::MatchFull,
                        "every seat is taken or held for an invited player",
                    )
                })?,
        };
        // A free seat's webhook, if any, is a previous player's: it must not learn of this
        // player's turns. Removed only from a freshly read match, so a stale cache never
        // removes the webhook of a player who took the seat on another server.
        let remove_webhook = live.may_have_old_webhook(seat).then_some(seat);
        if remove_webhook.is_some() && !fresh {
            return Ok(Decision::Recheck);
        }
        let (token, token_hash) = match (self.request_id, &self.drawn) {
            (Some(request_id), _) => self.keys.seat_token(self.id, seat, request_id),
            (None, Some(drawn)) => drawn.clone(),
            (None, None) => return Err(ApiError::internal("a join without a seat token")),
        };
        let seq = record.version + 1;
        let event = Event::Joined {
            seat,
            player: self.player.to_owned(),
            nonce: Some(self.nonce.clone()),
        };
        // A match dealt at its start is dealt by this join when it takes the last seat.
        let mut next = live.table.clone();
        let observations = next.apply(seq, &event)?;
        let after = live.after(&event, next.state(), at);
        let starts = after.status == Some(MatchStatus::Active);
        let seats = vec![SeatRecord {
            seat,
            player: Some(self.player.to_owned()),
            token_hash: Some(token_hash),
            bot: None,
            account: self.account.map(str::to_owned),
            // Not written by an append: the seat keeps what its creation set.
            invited: false,
        }];
        // The match starts: every seat it awaits is newly awaited.
        let notify = if starts {
            crate::webhooks::your_turn(self.id, seq, at, next.state().awaiting().iter())
        } else {
            Vec::new()
        };
        let update = after.update(seats, notify);
        let write = Write {
            applied: Some(Applied {
                table: next,
                observations,
            }),
            remove_webhook,
            ..Write::of(event, self.stored_id.clone(), at, update)
        };
        Ok(Decision::Append(
            Box::new(write),
            Some(Taken {
                seat,
                token,
                token_hash,
            }),
        ))
    }

    async fn answer(
        &self,
        service: &Service,
        live: &mut Live,
        taken: Option<Taken>,
    ) -> ApiResult<pb::JoinMatchResponse> {
        let Taken {
            seat,
            token,
            token_hash,
        } = taken.ok_or_else(|| ApiError::internal("a join appended without its seat"))?;
        // The changes the event does not carry.
        if let Some(s) = live.record.seats.get_mut(usize::from(seat)) {
            s.token_hash = Some(token_hash);
            s.account = self.account.map(str::to_owned);
        }
        tracing::info!(match_id = %self.id, seat, "seat taken");
        let view = service.live_view(live, Viewer::Seat(seat)).await?;
        Ok(pb::JoinMatchResponse {
            seat: seat.into(),
            seat_token: token,
            r#match: view.r#match.clone(),
            view: Some(view),
        })
    }

    async fn again(
        &self,
        service: &Service,
        live: &Live,
        seq: u64,
        _: Option<Taken>,
    ) -> ApiResult<pb::JoinMatchResponse> {
        let request_id = self.request_id.unwrap_or_default();
        service
            .joined_again(live, self.req, self.player, request_id, seq)
            .await
    }
}

impl Service {
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
        let view = self.live_view(live, Viewer::Seat(seat)).await?;
        Ok(pb::JoinMatchResponse {
            seat: seat.into(),
            seat_token: token,
            r#match: view.r#match.clone(),
            view: Some(view),
        })
    }
}
