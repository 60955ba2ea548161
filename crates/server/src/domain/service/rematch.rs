//! Rematch: the same game again, for the same seats.

use super::*;

impl Service {
    /// The rematch of a match that is over, and the caller's seat in it. The rematch's id is
    /// derived from the match's, so every holder's call (and every retry) reaches the one
    /// rematch; the first creates it, with every human seat held for its previous holder (an
    /// invited seat whose code only the server derives), and each call takes the caller's
    /// seat under a request id derived from the seat, answering the same seat token again.
    pub async fn rematch(
        &self,
        caller: &Caller,
        req: pb::RematchRequest,
    ) -> ApiResult<pb::RematchResponse> {
        let old_id = match_named(&req.match_id)?;
        let old = self.store.get_match(old_id).await?;
        let Viewer::Seat(seat) = auth::viewer(&old, caller, None, true)? else {
            unreachable!("a required token gives a seat")
        };
        if !is_over(old.status) {
            return Err(ApiError::precondition(
                Rule::MatchNotOver,
                "a rematch is for a match that is over",
            ));
        }
        // A match cancelled or expired before it started (a seat was never taken) was never
        // played: there is nothing to play again.
        if old.seats.iter().any(|s| s.player.is_none()) {
            return Err(ApiError::precondition(
                Rule::MatchNotOver,
                "this match was closed before it started, so it has no rematch: create a new \
                 match instead",
            ));
        }
        let holder = old
            .seats
            .get(usize::from(seat))
            .cloned()
            .ok_or_else(|| ApiError::internal("the caller's seat is missing"))?;
        let game = self.games.get(&old.kind)?.clone();
        let options = self.info(&old, game.as_ref()).await?.options;
        let request = pb::CreateMatchRequest {
            options,
            seat_count: old.seat_count.into(),
            turn_timeout_secs: old.turn_timeout_secs,
            turn_reminder_secs: old.turn_reminder_secs,
            bots: old
                .seats
                .iter()
                .filter_map(|s| {
                    s.bot.as_ref().map(|strategy| pb::BotSeat {
                        seat: s.seat.into(),
                        strategy: strategy.clone(),
                        nonce: String::new(),
                    })
                })
                .collect(),
            invite_seats: old
                .seats
                .iter()
                .filter(|s| s.bot.is_none())
                .map(|s| s.seat.into())
                .collect(),
            request_id: String::new(),
        };
        let created = self
            .create(
                None,
                request,
                Some(&format!("rematch:{old_id}")),
                Some(old_id),
            )
            .await?;
        let new_id: MatchId = created
            .r#match
            .as_ref()
            .map(|m| parse_id(&m.match_id))
            .transpose()?
            .ok_or_else(|| ApiError::internal("a created match without its id"))?;
        // The seat's holder, as they held it: their name, and their account if it was bound.
        let joiner = Caller {
            token: None,
            player: holder
                .account
                .map(|id| crate::identity::Player { id, name: None }),
        };
        let join = pb::JoinMatchRequest {
            match_id: new_id.to_string(),
            player: holder.player.unwrap_or_default(),
            seat: Some(seat.into()),
            request_id: String::new(),
            nonce: None,
            invite_code: self.keys().await?.invite_code(new_id, seat),
        };
        let joined = self
            .join(&joiner, &join, Some(&format!("rematch:{old_id}:{seat}")))
            .await?;
        Ok(pb::RematchResponse {
            seat: joined.seat,
            seat_token: joined.seat_token,
            r#match: joined.r#match,
        })
    }
}
