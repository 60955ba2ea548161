//! CancelMatch, and the expiry of open matches nobody joins: both close an open match with a
//! `closed` event appended through [`Service::write`], so that a closure is written once
//! whoever races for it (the append's expected version decides; the loser reads the match
//! again and finds it over).

use super::*;

/// Open matches an expiry sweep looks at per query; a sweep that closed a whole batch looks
/// again at once.
const EXPIRY_BATCH: u32 = 64;

impl Service {
    /// Cancels an open match, for the holder of its cancel token (derived from the match id,
    /// never stored) or for the player who created it with a player token.
    pub async fn cancel_match(
        &self,
        caller: &Caller,
        req: pb::CancelMatchRequest,
    ) -> ApiResult<pb::CancelMatchResponse> {
        let id = match_named(&req.match_id)?;
        let request_id = request_id_named(&req.request_id)?;
        limits::text("cancelToken", &req.cancel_token, limits::MAX_INVITE_CODE)?;
        self.may_cancel(id, caller, &req.cancel_token).await?;
        self.write(
            id,
            &Close {
                reason: CloseReason::Cancelled,
                request_id,
                idle_for: None,
            },
        )
        .await
    }

    /// Whether the caller may cancel match `id`: its cancel token, or else the player token of
    /// the player who created it. Decided before the match is read: neither changes.
    async fn may_cancel(&self, id: MatchId, caller: &Caller, token: &str) -> ApiResult<()> {
        if !token.is_empty() {
            return match self.keys().await?.cancels(id, token) {
                true => Ok(()),
                false => Err(ApiError::PermissionDenied(
                    "this cancel token is not this match's: use the cancelToken its CreateMatch \
                     returned"
                        .into(),
                )),
            };
        }
        let Some(player) = &caller.player else {
            return Err(ApiError::Unauthenticated(
                "a cancel token is required: cancelToken, as CreateMatch returned it (or the \
                 player token of the player who created the match)"
                    .into(),
            ));
        };
        let creator = crate::ratelimit::ClientKey::Player(player.id.clone()).to_string();
        if self.store.creator(id).await?.as_deref() == Some(creator.as_str()) {
            return Ok(());
        }
        Err(ApiError::PermissionDenied(
            "this player did not create this match: only its creator, or the holder of its \
             cancel token, may cancel it"
                .into(),
        ))
    }

    /// Closes the open matches nobody has joined (nor left) for `after` since their last
    /// event; answers how many this server closed. Each is closed through the write path,
    /// decided again from a fresh read if another server moved it meanwhile: one joined since
    /// is left open, and one another server closed first is left as it is.
    pub async fn expire_open_matches(&self, after: std::time::Duration) -> ApiResult<u32> {
        let idle_for = chrono::Duration::from_std(after).unwrap_or(chrono::Duration::MAX);
        let mut closed = 0;
        loop {
            let Some(before) = self.clock().now().checked_sub_signed(idle_for) else {
                return Ok(closed);
            };
            let idle = self.store.open_idle_since(before, EXPIRY_BATCH).await?;
            let mut batch = 0;
            for id in &idle {
                let close = Close {
                    reason: CloseReason::Expired,
                    request_id: None,
                    idle_for: Some(idle_for),
                };
                match self.write(*id, &close).await {
                    Ok(_) => {
                        batch += 1;
                        tracing::info!(match_id = %id, "open match expired");
                    }
                    // Joined, cancelled or expired by another server since it was found.
                    Err(ApiError::FailedPrecondition { .. }) => {}
                    Err(e) => tracing::warn!(match_id = %id, error = %e, "open match not expired"),
                }
            }
            closed += batch;
            // Only a batch wholly closed says there may be more: a match this server cannot
            // close stays in the next answer, and is not asked about again until the next poll.
            if batch < EXPIRY_BATCH {
                return Ok(closed);
            }
        }
    }
}

/// An open match closed before it starts: cancelled by its creator (authorised before), or
/// expired.
pub(super) struct Close<'a> {
    pub(super) reason: CloseReason,
    pub(super) request_id: Option<&'a str>,
    /// For an expiry: how long the match must have gone without an event; one changed more
    /// recently (a join since it was found) is left open.
    pub(super) idle_for: Option<chrono::Duration>,
}

impl Command for Close<'_> {
    type Plan = ();
    type Answer = pb::CancelMatchResponse;

    fn decide(&self, live: &Live, _fresh: bool, at: DateTime<Utc>) -> ApiResult<Decision<()>> {
        if let Some(&seq) = self.request_id.and_then(|r| live.request_ids.get(r)) {
            return Ok(Decision::Again(seq, ()));
        }
        match live.record.status {
            MatchStatus::Open => {}
            MatchStatus::Active => {
                return Err(ApiError::precondition(
                    Rule::MatchStarted,
                    "the match has started, so it can no longer be cancelled: it ends by play, \
                     or when a player leaves it (LeaveMatch)",
                ));
            }
            MatchStatus::Finished | MatchStatus::Abandoned => {
                return Err(ApiError::precondition(Rule::MatchOver, "the match is over"));
            }
        }
        if let Some(idle_for) = self.idle_for
            && at - live.record.updated_at < idle_for
        {
            return Err(ApiError::precondition(
                Rule::MatchNotOpen,
                "the match changed since it was found idle: it is not expired",
            ));
        }
        let event = Event::Closed {
            reason: self.reason,
        };
        let after = live.after(&event, live.state(), at);
        let update = after.update(Vec::new(), Vec::new());
        let write = Write {
            ends: true,
            ..Write::of(event, self.request_id.map(str::to_owned), at, update)
        };
        Ok(Decision::Append(Box::new(write), ()))
    }

    async fn answer(
        &self,
        service: &Service,
        live: &mut Live,
        (): (),
    ) -> ApiResult<pb::CancelMatchResponse> {
        Ok(pb::CancelMatchResponse {
            r#match: Some(
                service
                    .info_with(&live.record, live.game(), live.seed)
                    .await?,
            ),
        })
    }

    /// A cancel retried with its request id: the match as it is now, if that id closed it.
    async fn again(
        &self,
        service: &Service,
        live: &Live,
        seq: u64,
        (): (),
    ) -> ApiResult<pb::CancelMatchResponse> {
        let event = service.stored_event(live.record.id, seq).await?;
        let same = matches!(Event::of(&event)?, Event::Closed { reason } if reason == self.reason);
        if !same {
            return Err(request_id_reused());
        }
        Ok(pb::CancelMatchResponse {
            r#match: Some(
                service
                    .info_with(&live.record, live.game(), live.seed)
                    .await?,
            ),
        })
    }
}
