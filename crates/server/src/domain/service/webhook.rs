//! SetWebhook and GetWebhook.

use super::*;

impl Service {
    /// The seat of the caller's token, which is required.
    pub(super) async fn token_seat(
        &self,
        caller: &Caller,
        id: MatchId,
    ) -> ApiResult<(MatchRecord, u8)> {
        let record = self.store.get_match(id).await?;
        let Viewer::Seat(seat) = auth::viewer(&record, caller, None, true)? else {
            unreachable!("a required token gives a seat")
        };
        Ok((record, seat))
    }

    /// Registers, replaces or (with an empty URL) removes the token's seat's webhook. A new
    /// secret is drawn at each registration and shown only in this response.
    pub async fn set_webhook(
        &self,
        caller: &Caller,
        req: pb::SetWebhookRequest,
    ) -> ApiResult<pb::SetWebhookResponse> {
        let id = match_named(&req.match_id)?;
        let request_id = request_id_named(&req.request_id)?;
        limits::text("url", &req.url, crate::webhooks::MAX_URL)?;
        let (record, seat) = self.token_seat(caller, id).await?;
        if req.url.is_empty() {
            self.store.remove_webhook(id, seat).await?;
            tracing::info!(match_id = %id, seat, "webhook removed");
            return Ok(pb::SetWebhookResponse {
                secret: String::new(),
            });
        }
        crate::webhooks::validate_url(&req.url, self.settings.webhook_allow_private)
            .map_err(ApiError::invalid)?;
        // A registration with a request id has its secret derived from it: a retry finds the
        // webhook it registered and answers the same secret.
        let secret = match request_id {
            Some(request_id) => {
                let secret = self.keys().await?.webhook_secret(id, seat, request_id);
                if let Some(current) = self.store.webhook(id, seat).await?
                    && auth::same_hash(&current.secret, &secret)
                {
                    if current.url != req.url {
                        return Err(request_id_reused());
                    }
                    return Ok(pb::SetWebhookResponse {
                        secret: hex::encode(secret),
                    });
                }
                secret
            }
            None => auth::random_bytes()?,
        };
        if is_over(record.status) {
            return Err(ApiError::precondition(Rule::MatchOver, "the match is over"));
        }
        self.store
            .set_webhook(id, seat, &req.url, secret, self.settings.clock.now())
            .await?;
        tracing::info!(match_id = %id, seat, "webhook set");
        Ok(pb::SetWebhookResponse {
            secret: hex::encode(secret),
        })
    }

    /// The token's seat's webhook URL and its most recent deliveries.
    pub async fn get_webhook(
        &self,
        caller: &Caller,
        req: pb::GetWebhookRequest,
    ) -> ApiResult<pb::GetWebhookResponse> {
        let id = match_named(&req.match_id)?;
        let (_, seat) = self.token_seat(caller, id).await?;
        let url = self
            .store
            .webhook(id, seat)
            .await?
            .map(|w| w.url)
            .unwrap_or_default();
        let deliveries = self
            .store
            .deliveries(id, Some(seat), limits::RECENT_DELIVERIES)
            .await?
            .into_iter()
            .map(Self::delivery)
            .collect();
        Ok(pb::GetWebhookResponse { url, deliveries })
    }
}
