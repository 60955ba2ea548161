//! LeaveMatch, and its retry by request id.

use super::*;

impl Service {
    pub async fn leave_match(
        &self,
        caller: &Caller,
        req: pb::LeaveMatchRequest,
    ) -> ApiResult<pb::LeaveMatchResponse> {
        let id = match_named(&req.match_id)?;
        let request_id = request_id_named(&req.request_id)?;
        self.write(id, &Leave { caller, request_id }).await
    }
}

/// A seat's holder leaves it.
pub(super) struct Leave<'a> {
    pub(super) caller: &'a Caller,
    pub(super) request_id: Option<&'a str>,
}

impl Command for Leave<'_> {
    type Plan = ();
    type Answer = pb::LeaveMatchResponse;

    /// A leave frees a seat or abandons the match: decided from a current match only.
    const FRESH: bool = true;

    fn decide(&self, live: &Live, _fresh: bool, at: DateTime<Utc>) -> ApiResult<Decision<()>> {
        if let Some(&seq) = self.request_id.and_then(|r| live.request_ids.get(r)) {
            return Ok(Decision::Again(seq, ()));
        }
        let Viewer::Seat(seat) = auth::viewer(&live.record, self.caller, None, true)? else {
            unreachable!("a required token gives a seat")
        };
        let event = Event::Left { seat };
        let after = live.after(&event, live.state(), at);
        let seats = match live.record.status {
            // The seat is free again, for someone else.
            MatchStatus::Open => vec![SeatRecord {
                seat,
                ..SeatRecord::default()
            }],
            MatchStatus::Active => Vec::new(),
            _ => return Err(ApiError::precondition(Rule::MatchOver, "the match is over")),
        };
        let update = after.update(seats, Vec::new());
        let write = Write::of(event, self.request_id.map(str::to_owned), at, update);
        Ok(Decision::Append(Box::new(write), ()))
    }

    async fn answer(
        &self,
        service: &Service,
        live: &mut Live,
        (): (),
    ) -> ApiResult<pb::LeaveMatchResponse> {
        let info = service.info(&live.record, live.game()).await?;
        Ok(pb::LeaveMatchResponse {
            r#match: Some(info),
        })
    }

    async fn again(
        &self,
        service: &Service,
        live: &Live,
        seq: u64,
        (): (),
    ) -> ApiResult<pb::LeaveMatchResponse> {
        service.left_again(live, self.caller, seq).await
    }
}

impl Service {
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
        if caller.token.is_none() && caller.player.is_none() {
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
            && match auth::viewer(&live.record, caller, None, true) {
                Ok(Viewer::Seat(seat)) => Some(seat) == left,
                _ => true,
            };
        if !same {
            return Err(request_id_reused());
        }
        Ok(pb::LeaveMatchResponse {
            r#match: Some(self.info(&live.record, live.game()).await?),
        })
    }
}
